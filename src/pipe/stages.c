/* The stage functions of `multi2 train` (pipe/pipe.h): each loads what earlier stages left under
 * artifacts/, runs an algo/train.h loop with log/checkpoint hooks, and leaves its own artifacts. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"
#include "pipe/anchor_cands.h"
#include "pipe/pipe.h"
#include "pipe/probe.h"
#include "pipe/runfiles.h"
#include "pipe/world.h"

/* ---------------------------------------------------------------- hooks */

typedef struct hook_ud {
    m2_stage_ctx *ctx;
    int64_t base;                      /* global step at the stage's local step 0 */
    int (*fill)(void *ud, m2_ckpt *c, m2_err *err);   /* adds the stage's arrays and state */
    void *fill_ud;
    pw_world *world;                   /* the online stage's learning curves play in it */
} hook_ud;

static int hook_log(void *ud, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    hook_ud *h = ud;
    h->ctx->step = h->base + step;
    m2_scalar s[32];
    if (n > 32) n = 32;
    for (int i = 0; i < n; i++) s[i] = (m2_scalar){names[i], v[i]};
    return m2_stage_log(h->ctx, s, n, err);
}

static int save_now(hook_ud *h, m2_err *err) {
    m2_ckpt *c = m2_ckpt_new(0, "");
    if (!c) return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
    int rc = h->fill(h->fill_ud, c, err);
    if (!rc) rc = m2_stage_save(h->ctx, c, err);
    m2_ckpt_free(c);
    return rc;
}

static int hook_after(void *ud, int64_t step, m2_err *err) {
    hook_ud *h = ud;
    h->ctx->step = h->base + step;
    int64_t every = h->ctx->cfg->run_ckpt_every;
    /* a stop step between two checkpoint steps gets a checkpoint of its own: any step boundary is
     * one a run resumes from exactly (as run.ckpt_every=1 shows) */
    int stop_here = h->ctx->cfg->run_stop_at_step == h->ctx->step;
    if ((every > 0 && h->ctx->step % every == 0) || stop_here) {
        if (save_now(h, err)) return -1;
        if (stop_here)
            return m2_errorf(err, M2_ESTOPPED, "stopped after the checkpoint of step %lld (run.stop_at_step)",
                             (long long)h->ctx->step);
    }
    return 0;
}

static m2_train_hooks hooks_of(hook_ud *h) {
    return (m2_train_hooks){.ud = h, .log = hook_log, .after_step = hook_after, .dist = h->ctx->dist};
}


/* The RL-stage diagnostics (pipe/probe.h) at the end of a stage: logged, printed, and written to the
 * stage's artifacts beside its adapter. */
static int probe_finish(m2_stage_ctx *ctx, pw_probe *p, m2_adapter *a, m2_err *err) {
    if (!p) return 0;
    pw_probe_result r;
    if (pw_probe_end(p, a, (int)ctx->cfg->eval_max_new_tokens, &r, err)) return -1;
    char k1[96], k2[96];
    snprintf(k1, sizeof k1, "%s/probe_changed_frac", ctx->name);
    snprintf(k2, sizeof k2, "%s/probe_kl", ctx->name);
    m2_scalar s[2] = {{k1, r.n_states ? (double)r.changed / r.n_states : 0}, {k2, r.kl}};
    if (m2_stage_log(ctx, s, 2, err)) return -1;
    if (ctx->out)
        fprintf(ctx->out, "%s: greedy action changed on %d of %d probe states; KL(start || end) %.4g per action token%s\n",
                ctx->name, r.changed, r.n_states, r.kl, r.changed == 0 ? " (this stage changed no greedy decision)" : "");
    return m2_stage_writes(ctx) ? pw_probe_write(&r, ctx->artifacts, err) : 0;
}

/* A stage's optimiser at a constant learning rate. */
static m2_opt_opts opt_of(const m2_run_config *cfg, double lr, double wd) {
    return (m2_opt_opts){.lr = (float)lr, .weight_decay = (float)wd, .grad_clip = (float)cfg->optim_grad_clip,
                         .beta1 = (float)cfg->optim_beta1, .beta2 = (float)cfg->optim_beta2,
                         .eps = (float)cfg->optim_eps};
}

static int ctx_tokens(const m2_run_config *cfg, int batch, const m2_model *m) {
    int64_t per = cfg->data_max_seq_len < m->cfg.max_seq_len ? cfg->data_max_seq_len : m->cfg.max_seq_len;
    return (int)(per * batch);
}

/* keep_acts of the training ctxs: every layer's activations, or recomputed (model.recompute) */
static int train_acts(const m2_run_config *cfg) { return cfg->model_recompute ? M2_ACTS_RECOMPUTE : M2_ACTS_KEEP; }

/* The engine's exact memory plan for a training stage, printed once its model, adapters, heads and
 * ctxs exist (`multi2 train` printed an estimate from the config before the run): the training
 * ctx as m2_memory_plan sizes it, a scoring ctx when the stage has one, and the KV cache of its
 * rollouts (kv_seqs sequences of kv_len tokens). */
static void print_stage_memory(m2_stage_ctx *ctx, const m2_model *m, int train_tokens, const m2_ctx *scoring,
                               int kv_seqs, int kv_len) {
    if (!ctx->out) return;
    const m2_run_config *cfg = ctx->cfg;
    m2_model_mem p = m2_memory_plan(m, train_tokens, train_acts(cfg), (int)cfg->model_logit_chunk, kv_seqs, kv_len);
    m2_memplan t = {0};
    m2_model_mem_to_plan(&p, &t);
    if (scoring) m2_memplan_add(&t, "scoring ctx (no activations kept)", (double)m2_ctx_bytes(scoring));
    fprintf(ctx->out, "%s: ", ctx->name);
    m2_memplan_print(&t, ctx->out);
}

static int max_seq(const m2_run_config *cfg, const m2_model *m) {
    return (int)(cfg->data_max_seq_len < m->cfg.max_seq_len ? cfg->data_max_seq_len : m->cfg.max_seq_len);
}

/* The context a rollout or evaluation policy may prefill: what leaves room for max_new generated
 * tokens inside the longest sequence the adapters were trained on (max_seq), not the model's whole
 * window. Longer contexts put the newest tokens at positions no training sequence reached (the
 * planner's history grows past data.max_seq_len within a failing episode, and the tiny base then
 * writes garbage); the policy drops the oldest (state, action) pairs instead (m2_pack_context). */
static int policy_context(const m2_run_config *cfg, const m2_model *m, int max_new) {
    int n = max_seq(cfg, m) - max_new;
    return n > 0 ? n : 1;
}

/* ---------------------------------------------------------------- data */

int m2_stage_data(m2_stage_ctx *ctx, m2_err *err) {
    if (pw_data_ensure(ctx->cfg, ctx->run->dir, ctx->out, err)) return -1;
    char dir[1100], p[1300];
    pw_data_dir(ctx->cfg, ctx->run->dir, dir, sizeof dir);
    const char *files[3] = {"expert/high.jsonl", "expert/low.jsonl", "medium/low.jsonl"};
    const char *keys[3] = {"data/expert_episodes", "data/expert_subgoals", "data/medium_subgoals"};
    m2_scalar s[3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        if (!m2_path_exists(p)) continue;
        char *txt;
        size_t len;
        if (m2_read_file(p, &txt, &len, err)) return -1;
        long lines = 0;
        for (size_t k = 0; k < len; k++) lines += txt[k] == '\n';
        free(txt);
        s[n++] = (m2_scalar){keys[i], (double)lines};
    }
    return m2_stage_log(ctx, s, n, err);
}

/* ---------------------------------------------------------------- pretrain */

/* the cosine decay of pre-training ends at this fraction of pretrain.lr */
#define PRETRAIN_MIN_LR_FRAC 0.1f
/* the tiny base starts from N(0, 0.02^2) weights (GPT-2's initialisation) */
#define PRETRAIN_INIT_STD 0.02f
/* its BPE merges only pairs seen at least twice */
#define PRETRAIN_BPE_MIN_FREQ 2

/* the folders of the pre-training corpus (pw_corpus_folders) */
#define PRETRAIN_MAX_FOLDERS 1024

