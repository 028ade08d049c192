/* textcraft internals: the crafting tree loaded from datapack recipe JSON (ADaPT's rules) and the
 * per-episode state. Private to src/env/textcraft/; the public API is textcraft.h. */
#ifndef M2_TC_H
#define M2_TC_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/rng.h"
#include "env/env.h"
#include "env/textcraft/textcraft.h"

#define TC_NS "minecraft:"
#define TC_NS_LEN 10
#define TC_DEPTH_INF 1000000

typedef struct tc_ivec { int *a; int n, cap; } tc_ivec;
int tc_ivec_push(tc_ivec *v, int x);
void tc_ivec_free(tc_ivec *v);

/* One ingredient: a concrete item or a tag (ADaPT's ItemTag with item_id or tag set), and a count. */
typedef struct tc_ing { int name; int count; int is_tag; } tc_ing;

typedef struct tc_recipe {
    int out;          /* output item (name index) */
    int out_count;
    int out_tag;      /* "minecraft:"+group as a name index, or -1 (may equal out) */
    int ing0, n_ing;  /* ingredients: tree->ings[ing0 .. ing0+n_ing) in JSON order */
    int line;         /* index of its command line (identical lines share one index) */
    int file;         /* source file index (sorted order) */
    int depth;        /* max over ingredients of depth+1 */
} tc_recipe;

/* A name: an item id, a tag, or both (Python keeps itemid_set and tag_set of the same strings). */
typedef struct tc_name {
    char *id;          /* "minecraft:oak_planks" */
    char *disp;        /* "oak planks" (every "minecraft:" removed, '_' -> ' ') */
    int id_len, disp_len;
    int is_item, is_tag;
    int tag_of;        /* item_id_to_tag: the group tag of this item, or -1 */
    int depth;         /* ADaPT get_min_depth; TC_DEPTH_INF when only reachable through a cycle */
    tc_ivec item_recipes, tag_recipes, uses, members;  /* members: items whose tag_of is this */
    int best;          /* item recipe of minimum depth (first on ties), or -1 */
} tc_name;

typedef struct tc_tree {
    tc_name *names; int n_names, cap_names;
    int *hash; int hash_cap;          /* open addressing over names by id; -1 empty */
    tc_recipe *recipes; int n_recipes, cap_recipes;
    tc_ing *ings; int n_ings, cap_ings;
    char **lines; int n_lines, cap_lines;   /* distinct command lines */
    int *line_len;
    int *line_recipe;     /* the first kept recipe with this line */
    tc_ivec craft_order;   /* items in the order they got their first recipe (Python dict order) */
    tc_ivec goals;         /* depth >= 2, depth-descending, stable (ADaPT's goal list) */
    tc_ivec split_goals[3];
    m2_textcraft_stats stats;
} tc_tree;

typedef struct tc_src { const char *name; const char *text; size_t len; } tc_src;

int tc_tree_build(tc_tree *t, const tc_src *files, int n, m2_err *err);
void tc_tree_free(tc_tree *t);
int tc_find(const tc_tree *t, const char *id, int len);        /* exact id, -1 if absent */
/* "minecraft:" + typed with ' ' -> '_' (ADaPT's item_str_to_obj), without building the string. */
int tc_find_typed(const tc_tree *t, const char *typed, int len);
int tc_is_craftable(const tc_tree *t, int name);
int tc_is_gettable(const tc_tree *t, int name);
uint64_t tc_fnv1a(const char *s, size_t n);

/* A growable byte buffer: grows only when a longer string is first needed. */
typedef struct tc_buf { char *p; size_t n, cap; } tc_buf;
int tc_buf_reserve(tc_buf *b, size_t cap);
void tc_buf_clear(tc_buf *b);
void tc_buf_put(tc_buf *b, const char *s, size_t n);   /* callers reserve first */
void tc_buf_puts(tc_buf *b, const char *s);
void tc_buf_putc(tc_buf *b, char c);
void tc_buf_putll(tc_buf *b, long long v);

/* A parsed typed ingredient of a craft action. */
typedef struct tc_typed { const char *s; int len; const char *digits; int dlen; int64_t count; int name; int is_tag; } tc_typed;

typedef struct tc_env {
    m2_env base;
    tc_tree t;
    /* episode */
    int goal, goal_depth;
    int won;
    char task_name[16];        /* "craft", "all" or "item" */
    m2_split split; int index; uint64_t seed;
    tc_ivec tree_recipes;      /* recipes of the goal's tree (all listed) */
    tc_ivec block_lines;       /* the listed command lines in display order */
    uint8_t *line_listed;      /* per line: 1 if listed in this episode's block */
    int64_t *inv;              /* per name count */
    uint8_t *inv_has;
    tc_ivec inv_order;         /* Python dict insertion order */
    tc_buf obs, task_text;
    tc_typed *typed; int typed_cap;
    uint8_t *used; int used_cap;
    /* scratch */
    uint8_t *line_mark, *name_mark; tc_ivec cand;
    int64_t *vinv; tc_ivec vtouched; tc_buf act;
    /* admissible */
    tc_buf adm_text; const char **adm; int adm_cap; tc_ivec adm_off;
    /* per-goal tree cache */
    tc_ivec *tree_cache;
} tc_env;

int tc_oracle_next(tc_env *e, char *buf, size_t cap, m2_err *err);
int tc_admissible(tc_env *e, const char *const **actions, int *n);
int tc_segment(const tc_env *e, const char *const *actions, const char *const *observations, int n_steps,
               m2_subgoal *out, int cap);
int tc_step(tc_env *e, const char *action, m2_step_result *res);

#endif
