/* Quantised dot products over stored blocks: see qdot.h. The block layouts are those of quant.c
 * (each described there once); this file only reads them. Compiled with -ffp-contract=off
 * (CMakeLists.txt): every float step is written out (fmaf where the SIMD paths fuse), so every
 * path performs the same float operations in the same order. */
#include "kernels/qdot.h"
#include "kernels/qblock.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static int is_k(m2_dtype t) { return m2_dtype_info_of(t)->block == M2_QK_K; }

size_t m2_qdot_act_bytes(m2_dtype t, int n) {
    return is_k(t) ? (size_t)(n / M2_QK_K) * sizeof(q8k_block) : (size_t)(n / M2_QK) * sizeof(q8a_block);
}

/* ---- the order of the float steps, the same in every path ------------------------------------
 * Lanes: value j of a 32-value block, and value i of a super-block with (i % 32) / 4 = k, belong to
 * integer lane k of 8 (the i32 lanes of a 256-bit register once bytes 4k..4k+3 are summed). Per
 * block, each lane's exact integer sum s_k (weight scales of the groups applied in integers) goes
 * into its own float accumulator, acc_k = fma(dw da, s_k, acc_k); the row's value is hsum8(acc).
 * Types with mins add their min terms separately: the 32-value ones one float per block
 * (mw (da sum)), the K-quants a second set of 8 accumulators over their min lanes (defined per
 * type below), subtracted at the end. */
#define LANES 8

/* ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)): the order of the SIMD reduction below. */
static inline float hsum8(const float v[LANES]) {
    float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
    return (t0 + t2) + (t1 + t3);
}



/* ---- activation rounding ---------------------------------------------------------------------
 * d = max|x| / 127 (NaN ignored), q = rint(x / d) (to nearest, ties to even) after clamping x / d
 * to +-127; NaN -> 0. Returns the quants' sum. */
static int quant_block(const float *x, int n, int8_t *q, float *d_out) {
    float amax = 0;
    for (int j = 0; j < n; j++) {
        float v = fabsf(x[j]);
        amax = v > amax ? v : amax;
    }
    float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < n; j++) {
        float v = x[j] * id;
        v = v == v ? v : 0.0f;
        v = v > -127.0f ? v : -127.0f;
        v = v < 127.0f ? v : 127.0f;
        int qi = (int)rintf(v);
        q[j] = (int8_t)qi;
        sum += qi;
    }
    *d_out = d;
    return sum;
}

