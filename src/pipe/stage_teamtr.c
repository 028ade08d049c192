/* The TeamTR pipeline (issue #16): the task family's questions and pre-training transcripts, and the
 * `teamtr` stage: teamtr.stages stages of agent-by-agent updates (algo/team_train.h), each followed by
 * the team's measured gain on fresh evaluation rollouts beside the stage's certificate.
 *
 * Global steps: one per agent update (stage s, position j: base + s*n + j + 1). Metrics per update
 * under teamtr/agentK/ (K = 1..n): surrogate_gain (L^), kl (D^), kl_raw (before the line search),
 * out_of_region, backtracks, rolled_back, reward, loss, clip_frac, tokens. Per stage (at its last
 * update's step) under teamtr/: certificate, measured_gain, eval_success, rollouts, cum_bound,
 * cum_gain, out_of_region_rate, rank_corr and violation_rate over the stages so far.
 *
 * Checkpoints at every stage end (the stale variants' cached rollouts live within a stage, so a
 * stage boundary holds no rollouts): every agent's adapter with its AdamW moments and step, the
 * stages done, the last measured success and the per-stage history. Every random stream is derived
 * from run.seed, the stage and the position in it, so nothing else is needed to continue bit for
 * bit. run.ckpt_every is not used: a stage end is the only point without cached rollouts. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"
#include "pipe/pipe.h"
#include "pipe/world.h"

/* ---------------------------------------------------------------- tasks and the team's shape */

int pw_team_tasks(const m2_run_config *cfg, int split, m2_qa_set *qs, m2_err *err) {
    int test = split == M2_QA_SPLIT_TEST;
    uint64_t seed = pw_seed(cfg, PW_SEED_TEAM_TASKS);
    switch (cfg->teamtr_task_family) {
    case M2_TEAMTR_TASK_ARITHMETIC:
        if (cfg->teamtr_task_min_ops > cfg->teamtr_task_max_ops)
            return m2_errorf(err, M2_ECONFIG, "teamtr.task.min_ops %lld is more than teamtr.task.max_ops %lld",
                             (long long)cfg->teamtr_task_min_ops, (long long)cfg->teamtr_task_max_ops);
        return m2_qa_arith(seed, split, (int)(test ? cfg->teamtr_task_test : cfg->teamtr_task_train),
                           (int)cfg->teamtr_task_train, (int)cfg->teamtr_task_min_ops, (int)cfg->teamtr_task_max_ops, qs, err);
    case M2_TEAMTR_TASK_CRAFT:
        return m2_qa_craft(cfg->env_data[0] ? cfg->env_data : NULL, seed, split,
                           (int)(test ? cfg->teamtr_task_test : cfg->teamtr_task_train), qs, err);
    default: {
        const char *path = test ? cfg->teamtr_task_test_path : cfg->teamtr_task_path;
        if (!path[0])
            return m2_errorf(err, M2_ECONFIG, "%s: empty (teamtr.task.family jsonl needs the file)",
                             test ? "teamtr.task.test_path" : "teamtr.task.path");
        return m2_qa_load_jsonl(path, qs, err);
    }
    }
}

static int team_size(const m2_run_config *cfg) { return (int)cfg->teamtr_agents; }

/* The team's protocol from the config (agents filled by the caller). */
static void team_shape(const m2_run_config *cfg, m2_team *t) {
    memset(t, 0, sizeof *t);
    t->n = team_size(cfg);
    t->protocol = cfg->teamtr_protocol == M2_TEAMTR_PROTOCOL_ROUTER ? M2_TEAM_ROUTER : M2_TEAM_CHAIN;
    t->order = cfg->teamtr_order == M2_TEAMTR_ORDER_RANDOM ? M2_TEAM_RANDOM : M2_TEAM_ROUND_ROBIN;
    t->turns = (int)cfg->teamtr_turns;
    t->order_seed = pw_seed(cfg, PW_SEED_TEAM_ORDER);
}

