/* kernels/: finite-difference gradient checks for every op on random shapes, quantisation round
 * trips. Loss = sum(out * R) for a fixed random R, so d loss / d out = R. */
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
#include "kernels/kernels.h"
#include "kernels/fastmath.h"
#include <cblas.h>
#include <stdatomic.h>

/* This program links with -Wl,--wrap=malloc (CMakeLists.txt): while fail_mallocs is set, every
 * malloc of the library returns NULL, to check that out-of-memory is reported, not ignored. */
void *__real_malloc(size_t n);
static atomic_int fail_mallocs;
void *__wrap_malloc(size_t n) { return atomic_load(&fail_mallocs) ? NULL : __real_malloc(n); }

static m2_rng R;
static float *rnd(size_t n, float s) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = s * m2_rng_normal(&R);
    return p;
}
static float *zeros(size_t n) { return calloc(n, sizeof(float)); }
static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Compares an analytic gradient with central differences on a few random coordinates. */
typedef double (*loss_fn)(void *ctx);
static void check_grad(const char *what, float *x, const float *g, size_t n, loss_fn f, void *ctx,
                       float eps, float tol) {
    int checks = n < 24 ? (int)n : 24;
    double worst = 0;
    for (int c = 0; c < checks; c++) {
        size_t i = n < 24 ? (size_t)c : m2_rng_below(&R, (uint32_t)n);
        float save = x[i];
        x[i] = save + eps; double lp = f(ctx);
        x[i] = save - eps; double lm = f(ctx);
        x[i] = save;
        double fd = (lp - lm) / (2 * eps);
        double err = fabs(fd - g[i]) / (fabs(fd) + fabs(g[i]) + 1e-2);
        if (err > worst) worst = err;
        if (err > tol) fprintf(stderr, "%s[%zu]: analytic %.6g vs numeric %.6g\n", what, i, g[i], fd);
    }
    assert_true(worst <= tol);
}

/* ---- matmul ---- */
typedef struct { float *out, *inp, *w, *b, *r; int N, C, OC; } mm_ctx;
static double mm_loss(void *p) {
    mm_ctx *c = p;
    m2_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC, 0, NULL);
    return dot(c->out, c->r, (size_t)c->N * c->OC);
}
static void matmul_grads(void **st) {
    for (int rep = 0; rep < 3; rep++) {
        int N = 1 + m2_rng_below(&R, 7), C = 1 + m2_rng_below(&R, 9), OC = 1 + m2_rng_below(&R, 8);
        mm_ctx c = {zeros(N * OC), rnd(N * C, 1), rnd(OC * C, 1), rnd(OC, 1), rnd(N * OC, 1), N, C, OC};
        float *di = zeros(N * C), *dw = zeros(OC * C), *db = zeros(OC);
        m2_matmul_backward(di, dw, db, c.r, c.inp, c.w, N, C, OC, NULL);
        check_grad("matmul dinp", c.inp, di, N * C, mm_loss, &c, 1e-2f, 1e-3f);
        check_grad("matmul dw", c.w, dw, OC * C, mm_loss, &c, 1e-2f, 1e-3f);
        check_grad("matmul dbias", c.b, db, OC, mm_loss, &c, 1e-2f, 1e-3f);
        /* quantised weight path == f32 on the dequantised weight */
        if (C % 32 == 0 || 1) {
            int C2 = 64;
            float *w = rnd(OC * C2, 1), *x = rnd(N * C2, 1), *wd = malloc(OC * C2 * 4);
            void *q = malloc(m2_dtype_bytes(M2_DT_Q8_0, OC * C2));
            m2_quantize(M2_DT_Q8_0, w, q, OC * C2);
            m2_dequantize(M2_DT_Q8_0, q, wd, OC * C2);
            float *o1 = zeros(N * OC), *o2 = zeros(N * OC), *scr = malloc(M2_WTILE_ROWS * C2 * 4);
            m2_matmul_forward(o1, x, wd, NULL, N, C2, OC, 0, NULL);
            m2_wref wr = {M2_DT_Q8_0, q, OC, C2};
            m2_matmul_forward_w(o2, x, wr, NULL, N, 0, scr, NULL);
            for (int i = 0; i < N * OC; i++) assert_true(fabsf(o1[i] - o2[i]) < 1e-4f);
            free(w); free(x); free(wd); free(q); free(o1); free(o2); free(scr);
        }
        free(c.out); free(c.inp); free(c.w); free(c.b); free(c.r); free(di); free(dw); free(db);
    }
}

