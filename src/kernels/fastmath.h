/* A vectorisable expf for softmax-style loops (gcc vectorises loops calling it at -O3; libm's expf
 * is not vectorised without -ffast-math). Max relative error about 2e-7 on [-87, 88]; inputs are
 * clamped to that range (exp(-87) ~ 1.6e-38 stands in for 0). Deterministic: pure float ops. */
#ifndef M2_FASTMATH_H
#define M2_FASTMATH_H
#include <stdint.h>
#include <string.h>

static inline float m2_fast_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round(x / ln 2) */
    float r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;  /* Cody-Waite */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* a NaN input (NaN weights in a corrupt file) stays NaN through r; only the exponent's int
     * conversion, undefined for NaN, takes 0 instead */
    int32_t e = ((int32_t)(n == n ? n : 0.0f) + 127) << 23;
    float s;
    memcpy(&s, &e, 4);
    return p * s;
}

/* Reductions written with 16 independent lanes so gcc vectorises them without -ffast-math; the
 * summation order is fixed (lane-wise, then lanes 0..15), hence deterministic. */
static inline float m2_vsum(const float *x, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int t = 0; t < 16; t++) acc[t] += x[i + t];
    float s = 0;
    for (int t = 0; t < 16; t++) s += acc[t];
    for (; i < n; i++) s += x[i];
    return s;
}

static inline float m2_vdot(const float *a, const float *b, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int t = 0; t < 16; t++) acc[t] += a[i + t] * b[i + t];
    float s = 0;
    for (int t = 0; t < 16; t++) s += acc[t];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Four m2_vdot(a, b_r, n) at once (out[r], r < 4), each with exactly m2_vdot's operations and order
 * (the same bits): a's values are loaded once for the four rows and the four accumulator chains
 * overlap, so a decode step's product with an f32 weight reads memory at a higher rate. */
static inline void m2_vdot4(const float *a, const float *b0, const float *b1, const float *b2, const float *b3, int n,
                            float out[4]) {
    float c0[16] = {0}, c1[16] = {0}, c2[16] = {0}, c3[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int t = 0; t < 16; t++) {
            float x = a[i + t];
            c0[t] += x * b0[i + t];
            c1[t] += x * b1[i + t];
            c2[t] += x * b2[i + t];
            c3[t] += x * b3[i + t];
        }
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int t = 0; t < 16; t++) { s0 += c0[t]; s1 += c1[t]; s2 += c2[t]; s3 += c3[t]; }
    for (; i < n; i++) { s0 += a[i] * b0[i]; s1 += a[i] * b1[i]; s2 += a[i] * b2[i]; s3 += a[i] * b3[i]; }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

static inline float m2_vmax(const float *x, int n) {
    float acc[16];
    for (int t = 0; t < 16; t++) acc[t] = -3.4e38f;
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int t = 0; t < 16; t++) acc[t] = x[i + t] > acc[t] ? x[i + t] : acc[t];
    float m = -3.4e38f;
    for (int t = 0; t < 16; t++) m = acc[t] > m ? acc[t] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* y[i] = exp(x[i] - sub), returns the sum */
static inline float m2_vexp_sum(float *y, const float *x, float sub, int n) {
    for (int i = 0; i < n; i++) y[i] = m2_fast_expf(x[i] - sub);
    return m2_vsum(y, n);
}

#endif
