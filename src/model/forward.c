/* Training forward/backward over packed batches (see forward.h). One allocation holds every
 * activation; layer l keeps its own copy when keep_acts == M2_ACTS_KEEP, otherwise all layers share
 * one (scoring ctxs; and M2_ACTS_RECOMPUTE ctxs, whose backward re-runs each layer's forward from
 * the kept residual stream first: the same ops on the same inputs, so the same bits).
 *
 * Threads. Every op of a layer is row-local except the attention, which is local to a sequence,
 * and the weight gradients, which sum over rows. So when the batch has at least as many
 * sequences as the pool has threads, the forward and the backward run as ONE pool job: share k
 * takes a contiguous run of whole sequences (balanced by estimated cost) and runs every layer on
 * its rows with single-threaded kernels: no barrier between ops, no GEMM split in halves.
 * Weight gradients of share 0 go into the arenas, those of share k > 0 into a shadow copy of the
 * trained arenas, added in share order afterwards: the bits depend only on the thread count.
 * Batches with fewer sequences than threads (one long sequence, decoding-sized batches) run
 * op by op with every op split over the pool. */
#include "model/forward.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/timer.h"

/* qkv rows are q | k | v (one GEMM when the three matrices are contiguous f32), gu rows gate | up */
typedef struct layer_acts {
    float *rstd1, *h1, *qkv, *lse, *att, *x1, *rstd2, *h2, *gu, *s;
} layer_acts;

struct m2_ctx {
    m2_model *m;
    int max_tokens, keep_acts, tmax;
    int N, n_seq;
    int *seq_len, *seq_off, *pos;
    int32_t *tokens;
    m2_adapter *a;
    m2_rng rng;
    float *X;                 /* [L+1, N, C] residual stream: X[l] is the input of layer l */
    layer_acts *la;           /* [L] */
    float *rstdf, *hidden, *logits, *dlogits, *dhidden;
    float *dX, *dh, *ds, *dgu, *datt, *dqkv;
    float *wscratch, *llse;
    int llse_valid;
    int dlogits_live;         /* 0: dlogits holds nothing since the forward (zeroed on first use) */
    int dhidden_live;         /* the same for dhidden */
    m2_attn_seq *aseq;
    void *block;
    size_t block_bytes;
    /* LoRA buffers, sized for the active adapter */
    float *lora_block; size_t lora_cap;
    float **lora_t;                   /* [L*7] */
    float *lora_dt, *lora_xd, *lora_dx;   /* scratch: [N, r], [N, lora_maxin] x2 */
    size_t lora_maxin;                    /* row stride of lora_xd / lora_dx (shares use disjoint rows) */
    int profile, no_logits, fwd_no_logits;
    m2_ctx_stats stats;
    int nthreads;             /* the model pool's thread count (fixed at creation) */
    int chunk;                /* > 0: logits never stored, computed in chunks of this many rows */
    size_t wscratch_floats;   /* per share: dequantised weight rows of non-f32 matrices */
    int drop_on;              /* this forward applies LoRA dropout */
    uint64_t drop_seed;       /* its masks: a hash of (seed, slot, element), drawn once per forward */
    /* weight-gradient shadows of shares 1..nthreads-1: [adapter grads | base grads] each */
    float *shadow; size_t shadow_cap, shadow_stride, shadow_base_off;
};

/* One share of a forward or backward: rows [n0, n1) holding sequences [s0, s1). */
typedef struct share {
    int n0, n1, s0, s1;
    int part;            /* 0: weight grads into the arenas; k > 0: into shadow k */
    m2_pool *pool;       /* ops split over this pool (NULL inside a row-parallel job) */
    float *wscratch;
    m2_ctx_stats stats;
    int failed;          /* the attention could not allocate its scratch: the pass is invalid */
} share;

/* rows [n0, n1) as one share run op by op on the ctx's pool (weight grads into the arenas) */
static share pool_share(const m2_ctx *c, int n0, int n1, int s0, int s1) {
    return (share){n0, n1, s0, s1, 0, c->m->pool, c->wscratch, {.gemm_s = 0}, 0};
}

