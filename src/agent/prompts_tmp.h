/* TEMPORARY copy of the Multi2 prompt strings and state formats (reference algorithms.md §0) for
 * the control loop, until the TextCraft helper's src/agent/prompts.h lands on main. The names are
 * deliberately different from prompts.h so both can coexist; once prompts.h is merged, these should
 * forward to it (or be deleted and the loop pointed at it). */
#ifndef M2_AGENT_PROMPTS_TMP_H
#define M2_AGENT_PROMPTS_TMP_H
#include <stddef.h>

/* System 1 (planner) instruction; the context prompt is this + " " + task. */
extern const char m2_tmp_high_prompt[];
/* System 2 (executor) instruction; the context prompt is this + " Subtask: " + sub-goal. */
extern const char m2_tmp_low_prompt[];

/* System 1 state: "Group action: [a, b]. Current observation: o" (the actions System 2 took for
 * the previous sub-goal; "[]" at the start). malloc'd. */
char *m2_tmp_high_state(const char *const *group_actions, int n, const char *obs);
/* System 2 state prefix: "Obs: " + o. */
extern const char m2_tmp_low_state_prefix[];

#endif