/* Question i played by the team with its worked solution split between the turns' speakers. */
static int worked_transcript(const m2_team *shape, const m2_qa *q, int i, m2_traj *tr, m2_err *err) {
    m2_team_sample s = {.id = (uint64_t)i};
    s.n_turns = m2_team_schedule(shape, s.id, s.speaker);
    if (s.n_turns < 1) return m2_errorf(err, M2_ECONFIG, "teamtr: no team of %d agents and %d turns", shape->n, shape->turns);
    if (m2_qa_parts(q, s.n_turns, s.msg, err)) return -1;
    int rc = m2_team_context(q->question, &s, s.n_turns, tr, err);
    m2_team_sample_free(&s);
    return rc;
}

char *pw_team_corpus(const m2_run_config *cfg, size_t *len, m2_err *err) {
    m2_qa_set qs;
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &qs, err)) return NULL;
    m2_team shape;
    team_shape(cfg, &shape);
    m2_strbuf sb = {0};
    int rc = 0;
    for (int i = 0; i < qs.n && !rc; i++) {
        m2_traj tr;
        if ((rc = worked_transcript(&shape, &qs.q[i], i, &tr, err))) break;
        /* the text as the packing concatenates it (segments without separators), one line each */
        rc = m2_strbuf_puts(&sb, tr.prompt);
        for (int t = 0; t < tr.n_states && !rc; t++) {
            rc = m2_strbuf_puts(&sb, tr.states[t]);
            if (!rc && t < tr.n_actions) rc = m2_strbuf_puts(&sb, tr.actions[t]);
        }
        if (!rc) rc = m2_strbuf_putc(&sb, '\n');
        m2_traj_free(&tr);
        if (rc) m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    }
    m2_qa_set_free(&qs);
    if (rc) { m2_strbuf_free(&sb); return NULL; }
    *len = sb.len;
    return m2_strbuf_take(&sb);
}

int pw_team_pretrain_set(const m2_run_config *cfg, const m2_tok_iface *tok, int seq_len, m2_seqset *set, m2_err *err) {
    m2_qa_set qs;
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &qs, err)) return -1;
    m2_team shape;
    team_shape(cfg, &shape);
    int rc = 0;
    for (int i = 0; i < qs.n && !rc; i++) {
        m2_traj tr;
        if ((rc = worked_transcript(&shape, &qs.q[i], i, &tr, err))) break;
        if (set->n == set->cap) {
            int nc = set->cap ? 2 * set->cap : 256;
            m2_packed *np = realloc(set->seq, (size_t)nc * sizeof *np);
            if (!np) { m2_traj_free(&tr); rc = m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); break; }
            set->seq = np;
            set->cap = nc;
        }
        m2_err pe = {0};
        if (m2_pack_traj(tok, &tr, seq_len, &set->seq[set->n], &pe)) {
            if (pe.code != M2_ESHAPE) { if (err) *err = pe; rc = -1; }
            else set->n_dropped++;   /* longer than pretrain.seq_len */
        } else {
            set->n++;
        }
        m2_traj_free(&tr);
    }
    m2_qa_set_free(&qs);
    return rc;
}

/* ---------------------------------------------------------------- the stage */

typedef struct tt_run {
    const m2_run_config *cfg;
    m2_team team;
    m2_teamtr tt;
    int n, stages, done;        /* agents, stages in all, stages done */
    int64_t base;               /* global step before the first update */
    double J;                   /* the last measured success */
    double J0;                  /* before the first stage */
    double *cert, *gain;        /* [stages] */
    long updates, outside;      /* updates so far, of which out of the region */
} tt_run;

