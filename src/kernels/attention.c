#include "kernels/attention.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/fastmath.h"

typedef struct {
    const m2_attn_seq *seqs;
    int n_seqs, H, KVH, D, ldq, ldkv, backward;
} attn_job;

/* s[j] = scale * q . k_j for j <= last, with KT [D, nkv] the transposed keys. Blocks of 64 keys
 * keep their accumulators in registers across d. */
static void scores(float *s, const float *q, const float *KT, int nkv, int last, int D, float scale) {
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

static void item(const attn_job *jb, int seq, int g) {
    const m2_attn_seq *S = &jb->seqs[seq];
    int D = jb->D, nq = S->nq, nkv = S->nkv, ldq = jb->ldq, ldkv = jb->ldkv, H = jb->H;
    int rep = H / jb->KVH, off = nkv - nq, bw = jb->backward;
    float scale = 1.0f / sqrtf((float)D);
    size_t nb = (size_t)D * nkv;
    float *buf = malloc(sizeof(float) * (nb * 4 + 3 * (size_t)nkv + 2 * (size_t)D + 64));
    if (!buf) return;   /* leaves outputs untouched; callers size work to memory */
    float *KT = buf, *VT = KT + nb, *dK = VT + nb, *dV = dK + nb;
    float *s = dV + nb, *p = s + nkv, *dp = p + nkv, *acc = dp + nkv;
    const float *kg = S->k + (size_t)g * D, *vg = S->v + (size_t)g * D;
    int direct = !bw && nq * rep < 8;   /* decode: no transposed copies */
    if (!direct)
        for (int j = 0; j < nkv; j++)
            for (int d = 0; d < D; d++) {
                KT[(size_t)d * nkv + j] = kg[(size_t)j * ldkv + d];
                VT[(size_t)d * nkv + j] = vg[(size_t)j * ldkv + d];
            }
    if (bw) memset(dK, 0, sizeof(float) * nb * 2);
    for (int h = g * rep; h < (g + 1) * rep; h++) {
        for (int i = 0; i < nq; i++) {
            int last = off + i, n = last + 1;
            const float *qi = S->q + (size_t)i * ldq + (size_t)h * D;
            if (direct) scores_direct(s, qi, kg, ldkv, last, D, scale);
            else scores(s, qi, KT, nkv, last, D, scale);
            if (!bw) {
                float mx = m2_vmax(s, n);
                float sum = m2_vexp_sum(s, s, mx, n);
                if (S->lse) S->lse[(size_t)h * nq + i] = mx + logf(sum);
                float inv = 1.0f / sum;
                float *o = S->out + (size_t)i * ldq + (size_t)h * D;
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
                continue;
            }
            float l = S->lse[(size_t)h * nq + i];
            for (int j = 0; j < n; j++) p[j] = m2_fast_expf(s[j] - l);
            const float *doi = S->dout + (size_t)i * ldq + (size_t)h * D;
            scores(dp, doi, VT, nkv, last, D, 1.0f);
            float dsum = m2_vdot(p, dp, n);
            for (int j = 0; j < n; j++) dp[j] = p[j] * (dp[j] - dsum) * scale;   /* dS */
            /* transposed accumulators: dK^T[d, j] += q[d] dS[j], dV^T[d, j] += dout[d] p[j] */
            for (int d = 0; d < D; d++) {
                float qd = qi[d], od = doi[d];
                float *dkt = dK + (size_t)d * nkv, *dvt = dV + (size_t)d * nkv;
                for (int j = 0; j < n; j++) { dkt[j] += qd * dp[j]; dvt[j] += od * p[j]; }
            }
            if (S->dq) {
                float *dqi = S->dq + (size_t)i * ldq + (size_t)h * D;
                for (int d = 0; d < D; d++) dqi[d] += m2_vdot(dp, KT + (size_t)d * nkv, n);
            }
        }
    }
    if (bw)
        for (int j = 0; j < nkv; j++) {
            if (S->dk) { float *r = S->dk + (size_t)j * ldkv + (size_t)g * D; for (int d = 0; d < D; d++) r[d] += dK[(size_t)d * nkv + j]; }
            if (S->dv) { float *r = S->dv + (size_t)j * ldkv + (size_t)g * D; for (int d = 0; d < D; d++) r[d] += dV[(size_t)d * nkv + j]; }
        }
    free(buf);
}

static void run_items(void *vp, long b, long e, int tid) {
    const attn_job *jb = vp;
    for (long it = b; it < e; it++) item(jb, (int)(it / jb->KVH), (int)(it % jb->KVH));
}

void m2_attention_forward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                          int ldkv, m2_pool *pool) {
    attn_job j = {seqs, n_seqs, H, KVH, D, ldq, ldkv, 0};
    m2_pool_for(pool, (long)n_seqs * KVH, run_items, &j);
}

void m2_attention_backward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                           int ldkv, m2_pool *pool) {
    attn_job j = {seqs, n_seqs, H, KVH, D, ldq, ldkv, 1};
    m2_pool_for(pool, (long)n_seqs * KVH, run_items, &j);
}
