/* KV-cache inference: prefill and batched decode over the same kernels as training. */
#include "model/generate.h"
#include "kernels/loss.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

m2_kv_cache *m2_kv_create(const m2_model *m, int n_seq, int max_len, m2_err *err) {
    if (n_seq <= 0 || max_len <= 0) { m2_errorf(err, M2_EINVAL, "kv cache: n_seq and max_len must be positive"); return NULL; }
    if (max_len > m->cfg.max_seq_len) max_len = m->cfg.max_seq_len;
    m2_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) { m2_errorf(err, M2_ENOMEM, "kv cache: out of memory"); return NULL; }
    kv->n_seq = n_seq; kv->max_len = max_len; kv->n_layers = m->cfg.n_layers;
    kv->kv_dim = m->cfg.n_kv_heads * m->cfg.head_dim;
    size_t n = (size_t)kv->n_layers * n_seq * max_len * kv->kv_dim;
    kv->k = m2_malloc_aligned(n * sizeof(float));
    kv->v = m2_malloc_aligned(n * sizeof(float));
    kv->len = calloc((size_t)n_seq, sizeof(int));
    if (!kv->k || !kv->v || !kv->len) {
        m2_kv_free(kv);
        m2_errorf(err, M2_ENOMEM, "kv cache: out of memory for %d x %d positions (%.1f MiB)", n_seq, max_len, 2.0 * n * 4 / 1048576.0);
        return NULL;
    }
    return kv;
}

void m2_kv_free(m2_kv_cache *kv) {
    if (!kv) return;
    free(kv->k); free(kv->v); free(kv->len); free(kv);
}

void m2_kv_clear(m2_kv_cache *kv, int seq) {
    for (int s = 0; s < kv->n_seq; s++) if (seq < 0 || s == seq) kv->len[s] = 0;
}

static float *kv_at(const m2_kv_cache *kv, float *base, int l, int seq, int pos) {
    return base + (((size_t)l * kv->n_seq + seq) * kv->max_len + pos) * kv->kv_dim;
}

typedef struct ws { float *x, *h, *q, *k, *v, *att, *tmp, *g, *u, *t, *wscr, *ascr, *hl; } ws;

/* out[N, W.rows] = x W^T (+ b). A block-type W is read in its blocks, activations rounded to 8
 * bits per block (qdot.h, qgemm.h: their stated tolerance): with M2_QGEMM_MIN_ROWS rows or more
 * through the integer GEMM where the CPU has its kernel, with fewer (decode steps) through the
 * row products; without the kernel, more than M2_QDOT_MAX_ROWS rows go through dequantised tiles
 * and sgemm, exactly as in training (as does everything with m->gen_tiles). The scratch holds
 * any of them (kv_scratch_floats). */
typedef enum { BY_TILES, BY_ROWS, BY_GEMM } mm_path;
static mm_path matmul_path(const m2_model *m, const m2_tensor *W, int N) {
    if (!m2_dtype_is_block(W->dtype) || m->gen_tiles) return BY_TILES;
    if (N >= M2_QGEMM_MIN_ROWS && m2_qgemm_fast()) return BY_GEMM;
    return N <= M2_QDOT_MAX_ROWS ? BY_ROWS : BY_TILES;
}

static void base_matmul(const m2_model *m, float *out, const float *x, const m2_tensor *W, const float *bias, int N,
                        float *scr, m2_pool *pool) {
    switch (matmul_path(m, W, N)) {
    case BY_GEMM: m2_qgemm(out, W->rows, x, m2_tensor_wref(W), bias, N, 0, scr, M2_QDOT_AUTO, pool); return;
    case BY_ROWS: m2_qmatmul(out, W->rows, x, m2_tensor_wref(W), bias, N, 0, scr, M2_QDOT_AUTO, pool); return;
    default: m2_matmul_forward_w(out, x, m2_tensor_wref(W), bias, N, 0, scr, pool); return;
    }
}

/* Floats of scratch base_matmul needs for matrices of up to maxcols inputs: a tile of dequantised
 * rows, or the integer GEMM's (its largest: sub-blocks of 16), or the row products'. */
