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
#include "core/strbuf.h"
#include "env/env.h"

#define M2_SW_MAX_OBJ 400
#define M2_SW_NAME 48
#define M2_SW_NONE (-1)

/* Object kinds: what decides an object's description, referents and behaviour. */
enum m2_sw_kind {
    M2_SW_K_UNIVERSE, M2_SW_K_ROOM, M2_SW_K_OUTSIDE, M2_SW_K_AGENT, M2_SW_K_INVENTORY, M2_SW_K_DOOR,
    M2_SW_K_SUBSTANCE,      /* "a substance called X" */
    M2_SW_K_CUP,            /* open container: "a X (containing ...)" / referents with "containing" */
    M2_SW_K_SURFACE,        /* table/counter/desk/chair: "a X. On the X is: ..." */
    M2_SW_K_CLOSABLE,       /* cupboard/closet/fridge/freezer: "a X. The X door is closed." */
    M2_SW_K_DRAWER, M2_SW_K_BEEHIVE,
    M2_SW_K_STOVE, M2_SW_K_OVEN,  /* heat sources */
    M2_SW_K_SINK,           /* sink/bathtub: device + open container */
    M2_SW_K_TOILET,
    M2_SW_K_THERMOMETER, M2_SW_K_STOPWATCH, M2_SW_K_LIGHTER,
    M2_SW_K_PICTURE, M2_SW_K_BOOKSHELF, M2_SW_K_BOOK,
    M2_SW_K_ANIMAL, M2_SW_K_PLANT, M2_SW_K_FLOWERPOT,
    M2_SW_K_ANSWERBOX,
    M2_SW_K_THING,          /* plain object: "a X" (axe, shovel, soil, battery, ...) */
    M2_SW_K_FOOD,
    M2_SW_K_FIREPIT, M2_SW_K_FOUNTAIN,
    M2_SW_K_LIGHTBULB,      /* polarized voltage user: light bulb, electric motor, electric buzzer */
    M2_SW_K_WIRE,           /* unpolarized component: terminal 1 / terminal 2 */
    M2_SW_K_SWITCH,         /* polarized switch: conducts only when on */
    M2_SW_K_BATTERY,        /* generator; extra: M2_SW_GEN_BATTERY / M2_SW_GEN_FUEL (activable) / M2_SW_GEN_RENEWABLE (on outside) */
    M2_SW_K_TERMINAL,       /* anode / cathode / terminal 1 / terminal 2 of its parent */
    M2_SW_K_PAINT,          /* a paint: described by its bare name */
    M2_SW_K_RECIPE,         /* a document: "A recipe titled <alt>"; its text is the world's recipe_text */
    M2_SW_K_BED, M2_SW_K_COUCH, M2_SW_K_PILLOW,
    M2_SW_K_FLOWER,         /* a plant's flower: door_a = its plant, extra = pollination step (0: not pollinated) */
    M2_SW_K_POLLEN,         /* pollen: door_a = the plant it came from */
    M2_SW_K_PLANE,          /* inclined plane: open container; alt = additional name ("B"), alt2 = surface material */
    M2_SW_K_COUNT
};

/* Each kind's name in the object tree a caller inspects (the "type" of scienceworld.c's object_tree). */
extern const char *const m2_sw_kind_names[M2_SW_K_COUNT];

enum { M2_SW_ST_SOLID = 0, M2_SW_ST_LIQUID = 1, M2_SW_ST_GAS = 2 };

/* Object flags */
#define M2_SW_F_HIDDEN    0x0001u
#define M2_SW_F_MOVABLE   0x0002u
#define M2_SW_F_CONTAINER 0x0004u  /* has container properties */
#define M2_SW_F_OPEN      0x0008u
#define M2_SW_F_CLOSABLE  0x0010u
#define M2_SW_F_DEVICE    0x0020u  /* can be activated / deactivated */
#define M2_SW_F_ON        0x0040u
#define M2_SW_F_LIVING    0x0080u
#define M2_SW_F_MATERIAL  0x0100u  /* has material properties (temperature, state of matter) */
#define M2_SW_F_DELETED   0x0200u
#define M2_SW_F_EDIBLE    0x0400u
#define M2_SW_F_BROKEN    0x0800u  /* a disabled device (TaskDisable): cannot be switched */
#define M2_SW_F_CONDUCTIVE 0x1000u /* electrically conductive material */
#define M2_SW_F_HASTERM   0x2000u  /* a plain object that got (hidden) electrical terminals */
#define M2_SW_F_UNKNOWN   0x4000u  /* an unknown thermal substance: own melting point (melt_ov), names from alt */