void m2_ctx_want_logits(m2_ctx *c, int on) { c->no_logits = !on; }

void m2_ctx_profile(m2_ctx *c, int enable) {
    c->profile = enable;
    c->stats = (m2_ctx_stats){0};
}

const char *m2_op_name(int op) {
    static const char *names[M2_OP_N] = {"linear", "lora", "output", "attention", "rmsnorm",
                                         "rope", "swiglu", "copy", "logprob"};
    return op >= 0 && op < M2_OP_N ? names[op] : "?";
}

/* Runs stmt; when ctx c profiles, adds its seconds to the stats st->op_s[dir][op]. */
#define PROF_INTO(st, dir, op, stmt)                                             \
    do {                                                                         \
        double t_ = c->profile ? m2_now_s() : 0;                                 \
        stmt;                                                                    \
        if (c->profile) (st)->op_s[dir][op] += m2_now_s() - t_;                  \
    } while (0)
#define PROF(w, dir, op, stmt) PROF_INTO(&(w)->stats, dir, op, stmt)
m2_ctx_stats m2_ctx_get_stats(const m2_ctx *c) { return c->stats; }

static float *take(size_t *off, float *base, size_t cnt) {
    float *p = base ? base + *off : NULL;
    *off += (cnt + 15) & ~(size_t)15;
    return p;
}

/* Lays out (or only counts, when base == NULL) every buffer of a ctx. Returns floats needed.
 * la must hold n_layers entries. */
static size_t layout(const m2_model_config *cf, int N, int keep, m2_ctx *c, layer_acts *la, float *base) {
    size_t C = cf->dim, F = cf->ffn_dim, V = cf->vocab_size, L = cf->n_layers;
    size_t QD = (size_t)cf->n_heads * cf->head_dim, KD = (size_t)cf->n_kv_heads * cf->head_dim;
    size_t H = cf->n_heads, n = N, off = 0;
#define TAKE(count) take(&off, base, (size_t)(count))
    c->X = TAKE((L + 1) * n * C);
    size_t nl = keep == M2_ACTS_KEEP ? L : 1;
    for (size_t l = 0; l < nl; l++) {
        layer_acts *t = &la[l];
        t->rstd1 = TAKE(n); t->h1 = TAKE(n * C); t->qkv = TAKE(n * (QD + 2 * KD)); t->lse = TAKE(n * H);
        t->att = TAKE(n * QD); t->x1 = TAKE(n * C); t->rstd2 = TAKE(n); t->h2 = TAKE(n * C);
        t->gu = TAKE(n * 2 * F); t->s = TAKE(n * F);
    }
    for (size_t l = nl; l < L; l++) la[l] = la[0];
    size_t lr = c->chunk > 0 && (size_t)c->chunk < n ? (size_t)c->chunk : n;   /* logit rows kept */
    c->rstdf = TAKE(n); c->hidden = TAKE(n * C); c->logits = TAKE(lr * V); c->dlogits = TAKE(lr * V);
    c->dhidden = TAKE(n * C); c->llse = TAKE(n);
    if (keep) {
        c->dX = TAKE(n * C); c->dh = TAKE(n * C); c->ds = TAKE(n * F); c->dgu = TAKE(n * 2 * F);
        c->datt = TAKE(n * QD); c->dqkv = TAKE(n * (QD + 2 * KD));
    }
    size_t maxcols = C > F ? C : F;
    if (QD > maxcols) maxcols = QD;
    c->wscratch_floats = ((size_t)M2_WTILE_ROWS * maxcols + 15) & ~(size_t)15;
    c->wscratch = TAKE(c->wscratch_floats * (size_t)(c->nthreads > 0 ? c->nthreads : 1));
#undef TAKE
    return off;
}

