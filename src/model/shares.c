/* Row-parallel passes: the batch cut into shares of whole sequences (one per pool thread), their
 * profile, and the weight-gradient shadows of shares 1.. added in share order afterwards. */
#include "model/forward_impl.h"
#include <stdlib.h>
#include <string.h>

/* The shares of the batch for a row-parallel pass: nthreads contiguous runs of whole sequences
 * with about equal estimated cost (linear layers per token + causal attention per token pair).
 * Returns the number of shares: nthreads, or 1 (one share over all rows, ops split over the pool)
 * when the batch has fewer sequences than threads or too few rows to be worth it. */
int m2_fwd_plan_shares(const m2_ctx *c, m2_fwd_share *sh, int max_shares) {
    const m2_model_config *cf = &c->m->cfg;
    int T = c->nthreads < max_shares ? c->nthreads : max_shares;
    sh[0] = m2_fwd_pool_share(c, 0, c->N, 0, c->n_seq);
    if (T < 2 || c->n_seq < T || c->N < 64 * T) return 1;
    double C = cf->dim, QD = (double)cf->n_heads * cf->head_dim, KD = (double)cf->n_kv_heads * cf->head_dim;
    double lin = cf->n_layers * (C * (QD + 2 * KD) + QD * C + 3.0 * C * cf->ffn_dim) + C * cf->vocab_size;
    double att = cf->n_layers * QD, total = 0;
    for (int s = 0; s < c->n_seq; s++) total += c->seq_len[s] * (lin + att * c->seq_len[s]);
    double done = 0;
    int s = 0;
    for (int k = 0; k < T; k++) {
        int s0 = s;
        double goal = total * (k + 1) / T;
        /* at least one sequence each, and leave one for every later share */
        while (s < c->n_seq - (T - 1 - k) && (s == s0 || k == T - 1 ||
               done + 0.5 * c->seq_len[s] * (lin + att * c->seq_len[s]) <= goal)) {
            done += c->seq_len[s] * (lin + att * c->seq_len[s]);
            s++;
        }
        sh[k] = (m2_fwd_share){c->seq_off[s0], c->seq_off[s], s0, s, k, NULL,
                        c->wscratch + (size_t)k * c->wscratch_floats, {.gemm_s = 0}, 0};
    }
    return T;
}

/* Adds the shares' profile: flop summed; GEMM time that of the slowest share (the shares overlap);
 * the time of each kind of op the mean over the shares, so the kinds add up to the mean share's
 * time, never more than the pass's wall time (the max per kind could: shares differ per kind). */
void m2_fwd_add_stats(m2_ctx *c, const m2_fwd_share *sh, int n) {
    double smax = 0;
    for (int k = 0; k < n; k++) {
        c->stats.gemm_flop += sh[k].stats.gemm_flop;
        if (sh[k].stats.gemm_s > smax) smax = sh[k].stats.gemm_s;
    }
    c->stats.gemm_s += smax;
    for (int d = 0; d < 2; d++)
        for (int op = 0; op < M2_OP_N; op++) {
            double t = 0;
            for (int k = 0; k < n; k++) t += sh[k].stats.op_s[d][op];
            c->stats.op_s[d][op] += t / n;
        }
}

/* Floats of the shadows for ns shares given the trained arenas (na adapter, nb base floats), and
 * the cap beyond which the backward runs op by op instead. */
#define SHADOW_MAX_FLOATS ((size_t)1 << 26)   /* 256 MiB */
static size_t shadow_floats(size_t na, size_t nb, int ns, size_t *stride) {
    size_t st = (na + 15 + nb + 15) & ~(size_t)15;
    if (stride) *stride = st;
    return ns > 1 ? st * (size_t)(ns - 1) : 0;
}

size_t m2_ctx_shadow_bytes_for(m2_model *m) {
    int T = m->pool ? m2_pool_threads(m->pool) : 1;
    size_t na = 0, nb = m->base.g ? m->base.n : 0;
    for (int i = 0; i < m->n_adapters; i++)
        if (m->adapters[i]->params.g && m->adapters[i]->params.n > na) na = m->adapters[i]->params.n;
    size_t n = shadow_floats(na, nb, T < MAX_SHARES ? T : MAX_SHARES, NULL);
    return n > SHADOW_MAX_FLOATS ? 0 : n * sizeof(float);
}

/* Sizes the weight-gradient shadows for ns shares (zeroed; kept zero between backwards).
 * Returns 0, or -1 when they would be too large or cannot be allocated (then the backward runs
 * op by op instead). */
int m2_fwd_shadow_prepare(m2_ctx *c, int ns) {
    size_t na = c->a && c->a->params.g ? c->a->params.n : 0, nb = c->m->base.g ? c->m->base.n : 0, stride;
    size_t need = shadow_floats(na, nb, ns, &stride);
    if (need > SHADOW_MAX_FLOATS) return -1;   /* beyond that, split ops instead of rows */
    if (need > c->shadow_cap) {
        free(c->shadow);
        c->shadow = m2_malloc_aligned(need * sizeof(float));
        c->shadow_cap = c->shadow ? need : 0;
        if (!c->shadow) return -1;
        memset(c->shadow, 0, need * sizeof(float));
    }
    c->shadow_stride = stride;
    c->shadow_base_off = (na + 15) & ~(size_t)15;
    return 0;
}

/* arena[i] += shadow_1[i] + ... in share order, and the shadows back to zero */
typedef struct { float *g, *sh; size_t stride; int ns; } reduce_job;

static void reduce_part(void *vp, long b, long e, int tid) {
    reduce_job *j = vp;
    for (int k = 1; k < j->ns; k++) {
        float *sh = j->sh + (size_t)(k - 1) * j->stride;
        for (long i = b; i < e; i++) { j->g[i] += sh[i]; sh[i] = 0.0f; }
    }
}

void m2_fwd_shadow_reduce(m2_ctx *c, int ns) {
    m2_params *ap = c->a && c->a->params.g ? &c->a->params : NULL, *bp = c->m->base.g ? &c->m->base : NULL;
    if (ap) {
        reduce_job j = {ap->g, c->shadow, c->shadow_stride, ns};
        m2_pool_for(c->m->pool, (long)ap->n, reduce_part, &j);
    }
    if (bp) {
        reduce_job j = {bp->g, c->shadow + c->shadow_base_off, c->shadow_stride, ns};
        m2_pool_for(c->m->pool, (long)bp->n, reduce_part, &j);
    }
}
