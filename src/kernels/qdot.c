/* Quantised dot products over stored blocks: see qdot.h. The block layouts are those of quant.c
 * (each described there once); this file only reads them. Compiled with -ffp-contract=off
 * (CMakeLists.txt) so the float steps are the same plain multiplies and adds in every path. */
#include "kernels/qdot.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define M2_QDOT_X86 1
#endif

/* Activation blocks. For the 32-value types: scale, sum of the quants (for the types with a
 * min), 32 quants. For the K-quants: scale, sums of each 16 quants, 256 quants. */
typedef struct { float d; int32_t sum; int8_t qs[M2_QK]; } q8a_block;
typedef struct { float d; int16_t bsums[M2_QK_K / 16]; int8_t qs[M2_QK_K]; } q8k_block;

static int is_k(m2_dtype t) { return m2_dtype_info_of(t)->block == M2_QK_K; }

size_t m2_qdot_act_bytes(m2_dtype t, int n) {
    return is_k(t) ? (size_t)(n / M2_QK_K) * sizeof(q8k_block) : (size_t)(n / M2_QK) * sizeof(q8a_block);
}

/* d = max|x| / 127, q = round(x / d) clamped to +-127 (NaN -> 0); returns the quants' sum. */
static int quant_block(const float *x, int n, int8_t *q, float *d_out) {
    float amax = 0;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < n; j++) {
        float v = roundf(x[j] * id);
        int qi = v == v ? (int)fminf(fmaxf(v, -127.f), 127.f) : 0;
        q[j] = (int8_t)qi;
        sum += qi;
    }
    *d_out = d;
    return sum;
}

void m2_qdot_quantize_act(m2_dtype t, const float *x, void *qa, int n) {
    if (is_k(t)) {
        q8k_block *b = qa;
        for (int k = 0; k < n / M2_QK_K; k++, x += M2_QK_K) {
            quant_block(x, M2_QK_K, b[k].qs, &b[k].d);
            for (int g = 0; g < M2_QK_K / 16; g++) {
                int s = 0;
                for (int j = 0; j < 16; j++) s += b[k].qs[16 * g + j];
                b[k].bsums[g] = (int16_t)s;
            }
        }
    } else {
        q8a_block *b = qa;
        for (int k = 0; k < n / M2_QK; k++, x += M2_QK) b[k].sum = quant_block(x, M2_QK, b[k].qs, &b[k].d);
    }
}