static size_t kv_scratch_floats(size_t maxcols, long N, m2_pool *pool) {
    size_t tiles = (size_t)M2_WTILE_ROWS * maxcols;
    m2_wref wide = {M2_DT_Q6_K, NULL, 1, (int)maxcols}, wide32 = {M2_DT_Q8_0, NULL, 1, (int)maxcols};
    size_t g = m2_qgemm_scratch_bytes(wide, (int)N, m2_pool_threads(pool));
    size_t g32 = m2_qgemm_scratch_bytes(wide32, (int)N, m2_pool_threads(pool));
    int rn = N < M2_QDOT_MAX_ROWS ? (int)N : M2_QDOT_MAX_ROWS;   /* lin_many: both activation formats */
    size_t r = m2_qmatmul_scratch_bytes(wide32, rn) + m2_qmatmul_scratch_bytes(wide, rn);
    if (g32 > g) g = g32;
    if (r > g) g = r;
    g = (g + sizeof(float) - 1) / sizeof(float);
    return g > tiles ? g : tiles;
}

/* out += s (x A^T) B^T: the adapter's pair in slot (nothing without one). */
static void lora_add(const ws *w, m2_pool *pool, m2_adapter *a, float *out, const float *x, int slot, int N) {
    if (!a || !a->pairs[slot].A) return;
    m2_lora_pair *p = &a->pairs[slot];
    int r = a->cfg.rank;
    m2_sgemm(pool, 0, 1, N, r, p->in, 1.0f, x, p->in, p->A, p->in, 0.0f, w->t, r);
    m2_sgemm(pool, 0, 1, N, p->out, r, a->scale, w->t, r, p->B, r, 1.0f, out, p->out);
}

static void lin(const m2_model *m, const ws *w, m2_pool *pool, m2_adapter *a, float *out, const float *x,
                const m2_tensor *W, const m2_tensor *b, int slot, int N) {
    base_matmul(m, out, x, W, b ? b->data : NULL, N, w->wscr, pool);
    lora_add(w, pool, a, out, x, slot, N);
}

/* n (<= M2_QMM_MAX_ITEMS) linear layers over the same input (q, k, v; gate, up) in adapter slots
 * slot0...: when every matrix goes through the row products, one call for all of them (x
 * quantised once per format, one hand-off to the pool instead of n); the same values as n lin(). */
static void lin_many(const m2_model *m, const ws *w, m2_pool *pool, m2_adapter *a, float *const *outs, const float *x,
                     const m2_tensor *const *Ws, const m2_tensor *const *bs, int slot0, int n, int N) {
    int rows = 1;
    for (int i = 0; i < n; i++) rows &= matmul_path(m, Ws[i], N) == BY_ROWS;
    if (rows) {
        m2_qmm_item it[M2_QMM_MAX_ITEMS];
        for (int i = 0; i < n; i++)
            it[i] = (m2_qmm_item){.out = outs[i], .ldo = Ws[i]->rows, .w = m2_tensor_wref(Ws[i]), .bias = bs[i] ? bs[i]->data : NULL};
        m2_qmatmul_many(it, n, x, N, w->wscr, M2_QDOT_AUTO, pool);
    } else
        for (int i = 0; i < n; i++) base_matmul(m, outs[i], x, Ws[i], bs[i] ? bs[i]->data : NULL, N, w->wscr, pool);
    for (int i = 0; i < n; i++) lora_add(w, pool, a, outs[i], x, slot0 + i, N);
}

/* Values (rows x width) below which kv_forward runs a row-wise op on the calling thread. */
#define KV_POOL_OP_VALUES 65536

/* Rows whose log-probs m2_kv_score computes at once: bounds the logits scratch to this many rows
 * of the vocabulary, whatever the number of candidate tokens. */
#define KV_SCORE_ROWS 64

/* Appends seg_len[i] tokens to sequence seqs[i] for each segment; logits[nseg, V] of the last
 * token of each segment (may be NULL). With row_logp (may be NULL): row_logp[n] = log softmax of
 * the logits at appended row n (over all segments' rows in order) at targets[n] (0 where
 * targets[n] < 0), computed KV_SCORE_ROWS rows at a time. */