enum { M2_SW_GEN_BATTERY = 0, M2_SW_GEN_FUEL = 1, M2_SW_GEN_RENEWABLE = 2 };
enum { M2_SW_VOLT_NONE = 0, M2_SW_VOLT_GROUND = 1, M2_SW_VOLT_GEN = 2 };

typedef struct m2_sw_obj {
    uint16_t kind;
    uint16_t flags;
    int16_t parent;           /* container index, M2_SW_NONE for the universe and doors */
    int16_t door_a, door_b;   /* M2_SW_K_DOOR: the two rooms it connects */
    int16_t mat;              /* material index (m2_sw_materials), -1 none */
    int16_t stage;            /* living things: index into their life-cycle stage names */
    int16_t extra;            /* kind-specific small value */
    float temp;               /* degrees Celsius */
    uint8_t state;            /* ST_* */
    uint8_t combusting, combusted;
    int16_t combust_ticks;
    int16_t conn;             /* M2_SW_K_TERMINAL: the terminal it is wired to, M2_SW_NONE */
    float melt_ov;            /* M2_SW_F_UNKNOWN: melting point */
    int16_t stage_ticks;      /* M2_SW_K_ANIMAL: ticks spent in the current life stage */
    uint8_t volt;             /* M2_SW_K_TERMINAL: VOLT_* */
    uint8_t sickly;           /* M2_SW_K_PLANT: looks unwell (dry or out of soil for a while) */
    int16_t dry_ticks, nosoil_ticks;   /* M2_SW_K_PLANT: ticks in the current stage without water / soil */
    uint8_t has_genes;        /* M2_SW_K_PLANT: a pea plant with modelled genetic traits (Chromosomes.scala) */
    uint8_t genes;            /* M2_SW_K_PLANT: bit 2t+a = allele a (from parent a) of trait t is dominant */
    float angle, friction;    /* M2_SW_K_PLANE: angle in degrees, surface friction coefficient */
    double plane_pos;         /* on a M2_SW_K_PLANE: normalized position (1 top, 0 bottom), set to 1 when moved onto it */
    int32_t watch_cur, watch_user;   /* M2_SW_K_STOPWATCH: ticks while on (reset when off), last reading */
    int32_t seen_move;        /* M2_SW_K_PLANE: w->moves at the last "look at" it showed an object (-1 never) ... */
    double seen_pos;          /* ... and that object's position then (what the agent read off the plane) */
    char name[M2_SW_NAME];
    char alt[M2_SW_NAME];        /* kind-specific: lifeform type, picture subject, artist, colour */
    char alt2[M2_SW_NAME];
} m2_sw_obj;

/* Material table row (thermodynamics). */
typedef struct m2_sw_material {
    const char *name;          /* substance name, e.g. "water" */
    const char *solid_name, *liquid_name, *gas_name;   /* name in each state ("ice", "water", "steam"); NULL = keep */
    float conductivity;        /* thermal conductivity (heat transfer uses the smaller of two) */
    float melt_c, boil_c, combust_c;
    int init_state;            /* ST_* the material is created in (settled by the first tick) */
    float init_temp;
} m2_sw_material;
extern const m2_sw_material m2_sw_materials[];
int m2_sw_material_find(const char *name);

