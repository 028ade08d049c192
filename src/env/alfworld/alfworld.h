/* ALFWorld (text dialect of alfworld 0.5.0) for env.h: tables, scenes, dynamics, text, oracle, game files.
 *
 * Pieces (one file each):
 *   aw_tables.c   class tables (which objects go where, affordances) and floor plans: the project's own
 *                 compact embedded set, or ALFWorld's constants.json + layouts/ from a data folder
 *   aw_scene.c    scene memory, ALFWorld's "Demangler" numbering (apple 2), the scene generator
 *   aw_dynamics.c the 14 commands: parse, preconditions, effects, admissible list, goal test
 *   aw_text.c     every observation string of alfred.twl2 (arrival, open, lists, examine, help, intro)
 *   aw_oracle.c   expert (next command from the current state) and the sub-goal segmenter
 *   aw_pddl.c     game.tw-pddl reader (PDDL problem inside JSON) and writer
 *   alfworld.c    the m2_env_class vtable
 * A scene is static data (entities, affordances, goal); an m2_aw_state is the mutable part, so reset is a copy.
 */
#ifndef M2_ENV_ALFWORLD_H
#define M2_ENV_ALFWORLD_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/rng.h"
#include "env/env.h"

enum { M2_AW_NAME_MAX = 48, M2_AW_ID_MAX = 128, M2_AW_CLS_MAX = 40 };

/* The 6 ALFWorld task types, numbered as alfred_tw_env.TASK_TYPES (1..6). */
typedef enum m2_aw_task_type {
    M2_AW_PICK = 1,        /* pick_and_place_simple */
    M2_AW_LOOK = 2,        /* look_at_obj_in_light */
    M2_AW_CLEAN = 3,       /* pick_clean_then_place_in_recep */
    M2_AW_HEAT = 4,        /* pick_heat_then_place_in_recep */
    M2_AW_COOL = 5,        /* pick_cool_then_place_in_recep */
    M2_AW_PICK_TWO = 6     /* pick_two_obj_and_place */
} m2_aw_task_type;
const char *m2_aw_task_type_name(int t);          /* "pick_and_place_simple", ... ; NULL if out of range */
int m2_aw_task_type_parse(const char *s);          /* full name or short alias (pick, look, clean, heat, cool, pick_two); -1 */

/* Class affordance flags. */
enum {
    M2_AW_F_RECEP = 1u << 0,       /* static receptacle (cabinet, countertop, ...) */
    M2_AW_F_OPENABLE = 1u << 1,
    M2_AW_F_PICKUP = 1u << 2,
    M2_AW_F_CLEANABLE = 1u << 3,
    M2_AW_F_HEATABLE = 1u << 4,
    M2_AW_F_COOLABLE = 1u << 5,
    M2_AW_F_TOGGLE = 1u << 6,
    M2_AW_F_SLICEABLE = 1u << 7,
    M2_AW_F_RECEP_OBJ = 1u << 8    /* movable receptacle object (mug, bowl, ...): "This is a normal mug 1. In it, ..." */
};

/* Room types of ALFRED (constants.SCENE_TYPE). */
enum { M2_AW_ROOM_KITCHEN = 0, M2_AW_ROOM_LIVING = 1, M2_AW_ROOM_BEDROOM = 2, M2_AW_ROOM_BATHROOM = 3 };

/* One receptacle instance of a floor plan: ALFRED id ("Cabinet|+00.68|+00.50|-02.20") and a location key;
 * instances with the same key share one location (ALFWorld: "go to drawer 2" from drawer 1 does nothing). */
typedef struct m2_aw_plan_recep {
    int cls;
    char id[M2_AW_ID_MAX];
    int loc_key;
} m2_aw_plan_recep;

typedef struct m2_aw_goal_pick { int obj, recep, toggle; } m2_aw_goal_pick;   /* table class indices */

typedef struct m2_aw_plan {
    int number;            /* FloorPlanN */
    int room;              /* AW_ROOM_* */
    int unseen;            /* 1 = OOD (valid_unseen) plan, 0 = train / valid_seen plan */
    int n_recep;
    m2_aw_plan_recep *receps;
    int n_obj_cls;
    int *obj_cls;          /* object classes present (pickupable or toggleable) */
    int n_goals[7];        /* achievable goals per task type (1..6), precomputed by m2_aw_tables_index */
    m2_aw_goal_pick *goals[7];
} m2_aw_plan;