static int kv_forward(m2_model *m, m2_adapter *a, m2_kv_cache *kv, int nseg, const int *seqs,
                      const int *seg_len, const int32_t *tokens, float *logits, const int32_t *targets,
                      float *row_logp, m2_err *err) {
    const m2_model_config *cf = &m->cfg;
    if (nseg <= 0) return m2_errorf(err, M2_EINVAL, "kv: no sequences to extend");
    int C = cf->dim, F = cf->ffn_dim, H = cf->n_heads, KVH = cf->n_kv_heads, D = cf->head_dim;
    int QD = H * D, KD = KVH * D, V = cf->vocab_size;
    if (a && a->merged) return m2_errorf(err, M2_EINVAL, "generate: adapter '%s' is merged into the base", a->cfg.name);
    long N = 0;
    size_t amax = 1;
    for (int i = 0; i < nseg; i++) {
        if (seqs[i] < 0 || seqs[i] >= kv->n_seq) return m2_errorf(err, M2_EINVAL, "kv: sequence %d out of range", seqs[i]);
        if (seg_len[i] <= 0) return m2_errorf(err, M2_EINVAL, "kv: empty segment for sequence %d", seqs[i]);
        int end = kv->len[seqs[i]] + seg_len[i];
        if (end > kv->max_len) return m2_errorf(err, M2_EINVAL, "kv: sequence %d would reach %d positions, cache holds %d", seqs[i], end, kv->max_len);
        if ((size_t)seg_len[i] * end > amax) amax = (size_t)seg_len[i] * end;
        N += seg_len[i];
    }
    for (long n = 0; n < N; n++)
        if (tokens[n] < 0 || tokens[n] >= V) return m2_errorf(err, M2_EINVAL, "kv: token %d outside the vocabulary (%d)", tokens[n], V);
    int r = a ? a->cfg.rank : 1;
    size_t maxcols = C > F ? C : F;
    if ((size_t)QD > maxcols) maxcols = QD;
    size_t sizes[] = {N * C, N * C, N * QD, N * KD, N * KD, N * QD, N * C, N * F, N * F, N * r,
                      kv_scratch_floats(maxcols, N, m->pool), 1, (size_t)nseg * C};
    size_t total = 0;
    for (int i = 0; i < 13; i++) total += (sizes[i] + 15) & ~(size_t)15;
    float *blk = m2_malloc_aligned(total * sizeof(float));
    int *pos = malloc(N * sizeof(int));
    m2_attn_seq *aseq = malloc((size_t)nseg * sizeof *aseq);
    if (!blk || !pos || !aseq) { free(blk); free(pos); free(aseq); return m2_errorf(err, M2_ENOMEM, "kv: out of memory for %ld tokens", N); }
    ws w;
    float **fields[] = {&w.x, &w.h, &w.q, &w.k, &w.v, &w.att, &w.tmp, &w.g, &w.u, &w.t, &w.wscr, &w.ascr, &w.hl};
    size_t off = 0;
    for (int i = 0; i < 13; i++) { *fields[i] = blk + off; off += (sizes[i] + 15) & ~(size_t)15; }
    for (int i = 0, o = 0; i < nseg; i++)
        for (int j = 0; j < seg_len[i]; j++) pos[o++] = kv->len[seqs[i]] + j;
    m2_pool *pool = m->pool;
    /* the row-wise ops of a few rows (decode steps) run on the calling thread: handing a 512-value
     * row norm to the pool costs more than the norm, and every hand-off is a chance to wait for a
     * worker the OS has not scheduled (row-wise ops: the bits do not depend on the split) */
    m2_pool *opool = N * (long)(C > F ? C : F) >= KV_POOL_OP_VALUES ? pool : NULL;
    m2_embedding_forward(w.x, tokens, m2_tensor_wref(m->tok_embd), (int)N);
    for (int l = 0; l < cf->n_layers; l++) {
        const m2_layer *ly = &m->layers[l];
        int sl = l * M2_LORA_N_TARGETS;
        m2_rmsnorm_forward(w.h, NULL, w.x, ly->attn_norm->data, (int)N, C, cf->norm_eps, opool);
        float *qkv[] = {w.q, w.k, w.v};
        const m2_tensor *wqkv[] = {ly->wq, ly->wk, ly->wv}, *bqkv[] = {ly->bq, ly->bk, ly->bv};
        lin_many(m, &w, pool, a, qkv, w.h, wqkv, bqkv, sl + 0, 3, (int)N);
        m2_rope_forward(w.q, pos, m->rope_freq, (int)N, H, D, QD, cf->rope_layout, &m->rope_tab, opool);
        m2_rope_forward(w.k, pos, m->rope_freq, (int)N, KVH, D, KD, cf->rope_layout, &m->rope_tab, opool);
        for (int i = 0, o = 0; i < nseg; i++) {
            int s = seqs[i], p0 = kv->len[s], n = seg_len[i];
            memcpy(kv_at(kv, kv->k, l, s, p0), w.k + (size_t)o * KD, (size_t)n * KD * sizeof(float));
            memcpy(kv_at(kv, kv->v, l, s, p0), w.v + (size_t)o * KD, (size_t)n * KD * sizeof(float));
            m2_attn_seq as = {.q = w.q + (size_t)o * QD, .k = kv_at(kv, kv->k, l, s, 0),
                              .v = kv_at(kv, kv->v, l, s, 0), .out = w.att + (size_t)o * QD,
                              .nq = n, .nkv = p0 + n};
            aseq[i] = as;
            o += n;
        }
        if (m2_attention_forward(aseq, nseg, H, KVH, D, QD, KD, pool)) {   /* cache lengths unchanged */
            free(blk); free(pos); free(aseq);
            return m2_errorf(err, M2_ENOMEM, "kv: out of memory for the attention scratch (%ld tokens)", N);
        }
        lin(m, &w, pool, a, w.tmp, w.att, ly->wo, NULL, sl + 3, (int)N);
        m2_acc(w.x, w.tmp, N * C);
        m2_rmsnorm_forward(w.h, NULL, w.x, ly->ffn_norm->data, (int)N, C, cf->norm_eps, opool);
        float *gu[] = {w.g, w.u};
        const m2_tensor *wgu[] = {ly->wg, ly->wu}, *nob[] = {NULL, NULL};
        lin_many(m, &w, pool, a, gu, w.h, wgu, nob, sl + 4, 2, (int)N);
        m2_swiglu_forward(w.g, w.g, w.u, N * F, opool);
        lin(m, &w, pool, a, w.tmp, w.g, ly->wd, NULL, sl + 6, (int)N);
        m2_acc(w.x, w.tmp, N * C);
    }
    for (int i = 0, o = 0; i < nseg; i++) {
        o += seg_len[i];
        memcpy(w.hl + (size_t)i * C, w.x + (size_t)(o - 1) * C, C * sizeof(float));
        kv->len[seqs[i]] += seg_len[i];
    }
    if (row_logp) {
        /* every appended row: final norm, output projection and log-softmax, a block at a time */
        int B = N < KV_SCORE_ROWS ? (int)N : KV_SCORE_ROWS;
        float *hb = m2_malloc_aligned((size_t)B * C * sizeof(float));
        float *lb = m2_malloc_aligned((size_t)B * V * sizeof(float));
        float *lse = malloc((size_t)B * sizeof(float));
        if (!hb || !lb || !lse) {
            free(hb); free(lb); free(lse); free(blk); free(pos); free(aseq);
            return m2_errorf(err, M2_ENOMEM, "kv: out of memory for %d scoring rows", B);
        }
        for (long r0 = 0; r0 < N; r0 += B) {
            int rows = N - r0 < B ? (int)(N - r0) : B;
            m2_rmsnorm_forward(hb, NULL, w.x + (size_t)r0 * C, m->out_norm->data, rows, C, cf->norm_eps, NULL);
            m2_matmul_forward_w(lb, hb, m2_tensor_wref(m->output), NULL, rows, 0, w.wscr, pool);
            m2_logprob_forward(row_logp + r0, lse, lb, targets + r0, rows, V, pool);
        }
        free(hb); free(lb); free(lse);
    }
    if (logits) {
        m2_rmsnorm_forward(w.hl, NULL, w.hl, m->out_norm->data, nseg, C, cf->norm_eps, NULL);
        base_matmul(m, logits, w.hl, m->output, NULL, nseg, w.wscr, pool);
    }
    free(blk); free(pos); free(aseq);
    return 0;
}

