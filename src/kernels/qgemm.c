/* Prompt-sized quantised products: see qgemm.h. Compiled with -ffp-contract=off (CMakeLists.txt):
 * the float steps are written out (fmaf where the kernel fuses), the same in both paths. */
#include "kernels/qgemm.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/qblock.h"

#define TOK 16        /* activation rows per panel: the i32 lanes of a 512-bit register */
#define ROWS 8        /* weight rows per kernel call */
#define CHUNK 256     /* activation rows quantised per pass (bounds the scratch) */
#define ALIGN(n) (((n) + 63) & ~(size_t)63)

/* Values sharing one weight scale (and min). */
static int sub_len(m2_dtype t) { return t == M2_DT_Q2_K || t == M2_DT_Q3_K || t == M2_DT_Q6_K ? 16 : 32; }

/* The weights are read as unsigned bytes u (vpdpbusd's unsigned operand) with value u - centre:
 * the centre comes off through the activation sums, S = sum u a - centre sum a (exact). Types
 * with mins store their quants as they are (centre 0). */
static int centre_of(m2_dtype t) {
    switch (t) {
    case M2_DT_Q8_0: case M2_DT_IQ4_NL: return 128;
    case M2_DT_Q4_0: return 8;
    case M2_DT_Q5_0: return 16;
    case M2_DT_Q3_K: return 4;
    case M2_DT_Q6_K: return 32;
    default: return 0;
    }
}

/* A pass's activation rows, TOK per panel (rows past the last are zeros): qs[panel][K/4][TOK][4]
 * the quants, da[panel][K/32][TOK] the block scales, and per sub-block cs[panel][K/sub][TOK] =
 * centre x the sum of the quants, ds[panel][K/sub][TOK] = da x that sum (for the min terms). */
typedef struct { int K, sub, np, centre; int8_t *qs; float *da, *ds; int32_t *cs; } act_panels;

/* ROWS weight rows as unsigned bytes w[ROWS][K] and per sub-block: dw the scale, wm the min term
 * (m, or -dmin mn). */
typedef struct { uint8_t *w; float *dw, *wm; } w_rows;

static size_t act_bytes(int K, int sub) {
    int np = CHUNK / TOK;
    return ALIGN((size_t)np * K * TOK) + ALIGN((size_t)np * (K / M2_QK) * TOK * sizeof(float)) +
           2 * ALIGN((size_t)np * (K / sub) * TOK * sizeof(float)) + ALIGN((size_t)np * (K / sub) * TOK * sizeof(int32_t)) +
           ALIGN((size_t)K / M2_QK * sizeof(q8a_block));
}
static size_t rows_bytes(int K, int sub) {
    return ALIGN((size_t)ROWS * K) + 2 * ALIGN((size_t)ROWS * (K / sub) * sizeof(float));
}

size_t m2_qgemm_scratch_bytes(m2_wref w, int N, int nthreads) {
    (void)N;
    int sub = sub_len(w.dtype);
    if (nthreads < 1) nthreads = 1;
    return act_bytes(w.cols, sub) + (size_t)nthreads * rows_bytes(w.cols, sub) + 64;
}

/* Rows x[0..n) (n <= CHUNK) into panels; tmp holds one row's q8a blocks. */
__attribute__((noinline)) static void build_act(act_panels *ap, const float *x, int n, void *tmp, m2_qdot_path path) {
    int K = ap->K, sub = ap->sub, nb = K / M2_QK, ns = K / sub;
    const q8a_block *blk = tmp;
    for (int j = 0; j < ap->np * TOK; j++) {
        int p = j / TOK, t = j % TOK;
        int8_t *q = ap->qs + (size_t)p * K * TOK + 4 * t;
        float *da = ap->da + (size_t)p * nb * TOK + t, *ds = ap->ds + (size_t)p * ns * TOK + t;
        int32_t *cs = ap->cs + (size_t)p * ns * TOK + t;
        if (j >= n) {
            for (int g = 0; g < K / 4; g++) memset(q + (size_t)g * 4 * TOK, 0, 4);
            for (int b = 0; b < nb; b++) da[b * TOK] = 0;
            for (int s = 0; s < ns; s++) { ds[s * TOK] = 0; cs[s * TOK] = 0; }
            continue;
        }
        m2_qdot_quantize_act(M2_DT_Q8_0, x + (size_t)j * K, tmp, K, path);
        for (int b = 0; b < nb; b++) {
            da[b * TOK] = blk[b].d;
            for (int g = 0; g < M2_QK / 4; g++) memcpy(q + (size_t)(b * (M2_QK / 4) + g) * 4 * TOK, blk[b].qs + 4 * g, 4);
            for (int h = 0; h < M2_QK / sub; h++) {
                int sum = 0;
                if (sub == M2_QK) sum = blk[b].sum;
                else for (int i = sub * h; i < sub * h + sub; i++) sum += blk[b].qs[i];
                int s = b * (M2_QK / sub) + h;
                ds[s * TOK] = blk[b].d * (float)sum;
                cs[s * TOK] = ap->centre * sum;
            }
        }
    }
}

