/* ScienceWorld port: internal header shared by the world, parser, physics, tasks and oracle files.
 *
 * The world is a flat pool of objects linked by parent indices (the object tree of the original
 * simulator: universe -> rooms -> furniture -> containers -> things). Doors are objects without a
 * parent that connect two rooms. Lists are always produced sorted by (name, creation id), which is
 * the order the original's StringHelpers uses, so every text is deterministic.
 */
#ifndef M2_SW_H
#define M2_SW_H
#include <stddef.h>
#include <stdint.h>
#include "env/env.h"

#define SW_MAX_OBJ 400
#define SW_NAME 48
#define SW_NONE (-1)

/* Object kinds: what decides an object's description, referents and behaviour. */
enum sw_kind {
    K_UNIVERSE, K_ROOM, K_OUTSIDE, K_AGENT, K_INVENTORY, K_DOOR,
    K_SUBSTANCE,      /* "a substance called X" */
    K_CUP,            /* open container: "a X (containing ...)" / referents with "containing" */
    K_SURFACE,        /* table/counter/desk/chair: "a X. On the X is: ..." */
    K_CLOSABLE,       /* cupboard/closet/fridge/freezer: "a X. The X door is closed." */
    K_DRAWER, K_BEEHIVE,
    K_STOVE, K_OVEN,  /* heat sources */
    K_SINK,           /* sink/bathtub: device + open container */
    K_TOILET,
    K_THERMOMETER, K_STOPWATCH, K_LIGHTER,
    K_PICTURE, K_BOOKSHELF, K_BOOK,
    K_ANIMAL, K_PLANT, K_FLOWERPOT,
    K_ANSWERBOX,
    K_THING,          /* plain object: "a X" (axe, shovel, soil, battery, ...) */
    K_FOOD,
    K_FIREPIT, K_FOUNTAIN,
    K_LIGHTBULB,      /* polarized voltage user: light bulb, electric motor, electric buzzer */
    K_WIRE,           /* unpolarized component: terminal 1 / terminal 2 */
    K_SWITCH,         /* polarized switch: conducts only when on */
    K_BATTERY,        /* generator; extra: GEN_BATTERY / GEN_FUEL (activable) / GEN_RENEWABLE (on outside) */
    K_TERMINAL,       /* anode / cathode / terminal 1 / terminal 2 of its parent */
    K_PAINT,          /* a paint: described by its bare name */
    K_RECIPE,         /* a document: "A recipe titled <alt>"; its text is the world's recipe_text */
    K_BED, K_COUCH, K_PILLOW,
    K_FLOWER,         /* a plant's flower: door_a = its plant, extra = pollination step (0: not pollinated) */
    K_POLLEN,         /* pollen: door_a = the plant it came from */
    K_PLANE,          /* inclined plane: open container; alt = additional name ("B"), alt2 = surface material */
    K_COUNT
};

enum { ST_SOLID = 0, ST_LIQUID = 1, ST_GAS = 2 };

/* Object flags */
#define F_HIDDEN    0x0001u
#define F_MOVABLE   0x0002u
#define F_CONTAINER 0x0004u  /* has container properties */
#define F_OPEN      0x0008u
#define F_CLOSABLE  0x0010u
#define F_DEVICE    0x0020u  /* can be activated / deactivated */
#define F_ON        0x0040u
#define F_LIVING    0x0080u
#define F_MATERIAL  0x0100u  /* has material properties (temperature, state of matter) */
#define F_DELETED   0x0200u
#define F_EDIBLE    0x0400u
#define F_BROKEN    0x0800u  /* a disabled device (TaskDisable): cannot be switched */
#define F_CONDUCTIVE 0x1000u /* electrically conductive material */
#define F_HASTERM   0x2000u  /* a plain object that got (hidden) electrical terminals */
#define F_UNKNOWN   0x4000u  /* an unknown thermal substance: own melting point (melt_ov), names from alt */

enum { GEN_BATTERY = 0, GEN_FUEL = 1, GEN_RENEWABLE = 2 };
enum { VOLT_NONE = 0, VOLT_GROUND = 1, VOLT_GEN = 2 };

