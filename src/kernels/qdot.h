/* Quantised products that read the stored blocks (ggml's scheme, for generation): the activation
 * row is quantised per block to 8 bits — blocks of 32 with an f32 scale and the sum of the
 * quants for the 32-value types (Q4_0 ... Q8_0, IQ4_NL), super-blocks of 256 with the sums of
 * each 16 for the K-quants — and every weight block is dotted with its activation block in
 * integers; only the per-block scaling is float. Paths: portable C, AVX2 (every type), and
 * AVX-512 VNNI (the 32-value types' byte products; the K-quants take the AVX2 code there), the
 * best one the CPU supports chosen at run time (__builtin_cpu_supports). The integer sums are
 * exact in every path, and the float steps are the same operations in the same order (8 lanes
 * of partial sums per row, fused multiply-adds, one fixed reduction: qdot.c), so every path
 * gives the same bits as the portable one.
 *
 * Error against the f32 product of the dequantised weights: only the activation rounding,
 * |x_i - d q_i| <= d / 2 with d = max|x_block| / 127, so |err| <= sum_blocks (d/2) sum |w|; the
 * tests state their bound from this. Training passes never come here (exact f32 over dequantised
 * tiles: matmul.h). */
#ifndef M2_QDOT_H
#define M2_QDOT_H
#include <stddef.h>
#include "core/pool.h"
#include "kernels/matmul.h"

typedef enum m2_qdot_path { M2_QDOT_AUTO = 0, M2_QDOT_PORTABLE, M2_QDOT_AVX2, M2_QDOT_AVX512 } m2_qdot_path;

/* Largest number of rows the generation path sends through m2_qmatmul; more rows (prompt
 * prefill) are faster as dequantised tiles through sgemm. */
#define M2_QDOT_MAX_ROWS 16

/* The path AUTO takes on this CPU, and a path's name ("portable", "avx2", "avx512-vnni"). */
m2_qdot_path m2_qdot_best(void);
const char *m2_qdot_path_name(m2_qdot_path p);
/* True when path p can run on this CPU (PORTABLE always). */
int m2_qdot_path_available(m2_qdot_path p);

/* Bytes of one quantised activation row of n values for weights of type t (a block type). */
size_t m2_qdot_act_bytes(m2_dtype t, int n);
/* Quantises x[n] for products with weights of type t into qa (m2_qdot_act_bytes, 4-byte aligned)
 * on path p (every path gives the same bytes). */
void m2_qdot_quantize_act(m2_dtype t, const float *x, void *qa, int n, m2_qdot_path path);
/* The dot product of one weight row (n values of block type t) with a quantised activation row. */
float m2_qdot_row(m2_dtype t, const void *wrow, const void *qa, int n, m2_qdot_path path);

/* Scratch bytes m2_qmatmul needs for N input rows of w. */
size_t m2_qmatmul_scratch_bytes(m2_wref w, int N);
/* out[N, ldo] (+ when acc) = x[N, C] W^T (+ bias[OC]) for a block-type w, reading its blocks:
 * each input row quantised once into scratch, output rows split over the pool (each output
 * value is computed alone, so the bits do not depend on the thread count). */
void m2_qmatmul(float *out, int ldo, const float *x, m2_wref w, const float *bias, int N, int acc,
                void *scratch, m2_qdot_path path, m2_pool *pool);

/* Several matrices times the same activation rows (q, k and v; gate and up): x quantised once per
 * activation format, one hand-off to the pool for all their rows, the same values as one
 * m2_qmatmul per item. Items beyond M2_QMM_MAX_ITEMS are ignored. */
#define M2_QMM_MAX_ITEMS 4
typedef struct m2_qmm_item {
    float *out;          /* [N, ldo] */
    int ldo;
    m2_wref w;           /* a block type; every item's w.cols = x's width */
    const float *bias;   /* [w.rows] or NULL */
    int acc;             /* add to out instead of overwriting it */
} m2_qmm_item;
size_t m2_qmatmul_many_scratch_bytes(const m2_qmm_item *it, int n, int N);
void m2_qmatmul_many(const m2_qmm_item *it, int n, const float *x, int N, void *scratch, m2_qdot_path path,
                     m2_pool *pool);

#endif