typedef struct m2_aw_tables {
    int n_cls;
    char (*cls_name)[M2_AW_CLS_MAX];   /* CamelCase as in ALFRED: "CounterTop" */
    uint32_t *flags;                /* [n_cls] AW_F_* */
    uint8_t *can_contain;           /* [n_cls * n_cls]: can_contain[r * n_cls + o] */
    int n_plans;
    m2_aw_plan *plans;
    char source[512];               /* "embedded" or the data folder */
    char *domain_text;              /* alfred.pddl text when read from a data folder (for exports), else NULL */
    char *grammar_text;             /* alfred.twl2 text when read from a data folder, else NULL */
} m2_aw_tables;

int m2_aw_tables_embedded(m2_aw_tables *t, m2_err *err);
/* Reads <dir>/constants.json and <dir>/layouts/FloorPlanN-{objects,openable}.json (and alfred.pddl/.twl2 if present). */
int m2_aw_tables_load(m2_aw_tables *t, const char *dir, m2_err *err);
void m2_aw_tables_free(m2_aw_tables *t);
/* Precomputes every plan's achievable goals (called by both loaders). */
int m2_aw_tables_index(m2_aw_tables *t, m2_err *err);
int m2_aw_tables_find_cls(const m2_aw_tables *t, const char *name);   /* case-insensitive; -1 */

/* ---- scenes ---- */
typedef struct m2_aw_recep {
    int cls;                 /* scene class index */
    int loc;                 /* location index (0 = the agent's start, the "middle of the room") */
    int openable;
    char id[M2_AW_ID_MAX];      /* ALFRED id, unmangled */
    char name[M2_AW_NAME_MAX];  /* "cabinet 3" */
} m2_aw_recep;

typedef struct m2_aw_obj {
    int cls;
    uint32_t flags;          /* AW_F_* of this object (pickupable, heatable, ...) */
    char id[M2_AW_ID_MAX];
    char name[M2_AW_NAME_MAX];
} m2_aw_obj;

/* Per-object state bits. */
enum { M2_AW_S_CLEAN = 1, M2_AW_S_HOT = 2, M2_AW_S_COOL = 4, M2_AW_S_TOGGLED = 8, M2_AW_S_SLICED = 16, M2_AW_S_ON = 32 };

typedef struct m2_aw_goal {
    int type;                /* m2_aw_task_type */
    int obj_cls;             /* scene class of the object */
    int recep_cls;           /* scene class of the target receptacle (-1 for look) */
    int toggle_cls;          /* scene class of the lamp (look only, else -1) */
    int all_closed;          /* goal also asks every receptacle closed (ALFRED's forall not opened) */
} m2_aw_goal;

typedef struct m2_aw_scene {
    int n_cls;
    char (*cls_name)[M2_AW_CLS_MAX];
    uint8_t *can_contain;    /* [n_cls * n_cls] */
    int n_recep, n_obj, n_loc;
    m2_aw_recep *receps;
    m2_aw_obj *objs;
    char (*loc_id)[M2_AW_ID_MAX];
    /* initial state */
    int start_loc;
    int *init_in;            /* [n_obj] receptacle index, -1 = not in a receptacle */
    int *floor_loc;          /* [n_obj] location of an object lying outside every receptacle (game files), else -1 */
    uint8_t *init_bits;      /* [n_obj] AW_S_* */
    uint8_t *init_opened;    /* [n_recep] */
    int init_held;           /* object index or -1 */
    m2_aw_goal goal;
    char task_text[256];     /* "Your task is to: put a clean apple in fridge." */
    int plan;                /* floor plan number (0 if loaded from a file without one) */
    int room;
    /* derived lookups (built by m2_aw_scene_finish) */
    int *objs_by_name;       /* object indices sorted by name */
    int *receps_by_name;
    int *obj_order;          /* object indices in internal-id order (the order ALFWorld lists them) */
    int *recep_order;
    int cls_microwave, cls_fridge, cls_sinkbasin, cls_knife, cls_butterknife;   /* -1 when absent */
    /* precomputed command strings */
    char (*cmd_goto)[M2_AW_NAME_MAX + 8];     /* [n_recep] "go to X" */
    char (*cmd_open)[M2_AW_NAME_MAX + 8];
    char (*cmd_close)[M2_AW_NAME_MAX + 8];
    char (*cmd_exr)[M2_AW_NAME_MAX + 12];     /* "examine X" */
    char (*cmd_exo)[M2_AW_NAME_MAX + 12];     /* [n_obj] "examine O" */
    char (*cmd_use)[M2_AW_NAME_MAX + 8];      /* [n_obj] "use O" */
    char source[512];        /* where the scene came from, for messages */
} m2_aw_scene;

