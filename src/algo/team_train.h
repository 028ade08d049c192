/* The TeamTR stage loop (DESIGN.md §6, issue #16): a team (agent/team.h) fine-tuned agent by
 * agent inside per-agent token-KL trust regions, and the baselines that differ from it in where
 * the rollouts come from or how the agents are updated.
 *
 * One stage, order sigma over the agents; for each agent i = sigma_j in turn (mode FRESH):
 *   1. G rollouts per task of the stage from the CURRENT team (agents sigma_1..sigma_{j-1} already
 *      updated in this stage);
 *   2. group-normalised advantages of the sequence rewards (m2_group_advantages), broadcast to
 *      agent i's tokens (the other agents' messages are context);
 *   3. snapshot pi_old = agent i's adapter, log-probs of its tokens under it, then `epochs`
 *      PPO-clip steps on agent i alone (m2_ppo_step; optional k3 to its initial policy);
 *   4. after every epoch the exact D^ = mean over agent i's token states of KL(pi_old || pi_new)
 *      on these rollouts (m2_token_divergence); when D^ > delta the step of that epoch is halved
 *      up to `backtrack` times (line search between the last iterate inside the region and the
 *      new one), and when no halving gets back inside, the weights return to the last iterate
 *      inside the region (roll back) and the epochs end. AdamW moments are kept as they are;
 *   5. L^_i = mean(rho A) - mean(A) on agent i's tokens with the final weights.
 * The stage's certificate is sum_i L^_i - c sum_i sqrt(D^_i) (m2_stage_certificate).
 *
 * Modes (the baselines, set from the config by pipe/):
 *   FRESH        as above (TeamTR);
 *   STALE        the stage's rollouts are played ONCE at its start; every agent is updated on them;
 *   STALE_HAPPO  STALE, with each sequence's advantage multiplied by the product of the earlier
 *                updated agents' ratios pi_new/pi_old over their tokens of that sequence (HAPPO),
 *                the product clipped to [1/M2_HAPPO_FACTOR_MAX, M2_HAPPO_FACTOR_MAX];
 *   JOINT        one set of rollouts, every agent's epochs from the same start, and ONE joint
 *                trust region: the token-weighted mean of the agents' D^ must stay <= delta, the
 *                whole team's step is halved / rolled back together.
 * delta = INFINITY: no trust region (D^ still measured and logged). A single agent is a team of one.
 *
 * Randomness: every rollout batch samples from streams derived from (cfg->gen.seed, stage seed,
 * position j), so nothing but the weights carries over between stages (a resumed run needs the
 * adapters and AdamW moments only).
 *
 * Data parallel (docs/dist.md, m2_teamtr.dist): every rollout batch is split across the ranks by
 * m2_dist_shard over its samples; rank r plays its block (each sample's draws depend on its place in
 * the whole batch, agent/team.h, so the samples are one process's) and the rewards are gathered in
 * sample order, so every rank computes the same advantages. A rank then trains on the tokens of
 * the samples it played (the update batch sharded by the rollouts' owner, no transcript travels):
 * each PPO-clip step's gradient of its tokens' mean is weighted by its share of the agent's tokens
 * and summed in the one all-reduce of the training loops (algo/train.h m2_dp_reduce), clipping and
 * AdamW run on the global gradient on every rank; D^, L^ and the logged means are means over every
 * rank's tokens (one deterministic sum each), so the line search and roll-back decide alike on
 * every rank and the ranks' weights stay bit-identical. HAPPO's factors belong to samples, so each
 * rank's stay with it. Against one process only the order of the sums differs (float rounding). */
#ifndef M2_ALGO_TEAM_TRAIN_H
#define M2_ALGO_TEAM_TRAIN_H
#include <stdint.h>
#include "agent/team.h"
#include "dist/dist.h"
#include "model/model.h"

/* HAPPO's product of ratios is clipped to [1/x, x] so one sequence cannot dominate the batch */
#define M2_HAPPO_FACTOR_MAX 10.0

typedef enum m2_teamtr_mode { M2_TT_FRESH = 0, M2_TT_STALE = 1, M2_TT_STALE_HAPPO = 2, M2_TT_JOINT = 3 } m2_teamtr_mode;

