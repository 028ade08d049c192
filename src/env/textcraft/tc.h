/* textcraft internals: the crafting tree loaded from datapack recipe JSON (ADaPT's rules) and the
 * per-episode state. Private to src/env/textcraft/; the public API is textcraft.h. */
#ifndef M2_TC_H
#define M2_TC_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "env/env.h"
#include "env/textcraft/textcraft.h"

#define M2_TC_NS "minecraft:"
#define M2_TC_NS_LEN 10
#define M2_TC_DEPTH_INF 1000000

typedef struct m2_tc_ivec { int *a; int n, cap; } m2_tc_ivec;
int m2_tc_ivec_push(m2_tc_ivec *v, int x);
void m2_tc_ivec_free(m2_tc_ivec *v);

/* One ingredient: a concrete item or a tag (ADaPT's ItemTag with item_id or tag set), and a count. */
typedef struct m2_tc_ing { int name; int count; int is_tag; } m2_tc_ing;

typedef struct m2_tc_recipe {
    int out;          /* output item (name index) */
    int out_count;
    int out_tag;      /* "minecraft:"+group as a name index, or -1 (may equal out) */
    int ing0, n_ing;  /* ingredients: tree->ings[ing0 .. ing0+n_ing) in JSON order */
    int line;         /* index of its command line (identical lines share one index) */
    int file;         /* source file index (sorted order) */
    int depth;        /* max over ingredients of depth+1 */
} m2_tc_recipe;

/* A name: an item id, a tag, or both (Python keeps itemid_set and tag_set of the same strings). */
typedef struct m2_tc_name {
    char *id;          /* "minecraft:oak_planks" */
    char *disp;        /* "oak planks" (every "minecraft:" removed, '_' -> ' ') */
    int id_len, disp_len;
    int is_item, is_tag;
    int tag_of;        /* item_id_to_tag: the group tag of this item, or -1 */
    int depth;         /* ADaPT get_min_depth; M2_TC_DEPTH_INF when only reachable through a cycle */
    m2_tc_ivec item_recipes, tag_recipes, uses, members;  /* members: items whose tag_of is this */
    int best;          /* item recipe of minimum depth (first on ties), or -1 */
} m2_tc_name;

typedef struct m2_tc_tree {
    m2_tc_name *names; int n_names, cap_names;
    int *hash; int hash_cap;          /* open addressing over names by id; -1 empty */
    m2_tc_recipe *recipes; int n_recipes, cap_recipes;
    m2_tc_ing *ings; int n_ings, cap_ings;
    char **lines; int n_lines, cap_lines;   /* distinct command lines */
    int *line_len;
    int *line_recipe;     /* the first kept recipe with this line */
    m2_tc_ivec craft_order;   /* items in the order they got their first recipe (Python dict order) */
    m2_tc_ivec goals;         /* depth >= 2, depth-descending, stable (ADaPT's goal list) */
    m2_tc_ivec split_goals[3];
    m2_tc_ivec cycle_skipped; /* recipes the cycle rule skipped, in load order */
    m2_tc_stats stats;
} m2_tc_tree;

typedef struct m2_tc_src { const char *name; const char *text; size_t len; } m2_tc_src;

/* Builds the tree of files[0..n) processed in sorted name order, except that the recipes of
 * files[first_file] are registered before all others (-1: none). */
int m2_tc_tree_build(m2_tc_tree *t, const m2_tc_src *files, int n, int first_file, m2_err *err);
void m2_tc_tree_free(m2_tc_tree *t);

/* The trees an env plays in (docs/textcraft.md, "Goals on recipe cycles"). ADaPT skips the recipe
 * that closes a dependency cycle, so which item of a cycle is craftable and which is a base item
 * depends on the file order. w[0] is the sorted-order tree and serves every goal it has; w[k]
 * (k >= 1) is the tree with one recipe that w[0] skipped as a cycle loaded first, kept when it has
 * goals (depth >= 2) that w[0] lacks: those "cycle goals" join w[0]'s goal lists and are played
 * in w[k]. All worlds intern the same names in the same order, so name indices are shared. */
