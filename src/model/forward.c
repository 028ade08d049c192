/* Training forward/backward over packed batches (see forward.h). One allocation holds every
 * activation; layer l keeps its own copy when keep_acts, otherwise all layers share one. */
#include "model/forward.h"
#include <cblas.h>
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
    int train;
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
    float **lora_t, **lora_mask;      /* [L*7] */
    float *lora_dt, *lora_xd, *lora_dx;
    int profile, no_logits, fwd_no_logits;
    m2_ctx_stats stats;
};

void m2_ctx_want_logits(m2_ctx *c, int on) { c->no_logits = !on; }

void m2_ctx_profile(m2_ctx *c, int enable) {
    c->profile = enable;
    c->stats.gemm_s = c->stats.gemm_flop = 0;
}
m2_ctx_stats m2_ctx_get_stats(const m2_ctx *c) { return c->stats; }

static float *take(size_t *off, float *base, size_t cnt) {
    float *p = base ? base + *off : NULL;
    *off += (cnt + 15) & ~(size_t)15;
    return p;
}

/* Lays out (or only counts, when base == NULL) every buffer of a ctx. Returns floats needed.
 * la must hold n_layers entries. */
static size_t layout(m2_model *m, int N, int keep, m2_ctx *c, layer_acts *la, float *base) {
    const m2_model_config *cf = &m->cfg;
    size_t C = cf->dim, F = cf->ffn_dim, V = cf->vocab_size, L = cf->n_layers;
    size_t QD = (size_t)cf->n_heads * cf->head_dim, KD = (size_t)cf->n_kv_heads * cf->head_dim;
    size_t H = cf->n_heads, n = N, off = 0;
#define TAKE(count) take(&off, base, (size_t)(count))
    c->X = TAKE((L + 1) * n * C);
    size_t nl = keep ? L : 1;
    for (size_t l = 0; l < nl; l++) {
        layer_acts *t = &la[l];
        t->rstd1 = TAKE(n); t->h1 = TAKE(n * C); t->qkv = TAKE(n * (QD + 2 * KD)); t->lse = TAKE(n * H);
        t->att = TAKE(n * QD); t->x1 = TAKE(n * C); t->rstd2 = TAKE(n); t->h2 = TAKE(n * C);
        t->gu = TAKE(n * 2 * F); t->s = TAKE(n * F);
    }
    for (size_t l = nl; l < L; l++) la[l] = la[0];
    c->rstdf = TAKE(n); c->hidden = TAKE(n * C); c->logits = TAKE(n * V); c->dlogits = TAKE(n * V);
    c->dhidden = TAKE(n * C); c->llse = TAKE(n);
    if (keep) {
        c->dX = TAKE(n * C); c->dh = TAKE(n * C); c->ds = TAKE(n * F); c->dgu = TAKE(n * 2 * F);
        c->datt = TAKE(n * QD); c->dqkv = TAKE(n * (QD + 2 * KD));
    }
    size_t maxcols = C > F ? C : F;
    if (QD > maxcols) maxcols = QD;
    c->wscratch = TAKE((size_t)M2_WTILE_ROWS * maxcols);
#undef TAKE
    return off;
}

size_t m2_ctx_bytes_for(m2_model *m, int max_tokens, int keep_acts) {
    m2_ctx tmp;
    layer_acts *la = calloc((size_t)m->cfg.n_layers, sizeof *la);
    if (!la) return 0;
    size_t n = layout(m, max_tokens, keep_acts, &tmp, la, NULL);
    free(la);
    return n * sizeof(float);
}

