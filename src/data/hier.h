/* Hierarchical records (DESIGN.md §5, algorithms.md §0): one `high` record per episode and one
 * `low` record per sub-goal, built from a trajectory and the env's code-rule segmenter, written as
 * JSON Lines. */
#ifndef M2_HIER_H
#define M2_HIER_H
#include <stdio.h>
#include "core/err.h"
#include "data/prompts.h"
#include "data/traj.h"
#include "env/env.h"

typedef struct cJSON cJSON;

/* How records are written; NULL = the defaults (M2_LOW_PARTS_DEFAULT, no task type). */
typedef struct m2_hier_opts {
    m2_low_parts parts;      /* prompt.low.*: the task information in System 2's contexts (data/prompts.h) */
    const char *task_type;   /* written as "task_type" into every record when not NULL (data/episodes.h) */
} m2_hier_opts;

/* The high record and the low records (an array) of t, as cJSON objects the caller deletes.
 * variant names the data ("expert", "medium"). Sub-goals: those a hierarchical rollout pursued
 * (t->subgoals), each completed exactly when the environment's predicate held at its end; else the
 * env's segmenter over the finished trajectory, where every sub-goal counts as completed but the last
 * one of an episode that was not won. A completed sub-goal has flag True and intrinsic reward 1 on its
 * last step; every segment's last step is terminal (done = true) for the critic. A low record's "subtask" (its prompt)
 * and first "obs" come from m2_prompt_low_start, the builder the control loop uses at inference. */
int m2_hier_records(const m2_env *env, const m2_env_traj *t, const char *variant, const m2_hier_opts *opts,
                    cJSON **high, cJSON **lows, m2_err *err);

/* One record per line (compact JSON + '\n'). */
int m2_hier_write_line(FILE *f, const cJSON *record, const char *path, m2_err *err);

/* The episode as one JSON object (env, split, index, seed, steps, success, score, return, transcript). */
cJSON *m2_env_traj_to_json(const m2_env_traj *t);

#endif
