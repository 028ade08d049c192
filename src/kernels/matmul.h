/* Linear layers through OpenBLAS sgemm. Weights are PyTorch/GGUF-shaped [OC, C] (out x in).
 * m2_wref lets frozen weights stay in their storage dtype: non-f32 weights are dequantised a
 * tile of rows at a time into a caller-provided scratch buffer and fed to sgemm.
 * Threads: OpenBLAS runs single-threaded; every GEMM is split statically over the pool's threads
 * (by output rows or columns), so the same thread count gives the same bits and no BLAS worker
 * threads spin against the pool. pool may be NULL (serial). */
#ifndef M2_MATMUL_H
#define M2_MATMUL_H
#include "core/pool.h"
#include "kernels/quant.h"

/* A read-only view of a [rows, cols] weight matrix in any storage dtype. */
typedef struct m2_wref {
    m2_dtype dtype;
    const void *data;
    int rows, cols;   /* rows = output features OC, cols = input features C */
} m2_wref;

/* Rows of a non-f32 weight dequantised per sgemm call; scratch must hold M2_WTILE_ROWS*cols floats. */
#define M2_WTILE_ROWS 256

static inline m2_wref m2_wref_f32(const float *w, int rows, int cols) {
    m2_wref r = {M2_DT_F32, w, rows, cols};
    return r;
}

/* Row-major C[M,N] = alpha op(A) op(B) + beta C, op = transpose when trans*; split over the pool
 * along the larger of M and N (small products run on the calling thread). */
void m2_sgemm(m2_pool *pool, int transA, int transB, int M, int N, int K, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* The same product as exactly one BLAS sgemm on the calling thread: no split and no small-shape
 * path, so the bits are those of a plain sgemm whatever the shape. For callers without a pool
 * (critic heads, LoRA merge), whose results must not depend on m2_sgemm's shape rules. */
void m2_sgemm_serial(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);
/* Makes OpenBLAS single-threaded (the pool parallelises instead). Idempotent. */
void m2_blas_single_thread(void);

/* The OPENBLAS_CORETYPE that fits this CPU when OpenBLAS (a DYNAMIC_ARCH build such as Debian's
 * 0.3.21) did not recognise it and fell back to its generic SSE3 "Prescott" kernels — measured
 * 5-7x slower sgemm on an Intel machine (family 6 model 207, AVX-512 + BF16) — or chose its AVX2
 * Haswell/Zen kernels on a CPU with AVX-512 (0.3.21 maps AMD Zen 4/5 there: 1.5-2.5x slower
 * prompt processing measured on an EPYC of family 26), and the user has not set
 * OPENBLAS_CORETYPE; NULL otherwise. OpenBLAS reads the variable only when it is
 * loaded, so a program must set it and re-execute itself (see src/cli/main.c). */
const char *m2_blas_better_coretype(void);
/* For a program's main(), first thing: when m2_blas_better_coretype() names a core, sets
 * OPENBLAS_CORETYPE and re-executes the program with the same arguments (the variable is read
 * only when OpenBLAS loads). Returns only when no restart is needed or exec failed (then the
 * program simply runs on the kernels OpenBLAS chose). */
void m2_blas_restart_with_better_core(char **argv);

/* out[N,OC] = (accumulate ? out : 0) + inp[N,C] . w[OC,C]^T (+ bias[OC], may be NULL) */
void m2_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                       int N, int C, int OC, int accumulate, m2_pool *pool);
/* dinp[N,C] += dout[N,OC] . w[OC,C];  dw[OC,C] += dout^T . inp;  dbias[OC] += sum_n dout.
 * Any of dinp, dw, dbias may be NULL (frozen weight => pass dw = NULL and it is never computed). */
void m2_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, m2_pool *pool);

/* Same as m2_matmul_forward for a weight in any dtype. scratch: M2_WTILE_ROWS*w.cols floats (unused
 * for f32). */
void m2_matmul_forward_w(float *out, const float *inp, m2_wref w, const float *bias, int N,
                         int accumulate, float *scratch, m2_pool *pool);
/* The same with out rows ldo floats apart (a column slice of a wider output). */
void m2_matmul_forward_wld(float *out, int ldo, const float *inp, m2_wref w, const float *bias, int N,
                           int accumulate, float *scratch, m2_pool *pool);
/* dinp[N,C] += dout[N,OC] . w  for a weight in any dtype (frozen: no weight gradient). */
void m2_matmul_backward_w(float *dinp, const float *dout, m2_wref w, int N, float *scratch,
                          m2_pool *pool);
/* dinp[N,C] (+)= dout[N,OC] W; accumulate = 0 overwrites dinp (no zeroing pass needed) */
void m2_matmul_dinp_w(float *dinp, const float *dout, m2_wref w, int N, int accumulate,
                      float *scratch, m2_pool *pool);
/* The same with dout rows ldd floats apart (a column slice of a wider gradient). */
void m2_matmul_dinp_wld(float *dinp, const float *dout, int ldd, m2_wref w, int N, int accumulate,
                        float *scratch, m2_pool *pool);
/* Dequantise rows [r0, r1) of w into dst[(r1-r0), cols]. */
void m2_wref_rows_f32(m2_wref w, int r0, int r1, float *dst);

#endif