typedef struct sw_obj {
    uint16_t kind;
    uint16_t flags;
    int16_t parent;           /* container index, SW_NONE for the universe and doors */
    int16_t door_a, door_b;   /* K_DOOR: the two rooms it connects */
    int16_t mat;              /* material index (sw_materials), -1 none */
    int16_t stage;            /* living things: index into their life-cycle stage names */
    int16_t extra;            /* kind-specific small value */
    float temp;               /* degrees Celsius */
    uint8_t state;            /* ST_* */
    uint8_t combusting, combusted;
    int16_t combust_ticks;
    int16_t conn;             /* K_TERMINAL: the terminal it is wired to, SW_NONE */
    float melt_ov;            /* F_UNKNOWN: melting point */
    int16_t stage_ticks;      /* K_ANIMAL: ticks spent in the current life stage */
    uint8_t volt;             /* K_TERMINAL: VOLT_* */
    uint8_t sickly;           /* K_PLANT: looks unwell (dry or out of soil for a while) */
    int16_t dry_ticks, nosoil_ticks;   /* K_PLANT: ticks in the current stage without water / soil */
    uint8_t has_genes;        /* K_PLANT: a pea plant with modelled genetic traits (Chromosomes.scala) */
    uint8_t genes;            /* K_PLANT: bit 2t+a = allele a (from parent a) of trait t is dominant */
    float angle, friction;    /* K_PLANE: angle in degrees, surface friction coefficient */
    double plane_pos;         /* on a K_PLANE: normalized position (1 top, 0 bottom), set to 1 when moved onto it */
    int32_t watch_cur, watch_user;   /* K_STOPWATCH: ticks while on (reset when off), last reading */
    int32_t seen_move;        /* K_PLANE: w->moves at the last "look at" it showed an object (-1 never) ... */
    double seen_pos;          /* ... and that object's position then (what the agent read off the plane) */
    char name[SW_NAME];
    char alt[SW_NAME];        /* kind-specific: lifeform type, picture subject, artist, colour */
    char alt2[SW_NAME];
} sw_obj;

/* Material table row (thermodynamics). */
typedef struct sw_material {
    const char *name;          /* substance name, e.g. "water" */
    const char *solid_name, *liquid_name, *gas_name;   /* name in each state ("ice", "water", "steam"); NULL = keep */
    float conductivity;        /* thermal conductivity (heat transfer uses the smaller of two) */
    float melt_c, boil_c, combust_c;
    int init_state;            /* ST_* the material is created in (settled by the first tick) */
    float init_temp;
} sw_material;
extern const sw_material sw_materials[];
int sw_material_find(const char *name);

