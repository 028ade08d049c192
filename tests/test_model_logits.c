/* Logits across formats (needs the engine forward): random Llama- and Qwen2-shaped models written
 * as HF safetensors and GGUF (f32, f16, q8_0) give the same logits when read back; a GGUF llama
 * read WITHOUT undoing the q/k permutation and run with adjacent-pair RoPE (what llama.cpp does)
 * gives the same logits too, which checks the permutation against the RoPE itself; PEFT and
 * LoRA-GGUF adapters reload to identical logits; a merged model equals base + adapter. */
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
#include "io/io.h"
#include "model/model.h"
#include "tmpdir.h"

static char tmpdir[64];
static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "log"); }
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

enum { T = 12 };
static const int32_t toks[T] = {1, 5, 9, 33, 2, 7, 60, 61, 14, 3, 95, 40};

static m2_model *random_model(int qwen) {
    m2_model_config c = {0};
    c.family = qwen ? M2_FAMILY_QWEN2 : M2_FAMILY_LLAMA;
    c.vocab_size = 96; c.dim = 64; c.n_layers = 2; c.n_heads = 4; c.n_kv_heads = 2;
    c.ffn_dim = 128; c.max_seq_len = 64; c.norm_eps = 1e-5f;
    c.rope_theta = qwen ? 1e6f : 10000.f;
    c.rope_layout = M2_ROPE_HALF;
    c.qkv_bias = qwen; c.tied_embeddings = qwen;
    c.bos_token = -1; c.eos_token = -1;
    if (!qwen) c.rope_scaling = (m2_rope_scaling){1, 8.f, 1.f, 4.f, 16};
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_err err = {0};
    m2_model *m = m2_model_create(&c, &o, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, qwen ? 21 : 22, 0.3f);
    m2_rng r;
    m2_rng_seed(&r, 5);
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        if (t->ndim == 1)
            for (int k = 0; k < t->cols; k++)
                ((float *)t->data)[k] = (t->kind == M2_T_QB || t->kind == M2_T_KB || t->kind == M2_T_VB ? 0.f : 1.f) + 0.2f * m2_rng_normal(&r);
    }
    return m;
}

/* logits [T, V] of toks under adapter a (NULL = base) */
static float *logits(m2_model *m, m2_adapter *a) {
    m2_err err = {0};
    m2_ctx *c = m2_ctx_create(m, T, 0, &err);
    if (!c) fail_msg("%s", err.msg);
    int len = T;
    m2_batch b = {1, &len, toks};
    if (m2_forward(c, &b, a, 0, &err)) fail_msg("%s", err.msg);
    size_t n = (size_t)T * m->cfg.vocab_size;
    float *out = malloc(n * sizeof(float));
    memcpy(out, m2_ctx_logits(c), n * sizeof(float));
    m2_ctx_free(c);
    return out;
}

static float max_diff(const float *a, const float *b, size_t n, float *scale) {
    float d = 0, s = 0;
    for (size_t i = 0; i < n; i++) { d = fmaxf(d, fabsf(a[i] - b[i])); s = fmaxf(s, fabsf(a[i])); }
    if (scale) *scale = s;
    return d;
}

/* A copy of m whose weights went through `type` and back (2-D only, or all tensors when
 * all_tensors): the exact function a file of that type holds. */
static m2_model *rounded_copy(m2_model *m, uint32_t type, int all_tensors) {
    m2_err err = {0};
    m2_model *c = m2_model_create(&m->cfg, NULL, &err);
    assert_non_null(c);
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        size_t n = (size_t)t->rows * t->cols;
        float *f = malloc(n * sizeof(float));
        void *q = malloc(n * sizeof(float) + 64);
        assert_int_equal(m2_model_get_tensor_f32(m, t->name, f, &err), 0);
        if (t->ndim == 2 || all_tensors) {
            assert_int_equal(m2_ggml_quantize(type, f, q, n, &err), 0);
            assert_int_equal(m2_ggml_dequantize(type, q, f, n, &err), 0);
        }
        assert_int_equal(m2_model_set_tensor(c, t->name, M2_DT_F32, f, n, &err), 0);
        free(f); free(q);
    }
    return c;
}