m2_ctx *m2_ctx_create(m2_model *m, int max_tokens, int keep_acts, m2_err *err) {
    if (max_tokens <= 0 || max_tokens > (1 << 24)) {
        m2_errorf(err, M2_EINVAL, "ctx: max_tokens must be in 1..16M (got %d)", max_tokens);
        return NULL;
    }
    m2_ctx *c = calloc(1, sizeof *c);
    if (!c) { m2_errorf(err, M2_ENOMEM, "ctx: out of memory"); return NULL; }
    c->m = m; c->max_tokens = max_tokens; c->keep_acts = keep_acts;
    c->tmax = max_tokens < m->cfg.max_seq_len ? max_tokens : m->cfg.max_seq_len;
    int L = m->cfg.n_layers;
    c->la = calloc((size_t)L, sizeof *c->la);
    c->seq_len = calloc((size_t)max_tokens, sizeof(int));
    c->seq_off = calloc((size_t)max_tokens + 1, sizeof(int));
    c->pos = calloc((size_t)max_tokens, sizeof(int));
    c->tokens = calloc((size_t)max_tokens, sizeof(int32_t));
    c->aseq = calloc((size_t)max_tokens, sizeof(m2_attn_seq));
    c->lora_t = calloc((size_t)L * M2_LORA_N_TARGETS, sizeof(float *));
    c->lora_mask = calloc((size_t)L * M2_LORA_N_TARGETS, sizeof(float *));
    size_t nf = c->la ? layout(m, max_tokens, keep_acts, c, c->la, NULL) : 0;
    c->block_bytes = nf * sizeof(float);
    c->block = m2_malloc_aligned(c->block_bytes);
    if (!c->la || !c->seq_len || !c->seq_off || !c->pos || !c->tokens || !c->aseq || !c->lora_t || !c->lora_mask || !c->block) {
        m2_errorf(err, M2_ENOMEM, "ctx: out of memory for %d tokens (%.1f MiB of activations)", max_tokens,
                  c->block_bytes / 1048576.0);
        m2_ctx_free(c);
        return NULL;
    }
    memset(c->block, 0, c->block_bytes);
    layout(m, max_tokens, keep_acts, c, c->la, c->block);
    m2_rng_seed(&c->rng, 0x5eed);
    return c;
}

void m2_ctx_free(m2_ctx *c) {
    if (!c) return;
    free(c->la); free(c->aseq); free(c->seq_len); free(c->seq_off); free(c->pos); free(c->tokens);
    free(c->lora_t); free(c->lora_mask); free(c->block); free(c->lora_block);
    free(c);
}

size_t m2_ctx_bytes(const m2_ctx *c) { return c->block_bytes + c->lora_cap * sizeof(float); }
void m2_ctx_seed(m2_ctx *c, uint64_t seed) { m2_rng_seed(&c->rng, seed); }
m2_rng *m2_ctx_rng(m2_ctx *c) { return &c->rng; }
int m2_ctx_tokens(const m2_ctx *c) { return c->N; }
float *m2_ctx_logits(m2_ctx *c) { return c->logits; }
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

float *m2_ctx_dlogits(m2_ctx *c) { return dlogits_live(c); }

float *m2_ctx_dhidden(m2_ctx *c) {
    if (!c->dhidden_live) memset(c->dhidden, 0, (size_t)c->N * c->m->cfg.dim * sizeof(float));
    c->dhidden_live = 1;
    return c->dhidden;
}

void m2_ctx_zero_dgrads(m2_ctx *c) { c->dlogits_live = c->dhidden_live = 0; }

/* Sizes the LoRA buffers for adapter a over N tokens. */
static int lora_prepare(m2_ctx *c, m2_adapter *a, int N, int train, m2_err *err) {
    int L = c->m->cfg.n_layers, r = a->cfg.rank;
    int drop = train && a->cfg.dropout > 0;
    size_t need = 0, maxin = 0;
    for (int s = 0; s < L * M2_LORA_N_TARGETS; s++) {
        m2_lora_pair *p = &a->pairs[s];
        if (!p->A) continue;
        if (c->keep_acts || need == 0) need += ((size_t)N * r + 15) & ~(size_t)15;
        if (drop && c->keep_acts) need += ((size_t)N * p->in + 15) & ~(size_t)15;
        if ((size_t)p->in > maxin) maxin = p->in;
        if ((size_t)p->out > maxin) maxin = p->out;
    }
    if (drop && !c->keep_acts) need += ((size_t)N * maxin + 15) & ~(size_t)15;
    size_t scratch = ((size_t)N * r + 15 + 2 * ((size_t)N * maxin + 15)) & ~(size_t)15;
    need += scratch + 64;
    if (need > c->lora_cap) {
        free(c->lora_block);
        c->lora_block = m2_malloc_aligned(need * sizeof(float));
        if (!c->lora_block) { c->lora_cap = 0; return m2_errorf(err, M2_ENOMEM, "ctx: out of memory for LoRA activations"); }
        c->lora_cap = need;
    }
    float *p0 = c->lora_block, *shared_t = NULL, *shared_m = NULL;
    for (int s = 0; s < L * M2_LORA_N_TARGETS; s++) {
        m2_lora_pair *p = &a->pairs[s];
        c->lora_t[s] = c->lora_mask[s] = NULL;
        if (!p->A) continue;
        if (c->keep_acts || !shared_t) {
            c->lora_t[s] = p0; p0 += ((size_t)N * r + 15) & ~(size_t)15;
            if (!c->keep_acts) shared_t = c->lora_t[s];
        } else c->lora_t[s] = shared_t;
        if (drop) {
            if (c->keep_acts) { c->lora_mask[s] = p0; p0 += ((size_t)N * p->in + 15) & ~(size_t)15; }
            else {
                if (!shared_m) { shared_m = p0; p0 += ((size_t)N * maxin + 15) & ~(size_t)15; }
                c->lora_mask[s] = shared_m;
            }
        }
    }
    c->lora_dt = p0; p0 += ((size_t)N * r + 15) & ~(size_t)15;
    c->lora_xd = p0; p0 += ((size_t)N * maxin + 15) & ~(size_t)15;
    c->lora_dx = p0;
    return 0;
}

