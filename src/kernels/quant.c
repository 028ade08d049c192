#include "kernels/quant.h"
#include <math.h>
#include <string.h>
#include <strings.h>

/* Block sizes in bytes (ggml-common.h): f16 fields are 2 bytes, K-quants hold 256 values. */
static const m2_dtype_info dtype_table[M2_DT_COUNT] = {
    [M2_DT_F32] = {"f32", 0, 1, 4, 1},
    [M2_DT_F16] = {"f16", 1, 1, 2, 1},
    [M2_DT_BF16] = {"bf16", 30, 1, 2, 1},
    [M2_DT_Q8_0] = {"q8_0", 8, M2_QK, 2 + 32, 1},
    [M2_DT_Q4_0] = {"q4_0", 2, M2_QK, 2 + 16, 1},
    [M2_DT_Q4_1] = {"q4_1", 3, M2_QK, 2 + 2 + 16, 0},
    [M2_DT_Q5_0] = {"q5_0", 6, M2_QK, 2 + 4 + 16, 0},
    [M2_DT_Q5_1] = {"q5_1", 7, M2_QK, 2 + 2 + 4 + 16, 0},
    [M2_DT_Q2_K] = {"q2_k", 10, M2_QK_K, 16 + 64 + 2 + 2, 0},
    [M2_DT_Q3_K] = {"q3_k", 11, M2_QK_K, 32 + 64 + 12 + 2, 0},
    [M2_DT_Q4_K] = {"q4_k", 12, M2_QK_K, 2 + 2 + 12 + 128, 1},
    [M2_DT_Q5_K] = {"q5_k", 13, M2_QK_K, 2 + 2 + 12 + 32 + 128, 0},
    [M2_DT_Q6_K] = {"q6_k", 14, M2_QK_K, 128 + 64 + 16 + 2, 1},
    [M2_DT_IQ4_NL] = {"iq4_nl", 20, M2_QK, 2 + 16, 0},
};

const m2_dtype_info *m2_dtype_info_of(m2_dtype t) {
    return (unsigned)t < M2_DT_COUNT ? &dtype_table[t] : NULL;
}

int m2_dtype_from_ggml_id(uint32_t id, m2_dtype *out) {
    for (int i = 0; i < M2_DT_COUNT; i++)
        if (dtype_table[i].ggml_id == id) { *out = (m2_dtype)i; return 0; }
    return -1;
}

int m2_dtype_is_block(m2_dtype t) { return (unsigned)t < M2_DT_COUNT && dtype_table[t].block > 1; }

const char *m2_dtype_name(m2_dtype t) { return (unsigned)t < M2_DT_COUNT ? dtype_table[t].name : "?"; }

int m2_dtype_parse(const char *s, m2_dtype *out) {
    for (int i = 0; i < M2_DT_COUNT; i++)
        if (strcasecmp(s, dtype_table[i].name) == 0) { *out = (m2_dtype)i; return 0; }
    if (strcasecmp(s, "q8") == 0) { *out = M2_DT_Q8_0; return 0; }
    return -1;
}

size_t m2_dtype_bytes(m2_dtype t, size_t n) {
    if ((unsigned)t >= M2_DT_COUNT) return 0;
    const m2_dtype_info *d = &dtype_table[t];
    return n % (size_t)d->block ? 0 : n / (size_t)d->block * (size_t)d->bytes;
}

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

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

/* ---- dequantisation, one function per block type -------------------------------------------
 * Every f16 scale is read byte-wise (little-endian); blocks follow each other without padding. */
