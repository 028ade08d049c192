/* Episode trajectories over any env.h environment, and the policies that produce them without a
 * model: the expert oracle, a uniform random policy over the admissible actions, and "medium"
 * (the oracle with documented noise, docs/env-tools.md). */
#ifndef M2_TRAJ_H
#define M2_TRAJ_H
#include <stdint.h>
#include "core/err.h"
#include "env/env.h"

typedef struct m2_env_step_rec {
    char *action, *observation;   /* the action taken and the observation it produced */
    float reward, score;
    int done, won, valid;
} m2_env_step_rec;

typedef struct m2_env_traj {
    const char *env_name;          /* the class name (static) */
    char *task;                    /* task family asked for, or NULL */
    m2_split split;
    int index;
    uint64_t seed;
    char *task_text, *first_obs;
    m2_env_step_rec *steps;
    int n, cap;
    float ret, score;              /* sum of rewards; score of the last step (0 if no step) */
    int won, noisy_steps;
} m2_env_traj;

void m2_env_traj_free(m2_env_traj *t);

typedef enum m2_policy_kind { M2_POLICY_ORACLE = 0, M2_POLICY_RANDOM = 1, M2_POLICY_MEDIUM = 2 } m2_policy_kind;

/* The medium policy's default noise (config data.medium_noise, `multi2 data --noise`). */
#define M2_MEDIUM_NOISE_DEFAULT 0.3f

typedef struct m2_rollout_opts {
    m2_policy_kind policy;
    int max_steps;       /* episode cap (the callers' step limit, 50 in Glider/Multi²) */
    float noise;         /* medium: probability of replacing the expert action (M2_MEDIUM_NOISE_DEFAULT) */
    uint64_t policy_seed;/* random/medium draws: stream (policy_seed, index) */
} m2_rollout_opts;

/* "oracle" | "random" | "medium" -> kind; -1 if unknown. */
int m2_policy_parse(const char *s);
const char *m2_policy_name(m2_policy_kind k);

/* Resets env to (task, split, index, seed) and plays one episode with the chosen policy. The env
 * keeps the finished episode (segmenters read it). An oracle that has no action ends the episode. */
int m2_rollout(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
               const m2_rollout_opts *opts, m2_env_traj *out, m2_err *err);

#endif
