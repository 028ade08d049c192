#include "kernels/attention.h"
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include "kernels/fastmath.h"

typedef struct {
    const m2_attn_seq *seqs;
    int n_seqs, H, KVH, D, ldq, ldkv, backward;
    atomic_int *failed;   /* set by a work item that could not allocate its scratch */
} attn_job;

/* s[j] = scale * q . k_j for j <= last, with KT [D, nkv] the transposed keys. Blocks of 64 keys
 * keep their accumulators in registers across d. */
static void scores(float *restrict s, const float *restrict q, const float *restrict KT, int nkv,
                   int last, int D, float scale) {
    int n = last + 1, j = 0;
    for (; j + 64 <= n; j += 64) {
        float acc[64] = {0};
        for (int d = 0; d < D; d++) {
            float qd = q[d] * scale;
            const float *kt = KT + (size_t)d * nkv + j;
            for (int t = 0; t < 64; t++) acc[t] += qd * kt[t];
        }
        for (int t = 0; t < 64; t++) s[j + t] = acc[t];
    }
    if (j < n) {
        for (int t = j; t < n; t++) s[t] = 0.0f;
        for (int d = 0; d < D; d++) {
            float qd = q[d] * scale;
            const float *kt = KT + (size_t)d * nkv;
            for (int t = j; t < n; t++) s[t] += qd * kt[t];
        }
    }
}

/* the same without the transposed copy (decode: a few queries over a long cache) */
static void scores_direct(float *s, const float *q, const float *kg, int ldkv, int last, int D, float scale) {
    for (int j = 0; j <= last; j++) {
        const float *kj = kg + (size_t)j * ldkv;
        s[j] = m2_vdot(q, kj, D) * scale;
    }
}

/* a[j] += c0 x0[j] + c1 x1[j] + c2 x2[j] + c3 x3[j] */
static void axpy4(float *restrict a, const float *restrict x0, const float *restrict x1,
                  const float *restrict x2, const float *restrict x3, float c0, float c1, float c2,
                  float c3, int n) {
    for (int j = 0; j < n; j++) a[j] += c0 * x0[j] + c1 * x1[j] + c2 * x2[j] + c3 * x3[j];
}

#define RB 4   /* query rows whose K/V gradient updates are applied together */

/* Backward for one (sequence, KV head): probabilities recomputed from lse; dK^T and dV^T are
 * accumulated for RB query rows at a time (one pass over them instead of RB). */