static void quantize_act_portable(m2_dtype t, const float *x, void *qa, int n) {
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

/* ---- portable: the block formulas of quant.c in integers ------------------------------------ */


static inline float dot32_portable(m2_dtype t, const uint8_t *w, const q8a_block *a, int nb) {
    int bytes = m2_dtype_info_of(t)->bytes, q[M2_QK], min = qb_has_min(t);
    float acc[LANES] = {0}, accm = 0, dw, mw;
    for (int b = 0; b < nb; b++, w += bytes) {
        unpack32(t, w, q, &dw, &mw);
        float d = dw * a[b].d;
        for (int k = 0; k < LANES; k++) {
            int s = 0;
            for (int j = 4 * k; j < 4 * k + 4; j++) s += q[j] * a[b].qs[j];
            acc[k] = fmaf(d, (float)s, acc[k]);
        }
        if (min) accm += mw * (a[b].d * (float)a[b].sum);
    }
    return min ? hsum8(acc) + accm : hsum8(acc);
}

/* One K-quant super-block against its activation block: lane[k] = the integer lane sums (weight
 * scales applied), ml[k] = the min lanes: Q4_K/Q5_K min of group k (of 8) x its activation sum;
 * Q2_K min_2k bsum_2k + min_2k+1 bsum_2k+1 (groups of 16). Q6_K's centre 32 is taken out of its
 * lanes the same way: lane[k] -= 32 (sc_2k bsum_2k + sc_2k+1 bsum_2k+1). */
static void kblock_lanes(m2_dtype t, const uint8_t *b, const q8k_block *a, int lane[LANES], int ml[LANES]) {
    int gl = kq_group(t), sc, mn;
    for (int k = 0; k < LANES; k++) lane[k] = ml[k] = 0;
    for (int g = 0; g < M2_QK_K / gl; g++) {
        kq_scale(t, b, g, &sc, &mn);
        for (int i = g * gl; i < (g + 1) * gl; i++) lane[(i % 32) / 4] += sc * kq_value(t, b, i) * a->qs[i];
        if (gl == 32) ml[g] = mn * (a->bsums[2 * g] + a->bsums[2 * g + 1]);   /* Q4_K, Q5_K */
        else ml[g / 2] += mn * a->bsums[g];                                    /* Q2_K (0 for Q3_K, Q6_K) */
    }
    if (t == M2_DT_Q6_K)
        for (int k = 0; k < LANES; k++) {
            int s2 = 0;
            for (int g = 2 * k; g < 2 * k + 2; g++) { kq_scale(t, b, g, &sc, &mn); s2 += sc * a->bsums[g]; }
            lane[k] -= 32 * s2;
        }
}

static inline float dotk_portable(m2_dtype t, const uint8_t *w, const q8k_block *a, int nb) {
    int bytes = m2_dtype_info_of(t)->bytes, min = qb_has_min(t), doff = kq_d_offset(t);
    float acc[LANES] = {0}, accm[LANES] = {0};
    for (int b = 0; b < nb; b++, w += bytes) {
        int lane[LANES], ml[LANES];
        kblock_lanes(t, w, &a[b], lane, ml);
        float d = h2f(w + doff) * a[b].d;
        for (int k = 0; k < LANES; k++) acc[k] = fmaf(d, (float)lane[k], acc[k]);
        if (min) {
            float dm = h2f(w + doff + 2) * a[b].d;
            for (int k = 0; k < LANES; k++) accm[k] = fmaf(dm, (float)ml[k], accm[k]);
        }
    }
    return min ? hsum8(acc) - hsum8(accm) : hsum8(acc);
}

/* Row products: out[r] = weight row r (nb blocks, rows w_row bytes apart) . the activation row
 * (nb blocks), for r < nrows. Several rows per call keep the call and set-up out of the row loop
 * (the rows of a 512-wide matrix are two K-quant super-blocks each). */
typedef void (*rowdot_fn)(const uint8_t *w, size_t w_row, const void *qa, int nb, int nrows, float *out);

#define DEF_PORTABLE(name, t, fn)                                                                   \
    static void name(const uint8_t *w, size_t w_row, const void *qa, int nb, int nrows, float *out) { \
        for (int r = 0; r < nrows; r++) out[r] = fn(t, w + r * w_row, qa, nb);                      \
    }
DEF_PORTABLE(p_q8_0, M2_DT_Q8_0, dot32_portable)
DEF_PORTABLE(p_q4_0, M2_DT_Q4_0, dot32_portable)
DEF_PORTABLE(p_q4_1, M2_DT_Q4_1, dot32_portable)
DEF_PORTABLE(p_q5_0, M2_DT_Q5_0, dot32_portable)
DEF_PORTABLE(p_q5_1, M2_DT_Q5_1, dot32_portable)
DEF_PORTABLE(p_iq4_nl, M2_DT_IQ4_NL, dot32_portable)
DEF_PORTABLE(p_q2_k, M2_DT_Q2_K, dotk_portable)
DEF_PORTABLE(p_q3_k, M2_DT_Q3_K, dotk_portable)
DEF_PORTABLE(p_q4_k, M2_DT_Q4_K, dotk_portable)
DEF_PORTABLE(p_q5_k, M2_DT_Q5_K, dotk_portable)
DEF_PORTABLE(p_q6_k, M2_DT_Q6_K, dotk_portable)

static const rowdot_fn portable_fns[M2_DT_COUNT] = {
    [M2_DT_Q8_0] = p_q8_0, [M2_DT_Q4_0] = p_q4_0, [M2_DT_Q4_1] = p_q4_1, [M2_DT_Q5_0] = p_q5_0,
    [M2_DT_Q5_1] = p_q5_1, [M2_DT_IQ4_NL] = p_iq4_nl, [M2_DT_Q2_K] = p_q2_k, [M2_DT_Q3_K] = p_q3_k,
    [M2_DT_Q4_K] = p_q4_k, [M2_DT_Q5_K] = p_q5_k, [M2_DT_Q6_K] = p_q6_k,
};

/* ---- AVX2 (and AVX-512 VNNI for the byte products) ------------------------------------------ */
#ifdef M2_QDOT_X86


AVX2_TARGET static inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* hsum8's order: lanes i + i+4, then (0 + 2) and (1 + 3), then their sum. */
AVX2_TARGET static inline float hsum8_x86(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane sums of 32 byte products as 8 i32 (bytes 4k..4k+3 in lane k): signed weights through
 * their absolute value and the activation's sign flipped with them (maddubs pairs stay below
 * 2^15: |w| <= 128 with |a| <= 127), unsigned weights (< 64) directly. */
AVX2_TARGET static inline __m256i sums_s8_avx2(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)), _mm256_set1_epi16(1));
}
AVX2_TARGET static inline __m256i sums_u8_avx2(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
}
VNNI_TARGET static inline __m256i sums_s8_vnni(__m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}
VNNI_TARGET static inline __m256i sums_u8_vnni(__m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, a);
}


