/* Linear layers of the ctx's passes with the active adapter's LoRA paths: LoRA buffers,
 * dropout without stored masks, projection groups sharing one input (q|k|v, gate|up), where each
 * share puts its weight gradients. */
#include "model/forward_impl.h"
#include <stdint.h>
#include <stdlib.h>

/* Sizes the LoRA buffers for adapter a over N tokens (dropout masks are never stored: see
 * lora_drop_rows). */
int m2_fwd_lora_prepare(m2_ctx *c, m2_adapter *a, int N, m2_err *err) {
    int L = c->m->cfg.n_layers, r = a->cfg.rank;
    size_t need = 0, maxin = 0;
    for (int s = 0; s < L * M2_LORA_N_TARGETS; s++) {
        m2_lora_pair *p = &a->pairs[s];
        if (!p->A) continue;
        if (c->keep_acts || need == 0) need += ((size_t)N * r + 15) & ~(size_t)15;
        if ((size_t)p->in > maxin) maxin = p->in;
        if ((size_t)p->out > maxin) maxin = p->out;
    }
    size_t scratch = ((size_t)N * r + 15 + 2 * ((size_t)N * maxin + 15)) & ~(size_t)15;
    need += scratch + 64;
    if (need > c->lora_cap) {
        free(c->lora_block);
        c->lora_block = m2_malloc_aligned(need * sizeof(float));
        if (!c->lora_block) { c->lora_cap = 0; return m2_errorf(err, M2_ENOMEM, "ctx: out of memory for LoRA activations"); }
        c->lora_cap = need;
    }
    float *p0 = c->lora_block, *shared_t = NULL;
    for (int s = 0; s < L * M2_LORA_N_TARGETS; s++) {
        m2_lora_pair *p = &a->pairs[s];
        c->lora_t[s] = NULL;
        if (!p->A) continue;
        if (c->keep_acts || !shared_t) {
            c->lora_t[s] = p0; p0 += ((size_t)N * r + 15) & ~(size_t)15;
            if (!c->keep_acts) shared_t = c->lora_t[s];
        } else c->lora_t[s] = shared_t;
    }
    c->lora_maxin = maxin;
    c->lora_dt = p0; p0 += ((size_t)N * r + 15) & ~(size_t)15;
    c->lora_xd = p0; p0 += ((size_t)N * maxin + 15) & ~(size_t)15;
    c->lora_dx = p0;
    return 0;
}

/* LoRA dropout without stored masks (m2_dropout_apply): the mask of the pair at slot is a hash of
 * (this forward's seed, slot, the row's sequence key, element index p * in + i for the row at
 * position p of its sequence), so the forward and the backward recompute it for any rows: no
 * N x in mask per (layer, target) is kept, rows can be handled by any thread, and the bits depend
 * only on the seed, the key and the position, not on where the sequence sits in the batch (a
 * data-parallel rank's block gets the masks one process gives the same sequences: m2_batch).
 * dst[r, in] = drop(x) for rows [n0, n0 + rows). */
static void lora_drop_rows(const m2_ctx *c, int slot, int in, int n0, int rows, const float *x, float *dst) {
    uint64_t seed = c->drop_seed ^ ((uint64_t)(slot + 1) << 52);
    int lo = 0, hi = c->n_seq - 1;   /* the sequence holding row n0: the last s with seq_off[s] <= n0 */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (c->seq_off[mid] <= n0) lo = mid; else hi = mid - 1;
    }
    for (int s = lo, n = n0; n < n0 + rows; s++) {
        int end = c->seq_off[s + 1] < n0 + rows ? c->seq_off[s + 1] : n0 + rows;
        uint64_t key = m2_hash64(seed ^ m2_hash64((uint64_t)(int64_t)c->seq_key[s]));
        size_t at = (size_t)(n - n0) * in;
        m2_dropout_apply(dst + at, x + at, (size_t)(end - n) * in, (uint64_t)(n - c->seq_off[s]) * in, key,
                         c->a->cfg.dropout);
        n = end;
    }
}

