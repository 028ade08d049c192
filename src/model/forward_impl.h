/* Private to the files of the training ctx (forward.h): ctx.c (the ctx, its buffer layout and
 * accessors), linear.c (linear layers with their LoRA paths), shares.c (row-parallel shares and
 * the weight-gradient shadows), forward.c (the forward and backward passes) and logits.c (log-probs,
 * KL, chunked logits). What they share: the ctx itself, a share, and the helpers below.
 *
 * Training forward/backward over packed batches (see forward.h). One allocation holds every
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
#ifndef M2_MODEL_FORWARD_IMPL_H
#define M2_MODEL_FORWARD_IMPL_H
#include "model/forward.h"
#include "core/timer.h"

/* qkv rows are q | k | v (one GEMM when the three matrices are contiguous f32), gu rows gate | up */
typedef struct m2_fwd_acts {
    float *rstd1, *h1, *qkv, *lse, *att, *x1, *rstd2, *h2, *gu, *s;
} m2_fwd_acts;

struct m2_ctx {
    m2_model *m;
    int max_tokens, keep_acts, tmax;
    int N, n_seq;
    int *seq_len, *seq_off, *pos;
    int32_t *seq_key;         /* [n_seq] the sequences' dropout keys (m2_batch.seq_key) */
    int32_t *tokens;
    m2_adapter *a;
    m2_rng rng;
    float *X;                 /* [L+1, N, C] residual stream: X[l] is the input of layer l */
    m2_fwd_acts *la;           /* [L] */
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
    uint64_t drop_seed;       /* its masks: a hash of (seed, slot, sequence key, position, feature) */
    /* weight-gradient shadows of shares 1..nthreads-1: [adapter grads | base grads] each */
    float *shadow; size_t shadow_cap, shadow_stride, shadow_base_off;
};

/* One share of a forward or backward: rows [n0, n1) holding sequences [s0, s1). */
typedef struct m2_fwd_share {
    int n0, n1, s0, s1;
    int part;            /* 0: weight grads into the arenas; k > 0: into shadow k */
    m2_pool *pool;       /* ops split over this pool (NULL inside a row-parallel job) */
    float *wscratch;
    m2_ctx_stats stats;
    int failed;          /* the attention could not allocate its scratch: the pass is invalid */
} m2_fwd_share;

/* rows [n0, n1) as one share run op by op on the ctx's pool (weight grads into the arenas) */
static inline m2_fwd_share m2_fwd_pool_share(const m2_ctx *c, int n0, int n1, int s0, int s1) {
    return (m2_fwd_share){n0, n1, s0, s1, 0, c->m->pool, c->wscratch, {.gemm_s = 0}, 0};
}

/* Runs stmt; when ctx c profiles, adds its seconds to the stats st->op_s[dir][op]. */
#define PROF_INTO(st, dir, op, stmt)                                             \
    do {                                                                         \
        double t_ = c->profile ? m2_now_s() : 0;                                 \
        stmt;                                                                    \
        if (c->profile) (st)->op_s[dir][op] += m2_now_s() - t_;                  \
    } while (0)
#define PROF(w, dir, op, stmt) PROF_INTO(&(w)->stats, dir, op, stmt)

/* A group of projections of the same input x whose outputs sit side by side in one buffer
 * (q | k | v, or gate | up, or a single matrix): W[i] is [rows_i, in], its output columns start
 * at the sum of the rows before it, out rows are ldo = sum of rows floats apart. */
typedef struct {
    int n;
    const m2_tensor *W[3], *b[3];
    int slot[3];
} m2_fwd_group;

#define MAX_SHARES 64

/* ctx.c */
float *m2_fwd_dlogits_live(m2_ctx *c);   /* dlogits, zeroed first if nothing wrote it since the forward */

/* linear.c */
int m2_fwd_lora_prepare(m2_ctx *c, m2_adapter *a, int N, m2_err *err);
float *m2_fwd_grad_of(const m2_ctx *c, const m2_fwd_share *w, float *g);
void m2_fwd_group_fwd(m2_ctx *c, m2_fwd_share *w, float *out, int acc, const float *x, const m2_fwd_group *g);
void m2_fwd_group_bwd(m2_ctx *c, m2_fwd_share *w, float *dx, int acc, const float *dy, const float *x,
                      const m2_fwd_group *g, const int *need);
void m2_fwd_lin_fwd(m2_ctx *c, m2_fwd_share *w, float *out, int acc, const float *x, const m2_tensor *W,
                    const m2_tensor *b, int slot);
void m2_fwd_lin_bwd(m2_ctx *c, m2_fwd_share *w, float *dx, int acc, const float *dy, const float *x,
                    const m2_tensor *W, const m2_tensor *b, int slot);
int m2_fwd_lora_trains(const m2_ctx *c, int slot);

/* shares.c */
int m2_fwd_plan_shares(const m2_ctx *c, m2_fwd_share *sh, int max_shares);
void m2_fwd_add_stats(m2_ctx *c, const m2_fwd_share *sh, int n);
int m2_fwd_shadow_prepare(m2_ctx *c, int ns);
void m2_fwd_shadow_reduce(m2_ctx *c, int ns);

#endif
