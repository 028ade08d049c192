/* Token-level pieces the losses stand on: log-softmax gather of the target token, the exact
 * per-token KL between two logit rows (both thin wrappers over the engine's kernels/loss.h, the one
 * implementation in the project, adding row masks), and the reduction of token log-probs to one
 * log-prob per action (sum or mean of its tokens).
 *
 * Conventions for every backward in algo/: gradients are ADDED into the output buffers (callers
 * zero them), so several losses can share one gradient buffer (e.g. NLL and KL on the same logits).
 * Shapes are given as [rows, cols] in row-major flat arrays. */
#ifndef M2_ALGO_TOKENS_H
#define M2_ALGO_TOKENS_H
#include <stdint.h>

/* How one action's log-probability is formed from its tokens' log-probs. */
typedef enum m2_reduce {
    M2_REDUCE_SUM = 0,    /* log pi(a|s) = sum_u log p(y_u|...)     (Multi2 online code) */
    M2_REDUCE_MEAN = 1    /* log pi(a|s) = (1/|a|) sum_u log p(...)  (Multi2 offline/SFT, GLIDER) */
} m2_reduce;

/* "sum" / "mean" -> enum; -1 if unknown. */
int m2_reduce_parse(const char *s);
const char *m2_reduce_name(m2_reduce r);

/* Numerically stable log-softmax of one row: out[V] = z - logsumexp(z). Returns logsumexp(z). */
double m2_log_softmax_row(const float *z, int V, float *out);

/* logp[i] = log softmax(z[i,:])[target[i]] for rows with mask[i] != 0 (mask NULL = all); 0 elsewhere.
 * z [n, V], target [n] in [0, V). */
void m2_logp_gather_forward(const float *z, const int32_t *target, const float *mask, int n, int V,
                            float *logp);
/* dz[i,:] += dlogp[i] * (onehot(target[i]) - softmax(z[i,:]))  for masked rows. */
void m2_logp_gather_backward(const float *z, const int32_t *target, const float *mask, int n, int V,
                             const float *dlogp, float *dz);

/* Exact KL(p || q) = sum_v p_v (log p_v - log q_v), p = softmax(z_p), q = softmax(z_q), one row. */
double m2_kl_row_forward(const float *z_p, const float *z_q, int V);
/* dz_p[j] += dkl * p_j (log p_j - log q_j - KL). No gradient to z_q (the frozen reference). */
void m2_kl_row_backward(const float *z_p, const float *z_q, int V, float dkl, float *dz_p);

/* Per-token action membership -> per-action log-prob.
 * tok_action[i] = index of the action whose token is PREDICTED at row i, or -1 (prompt, state,
 * padding). act_logp[a] = sum or mean over that action's rows of tok_logp; actions without tokens
 * get 0. n_act_tok[a] (required) receives each action's token count. */
void m2_action_logp_forward(const float *tok_logp, const int32_t *tok_action, int n_tok, int n_act,
                            m2_reduce red, float *act_logp, int32_t *n_act_tok);
/* dtok_logp[i] += dact_logp[a] (sum) or dact_logp[a] / |a| (mean) for rows i of action a.
 * n_act_tok from the forward. */
void m2_action_logp_backward(const float *dact_logp, const int32_t *tok_action, int n_tok,
                             const int32_t *n_act_tok, m2_reduce red, float *dtok_logp);

#endif