static m2_teamtr_cfg loop_cfg(const m2_run_config *cfg) {
    int v = cfg->teamtr_variant;
    m2_teamtr_cfg c = {
        .mode = v == M2_TEAMTR_VARIANT_STALE ? M2_TT_STALE
              : v == M2_TEAMTR_VARIANT_STALE_HAPPO ? M2_TT_STALE_HAPPO
              : v == M2_TEAMTR_VARIANT_JOINT ? M2_TT_JOINT : M2_TT_FRESH,
        .group = (int)cfg->teamtr_group,
        .epochs = (int)cfg->teamtr_epochs,
        .lr = (float)cfg->teamtr_lr,
        .weight_decay = (float)cfg->teamtr_weight_decay,
        .grad_clip = (float)cfg->optim_grad_clip,
        .beta1 = (float)cfg->optim_beta1,
        .beta2 = (float)cfg->optim_beta2,
        .eps = (float)cfg->optim_eps,
        .clip = (float)cfg->teamtr_clip,
        .kl_init = (float)cfg->teamtr_kl_init,
        .delta = v == M2_TEAMTR_VARIANT_NO_TR ? INFINITY : cfg->teamtr_delta,
        .backtrack = (int)cfg->teamtr_backtrack,
        .a_max = (float)cfg->teamtr_a_max,
        .adv_eps = 1e-6f,   /* GRPO's epsilon in (R - mean) / (std + eps) */
        .max_tokens = (int)cfg->model_max_seq_len,
        .gen = {.sampler = {.temperature = (float)cfg->teamtr_temperature, .top_p = (float)cfg->teamtr_top_p},
                .max_new_tokens = (int)cfg->teamtr_max_new_tokens, .seed = pw_seed(cfg, PW_SEED_TEAM_ROLLOUTS)},
    };
    return c;
}

/* The measured-gain rollouts: the same test questions and sampling streams at every stage (common
 * random numbers: the difference between two stages is the team's, not the draw's). */
static int measure(tt_run *r, const m2_qa_set *test, double *J, m2_err *err) {
    const m2_run_config *cfg = r->cfg;
    m2_team_gen g = {.sampler = {.temperature = (float)cfg->teamtr_temperature, .top_p = (float)cfg->teamtr_top_p},
                     .max_new_tokens = (int)cfg->teamtr_max_new_tokens, .seed = pw_seed(cfg, PW_SEED_TEAM_EVAL)};
    return m2_team_success(&r->team, test, (int)cfg->teamtr_eval_tasks, (int)cfg->teamtr_eval_samples, &g, J, err);
}

static int tt_fill(tt_run *r, m2_ckpt *c, m2_err *err) {
    char name[32];
    for (int k = 0; k < r->n; k++) {
        snprintf(name, sizeof name, "agent%d", k + 1);
        if (pw_ck_add_params(c, name, &r->team.agent[k].adapter->params, err)) return -1;
    }
    int64_t ns = r->stages;
    if (m2_ckpt_add_copy(c, "teamtr.cert", M2_CKPT_F64, r->cert, 1, &ns, err) ||
        m2_ckpt_add_copy(c, "teamtr.gain", M2_CKPT_F64, r->gain, 1, &ns, err))
        return -1;
    double js[2] = {r->J, r->J0};
    int64_t two = 2;
    if (m2_ckpt_add_copy(c, "teamtr.J", M2_CKPT_F64, js, 1, &two, err)) return -1;
    cJSON *s = m2_ckpt_state(c);
    cJSON_AddNumberToObject(s, "stages_done", r->done);
    cJSON_AddNumberToObject(s, "base_step", (double)r->base);
    cJSON_AddNumberToObject(s, "updates", (double)r->updates);
    cJSON_AddNumberToObject(s, "outside", (double)r->outside);
    return 0;
}

static int tt_restore(tt_run *r, const m2_ckpt *c, m2_err *err) {
    char name[32];
    for (int k = 0; k < r->n; k++) {
        snprintf(name, sizeof name, "agent%d", k + 1);
        if (pw_ck_read_params(c, name, &r->team.agent[k].adapter->params, err)) return -1;
    }
    int64_t ns = r->stages, two = 2;
    double js[2];
    if (m2_ckpt_read(c, "teamtr.cert", M2_CKPT_F64, r->cert, 1, &ns, err) ||
        m2_ckpt_read(c, "teamtr.gain", M2_CKPT_F64, r->gain, 1, &ns, err) ||
        m2_ckpt_read(c, "teamtr.J", M2_CKPT_F64, js, 1, &two, err))
        return -1;
    r->J = js[0];
    r->J0 = js[1];
    const cJSON *s = ((m2_ckpt *)c)->state;
    static const char *keys[4] = {"stages_done", "base_step", "updates", "outside"};
    double v[4];
    for (int i = 0; i < 4; i++) {
        const cJSON *x = s ? cJSON_GetObjectItemCaseSensitive(s, keys[i]) : NULL;
        if (!cJSON_IsNumber(x)) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: teamtr state has no \"%s\"", c->dir, keys[i]);
        v[i] = x->valuedouble;
    }
    r->done = (int)v[0];
    r->base = (int64_t)v[1];
    r->updates = (long)v[2];
    r->outside = (long)v[3];
    if (r->done < 0 || r->done > r->stages)
        return m2_errorf(err, M2_EFORMAT, "checkpoint %s: %d stages done of %d", c->dir, r->done, r->stages);
    return 0;
}