/* java.util.Random (48-bit LCG), so variation worlds follow the original's seeded draws. */
typedef struct m2_sw_jrand { uint64_t seed; } m2_sw_jrand;
void m2_sw_jrand_seed(m2_sw_jrand *r, int64_t seed);
int m2_sw_jrand_next_int(m2_sw_jrand *r, int bound);
int m2_sw_jrand_next_bool(m2_sw_jrand *r);
void m2_sw_jrand_shuffle(m2_sw_jrand *r, int *a, int n);   /* scala.util.Random.shuffle order */

/* ---- goals ---- */
enum m2_sw_goal_type {
    M2_SW_G_FOCUS_LIVING, M2_SW_G_FOCUS_NONLIVING, M2_SW_G_FOCUS_PLANT, M2_SW_G_FOCUS_ANIMAL,
    M2_SW_G_OBJ_IN_CONTAINER,       /* focus object (recursively) inside container named str */
    M2_SW_G_IN_ROOM_OPEN_DOOR, M2_SW_G_MOVE_NEW_LOCATION, M2_SW_G_MOVE_TO_LOCATION,
    M2_SW_G_FIND,                   /* focus on object named str (fail if wrong when fail_if_wrong) */
    M2_SW_G_CHANGE_STATE,           /* focus object is in state `state` */
    M2_SW_G_IS_STATE, M2_SW_G_IS_DIFFERENT_STATE,
    M2_SW_G_FOCUS_ON_NAMED,         /* focus on object whose name is str (no failure) */
    M2_SW_G_TEMP_ABOVE, M2_SW_G_TEMP_BELOW, /* focus object temperature above/below value */
    M2_SW_G_OBJ_IN_CONTAINER_OR_FAIL,  /* like OBJ_IN_CONTAINER, but being in str2 fails the task */
    M2_SW_G_ACTIVATE_DEVICE_NAMED,  /* a visible device named str is on */
    M2_SW_G_IN_ROOM_WITH_OBJECT,    /* something named str is visible */
    M2_SW_G_OBJS_IN_SINGLE_CONTAINER, /* some visible container holds exactly the object named str */
    M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, /* visible container named str directly holds something named str2 */
    M2_SW_G_TEMP_ON_FIRE,           /* visible object named str is burning */
    M2_SW_G_TEMP_INCREASE, M2_SW_G_TEMP_DECREASE,  /* focus object warmer/colder than when first checked by value */
    M2_SW_G_CONTAINER_BY_TEMP,      /* focus object in box str (temp >= value) or str2 (temp <= value); wrong box fails */
    M2_SW_G_PAST_USE,               /* an earlier "use <str> on <str2>" action */
    M2_SW_G_FIND_ANSWER_BOX,        /* focus on the answer box named str (another answer box fails) */
    M2_SW_G_PAST_READ,              /* an earlier "read <str>" */
    M2_SW_G_FIND_LIFE_STAGE,        /* focus on a living thing of type str in stage str2 (anything else fails) */
    M2_SW_G_STAY_IN_LOCATION,       /* be in str for `value` goal checks in a row */
    M2_SW_G_ACTIVATE_DEVICE,        /* focus object is named str and is on */
    M2_SW_G_ELEC_CONNECTED,         /* focus object is wired (through its anode side) to something named str; else fails */
    M2_SW_G_OBJ_CONNECTED_TO_WIRE,  /* something named str has its terminal `state` (0/1) wired to a wire */
    M2_SW_G_WIRE_CONNECTS_POWER,    /* a visible wire touches both str and a generator (named str2 when given) */
    M2_SW_G_WIRE_CONNECTS_LIGHT,    /* a visible wire touches both str and a light bulb */
    M2_SW_G_WIRE_POWER_AND_LIGHT,   /* a visible wire touches both a generator and a light bulb */
    M2_SW_G_OBJ_IN_CONTAINER_BY_NAME, /* focus object (recursively) in str; being in str2 fails */
    M2_SW_G_LIFE_STAGE,             /* GoalLifeStage: focus (the last satisfied object, if any) is a str in stage str2 */
    M2_SW_G_LIFE_STAGE_ANYWHERE,    /* at least `value` visible living things of type str in stage str2 */
    M2_SW_G_CONTAINER_OPEN,         /* a visible container named str is open */
    M2_SW_G_DEACTIVATE_DEVICE_NAMED, /* a visible device named str is off */
    M2_SW_G_PAST_EXAMINE,           /* "look at" an object named str after this goal was first checked */
    M2_SW_G_FIND_PLANE,             /* focus on the inclined plane with additional name str (state 0) or surface str (state 1); else fails */
};

