/* multi2_env.h: the stable C API of libmulti2.so — multi2's environments (TextCraft, ALFWorld,
 * ScienceWorld) for programs in other languages (python/multi2 calls it through ctypes).
 *
 * This header is the whole public surface of the shared library: it includes nothing of multi2,
 * only <stddef.h> and <stdint.h>, and every symbol it declares starts with `m2e_`. The library
 * exports these symbols and nothing else. M2E_API_VERSION grows when a function (or a value a
 * function takes) is added; a function once published keeps its signature and meaning.
 *
 * Use
 *   char msg[512];
 *   m2e_env *e = m2e_create("textcraft", NULL, msg, sizeof msg);   // NULL data path: embedded data
 *   m2e_result s;
 *   m2e_reset(e, NULL, "train", 0, 42, &s);                         // task NULL: every task of the split
 *   m2e_step(e, "inventory", &s);                                  // any text is game input
 *   m2e_free(e);
 *
 * Rules
 *  - Errors: functions returning int give 0 on success and -1 on failure; m2e_error(e) then names
 *    the reason (m2e_create writes it into the caller's buffer). Nothing ever exits the process.
 *  - Strings handed out (observation, task text, admissible actions, names) belong to the library
 *    and stay valid until the next m2e_reset / m2e_step / m2e_admissible / m2e_free on the same
 *    handle; m2e_describe's string is the caller's (free it with m2e_string_free).
 *  - Threads: different handles may be used from different threads at once; one handle is used by
 *    one thread at a time. The library holds no global mutable state.
 *  - Determinism: the same (name, data path, task, split, index, seed) and the same actions give
 *    the same observations, byte for byte, in every process.
 *  - Splits are named "train", "id" (also "valid_seen", "dev") and "ood" ("valid_unseen", "test").
 */
#ifndef M2_MULTI2_ENV_H
#define M2_MULTI2_ENV_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define M2E_API_VERSION 3   /* 2: m2e_inspect; 3: its ScienceWorld templates, combinations, goal progress */
#define M2E_API __attribute__((visibility("default")))

typedef struct m2e_env m2e_env;   /* one environment instance (opaque) */

/* What reset and step report. */
typedef struct m2e_result {
    const char *observation;   /* owned by the handle (see Rules) */
    double reward;             /* this step's reward (ScienceWorld: the score change, on 0..100) */
    double score;              /* the episode's score so far (TextCraft/ALFWorld 0 or 1; ScienceWorld -100..100) */
    int done;                  /* episode over (won, or lost for good) */
    int won;                   /* the goal holds */
    int valid;                 /* the action parsed as a command the game knows */
    int moves;                 /* steps since the last reset */
} m2e_result;

M2E_API int m2e_api_version(void);                 /* M2E_API_VERSION of the built library */
M2E_API int m2e_env_count(void);                   /* the environments built in */
M2E_API const char *m2e_env_name(int i);           /* "textcraft", "alfworld", "scienceworld"; NULL past the end */

/* Creates environment `name`. data_path: NULL for the embedded default data, else the folder (or
 * file) the environment reads (TextCraft: a datapack folder; ALFWorld: game.tw-pddl files or the
 * reference tables; see docs/env-tools.md). Returns NULL with the reason in err (may be NULL). */
M2E_API m2e_env *m2e_create(const char *name, const char *data_path, char *err, size_t err_cap);
M2E_API void m2e_free(m2e_env *e);                 /* NULL is fine */
M2E_API const char *m2e_error(const m2e_env *e);   /* the last failure's message ("" after success) */
M2E_API const char *m2e_name(const m2e_env *e);
M2E_API double m2e_score_max(const m2e_env *e);    /* the best end score: ScienceWorld 100, others 1 */
M2E_API double m2e_unit_score(const m2e_env *e, double score);   /* an end score on 0..1 (negative counts 0) */

/* Task families (ALFWorld's 6 types, ScienceWorld's 30 tasks, TextCraft's "craft"). */
M2E_API int m2e_num_tasks(const m2e_env *e);
M2E_API const char *m2e_task_name(const m2e_env *e, int i);
/* Episodes in (task, split); task NULL = every task of the split in the environment's order. -1 on error. */
M2E_API int m2e_num_episodes(m2e_env *e, const char *task, const char *split);

/* Starts episode `index` of (task, split) with `seed` (what randomness is left: TextCraft's
 * distractors, ALFWorld's training scenes). out may be NULL. */
M2E_API int m2e_reset(m2e_env *e, const char *task, const char *split, int index, uint64_t seed, m2e_result *out);
/* One action (NULL counts as ""). Fails only without a reset before it. */
M2E_API int m2e_step(m2e_env *e, const char *action, m2e_result *out);
/* n steps on n handles in one call (envs[i] gets actions[i], writes out[i]); returns the number
 * that failed (each failed handle's m2e_error says why). The handles must be distinct. */
M2E_API int m2e_step_many(m2e_env *const *envs, const char *const *actions, int n, m2e_result *out);
/* The state since the last reset/step. */
M2E_API const char *m2e_observation(const m2e_env *e);
M2E_API const char *m2e_task_text(const m2e_env *e);   /* the goal as the agent is shown it */
M2E_API int m2e_last(const m2e_env *e, m2e_result *out); /* the last reset/step's report again */
/* Admissible actions now: *list gets n strings (see Rules). */
M2E_API int m2e_admissible(m2e_env *e, const char *const **list, int *n);
/* The expert oracle's next action into buf (NUL-terminated); -1 when it has none. */
M2E_API int m2e_oracle(m2e_env *e, char *buf, size_t cap);
/* A JSON object describing episode (task, split, index) without touching the current episode
 * (TextCraft: goal, depth, commands; ALFWorld: task_type, floor_plan, room; ScienceWorld: task,
 * task_id, variation). Free with m2e_string_free; NULL on error. */
M2E_API char *m2e_describe(m2e_env *e, const char *task, const char *split, int index);
/* A JSON value about the current state, named by `what` (ScienceWorld: "possible_objects" (the
 * visible objects' referents, sorted), "object_tree" (the world as nested objects), "look",
 * "inventory" (their texts, no time passing); since API 3 also "possible_actions" (the action
 * templates, sorted), "possible_actions_with_ids" ([{action_example, template_id}]),
 * "action_object_combinations" ({templates, lookUpTable}) and "goal_progress" (the goal sequence
 * with its done marks, as text)). Needs a reset; free with m2e_string_free; NULL on error (also
 * for a `what` the environment lacks: m2e_error names the ones it has). Since API 2. */
M2E_API char *m2e_inspect(m2e_env *e, const char *what);
M2E_API void m2e_string_free(char *s);

#ifdef __cplusplus
}
#endif
#endif