/* dot32_portable's steps, one block per iteration: the 8 lane sums, one fma into 8 float lanes
 * (and the min term of Q4_1 / Q5_1 in scalar code, as there). */
#define DEF_DOT32(name, target, unpack, sums, bytes, min)                                           \
    target static void name(const uint8_t *w0, size_t w_row, const void *qa, int nb, int nrows, float *out) { \
        const q8a_block *a = qa;                                                                    \
        for (int r = 0; r < nrows; r++) {                                                           \
            const uint8_t *w = w0 + r * w_row;                                                      \
            __m256 acc = _mm256_setzero_ps();                                                       \
            float accm = 0;                                                                         \
            for (int b = 0; b < nb; b++, w += (bytes)) {                                            \
                __m256i s = sums(unpack(w), _mm256_loadu_si256((const __m256i *)a[b].qs));           \
                acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_x86(w) * a[b].d), _mm256_cvtepi32_ps(s), acc); \
                if (min) accm += f16_x86(w + 2) * (a[b].d * (float)a[b].sum);                       \
            }                                                                                       \
            out[r] = (min) ? hsum8_x86(acc) + accm : hsum8_x86(acc);                                \
        }                                                                                           \
    }
DEF_DOT32(a_q8_0, AVX2_TARGET, w_q8_0, sums_s8_avx2, 34, 0)
DEF_DOT32(a_q4_0, AVX2_TARGET, w_q4_0, sums_s8_avx2, 18, 0)
DEF_DOT32(a_q4_1, AVX2_TARGET, w_q4_1, sums_u8_avx2, 20, 1)
DEF_DOT32(a_q5_0, AVX2_TARGET, w_q5_0, sums_s8_avx2, 22, 0)
DEF_DOT32(a_q5_1, AVX2_TARGET, w_q5_1, sums_u8_avx2, 24, 1)
DEF_DOT32(a_iq4_nl, AVX2_TARGET, w_iq4_nl, sums_s8_avx2, 18, 0)
DEF_DOT32(v_q8_0, VNNI_TARGET, w_q8_0, sums_s8_vnni, 34, 0)
DEF_DOT32(v_q4_0, VNNI_TARGET, w_q4_0, sums_s8_vnni, 18, 0)
DEF_DOT32(v_q4_1, VNNI_TARGET, w_q4_1, sums_u8_vnni, 20, 1)
DEF_DOT32(v_q5_0, VNNI_TARGET, w_q5_0, sums_s8_vnni, 22, 0)
DEF_DOT32(v_q5_1, VNNI_TARGET, w_q5_1, sums_u8_vnni, 24, 1)
DEF_DOT32(v_iq4_nl, VNNI_TARGET, w_iq4_nl, sums_s8_vnni, 18, 0)

