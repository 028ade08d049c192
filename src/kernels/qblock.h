/* Reading the 32-value block types' quants (layouts in quant.c), shared by the row products
 * (qdot.c) and the prompt-sized products (qgemm.c): portable C, and AVX2 forms that give the
 * same integers. Private to kernels/. */
#ifndef M2_QBLOCK_H
#define M2_QBLOCK_H
#include <stdint.h>
#include <string.h>
#include "kernels/quant.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define M2_QDOT_X86 1
#endif

/* Activation blocks (m2_qdot_quantize_act). For the 32-value types: scale, sum of the quants (for
 * the types with a min), 32 quants. For the K-quants: scale, sums of each 16 quants, 256 quants. */
typedef struct { float d; int32_t sum; int8_t qs[M2_QK]; } q8a_block;
typedef struct { float d; int16_t bsums[M2_QK_K / 16]; int8_t qs[M2_QK_K]; } q8k_block;

/* The types whose values carry a min besides the scale (x = d q + m, or d sc q - dmin mn). */
static inline int qb_has_min(m2_dtype t) {
    return t == M2_DT_Q4_1 || t == M2_DT_Q5_1 || t == M2_DT_Q2_K || t == M2_DT_Q4_K || t == M2_DT_Q5_K;
}

static inline float h2f(const uint8_t *p) { return m2_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* The 32 quants of a 32-value block as integers (Q4_0/Q5_0 centred, Q4_1/Q5_1 not, IQ4_NL
 * through its table); *dw, *mw its scale and min (0 when it has none). */
static inline void unpack32(m2_dtype t, const uint8_t *b, int q[M2_QK], float *dw, float *mw) {
    *mw = 0;
    *dw = h2f(b);
    switch (t) {
    case M2_DT_Q8_0: for (int j = 0; j < 32; j++) q[j] = (int8_t)b[2 + j]; break;
    case M2_DT_Q4_0: for (int j = 0; j < 16; j++) { q[j] = (b[2 + j] & 15) - 8; q[j + 16] = (b[2 + j] >> 4) - 8; } break;
    case M2_DT_Q4_1:
        *mw = h2f(b + 2);
        for (int j = 0; j < 16; j++) { q[j] = b[4 + j] & 15; q[j + 16] = b[4 + j] >> 4; }
        break;
    case M2_DT_IQ4_NL:
        for (int j = 0; j < 16; j++) { q[j] = m2_iq4nl_values[b[2 + j] & 15]; q[j + 16] = m2_iq4nl_values[b[2 + j] >> 4]; }
        break;
    case M2_DT_Q5_0: case M2_DT_Q5_1: {
        int off = t == M2_DT_Q5_1 ? 2 : 0, centre = t == M2_DT_Q5_1 ? 0 : 16;
        if (off) *mw = h2f(b + 2);
        const uint8_t *h = b + 2 + off, *qs = h + 4;
        uint32_t qh = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
        for (int j = 0; j < 16; j++) {
            q[j] = ((qs[j] & 15) | (int)((qh >> j) & 1) << 4) - centre;
            q[j + 16] = ((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - centre;
        }
        break;
    }
    default: break;
    }
}

/* Value i (< 256) of a K-quant block as an integer, the layouts of quant.c: Q2_K 0..3, Q3_K
 * -4..3, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 (its centre 32 not taken off). */
static inline int kq_value(m2_dtype t, const uint8_t *b, int i) {
    int r = i % 128;
    switch (t) {
    case M2_DT_Q2_K: return (b[16 + 32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3;
    case M2_DT_Q3_K: return ((b[32 + 32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3) - ((b[i % 32] >> (i / 32)) & 1 ? 0 : 4);
    case M2_DT_Q4_K: return (b[16 + 32 * (i / 64) + i % 32] >> (4 * ((i / 32) % 2))) & 15;
    case M2_DT_Q5_K:
        return ((b[48 + 32 * (i / 64) + i % 32] >> (4 * ((i / 32) % 2))) & 15) | ((b[16 + i % 32] >> (i / 32)) & 1) << 4;
    case M2_DT_Q6_K: {
        int h = i / 128, k = r / 32, j = r % 32;
        return ((b[64 * h + j + 32 * (k % 2)] >> (4 * (k / 2))) & 15) | ((b[128 + 32 * h + j] >> (2 * k)) & 3) << 4;
    }
    default: return 0;
    }
}

/* Values per scale group of a K-quant: 32 for Q4_K / Q5_K, 16 for the others. */
static inline int kq_group(m2_dtype t) { return t == M2_DT_Q4_K || t == M2_DT_Q5_K ? 32 : 16; }

/* Group g's integer scale and min (0 for the types without mins). */
static inline void kq_scale(m2_dtype t, const uint8_t *b, int g, int *sc, int *mn) {
    *mn = 0;
    switch (t) {
    case M2_DT_Q2_K: *sc = b[g] & 15; *mn = b[g] >> 4; break;
    case M2_DT_Q3_K: *sc = m2_q3k_scale(b + 96, g); break;
    case M2_DT_Q4_K: case M2_DT_Q5_K: m2_k4_scale_min(b + 4, g, sc, mn); break;
    case M2_DT_Q6_K: *sc = (int8_t)b[192 + g]; break;
    default: *sc = 0; break;
    }
}

/* All 8 scales (out[0..7]) and mins (out[8..15]) of a Q4_K / Q5_K block from its 12 scale bytes
 * s: m2_k4_scale_min's rule on three little-endian words at once. */
static inline void k4_scales_mins(const uint8_t *s, uint8_t out[16]) {
    uint32_t u[3], o[4];
    memcpy(u, s, 12);
    o[0] = u[0] & 0x3f3f3f3fu;
    o[1] = (u[2] & 0x0f0f0f0fu) | ((u[0] >> 6) & 0x03030303u) << 4;
    o[2] = u[1] & 0x3f3f3f3fu;
    o[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 6) & 0x03030303u) << 4;
    memcpy(out, o, 16);
}

/* All 16 scales of a Q3_K block (signed) from its 12 scale bytes s: m2_q3k_scale's rule on three
 * little-endian words at once (word j of the result holds groups 4j..4j+3: low nibbles from
 * bytes 0-7, the two high bits from bits 2j, 2j+1 of bytes 8-11). */
static inline void q3k_scales(const uint8_t *s, int8_t out[16]) {
    uint32_t u[3], o[4];
    memcpy(u, s, 12);
    uint32_t lo[4] = {u[0] & 0x0f0f0f0fu, u[1] & 0x0f0f0f0fu, (u[0] >> 4) & 0x0f0f0f0fu, (u[1] >> 4) & 0x0f0f0f0fu};
    for (int j = 0; j < 4; j++) o[j] = lo[j] | ((u[2] >> (2 * j)) & 0x03030303u) << 4;
    uint8_t b[16];
    memcpy(b, o, 16);
    for (int g = 0; g < 16; g++) out[g] = (int8_t)(b[g] - 32);
}

/* Byte offset of a K-quant block's f16 scale d (its dmin, where it has one, follows it). */
static inline int kq_d_offset(m2_dtype t) {
    switch (t) {
    case M2_DT_Q2_K: return 80;
    case M2_DT_Q3_K: return 108;
    case M2_DT_Q6_K: return 208;
    default: return 0;   /* Q4_K, Q5_K */
    }
}

#ifdef M2_QDOT_X86
#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define VNNI_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

AVX2_TARGET static inline float f16_x86(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }

/* The 32 nibbles of 16 bytes, low nibbles first (values 0-15 then 16-31 of a 32-value block). */
AVX2_TARGET static inline __m256i nibbles32(const uint8_t *p) {
    __m128i q = _mm_loadu_si128((const __m128i *)p);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* 0x10 in byte j where bit j of the little-endian u32 at p is set (the fifth bits of Q5_0/Q5_1):
 * byte j takes source byte j / 8 and tests its bit j % 8. */
AVX2_TARGET static inline __m256i fifth_bits(const uint8_t *p) {
    uint32_t u;
    memcpy(&u, p, 4);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u),
                                    _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
    __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

/* Each 32-value type's quants as 32 bytes (signed where centred, as unpack32). */
AVX2_TARGET static inline __m256i w_q8_0(const uint8_t *b) { return _mm256_loadu_si256((const __m256i *)(b + 2)); }
AVX2_TARGET static inline __m256i w_q4_0(const uint8_t *b) { return _mm256_sub_epi8(nibbles32(b + 2), _mm256_set1_epi8(8)); }
AVX2_TARGET static inline __m256i w_q4_1(const uint8_t *b) { return nibbles32(b + 4); }
AVX2_TARGET static inline __m256i w_q5_0(const uint8_t *b) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(b + 6), fifth_bits(b + 2)), _mm256_set1_epi8(16));
}
AVX2_TARGET static inline __m256i w_q5_1(const uint8_t *b) { return _mm256_or_si256(nibbles32(b + 8), fifth_bits(b + 4)); }
AVX2_TARGET static inline __m256i w_iq4_nl(const uint8_t *b) {
    __m128i t = _mm_loadu_si128((const __m128i *)m2_iq4nl_values);
    return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nibbles32(b + 2));
}

/* Values 32 c .. 32 c + 31 of a K-quant block as 32 bytes, kq_value's integers (c < 8). */
AVX2_TARGET static inline __m256i kq_chunk(m2_dtype t, const uint8_t *b, int c) {
    __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
#define KQ_LOAD(off) _mm256_loadu_si256((const __m256i *)(b + (off)))
    switch (t) {
    case M2_DT_Q2_K: return _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(16 + 32 * (c / 4)), 2 * (c % 4)), m2);
    case M2_DT_Q3_K: {
        __m256i lo = _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(32 + 32 * (c / 4)), 2 * (c % 4)), m2);
        __m256i hb = _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(0), c), one);
        return _mm256_sub_epi8(lo, _mm256_slli_epi16(_mm256_xor_si256(hb, one), 2));
    }
    case M2_DT_Q4_K: return _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(16 + 32 * (c / 2)), 4 * (c % 2)), m4);
    case M2_DT_Q5_K:
        return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(48 + 32 * (c / 2)), 4 * (c % 2)), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(16), c), one), 4));
    case M2_DT_Q6_K: {
        int h = c / 4, k = c % 4;
        __m256i l = _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(64 * h + 32 * (k % 2)), 4 * (k / 2)), m4);
        __m256i hb = _mm256_and_si256(_mm256_srli_epi16(KQ_LOAD(128 + 32 * h), 2 * k), m2);
        return _mm256_or_si256(l, _mm256_slli_epi16(hb, 4));
    }
    default: return _mm256_setzero_si256();
    }
#undef KQ_LOAD
}
#endif

#endif