static void item_bwd(const attn_job *jb, int seq, int g) {
    const m2_attn_seq *S = &jb->seqs[seq];
    int D = jb->D, nq = S->nq, nkv = S->nkv, ldq = jb->ldq, ldkv = jb->ldkv, H = jb->H;
    int ldo = S->ldo ? S->ldo : ldq;
    int rep = H / jb->KVH, off = nkv - nq;
    float scale = 1.0f / sqrtf((float)D);
    size_t nb = (size_t)D * nkv, nk = ((size_t)nkv + 15) & ~(size_t)15;
    float *buf = malloc(sizeof(float) * (nb * 4 + 2 * RB * nk + 64));
    if (!buf) { atomic_store(jb->failed, 1); return; }
    float *KT = buf, *VT = KT + nb, *dK = VT + nb, *dV = dK + nb, *P = dV + nb, *DS = P + RB * nk;
    const float *kg = S->k + (size_t)g * D, *vg = S->v + (size_t)g * D;
    for (int j = 0; j < nkv; j++)
        for (int d = 0; d < D; d++) {
            KT[(size_t)d * nkv + j] = kg[(size_t)j * ldkv + d];
            VT[(size_t)d * nkv + j] = vg[(size_t)j * ldkv + d];
        }
    memset(dK, 0, sizeof(float) * nb * 2);
    for (int h = g * rep; h < (g + 1) * rep; h++)
        for (int i0 = 0; i0 < nq; i0 += RB) {
            int nr = nq - i0 < RB ? nq - i0 : RB, nmax = off + i0 + nr;
            const float *qr[RB], *dor[RB];
            for (int r = 0; r < RB; r++) {
                float *p = P + r * nk, *ds = DS + r * nk;
                if (r >= nr) {   /* padding rows contribute nothing */
                    for (int j = 0; j < nmax; j++) p[j] = ds[j] = 0.0f;
                    qr[r] = dor[r] = NULL;
                    continue;
                }
                int i = i0 + r, last = off + i, n = last + 1;
                const float *qi = S->q + (size_t)i * ldq + (size_t)h * D;
                const float *doi = S->dout + (size_t)i * ldo + (size_t)h * D;
                qr[r] = qi; dor[r] = doi;
                scores(p, qi, KT, nkv, last, D, scale);
                float l = S->lse[(size_t)h * nq + i];
                for (int j = 0; j < n; j++) p[j] = m2_fast_expf(p[j] - l);
                scores(ds, doi, VT, nkv, last, D, 1.0f);
                float dsum = m2_vdot(p, ds, n);
                for (int j = 0; j < n; j++) ds[j] = p[j] * (ds[j] - dsum) * scale;
                for (int j = n; j < nmax; j++) p[j] = ds[j] = 0.0f;
                if (S->dq) {
                    float *dqi = S->dq + (size_t)i * ldq + (size_t)h * D;
                    for (int d = 0; d < D; d++) dqi[d] += m2_vdot(ds, KT + (size_t)d * nkv, n);
                }
            }
            for (int d = 0; d < D; d++) {
                float cq[RB], co[RB];
                for (int r = 0; r < RB; r++) { cq[r] = qr[r] ? qr[r][d] : 0.0f; co[r] = dor[r] ? dor[r][d] : 0.0f; }
                axpy4(dK + (size_t)d * nkv, DS, DS + nk, DS + 2 * nk, DS + 3 * nk, cq[0], cq[1], cq[2], cq[3], nmax);
                axpy4(dV + (size_t)d * nkv, P, P + nk, P + 2 * nk, P + 3 * nk, co[0], co[1], co[2], co[3], nmax);
            }
        }
    for (int j = 0; j < nkv; j++) {
        if (S->dk) { float *r = S->dk + (size_t)j * ldkv + (size_t)g * D; for (int d = 0; d < D; d++) r[d] += dK[(size_t)d * nkv + j]; }
        if (S->dv) { float *r = S->dv + (size_t)j * ldkv + (size_t)g * D; for (int d = 0; d < D; d++) r[d] += dV[(size_t)d * nkv + j]; }
    }
    free(buf);
}

/* Forward for one (sequence, KV head): every query row of the group's heads. */
static void item(const attn_job *jb, int seq, int g) {
    const m2_attn_seq *S = &jb->seqs[seq];
    int D = jb->D, nq = S->nq, nkv = S->nkv, ldq = jb->ldq, ldkv = jb->ldkv, H = jb->H;
    int ldo = S->ldo ? S->ldo : ldq;
    int rep = H / jb->KVH, off = nkv - nq;
    float scale = 1.0f / sqrtf((float)D);
    int direct = nq * rep < 8;   /* decode: a few queries over a long cache, no transposed copies */
    size_t nb = direct ? 0 : (size_t)D * nkv;
    float *buf = malloc(sizeof(float) * (nb * 2 + (size_t)nkv + (size_t)D + 64));
    if (!buf) { atomic_store(jb->failed, 1); return; }
    float *KT = buf, *VT = KT + nb, *s = VT + nb, *acc = s + nkv;
    const float *kg = S->k + (size_t)g * D, *vg = S->v + (size_t)g * D;
    if (!direct)
        for (int j = 0; j < nkv; j++)
            for (int d = 0; d < D; d++) {
                KT[(size_t)d * nkv + j] = kg[(size_t)j * ldkv + d];
                VT[(size_t)d * nkv + j] = vg[(size_t)j * ldkv + d];
            }
    for (int h = g * rep; h < (g + 1) * rep; h++)
        for (int i = 0; i < nq; i++) {
            int last = off + i, n = last + 1;
            const float *qi = S->q + (size_t)i * ldq + (size_t)h * D;
            if (direct) scores_direct(s, qi, kg, ldkv, last, D, scale);
            else scores(s, qi, KT, nkv, last, D, scale);
            float mx = m2_vmax(s, n);
            float sum = m2_vexp_sum(s, s, mx, n);
            if (S->lse) S->lse[(size_t)h * nq + i] = mx + logf(sum);
            float inv = 1.0f / sum;
            float *o = S->out + (size_t)i * ldo + (size_t)h * D;
            if (!direct) {
                for (int d = 0; d < D; d++) o[d] = m2_vdot(s, VT + (size_t)d * nkv, n) * inv;
                continue;
            }
            for (int d = 0; d < D; d++) acc[d] = 0.0f;
            for (int j = 0; j < n; j++) {
                float w = s[j] * inv;
                const float *vj = vg + (size_t)j * ldkv;
                for (int d = 0; d < D; d++) acc[d] += w * vj[d];
            }
            for (int d = 0; d < D; d++) o[d] = acc[d];
        }
    free(buf);
}