/* Where share w puts a weight gradient g (a pointer into the adapter's or the base's grad arena):
 * share 0 into the arena itself, share k > 0 into the same offset of its shadow. */
float *m2_fwd_grad_of(const m2_ctx *c, const m2_fwd_share *w, float *g) {
    if (!g || w->part == 0) return g;
    float *sh = c->shadow + (size_t)(w->part - 1) * c->shadow_stride;
    uintptr_t p = (uintptr_t)g;
    const m2_params *ap = c->a ? &c->a->params : NULL, *bp = &c->m->base;
    if (ap && ap->g && p >= (uintptr_t)ap->g && p < (uintptr_t)(ap->g + ap->n)) return sh + (g - ap->g);
    if (bp->g && p >= (uintptr_t)bp->g && p < (uintptr_t)(bp->g + bp->n)) return sh + c->shadow_base_off + (g - bp->g);
    return g;   /* not reached: every trained tensor lives in one of the two arenas */
}

/* out[rows, ldo] slice += scale * drop(x) A^T B^T for the active adapter's pair at slot (if any);
 * out and x point at the share's first row. */
static void lora_fwd(m2_ctx *c, m2_fwd_share *w, float *out, int ldo, const float *x, int slot) {
    m2_adapter *a = c->a;
    if (!a || slot < 0 || !a->pairs[slot].A) return;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank, in = p->in, outd = p->out, N = w->n1 - w->n0;
    const float *xin = x;
    if (c->drop_on) {
        float *xd = c->lora_xd + (size_t)w->n0 * c->lora_maxin;
        lora_drop_rows(c, slot, in, w->n0, N, x, xd);
        xin = xd;
    }
    float *t = c->lora_t[slot] + (size_t)w->n0 * r;
    m2_sgemm(w->pool, 0, 1, N, r, in, 1.0f, xin, in, p->A, in, 0.0f, t, r);
    m2_sgemm(w->pool, 0, 1, N, outd, r, a->scale, t, r, p->B, r, 1.0f, out, ldo);
}

/* LoRA backward for the pair at slot given dy (rows ldd apart): dA, dB when trainable, dx += when
 * dx; dx, dy and x point at the share's first row. */
static void lora_bwd(m2_ctx *c, m2_fwd_share *w, float *dx, const float *dy, int ldd, const float *x, int slot) {
    m2_adapter *a = c->a;
    if (!a || slot < 0 || !a->pairs[slot].A) return;
    m2_pool *pool = w->pool;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank, in = p->in, outd = p->out, N = w->n1 - w->n0, train = a->params.trainable && a->params.g;
    float s = a->scale, *t = c->lora_t[slot] + (size_t)w->n0 * r, *dt = c->lora_dt + (size_t)w->n0 * r;
    int drop = c->drop_on;
    float *xd = c->lora_xd + (size_t)w->n0 * c->lora_maxin, *dxm = c->lora_dx + (size_t)w->n0 * c->lora_maxin;
    if (train)   /* dB[out,r] += s dy^T t */
        m2_sgemm(pool, 1, 0, outd, r, N, s, dy, ldd, t, r, 1.0f, m2_fwd_grad_of(c, w, p->dB), r);
    /* dt[N,r] = s dy B */
    m2_sgemm(pool, 0, 0, N, r, outd, s, dy, ldd, p->B, r, 0.0f, dt, r);
    const float *xin = x;
    if (drop && train) {   /* the forward's dropped input, recomputed */
        lora_drop_rows(c, slot, in, w->n0, N, x, xd);
        xin = xd;
    }
    if (train)   /* dA[r,in] += dt^T xin */
        m2_sgemm(pool, 1, 0, r, in, N, 1.0f, dt, r, xin, in, 1.0f, m2_fwd_grad_of(c, w, p->dA), in);
    if (!dx) return;
    if (!drop)
        m2_sgemm(pool, 0, 0, N, in, r, 1.0f, dt, r, p->A, in, 1.0f, dx, in);
    else {   /* dx += mask * (dt A): the mask applied to the product, then added */
        m2_sgemm(pool, 0, 0, N, in, r, 1.0f, dt, r, p->A, in, 0.0f, dxm, in);
        lora_drop_rows(c, slot, in, w->n0, N, dxm, dxm);
        size_t n = (size_t)N * in;
        for (size_t i = 0; i < n; i++) dx[i] += dxm[i];
    }
}