/* i16 lane pair (2s, 2s + 1) broadcast over a 128-bit lane: the shuffle that spreads i16 number s. */
#define BCAST16(s) _mm256_set1_epi16((short)((2 * (s)) | (2 * (s) + 1) << 8))
/* [x_g as 8 i16 | x_g+1 as 8 i16] from 16 i8 scales: the two groups of 16 a 32-value chunk spans */
AVX2_TARGET static inline __m256i pair_scales(__m128i sc8, int g) {
    __m128i idx = _mm_set_epi64x((long long)(0x0101010101010101ULL * (uint64_t)(g + 1)), (long long)(0x0101010101010101ULL * (uint64_t)g));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, idx));
}

/* Q4_K / Q5_K: group g is chunk g; the 8 scales and mins unpacked at once. */
AVX2_TARGET static inline __m256i k45_lanes(m2_dtype t, const uint8_t *b, const q8k_block *a, __m256i *ml) {
    uint8_t o[16];
    k4_scales_mins(b + 4, o);
    __m128i sm = _mm_loadu_si128((const __m128i *)o);   /* scales 0-7, mins 0-7 */
    __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    __m128i mn = _mm_unpackhi_epi8(sm, sm);              /* each min twice: one per bsum of its group */
    *ml = _mm256_madd_epi16(_mm256_cvtepu8_epi16(mn), _mm256_loadu_si256((const __m256i *)a->bsums));
    __m256i sum = _mm256_setzero_si256();
    for (int g = 0; g < 8; g++) {
        __m256i p = _mm256_maddubs_epi16(kq_chunk(t, b, g), _mm256_loadu_si256((const __m256i *)(a->qs + 32 * g)));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc16, BCAST16(g))));
    }
    return sum;
}
AVX2_TARGET static inline __m256i q4k_lanes(const uint8_t *b, const q8k_block *a, __m256i *ml) { return k45_lanes(M2_DT_Q4_K, b, a, ml); }
AVX2_TARGET static inline __m256i q5k_lanes(const uint8_t *b, const q8k_block *a, __m256i *ml) { return k45_lanes(M2_DT_Q5_K, b, a, ml); }

/* Q6_K: chunk c spans groups 2c and 2c + 1 (lower and upper 128-bit lanes); the centre 32 comes
 * off through the activation sums (kblock_lanes). */
AVX2_TARGET static inline __m256i q6k_lanes(const uint8_t *b, const q8k_block *a, __m256i *ml) {
    __m128i sc8 = _mm_loadu_si128((const __m128i *)(b + 192));
    __m256i corr = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), _mm256_cvtepi8_epi16(sc8));
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 8; c++) {
        __m256i p = _mm256_maddubs_epi16(kq_chunk(M2_DT_Q6_K, b, c), _mm256_loadu_si256((const __m256i *)(a->qs + 32 * c)));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, pair_scales(sc8, 2 * c)));
    }
    *ml = _mm256_setzero_si256();
    return _mm256_sub_epi32(sum, _mm256_slli_epi32(corr, 5));
}

/* Q2_K: scales are the low nibbles of the 16 scale bytes, mins the high ones. */
AVX2_TARGET static inline __m256i q2k_lanes(const uint8_t *b, const q8k_block *a, __m256i *ml) {
    __m128i raw = _mm_loadu_si128((const __m128i *)b);
    __m128i sc8 = _mm_and_si128(raw, _mm_set1_epi8(15));
    __m128i mn8 = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15));
    *ml = _mm256_madd_epi16(_mm256_cvtepu8_epi16(mn8), _mm256_loadu_si256((const __m256i *)a->bsums));
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 8; c++) {
        __m256i p = _mm256_maddubs_epi16(kq_chunk(M2_DT_Q2_K, b, c), _mm256_loadu_si256((const __m256i *)(a->qs + 32 * c)));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, pair_scales(sc8, 2 * c)));
    }
    return sum;
}

