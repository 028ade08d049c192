/* Hierarchical records (DESIGN.md §5, algorithms.md §0): one `high` record per episode and one
 * `low` record per sub-goal, built from a trajectory and the env's code-rule segmenter, written as
 * JSON Lines. */
#ifndef M2_HIER_H
#define M2_HIER_H
#include <stdio.h>
#include "core/err.h"
#include "data/traj.h"
#include "env/env.h"

typedef struct cJSON cJSON;

/* Segments t (finished on env) and returns the high record and the low records (an array), as cJSON
 * objects the caller deletes. variant names the data ("expert", "medium"). Sub-goal h counts as
 * completed (flag True, intrinsic reward 1 on its last step) unless it is the last one of an
 * episode that was not won. */
int m2_hier_records(const m2_env *env, const m2_env_traj *t, const char *variant, cJSON **high, cJSON **lows, m2_err *err);

/* One record per line (compact JSON + '\n'). */
int m2_hier_write_line(FILE *f, const cJSON *record, const char *path, m2_err *err);

/* The episode as one JSON object (env, split, index, seed, steps, success, score, return, transcript). */
cJSON *m2_env_traj_to_json(const m2_env_traj *t);

#endif
