/* model/: whole-model finite-difference gradients (LoRA factors, every base weight, heads and
 * head->adapter), adapter switching, merge/unmerge, KV-cache generation vs the training forward,
 * quantised storage, determinism, AdamW/clipping/schedules, KL between adapters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "model/model.h"

#define NSEQ 3
static const int LENS[NSEQ] = {7, 3, 5};
static int32_t TOK[15];
static int32_t TGT[15];
static float W[15];   /* per-position loss weights (a loss mask with random values) */

static m2_batch make_batch(void) {
    m2_batch b = {NSEQ, LENS, TOK};
    return b;
}

static m2_model *tiny(const char *preset, int train_base, m2_dtype dt) {
    m2_model_config cfg;
    m2_err err = {0};
    assert_int_equal(m2_config_preset(preset, &cfg, &err), 0);
    m2_model_opts o = {dt, train_base, 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    if (!m) fprintf(stderr, "%s\n", err.msg);
    assert_non_null(m);
    m2_model_init_random(m, 7, 0.2f);
    return m;
}

typedef struct {
    m2_ctx *c; m2_adapter *a; m2_head *h; int head_pos[3];
} loss_ctx;

/* loss = -sum_n W[n] logp[n] (+ sum_k head(hidden[pos_k]) * (k+1)) */
static double model_loss(loss_ctx *L, int backward) {
    m2_err err = {0};
    m2_batch b = make_batch();
    assert_int_equal(m2_forward(L->c, &b, L->a, 0, &err), 0);
    float logp[15], dlogp[15];
    m2_ctx_logprobs(L->c, TGT, logp);
    double loss = 0;
    for (int n = 0; n < 15; n++) { loss -= W[n] * logp[n]; dlogp[n] = -W[n]; }
    float hv[3], dh[3] = {1, 2, 3};
    if (L->h) {
        assert_int_equal(m2_head_forward(L->h, m2_ctx_hidden(L->c), L->head_pos, 3, 0, hv, &err), 0);
        for (int k = 0; k < 3; k++) loss += hv[k] * dh[k];
    }
    if (backward) {
        m2_ctx_logprobs_backward(L->c, TGT, dlogp);
        if (L->h) assert_int_equal(m2_head_backward(L->h, dh, L->head_pos, 3, m2_ctx_dhidden(L->c), &err), 0);
        assert_int_equal(m2_backward(L->c, &err), 0);
    }
    return loss;
}

static void fd_check(const char *what, loss_ctx *L, float *x, const float *g, size_t n, int checks,
                     float eps, double tol) {
    m2_rng r;
    m2_rng_seed(&r, n);
    double worst = 0;
    for (int c = 0; c < checks; c++) {
        size_t i = m2_rng_below(&r, (uint32_t)n);
        float save = x[i];
        x[i] = save + eps; double lp = model_loss(L, 0);
        x[i] = save - eps; double lm = model_loss(L, 0);
        x[i] = save;
        double fd = (lp - lm) / (2.0 * eps);
        double e = fabs(fd - g[i]) / (fabs(fd) + fabs(g[i]) + 2e-2);
        if (e > worst) worst = e;
        if (e > tol) fprintf(stderr, "%s[%zu]: analytic %.6g numeric %.6g\n", what, i, g[i], fd);
    }
    assert_true(worst <= tol);
}

static void setup_data(void) {
    m2_rng r;
    m2_rng_seed(&r, 99);
    for (int i = 0; i < 15; i++) { TOK[i] = (int32_t)m2_rng_below(&r, 64); W[i] = m2_rng_uniform(&r); }
    m2_batch b = make_batch();
    m2_batch_next_targets(&b, TGT);
    W[3] = 0;   /* masked position */
}

static void randomize(m2_params *p, float s, uint64_t seed) {
    m2_rng r;
    m2_rng_seed(&r, seed);
    for (size_t i = 0; i < p->n; i++) p->w[i] = s * m2_rng_normal(&r);
}

static void lora_and_head_grads(void **st) {
    const char *presets[] = {"test-llama", "test-qwen2"};
    for (int pi = 0; pi < 2; pi++) {
        m2_model *m = tiny(presets[pi], 0, M2_DT_F32);
        m2_err err = {0};
        m2_lora_config lc = {"a", 4, 8.0f, 0.0f, M2_LORA_ALL};
        m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
        assert_non_null(a);
        randomize(&a->params, 0.3f, 5);
        /* llama: the default H -> H -> 1 head; qwen2: H -> 5 -> 1 */
        m2_head *h = m2_head_add_sized(m, "q", pi ? 5 : 0, 3, &err);
        assert_non_null(h);
        assert_int_equal(h->F, pi ? 5 : m->cfg.dim);
        assert_int_equal(h->params.n, (size_t)h->F * m->cfg.dim + 2 * (size_t)h->F + 1);
        randomize(&h->params, 0.3f, 6);
        m2_ctx *c = m2_ctx_create(m, 32, 1, &err);
        assert_non_null(c);
        loss_ctx L = {c, a, h, {2, 9, 14}};
        model_loss(&L, 1);
        assert_null(m->base.g);   /* frozen base: no gradient storage at all */
        float *ga = malloc(a->params.n * 4), *gh = malloc(h->params.n * 4);
        memcpy(ga, a->params.g, a->params.n * 4);
        memcpy(gh, h->params.g, h->params.n * 4);
        fd_check("lora", &L, a->params.w, ga, a->params.n, 40, 2e-3f, 3e-2);
        fd_check("head", &L, h->params.w, gh, h->params.n, 20, 1e-2f, 3e-2);
        /* hidden-only forwards (no logits) give the same hidden states and head-only gradients */
        {
            m2_batch b = make_batch();
            float *hid = malloc(15 * (size_t)m->cfg.dim * 4);
            m2_forward(c, &b, a, 0, &err);
            memcpy(hid, m2_ctx_hidden(c), 15 * (size_t)m->cfg.dim * 4);
            m2_ctx_want_logits(c, 0);
            m2_forward(c, &b, a, 0, &err);
            assert_memory_equal(hid, m2_ctx_hidden(c), 15 * (size_t)m->cfg.dim * 4);
            float hv[3], one[3] = {1, 1, 1};
            m2_params_zero_grad(&a->params); m2_params_zero_grad(&h->params);
            m2_head_forward(h, m2_ctx_hidden(c), L.head_pos, 3, 0, hv, &err);
            m2_head_backward(h, one, L.head_pos, 3, m2_ctx_dhidden(c), &err);
            assert_int_equal(m2_backward(c, &err), 0);
            assert_true(m2_grad_norm((m2_params *[]){&a->params}, 1) > 0);
            m2_ctx_want_logits(c, 1);
            free(hid);
        }
        /* switch: head gradients stop at the head */
        m2_params_zero_grad(&a->params); m2_params_zero_grad(&h->params);
        h->grad_to_body = 0;
        L.h = h;
        model_loss(&L, 1);
        float *ga2 = malloc(a->params.n * 4);
        memcpy(ga2, a->params.g, a->params.n * 4);
        m2_params_zero_grad(&a->params);
        L.h = NULL;
        model_loss(&L, 1);
        for (size_t i = 0; i < a->params.n; i++) assert_true(fabsf(ga2[i] - a->params.g[i]) <= 1e-6f * (1 + fabsf(ga2[i])));
        free(ga); free(gh); free(ga2);
        m2_ctx_free(c);
        m2_model_free(m);
    }
}

static void base_grads(void **st) {
    const char *presets[] = {"test-llama", "test-qwen2"};
    for (int pi = 0; pi < 2; pi++) {
        m2_model *m = tiny(presets[pi], 1, M2_DT_F32);
        m2_err err = {0};
        m2_ctx *c = m2_ctx_create(m, 32, 1, &err);
        loss_ctx L = {c, NULL, NULL, {0}};
        model_loss(&L, 1);
        /* check a few entries of EVERY base tensor */
        for (int t = 0; t < m->n_tensors; t++) {
            m2_tensor *T = &m->tensors[t];
            if (pi == 1 && T == m->output && T != m->tok_embd) continue;
            size_t n = (size_t)T->rows * T->cols;
            float *g = malloc(n * 4);
            memcpy(g, T->grad, n * 4);
            fd_check(T->name, &L, T->data, g, n, 6, 1e-2f, 3e-2);
            free(g);
        }
        m2_ctx_free(c);
        m2_model_free(m);
    }
}

static void dropout_grads(void **st) {
    /* with dropout, the same ctx seed gives the same mask: FD against a fixed seed */
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_lora_config lc = {"d", 2, 4.0f, 0.3f, M2_LORA_Q | M2_LORA_DOWN};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
    randomize(&a->params, 0.3f, 8);
    m2_ctx *c = m2_ctx_create(m, 32, 1, &err);
    m2_batch b = make_batch();
    float logp[15], dlogp[15];
    for (int n = 0; n < 15; n++) dlogp[n] = -W[n];
    m2_ctx_seed(c, 4);
    assert_int_equal(m2_forward(c, &b, a, 1, &err), 0);
    m2_ctx_logprobs_backward(c, TGT, dlogp);
    assert_int_equal(m2_backward(c, &err), 0);
    float *g = malloc(a->params.n * 4);
    memcpy(g, a->params.g, a->params.n * 4);
    for (int k = 0; k < 10; k++) {
        size_t i = (k * 7919) % a->params.n;
        float save = a->params.w[i], eps = 1e-2f;
        double l[2];
        for (int s = 0; s < 2; s++) {
            a->params.w[i] = save + (s ? -eps : eps);
            m2_ctx_seed(c, 4);
            m2_forward(c, &b, a, 1, &err);
            m2_ctx_logprobs(c, TGT, logp);
            l[s] = 0;
            for (int n = 0; n < 15; n++) l[s] -= W[n] * logp[n];
        }
        a->params.w[i] = save;
        double fd = (l[0] - l[1]) / (2 * eps);
        assert_true(fabs(fd - g[i]) / (fabs(fd) + fabs(g[i]) + 2e-2) < 3e-2);
    }
    /* masks are a function of the ctx seed only: a scoring ctx (no kept activations) applies the
     * same dropout as the training ctx, and another seed gives other outputs */
    m2_ctx *c2 = m2_ctx_create(m, 32, 0, &err);
    float lp2[15];
    m2_ctx_seed(c, 4); m2_forward(c, &b, a, 1, &err); m2_ctx_logprobs(c, TGT, logp);
    m2_ctx_seed(c2, 4); assert_int_equal(m2_forward(c2, &b, a, 1, &err), 0); m2_ctx_logprobs(c2, TGT, lp2);
    assert_memory_equal(logp, lp2, sizeof logp);
    m2_ctx_seed(c2, 5); m2_forward(c2, &b, a, 1, &err); m2_ctx_logprobs(c2, TGT, lp2);
    assert_true(memcmp(logp, lp2, sizeof logp) != 0);
    m2_ctx_free(c2);
    free(g);
    m2_ctx_free(c);
    m2_model_free(m);
}

static void adapters_switch_and_merge(void **st) {
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_lora_config c1 = {"planner", 4, 8.0f, 0, M2_LORA_Q | M2_LORA_V};
    m2_lora_config c2 = {"executor", 2, 2.0f, 0, M2_LORA_ALL};
    m2_adapter *a = m2_adapter_add(m, &c1, 1, &err), *b2 = m2_adapter_add(m, &c2, 2, &err);
    assert_non_null(a); assert_non_null(b2);
    assert_null(m2_adapter_add(m, &c1, 1, &err));   /* duplicate name */
    assert_ptr_equal(m2_adapter_find(m, "executor"), b2);
    m2_ctx *c = m2_ctx_create(m, 32, 0, &err);
    m2_batch b = make_batch();
    int V = m->cfg.vocab_size;
    size_t nl = 15 * (size_t)V;
    float *base = malloc(nl * 4), *la = malloc(nl * 4), *lb = malloc(nl * 4), *tmp = malloc(nl * 4);
    m2_forward(c, &b, NULL, 0, &err); memcpy(base, m2_ctx_logits(c), nl * 4);
    /* fresh adapters (B = 0) equal the base exactly */
    m2_forward(c, &b, a, 0, &err);
    assert_memory_equal(base, m2_ctx_logits(c), nl * 4);
    randomize(&a->params, 0.2f, 11); randomize(&b2->params, 0.2f, 12);
    m2_forward(c, &b, a, 0, &err); memcpy(la, m2_ctx_logits(c), nl * 4);
    m2_forward(c, &b, b2, 0, &err); memcpy(lb, m2_ctx_logits(c), nl * 4);
    m2_forward(c, &b, a, 0, &err);
    assert_memory_equal(la, m2_ctx_logits(c), nl * 4);   /* A -> B -> A identical */
    m2_forward(c, &b, NULL, 0, &err);
    assert_memory_equal(base, m2_ctx_logits(c), nl * 4); /* base untouched */
    double d = 0;
    for (size_t i = 0; i < nl; i++) d += fabs(la[i] - lb[i]);
    assert_true(d > 1e-2);
    /* merge: base forward == adapter forward; unmerge restores */
    assert_int_equal(m2_adapter_merge(m, a, &err), 0);
    assert_int_equal(m2_forward(c, &b, a, 0, &err), -1);   /* merged adapter cannot be active */
    m2_forward(c, &b, NULL, 0, &err);
    for (size_t i = 0; i < nl; i++) assert_true(fabsf(m2_ctx_logits(c)[i] - la[i]) < 1e-4f);
    assert_int_equal(m2_adapter_unmerge(m, a, &err), 0);
    m2_forward(c, &b, NULL, 0, &err);
    for (size_t i = 0; i < nl; i++) assert_true(fabsf(m2_ctx_logits(c)[i] - base[i]) < 1e-5f);
    /* enumeration */
    assert_int_equal(m2_adapter_tensor_count(a), 2 * 2 * 2);
    char name[96]; int r, cc; float *data;
    assert_int_equal(m2_adapter_tensor_info(a, 1, name, sizeof name, &r, &cc, &data), 0);
    assert_string_equal(name, "blk.0.attn_q.weight.lora_b");
    assert_int_equal(r, 32); assert_int_equal(cc, 4);
    assert_ptr_equal(m2_adapter_tensor(a, "blk.1.attn_v.weight.lora_a", &r, &cc), a->pairs[1 * 7 + 2].A);
    unsigned bits;
    assert_int_equal(m2_lora_parse_targets("q_proj,v_proj", &bits), 0);
    assert_int_equal(bits, M2_LORA_Q | M2_LORA_V);
    assert_int_equal(m2_lora_parse_targets("q,bogus", &bits), -1);
    /* freeze / unfreeze */
    assert_int_equal(m2_adapter_set_trainable(a, 0, &err), 0);
    assert_null(a->params.g); assert_null(a->pairs[0].dA);
    assert_int_equal(m2_adapter_set_trainable(a, 1, &err), 0);
    assert_ptr_equal(a->pairs[0].dA, a->params.g);
    assert_int_equal(m2_adapter_remove(m, b2, &err), 0);
    assert_null(m2_adapter_find(m, "executor"));
    free(base); free(la); free(lb); free(tmp);
    m2_ctx_free(c);
    m2_model_free(m);
}

static void kv_cache_matches_training_forward(void **st) {
    const char *presets[] = {"test-llama", "test-qwen2"};
    for (int pi = 0; pi < 2; pi++) {
        m2_model *m = tiny(presets[pi], 0, M2_DT_F32);
        m2_err err = {0};
        m2_lora_config lc = {"a", 4, 8.0f, 0, M2_LORA_ALL};
        m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
        randomize(&a->params, 0.2f, 3);
        m2_ctx *c = m2_ctx_create(m, 32, 0, &err);
        m2_batch b = make_batch();
        m2_forward(c, &b, a, 0, &err);
        int V = m->cfg.vocab_size;
        m2_kv_cache *kv = m2_kv_create(m, NSEQ, 16, &err);
        float *lg = malloc((size_t)NSEQ * V * 4);
        /* prefill part of each sequence, then one batched step each for the rest */
        int off[NSEQ] = {0, 7, 10}, pre[NSEQ] = {4, 1, 2};
        for (int s = 0; s < NSEQ; s++) {
            assert_int_equal(m2_kv_append(m, a, kv, s, TOK + off[s], pre[s], lg, &err), 0);
            const float *ref = m2_ctx_logits(c) + (size_t)(off[s] + pre[s] - 1) * V;
            for (int v = 0; v < V; v++) assert_true(fabsf(lg[v] - ref[v]) < 1e-4f);
        }
        for (int step = 0;; step++) {
            int seqs[NSEQ], n = 0;
            int32_t tk[NSEQ];
            for (int s = 0; s < NSEQ; s++)
                if (pre[s] + step < LENS[s]) { seqs[n] = s; tk[n] = TOK[off[s] + pre[s] + step]; n++; }
            if (!n) break;
            assert_int_equal(m2_kv_step(m, a, kv, seqs, tk, n, lg, &err), 0);
            for (int i = 0; i < n; i++) {
                const float *ref = m2_ctx_logits(c) + (size_t)(off[seqs[i]] + pre[seqs[i]] + step) * V;
                for (int v = 0; v < V; v++) assert_true(fabsf(lg[(size_t)i * V + v] - ref[v]) < 1e-4f);
            }
        }
        free(lg);
        m2_kv_free(kv);
        m2_ctx_free(c);
        m2_model_free(m);
    }
}

static int count_cb(void *ud, int seq, int32_t tok, float logp) {
    int *n = ud;
    n[seq]++;
    return seq == 1 && n[seq] == 3;   /* stop sequence 1 after 3 tokens */
}

static int text_cb(void *ud, int32_t tok, char *buf, int cap) {
    return snprintf(buf, cap, "<%d>", tok);
}

static void generation(void **st) {
    m2_model *m = tiny("test-qwen2", 0, M2_DT_F32);
    m2_err err = {0};
    const int32_t p0[] = {1, 2, 3}, p1[] = {4, 5}, *prompts[] = {p0, p1};
    int plen[] = {3, 2};
    m2_gen_result r[2], r2[2];
    int counts[2] = {0, 0};
    m2_gen_config g = {.max_new_tokens = 6, .sampler = {0, 0, 0}, .seed = 1, .on_token = count_cb, .ud = counts};
    assert_int_equal(m2_generate(m, NULL, 2, prompts, plen, &g, r, &err), 0);
    assert_int_equal(r[0].n, 6); assert_int_equal(r[0].stop_reason, M2_STOP_MAX_TOKENS);
    assert_int_equal(r[1].n, 3); assert_int_equal(r[1].stop_reason, M2_STOP_CALLBACK);
    /* greedy == argmax of the training forward on prompt + generated tokens; logps match */
    m2_ctx *c = m2_ctx_create(m, 32, 0, &err);
    int32_t seq[16];
    memcpy(seq, p0, 3 * 4); memcpy(seq + 3, r[0].tokens, 6 * 4);
    int len = 9;
    m2_batch b = {1, &len, seq};
    m2_forward(c, &b, NULL, 0, &err);
    int32_t tg[9]; float lp[9];
    m2_batch_next_targets(&b, tg);
    m2_ctx_logprobs(c, tg, lp);
    for (int i = 0; i < 5; i++) assert_true(fabsf(lp[2 + i] - r[0].logps[i]) < 1e-4f);
    int V = m->cfg.vocab_size;
    for (int i = 0; i < 6; i++) {
        const float *l = m2_ctx_logits(c) + (size_t)(2 + i) * V;
        int am = 0;
        for (int v = 1; v < V; v++) if (l[v] > l[am]) am = v;
        assert_int_equal(am, r[0].tokens[i]);
    }
    /* stop token and stop string; sampling deterministic per seed */
    int32_t stop_tok = r[0].tokens[2];
    g.on_token = NULL; g.stop_tokens = &stop_tok; g.n_stop_tokens = 1;
    m2_gen_result_free(&r[1]);
    m2_gen_result_free(&r[0]);
    assert_int_equal(m2_generate(m, NULL, 1, prompts, plen, &g, r, &err), 0);
    assert_true(r[0].n <= 3); assert_int_equal(r[0].stop_reason, M2_STOP_TOKEN);
    m2_gen_result_free(&r[0]);
    char stop_str[32];
    g.n_stop_tokens = 0; g.token_text = text_cb;
    assert_int_equal(m2_generate(m, NULL, 1, prompts, plen, &g, r, &err), 0);
    snprintf(stop_str, sizeof stop_str, "<%d>", r[0].tokens[1]);
    const char *ss[] = {stop_str};
    g.stop_strings = ss; g.n_stop_strings = 1;
    m2_gen_result_free(&r[0]);
    assert_int_equal(m2_generate(m, NULL, 1, prompts, plen, &g, r, &err), 0);
    assert_int_equal(r[0].stop_reason, M2_STOP_STRING);
    assert_non_null(strstr(r[0].text, stop_str));
    m2_gen_result_free(&r[0]);
    g.token_text = NULL; g.n_stop_strings = 0;
    g.sampler = (m2_sampler){1.0f, 10, 0.9f};
    g.seed = 42;
    assert_int_equal(m2_generate(m, NULL, 2, prompts, plen, &g, r, &err), 0);
    assert_int_equal(m2_generate(m, NULL, 2, prompts, plen, &g, r2, &err), 0);
    for (int s = 0; s < 2; s++) {
        assert_int_equal(r[s].n, r2[s].n);
        assert_memory_equal(r[s].tokens, r2[s].tokens, r[s].n * 4);
        m2_gen_result_free(&r[s]); m2_gen_result_free(&r2[s]);
    }
    /* top-k = 1 is greedy */
    float lg[5] = {0.1f, 2.0f, -1.0f, 1.9f, 0.0f}, lpo;
    m2_rng rng; m2_rng_seed(&rng, 1);
    m2_sampler s1 = {1.0f, 1, 0};
    for (int i = 0; i < 20; i++) assert_int_equal(m2_sample(lg, 5, &s1, &rng, &lpo, NULL), 1);
    m2_sampler s2 = {1.0f, 0, 0.5f};   /* top-p 0.5 keeps tokens 1 and 3 */
    for (int i = 0; i < 50; i++) { int t = m2_sample(lg, 5, &s2, &rng, &lpo, NULL); assert_true(t == 1 || t == 3); }
    m2_ctx_free(c);
    m2_model_free(m);
}

/* m2_generate_cached: on a held cache, a prompt that extends the cached tokens (the last prompt and
 * what was generated from it) prefills only the new part and generates what a full prefill does;
 * a prompt that leaves the cache after a common prefix too; reuse 0 is m2_generate, bit for bit. */
static void generation_reuses_a_cached_prefix(void **st) {
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_lora_config lc = {"a", 4, 8.0f, 0.0f, M2_LORA_ALL};
    m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
    randomize(&a->params, 0.3f, 9);
    int32_t A[20], B[64], Cp[64];
    for (int i = 0; i < 20; i++) A[i] = (i * 7 + 3) % 64;
    m2_gen_config g = {.max_new_tokens = 6, .sampler = {0, 0, 0}, .seed = 1};
    m2_kv_cache *kv = m2_kv_create(m, 1, 64, &err);
    assert_non_null(kv);
    m2_gen_result ref, got;
    const int32_t *pa[1] = {A};
    int na = 20;
    assert_int_equal(m2_generate(m, a, 1, pa, &na, &g, &ref, &err), 0);
    assert_int_equal(m2_generate_cached(m, a, kv, A, 20, 0, &g, &got, &err), 0);
    assert_int_equal(got.n, ref.n);
    assert_memory_equal(got.tokens, ref.tokens, (size_t)ref.n * 4);
    assert_memory_equal(got.logps, ref.logps, (size_t)ref.n * 4);
    assert_int_equal(kv->len[0], 20 + got.n - 1);   /* the prompt and all but the last token */
    /* B = A, the generated tokens, 5 more: only the new part is prefilled */
    int nb = 0;
    memcpy(B, A, 20 * 4); nb = 20;
    for (int i = 0; i < got.n; i++) B[nb++] = got.tokens[i];
    for (int i = 0; i < 5; i++) B[nb++] = (i * 11 + 1) % 64;
    int cached = kv->len[0];
    m2_gen_result_free(&ref); m2_gen_result_free(&got);
    const int32_t *pb[1] = {B};
    assert_int_equal(m2_generate(m, a, 1, pb, &nb, &g, &ref, &err), 0);
    assert_int_equal(m2_generate_cached(m, a, kv, B, nb, cached, &g, &got, &err), 0);
    assert_int_equal(got.n, ref.n);
    assert_memory_equal(got.tokens, ref.tokens, (size_t)ref.n * 4);
    for (int i = 0; i < ref.n; i++) assert_true(fabsf(got.logps[i] - ref.logps[i]) < 1e-4f);
    m2_gen_result_free(&ref); m2_gen_result_free(&got);
    /* C shares only B's first 12 tokens */
    memcpy(Cp, B, 12 * 4);
    for (int i = 12; i < 30; i++) Cp[i] = (i * 5 + 2) % 64;
    int nc = 30;
    const int32_t *pc[1] = {Cp};
    assert_int_equal(m2_generate(m, a, 1, pc, &nc, &g, &ref, &err), 0);
    assert_int_equal(m2_generate_cached(m, a, kv, Cp, nc, 12, &g, &got, &err), 0);
    assert_memory_equal(got.tokens, ref.tokens, (size_t)ref.n * 4);
    for (int i = 0; i < ref.n; i++) assert_true(fabsf(got.logps[i] - ref.logps[i]) < 1e-4f);
    m2_gen_result_free(&ref); m2_gen_result_free(&got);
    /* a prompt longer than the cache: an error, not a write past it */
    m2_kv_cache *small = m2_kv_create(m, 1, 16, &err);
    assert_int_equal(m2_generate_cached(m, a, small, A, 20, 0, &g, &got, &err), -1);
    assert_non_null(strstr(err.msg, "KV cache"));
    m2_kv_free(small);
    m2_kv_free(kv);
    m2_model_free(m);
}

static void quantised_storage(void **st) {
    /* The same weights stored as f16/bf16/q8_0 give close logits; values round-trip through
     * set/get. Dimensions for q8_0 need multiples of 32. */
    m2_model_config cfg;
    m2_err err = {0};
    m2_config_preset("test-llama", &cfg, &err);
    cfg.dim = 64; cfg.ffn_dim = 96; cfg.head_dim = 0;
    m2_model_opts o = {M2_DT_F32, 0, 1};
    m2_model *ref = m2_model_create(&cfg, &o, &err);
    m2_model_init_random(ref, 3, 0.1f);
    m2_ctx *c = m2_ctx_create(ref, 32, 0, &err);
    m2_batch b = make_batch();
    m2_forward(c, &b, NULL, 0, &err);
    size_t nl = 15 * (size_t)cfg.vocab_size;
    float *lref = malloc(nl * 4);
    memcpy(lref, m2_ctx_logits(c), nl * 4);
    m2_ctx_free(c);
    m2_dtype dts[] = {M2_DT_F16, M2_DT_BF16, M2_DT_Q8_0};
    float tols[] = {5e-3f, 3e-2f, 8e-2f};
    for (int d = 0; d < 3; d++) {
        o.dtype = dts[d];
        m2_model *m = m2_model_create(&cfg, &o, &err);
        assert_non_null(m);
        for (int t = 0; t < ref->n_tensors; t++) {
            m2_tensor *T = &ref->tensors[t];
            assert_int_equal(m2_model_set_tensor(m, T->name, M2_DT_F32, T->data, (size_t)T->rows * T->cols, &err), 0);
        }
        assert_true(m->qstore_bytes > 0);
        c = m2_ctx_create(m, 32, 1, &err);
        m2_forward(c, &b, NULL, 0, &err);
        float mx = 0;
        for (size_t i = 0; i < nl; i++) mx = fmaxf(mx, fabsf(m2_ctx_logits(c)[i] - lref[i]));
        if (mx >= tols[d]) fprintf(stderr, "%s: max logit diff %g\n", m2_dtype_name(dts[d]), mx);
        assert_true(mx < tols[d]);
        /* exact check: an f32 model holding the dequantised weights gives the same logits */
        {
            m2_model_opts of = {M2_DT_F32, 0, 1};
            m2_model *deq = m2_model_create(&cfg, &of, &err);
            for (int t = 0; t < m->n_tensors; t++) {
                m2_tensor *T = &m->tensors[t];
                m2_model_get_tensor_f32(m, T->name, deq->tensors[t].data, &err);
            }
            m2_ctx *c2 = m2_ctx_create(deq, 32, 0, &err);
            m2_forward(c2, &b, NULL, 0, &err);
            for (size_t i = 0; i < nl; i++) assert_true(fabsf(m2_ctx_logits(c2)[i] - m2_ctx_logits(c)[i]) < 1e-4f);
            m2_ctx_free(c2);
            m2_model_free(deq);
        }
        /* LoRA training on a quantised base works (gradients into the adapter only) */
        m2_lora_config lc = {"a", 4, 8, 0, M2_LORA_Q | M2_LORA_V};
        m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
        m2_forward(c, &b, a, 1, &err);
        float dl[15];
        for (int n = 0; n < 15; n++) dl[n] = -W[n];
        m2_ctx_logprobs_backward(c, TGT, dl);
        assert_int_equal(m2_backward(c, &err), 0);
        assert_true(m2_grad_norm((m2_params *[]){&a->params}, 1) > 0);
        /* Q8_0 source into a Q8_0 model copies blocks verbatim */
        if (dts[d] == M2_DT_Q8_0) {
            m2_tensor *T = m2_model_find(m, "blk.0.ffn_up.weight");
            size_t n = (size_t)T->rows * T->cols;
            void *q = malloc(m2_dtype_bytes(M2_DT_Q8_0, n));
            memcpy(q, T->data, m2_dtype_bytes(M2_DT_Q8_0, n));
            assert_int_equal(m2_model_set_tensor(m, T->name, M2_DT_Q8_0, q, n, &err), 0);
            assert_memory_equal(q, T->data, m2_dtype_bytes(M2_DT_Q8_0, n));
            free(q);
        }
        m2_ctx_free(c);
        m2_model_free(m);
    }
    /* errors name the tensor */
    float x[4];
    assert_int_equal(m2_model_set_tensor(ref, "blk.0.attn_q.weight", M2_DT_F32, x, 4, &err), -1);
    assert_non_null(strstr(err.msg, "blk.0.attn_q.weight"));
    assert_int_equal(m2_model_set_tensor(ref, "nope", M2_DT_F32, x, 4, &err), -1);
    cfg.n_kv_heads = 3;
    assert_null(m2_model_create(&cfg, NULL, &err));
    assert_non_null(strstr(err.msg, "n_kv_heads"));
    free(lref);
    m2_model_free(ref);
}

static void determinism(void **st) {
    /* same seed + same threads = same bits (two independent models and runs) */
    float out[2][4];
    for (int run = 0; run < 2; run++) {
        m2_model_config cfg;
        m2_config_preset("test-llama", &cfg, NULL);
        m2_model_opts o = {M2_DT_F32, 0, 2};
        m2_model *m = m2_model_create(&cfg, &o, NULL);
        m2_model_init_random(m, 5, 0.2f);
        m2_err err = {0};
        m2_lora_config lc = {"a", 4, 8, 0.1f, M2_LORA_Q | M2_LORA_V};
        m2_adapter *a = m2_adapter_add(m, &lc, 9, &err);
        m2_ctx *c = m2_ctx_create(m, 32, 1, &err);
        m2_ctx_seed(c, 77);
        m2_adamw opt = {0.9f, 0.999f, 1e-8f, 0.01f};
        m2_batch b = make_batch();
        float lp[15], dl[15];
        for (int n = 0; n < 15; n++) dl[n] = -W[n];
        for (int step = 0; step < 3; step++) {
            m2_forward(c, &b, a, 1, &err);
            m2_ctx_logprobs_backward(c, TGT, dl);
            m2_backward(c, &err);
            m2_adamw_step(&a->params, &opt, 1e-2f, &err);
            m2_params_zero_grad(&a->params);
        }
        m2_forward(c, &b, a, 0, &err);
        m2_ctx_logprobs(c, TGT, lp);
        memcpy(out[run], lp, 16);
        m2_ctx_free(c);
        m2_model_free(m);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
}

static void determinism_with_split_gemms(void **st) {
    /* shapes large enough that every GEMM is split over the pool: 2 threads twice = same bits;
     * 1 thread agrees closely */
    float out[3][64];
    int threads[3] = {2, 2, 1};
    for (int run = 0; run < 3; run++) {
        m2_model_config cfg;
        m2_config_preset("test-llama", &cfg, NULL);
        cfg.dim = 128; cfg.ffn_dim = 256; cfg.vocab_size = 256; cfg.head_dim = 0;
        m2_model_opts o = {M2_DT_F32, 0, threads[run]};
        m2_err err = {0};
        m2_model *m = m2_model_create(&cfg, &o, &err);
        m2_model_init_random(m, 5, 0.1f);
        m2_lora_config lc = {"a", 8, 16, 0, M2_LORA_ALL};
        m2_adapter *a = m2_adapter_add(m, &lc, 9, &err);
        m2_ctx *c = m2_ctx_create(m, 64, 1, &err);
        int32_t tok[64];
        for (int i = 0; i < 64; i++) tok[i] = (i * 37) % 256;
        int lens[2] = {40, 24};
        m2_batch b = {2, lens, tok};
        int32_t tg[64];
        float lp[64], dl[64];
        m2_batch_next_targets(&b, tg);
        for (int i = 0; i < 64; i++) dl[i] = -1.0f / 64;
        m2_adamw opt = {0.9f, 0.999f, 1e-8f, 0.0f};
        for (int step = 0; step < 3; step++) {
            m2_forward(c, &b, a, 1, &err);
            m2_ctx_logprobs(c, tg, lp);
            m2_ctx_logprobs_backward(c, tg, dl);
            m2_backward(c, &err);
            m2_adamw_step(&a->params, &opt, 1e-2f, &err);
            m2_params_zero_grad(&a->params);
        }
        m2_forward(c, &b, a, 0, &err);
        m2_ctx_logprobs(c, tg, lp);
        memcpy(out[run], lp, sizeof out[run]);
        m2_ctx_free(c);
        m2_model_free(m);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    for (int i = 0; i < 64; i++) assert_true(fabsf(out[0][i] - out[2][i]) < 1e-3f);
}

/* Row-parallel passes (each thread runs every layer on its own run of whole sequences, weight
 * gradients of later shares added from shadows) agree with one thread, for base grads, biases,
 * tied embeddings, LoRA with dropout and a gradient into the hidden states; the same thread count
 * twice gives the same bits. Sequences of uneven length, enough rows for 2 and 3 shares. */
/* One LoRA train pass (forward, log-prob loss, backward; ctx seed 11) of a test-llama model stored as
 * Q8_0 (ffn 64: Q8_0 rows are blocks of 32) with an adapter on every target, on `threads` threads
 * with keep_acts `acts`: the log-probs into lp, the adapter's gradient returned (malloc'd, *n). */
static float *q8_pass(int threads, int acts, float dropout, const m2_batch *b, const int32_t *tg, const float *dl,
                      float *lp, size_t *n) {
    m2_model_config cfg;
    m2_err err = {0};
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.ffn_dim = 64;
    m2_model_opts o = {M2_DT_Q8_0, 0, threads};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, 7, 0.2f);
    m2_lora_config lc = {"r", 4, 8.0f, dropout, M2_LORA_ALL};
    m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
    randomize(&a->params, 0.2f, 5);
    m2_ctx *c = m2_ctx_create(m, 256, acts, &err);
    m2_ctx_seed(c, 11);
    assert_int_equal(m2_forward(c, b, a, 1, &err), 0);
    m2_ctx_logprobs(c, tg, lp);
    m2_ctx_logprobs_backward(c, tg, dl);
    assert_int_equal(m2_backward(c, &err), 0);
    *n = a->params.n;
    float *g = malloc(*n * 4);
    memcpy(g, a->params.g, *n * 4);
    m2_ctx_free(c);
    m2_model_free(m);
    return g;
}

static void row_parallel_matches_one_thread(void **st) {
    const char *presets[] = {"test-llama", "test-qwen2"};
    int lens[7] = {50, 31, 64, 17, 40, 29, 9}, N = 240;
    int32_t tok[240], tg[240];
    float dl[240], dhid_scale = 0.05f;
    for (int i = 0; i < N; i++) tok[i] = (i * 29 + 3) % 64;
    m2_batch b = {7, lens, tok};
    m2_batch_next_targets(&b, tg);
    for (int i = 0; i < N; i++) dl[i] = tg[i] >= 0 ? -1.0f / N : 0.0f;
    for (int pi = 0; pi < 2; pi++) {
        int threads[4] = {1, 2, 3, 2};
        float *gb[4] = {0}, *ga[4] = {0}, *lg[4] = {0};
        size_t nb = 0, na = 0;
        for (int run = 0; run < 4; run++) {
            m2_model_config cfg;
            m2_err err = {0};
            assert_int_equal(m2_config_preset(presets[pi], &cfg, &err), 0);
            m2_model_opts o = {M2_DT_F32, 1, threads[run]};
            m2_model *m = m2_model_create(&cfg, &o, &err);
            assert_non_null(m);
            m2_model_init_random(m, 7, 0.2f);
            m2_lora_config lc = {"r", 4, 8.0f, 0.2f, M2_LORA_ALL};
            m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
            assert_non_null(a);
            randomize(&a->params, 0.2f, 5);
            m2_ctx *c = m2_ctx_create(m, N, 1, &err);
            m2_ctx_seed(c, 11);
            float lp[240];
            for (int step = 0; step < 2; step++) {   /* grads accumulate over two passes */
                assert_int_equal(m2_forward(c, &b, a, 1, &err), 0);
                m2_ctx_logprobs(c, tg, lp);
                m2_ctx_logprobs_backward(c, tg, dl);
                float *dh = m2_ctx_dhidden(c);
                for (int i = 0; i < N * cfg.dim; i++) dh[i] = dhid_scale * (float)((i * 7) % 13 - 6) / 6;
                assert_int_equal(m2_backward(c, &err), 0);
            }
            nb = m->base.n; na = a->params.n;
            gb[run] = malloc(nb * 4); ga[run] = malloc(na * 4); lg[run] = malloc(N * 4);
            memcpy(gb[run], m->base.g, nb * 4);
            memcpy(ga[run], a->params.g, na * 4);
            memcpy(lg[run], lp, N * 4);
            m2_ctx_free(c);
            m2_model_free(m);
        }
        assert_memory_equal(gb[1], gb[3], nb * 4);
        assert_memory_equal(ga[1], ga[3], na * 4);
        for (int run = 1; run < 3; run++) {
            double mb = 0, ma = 0;
            for (size_t i = 0; i < nb; i++) mb = fmax(mb, fabs(gb[0][i]));
            for (size_t i = 0; i < na; i++) ma = fmax(ma, fabs(ga[0][i]));
            assert_true(mb > 0 && ma > 0);
            for (size_t i = 0; i < nb; i++) assert_true(fabs(gb[run][i] - gb[0][i]) <= 1e-4 * mb);
            for (size_t i = 0; i < na; i++) assert_true(fabs(ga[run][i] - ga[0][i]) <= 1e-4 * ma);
            for (int i = 0; i < N; i++) assert_true(fabsf(lg[run][i] - lg[0][i]) <= 1e-4f * (1 + fabsf(lg[0][i])));
        }
        for (int run = 0; run < 4; run++) { free(gb[run]); free(ga[run]); free(lg[run]); }
    }
    /* a Q8_0 base (each thread dequantises into its own scratch): 2 threads = 1 thread */
    float lq[2][240];
    float *gq[2];
    size_t nq = 0;
    for (int run = 0; run < 2; run++) gq[run] = q8_pass(run + 1, M2_ACTS_KEEP, 0.0f, &b, tg, dl, lq[run], &nq);
    double mq = 0;
    for (size_t i = 0; i < nq; i++) mq = fmax(mq, fabs(gq[0][i]));
    for (size_t i = 0; i < nq; i++) assert_true(fabs(gq[1][i] - gq[0][i]) <= 1e-4 * mq);
    for (int i = 0; i < N; i++) assert_true(fabsf(lq[1][i] - lq[0][i]) <= 1e-4f * (1 + fabsf(lq[0][i])));
    free(gq[0]); free(gq[1]);
}

/* M2_ACTS_RECOMPUTE: a ctx that keeps only the residual stream and re-runs each layer's forward in
 * the backward gives the same log-probs and gradients, bit for bit, as one that keeps every layer
 * (base grads, biases, LoRA with dropout on every target or on q and v, a hidden-state gradient,
 * two backwards of one forward), op by op (1 thread) and row-parallel (2 threads), in less memory. */
static void recompute_matches_kept_activations(void **st) {
    const char *presets[] = {"test-llama", "test-qwen2"};
    int lens[4] = {33, 48, 21, 40}, N = 142;
    int32_t tok[142], tg[142];
    float dl[142];
    for (int i = 0; i < N; i++) tok[i] = (i * 31 + 7) % 64;
    m2_batch b = {4, lens, tok};
    m2_batch_next_targets(&b, tg);
    for (int i = 0; i < N; i++) dl[i] = tg[i] >= 0 ? -1.0f / N : 0.0f;
    for (int pi = 0; pi < 2; pi++)
        for (int threads = 1; threads <= 2; threads++) {
            float *gb[2], *ga[2], lp[2][142];
            size_t nb = 0, na = 0, bytes[2];
            for (int mode = 0; mode < 2; mode++) {
                m2_model_config cfg;
                m2_err err = {0};
                assert_int_equal(m2_config_preset(presets[pi], &cfg, &err), 0);
                m2_model_opts o = {M2_DT_F32, 1, threads};
                m2_model *m = m2_model_create(&cfg, &o, &err);
                assert_non_null(m);
                m2_model_init_random(m, 7, 0.2f);
                /* llama: every target (the recompute runs the down projection for its LoRA pair);
                 * qwen2: q and v only (the recompute skips the down projection) */
                m2_lora_config lc = {"r", 4, 8.0f, 0.2f, pi ? M2_LORA_Q | M2_LORA_V : M2_LORA_ALL};
                m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
                assert_non_null(a);
                randomize(&a->params, 0.2f, 5);
                m2_ctx *c = m2_ctx_create(m, N, mode ? M2_ACTS_RECOMPUTE : M2_ACTS_KEEP, &err);
                assert_non_null(c);
                bytes[mode] = m2_ctx_bytes(c);
                m2_ctx_seed(c, 11);
                assert_int_equal(m2_forward(c, &b, a, 1, &err), 0);
                m2_ctx_logprobs(c, tg, lp[mode]);
                m2_ctx_logprobs_backward(c, tg, dl);
                float *dh = m2_ctx_dhidden(c);
                for (int i = 0; i < N * cfg.dim; i++) dh[i] = 0.05f * (float)((i * 7) % 13 - 6) / 6;
                assert_int_equal(m2_backward(c, &err), 0);
                assert_int_equal(m2_backward(c, &err), 0);   /* again: recomputes again */
                nb = m->base.n; na = a->params.n;
                gb[mode] = malloc(nb * 4); ga[mode] = malloc(na * 4);
                memcpy(gb[mode], m->base.g, nb * 4);
                memcpy(ga[mode], a->params.g, na * 4);
                m2_ctx_free(c);
                m2_model_free(m);
            }
            assert_memory_equal(lp[0], lp[1], sizeof lp[0]);
            assert_memory_equal(gb[0], gb[1], nb * 4);
            assert_memory_equal(ga[0], ga[1], na * 4);
            assert_true(bytes[1] < bytes[0]);
            for (int mode = 0; mode < 2; mode++) { free(gb[mode]); free(ga[mode]); }
        }
    /* a Q8_0 base (dequantised per call into per-thread scratch), 2 threads: the same bits too */
    float *gq[2], lq[2][142];
    size_t nq = 0;
    for (int mode = 0; mode < 2; mode++)
        gq[mode] = q8_pass(2, mode ? M2_ACTS_RECOMPUTE : M2_ACTS_KEEP, 0.2f, &b, tg, dl, lq[mode], &nq);
    assert_memory_equal(lq[0], lq[1], sizeof lq[0]);
    assert_memory_equal(gq[0], gq[1], nq * 4);
    free(gq[0]); free(gq[1]);
    m2_model_config cfg;
    m2_err err = {0};
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    m2_model_opts o = {M2_DT_F32, 0, 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_null(m2_ctx_create(m, 32, 3, &err));
    assert_non_null(strstr(err.msg, "keep_acts"));
    /* the memory plan follows the ctx: the kept layers' activations are what recompute saves */
    size_t keep = m2_memory_plan(m, 256, M2_ACTS_KEEP, 0, 0, 0).activations;
    size_t rec = m2_memory_plan(m, 256, M2_ACTS_RECOMPUTE, 0, 0, 0).activations;
    assert_true(rec < keep);
    assert_int_equal(rec, m2_ctx_bytes_for(m, 256, M2_ACTS_RECOMPUTE));
    m2_model_free(m);
}

/* The per-op profile: every kind of op of a LoRA train step is timed in both directions, the kinds
 * add up to no more than the passes' wall time, enabling resets it, and profiling changes no bits.
 * Run op by op (1 thread) and row-parallel (2 threads: each kind counts its mean over the shares). */
static void profile_times_each_kind_of_op(void **st) {
    int lens[4] = {40, 33, 48, 39}, N = 160;
    int32_t tok[160], tg[160];
    float dl[160], lp[2][160];
    for (int i = 0; i < N; i++) tok[i] = (i * 13 + 5) % 64;
    m2_batch b = {4, lens, tok};
    m2_batch_next_targets(&b, tg);
    for (int i = 0; i < N; i++) dl[i] = tg[i] >= 0 ? -1.0f / N : 0.0f;
    for (int threads = 1; threads <= 2; threads++) {
        m2_model_config cfg;
        m2_err err = {0};
        assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
        m2_model_opts o = {M2_DT_F32, 0, threads};
        m2_model *m = m2_model_create(&cfg, &o, &err);
        assert_non_null(m);
        m2_model_init_random(m, 7, 0.2f);
        m2_lora_config lc = {"r", 4, 8.0f, 0.1f, M2_LORA_Q | M2_LORA_V};
        m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
        assert_non_null(a);
        randomize(&a->params, 0.2f, 5);
        m2_ctx *c = m2_ctx_create(m, N, 1, &err);
        assert_non_null(c);
        for (int prof = 0; prof < 2; prof++) {
            m2_ctx_seed(c, 11);
            m2_ctx_profile(c, prof);
            double t0 = m2_now_s();
            assert_int_equal(m2_forward(c, &b, a, 1, &err), 0);
            m2_ctx_logprobs(c, tg, lp[prof]);
            m2_ctx_logprobs_backward(c, tg, dl);
            assert_int_equal(m2_backward(c, &err), 0);
            double wall = m2_now_s() - t0;
            m2_ctx_stats s = m2_ctx_get_stats(c);
            double sum = 0;
            for (int d = 0; d < 2; d++)
                for (int op = 0; op < M2_OP_N; op++) {
                    if (!prof) assert_true(s.op_s[d][op] == 0.0);
                    sum += s.op_s[d][op];
                }
            if (!prof) continue;
            int fwd_ops[] = {M2_OP_LINEAR, M2_OP_LORA, M2_OP_OUTPUT, M2_OP_ATTENTION, M2_OP_NORM, M2_OP_ROPE,
                             M2_OP_SWIGLU, M2_OP_COPY, M2_OP_LOGPROB};
            int bwd_ops[] = {M2_OP_LINEAR, M2_OP_LORA, M2_OP_OUTPUT, M2_OP_ATTENTION, M2_OP_NORM, M2_OP_ROPE,
                             M2_OP_SWIGLU, M2_OP_LOGPROB};
            for (size_t i = 0; i < sizeof fwd_ops / sizeof *fwd_ops; i++) {
                if (!(s.op_s[0][fwd_ops[i]] > 0)) fprintf(stderr, "forward %s not timed\n", m2_op_name(fwd_ops[i]));
                assert_true(s.op_s[0][fwd_ops[i]] > 0);
            }
            for (size_t i = 0; i < sizeof bwd_ops / sizeof *bwd_ops; i++) {
                if (!(s.op_s[1][bwd_ops[i]] > 0)) fprintf(stderr, "backward %s not timed\n", m2_op_name(bwd_ops[i]));
                assert_true(s.op_s[1][bwd_ops[i]] > 0);
            }
            assert_true(sum <= wall * 1.001 + 1e-4);
            assert_true(s.gemm_s > 0 && s.gemm_s <= wall && s.gemm_flop > 0);
            m2_ctx_profile(c, 1);   /* enabling resets */
            s = m2_ctx_get_stats(c);
            assert_true(s.gemm_s == 0 && s.gemm_flop == 0 && s.op_s[0][M2_OP_LINEAR] == 0 && s.op_s[1][M2_OP_ATTENTION] == 0);
            assert_string_equal(m2_op_name(M2_OP_ATTENTION), "attention");
            assert_string_equal(m2_op_name(M2_OP_N), "?");
        }
        assert_memory_equal(lp[0], lp[1], sizeof lp[0]);   /* profiling changes nothing */
        m2_ctx_free(c);
        m2_model_free(m);
    }
}

static void optimiser_and_schedules(void **st) {
    m2_err err = {0};
    m2_params p;
    assert_int_equal(m2_params_init(&p, 3, 1, &err), 0);
    p.w[0] = 1; p.w[1] = -2; p.w[2] = 0.5f;
    p.g[0] = 0.5f; p.g[1] = -1; p.g[2] = 0;
    m2_adamw o = {0.9f, 0.999f, 1e-8f, 0.1f};
    assert_int_equal(m2_adamw_step(&p, &o, 0.1f, &err), 0);
    /* first step: w = w(1 - lr wd) - lr * sign(g) (bias-corrected m/sqrt(v) = +-1) */
    assert_true(fabsf(p.w[0] - (1 * 0.99f - 0.1f)) < 1e-5f);
    assert_true(fabsf(p.w[1] - (-2 * 0.99f + 0.1f)) < 1e-5f);
    assert_true(fabsf(p.w[2] - 0.5f * 0.99f) < 1e-5f);
    assert_int_equal(p.step, 1);
    m2_params *gs[] = {&p};
    p.g[0] = 3; p.g[1] = 4; p.g[2] = 0;
    assert_true(fabsf(m2_clip_grads(gs, 1, 1.0f) - 5.0f) < 1e-5f);
    assert_true(fabsf(m2_grad_norm(gs, 1) - 1.0f) < 1e-4f);
    m2_params frozen;
    m2_params_init(&frozen, 2, 0, &err);
    assert_int_equal(m2_adamw_step(&frozen, &o, 0.1f, &err), -1);
    m2_params_free(&frozen);
    m2_params_free(&p);
    m2_lr_schedule s = {1.0f, 0.1f, 10, 110, M2_DECAY_COSINE};
    assert_true(fabsf(m2_lr_at(&s, 0) - 0.1f) < 1e-6f);
    assert_true(fabsf(m2_lr_at(&s, 9) - 1.0f) < 1e-6f);
    assert_true(fabsf(m2_lr_at(&s, 60) - 0.55f) < 1e-5f);
    assert_true(fabsf(m2_lr_at(&s, 110) - 0.1f) < 1e-6f);
    s.decay = M2_DECAY_LINEAR;
    assert_true(fabsf(m2_lr_at(&s, 60) - 0.55f) < 1e-5f);
    assert_true(fabsf(m2_lr_at(&s, 35) - 0.775f) < 1e-5f);
}

static void accumulation_equals_big_batch(void **st) {
    /* grads of two half-batches summed == grads of the packed batch */
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_lora_config lc = {"a", 4, 8, 0, M2_LORA_Q | M2_LORA_V | M2_LORA_DOWN};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
    randomize(&a->params, 0.2f, 4);
    m2_ctx *c = m2_ctx_create(m, 32, 1, &err);
    float dl[15];
    for (int n = 0; n < 15; n++) dl[n] = -W[n];
    m2_batch b = make_batch();
    m2_forward(c, &b, a, 0, &err);
    m2_ctx_logprobs_backward(c, TGT, dl);
    m2_backward(c, &err);
    float *g1 = malloc(a->params.n * 4);
    memcpy(g1, a->params.g, a->params.n * 4);
    m2_params_zero_grad(&a->params);
    m2_batch b1 = {1, LENS, TOK}, b2 = {2, LENS + 1, TOK + 7};
    m2_forward(c, &b1, a, 0, &err); m2_ctx_logprobs_backward(c, TGT, dl); m2_backward(c, &err);
    m2_forward(c, &b2, a, 0, &err); m2_ctx_logprobs_backward(c, TGT + 7, dl + 7); m2_backward(c, &err);
    for (size_t i = 0; i < a->params.n; i++) assert_true(fabsf(g1[i] - a->params.g[i]) < 1e-4f * (1 + fabsf(g1[i])));
    free(g1);
    m2_ctx_free(c);
    m2_model_free(m);
}

static void kl_between_adapters(void **st) {
    m2_model *m = tiny("test-qwen2", 0, M2_DT_F32);
    m2_err err = {0};
    m2_lora_config l1 = {"online", 4, 8, 0, M2_LORA_Q | M2_LORA_V}, l2 = {"offline", 4, 8, 0, M2_LORA_Q | M2_LORA_V};
    m2_adapter *on = m2_adapter_add(m, &l1, 1, &err), *off = m2_adapter_add(m, &l2, 2, &err);
    randomize(&on->params, 0.3f, 1); randomize(&off->params, 0.3f, 2);
    m2_ctx *ca = m2_ctx_create(m, 32, 1, &err), *cb = m2_ctx_create(m, 32, 0, &err);
    m2_batch b = make_batch();
    float kl[15];
    m2_forward(ca, &b, on, 0, &err);
    m2_forward(cb, &b, off, 0, &err);
    m2_ctx_kl(ca, cb, W, kl, 1, 0);
    for (int n = 0; n < 15; n++) assert_true(kl[n] >= 0);
    m2_backward(ca, &err);
    float *g = malloc(on->params.n * 4);
    memcpy(g, on->params.g, on->params.n * 4);
    for (int k = 0; k < 12; k++) {
        size_t i = (k * 104729u) % on->params.n;
        float save = on->params.w[i], eps = 1e-2f;
        double l[2];
        for (int s = 0; s < 2; s++) {
            on->params.w[i] = save + (s ? -eps : eps);
            m2_forward(ca, &b, on, 0, &err);
            m2_ctx_kl(ca, cb, NULL, kl, 0, 0);
            l[s] = 0;
            for (int n = 0; n < 15; n++) l[s] += W[n] * kl[n];
        }
        on->params.w[i] = save;
        double fd = (l[0] - l[1]) / (2 * eps);
        assert_true(fabs(fd - g[i]) / (fabs(fd) + fabs(g[i]) + 1e-2) < 3e-2);
    }
    /* KL of an adapter with itself is 0 */
    m2_forward(cb, &b, on, 0, &err);
    m2_forward(ca, &b, on, 0, &err);
    m2_ctx_kl(ca, cb, NULL, kl, 0, 0);
    for (int n = 0; n < 15; n++) assert_true(fabsf(kl[n]) < 1e-5f);
    /* gradient buffers are cleared lazily: after a forward they read as zero (an earlier
     * backward's KL gradient is gone), and a backward nobody fed leaves the grads at zero */
    m2_forward(cb, &b, off, 0, &err);
    m2_ctx_kl(ca, cb, W, kl, 1, 0);
    float mx = 0;
    for (int i = 0; i < 15 * m->cfg.vocab_size; i++) mx = fmaxf(mx, fabsf(m2_ctx_dlogits(ca)[i]));
    assert_true(mx > 0.0f);
    m2_forward(ca, &b, on, 0, &err);
    m2_params_zero_grad(&on->params);
    assert_int_equal(m2_backward(ca, &err), 0);
    for (size_t i = 0; i < on->params.n; i++) assert_true(on->params.g[i] == 0.0f);
    const float *dl = m2_ctx_dlogits(ca), *dh = m2_ctx_dhidden(ca);
    for (int i = 0; i < 15 * m->cfg.vocab_size; i++) assert_true(dl[i] == 0.0f);
    for (int i = 0; i < 15 * m->cfg.dim; i++) assert_true(dh[i] == 0.0f);
    free(g);
    m2_ctx_free(ca); m2_ctx_free(cb);
    m2_model_free(m);
}

/* A chunked-logits ctx (no N x V logits kept) gives the same log-probs, KL and gradients as a
 * stored-logits ctx: LoRA grads through logprobs and KL (either side chunked, both sides
 * trained), base grads incl. the tied output matrix, and a head's gradient into dhidden. */
static void chunked_logits_match(void **st) {
    m2_model *m = tiny("test-qwen2", 1, M2_DT_F32);   /* trained base, tied embeddings */
    m2_err err = {0};
    m2_lora_config l1 = {"on", 4, 8, 0, M2_LORA_Q | M2_LORA_V}, l2 = {"off", 4, 8, 0, M2_LORA_Q | M2_LORA_V};
    m2_adapter *on = m2_adapter_add(m, &l1, 1, &err), *off = m2_adapter_add(m, &l2, 2, &err);
    randomize(&on->params, 0.3f, 1); randomize(&off->params, 0.3f, 2);
    m2_batch b = make_batch();
    float dl[15];
    for (int n = 0; n < 15; n++) dl[n] = -W[n];
    size_t na = on->params.n, nb = m->base.n, noff = off->params.n;
    float *ga[3], *gb[3], *go[3], lp[3][15], kl[3][15];
    int chunks[3] = {0, 4, 7};
    for (int run = 0; run < 3; run++) {
        m2_params_zero_grad(&on->params); m2_params_zero_grad(&off->params); m2_params_zero_grad(&m->base);
        m2_ctx *ca = m2_ctx_create_chunked(m, 32, 1, chunks[run], &err);
        m2_ctx *cb = m2_ctx_create_chunked(m, 32, 1, run == 2 ? 0 : chunks[run], &err);   /* run 2: mixed */
        assert_non_null(ca); assert_non_null(cb);
        assert_int_equal(chunks[run] ? m2_ctx_logits(ca) == NULL : m2_ctx_logits(ca) != NULL, 1);
        assert_int_equal(m2_forward(ca, &b, on, 0, &err), 0);
        assert_int_equal(m2_forward(cb, &b, off, 0, &err), 0);
        m2_ctx_logprobs(ca, TGT, lp[run]);
        m2_ctx_logprobs_backward(ca, TGT, dl);
        m2_ctx_kl(ca, cb, W, kl[run], 1, 1);
        float *dh = m2_ctx_dhidden(ca);
        for (int i = 0; i < 15 * m->cfg.dim; i++) dh[i] += 0.01f * (float)(i % 5 - 2);
        assert_int_equal(m2_backward(ca, &err), 0);
        assert_int_equal(m2_backward(cb, &err), 0);
        ga[run] = malloc(na * 4); gb[run] = malloc(nb * 4); go[run] = malloc(noff * 4);
        memcpy(ga[run], on->params.g, na * 4); memcpy(gb[run], m->base.g, nb * 4); memcpy(go[run], off->params.g, noff * 4);
        m2_ctx_free(ca); m2_ctx_free(cb);
    }
    for (int run = 1; run < 3; run++) {
        for (int n = 0; n < 15; n++) {
            assert_true(fabsf(lp[run][n] - lp[0][n]) <= 1e-5f * (1 + fabsf(lp[0][n])));
            assert_true(fabsf(kl[run][n] - kl[0][n]) <= 1e-5f * (1 + fabsf(kl[0][n])));
        }
        double ma = 0, mb = 0, mo = 0;
        for (size_t i = 0; i < na; i++) ma = fmax(ma, fabs(ga[0][i]));
        for (size_t i = 0; i < nb; i++) mb = fmax(mb, fabs(gb[0][i]));
        for (size_t i = 0; i < noff; i++) mo = fmax(mo, fabs(go[0][i]));
        assert_true(ma > 0 && mb > 0 && mo > 0);
        for (size_t i = 0; i < na; i++) assert_true(fabs(ga[run][i] - ga[0][i]) <= 1e-4 * ma);
        for (size_t i = 0; i < nb; i++) assert_true(fabs(gb[run][i] - gb[0][i]) <= 1e-4 * mb);
        for (size_t i = 0; i < noff; i++) assert_true(fabs(go[run][i] - go[0][i]) <= 1e-4 * mo);
    }
    for (int run = 0; run < 3; run++) { free(ga[run]); free(gb[run]); free(go[run]); }
    assert_null(m2_ctx_create_chunked(m, 32, 1, -1, &err));
    assert_non_null(strstr(err.msg, "chunk"));
    m2_model_free(m);
}

static void heads_polyak_and_memplan(void **st) {
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_head *h = m2_head_add(m, "v", 1, &err);
    assert_null(m2_head_add(m, "v", 1, &err));
    float w0 = h->params.w[0], t0 = h->target[0];
    assert_true(w0 == t0);
    h->params.w[0] = w0 + 1.0f;
    m2_head_polyak(h, 0.25f);
    assert_true(fabsf(h->target[0] - (t0 + 0.25f)) < 1e-6f);
    /* target forward uses the target copy */
    float hid[2 * 32], o1, o2;
    for (int i = 0; i < 64; i++) hid[i] = sinf(i);
    int pos = 1;
    m2_head_forward(h, hid, &pos, 1, 0, &o1, &err);
    m2_head_forward(h, hid, &pos, 1, 1, &o2, &err);
    assert_true(o1 != o2);
    m2_head_polyak(h, 1.0f);
    m2_head_forward(h, hid, &pos, 1, 1, &o2, &err);
    assert_true(o1 == o2);
    /* online forward, target forward, then online backward: the cache survives */
    float dh[64] = {0}, one = 1.0f;
    m2_head_forward(h, hid, &pos, 1, 0, &o1, &err);
    m2_head_forward(h, hid, &pos, 1, 1, &o2, &err);
    assert_int_equal(m2_head_backward(h, &one, &pos, 1, dh, &err), 0);
    assert_true(h->params.g[h->params.n - 1] == 1.0f);   /* d out / d b2 */
    m2_lora_config lc = {"a", 16, 32, 0, M2_LORA_Q | M2_LORA_V};
    m2_adapter_add(m, &lc, 1, &err);
    m2_model_mem p = m2_memory_plan(m, 256, M2_ACTS_KEEP, 0, 4, 64);
    assert_true(p.weights >= (size_t)m2_config_n_params(&m->cfg) * 4);
    assert_true(p.adapters > 0 && p.activations > 0 && p.kv_cache == 2 * 2 * 4 * 64 * 16 * 4);
    assert_true(p.grad_shadows == 0);   /* one thread: no shadows */
    /* a chunked-logits ctx keeps 16 logit rows instead of 256: 2 x 240 x V floats fewer */
    assert_true(p.activations - m2_memory_plan(m, 256, M2_ACTS_KEEP, 16, 4, 64).activations == (size_t)2 * 240 * m->cfg.vocab_size * 4);
    assert_true(p.total == p.weights + p.adapters + p.adapter_train + p.heads + p.activations + p.kv_cache);
    FILE *f = fopen("/dev/null", "w");
    m2_model_mem_print(f, &p);
    fclose(f);
    m2_model_free(m);
}

static void pretrain_from_scratch(void **st) {
    /* full-weight training of a tiny base on a fixed repeating sequence: the loss falls fast */
    m2_model *m = tiny("test-llama", 1, M2_DT_F32);
    m2_err err = {0};
    m2_ctx *c = m2_ctx_create(m, 64, 1, &err);
    int32_t tok[32];
    for (int i = 0; i < 32; i++) tok[i] = (i * 7) % 13;
    int lens[2] = {16, 16};
    m2_batch b = {2, lens, tok};
    int32_t tg[32];
    float lp[32], dl[32];
    m2_batch_next_targets(&b, tg);
    for (int i = 0; i < 32; i++) dl[i] = tg[i] >= 0 ? -1.0f / 30 : 0.0f;
    m2_adamw opt = {0.9f, 0.95f, 1e-8f, 0.0f};
    m2_lr_schedule sch = {3e-3f, 3e-4f, 5, 60, M2_DECAY_COSINE};
    double first = 0, last = 0;
    for (int step = 0; step < 60; step++) {
        assert_int_equal(m2_forward(c, &b, NULL, 1, &err), 0);
        m2_ctx_logprobs(c, tg, lp);
        double loss = 0;
        for (int i = 0; i < 32; i++) loss -= lp[i] / 30;
        if (step == 0) first = loss;
        last = loss;
        m2_ctx_logprobs_backward(c, tg, dl);
        assert_int_equal(m2_backward(c, &err), 0);
        m2_params *g[] = {&m->base};
        m2_clip_grads(g, 1, 1.0f);
        assert_int_equal(m2_adamw_step(&m->base, &opt, m2_lr_at(&sch, step), &err), 0);
        m2_params_zero_grad(&m->base);
    }
    assert_true(first > 3.0);
    assert_true(last < 0.5);
    m2_ctx_free(c);
    m2_model_free(m);
}

static void errors_name_the_problem(void **st) {
    m2_model *m = tiny("test-llama", 0, M2_DT_F32);
    m2_err err = {0};
    m2_ctx *c = m2_ctx_create(m, 16, 1, &err);
    int32_t bad[3] = {1, 64, 2};
    int len3 = 3, len20 = 20, len0 = 0;
    m2_batch b = {1, &len3, bad};
    assert_int_equal(m2_forward(c, &b, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "vocabulary"));
    int32_t many[20] = {0};
    m2_batch b2 = {1, &len20, many};
    assert_int_equal(m2_forward(c, &b2, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "20 tokens"));
    m2_batch b3 = {1, &len0, many};
    assert_int_equal(m2_forward(c, &b3, NULL, 0, &err), -1);
    assert_int_equal(m2_backward(c, &err), -1);   /* no successful forward yet */
    m2_ctx *score = m2_ctx_create(m, 16, 0, &err);
    m2_batch ok = {1, &len3, many};
    assert_int_equal(m2_forward(score, &ok, NULL, 0, &err), 0);
    assert_int_equal(m2_backward(score, &err), -1);
    assert_non_null(strstr(err.msg, "keep_acts"));
    m2_kv_cache *kv = m2_kv_create(m, 1, 4, &err);
    assert_int_equal(m2_kv_append(m, NULL, kv, 0, many, 5, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cache holds 4"));
    assert_int_equal(m2_kv_append(m, NULL, kv, 1, many, 1, NULL, &err), -1);
    const int32_t *pr[1] = {many};
    int pl = 0;
    m2_gen_result r;
    m2_gen_config g = {.max_new_tokens = 2};
    assert_int_equal(m2_generate(m, NULL, 1, pr, &pl, &g, &r, &err), -1);
    assert_non_null(strstr(err.msg, "empty"));
    m2_lora_config lc = {"x", 0, 1, 0, M2_LORA_Q};
    assert_null(m2_adapter_add(m, &lc, 1, &err));
    assert_non_null(strstr(err.msg, "rank"));
    lc.rank = 2; lc.targets = 0;
    assert_null(m2_adapter_add(m, &lc, 1, &err));
    m2_kv_free(kv);
    m2_ctx_free(score);
    m2_ctx_free(c);
    m2_model_free(m);
    {   /* rope_freqs factors equal to the llama3 scaling reproduce it */
        m2_model *a = tiny("test-llama", 0, M2_DT_F32);
        m2_model_config c2 = a->cfg;
        c2.rope_scaling.type = 0;
        m2_model *b = m2_model_create(&c2, NULL, &err);
        int half = a->cfg.head_dim / 2;
        float base[64], fac[64];
        m2_rope_freqs(base, a->cfg.head_dim, a->cfg.rope_theta, NULL);
        for (int i = 0; i < half; i++) fac[i] = base[i] / a->rope_freq[i];
        assert_int_equal(m2_model_set_rope_freq_factors(b, fac, half, &err), 0);
        for (int i = 0; i < half; i++) assert_true(fabsf(b->rope_freq[i] - a->rope_freq[i]) <= 1e-6f * a->rope_freq[i]);
        assert_int_equal(m2_model_set_rope_freq_factors(b, fac, half - 1, &err), -1);
        m2_model_free(a); m2_model_free(b);
    }
    m2_model_config cfg;
    assert_int_equal(m2_config_tiny(&cfg, 300, 64, 2, 4, 2, 128, 128, &err), 0);
    assert_int_equal(cfg.head_dim, 16);
    assert_int_equal(m2_config_tiny(&cfg, 300, 64, 2, 4, 3, 128, 128, &err), -1);
    assert_int_equal(m2_config_preset("nope", &cfg, &err), -1);
    m2_config_preset("tiny", &cfg, &err);
    cfg.head_dim = 7;
    assert_int_equal(m2_config_validate(&cfg, &err), -1);
    assert_non_null(strstr(err.msg, "head_dim"));
    m2_config_preset("tiny", &cfg, &err);
    m2_model_opts o = {M2_DT_Q8_0, 1, 1};
    assert_null(m2_model_create(&cfg, &o, &err));   /* training needs f32 */
    char buf[256];
    m2_config_describe(&cfg, buf, sizeof buf);
    assert_non_null(strstr(buf, "d=256"));
}

int main(void) {
    setup_data();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lora_and_head_grads),
        cmocka_unit_test(base_grads),
        cmocka_unit_test(dropout_grads),
        cmocka_unit_test(adapters_switch_and_merge),
        cmocka_unit_test(kv_cache_matches_training_forward),
        cmocka_unit_test(generation),
        cmocka_unit_test(generation_reuses_a_cached_prefix),
        cmocka_unit_test(quantised_storage),
        cmocka_unit_test(determinism),
        cmocka_unit_test(determinism_with_split_gemms),
        cmocka_unit_test(row_parallel_matches_one_thread),
        cmocka_unit_test(profile_times_each_kind_of_op),
        cmocka_unit_test(recompute_matches_kept_activations),
        cmocka_unit_test(optimiser_and_schedules),
        cmocka_unit_test(accumulation_equals_big_batch),
        cmocka_unit_test(kl_between_adapters),
        cmocka_unit_test(chunked_logits_match),
        cmocka_unit_test(heads_polyak_and_memplan),
        cmocka_unit_test(pretrain_from_scratch),
        cmocka_unit_test(errors_name_the_problem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