/* Allocates a scene with the given sizes (classes copied later by the caller). */
int m2_aw_scene_alloc(m2_aw_scene *s, int n_cls, int n_recep, int n_obj, int n_loc, m2_err *err);
void m2_aw_scene_free(m2_aw_scene *s);
/* ALFWorld's Demangler: names "<class> <n>" from the ids (sorted mangled lowercase ids, numbers given
 * from the top down per class), then lookups and command strings. Call after filling entities. */
int m2_aw_scene_finish(m2_aw_scene *s, m2_err *err);
/* PDDL-mangled id: '|' -> "_bar_", '-' -> "_minus_", '+' -> "_plus_", '.' -> "_dot_", ',' -> "_comma_". */
void m2_aw_mangle(const char *id, char *out, size_t cap);
void m2_aw_demangle(const char *mangled, char *out, size_t cap);

/* Episode counts per (type, split) for generated scenes; type 0 = all six concatenated in type order. */
int m2_aw_num_generated(int type, m2_split split);
/* The same, counting only task types that some floor plan of the split supports (custom tables). */
int m2_aw_num_episodes(const m2_aw_tables *t, int type, m2_split split);
/* Generates episode `index` of (type, split) (type 0 = all types, see above) from seed. Deterministic. */
int m2_aw_generate(const m2_aw_tables *t, int type, m2_split split, int index, uint64_t seed, m2_aw_scene *out, m2_err *err);

/* ---- dynamics ---- */
typedef struct m2_aw_state {
    int loc;
    int held;                /* object index or -1 */
    int *in;                 /* [n_obj] receptacle index or -1 */
    uint8_t *bits;           /* [n_obj] */
    uint8_t *opened;         /* [n_recep] */
    uint8_t *seen;           /* [n_recep] the agent has seen its contents (arrived while open/non-openable, opened,
                                examined, or put something there): the searching expert's knowledge */
} m2_aw_state;

int m2_aw_state_init(m2_aw_state *st, const m2_aw_scene *s, m2_err *err);   /* allocates and sets the initial state */
void m2_aw_state_reset(m2_aw_state *st, const m2_aw_scene *s);
void m2_aw_state_free(m2_aw_state *st);

enum { M2_AW_C_NONE = 0, M2_AW_C_LOOK, M2_AW_C_INVENTORY, M2_AW_C_HELP, M2_AW_C_GOTO, M2_AW_C_OPEN, M2_AW_C_CLOSE, M2_AW_C_TAKE, M2_AW_C_MOVE,
       M2_AW_C_HEAT, M2_AW_C_COOL, M2_AW_C_CLEAN, M2_AW_C_USE, M2_AW_C_SLICE, M2_AW_C_EXAMINE_R, M2_AW_C_EXAMINE_O };
typedef struct m2_aw_cmd { int verb, a, b; } m2_aw_cmd;   /* a, b: object/receptacle indices as the verb needs */

int m2_aw_parse(const m2_aw_scene *s, const char *text, m2_aw_cmd *out);     /* 0 or -1 (unknown words) */
int m2_aw_applicable(const m2_aw_scene *s, const m2_aw_state *st, const m2_aw_cmd *c);
/* Applies an applicable command and writes its feedback into buf. */
void m2_aw_apply(const m2_aw_scene *s, m2_aw_state *st, const m2_aw_cmd *c, char *buf, size_t cap);
int m2_aw_won(const m2_aw_scene *s, const m2_aw_state *st);
int m2_aw_format_cmd(const m2_aw_scene *s, const m2_aw_cmd *c, char *buf, size_t cap);

/* Sorted, deduplicated admissible commands. The list struct keeps its buffers across calls. */
typedef struct m2_aw_cmdlist {
    const char **items;
    int n, cap;
    char *buf;
    size_t buf_len, buf_cap;
} m2_aw_cmdlist;
int m2_aw_admissible(const m2_aw_scene *s, const m2_aw_state *st, m2_aw_cmdlist *out);
void m2_aw_cmdlist_free(m2_aw_cmdlist *l);