/* Query rows per block in the BLAS path: a block of rows [i0, i0+ATT_QB) only needs the keys up to
 * its last row, so the causal triangle costs about (1 + 1/nblocks)/2 of the square, and the score
 * buffer stays nkv x (rep x ATT_QB) (memory linear in the sequence length). The rep query heads
 * that share a KV head are stacked into one block (column hh * nr + r), and the scores are kept
 * TRANSPOSED, one row per key: the softmax's max and sum then run element-wise down the key rows
 * over whole vectors of query columns, instead of one horizontal reduction per query row. */
#define ATT_QB 32

/* dst[rep*nr, D] = the block's rows of the group's rep heads, head-major */
static void gather_heads(float *dst, const float *src, int ld, int h0, int rep, int nr, int D) {
    for (int hh = 0; hh < rep; hh++)
        for (int r = 0; r < nr; r++)
        {
            float *d = dst + ((size_t)hh * nr + r) * D;
            const float *x = src + (size_t)r * ld + (size_t)(h0 + hh) * D;
            for (int t = 0; t < D; t++) d[t] = x[t];
        }
}

/* Key row j of a block sees the query columns c with rr[c] >= j - first, rr[c] = c % nr the
 * query's row in the block, first = the block's first query position. */
static inline int key_row_start(int j, int first) { return j - first; }

/* Forward for one (sequence, KV head) with OpenBLAS: per query-row block, S^T = scale K Q^T over
 * the keys the block can see, exp(S^T - colmax) in place (masked entries 0), O = (S^T)^T V / colsum. */
static void item_gemm(const attn_job *jb, int seq, int g) {
    const m2_attn_seq *S = &jb->seqs[seq];
    int D = jb->D, nq = S->nq, nkv = S->nkv, ldq = jb->ldq, ldkv = jb->ldkv, H = jb->H;
    int ldo = S->ldo ? S->ldo : ldq;
    int rep = H / jb->KVH, off = nkv - nq, h0 = g * rep, mb = rep * ATT_QB;
    float scale = 1.0f / sqrtf((float)D);
    size_t np = (size_t)mb * nkv + 16, nd = (size_t)mb * D + 16;
    float *P = malloc(sizeof(float) * (np + 2 * nd + 2 * (size_t)mb) + sizeof(int) * mb);
    if (!P) { atomic_store(jb->failed, 1); return; }
    float *Qs = P + np, *Os = Qs + nd, *mx = Os + nd, *sum = mx + mb;
    int *rr = (int *)(sum + mb);
    const float *kg = S->k + (size_t)g * D, *vg = S->v + (size_t)g * D;
    for (int i0 = 0; i0 < nq; i0 += ATT_QB) {
        int nr = nq - i0 < ATT_QB ? nq - i0 : ATT_QB, nk = off + i0 + nr, m = rep * nr, first = off + i0;
        for (int c = 0; c < m; c++) { rr[c] = c % nr; mx[c] = -3.4e38f; sum[c] = 0.0f; }
        gather_heads(Qs, S->q + (size_t)i0 * ldq, ldq, h0, rep, nr, D);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nk, m, D, scale, kg, ldkv, Qs, D, 0.0f, P, m);
        for (int j = 0; j < nk; j++) {
            const float *p = P + (size_t)j * m;
            int lo = key_row_start(j, first);
            if (lo <= 0) for (int c = 0; c < m; c++) mx[c] = p[c] > mx[c] ? p[c] : mx[c];
            else for (int c = 0; c < m; c++) mx[c] = rr[c] >= lo && p[c] > mx[c] ? p[c] : mx[c];
        }
        for (int j = 0; j < nk; j++) {
            float *p = P + (size_t)j * m;
            int lo = key_row_start(j, first);
            if (lo <= 0)
                for (int c = 0; c < m; c++) { float e = m2_fast_expf(p[c] - mx[c]); p[c] = e; sum[c] += e; }
            else
                for (int c = 0; c < m; c++) {
                    float e = rr[c] >= lo ? m2_fast_expf(p[c] - mx[c]) : 0.0f;
                    p[c] = e; sum[c] += e;
                }
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, D, nk, 1.0f, P, m, vg, ldkv, 0.0f, Os, D);
        for (int hh = 0; hh < rep; hh++)
            for (int r = 0; r < nr; r++) {
                int c = hh * nr + r;
                if (S->lse) S->lse[(size_t)(h0 + hh) * nq + i0 + r] = mx[c] + logf(sum[c]);
                float *o = S->out + (size_t)(i0 + r) * ldo + (size_t)(h0 + hh) * D;
                const float *os = Os + (size_t)c * D;
                float iv = 1.0f / sum[c];
                for (int d = 0; d < D; d++) o[d] = os[d] * iv;
            }
    }
    free(P);
}