/* Q3_K: the signed quants (-4..3) through the sign trick. */
AVX2_TARGET static inline __m256i q3k_lanes(const uint8_t *b, const q8k_block *a, __m256i *ml) {
    int8_t sc[16];
    q3k_scales(b + 96, sc);
    __m128i sc8 = _mm_loadu_si128((const __m128i *)sc);
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 8; c++) {
        __m256i q = kq_chunk(M2_DT_Q3_K, b, c), x = _mm256_loadu_si256((const __m256i *)(a->qs + 32 * c));
        __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, pair_scales(sc8, 2 * c)));
    }
    *ml = _mm256_setzero_si256();
    return sum;
}

/* dotk_portable's steps, one super-block per iteration. */
#define DEF_DOTK(name, lanes, bytes, doff, min)                                                     \
    AVX2_TARGET static void name(const uint8_t *w0, size_t w_row, const void *qa, int nb, int nrows, float *out) { \
        const q8k_block *a = qa;                                                                    \
        for (int r = 0; r < nrows; r++) {                                                           \
            const uint8_t *w = w0 + r * w_row;                                                      \
            __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();                           \
            for (int b = 0; b < nb; b++, w += (bytes)) {                                            \
                __m256i ml, s = lanes(w, &a[b], &ml);                                               \
                acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_x86(w + (doff)) * a[b].d), _mm256_cvtepi32_ps(s), acc); \
                if (min) accm = _mm256_fmadd_ps(_mm256_set1_ps(f16_x86(w + (doff) + 2) * a[b].d), _mm256_cvtepi32_ps(ml), accm); \
            }                                                                                       \
            out[r] = (min) ? hsum8_x86(acc) - hsum8_x86(accm) : hsum8_x86(acc);                     \
        }                                                                                           \
    }
DEF_DOTK(a_q2_k, q2k_lanes, 84, 80, 1)
DEF_DOTK(a_q3_k, q3k_lanes, 110, 108, 0)
DEF_DOTK(a_q4_k, q4k_lanes, 144, 0, 1)
DEF_DOTK(a_q5_k, q5k_lanes, 176, 0, 1)
DEF_DOTK(a_q6_k, q6k_lanes, 210, 208, 0)

/* The K-quants' scale products need i16 steps either way, so the VNNI path takes the AVX2 code. */
static const rowdot_fn avx2_fns[M2_DT_COUNT] = {
    [M2_DT_Q8_0] = a_q8_0, [M2_DT_Q4_0] = a_q4_0, [M2_DT_Q4_1] = a_q4_1, [M2_DT_Q5_0] = a_q5_0,
    [M2_DT_Q5_1] = a_q5_1, [M2_DT_IQ4_NL] = a_iq4_nl, [M2_DT_Q2_K] = a_q2_k, [M2_DT_Q3_K] = a_q3_k,
    [M2_DT_Q4_K] = a_q4_k, [M2_DT_Q5_K] = a_q5_k, [M2_DT_Q6_K] = a_q6_k,
};
static const rowdot_fn vnni_fns[M2_DT_COUNT] = {
    [M2_DT_Q8_0] = v_q8_0, [M2_DT_Q4_0] = v_q4_0, [M2_DT_Q4_1] = v_q4_1, [M2_DT_Q5_0] = v_q5_0,
    [M2_DT_Q5_1] = v_q5_1, [M2_DT_IQ4_NL] = v_iq4_nl, [M2_DT_Q2_K] = a_q2_k, [M2_DT_Q3_K] = a_q3_k,
    [M2_DT_Q4_K] = a_q4_k, [M2_DT_Q5_K] = a_q5_k, [M2_DT_Q6_K] = a_q6_k,
};

