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

/* ---- System 2's context at the start of a sub-goal: the ONE builder (data writing, training
 * records, the control loop's inference contexts and its replay segments all call it) ----
 *
 * Task information: what an executor needs at every sub-goal but sees only in the episode's first
 * observation, i.e. only during the first sub-goal. Layout after the released code
 * (algorithms.md §2.7):
 *   TextCraft: crafting commands of the reset observation's block, appended to the prompt:
 *     <low prompt> Subtask: <g>\nCrafting commands:\n<line>\n...<line>\n
 *     commands = RELEVANT (the released code's choice): the lines that craft the item the sub-goal
 *     names ("craft N <item>") and, recursively, those that craft their listed ingredients, in block
 *     order; a sub-goal that names no listed item gets every line. ALL: every line.
 *   ALFWorld: the room description (the receptacles), before the sub-goal's first observation:
 *     Obs: You are in the middle of a room. Looking quickly around you, you see ... <obs>
 *   ScienceWorld and others: none.
 * It is added only where the sub-goal's first observation does not already hold it (the first
 * sub-goal starts from the episode's first observation: TextCraft's whole block, ALFWorld's room),
 * and never with task_info = 0, which gives the plain context: m2_prompt_low_context(g, 1) and
 * m2_prompt_low_obs(obs). */
#define M2_PROMPT_COMMANDS_LIST(X) X(RELEVANT, "relevant") X(ALL, "all")   /* config prompt.low.commands */
#define M2_PROMPT_COMMANDS_ID_(id, name) M2_PROMPT_COMMANDS_##id,
typedef enum m2_prompt_commands { M2_PROMPT_COMMANDS_LIST(M2_PROMPT_COMMANDS_ID_) M2_N_PROMPT_COMMANDS } m2_prompt_commands;

/* The optional parts of System 2's context (config prompt.low.*). */
typedef struct m2_low_parts {
    int task_info;                 /* prompt.low.task_info: 1 = add the task information */
    m2_prompt_commands commands;   /* prompt.low.commands: which TextCraft commands */
} m2_low_parts;
/* The config defaults: task information on, relevant commands. */
extern const m2_low_parts M2_LOW_PARTS_DEFAULT;

typedef struct m2_low_episode {
    const char *env_name;     /* which task information exists (env class name) */
    const char *first_obs;    /* the episode's reset observation, where it is read from */
    m2_low_parts parts;       /* what to add ({0}: the plain context) */
    const char *instruction;  /* NULL: M2_PROMPT_LOW + M2_PROMPT_LOW_MULTI2_EXTRA; else this text */
} m2_low_episode;

/* The task information of sub-goal `subtask` of an episode, as it is inserted (see above; whether
 * the sub-goal's first observation already holds it is not checked here); NULL when the environment
 * has none or first_obs lacks it. malloc'd. */
char *m2_prompt_task_info(const char *env_name, const char *first_obs, const char *subtask, m2_prompt_commands commands);
/* *prompt = System 2's prompt for sub-goal `subtask`, *state0 = its first state for observation
 * obs0 (both malloc'd). 0, or -1 when out of memory (nothing allocated). */
int m2_prompt_low_start(const m2_low_episode *e, const char *subtask, const char *obs0, char **prompt,
                        char **state0);
/* "<action>; True" or "<action>; False" (malloc'd). */
char *m2_prompt_low_action(const char *action, int subgoal_done);
/* The inverse (parsing a generated "<action>; true|false") is m2_parse_action in agent/parse.h. */

#endif