static inline float h2f(const uint8_t *p) { return m2_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* ---- portable: the block formulas of quant.c in integers ------------------------------------ */

/* The 32 quants of a 32-value block as integers (Q4_0/Q5_0 centred, Q4_1/Q5_1 not, IQ4_NL
 * through its table); *dw, *mw its scale and min (0 when it has none). */
static void unpack32(m2_dtype t, const uint8_t *b, int q[M2_QK], float *dw, float *mw) {
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

/* The float step of one 32-value block, shared by every path: (dw da) sumi (+ mw da sum). */
static inline float combine32(float dw, float mw, const q8a_block *a, int sumi) {
    float v = dw * a->d * (float)sumi;
    if (mw != 0.0f) v += mw * (a->d * (float)a->sum);
    return v;
}

/* The 32-value types' float order, the same in every path: block b's value goes to lane b % 4
 * (in block order), and the row's result is (lane 0 + lane 1) + (lane 2 + lane 3), so a SIMD path
 * can keep the four lanes in one vector. */
#define LANES 4
static inline float lanes_sum(const float l[LANES]) { return (l[0] + l[1]) + (l[2] + l[3]); }

static float dot32_portable(m2_dtype t, const uint8_t *w, const q8a_block *a, int nb) {
    int bytes = m2_dtype_info_of(t)->bytes, q[M2_QK];
    float acc[LANES] = {0, 0, 0, 0}, dw, mw;
    for (int b = 0; b < nb; b++, w += bytes) {
        unpack32(t, w, q, &dw, &mw);
        int s = 0;
        for (int j = 0; j < M2_QK; j++) s += q[j] * a[b].qs[j];
        acc[b % LANES] += combine32(dw, mw, &a[b], s);
    }
    return lanes_sum(acc);
}

/* One K-quant super-block against its activation block: the integer sum over groups of
 * scale x (quants . activations), and the min term sum over groups of min x (activation sum). */
static void kblock_portable(m2_dtype t, const uint8_t *b, const q8k_block *a, int *sumi, int *summ) {
    int s = 0, m = 0;
    const int8_t *x = a->qs;
    switch (t) {
    case M2_DT_Q2_K:
        for (int g = 0; g < 16; g++) {
            int p = 0;
            for (int l = 0; l < 16; l++) {
                int i = 16 * g + l, r = i % 128;
                p += ((b[16 + 32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3) * x[i];
            }
            s += (b[g] & 15) * p;
            m += (b[g] >> 4) * a->bsums[g];
        }
        break;
    case M2_DT_Q3_K:
        for (int g = 0; g < 16; g++) {
            int p = 0;
            for (int l = 0; l < 16; l++) {
                int i = 16 * g + l, r = i % 128;
                int q = ((b[32 + 32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3) - ((b[i % 32] >> (i / 32)) & 1 ? 0 : 4);
                p += q * x[i];
            }
            s += m2_q3k_scale(b + 96, g) * p;
        }
        break;
    case M2_DT_Q4_K: case M2_DT_Q5_K: {
        int five = t == M2_DT_Q5_K;
        const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
        for (int g = 0; g < 8; g++) {
            int sc, mn, p = 0;
            m2_k4_scale_min(b + 4, g, &sc, &mn);
            for (int l = 0; l < 32; l++) {
                int q = (qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 15;
                if (five) q |= ((qh[l] >> g) & 1) << 4;
                p += q * x[32 * g + l];
            }
            s += sc * p;
            m += mn * (a->bsums[2 * g] + a->bsums[2 * g + 1]);
        }
        break;
    }
    case M2_DT_Q6_K:
        for (int g = 0; g < 16; g++) {
            int p = 0;
            for (int l = 0; l < 16; l++) {
                int i = 16 * g + l, h = i / 128, r = i % 128, k = r / 32, j = r % 32;
                int q = ((b[64 * h + j + 32 * (k % 2)] >> (4 * (k / 2))) & 15) | ((b[128 + 32 * h + j] >> (2 * k)) & 3) << 4;
                p += (q - 32) * x[i];
            }
            s += (int8_t)b[192 + g] * p;
        }
        break;
    default: break;
    }
    *sumi = s;
    *summ = m;
}

/* The float step of one super-block, shared by every path. Types without mins have summ = 0 and
 * dmin = 0, which leaves d sumi unchanged. */
static inline float combinek(m2_dtype t, const uint8_t *b, const q8k_block *a, int sumi, int summ) {
    switch (t) {
    case M2_DT_Q2_K: return a->d * (h2f(b + 80) * (float)sumi - h2f(b + 82) * (float)summ);
    case M2_DT_Q3_K: return h2f(b + 108) * a->d * (float)sumi;
    case M2_DT_Q4_K: case M2_DT_Q5_K: return a->d * (h2f(b) * (float)sumi - h2f(b + 2) * (float)summ);
    case M2_DT_Q6_K: return h2f(b + 208) * a->d * (float)sumi;
    default: return 0;
    }
}

static float dotk_portable(m2_dtype t, const uint8_t *w, const q8k_block *a, int nb) {
    int bytes = m2_dtype_info_of(t)->bytes;
    float acc = 0;
    for (int b = 0; b < nb; b++, w += bytes) {
        int s, m;
        kblock_portable(t, w, &a[b], &s, &m);
        acc += combinek(t, w, &a[b], s, m);
    }
    return acc;
}

/* ---- AVX2 (and AVX-512 VNNI for the 8-bit products) ---------------------------------------- */
#ifdef M2_QDOT_X86
#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define VNNI_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

AVX2_TARGET static inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* sum of u8 x s8 products, 32 lanes, as 8 i32 (maddubs pairs stay below 2^15 for the inputs used:
 * |w| <= 128 with |a| <= 127, or 6-bit weights) */
AVX2_TARGET static inline __m256i dot_u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
VNNI_TARGET static inline __m256i dot_u8s8_vnni(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

/* The 32 nibbles of 16 bytes, low nibbles first (values 0-15 then 16-31 of a 32-value block). */
AVX2_TARGET static inline __m256i nibbles32(const uint8_t *p) {
    __m128i q = _mm_loadu_si128((const __m128i *)p);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* One Q8_0 / Q4_0 block's integer sum as 8 i32 lanes. */
#define BLOCK8(dotfn, w, x, t)                                                                       \
    ((t) == M2_DT_Q8_0 ? dotfn(_mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)((w) + 2)),      \
                                                _mm256_loadu_si256((const __m256i *)((w) + 2))),     \
                               _mm256_sign_epi8((x), _mm256_loadu_si256((const __m256i *)((w) + 2)))) \
                       : dotfn(nibbles32((w) + 2), (x)))

/* Four blocks at a time: their sums reduced together (three horizontal adds), the scales
 * converted together, and the four values added into the four lanes (combine32's operations:
 * (dw da) sumi, no min for these two types; Q4_0's centre 8 through the activation sums). */
#define DEF_DOT8(name, target, dotfn)                                                               \
    target static float name(const uint8_t *w, const q8a_block *a, int nb, m2_dtype t) {           \
        int bytes = m2_dtype_info_of(t)->bytes, b = 0;                                              \
        __m128 acc = _mm_setzero_ps();                                                              \
        for (; b + LANES <= nb; b += LANES) {                                                       \
            const uint8_t *w0 = w + (size_t)b * bytes, *w1 = w0 + bytes, *w2 = w1 + bytes, *w3 = w2 + bytes; \
            __m256i p0 = BLOCK8(dotfn, w0, _mm256_loadu_si256((const __m256i *)a[b].qs), t);        \
            __m256i p1 = BLOCK8(dotfn, w1, _mm256_loadu_si256((const __m256i *)a[b + 1].qs), t);    \
            __m256i p2 = BLOCK8(dotfn, w2, _mm256_loadu_si256((const __m256i *)a[b + 2].qs), t);    \
            __m256i p3 = BLOCK8(dotfn, w3, _mm256_loadu_si256((const __m256i *)a[b + 3].qs), t);    \
            __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));    \
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));   \
            if (t == M2_DT_Q4_0)                                                                    \
                s = _mm_sub_epi32(s, _mm_slli_epi32(_mm_setr_epi32(a[b].sum, a[b + 1].sum, a[b + 2].sum, a[b + 3].sum), 3)); \
            __m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short)(w0[0] | w0[1] << 8), (short)(w1[0] | w1[1] << 8), \
                                                    (short)(w2[0] | w2[1] << 8), (short)(w3[0] | w3[1] << 8), 0, 0, 0, 0)); \
            __m128 da = _mm_setr_ps(a[b].d, a[b + 1].d, a[b + 2].d, a[b + 3].d);                      \
            acc = _mm_add_ps(acc, _mm_mul_ps(_mm_mul_ps(dw, da), _mm_cvtepi32_ps(s)));               \
        }                                                                                           \
        float l[LANES];                                                                             \
        _mm_storeu_ps(l, acc);                                                                      \
        for (; b < nb; b++) {                                                                       \
            const uint8_t *wb = w + (size_t)b * bytes;                                              \
            int s = hsum_i32(BLOCK8(dotfn, wb, _mm256_loadu_si256((const __m256i *)a[b].qs), t));   \
            if (t == M2_DT_Q4_0) s -= 8 * a[b].sum;                                                 \
            l[b % LANES] += combine32(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(wb[0] | wb[1] << 8))), 0.0f, &a[b], s); \
        }                                                                                           \
        return lanes_sum(l);                                                                        \
    }