/* quant_block's steps on 8 floats at a time: the same max (a NaN never wins: max_ps returns its
 * second operand then), the same multiply, NaN -> 0, clamp, and rint (cvtps rounds to nearest
 * even). Writes 32 quants per call of quant32_x86 and returns their 8-lane i32 values' sums. */
AVX2_TARGET static inline float amax_x86(const float *x, int n) {
    __m256 m = _mm256_setzero_ps(), abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int j = 0; j < n; j += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs), m);
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
AVX2_TARGET static inline __m256i quant8_x86(const float *x, __m256 id) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(v);
}
/* Quantises 32 values into q; r[4] gets their i32 values (8 each). */
AVX2_TARGET static inline void quant32_x86(const float *x, __m256 id, int8_t *q, __m256i r[4]) {
    for (int i = 0; i < 4; i++) r[i] = quant8_x86(x + 8 * i, id);
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, p);
}
AVX2_TARGET static void quantize_act_x86(m2_dtype t, const float *x, void *qa, int n) {
    __m256i r[4];
    if (is_k(t)) {
        q8k_block *b = qa;
        for (int k = 0; k < n / M2_QK_K; k++, x += M2_QK_K) {
            float d = amax_x86(x, M2_QK_K) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
            b[k].d = d;
            for (int c = 0; c < M2_QK_K / 32; c++) {
                quant32_x86(x + 32 * c, _mm256_set1_ps(id), b[k].qs + 32 * c, r);
                b[k].bsums[2 * c] = (int16_t)hsum_i32(_mm256_add_epi32(r[0], r[1]));
                b[k].bsums[2 * c + 1] = (int16_t)hsum_i32(_mm256_add_epi32(r[2], r[3]));
            }
        }
    } else {
        q8a_block *b = qa;
        for (int k = 0; k < n / M2_QK; k++, x += M2_QK) {
            float d = amax_x86(x, M2_QK) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
            b[k].d = d;
            quant32_x86(x, _mm256_set1_ps(id), b[k].qs, r);
            b[k].sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(r[0], r[1]), _mm256_add_epi32(r[2], r[3])));
        }
    }
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

static m2_qdot_path resolve(m2_qdot_path p) {
    return p == M2_QDOT_AUTO || !m2_qdot_path_available(p) ? m2_qdot_best() : p;
}

/* The row product of block type t on path p (available on this CPU). */
static rowdot_fn row_fn(m2_dtype t, m2_qdot_path p) {
#ifdef M2_QDOT_X86
    if (p == M2_QDOT_AVX512) return vnni_fns[t];
    if (p == M2_QDOT_AVX2) return avx2_fns[t];
#endif
    (void)p;
    return portable_fns[t];
}

void m2_qdot_quantize_act(m2_dtype t, const float *x, void *qa, int n, m2_qdot_path path) {
#ifdef M2_QDOT_X86
    if (resolve(path) != M2_QDOT_PORTABLE) { quantize_act_x86(t, x, qa, n); return; }
#endif
    (void)path;
    quantize_act_portable(t, x, qa, n);
}

float m2_qdot_row(m2_dtype t, const void *wrow, const void *qa, int n, m2_qdot_path path) {
    float v;
    row_fn(t, resolve(path))(wrow, 0, qa, n / m2_dtype_info_of(t)->block, 1, &v);
    return v;
}

size_t m2_qmatmul_scratch_bytes(m2_wref w, int N) { return (size_t)N * m2_qdot_act_bytes(w.dtype, w.cols); }

/* Same activation rows for items a and b (the same block format and width). */
static int same_act(m2_wref a, m2_wref b) { return is_k(a.dtype) == is_k(b.dtype) && a.cols == b.cols; }

size_t m2_qmatmul_many_scratch_bytes(const m2_qmm_item *it, int n, int N) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < i && !same_act(it[k].w, it[i].w)) k++;
        if (k == i) total += m2_qmatmul_scratch_bytes(it[i].w, N);
    }
    return total;
}