static inline float h2f(const uint8_t *p) { return m2_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Q4_0 {f16 d; u8 qs[16]}: value j (< 16) is the low nibble of qs[j], value j + 16 the high one;
 * x = (q - 8) d. */
static void dq_q4_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((b[2 + j] & 15) - 8) * d;
        y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
    }
}
/* Q4_1 {f16 d; f16 m; u8 qs[16]}: nibbles as Q4_0, x = q d + m. */
static void dq_q4_1(const uint8_t *b, float *y) {
    float d = h2f(b), m = h2f(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(b[4 + j] & 15) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
}
/* Q5_0 {f16 d; u8 qh[4]; u8 qs[16]}: the fifth bit of value j is bit j of the little-endian u32
 * qh; q = nibble | bit << 4; x = (q - 16) d. */
static void dq_q5_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
    for (int j = 0; j < 16; j++) {
        int lo = (b[6 + j] & 15) | (int)((qh >> j) & 1) << 4, hi = (b[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = (float)(lo - 16) * d;
        y[j + 16] = (float)(hi - 16) * d;
    }
}
/* Q5_1 {f16 d; f16 m; u8 qh[4]; u8 qs[16]}: q as Q5_0, x = q d + m. */
static void dq_q5_1(const uint8_t *b, float *y) {
    float d = h2f(b), m = h2f(b + 2);
    uint32_t qh = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
    for (int j = 0; j < 16; j++) {
        int lo = (b[8 + j] & 15) | (int)((qh >> j) & 1) << 4, hi = (b[8 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = (float)lo * d + m;
        y[j + 16] = (float)hi * d + m;
    }
}
static void dq_q8_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}
/* Q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}: 16 groups of 16 values; group g has scale
 * (scales[g] & 15) d and min (scales[g] >> 4) dmin, x = q scale - min. Value i of half h (128
 * values each) lies in qs[32 h + i % 32] at bits 2 (i / 32); group g = i / 16 counts over the
 * whole block. */
static void dq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *qs = b + 16;
    float d = h2f(b + 80), dmin = h2f(b + 82);
    for (int g = 0; g < 16; g++) {   /* value 16 g + l: half g / 8, crumb k, byte 16 (g % 2) + l */
        int h = g / 8, k = (g % 8) / 2, j0 = 16 * (g % 2);
        float dl = d * (float)(sc[g] & 15), ml = dmin * (float)(sc[g] >> 4);
        for (int l = 0; l < 16; l++) y[16 * g + l] = dl * (float)((qs[32 * h + j0 + l] >> (2 * k)) & 3) - ml;
    }
}
/* Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: low 2 bits of value i as Q2_K; the third
 * bit is bit (i / 32) of hmask[i % 32], and a CLEAR bit subtracts 4: q in [-4, 3]; x = d scale q. */
static void dq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    float d = h2f(b + 108);
    for (int g = 0; g < 16; g++) {   /* as Q2_K; the high bit of value i is bit i / 32 of hm[i % 32] */
        int h = g / 8, k = (g % 8) / 2, j0 = 16 * (g % 2);
        float dl = d * (float)m2_q3k_scale(sc, g);
        for (int l = 0; l < 16; l++) {
            int j = j0 + l, q = ((qs[32 * h + j] >> (2 * k)) & 3) - ((hm[j] >> (g / 2)) & 1 ? 0 : 4);
            y[16 * g + l] = dl * (float)q;
        }
    }
}
/* Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: value i is in qs[32 (i / 64) + i % 32], low
 * nibble when (i / 32) is even; x = d sc q - dmin mn for its group i / 32. */
static void dq_q4_k(const uint8_t *b, float *y) {
    float d = h2f(b), dmin = h2f(b + 2);
    const uint8_t *s = b + 4, *qs = b + 16;
    for (int g = 0; g < 8; g++) {
        int sc, mn;
        m2_k4_scale_min(s, g, &sc, &mn);
        float dl = d * (float)sc, ml = dmin * (float)mn;
        for (int l = 0; l < 32; l++) {
            int q = (qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 15;
            y[32 * g + l] = dl * (float)q - ml;
        }
    }
}
/* Q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: as Q4_K plus a fifth bit, bit g
 * of qh[l] for value 32 g + l. */
static void dq_q5_k(const uint8_t *b, float *y) {
    float d = h2f(b), dmin = h2f(b + 2);
    const uint8_t *s = b + 4, *qh = b + 16, *qs = b + 48;
    for (int g = 0; g < 8; g++) {
        int sc, mn;
        m2_k4_scale_min(s, g, &sc, &mn);
        float dl = d * (float)sc, ml = dmin * (float)mn;
        for (int l = 0; l < 32; l++) {
            int q = ((qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 15) | ((qh[l] >> g) & 1) << 4;
            y[32 * g + l] = dl * (float)q - ml;
        }
    }
}
/* Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: per half h (128 values), value r = 32 k + l
 * (k < 4): low 4 bits from ql[64 h + l + 32 (k % 2)] (nibble k / 2), high 2 bits from
 * qh[32 h + l] at bit 2 k; q - 32 times d scales[i / 16]. */
static void dq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = h2f(b + 208);
    for (int g = 0; g < 16; g++) {   /* value 16 g + l = 128 h + 32 k + j */
        int h = g / 8, k = (g % 8) / 2, j0 = 16 * (g % 2);
        float dl = d * (float)sc[g];
        for (int l = 0; l < 16; l++) {
            int j = j0 + l;
            int q = ((ql[64 * h + j + 32 * (k % 2)] >> (4 * (k / 2))) & 15) | ((qh[32 * h + j] >> (2 * k)) & 3) << 4;
            y[16 * g + l] = dl * (float)(q - 32);
        }
    }
}
/* IQ4_NL {f16 d; u8 qs[16]}: nibbles as Q4_0 index a fixed non-linear table; x = d table[q]. */
const int8_t m2_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static void dq_iq4_nl(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)m2_iq4nl_values[b[2 + j] & 15];
        y[j + 16] = d * (float)m2_iq4nl_values[b[2 + j] >> 4];
    }
}