size_t m2_ctx_bytes_for_config(const m2_model_config *cfg, int threads, int max_tokens, int keep_acts,
                               int logit_chunk_rows) {
    m2_ctx tmp = {0};
    tmp.nthreads = threads > 0 ? threads : 1;
    tmp.chunk = logit_chunk_rows > 0 ? logit_chunk_rows : 0;
    layer_acts *la = calloc((size_t)(cfg->n_layers > 0 ? cfg->n_layers : 1), sizeof *la);
    if (!la) return 0;
    size_t n = layout(cfg, max_tokens, keep_acts, &tmp, la, NULL);
    free(la);
    return n * sizeof(float);
}

size_t m2_ctx_bytes_for_chunked(m2_model *m, int max_tokens, int keep_acts, int logit_chunk_rows) {
    return m2_ctx_bytes_for_config(&m->cfg, m->pool ? m2_pool_threads(m->pool) : 1, max_tokens, keep_acts,
                                   logit_chunk_rows);
}

size_t m2_ctx_bytes_for(m2_model *m, int max_tokens, int keep_acts) {
    return m2_ctx_bytes_for_chunked(m, max_tokens, keep_acts, 0);
}

m2_ctx *m2_ctx_create(m2_model *m, int max_tokens, int keep_acts, m2_err *err) {
    return m2_ctx_create_chunked(m, max_tokens, keep_acts, 0, err);
}

m2_ctx *m2_ctx_create_chunked(m2_model *m, int max_tokens, int keep_acts, int logit_chunk_rows, m2_err *err) {
    if (max_tokens <= 0 || max_tokens > (1 << 24)) {
        m2_errorf(err, M2_EINVAL, "ctx: max_tokens must be in 1..16M (got %d)", max_tokens);
        return NULL;
    }
    if (keep_acts < 0 || keep_acts > M2_ACTS_RECOMPUTE) {
        m2_errorf(err, M2_EINVAL, "ctx: keep_acts must be 0, 1 (keep) or 2 (recompute) (got %d)", keep_acts);
        return NULL;
    }
    if (logit_chunk_rows < 0) {
        m2_errorf(err, M2_EINVAL, "ctx: logit chunk rows must be >= 0 (got %d)", logit_chunk_rows);
        return NULL;
    }
    m2_ctx *c = calloc(1, sizeof *c);
    if (!c) { m2_errorf(err, M2_ENOMEM, "ctx: out of memory"); return NULL; }
    c->m = m; c->max_tokens = max_tokens; c->keep_acts = keep_acts;
    c->nthreads = m->pool ? m2_pool_threads(m->pool) : 1;
    c->chunk = logit_chunk_rows;
    c->tmax = max_tokens < m->cfg.max_seq_len ? max_tokens : m->cfg.max_seq_len;
    int L = m->cfg.n_layers;
    c->la = calloc((size_t)L, sizeof *c->la);
    c->seq_len = calloc((size_t)max_tokens, sizeof(int));
    c->seq_off = calloc((size_t)max_tokens + 1, sizeof(int));
    c->pos = calloc((size_t)max_tokens, sizeof(int));
    c->tokens = calloc((size_t)max_tokens, sizeof(int32_t));
    c->aseq = calloc((size_t)max_tokens, sizeof(m2_attn_seq));
    c->lora_t = calloc((size_t)L * M2_LORA_N_TARGETS, sizeof(float *));
    size_t nf = c->la ? layout(&m->cfg, max_tokens, keep_acts, c, c->la, NULL) : 0;
    c->block_bytes = nf * sizeof(float);
    c->block = m2_malloc_aligned(c->block_bytes);
    if (!c->la || !c->seq_len || !c->seq_off || !c->pos || !c->tokens || !c->aseq || !c->lora_t || !c->block) {
        m2_errorf(err, M2_ENOMEM, "ctx: out of memory for %d tokens (%.1f MiB of activations)", max_tokens,
                  c->block_bytes / 1048576.0);
        m2_ctx_free(c);
        return NULL;
    }
    memset(c->block, 0, c->block_bytes);
    layout(&m->cfg, max_tokens, keep_acts, c, c->la, c->block);
    m2_rng_seed(&c->rng, 0x5eed);
    return c;
}

