/* Evaluation (DESIGN.md §7): run episodes through the control loop, write one JSONL record per
 * episode, and aggregate per split and per task type (data/episodes.h): pass@1 (success rate of one greedy
 * attempt), mean score, mean steps, tokens per episode per system (prompt and generated), System 1
 * calls per episode, invalid-action rate (invalid steps / all steps). */
#ifndef M2_AGENT_EVAL_H
#define M2_AGENT_EVAL_H
#include <stdio.h>
#include "agent/loop.h"
#include "core/strbuf.h"
#include "data/traj.h"

typedef struct m2_eval_cell {
    char split[8];
    char *task_type;   /* "all" or the task type (owned by the aggregate) */
    int n, success;
    double score, steps, sys1_prompt, sys1_gen, sys2_prompt, sys2_gen, sys1_calls, invalid;
} m2_eval_cell;

typedef struct m2_eval_agg {
    m2_eval_cell *cells;
    int n, cap;
} m2_eval_agg;

void m2_eval_agg_init(m2_eval_agg *a);
void m2_eval_agg_free(m2_eval_agg *a);
/* Counts the episode in (split, "all") and, when ep->task_type is set, in (split, task type). */
int m2_eval_agg_add(m2_eval_agg *a, const m2_episode *ep, m2_err *err);
/* The same for an episode played without the control loop (`multi2 eval --policy oracle|random`):
 * no tokens, no System 1 calls. */
int m2_eval_agg_add_traj(m2_eval_agg *a, const m2_env_traj *t, const char *task_type, m2_err *err);
/* An evaluated episode as it travels between the ranks of an evaluation (dist/dist.h
 * m2_dist_map_ordered): what the aggregate reads, its task type and its record line. put appends it
 * to b; get reads one episode's bytes back into ep (its task type and *rec point into buf; the
 * other fields are zero): m2_eval_agg_add(ep) then counts what the original would. */
int m2_eval_wire_put(m2_strbuf *b, const m2_episode *ep, const char *rec, m2_err *err);
int m2_eval_wire_get(const char *buf, size_t len, m2_episode *ep, const char **rec, m2_err *err);
/* The episode record's summary of a reference policy's trajectory (no tokens, no System 1 calls),
 * as m2_eval_agg_add_traj counts it; ep->task_type borrows task_type (do not free ep). */
void m2_eval_traj_episode(const m2_env_traj *t, const char *task_type, m2_episode *ep);
const m2_eval_cell *m2_eval_agg_find(const m2_eval_agg *a, const char *split, const char *task_type);
/* {"id": {"all": {...}, "task_types": {"<type>": {...}}}, "ood": ...}; each {...} holds episodes,
 * pass@1, successes, score, steps, tokens{sys1_prompt, sys1_gen, sys2_prompt, sys2_gen, total},
 * sys1_calls, invalid_action_rate. malloc'd. */
char *m2_eval_agg_to_json(const m2_eval_agg *a);

/* Positions first .. first+n-1 of the episode order of (task, split) (data/episodes.h: evenly
 * across task types), position k with episode seed = seed + k; each record (naming its task type)
 * is written to jsonl (may be NULL) and added to agg (may be NULL). */
int m2_eval_run(m2_env *env, const char *task, m2_split split, int first, int n, uint64_t seed,
                const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg, FILE *jsonl,
                m2_eval_agg *agg, m2_err *err);

#endif
