/* Which episodes a run plays: ONE order over an environment split, drawn evenly across task types
 * (issue #14). The splits list their episodes grouped by task type (ALFWorld's six types one after
 * the other, ScienceWorld's 30 tasks, TextCraft's goals by crafting depth), so "episodes 0..N-1"
 * would be one or two types; every part that picks episodes (the data stage, the online stage's
 * rollouts, the eval stage, `multi2 eval`, `multi2 data`) takes position k of this order instead.
 *
 * The rule
 *  - The task type of an episode is m2_episode_type(): its task family (ALFWorld task type,
 *    ScienceWorld task); TextCraft, which has one family, types its goals by crafting depth.
 *  - Types are taken in the order of their first episode (families: the environment's family order).
 *  - Round-robin: position k walks the types in that order, taking each type's next episode in
 *    index order; a type whose episodes are used up drops out of the rotation.
 *  - The order lists every episode of (task, split) exactly once; position k >= n is position k mod n.
 *  Position k depends on (environment and its data, task, split, k) only: not on how many episodes
 *  a caller plays, so a longer run plays the episodes of a shorter one first. */
#ifndef M2_DATA_EPISODES_H
#define M2_DATA_EPISODES_H
#include "core/err.h"
#include "env/env.h"

/* One episode: the reset arguments (task, index) and its type label. */
typedef struct m2_episode_ref {
    const char *task;   /* for reset(): the run's task, or the family the episode belongs to (NULL: all) */
    int index;          /* for reset(): the episode's index within `task` */
    const char *type;   /* its task type (m2_episode_type) */
} m2_episode_ref;

typedef struct m2_episode_order {
    int n;                 /* episodes of (task, split), each listed once */
    m2_episode_ref *at;    /* [n]: position k */
    int n_types;
    char **types;          /* [n_types] labels in rotation order (the refs point at these) */
    char **tasks;          /* [n_types] the reset task of each type's episodes (NULL entries allowed) */
} m2_episode_order;

/* Builds the order of (task, split) on env. It may reset env (TextCraft's depth is read from an
 * episode's description), so build it before playing. Fails when the split has no episode. */
int m2_episode_order_build(m2_env *env, const char *task, m2_split split, m2_episode_order *o, m2_err *err);
/* Position k (k >= n wraps around). */
const m2_episode_ref *m2_episode_order_at(const m2_episode_order *o, long k);
void m2_episode_order_free(m2_episode_order *o);

/* The task type of episode (task, split, index) from the env's describe() JSON: its "difficulty"
 * field, else "depth N" (TextCraft crafting depth), else the ALFWorld task type, else the
 * ScienceWorld task; NULL when none is there. malloc'd. Resets env when describe() does. */
char *m2_episode_type(m2_env *env, const char *task, m2_split split, int index);

#endif