/* Per-update metrics of agent k (1-based in the names). */
static int log_update(m2_stage_ctx *ctx, const m2_teamtr_update *u, m2_err *err) {
    static const char *const keys[10] = {"surrogate_gain", "kl", "kl_raw", "out_of_region", "backtracks",
                                         "rolled_back", "reward", "loss", "clip_frac", "tokens"};
    const double v[10] = {u->L, u->D, u->D_raw, u->out_of_region, u->backtracks, u->rolled_back,
                          u->reward_mean, u->loss, u->clip_frac, u->n_tokens};
    char names[10][64];
    m2_scalar s[10];
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof names[i], "teamtr/agent%d/%s", u->agent + 1, keys[i]);
        s[i] = (m2_scalar){names[i], v[i]};
    }
    return m2_stage_log(ctx, s, 10, err);
}

/* A JSONL record of one played question. */
static int write_record(FILE *f, int index, const m2_qa *q, const m2_team_sample *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddStringToObject(o, "question", q->question);
    cJSON_AddStringToObject(o, "answer", q->answer);
    cJSON *sp = cJSON_AddArrayToObject(o, "speakers"), *ms = cJSON_AddArrayToObject(o, "messages");
    for (int j = 0; j < s->n_turns; j++) {
        cJSON_AddItemToArray(sp, cJSON_CreateNumber(s->speaker[j] + 1));
        cJSON_AddItemToArray(ms, cJSON_CreateString(s->msg[j] ? s->msg[j] : ""));
    }
    cJSON_AddBoolToObject(o, "success", s->reward > 0);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int rc = t && fprintf(f, "%s\n", t) > 0 ? 0 : -1;
    free(t);
    return rc;
}

/* Greedy test success of the chain, of each agent alone (a team of one) and of the best of the
 * agents alone per question, over the first n questions; chain records to jsonl (may be NULL). */
static int greedy_eval(const m2_team *team, const m2_qa_set *test, int n, int max_new, FILE *jsonl, m2_team_eval *ev,
                       m2_err *err) {
    memset(ev, 0, sizeof *ev);
    if (n <= 0 || n > test->n) n = test->n;
    ev->n_agents = team->n;
    ev->questions = n;
    m2_team_gen g = {.sampler = {.temperature = 0}, .max_new_tokens = max_new, .seed = 0};
    int *solved = calloc((size_t)(n ? n : 1), sizeof *solved);
    m2_team_sample *s = calloc((size_t)(n ? n : 1), sizeof *s);
    int rc = !solved || !s ? m2_errorf(err, M2_ENOMEM, "teamtr: out of memory") : 0;
    for (int k = -1; k < team->n && !rc; k++) {   /* k = -1: the chain */
        m2_team one = {.n = 1, .protocol = M2_TEAM_CHAIN};
        if (k >= 0) one.agent[0] = team->agent[k];
        for (int i = 0; i < n; i++) s[i] = (m2_team_sample){.task = i, .id = (uint64_t)i};
        if ((rc = m2_team_play(k < 0 ? team : &one, test, s, n, &g, err))) break;
        for (int i = 0; i < n; i++) {
            if (k < 0) {
                ev->chain += s[i].reward / n;
                if (jsonl && !rc && write_record(jsonl, i, &test->q[i], &s[i])) rc = m2_errorf(err, M2_EIO, "eval records: write failed");
            } else {
                ev->alone[k] += s[i].reward / n;
                solved[i] |= s[i].reward > 0;
            }
            m2_team_sample_free(&s[i]);
        }
    }
    for (int i = 0; i < n && !rc; i++) ev->best_of += solved[i] / (double)n;
    free(solved);
    free(s);
    return rc;
}

