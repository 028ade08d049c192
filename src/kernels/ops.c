#include "kernels/ops.h"
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include "core/rng.h"
#include "kernels/fastmath.h"

/* ---- embedding ---- */
void m2_embedding_forward(float *out, const int32_t *tokens, m2_wref wte, int N) {
    for (int n = 0; n < N; n++)
        m2_wref_rows_f32(wte, tokens[n], tokens[n] + 1, out + (size_t)n * wte.cols);
}

void m2_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, int N, int C) {
    for (int n = 0; n < N; n++) {
        float *d = dwte + (size_t)tokens[n] * C;
        const float *g = dout + (size_t)n * C;
        for (int i = 0; i < C; i++) d[i] += g[i];
    }
}

/* ---- rmsnorm ---- */
typedef struct {
    float *out, *rstd, *dinp; const float *inp, *w, *dout, *crstd; int C, set; float eps;
} norm_job;

static void rms_fwd_rows(void *vp, long b, long e, int tid) {
    norm_job *j = vp; int C = j->C;
    for (long n = b; n < e; n++) {
        const float *x = j->inp + (size_t)n * C;
        float *o = j->out + (size_t)n * C;
        float ss = m2_vdot(x, x, C);
        float r = 1.0f / sqrtf(ss / C + j->eps);
        if (j->rstd) j->rstd[n] = r;
        for (int i = 0; i < C; i++) o[i] = x[i] * r * j->w[i];
    }
}

void m2_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                        float eps, m2_pool *pool) {
    norm_job j = {.out = out, .rstd = rstd, .inp = inp, .w = w, .C = C, .eps = eps};
    m2_pool_for(pool, N, rms_fwd_rows, &j);
}

static void rms_bwd_rows(void *vp, long b, long e, int tid) {
    norm_job *j = vp; int C = j->C;
    for (long n = b; n < e; n++) {
        const float *x = j->inp + (size_t)n * C, *dy = j->dout + (size_t)n * C;
        float *dx = j->dinp + (size_t)n * C;
        float r = j->crstd[n];
        /* y = x r w;  dx = r (dy w) - r^3/C x sum(dy w x) */
        float dot = 0;
        {
            float acc[16] = {0};
            int i = 0;
            for (; i + 16 <= C; i += 16)
                for (int t = 0; t < 16; t++) acc[t] += dy[i + t] * j->w[i + t] * x[i + t];
            dot = m2_vsum(acc, 16);
            for (; i < C; i++) dot += dy[i] * j->w[i] * x[i];
        }
        float c = r * r * r * dot / C;
        if (j->set) for (int i = 0; i < C; i++) dx[i] = r * dy[i] * j->w[i] - c * x[i];
        else for (int i = 0; i < C; i++) dx[i] += r * dy[i] * j->w[i] - c * x[i];
    }
}

static void rms_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                    const float *rstd, int N, int C, int set, m2_pool *pool) {
    if (dinp) {
        norm_job j = {.dinp = dinp, .inp = inp, .w = w, .dout = dout, .crstd = rstd, .C = C, .set = set};
        m2_pool_for(pool, N, rms_bwd_rows, &j);
    }
    if (dw)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            float r = rstd[n];
            for (int i = 0; i < C; i++) dw[i] += dy[i] * x[i] * r;
        }
}

void m2_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                         const float *rstd, int N, int C, m2_pool *pool) {
    rms_bwd(dinp, dw, dout, inp, w, rstd, N, C, 0, pool);
}

void m2_rmsnorm_backward_set(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                             const float *rstd, int N, int C, m2_pool *pool) {
    rms_bwd(dinp, dw, dout, inp, w, rstd, N, C, 1, pool);
}

/* ---- rope ---- */
void m2_rope_freqs(float *freq, int D, float theta, const m2_rope_scaling *sc) {
    for (int i = 0; i < D / 2; i++) {
        /* as PyTorch/HF: 1 / theta^(2i/D) in float32 */
        float f = 1.0f / powf(theta, (float)(2 * i) / (float)D);
        if (sc && sc->type == 1 && sc->factor > 0) {
            double lo = sc->original_max_pos / sc->low_freq_factor;
            double hi = sc->original_max_pos / sc->high_freq_factor;
            double wl = 2.0 * M_PI / f;
            if (wl < hi) { /* keep */ }
            else if (wl > lo) f = f / sc->factor;
            else {
                double s = (sc->original_max_pos / wl - sc->low_freq_factor) /
                           (sc->high_freq_factor - sc->low_freq_factor);
                f = (float)((1 - s) * f / sc->factor + s * f);
            }
        }
        freq[i] = f;
    }
}