static char *corpus_of(char (*dirs)[1300], int n_dirs, size_t *len, m2_err *err) {
    /* the text of every transcript: high and low records of both variants, and flat episodes */
    char p[1400];
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    if (!buf) { m2_errorf(err, M2_ENOMEM, "pretrain: out of memory"); return NULL; }
    const char *files[5] = {"expert/high.jsonl", "expert/low.jsonl", "medium/high.jsonl", "medium/low.jsonl", "flat.jsonl"};
    for (int df = 0; df < n_dirs * 5; df++) {
        int f = df % 5;
        snprintf(p, sizeof p, "%s/%s", dirs[df / 5], files[f]);
        if (!m2_path_exists(p)) continue;
        int high = f == 0 || f == 2;
        m2_high_record *hr = NULL;
        m2_low_record *lr = NULL;
        int nr = 0;
        if (high ? m2_high_records_read(p, &hr, &nr, err) : m2_low_records_read(p, &lr, &nr, err)) { free(buf); return NULL; }
        for (int i = 0; i < nr; i++) {
            m2_traj t;
            int rc = high ? m2_high_record_traj(&hr[i], NULL, &t, err) : m2_low_record_traj(&lr[i], NULL, "Obs: ", &t, err);
            char *s = rc ? NULL : m2_traj_render(&t);
            if (!rc) m2_traj_free(&t);
            if (!s) continue;
            size_t l = strlen(s);
            if (n + l + 2 > cap) {
                while (n + l + 2 > cap) cap *= 2;
                char *nb = realloc(buf, cap);
                if (!nb) { free(s); free(buf); m2_errorf(err, M2_ENOMEM, "pretrain: out of memory"); return NULL; }
                buf = nb;
            }
            memcpy(buf + n, s, l);
            n += l;
            buf[n++] = '\n';
            free(s);
        }
        if (high) m2_high_records_free(hr, nr); else m2_low_records_free(lr, nr);
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

typedef struct pre_state {
    m2_model *m;
    m2_ctx *c;
    const m2_train_state *st;
} pre_state;

static int pre_fill(void *ud, m2_ckpt *c, m2_err *err) {
    pre_state *p = ud;
    if (pw_ck_add_params(c, "base", &p->m->base, err)) return -1;
    if (m2_ckpt_set_rng(c, "dropout", m2_ctx_rng(p->c), err)) return -1;
    cJSON *s = m2_ckpt_state(c);
    cJSON_AddNumberToObject(s, "local_step", (double)p->st->step);
    cJSON_AddNumberToObject(s, "epoch", (double)p->st->epoch);
    cJSON_AddNumberToObject(s, "pos", p->st->pos);
    return 0;
}

/* The pre-training cursor of a checkpoint (pre_fill's keys). */
static int pre_restore(const m2_ckpt *ck, m2_train_state *st, m2_err *err) {
    static const char *keys[3] = {"local_step", "epoch", "pos"};
    double v[3];
    const cJSON *s = ((m2_ckpt *)ck)->state;
    for (int i = 0; i < 3; i++) {
        const cJSON *x = s ? cJSON_GetObjectItemCaseSensitive(s, keys[i]) : NULL;
        if (!cJSON_IsNumber(x)) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: pretrain state has no \"%s\"", ck->dir, keys[i]);
        v[i] = x->valuedouble;
    }
    m2_train_state_init(st);
    st->step = (int64_t)v[0];
    st->epoch = (int64_t)v[1];
    st->pos = (int)v[2];
    return 0;
}

/* The saved GGUF must give the later stages the model that was trained: reload it and compare the
 * logits of one transcript (guards the q/k row permutation and the tokenizer metadata). */
static int check_saved_base(m2_model *m, const m2_seqset *set, const char *path, const char *tok_path, m2_err *err) {
    m2_bundle b;
    if (m2_bundle_open(&b, path, NULL, tok_path, NULL, 1, err)) return -1;
    const m2_packed *p = &set->seq[0];
    int n = p->n_tok < 64 ? p->n_tok : 64, rc = -1;
    m2_ctx *c1 = m2_ctx_create(m, n, 0, err), *c2 = c1 ? m2_ctx_create(b.model, n, 0, err) : NULL;
    m2_batch bt = {.n_seq = 1, .seq_len = &n, .tokens = p->ids};
    if (c2 && !m2_forward(c1, &bt, NULL, 0, err) && !m2_forward(c2, &bt, NULL, 0, err)) {
        const float *l1 = m2_ctx_logits(c1), *l2 = m2_ctx_logits(c2);
        double md = 0;
        for (long i = 0; i < (long)n * m->cfg.vocab_size; i++) md = fmax(md, fabs((double)l1[i] - l2[i]));
        rc = md < 1e-3 ? 0 : m2_errorf(err, M2_EFORMAT, "%s: reloaded base differs from the trained one (max |dlogit| %g)", path, md);
    }
    m2_ctx_free(c1);
    m2_ctx_free(c2);
    m2_bundle_close(&b);
    return rc;
}

int m2_stage_pretrain(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    const char *run_dir = ctx->run->dir;
    if (strcmp(cfg->model_base, "tiny")) return 0;   /* a real backbone: nothing to pre-train */
    int team = m2_method_of(cfg)->team;   /* a team run pre-trains on its task family's transcripts */
    char corpus_dir[1400];
    snprintf(corpus_dir, sizeof corpus_dir, "%s/corpus", ctx->artifacts);
    if (!team && m2_stage_writes(ctx) &&
        (pw_data_ensure(cfg, run_dir, ctx->out, err) || pw_corpus_ensure(cfg, corpus_dir, ctx->out, err)))
        return -1;
    if (m2_dist_barrier(ctx->dist, err)) return -1;   /* the data rank 0 wrote, for every rank */
    char (*dirs)[1300] = malloc(PRETRAIN_MAX_FOLDERS * sizeof *dirs);
    if (!dirs) return m2_errorf(err, M2_ENOMEM, "pretrain: out of memory");
    int n_dirs = team ? 0 : pw_corpus_folders(cfg, run_dir, corpus_dir, dirs, PRETRAIN_MAX_FOLDERS);
    char tok_path[1400], base_path[1400];
    snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", ctx->artifacts);
    snprintf(base_path, sizeof base_path, "%s/base.gguf", ctx->artifacts);
    m2_tokenizer *tk = NULL;
    if (m2_path_exists(tok_path)) {
        tk = m2_tokenizer_load_json(tok_path, err);
    } else {
        size_t len = 0;
        char *corpus = team ? pw_team_corpus(cfg, &len, err) : corpus_of(dirs, n_dirs, &len, err);
        if (!corpus) { free(dirs); return -1; }
        static const char *const specials[2] = {"<|endoftext|>", "<|pad|>"};
        m2_bpe_train_opts bo = {.vocab_size = (int32_t)cfg->model_tiny_vocab, .specials = specials, .n_specials = 2,
                                .pretok = M2_PRETOK_QWEN2, .min_frequency = PRETRAIN_BPE_MIN_FREQ};
        tk = m2_bpe_train(corpus, len, &bo, err);
        free(corpus);
        /* the special ids tokenizer.json cannot hold go beside it first: a resumed run reloads the
         * tokenizer from these files, and must save the same base.gguf as a run that trained it */
        char cfg_path[1400];
        snprintf(cfg_path, sizeof cfg_path, "%s/tokenizer_config.json", ctx->artifacts);
        if (tk && m2_stage_writes(ctx) &&
            (m2_tokenizer_save_config_json(tk, cfg_path, err) || m2_tokenizer_save_json(tk, tok_path, err))) {
            m2_tokenizer_free(tk);
            free(dirs);
            return -1;
        }
        if (tk && ctx->out) fprintf(ctx->out, "pretrain: BPE tokenizer with %d tokens -> %s\n", m2_tokenizer_n_tokens(tk), tok_path);
    }
    if (!tk) { free(dirs); return -1; }
    m2_tok_iface tok;
    m2_tok_iface_from_tokenizer(&tok, tk);
    tok.state_sep = cfg->data_state_sep;
    m2_model_config mc;
    if (m2_config_preset("tiny", &mc, err)) { m2_tokenizer_free(tk); free(dirs); return -1; }
    mc.vocab_size = m2_tokenizer_n_tokens(tk);
    mc.dim = (int)cfg->model_tiny_dim;
    mc.n_layers = (int)cfg->model_tiny_layers;
    mc.n_heads = (int)cfg->model_tiny_heads;
    mc.n_kv_heads = (int)cfg->model_tiny_kv_heads;
    mc.head_dim = 0;
    mc.ffn_dim = (int)cfg->model_tiny_ffn;
    mc.rope_theta = (float)cfg->model_tiny_rope_base;
    mc.max_seq_len = (int)cfg->model_max_seq_len;
    mc.eos_token = tok.eos_id;
    mc.bos_token = -1;
    m2_model_opts mo = {.dtype = M2_DT_F32, .train_base = 1, .threads = (int)cfg->run_threads};
    m2_model *m = NULL;
    m2_ctx *c = NULL;
    m2_seqset set;
    m2_seqset_init(&set);
    int *idx = NULL, rc = -1;
    if (m2_config_validate(&mc, err) || !(m = m2_model_create(&mc, &mo, err))) goto out;
    m2_model_init_random(m, pw_seed(cfg, PW_SEED_PRETRAIN_INIT), PRETRAIN_INIT_STD);
    int seq_len = (int)(cfg->pretrain_seq_len < mc.max_seq_len ? cfg->pretrain_seq_len : mc.max_seq_len);
    if (team) {
        if (pw_team_pretrain_set(cfg, &tok, seq_len, &set, err)) goto out;
    } else {
        /* the transcripts, packed like training sequences, cut at pretrain.seq_len */
        m2_seqset tmp;
        const char *kinds[3] = {"high", "low", "flat"};
        for (int dk = 0; dk < 3 * n_dirs; dk++) {
            int k = dk % 3;
            m2_err e2 = {0};
            if (pw_load_set_in(dirs[dk / 3], &tok, kinds[k], 1, seq_len, &tmp, NULL, NULL, NULL, &e2)) {
                m2_seqset_free(&tmp);
                if (e2.code == M2_EINVAL) continue;   /* none of this kind fits pretrain.seq_len */
                if (err) *err = e2;
                goto out;
            }
            for (int i = 0; i < tmp.n; i++) {
                if (set.n == set.cap) {
                    int nc = set.cap ? set.cap * 2 : 256;
                    m2_packed *np = realloc(set.seq, (size_t)nc * sizeof *np);
                    if (!np) { m2_seqset_free(&tmp); m2_errorf(err, M2_ENOMEM, "pretrain: out of memory"); goto out; }
                    set.seq = np;
                    set.cap = nc;
                }
                set.seq[set.n++] = tmp.seq[i];
            }
            tmp.n = 0;   /* moved */
            m2_seqset_free(&tmp);
        }
    }
    if (set.n == 0) {
        m2_errorf(err, M2_ECONFIG, "pretrain.seq_len %d: no transcript fits (raise it)", seq_len);
        goto out;
    }
    idx = malloc((size_t)set.n * sizeof *idx);
    if (!idx) { m2_errorf(err, M2_ENOMEM, "pretrain: out of memory"); goto out; }
    for (int i = 0; i < set.n; i++) idx[i] = i;
    int batch = (int)cfg->pretrain_batch;
    if (!(c = m2_ctx_create_chunked(m, batch * seq_len, train_acts(cfg), (int)cfg->model_logit_chunk, err))) goto out;
    m2_ctx_seed(c, pw_seed(cfg, PW_SEED_PRETRAIN_DROPOUT));
    print_stage_memory(ctx, m, batch * seq_len, NULL, 0, 0);
    m2_train_state st;
    m2_train_state_init(&st);
    pre_state ps = {.m = m, .c = c, .st = &st};
    hook_ud h = {.ctx = ctx, .base = ctx->step, .fill = pre_fill, .fill_ud = &ps};
    if (ctx->resume) {
        if (pw_ck_read_params(ctx->resume, "base", &m->base, err) ||
            m2_ckpt_get_rng(ctx->resume, "dropout", m2_ctx_rng(c), err) || pre_restore(ctx->resume, &st, err))
            goto out;
        h.base = ctx->step - st.step;
    }
    int64_t total = cfg->pretrain_steps;
    ctx->total = h.base + total;
    {
        char desc[160];
        m2_config_describe(&mc, desc, sizeof desc);
        if (ctx->out) fprintf(ctx->out, "pretrain: %s, %d transcripts, %lld steps of %d x %d tokens\n", desc, set.n,
                              (long long)total, batch, seq_len);
    }
    /* cosine decay from pretrain.lr to a tenth of it after pretrain.warmup linear steps */
    m2_lm_opts lo = {
        .opt = {.lr = (float)cfg->pretrain_lr, .weight_decay = (float)cfg->pretrain_weight_decay,
                .grad_clip = (float)cfg->optim_grad_clip, .beta1 = (float)cfg->optim_beta1,
                .beta2 = (float)cfg->optim_beta2, .eps = (float)cfg->optim_eps, .decay = M2_DECAY_COSINE,
                .warmup = (long)cfg->pretrain_warmup, .min_lr = (float)cfg->pretrain_lr * PRETRAIN_MIN_LR_FRAC,
                .total = (long)total},
        .batch = batch,
        .steps = total,
        .seed = pw_seed(cfg, PW_SEED_PRETRAIN_BATCHES),
        .prefix = "pretrain",
    };
    m2_train_hooks hk = hooks_of(&h);
    if (m2_train_lm(m, c, NULL, &set, idx, set.n, &lo, &st, &hk, err)) goto out;
    ctx->step = h.base + st.step;
    if (m2_stage_writes(ctx) && (m2_model_save_gguf_tok(m, base_path, M2_GGML_F32, NULL, tk, err) ||
                        check_saved_base(m, &set, base_path, tok_path, err)))
        goto out;
    if (ctx->out) fprintf(ctx->out, "pretrain: base -> %s (reloaded: same logits)\n", base_path);
    rc = 0;
out:
    free(dirs);
    free(idx);
    m2_seqset_free(&set);
    m2_ctx_free(c);
    m2_model_free(m);
    m2_tokenizer_free(tk);
    return rc;
}

/* ---------------------------------------------------------------- SFT stages */

typedef struct sft_state {
    m2_adapter *a;
    m2_ctx *c;
    m2_train_state *st;
    float *best;
    hook_ud *h;
} sft_state;

static int sft_fill(void *ud, m2_ckpt *c, m2_err *err) {
    sft_state *s = ud;
    if (pw_ck_add_params(c, "adapter", &s->a->params, err)) return -1;
    int64_t n = (int64_t)s->a->params.n;
    if (s->best && m2_ckpt_add(c, "adapter.best", M2_CKPT_F32, s->best, 1, &n, err)) return -1;
    if (m2_ckpt_set_rng(c, "dropout", m2_ctx_rng(s->c), err)) return -1;
    pw_state_to_json(m2_ckpt_state(c), s->st, s->h->base);
    return 0;
}

static int sft_stage(m2_stage_ctx *ctx, const char *kind, const char *adapter_name, int validate, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    int sys1 = !strcmp(kind, "high");
    int batch = (int)(sys1 ? cfg->sys1_sft_batch : cfg->sys2_warmup_batch);
    m2_seqset set;
    m2_seqset_init(&set);
    int *tr = NULL, *va = NULL, nt = 0, nv = 0, rc = -1;
    m2_ctx *c = NULL, *cv = NULL;
    float *best = NULL;
    m2_adapter *a = pw_adapter(&w, adapter_name, ctx->name, 1, err);
    if (!a) goto out;
    /* System 1 recovery: the medium high records label states after failed sub-goals with the
     * expert's sub-goal from there (data/hier.h) */
    int with_medium = sys1 && cfg->sys1_sft_recovery;
    if (pw_load_set(cfg, ctx->run->dir, &w.tok, kind, with_medium, max_seq(cfg, w.m), &set, NULL, NULL, NULL, err)) goto out;
    if (m2_seqset_split(set.n, validate ? cfg->data_val_frac : 0.0, pw_seed(cfg, PW_SEED_SFT_SPLIT), &tr, &nt, &va, &nv, err)) goto out;
    if (!(c = m2_ctx_create_chunked(w.m, ctx_tokens(cfg, batch, w.m), train_acts(cfg), (int)cfg->model_logit_chunk, err))) goto out;
    if (nv > 0 && !(cv = m2_ctx_create_chunked(w.m, ctx_tokens(cfg, batch, w.m), 0, (int)cfg->model_logit_chunk, err))) goto out;
    m2_ctx_seed(c, pw_seed(cfg, sys1 ? PW_SEED_SYS1_DROPOUT : PW_SEED_SYS2_WARMUP_DROPOUT));
    print_stage_memory(ctx, w.m, ctx_tokens(cfg, batch, w.m), cv, 0, 0);
    if (nv > 0 && !(best = malloc(a->params.n * sizeof(float)))) { m2_errorf(err, M2_ENOMEM, "sft: out of memory"); goto out; }
    m2_train_state st;
    m2_train_state_init(&st);
    hook_ud h = {.ctx = ctx, .base = ctx->step, .fill = sft_fill};
    sft_state ss = {.a = a, .c = c, .st = &st, .best = best, .h = &h};
    h.fill_ud = &ss;
    if (ctx->resume) {
        if (pw_ck_read_params(ctx->resume, "adapter", &a->params, err) ||
            m2_ckpt_get_rng(ctx->resume, "dropout", m2_ctx_rng(c), err) ||
            pw_state_from_json(m2_ckpt_state(ctx->resume), &st, &h.base, err))
            goto out;
        if (best) {
            int64_t n = (int64_t)a->params.n;
            if (m2_ckpt_read(ctx->resume, "adapter.best", M2_CKPT_F32, best, 1, &n, err)) goto out;
        }
    }
    m2_sft_opts o = {0};
    o.opt = sys1 ? opt_of(cfg, cfg->sys1_sft_lr, cfg->sys1_sft_weight_decay)
                 : opt_of(cfg, cfg->sys2_warmup_lr, cfg->sys2_warmup_weight_decay);
    o.reduce = M2_REDUCE_MEAN;
    o.batch = batch;
    o.epochs = (int)(sys1 ? cfg->sys1_sft_epochs : cfg->sys2_warmup_epochs);
    o.eval_every = sys1 ? (int)cfg->sys1_sft_eval_every : 0;
    o.patience = sys1 ? (int)cfg->sys1_sft_patience : 0;
    o.min_delta = (float)cfg->sys1_sft_min_delta;
    o.min_rel_improve = (float)cfg->sys1_sft_min_rel_improve;
    o.seed = pw_seed(cfg, sys1 ? PW_SEED_SYS1_BATCHES : PW_SEED_SYS2_WARMUP_BATCHES);
    o.prefix = sys1 ? "sys1" : (strcmp(kind, "flat") ? "sys2_warmup" : "flat_sft");
    ctx->total = h.base + (int64_t)o.epochs * ((nt + batch - 1) / batch);
    if (ctx->out)
        fprintf(ctx->out, "%s: adapter '%s' on %d %s sequences (%d held out, %d dropped as too long)\n", ctx->name,
                adapter_name, nt, kind, nv, set.n_dropped);
    m2_train_hooks hk = hooks_of(&h);
    if (m2_train_sft(c, cv, a, &set, tr, nt, va, nv, &o, &st, best, &hk, err)) goto out;
    ctx->step = h.base + st.step;
    if (st.stopped && ctx->out) fprintf(ctx->out, "%s: early stop at step %lld (best validation loss %.4f)\n", ctx->name, (long long)st.step, st.best_val);
    if (m2_stage_writes(ctx) && pw_save_adapter(&w, a, ctx->artifacts, err)) goto out;
    rc = 0;
out:
    free(best);
    free(tr);
    free(va);
    m2_ctx_free(c);
    m2_ctx_free(cv);
    m2_seqset_free(&set);
    pw_close(&w);
    return rc;
}

int m2_stage_sys1_sft(m2_stage_ctx *ctx, m2_err *err) {
    if (pw_is_flat(ctx->cfg)) return 0;   /* the flat baseline has no planner */
    return sft_stage(ctx, "high", pw_adapter_name(ctx->cfg, M2_ROLE_SYS1), 1, err);
}

int m2_stage_sys2_warmup(m2_stage_ctx *ctx, m2_err *err) {
    return sft_stage(ctx, pw_is_flat(ctx->cfg) ? "flat" : "low", pw_adapter_name(ctx->cfg, M2_ROLE_SYS2), 0, err);
}

/* ---------------------------------------------------------------- offline */

typedef struct rl_state {
    m2_adapter *a;
    m2_head *q, *v;
    m2_ctx *c;
    m2_train_state *st;
    m2_rng *rng;
    hook_ud *h;
    m2_replay *buf;
} rl_state;

static int rl_fill(void *ud, m2_ckpt *c, m2_err *err) {
    rl_state *s = ud;
    if (pw_ck_add_params(c, "adapter", &s->a->params, err) || pw_ck_add_head(c, s->q, err) ||
        pw_ck_add_head(c, s->v, err) || m2_ckpt_set_rng(c, "dropout", m2_ctx_rng(s->c), err))
        return -1;
    if (s->rng && m2_ckpt_set_rng(c, "sampler", s->rng, err)) return -1;
    cJSON *js = m2_ckpt_state(c);
    pw_state_to_json(js, s->st, s->h->base);
    if (s->buf) {
        char *j = m2_replay_to_json(s->buf, err);
        if (!j) return -1;
        int64_t n = (int64_t)strlen(j);
        int rc = m2_ckpt_add_copy(c, "replay", M2_CKPT_U8, j, 1, &n, err);
        free(j);
        if (rc) return -1;
    }
    return 0;
}

static int rl_restore(const m2_ckpt *ck, rl_state *s, m2_err *err) {
    if (pw_ck_read_params(ck, "adapter", &s->a->params, err) || pw_ck_read_head(ck, s->q, err) ||
        pw_ck_read_head(ck, s->v, err) || m2_ckpt_get_rng(ck, "dropout", m2_ctx_rng(s->c), err))
        return -1;
    if (s->rng && m2_ckpt_get_rng(ck, "sampler", s->rng, err)) return -1;
    const cJSON *js = ((m2_ckpt *)ck)->state;
    if (pw_state_from_json(js, s->st, &s->h->base, err)) return -1;
    /* Checkpoints of older builds also hold the rollout policies' call counters ("sys1_calls",
     * "sys2_calls", per rank "rank_calls"): read past, since every episode now samples from its own
     * stream (agent/loop.h m2_episode_stream) and no counter outlives an episode (docs/dist.md). */
    if (s->buf) {
        const m2_ckpt_array *ar = m2_ckpt_find(ck, "replay");
        if (!ar) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: no replay buffer", ck->dir);
        char *j = malloc(ar->nbytes + 1);
        if (!j) return m2_errorf(err, M2_ENOMEM, "out of memory");
        memcpy(j, ar->data, ar->nbytes);
        j[ar->nbytes] = 0;
        int rc = m2_replay_from_json(s->buf, j, err);
        free(j);
        if (rc) return -1;
    }
    return 0;
}

int m2_stage_sys2_offline(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    const char *an = pw_adapter_name(cfg, M2_ROLE_SYS2);
    const char *kind = pw_is_flat(cfg) ? "flat" : "low";
    m2_seqset set;
    m2_seqset_init(&set);
    int *idx = NULL, rc = -1;
    m2_ctx *c = NULL;
    m2_head *q, *v;
    pw_anchor_cands *cands = NULL;
    pw_probe *probe = NULL;
    m2_adapter *a = pw_adapter(&w, an, ctx->name, 1, err);
    if (!a || pw_heads(&w, ctx->name, &q, &v, err)) goto out;
    if (pw_load_set(cfg, ctx->run->dir, &w.tok, kind, 1, max_seq(cfg, w.m), &set, NULL, NULL, NULL, err)) goto out;
    if (cfg->sys2_probe_states > 0 && pw_probe_begin(&w, &set, (int)cfg->sys2_probe_states, a, &probe, err)) goto out;
    if (!(idx = malloc((size_t)set.n * sizeof *idx))) { m2_errorf(err, M2_ENOMEM, "offline: out of memory"); goto out; }
    for (int i = 0; i < set.n; i++) idx[i] = i;
    int batch = (int)cfg->sys2_offline_batch;
    /* room for the batch and for one anchor sequence (prefix + sampled action) */
    if (!(c = m2_ctx_create_chunked(w.m, ctx_tokens(cfg, batch, w.m) + (int)cfg->eval_max_new_tokens + 8, train_acts(cfg),
                                    (int)cfg->model_logit_chunk, err))) goto out;
    m2_ctx_seed(c, pw_seed(cfg, PW_SEED_OFFLINE_DROPOUT));
    print_stage_memory(ctx, w.m, ctx_tokens(cfg, batch, w.m) + (int)cfg->eval_max_new_tokens + 8, NULL, 1,
                       max_seq(cfg, w.m) + (int)cfg->eval_max_new_tokens);
    m2_rng rng;
    m2_rng_seed(&rng, pw_seed(cfg, PW_SEED_OFFLINE_ANCHOR));
    m2_train_state st;
    m2_train_state_init(&st);
    hook_ud h = {.ctx = ctx, .base = ctx->step, .fill = rl_fill};
    rl_state rs = {.a = a, .q = q, .v = v, .c = c, .st = &st, .rng = &rng, .h = &h};
    h.fill_ud = &rs;
    if (ctx->resume && rl_restore(ctx->resume, &rs, err)) goto out;
    m2_offline_opts o = {0};
    o.step.critic = (m2_critic_cfg){.gamma = (float)cfg->sys2_offline_gamma, .expectile = (float)cfg->sys2_offline_expectile};
    int released = cfg->sys2_offline_anchor == M2_OFFLINE_ANCHOR_RELU_WEIGHT;
    o.step.actor = (m2_actor_cfg){.beta = (float)cfg->sys2_offline_beta, .w_max = (float)cfg->sys2_offline_w_max,
                                  .lambda = (float)m2_run_offline_lambda(cfg), .released = released,
                                  .normalize = cfg->sys2_offline_normalize_weights};
    o.step.reduce = cfg->sys2_offline_logprob == M2_LOGPROB_SUM ? M2_REDUCE_SUM : M2_REDUCE_MEAN;
    o.step.train_actor = o.step.train_critic = 1;
    o.step.n_anchor = (int)cfg->sys2_offline_anchor_states;
    o.step.anchor_samples = (int)cfg->sys2_offline_anchor_samples;
    o.step.max_action_tokens = (int)cfg->eval_max_new_tokens;
    o.step.sampler = (m2_sampler){.temperature = 1.f};   /* a^ ~ pi itself: no temperature, top-k or top-p */
    o.step.eos_id = w.tok.eos_id;
    if (cfg->sys2_action_mode == M2_ACTION_MODE_SCORE && !released && m2_run_offline_lambda(cfg) != 0) {
        /* a^ chosen among the admissible actions of each anchor state (pipe/anchor_cands.h) */
        if (pw_anchor_cands_build(&w, kind, max_seq(cfg, w.m), &cands, err)) goto out;
        o.step.cands = pw_anchor_cands_lookup;
        o.step.cands_ud = cands;
        o.step.score_mean = cfg->sys2_action_logprob == M2_LOGPROB_MEAN;
        if (ctx->out)
            fprintf(ctx->out, "%s: score mode: anchor actions chosen among the admissible ones (%d dataset states replayable)\n",
                    ctx->name, pw_anchor_cands_size(cands));
    }
    o.actor = opt_of(cfg, cfg->sys2_offline_actor_lr, cfg->sys2_offline_weight_decay);
    o.critic = opt_of(cfg, cfg->sys2_offline_critic_lr, cfg->sys2_offline_weight_decay);
    o.polyak = (float)cfg->sys2_offline_polyak;
    o.batch = batch;
    o.epochs = (int)cfg->sys2_offline_epochs;
    o.max_steps = cfg->sys2_offline_max_steps;
    o.seed = pw_seed(cfg, PW_SEED_OFFLINE_BATCHES);
    int64_t steps = (int64_t)o.epochs * ((set.n + batch - 1) / batch);
    if (o.max_steps > 0 && o.max_steps < steps) steps = o.max_steps;
    ctx->total = h.base + steps;
    if (ctx->out)
        fprintf(ctx->out, "%s: adapter '%s', heads q/v, %d %s segments (expert + medium), anchor %s (lambda %g)\n",
                ctx->name, an, set.n, kind, released ? "relu-weight" : "sampled", m2_run_offline_lambda(cfg));
    m2_train_hooks hk = hooks_of(&h);
    if (m2_train_offline(w.m, c, a, q, v, &set, idx, set.n, &o, &st, &rng, &hk, err)) goto out;
    ctx->step = h.base + st.step;
    if (m2_stage_writes(ctx) && (pw_save_adapter(&w, a, ctx->artifacts, err) || pw_save_heads(q, v, ctx->artifacts, err))) goto out;
    if (probe_finish(ctx, probe, a, err)) goto out;
    rc = 0;
out:
    pw_probe_free(probe);
    pw_anchor_cands_free(cands);
    free(idx);
    m2_ctx_free(c);
    m2_seqset_free(&set);
    pw_close(&w);
    return rc;
}

/* ---------------------------------------------------------------- online */

/* How an evaluation plays: System 2's action mode and the sampling temperature (0: greedy). */
typedef struct eval_play {
    m2_action_mode mode;
    double temperature;
} eval_play;

static int eval_split(pw_world *w, const eval_play *play, m2_split split, int n, FILE *progress, const char *label,
                      m2_jsonl *jl, FILE *jsonl, m2_eval_agg *agg, m2_dist *d, int writer, m2_err *err);

/* The online stage's learning curves (sys2.online.eval_every): before the first epoch and after
 * every eval_every epochs, the eval stage's first sys2.online.eval_episodes ID and OOD episodes
 * played greedily by the adapters as they are now, through the eval stage's own code. It draws
 * from no stream the training uses (eval_split's policies are its own, greedy), and a resumed
 * stage calls it where an uninterrupted one does (algo/train.h epoch_end), so the training's bits
 * do not depend on it. */
static int hook_epoch_end(void *ud, int64_t epochs_done, int64_t step, m2_err *err) {
    hook_ud *h = ud;
    m2_stage_ctx *ctx = h->ctx;
    const m2_run_config *cfg = ctx->cfg;
    if (cfg->sys2_online_eval_every <= 0 || epochs_done % cfg->sys2_online_eval_every) return 0;
    static const m2_split splits[2] = {M2_SPLIT_ID, M2_SPLIT_OOD};
    static const char *const names[5] = {"sys2_online/eval_epoch", "sys2_online/eval_id_success",
                                         "sys2_online/eval_id_score", "sys2_online/eval_ood_success",
                                         "sys2_online/eval_ood_score"};
    const eval_play play = {.mode = (m2_action_mode)cfg->sys2_action_mode, .temperature = 0};
    m2_scalar s[5] = {{names[0], (double)epochs_done}};
    int n[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        m2_eval_agg agg;
        m2_eval_agg_init(&agg);
        n[k] = eval_split(h->world, &play, splits[k], (int)cfg->sys2_online_eval_episodes, NULL, NULL, NULL, NULL, &agg,
                          ctx->dist, m2_stage_writes(ctx), err);
        const m2_eval_cell *c = n[k] > 0 ? m2_eval_agg_find(&agg, m2_split_name(splits[k]), "all") : NULL;
        s[1 + 2 * k] = (m2_scalar){names[1 + 2 * k], c && c->n ? (double)c->success / c->n : NAN};
        s[2 + 2 * k] = (m2_scalar){names[2 + 2 * k], c && c->n ? c->score / c->n : NAN};
        m2_eval_agg_free(&agg);
        if (n[k] < 0) return -1;
    }
    if (ctx->out)
        fprintf(ctx->out, "%s: after %lld epochs: greedy ID success %.0f %%, mean score %.3g (%d episodes), OOD %.0f %%, "
                "mean score %.3g (%d)\n", ctx->name, (long long)epochs_done, 100 * s[1].value, s[2].value, n[0],
                100 * s[3].value, s[4].value, n[1]);
    ctx->step = h->base + step;
    return m2_stage_log(ctx, s, 5, err);
}

int m2_stage_sys2_online(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    int flat = pw_is_flat(cfg);
    const char *an = pw_adapter_name(cfg, M2_ROLE_SYS2);
    m2_seqset set;
    m2_seqset_init(&set);
    m2_traj *seeds = NULL;
    int *succ = NULL, n_seeds = 0, rc = -1;
    m2_ctx *con = NULL, *coff = NULL;
    m2_replay buf;
    int buf_ok = 0;
    m2_head *q, *v;
    m2_model_policy mp1 = {0}, mp2 = {0};   /* set below; their KV caches freed at out */
    m2_seqset probe_set;                     /* the offline stage's set: the same probe states */
    m2_seqset_init(&probe_set);
    pw_probe *probe = NULL;
    m2_adapter *on = pw_adapter(&w, an, ctx->name, 1, err), *off = NULL, *s1 = NULL;
    if (!on || pw_heads(&w, ctx->name, &q, &v, err)) goto out;
    if (cfg->sys2_probe_states > 0 &&
        (pw_load_set(cfg, ctx->run->dir, &w.tok, flat ? "flat" : "low", 1, max_seq(cfg, w.m), &probe_set, NULL, NULL,
                     NULL, err) ||
         pw_probe_begin(&w, &probe_set, (int)cfg->sys2_probe_states, on, &probe, err)))
        goto out;
    /* pi_off: a frozen copy of the adapter as the offline stage left it */
    {
        m2_lora_config lc = on->cfg;
        snprintf(lc.name, sizeof lc.name, "sys2_off");
        if (!(off = m2_adapter_add(w.m, &lc, 1, err)) || m2_adapter_copy_weights(off, on, err)) goto out;
        off->params.trainable = 0;
    }
    if (!flat) {
        const char *n1 = pw_adapter_name(cfg, M2_ROLE_SYS1);
        if (strcmp(n1, an)) {
            if (!(s1 = pw_adapter(&w, n1, ctx->name, 0, err))) goto out;
            s1->params.trainable = 0;
        } else {
            s1 = off;   /* shared adapter: System 1 frozen = the offline weights */
        }
    }
    if (pw_load_set(cfg, ctx->run->dir, &w.tok, flat ? "flat" : "low", 0, max_seq(cfg, w.m), &set, &seeds, &succ, &n_seeds, err)) goto out;
    if (m2_replay_init(&buf, (int)cfg->sys2_online_buffer_capacity, (float)cfg->sys2_online_keep_fail, pw_seed(cfg, PW_SEED_REPLAY), err)) goto out;
    buf_ok = 1;
    int batch = (int)cfg->sys2_online_batch;
    if (!(con = m2_ctx_create_chunked(w.m, ctx_tokens(cfg, batch, w.m), train_acts(cfg), (int)cfg->model_logit_chunk, err)) ||
        !(coff = m2_ctx_create_chunked(w.m, ctx_tokens(cfg, batch, w.m), 0, (int)cfg->model_logit_chunk, err)))
        goto out;
    m2_ctx_seed(con, pw_seed(cfg, PW_SEED_ONLINE_DROPOUT));
    /* rollouts keep one KV cache per role (System 1, System 2; flat: one) */
    print_stage_memory(ctx, w.m, ctx_tokens(cfg, batch, w.m), coff, flat ? 1 : 2,
                       max_seq(cfg, w.m) + (int)cfg->eval_max_new_tokens);
    int max_new = (int)cfg->eval_max_new_tokens;
    mp1 = (m2_model_policy){.model = w.m, .sys1 = s1, .sys2 = s1, .tok = &w.tok, .sampler = {0.f, 0, 0.f},
                            .max_new_tokens = max_new, .max_context = policy_context(cfg, w.m, max_new),
                            .seed = pw_seed(cfg, PW_SEED_ONLINE_SYS1_SAMPLING)};
    mp2 = (m2_model_policy){.model = w.m, .sys1 = on, .sys2 = on, .tok = &w.tok,
                            .sampler = {(float)cfg->sys2_online_temperature, (int)cfg->sys2_online_top_k,
                                        (float)cfg->sys2_online_top_p},
                            .max_new_tokens = max_new, .max_context = policy_context(cfg, w.m, max_new),
                            .seed = pw_seed(cfg, PW_SEED_ONLINE_SYS2_SAMPLING),
                            .score_mean = cfg->sys2_action_logprob == M2_LOGPROB_MEAN};
    m2_policy p1 = m2_model_policy_as(&mp1), p2 = m2_model_policy_as(&mp2);
    m2_train_state st;
    m2_train_state_init(&st);
    hook_ud h = {.ctx = ctx, .base = ctx->step, .fill = rl_fill, .world = &w};
    rl_state rs = {.a = on, .q = q, .v = v, .c = con, .st = &st, .h = &h, .buf = &buf};
    h.fill_ud = &rs;
    if (ctx->resume) {
        if (rl_restore(ctx->resume, &rs, err)) goto out;
    } else {
        int k = m2_replay_seed_offline(&buf, seeds, succ, n_seeds, (int)cfg->sys2_online_seed_offline, err);
        if (k < 0) goto out;
        if (ctx->out) fprintf(ctx->out, "%s: replay buffer seeded with %d successful expert segments\n", ctx->name, k);
    }
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = (int)cfg->eval_step_limit;
    lc.subgoal_budget = (int)cfg->sys2_subgoal_budget;
    lc.flat = flat;
    lc.env_name = cfg->env_name;
    lc.low_parts = pw_low_parts(cfg);
    lc.action_mode = (m2_action_mode)cfg->sys2_action_mode;
    m2_online_opts o = {0};
    o.step.critic = (m2_critic_cfg){.gamma = (float)cfg->sys2_online_gamma, .expectile = (float)cfg->sys2_offline_expectile};
    o.step.alpha = (float)cfg->sys2_online_alpha;
    o.step.w_max = (float)cfg->sys2_online_w_max;
    o.step.eta = (float)m2_run_online_eta(cfg);
    o.step.reduce = cfg->sys2_online_logprob == M2_LOGPROB_MEAN ? M2_REDUCE_MEAN : M2_REDUCE_SUM;
    o.step.train_actor = o.step.train_critic = 1;
    o.actor = opt_of(cfg, cfg->sys2_online_actor_lr, cfg->sys2_online_weight_decay);
    o.critic = opt_of(cfg, cfg->sys2_online_critic_lr, cfg->sys2_online_weight_decay);
    o.polyak = (float)cfg->sys2_online_polyak;
    o.epochs = (int)cfg->sys2_online_epochs;
    o.episodes_per_epoch = (int)cfg->sys2_online_episodes_per_epoch;
    o.updates_per_epoch = (int)cfg->sys2_online_updates_per_epoch;
    o.batch = batch;
    o.max_tokens = max_seq(cfg, w.m);
    o.task = cfg->env_task[0] ? cfg->env_task : NULL;
    o.split = M2_SPLIT_TRAIN;
    o.seed = pw_seed(cfg, PW_SEED_ONLINE_EPISODES);
    ctx->total = h.base + (int64_t)o.epochs * o.updates_per_epoch;
    if (ctx->out)
        fprintf(ctx->out, "%s: %d epochs x (%d episodes + %d updates), eta %g, System 1 %s\n", ctx->name, o.epochs,
                o.episodes_per_epoch, o.updates_per_epoch, o.step.eta, flat ? "absent (flat)" : "frozen");
    m2_train_hooks hk = hooks_of(&h);
    hk.epoch_end = hook_epoch_end;
    if (m2_train_online(w.m, con, coff, on, off, q, v, w.env, flat ? &p2 : &p1, &p2, &lc, &buf, &w.tok, &o, &st, &hk, err))
        goto out;
    ctx->step = h.base + st.step;
    if (m2_stage_writes(ctx) && (pw_save_adapter(&w, on, ctx->artifacts, err) || pw_save_heads(q, v, ctx->artifacts, err))) goto out;
    if (probe_finish(ctx, probe, on, err)) goto out;
    rc = 0;
out:
    pw_probe_free(probe);
    m2_seqset_free(&probe_set);
    m2_model_policy_free(&mp1);
    m2_model_policy_free(&mp2);
    if (buf_ok) m2_replay_free(&buf);
    pw_trajs_free(seeds, succ, n_seeds);
    m2_ctx_free(con);
    m2_ctx_free(coff);
    m2_seqset_free(&set);
    pw_close(&w);
    return rc;
}

/* ---------------------------------------------------------------- evaluation */

/* One split's evaluation as an ordered job over the ranks (m2_dist_map_ordered): make plays an
 * episode into its wire bytes, take adds it to the aggregate and rank 0 writes its record. */
typedef struct eval_job {
    pw_world *w;
    m2_split split;
    const char *task;
    const m2_episode_order *order;
    const m2_policy *p1, *p2;
    const m2_loop_cfg *lc;
    m2_progress *pg;          /* NULL: no progress line */
    int played, wins;         /* this rank's episodes so far */
    m2_jsonl *jl;
    FILE *jsonl;
    m2_eval_agg *agg;
    int writer;
} eval_job;

static int eval_make(void *ud, int64_t i, m2_strbuf *out, m2_err *err) {
    eval_job *j = ud;
    const m2_run_config *cfg = j->w->cfg;
    const m2_episode_ref *r = m2_episode_order_at(j->order, (int)i);
    m2_episode ep;
    uint64_t seed = (uint64_t)cfg->eval_seed + (uint64_t)i;
    if (m2_run_episode(j->w->env, r->task, j->split, r->index, seed, j->p1, j->p2, j->lc, &ep, err)) {
        m2_episode_free(&ep);
        return -1;
    }
    ep.task_type = strdup(r->type);
    char *rec = m2_eval_record_episode(&ep, m2_method_names[cfg->method], j->task);
    int rc = rec && ep.task_type ? m2_eval_wire_put(out, &ep, rec, err) : m2_errorf(err, M2_ENOMEM, "eval: out of memory");
    j->wins += ep.success;
    j->played++;
    free(rec);
    m2_episode_free(&ep);
    if (!rc && j->pg) {
        char extra[64];
        snprintf(extra, sizeof extra, "success %d/%d", j->wins, j->played);
        m2_progress_update(j->pg, j->played, extra);
    }
    return rc;
}

static int eval_take(void *ud, int64_t i, const char *item, size_t len, m2_err *err) {
    eval_job *j = ud;
    m2_episode ep;
    const char *rec = NULL;
    if (m2_eval_wire_get(item, len, &ep, &rec, err)) return -1;
    if (j->writer && j->jl && m2_jsonl_write_raw(j->jl, rec, err)) return -1;
    if (j->writer && j->jsonl) fputs(rec, j->jsonl), fputc('\n', j->jsonl);
    return j->agg ? m2_eval_agg_add(j->agg, &ep, err) : 0;
}

/* Positions 0..n-1 of the split's episode order, played by the run's adapters as they are in the
 * model (loaded from the run's artifacts unless a stage holds them already: the online stage's
 * learning curves evaluate its adapters as they train). Under MPI rank r plays the block
 * m2_dist_shard gives it; the episodes are gathered in episode order and added to agg on every
 * rank, and their records written by rank 0 alone, so the files and totals are those of one process
 * (an episode depends only on its position and seed: its samples come from its own stream,
 * agent/loop.h). The model policies are this call's own, seeded by PW_SEED_EVAL_*: no other stream
 * is drawn from. */
static int eval_split(pw_world *w, const eval_play *play, m2_split split, int n, FILE *progress, const char *label,
                      m2_jsonl *jl, FILE *jsonl, m2_eval_agg *agg, m2_dist *d, int writer, m2_err *err) {
    const m2_run_config *cfg = w->cfg;
    int flat = pw_is_flat(cfg);
    int swap = m2_method_of(cfg)->role_swap;
    m2_adapter *a1 = NULL, *a2;
    const char *n2 = pw_adapter_name(cfg, M2_ROLE_SYS2);
    if (!(a2 = pw_adapter(w, n2, NULL, 0, err))) return -1;
    if (!flat && !(a1 = pw_adapter(w, pw_adapter_name(cfg, M2_ROLE_SYS1), NULL, 0, err))) return -1;
    if (swap) { m2_adapter *t = a1; a1 = a2; a2 = t; }
    int max_new = (int)cfg->eval_max_new_tokens;
    m2_sampler smp = {(float)play->temperature, 0, 0.f};
    m2_model_policy mp1 = {.model = w->m, .sys1 = a1, .sys2 = a1, .tok = &w->tok, .sampler = smp,
                           .max_new_tokens = max_new, .max_context = policy_context(cfg, w->m, max_new),
                           .seed = pw_seed(cfg, PW_SEED_EVAL_SYS1_SAMPLING)};
    m2_model_policy mp2 = {.model = w->m, .sys1 = a2, .sys2 = a2, .tok = &w->tok, .sampler = smp,
                           .max_new_tokens = max_new, .max_context = policy_context(cfg, w->m, max_new),
                           .seed = pw_seed(cfg, PW_SEED_EVAL_SYS2_SAMPLING),
                           .score_mean = cfg->sys2_action_logprob == M2_LOGPROB_MEAN};
    m2_policy p1 = m2_model_policy_as(&mp1), p2 = m2_model_policy_as(&mp2);
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = (int)cfg->eval_step_limit;
    lc.subgoal_budget = (int)cfg->sys2_subgoal_budget;
    lc.flat = flat;
    lc.env_name = cfg->env_name;
    lc.low_parts = pw_low_parts(cfg);
    lc.action_mode = play->mode;
    const char *task = cfg->env_task[0] ? cfg->env_task : NULL;
    /* positions 0..n-1 of the episode order (data/episodes.h): evenly across task types */
    m2_episode_order order = {0};
    int ret = -1;
    if (m2_episode_order_build(w->env, task, split, &order, err)) goto done;
    if (n > order.n) n = order.n;
    int64_t lo, cnt;   /* this rank's episodes, for its progress line */
    m2_dist_shard(n, d ? d->rank : 0, d ? d->world : 1, &lo, &cnt);
    m2_progress pg;
    if (progress) m2_progress_begin(&pg, progress, label, (int)cnt, m2_run_progress_names[cfg->run_progress]);
    eval_job j = {.w = w, .split = split, .task = task, .order = &order, .p1 = flat ? &p2 : &p1, .p2 = &p2, .lc = &lc,
                  .pg = progress ? &pg : NULL, .jl = jl, .jsonl = jsonl, .agg = agg, .writer = writer};
    if (m2_dist_map_ordered(d, n, eval_make, eval_take, &j, err)) goto done;
    if (progress) {
        char extra[64];
        snprintf(extra, sizeof extra, "success %d/%d", j.wins, (int)cnt);
        m2_progress_end(&pg, extra);
    }
    ret = n;
done:
    m2_episode_order_free(&order);
    m2_model_policy_free(&mp1);
    m2_model_policy_free(&mp2);
    return ret;
}

/* The eval stage in one action mode: every split of eval.splits, its records written to
 * eval/<stem>.jsonl (m2_eval_file_stem: the split, and the mode unless it is the run's own), its
 * totals logged as eval/<stem>/{success,score,tokens,invalid_rate} and aggregated into agg. */
static int eval_mode(m2_stage_ctx *ctx, pw_world *w, m2_action_mode mode, m2_eval_agg *agg, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    const char *suffix = (int)mode == cfg->sys2_action_mode ? NULL : m2_action_mode_names[mode];
    const eval_play play = {.mode = mode, .temperature = cfg->eval_temperature};
    char split_name[32];
    for (int k = 0; m2_cfg_list_item(cfg->eval_splits, k, split_name, sizeof split_name); k++) {
        int sp = m2_split_parse(split_name);
        if (sp < 0) return m2_errorf(err, M2_ECONFIG, "eval.splits: unknown split '%s'", split_name);
        const char *split = m2_split_name((m2_split)sp);
        char stem[64];
        m2_eval_file_stem(split, suffix, stem, sizeof stem);
        m2_jsonl jl;
        memset(&jl, 0, sizeof jl);
        if (m2_stage_writes(ctx) && m2_run_eval_open(ctx->run, stem, 1, &jl, err)) return -1;
        char label[600];
        snprintf(label, sizeof label, "eval %s/%s%s%s", cfg->env_name, split, suffix ? " " : "", suffix ? suffix : "");
        int n = eval_split(w, &play, (m2_split)sp, (int)cfg->eval_episodes, ctx->out, label, m2_stage_writes(ctx) ? &jl : NULL,
                           NULL, agg, ctx->dist, m2_stage_writes(ctx), err);
        if (m2_stage_writes(ctx)) m2_jsonl_close(&jl);
        if (n < 0) return -1;
        const m2_eval_cell *cell = m2_eval_agg_find(agg, split, "all");
        if (!cell || cell->n == 0) continue;
        char k1[96], k2[96], k3[96], k4[96];
        snprintf(k1, sizeof k1, "eval/%s/success", stem);
        snprintf(k2, sizeof k2, "eval/%s/score", stem);
        snprintf(k3, sizeof k3, "eval/%s/tokens", stem);
        snprintf(k4, sizeof k4, "eval/%s/invalid_rate", stem);
        double steps = cell->steps > 0 ? cell->steps : 1;
        m2_scalar s[4] = {{k1, (double)cell->success / cell->n}, {k2, cell->score / cell->n},
                          {k3, (cell->sys1_prompt + cell->sys1_gen + cell->sys2_prompt + cell->sys2_gen) / cell->n},
                          {k4, cell->invalid / steps}};
        if (m2_stage_log(ctx, s, 4, err)) return -1;
    }
    return 0;
}

int m2_stage_eval(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    /* the run's own action mode first (its files and metrics as without eval.action_modes), then
     * every other listed one once */
    int modes[M2_N_ACTION_MODES], n_modes = 0, rc = 0;
    modes[n_modes++] = (int)cfg->sys2_action_mode;
    char item[32];
    for (int k = 0; m2_cfg_list_item(cfg->eval_action_modes, k, item, sizeof item); k++) {
        int m = 0;
        while (m < M2_N_ACTION_MODES && strcmp(m2_action_mode_names[m], item)) m++;
        if (m == M2_N_ACTION_MODES) { rc = m2_errorf(err, M2_ECONFIG, "eval.action_modes: unknown mode '%s'", item); break; }
        int seen = 0;
        for (int i = 0; i < n_modes; i++) seen |= modes[i] == m;
        if (!seen) modes[n_modes++] = m;
    }
    for (int i = 0; rc == 0 && i < n_modes; i++) {
        m2_eval_agg agg;
        m2_eval_agg_init(&agg);
        rc = eval_mode(ctx, &w, (m2_action_mode)modes[i], &agg, err);
        if (rc == 0 && m2_stage_writes(ctx)) {
            char *j = m2_eval_agg_to_json(&agg), stem[64], path[1400];
            m2_eval_file_stem("eval_summary", i ? m2_action_mode_names[modes[i]] : NULL, stem, sizeof stem);
            snprintf(path, sizeof path, "%s/%s.json", ctx->artifacts, stem);
            rc = j ? m2_write_file_atomic(path, j, strlen(j), err) : m2_errorf(err, M2_ENOMEM, "eval: out of memory");
            free(j);
        }
        m2_eval_agg_free(&agg);
    }
    pw_close(&w);
    return rc;
}

int m2_pipe_eval_run(const char *run_dir, const char *split, int episodes, int threads, int64_t seed,
                     int action_mode, uint64_t vary, FILE *jsonl, m2_eval_agg *agg, FILE *progress, m2_err *err) {
    return m2_pipe_eval_run_dist(run_dir, split, episodes, threads, seed, action_mode, vary, jsonl, agg, progress, NULL,
                                 err);
}

int m2_pipe_eval_run_dist(const char *run_dir, const char *split, int episodes, int threads, int64_t seed,
                          int action_mode, uint64_t vary, FILE *jsonl, m2_eval_agg *agg, FILE *progress, m2_dist *d,
                          m2_err *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(cfg, path, 0, NULL, err)) { free(cfg); return -1; }
    if (threads > 0) cfg->run_threads = threads;
    if (seed >= 0) cfg->eval_seed = seed;
    if (action_mode >= 0) {
        if (action_mode >= M2_N_ACTION_MODES) { free(cfg); return m2_errorf(err, M2_EINVAL, "action mode %d: unknown", action_mode); }
        cfg->sys2_action_mode = action_mode;
    }
    int sp = m2_split_parse(split);
    if (sp < 0) { free(cfg); return m2_errorf(err, M2_EINVAL, "split '%s': expected train, id or ood", split); }
    pw_world w;
    if (pw_open(&w, cfg, run_dir, 1, err)) { free(cfg); return -1; }
    if (vary && (!w.env->cls->vary ? m2_errorf(err, M2_EUNSUPPORTED, "environment %s has no procedurally varied worlds", cfg->env_name)
                                    : w.env->cls->vary(w.env, vary, err))) {
        pw_close(&w);
        free(cfg);
        return -1;
    }
    char label[600];
    snprintf(label, sizeof label, "eval %s/%s", cfg->env_name, m2_split_name((m2_split)sp));
    const eval_play play = {.mode = (m2_action_mode)cfg->sys2_action_mode, .temperature = cfg->eval_temperature};
    int n = eval_split(&w, &play, (m2_split)sp, episodes > 0 ? episodes : (int)cfg->eval_episodes, progress, label,
                       NULL, jsonl, agg, d, m2_dist_alone(d) || d->rank == 0, err);
    pw_close(&w);
    free(cfg);
    return n < 0 ? -1 : 0;
}