/* Per sub-block scale dw and min term wm of weight row `row` (wm only for the types with mins),
 * the same scalar steps in both paths; cvt reads an f16 (F16C on x86: the same exact values). */
#define DEF_ROW_SCALES(name, target, cvt)                                                           \
    target static void name(m2_dtype t, const uint8_t *row, int K, float *dw, float *wm) {          \
        const m2_dtype_info *in = m2_dtype_info_of(t);                                              \
        const int nb = K / in->block, bytes = in->bytes;                                            \
        switch (t) {                                                                                \
        case M2_DT_Q4_1: case M2_DT_Q5_1:                                                           \
            for (int b = 0; b < nb; b++) { dw[b] = cvt(row + (size_t)b * bytes); wm[b] = cvt(row + (size_t)b * bytes + 2); } \
            return;                                                                                 \
        case M2_DT_Q4_K: case M2_DT_Q5_K:                                                           \
            for (int b = 0; b < nb; b++) {                                                          \
                const uint8_t *bb = row + (size_t)b * bytes;                                        \
                uint8_t sm[16];                                                                     \
                k4_scales_mins(bb + 4, sm);                                                         \
                float d = cvt(bb), dmin = cvt(bb + 2);                                              \
                for (int g = 0; g < 8; g++) { dw[8 * b + g] = d * (float)sm[g]; wm[8 * b + g] = -(dmin * (float)sm[8 + g]); } \
            }                                                                                       \
            return;                                                                                 \
        case M2_DT_Q2_K:                                                                            \
            for (int b = 0; b < nb; b++) {                                                          \
                const uint8_t *bb = row + (size_t)b * bytes;                                        \
                float d = cvt(bb + 80), dmin = cvt(bb + 82);                                        \
                for (int g = 0; g < 16; g++) { dw[16 * b + g] = d * (float)(bb[g] & 15); wm[16 * b + g] = -(dmin * (float)(bb[g] >> 4)); } \
            }                                                                                       \
            return;                                                                                 \
        case M2_DT_Q3_K: case M2_DT_Q6_K:                                                           \
            for (int b = 0; b < nb; b++) {                                                          \
                const uint8_t *bb = row + (size_t)b * bytes;                                        \
                int8_t sc[16];                                                                      \
                if (t == M2_DT_Q3_K) q3k_scales(bb + 96, sc);                                       \
                else memcpy(sc, bb + 192, 16);                                                      \
                float d = cvt(bb + kq_d_offset(t));                                                 \
                for (int g = 0; g < 16; g++) dw[16 * b + g] = d * (float)sc[g];                     \
            }                                                                                       \
            return;                                                                                 \
        default: /* Q8_0, Q4_0, Q5_0, IQ4_NL: the block's scale */                                 \
            for (int b = 0; b < nb; b++) dw[b] = cvt(row + (size_t)b * bytes);                      \
            return;                                                                                 \
        }                                                                                           \
    }
DEF_ROW_SCALES(row_scales, , h2f)

/* Weight row `row` as its unsigned bytes (value + centre), portable. */
static void row_bytes_portable(m2_dtype t, const uint8_t *row, int K, uint8_t *w) {
    const m2_dtype_info *in = m2_dtype_info_of(t);
    int c = centre_of(t);
    for (int b = 0; b < K / in->block; b++) {
        const uint8_t *bb = row + (size_t)b * in->bytes;
        uint8_t *o = w + (size_t)b * in->block;
        if (in->block == M2_QK) {
            int q[M2_QK];
            float dw, mw;
            unpack32(t, bb, q, &dw, &mw);
            for (int j = 0; j < M2_QK; j++) o[j] = (uint8_t)(q[j] + c);
        } else
            for (int i = 0; i < M2_QK_K; i++) o[i] = (uint8_t)(kq_value(t, bb, i) - (t == M2_DT_Q6_K ? 32 : 0) + c);
    }
}