int m2_kv_append(m2_model *m, m2_adapter *a, m2_kv_cache *kv, int seq, const int32_t *tokens,
                 int n, float *logits, m2_err *err) {
    return kv_forward(m, a, kv, 1, &seq, &n, tokens, logits, NULL, NULL, err);
}

int m2_kv_step(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int *seqs, const int32_t *token,
               int n, float *logits, m2_err *err) {
    if (n <= 0) return 0;
    int *ones = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!ones) return m2_errorf(err, M2_ENOMEM, "kv: out of memory");
    for (int i = 0; i < n; i++) ones[i] = 1;
    int rc = kv_forward(m, a, kv, n, seqs, ones, token, logits, NULL, NULL, err);
    free(ones);
    return rc;
}

typedef struct { float v; int i; } scored;
static int by_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? 1 : -1;
    return x->i - y->i;
}

int32_t m2_sample(const float *logits, int V, const m2_sampler *s, m2_rng *rng, float *logp_out,
                  float *work) {
    float mx = -INFINITY;
    int arg = 0;
    for (int i = 0; i < V; i++) if (logits[i] > mx) { mx = logits[i]; arg = i; }
    double z = 0;
    for (int i = 0; i < V; i++) z += exp((double)logits[i] - mx);
    double lse = mx + log(z);
    int tok = arg;
    if (s && s->temperature > 0) {
        scored *sc = work ? (scored *)work : malloc((size_t)V * sizeof(scored));
        if (!sc) tok = arg;
        else {
            float it = 1.0f / s->temperature;
            for (int i = 0; i < V; i++) { sc[i].v = (logits[i] - mx) * it; sc[i].i = i; }
            int n = V;
            int filtered = (s->top_k > 0 && s->top_k < V) || (s->top_p > 0 && s->top_p < 1);
            if (filtered) {
                qsort(sc, V, sizeof *sc, by_desc);
                if (s->top_k > 0 && s->top_k < n) n = s->top_k;
            }
            double tot = 0;
            for (int i = 0; i < n; i++) { sc[i].v = expf(sc[i].v); tot += sc[i].v; }
            if (s->top_p > 0 && s->top_p < 1) {
                double cum = 0;
                int keep = n;
                for (int i = 0; i < n; i++) { cum += sc[i].v / tot; if (cum >= s->top_p) { keep = i + 1; break; } }
                n = keep;
                tot = 0;
                for (int i = 0; i < n; i++) tot += sc[i].v;
            }
            double u = m2_rng_uniform_d(rng) * tot, cum = 0;
            tok = sc[n - 1].i;
            for (int i = 0; i < n; i++) { cum += sc[i].v; if (u < cum) { tok = sc[i].i; break; } }
            if (!work) free(sc);
        }
    }
    if (logp_out) *logp_out = (float)(logits[tok] - lse);
    return tok;
}

