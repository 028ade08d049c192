/* Stage loops over the per-step glue (algo/steps.h): System 1 SFT / System 2 warm-up with held-out
 * early stopping, System 2 offline RL, System 2 online refinement. They know nothing about run
 * folders: metrics and checkpoints go through hooks, and everything a checkpoint needs besides the
 * engine's params (adapter/head weights, AdamW moments and step counts, head targets) is in
 * m2_train_state (plain numbers), the caller's m2_rng, and the replay buffer (m2_replay_save).
 * Resuming = restoring those and calling the loop again with the restored state: the batches,
 * samples and updates continue exactly (tested bit for bit). */
#ifndef M2_ALGO_TRAIN_H
#define M2_ALGO_TRAIN_H
#include "agent/collect.h"
#include "agent/loop.h"
#include "agent/replay.h"
#include "algo/steps.h"
#include "data/seqset.h"
#include "dist/dist.h"

typedef struct m2_train_hooks {
    void *ud;
    /* n named scalars at a global step (e.g. "sys2/actor_loss"); may be NULL */
    int (*log)(void *ud, int64_t step, const char *const *names, const double *values, int n, m2_err *err);
    /* after every optimiser step, with the state already advanced (checkpoint here); may be NULL */
    int (*after_step)(void *ud, int64_t step, m2_err *err);
    /* Online RL only: with the number of epochs done, after each collect/update epoch and with 0
     * before the first collection of a fresh stage; step as in log. Whatever it does must leave
     * the training's state and RNG streams alone: a resumed stage calls it again exactly where
     * an uninterrupted one does (a checkpoint taken at an epoch's last update precedes it). May
     * be NULL. */
    int (*epoch_end)(void *ud, int64_t epochs_done, int64_t step, m2_err *err);
    /* Data parallel (docs/dist.md): the ranks that run this loop in lock-step, each with the same
     * model, state and data; NULL or one rank = this process alone, exactly as without MPI. Every
     * global batch is split by m2_dist_shard (contiguous blocks of its sequences, or of the
     * sequences sampled from the replay buffer); each rank's gradient of its block's mean loss is
     * weighted by its share of the loss's count (tokens in pre-training, actions elsewhere) and the
     * weighted gradients of everything trained are summed in ONE all-reduce per step, so clipping,
     * AdamW and the schedule see the global batch's gradient on every rank. Every rank draws from
     * its RNG streams exactly what one process draws for the whole batch (algo/steps.h: dropout
     * masks keyed by the global batch position, anchor samples by the global sample index), so
     * the streams stay in lock-step and the masks and samples are one process's. Online episodes
     * are split the same way and gathered in episode order (every rank's buffer = one process's;
     * each episode samples from its own stream, agent/loop.h m2_episode_stream). Logged numbers
     * are the global batch's. */
    m2_dist *dist;
} m2_train_hooks;

/* The data-parallel reduction of one step (the one all-reduce every training loop uses, TeamTR's
 * too): turns this rank's gradient of its block's mean loss (over n_local counted items) into the
 * global batch's gradient in every group of g[0..k) (groups without grads are skipped): g <- sum_r
 * (n_r / N) g_r, all groups packed into ONE deterministic all-reduce. means[0..n_means) are this
 * block's means and become the global batch's (weighted by n_r / N); sums[0..n_sums) are summed.
 * *n_total (may be NULL) receives N. k = 0 reduces the numbers alone. Alone (d NULL or one rank):
 * nothing changes (*n_total = n_local), so a 1-process run computes what it did without MPI. */
int m2_dp_reduce(m2_dist *d, m2_params *const *g, int k, double n_local, double *means, int n_means,
                 double *sums, int n_sums, double *n_total, m2_err *err);

typedef struct m2_train_state {
    int64_t step;        /* optimiser steps done in this stage */
    int64_t epoch;       /* data cursor: epoch ... */
    int pos;             /* ... and position in it (online: updates done in the epoch, -1 = collect first) */
    double best_val;     /* early stopping: best validation loss (INFINITY before the first) */
    int bad_evals;       /* validations without improvement since the best */
    int stopped;         /* 1 once early stopping fired (the best weights were restored) */
} m2_train_state;

void m2_train_state_init(m2_train_state *s);

/* One parameter group's optimiser, the same in every loop: the step's gradient (accumulated into
 * params.g since the loop zeroed it) is clipped to grad_clip by its global norm, then AdamW steps at
 * the learning rate the schedule gives for the loop's 0-based step (model/optim.h m2_lr_at). The
 * schedule fields left 0 mean a constant lr. */