/* One item's share: its rows start at `first` in the items' joint row numbering. */
typedef struct {
    float *out;
    int ldo, acc, nb;
    long first, rows;
    const unsigned char *w;
    const float *bias;
    const unsigned char *qa;
    size_t qa_row, w_row;
    rowdot_fn dot;
} qmm_part_item;

typedef struct { int n, N; qmm_part_item it[M2_QMM_MAX_ITEMS]; } qmm_job;

/* Output rows handled per kernel call: their weights (a few KiB) stay in cache while every
 * activation row of a small batch passes over them. */
#define QMM_ROWS 16

/* Rows [b, e) of the items' joint numbering. */
static void qmm_part(void *vp, long b, long e, int tid) {
    const qmm_job *jb = vp;
    (void)tid;
    float d[QMM_ROWS];
    for (int i = 0; i < jb->n; i++) {
        const qmm_part_item *j = &jb->it[i];
        long lo = b > j->first ? b - j->first : 0, hi = e < j->first + j->rows ? e - j->first : j->rows;
        for (long o0 = lo; o0 < hi; o0 += QMM_ROWS) {
            int nr = hi - o0 < QMM_ROWS ? (int)(hi - o0) : QMM_ROWS;
            for (int n = 0; n < jb->N; n++) {
                j->dot(j->w + (size_t)o0 * j->w_row, j->w_row, j->qa + (size_t)n * j->qa_row, j->nb, nr, d);
                float *c = j->out + (size_t)n * j->ldo + o0;
                for (int r = 0; r < nr; r++) c[r] = (j->acc ? c[r] : 0.0f) + ((j->bias ? j->bias[o0 + r] : 0.0f) + d[r]);
            }
        }
    }
}

void m2_qmatmul_many(const m2_qmm_item *it, int n, const float *x, int N, void *scratch, m2_qdot_path path,
                     m2_pool *pool) {
    if (N <= 0 || n <= 0) return;
    path = resolve(path);
    qmm_job j = {.n = n, .N = N};
    unsigned char *next = scratch;
    long rows = 0;
    double work = 0;
    for (int i = 0; i < n && i < M2_QMM_MAX_ITEMS; i++) {
        m2_wref w = it[i].w;
        size_t qa_row = m2_qdot_act_bytes(w.dtype, w.cols);
        int k = 0;
        while (k < i && !same_act(it[k].w, w)) k++;
        const unsigned char *qa = k < i ? j.it[k].qa : next;
        if (k == i) {   /* the first item of its activation format: quantise x for it */
            for (int r = 0; r < N; r++) m2_qdot_quantize_act(w.dtype, x + (size_t)r * w.cols, next + (size_t)r * qa_row, w.cols, path);
            next += (size_t)N * qa_row;
        }
        j.it[i] = (qmm_part_item){.out = it[i].out, .ldo = it[i].ldo, .acc = it[i].acc,
                                  .nb = w.cols / m2_dtype_info_of(w.dtype)->block, .first = rows, .rows = w.rows,
                                  .w = w.data, .bias = it[i].bias, .qa = qa, .qa_row = qa_row,
                                  .w_row = m2_dtype_bytes(w.dtype, (size_t)w.cols), .dot = row_fn(w.dtype, path)};
        rows += w.rows;
        work += (double)w.rows * w.cols * N;
    }
    if (rows <= 0) return;
    if (pool && work >= 65536.0) m2_pool_for(pool, rows, qmm_part, &j);
    else qmm_part(&j, 0, rows, 0);
}

void m2_qmatmul(float *out, int ldo, const float *x, m2_wref w, const float *bias, int N, int acc,
                void *scratch, m2_qdot_path path, m2_pool *pool) {
    m2_qmm_item one = {.out = out, .ldo = ldo, .w = w, .bias = bias, .acc = acc};
    m2_qmatmul_many(&one, 1, x, N, scratch, path, pool);
}
