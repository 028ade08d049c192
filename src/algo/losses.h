/* Multi2 losses as pure functions over flat per-action arrays (docs/algorithms.md has the formulas).
 *
 * Every loss has a _forward returning the scalar loss and a _backward ADDING d loss / d input into
 * the given gradient buffers (callers zero them). Inputs are per action (or per transition):
 * log-probs from m2_action_logp_forward, head values read at the segment-table positions.
 * mask[i] in {0,1} marks valid entries (NULL = all valid); means are over valid entries, and a batch
 * without valid entries has loss 0 and zero gradient. Weights and advantages are constants
 * (stop-gradient): no function here differentiates through them. */
#ifndef M2_ALGO_LOSSES_H
#define M2_ALGO_LOSSES_H

/* Sum of mask (n when mask is NULL). */
double m2_mask_count(const float *mask, int n);
/* Standard deviation (population) of n values from their sum and sum of squares; 0 when n <= 0. */
double m2_spread(double sum, double sum_sq, double n);

/* ---- SFT / behaviour cloning: L = -(1/N) sum_i m_i logp_i ---- */
float m2_nll_forward(const float *logp, const float *mask, int n);
void m2_nll_backward(const float *mask, int n, float *dlogp);

/* ---- IQL critic ----
 * Expectile value loss, u_i = qbar_i - v_i (qbar from the TARGET Q head, constant):
 *   L_V = (1/N) sum_i m_i |tau - 1(u_i < 0)| u_i^2 ;  dL/dv_i = -2 m_i |tau - 1(u_i<0)| u_i / N */
float m2_iql_value_forward(const float *qbar, const float *v, const float *mask, int n, float tau);
void m2_iql_value_backward(const float *qbar, const float *v, const float *mask, int n, float tau,
                           float *dv);
/* TD targets y_i = r_i + gamma (1 - d_i) v_next_i (v_next constant; ignored when d_i = 1, so the
 * terminal transition's target is r_T; v_next may be NULL when every d_i = 1). */
void m2_td_targets(const float *r, const float *done, const float *v_next, int n, float gamma,
                   float *y);
/* L_Q = (1/N) sum_i m_i (y_i - q_i)^2 ;  dL/dq_i = -2 m_i (y_i - q_i) / N */
float m2_iql_q_forward(const float *q, const float *y, const float *mask, int n);
void m2_iql_q_backward(const float *q, const float *y, const float *mask, int n, float *dq);
/* adv_i = qbar_i - v_i */
void m2_advantages(const float *qbar, const float *v, int n, float *adv);

/* ---- offline actor (System 2) ----
 *   L = -(1/N) sum_i m_i min(exp(beta A_i), w_max) logp_i              (dataset actions)
 *       - lambda (1/M) sum_j ms_j A^_j logp^_j                         (actions SAMPLED from pi)
 * The second, policy-anchored term is a policy gradient on the sampled actions a^_j ~ pi(.|s_j),
 * scored by the critic, A^_j = Qbar(s_j, a^_j) - V(s_j), stop-grad.
 * With normalize, the dataset weights are divided by their mean over the valid entries.
 * Released-code variant (released = 1): no sampled term; the dataset weight becomes
 *   w_i = lambda relu(A_i) + min(exp(beta A_i), w_max), then w_i /= mean_valid(w), NaN -> 0. */
typedef struct m2_actor_cfg {
    float beta;       /* inverse temperature of the AWR weight (released: 10) */
    float w_max;      /* weight clip (released: 20) */
    float lambda;     /* anchor coefficient (released: 7) */
    int released;     /* 1 = the released code's weight variant instead of the sampled anchor */
    int normalize;    /* sampled variant: divide the dataset weights by their valid batch mean
                         (the released variant always does, as the released code) */
    int given_norm;   /* 1: divide by norm instead (a data-parallel step's global batch mean) */
    double norm;
} m2_actor_cfg;

/* 1 when the dataset weights are divided by their batch mean (normalize or released). */
int m2_actor_normalizes(const m2_actor_cfg *cfg);
/* The masked sum of the unnormalised dataset weights (their batch mean = sum / valid count). */
double m2_actor_raw_sum(const m2_actor_cfg *cfg, const float *adv, const float *mask, int n);

typedef struct m2_actor_stats {
    float loss_data, loss_anchor;  /* the two terms of the loss (anchor 0 in the released variant) */
    float w_mean, w_max_seen;      /* dataset weights over valid entries */
    float clip_frac;               /* fraction of valid dataset weights clipped at w_max */
    float adv_mean, adv_sampled_mean;
    float adv_std, w_std;          /* spread of the advantages and weights over valid entries */
} m2_actor_stats;

/* Anchor term: L = -lambda (1/M) sum_j ms_j A^_j logp^_j ; dL/dlogp^_j = -lambda ms_j A^_j / M
 * (entries with a non-finite A^ are left out of the sum). */
float m2_anchor_forward(const float *adv_s, const float *logp_s, const float *mask_s, int m,
                        float lambda);
void m2_anchor_backward(const float *adv_s, const float *mask_s, int m, float lambda,
                        float *dlogp_s);

/* The whole offline actor loss. Dataset arrays [n], sampled arrays [m] (m may be 0, and they are
 * ignored in the released variant). st may be NULL. */
float m2_offline_actor_forward(const m2_actor_cfg *cfg,
                               const float *adv, const float *logp, const float *mask, int n,
                               const float *adv_s, const float *logp_s, const float *mask_s, int m,
                               m2_actor_stats *st);
void m2_offline_actor_backward(const m2_actor_cfg *cfg,
                               const float *adv, const float *mask, int n,
                               const float *adv_s, const float *mask_s, int m,
                               float *dlogp, float *dlogp_s);

/* ---- online AWAC + exact KL (System 2 online) ----
 *   w_i = min(exp(A_i / alpha), w_max), then w_i /= mean_valid(w)   (non-finite A -> 0)
 *   L = -(1/N) sum_i m_i w_i logp_on_i + eta (1/N) sum_i m_i KL_i
 * KL_i = the action's exact KL(pi_on || pi_off), summed over the vocabulary at each of its tokens and
 * reduced over the tokens like the log-prob (the engine's m2_ctx_kl, then m2_action_logp_forward).
 * The online step takes d loss / d KL_i from m2_awac_backward, spread over the action's rows, as
 * the row weights of m2_ctx_kl's gradient. */
void m2_awac_weights(const float *adv, const float *mask, int n, float alpha, float w_max, float *w);
/* The two halves of m2_awac_weights, for a batch split across ranks (the mean is then the global
 * batch's): m2_awac_raw_weights writes the clipped exponentials and returns their masked sum;
 * m2_awac_normalize divides them by mean (mean <= 0: all 0). */
double m2_awac_raw_weights(const float *adv, const float *mask, int n, float alpha, float w_max, float *w);
void m2_awac_normalize(float *w, int n, double mean);
float m2_awac_forward(const float *w, const float *logp, const float *kl, const float *mask, int n,
                      float eta);
void m2_awac_backward(const float *w, const float *mask, int n, float eta, float *dlogp, float *dkl);

#endif