typedef struct m2_opt_opts {
    float lr;                  /* peak learning rate */
    float weight_decay;
    float grad_clip;           /* <= 0: off */
    float beta1, beta2, eps;   /* <= 0: M2_ADAMW_BETA1, M2_ADAMW_BETA2, M2_ADAMW_EPS */
    int decay;                 /* M2_DECAY_CONSTANT (0), M2_DECAY_COSINE, M2_DECAY_LINEAR */
    long warmup;               /* linear warm-up steps (0: none) */
    float min_lr;              /* the decay's floor */
    long total;                /* the steps the warm-up and decay span */
} m2_opt_opts;

/* The AdamW constants a group gets when its m2_opt_opts leaves them 0 (PyTorch's defaults). */
#define M2_ADAMW_BETA1 0.9f
#define M2_ADAMW_BETA2 0.999f
#define M2_ADAMW_EPS 1e-8f

/* ---- Stage 0: pre-training a tiny base (or an adapter) on next-token prediction ---- */
typedef struct m2_lm_opts {
    m2_opt_opts opt;
    int batch;
    int64_t steps;           /* optimiser steps (0: none); the batches cycle through as many epochs as needed */
    uint64_t seed;           /* batch order */
    const char *prefix;      /* metric prefix, e.g. "pretrain" */
} m2_lm_opts;

/* a = NULL trains the base (the model created with train_base). Logs <prefix>/loss, /lr,
 * /grad_norm (before clipping) and /tokens every step. */
int m2_train_lm(m2_model *m, m2_ctx *c, m2_adapter *a, const m2_seqset *set, const int *idx, int n,
                const m2_lm_opts *o, m2_train_state *st, const m2_train_hooks *h, m2_err *err);

/* ---- SFT (System 1 on high records; System 2 warm-up on low records) ---- */
typedef struct m2_sft_opts {
    m2_opt_opts opt;
    m2_reduce reduce;
    int batch, epochs;
    int64_t max_steps;       /* 0: epochs decide */
    int eval_every;          /* validate every N steps and at each epoch end (0: epoch ends only) */
    int patience;            /* stop after N validations without improvement (0: never) */
    float min_delta, min_rel_improve;  /* improvement = drop > max(min_delta, min_rel * |best|) */
    uint64_t seed;           /* batch order */
    const char *prefix;      /* metric prefix, e.g. "sys1" or "sys2_warmup" */
} m2_sft_opts;

/* best_w: [a->params.n] buffer receiving the best weights (may be NULL without validation);
 * on early stop they are copied back into the adapter. cval: a scoring ctx for validation. */
int m2_train_sft(m2_ctx *c, m2_ctx *cval, m2_adapter *a, const m2_seqset *set, const int *train,
                 int n_train, const int *val, int n_val, const m2_sft_opts *o, m2_train_state *st,
                 float *best_w, const m2_train_hooks *h, m2_err *err);
/* Mean per-action NLL over the given sequences (scoring only). */
int m2_eval_nll(m2_ctx *c, m2_adapter *a, const m2_seqset *set, const int *idx, int n, int batch,
                m2_reduce red, double *loss, m2_err *err);

/* ---- System 2 offline RL ---- */
typedef struct m2_offline_opts {
    m2_offline_cfg step;
    m2_opt_opts actor, critic;
    float polyak;            /* target heads: tau per step */
    int batch, epochs;
    int64_t max_steps;
    uint64_t seed;           /* batch order */
} m2_offline_opts;

int m2_train_offline(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, m2_head *v,
                     const m2_seqset *set, const int *idx, int n, const m2_offline_opts *o,
                     m2_train_state *st, m2_rng *rng, const m2_train_hooks *h, m2_err *err);

/* ---- System 2 online refinement ---- */
typedef struct m2_online_opts {
    m2_online_cfg step;
    m2_opt_opts actor, critic;
    float polyak;
    int epochs, episodes_per_epoch, updates_per_epoch, batch;
    int max_tokens;          /* packing limit of a buffer segment (longer ones are skipped) */
    const char *task;        /* env task family (NULL = all) */
    m2_split split;          /* collection split (train) */
    uint64_t seed;           /* episode seeds (seed + position in the episode order) */
} m2_online_opts;

/* Per epoch: episodes_per_epoch rollouts (sys1 frozen; sys2 = the online policy, e.g. an
 * m2_model_policy sampling with `on`) pushed into buf, then updates_per_epoch AWAC + KL updates on
 * batches sampled from buf. Epoch e plays positions e*episodes_per_epoch .. of the episode order
 * of (task, split) (data/episodes.h: the task types in turn). */
int m2_train_online(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                    m2_head *q, m2_head *v, m2_env *env, const m2_policy *sys1, const m2_policy *sys2,
                    const m2_loop_cfg *lc, m2_replay *buf, const m2_tok_iface *tok,
                    const m2_online_opts *o, m2_train_state *st, const m2_train_hooks *h, m2_err *err);

#endif
