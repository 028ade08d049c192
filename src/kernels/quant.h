/* Storage types for frozen weights and their conversion to/from f32. Compute is always f32. */
#ifndef M2_QUANT_H
#define M2_QUANT_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The block types are ggml's, byte for byte (ggml-common.h); the layouts, each with its
 * dequantisation formula, are described in quant.c beside the code. Only F32/F16/BF16/Q8_0/Q4_0,
 * Q4_K and Q6_K can be produced from f32 here (m2_dtype_info.quantize); the others come from
 * files as stored. */
typedef enum m2_dtype {
    M2_DT_F32 = 0,
    M2_DT_F16 = 1,    /* IEEE half */
    M2_DT_BF16 = 2,   /* top 16 bits of an f32 (round-to-nearest-even when converting) */
    M2_DT_Q8_0 = 3,   /* GGUF Q8_0: blocks of 32 values, x = qs[j] * d */
    M2_DT_Q4_0 = 4,
    M2_DT_Q4_1 = 5,
    M2_DT_Q5_0 = 6,
    M2_DT_Q5_1 = 7,
    M2_DT_Q2_K = 8,
    M2_DT_Q3_K = 9,
    M2_DT_Q4_K = 10,
    M2_DT_Q5_K = 11,
    M2_DT_Q6_K = 12,
    M2_DT_IQ4_NL = 13,
    M2_DT_COUNT
} m2_dtype;

/* Per dtype: its name, ggml's type id, values and bytes per block, whether m2_quantize can
 * encode it. */
typedef struct m2_dtype_info {
    const char *name;
    uint32_t ggml_id;
    int block, bytes;
    int quantize;
} m2_dtype_info;
/* NULL for an out-of-range t. */
const m2_dtype_info *m2_dtype_info_of(m2_dtype t);
/* The dtype of a ggml type id; -1 when the engine has none for it. */
int m2_dtype_from_ggml_id(uint32_t ggml_id, m2_dtype *out);
/* True for the block types whose rows the quantised products (qdot.h) read directly. */
int m2_dtype_is_block(m2_dtype t);

#define M2_QK 32          /* values per block of the 32-value types */
#define M2_QK_K 256       /* values per K-quant super-block */
#define M2_Q8_0_BLOCK 32
/* IQ4_NL's 16 levels (ggml's kvalues_iq4nl). */
extern const int8_t m2_iq4nl_values[16];

/* The 6-bit scale of group g (of 16) packed in Q3_K's 12 scale bytes, minus 32: low 4 bits from
 * byte g (g < 8, low nibble) or byte g - 8 (high nibble), high 2 bits from byte 8 + g % 4 at bit
 * 2 (g / 4). */
static inline int m2_q3k_scale(const uint8_t *s, int g) {
    int lo = g < 8 ? s[g] & 15 : s[g - 8] >> 4, hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (lo | hi << 4) - 32;
}
/* Q4_K / Q5_K: 8 groups of 32 values, a 6-bit scale and min each, packed in 12 bytes: group
 * g < 4: scale = s[g] & 63, min = s[g + 4] & 63; g >= 4: the low 4 bits from s[g + 4] (scale: low
 * nibble, min: high nibble), the top 2 bits from the spare bits 6-7 of s[g - 4] (scale) and s[g]
 * (min). */
static inline void m2_k4_scale_min(const uint8_t *s, int g, int *sc, int *mn) {
    if (g < 4) { *sc = s[g] & 63; *mn = s[g + 4] & 63; }
    else { *sc = (s[g + 4] & 15) | (s[g - 4] >> 6) << 4; *mn = (s[g + 4] >> 4) | (s[g] >> 6) << 4; }
}
/* Exactly GGUF's block_q8_0 (34 bytes, 2-byte aligned): f16 scale then 32 int8. */
typedef struct m2_block_q8_0 {
    uint16_t d;
    int8_t qs[M2_Q8_0_BLOCK];
} m2_block_q8_0;

const char *m2_dtype_name(m2_dtype t);                 /* "f32", "f16", "bf16", "q8_0", "q4_k", ... */
int m2_dtype_parse(const char *s, m2_dtype *out);      /* 0 ok, -1 unknown name */
/* Bytes for n values of type t; 0 when n is not a multiple of the block size (32 or 256). */
size_t m2_dtype_bytes(m2_dtype t, size_t n);

/* Exact (every f16 is an f32); inline: the quantised products convert a scale per block. */
static inline float m2_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    u = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
uint16_t m2_f32_to_f16(float f);
float m2_bf16_to_f32(uint16_t h);
uint16_t m2_f32_to_bf16(float f);

/* dst[n] = dequantised src (n values of type t, a whole number of blocks; src 2-byte aligned). */
void m2_dequantize(m2_dtype t, const void *src, float *dst, size_t n);
/* dst = src converted to type t (Q8_0: d = amax/127, qs = round(x/d); Q4_0: d = max/-8, as
 * ggml's reference quantisers; Q4_K: a plain min/max fit; Q6_K: a plain symmetric fit; see quant.c). -1 (nothing written) for
 * a type without an encoder. */
int m2_quantize(m2_dtype t, const float *src, void *dst, size_t n);

#endif