/* the pool split (rows or columns, all transpose cases) equals one sgemm call */
static void pooled_sgemm(void **st) {
    m2_pool *pool = m2_pool_create(3, NULL);
    int M = 150, N = 97, K = 70;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int shape = 0; shape < 2; shape++) {
                int m = shape ? N : M, n = shape ? M : N;
                float *A = rnd(m * K, 1), *B = rnd(n * K, 1), *C1 = rnd(m * n, 1), *C2 = malloc(m * n * 4);
                memcpy(C2, C1, m * n * 4);
                int lda = ta ? m : K, ldb = tb ? K : n;
                m2_sgemm(NULL, ta, tb, m, n, K, 0.5f, A, lda, B, ldb, 1.0f, C1, n);
                m2_sgemm(pool, ta, tb, m, n, K, 0.5f, A, lda, B, ldb, 1.0f, C2, n);
                for (int i = 0; i < m * n; i++) assert_true(fabsf(C1[i] - C2[i]) <= 1e-4f * (1 + fabsf(C1[i])));
                free(A); free(B); free(C1); free(C2);
            }
    /* the skinny path (few rows x transposed weight, as in decode), beta 0 and 1 */
    for (int m = 1; m <= 8; m += 3)
        for (int beta = 0; beta < 2; beta++) {
            int n = 300, k = 40;
            float *A = rnd(m * k, 1), *B = rnd(n * k, 1), *C1 = rnd(m * n, 1), *C2 = malloc(m * n * 4);
            memcpy(C2, C1, m * n * 4);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 0.7f, A, k, B, k, (float)beta, C1, n);
            m2_sgemm(pool, 0, 1, m, n, k, 0.7f, A, k, B, k, (float)beta, C2, n);
            for (int i = 0; i < m * n; i++) assert_true(fabsf(C1[i] - C2[i]) <= 1e-4f * (1 + fabsf(C1[i])));
            free(A); free(B); free(C1); free(C2);
        }
    m2_pool_destroy(pool);
}

/* ---- rmsnorm ---- */
typedef struct { float *out, *rstd, *inp, *w, *r; int N, C; } rn_ctx;
static double rn_loss(void *p) {
    rn_ctx *c = p;
    m2_rmsnorm_forward(c->out, c->rstd, c->inp, c->w, c->N, c->C, 1e-5f, NULL);
    return dot(c->out, c->r, (size_t)c->N * c->C);
}
static void rmsnorm_grads(void **st) {
    m2_pool *pool = m2_pool_create(2, NULL);
    for (int rep = 0; rep < 3; rep++) {
        int N = 1 + m2_rng_below(&R, 6), C = 2 + m2_rng_below(&R, 12);
        rn_ctx c = {zeros(N * C), zeros(N), rnd(N * C, 1), rnd(C, 1), rnd(N * C, 1), N, C};
        rn_loss(&c);
        float *di = zeros(N * C), *dw = zeros(C);
        m2_rmsnorm_backward(di, dw, c.r, c.inp, c.w, c.rstd, N, C, pool);
        check_grad("rmsnorm dinp", c.inp, di, N * C, rn_loss, &c, 1e-2f, 1e-2f);
        check_grad("rmsnorm dw", c.w, dw, C, rn_loss, &c, 1e-2f, 1e-2f);
        free(c.out); free(c.rstd); free(c.inp); free(c.w); free(c.r); free(di); free(dw);
    }
    m2_pool_destroy(pool);
}