typedef void (*dq_block_fn)(const uint8_t *b, float *y);
static const dq_block_fn dq_fns[M2_DT_COUNT] = {
    [M2_DT_Q8_0] = dq_q8_0, [M2_DT_Q4_0] = dq_q4_0, [M2_DT_Q4_1] = dq_q4_1, [M2_DT_Q5_0] = dq_q5_0,
    [M2_DT_Q5_1] = dq_q5_1, [M2_DT_Q2_K] = dq_q2_k, [M2_DT_Q3_K] = dq_q3_k, [M2_DT_Q4_K] = dq_q4_k,
    [M2_DT_Q5_K] = dq_q5_k, [M2_DT_Q6_K] = dq_q6_k, [M2_DT_IQ4_NL] = dq_iq4_nl,
};

void m2_dequantize(m2_dtype t, const void *src, float *dst, size_t n) {
    switch (t) {
    case M2_DT_F32: memcpy(dst, src, n * 4); return;
    case M2_DT_F16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = m2_f16_to_f32(s[i]); return; }
    case M2_DT_BF16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = u2f((uint32_t)s[i] << 16); return; }
    default: break;
    }
    if ((unsigned)t >= M2_DT_COUNT || !dq_fns[t]) return;
    const m2_dtype_info *d = &dtype_table[t];
    const uint8_t *b = src;
    for (size_t k = 0; k < n / (size_t)d->block; k++) dq_fns[t](b + k * (size_t)d->bytes, dst + k * (size_t)d->block);
}

/* A float-to-int truncation that stays defined for NaN and out-of-range values (a corrupt file's
 * inf weights). */
static int clamp_trunc(float v, int hi) {
    if (!(v == v) || v < 0.f) return 0;
    return v >= (float)hi ? hi : (int)v;
}

static int clamp_round(float v, int lo, int hi) {
    if (!(v == v)) return 0;
    v = roundf(v);
    return v < (float)lo ? lo : v > (float)hi ? hi : (int)v;
}

/* Q4_K from f32, a plain min/max fit (not ggml's iterative search, so files differ from
 * llama-quantize's): group g of 32 spans [min(0, min x), max x] in 15 steps, scale and -min
 * quantised to 6 bits against the super-block's largest (d, dmin = largest / 63), then each value
 * rounded on its group's grid as the f16-rounded d, dmin give it. Packing inverts m2_k4_scale_min. */
static void q_q4_k(const float *x, uint8_t *b) {
    float scale[8], mins[8], maxs = 0, maxm = 0;
    for (int g = 0; g < 8; g++) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) { lo = fminf(lo, x[32 * g + l]); hi = fmaxf(hi, x[32 * g + l]); }
        scale[g] = (hi - lo) / 15.f;
        mins[g] = -lo;
        maxs = fmaxf(maxs, scale[g]);
        maxm = fmaxf(maxm, mins[g]);
    }
    uint16_t hd = m2_f32_to_f16(maxs / 63.f), hm = m2_f32_to_f16(maxm / 63.f);
    b[0] = (uint8_t)hd; b[1] = (uint8_t)(hd >> 8); b[2] = (uint8_t)hm; b[3] = (uint8_t)(hm >> 8);
    float d = m2_f16_to_f32(hd), dmin = m2_f16_to_f32(hm);
    int sc[8], mn[8];
    for (int g = 0; g < 8; g++) {
        sc[g] = d > 0 ? clamp_round(scale[g] / d, 0, 63) : 0;
        mn[g] = dmin > 0 ? clamp_round(mins[g] / dmin, 0, 63) : 0;
    }
    uint8_t *s = b + 4, *qs = b + 16;
    for (int g = 0; g < 4; g++) {
        s[g] = (uint8_t)(sc[g] | (sc[g + 4] >> 4) << 6);
        s[g + 4] = (uint8_t)(mn[g] | (mn[g + 4] >> 4) << 6);
        s[g + 8] = (uint8_t)((sc[g + 4] & 15) | (mn[g + 4] & 15) << 4);
    }
    memset(qs, 0, 128);
    for (int g = 0; g < 8; g++) {
        float dl = d * (float)sc[g], ml = dmin * (float)mn[g];
        for (int l = 0; l < 32; l++) {
            int q = dl > 0 ? clamp_round((x[32 * g + l] + ml) / dl, 0, 15) : 0;
            qs[32 * (g / 2) + l] |= (uint8_t)(q << (4 * (g % 2)));
        }
    }
}

