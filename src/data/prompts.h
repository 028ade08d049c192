/* Prompts and state strings of Glider / Multi² (algorithms.md §0), shared by data writing,
 * training and inference so every part builds exactly the same text. */
#ifndef M2_PROMPTS_H
#define M2_PROMPTS_H
#include <stddef.h>

/* System 1 (planner) instruction; context = M2_PROMPT_HIGH + " " + task. */
extern const char M2_PROMPT_HIGH[];
/* System 2 (executor) instruction as in Glider; Multi² appends M2_PROMPT_LOW_MULTI2_EXTRA. */
extern const char M2_PROMPT_LOW[];
extern const char M2_PROMPT_LOW_MULTI2_EXTRA[];

/* Python repr() of a str (quotes and escapes as CPython for ASCII): appends to *buf. Returns the
 * new length, or -1 when out of memory. *buf is malloc'd and grown as needed. */
long m2_py_repr(char **buf, size_t *cap, size_t len, const char *s);

/* "Group action: ['a1', 'a2']. Current observation: obs" (malloc'd; NULL when out of memory). */
char *m2_prompt_state(const char *const *group_actions, int n, const char *observation);
/* high context: M2_PROMPT_HIGH + " " + task (malloc'd). */
char *m2_prompt_high_context(const char *task);
/* low context: low prompt (+ Multi² extra when multi2) + " Subtask: " + subtask (malloc'd). */
char *m2_prompt_low_context(const char *subtask, int multi2);
/* "Obs: " + observation (malloc'd). */
char *m2_prompt_low_obs(const char *observation);
/* "<action>; True" or "<action>; False" (malloc'd). */
char *m2_prompt_low_action(const char *action, int subgoal_done);
/* The inverse (parsing a generated "<action>; true|false") is m2_parse_action in agent/parse.h. */

#endif
