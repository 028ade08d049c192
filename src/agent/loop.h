/* The System 1 / System 2 control loop over an env.h environment (DESIGN.md §6-7).
 *
 * Per episode:
 *   reset; System 1 (planner) is called at the start with its context
 *       [high prompt + " " + task][state_1][g_1 EOS][state_2] ...,  state = "Group action:
 *       ['a', 'b']. Current observation: o" (data/prompts.h, the data writer's exact strings); its
 *       output is cut to the first line -> sub-goal g;
 *   System 2 (executor) is then called step by step with
 *       [low prompt + " Subtask: " + g]["Obs: o_0"][a_1 EOS]["Obs: o_1"] ...
 *   where the prompt and the first state come from m2_prompt_low_start (data/prompts.h): with
 *   low_parts.task_info they carry the episode's task information (TextCraft's crafting commands,
 *   ALFWorld's room description) at every sub-goal, as the data writer's records do;
 *   its output is parsed "action; True|False" (agent/parse.h) and the action sent to the env
 *   (action_mode score: the output is the candidate "a; True|False" it chose among the
 *   environment's admissible actions, agent/choose.h);
 *   System 1 is called again only when System 2 flags its sub-goal done, or after
 *   subgoal_budget System 2 steps on one sub-goal; the episode ends when the env says done or after
 *   step_limit env steps (System 2 steps; 50 by default).
 * flat = 1 (the flat single-model baseline): no System 1; System 2 gets the task as its sub-goal and
 * its flag is ignored.
 *
 * Policies sit behind function pointers, so the same loop runs scripted/oracle policies now and the
 * model (named adapter per role) later. */
#ifndef M2_AGENT_LOOP_H
#define M2_AGENT_LOOP_H
#include <stdint.h>
#include "core/err.h"
#include "data/pack.h"
#include "agent/choose.h"
#include "data/prompts.h"
#include "env/env.h"

typedef enum m2_role { M2_ROLE_SYS1 = 1, M2_ROLE_SYS2 = 2 } m2_role;

typedef struct m2_policy {
    void *ctx;
    /* Generates the next output for `role` from its context (prompt, alternating states/actions;
     * the last state is the current one: n_states == n_actions + 1). *out is malloc'd text (the
     * loop frees it); *n_prompt_tok / *n_gen_tok the tokens this call consumed and produced. */
    int (*generate)(void *ctx, m2_role role, const m2_traj *context, char **out, int *n_prompt_tok,
                    int *n_gen_tok, m2_err *err);
    /* Optional (may be NULL): called at the start of every episode, before any generate, with the
     * episode's sampling stream (m2_episode_stream); a policy that samples draws from that stream
     * alone, and a policy that carries state between calls (the model policy's KV caches) drops it
     * here, so no state outlives an episode (weights may change between episodes; runs resume at
     * their boundaries) and an episode's samples do not depend on the episodes played before it. */
    void (*reset)(void *ctx, uint64_t stream);
    /* Optional (NULL: the policy only generates; needed for System 2 in M2_ACTION_MODE_SCORE): picks
     * one of n candidate outputs (agent/choose.h) for `role` from its context: *pick in [0, n), or
     * -1 when the policy cannot act (the context alone exceeds its window). *n_prompt_tok /
     * *n_gen_tok: the context's tokens and the candidate tokens scored. */
    int (*choose)(void *ctx, m2_role role, const m2_traj *context, const char *const *cands, int n, int *pick,
                  int *n_prompt_tok, int *n_gen_tok, m2_err *err);
} m2_policy;

typedef struct m2_loop_cfg {
    int step_limit;          /* env steps per episode (50) */
    int subgoal_budget;      /* System 2 steps per sub-goal before System 1 is asked again; <= 0: none */
    int flat;                /* 1: no hierarchy (baseline) */
    const char *high_prompt; /* NULL: data/prompts.h planner context (M2_PROMPT_HIGH + " " + task) */
    const char *low_prompt;  /* NULL: data/prompts.h Multi2 executor context (+ " Subtask: " + g) */
    m2_low_parts low_parts;  /* config prompt.low.* (data/prompts.h); default M2_LOW_PARTS_DEFAULT */
    const char *env_name;    /* for the episode record; NULL: env->cls->name */
    /* System 2's action (config sys2.action_mode; the flat policy too): generated, or chosen by
     * sys2->choose among the environment's admissible actions with both flag values
     * (agent/choose.h); a state without admissible actions gets an empty output (an invalid step) */
    m2_action_mode action_mode;
    uint64_t round;          /* the collection the episodes belong to (online: the epoch; 0 otherwise),
                              * part of each episode's sampling stream (m2_episode_stream) */
} m2_loop_cfg;

