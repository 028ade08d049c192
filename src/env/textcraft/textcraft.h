/* TextCraft (ADaPT's rules) beyond the generic env.h interface: creation from in-memory recipe
 * files (the embedded default, fuzzing), load statistics and the current goal. See docs/textcraft.md. */
#ifndef M2_TEXTCRAFT_H
#define M2_TEXTCRAFT_H
#include <stddef.h>
#include "core/err.h"

typedef struct m2_env m2_env;

#define M2_TC_MAX_DEPTH_HIST 8

typedef struct m2_tc_stats {
    int n_files;            /* JSON files read */
    int n_crafting;         /* crafting_shaped + crafting_shapeless recipes */
    int n_other_type;       /* other recipe types (smelting, stonecutting, ...): ignored */
    int n_skipped_block;    /* one-input recipes whose input ends in "_block" */
    int n_skipped_cycle;    /* recipes that would close a dependency cycle */
    int n_kept;             /* recipes in the crafting tree */
    int n_items, n_tags;    /* after tag-to-item clean-up */
    int n_tags_cleaned;     /* input tags without a craftable member, turned into plain items */
    int n_craftable;        /* items with at least one recipe */
    int depth_hist[M2_TC_MAX_DEPTH_HIST];  /* craftable items by min depth (last bucket: deeper) */
    int n_goals;            /* craftable items of depth >= 2, cycle goals included */
    int n_cycle_goals;      /* goals that exist only with a recipe cycle broken the other way */
    int split_goals[3];     /* goal items in train / id / ood (id uses the train items) */
} m2_tc_stats;

/* Creates a TextCraft env from n recipe files given as (file name, JSON text). Files are processed
 * in ascending strcmp order of their names, whatever order they are given in. */
int m2_tc_create_from_memory(m2_env **out, const char *const *names, const char *const *texts,
                                    const size_t *lens, int n, m2_err *err);
int m2_tc_stats_get(const m2_env *env, m2_tc_stats *st);
/* The current goal: display name ("oak sign"), item id ("minecraft:oak_sign") and crafting depth. */
const char *m2_tc_goal(const m2_env *env);
const char *m2_tc_goal_id(const m2_env *env);
int m2_tc_goal_depth(const m2_env *env);
/* The command lines listed in the current episode's block, in display order. */
int m2_tc_command_count(const m2_env *env);
const char *m2_tc_command(const m2_env *env, int i);

/* The project's own recipe set compiled into the binary (data/textcraft/recipes/). */
int m2_tc_embedded_count(void);
void m2_tc_embedded_file(int i, const char **name, const char **json);

#endif
