/* The reduction of token log-probs to one log-prob per action (sum or mean of its tokens). The
 * token-level pieces under it, the log-softmax gather of the target token and the exact per-token
 * KL between two next-token distributions, are the engine's (m2_ctx_logprobs and m2_ctx_kl over
 * kernels/loss.h, the one implementation in the project).
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