/* ---- rope ---- */
typedef struct { float *x, *y, *r, *freq; int *pos; int N, nh, D; m2_rope_layout lay; const m2_rope_table *tab; } rp_ctx;
static double rp_loss(void *p) {
    rp_ctx *c = p;
    size_t n = (size_t)c->N * c->nh * c->D;
    memcpy(c->y, c->x, n * 4);
    m2_rope_forward(c->y, c->pos, c->freq, c->N, c->nh, c->D, c->nh * c->D, c->lay, c->tab, NULL);
    return dot(c->y, c->r, n);
}
static void rope_grads(void **st) {
    for (int lay = 0; lay < 2; lay++) {
        int N = 5, nh = 3, D = 8;
        m2_rope_scaling sc = {1, 8, 1, 4, 16};
        float freq[4];
        m2_rope_freqs(freq, D, 10000.0f, lay ? &sc : NULL);
        int pos[5] = {0, 1, 2, 7, 30};
        size_t n = (size_t)N * nh * D;
        /* layout 1 uses a table covering positions < 8 (the rest computed on the fly) */
        float tcos[8 * 4], tsin[8 * 4];
        m2_rope_table_fill(tcos, tsin, 8, freq, D);
        m2_rope_table tab = {tcos, tsin, 8};
        rp_ctx c = {rnd(n, 1), zeros(n), rnd(n, 1), freq, pos, N, nh, D, (m2_rope_layout)lay, lay ? &tab : NULL};
        float *g = malloc(n * 4);
        memcpy(g, c.r, n * 4);
        m2_rope_backward(g, pos, freq, N, nh, D, nh * D, c.lay, c.tab, NULL);
        check_grad("rope", c.x, g, n, rp_loss, &c, 1e-2f, 1e-3f);
        /* position 0 is the identity; rotation preserves the norm */
        rp_loss(&c);
        for (int i = 0; i < nh * D; i++) assert_true(fabsf(c.y[i] - c.x[i]) < 1e-6f);
        assert_true(fabs(dot(c.y, c.y, n) - dot(c.x, c.x, n)) < 1e-3 * dot(c.x, c.x, n));
        free(c.x); free(c.y); free(c.r); free(g);
    }
    /* llama3 scaling: highest frequency kept, lowest divided by factor */
    float f0[64], f1[64];
    m2_rope_scaling sc = {1, 8, 1, 4, 8192};
    m2_rope_freqs(f0, 128, 500000.0f, NULL);
    m2_rope_freqs(f1, 128, 500000.0f, &sc);
    assert_true(f0[0] == f1[0]);
    assert_true(fabsf(f1[63] * 8 - f0[63]) < 1e-12f + 1e-6f * f0[63]);
}

/* ---- swiglu ---- */
typedef struct { float *out, *g, *u, *r; long n; } sg_ctx;
static double sg_loss(void *p) {
    sg_ctx *c = p;
    m2_swiglu_forward(c->out, c->g, c->u, c->n, NULL);
    return dot(c->out, c->r, c->n);
}
static void swiglu_grads(void **st) {
    long n = 37;
    sg_ctx c = {zeros(n), rnd(n, 2), rnd(n, 1), rnd(n, 1), n};
    float *dg = zeros(n), *du = zeros(n);
    m2_swiglu_backward(dg, du, c.r, c.g, c.u, n, NULL);
    check_grad("swiglu dgate", c.g, dg, n, sg_loss, &c, 1e-3f, 2e-3f);
    check_grad("swiglu dup", c.u, du, n, sg_loss, &c, 1e-3f, 2e-3f);
    free(c.out); free(c.g); free(c.u); free(c.r); free(dg); free(du);
}

