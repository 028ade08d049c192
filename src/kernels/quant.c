#include "kernels/quant.h"
#include <math.h>
#include <string.h>
#include <strings.h>

const char *m2_dtype_name(m2_dtype t) {
    switch (t) {
    case M2_DT_F32: return "f32";
    case M2_DT_F16: return "f16";
    case M2_DT_BF16: return "bf16";
    case M2_DT_Q8_0: return "q8_0";
    }
    return "?";
}

int m2_dtype_parse(const char *s, m2_dtype *out) {
    static const char *names[] = {"f32", "f16", "bf16", "q8_0"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, names[i]) == 0) { *out = (m2_dtype)i; return 0; }
    if (strcasecmp(s, "q8") == 0) { *out = M2_DT_Q8_0; return 0; }
    return -1;
}

size_t m2_dtype_bytes(m2_dtype t, size_t n) {
    switch (t) {
    case M2_DT_F32: return n * 4;
    case M2_DT_F16: case M2_DT_BF16: return n * 2;
    case M2_DT_Q8_0: return n % M2_Q8_0_BLOCK ? 0 : n / M2_Q8_0_BLOCK * sizeof(m2_block_q8_0);
    }
    return 0;
}

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float m2_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (man << 13));
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t m2_f32_to_f16(float f) {
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);            /* overflow -> inf */
    if (a < 0x38800000u) {                                              /* subnormal or zero */
        float v = u2f(a) * 16777216.0f;                                 /* / 2^-24 */
        uint32_t m = (uint32_t)lrintf(v);                               /* round half even */
        return (uint16_t)(sign | m);
    }
    uint32_t e = (a >> 23) - 112, man = a & 0x7fffff;
    uint32_t h = (e << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

float m2_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t m2_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

void m2_dequantize(m2_dtype t, const void *src, float *dst, size_t n) {
    switch (t) {
    case M2_DT_F32: memcpy(dst, src, n * 4); break;
    case M2_DT_F16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = m2_f16_to_f32(s[i]); break; }
    case M2_DT_BF16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = u2f((uint32_t)s[i] << 16); break; }
    case M2_DT_Q8_0: {
        const m2_block_q8_0 *b = src;
        for (size_t k = 0; k < n / M2_Q8_0_BLOCK; k++) {
            float d = m2_f16_to_f32(b[k].d);
            float *o = dst + k * M2_Q8_0_BLOCK;
            for (int j = 0; j < M2_Q8_0_BLOCK; j++) o[j] = b[k].qs[j] * d;
        }
        break;
    }
    }
}

void m2_quantize(m2_dtype t, const float *src, void *dst, size_t n) {
    switch (t) {
    case M2_DT_F32: memcpy(dst, src, n * 4); break;
    case M2_DT_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = m2_f32_to_f16(src[i]); break; }
    case M2_DT_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = m2_f32_to_bf16(src[i]); break; }
    case M2_DT_Q8_0: {
        m2_block_q8_0 *b = dst;
        for (size_t k = 0; k < n / M2_Q8_0_BLOCK; k++) {
            const float *x = src + k * M2_Q8_0_BLOCK;
            float amax = 0;
            for (int j = 0; j < M2_Q8_0_BLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
            float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
            b[k].d = m2_f32_to_f16(d);
            for (int j = 0; j < M2_Q8_0_BLOCK; j++) {
                /* NaN/inf weights (a corrupt file) must not reach an out-of-range float->int cast */
                float q = roundf(x[j] * id);
                b[k].qs[j] = (int8_t)(q == q ? fminf(fmaxf(q, -127.f), 127.f) : 0.f);
            }
        }
        break;
    }
    }
}