void m2_gen_result_free(m2_gen_result *r) {
    if (!r) return;
    free(r->tokens); free(r->logps); free(r->text);
    memset(r, 0, sizeof *r);
}

/* The sampling loop of m2_generate and m2_generate_cached: logits[n_seq, V] hold the next-token
 * logits of sequences 0..n_seq-1 of kv after their prompts; generates into out[n_seq]. */
static int decode_loop(m2_model *m, m2_adapter *a, m2_kv_cache *kv, int n_seq, float *logits,
                       const m2_gen_config *g, m2_gen_result *out, m2_err *err) {
    int V = m->cfg.vocab_size, maxnew = g->max_new_tokens > 0 ? g->max_new_tokens : 0;
    float *work = malloc((size_t)V * 2 * sizeof(float));
    m2_rng *rng = calloc((size_t)n_seq, sizeof(m2_rng));
    int *active = calloc((size_t)n_seq, sizeof(int)), *seqs = calloc((size_t)n_seq, sizeof(int));
    int32_t *next = calloc((size_t)n_seq, sizeof(int32_t));
    size_t *tcap = calloc((size_t)n_seq, sizeof(size_t)), *tlen = calloc((size_t)n_seq, sizeof(size_t));
    int rc = 0;
    if (!work || !rng || !active || !seqs || !next || !tcap || !tlen) { rc = m2_errorf(err, M2_ENOMEM, "generate: out of memory"); goto done; }
    for (int i = 0; i < n_seq; i++) {
        out[i].tokens = malloc((size_t)(maxnew + 1) * sizeof(int32_t));
        out[i].logps = malloc((size_t)(maxnew + 1) * sizeof(float));
        if (!out[i].tokens || !out[i].logps) { rc = m2_errorf(err, M2_ENOMEM, "generate: out of memory"); goto done; }
        m2_rng_seed_stream(&rng[i], g->seed, g->streams ? g->streams[i] : (uint64_t)i);
        active[i] = 1;
        if (maxnew == 0) { active[i] = 0; out[i].stop_reason = M2_STOP_MAX_TOKENS; }
    }
    for (;;) {
        int n = 0;
        for (int i = 0; i < n_seq; i++) {
            if (!active[i]) continue;
            float lp;
            int32_t tok = m2_sample(logits + (size_t)i * V, V, &g->sampler, &rng[i], &lp, work);
            m2_gen_result *r = &out[i];
            r->tokens[r->n] = tok; r->logps[r->n] = lp; r->n++;
            int stop = 0;
            for (int k = 0; k < g->n_stop_tokens; k++) if (g->stop_tokens[k] == tok) stop = M2_STOP_TOKEN;
            if (g->token_text) {
                char buf[256];
                int len = g->token_text(g->ud, tok, buf, sizeof buf);
                if (len < 0) len = 0;
                if (len > (int)sizeof buf) len = sizeof buf;
                if (tlen[i] + len + 1 > tcap[i]) {
                    size_t nc = (tcap[i] + len + 1) * 2;
                    char *t = realloc(r->text, nc);
                    if (!t) { rc = m2_errorf(err, M2_ENOMEM, "generate: out of memory"); goto done; }
                    r->text = t; tcap[i] = nc;
                }
                memcpy(r->text + tlen[i], buf, len);
                tlen[i] += len;
                r->text[tlen[i]] = 0;
                size_t from = tlen[i] > (size_t)len + 256 ? tlen[i] - len - 256 : 0;
                for (int k = 0; !stop && k < g->n_stop_strings; k++)
                    if (g->stop_strings[k][0] && strstr(r->text + from, g->stop_strings[k])) stop = M2_STOP_STRING;
            }
            if (!stop && g->on_token && g->on_token(g->ud, i, tok, lp)) stop = M2_STOP_CALLBACK;
            if (!stop && r->n >= maxnew) stop = M2_STOP_MAX_TOKENS;
            if (!stop && kv->len[i] + 1 > kv->max_len) stop = M2_STOP_CONTEXT;
            if (stop) { r->stop_reason = stop; active[i] = 0; continue; }
            seqs[n] = i; next[n] = tok; n++;
        }
        if (n == 0) break;
        if ((rc = m2_kv_step(m, a, kv, seqs, next, n, logits, err))) goto done;
        /* step logits are packed by active order: move them to each sequence's slot (backwards is
         * safe since seqs[j] >= j) */
        for (int j = n - 1; j >= 0; j--)
            if (seqs[j] != j) memcpy(logits + (size_t)seqs[j] * V, logits + (size_t)j * V, (size_t)V * sizeof(float));
    }
done:
    if (rc) for (int i = 0; i < n_seq; i++) m2_gen_result_free(&out[i]);
    free(work); free(rng); free(active); free(seqs); free(next); free(tcap); free(tlen);
    return rc;
}