DEF_DOT8(dot8_avx2, AVX2_TARGET, dot_u8s8)
DEF_DOT8(dot8_vnni, VNNI_TARGET, dot_u8s8_vnni)

/* All 8 scales and mins of a Q4_K / Q5_K super-block at once: the bytes of m2_k4_scale_min's
 * rule read as three little-endian words. */
static inline void k4_unpack_all(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3], o[4];
    memcpy(u, s, 12);
    o[0] = u[0] & 0x3f3f3f3fu;
    o[1] = (u[2] & 0x0f0f0f0fu) | ((u[0] >> 6) & 0x03030303u) << 4;
    o[2] = u[1] & 0x3f3f3f3fu;
    o[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 6) & 0x03030303u) << 4;
    memcpy(sc, o, 8);
    memcpy(mn, o + 2, 8);
}

/* sum over groups g < 8 of mn[g] (bsums[2g] + bsums[2g + 1]) */
AVX2_TARGET static inline int k4_mins(const uint8_t mn[8], const q8k_block *a) {
    __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), _mm256_set1_epi16(1));
    __m256i m = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)mn));
    return hsum_i32(_mm256_mullo_epi32(pairs, m));
}

/* Q4_K: chunk c of 32 bytes holds groups 2c (low nibbles) and 2c + 1 (high nibbles). */
AVX2_TARGET static void q4k_avx2(const uint8_t *b, const q8k_block *a, int *sumi, int *summ) {
    __m256i acc = _mm256_setzero_si256();
    uint8_t sc[8], mn[8];
    k4_unpack_all(b + 4, sc, mn);
    for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * c));
        __m256i lo = _mm256_and_si256(q, _mm256_set1_epi8(15)), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15));
        __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c)));
        __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c + 32)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p0, _mm256_set1_epi16((short)sc[2 * c])));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p1, _mm256_set1_epi16((short)sc[2 * c + 1])));
    }
    *sumi = hsum_i32(acc);
    *summ = k4_mins(mn, a);
}

