/* Compares the engine with the PyTorch reference (tests/ref/make_fixtures.py, fixtures committed in
 * tests/fixtures/): a tiny Llama-shaped and a tiny Qwen2-shaped model with two LoRA adapters and a
 * head. Checked: logits of the trained adapter, the loss (LM + beta*KL to the second adapter + head
 * MSE), every trained gradient (adapter a1 factors, head), and the losses of 10 AdamW steps with
 * grad-norm clipping. Tolerances (fp32 both sides, different summation orders):
 *   logits |d| <= 1e-4 + 1e-4|ref|;  loss parts |d| <= 1e-5 + 1e-5|ref|;
 *   gradients |d| <= 2e-5 + 1e-3|ref|;  AdamW losses |d| <= 1e-4 + 1e-4|ref|. */
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

typedef struct { char name[128]; int ndim, dims[4]; size_t n; float *data; } rec;
typedef struct { rec *r; int n; } fixture;

static int load(const char *path, fixture *fx) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fx->r = NULL; fx->n = 0;
    uint32_t len;
    while (fread(&len, 4, 1, f) == 1) {
        rec r = {0};
        if (len >= sizeof r.name || fread(r.name, 1, len, f) != len) break;
        uint32_t nd;
        if (fread(&nd, 4, 1, f) != 1 || nd > 4) break;
        r.ndim = nd; r.n = 1;
        for (uint32_t i = 0; i < nd; i++) { uint32_t d; if (fread(&d, 4, 1, f) != 1) break; r.dims[i] = d; r.n *= d; }
        r.data = malloc(r.n * 4 + 4);
        if (fread(r.data, 4, r.n, f) != r.n) { free(r.data); break; }
        fx->r = realloc(fx->r, sizeof(rec) * (fx->n + 1));
        fx->r[fx->n++] = r;
    }
    fclose(f);
    return 0;
}

static rec *get(fixture *fx, const char *name) {
    for (int i = 0; i < fx->n; i++) if (!strcmp(fx->r[i].name, name)) return &fx->r[i];
    fail_msg("fixture lacks %s", name);
    return NULL;
}

static void close_enough(const char *what, const float *got, const float *ref, size_t n, double abs_tol,
                         double rel_tol) {
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(got[i] - ref[i]) - (abs_tol + rel_tol * fabs(ref[i]));
        if (d > worst) { worst = d; wi = i; }
    }
    if (worst > 0) fprintf(stderr, "%s[%zu]: got %.7g, reference %.7g\n", what, wi, got[wi], ref[wi]);
    assert_true(worst <= 0);
}

typedef struct {
    m2_model *m; m2_adapter *a1, *a2; m2_head *h; m2_ctx *c1, *c2;
    m2_batch b; int seq_lens[8]; int32_t *tok, *tgt; float *mask; int hpos[8]; float hy[8]; int K;
    float beta;
} setup;

/* The fixture's loss; fills grads when backward. parts[0..3] = total, lm, kl, head. */
static void loss(setup *s, int backward, double parts[4]) {
    m2_err err = {0};
    assert_int_equal(m2_forward(s->c1, &s->b, s->a1, 0, &err), 0);
    assert_int_equal(m2_forward(s->c2, &s->b, s->a2, 0, &err), 0);
    int N = m2_ctx_tokens(s->c1);
    float *logp = malloc(N * 4), *dlogp = malloc(N * 4), *kl = malloc(N * 4), *w = malloc(N * 4);
    double cnt = 0, lm = 0, klm = 0;
    for (int n = 0; n < N; n++) cnt += s->mask[n];
    m2_ctx_logprobs(s->c1, s->tgt, logp);
    for (int n = 0; n < N; n++) {
        lm -= s->mask[n] * logp[n];
        dlogp[n] = (float)(-s->mask[n] / cnt);
        w[n] = (float)(s->beta * s->mask[n] / cnt);
    }
    m2_ctx_kl(s->c1, s->c2, backward ? w : NULL, kl, backward, 0);
    for (int n = 0; n < N; n++) klm += s->mask[n] * kl[n];
    float v[8], dv[8];
    assert_int_equal(m2_head_forward(s->h, m2_ctx_hidden(s->c1), s->hpos, s->K, 0, v, &err), 0);
    double lh = 0;
    for (int k = 0; k < s->K; k++) { lh += 0.5 * (v[k] - s->hy[k]) * (v[k] - s->hy[k]) / s->K; dv[k] = (v[k] - s->hy[k]) / s->K; }
    parts[1] = lm / cnt; parts[2] = s->beta * klm / cnt; parts[3] = lh;
    parts[0] = parts[1] + parts[2] + parts[3];
    if (backward) {
        m2_ctx_logprobs_backward(s->c1, s->tgt, dlogp);
        assert_int_equal(m2_head_backward(s->h, dv, s->hpos, s->K, m2_ctx_dhidden(s->c1), &err), 0);
        assert_int_equal(m2_backward(s->c1, &err), 0);
    }
    free(logp); free(dlogp); free(kl); free(w);
}

