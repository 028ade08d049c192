/* Training / scoring forward and backward over a batch of PACKED sequences of different lengths:
 * tokens[N] is the concatenation of n_seq sequences, seq_len[s] tokens each, N = sum seq_len; each
 * sequence starts at position 0 and attends causally only to itself. No padding.
 * The ctx owns every activation kept for backward, the logits [N,V], the final normed hidden
 * states [N,H] (head inputs) and their gradient buffers; it is sized for at most max_tokens tokens
 * and max_seq_len per sequence. */
#ifndef M2_MODEL_FORWARD_H
#define M2_MODEL_FORWARD_H
#include <stdint.h>
#include "model/weights.h"
#include "model/lora.h"

typedef struct m2_batch {
    int n_seq;
    const int *seq_len;       /* [n_seq] */
    const int32_t *tokens;    /* [N] */
} m2_batch;

typedef struct m2_ctx m2_ctx;

/* max_tokens: largest N. keep_acts: 0 (M2_ACTS_NONE) a scoring-only ctx (no backward, least
 * memory); 1 (M2_ACTS_KEEP) every layer's activations kept for the backward; 2
 * (M2_ACTS_RECOMPUTE) only the residual stream kept, the backward re-runs each layer's forward
 * before differentiating it: activations for one layer instead of all (~1/L of them), ~1/3 more
 * compute, gradients equal to M2_ACTS_KEEP's bit for bit. As with every ctx, the weights and the
 * adapter must not change between a forward and its backward. */
enum { M2_ACTS_NONE = 0, M2_ACTS_KEEP = 1, M2_ACTS_RECOMPUTE = 2 };
m2_ctx *m2_ctx_create(m2_model *m, int max_tokens, int keep_acts, m2_err *err);
void m2_ctx_free(m2_ctx *c);
size_t m2_ctx_bytes(const m2_ctx *c);
/* Bytes m2_ctx_create would allocate (without LoRA buffers), for memory plans. */
size_t m2_ctx_bytes_for(m2_model *m, int max_tokens, int keep_acts);

/* Chunked logits, for large vocabularies: a ctx created with logit_chunk_rows > 0 never stores the
 * N x V logits nor their gradient (2 x N x V floats: 4.8 GB for a 150k vocabulary at 4k tokens),
 * only logit_chunk_rows x V scratch. The forward stops at the final hidden states;
 * m2_ctx_logprobs, m2_ctx_logprobs_backward and m2_ctx_kl compute the logits chunk by chunk
 * (one more output-projection GEMM per call) and the backward ones fold their gradient straight
 * into dhidden (and the output matrix's grad when the base is trained). m2_ctx_logits and
 * m2_ctx_dlogits return NULL on such a ctx. Results equal the stored-logits ctx (tested). */
m2_ctx *m2_ctx_create_chunked(m2_model *m, int max_tokens, int keep_acts, int logit_chunk_rows, m2_err *err);
size_t m2_ctx_bytes_for_chunked(m2_model *m, int max_tokens, int keep_acts, int logit_chunk_rows);
/* The same from a config alone (no model allocated: plans made before loading), for `threads`
 * pool threads. */
size_t m2_ctx_bytes_for_config(const m2_model_config *cfg, int threads, int max_tokens, int keep_acts,
                               int logit_chunk_rows);
/* Bytes a training ctx may add for the weight-gradient shadows of row-parallel backwards (one
 * per pool thread but the first, sized for the base grads and the largest trainable adapter of
 * m; 0 with one thread or when over the cap at which backwards run op by op). */
size_t m2_ctx_shadow_bytes_for(m2_model *m);

/* Runs the model over the batch with adapter `a` active (NULL = base only). train = 1 applies
 * LoRA dropout with one seed drawn from the ctx's RNG (seeded by m2_ctx_seed) and the sequences
 * keyed 0 .. n_seq-1 (m2_dropout_keys) — scoring uses 0. Fills logits and hidden. */
int m2_forward(m2_ctx *c, const m2_batch *b, m2_adapter *a, int train, m2_err *err);

/* The LoRA dropout of a training forward, chosen by the caller (the training steps, algo/steps.h):
 * the mask of sequence s at its position p is a hash of (seed, seq_key[s], p), never of where s sits
 * in the batch, so a sequence gets the same masks in any batch that gives it the same key and seed
 * (a data-parallel rank keys its sequences by their index in the global batch: docs/dist.md). */