/* Backward for one (sequence, KV head) with OpenBLAS, transposed like the forward: per query-row
 * block, P^T recomputed from lse, dP^T = V dO^T, dS^T = P^T (dP^T - delta) scale with
 * delta = rowsum(P dP) (= dO . O: taken from the forward output when given, saving a pass), then
 * dQ = (dS^T)^T K, dK += dS^T Q, dV += P^T dO. dK and dV accumulate in a local [nkv, D] buffer and
 * are added to dk/dv once at the end. */
static void item_gemm_bwd(const attn_job *jb, int seq, int g) {
    const m2_attn_seq *S = &jb->seqs[seq];
    int D = jb->D, nq = S->nq, nkv = S->nkv, ldq = jb->ldq, ldkv = jb->ldkv, H = jb->H;
    int ldo = S->ldo ? S->ldo : ldq;
    int rep = H / jb->KVH, off = nkv - nq, h0 = g * rep, mb = rep * ATT_QB;
    float scale = 1.0f / sqrtf((float)D);
    size_t np = (size_t)mb * nkv + 16, nd = (size_t)mb * D + 16, nkd = (size_t)nkv * D + 16;
    float *P = malloc(sizeof(float) * (2 * np + 3 * nd + 2 * nkd + 2 * (size_t)mb) + sizeof(int) * mb);
    if (!P) { atomic_store(jb->failed, 1); return; }
    float *dP = P + np, *Qs = dP + np, *dOs = Qs + nd, *dQs = dOs + nd, *dK = dQs + nd, *dV = dK + nkd;
    float *lse = dV + nkd, *delta = lse + mb;
    int *rr = (int *)(delta + mb);
    const float *kg = S->k + (size_t)g * D, *vg = S->v + (size_t)g * D;
    float *dkg = S->dk ? S->dk + (size_t)g * D : NULL, *dvg = S->dv ? S->dv + (size_t)g * D : NULL;
    memset(dK, 0, sizeof(float) * 2 * nkd);
    for (int i0 = 0; i0 < nq; i0 += ATT_QB) {
        int nr = nq - i0 < ATT_QB ? nq - i0 : ATT_QB, nk = off + i0 + nr, m = rep * nr, first = off + i0;
        gather_heads(Qs, S->q + (size_t)i0 * ldq, ldq, h0, rep, nr, D);
        gather_heads(dOs, S->dout + (size_t)i0 * ldo, ldo, h0, rep, nr, D);
        for (int hh = 0; hh < rep; hh++)
            for (int r = 0; r < nr; r++) {
                int c = hh * nr + r;
                rr[c] = r;
                lse[c] = S->lse[(size_t)(h0 + hh) * nq + i0 + r];
                delta[c] = S->out ? m2_vdot(dOs + (size_t)c * D, S->out + (size_t)(i0 + r) * ldo + (size_t)(h0 + hh) * D, D)
                                  : 0.0f;
            }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nk, m, D, scale, kg, ldkv, Qs, D, 0.0f, P, m);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nk, m, D, 1.0f, vg, ldkv, dOs, D, 0.0f, dP, m);
        if (!S->out)   /* delta = rowsum(P dP), accumulated down the key rows */
            for (int j = 0; j < nk; j++) {
                float *p = P + (size_t)j * m;
                const float *dp = dP + (size_t)j * m;
                int lo = key_row_start(j, first);
                for (int c = 0; c < m; c++) {
                    float e = rr[c] >= lo ? m2_fast_expf(p[c] - lse[c]) : 0.0f;
                    p[c] = e; delta[c] += e * dp[c];
                }
            }
        for (int j = 0; j < nk; j++) {
            float *p = P + (size_t)j * m, *dp = dP + (size_t)j * m;
            int lo = key_row_start(j, first);
            if (!S->out)
                for (int c = 0; c < m; c++) dp[c] = p[c] * (dp[c] - delta[c]) * scale;
            else if (lo <= 0)
                for (int c = 0; c < m; c++) {
                    float e = m2_fast_expf(p[c] - lse[c]);
                    p[c] = e; dp[c] = e * (dp[c] - delta[c]) * scale;
                }
            else
                for (int c = 0; c < m; c++) {
                    float e = rr[c] >= lo ? m2_fast_expf(p[c] - lse[c]) : 0.0f;
                    p[c] = e; dp[c] = e * (dp[c] - delta[c]) * scale;
                }
        }
        if (S->dq) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, D, nk, 1.0f, dP, m, kg, ldkv, 0.0f, dQs, D);
            for (int hh = 0; hh < rep; hh++)
                for (int r = 0; r < nr; r++) {
                    float *dq = S->dq + (size_t)(i0 + r) * ldq + (size_t)(h0 + hh) * D;
                    const float *src = dQs + ((size_t)hh * nr + r) * D;
                    if (S->set_grads) for (int d = 0; d < D; d++) dq[d] = src[d];
                    else for (int d = 0; d < D; d++) dq[d] += src[d];
                }
        }
        if (dkg) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nk, D, m, 1.0f, dP, m, Qs, D, 1.0f, dK, D);
        if (dvg) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nk, D, m, 1.0f, P, m, dOs, D, 1.0f, dV, D);
    }
    for (int j = 0; j < nkv; j++) {
        float *rk = dkg ? dkg + (size_t)j * ldkv : NULL, *rv = dvg ? dvg + (size_t)j * ldkv : NULL;
        const float *xk = dK + (size_t)j * D, *xv = dV + (size_t)j * D;
        if (S->set_grads) {
            if (rk) for (int d = 0; d < D; d++) rk[d] = xk[d];
            if (rv) for (int d = 0; d < D; d++) rv[d] = xv[d];
        } else {
            if (rk) for (int d = 0; d < D; d++) rk[d] += xk[d];
            if (rv) for (int d = 0; d < D; d++) rv[d] += xv[d];
        }
    }
    free(P);
}