static void run_fixture(const char *file, const char *preset) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", M2_SOURCE_DIR, file);
    fixture fx = {0};
    assert_int_equal(load(path, &fx), 0);
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset(preset, &cfg, &err), 0);
    float *c = get(&fx, "config")->data;
    /* the fixture's config must be the preset's */
    assert_int_equal((int)c[0], cfg.vocab_size); assert_int_equal((int)c[1], cfg.dim);
    assert_int_equal((int)c[2], cfg.n_layers); assert_int_equal((int)c[3], cfg.n_heads);
    assert_int_equal((int)c[4], cfg.n_kv_heads); assert_int_equal((int)c[5], cfg.ffn_dim);
    assert_true(fabsf(c[6] - cfg.norm_eps) < 1e-9f); assert_true(c[7] == cfg.rope_theta);
    assert_int_equal((int)c[8], (int)cfg.rope_layout); assert_int_equal((int)c[9], cfg.rope_scaling.type);
    assert_int_equal((int)c[14], cfg.qkv_bias); assert_int_equal((int)c[15], cfg.tied_embeddings);
    m2_model_opts o = {M2_DT_F32, 0, 1};
    setup s = {0};
    s.m = m2_model_create(&cfg, &o, &err);
    assert_non_null(s.m);
    for (int t = 0; t < s.m->n_tensors; t++) {
        m2_tensor *T = &s.m->tensors[t];
        rec *r = get(&fx, T->name);
        assert_int_equal(m2_model_set_tensor(s.m, T->name, M2_DT_F32, r->data, r->n, &err), 0);
    }
    m2_adapter *ads[2];
    for (int k = 0; k < 2; k++) {
        char nm[160];
        snprintf(nm, sizeof nm, "a%d.config", k + 1);
        float *ac = get(&fx, nm)->data;
        m2_lora_config lc = {"", (int)ac[0], ac[1], 0.0f, (unsigned)ac[2]};
        snprintf(lc.name, sizeof lc.name, "a%d", k + 1);
        ads[k] = m2_adapter_add(s.m, &lc, 1, &err);
        assert_non_null(ads[k]);
        for (int i = 0; i < m2_adapter_tensor_count(ads[k]); i++) {
            char tn[96]; int rr, cc; float *d;
            m2_adapter_tensor_info(ads[k], i, tn, sizeof tn, &rr, &cc, &d);
            snprintf(nm, sizeof nm, "a%d.%s", k + 1, tn);
            rec *r = get(&fx, nm);
            assert_int_equal(r->n, (size_t)rr * cc);
            assert_int_equal(r->dims[0], rr);
            memcpy(d, r->data, r->n * 4);
        }
    }
    s.a1 = ads[0]; s.a2 = ads[1];
    assert_int_equal(m2_adapter_set_trainable(s.a2, 0, &err), 0);
    assert_null(s.a2->params.g);
    s.h = m2_head_add(s.m, "critic", 1, &err);
    int H = cfg.dim;
    memcpy(s.h->params.w, get(&fx, "head.W1")->data, (size_t)H * H * 4);
    memcpy(s.h->params.w + H * H, get(&fx, "head.b1")->data, H * 4);
    memcpy(s.h->params.w + H * H + H, get(&fx, "head.w2")->data, H * 4);
    memcpy(s.h->params.w + H * H + 2 * H, get(&fx, "head.b2")->data, 4);
    rec *sl = get(&fx, "input.seq_lens");
    int N = 0;
    for (size_t i = 0; i < sl->n; i++) { s.seq_lens[i] = (int)sl->data[i]; N += s.seq_lens[i]; }
    s.tok = malloc(N * 4); s.tgt = malloc(N * 4);
    s.mask = get(&fx, "input.mask")->data;
    for (int n = 0; n < N; n++) {
        s.tok[n] = (int32_t)get(&fx, "input.tokens")->data[n];
        s.tgt[n] = (int32_t)get(&fx, "input.targets")->data[n];
    }
    m2_batch b = {(int)sl->n, s.seq_lens, s.tok};
    s.b = b;
    rec *hp = get(&fx, "input.head_pos");
    s.K = (int)hp->n;
    for (int k = 0; k < s.K; k++) { s.hpos[k] = (int)hp->data[k]; s.hy[k] = get(&fx, "input.head_y")->data[k]; }
    s.beta = get(&fx, "input.beta")->data[0];
    s.c1 = m2_ctx_create(s.m, 64, 1, &err);
    s.c2 = m2_ctx_create(s.m, 64, 0, &err);

    double parts[4];
    loss(&s, 1, parts);
    close_enough("logits", m2_ctx_logits(s.c1), get(&fx, "out.logits")->data, (size_t)N * cfg.vocab_size, 1e-4, 1e-4);
    float lf[4] = {(float)parts[0], (float)parts[1], (float)parts[2], (float)parts[3]};
    close_enough("loss", lf, get(&fx, "out.loss")->data, 4, 1e-5, 1e-5);
    int checked = 0;
    for (int i = 0; i < m2_adapter_tensor_count(s.a1); i++) {
        char tn[96], nm[160]; int rr, cc; float *d;
        m2_adapter_tensor_info(s.a1, i, tn, sizeof tn, &rr, &cc, &d);
        snprintf(nm, sizeof nm, "grad.a1.%s", tn);
        float *g = s.a1->params.g + (d - s.a1->params.w);
        close_enough(nm, g, get(&fx, nm)->data, (size_t)rr * cc, 2e-5, 1e-3);
        checked++;
    }
    assert_true(checked >= 8);
    close_enough("grad.head.W1", s.h->params.g, get(&fx, "grad.head.W1")->data, (size_t)H * H, 2e-5, 1e-3);
    close_enough("grad.head.b1", s.h->params.g + H * H, get(&fx, "grad.head.b1")->data, H, 2e-5, 1e-3);
    close_enough("grad.head.w2", s.h->params.g + H * H + H, get(&fx, "grad.head.w2")->data, H, 2e-5, 1e-3);
    close_enough("grad.head.b2", s.h->params.g + H * H + 2 * H, get(&fx, "grad.head.b2")->data, 1, 2e-5, 1e-3);
    /* 10 AdamW steps over a1 + head with clipping */
    m2_params_zero_grad(&s.a1->params); m2_params_zero_grad(&s.h->params);
    m2_params *groups[] = {&s.a1->params, &s.h->params};
    m2_adamw opt = {0.9f, 0.999f, 1e-8f, 0.01f};
    float losses[10];
    for (int step = 0; step < 10; step++) {
        loss(&s, 1, parts);
        losses[step] = (float)parts[0];
        m2_clip_grads(groups, 2, 1.0f);
        for (int g = 0; g < 2; g++) {
            assert_int_equal(m2_adamw_step(groups[g], &opt, 1e-2f, &err), 0);
            m2_params_zero_grad(groups[g]);
        }
    }
    close_enough("adamw losses", losses, get(&fx, "out.adamw_losses")->data, 10, 1e-4, 1e-4);
    m2_ctx_free(s.c1); m2_ctx_free(s.c2);
    m2_model_free(s.m);
    free(s.tok); free(s.tgt);
    for (int i = 0; i < fx.n; i++) free(fx.r[i].data);
    free(fx.r);
}

static void llama_reference(void **st) { run_fixture("ref_llama.bin", "test-llama"); }
static void qwen2_reference(void **st) { run_fixture("ref_qwen2.bin", "test-qwen2"); }

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(llama_reference), cmocka_unit_test(qwen2_reference)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
