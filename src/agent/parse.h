/* System 2 output parser: the released regex (.*?)\s*;\s*(true|false), case-insensitive, searched
 * like Python's re.search (first start position that matches; '.' does not cross a newline, \s
 * does). Group 1 is the action (trimmed of surrounding white space here), group 2 the "sub-goal
 * done" flag. No match: the action is "None" and the flag false, as the released code. */
#ifndef M2_AGENT_PARSE_H
#define M2_AGENT_PARSE_H
#include <stddef.h>

/* Writes the action (NUL-terminated, cut to cap-1 bytes) and the flag; returns 1 on a match and 0
 * on the ("None", false) fallback. */
int m2_parse_action(const char *text, char *action, size_t cap, int *done_flag);

/* System 1 output -> sub-goal: first line, trimmed (the released TextCraft parse_high_subtask). */
void m2_parse_subgoal(const char *text, char *subgoal, size_t cap);

#endif