/* set_grads for the direct kernel (which accumulates): zero the item's gradient slices first */
static void zero_item_grads(const attn_job *jb, const m2_attn_seq *S, int g) {
    int D = jb->D, rep = jb->H / jb->KVH;
    for (int i = 0; S->dq && i < S->nq; i++)
        memset(S->dq + (size_t)i * jb->ldq + (size_t)g * rep * D, 0, sizeof(float) * rep * D);
    for (int j = 0; j < S->nkv; j++) {
        if (S->dk) memset(S->dk + (size_t)j * jb->ldkv + (size_t)g * D, 0, sizeof(float) * D);
        if (S->dv) memset(S->dv + (size_t)j * jb->ldkv + (size_t)g * D, 0, sizeof(float) * D);
    }
}

static void run_items(void *vp, long b, long e, int tid) {
    const attn_job *jb = vp;
    for (long it = b; it < e; it++) {
        int seq = (int)(it / jb->KVH), g = (int)(it % jb->KVH);
        const m2_attn_seq *S = &jb->seqs[seq];
        /* decode (a few queries over a cache) keeps the direct kernels; prefill/training use BLAS */
        int few = S->nq * (jb->H / jb->KVH) < 8;
        if (jb->backward) {
            if (few && S->set_grads) zero_item_grads(jb, S, g);
            if (few) item_bwd(jb, seq, g); else item_gemm_bwd(jb, seq, g);
        }
        else { if (few) item(jb, seq, g); else item_gemm(jb, seq, g); }
    }
}

int m2_attention_forward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                         int ldkv, m2_pool *pool) {
    atomic_int failed = 0;
    attn_job j = {seqs, n_seqs, H, KVH, D, ldq, ldkv, 0, &failed};
    m2_pool_for(pool, (long)n_seqs * KVH, run_items, &j);
    return atomic_load(&failed) ? -1 : 0;
}

int m2_attention_backward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                          int ldkv, m2_pool *pool) {
    atomic_int failed = 0;
    attn_job j = {seqs, n_seqs, H, KVH, D, ldq, ldkv, 1, &failed};
    m2_pool_for(pool, (long)n_seqs * KVH, run_items, &j);
    return atomic_load(&failed) ? -1 : 0;
}