/* ---- the reference: qgemm.h's formula, one output at a time ------------------------------- */
static void tile_portable(const act_panels *ap, int p, const w_rows *wr, int nr, int min, float out[ROWS][TOK]) {
    int K = ap->K, sub = ap->sub, ns = K / sub;
    const int8_t *aq = ap->qs + (size_t)p * K * TOK;
    const float *da = ap->da + (size_t)p * (K / M2_QK) * TOK, *ds = ap->ds + (size_t)p * ns * TOK;
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < TOK; t++) {
            float acc = 0;
            for (int s = 0; s < ns; s++) {
                int S = 0, c = ap->centre;
                for (int i = s * sub; i < (s + 1) * sub; i++)
                    S += aq[(size_t)(i / 4) * 4 * TOK + 4 * t + i % 4] * ((int)wr->w[(size_t)r * K + i] - c);
                acc = fmaf(wr->dw[r * ns + s] * da[(s * sub / M2_QK) * TOK + t], (float)S, acc);
                if (min) acc = fmaf(wr->wm[r * ns + s], ds[s * TOK + t], acc);
            }
            out[r][t] = acc;
        }
}

/* ---- AVX-512 VNNI ---------------------------------------------------------------------------- */
#ifdef M2_QDOT_X86
DEF_ROW_SCALES(row_scales_x86, AVX2_TARGET, f16_x86)

/* row_bytes_portable through the AVX2 unpackers, one loop per type. */
AVX2_TARGET static void row_bytes_x86(m2_dtype t, const uint8_t *row, int K, uint8_t *w) {
    const m2_dtype_info *in = m2_dtype_info_of(t);
    const int nb = K / in->block, bytes = in->bytes;
    const __m256i top = _mm256_set1_epi8((char)0x80), four = _mm256_set1_epi8(4);   /* + 128, + 4 */
#define ROW32(expr)                                                                                 \
    for (int b = 0; b < nb; b++) {                                                                  \
        const uint8_t *bb = row + (size_t)b * bytes;                                                \
        _mm256_storeu_si256((__m256i *)(w + 32 * (size_t)b), (expr));                               \
    }                                                                                               \
    return
#define ROWK(tt, expr)                                                                              \
    for (int b = 0; b < nb; b++) {                                                                  \
        const uint8_t *bb = row + (size_t)b * bytes;                                                \
        for (int ch = 0; ch < 8; ch++) {                                                            \
            __m256i v = kq_chunk((tt), bb, ch);                                                     \
            _mm256_storeu_si256((__m256i *)(w + 256 * (size_t)b + 32 * ch), (expr));                \
        }                                                                                           \
    }                                                                                               \
    return
    switch (t) {
    case M2_DT_Q8_0: ROW32(_mm256_xor_si256(w_q8_0(bb), top));
    case M2_DT_Q4_0: ROW32(nibbles32(bb + 2));
    case M2_DT_Q4_1: ROW32(w_q4_1(bb));
    case M2_DT_Q5_0: ROW32(_mm256_or_si256(nibbles32(bb + 6), fifth_bits(bb + 2)));
    case M2_DT_Q5_1: ROW32(w_q5_1(bb));
    case M2_DT_IQ4_NL: ROW32(_mm256_xor_si256(w_iq4_nl(bb), top));
    case M2_DT_Q2_K: ROWK(M2_DT_Q2_K, v);
    case M2_DT_Q3_K: ROWK(M2_DT_Q3_K, _mm256_add_epi8(v, four));
    case M2_DT_Q4_K: ROWK(M2_DT_Q4_K, v);
    case M2_DT_Q5_K: ROWK(M2_DT_Q5_K, v);
    case M2_DT_Q6_K: ROWK(M2_DT_Q6_K, v);
    default: return;
    }
#undef ROW32
#undef ROWK
}

/* One panel of TOK activation rows against R weight rows: qgemm.h's steps with the TOK rows in the
 * 16 lanes (weights broadcast as the unsigned operand of vpdpbusd, activations signed). The
 * k-outer, r-inner order keeps R independent vpdpbusd chains in flight. MIN: the min term, else
 * the centre (the types have one or the other). */