/* When the group's f32 matrices lie back to back in memory (the model allocates q, k, v and gate,
 * up in that order in one arena), they ARE the concatenated [sum rows, in] matrix: one GEMM
 * instead of n, the shared input packed once. Returns it or NULL. */
static const float *group_cat(const m2_fwd_group *g) {
    if (g->n < 2) return NULL;
    for (int i = 0; i < g->n; i++) if (g->W[i]->dtype != M2_DT_F32) return NULL;
    for (int i = 1; i < g->n; i++) {
        const m2_tensor *p = g->W[i - 1];
        if ((const float *)p->data + (size_t)p->rows * p->cols != (const float *)g->W[i]->data) return NULL;
    }
    return g->W[0]->data;
}

static int group_rows(const m2_fwd_group *g) {
    int r = 0;
    for (int i = 0; i < g->n; i++) r += g->W[i]->rows;
    return r;
}

/* bwd: 0 forward, 1 backward without dx, 2 backward with dx */
static double lin_flop(m2_ctx *c, const m2_tensor *W, int slot, int N, int bwd) {
    double f = 2.0 * N * W->rows * W->cols * (bwd ? ((W->grad ? 1 : 0) + (bwd == 2)) : 1);
    m2_adapter *a = c->a;
    if (a && slot >= 0 && a->pairs[slot].A) f += 2.0 * N * a->cfg.rank * (W->rows + W->cols) * (bwd ? 2 : 1);
    return f;
}

/* out[rows, ldo] (+)= x [W_0; W_1; ..]^T (+ biases) (+ each pair's LoRA path), over the share's rows */
void m2_fwd_group_fwd(m2_ctx *c, m2_fwd_share *w, float *out, int acc, const float *x, const m2_fwd_group *g) {
    double t0 = c->profile ? m2_now_s() : 0;
    int ldo = group_rows(g), in = g->W[0]->cols, N = w->n1 - w->n0;
    const float *cat = group_cat(g);
    if (cat) {
        int bias = 0;
        for (int i = 0; i < g->n; i++) bias |= g->b[i] != NULL;
        if (bias) {   /* rows start as the biases (0 where a matrix has none), then accumulate */
            for (int n = 0; n < N; n++) {
                float *o = out + (size_t)n * ldo;
                for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++)
                    for (int j = 0; j < g->W[i]->rows; j++)
                        o[off + j] = (acc ? o[off + j] : 0.0f) + (g->b[i] ? ((const float *)g->b[i]->data)[j] : 0.0f);
            }
            acc = 1;
        }
        m2_sgemm(w->pool, 0, 1, N, ldo, in, 1.0f, x, in, cat, in, acc ? 1.0f : 0.0f, out, ldo);
    } else
        for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++)
            m2_matmul_forward_wld(out + off, ldo, x, m2_tensor_wref(g->W[i]), g->b[i] ? g->b[i]->data : NULL, N,
                                  acc, w->wscratch, w->pool);
    double t1 = c->profile ? m2_now_s() : 0;
    for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++) lora_fwd(c, w, out + off, ldo, x, g->slot[i]);
    if (c->profile) {
        double t2 = m2_now_s();
        w->stats.gemm_s += t2 - t0;
        w->stats.op_s[0][g->W[0] == c->m->output ? M2_OP_OUTPUT : M2_OP_LINEAR] += t1 - t0;
        w->stats.op_s[0][M2_OP_LORA] += t2 - t1;
        for (int i = 0; i < g->n; i++) w->stats.gemm_flop += lin_flop(c, g->W[i], g->slot[i], N, 0);
    }
}