/* ---- text ---- */
void m2_aw_text_intro(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap);
void m2_aw_text_look(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap);
void m2_aw_text_recep(const m2_aw_scene *s, const m2_aw_state *st, int r, char *buf, size_t cap);   /* examineReceptacle */
void m2_aw_text_examine_obj(const m2_aw_scene *s, const m2_aw_state *st, int o, char *buf, size_t cap);
void m2_aw_text_inventory(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap);
extern const char m2_aw_help_text[];

/* ---- oracle and segmenter ---- */
enum { M2_AW_ORACLE_SEARCH = 0, M2_AW_ORACLE_PLANNER = 1 };
/* Next expert command from the current state; -1 with err when the goal already holds or no plan exists.
 * SEARCH (default) knows only what the agent has seen (m2_aw_state.seen) and searches unseen receptacles that
 * can hold the object; PLANNER knows where everything is (like alfworld's planner expert). */
int m2_aw_oracle(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap, m2_err *err);
int m2_aw_oracle_mode(const m2_aw_scene *s, const m2_aw_state *st, int mode, char *buf, size_t cap, m2_err *err);
/* Chooses the expert of an alfworld env created through the registry ("search" or "planner"). */
int m2_aw_set_oracle(m2_env *env, const char *mode, m2_err *err);
/* Glider-style sub-goals over a finished trajectory: "find apple", "take apple 1 from countertop 1",
 * "heat apple 1 with microwave 1", "put apple 1 in/on fridge 1", "use desklamp 1" (contiguous cover). */
/* Sub-goals, named so that the executor knows it is done when it issues the action the text names:
 * "take <class>" (finding and taking one sub-goal: its last action is the take), "heat|cool|clean
 * <object> with <appliance>", "put <object> in/on <receptacle>", "use <lamp>", and "put down
 * <object>" (hands full of a wrong object). next: the one the expert (mode) pursues from st;
 * done: 1 when the text holds in st (names may be instances, "apple 1", or classes, "apple"). */
int m2_aw_subgoal_next(const m2_aw_scene *s, const m2_aw_state *st, int mode, char *buf, size_t cap, m2_err *err);
int m2_aw_subgoal_done(const m2_aw_scene *s, const m2_aw_state *st, const char *subgoal);
int m2_aw_segment(const m2_aw_scene *s, const char *const *actions, const char *const *observations, int n,
                  m2_subgoal *out, int cap);

/* ---- game.tw-pddl ---- */
/* Parses a game.tw-pddl JSON text; `name` (file path) is used in error messages. */
int m2_aw_load_twpddl_text(const char *text, size_t len, const char *name, m2_aw_scene *out, m2_err *err);
int m2_aw_load_twpddl(const char *path, m2_aw_scene *out, m2_err *err);
/* Writes the scene's initial state as a game.tw-pddl JSON (malloc'd string). */
char *m2_aw_write_twpddl(const m2_aw_scene *s, const m2_aw_tables *t, m2_err *err);
int m2_aw_save_twpddl(const m2_aw_scene *s, const m2_aw_tables *t, const char *path, m2_err *err);
/* Writes episodes [0, count) of (type, split) (type 0 = all) as an ALFWorld-style tree:
 * out_dir/{train,valid_seen,valid_unseen}/<task_type>-<Obj>-None-<Recep|Lamp>-<plan>/trial_multi2_<index>/game.tw-pddl
 * count < 0 = every episode of the split. Returns the number written, -1 on error. */
int m2_aw_export(const m2_aw_tables *t, int type, m2_split split, int count, uint64_t seed, const char *out_dir, m2_err *err);
/* The PDDL problem text alone (malloc'd). */
char *m2_aw_write_problem(const m2_aw_scene *s, m2_err *err);

/* ---- small string helpers shared by the files ---- */
/* Appends into a fixed caller buffer, truncating (never allocates: used on every step). */
typedef struct m2_aw_sb { char *p; size_t len, cap; } m2_aw_sb;
void m2_aw_sb_puts(m2_aw_sb *b, const char *s);
void m2_aw_sb_printf(m2_aw_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
