/* The training ctx: its one block of buffers (laid out once, or only counted for memory plans),
 * creation, accessors, lazily zeroed gradient buffers, profile counters. */
#include "model/forward_impl.h"
#include <stdlib.h>
#include <string.h>

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

m2_ctx_stats m2_ctx_get_stats(const m2_ctx *c) { return c->stats; }

static float *take(size_t *off, float *base, size_t cnt) {
    float *p = base ? base + *off : NULL;
    *off += (cnt + 15) & ~(size_t)15;
    return p;
}

/* Lays out (or only counts, when base == NULL) every buffer of a ctx. Returns floats needed.
 * la must hold n_layers entries. */
static size_t layout(const m2_model_config *cf, int N, int keep, m2_ctx *c, m2_fwd_acts *la, float *base) {
    size_t C = cf->dim, F = cf->ffn_dim, V = cf->vocab_size, L = cf->n_layers;
    size_t QD = (size_t)cf->n_heads * cf->head_dim, KD = (size_t)cf->n_kv_heads * cf->head_dim;
    size_t H = cf->n_heads, n = N, off = 0;
#define TAKE(count) take(&off, base, (size_t)(count))
    c->X = TAKE((L + 1) * n * C);
    size_t nl = keep == M2_ACTS_KEEP ? L : 1;
    for (size_t l = 0; l < nl; l++) {
        m2_fwd_acts *t = &la[l];
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
    m2_fwd_acts *la = calloc((size_t)(cfg->n_layers > 0 ? cfg->n_layers : 1), sizeof *la);
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
    c->seq_key = calloc((size_t)max_tokens, sizeof(int32_t));
    c->tokens = calloc((size_t)max_tokens, sizeof(int32_t));
    c->aseq = calloc((size_t)max_tokens, sizeof(m2_attn_seq));
    c->lora_t = calloc((size_t)L * M2_LORA_N_TARGETS, sizeof(float *));
    size_t nf = c->la ? layout(&m->cfg, max_tokens, keep_acts, c, c->la, NULL) : 0;
    c->block_bytes = nf * sizeof(float);
    c->block = m2_malloc_aligned(c->block_bytes);
    if (!c->la || !c->seq_len || !c->seq_off || !c->pos || !c->seq_key || !c->tokens || !c->aseq || !c->lora_t || !c->block) {
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
    free(c->la); free(c->aseq); free(c->seq_len); free(c->seq_off); free(c->pos); free(c->seq_key); free(c->tokens);
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
float *m2_fwd_dlogits_live(m2_ctx *c) {
    if (!c->dlogits_live && !c->fwd_no_logits)
        memset(c->dlogits, 0, (size_t)c->N * c->m->cfg.vocab_size * sizeof(float));
    c->dlogits_live = 1;
    return c->dlogits;
}

float *m2_ctx_dlogits(m2_ctx *c) { return c->chunk ? NULL : m2_fwd_dlogits_live(c); }

float *m2_ctx_dhidden(m2_ctx *c) {
    if (!c->dhidden_live) memset(c->dhidden, 0, (size_t)c->N * c->m->cfg.dim * sizeof(float));
    c->dhidden_live = 1;
    return c->dhidden;
}

void m2_ctx_zero_dgrads(m2_ctx *c) { c->dlogits_live = c->dhidden_live = 0; }
