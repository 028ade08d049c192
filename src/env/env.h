/* env/: in-process, deterministic text environments behind one interface (DESIGN.md §4).
 *
 * Contract
 *  - An environment is created from its class (looked up by name in the registry) with an
 *    optional data path (NULL = the project's embedded default data).
 *  - reset(task, split, index, seed): `task` names a task family (NULL = every task of the split,
 *    indexed in one documented deterministic order); `index` selects the episode inside the split;
 *    `seed` drives any remaining randomness. Same arguments, same episode, byte for byte.
 *  - step(action): ANY string is valid game input: unknown commands get the game's own answer
 *    (e.g. "Nothing happens."), never an error. Errors are only for broken data files.
 *  - Strings returned (observation, task text, admissible actions) are owned by the environment
 *    and stay valid until the next reset/step/destroy call on it.
 *  - Every environment has an expert oracle (next action from the CURRENT state, so it works after
 *    deviations where the environment supports replanning) and a code-rule sub-goal segmenter.
 */
#ifndef M2_ENV_H
#define M2_ENV_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef enum m2_split {
    M2_SPLIT_TRAIN = 0,   /* training episodes */
    M2_SPLIT_ID = 1,      /* in-distribution eval: ALFWorld valid_seen, ScienceWorld dev */
    M2_SPLIT_OOD = 2      /* out-of-distribution eval: ALFWorld valid_unseen, ScienceWorld test */
} m2_split;

/* "train", "id"/"valid_seen"/"dev", "ood"/"valid_unseen"/"test" -> split; -1 if unknown. */
int m2_split_parse(const char *s);
const char *m2_split_name(m2_split s);   /* "train", "id", "ood" */

typedef struct m2_step_result {
    const char *observation;   /* owned by the env */
    float reward;              /* the env's own reward for this step */
    int done;                  /* episode over (won, or failed for good) */
    float score;               /* TextCraft/ALFWorld: 0 or 1; ScienceWorld: -100..100 */
    int won;
    int valid;                 /* 1 if the action parsed as a command the env knows (invalid-action rate) */
} m2_step_result;

/* One sub-goal of a segmented trajectory: steps [first, last] (inclusive, 0-based) serve it. */
typedef struct m2_subgoal {
    char text[256];
    int first, last;
} m2_subgoal;

typedef struct m2_env m2_env;

typedef struct m2_env_class {
    const char *name;                                   /* "textcraft", "alfworld", "scienceworld" */
    double score_max;                                   /* the best end score (ScienceWorld 100; others 1) */
    int (*create)(m2_env **out, const char *data_path, m2_err *err);
    void (*destroy)(m2_env *env);
    /* Task families (e.g. ALFWorld's 6 types, ScienceWorld's 30 tasks; TextCraft has one, "craft"). */
    int (*num_task_families)(const m2_env *env);
    const char *(*task_family_name)(const m2_env *env, int i);
    /* Episodes available in (task, split); -1 with err set if task is unknown. */
    int (*num_episodes)(m2_env *env, const char *task, m2_split split, m2_err *err);
    int (*reset)(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
                 m2_step_result *first, m2_err *err);
    const char *(*task_text)(const m2_env *env);        /* the goal as shown to the agent */
    int (*step)(m2_env *env, const char *action, m2_step_result *res);
    /* Admissible actions in the current state (may be large for TextCraft: the listed crafts). */
    int (*admissible)(m2_env *env, const char *const **actions, int *n);
    /* Expert: writes the next action into buf; returns 0, or -1 when no expert action exists. */
    int (*oracle_next)(m2_env *env, char *buf, size_t cap, m2_err *err);
    /* Code-rule segmenter over a finished trajectory; returns the number of sub-goals (<= cap). */
    int (*segment)(const m2_env *env, const char *const *actions, const char *const *observations,
                   int n_steps, m2_subgoal *out, int cap);
    /* Sub-goals judged by the environment itself (one rule for expert, medium and online data):
     * subgoal_next writes the sub-goal the expert pursues from the CURRENT state (named as the
     * segmenter names them; 0, or -1 with err when the expert has none); subgoal_begin marks the
     * state a sub-goal starts from (what counting predicates such as "craft 4 stick" compare
     * against); subgoal_done says whether `subgoal` holds now: 1 yes, 0 no (also for text that is
     * no sub-goal the environment can read). Every sub-goal is named so that its last action is
     * the one the text names, so the executor can tell from what it has seen when it is done. */
    int (*subgoal_next)(m2_env *env, char *buf, size_t cap, m2_err *err);
    void (*subgoal_begin)(m2_env *env, const char *subgoal);
    int (*subgoal_done)(m2_env *env, const char *subgoal);
    /* A JSON object (malloc'd string) describing episode (task, split, index) for `multi2 tasks`. */
    char *(*describe)(m2_env *env, const char *task, m2_split split, int index, m2_err *err);
    /* Optional (NULL: the class has nothing to show): a JSON value (malloc'd string) about the
     * CURRENT state, named by `what`, without changing the state or taking game time (AgentGym's
     * sciworld /object_tree, /state). An unknown `what` is an M2_EUNSUPPORTED error naming the
     * ones the class knows. ScienceWorld: "possible_objects", "object_tree", "look", "inventory". */
    char *(*inspect)(m2_env *env, const char *what, m2_err *err);
    /* Optional (NULL: the class has no procedural variation): seed != 0 makes the following resets
     * play in a procedurally varied copy of the env's world drawn from seed, with the same tasks,
     * splits and rules under other surface text (TextCraft: every item and tag renamed by a seeded
     * bijection of made-up words), for training corpora that make an agent read its observations
     * rather than recall them; seed 0 goes back to the original world. The same seed gives the same
     * world, byte for byte. */
    int (*vary)(m2_env *env, uint64_t seed, m2_err *err);
} m2_env_class;

/* Every env instance starts with this header so generic code can find its class. */
struct m2_env {
    const m2_env_class *cls;
};

/* Registry */
const m2_env_class *m2_env_find(const char *name);       /* NULL if unknown */
int m2_env_count(void);
const m2_env_class *m2_env_at(int i);
/* Creates by name; on an unknown name the error lists the known ones. */
int m2_env_create(const char *name, const char *data_path, m2_env **out, m2_err *err);
void m2_env_destroy(m2_env *env);
/* An end score on 0..1 (DESIGN.md §7; the released code divides ScienceWorld's 0..100 by 100): a
 * negative score (ScienceWorld's -100 after a failure) counts as 0, then score / score_max. Unknown
 * environment names keep the score as it is. */
double m2_env_unit_score(const char *env_name, double score);

extern const m2_env_class m2_tc_class;
extern const m2_env_class m2_aw_class;
extern const m2_env_class m2_sw_class;

#endif