#define DEF_TILE(name, R, SUB, MIN)                                                                 \
    VNNI_TARGET static void name(const act_panels *ap, int p, const w_rows *wr, float out[ROWS][TOK]) { \
        const int K = ap->K, ns = K / (SUB);                                                        \
        const int8_t *aq = ap->qs + (size_t)p * K * TOK;                                            \
        const float *da = ap->da + (size_t)p * (K / M2_QK) * TOK, *ds = ap->ds + (size_t)p * ns * TOK; \
        const int32_t *cs = ap->cs + (size_t)p * ns * TOK;                                          \
        __m512 acc[R];                                                                              \
        for (int r = 0; r < (R); r++) acc[r] = _mm512_setzero_ps();                                 \
        for (int s = 0; s < ns; s++) {                                                              \
            __m512i A[(SUB) / 4], S[R];                                                             \
            for (int k = 0; k < (SUB) / 4; k++) A[k] = _mm512_loadu_si512(aq + (size_t)(s * ((SUB) / 4) + k) * 4 * TOK); \
            for (int r = 0; r < (R); r++) S[r] = _mm512_setzero_si512();                           \
            for (int k = 0; k < (SUB) / 4; k++)                                                     \
                for (int r = 0; r < (R); r++) {                                                     \
                    int32_t wv;                                                                     \
                    memcpy(&wv, wr->w + (size_t)r * K + s * (SUB) + 4 * k, 4);                      \
                    S[r] = _mm512_dpbusd_epi32(S[r], _mm512_set1_epi32(wv), A[k]);                  \
                }                                                                                   \
            __m512 vda = _mm512_loadu_ps(da + (s * (SUB) / M2_QK) * TOK);                           \
            __m512 vds = (MIN) ? _mm512_loadu_ps(ds + s * TOK) : _mm512_setzero_ps();              \
            __m512i vcs = (MIN) ? _mm512_setzero_si512() : _mm512_loadu_si512(cs + s * TOK);        \
            for (int r = 0; r < (R); r++) {                                                         \
                __m512i Sr = (MIN) ? S[r] : _mm512_sub_epi32(S[r], vcs);                            \
                __m512 sc = _mm512_mul_ps(_mm512_set1_ps(wr->dw[r * ns + s]), vda);                 \
                acc[r] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(Sr), acc[r]);                       \
                if (MIN) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wr->wm[r * ns + s]), vds, acc[r]); \
            }                                                                                       \
        }                                                                                           \
        for (int r = 0; r < (R); r++) _mm512_storeu_ps(out[r], acc[r]);                             \
    }
DEF_TILE(tile8_32, 8, 32, 0)
DEF_TILE(tile8_32m, 8, 32, 1)
DEF_TILE(tile8_16, 8, 16, 0)
DEF_TILE(tile8_16m, 8, 16, 1)
DEF_TILE(tile1_32, 1, 32, 0)
DEF_TILE(tile1_32m, 1, 32, 1)
DEF_TILE(tile1_16, 1, 16, 0)
DEF_TILE(tile1_16m, 1, 16, 1)

typedef void (*tile_fn)(const act_panels *, int, const w_rows *, float[ROWS][TOK]);
static tile_fn pick_tile(int R, int sub, int min) {
    static const tile_fn fns[2][2][2] = {{{tile1_16, tile1_16m}, {tile1_32, tile1_32m}},
                                         {{tile8_16, tile8_16m}, {tile8_32, tile8_32m}}};
    return fns[R == ROWS][sub == 32][min];
}
#endif

int m2_qgemm_fast(void) { return m2_qdot_path_available(M2_QDOT_AVX512); }

typedef struct {
    const act_panels *ap;
    m2_wref w;
    size_t w_row;
    float *out;
    int ldo, n, acc, sub, min, x86;
    const float *bias;
    unsigned char *rows_scratch;
    size_t rows_stride;
} qgemm_job;