void m2_rope_table_fill(float *cos_out, float *sin_out, int n_pos, const float *freq, int D) {
    for (int p = 0; p < n_pos; p++)
        for (int i = 0; i < D / 2; i++) {
            float a = (float)p * freq[i];
            cos_out[(size_t)p * (D / 2) + i] = cosf(a);
            sin_out[(size_t)p * (D / 2) + i] = sinf(a);
        }
}

typedef struct {
    float *x; const int *pos; const float *freq; int nh, D, ld; m2_rope_layout layout; float sign;
    const m2_rope_table *tab;
} rope_job;

static void rope_rows(void *vp, long b, long e, int tid) {
    rope_job *j = vp;
    int half = j->D / 2;
    float cs[512], sn[512];
    for (long n = b; n < e; n++) {
        int p = j->pos[n];
        if (j->tab && p < j->tab->n_pos) {
            const float *tc = j->tab->cos + (size_t)p * half, *ts = j->tab->sin + (size_t)p * half;
            for (int i = 0; i < half; i++) { cs[i] = tc[i]; sn[i] = j->sign * ts[i]; }
        } else
            for (int i = 0; i < half; i++) {
                float a = (float)p * j->freq[i];
                cs[i] = cosf(a);
                sn[i] = j->sign * sinf(a);
            }
        for (int h = 0; h < j->nh; h++) {
            float *v = j->x + (size_t)n * j->ld + (size_t)h * j->D;
            if (j->layout == M2_ROPE_ADJACENT)
                for (int i = 0; i < half; i++) {
                    float a = v[2 * i], c = v[2 * i + 1];
                    v[2 * i] = a * cs[i] - c * sn[i];
                    v[2 * i + 1] = a * sn[i] + c * cs[i];
                }
            else
                for (int i = 0; i < half; i++) {
                    float a = v[i], c = v[i + half];
                    v[i] = a * cs[i] - c * sn[i];
                    v[i + half] = a * sn[i] + c * cs[i];
                }
        }
    }
}

void m2_rope_forward(float *x, const int *pos, const float *freq, int N, int nh, int D, int ld,
                     m2_rope_layout layout, const m2_rope_table *tab, m2_pool *pool) {
    rope_job j = {x, pos, freq, nh, D, ld, layout, 1.0f, tab};
    m2_pool_for(pool, N, rope_rows, &j);
}

void m2_rope_backward(float *dx, const int *pos, const float *freq, int N, int nh, int D, int ld,
                      m2_rope_layout layout, const m2_rope_table *tab, m2_pool *pool) {
    rope_job j = {dx, pos, freq, nh, D, ld, layout, -1.0f, tab};
    m2_pool_for(pool, N, rope_rows, &j);
}

/* ---- swiglu ---- */
typedef struct { float *out, *dg, *du; const float *g, *u, *dout; int set; } glu_job;

static void glu_fwd(void *vp, long b, long e, int tid) {
    glu_job *j = vp;
    for (long i = b; i < e; i++) {
        float g = j->g[i];
        j->out[i] = g / (1.0f + m2_fast_expf(-g)) * j->u[i];
    }
}

/* both gradients written (not accumulated): one pass, no zeroing beforehand */
static void glu_bwd_set(const glu_job *j, long b, long e) {
    float *restrict dg = j->dg, *restrict du = j->du;
    const float *restrict gp = j->g, *restrict up = j->u, *restrict dp = j->dout;
    for (long i = b; i < e; i++) {
        float g = gp[i], s = 1.0f / (1.0f + m2_fast_expf(-g)), d = dp[i];
        dg[i] = d * up[i] * s * (1.0f + g * (1.0f - s));
        du[i] = d * g * s;
    }
}