void m2_ctx_free(m2_ctx *c) {
    if (!c) return;
    free(c->la); free(c->aseq); free(c->seq_len); free(c->seq_off); free(c->pos); free(c->tokens);
    free(c->lora_t); free(c->block); free(c->lora_block); free(c->shadow);
    free(c);
}

size_t m2_ctx_bytes(const m2_ctx *c) { return c->block_bytes + c->lora_cap * sizeof(float); }
void m2_ctx_seed(m2_ctx *c, uint64_t seed) { m2_rng_seed(&c->rng, seed); }
m2_rng *m2_ctx_rng(m2_ctx *c) { return &c->rng; }
int m2_ctx_tokens(const m2_ctx *c) { return c->N; }
float *m2_ctx_logits(m2_ctx *c) { return c->chunk ? NULL : c->logits; }
float *m2_ctx_hidden(m2_ctx *c) { return c->hidden; }

/* dlogits is zeroed lazily: a forward only marks it empty, the first writer either overwrites it
 * (log-prob backward) or zeroes it first, and a backward with no writer skips the output
 * projection's input gradient. */
static float *dlogits_live(m2_ctx *c) {
    if (!c->dlogits_live && !c->fwd_no_logits)
        memset(c->dlogits, 0, (size_t)c->N * c->m->cfg.vocab_size * sizeof(float));
    c->dlogits_live = 1;
    return c->dlogits;
}

float *m2_ctx_dlogits(m2_ctx *c) { return c->chunk ? NULL : dlogits_live(c); }

float *m2_ctx_dhidden(m2_ctx *c) {
    if (!c->dhidden_live) memset(c->dhidden, 0, (size_t)c->N * c->m->cfg.dim * sizeof(float));
    c->dhidden_live = 1;
    return c->dhidden;
}

void m2_ctx_zero_dgrads(m2_ctx *c) { c->dlogits_live = c->dhidden_live = 0; }

/* Sizes the LoRA buffers for adapter a over N tokens (dropout masks are never stored: see
 * lora_drop_rows). */
