/* Element-wise and row-wise ops: embedding, RMSNorm, RoPE, SwiGLU, residual. Row-parallel ops take
 * an optional thread pool (NULL = serial); work is split statically so results depend only on the
 * thread count (and, for these ops, not even on that: every reduction is per row or per column). */
#ifndef M2_OPS_H
#define M2_OPS_H
#include <stdint.h>
#include "core/pool.h"
#include "kernels/matmul.h"

/* out[N,C] = wte[tokens[n], :]   (wte [V,C] in any dtype) */
void m2_embedding_forward(float *out, const int32_t *tokens, m2_wref wte, int N);
/* dwte[V,C] += scatter of dout[N,C] by tokens (serial, in token order: deterministic) */
void m2_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, int N, int C);

/* out[N,C] = inp * rstd * w;  rstd[N] = 1/sqrt(mean(inp^2) + eps)  (kept for backward) */
void m2_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                        float eps, m2_pool *pool);
/* dinp[N,C] += ...; dw[C] += sum_n dout * inp * rstd (dw may be NULL) */
void m2_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                         const float *rstd, int N, int C, m2_pool *pool);
/* The same with dinp written (=), not accumulated. */
void m2_rmsnorm_backward_set(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                             const float *rstd, int N, int C, m2_pool *pool);

/* RoPE pair layout. ADJACENT rotates (x[2i], x[2i+1]) (GGUF llama, Meta); HALF rotates
 * (x[i], x[i + D/2]) (HF rotate_half: HF Llama/Mistral, Qwen2 in both formats). */
typedef enum m2_rope_layout { M2_ROPE_ADJACENT = 0, M2_ROPE_HALF = 1 } m2_rope_layout;

/* Llama-3.1 frequency scaling ("rope_type": "llama3"). factor <= 0 or type 0 = none. */
typedef struct m2_rope_scaling {
    int type;                    /* 0 none, 1 llama3 */
    float factor;                /* e.g. 8 */
    float low_freq_factor;       /* e.g. 1 */
    float high_freq_factor;      /* e.g. 4 */
    int original_max_pos;        /* e.g. 8192 */
} m2_rope_scaling;

/* freq[D/2]: theta^(-2i/D), then Llama-3.1 scaling if sc && sc->type == 1. */
void m2_rope_freqs(float *freq, int D, float theta, const m2_rope_scaling *sc);
/* Precomputed cos/sin of pos * freq[i] for pos < n_pos: cos, sin [n_pos, D/2]. Positions beyond
 * n_pos are computed on the fly (same values: both use cosf/sinf of the same float angle). */
typedef struct m2_rope_table { const float *cos, *sin; int n_pos; } m2_rope_table;
void m2_rope_table_fill(float *cos_out, float *sin_out, int n_pos, const float *freq, int D);

/* In place on x[N, nh, D] (row stride ld floats between tokens, ld >= nh*D): rotate pair i of token
 * n by angle pos[n] * freq[i]. tab may be NULL. */
void m2_rope_forward(float *x, const int *pos, const float *freq, int N, int nh, int D, int ld,
                     m2_rope_layout layout, const m2_rope_table *tab, m2_pool *pool);
/* In place on dx[N, nh, D]: the transpose of the rotation (rotate by -angle). */
void m2_rope_backward(float *dx, const int *pos, const float *freq, int N, int nh, int D, int ld,
                      m2_rope_layout layout, const m2_rope_table *tab, m2_pool *pool);

/* out[n] = silu(gate[n]) * up[n]  over n values */
void m2_swiglu_forward(float *out, const float *gate, const float *up, long n, m2_pool *pool);
/* dgate[n] += dout * up * silu'(gate); dup[n] += dout * silu(gate) */
void m2_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate,
                        const float *up, long n, m2_pool *pool);
/* the same, but dgate and dup are written (both non-NULL), not accumulated */
void m2_swiglu_backward_set(float *dgate, float *dup, const float *dout, const float *gate,
                            const float *up, long n, m2_pool *pool);

/* Rows variant: gu[N, 2F] holds gate | up side by side; out[N,F] = silu(gate) * up. */
void m2_swiglu_forward_rows(float *out, const float *gu, int N, int F, m2_pool *pool);
/* dgu[N, 2F] = (dgate | dup) given dout[N,F], written (not accumulated). */
void m2_swiglu_backward_rows_set(float *dgu, const float *dout, const float *gu, int N, int F, m2_pool *pool);

/* Counter-based dropout: dst[i] = x[i] / (1 - p) if keep(seed, offset + i) else 0, where keep is
 * a 24-bit hash (splitmix64's finaliser) of seed + offset + i compared with p * 2^24. The mask of
 * element k of a stream depends only on (seed, k): a range can be applied in any pieces, by any
 * thread, forward and again in the backward, without storing it. dst may alias x. */
void m2_dropout_apply(float *dst, const float *x, size_t n, uint64_t offset, uint64_t seed, float p);

/* dst[n] = src[n], split over the pool when large */
void m2_copy(float *dst, const float *src, long n, m2_pool *pool);
/* out[n] = a[n] + b[n]  (out may alias a) */
void m2_add_forward(float *out, const float *a, const float *b, long n);
/* y[n] += x[n] */
void m2_acc(float *y, const float *x, long n);

#endif