typedef struct m2_sw_goal {
    int type;
    char str[M2_SW_NAME * 2], str2[M2_SW_NAME * 2];
    int optional, defocus, fail_if_wrong;
    int state;
    int combustion_ok;
    float value, init;
    int has_init;
    char key[16], prereq[16];
    char start_loc[M2_SW_NAME];   /* M2_SW_G_MOVE_NEW_LOCATION memory */
} m2_sw_goal;

#define M2_SW_MAX_GOALS 64
typedef struct m2_sw_goalseq {
    m2_sw_goal ordered[M2_SW_MAX_GOALS]; int n_ordered;
    m2_sw_goal unordered[M2_SW_MAX_GOALS]; int n_unordered;
    int done_unordered[M2_SW_MAX_GOALS];
    int cur, failed;
    int last_obj;              /* last satisfied-with object, M2_SW_NONE */
    int stored_state;          /* "stateOfMatter" key, -1 unset */
    char keys[8][16]; int n_keys;
    m2_sw_goal scratch;           /* absorbs an add beyond M2_SW_MAX_GOALS (never expected) */
} m2_sw_goalseq;

/* ---- the world ---- */
#define M2_SW_MAX_USES 16
typedef struct m2_sw_world {
    char used[M2_SW_MAX_USES][2][M2_SW_NAME];   /* (device, patient) names of past "use X on Y" actions */
    int n_used;
    m2_sw_obj o[M2_SW_MAX_OBJ];
    int n;
    int universe, agent, inventory;
    int focus;                 /* monitored (focused) object, M2_SW_NONE */
    int last_connect_move;     /* w->moves when the last electrical connection was made */
    char recipe_text[192];     /* what "read recipe" shows (chemistry-mix) */
    int moves;                 /* ticks so far */
    m2_sw_jrand rng;              /* the world's own random draws (bees), seeded by the task setup */
    int tree_dirty;            /* an object changed container during a tick (physics rebuilds its index) */
    int look_serial;           /* count of "look at" actions; look_name: the last object's name / descript name */
    char look_name[M2_SW_NAME], look_dname[M2_SW_NAME * 2];
    m2_sw_goalseq gs;
} m2_sw_world;

/* world.c: tree, text, house */
int m2_sw_new(m2_sw_world *w, int kind, const char *name, int parent);
void m2_sw_move(m2_sw_world *w, int obj, int parent);
void m2_sw_delete(m2_sw_world *w, int obj);
int m2_sw_children(const m2_sw_world *w, int parent, int *out, int cap, int sorted);   /* visible (not deleted) */
int m2_sw_room_of(const m2_sw_world *w, int obj);           /* the Location containing obj */
int m2_sw_find_named(const m2_sw_world *w, int root, const char *name);   /* first object (by id) named, in subtree */
int m2_sw_door_between(const m2_sw_world *w, int a, int b);
int m2_sw_door_other(const m2_sw_world *w, int door, int room);
int m2_sw_is_inside(const m2_sw_world *w, int obj, int container);
const char *m2_sw_descript_name(const m2_sw_world *w, int obj, char *buf, size_t cap);
void m2_sw_describe(const m2_sw_world *w, int obj, int detailed, m2_strbuf *b);
void m2_sw_look_around(const m2_sw_world *w, m2_strbuf *b);
void m2_sw_inventory_text(const m2_sw_world *w, m2_strbuf *b);
void m2_sw_build_house(m2_sw_world *w, m2_sw_jrand *r);
int m2_sw_room(const m2_sw_world *w, const char *name);
int m2_sw_is_animal(const m2_sw_world *w, int obj);
int m2_sw_is_plant(const m2_sw_world *w, int obj);
int m2_sw_is_living(const m2_sw_world *w, int obj);
int m2_sw_add_animal(m2_sw_world *w, const char *type, int parent);
/* Animal life cycles (processes/lifestage): family of an animal (extra), its stage names/durations. */
enum { M2_SW_FAM_NONE = 0, M2_SW_FAM_ANIMAL, M2_SW_FAM_BIRD, M2_SW_FAM_TORTOISE, M2_SW_FAM_FROG, M2_SW_FAM_BUTTERFLY };
const char *m2_sw_life_stage_name(const m2_sw_world *w, int obj);
int m2_sw_life_stage_count(int family);                  /* stages including the final (dead) one */
const char *m2_sw_life_family_stage(int family, int i);
int m2_sw_life_ticks_left(const m2_sw_world *w, int obj);   /* ticks until the next stage (large when none) */
void m2_sw_life_tick(m2_sw_world *w, int obj);
/* Plant life cycle (PlantLifeStage.scala): seed -> seedling -> adult -> reproducing (grows a flower) -> dead;
 * `stage` holds one of these, `alt` the lifeform type ("apple"), `name` "apple seed" / "apple tree". */