/* A reference policy's episodes as an ordered job (m2_pipe_reference_episodes): make rolls episode i
 * out into its wire bytes, take hands its summary and record to the caller's take. */
typedef struct ref_job {
    m2_env *env;
    const char *task;
    const m2_episode_order *order;
    m2_split split;
    const m2_rollout_opts *ro;
    const char *policy;
    uint64_t seed;
    int same_seed;
    m2_pipe_episode_fn take;
    void *ud;
} ref_job;

static int ref_make(void *ud, int64_t i, m2_strbuf *out, m2_err *err) {
    ref_job *j = ud;
    const m2_episode_ref *r = m2_episode_order_at(j->order, (int)i);
    m2_env_traj t;
    if (m2_rollout(j->env, r->task, j->split, r->index, j->seed + (j->same_seed ? 0 : (uint64_t)i), j->ro, &t, err)) {
        m2_env_traj_free(&t);
        return m2_err_prefix(err, "episode %lld: ", (long long)i);
    }
    m2_episode ep;
    m2_eval_traj_episode(&t, r->type, &ep);
    char *rec = m2_eval_record_traj(&t, j->policy, r->type, j->ro->max_steps);
    int rc = rec ? m2_eval_wire_put(out, &ep, rec, err) : m2_errorf(err, M2_ENOMEM, "out of memory");
    free(rec);
    m2_env_traj_free(&t);
    return rc;
}