/* The final greedy evaluation, written to artifacts/teamtr/eval.json with the per-stage history. */
static int final_eval(tt_run *r, const m2_qa_set *test, m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = r->cfg;
    m2_team_eval ev;
    if (greedy_eval(&r->team, test, (int)cfg->teamtr_eval_tasks, (int)cfg->teamtr_max_new_tokens, NULL, &ev, err)) return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "variant", m2_teamtr_variant_names[cfg->teamtr_variant]);
    cJSON_AddNumberToObject(o, "agents", r->n);
    cJSON_AddNumberToObject(o, "questions", ev.questions);
    cJSON_AddNumberToObject(o, "chain", ev.chain);
    cJSON *a = cJSON_AddArrayToObject(o, "alone");
    for (int k = 0; k < r->n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ev.alone[k]));
    cJSON_AddNumberToObject(o, "best_of", ev.best_of);
    cJSON_AddNumberToObject(o, "success_before", r->J0);
    cJSON_AddNumberToObject(o, "success_after", r->J);
    cJSON *cs = cJSON_AddArrayToObject(o, "certificate"), *gs = cJSON_AddArrayToObject(o, "measured_gain");
    for (int i = 0; i < r->stages; i++) {
        cJSON_AddItemToArray(cs, cJSON_CreateNumber(r->cert[i]));
        cJSON_AddItemToArray(gs, cJSON_CreateNumber(r->gain[i]));
    }
    cJSON_AddNumberToObject(o, "rank_corr", m2_rank_correlation(r->cert, r->gain, r->stages));
    cJSON_AddNumberToObject(o, "violation_rate", m2_violation_rate(r->cert, r->gain, r->stages));
    cJSON_AddNumberToObject(o, "out_of_region_rate", r->updates ? (double)r->outside / r->updates : 0.0);
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    char path[1400];
    snprintf(path, sizeof path, "%s/eval.json", ctx->artifacts);
    int rc = txt ? m2_write_file_atomic(path, txt, strlen(txt), err) : m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    free(txt);
    if (!rc && ctx->out) {
        fprintf(ctx->out, "teamtr: greedy test success (%d questions): chain %.3f, best of agents alone %.3f, alone",
                ev.questions, ev.chain, ev.best_of);
        for (int k = 0; k < r->n; k++) fprintf(ctx->out, " %.3f", ev.alone[k]);
        fprintf(ctx->out, " -> %s\n", path);
    }
    return rc;
}

int m2_pipe_eval_team_run(const char *run_dir, int n, FILE *jsonl, m2_team_eval *out, m2_err *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(cfg, path, 0, NULL, err)) { free(cfg); return -1; }
    if (!m2_method_of(cfg)->team) {
        m2_errorf(err, M2_EINVAL, "%s: method %s is no team run", run_dir, m2_method_names[cfg->method]);
        free(cfg);
        return -1;
    }
    pw_world w;
    if (pw_open(&w, cfg, run_dir, 1, err)) { free(cfg); return -1; }
    m2_team team;
    team_shape(cfg, &team);
    m2_qa_set test;
    m2_qa_set_init(&test);
    int rc = pw_team_tasks(cfg, M2_QA_SPLIT_TEST, &test, err);
    for (int k = 0; k < team.n && !rc; k++) {
        char name[32], dir[1400];
        snprintf(name, sizeof name, "agent%d", k + 1);
        snprintf(dir, sizeof dir, "%s/artifacts/teamtr/adapter_%s", run_dir, name);
        if (!m2_path_exists(dir)) { rc = m2_errorf(err, M2_ENOTFOUND, "%s: missing (the teamtr stage writes it at its end)", dir); break; }
        m2_adapter *a = m2_peft_load(w.m, dir, name, err);
        if (!a) { rc = -1; break; }
        team.agent[k] = (m2_team_agent){.model = w.m, .adapter = a, .tok = &w.tok};
    }
    if (!rc) rc = greedy_eval(&team, &test, n > 0 ? n : (int)cfg->teamtr_eval_tasks, (int)cfg->teamtr_max_new_tokens,
                              jsonl, out, err);
    m2_qa_set_free(&test);
    pw_close(&w);
    free(cfg);
    return rc;
}

