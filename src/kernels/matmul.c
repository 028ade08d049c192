#include "kernels/matmul.h"
#include <cblas.h>

void m2_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                       int N, int C, int OC, int accumulate) {
    if (N <= 0 || OC <= 0) return;
    if (bias) {
        for (int n = 0; n < N; n++) {
            float *o = out + (size_t)n * OC;
            if (accumulate) for (int j = 0; j < OC; j++) o[j] += bias[j];
            else for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
        accumulate = 1;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C,
                accumulate ? 1.0f : 0.0f, out, OC);
}

void m2_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC) {
    if (N <= 0) return;
    if (dinp)   /* [N,OC] x [OC,C] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, w, C, 1.0f,
                    dinp, C);
    if (dw)     /* [OC,N] x [N,C] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f,
                    dw, C);
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
                         int accumulate, float *scratch) {
    if (w.dtype == M2_DT_F32) {
        m2_matmul_forward(out, inp, w.data, bias, N, w.cols, w.rows, accumulate);
        return;
    }
    int C = w.cols, OC = w.rows;
    if (bias) {
        for (int n = 0; n < N; n++) {
            float *o = out + (size_t)n * OC;
            if (accumulate) for (int j = 0; j < OC; j++) o[j] += bias[j];
            else for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
        accumulate = 1;
    }
    for (int r0 = 0; r0 < OC; r0 += M2_WTILE_ROWS) {
        int r1 = r0 + M2_WTILE_ROWS < OC ? r0 + M2_WTILE_ROWS : OC;
        m2_wref_rows_f32(w, r0, r1, scratch);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, r1 - r0, C, 1.0f, inp, C, scratch,
                    C, accumulate ? 1.0f : 0.0f, out + r0, OC);
    }
}

void m2_matmul_backward_w(float *dinp, const float *dout, m2_wref w, int N, float *scratch) {
    if (w.dtype == M2_DT_F32) {
        m2_matmul_backward(dinp, NULL, NULL, dout, NULL, w.data, N, w.cols, w.rows);
        return;
    }
    int C = w.cols, OC = w.rows;
    for (int r0 = 0; r0 < OC; r0 += M2_WTILE_ROWS) {
        int r1 = r0 + M2_WTILE_ROWS < OC ? r0 + M2_WTILE_ROWS : OC;
        m2_wref_rows_f32(w, r0, r1, scratch);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, r1 - r0, 1.0f, dout + r0, OC,
                    scratch, C, 1.0f, dinp, C);
    }
}