typedef struct m2_dropout_keys {
    uint64_t seed;
    const int32_t *seq_key;   /* [n_seq]; NULL: 0 .. n_seq-1 */
} m2_dropout_keys;
/* A training forward (train = 1) with these masks; the ctx's RNG is not drawn. */
int m2_forward_keyed(m2_ctx *c, const m2_batch *b, m2_adapter *a, const m2_dropout_keys *drop, m2_err *err);
void m2_ctx_seed(m2_ctx *c, uint64_t seed);   /* dropout RNG */
m2_rng *m2_ctx_rng(m2_ctx *c);                /* its state, for checkpoints */

/* on = 0: later forwards skip the output projection (hidden states only, e.g. critic-only passes);
 * logits/dlogits are then not valid and backward starts from dhidden alone. Default on. */
void m2_ctx_want_logits(m2_ctx *c, int on);
int m2_ctx_tokens(const m2_ctx *c);           /* N of the last forward */
float *m2_ctx_logits(m2_ctx *c);              /* [N,V] (NULL on a chunked ctx) */
float *m2_ctx_hidden(m2_ctx *c);              /* [N,H] final normed hidden (head input) */
/* Gradient buffers accumulated before backward. They are cleared lazily: fetch them with these
 * accessors AFTER the forward (the first call since the forward zeroes the buffer and marks it
 * used); a buffer never fetched counts as zero, so backward skips what nobody wrote
 * (e.g. the output projection's input gradient when only heads have a loss). */
float *m2_ctx_dlogits(m2_ctx *c);             /* [N,V] gradient into the logits */
float *m2_ctx_dhidden(m2_ctx *c);             /* [N,H] extra gradient into hidden (heads) */
/* Clears dlogits and dhidden (m2_forward does this too). */
void m2_ctx_zero_dgrads(m2_ctx *c);

/* logp[n] = log p(targets[n] | tokens[..n]) under the last forward; targets[n] < 0 = none
 * (logp 0). For next-token training targets[n] = tokens[n+1] within a sequence. */
void m2_ctx_logprobs(m2_ctx *c, const int32_t *targets, float *logp);
/* dlogits += d(sum_n dlogp[n] * logp[n]) / dlogits  (loss masks: dlogp[n] = 0). */
void m2_ctx_logprobs_backward(m2_ctx *c, const int32_t *targets, const float *dlogp);
/* Next-token targets for a batch: targets[n] = tokens[n+1] inside each sequence, -1 at its end. */
void m2_batch_next_targets(const m2_batch *b, int32_t *targets);

/* Exact token-level KL(a || b) between the next-token distributions of two forwards over the SAME
 * batch (e.g. two adapters, or adapter vs base): kl[n] = sum_v p_a log(p_a / p_b).
 * If weight != NULL, the gradient of sum_n weight[n] kl[n] is added into the dlogits of ctx a
 * (grad_a) and/or ctx b (grad_b). Positions with weight 0 are skipped for the gradient. */
void m2_ctx_kl(m2_ctx *a, m2_ctx *b, const float *weight, float *kl, int grad_a, int grad_b);

/* Optional profile of forwards, backwards and log-prob passes on this ctx. Off by default.
 * gemm_s, gemm_flop: the linear layers (x W^T GEMMs incl. LoRA and the output projection).
 * op_s[0] (forward) and op_s[1] (backward, incl. log-prob backward): seconds per kind of op.
 * Row-parallel passes count each kind's mean time over the threads' shares (the shares run at
 * once), so the kinds add up to no more than the wall time of the passes. */
enum {
    M2_OP_LINEAR,      /* base projections of the layers (q|k|v, o, gate|up, down) */
    M2_OP_LORA,        /* the adapters' low-rank paths (incl. dropout) */
    M2_OP_OUTPUT,      /* the output projection (logits) */
    M2_OP_ATTENTION,   /* scores, softmax, weighted values and their backward */
    M2_OP_NORM,        /* RMSNorm */
    M2_OP_ROPE,
    M2_OP_SWIGLU,
    M2_OP_COPY,        /* embedding lookup, residual copies */
    M2_OP_LOGPROB,     /* log-softmax, log-probs, KL and their gradients */
    M2_OP_N
};
const char *m2_op_name(int op);
typedef struct m2_ctx_stats { double gemm_s, gemm_flop; double op_s[2][M2_OP_N]; } m2_ctx_stats;
void m2_ctx_profile(m2_ctx *c, int enable);     /* enabling also resets the counters */
m2_ctx_stats m2_ctx_get_stats(const m2_ctx *c);

/* Backward from the ctx's dlogits and dhidden through the last forward, accumulating into the
 * active adapter's grads and, when the base is trainable, the base grads. Frozen matrices get no
 * weight gradient (never computed). Requires keep_acts. */
int m2_backward(m2_ctx *c, m2_err *err);

#endif
