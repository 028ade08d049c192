/* Evaluation (DESIGN.md §7): run episodes through the control loop, write one JSONL record per
 * episode, and aggregate per split and per difficulty bucket: pass@1 (success rate of one greedy
 * attempt), mean score, mean steps, tokens per episode per system (prompt and generated), System 1
 * calls per episode, invalid-action rate (invalid steps / all steps). */
#ifndef M2_AGENT_EVAL_H
#define M2_AGENT_EVAL_H
#include <stdio.h>
#include "agent/loop.h"

typedef struct m2_eval_cell {
    char split[8];
    char bucket[48];   /* "all" or the bucket label */
    int n, success;
    double score, steps, sys1_prompt, sys1_gen, sys2_prompt, sys2_gen, sys1_calls, invalid;
} m2_eval_cell;

typedef struct m2_eval_agg {
    m2_eval_cell *cells;
    int n, cap;
} m2_eval_agg;

void m2_eval_agg_init(m2_eval_agg *a);
void m2_eval_agg_free(m2_eval_agg *a);
/* Counts the episode in (split, "all") and, when ep->bucket is set, in (split, bucket). */
int m2_eval_agg_add(m2_eval_agg *a, const m2_episode *ep, m2_err *err);
const m2_eval_cell *m2_eval_agg_find(const m2_eval_agg *a, const char *split, const char *bucket);
/* {"id": {"all": {...}, "buckets": {"<b>": {...}}}, "ood": ...}; each {...} holds episodes, pass@1,
 * score, steps, tokens{sys1_prompt, sys1_gen, sys2_prompt, sys2_gen, total}, sys1_calls,
 * invalid_action_rate. malloc'd. */
char *m2_eval_agg_to_json(const m2_eval_agg *a);

/* Difficulty bucket of an episode from the env's describe() JSON: its "difficulty" field (string or
 * number), else "depth N" (TextCraft crafting depth), else the ALFWorld task type, else the
 * ScienceWorld task family; NULL when none is there. malloc'd. */
char *m2_eval_bucket(m2_env *env, const char *task, m2_split split, int index);

/* Episodes first .. first+n-1 of (task, split) with episode seed = seed + index; each record is
 * written to jsonl (may be NULL) and added to agg (may be NULL). */
int m2_eval_run(m2_env *env, const char *task, m2_split split, int first, int n, uint64_t seed,
                const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg, FILE *jsonl,
                m2_eval_agg *agg, m2_err *err);

#endif