int m2_generate(m2_model *m, m2_adapter *a, int n_seq, const int32_t *const *prompts,
                const int *prompt_len, const m2_gen_config *g, m2_gen_result *out, m2_err *err) {
    int V = m->cfg.vocab_size, maxp = 0, maxnew = g->max_new_tokens > 0 ? g->max_new_tokens : 0;
    for (int i = 0; i < n_seq; i++) {
        memset(&out[i], 0, sizeof out[i]);
        if (prompt_len[i] <= 0) return m2_errorf(err, M2_EINVAL, "generate: prompt %d is empty", i);
        if (prompt_len[i] > maxp) maxp = prompt_len[i];
    }
    if (maxp > m->cfg.max_seq_len) return m2_errorf(err, M2_EINVAL, "generate: prompt of %d tokens exceeds the context %d", maxp, m->cfg.max_seq_len);
    m2_kv_cache *kv = m2_kv_create(m, n_seq, maxp + maxnew + 1, err);
    if (!kv) return -1;
    float *logits = malloc((size_t)n_seq * V * sizeof(float));
    int *seqs = malloc((size_t)n_seq * sizeof(int));
    long total = 0;
    for (int i = 0; i < n_seq; i++) total += prompt_len[i];
    int32_t *cat = malloc((size_t)total * sizeof(int32_t));
    int rc = 0;
    if (!logits || !seqs || !cat) { rc = m2_errorf(err, M2_ENOMEM, "generate: out of memory"); goto done; }
    /* one batched prefill of all prompts (segments of one forward) */
    for (int i = 0, o = 0; i < n_seq; i++) {
        memcpy(cat + o, prompts[i], (size_t)prompt_len[i] * sizeof(int32_t));
        o += prompt_len[i];
        seqs[i] = i;
    }
    if (!(rc = kv_forward(m, a, kv, n_seq, seqs, prompt_len, cat, logits, NULL, NULL, err)))
        rc = decode_loop(m, a, kv, n_seq, logits, g, out, err);
done:
    m2_kv_free(kv);
    free(logits); free(seqs); free(cat);
    return rc;
}

