#include "model/heads.h"
#include "kernels/matmul.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* layout in params.w: W1 [F,H], b1 [F], w2 [F], b2 [1] */
#define W1(p, H, F) (p)
#define B1(p, H, F) ((p) + (size_t)(F) * (H))
#define W2(p, H, F) ((p) + (size_t)(F) * (H) + (F))
#define B2(p, H, F) ((p) + (size_t)(F) * (H) + 2 * (size_t)(F))

void m2_head_free_internal(m2_head *h) {
    if (!h) return;
    m2_params_free(&h->params);
    free(h->target); free(h->act_in); free(h->act_h);
    free(h);
}

m2_head *m2_head_find(m2_model *m, const char *name) {
    for (int i = 0; i < m->n_heads; i++)
        if (!strcmp(m->heads[i]->name, name)) return m->heads[i];
    return NULL;
}

m2_head *m2_head_add_sized(m2_model *m, const char *name, int F, uint64_t seed, m2_err *err) {
    if (!name || !name[0] || m2_head_find(m, name)) {
        m2_errorf(err, M2_EINVAL, "head '%s': empty or already used name", name ? name : "");
        return NULL;
    }
    int H = m->cfg.dim;
    if (F <= 0) F = H;
    if (F > (1 << 20)) {
        m2_errorf(err, M2_EINVAL, "head '%s': hidden width %d is above 1048576", name, F);
        return NULL;
    }
    m2_head *h = calloc(1, sizeof *h);
    m2_head **list = realloc(m->heads, sizeof *list * (m->n_heads + 1));
    if (list) m->heads = list;
    if (!h || !list) { free(h); m2_errorf(err, M2_ENOMEM, "head: out of memory"); return NULL; }
    snprintf(h->name, sizeof h->name, "%s", name);
    h->H = H;
    h->F = F;
    h->grad_to_body = 1;
    size_t n = (size_t)F * H + 2 * (size_t)F + 1;
    if (m2_params_init(&h->params, n, 1, err)) { free(h); return NULL; }
    h->target = malloc(n * sizeof(float));
    if (!h->target) { m2_head_free_internal(h); m2_errorf(err, M2_ENOMEM, "head: out of memory"); return NULL; }
    m2_rng rng;
    m2_rng_seed(&rng, seed);
    float b = 1.0f / sqrtf((float)H), b2 = 1.0f / sqrtf((float)F);
    for (size_t i = 0; i < (size_t)F * H; i++) h->params.w[i] = b * (2 * m2_rng_uniform(&rng) - 1);
    for (int i = 0; i < F; i++) W2(h->params.w, H, F)[i] = 0.1f * b2 * (2 * m2_rng_uniform(&rng) - 1);
    memcpy(h->target, h->params.w, n * sizeof(float));
    h->index = m->n_heads;
    m->heads[m->n_heads++] = h;
    return h;
}

m2_head *m2_head_add(m2_model *m, const char *name, uint64_t seed, m2_err *err) {
    return m2_head_add_sized(m, name, 0, seed, err);
}

static int ensure_cache(m2_head *h, int K, m2_err *err) {
    if (K <= h->cap) return 0;
    float *a = realloc(h->act_in, (size_t)K * h->H * sizeof(float));
    if (a) h->act_in = a;
    float *b = realloc(h->act_h, (size_t)K * h->F * sizeof(float));
    if (b) h->act_h = b;
    if (!a || !b) return m2_errorf(err, M2_ENOMEM, "head '%s': out of memory", h->name);
    h->cap = K;
    return 0;
}

int m2_head_forward(m2_head *h, const float *hidden, const int *pos, int K, int use_target,
                    float *out, m2_err *err) {
    int H = h->H, F = h->F;
    if (K <= 0) return 0;
    const float *p = use_target ? h->target : h->params.w;
    float *x, *a, *tmp = NULL;
    if (use_target) {   /* scratch of its own: the online forward's cache stays valid */
        tmp = malloc((size_t)K * (H + F) * sizeof(float));
        if (!tmp) return m2_errorf(err, M2_ENOMEM, "head '%s': out of memory", h->name);
        x = tmp; a = tmp + (size_t)K * H;
    } else {
        if (ensure_cache(h, K, err)) return -1;
        x = h->act_in; a = h->act_h;
    }
    for (int k = 0; k < K; k++) memcpy(x + (size_t)k * H, hidden + (size_t)pos[k] * H, H * sizeof(float));
    /* a[K,F] = relu(x W1^T + b1) */
    for (int k = 0; k < K; k++) memcpy(a + (size_t)k * F, B1(p, H, F), F * sizeof(float));
    m2_sgemm_serial(0, 1, K, F, H, 1.0f, x, H, W1(p, H, F), H, 1.0f, a, F);
    for (size_t i = 0; i < (size_t)K * F; i++) a[i] = a[i] > 0 ? a[i] : 0;
    for (int k = 0; k < K; k++) {
        float s = B2(p, H, F)[0];
        const float *ak = a + (size_t)k * F;
        for (int i = 0; i < F; i++) s += ak[i] * W2(p, H, F)[i];
        out[k] = s;
    }
    if (use_target) free(tmp);
    else h->k_cached = K;
    return 0;
}

int m2_head_backward(m2_head *h, const float *dout, const int *pos, int K, float *dhidden,
                     m2_err *err) {
    int H = h->H, F = h->F;
    if (K != h->k_cached) return m2_errorf(err, M2_EINVAL, "head '%s': backward over %d positions after a forward over %d", h->name, K, h->k_cached);
    float *w = h->params.w, *g = h->params.g, *x = h->act_in, *a = h->act_h;
    float *da = calloc((size_t)K * F, sizeof(float));
    if (!da) return m2_errorf(err, M2_ENOMEM, "head '%s': out of memory", h->name);
    for (int k = 0; k < K; k++) {
        const float *ak = a + (size_t)k * F;
        float *dk = da + (size_t)k * F;
        float d = dout[k];
        B2(g, H, F)[0] += d;
        for (int i = 0; i < F; i++) {
            W2(g, H, F)[i] += d * ak[i];
            dk[i] = ak[i] > 0 ? d * W2(w, H, F)[i] : 0.0f;
        }
    }
    for (int k = 0; k < K; k++) {
        const float *dk = da + (size_t)k * F;
        for (int i = 0; i < F; i++) B1(g, H, F)[i] += dk[i];
    }
    /* dW1[F,H] += da^T x */
    m2_sgemm_serial(1, 0, F, H, K, 1.0f, da, F, x, H, 1.0f, W1(g, H, F), H);
    if (h->grad_to_body && dhidden) {
        float *dx = x;  /* reuse the cache: dx[K,H] = da W1 (cache is consumed) */
        m2_sgemm_serial(0, 0, K, H, F, 1.0f, da, F, W1(w, H, F), H, 0.0f, dx, H);
        for (int k = 0; k < K; k++) {
            float *dst = dhidden + (size_t)pos[k] * H;
            const float *s = dx + (size_t)k * H;
            for (int i = 0; i < H; i++) dst[i] += s[i];
        }
        h->k_cached = 0;
    }
    free(da);
    return 0;
}

void m2_head_polyak(m2_head *h, float tau) {
    for (size_t i = 0; i < h->params.n; i++) h->target[i] = (1.0f - tau) * h->target[i] + tau * h->params.w[i];
}
