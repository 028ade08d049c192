/* Rows are processed in parallel on the pool (may be NULL); each row is independent, so results
 * do not depend on the thread count. */
/* Losses on logits: token log-probabilities (cross-entropy is -logp), softmax, exact KL between
 * two next-token distributions, and span log-probs (sum or mean over a token span). */
#ifndef M2_LOSS_H
#define M2_LOSS_H
#include <stddef.h>
#include <stdint.h>
#include "core/pool.h"

/* logp[N] = log softmax(logits[n,:])[targets[n]];  lse[N] = logsumexp(logits[n,:]).
 * targets[n] < 0 marks "no target": logp[n] = 0 (lse still computed when lse != NULL). */
void m2_logprob_forward(float *logp, float *lse, const float *logits, const int32_t *targets,
                        int N, int V, m2_pool *pool);
/* dlogits[N,V] += dlogp[n] * (onehot(targets[n]) - softmax(logits[n]))  (rows with target < 0 or
 * dlogp == 0 skipped). lse from the forward (NULL: recomputed). */
void m2_logprob_backward(float *dlogits, const float *dlogp, const float *logits, const float *lse,
                         const int32_t *targets, int N, int V, m2_pool *pool);
/* The same, but dlogits is written (skipped rows set to 0): no zeroing pass beforehand. */
void m2_logprob_backward_set(float *dlogits, const float *dlogp, const float *logits, const float *lse,
                             const int32_t *targets, int N, int V, m2_pool *pool);

/* probs[N,V] = softmax(logits / temperature)  (temperature > 0) */
void m2_softmax_forward(float *probs, const float *logits, int N, int V, float temperature);

/* kl[N] = KL(p || q) = sum_v p_v (log p_v - log q_v), p = softmax(lp[n]), q = softmax(lq[n]). */
void m2_kl_forward(float *kl, const float *lp, const float *lq, int N, int V, m2_pool *pool);
/* dlp[N,V] += dkl[n] * p * (log p - log q - KL);  dlq[N,V] += dkl[n] * (q - p).  Either may be NULL. */
void m2_kl_backward(float *dlp, float *dlq, const float *dkl, const float *lp, const float *lq,
                    int N, int V, m2_pool *pool);

/* Span log-prob: sum (mean=0) or mean (mean=1) of logp[start .. start+len). */
float m2_span_logprob(const float *logp, int start, int len, int mean);
/* dlogp[start .. start+len) += dspan (mean: dspan/len). */
void m2_span_logprob_backward(float *dlogp, float dspan, int start, int len, int mean);

#endif