int m2_generate_cached(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int32_t *prompt, int prompt_len,
                       int reuse, const m2_gen_config *g, m2_gen_result *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (!kv || kv->n_seq < 1) return m2_errorf(err, M2_EINVAL, "generate: no KV cache");
    if (prompt_len <= 0) return m2_errorf(err, M2_EINVAL, "generate: prompt 0 is empty");
    if (prompt_len > m->cfg.max_seq_len) return m2_errorf(err, M2_EINVAL, "generate: prompt of %d tokens exceeds the context %d", prompt_len, m->cfg.max_seq_len);
    if (prompt_len > kv->max_len)
        return m2_errorf(err, M2_EINVAL, "generate: prompt of %d tokens does not fit the KV cache (%d positions)", prompt_len, kv->max_len);
    /* the cached prefix stops before the last prompt token, whose logits the sampling needs */
    if (reuse > kv->len[0]) reuse = kv->len[0];
    if (reuse > prompt_len - 1) reuse = prompt_len - 1;
    if (reuse < 0) reuse = 0;
    kv->len[0] = reuse;
    float *logits = malloc((size_t)m->cfg.vocab_size * sizeof(float));
    if (!logits) return m2_errorf(err, M2_ENOMEM, "generate: out of memory");
    int seq = 0, n = prompt_len - reuse;
    int rc = kv_forward(m, a, kv, 1, &seq, &n, prompt + reuse, logits, NULL, NULL, err);
    if (rc) kv->len[0] = 0;   /* nothing valid to reuse */
    else rc = decode_loop(m, a, kv, 1, logits, g, out, err);
    free(logits);
    return rc;
}

/* Candidates scored in one batched pass of m2_kv_score: bounds its scratch cache to this many
 * copies of the prefix. */
#define KV_SCORE_BATCH 16

