/* Generation with a KV cache: batched prefill + decode, greedy / temperature / top-k / top-p
 * sampling, stop tokens, stop strings (through a caller-supplied detokenizer hook), a per-token
 * callback that may stop a sequence, and per-token log-probs. */
#ifndef M2_MODEL_GENERATE_H
#define M2_MODEL_GENERATE_H
#include <stdint.h>
#include "core/rng.h"
#include "model/weights.h"
#include "model/lora.h"

/* K and V for n_seq sequences of up to max_len positions, per layer [n_seq, max_len, KVH*hd]. */
typedef struct m2_kv_cache {
    int n_seq, max_len, n_layers, kv_dim;
    float *k, *v;       /* [n_layers, n_seq, max_len, kv_dim] */
    int *len;           /* [n_seq] positions filled */
} m2_kv_cache;

m2_kv_cache *m2_kv_create(const m2_model *m, int n_seq, int max_len, m2_err *err);
void m2_kv_free(m2_kv_cache *kv);
void m2_kv_clear(m2_kv_cache *kv, int seq);   /* seq < 0: all */

/* Appends tokens[n] to sequence `seq` of the cache with adapter a (NULL = base) and writes the
 * logits of the LAST appended position to logits[V] (may be NULL). Prefill and single steps. */
int m2_kv_append(m2_model *m, m2_adapter *a, m2_kv_cache *kv, int seq, const int32_t *tokens,
                 int n, float *logits, m2_err *err);
/* One batched decode step: for i < n, appends token[i] to sequence seqs[i]; logits[n, V]. */
int m2_kv_step(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int *seqs, const int32_t *token,
               int n, float *logits, m2_err *err);

typedef struct m2_sampler {
    float temperature;   /* <= 0: greedy (argmax) */
    int top_k;           /* <= 0: off */
    float top_p;         /* >= 1 or <= 0: off */
} m2_sampler;

/* Samples a token from logits[V]; work: 2*V floats (or NULL to allocate). *logp_out (may be NULL)
 * = the MODEL's log-prob of the token, log softmax(logits) at temperature 1, untruncated. */
int32_t m2_sample(const float *logits, int V, const m2_sampler *s, m2_rng *rng, float *logp_out,
                  float *work);

enum { M2_STOP_NONE = 0, M2_STOP_MAX_TOKENS = 1, M2_STOP_TOKEN = 2, M2_STOP_STRING = 3,
       M2_STOP_CALLBACK = 4, M2_STOP_CONTEXT = 5 };

typedef struct m2_gen_config {
    int max_new_tokens;
    m2_sampler sampler;
    uint64_t seed;                      /* sequence i samples from stream (seed, i) ... */
    /* ... or (seed, streams[i]) when not NULL [n_seq]: a caller generating part of a larger batch
     * (a rank's block of it) names each sequence's stream in the whole batch, so what it samples
     * does not depend on which other sequences share the call */
    const uint64_t *streams;
    const int32_t *stop_tokens; int n_stop_tokens;     /* e.g. EOS, <|im_end|> (kept in output) */
    const char *const *stop_strings; int n_stop_strings; /* matched on the detokenized output */
    /* Detokenizer hook for stop strings: writes the text of one token, returns its length. */
    int (*token_text)(void *ud, int32_t token, char *buf, int cap);
    /* Called after every generated token; return nonzero to stop that sequence. May be NULL. */
    int (*on_token)(void *ud, int seq, int32_t token, float logp);
    void *ud;
} m2_gen_config;

typedef struct m2_gen_result {
    int32_t *tokens;    /* [n] generated tokens (prompt excluded, stop token included) */
    float *logps;       /* [n] model log-prob of each generated token (temperature 1) */
    int n;
    int stop_reason;    /* M2_STOP_* */
    char *text;         /* detokenized output when token_text was given (else NULL) */
} m2_gen_result;

/* Generates for n_seq prompts at once (one KV cache, batched decode). out[n_seq] is filled;
 * free each with m2_gen_result_free. */
int m2_generate(m2_model *m, m2_adapter *a, int n_seq, const int32_t *const *prompts,
                const int *prompt_len, const m2_gen_config *g, m2_gen_result *out, m2_err *err);
void m2_gen_result_free(m2_gen_result *r);

/* m2_generate for one prompt on a caller-held cache (its sequence 0), reusing a prefix: the first
 * `reuse` positions already in the cache must hold prompt[0..reuse) run with the same adapter and
 * weights (the caller checks; at most the cache's length and prompt_len - 1 are taken), the rest
 * of the prompt is appended, then tokens are generated as by m2_generate with n_seq = 1. After it
 * the cache holds the prompt and every generated token but the last (kv->len[0] of them), ready
 * for the next call whose prompt extends them. The logits of a reused prefix come from a
 * different blocking of the same computation than a full prefill: equal up to float rounding. */
int m2_generate_cached(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int32_t *prompt, int prompt_len,
                       int reuse, const m2_gen_config *g, m2_gen_result *out, m2_err *err);

/* Log-probabilities of n_cand continuations of one prompt (scoring a fixed set of outputs instead
 * of generating), on a caller-held cache as m2_generate_cached holds it: the first `reuse`
 * positions of its sequence 0 must hold prompt[0..reuse) run with the same adapter and weights.
 * The prompt but its last token is prefilled ONCE into sequence 0 (afterwards kv->len[0] =
 * prompt_len - 1, ready for a next call whose prompt extends this one); each candidate then runs on
 * a copy of that prefix (a scratch cache, a bounded number of candidates per batched pass), so the
 * context is never recomputed per candidate. cand_logp[c] = the sum (mean = 0) or mean (mean = 1,
 * m2_span_logprob) over j of log p(cands[c][j] | prompt, cands[c][0..j)) at temperature 1 (every
 * cand_len >= 1): the training forward's log-probs over prompt + candidate, up to float rounding. */
int m2_kv_score(m2_model *m, m2_adapter *a, m2_kv_cache *kv, const int32_t *prompt, int prompt_len, int reuse,
                int n_cand, const int32_t *const *cands, const int *cand_len, int mean, float *cand_logp,
                m2_err *err);

#endif