/* ---- attention ---- */
typedef struct { float *out, *lse, *q, *k, *v, *r; int nq, nkv, H, KVH, D; m2_pool *pool; } at_ctx;
static double at_loss(void *p) {
    at_ctx *c = p;
    m2_attn_seq s = {.q = c->q, .k = c->k, .v = c->v, .out = c->out, .lse = c->lse, .nq = c->nq, .nkv = c->nkv};
    m2_attention_forward(&s, 1, c->H, c->KVH, c->D, c->H * c->D, c->KVH * c->D, c->pool);
    return dot(c->out, c->r, (size_t)c->nq * c->H * c->D);
}
static void attention_grads(void **st) {
    int shapes[][5] = {{5, 5, 4, 2, 4}, {3, 7, 2, 1, 6}, {1, 4, 3, 3, 2}, {6, 6, 2, 2, 8}, {2, 9, 8, 1, 4},
                       {40, 45, 4, 2, 8}};   /* the last: several query blocks, forward output passed */
    m2_pool *pool = m2_pool_create(2, NULL);
    for (int s = 0; s < 6; s++) {
        int nq = shapes[s][0], nkv = shapes[s][1], H = shapes[s][2], KVH = shapes[s][3], D = shapes[s][4];
        at_ctx c = {zeros(nq * H * D), zeros(H * nq), rnd(nq * H * D, 1), rnd(nkv * KVH * D, 1),
                    rnd(nkv * KVH * D, 1), rnd(nq * H * D, 1), nq, nkv, H, KVH, D, s % 2 ? pool : NULL};
        at_loss(&c);
        float *dq = zeros(nq * H * D), *dk = zeros(nkv * KVH * D), *dv = zeros(nkv * KVH * D);
        /* odd shapes pass the forward output (backward takes rowsum(P dP) = dO . O from it) */
        m2_attn_seq sq = {.q = c.q, .k = c.k, .v = c.v, .out = s % 2 ? c.out : NULL, .lse = c.lse, .dout = c.r,
                          .dq = dq, .dk = dk, .dv = dv, .nq = nq, .nkv = nkv};
        m2_attention_backward(&sq, 1, H, KVH, D, H * D, KVH * D, c.pool);
        check_grad("attn dq", c.q, dq, nq * H * D, at_loss, &c, 1e-2f, 3e-3f);
        check_grad("attn dk", c.k, dk, nkv * KVH * D, at_loss, &c, 1e-2f, 3e-3f);
        check_grad("attn dv", c.v, dv, nkv * KVH * D, at_loss, &c, 1e-2f, 3e-3f);
        /* causality: the first query (position nkv-nq) ignores later keys */
        if (nq > 1) {
            float *o0 = malloc(H * D * 4);
            at_loss(&c);
            memcpy(o0, c.out, H * D * 4);
            c.k[(nkv - 1) * KVH * D] += 5.0f; c.v[(nkv - 1) * KVH * D] += 5.0f;
            at_loss(&c);
            for (int i = 0; i < H * D; i++) assert_true(c.out[i] == o0[i]);
            free(o0);
        }
        /* reference: naive softmax attention in double */
        at_loss(&c);
        int rep = H / KVH;
        for (int i = 0; i < nq; i++)
            for (int h = 0; h < H; h++) {
                int g = h / rep, last = nkv - nq + i;
                double w[64], mx = -1e30, z = 0;
                for (int j = 0; j <= last; j++) {
                    double a = 0;
                    for (int d = 0; d < D; d++) a += (double)c.q[(i * H + h) * D + d] * c.k[(j * KVH + g) * D + d];
                    w[j] = a / sqrt(D); mx = fmax(mx, w[j]);
                }
                for (int j = 0; j <= last; j++) { w[j] = exp(w[j] - mx); z += w[j]; }
                for (int d = 0; d < D; d++) {
                    double o = 0;
                    for (int j = 0; j <= last; j++) o += w[j] / z * c.v[(j * KVH + g) * D + d];
                    assert_true(fabs(o - c.out[(i * H + h) * D + d]) < 1e-5);
                }
            }
        free(c.out); free(c.lse); free(c.q); free(c.k); free(c.v); free(c.r);
        free(dq); free(dk); free(dv);
    }
    m2_pool_destroy(pool);
}

