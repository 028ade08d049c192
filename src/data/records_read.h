/* Readers for the hierarchical JSONL records `multi2 data` writes (DESIGN.md §5, reference
 * algorithms.md §0), one JSON object a line:
 *   high (one per episode):  {"task": raw task, "task_description": planner context (prompt + " " +
 *                             task), "obs": [G+1 states "Group action: [..]. Current observation: o"],
 *                             "subtask": [G sub-goals], "reward": [G], "score": [G], "done": [G], ...}
 *   low (one per sub-goal):  {"goal": raw sub-goal, "subtask": executor context (prompt + " Subtask: "
 *                             + goal), "obs": [T+1 "Obs: o"], "action": ["a; True|False" x T],
 *                             "reward": [T], "score": [T], "done": [T], ...}
 * This is what data/hier.c (`multi2 data`) writes, i.e. the released field names. Aliases accepted:
 * states (obs), subgoals (subtask, high), subgoal (goal), actions (action), observations (obs),
 * rewards/scores/dones. At least one of the raw text and the context must be present. done may be
 * bool or number; reward/score may be absent (0). Unknown fields are ignored. */
#ifndef M2_DATA_RECORDS_READ_H
#define M2_DATA_RECORDS_READ_H
#include "core/err.h"
#include "data/pack.h"

typedef struct m2_high_record {
    char *task;         /* raw task text, or NULL */
    char *context;      /* the planner context ("task_description"), or NULL */
    char **states;      /* [n_states] */
    char **subgoals;    /* [n_subgoals] */
    float *reward, *score, *done;   /* [n_subgoals] */
    int n_states, n_subgoals;
} m2_high_record;

typedef struct m2_low_record {
    char *subgoal;      /* raw sub-goal ("goal"), or NULL */
    char *context;      /* the executor context ("subtask"), or NULL */
    char **obs;         /* [n_obs] */
    char **actions;     /* [n_steps] */
    float *reward, *score, *done;   /* [n_steps] */
    int n_obs, n_steps;
} m2_low_record;

/* Whole files; blank lines are skipped; errors name the file, the line and the field. */
int m2_high_records_read(const char *path, m2_high_record **out, int *n, m2_err *err);
int m2_low_records_read(const char *path, m2_low_record **out, int *n, m2_err *err);
/* One record from one JSON text (what the file readers do per line). */
int m2_high_record_parse(const char *json, m2_high_record *out, m2_err *err);
int m2_low_record_parse(const char *json, m2_low_record *out, m2_err *err);
void m2_high_record_free(m2_high_record *r);
void m2_low_record_free(m2_low_record *r);
void m2_high_records_free(m2_high_record *r, int n);
void m2_low_records_free(m2_low_record *r, int n);

/* Records -> sequences to pack. prompt = the whole prompt segment; NULL = the record's own context,
 * else the one data/prompts.h builds from the raw text (so training text = inference text).
 * Low: state_prefix (e.g. "Obs: ", may be NULL) is prepended to observations that do not already
 * start with it. Rewards/dones are the record's. */
int m2_high_record_traj(const m2_high_record *r, const char *prompt, m2_traj *out, m2_err *err);
int m2_low_record_traj(const m2_low_record *r, const char *prompt, const char *state_prefix,
                       m2_traj *out, m2_err *err);

#endif