static void glu_bwd(void *vp, long b, long e, int tid) {
    glu_job *j = vp;
    if (j->set) { glu_bwd_set(j, b, e); return; }
    for (long i = b; i < e; i++) {
        float g = j->g[i], s = 1.0f / (1.0f + m2_fast_expf(-g)), d = j->dout[i];
        if (j->dg) j->dg[i] += d * j->u[i] * s * (1.0f + g * (1.0f - s));
        if (j->du) j->du[i] += d * g * s;
    }
}

void m2_swiglu_forward(float *out, const float *gate, const float *up, long n, m2_pool *pool) {
    glu_job j = {.out = out, .g = gate, .u = up};
    m2_pool_for(pool, n, glu_fwd, &j);
}

void m2_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate,
                        const float *up, long n, m2_pool *pool) {
    glu_job j = {.dg = dgate, .du = dup, .g = gate, .u = up, .dout = dout};
    m2_pool_for(pool, n, glu_bwd, &j);
}

void m2_swiglu_backward_set(float *dgate, float *dup, const float *dout, const float *gate,
                            const float *up, long n, m2_pool *pool) {
    glu_job j = {.dg = dgate, .du = dup, .g = gate, .u = up, .dout = dout, .set = 1};
    m2_pool_for(pool, n, glu_bwd, &j);
}

/* rows variant: gate and up side by side in one [N, 2F] buffer (one GEMM for both) */
typedef struct { float *out, *dgu; const float *gu, *dout; int F; } glu_rows_job;

static void glu_rows_fwd(void *vp, long b, long e, int tid) {
    glu_rows_job *j = vp;
    int F = j->F;
    for (long n = b; n < e; n++) {
        const float *restrict g = j->gu + (size_t)n * 2 * F, *restrict u = g + F;
        float *restrict o = j->out + (size_t)n * F;
        for (int i = 0; i < F; i++) o[i] = g[i] / (1.0f + m2_fast_expf(-g[i])) * u[i];
    }
}

static void glu_rows_bwd(void *vp, long b, long e, int tid) {
    glu_rows_job *j = vp;
    int F = j->F;
    for (long n = b; n < e; n++) {
        const float *restrict gp = j->gu + (size_t)n * 2 * F, *restrict up = gp + F;
        const float *restrict dp = j->dout + (size_t)n * F;
        float *restrict dg = j->dgu + (size_t)n * 2 * F, *restrict du = dg + F;
        for (int i = 0; i < F; i++) {
            float g = gp[i], s = 1.0f / (1.0f + m2_fast_expf(-g)), d = dp[i];
            dg[i] = d * up[i] * s * (1.0f + g * (1.0f - s));
            du[i] = d * g * s;
        }
    }
}

void m2_swiglu_forward_rows(float *out, const float *gu, int N, int F, m2_pool *pool) {
    glu_rows_job j = {.out = out, .gu = gu, .F = F};
    m2_pool_for(pool, N, glu_rows_fwd, &j);
}

void m2_swiglu_backward_rows_set(float *dgu, const float *dout, const float *gu, int N, int F, m2_pool *pool) {
    glu_rows_job j = {.dgu = dgu, .gu = gu, .dout = dout, .F = F};
    m2_pool_for(pool, N, glu_rows_bwd, &j);
}

typedef struct { float *dst; const float *src; } copy_job;

static void copy_part(void *vp, long b, long e, int tid) {
    copy_job *j = vp;
    memcpy(j->dst + b, j->src + b, sizeof(float) * (size_t)(e - b));
}

void m2_copy(float *dst, const float *src, long n, m2_pool *pool) {
    copy_job j = {dst, src};
    if (n < 65536) pool = NULL;   /* not worth waking a thread */
    m2_pool_for(pool, n, copy_part, &j);
}

void m2_add_forward(float *out, const float *a, const float *b, long n) {
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void m2_acc(float *y, const float *x, long n) {
    for (long i = 0; i < n; i++) y[i] += x[i];
}

void m2_dropout_apply(float *dst, const float *x, size_t n, uint64_t offset, uint64_t seed, float p) {
    float keep = 1.0f / (1.0f - p);
    uint32_t cut = (uint32_t)((double)p * 16777216.0);
    uint64_t base = seed + offset;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)(m2_hash64(base + i) >> 40);
        dst[i] = u >= cut ? x[i] * keep : 0.0f;
    }
}