/* A tiny growable string builder used for every observation. */
typedef struct sw_sb { char *s; size_t n, cap; int oom; } sw_sb;
void sw_sb_reset(sw_sb *b);
void sw_sb_puts(sw_sb *b, const char *s);
void sw_sb_printf(sw_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sw_sb_free(sw_sb *b);

/* java.util.Random (48-bit LCG), so variation worlds follow the original's seeded draws. */
typedef struct sw_jrand { uint64_t seed; } sw_jrand;
void sw_jrand_seed(sw_jrand *r, int64_t seed);
int sw_jrand_next_int(sw_jrand *r, int bound);
int sw_jrand_next_bool(sw_jrand *r);
void sw_jrand_shuffle(sw_jrand *r, int *a, int n);   /* scala.util.Random.shuffle order */

/* ---- goals ---- */
enum sw_goal_type {
    G_FOCUS_LIVING, G_FOCUS_NONLIVING, G_FOCUS_PLANT, G_FOCUS_ANIMAL,
    G_OBJ_IN_CONTAINER,       /* focus object (recursively) inside container named str */
    G_IN_ROOM_OPEN_DOOR, G_MOVE_NEW_LOCATION, G_MOVE_TO_LOCATION,
    G_FIND,                   /* focus on object named str (fail if wrong when fail_if_wrong) */
    G_CHANGE_STATE,           /* focus object is in state `state` */
    G_IS_STATE, G_IS_DIFFERENT_STATE,
    G_FOCUS_ON_NAMED,         /* focus on object whose name is str (no failure) */
    G_TEMP_ABOVE, G_TEMP_BELOW, /* focus object temperature above/below value */
    G_OBJ_IN_CONTAINER_OR_FAIL,  /* like OBJ_IN_CONTAINER, but being in str2 fails the task */
    G_ACTIVATE_DEVICE_NAMED,  /* a visible device named str is on */
    G_IN_ROOM_WITH_OBJECT,    /* something named str is visible */
    G_OBJS_IN_SINGLE_CONTAINER, /* some visible container holds exactly the object named str */
    G_SPECIFIC_IN_DIRECT_CONTAINER, /* visible container named str directly holds something named str2 */
    G_TEMP_ON_FIRE,           /* visible object named str is burning */
    G_TEMP_INCREASE, G_TEMP_DECREASE,  /* focus object warmer/colder than when first checked by value */
    G_CONTAINER_BY_TEMP,      /* focus object in box str (temp >= value) or str2 (temp <= value); wrong box fails */
    G_PAST_USE,               /* an earlier "use <str> on <str2>" action */
    G_FIND_ANSWER_BOX,        /* focus on the answer box named str (another answer box fails) */
    G_PAST_READ,              /* an earlier "read <str>" */
    G_FIND_LIFE_STAGE,        /* focus on a living thing of type str in stage str2 (anything else fails) */
    G_STAY_IN_LOCATION,       /* be in str for `value` goal checks in a row */
    G_ACTIVATE_DEVICE,        /* focus object is named str and is on */
    G_ELEC_CONNECTED,         /* focus object is wired (through its anode side) to something named str; else fails */
    G_OBJ_CONNECTED_TO_WIRE,  /* something named str has its terminal `state` (0/1) wired to a wire */
    G_WIRE_CONNECTS_POWER,    /* a visible wire touches both str and a generator (named str2 when given) */
    G_WIRE_CONNECTS_LIGHT,    /* a visible wire touches both str and a light bulb */
    G_WIRE_POWER_AND_LIGHT,   /* a visible wire touches both a generator and a light bulb */
    G_OBJ_IN_CONTAINER_BY_NAME, /* focus object (recursively) in str; being in str2 fails */
    G_LIFE_STAGE,             /* GoalLifeStage: focus (the last satisfied object, if any) is a str in stage str2 */
    G_LIFE_STAGE_ANYWHERE,    /* at least `value` visible living things of type str in stage str2 */
    G_CONTAINER_OPEN,         /* a visible container named str is open */
    G_DEACTIVATE_DEVICE_NAMED, /* a visible device named str is off */
    G_PAST_EXAMINE,           /* "look at" an object named str after this goal was first checked */
    G_FIND_PLANE,             /* focus on the inclined plane with additional name str (state 0) or surface str (state 1); else fails */
};

typedef struct sw_goal {
    int type;
    char str[SW_NAME * 2], str2[SW_NAME * 2];
    int optional, defocus, fail_if_wrong;
    int state;
    int combustion_ok;
    float value, init;
    int has_init;
    char key[16], prereq[16];
    char start_loc[SW_NAME];   /* G_MOVE_NEW_LOCATION memory */
} sw_goal;

#define SW_MAX_GOALS 64
typedef struct sw_goalseq {
    sw_goal ordered[SW_MAX_GOALS]; int n_ordered;
    sw_goal unordered[SW_MAX_GOALS]; int n_unordered;
    int done_unordered[SW_MAX_GOALS];
    int cur, failed;
    int last_obj;              /* last satisfied-with object, SW_NONE */
    int stored_state;          /* "stateOfMatter" key, -1 unset */
    char keys[8][16]; int n_keys;
    sw_goal scratch;           /* absorbs an add beyond SW_MAX_GOALS (never expected) */
} sw_goalseq;

/* ---- the world ---- */
#define SW_MAX_USES 16
typedef struct sw_world {
    char used[SW_MAX_USES][2][SW_NAME];   /* (device, patient) names of past "use X on Y" actions */
    int n_used;
    sw_obj o[SW_MAX_OBJ];
    int n;
    int universe, agent, inventory;
    int focus;                 /* monitored (focused) object, SW_NONE */
    int last_connect_move;     /* w->moves when the last electrical connection was made */
    char recipe_text[192];     /* what "read recipe" shows (chemistry-mix) */
    int moves;                 /* ticks so far */
    sw_jrand rng;              /* the world's own random draws (bees), seeded by the task setup */
    int tree_dirty;            /* an object changed container during a tick (physics rebuilds its index) */
    int look_serial;           /* count of "look at" actions; look_name: the last object's name / descript name */
    char look_name[SW_NAME], look_dname[SW_NAME * 2];
    sw_goalseq gs;
} sw_world;

/* world.c: tree, text, house */
int sw_new(sw_world *w, int kind, const char *name, int parent);
void sw_move(sw_world *w, int obj, int parent);
void sw_delete(sw_world *w, int obj);
int sw_children(const sw_world *w, int parent, int *out, int cap, int sorted);   /* visible (not deleted) */
int sw_room_of(const sw_world *w, int obj);           /* the Location containing obj */
int sw_find_named(const sw_world *w, int root, const char *name);   /* first object (by id) named, in subtree */
int sw_door_between(const sw_world *w, int a, int b);
int sw_door_other(const sw_world *w, int door, int room);
int sw_is_inside(const sw_world *w, int obj, int container);
const char *sw_descript_name(const sw_world *w, int obj, char *buf, size_t cap);
void sw_describe(const sw_world *w, int obj, int detailed, sw_sb *b);
void sw_look_around(const sw_world *w, sw_sb *b);
void sw_inventory_text(const sw_world *w, sw_sb *b);
void sw_build_house(sw_world *w, sw_jrand *r);
int sw_room(const sw_world *w, const char *name);
int sw_is_animal(const sw_world *w, int obj);
int sw_is_plant(const sw_world *w, int obj);
int sw_is_living(const sw_world *w, int obj);
int sw_add_animal(sw_world *w, const char *type, int parent);
/* Animal life cycles (processes/lifestage): family of an animal (extra), its stage names/durations. */
enum { FAM_NONE = 0, FAM_ANIMAL, FAM_BIRD, FAM_TORTOISE, FAM_FROG, FAM_BUTTERFLY };
const char *sw_life_stage_name(const sw_world *w, int obj);
int sw_life_stage_count(int family);                  /* stages including the final (dead) one */
const char *sw_life_family_stage(int family, int i);
int sw_life_ticks_left(const sw_world *w, int obj);   /* ticks until the next stage (large when none) */
void sw_life_tick(sw_world *w, int obj);
/* Plant life cycle (PlantLifeStage.scala): seed -> seedling -> adult -> reproducing (grows a flower) -> dead;
 * `stage` holds one of these, `alt` the lifeform type ("apple"), `name` "apple seed" / "apple tree". */
enum { PLANT_SEED = 0, PLANT_SEEDLING, PLANT_ADULT, PLANT_REPRODUCING, PLANT_DEAD };
int sw_add_plant(sw_world *w, const char *lifeform, int stage, int parent);
/* Genetic traits (Chromosomes.scala, GeneticTraitPeas, UnknownPlants.scala): each species has 4 traits
 * (slots), in its mkRandomTraits order; a plant's genes hold 2 alleles per slot. */
enum { TR_PLANT_HEIGHT, TR_SEED_SHAPE, TR_SEED_COLOR, TR_FLOWER_COLOR, TR_FLOWER_SIZE, TR_LEAF_SIZE, TR_LEAF_SHAPE, TR_COUNT };
enum { SW_NUM_TRAITS = 4, SW_NUM_SPECIES = 5 };
typedef struct sw_species {
    const char *lifeform;                    /* "pea", "unknown E", ... */
    int kind[SW_NUM_TRAITS];                 /* TR_* per slot */
    const char *dom[SW_NUM_TRAITS], *rec[SW_NUM_TRAITS];
} sw_species;
extern const sw_species sw_species_tab[SW_NUM_SPECIES];   /* pea, unknown E, B, C, D */
extern const char *const sw_trait_kind_names[TR_COUNT];   /* "plant height", ... */
int sw_species_of(const char *lifeform);                  /* index into sw_species_tab, -1 if none */
int sw_plant_trait_dominant(const sw_world *w, int plant, int slot);   /* phenotype: 1 dominant, 0 recessive */
int sw_add_plant_in_pot(sw_world *w, const char *type, const char *pot_name, int parent);
int sw_add_substance(sw_world *w, const char *name, const char *material, int parent);
int sw_add_answer_box(sw_world *w, const char *colour, int parent);
int sw_add_book(sw_world *w, int which, int parent);   /* 0..5: the original's six books */

/* referents (parser.c) */
#define SW_MAX_REFS 40
#define SW_REF_LEN 112
typedef struct sw_refs { int n; char r[SW_MAX_REFS][SW_REF_LEN]; } sw_refs;
void sw_object_referents(const sw_world *w, int obj, int perspective, sw_refs *out);
int sw_visible_objects(const sw_world *w, int *out, int cap);

/* electrical.c */
int sw_add_component(sw_world *w, int kind, const char *name, int parent);   /* with its terminals */
int sw_terminal_of(const sw_world *w, int obj, int which);   /* which 0/1: anode|terminal 1 / cathode|terminal 2 */
int sw_ensure_terminals(sw_world *w, int obj);               /* hidden terminals of a plain object; 0 ok */
int sw_is_polarized(const sw_world *w, int obj);
int sw_is_electrically_connected(const sw_world *w, int obj);
void sw_disconnect(sw_world *w, int obj);
void sw_elec_tick(sw_world *w, int obj);                      /* generators, users, conductors */
int sw_connected_to_named(const sw_world *w, int obj, const char *name);   /* areComponentsElectricallyConnected */
void sw_connected_to_str(const sw_world *w, int terminal, sw_sb *b);

/* chemistry.c */
int sw_add_paint(sw_world *w, const char *name, int parent);
void sw_mix(sw_world *w, int container, sw_sb *b);

/* physics.c */
void sw_tick(sw_world *w);
const char *sw_state_name(int st);
void sw_update_name_for_state(sw_world *w, int obj);   /* StateOfMatter.ChangeOfState */
void sw_set_material(sw_world *w, int obj, const char *material);
double sw_java_round(double x);                       /* Java "%.0f" (HALF_UP) */
float sw_melt_point(const sw_world *w, int obj);

/* ---- a playing session: world + parser state ---- */
typedef struct sw_match { int16_t action; int16_t obj[2]; } sw_match;
#define SW_MAX_MATCH 64
typedef struct sw_session {
    sw_world w;
    sw_match amb[SW_MAX_MATCH]; int n_amb;   /* pending ambiguity dialogue (n_amb > 0) */
    char task_desc[600];
    sw_sb out;
    sw_refs *refs;                           /* scratch: referents of visible objects */
    int vis[SW_MAX_OBJ]; int n_vis;
    int vis_valid;                           /* refs/vis describe the current world state */
} sw_session;

/* Runs one input line: writes the observation to s->out; *valid = parsed into an action;
 * returns 1 when the action took time (ticks ran). */
int sw_session_step(sw_session *s, const char *input, int *valid);
/* Admissible actions (newline-free strings) into an sw_sb separated by '\n'. */
void sw_admissible(sw_session *s, sw_sb *b);
/* Unique referent from the agent's perspective (writes "" when the object is not visible). */
void sw_session_referent(sw_session *s, int obj, char *buf, size_t cap);

/* goals (tasks.c) */
void sw_goals_tick(sw_world *w);
double sw_goals_score(const sw_world *w);

#endif