static void qgemm_part(void *vp, long b, long e, int tid) {
    const qgemm_job *j = vp;
    int K = j->w.cols, ns = K / j->sub;
    unsigned char *rs = j->rows_scratch + (size_t)tid * j->rows_stride;
    w_rows wr = {.w = rs};
    wr.dw = (float *)(rs + ALIGN((size_t)ROWS * K));
    wr.wm = wr.dw + ALIGN((size_t)ROWS * ns * sizeof(float)) / sizeof(float);
    float tile[ROWS][TOK];
    for (long blk = b; blk < e; blk++) {
        int o0 = (int)blk * ROWS, nr = j->w.rows - o0 < ROWS ? j->w.rows - o0 : ROWS;
        for (int r = 0; r < nr; r++) {
            const uint8_t *row = (const uint8_t *)j->w.data + (size_t)(o0 + r) * j->w_row;
#ifdef M2_QDOT_X86
            if (j->x86) {
                row_scales_x86(j->w.dtype, row, K, wr.dw + r * ns, wr.wm + r * ns);
                row_bytes_x86(j->w.dtype, row, K, wr.w + (size_t)r * K);
                continue;
            }
#endif
            row_scales(j->w.dtype, row, K, wr.dw + r * ns, wr.wm + r * ns);
            row_bytes_portable(j->w.dtype, row, K, wr.w + (size_t)r * K);
        }
        for (int p = 0; p < j->ap->np; p++) {
#ifdef M2_QDOT_X86
            if (j->x86) {
                if (nr == ROWS) pick_tile(ROWS, j->sub, j->min)(j->ap, p, &wr, tile);
                else
                    for (int r = 0; r < nr; r++) {   /* the last rows one at a time */
                        w_rows one = {wr.w + (size_t)r * K, wr.dw + r * ns, wr.wm + r * ns};
                        pick_tile(1, j->sub, j->min)(j->ap, p, &one, &tile[r]);
                    }
            } else
#endif
                tile_portable(j->ap, p, &wr, nr, j->min, tile);
            int nt = j->n - p * TOK < TOK ? j->n - p * TOK : TOK;
            for (int t = 0; t < nt; t++) {
                float *c = j->out + (size_t)(p * TOK + t) * j->ldo + o0;
                for (int r = 0; r < nr; r++) c[r] = (j->acc ? c[r] : 0.0f) + ((j->bias ? j->bias[o0 + r] : 0.0f) + tile[r][t]);
            }
        }
    }
}

void m2_qgemm(float *out, int ldo, const float *x, m2_wref w, const float *bias, int N, int acc,
              void *scratch, m2_qdot_path path, m2_pool *pool) {
    if (N <= 0 || w.rows <= 0) return;
    int x86 = path != M2_QDOT_PORTABLE && m2_qgemm_fast();
    int K = w.cols, sub = sub_len(w.dtype), ns = K / sub, np = CHUNK / TOK;
    unsigned char *base = (unsigned char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    act_panels ap = {.K = K, .sub = sub, .centre = centre_of(w.dtype), .qs = (int8_t *)base};
    ap.da = (float *)(base + ALIGN((size_t)np * K * TOK));
    ap.ds = ap.da + ALIGN((size_t)np * (K / M2_QK) * TOK * sizeof(float)) / sizeof(float);
    ap.cs = (int32_t *)(ap.ds + ALIGN((size_t)np * ns * TOK * sizeof(float)) / sizeof(float));
    void *tmp = (unsigned char *)ap.cs + ALIGN((size_t)np * ns * TOK * sizeof(int32_t));
    qgemm_job j = {.ap = &ap, .w = w, .w_row = m2_dtype_bytes(w.dtype, (size_t)K), .ldo = ldo, .acc = acc,
                   .sub = sub, .min = qb_has_min(w.dtype), .x86 = x86, .bias = bias,
                   .rows_scratch = base + act_bytes(K, sub), .rows_stride = rows_bytes(K, sub)};
    long blocks = (w.rows + ROWS - 1) / ROWS;
    for (int c0 = 0; c0 < N; c0 += CHUNK) {
        int n = N - c0 < CHUNK ? N - c0 : CHUNK;
        ap.np = (n + TOK - 1) / TOK;
        build_act(&ap, x + (size_t)c0 * K, n, tmp, x86 ? M2_QDOT_AUTO : M2_QDOT_PORTABLE);
        j.out = out + (size_t)c0 * ldo;
        j.n = n;
        if (pool) m2_pool_for(pool, blocks, qgemm_part, &j);
        else qgemm_part(&j, 0, blocks, 0);
    }
}