enum { M2_SW_PLANT_SEED = 0, M2_SW_PLANT_SEEDLING, M2_SW_PLANT_ADULT, M2_SW_PLANT_REPRODUCING, M2_SW_PLANT_DEAD };
int m2_sw_add_plant(m2_sw_world *w, const char *lifeform, int stage, int parent);
/* Genetic traits (Chromosomes.scala, GeneticTraitPeas, UnknownPlants.scala): each species has 4 traits
 * (slots), in its mkRandomTraits order; a plant's genes hold 2 alleles per slot. */
enum { M2_SW_TR_PLANT_HEIGHT, M2_SW_TR_SEED_SHAPE, M2_SW_TR_SEED_COLOR, M2_SW_TR_FLOWER_COLOR, M2_SW_TR_FLOWER_SIZE, M2_SW_TR_LEAF_SIZE, M2_SW_TR_LEAF_SHAPE, M2_SW_TR_COUNT };
enum { M2_SW_NUM_TRAITS = 4, M2_SW_NUM_SPECIES = 5 };
typedef struct m2_sw_species {
    const char *lifeform;                    /* "pea", "unknown E", ... */
    int kind[M2_SW_NUM_TRAITS];                 /* TR_* per slot */
    const char *dom[M2_SW_NUM_TRAITS], *rec[M2_SW_NUM_TRAITS];
} m2_sw_species;
extern const m2_sw_species m2_sw_species_tab[M2_SW_NUM_SPECIES];   /* pea, unknown E, B, C, D */
extern const char *const m2_sw_trait_kind_names[M2_SW_TR_COUNT];   /* "plant height", ... */
int m2_sw_species_of(const char *lifeform);                  /* index into m2_sw_species_tab, -1 if none */
int m2_sw_plant_trait_dominant(const m2_sw_world *w, int plant, int slot);   /* phenotype: 1 dominant, 0 recessive */
int m2_sw_add_plant_in_pot(m2_sw_world *w, const char *type, const char *pot_name, int parent);
int m2_sw_add_substance(m2_sw_world *w, const char *name, const char *material, int parent);
int m2_sw_add_answer_box(m2_sw_world *w, const char *colour, int parent);
int m2_sw_add_book(m2_sw_world *w, int which, int parent);   /* 0..5: the original's six books */

/* referents (parser.c) */
#define M2_SW_MAX_REFS 40
#define M2_SW_REF_LEN 112
typedef struct m2_sw_refs { int n; char r[M2_SW_MAX_REFS][M2_SW_REF_LEN]; } m2_sw_refs;
void m2_sw_object_referents(const m2_sw_world *w, int obj, int perspective, m2_sw_refs *out);
int m2_sw_visible_objects(const m2_sw_world *w, int *out, int cap);