/* out[N, ldo] slice += scale * drop(x) A^T B^T for the active adapter's pair at slot (if any) */
static void lora_fwd(m2_ctx *c, float *out, int ldo, const float *x, int slot, int N) {
    m2_adapter *a = c->a;
    if (!a || slot < 0 || !a->pairs[slot].A) return;
    m2_pool *pool = c->m->pool;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank, in = p->in, outd = p->out;
    const float *xin = x;
    float *mask = c->lora_mask[slot];
    if (mask) {
        float drop = a->cfg.dropout, keep = 1.0f / (1.0f - drop);
        size_t n = (size_t)N * in;
        for (size_t i = 0; i < n; i++) mask[i] = m2_rng_uniform(&c->rng) < drop ? 0.0f : keep;
        for (size_t i = 0; i < n; i++) c->lora_xd[i] = x[i] * mask[i];
        xin = c->lora_xd;
    }
    float *t = c->lora_t[slot];
    m2_sgemm(pool, 0, 1, N, r, in, 1.0f, xin, in, p->A, in, 0.0f, t, r);
    m2_sgemm(pool, 0, 1, N, outd, r, a->scale, t, r, p->B, r, 1.0f, out, ldo);
}

/* LoRA backward for the pair at slot given dy (rows ldd apart): dA, dB when trainable, dx += when dx */
static void lora_bwd(m2_ctx *c, float *dx, const float *dy, int ldd, const float *x, int slot, int N) {
    m2_adapter *a = c->a;
    if (!a || slot < 0 || !a->pairs[slot].A) return;
    m2_pool *pool = c->m->pool;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank, in = p->in, outd = p->out, train = a->params.trainable && a->params.g;
    float s = a->scale, *t = c->lora_t[slot], *dt = c->lora_dt, *mask = c->lora_mask[slot];
    if (train)   /* dB[out,r] += s dy^T t */
        m2_sgemm(pool, 1, 0, outd, r, N, s, dy, ldd, t, r, 1.0f, p->dB, r);
    /* dt[N,r] = s dy B */
    m2_sgemm(pool, 0, 0, N, r, outd, s, dy, ldd, p->B, r, 0.0f, dt, r);
    const float *xin = x;
    if (mask) {
        size_t n = (size_t)N * in;
        for (size_t i = 0; i < n; i++) c->lora_xd[i] = x[i] * mask[i];
        xin = c->lora_xd;
    }
    if (train)   /* dA[r,in] += dt^T xin */
        m2_sgemm(pool, 1, 0, r, in, N, 1.0f, dt, r, xin, in, 1.0f, p->dA, in);
    if (!dx) return;
    if (!mask)
        m2_sgemm(pool, 0, 0, N, in, r, 1.0f, dt, r, p->A, in, 1.0f, dx, in);
    else {
        m2_sgemm(pool, 0, 0, N, in, r, 1.0f, dt, r, p->A, in, 0.0f, c->lora_dx, in);
        size_t n = (size_t)N * in;
        for (size_t i = 0; i < n; i++) dx[i] += c->lora_dx[i] * mask[i];
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

/* out[N, ldo] (+)= x [W_0; W_1; ..]^T (+ biases) (+ each pair's LoRA path) */
static void group_fwd(m2_ctx *c, float *out, int acc, const float *x, const proj_group *g, int N) {
    double t0 = c->profile ? m2_now_s() : 0;
    m2_pool *pool = c->m->pool;
    int ldo = group_rows(g), in = g->W[0]->cols;
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
        m2_sgemm(pool, 0, 1, N, ldo, in, 1.0f, x, in, cat, in, acc ? 1.0f : 0.0f, out, ldo);
    } else
        for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++)
            m2_matmul_forward_wld(out + off, ldo, x, m2_tensor_wref(g->W[i]), g->b[i] ? g->b[i]->data : NULL, N,
                                  acc, c->wscratch, pool);
    for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++) lora_fwd(c, out + off, ldo, x, g->slot[i], N);
    if (c->profile) {
        c->stats.gemm_s += m2_now_s() - t0;
        for (int i = 0; i < g->n; i++) c->stats.gemm_flop += lin_flop(c, g->W[i], g->slot[i], N, 0);
    }
}