/* Q6_K: per half h and k < 4, the 32 values 32 k + l are (ql nibble | qh crumb << 4) - 32; the two
 * groups of 16 in them take scales g and g + 1 (lower and upper 128-bit lanes). The -32 is taken
 * out through the activation sums: sum sc (q - 32) x = sum sc q x - 32 sum sc bsum. */
AVX2_TARGET static void q6k_avx2(const uint8_t *b, const q8k_block *a, int *sumi, int *summ) {
    __m256i acc = _mm256_setzero_si256();
    const int8_t *sc = (const int8_t *)(b + 192);
    int corr = hsum_i32(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums),
                                          _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc))));
    for (int h = 0; h < 2; h++) {
        __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
        __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b + 64 * h)), ql1 = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32));
        for (int k = 0; k < 4; k++) {
            __m256i l = k % 2 ? ql1 : ql0;
            if (k / 2) l = _mm256_srli_epi16(l, 4);
            l = _mm256_and_si256(l, _mm256_set1_epi8(15));
            __m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), _mm256_set1_epi8(3));
            __m256i q = _mm256_or_si256(l, _mm256_slli_epi16(hb, 4));
            __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(a->qs + 128 * h + 32 * k)));
            int g = 8 * h + 2 * k;
            __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, s16));
        }
    }
    *sumi = hsum_i32(acc) - 32 * corr;
    *summ = 0;
}

/* Q5_K: Q4_K's nibbles plus bit g of qh[l] as bit 4 of value 32 g + l. */
AVX2_TARGET static void q5k_avx2(const uint8_t *b, const q8k_block *a, int *sumi, int *summ) {
    __m256i acc = _mm256_setzero_si256(), qh = _mm256_loadu_si256((const __m256i *)(b + 16));
    uint8_t sc[8], mn[8];
    k4_unpack_all(b + 4, sc, mn);
    for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(b + 48 + 32 * c));
        __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), _mm256_set1_epi8(1));
        __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), _mm256_set1_epi8(1));
        __m256i lo = _mm256_or_si256(_mm256_and_si256(q, _mm256_set1_epi8(15)), _mm256_slli_epi16(h0, 4));
        __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15)), _mm256_slli_epi16(h1, 4));
        __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c)));
        __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c + 32)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p0, _mm256_set1_epi16((short)sc[2 * c])));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p1, _mm256_set1_epi16((short)sc[2 * c + 1])));
    }
    *sumi = hsum_i32(acc);
    *summ = k4_mins(mn, a);
}

AVX2_TARGET static float dotk_avx2(m2_dtype t, const uint8_t *w, const q8k_block *a, int nb) {
    int bytes = m2_dtype_info_of(t)->bytes;
    float acc = 0;
    for (int b = 0; b < nb; b++, w += bytes) {
        int s, m;
        if (t == M2_DT_Q4_K) q4k_avx2(w, &a[b], &s, &m);
        else if (t == M2_DT_Q6_K) q6k_avx2(w, &a[b], &s, &m);
        else if (t == M2_DT_Q5_K) q5k_avx2(w, &a[b], &s, &m);
        else kblock_portable(t, w, &a[b], &s, &m);
        acc += combinek(t, w, &a[b], s, m);
    }
    return acc;
}
#endif

/* ---- dispatch ------------------------------------------------------------------------------- */