/* electrical.c */
int m2_sw_add_component(m2_sw_world *w, int kind, const char *name, int parent);   /* with its terminals */
int m2_sw_terminal_of(const m2_sw_world *w, int obj, int which);   /* which 0/1: anode|terminal 1 / cathode|terminal 2 */
int m2_sw_ensure_terminals(m2_sw_world *w, int obj);               /* hidden terminals of a plain object; 0 ok */
int m2_sw_is_polarized(const m2_sw_world *w, int obj);
int m2_sw_is_electrically_connected(const m2_sw_world *w, int obj);
void m2_sw_disconnect(m2_sw_world *w, int obj);
void m2_sw_elec_tick(m2_sw_world *w, int obj);                      /* generators, users, conductors */
int m2_sw_connected_to_named(const m2_sw_world *w, int obj, const char *name);   /* areComponentsElectricallyConnected */
void m2_sw_connected_to_str(const m2_sw_world *w, int terminal, m2_strbuf *b);

/* chemistry.c */
int m2_sw_add_paint(m2_sw_world *w, const char *name, int parent);
void m2_sw_mix(m2_sw_world *w, int container, m2_strbuf *b);

/* physics.c */
void m2_sw_tick(m2_sw_world *w);
const char *m2_sw_state_name(int st);
void m2_sw_update_name_for_state(m2_sw_world *w, int obj);   /* StateOfMatter.ChangeOfState */
void m2_sw_set_material(m2_sw_world *w, int obj, const char *material);
double m2_sw_java_round(double x);                       /* Java "%.0f" (HALF_UP) */
float m2_sw_melt_point(const m2_sw_world *w, int obj);

/* ---- a playing session: world + parser state ---- */
typedef struct m2_sw_match { int16_t action; int16_t obj[2]; } m2_sw_match;
#define M2_SW_MAX_MATCH 64
typedef struct m2_sw_session {
    m2_sw_world w;
    m2_sw_match amb[M2_SW_MAX_MATCH]; int n_amb;   /* pending ambiguity dialogue (n_amb > 0) */
    char task_desc[600];
    m2_strbuf out;
    m2_sw_refs *refs;                           /* scratch: referents of visible objects */
    int vis[M2_SW_MAX_OBJ]; int n_vis;
    int vis_valid;                           /* refs/vis describe the current world state */
} m2_sw_session;

/* Runs one input line: writes the observation to s->out; *valid = parsed into an action;
 * returns 1 when the action took time (ticks ran). */
int m2_sw_session_step(m2_sw_session *s, const char *input, int *valid);
/* What "look around" (inventory 0) or "inventory" (1) answers now, worded as a step's answer,
 * without a step or a tick: the Python API's free actions look() and inventory(). */
void m2_sw_free_action_text(const m2_sw_world *w, int inventory, m2_strbuf *b);
/* The action templates (the original's getPossibleActions): one per action the parser knows, its
 * first wording with "OBJ" for each object slot ("move OBJ to OBJ"), and the original's template id.
 * Sorted by text (by_id 0, as getPossibleActions) or by (id, name) (by_id 1, as
 * getPossibleActionsWithIDs). Returns the count (at most cap). */
#define M2_SW_MAX_TEMPLATES 32
typedef struct m2_sw_template { char text[32]; const char *name; int id, n_obj; } m2_sw_template;
int m2_sw_action_templates(m2_sw_template *out, int cap, int by_id);
/* Admissible actions (newline-free strings) into an m2_strbuf separated by '\n'. */
void m2_sw_admissible(m2_sw_session *s, m2_strbuf *b);
/* Unique referent from the agent's perspective (writes "" when the object is not visible). */
void m2_sw_session_referent(m2_sw_session *s, int obj, char *buf, size_t cap);

/* goals (tasks.c) */
void m2_sw_goals_tick(m2_sw_world *w);
double m2_sw_goals_score(const m2_sw_world *w);
/* The goal sequence with each sub-goal's done mark, laid out as the original's
 * GoalSequence.getProgressString (what getGoalProgressStr() and AgentGym's /goals answer). */
void m2_sw_goal_progress(const m2_sw_world *w, m2_strbuf *b);

#endif