static int ref_take(void *ud, int64_t i, const char *item, size_t len, m2_err *err) {
    ref_job *j = ud;
    m2_episode ep;
    const char *rec;
    return m2_eval_wire_get(item, len, &ep, &rec, err) || j->take(j->ud, i, &ep, rec, err) ? -1 : 0;
}

int m2_pipe_reference_episodes(m2_env *env, const char *task, m2_split split, int n, const m2_rollout_opts *ro,
                               const char *policy, uint64_t seed, int same_seed, m2_dist *d, m2_pipe_episode_fn take,
                               void *ud, m2_err *err) {
    m2_episode_order order;   /* the learned methods' episodes: the same positions of the same order */
    if (m2_episode_order_build(env, task, split, &order, err)) return -1;
    if (n > order.n) n = order.n;
    ref_job j = {.env = env, .task = task, .order = &order, .split = split, .ro = ro, .policy = policy, .seed = seed,
                 .same_seed = same_seed, .take = take, .ud = ud};
    int rc = m2_dist_map_ordered(d, n, ref_make, ref_take, &j, err);
    m2_episode_order_free(&order);
    return rc ? -1 : n;
}

/* m2_pipe_eval_reference's take: the wins, and the records written by rank 0 */
typedef struct ref_rows { int wins, writer; FILE *jsonl; } ref_rows;
static int ref_row(void *ud, int64_t i, const m2_episode *ep, const char *rec, m2_err *err) {
    ref_rows *r = ud;
    r->wins += ep->success != 0;
    if (r->writer && r->jsonl && fprintf(r->jsonl, "%s\n", rec) < 0) return m2_errorf(err, M2_EIO, "eval records: write failed");
    return 0;
}

