#include "kernels/matmul.h"
#include <cblas.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>
#include "kernels/fastmath.h"

void m2_blas_single_thread(void) { openblas_set_num_threads(1); }

const char *m2_blas_better_coretype(void) {
    if (getenv("OPENBLAS_CORETYPE")) return NULL;   /* the user's choice stands */
    const char *core = openblas_get_corename();
    if (!core) return NULL;
    int generic = !strcasecmp(core, "Prescott") || !strcasecmp(core, "Core2") || !strcasecmp(core, "Nehalem");
    int avx2_core = !strcasecmp(core, "Haswell") || !strcasecmp(core, "Zen");
    if (!generic && !avx2_core) return NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return "COOPERLAKE";
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SKYLAKEX";
    if (generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
#endif
    return NULL;
}

void m2_blas_restart_with_better_core(char **argv) {
    const char *core = m2_blas_better_coretype();
    if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0) execv("/proc/self/exe", argv);
}

typedef struct {
    int split_m, transA, transB, M, N, K, lda, ldb, ldc, blk;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gemm_job;

static void gemm_part(void *vp, long b, long e, int tid) {
    gemm_job *j = vp;
    long lo = b * j->blk, hi = e * j->blk;
    int dim = j->split_m ? j->M : j->N;
    if (hi > dim) hi = dim;
    if (lo >= hi) return;
    int n = (int)(hi - lo);
    const float *A = j->A, *B = j->B;
    float *C = j->C;
    int M = j->M, N = j->N;
    if (j->split_m) { A += j->transA ? lo : lo * (long)j->lda; C += lo * (long)j->ldc; M = n; }
    else { B += j->transB ? lo * (long)j->ldb : lo; C += lo; N = n; }
    cblas_sgemm(CblasRowMajor, j->transA ? CblasTrans : CblasNoTrans, j->transB ? CblasTrans : CblasNoTrans,
                M, N, j->K, j->alpha, A, j->lda, B, j->ldb, j->beta, C, j->ldc);
}

/* Few rows times a transposed weight (decode): each weight row is read once and dotted with every
 * input row; BLAS would repack the whole weight per call. Parallel over output columns. */
typedef struct { int M, K, lda, ldb, ldc; float alpha, beta; const float *A, *B; float *C; } skinny_job;

static void skinny_store(const skinny_job *j, int m, long o, float d) {
    float *c = j->C + (long)m * j->ldc + o;
    *c = j->beta == 0.0f ? j->alpha * d : j->beta * *c + j->alpha * d;
}

static void skinny_part(void *vp, long b, long e, int tid) {
    skinny_job *j = vp;
    long o = b;
    for (; o + 4 <= e; o += 4) {   /* four weight rows at a time: the same values as one by one */
        const float *w = j->B + o * (long)j->ldb;
        for (int m = 0; m < j->M; m++) {
            float d[4];
            m2_vdot4(j->A + (long)m * j->lda, w, w + j->ldb, w + 2 * (long)j->ldb, w + 3 * (long)j->ldb, j->K, d);
            for (int r = 0; r < 4; r++) skinny_store(j, m, o + r, d[r]);
        }
    }
    for (; o < e; o++) {
        const float *w = j->B + o * (long)j->ldb;
        for (int m = 0; m < j->M; m++) skinny_store(j, m, o, m2_vdot(j->A + (long)m * j->lda, w, j->K));
    }
}

void m2_sgemm_serial(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void m2_sgemm(m2_pool *pool, int transA, int transB, int M, int N, int K, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (!transA && transB && M <= 8 && K >= 16) {
        skinny_job sj = {M, K, lda, ldb, ldc, alpha, beta, A, B, C};
        if (pool && (double)M * N * K >= 262144.0) m2_pool_for(pool, N, skinny_part, &sj);
        else skinny_part(&sj, 0, N, 0);
        return;
    }
    int nt = pool ? m2_pool_threads(pool) : 1;
    double work = (double)M * N * (K > 0 ? K : 1);
    if (nt <= 1 || work < 262144.0) {
        cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_job j = {M >= N, transA, transB, M, N, K, lda, ldb, ldc, 16, alpha, beta, A, B, C};
    int dim = j.split_m ? M : N;
    m2_pool_for(pool, (dim + j.blk - 1) / j.blk, gemm_part, &j);
}

void m2_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                       int N, int C, int OC, int accumulate, m2_pool *pool) {
    if (N <= 0 || OC <= 0) return;
    if (bias) {
        for (int n = 0; n < N; n++) {
            float *o = out + (size_t)n * OC;
            if (accumulate) for (int j = 0; j < OC; j++) o[j] += bias[j];
            else for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
        accumulate = 1;
    }
    m2_sgemm(pool, 0, 1, N, OC, C, 1.0f, inp, C, w, C, accumulate ? 1.0f : 0.0f, out, OC);
}

void m2_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, m2_pool *pool) {
    if (N <= 0) return;
    if (dinp)   /* [N,OC] x [OC,C] */
        m2_sgemm(pool, 0, 0, N, C, OC, 1.0f, dout, OC, w, C, 1.0f, dinp, C);
    if (dw)     /* [OC,N] x [N,C] */
        m2_sgemm(pool, 1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
    if (dbias)
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * OC;
            for (int j = 0; j < OC; j++) dbias[j] += d[j];
        }
}

void m2_wref_rows_f32(m2_wref w, int r0, int r1, float *dst) {
    size_t off = m2_dtype_bytes(w.dtype, (size_t)r0 * w.cols);
    m2_dequantize(w.dtype, (const unsigned char *)w.data + off, dst, (size_t)(r1 - r0) * w.cols);
}

void m2_matmul_forward_w(float *out, const float *inp, m2_wref w, const float *bias, int N,
                         int accumulate, float *scratch, m2_pool *pool) {
    m2_matmul_forward_wld(out, w.rows, inp, w, bias, N, accumulate, scratch, pool);
}

void m2_matmul_forward_wld(float *out, int ldo, const float *inp, m2_wref w, const float *bias, int N,
                           int accumulate, float *scratch, m2_pool *pool) {
    int C = w.cols, OC = w.rows;
    if (N <= 0 || OC <= 0) return;
    if (bias) {
        for (int n = 0; n < N; n++) {
            float *o = out + (size_t)n * ldo;
            if (accumulate) for (int j = 0; j < OC; j++) o[j] += bias[j];
            else for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
        accumulate = 1;
    }
    if (w.dtype == M2_DT_F32) {
        m2_sgemm(pool, 0, 1, N, OC, C, 1.0f, inp, C, w.data, C, accumulate ? 1.0f : 0.0f, out, ldo);
        return;
    }
    for (int r0 = 0; r0 < OC; r0 += M2_WTILE_ROWS) {
        int r1 = r0 + M2_WTILE_ROWS < OC ? r0 + M2_WTILE_ROWS : OC;
        m2_wref_rows_f32(w, r0, r1, scratch);
        m2_sgemm(pool, 0, 1, N, r1 - r0, C, 1.0f, inp, C, scratch, C, accumulate ? 1.0f : 0.0f, out + r0, ldo);
    }
}

void m2_matmul_dinp_w(float *dinp, const float *dout, m2_wref w, int N, int accumulate,
                      float *scratch, m2_pool *pool) {
    m2_matmul_dinp_wld(dinp, dout, w.rows, w, N, accumulate, scratch, pool);
}

void m2_matmul_dinp_wld(float *dinp, const float *dout, int ldd, m2_wref w, int N, int accumulate,
                        float *scratch, m2_pool *pool) {
    int C = w.cols, OC = w.rows;
    if (N <= 0) return;
    if (w.dtype == M2_DT_F32) {   /* [N,OC] x [OC,C] */
        m2_sgemm(pool, 0, 0, N, C, OC, 1.0f, dout, ldd, w.data, C, accumulate ? 1.0f : 0.0f, dinp, C);
        return;
    }
    for (int r0 = 0; r0 < OC; r0 += M2_WTILE_ROWS) {
        int r1 = r0 + M2_WTILE_ROWS < OC ? r0 + M2_WTILE_ROWS : OC;
        m2_wref_rows_f32(w, r0, r1, scratch);
        m2_sgemm(pool, 0, 0, N, C, r1 - r0, 1.0f, dout + r0, ldd, scratch, C,
                 accumulate || r0 > 0 ? 1.0f : 0.0f, dinp, C);
    }
}

void m2_matmul_backward_w(float *dinp, const float *dout, m2_wref w, int N, float *scratch,
                          m2_pool *pool) {
    m2_matmul_dinp_w(dinp, dout, w, N, 1, scratch, pool);
}