/* Backward of group_fwd for the members with need[i] (NULL = all) given dy[N, ldo]:
 * dx[N,in] (+)= sum_i dy_i W_i (overwritten when acc is 0; dx may be NULL) plus the LoRA paths;
 * weight/bias grads for trainable base tensors, LoRA grads for a trainable adapter. */
static void group_bwd(m2_ctx *c, float *dx, int acc, const float *dy, const float *x, const proj_group *g,
                      const int *need, int N) {
    double t0 = c->profile ? m2_now_s() : 0;
    m2_pool *pool = c->m->pool;
    int ldd = group_rows(g), in = g->W[0]->cols, all = 1;
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
        if (dx && !cat) { m2_matmul_dinp_wld(dx, dyi, ldd, m2_tensor_wref(W), N, acc, c->wscratch, pool); acc = 1; }
        if (W->grad) m2_sgemm(pool, 1, 0, W->rows, in, N, 1.0f, dyi, ldd, x, in, 1.0f, W->grad, in);
        if (b && b->grad)
            for (int n = 0; n < N; n++) m2_acc(b->grad, dyi + (size_t)n * ldd, W->rows);
    }
    for (int i = 0, off = 0; i < g->n; off += g->W[i]->rows, i++)
        if (!need || need[i]) lora_bwd(c, dx, dy + off, ldd, x, g->slot[i], N);
    if (c->profile) {
        c->stats.gemm_s += m2_now_s() - t0;
        for (int i = 0; i < g->n; i++)
            if (!need || need[i]) c->stats.gemm_flop += lin_flop(c, g->W[i], g->slot[i], N, dx ? 2 : 1);
    }
}

static void lin_fwd(m2_ctx *c, float *out, int acc, const float *x, const m2_tensor *W, const m2_tensor *b,
                    int slot, int N) {
    proj_group g = {1, {W}, {b}, {slot}};
    group_fwd(c, out, acc, x, &g, N);
}

static void lin_bwd(m2_ctx *c, float *dx, int acc, const float *dy, const float *x, const m2_tensor *W,
                    const m2_tensor *b, int slot, int N) {
    proj_group g = {1, {W}, {b}, {slot}};
    group_bwd(c, dx, acc, dy, x, &g, NULL, N);
}

#define SLOT(l, t) ((l) * M2_LORA_N_TARGETS + (t))