void m2_loop_cfg_default(m2_loop_cfg *cfg);   /* 50 steps, budget 10, hierarchical, task information */

typedef struct m2_step_rec {
    char *raw;          /* System 2's output as generated */
    char *action;       /* parsed action sent to the env ("None" on parse failure) */
    char *obs;          /* observation after the step */
    int flag;           /* sub-goal done flag */
    int parsed;         /* 1 when the output matched "action; True|False" */
    int valid;          /* the env knew the command (env step_result.valid) */
    float reward;
    int done;
    int met;            /* the environment's predicate for the sub-goal held after the step (flat: won) */
} m2_step_rec;

typedef struct m2_subgoal_rec {
    char *text;         /* parsed sub-goal */
    char *raw;          /* System 1's output as generated (NULL in flat mode) */
    char *state;        /* System 1 state it was generated from */
    char *obs0;         /* observation System 2 started the sub-goal from */
    int first, n;       /* steps [first, first + n) */
    int flagged;        /* ended by System 2's done flag */
    int success;        /* System 2 flagged it done while the environment's predicate held (flat: won) */
} m2_subgoal_rec;

typedef struct m2_episode {
    char env[32];
    char split[8];
    int index;
    uint64_t seed;
    char *task;
    char *first_obs;               /* the reset observation (System 2's task information comes from it) */
    char *task_type;               /* task type (data/episodes.h), set by the evaluation; NULL = none */
    int steps, sys1_calls, sys2_calls;
    int invalid;                   /* steps whose output did not parse or the env did not know */
    int parse_fail;
    long sys1_prompt_tok, sys1_gen_tok, sys2_prompt_tok, sys2_gen_tok;
    int success;                   /* env won */
    float score;                   /* env score at the end */
    float ret;                     /* sum of env rewards */
    int hit_limit;                 /* ended by the step limit */
    m2_step_rec *step;             /* [steps] */
    m2_subgoal_rec *sub;           /* [n_sub] */
    int n_sub, cap_step, cap_sub;
} m2_episode;

/* The one rule for an episode's sampling stream (docs/dist.md): a hash of the collection round
 * (m2_loop_cfg.round), the split and the episode's seed (the caller's base + its position in the
 * episode order), handed to the policies' reset; a sampling policy mixes in its own seed (the run's
 * seed for its stage and role). So an episode draws the same samples whichever process plays it and
 * however many episodes that process played before it. */
uint64_t m2_episode_stream(uint64_t round, m2_split split, uint64_t episode_seed);

int m2_run_episode(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
                   const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg,
                   m2_episode *ep, m2_err *err);
void m2_episode_free(m2_episode *ep);

/* One JSON object (no newline; malloc'd): env, split, index, seed, steps, tokens{sys1_prompt,
 * sys1_gen, sys2_prompt, sys2_gen} (members sum to the total), tokens_total, sys1_calls, sys2_calls, invalid_actions, success, score,
 * return, task_type, task, transcript[{subgoal, raw, state, steps[{raw, action, flag, obs, reward,
 * valid}]}]. */
char *m2_episode_to_json(const m2_episode *ep);

/* System 2 segments of an episode (one per sub-goal) for the replay buffer: the contexts System 2
 * saw (prompt and first state from m2_prompt_low_start, then states "Obs: o_1" .. "Obs: o_T"),
 * actions = System 2's raw outputs, per-step env rewards, done = env done. *segs malloc'd (free
 * each with m2_traj_free, then the array). */
int m2_episode_segments(const m2_episode *ep, const m2_loop_cfg *cfg, m2_traj **segs, int *n,
                        m2_err *err);

/* System 1's trajectory of an episode, as its contexts held it: the planner prompt with the task,
 * then per sub-goal the state it was generated from and the sub-goal (the parsed text, which is what
 * the loop puts in System 1's context). A flat episode gives the prompt alone. *tr initialised here
 * (free with m2_traj_free). */
int m2_episode_planner_traj(const m2_episode *ep, const m2_loop_cfg *cfg, m2_traj *tr, m2_err *err);

/* Token count of a context under a tokenizer (BOS + prompt + states + actions + one EOS each), for
 * policies that report prompt tokens without running a model. -1 on error. */
long m2_context_tokens(const m2_tok_iface *tok, const m2_traj *ctx, m2_err *err);

#endif