#define TC_MAX_WORLDS 33   /* w[0] + at most 32 cycle variants (further cycles get none) */
typedef struct tc_worlds {
    m2_tc_tree *w; int n;
    int *world_of;       /* per name: the world its episodes are played in (0 but for cycle goals) */
    char **first_file;   /* per world: the file loaded first (NULL for w[0]) */
} tc_worlds;
int tc_worlds_build(tc_worlds *ws, const m2_tc_src *files, int n, m2_err *err);
void tc_worlds_free(tc_worlds *ws);
int m2_tc_find(const m2_tc_tree *t, const char *id, int len);        /* exact id, -1 if absent */
/* "minecraft:" + typed with ' ' -> '_' (ADaPT's item_str_to_obj), without building the string. */
int m2_tc_find_typed(const m2_tc_tree *t, const char *typed, int len);
int m2_tc_is_craftable(const m2_tc_tree *t, int name);
int m2_tc_is_gettable(const m2_tc_tree *t, int name);
uint64_t m2_tc_fnv1a(const char *s, size_t n);

/* A parsed typed ingredient of a craft action. */
typedef struct m2_tc_typed { const char *s; int len; const char *digits; int dlen; int64_t count; int name; int is_tag; } m2_tc_typed;

typedef struct m2_tc_env {
    m2_env base;
    tc_worlds worlds;          /* the worlds played in now: base_worlds, or a varied copy (owned when varied) */
    tc_worlds base_worlds;     /* the recipe files' own worlds (owns their trees); goal lists and statistics are
                                  worlds.w[0]'s */
    int varied; uint64_t vary_seed;   /* env.h vary: the current world is renamed by vary_seed (0: the original) */
    m2_tc_src *src; int n_src; /* copies of the recipe files, for building varied worlds */
    m2_tc_tree t;                 /* the current episode's world: a shallow copy of a worlds.w[] entry
                                  (trees are read-only once built), never freed through this copy */
    /* episode */
    int goal, goal_depth;
    int won;
    char task_name[16];        /* "craft", "all" or "item" */
    m2_split split; int index; uint64_t seed;
    m2_tc_ivec tree_recipes;      /* recipes of the goal's tree (all listed) */
    m2_tc_ivec block_lines;       /* the listed command lines in display order */
    uint8_t *line_listed;      /* per line: 1 if listed in this episode's block */
    int64_t *inv;              /* per name count */
    uint8_t *inv_has;
    m2_tc_ivec inv_order;         /* Python dict insertion order */
    m2_strbuf obs, task_text;
    m2_tc_typed *typed; int typed_cap;
    uint8_t *used; int used_cap;
    /* scratch */
    uint8_t *line_mark, *name_mark; m2_tc_ivec cand;
    int64_t *vinv; m2_tc_ivec vtouched; m2_strbuf act;
    /* admissible */
    m2_strbuf adm_text; const char **adm; int adm_cap; m2_tc_ivec adm_off;
    /* sub-goals: the recipe the oracle's last planned action serves and its batches; the item and
     * count a sub-goal started from */
    int plan_recipe, cur_recipe; int64_t plan_batches, cur_batches;
    int sg_item; int64_t sg_base;
    /* per-goal tree cache */
    m2_tc_ivec *tree_cache;
} m2_tc_env;

/* env.h vary: seed != 0 plays the following episodes in the env's world with every item and tag
 * renamed by a seeded bijection of made-up words (tc_vary.c); seed 0 goes back to the original. */
int m2_tc_vary(m2_tc_env *e, uint64_t seed, m2_err *err);
int m2_tc_oracle_next(m2_tc_env *e, char *buf, size_t cap, m2_err *err);
int m2_tc_admissible(m2_tc_env *e, const char *const **actions, int *n);
/* Sub-goals "craft N <item>" (also "get N <item>"): the next one the oracle pursues, its start, and
 * whether N more of the item are held than when it started. */
int m2_tc_subgoal_next(m2_tc_env *e, char *buf, size_t cap, m2_err *err);
void m2_tc_subgoal_begin(m2_tc_env *e, const char *subgoal);
int m2_tc_subgoal_done(m2_tc_env *e, const char *subgoal);
int m2_tc_segment(const m2_tc_env *e, const char *const *actions, const char *const *observations, int n_steps,
               m2_subgoal *out, int cap);
int m2_tc_step(m2_tc_env *e, const char *action, m2_step_result *res);

#endif