int m2_pipe_eval_reference(const m2_run_config *cfg, const char *env_name, const char *policy, const char *split,
                           int episodes, FILE *jsonl, double *success, m2_dist *d, m2_err *err) {
    int pk = m2_policy_parse(policy), sp = m2_split_parse(split);
    if (pk < 0 || pk == M2_POLICY_MEDIUM) return m2_errorf(err, M2_EINVAL, "reference policy '%s': oracle or random", policy);
    if (sp < 0) return m2_errorf(err, M2_EINVAL, "split '%s': expected train, id or ood", split);
    m2_env *env;
    if (m2_env_create(env_name, NULL, &env, err)) return -1;
    m2_rollout_opts ro = {.policy = (m2_policy_kind)pk, .max_steps = (int)cfg->eval_step_limit,
                          .noise = M2_MEDIUM_NOISE_DEFAULT, .policy_seed = pw_seed(cfg, PW_SEED_EVAL_REFERENCE)};
    ref_rows rows = {.writer = m2_dist_alone(d) || d->rank == 0, .jsonl = jsonl};
    int n = m2_pipe_reference_episodes(env, NULL, (m2_split)sp, episodes, &ro, policy, (uint64_t)cfg->eval_seed, 0, d,
                                       ref_row, &rows, err);
    m2_env_destroy(env);
    if (success) *success = n > 0 ? (double)rows.wins / n : 0;
    return n < 0 ? -1 : 0;
}
