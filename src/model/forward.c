/* The forward and backward passes of the training ctx over packed batches (see forward.h and
 * forward_impl.h): one share over every row with ops split over the pool, or one share per thread. */
#include "model/forward_impl.h"
#include <string.h>

#define SLOT(l, t) ((l) * M2_LORA_N_TARGETS + (t))

typedef struct { m2_ctx *c; m2_fwd_share *sh; } share_job;

/* Layer l's forward over the share's rows: from X[l] into the layer's activations and X[l+1]
 * (recompute: out = 0, X[l+1] is kept already; the down projection then runs only when its LoRA
 * pair needs the intermediate product for the backward, rewriting X[l+1] with the same bits).
 * Returns -1 when the attention could not allocate its scratch. */
static int layer_forward(m2_ctx *c, m2_fwd_share *w, int l, int out) {
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    int C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, QKV = QD + 2 * KD, N = w->n1 - w->n0;
    size_t NT = c->N, r0 = w->n0;
    m2_pool *pool = w->pool;
    const m2_layer *ly = &m->layers[l];
    m2_fwd_acts *A = &c->la[l];
    float *xin = c->X + ((size_t)l * NT + r0) * C, *xout = c->X + ((size_t)(l + 1) * NT + r0) * C;
    float *qkv = A->qkv + r0 * QKV, *q = qkv, *k = q + QD;
    float *h1 = A->h1 + r0 * C, *att = A->att + r0 * QD, *x1 = A->x1 + r0 * C, *h2 = A->h2 + r0 * C;
    float *gu = A->gu + r0 * 2 * F, *s = A->s + r0 * F;
    PROF(w, 0, M2_OP_NORM, m2_rmsnorm_forward(h1, A->rstd1 + r0, xin, ly->attn_norm->data, N, C, cf->norm_eps, pool));
    m2_fwd_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
    m2_fwd_group_fwd(c, w, qkv, 0, h1, &gqkv);
    PROF(w, 0, M2_OP_ROPE, {
        m2_rope_forward(q, c->pos + r0, m->rope_freq, N, H, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        m2_rope_forward(k, c->pos + r0, m->rope_freq, N, KVH, D, QKV, cf->rope_layout, &m->rope_tab, pool);
    });
    for (int sq = w->s0; sq < w->s1; sq++) {
        size_t o = c->seq_off[sq];
        int len = c->seq_len[sq];
        m2_attn_seq as = {.q = A->qkv + o * QKV, .k = A->qkv + o * QKV + QD, .v = A->qkv + o * QKV + QD + KD,
                          .out = A->att + o * QD, .lse = A->lse + o * H, .nq = len, .nkv = len, .ldo = QD};
        c->aseq[sq] = as;
    }
    int arc;
    PROF(w, 0, M2_OP_ATTENTION, arc = m2_attention_forward(c->aseq + w->s0, w->s1 - w->s0, H, KVH, D, QKV, QKV, pool));
    if (arc) return -1;
    /* residual: x1 = xin + att Wo^T, accumulated by the GEMM (beta 1) */
    PROF(w, 0, M2_OP_COPY, m2_copy(x1, xin, (long)N * C, pool));
    m2_fwd_lin_fwd(c, w, x1, 1, att, ly->wo, NULL, SLOT(l, 3));
    PROF(w, 0, M2_OP_NORM, m2_rmsnorm_forward(h2, A->rstd2 + r0, x1, ly->ffn_norm->data, N, C, cf->norm_eps, pool));
    m2_fwd_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
    m2_fwd_group_fwd(c, w, gu, 0, h2, &ggu);
    PROF(w, 0, M2_OP_SWIGLU, m2_swiglu_forward_rows(s, gu, N, F, pool));
    if (!out && !(c->a && c->a->pairs[SLOT(l, 6)].A)) return 0;
    PROF(w, 0, M2_OP_COPY, m2_copy(xout, x1, (long)N * C, pool));
    m2_fwd_lin_fwd(c, w, xout, 1, s, ly->wd, NULL, SLOT(l, 6));
    return 0;
}

/* The forward of the share's rows: embedding, every layer, final norm, output projection. */
static void forward_share(m2_ctx *c, m2_fwd_share *w) {
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    int C = cf->dim, L = cf->n_layers, N = w->n1 - w->n0;
    size_t NT = c->N, r0 = w->n0;
    m2_pool *pool = w->pool;
    PROF(w, 0, M2_OP_COPY, m2_embedding_forward(c->X + r0 * C, c->tokens + r0, m2_tensor_wref(m->tok_embd), N));
    for (int l = 0; l < L; l++)
        if (layer_forward(c, w, l, 1)) { w->failed = 1; return; }
    PROF(w, 0, M2_OP_NORM, m2_rmsnorm_forward(c->hidden + r0 * C, c->rstdf + r0, c->X + ((size_t)L * NT + r0) * C,
                                              m->out_norm->data, N, C, cf->norm_eps, pool));
    if (!c->no_logits && !c->chunk)
        m2_fwd_lin_fwd(c, w, c->logits + r0 * cf->vocab_size, 0, c->hidden + r0 * C, m->output, NULL, -1);
}

static void forward_part(void *vp, long b, long e, int tid) {
    share_job *j = vp;
    for (long k = b; k < e; k++) forward_share(j->c, &j->sh[k]);
}

/* drop NULL: a scoring pass (no dropout); else a training pass with these masks. */
static int forward_pass(m2_ctx *c, const m2_batch *b, m2_adapter *a, const m2_dropout_keys *drop, m2_err *err) {
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    if (!b || b->n_seq <= 0) return m2_errorf(err, M2_EINVAL, "forward: empty batch");
    long N = 0;
    for (int s = 0; s < b->n_seq; s++) {
        if (b->seq_len[s] <= 0) return m2_errorf(err, M2_EINVAL, "forward: sequence %d has length %d", s, b->seq_len[s]);
        if (b->seq_len[s] > c->tmax)
            return m2_errorf(err, M2_EINVAL, "forward: sequence %d has %d tokens, more than the context %d", s, b->seq_len[s], c->tmax);
        N += b->seq_len[s];
    }
    if (N > c->max_tokens) return m2_errorf(err, M2_EINVAL, "forward: batch of %ld tokens exceeds the ctx's %d", N, c->max_tokens);
    for (long n = 0; n < N; n++)
        if (b->tokens[n] < 0 || b->tokens[n] >= cf->vocab_size)
            return m2_errorf(err, M2_EINVAL, "forward: token %d at %ld outside the vocabulary (%d)", b->tokens[n], n, cf->vocab_size);
    if (a) {
        if (a->merged) return m2_errorf(err, M2_EINVAL, "forward: adapter '%s' is merged into the base", a->cfg.name);
        if (a->index >= m->n_adapters || m->adapters[a->index] != a)
            return m2_errorf(err, M2_EINVAL, "forward: adapter '%s' does not belong to this model", a->cfg.name);
        if (m2_fwd_lora_prepare(c, a, (int)N, err)) return -1;
    }
    c->N = (int)N; c->n_seq = b->n_seq; c->a = a;
    c->seq_off[0] = 0;
    for (int s = 0; s < b->n_seq; s++) {
        c->seq_len[s] = b->seq_len[s];
        c->seq_off[s + 1] = c->seq_off[s] + b->seq_len[s];
        c->seq_key[s] = drop && drop->seq_key ? drop->seq_key[s] : s;
        for (int i = 0; i < b->seq_len[s]; i++) c->pos[c->seq_off[s] + i] = i;
    }
    memcpy(c->tokens, b->tokens, N * sizeof(int32_t));
    c->drop_on = a && drop && a->cfg.dropout > 0;
    if (c->drop_on) c->drop_seed = drop->seed;
    m2_fwd_share sh[MAX_SHARES];
    int ns = m2_fwd_plan_shares(c, sh, MAX_SHARES);
    if (ns == 1) forward_share(c, &sh[0]);
    else {
        share_job j = {c, sh};
        m2_pool_for(m->pool, ns, forward_part, &j);
    }
    if (c->profile) m2_fwd_add_stats(c, sh, ns);
    for (int k = 0; k < ns; k++)
        if (sh[k].failed) {
            c->N = 0;   /* nothing valid to score or differentiate */
            return m2_errorf(err, M2_ENOMEM, "forward: out of memory for the attention scratch (%ld tokens)", N);
        }
    c->fwd_no_logits = c->no_logits || c->chunk;
    m2_ctx_zero_dgrads(c);
    c->llse_valid = 0;
    return 0;
}

int m2_forward(m2_ctx *c, const m2_batch *b, m2_adapter *a, int train, m2_err *err) {
    if (!train) return forward_pass(c, b, a, NULL, err);
    m2_dropout_keys d = {0};
    if (a && a->cfg.dropout > 0) d.seed = m2_rng_u64(&c->rng);   /* one draw per forward that drops */
    return forward_pass(c, b, a, &d, err);
}

int m2_forward_keyed(m2_ctx *c, const m2_batch *b, m2_adapter *a, const m2_dropout_keys *drop, m2_err *err) {
    if (!drop) return m2_errorf(err, M2_EINVAL, "forward: a keyed forward needs its dropout keys");
    return forward_pass(c, b, a, drop, err);
}

/* The backward of the share's rows: output projection, final norm, every layer (down to the
 * layer-0 input gradient when something needs it). */
static void backward_share(m2_ctx *c, m2_fwd_share *w) {
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    int C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, QKV = QD + 2 * KD, L = cf->n_layers, N = w->n1 - w->n0;
    m2_pool *pool = w->pool;
    size_t NT = c->N, r0 = w->n0, NC = (size_t)N * C;
    float *dX = c->dX + r0 * C, *dh = c->dh + r0 * C, *ds = c->ds + r0 * F, *dgu = c->dgu + r0 * 2 * F;
    float *datt = c->datt + r0 * QD, *dqkv = c->dqkv + r0 * QKV;
    /* d hidden = dhidden + dlogits . W_out (each only when something wrote it since the forward) */
    int logits_grad = !c->fwd_no_logits && c->dlogits_live;
    PROF(w, 1, M2_OP_COPY, {
        if (c->dhidden_live) m2_copy(dh, c->dhidden + r0 * C, (long)NC, pool);
        else if (!logits_grad) memset(dh, 0, NC * sizeof(float));
    });
    if (logits_grad)
        m2_fwd_lin_bwd(c, w, dh, c->dhidden_live, c->dlogits + r0 * cf->vocab_size, c->hidden + r0 * C, m->output, NULL, -1);
    PROF(w, 1, M2_OP_NORM, m2_rmsnorm_backward_set(dX, m2_fwd_grad_of(c, w, m->out_norm->grad), dh,
                                                   c->X + ((size_t)L * NT + r0) * C, m->out_norm->data, c->rstdf + r0,
                                                   N, C, pool));
    for (int l = L - 1; l >= 0; l--) {
        /* a recompute ctx kept only X[l]: the layer's activations again, the same bits */
        if (c->keep_acts == M2_ACTS_RECOMPUTE && layer_forward(c, w, l, 0)) { w->failed = 1; return; }
        const m2_layer *ly = &m->layers[l];
        m2_fwd_acts *A = &c->la[l];
        float *xin = c->X + ((size_t)l * NT + r0) * C, *h1 = A->h1 + r0 * C, *att = A->att + r0 * QD;
        float *x1 = A->x1 + r0 * C, *h2 = A->h2 + r0 * C, *gu = A->gu + r0 * 2 * F, *s = A->s + r0 * F;
        /* dX = grad wrt the layer output; the residual passes it on unchanged, so dX += the FFN
         * path turns it into the grad wrt x1, and += the attention path into the grad wrt xin */
        m2_fwd_lin_bwd(c, w, ds, 0, dX, s, ly->wd, NULL, SLOT(l, 6));
        PROF(w, 1, M2_OP_SWIGLU, m2_swiglu_backward_rows_set(dgu, ds, gu, N, F, pool));
        m2_fwd_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
        m2_fwd_group_bwd(c, w, dh, 0, dgu, h2, &ggu, NULL);
        PROF(w, 1, M2_OP_NORM,
             m2_rmsnorm_backward(dX, m2_fwd_grad_of(c, w, ly->ffn_norm->grad), dh, x1, ly->ffn_norm->data, A->rstd2 + r0, N, C, pool));
        /* below layer 0 only the embedding could use the input grad: skip those GEMMs when it is
         * frozen, and skip dq/dk/dv where nothing (input grad, base grads, trainable LoRA) uses them */
        int need_dx = l > 0 || m->tok_embd->grad || ly->attn_norm->grad;
        int need_q = need_dx || ly->wq->grad || (ly->bq && ly->bq->grad) || m2_fwd_lora_trains(c, SLOT(l, 0));
        int need_k = need_dx || ly->wk->grad || (ly->bk && ly->bk->grad) || m2_fwd_lora_trains(c, SLOT(l, 1));
        int need_v = need_dx || ly->wv->grad || (ly->bv && ly->bv->grad) || m2_fwd_lora_trains(c, SLOT(l, 2));
        if (!need_q && !need_k && !need_v) {
            /* nothing below the attention output projection needs a gradient */
            m2_fwd_lin_bwd(c, w, NULL, 0, dX, att, ly->wo, NULL, SLOT(l, 3));
            continue;
        }
        m2_fwd_lin_bwd(c, w, datt, 0, dX, att, ly->wo, NULL, SLOT(l, 3));
        /* dq | dk | dv side by side like q | k | v; the attention writes them (no zeroing pass) */
        float *dq = dqkv, *dk = dq + QD;
        for (int sq = w->s0; sq < w->s1; sq++) {
            size_t o = c->seq_off[sq];
            int len = c->seq_len[sq];
            float *q = A->qkv + o * QKV, *dqs = c->dqkv + o * QKV;
            m2_attn_seq as = {.q = q, .k = q + QD, .v = q + QD + KD,
                              .out = A->att + o * QD, .lse = A->lse + o * H, .dout = c->datt + o * QD,
                              .dq = need_q ? dqs : NULL, .dk = need_k ? dqs + QD : NULL,
                              .dv = need_v ? dqs + QD + KD : NULL, .nq = len, .nkv = len, .ldo = QD,
                              .set_grads = 1};
            c->aseq[sq] = as;
        }
        int arc;
        PROF(w, 1, M2_OP_ATTENTION, arc = m2_attention_backward(c->aseq + w->s0, w->s1 - w->s0, H, KVH, D, QKV, QKV, pool));
        if (arc) { w->failed = 1; return; }
        PROF(w, 1, M2_OP_ROPE, {
            if (need_q) m2_rope_backward(dq, c->pos + r0, m->rope_freq, N, H, D, QKV, cf->rope_layout, &m->rope_tab, pool);
            if (need_k) m2_rope_backward(dk, c->pos + r0, m->rope_freq, N, KVH, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        });
        float *dh1 = need_dx ? dh : NULL;
        m2_fwd_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
        int need[3] = {need_q, need_k, need_v};
        m2_fwd_group_bwd(c, w, dh1, 0, dqkv, h1, &gqkv, need);
        if (dh1)
            PROF(w, 1, M2_OP_NORM, m2_rmsnorm_backward(dX, m2_fwd_grad_of(c, w, ly->attn_norm->grad), dh1, xin, ly->attn_norm->data,
                                                       A->rstd1 + r0, N, C, pool));
    }
}

static void backward_part(void *vp, long b, long e, int tid) {
    share_job *j = vp;
    for (long k = b; k < e; k++) backward_share(j->c, &j->sh[k]);
}

int m2_backward(m2_ctx *c, m2_err *err) {
    if (!c->keep_acts) return m2_errorf(err, M2_EINVAL, "backward: ctx was created without activations (keep_acts = 0)");
    if (c->N <= 0) return m2_errorf(err, M2_EINVAL, "backward: no forward to differentiate");
    m2_model *m = c->m;
    m2_fwd_share sh[MAX_SHARES];
    int ns = m2_fwd_plan_shares(c, sh, MAX_SHARES);
    if (ns > 1 && m2_fwd_shadow_prepare(c, ns)) ns = m2_fwd_plan_shares(c, sh, 1);
    if (ns == 1) backward_share(c, &sh[0]);
    else {
        share_job j = {c, sh};
        m2_pool_for(m->pool, ns, backward_part, &j);
        PROF_INTO(&c->stats, 1, M2_OP_COPY, m2_fwd_shadow_reduce(c, ns));
    }
    if (c->profile) m2_fwd_add_stats(c, sh, ns);
    for (int k = 0; k < ns; k++)
        if (sh[k].failed)   /* the gradients hold a partial sum: the caller must not step on them */
            return m2_errorf(err, M2_ENOMEM, "backward: out of memory for the attention scratch; gradients are incomplete");
    if (m->tok_embd->grad) m2_embedding_backward(m->tok_embd->grad, c->dX, c->tokens, c->N, m->cfg.dim);
    return 0;
}