int m2_stage_teamtr(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    tt_run r = {.cfg = cfg, .stages = (int)cfg->teamtr_stages};
    team_shape(cfg, &r.team);
    r.n = r.team.n;
    r.tt.team = &r.team;
    m2_qa_set train, test;
    m2_qa_set_init(&train);
    m2_qa_set_init(&test);
    int *perm = NULL, *tasks = NULL, rc = -1;
    m2_teamtr_cfg lc = loop_cfg(cfg);
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &train, err) || pw_team_tasks(cfg, M2_QA_SPLIT_TEST, &test, err)) goto out;
    r.cert = calloc((size_t)r.stages, sizeof *r.cert);
    r.gain = calloc((size_t)r.stages, sizeof *r.gain);
    int T = (int)cfg->teamtr_tasks_per_stage;
    perm = malloc((size_t)train.n * sizeof *perm);
    tasks = malloc((size_t)T * sizeof *tasks);
    if (!r.cert || !r.gain || !perm || !tasks) { m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); goto out; }
    /* the agents: an adapter each on the shared base, a frozen snapshot, and the initial policy for kl_init */
    for (int k = 0; k < r.n; k++) {
        m2_lora_config lo = {.rank = (int)cfg->teamtr_lora_rank, .alpha = (float)cfg->teamtr_lora_alpha};
        if (m2_lora_parse_targets(cfg->teamtr_lora_targets, &lo.targets) != 0 || !lo.targets) lo.targets = M2_LORA_Q | M2_LORA_V;
        snprintf(lo.name, sizeof lo.name, "agent%d", k + 1);
        m2_adapter *a = m2_adapter_add(w.m, &lo, pw_seed(cfg, (pw_seed_purpose)(PW_SEED_ADAPTER_AGENT0 + k)), err);
        snprintf(lo.name, sizeof lo.name, "agent%d_old", k + 1);
        m2_adapter *o = a ? m2_adapter_add(w.m, &lo, 0, err) : NULL;
        if (!o || m2_adapter_set_trainable(o, 0, err)) goto out;
        r.team.agent[k] = (m2_team_agent){.model = w.m, .adapter = a, .tok = &w.tok};
        r.tt.old[k] = o;
        if (cfg->teamtr_kl_init > 0) {
            snprintf(lo.name, sizeof lo.name, "agent%d_init", k + 1);
            m2_adapter *i0 = m2_adapter_add(w.m, &lo, 0, err);
            if (!i0 || m2_adapter_copy_weights(i0, a, err) || m2_adapter_set_trainable(i0, 0, err)) goto out;
            r.tt.init[k] = i0;
        }
    }
    /* the stages walk one permutation of the training questions */
    {
        m2_rng pr;
        m2_rng_seed(&pr, pw_seed(cfg, PW_SEED_TEAM_CURSOR));
        uint32_t *p32 = malloc((size_t)train.n * sizeof *p32);
        if (!p32) { m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); goto out; }
        for (int i = 0; i < train.n; i++) p32[i] = (uint32_t)i;
        m2_rng_shuffle_u32(&pr, p32, (uint32_t)train.n);
        for (int i = 0; i < train.n; i++) perm[i] = (int)p32[i];
        free(p32);
    }
    if (ctx->resume) {
        if (tt_restore(&r, ctx->resume, err)) goto out;
    } else {
        r.base = ctx->step;
        if (measure(&r, &test, &r.J, err)) goto out;
        r.J0 = r.J;
    }
    ctx->total = r.base + (int64_t)r.stages * r.n;
    if (ctx->out)
        fprintf(ctx->out, "teamtr: %s, %d agent%s (%s, %s), %d train / %d test questions, %d stages of %d questions x %d "
                          "rollouts, delta %g; success before %.3f\n",
                m2_teamtr_variant_names[cfg->teamtr_variant], r.n, r.n == 1 ? "" : "s",
                r.team.protocol == M2_TEAM_ROUTER ? "router" : "chain", r.team.order == M2_TEAM_RANDOM ? "random" : "round robin",
                train.n, test.n, r.stages, T, lc.group, lc.delta, r.J0);
    m2_progress bar;
    m2_progress_begin(&bar, ctx->out, "teamtr", r.stages, m2_run_progress_names[cfg->run_progress]);
    m2_progress_update(&bar, r.done, NULL);
    for (int s = r.done; s < r.stages; s++) {
        for (int i = 0; i < T; i++) tasks[i] = perm[(int)(((int64_t)s * T + i) % train.n)];
        int sigma[M2_TEAM_MAX];
        for (int k = 0; k < r.n; k++) sigma[k] = k;
        if (cfg->teamtr_update_order == M2_TEAMTR_SIGMA_RANDOM) {
            m2_rng sr;
            m2_rng_seed_stream(&sr, pw_seed(cfg, PW_SEED_TEAM_SIGMA), (uint64_t)s);
            uint32_t p[M2_TEAM_MAX];
            for (int k = 0; k < r.n; k++) p[k] = (uint32_t)k;
            m2_rng_shuffle_u32(&sr, p, (uint32_t)r.n);
            for (int k = 0; k < r.n; k++) sigma[k] = (int)p[k];
        }
        m2_teamtr_stage_stats st;
        if (m2_teamtr_stage(&r.tt, &train, tasks, T, sigma, (uint64_t)s + 1, &lc, &st, err)) goto out_bar;
        float L[M2_TEAM_MAX], D[M2_TEAM_MAX];
        for (int j = 0; j < st.n; j++) {
            ctx->step = r.base + (int64_t)s * r.n + j + 1;
            if (log_update(ctx, &st.u[j], err)) goto out_bar;
            L[j] = (float)st.u[j].L;
            D[j] = (float)st.u[j].D;
            r.updates++;
            r.outside += st.u[j].out_of_region;
        }
        double J;
        if (measure(&r, &test, &J, err)) goto out_bar;
        r.cert[s] = m2_stage_certificate(L, D, st.n, (float)cfg->teamtr_cert_c);
        r.gain[s] = J - r.J;
        r.J = J;
        r.done = s + 1;
        double cb = 0, cg = 0;
        for (int i = 0; i <= s; i++) { cb += r.cert[i]; cg += r.gain[i]; }
        const m2_scalar sc[9] = {
            {"teamtr/certificate", r.cert[s]}, {"teamtr/measured_gain", r.gain[s]}, {"teamtr/eval_success", J},
            {"teamtr/rollouts", (double)st.rollouts}, {"teamtr/cum_bound", cb}, {"teamtr/cum_gain", cg},
            {"teamtr/out_of_region_rate", r.updates ? (double)r.outside / r.updates : 0.0},
            {"teamtr/rank_corr", m2_rank_correlation(r.cert, r.gain, r.done)},
            {"teamtr/violation_rate", m2_violation_rate(r.cert, r.gain, r.done)},
        };
        ctx->step = r.base + (int64_t)(s + 1) * r.n;
        if (m2_stage_log(ctx, sc, 9, err)) goto out_bar;
        char extra[96];
        snprintf(extra, sizeof extra, "success %.3f  bound %+.3f  gain %+.3f", J, r.cert[s], r.gain[s]);
        m2_progress_update(&bar, r.done, extra);
        m2_ckpt *c = m2_ckpt_new(0, "");
        if (!c) { m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory"); goto out_bar; }
        int sr = tt_fill(&r, c, err);
        if (!sr) sr = m2_stage_save(ctx, c, err);
        m2_ckpt_free(c);
        if (sr) goto out_bar;
        if (cfg->run_stop_at_step == ctx->step) {
            m2_errorf(err, M2_ESTOPPED, "stopped after the checkpoint of step %lld (run.stop_at_step)", (long long)ctx->step);
            goto out_bar;
        }
    }
    m2_progress_end(&bar, NULL);
    ctx->step = r.base + (int64_t)r.stages * r.n;
    for (int k = 0; k < r.n; k++)
        if (pw_save_adapter(&w, r.team.agent[k].adapter, ctx->artifacts, err)) goto out;
    if (final_eval(&r, &test, ctx, err)) goto out;
    rc = 0;
    goto out;
out_bar:
    m2_progress_end(&bar, NULL);
out:
    m2_teamtr_free(&r.tt);
    free(r.cert);
    free(r.gain);
    free(perm);
    free(tasks);
    m2_qa_set_free(&train);
    m2_qa_set_free(&test);
    pw_close(&w);
    return rc;
}
