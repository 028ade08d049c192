/* TeamTR pieces (DESIGN.md §6, reference/algorithms.md §3.3) as pure functions over flat per-token
 * arrays. Backward functions ADD into gradient buffers. mask NULL = all valid. */
#ifndef M2_ALGO_TEAMTR_H
#define M2_ALGO_TEAMTR_H
#include <stdint.h>

/* Group-normalised, clipped advantages over n_groups groups of G returns each (R [n_groups*G]):
 *   A = clip((R - mean_g R) / (std_g R + eps), -a_max, a_max)
 * std is the unbiased (G-1) sample deviation, as GRPO's torch.std; a group of 1 gives A = 0. */
void m2_group_advantages(const float *R, int n_groups, int G, float eps, float a_max, float *adv);

typedef struct m2_ppo_stats {
    float clip_frac;        /* fraction of valid tokens whose clipped branch is active (zero grad) */
    float ratio_mean;
    float kl_ref_mean;      /* mean k3 to the reference (0 when no reference) */
    float approx_kl;        /* mean(logp_old - logp_new) over valid tokens */
} m2_ppo_stats;

/* PPO-clip surrogate over tokens, rho = exp(logp_new - logp_old):
 *   L = -(1/N) sum_u m_u min(rho_u A_u, clip(rho_u, 1-eps, 1+eps) A_u)
 *       + kl_coef (1/N) sum_u m_u k3_u,   k3 = r - log r - 1, r = exp(logp_ref - logp_new)
 * (the k3 term only when logp_ref is not NULL). */
float m2_ppo_clip_forward(const float *logp_new, const float *logp_old, const float *adv,
                          const float *logp_ref, const float *mask, int n, float eps, float kl_coef,
                          m2_ppo_stats *st);
/* dL/dlogp_new_u = -m_u rho_u A_u / N where the unclipped branch is the min (else 0)
 *                  + kl_coef m_u (1 - r_u) / N. */
void m2_ppo_clip_backward(const float *logp_new, const float *logp_old, const float *adv,
                          const float *logp_ref, const float *mask, int n, float eps, float kl_coef,
                          float *dlogp_new);

/* Token-decomposed KL estimate on rollouts of the OLD policy, per sequence summed over its tokens:
 *   D = (1/S) sum_s sum_{u in s} m_u (logp_old_u - logp_new_u);  tok_seq[u] in [0, S) or -1.
 * (Unbiased for KL(pi_old || pi_new) on pi_old's samples; the exact per-token version is the
 * engine's m2_ctx_kl of the two forwards.) */
float m2_token_kl_estimate(const float *logp_old, const float *logp_new, const int32_t *tok_seq,
                           const float *mask, int n, int n_seq);

/* The exact token-level divergence from per-row KLs: D^ = mean over the rows with mask 1 (an agent's
 * token states) of max(kl_u, 0). KL is never negative; a row that rounding makes slightly negative
 * counts 0. No valid row: 0. */
double m2_token_divergence_mean(const float *kl, const float *mask, int n);

/* The same from two sets of logits [n, V] (old, new): kl_u = KL(softmax(old_u) || softmax(new_u))
 * summed exactly over the vocabulary (kernels' m2_kl_forward), then the mean above. */
double m2_token_divergence_logits(const float *logits_old, const float *logits_new, const float *mask,
                                  int n, int V);

/* Surrogate gain L^ = mean_u(rho_u A_u) - mean_u(A_u) over valid tokens. */
float m2_surrogate_gain(const float *logp_new, const float *logp_old, const float *adv,
                        const float *mask, int n);

/* Stage certificate proxy C = sum_i L_i - c sum_i sqrt(max(D_i, 0)). */
double m2_stage_certificate(const float *L, const float *D, int n_agents, float c);

/* Spearman's rank correlation of x[0..n) and y[0..n) (ties get their mean rank); 0 when n < 2 or
 * either side is constant. */
double m2_rank_correlation(const double *x, const double *y, int n);
/* The fraction of stages whose certificate exceeds the measured gain (the bound does not hold). */
double m2_violation_rate(const double *certificate, const double *gain, int n);

#endif