int m2_qdot_path_available(m2_qdot_path p) {
    if (p == M2_QDOT_PORTABLE) return 1;
#ifdef M2_QDOT_X86
    __builtin_cpu_init();
    /* F16C is not asked: every AVX2 CPU has it (it came a generation earlier), and clang 14's
     * __builtin_cpu_supports does not know the name */
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (p == M2_QDOT_AVX2) return avx2;
    if (p == M2_QDOT_AVX512)
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#endif
    return 0;
}

m2_qdot_path m2_qdot_best(void) {
    if (m2_qdot_path_available(M2_QDOT_AVX512)) return M2_QDOT_AVX512;
    if (m2_qdot_path_available(M2_QDOT_AVX2)) return M2_QDOT_AVX2;
    return M2_QDOT_PORTABLE;
}

const char *m2_qdot_path_name(m2_qdot_path p) {
    switch (p) {
    case M2_QDOT_PORTABLE: return "portable";
    case M2_QDOT_AVX2: return "avx2";
    case M2_QDOT_AVX512: return "avx512-vnni";
    default: return "auto";
    }
}

/* The row product of type t on path p (p available on this CPU). */
static float dot_row(m2_dtype t, const void *wrow, const void *qa, int n, m2_qdot_path path) {
    if (is_k(t)) {
#ifdef M2_QDOT_X86
        if (path != M2_QDOT_PORTABLE) return dotk_avx2(t, wrow, qa, n / M2_QK_K);
#endif
        return dotk_portable(t, wrow, qa, n / M2_QK_K);
    }
#ifdef M2_QDOT_X86
    if (t == M2_DT_Q8_0 || t == M2_DT_Q4_0) {
        if (path == M2_QDOT_AVX512) return dot8_vnni(wrow, qa, n / M2_QK, t);
        if (path == M2_QDOT_AVX2) return dot8_avx2(wrow, qa, n / M2_QK, t);
    }
#endif
    return dot32_portable(t, wrow, qa, n / M2_QK);
}

float m2_qdot_row(m2_dtype t, const void *wrow, const void *qa, int n, m2_qdot_path path) {
    if (path == M2_QDOT_AUTO || !m2_qdot_path_available(path)) path = m2_qdot_best();
    return dot_row(t, wrow, qa, n, path);
}

size_t m2_qmatmul_scratch_bytes(m2_wref w, int N) { return (size_t)N * m2_qdot_act_bytes(w.dtype, w.cols); }

typedef struct {
    float *out;
    int ldo, N, acc;
    m2_wref w;
    const float *bias;
    const unsigned char *qa;
    size_t qa_row, w_row;
    m2_qdot_path path;
} qmm_job;

static void qmm_part(void *vp, long b, long e, int tid) {
    const qmm_job *j = vp;
    (void)tid;
    for (long o = b; o < e; o++) {
        const unsigned char *wr = (const unsigned char *)j->w.data + (size_t)o * j->w_row;
        float bo = j->bias ? j->bias[o] : 0.0f;
        for (int n = 0; n < j->N; n++) {
            float d = dot_row(j->w.dtype, wr, j->qa + (size_t)n * j->qa_row, j->w.cols, j->path);
            float *c = j->out + (size_t)n * j->ldo + o;
            *c = (j->acc ? *c : 0.0f) + (bo + d);
        }
    }
}

void m2_qmatmul(float *out, int ldo, const float *x, m2_wref w, const float *bias, int N, int acc,
                void *scratch, m2_qdot_path path, m2_pool *pool) {
    if (N <= 0 || w.rows <= 0) return;
    if (path == M2_QDOT_AUTO || !m2_qdot_path_available(path)) path = m2_qdot_best();
    size_t qa_row = m2_qdot_act_bytes(w.dtype, w.cols);
    for (int n = 0; n < N; n++)
        m2_qdot_quantize_act(w.dtype, x + (size_t)n * w.cols, (unsigned char *)scratch + (size_t)n * qa_row, w.cols);
    qmm_job j = {out, ldo, N, acc, w, bias, scratch, qa_row, m2_dtype_bytes(w.dtype, (size_t)w.cols), path};
    if (pool && (double)w.rows * w.cols * N >= 65536.0) m2_pool_for(pool, w.rows, qmm_part, &j);
    else qmm_part(&j, 0, w.rows, 0);
}