/* the active adapter has a pair at slot whose factors get gradients */
static int lora_trains(const m2_ctx *c, int slot) {
    const m2_adapter *a = c->a;
    return a && slot >= 0 && a->pairs[slot].A && a->params.trainable && a->params.g;
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
        if (lora_prepare(c, a, (int)N, train, err)) return -1;
    }
    c->N = (int)N; c->n_seq = b->n_seq; c->a = a; c->train = train;
    c->seq_off[0] = 0;
    for (int s = 0; s < b->n_seq; s++) {
        c->seq_len[s] = b->seq_len[s];
        c->seq_off[s + 1] = c->seq_off[s] + b->seq_len[s];
        for (int i = 0; i < b->seq_len[s]; i++) c->pos[c->seq_off[s] + i] = i;
    }
    memcpy(c->tokens, b->tokens, N * sizeof(int32_t));

    int C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, QKV = QD + 2 * KD, L = cf->n_layers;
    m2_pool *pool = m->pool;
    m2_embedding_forward(c->X, c->tokens, m2_tensor_wref(m->tok_embd), (int)N);
    for (int l = 0; l < L; l++) {
        const m2_layer *ly = &m->layers[l];
        layer_acts *A = &c->la[l];
        float *xin = c->X + (size_t)l * N * C, *xout = c->X + (size_t)(l + 1) * N * C;
        float *q = A->qkv, *k = q + QD, *v = k + KD;
        m2_rmsnorm_forward(A->h1, A->rstd1, xin, ly->attn_norm->data, (int)N, C, cf->norm_eps, pool);
        proj_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
        group_fwd(c, A->qkv, 0, A->h1, &gqkv, (int)N);
        m2_rope_forward(q, c->pos, m->rope_freq, (int)N, H, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        m2_rope_forward(k, c->pos, m->rope_freq, (int)N, KVH, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        for (int s = 0; s < c->n_seq; s++) {
            size_t o = c->seq_off[s];
            int len = c->seq_len[s];
            m2_attn_seq as = {.q = q + o * QKV, .k = k + o * QKV, .v = v + o * QKV, .out = A->att + o * QD,
                              .lse = A->lse + o * H, .nq = len, .nkv = len, .ldo = QD};
            c->aseq[s] = as;
        }
        m2_attention_forward(c->aseq, c->n_seq, H, KVH, D, QKV, QKV, pool);
        /* residual: x1 = xin + att Wo^T, accumulated by the GEMM (beta 1) */
        m2_copy(A->x1, xin, N * C, pool);
        lin_fwd(c, A->x1, 1, A->att, ly->wo, NULL, SLOT(l, 3), (int)N);
        m2_rmsnorm_forward(A->h2, A->rstd2, A->x1, ly->ffn_norm->data, (int)N, C, cf->norm_eps, pool);
        proj_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
        group_fwd(c, A->gu, 0, A->h2, &ggu, (int)N);
        m2_swiglu_forward_rows(A->s, A->gu, (int)N, F, pool);
        m2_copy(xout, A->x1, N * C, pool);
        lin_fwd(c, xout, 1, A->s, ly->wd, NULL, SLOT(l, 6), (int)N);
    }
    m2_rmsnorm_forward(c->hidden, c->rstdf, c->X + (size_t)L * N * C, m->out_norm->data, (int)N, C,
                       cf->norm_eps, pool);
    c->fwd_no_logits = c->no_logits;
    if (!c->no_logits) lin_fwd(c, c->logits, 0, c->hidden, m->output, NULL, -1, (int)N);
    m2_ctx_zero_dgrads(c);
    c->llse_valid = 0;
    return 0;
}

int m2_backward(m2_ctx *c, m2_err *err) {
    if (!c->keep_acts) return m2_errorf(err, M2_EINVAL, "backward: ctx was created without activations (keep_acts = 0)");
    if (c->N <= 0) return m2_errorf(err, M2_EINVAL, "backward: no forward to differentiate");
    m2_model *m = c->m;
    const m2_model_config *cf = &m->cfg;
    int N = c->N, C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, QKV = QD + 2 * KD, L = cf->n_layers;
    m2_pool *pool = m->pool;
    size_t NC = (size_t)N * C;
    /* d hidden = dhidden + dlogits . W_out (each only when something wrote it since the forward) */
    int logits_grad = !c->fwd_no_logits && c->dlogits_live;
    if (c->dhidden_live) m2_copy(c->dh, c->dhidden, (long)NC, pool);
    else if (!logits_grad) memset(c->dh, 0, NC * sizeof(float));
    if (logits_grad) lin_bwd(c, c->dh, c->dhidden_live, c->dlogits, c->hidden, m->output, NULL, -1, N);
    m2_rmsnorm_backward_set(c->dX, m->out_norm->grad, c->dh, c->X + (size_t)L * NC, m->out_norm->data,
                            c->rstdf, N, C, pool);
    for (int l = L - 1; l >= 0; l--) {
        const m2_layer *ly = &m->layers[l];
        layer_acts *A = &c->la[l];
        float *xin = c->X + (size_t)l * NC;
        /* dX = grad wrt the layer output; the residual passes it on unchanged, so dX += the FFN
         * path turns it into the grad wrt x1, and += the attention path into the grad wrt xin */
        lin_bwd(c, c->ds, 0, c->dX, A->s, ly->wd, NULL, SLOT(l, 6), N);
        m2_swiglu_backward_rows_set(c->dgu, c->ds, A->gu, N, F, pool);
        proj_group ggu = {2, {ly->wg, ly->wu}, {NULL, NULL}, {SLOT(l, 4), SLOT(l, 5)}};
        group_bwd(c, c->dh, 0, c->dgu, A->h2, &ggu, NULL, N);
        m2_rmsnorm_backward(c->dX, ly->ffn_norm->grad, c->dh, A->x1, ly->ffn_norm->data, A->rstd2, N, C, pool);
        /* below layer 0 only the embedding could use the input grad: skip those GEMMs when it is
         * frozen, and skip dq/dk/dv where nothing (input grad, base grads, trainable LoRA) uses them */
        int need_dx = l > 0 || m->tok_embd->grad || ly->attn_norm->grad;
        int need_q = need_dx || ly->wq->grad || (ly->bq && ly->bq->grad) || lora_trains(c, SLOT(l, 0));
        int need_k = need_dx || ly->wk->grad || (ly->bk && ly->bk->grad) || lora_trains(c, SLOT(l, 1));
        int need_v = need_dx || ly->wv->grad || (ly->bv && ly->bv->grad) || lora_trains(c, SLOT(l, 2));
        if (!need_q && !need_k && !need_v) {
            /* nothing below the attention output projection needs a gradient */
            lin_bwd(c, NULL, 0, c->dX, A->att, ly->wo, NULL, SLOT(l, 3), N);
            continue;
        }
        lin_bwd(c, c->datt, 0, c->dX, A->att, ly->wo, NULL, SLOT(l, 3), N);
        /* dq | dk | dv side by side like q | k | v; the attention writes them (no zeroing pass) */
        float *q = A->qkv, *k = q + QD, *v = k + KD, *dq = c->dqkv, *dk = dq + QD, *dv = dk + KD;
        for (int s = 0; s < c->n_seq; s++) {
            size_t o = c->seq_off[s];
            int len = c->seq_len[s];
            m2_attn_seq as = {.q = q + o * QKV, .k = k + o * QKV, .v = v + o * QKV,
                              .out = A->att + o * QD, .lse = A->lse + o * H, .dout = c->datt + o * QD,
                              .dq = need_q ? dq + o * QKV : NULL, .dk = need_k ? dk + o * QKV : NULL,
                              .dv = need_v ? dv + o * QKV : NULL, .nq = len, .nkv = len, .ldo = QD,
                              .set_grads = 1};
            c->aseq[s] = as;
        }
        m2_attention_backward(c->aseq, c->n_seq, H, KVH, D, QKV, QKV, pool);
        if (need_q) m2_rope_backward(dq, c->pos, m->rope_freq, N, H, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        if (need_k) m2_rope_backward(dk, c->pos, m->rope_freq, N, KVH, D, QKV, cf->rope_layout, &m->rope_tab, pool);
        float *dh1 = need_dx ? c->dh : NULL;
        proj_group gqkv = {3, {ly->wq, ly->wk, ly->wv}, {ly->bq, ly->bk, ly->bv}, {SLOT(l, 0), SLOT(l, 1), SLOT(l, 2)}};
        int need[3] = {need_q, need_k, need_v};
        group_bwd(c, dh1, 0, c->dqkv, A->h1, &gqkv, need, N);
        if (dh1)
            m2_rmsnorm_backward(c->dX, ly->attn_norm->grad, dh1, xin, ly->attn_norm->data, A->rstd1, N, C, pool);
    }
    if (m->tok_embd->grad) m2_embedding_backward(m->tok_embd->grad, c->dX, c->tokens, N, C);
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

void m2_ctx_logprobs(m2_ctx *c, const int32_t *targets, float *logp) {
    m2_logprob_forward(logp, c->llse, c->logits, targets, c->N, c->m->cfg.vocab_size, c->m->pool);
    c->llse_valid = 1;
}

void m2_ctx_logprobs_backward(m2_ctx *c, const int32_t *targets, const float *dlogp) {
    const float *lse = c->llse_valid ? c->llse : NULL;
    int V = c->m->cfg.vocab_size;
    if (!c->dlogits_live)   /* first writer since the forward: overwrite, no zeroing pass */
        m2_logprob_backward_set(c->dlogits, dlogp, c->logits, lse, targets, c->N, V, c->m->pool);
    else
        m2_logprob_backward(c->dlogits, dlogp, c->logits, lse, targets, c->N, V, c->m->pool);
    c->dlogits_live = 1;
}

void m2_ctx_kl(m2_ctx *a, m2_ctx *b, const float *weight, float *kl, int grad_a, int grad_b) {
    int N = a->N < b->N ? a->N : b->N, V = a->m->cfg.vocab_size;
    m2_kl_forward(kl, a->logits, b->logits, N, V, a->m->pool);
    if (weight && (grad_a || grad_b))
        m2_kl_backward(grad_a ? dlogits_live(a) : NULL, grad_b ? dlogits_live(b) : NULL, weight, a->logits,
                       b->logits, N, V, a->m->pool);
}