static void across_formats(int qwen) {
    m2_err err = {0};
    m2_model *m = random_model(qwen);
    float *ref = logits(m, NULL);
    size_t n = (size_t)T * m->cfg.vocab_size;
    float scale;
    max_diff(ref, ref, n, &scale);
    assert_true(scale > 0.1f);   /* non-degenerate logits */
    char path[256];
    struct { const char *what; int gguf; uint32_t type; float tol; } fmts[] = {
        {"hf-f32", 0, M2_GGML_F32, 0.f}, {"hf-bf16", 0, M2_GGML_BF16, 0.15f},
        {"f32.gguf", 1, M2_GGML_F32, 0.f}, {"f16.gguf", 1, M2_GGML_F16, 0.02f}, {"q8_0.gguf", 1, M2_GGML_Q8_0, 0.15f}};
    for (int k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/%s-%s", tmpdir, qwen ? "qwen" : "llama", fmts[k].what);
        int rc = fmts[k].gguf ? m2_model_save_gguf(m, path, fmts[k].type, NULL, &err)
                              : m2_model_save_hf(m, path, fmts[k].type, 0, NULL, &err);
        if (rc) fail_msg("%s", err.msg);
        m2_model *r = m2_model_load(path, NULL, NULL, &err);
        if (!r) fail_msg("%s", err.msg);
        float *got = logits(r, NULL);
        float d = max_diff(ref, got, n, NULL);
        if (fmts[k].tol == 0.f) {
            printf("  %s %-9s max |dlogit| = %.3g (logit scale %.3g)\n", qwen ? "qwen2" : "llama", fmts[k].what, d, scale);
            assert_memory_equal(ref, got, n * sizeof(float));   /* lossless: bit-identical */
        } else {
            /* against the f32 model holding the same rounded weights: only compute order differs */
            m2_model *rc = rounded_copy(m, fmts[k].type, !fmts[k].gguf);
            float *want = logits(rc, NULL);
            float dq = max_diff(want, got, n, NULL);
            printf("  %s %-9s max |dlogit| vs f32 = %.3g, vs the same rounded weights in f32 = %.3g (logit scale %.3g)\n",
                   qwen ? "qwen2" : "llama", fmts[k].what, d, dq, scale);
            assert_true(dq <= 1e-4f * scale);
            assert_true(d <= fmts[k].tol * scale);
            free(want);
            m2_model_free(rc);
        }
        free(got);
        m2_model_free(r);
    }
    /* llama.cpp's view of the GGUF: q/k rows as stored, adjacent-pair RoPE */
    snprintf(path, sizeof path, "%s/%s-f32.gguf", tmpdir, qwen ? "qwen" : "llama");
    m2_gguf *g = m2_gguf_open(path, &err);
    m2_model_config c = m->cfg;
    if (!qwen) c.rope_layout = M2_ROPE_ADJACENT;
    m2_model *raw = m2_model_create(&c, NULL, &err);
    for (int i = 0; i < raw->n_tensors; i++) {
        const m2_gguf_tensor *t = m2_gguf_find_tensor(g, raw->tensors[i].name);
        assert_non_null(t);
        assert_int_equal(m2_model_set_tensor(raw, t->name, M2_DT_F32, t->data, t->n_elems, &err), 0);
    }
    m2_gguf_close(g);
    float *got = logits(raw, NULL);
    float d = max_diff(ref, got, n, NULL);
    printf("  %s GGUF as llama.cpp runs it (%s rope): max |dlogit| = %.3g\n", qwen ? "qwen2" : "llama", qwen ? "half" : "adjacent", d);
    assert_true(d <= 1e-4f * scale);
    free(got);
    m2_model_free(raw);
    free(ref);
    m2_model_free(m);
}

static void llama_formats(void **state) { across_formats(0); }
static void qwen2_formats(void **state) { across_formats(1); }

static void adapters_and_merge(void **state) {
    for (int qwen = 0; qwen < 2; qwen++) {
        m2_err err = {0};
        m2_model *m = random_model(qwen);
        m2_lora_config lc = {"sys2", 4, 8.f, 0.f, M2_LORA_ALL};
        m2_adapter *a = m2_adapter_add(m, &lc, 3, &err);
        assert_non_null(a);
        m2_rng r;
        m2_rng_seed(&r, 8);
        for (size_t i = 0; i < a->params.n; i++) a->params.w[i] = 0.2f * m2_rng_normal(&r);
        size_t n = (size_t)T * m->cfg.vocab_size;
        float *base = logits(m, NULL), *with = logits(m, a), scale;
        float delta = max_diff(base, with, n, &scale);
        assert_true(delta > 0.01f * scale);   /* the adapter matters */
        char dir[200], gg[200], merged[200];
        snprintf(dir, sizeof dir, "%s/peft-%d", tmpdir, qwen);
        snprintf(gg, sizeof gg, "%s/lora-%d.gguf", tmpdir, qwen);
        assert_int_equal(m2_peft_save(m, a, dir, NULL, &err), 0);
        assert_int_equal(m2_lora_gguf_save(m, a, gg, &err), 0);
        /* reload both into a base read back from disk */
        char bp[200];
        snprintf(bp, sizeof bp, "%s/base-%d.gguf", tmpdir, qwen);
        assert_int_equal(m2_model_save_gguf(m, bp, M2_GGML_F32, NULL, &err), 0);
        m2_model *b2 = m2_model_load(bp, NULL, NULL, &err);
        assert_non_null(b2);
        m2_adapter *p = m2_adapter_load(b2, dir, "p", &err), *q = m2_adapter_load(b2, gg, "q", &err);
        if (!p || !q) fail_msg("%s", err.msg);
        float *lp = logits(b2, p), *lq = logits(b2, q);
        assert_memory_equal(lp, with, n * sizeof(float));
        assert_memory_equal(lq, with, n * sizeof(float));
        /* merged model written and read back = base + adapter */
        assert_int_equal(m2_adapter_merge(b2, p, &err), 0);
        snprintf(merged, sizeof merged, "%s/merged-%d", tmpdir, qwen);
        assert_int_equal(m2_model_save_hf(b2, merged, M2_GGML_F32, 0, NULL, &err), 0);
        m2_model *mm = m2_model_load(merged, NULL, NULL, &err);
        assert_non_null(mm);
        float *lm = logits(mm, NULL);
        float d = max_diff(with, lm, n, NULL);
        printf("  %s merged vs base+adapter: max |dlogit| = %.3g (adapter moves logits by %.3g)\n", qwen ? "qwen2" : "llama", d, delta);
        assert_true(d <= 1e-4f * scale);
        free(base); free(with); free(lp); free(lq); free(lm);
        m2_model_free(mm);
        m2_model_free(b2);
        m2_model_free(m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_formats),
        cmocka_unit_test(qwen2_formats),
        cmocka_unit_test(adapters_and_merge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