typedef struct m2_teamtr_cfg {
    int mode;                 /* m2_teamtr_mode */
    int group;                /* G rollouts per task (4) */
    int epochs;               /* PPO epochs per agent update (each one step on the whole batch) */
    float lr, weight_decay, grad_clip, beta1, beta2, eps;
    float clip;               /* PPO ratio clip (0.2) */
    float kl_init;            /* k3 penalty to the agent's initial policy (0: off) */
    double delta;             /* trust region on D^ (0.01); INFINITY: none */
    int backtrack;            /* step halvings before a roll back (0: roll back at once) */
    float a_max, adv_eps;     /* advantage clip and std epsilon */
    int max_tokens;           /* transcripts cut to this many tokens (0: no cut) */
    int max_batch_tokens;     /* an update's batch in parts of at most this many tokens (0: one part) */
    m2_team_gen gen;          /* rollout sampling */
} m2_teamtr_cfg;

typedef struct m2_teamtr_update {
    int agent;
    double L;                 /* surrogate gain L^ with the final weights */
    double D;                 /* D^ with the final weights (<= delta in a trust region) */
    double D_raw;             /* the largest D^ of an iterate before its line search */
    int out_of_region;        /* 1 when some iterate had D^ > delta */
    int backtracks;           /* halvings done */
    int rolled_back;          /* 1 when the weights returned to the last iterate inside the region */
    double reward_mean;       /* of the rollouts it was trained on */
    double loss, clip_frac;   /* the last epoch's */
    int n_tokens;             /* its token states */
} m2_teamtr_update;

typedef struct m2_teamtr_stage_stats {
    int n;                    /* updates (= agents updated) */
    m2_teamtr_update u[M2_TEAM_MAX];   /* in update order */
    long rollouts;            /* samples played in the stage */
    double reward_mean;       /* of the first rollout batch (the team at the stage start) */
} m2_teamtr_stage_stats;

/* What the loop works with. The caller owns the models, the adapters and the source; ctxs are made
 * here. Agent k is adapter[k] on model[k]; src plays the team with these adapters (agent/team.h). */
typedef struct m2_teamtr {
    int n;                                   /* agents */
    m2_model *model[M2_TEAM_MAX];
    m2_adapter *adapter[M2_TEAM_MAX];        /* the policies being trained */
    m2_adapter *old[M2_TEAM_MAX];            /* per agent: a frozen adapter of the same config (the snapshot) */
    m2_adapter *init[M2_TEAM_MAX];           /* per agent: its initial policy for kl_init (NULL: none) */
    m2_team_source src;                      /* the team's rollouts */
    struct m2_teamtr_ctx *ctx[M2_TEAM_MAX];  /* per distinct model: training and scoring ctxs */
    m2_dist *dist;                           /* the ranks running the loop in lock-step (NULL: alone) */
} m2_teamtr;

/* Plays a batch of n = n_tasks * G samples of src (sample i: task tasks[i / G], id id0 + i) over the
 * ranks of d (NULL: alone, the whole batch here): rank r plays its block (m2_dist_shard), which src
 * keeps for pack, and R[0..n) receives every sample's reward on every rank, in sample order. */
int m2_teamtr_play(const m2_team_source *src, m2_dist *d, const int *tasks, int n_tasks, int G, uint64_t id0,
                   const m2_team_gen *g, float *R, m2_err *err);

/* Mean reward of the team over `samples` plays of each of the first n_tasks tasks of src (sample i:
 * task i / samples, id i), played over the ranks of d as above; per_task (may be NULL) receives each
 * task's mean. */
int m2_teamtr_success(const m2_team_source *src, m2_dist *d, int n_tasks, int samples, const m2_team_gen *g,
                      double *mean, double *per_task, m2_err *err);

/* The agents of a shared-context team (model and adapter of each) into tt. */
void m2_teamtr_set_team(m2_teamtr *tt, const m2_team *t);
void m2_teamtr_free(m2_teamtr *tt);   /* frees the ctxs */

/* One stage over the tasks (indices into the source's task set, n_tasks of them; each is played G
 * times) updating the agents sigma[0..n_sigma) in that order (every agent, or a subset: agents not
 * in sigma keep their weights and only shape the others' rollouts). stage_seed separates the
 * stages' sampling streams. */
int m2_teamtr_stage(m2_teamtr *tt, const int *tasks, int n_tasks, const int *sigma, int n_sigma, uint64_t stage_seed,
                    const m2_teamtr_cfg *cfg, m2_teamtr_stage_stats *st, m2_err *err);

#endif