int m2_kv_score(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int32_t *prompt, int prompt_len, int reuse,
                int n_cand, const int32_t *const *cands, const int *cand_len, int mean, float *cand_logp,
                m2_err *err) {
    if (!kv || kv->n_seq < 1) return m2_errorf(err, M2_EINVAL, "score: no KV cache");
    if (prompt_len <= 0) return m2_errorf(err, M2_EINVAL, "score: empty prompt");
    if (n_cand <= 0) return m2_errorf(err, M2_EINVAL, "score: no candidates");
    int P = prompt_len - 1, maxL = 0;   /* the prefix kept in the cache: all but the last prompt token */
    for (int i = 0; i < n_cand; i++) {
        if (cand_len[i] <= 0) return m2_errorf(err, M2_EINVAL, "score: candidate %d is empty", i);
        if (cand_len[i] > maxL) maxL = cand_len[i];
    }
    if (P + maxL > m->cfg.max_seq_len)
        return m2_errorf(err, M2_EINVAL, "score: prompt of %d tokens + a candidate of %d exceed the context %d", prompt_len,
                         maxL, m->cfg.max_seq_len);
    if (P > kv->max_len)
        return m2_errorf(err, M2_EINVAL, "score: prompt of %d tokens does not fit the KV cache (%d positions)", prompt_len,
                         kv->max_len);
    if (reuse > kv->len[0]) reuse = kv->len[0];
    if (reuse > P) reuse = P;
    if (reuse < 0) reuse = 0;
    kv->len[0] = reuse;
    int seq0 = 0;
    if (P > reuse) {
        int n = P - reuse;
        if (kv_forward(m, a, kv, 1, &seq0, &n, prompt + reuse, NULL, NULL, NULL, err)) { kv->len[0] = 0; return -1; }
    }
    int B = n_cand < KV_SCORE_BATCH ? n_cand : KV_SCORE_BATCH, rc = 0;
    m2_kv_cache *sc = m2_kv_create(m, B, P + maxL, err);
    int *seqs = malloc((size_t)B * sizeof *seqs), *lens = malloc((size_t)B * sizeof *lens);
    long cap = (long)B * maxL;
    int32_t *cat = malloc((size_t)cap * sizeof *cat), *tg = malloc((size_t)cap * sizeof *tg);
    float *tl = malloc((size_t)cap * sizeof *tl);
    if (!sc || !seqs || !lens || !cat || !tg || !tl) {
        rc = sc ? m2_errorf(err, M2_ENOMEM, "score: out of memory") : -1;
        goto done;
    }
    size_t blk = (size_t)P * kv->kv_dim * sizeof(float);
    for (int c0 = 0; c0 < n_cand; c0 += B) {
        int b = n_cand - c0 < B ? n_cand - c0 : B;
        long o = 0;
        for (int j = 0; j < b; j++) {
            /* candidate j's sequence: the shared prefix (copied, not recomputed), then the last prompt
             * token and the candidate's tokens but its last: row i predicts candidate token i */
            for (int l = 0; l < kv->n_layers && P > 0; l++) {
                memcpy(kv_at(sc, sc->k, l, j, 0), kv_at(kv, kv->k, l, 0, 0), blk);
                memcpy(kv_at(sc, sc->v, l, j, 0), kv_at(kv, kv->v, l, 0, 0), blk);
            }
            sc->len[j] = P;
            seqs[j] = j;
            const int32_t *c = cands[c0 + j];
            int L = cand_len[c0 + j];
            lens[j] = L;
            cat[o] = prompt[P];
            memcpy(cat + o + 1, c, (size_t)(L - 1) * sizeof *cat);
            memcpy(tg + o, c, (size_t)L * sizeof *tg);
            o += L;
        }
        if ((rc = kv_forward(m, a, sc, b, seqs, lens, cat, NULL, tg, tl, err))) goto done;
        for (int j = 0, r = 0; j < b; r += lens[j], j++) cand_logp[c0 + j] = m2_span_logprob(tl, r, lens[j], mean);
    }
done:
    m2_kv_free(sc);
    free(seqs); free(lens); free(cat); free(tg); free(tl);
    return rc;
}
