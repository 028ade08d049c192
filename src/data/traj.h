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

/* A sub-goal the rollout pursued: steps [first, last] (inclusive); success = the environment's
 * predicate held after its last step (env.h subgoal_done). */
typedef struct m2_env_subgoal_rec {
    char *text;
    int first, last;
    int success;
} m2_env_subgoal_rec;

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
    /* hierarchical rollouts (m2_rollout_opts.hierarchical): the sub-goals, in order */
    m2_env_subgoal_rec *subgoals;
    int n_subgoals, cap_subgoals;
} m2_env_traj;

void m2_env_traj_free(m2_env_traj *t);

typedef enum m2_policy_kind { M2_POLICY_ORACLE = 0, M2_POLICY_RANDOM = 1, M2_POLICY_MEDIUM = 2 } m2_policy_kind;

/* The medium policy's default noise (config data.medium_noise, `multi2 data --noise`). */
#define M2_MEDIUM_NOISE_DEFAULT 0.3f
/* System 2's default steps per sub-goal (config sys2.subgoal_budget; the agent loop's default). */
#define M2_SUBGOAL_BUDGET_DEFAULT 10

typedef struct m2_rollout_opts {
    m2_policy_kind policy;
    int max_steps;       /* episode cap (the callers' step limit, 50 in Glider/Multi²) */
    float noise;         /* medium: probability of replacing the expert action (M2_MEDIUM_NOISE_DEFAULT) */
    uint64_t policy_seed;/* random/medium draws: stream (policy_seed, index) */
    /* 1: play sub-goal by sub-goal as the agent does: at each sub-goal start the expert's next
     * sub-goal (env subgoal_next), then the policy's actions until the environment says it holds
     * (success), subgoal_budget steps pass (0: no budget), or the episode ends (failure). */
    int hierarchical;
    int subgoal_budget;
} m2_rollout_opts;

/* "oracle" | "random" | "medium" -> kind; -1 if unknown. */
int m2_policy_parse(const char *s);
const char *m2_policy_name(m2_policy_kind k);

/* Resets env to (task, split, index, seed) and plays one episode with the chosen policy. The env
 * keeps the finished episode (segmenters read it). An oracle that has no action ends the episode. */
int m2_rollout(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
               const m2_rollout_opts *opts, m2_env_traj *out, m2_err *err);

#endif
