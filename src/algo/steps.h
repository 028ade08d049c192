/* Glue between packed batches (data/pack.h), the engine (model/model.h) and the losses: one
 * gradient computation per stage. Each step runs the forward with a NAMED adapter, gathers action
 * log-probs at the rows tok_action marks and head values at q_pos / v_pos / next_v_pos, applies the
 * loss and backpropagates, so gradients ACCUMULATE into the adapter's and heads' params.g; the
 * caller clips, steps its optimisers (AdamW on adapter and heads with their own learning rates),
 * zeroes grads, and Polyak-updates the target heads (m2_head_polyak).
 *
 * Head-gradient switch: each head's grad_to_body decides whether the critic losses reach the LoRA
 * through the hidden states (the released code leaked them by accident; here it is explicit, and
 * the actor's gradient never includes the critic's unless the switch is on).
 *
 * backward = 0 evaluates the loss only (validation; the ctx may be a scoring ctx).
 *
 * Draws (docs/dist.md): a training step draws ONE seed from its ctx's RNG (the online step: from
 * c_on's) for the LoRA dropout of all its forwards, whatever its batch holds; the batch's sequences
 * are keyed by pb->seq_key (their index in the global batch). The offline step with the sampled
 * anchor also draws ONE anchor key from its rng, from which the states and every sample are derived
 * (anchor_samples samples for each of n_anchor states of the GLOBAL batch, pb->act_base/act_total).
 * So a data-parallel rank draws exactly what one process draws for the whole batch, and its part's
 * masks and samples are those one process gives the same sequences and states. A batch without
 * sequences (a rank's empty part) is accepted by every step: it draws as above, joins cfg->global's
 * sums with zeros and leaves the grads alone. */
#ifndef M2_ALGO_STEPS_H
#define M2_ALGO_STEPS_H
#include "algo/losses.h"
#include "algo/tokens.h"
#include "core/rng.h"
#include "data/pack.h"
#include "model/model.h"

typedef struct m2_step_stats {
    float loss;                          /* total loss of the step */
    float loss_q, loss_v;                /* critic */
    float loss_actor, loss_anchor, kl;   /* actor: data term, anchor term, mean KL per action */
    float q_mean, v_mean, adv_mean, w_mean, clip_frac;
    float adv_std, w_std;                /* spread over the batch's actions: does the weighting act? */
    float surrogate_gain;                /* TeamTR L^ */
    int n_actions, n_tokens, n_anchor;
} m2_step_stats;

/* The engine's view of a packed batch (pointers into pb). */
m2_batch m2_packed_batch_view(const m2_packed_batch *pb);

/* Stage 0 pre-training of a tiny base: mean NLL over EVERY next-token target of the batch
 * (a = NULL trains the base when the model was created with train_base). */
int m2_lm_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, int backward, m2_step_stats *st,
               m2_err *err);

/* SFT on action spans (System 1 SFT, System 2 warm-up): L = -mean_a log pi(a|s). */
int m2_sft_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, m2_reduce red, int backward,
                m2_step_stats *st, m2_err *err);

/* Sums n doubles over the ranks of a data-parallel step in place (algo/train.c sets it; sum NULL:
 * one process). */
typedef struct m2_batch_sum {
    void *ud;
    int (*sum)(void *ud, double *v, int n, m2_err *err);
} m2_batch_sum;

typedef struct m2_critic_cfg {
    float gamma;       /* 0.99 */
    float expectile;   /* IQL tau (0.7; the released offline config's 0.5 = plain MSE) */
} m2_critic_cfg;

typedef struct m2_offline_cfg {
    m2_critic_cfg critic;
    m2_actor_cfg actor;        /* beta, w_max, lambda, released variant */
    m2_reduce reduce;          /* per-action log-prob (mean, as the released offline code) */
    int train_critic, train_actor;
    /* policy-anchored term: anchor_samples actions a^ ~ pi(.|s) for each of n_anchor states of the
     * global batch (distinct, drawn from the step's anchor key; <= 0: every state) */
    int n_anchor;
    int anchor_samples;        /* >= 1 (sys2.offline.anchor_samples) */
    int max_action_tokens;     /* generation cap for a^ */
    m2_sampler sampler;        /* temperature 1 samples pi itself */
    int32_t eos_id;            /* ends a generated action */
    m2_batch_sum global;       /* set: normalised actor weights use the global batch's mean (one sum of 2) */
    /* Score mode (sys2.action_mode: score; NULL: generation): cands gives the candidate outputs of
     * the state whose prefix is prefix[plen] (token ids, each ending in EOS; owned by the callee,
     * valid until its next call); a^ is then the candidate drawn at temperature 1 from the softmax
     * of their log-probs (m2_kv_score, mean of the token log-probs when score_mean, else the sum;
     * agent/choose.h), one uniform of rng. A state it gives no candidate for is generated. */
    int (*cands)(void *ud, const int32_t *prefix, int plen, const int32_t *const **cand, const int **len, int *n,
                 m2_err *err);
    void *cands_ud;
    int score_mean;
} m2_offline_cfg;