/* ---- losses ---- */
typedef struct { float *lg, *lq, *out, *w; int32_t *t; int N, V; int which; } ls_ctx;
static double lp_loss(void *p) {
    ls_ctx *c = p;
    m2_logprob_forward(c->out, NULL, c->lg, c->t, c->N, c->V, NULL);
    return dot(c->out, c->w, c->N);
}
static double kl_loss(void *p) {
    ls_ctx *c = p;
    m2_kl_forward(c->out, c->lg, c->lq, c->N, c->V, NULL);
    return dot(c->out, c->w, c->N);
}
static void loss_grads(void **st) {
    int N = 4, V = 11;
    int32_t t[4] = {3, -1, 10, 0};
    ls_ctx c = {rnd(N * V, 2), rnd(N * V, 2), zeros(N), rnd(N, 1), t, N, V, 0};
    float *d = zeros(N * V), *dq = zeros(N * V);
    m2_logprob_backward(d, c.w, c.lg, NULL, t, N, V, NULL);
    check_grad("logprob", c.lg, d, N * V, lp_loss, &c, 1e-2f, 1e-2f);
    lp_loss(&c);
    assert_true(c.out[1] == 0.0f);
    double ref = 0, mx = -1e30;
    for (int i = 0; i < V; i++) mx = fmax(mx, c.lg[i]);
    for (int i = 0; i < V; i++) ref += exp(c.lg[i] - mx);
    assert_true(fabs(c.out[0] - (c.lg[3] - mx - log(ref))) < 1e-5);
    memset(d, 0, N * V * 4);
    m2_kl_backward(d, dq, c.w, c.lg, c.lq, N, V, NULL);
    check_grad("kl dp", c.lg, d, N * V, kl_loss, &c, 1e-2f, 1e-2f);
    check_grad("kl dq", c.lq, dq, N * V, kl_loss, &c, 1e-2f, 1e-2f);
    /* KL(p||p) = 0, KL >= 0 */
    m2_kl_forward(c.out, c.lg, c.lg, N, V, NULL);
    for (int n = 0; n < N; n++) assert_true(fabsf(c.out[n]) < 1e-5f);
    m2_kl_forward(c.out, c.lg, c.lq, N, V, NULL);
    for (int n = 0; n < N; n++) assert_true(c.out[n] > 0);
    /* span log-prob */
    float lp[5] = {-1, -2, -3, -4, -5}, g[5] = {0};
    assert_true(m2_span_logprob(lp, 1, 3, 0) == -9.0f);
    assert_true(m2_span_logprob(lp, 1, 3, 1) == -3.0f);
    m2_span_logprob_backward(g, 1.5f, 1, 3, 1);
    assert_true(g[0] == 0 && fabsf(g[1] - 0.5f) < 1e-7f && g[4] == 0);
    /* fast exp against libm */
    for (float x = -80.0f; x < 80.0f; x += 0.37f) {
        float a = m2_fast_expf(x), b = expf(x);
        assert_true(fabsf(a - b) <= 4e-7f * b);
    }
    free(c.lg); free(c.lq); free(c.out); free(c.w); free(d); free(dq);
}

/* ---- embedding ---- */
static void embedding_grads(void **st) {
    int V = 7, C = 3, N = 5;
    int32_t tok[5] = {1, 3, 1, 6, 0};
    float *w = rnd(V * C, 1), *o = zeros(N * C), *dw = zeros(V * C), *r = rnd(N * C, 1);
    m2_embedding_forward(o, tok, m2_wref_f32(w, V, C), N);
    for (int n = 0; n < N; n++) for (int i = 0; i < C; i++) assert_true(o[n * C + i] == w[tok[n] * C + i]);
    m2_embedding_backward(dw, r, tok, N, C);
    for (int i = 0; i < C; i++) assert_true(fabsf(dw[1 * C + i] - (r[0 * C + i] + r[2 * C + i])) < 1e-6f);
    for (int i = 0; i < C; i++) assert_true(dw[2 * C + i] == 0.0f);
    free(w); free(o); free(dw); free(r);
}

/* ---- quantisation ---- */
static void quant_round_trips(void **st) {
    assert_true(m2_f16_to_f32(m2_f32_to_f16(1.0f)) == 1.0f);
    assert_true(m2_f16_to_f32(m2_f32_to_f16(-2.5f)) == -2.5f);
    assert_true(m2_f32_to_f16(65504.0f) == 0x7bff);
    assert_true(m2_f16_to_f32(0x0001) == 5.9604644775390625e-8f);
    assert_true(m2_bf16_to_f32(m2_f32_to_bf16(3.0f)) == 3.0f);
    assert_true(m2_f32_to_bf16(1.00390625f) == 0x3f80);   /* tie rounds to even */
    assert_int_equal(sizeof(m2_block_q8_0), 34);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q8_0, 64), 68);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q8_0, 33), 0);
    size_t n = 256;
    float *x = rnd(n, 1), *y = zeros(n);
    void *buf = malloc(n * 4);
    for (int t = 1; t <= 3; t++) {
        m2_quantize((m2_dtype)t, x, buf, n);
        m2_dequantize((m2_dtype)t, buf, y, n);
        double tol = t == M2_DT_F16 ? 1e-3 : t == M2_DT_BF16 ? 8e-3 : 0;
        for (size_t i = 0; i < n; i++) {
            double lim = t == M2_DT_Q8_0 ? 0.51 * 4.0 / 127 + 1e-3 : tol * fabs(x[i]) + 1e-6;
            assert_true(fabs(x[i] - y[i]) <= lim);
        }
    }
    m2_dtype d;
    assert_int_equal(m2_dtype_parse("Q8_0", &d), 0);
    assert_int_equal(d, M2_DT_Q8_0);
    assert_int_equal(m2_dtype_parse("q4_k", &d), 0);
    assert_int_equal(d, M2_DT_Q4_K);
    assert_int_equal(m2_dtype_parse("q4_z", &d), -1);
    free(x); free(y); free(buf);
}