/* Q6_K from f32, a plain symmetric fit (not ggml's search either): group g of 16 gets the step
 * max|x| / 31 (values -31..31 around the centre 32), the 16 steps quantised to 8 bits (rounded
 * up) against the super-block's largest (d = largest / 127, f16), then each value rounded on its
 * group's grid as the f16-rounded d gives it. Packing inverts dq_q6_k's layout. */
static void q_q6_k(const float *x, uint8_t *b) {
    float step[16], maxs = 0;
    for (int g = 0; g < 16; g++) {
        float amax = 0;
        for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * g + l]));
        step[g] = amax / 31.f;
        maxs = fmaxf(maxs, step[g]);
    }
    uint16_t hd = m2_f32_to_f16(maxs / 127.f);
    b[208] = (uint8_t)hd; b[209] = (uint8_t)(hd >> 8);
    float d = m2_f16_to_f32(hd);
    memset(b, 0, 192);
    uint8_t *ql = b, *qh = b + 128;
    for (int g = 0; g < 16; g++) {
        /* rounded up: a grid never narrower than the group (no value clamped) */
        int sc = d > 0 ? (int)fminf(ceilf(step[g] / d), 127.f) : 0;
        b[192 + g] = (uint8_t)sc;
        float dl = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            int i = 16 * g + l, h = i / 128, k = (i % 128) / 32, j = i % 32;
            int q = (dl > 0 ? clamp_round(x[i] / dl, -32, 31) : 0) + 32;
            ql[64 * h + j + 32 * (k % 2)] |= (uint8_t)((q & 15) << (4 * (k / 2)));
            qh[32 * h + j] |= (uint8_t)((q >> 4) << (2 * k));
        }
    }
}

int m2_quantize(m2_dtype t, const float *src, void *dst, size_t n) {
    switch (t) {
    case M2_DT_F32: memcpy(dst, src, n * 4); return 0;
    case M2_DT_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = m2_f32_to_f16(src[i]); return 0; }
    case M2_DT_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = m2_f32_to_bf16(src[i]); return 0; }
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
        return 0;
    }
    case M2_DT_Q4_0: {
        uint8_t *o = dst;
        for (size_t k = 0; k < n / M2_QK; k++, o += dtype_table[M2_DT_Q4_0].bytes) {
            const float *x = src + k * M2_QK;
            float amax = 0, max = 0;             /* the value of largest magnitude, with its sign */
            for (int j = 0; j < M2_QK; j++)
                if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
            float d = max / -8.f, id = d ? 1.f / d : 0.f;
            uint16_t h = m2_f32_to_f16(d);
            o[0] = (uint8_t)h; o[1] = (uint8_t)(h >> 8);
            for (int j = 0; j < M2_QK / 2; j++) {
                int q0 = clamp_trunc(x[j] * id + 8.5f, 15), q1 = clamp_trunc(x[j + M2_QK / 2] * id + 8.5f, 15);
                o[2 + j] = (uint8_t)(q0 | (q1 << 4));
            }
        }
        return 0;
    }
    case M2_DT_Q4_K:
        for (size_t k = 0; k < n / M2_QK_K; k++) q_q4_k(src + k * M2_QK_K, (uint8_t *)dst + k * dtype_table[t].bytes);
        return 0;
    case M2_DT_Q6_K:
        for (size_t k = 0; k < n / M2_QK_K; k++) q_q6_k(src + k * M2_QK_K, (uint8_t *)dst + k * dtype_table[t].bytes);
        return 0;
    default: return -1;
    }
}