/* Offline System 2 step (IQL critic + offline actor with the sampled-action anchor): forward with
 * adapter a; Q, Qbar (target copy) at each action's EOS, V at each state's last token and at the
 * next state; L_Q + L_V into the heads; A = Qbar - V; actor loss on dataset actions; then for each
 * anchor a^ (prefix up to s_t + generated tokens) a second forward scores log pi(a^|s) with gradient
 * and Qbar(s, a^) with the target head, A^ = Qbar(s,a^) - V(s) (stop-grad), and adds the anchor
 * gradient. c must hold the batch and also one sequence + max_action_tokens. rng gives the step's
 * anchor key (one draw when the anchor term is on). */
int m2_offline_step(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, m2_head *v,
                    const m2_packed_batch *pb, const m2_offline_cfg *cfg, m2_rng *rng,
                    m2_step_stats *st, m2_err *err);

typedef struct m2_online_cfg {
    m2_critic_cfg critic;
    float alpha, w_max, eta;   /* AWAC temperature, weight clip, KL coefficient */
    m2_reduce reduce;          /* per-action log-prob and KL (sum, as the released online code) */
    int train_critic, train_actor;
    m2_batch_sum global;       /* set: the AWAC weights' mean is the global batch's (one sum of 2) */
} m2_online_cfg;

/* Online System 2 step (AWAC + exact KL to the frozen offline adapter): a forward of the batch
 * with `off` on c_off (no grads) in the same dropout mode as the training forward with `on` on
 * c_on: the same dropout masks when the two adapters share their LoRA config (a copy, as the
 * pipeline's pi_off is), so while their weights are equal the KL and its gradient are exactly 0.
 * Critic as offline; weights w = min(exp(A/alpha), w_max) normalised over the batch; KL summed
 * exactly over the vocabulary at every action-token row (m2_ctx_kl), reduced per action like the
 * log-prob. c_off's RNG is not used (only c_on's needs checkpointing). */
int m2_online_step(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                   m2_head *q, m2_head *v, const m2_packed_batch *pb, const m2_online_cfg *cfg,
                   m2_step_stats *st, m2_err *err);

/* ---- TeamTR (one agent's update on fresh rollouts) ----
 * Per-row arrays [N] over the batch, used on rows with tok_action >= 0 (the updated agent's tokens;
 * other agents' turns are context): tok_adv = the sequence's group-normalised advantage broadcast to
 * its rows, logp_old = log-probs before the update (m2_score_logprobs), logp_ref = a frozen
 * reference for the k3 penalty (NULL = none). st->kl = D^ (token-decomposed KL(old || new) per
 * sequence), st->surrogate_gain = L^, st->clip_frac. The new policy's forward runs without LoRA
 * dropout, the mode m2_score_logprobs scores logp_old in, so the ratio is exactly 1 (D^ = 0)
 * until the adapter changes. */
typedef struct m2_ppo_cfg {
    float eps_clip;   /* 0.2 */
    float kl_coef;    /* k3 to the reference (0.001 in the released config; 0 = off) */
    /* The backward's gradient times this (0 or 1: as it is). A part of a larger batch passes its
     * share of the batch's token states, so that the parts' gradients of their own means sum to
     * the gradient of the whole batch's mean (TeamTR's update in parts, algo/team_train.c). */
    double grad_scale;
} m2_ppo_cfg;

/* Scoring forward (no grads): logp[N] at action rows, 0 elsewhere. */
int m2_score_logprobs(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, float *logp, m2_err *err);

int m2_ppo_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, const float *tok_adv,
                const float *logp_old, const float *logp_ref, const m2_ppo_cfg *cfg, int backward,
                m2_step_stats *st, m2_err *err);

/* The exact token-level divergence of an agent's update (DESIGN.md §6):
 *   D^ = mean over the batch rows with tok_action >= 0 (the agent's token states s) of
 *        KL(pi_old(.|s) || pi_new(.|s)), summed exactly over the vocabulary,
 * from scoring forwards (no dropout) with adapter `old` on c_old and `neu` on c_new over the same
 * batch (m2_ctx_kl). Equal adapters give exactly 0; the value is never negative. */
int m2_token_divergence(m2_ctx *c_old, m2_ctx *c_new, m2_adapter *old, m2_adapter *neu,
                        const m2_packed_batch *pb, double *D, m2_err *err);
/* Its terms: kl[N] = KL(pi_old(.|s) || pi_new(.|s)) at every row of pb (D^ is their mean over the
 * action rows, m2_token_divergence_mean), for a caller that scores a batch part by part. */
int m2_token_kl_rows(m2_ctx *c_old, m2_ctx *c_new, m2_adapter *old, m2_adapter *neu, const m2_packed_batch *pb,
                     float *kl, m2_err *err);

#endif