/* counter-based dropout: the keep rate is 1 - p, kept values are scaled by 1 / (1 - p), the mask
 * depends only on (seed, element): applying a range in pieces equals applying it at once; another
 * seed gives another mask */
static void dropout_masks(void **st) {
    size_t n = 1 << 20;
    float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = 1.0f + (float)(i % 7);
    float ps[3] = {0.05f, 0.3f, 0.5f};
    for (int k = 0; k < 3; k++) {
        float p = ps[k];
        m2_dropout_apply(a, x, n, 1000, 42, p);
        m2_dropout_apply(b, x, 333, 1000, 42, p);            /* in two pieces */
        m2_dropout_apply(b + 333, x + 333, n - 333, 1333, 42, p);
        assert_memory_equal(a, b, n * 4);
        memcpy(c, x, n * 4);
        m2_dropout_apply(c, c, n, 1000, 42, p);              /* in place */
        assert_memory_equal(a, c, n * 4);
        size_t kept = 0, same = 0;
        for (size_t i = 0; i < n; i++) {
            if (a[i] != 0.0f) { kept++; assert_true(fabsf(a[i] - x[i] / (1.0f - p)) <= 1e-6f * a[i]); }
        }
        double rate = (double)kept / n;
        assert_true(fabs(rate - (1.0 - p)) < 0.003);
        m2_dropout_apply(b, x, n, 1000, 43, p);
        for (size_t i = 0; i < n; i++) same += (a[i] != 0.0f) == (b[i] != 0.0f);
        /* independent masks agree on about p^2 + (1-p)^2 of the elements */
        assert_true(fabs((double)same / n - (p * p + (1 - p) * (1 - p))) < 0.005);
    }
    free(x); free(a); free(b); free(c);
}

/* an attention work item that cannot allocate its scratch makes the call fail (it used to leave
 * its outputs unwritten and return as if it had worked) */
static void attention_out_of_memory(void **st) {
    int nq = 40, H = 4, KVH = 2, D = 8;
    m2_pool *pool = m2_pool_create(2, NULL);
    float *q = rnd(nq * H * D, 1), *k = rnd(nq * KVH * D, 1), *v = rnd(nq * KVH * D, 1);
    float *out = zeros(nq * H * D), *lse = zeros(nq * H), *dq = zeros(nq * H * D);
    float *dk = zeros(nq * KVH * D), *dv = zeros(nq * KVH * D);
    m2_attn_seq s = {.q = q, .k = k, .v = v, .out = out, .lse = lse, .dout = q, .dq = dq, .dk = dk, .dv = dv,
                     .nq = nq, .nkv = nq};
    for (int p = 0; p < 2; p++) {
        m2_pool *pl = p ? pool : NULL;
        atomic_store(&fail_mallocs, 1);
        int f = m2_attention_forward(&s, 1, H, KVH, D, H * D, KVH * D, pl);
        int b = m2_attention_backward(&s, 1, H, KVH, D, H * D, KVH * D, pl);
        atomic_store(&fail_mallocs, 0);
        assert_int_equal(f, -1);
        assert_int_equal(b, -1);
        assert_int_equal(m2_attention_forward(&s, 1, H, KVH, D, H * D, KVH * D, pl), 0);
        assert_int_equal(m2_attention_backward(&s, 1, H, KVH, D, H * D, KVH * D, pl), 0);
    }
    free(q); free(k); free(v); free(out); free(lse); free(dq); free(dk); free(dv);
    m2_pool_destroy(pool);
}

int main(void) {
    m2_rng_seed(&R, 1234);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_grads),     cmocka_unit_test(pooled_sgemm),
        cmocka_unit_test(rmsnorm_grads),
        cmocka_unit_test(rope_grads),       cmocka_unit_test(swiglu_grads),
        cmocka_unit_test(attention_grads), cmocka_unit_test(attention_out_of_memory), cmocka_unit_test(dropout_masks),  cmocka_unit_test(loss_grads),
        cmocka_unit_test(embedding_grads),  cmocka_unit_test(quant_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