static int lora_prepare(m2_ctx *c, m2_adapter *a, int N, m2_err *err) {
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
 * (this forward's seed, slot, element index n * in + i), so the forward and the backward
 * recompute it for any rows: no N x in mask per (layer, target) is kept, rows can be handled by
 * any thread, and the bits depend only on the seed. dst[r, in] = drop(x) for rows [n0, n0 + rows). */
static void lora_drop_rows(const m2_ctx *c, int slot, int in, int n0, int rows, const float *x, float *dst) {
    m2_dropout_apply(dst, x, (size_t)rows * in, (uint64_t)n0 * in, c->drop_seed ^ ((uint64_t)(slot + 1) << 52),
                     c->a->cfg.dropout);
}

/* Where share w puts a weight gradient g (a pointer into the adapter's or the base's grad arena):
 * share 0 into the arena itself, share k > 0 into the same offset of its shadow. */
static float *grad_of(const m2_ctx *c, const share *w, float *g) {
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
static void lora_fwd(m2_ctx *c, share *w, float *out, int ldo, const float *x, int slot) {
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
static void lora_bwd(m2_ctx *c, share *w, float *dx, const float *dy, int ldd, const float *x, int slot) {
    m2_adapter *a = c->a;
    if (!a || slot < 0 || !a->pairs[slot].A) return;
    m2_pool *pool = w->pool;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank, in = p->in, outd = p->out, N = w->n1 - w->n0, train = a->params.trainable && a->params.g;
    float s = a->scale, *t = c->lora_t[slot] + (size_t)w->n0 * r, *dt = c->lora_dt + (size_t)w->n0 * r;
    int drop = c->drop_on;
    float *xd = c->lora_xd + (size_t)w->n0 * c->lora_maxin, *dxm = c->lora_dx + (size_t)w->n0 * c->lora_maxin;
    if (train)   /* dB[out,r] += s dy^T t */
        m2_sgemm(pool, 1, 0, outd, r, N, s, dy, ldd, t, r, 1.0f, grad_of(c, w, p->dB), r);
    /* dt[N,r] = s dy B */
    m2_sgemm(pool, 0, 0, N, r, outd, s, dy, ldd, p->B, r, 0.0f, dt, r);
    const float *xin = x;
    if (drop && train) {   /* the forward's dropped input, recomputed */
        lora_drop_rows(c, slot, in, w->n0, N, x, xd);
        xin = xd;
    }
    if (train)   /* dA[r,in] += dt^T xin */
        m2_sgemm(pool, 1, 0, r, in, N, 1.0f, dt, r, xin, in, 1.0f, grad_of(c, w, p->dA), in);
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

/* A group of projections of the same input x whose outputs sit side by side in one buffer
 * (q | k | v, or gate | up, or a single matrix): W[i] is [rows_i, in], its output columns start
 * at the sum of the rows before it, out rows are ldo = sum of rows floats apart. */
typedef struct {
    int n;
    const m2_tensor *W[3], *b[3];
    int slot[3];
} proj_group;

/* When the group's f32 matrices lie back to back in memory (the model allocates q, k, v and gate,
 * up in that order in one arena), they ARE the concatenated [sum rows, in] matrix: one GEMM
 * instead of n, the shared input packed once. Returns it or NULL. */
static const float *group_cat(const proj_group *g) {
    if (g->n < 2) return NULL;
    for (int i = 0; i < g->n; i++) if (g->W[i]->dtype != M2_DT_F32) return NULL;
    for (int i = 1; i < g->n; i++) {
        const m2_tensor *p = g->W[i - 1];
        if ((const float *)p->data + (size_t)p->rows * p->cols != (const float *)g->W[i]->data) return NULL;
    }
    return g->W[0]->data;
}

static int group_rows(const proj_group *g) {
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
static void group_fwd(m2_ctx *c, share *w, float *out, int acc, const float *x, const proj_group *g) {
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

/* Backward of group_fwd for the members with need[i] (NULL = all) given dy[rows, ldo]:
 * dx[rows,in] (+)= sum_i dy_i W_i (overwritten when acc is 0; dx may be NULL) plus the LoRA paths;
 * weight/bias grads for trainable base tensors, LoRA grads for a trainable adapter. */
static void group_bwd(m2_ctx *c, share *w, float *dx, int acc, const float *dy, const float *x,
                      const proj_group *g, const int *need) {
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
        if (W->grad) m2_sgemm(pool, 1, 0, W->rows, in, N, 1.0f, dyi, ldd, x, in, 1.0f, grad_of(c, w, W->grad), in);
        if (b && b->grad) {
            float *bg = grad_of(c, w, b->grad);
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

static void lin_fwd(m2_ctx *c, share *w, float *out, int acc, const float *x, const m2_tensor *W,
                    const m2_tensor *b, int slot) {
    proj_group g = {1, {W}, {b}, {slot}};
    group_fwd(c, w, out, acc, x, &g);
}

static void lin_bwd(m2_ctx *c, share *w, float *dx, int acc, const float *dy, const float *x,
                    const m2_tensor *W, const m2_tensor *b, int slot) {
    proj_group g = {1, {W}, {b}, {slot}};
    group_bwd(c, w, dx, acc, dy, x, &g, NULL);
}

#define SLOT(l, t) ((l) * M2_LORA_N_TARGETS + (t))

/* the active adapter has a pair at slot whose factors get gradients */
static int lora_trains(const m2_ctx *c, int slot) {
    const m2_adapter *a = c->a;
    return a && slot >= 0 && a->pairs[slot].A && a->params.trainable && a->params.g;
}

/* The shares of the batch for a row-parallel pass: nthreads contiguous runs of whole sequences
 * with about equal estimated cost (linear layers per token + causal attention per token pair).
 * Returns the number of shares: nthreads, or 1 (one share over all rows, ops split over the pool)
 * when the batch has fewer sequences than threads or too few rows to be worth it. */
static int plan_shares(const m2_ctx *c, share *sh, int max_shares) {
    const m2_model_config *cf = &c->m->cfg;
    int T = c->nthreads < max_shares ? c->nthreads : max_shares;
    sh[0] = pool_share(c, 0, c->N, 0, c->n_seq);
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
        sh[k] = (share){c->seq_off[s0], c->seq_off[s], s0, s, k, NULL,
                        c->wscratch + (size_t)k * c->wscratch_floats, {.gemm_s = 0}, 0};
    }
    return T;
}

/* Adds the shares' profile: flop summed; GEMM time that of the slowest share (the shares overlap);
 * the time of each kind of op the mean over the shares, so the kinds add up to the mean share's
 * time, never more than the pass's wall time (the max per kind could: shares differ per kind). */
static void add_stats(m2_ctx *c, const share *sh, int n) {
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

#define MAX_SHARES 64

typedef struct { m2_ctx *c; share *sh; } share_job;

/* Layer l's forward over the share's rows: from X[l] into the layer's activations and X[l+1]
 * (recompute: out = 0, X[l+1] is kept already; the down projection then runs only when its LoRA
 * pair needs the intermediate product for the backward, rewriting X[l+1] with the same bits).
 * Returns -1 when the attention could not allocate its scratch. */
static int layer_forward(m2_ctx *c, share *w, int l, int out) {
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    int C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, QKV = QD + 2 * KD, N = w->n1 - w->n0;
    size_t NT = c->N, r0 = w->n0;
    m2_pool *pool = w->pool;
    const m2_layer *ly = &m->layers[l];
    layer_acts *A = &c->la[l];
    float *xin = c->X + ((size_t)l * NT + r0) * C, *xout = c->X + ((size_t)(l + 1) * NT + r0) * C;
    float *qkv = A->qkv + r0 * QKV, *q = qkv, *k = q + QD;
    float *h1 = A->h1 + r0 * C, *att = A->att + r0 * QD, *x1 = A->x1 + r0 * C, *h2 = A->h2 + r0 * C;
    float *gu = A->gu + r0 * 2 * F, *s = A->s + r0 * F;
    PROF(w, 0, M2_OP_NORM, m2_rmsnorm_forward(h1, A->rstd1 + r0, xin, ly->attn_norm->data, N, C, cf->norm_eps, pool));
    proj_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
    group_fwd(c, w, qkv, 0, h1, &gqkv);
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
    lin_fwd(c, w, x1, 1, att, ly->wo, NULL, SLOT(l, 3));
    PROF(w, 0, M2_OP_NORM, m2_rmsnorm_forward(h2, A->rstd2 + r0, x1, ly->ffn_norm->data, N, C, cf->norm_eps, pool));
    proj_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
    group_fwd(c, w, gu, 0, h2, &ggu);
    PROF(w, 0, M2_OP_SWIGLU, m2_swiglu_forward_rows(s, gu, N, F, pool));
    if (!out && !(c->a && c->a->pairs[SLOT(l, 6)].A)) return 0;
    PROF(w, 0, M2_OP_COPY, m2_copy(xout, x1, (long)N * C, pool));
    lin_fwd(c, w, xout, 1, s, ly->wd, NULL, SLOT(l, 6));
    return 0;
}

/* The forward of the share's rows: embedding, every layer, final norm, output projection. */
static void forward_share(m2_ctx *c, share *w) {
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
        lin_fwd(c, w, c->logits + r0 * cf->vocab_size, 0, c->hidden + r0 * C, m->output, NULL, -1);
}

static void forward_part(void *vp, long b, long e, int tid) {
    share_job *j = vp;
    for (long k = b; k < e; k++) forward_share(j->c, &j->sh[k]);
}

int m2_forward(m2_ctx *c, const m2_batch *b, m2_adapter *a, int train, m2_err *err) {
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
        if (lora_prepare(c, a, (int)N, err)) return -1;
    }
    c->N = (int)N; c->n_seq = b->n_seq; c->a = a;
    c->seq_off[0] = 0;
    for (int s = 0; s < b->n_seq; s++) {
        c->seq_len[s] = b->seq_len[s];
        c->seq_off[s + 1] = c->seq_off[s] + b->seq_len[s];
        for (int i = 0; i < b->seq_len[s]; i++) c->pos[c->seq_off[s] + i] = i;
    }
    memcpy(c->tokens, b->tokens, N * sizeof(int32_t));
    c->drop_on = a && train && a->cfg.dropout > 0;
    if (c->drop_on) c->drop_seed = m2_rng_u64(&c->rng);   /* one draw per forward: the masks' seed */
    share sh[MAX_SHARES];
    int ns = plan_shares(c, sh, MAX_SHARES);
    if (ns == 1) forward_share(c, &sh[0]);
    else {
        share_job j = {c, sh};
        m2_pool_for(m->pool, ns, forward_part, &j);
    }
    if (c->profile) add_stats(c, sh, ns);
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

/* The backward of the share's rows: output projection, final norm, every layer (down to the
 * layer-0 input gradient when something needs it). */
static void backward_share(m2_ctx *c, share *w) {
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
        lin_bwd(c, w, dh, c->dhidden_live, c->dlogits + r0 * cf->vocab_size, c->hidden + r0 * C, m->output, NULL, -1);
    PROF(w, 1, M2_OP_NORM, m2_rmsnorm_backward_set(dX, grad_of(c, w, m->out_norm->grad), dh,
                                                   c->X + ((size_t)L * NT + r0) * C, m->out_norm->data, c->rstdf + r0,
                                                   N, C, pool));
    for (int l = L - 1; l >= 0; l--) {
        /* a recompute ctx kept only X[l]: the layer's activations again, the same bits */
        if (c->keep_acts == M2_ACTS_RECOMPUTE && layer_forward(c, w, l, 0)) { w->failed = 1; return; }
        const m2_layer *ly = &m->layers[l];
        layer_acts *A = &c->la[l];
        float *xin = c->X + ((size_t)l * NT + r0) * C, *h1 = A->h1 + r0 * C, *att = A->att + r0 * QD;
        float *x1 = A->x1 + r0 * C, *h2 = A->h2 + r0 * C, *gu = A->gu + r0 * 2 * F, *s = A->s + r0 * F;
        /* dX = grad wrt the layer output; the residual passes it on unchanged, so dX += the FFN
         * path turns it into the grad wrt x1, and += the attention path into the grad wrt xin */
        lin_bwd(c, w, ds, 0, dX, s, ly->wd, NULL, SLOT(l, 6));
        PROF(w, 1, M2_OP_SWIGLU, m2_swiglu_backward_rows_set(dgu, ds, gu, N, F, pool));
        proj_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
        group_bwd(c, w, dh, 0, dgu, h2, &ggu, NULL);
        PROF(w, 1, M2_OP_NORM,
             m2_rmsnorm_backward(dX, grad_of(c, w, ly->ffn_norm->grad), dh, x1, ly->ffn_norm->data, A->rstd2 + r0, N, C, pool));
        /* below layer 0 only the embedding could use the input grad: skip those GEMMs when it is
         * frozen, and skip dq/dk/dv where nothing (input grad, base grads, trainable LoRA) uses them */
        int need_dx = l > 0 || m->tok_embd->grad || ly->attn_norm->grad;
        int need_q = need_dx || ly->wq->grad || (ly->bq && ly->bq->grad) || lora_trains(c, SLOT(l, 0));
        int need_k = need_dx || ly->wk->grad || (ly->bk && ly->bk->grad) || lora_trains(c, SLOT(l, 1));
        int need_v = need_dx || ly->wv->grad || (ly->bv && ly->bv->grad) || lora_trains(c, SLOT(l, 2));
        if (!need_q && !need_k && !need_v) {
            /* nothing below the attention output projection needs a gradient */
            lin_bwd(c, w, NULL, 0, dX, att, ly->wo, NULL, SLOT(l, 3));
            continue;
        }
        lin_bwd(c, w, datt, 0, dX, att, ly->wo, NULL, SLOT(l, 3));
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
        proj_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
        int need[3] = {need_q, need_k, need_v};
        group_bwd(c, w, dh1, 0, dqkv, h1, &gqkv, need);
        if (dh1)
            PROF(w, 1, M2_OP_NORM, m2_rmsnorm_backward(dX, grad_of(c, w, ly->attn_norm->grad), dh1, xin, ly->attn_norm->data,
                                                       A->rstd1 + r0, N, C, pool));
    }
}

static void backward_part(void *vp, long b, long e, int tid) {
    share_job *j = vp;
    for (long k = b; k < e; k++) backward_share(j->c, &j->sh[k]);
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
static int shadow_prepare(m2_ctx *c, int ns) {
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

static void shadow_reduce(m2_ctx *c, int ns) {
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

int m2_backward(m2_ctx *c, m2_err *err) {
    if (!c->keep_acts) return m2_errorf(err, M2_EINVAL, "backward: ctx was created without activations (keep_acts = 0)");
    if (c->N <= 0) return m2_errorf(err, M2_EINVAL, "backward: no forward to differentiate");
    m2_model *m = c->m;
    share sh[MAX_SHARES];
    int ns = plan_shares(c, sh, MAX_SHARES);
    if (ns > 1 && shadow_prepare(c, ns)) ns = plan_shares(c, sh, 1);
    if (ns == 1) backward_share(c, &sh[0]);
    else {
        share_job j = {c, sh};
        m2_pool_for(m->pool, ns, backward_part, &j);
        PROF_INTO(&c->stats, 1, M2_OP_COPY, shadow_reduce(c, ns));
    }
    if (c->profile) add_stats(c, sh, ns);
    for (int k = 0; k < ns; k++)
        if (sh[k].failed)   /* the gradients hold a partial sum: the caller must not step on them */
            return m2_errorf(err, M2_ENOMEM, "backward: out of memory for the attention scratch; gradients are incomplete");
    if (m->tok_embd->grad) m2_embedding_backward(m->tok_embd->grad, c->dX, c->tokens, c->N, m->cfg.dim);
    return 0;
}


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
    share w = pool_share(c, r0, r0 + rows, 0, 0);
    lin_fwd(c, &w, c->logits, 0, c->hidden + (size_t)r0 * c->m->cfg.dim, c->m->output, NULL, -1);
    if (c->profile) add_stats(c, &w, 1);
}

static void chunk_fold(m2_ctx *c, int r0, int rows, const float *g) {
    share w = pool_share(c, r0, r0 + rows, 0, 0);
    size_t C = c->m->cfg.dim;
    lin_bwd(c, &w, m2_ctx_dhidden(c) + (size_t)r0 * C, 1, g, c->hidden + (size_t)r0 * C, c->m->output, NULL, -1);
    if (c->profile) add_stats(c, &w, 1);
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
            m2_kl_backward(grad_a ? dlogits_live(a) : NULL, grad_b ? dlogits_live(b) : NULL, weight, a->logits,
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
            ga = a->chunk ? a->dlogits : dlogits_live(a) + (size_t)r0 * V;
            if (a->chunk) memset(ga, 0, (size_t)rows * V * sizeof(float));
        }
        if (grad_b) {
            gb = b->chunk ? b->dlogits : dlogits_live(b) + (size_t)r0 * V;
            if (b->chunk) memset(gb, 0, (size_t)rows * V * sizeof(float));
        }
        m2_kl_backward(ga, gb, weight + r0, la, lb, rows, V, a->m->pool);
        if (ga && a->chunk) chunk_fold(a, r0, rows, ga);
        if (gb && b->chunk) chunk_fold(b, r0, rows, gb);
    }
}