/* Backward of m2_fwd_group_fwd for the members with need[i] (NULL = all) given dy[rows, ldo]:
 * dx[rows,in] (+)= sum_i dy_i W_i (overwritten when acc is 0; dx may be NULL) plus the LoRA paths;
 * weight/bias grads for trainable base tensors, LoRA grads for a trainable adapter. */
void m2_fwd_group_bwd(m2_ctx *c, m2_fwd_share *w, float *dx, int acc, const float *dy, const float *x,
                      const m2_fwd_group *g, const int *need) {
    double t0 = c->profile ? m2_now_s() : 0;
    m2_pool *pool = w->pool;
    int ldd = group_rows(g), in = g->W[0]->cols, all = 1, N = w->n1 - w->n0;
    for (int i = 0; i < g->n; i++) all &= !need || need[i];
    const float *cat = all ? group_cat(g) : NULL;
    if (dx && cat) {
        m2_sgemm(pool, 0, 0, N, in, ldd, 1.0f, dy, ldd, cat, in, acc ? 1.0f : 0.0f, dx, in);
        acc = 1;
    }
    for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++) {
        if (need && !need[i]) continue;
        const m2_tensor *W = g->W[i], *b = g->b[i];
        const float *dyi = dy + off;
        if (dx && !cat) { m2_matmul_dinp_wld(dx, dyi, ldd, m2_tensor_wref(W), N, acc, w->wscratch, pool); acc = 1; }
        if (W->grad) m2_sgemm(pool, 1, 0, W->rows, in, N, 1.0f, dyi, ldd, x, in, 1.0f, m2_fwd_grad_of(c, w, W->grad), in);
        if (b && b->grad) {
            float *bg = m2_fwd_grad_of(c, w, b->grad);
            for (int n = 0; n < N; n++) m2_acc(bg, dyi + (size_t)n * ldd, W->rows);
        }
    }
    double t1 = c->profile ? m2_now_s() : 0;
    for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++)
        if (!need || need[i]) lora_bwd(c, w, dx, dy + off, ldd, x, g->slot[i]);
    if (c->profile) {
        double t2 = m2_now_s();
        w->stats.gemm_s += t2 - t0;
        w->stats.op_s[1][g->W[0] == c->m->output ? M2_OP_OUTPUT : M2_OP_LINEAR] += t1 - t0;
        w->stats.op_s[1][M2_OP_LORA] += t2 - t1;
        for (int i = 0; i < g->n; i++)
            if (!need || need[i]) w->stats.gemm_flop += lin_flop(c, g->W[i], g->slot[i], N, dx ? 2 : 1);
    }
}

void m2_fwd_lin_fwd(m2_ctx *c, m2_fwd_share *w, float *out, int acc, const float *x, const m2_tensor *W,
                    const m2_tensor *b, int slot) {
    m2_fwd_group g = {1, {W}, {b}, {slot}};
    m2_fwd_group_fwd(c, w, out, acc, x, &g);
}

void m2_fwd_lin_bwd(m2_ctx *c, m2_fwd_share *w, float *dx, int acc, const float *dy, const float *x,
                    const m2_tensor *W, const m2_tensor *b, int slot) {
    m2_fwd_group g = {1, {W}, {b}, {slot}};
    m2_fwd_group_bwd(c, w, dx, acc, dy, x, &g, NULL);
}

/* the active adapter has a pair at slot whose factors get gradients */
int m2_fwd_lora_trains(const m2_ctx *c, int slot) {
    const m2_adapter *a = c->a;
    return a && slot >= 0 && a->pairs[slot].A && a->params.trainable && a->params.g;
}
