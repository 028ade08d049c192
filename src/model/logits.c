/* From the final hidden states to what losses use: next-token targets, log-probs and their
 * backward, exact KL between two ctxs, and the chunked logits of large vocabularies. */
#include "model/forward_impl.h"
#include <string.h>

void m2_batch_next_targets(const m2_batch *b, int32_t *targets) {
    size_t o = 0;
    for (int s = 0; s < b->n_seq; s++) {
        for (int i = 0; i < b->seq_len[s]; i++)
            targets[o + i] = i + 1 < b->seq_len[s] ? b->tokens[o + i + 1] : -1;
        o += b->seq_len[s];
    }
}

/* Chunked logits: rows [r0, r0 + rows) of the logits (rows <= chunk) into c->logits, from the
 * final hidden states; and the fold of a gradient on them, g[rows, V], into dhidden (and into the
 * output matrix's grad when the base is trained). */
static void chunk_logits(m2_ctx *c, int r0, int rows) {
    m2_fwd_share w = m2_fwd_pool_share(c, r0, r0 + rows, 0, 0);
    m2_fwd_lin_fwd(c, &w, c->logits, 0, c->hidden + (size_t)r0 * c->m->cfg.dim, c->m->output, NULL, -1);
    if (c->profile) m2_fwd_add_stats(c, &w, 1);
}

static void chunk_fold(m2_ctx *c, int r0, int rows, const float *g) {
    m2_fwd_share w = m2_fwd_pool_share(c, r0, r0 + rows, 0, 0);
    size_t C = c->m->cfg.dim;
    m2_fwd_lin_bwd(c, &w, m2_ctx_dhidden(c) + (size_t)r0 * C, 1, g, c->hidden + (size_t)r0 * C, c->m->output, NULL, -1);
    if (c->profile) m2_fwd_add_stats(c, &w, 1);
}

void m2_ctx_logprobs(m2_ctx *c, const int32_t *targets, float *logp) {
    int V = c->m->cfg.vocab_size;
    if (!c->chunk) PROF_INTO(&c->stats, 0, M2_OP_LOGPROB, m2_logprob_forward(logp, c->llse, c->logits, targets, c->N, V, c->m->pool));
    else
        for (int r0 = 0; r0 < c->N; r0 += c->chunk) {
            int rows = c->N - r0 < c->chunk ? c->N - r0 : c->chunk;
            chunk_logits(c, r0, rows);
            PROF_INTO(&c->stats, 0, M2_OP_LOGPROB,
                      m2_logprob_forward(logp + r0, c->llse + r0, c->logits, targets + r0, rows, V, c->m->pool));
        }
    c->llse_valid = 1;
}

void m2_ctx_logprobs_backward(m2_ctx *c, const int32_t *targets, const float *dlogp) {
    const float *lse = c->llse_valid ? c->llse : NULL;
    int V = c->m->cfg.vocab_size;
    if (c->chunk) {   /* recompute each chunk's logits, fold its gradient into dhidden at once */
        for (int r0 = 0; r0 < c->N; r0 += c->chunk) {
            int rows = c->N - r0 < c->chunk ? c->N - r0 : c->chunk, any = 0;
            for (int n = r0; n < r0 + rows && !any; n++) any = targets[n] >= 0 && dlogp[n] != 0.0f;
            if (!any) continue;
            chunk_logits(c, r0, rows);
            PROF_INTO(&c->stats, 1, M2_OP_LOGPROB,
                      m2_logprob_backward_set(c->dlogits, dlogp + r0, c->logits, lse ? lse + r0 : NULL, targets + r0,
                                              rows, V, c->m->pool));
            chunk_fold(c, r0, rows, c->dlogits);
        }
        return;
    }
    PROF_INTO(&c->stats, 1, M2_OP_LOGPROB, {
        if (!c->dlogits_live)   /* first writer since the forward: overwrite, no zeroing pass */
            m2_logprob_backward_set(c->dlogits, dlogp, c->logits, lse, targets, c->N, V, c->m->pool);
        else
            m2_logprob_backward(c->dlogits, dlogp, c->logits, lse, targets, c->N, V, c->m->pool);
    });
    c->dlogits_live = 1;
}

void m2_ctx_kl(m2_ctx *a, m2_ctx *b, const float *weight, float *kl, int grad_a, int grad_b) {
    int N = a->N < b->N ? a->N : b->N, V = a->m->cfg.vocab_size;
    int grad = weight && (grad_a || grad_b);
    if (!a->chunk && !b->chunk) {
        m2_kl_forward(kl, a->logits, b->logits, N, V, a->m->pool);
        if (grad)
            m2_kl_backward(grad_a ? m2_fwd_dlogits_live(a) : NULL, grad_b ? m2_fwd_dlogits_live(b) : NULL, weight, a->logits,
                           b->logits, N, V, a->m->pool);
        return;
    }
    /* at least one side chunked: walk both in chunks of the smaller chunk size */
    int step = a->chunk && (!b->chunk || a->chunk <= b->chunk) ? a->chunk : b->chunk;
    for (int r0 = 0; r0 < N; r0 += step) {
        int rows = N - r0 < step ? N - r0 : step;
        const float *la = a->logits + (a->chunk ? 0 : (size_t)r0 * V), *lb = b->logits + (b->chunk ? 0 : (size_t)r0 * V);
        if (a->chunk) chunk_logits(a, r0, rows);
        if (b->chunk) chunk_logits(b, r0, rows);
        m2_kl_forward(kl + r0, la, lb, rows, V, a->m->pool);
        if (!grad) continue;
        float *ga = NULL, *gb = NULL;
        if (grad_a) {
            ga = a->chunk ? a->dlogits : m2_fwd_dlogits_live(a) + (size_t)r0 * V;
            if (a->chunk) memset(ga, 0, (size_t)rows * V * sizeof(float));
        }
        if (grad_b) {
            gb = b->chunk ? b->dlogits : m2_fwd_dlogits_live(b) + (size_t)r0 * V;
            if (b->chunk) memset(gb, 0, (size_t)rows * V * sizeof(float));
        }
        m2_kl_backward(ga, gb, weight + r0, la, lb, rows, V, a->m->pool);
        if (ga && a->chunk) chunk_fold(a, r0, rows, ga);
        if (gb && b->chunk) chunk_fold(b, r0, rows, gb);
    }
}
