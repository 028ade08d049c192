/* Element types: ggml type layouts, f16/bf16 conversions; the block types' (de)quantisation is
 * kernels/quant.c's (one formula per type). */
#include "io/ggml_type.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "kernels/quant.h"

typedef struct { uint32_t id; int blck; int bytes; const char *name; } type_info;

/* Layouts of the ggml types we can at least skip over (ggml.c type_traits). */
static const type_info types[] = {
    {0, 1, 4, "F32"},      {1, 1, 2, "F16"},      {2, 32, 18, "Q4_0"},   {3, 32, 20, "Q4_1"},
    {6, 32, 22, "Q5_0"},   {7, 32, 24, "Q5_1"},   {8, 32, 34, "Q8_0"},   {9, 32, 36, "Q8_1"},
    {10, 256, 84, "Q2_K"}, {11, 256, 110, "Q3_K"}, {12, 256, 144, "Q4_K"}, {13, 256, 176, "Q5_K"},
    {14, 256, 210, "Q6_K"}, {15, 256, 292, "Q8_K"}, {24, 1, 1, "I8"},     {25, 1, 2, "I16"},
    {26, 1, 4, "I32"},     {27, 1, 8, "I64"},     {28, 1, 8, "F64"},     {30, 1, 2, "BF16"},
    {20, 32, 18, "IQ4_NL"}, {23, 256, 136, "IQ4_XS"},
};

int m2_ggml_type_info(uint32_t type, int *block_elems, int *block_bytes, const char **name) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].id == type) {
            if (block_elems) *block_elems = types[i].blck;
            if (block_bytes) *block_bytes = types[i].bytes;
            if (name) *name = types[i].name;
            return 1;
        }
    if (name) *name = "?";
    return 0;
}

int m2_ggml_supported(uint32_t t) {
    m2_dtype dt;   /* the kernels' table says which types have an encoder */
    return !m2_dtype_from_ggml_id(t, &dt) && m2_dtype_info_of(dt)->quantize;
}

int m2_ggml_readable(uint32_t t) {
    m2_dtype dt;
    return !m2_dtype_from_ggml_id(t, &dt);
}

const char *m2_ggml_type_name(uint32_t t) {
    const char *n;
    m2_ggml_type_info(t, NULL, NULL, &n);
    return n;
}

int m2_ggml_type_parse(const char *s, m2_ggml_type *out) {
    static const struct { const char *s; m2_ggml_type t; } names[] = {
        {"f32", M2_GGML_F32}, {"f16", M2_GGML_F16}, {"bf16", M2_GGML_BF16},
        {"q8_0", M2_GGML_Q8_0}, {"q4_0", M2_GGML_Q4_0}, {"q4_k", M2_GGML_Q4_K},
        {"q6_k", M2_GGML_Q6_K}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(s, names[i].s)) { *out = names[i].t; return 0; }
    return -1;
}

int m2_ggml_nbytes(uint32_t type, uint64_t n, uint64_t *out) {
    int be, bb;
    if (!m2_ggml_type_info(type, &be, &bb, NULL)) return -1;
    if (n % (uint64_t)be) return -1;
    uint64_t r;
    if (__builtin_mul_overflow(n / (uint64_t)be, (uint64_t)bb, &r)) return -1;
    *out = r;
    return 0;
}

uint16_t m2_ggml_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {                          /* subnormal half (or zero) */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;   /* a carry rounds up the exponent */
    return (uint16_t)half;
}

float m2_ggml_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0) {
        float f = (float)mant * 5.9604644775390625e-8f;   /* mant * 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 31) x = sign | 0x7f800000u | (mant << 13);
    else x = sign | ((exp + 112) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t m2_ggml_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float m2_ggml_bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* A block type through kernels/quant.c: n checked against the block, src copied when it is not
 * 2-byte aligned (the kernels read f16 scales as aligned halves). */
static int block_convert(uint32_t type, const void *src, float *dst, void *qdst, uint64_t n, m2_err *err) {
    m2_dtype dt;
    const char *what = qdst ? "cannot encode" : "cannot convert to f32";
    if (m2_dtype_from_ggml_id(type, &dt))
        return m2_errorf(err, M2_EUNSUPPORTED, "dtype %s (%u): %s", m2_ggml_type_name(type), type, what);
    const m2_dtype_info *di = m2_dtype_info_of(dt);
    if (n % (uint64_t)di->block)
        return m2_errorf(err, M2_ESHAPE, "%s: %llu values is not a whole number of %d-value blocks",
                         m2_ggml_type_name(type), (unsigned long long)n, di->block);
    if (qdst) {
        if (m2_quantize(dt, src, qdst, n))
            return m2_errorf(err, M2_EUNSUPPORTED, "dtype %s (%u): %s", m2_ggml_type_name(type), type, what);
        return 0;
    }
    void *tmp = NULL;
    if ((uintptr_t)src % 2) {
        size_t nb = m2_dtype_bytes(dt, n);
        if (!(tmp = malloc(nb ? nb : 1))) return m2_errorf(err, M2_ENOMEM, "out of memory");
        memcpy(tmp, src, nb);
        src = tmp;
    }
    m2_dequantize(dt, src, dst, n);
    free(tmp);
    return 0;
}

int m2_ggml_dequantize(uint32_t type, const void *src, float *dst, uint64_t n, m2_err *err) {
    const uint8_t *s = src;
    switch (type) {
    case M2_GGML_F32: memcpy(dst, s, n * 4); return 0;
    case M2_GGML_F16: for (uint64_t i = 0; i < n; i++) dst[i] = m2_ggml_f16_to_f32(rd16(s + 2 * i)); return 0;
    case M2_GGML_BF16: for (uint64_t i = 0; i < n; i++) dst[i] = m2_ggml_bf16_to_f32(rd16(s + 2 * i)); return 0;
    default: return block_convert(type, src, dst, NULL, n, err);
    }
}

int m2_ggml_quantize(uint32_t type, const float *src, void *dst, uint64_t n, m2_err *err) {
    uint8_t *d8 = dst;
    switch (type) {
    case M2_GGML_F32: memcpy(d8, src, n * 4); return 0;
    case M2_GGML_F16: for (uint64_t i = 0; i < n; i++) wr16(d8 + 2 * i, m2_ggml_f32_to_f16(src[i])); return 0;
    case M2_GGML_BF16: for (uint64_t i = 0; i < n; i++) wr16(d8 + 2 * i, m2_ggml_f32_to_bf16(src[i])); return 0;
    default: return block_convert(type, src, NULL, dst, n, err);   /* an error for the types without an encoder */
    }
}
