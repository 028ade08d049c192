/* ScienceWorld world: object pool, containment tree, object descriptions, and the house
 * (10 locations and their doors, after the original's BuildingMaker). */
#include "env/scienceworld/sw.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- java.util.Random ---------------- */

#define JR_MULT 0x5DEECE66DULL
#define JR_MASK ((1ULL << 48) - 1)

void m2_sw_jrand_seed(m2_sw_jrand *r, int64_t seed) { r->seed = ((uint64_t)seed ^ JR_MULT) & JR_MASK; }

static int jr_next(m2_sw_jrand *r, int bits) {
    r->seed = (r->seed * JR_MULT + 0xBULL) & JR_MASK;
    return (int)(int32_t)(uint32_t)(r->seed >> (48 - bits));
}

int m2_sw_jrand_next_int(m2_sw_jrand *r, int bound) {
    if (bound <= 0) return 0;
    if ((bound & -bound) == bound) return (int)(((int64_t)bound * (int64_t)jr_next(r, 31)) >> 31);
    int bits, val;
    do {
        bits = jr_next(r, 31);
        val = bits % bound;
    } while (bits - val + (bound - 1) < 0);
    return val;
}

int m2_sw_jrand_next_bool(m2_sw_jrand *r) { return jr_next(r, 1) != 0; }

void m2_sw_jrand_shuffle(m2_sw_jrand *r, int *a, int n) {
    for (int i = n; i >= 2; i--) {
        int k = m2_sw_jrand_next_int(r, i);
        int t = a[i - 1]; a[i - 1] = a[k]; a[k] = t;
    }
}

/* ---------------- object pool ---------------- */

int m2_sw_new(m2_sw_world *w, int kind, const char *name, int parent) {
    if (w->n >= M2_SW_MAX_OBJ) return M2_SW_NONE;
    int id = w->n++;
    m2_sw_obj *o = &w->o[id];
    memset(o, 0, sizeof *o);
    o->kind = (uint16_t)kind;
    o->parent = (int16_t)parent;
    o->door_a = o->door_b = M2_SW_NONE;
    o->mat = -1;
    o->temp = 25.0f;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->flags = M2_SW_F_MOVABLE;
    switch (kind) {
    case M2_SW_K_UNIVERSE: case M2_SW_K_ROOM: case M2_SW_K_OUTSIDE: case M2_SW_K_INVENTORY:
        o->flags = M2_SW_F_CONTAINER | M2_SW_F_OPEN; break;
    case M2_SW_K_AGENT: case M2_SW_K_DOOR: o->flags = 0; break;
    case M2_SW_K_CUP: case M2_SW_K_FLOWERPOT: case M2_SW_K_BOOKSHELF: case M2_SW_K_ANSWERBOX: case M2_SW_K_FIREPIT: case M2_SW_K_FOUNTAIN:
        o->flags |= M2_SW_F_CONTAINER | M2_SW_F_OPEN; break;
    case M2_SW_K_SURFACE: o->flags = M2_SW_F_CONTAINER | M2_SW_F_OPEN; break;
    case M2_SW_K_CLOSABLE: case M2_SW_K_BEEHIVE: o->flags = M2_SW_F_CONTAINER | M2_SW_F_CLOSABLE; break;
    case M2_SW_K_DRAWER: o->flags = M2_SW_F_CONTAINER | M2_SW_F_CLOSABLE; break;
    case M2_SW_K_STOVE: o->flags = M2_SW_F_CONTAINER | M2_SW_F_OPEN | M2_SW_F_DEVICE; break;
    case M2_SW_K_OVEN: o->flags = M2_SW_F_CONTAINER | M2_SW_F_CLOSABLE | M2_SW_F_DEVICE; break;
    case M2_SW_K_SINK: o->flags = M2_SW_F_CONTAINER | M2_SW_F_OPEN | M2_SW_F_DEVICE; break;
    case M2_SW_K_TOILET: o->flags = M2_SW_F_CONTAINER | M2_SW_F_OPEN; break;
    case M2_SW_K_STOPWATCH: case M2_SW_K_SWITCH: o->flags |= M2_SW_F_DEVICE; break;
    case M2_SW_K_PLANE: o->flags |= M2_SW_F_CONTAINER | M2_SW_F_OPEN; o->angle = 45.0f; o->friction = 0.5f; o->seen_move = -1; break;
    case M2_SW_K_TERMINAL: o->flags = 0; o->conn = M2_SW_NONE; break;
    case M2_SW_K_ANIMAL: o->flags |= M2_SW_F_LIVING; break;
    case M2_SW_K_PLANT: o->flags |= M2_SW_F_LIVING | M2_SW_F_CONTAINER | M2_SW_F_OPEN; break;
    case M2_SW_K_FLOWER: o->flags |= M2_SW_F_CONTAINER | M2_SW_F_OPEN; o->door_a = M2_SW_NONE; break;
    case M2_SW_K_POLLEN: o->door_a = M2_SW_NONE; break;
    default: break;
    }
    return id;
}

void m2_sw_move(m2_sw_world *w, int obj, int parent) {
    w->o[obj].parent = (int16_t)parent;
    w->tree_dirty = 1;
    if (parent != M2_SW_NONE && w->o[parent].kind == M2_SW_K_PLANE) w->o[obj].plane_pos = 1.0;   /* starts at the top */
}

void m2_sw_delete(m2_sw_world *w, int obj) {
    w->tree_dirty = 1;
    w->o[obj].flags |= M2_SW_F_DELETED;
    w->o[obj].parent = M2_SW_NONE;
    if (w->focus == obj) w->focus = M2_SW_NONE;
}

static int cmp_world_ids(const m2_sw_world *w, int a, int b) {
    int c = strcmp(w->o[a].name, w->o[b].name);
    return c ? c : (a - b);
}

int m2_sw_children(const m2_sw_world *w, int parent, int *out, int cap, int sorted) {
    int k = 0;
    for (int i = 0; i < w->n; i++) {
        const m2_sw_obj *o = &w->o[i];
        if (o->parent != parent || (o->flags & M2_SW_F_DELETED) || o->kind == M2_SW_K_DOOR) continue;
        if (k < cap) out[k++] = i;
    }
    if (sorted) { /* insertion sort by (name, id): lists are short */
        for (int i = 1; i < k; i++) {
            int v = out[i], j = i - 1;
            while (j >= 0 && cmp_world_ids(w, out[j], v) > 0) { out[j + 1] = out[j]; j--; }
            out[j + 1] = v;
        }
    }
    return k;
}

int m2_sw_room_of(const m2_sw_world *w, int obj) {
    int guard = 0;
    while (obj != M2_SW_NONE && guard++ < 64) {
        int k = w->o[obj].kind;
        if (k == M2_SW_K_ROOM || k == M2_SW_K_OUTSIDE) return obj;
        obj = w->o[obj].parent;
    }
    return M2_SW_NONE;
}

int m2_sw_is_inside(const m2_sw_world *w, int obj, int container) {
    int p = w->o[obj].parent, guard = 0;
    while (p != M2_SW_NONE && guard++ < 64) {
        if (p == container) return 1;
        p = w->o[p].parent;
    }
    return 0;
}

int m2_sw_find_named(const m2_sw_world *w, int root, const char *name) {
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].flags & M2_SW_F_DELETED) continue;
        if (strcmp(w->o[i].name, name)) continue;
        if (root == M2_SW_NONE || i == root || m2_sw_is_inside(w, i, root)) return i;
    }
    return M2_SW_NONE;
}

int m2_sw_room(const m2_sw_world *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if ((w->o[i].kind == M2_SW_K_ROOM || w->o[i].kind == M2_SW_K_OUTSIDE) && !strcmp(w->o[i].name, name)) return i;
    return M2_SW_NONE;
}

int m2_sw_door_between(const m2_sw_world *w, int a, int b) {
    for (int i = 0; i < w->n; i++) {
        const m2_sw_obj *o = &w->o[i];
        if (o->kind != M2_SW_K_DOOR) continue;
        if ((o->door_a == a && o->door_b == b) || (o->door_a == b && o->door_b == a)) return i;
    }
    return M2_SW_NONE;
}

int m2_sw_door_other(const m2_sw_world *w, int door, int room) {
    const m2_sw_obj *o = &w->o[door];
    if (o->door_a == room) return o->door_b;
    if (o->door_b == room) return o->door_a;
    return M2_SW_NONE;
}

int m2_sw_is_animal(const m2_sw_world *w, int obj) { return w->o[obj].kind == M2_SW_K_ANIMAL; }
int m2_sw_is_plant(const m2_sw_world *w, int obj) { return w->o[obj].kind == M2_SW_K_PLANT; }
int m2_sw_is_living(const m2_sw_world *w, int obj) { return (w->o[obj].flags & M2_SW_F_LIVING) != 0; }

/* ---------------- life stages ---------------- */

/* Life-cycle families and their first stage, after the original's lifestage/ sources. Animals are
 * created in their first stage; the port does not advance animal stages with time (documented). */
/* stage name, duration in ticks, canonical name (NULL: "<stage> <type>", or "<type> egg") */
typedef struct life_stage { const char *name; int ticks; const char *canonical; } life_stage;
static const life_stage fam_stages[6][5] = {
    [M2_SW_FAM_ANIMAL] = {{"baby", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [M2_SW_FAM_BIRD] = {{"egg", 20, NULL}, {"hatchling", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [M2_SW_FAM_TORTOISE] = {{"egg", 20, NULL}, {"hatchling", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [M2_SW_FAM_FROG] = {{"egg", 20, "frog egg"}, {"tadpole", 20, "tadpole"}, {"adult", 50, "adult frog"}, {"death", 0, "dead frog"}},
    [M2_SW_FAM_BUTTERFLY] = {{"egg", 20, "butterfly egg"}, {"caterpillar", 20, "caterpillar"}, {"pupa", 20, "butterfly pupa"},
                       {"adult", 50, "adult butterfly"}, {"death", 0, "dead butterfly"}},
};
static const int fam_count[6] = {0, 4, 5, 5, 4, 5};

int m2_sw_life_stage_count(int family) { return family > 0 && family < 6 ? fam_count[family] : 0; }
const char *m2_sw_life_family_stage(int family, int i) {
    return (family > 0 && family < 6 && i >= 0 && i < fam_count[family]) ? fam_stages[family][i].name : "";
}

static const char *const plant_stage_names[5] = {"seed", "seedling", "adult", "reproducing", "dead"};
/* ticks a plant must meet its needs in a stage before it moves on (seed 10, seedling 10, adult 5) */
static const int plant_stage_ticks[5] = {10, 10, 5, 0, 0};

const char *m2_sw_life_stage_name(const m2_sw_world *w, int obj) {
    const m2_sw_obj *o = &w->o[obj];
    if (o->kind == M2_SW_K_PLANT) return plant_stage_names[o->stage >= 0 && o->stage < 5 ? o->stage : M2_SW_PLANT_ADULT];
    if (o->extra <= M2_SW_FAM_NONE || o->extra > M2_SW_FAM_BUTTERFLY) return "adult";
    return m2_sw_life_family_stage(o->extra, o->stage);
}

int m2_sw_life_ticks_left(const m2_sw_world *w, int obj) {
    const m2_sw_obj *o = &w->o[obj];
    if (o->kind == M2_SW_K_PLANT)
        return o->stage < M2_SW_PLANT_REPRODUCING ? plant_stage_ticks[o->stage] - o->stage_ticks : 1 << 20;
    if (o->extra <= M2_SW_FAM_NONE || o->extra > M2_SW_FAM_BUTTERFLY || o->stage >= fam_count[o->extra] - 1) return 1 << 20;
    return fam_stages[o->extra][o->stage].ticks - o->stage_ticks;
}

/* LifeStage.tick: count ticks in the stage; move on when its duration is reached. */
/* The plant's name follows its stage (FruitingTree.tick): "<type> seed", else "<type> tree" ("pea plant",
 * "unknown B plant"). */
static void plant_set_name(m2_sw_obj *o) {
    char life[32];
    snprintf(life, sizeof life, "%.31s", o->alt);
    if (o->stage == M2_SW_PLANT_SEED) snprintf(o->name, sizeof o->name, "%s seed", life);
    else snprintf(o->name, sizeof o->name, "%s %s", life, !strcmp(life, "pea") || !strncmp(life, "unknown ", 8) ? "plant" : "tree");
}

/* LifeStage.checkContainerHas: a sibling (in the plant's container) named `name`. */
static int plant_container_has(const m2_sw_world *w, int obj, const char *name) {
    int c = w->o[obj].parent;
    if (c == M2_SW_NONE) return M2_SW_NONE;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].parent == c && i != obj && !(w->o[i].flags & M2_SW_F_DELETED) && !strcmp(w->o[i].name, name)) return i;
    return M2_SW_NONE;
}

static void plant_change_stage(m2_sw_obj *o, int stage) {
    o->stage = (int16_t)stage;   /* each stage keeps its own counters: a new stage starts from zero */
    o->stage_ticks = 0;
    o->dry_ticks = 0;
    o->nosoil_ticks = 0;
}

/* PlantLifeStage.scala: seeds need water and soil for 10 ticks (the water is used up on sprouting);
 * seedlings need both for 10 more (sickly after 10 dry ticks, dead after 20; 2/5 ticks without soil);
 * adults use up water each tick, become reproducing after 5 unstressed ticks (stressed after 25 dry
 * ticks, dead after 50); reproducing plants grow one flower every 5 unstressed ticks (at most one).
 * Temperature limits are not modelled (plants stay at room temperature in every task). */
static void plant_tick(m2_sw_world *w, int obj) {
    m2_sw_obj *o = &w->o[obj];
    if (o->stage == M2_SW_PLANT_DEAD) {
        /* PlantLifeStageDeath: flowers are dropped, anything else on the plant falls into its container */
        for (int i = 0; i < w->n; i++) {
            if (w->o[i].parent != obj || (w->o[i].flags & M2_SW_F_DELETED)) continue;
            if (w->o[i].kind == M2_SW_K_FLOWER) {   /* whatever the flower held (bees) drops into the plant's container */
                for (int j = 0; j < w->n; j++)
                    if (w->o[j].parent == i && o->parent != M2_SW_NONE) m2_sw_move(w, j, o->parent);
                m2_sw_delete(w, i);
            } else if (o->parent != M2_SW_NONE) m2_sw_move(w, i, o->parent);
        }
        return;
    }
    int water = plant_container_has(w, obj, "water");
    int soil = plant_container_has(w, obj, "soil");
    if (o->stage == M2_SW_PLANT_SEED) {
        if (water == M2_SW_NONE || soil == M2_SW_NONE) return;
        if (++o->stage_ticks >= plant_stage_ticks[M2_SW_PLANT_SEED]) {
            m2_sw_delete(w, water);
            plant_change_stage(o, M2_SW_PLANT_SEEDLING);
            plant_set_name(o);
        }
        return;
    }
    int stressed = 0, sickly = 0, dies = 0;
    int max_dry = o->stage == M2_SW_PLANT_SEEDLING ? 20 : 50;
    if (water != M2_SW_NONE) {
        o->dry_ticks = 0;
        if (o->stage != M2_SW_PLANT_SEEDLING) m2_sw_delete(w, water);   /* adults drink every tick */
    } else {
        o->dry_ticks++;
        if (o->stage == M2_SW_PLANT_SEEDLING) stressed = 1;
        if (o->dry_ticks >= max_dry / 2) { stressed = 1; sickly = 1; }
        if (o->dry_ticks >= max_dry) dies = 1;
    }
    if (soil != M2_SW_NONE) o->nosoil_ticks = 0;
    else {
        stressed = 1;
        o->nosoil_ticks++;
        if (o->nosoil_ticks >= 2) sickly = 1;
        if (o->nosoil_ticks >= 5) dies = 1;
    }
    o->sickly = (uint8_t)sickly;
    if (dies) { plant_change_stage(o, M2_SW_PLANT_DEAD); o->sickly = 0; return; }
    if (stressed) return;
    o->stage_ticks++;
    if (o->stage == M2_SW_PLANT_SEEDLING && o->stage_ticks >= plant_stage_ticks[M2_SW_PLANT_SEEDLING]) {
        if (water != M2_SW_NONE) m2_sw_delete(w, water);
        plant_change_stage(o, M2_SW_PLANT_ADULT);
    } else if (o->stage == M2_SW_PLANT_ADULT && o->stage_ticks >= plant_stage_ticks[M2_SW_PLANT_ADULT]) {
        plant_change_stage(o, M2_SW_PLANT_REPRODUCING);
    } else if (o->stage == M2_SW_PLANT_REPRODUCING && o->stage_ticks >= 5) {
        int has_flower = 0;
        for (int i = 0; i < w->n; i++)
            if (w->o[i].parent == obj && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].kind == M2_SW_K_FLOWER) has_flower = 1;
        if (!has_flower) {
            int f = m2_sw_new(w, M2_SW_K_FLOWER, "flower", obj);
            if (f != M2_SW_NONE) w->o[f].door_a = (int16_t)obj;
        }
        o->stage_ticks = 0;
    }
}

/* Flower.pollinate: pollen of another plant of the same type starts the flower -> fruit process. */
const char *const m2_sw_kind_names[M2_SW_K_COUNT] = {
    [M2_SW_K_UNIVERSE] = "universe", [M2_SW_K_ROOM] = "room", [M2_SW_K_OUTSIDE] = "outside",
    [M2_SW_K_AGENT] = "agent", [M2_SW_K_INVENTORY] = "inventory", [M2_SW_K_DOOR] = "door",
    [M2_SW_K_SUBSTANCE] = "substance", [M2_SW_K_CUP] = "cup", [M2_SW_K_SURFACE] = "surface",
    [M2_SW_K_CLOSABLE] = "closable container", [M2_SW_K_DRAWER] = "drawer", [M2_SW_K_BEEHIVE] = "beehive",
    [M2_SW_K_STOVE] = "stove", [M2_SW_K_OVEN] = "oven", [M2_SW_K_SINK] = "sink", [M2_SW_K_TOILET] = "toilet",
    [M2_SW_K_THERMOMETER] = "thermometer", [M2_SW_K_STOPWATCH] = "stopwatch", [M2_SW_K_LIGHTER] = "lighter",
    [M2_SW_K_PICTURE] = "picture", [M2_SW_K_BOOKSHELF] = "bookshelf", [M2_SW_K_BOOK] = "book",
    [M2_SW_K_ANIMAL] = "animal", [M2_SW_K_PLANT] = "plant", [M2_SW_K_FLOWERPOT] = "flower pot",
    [M2_SW_K_ANSWERBOX] = "answer box", [M2_SW_K_THING] = "thing", [M2_SW_K_FOOD] = "food",
    [M2_SW_K_FIREPIT] = "fire pit", [M2_SW_K_FOUNTAIN] = "fountain", [M2_SW_K_LIGHTBULB] = "electrical user",
    [M2_SW_K_WIRE] = "wire", [M2_SW_K_SWITCH] = "switch", [M2_SW_K_BATTERY] = "generator",
    [M2_SW_K_TERMINAL] = "terminal", [M2_SW_K_PAINT] = "paint", [M2_SW_K_RECIPE] = "recipe",
    [M2_SW_K_BED] = "bed", [M2_SW_K_COUCH] = "couch", [M2_SW_K_PILLOW] = "pillow", [M2_SW_K_FLOWER] = "flower",
    [M2_SW_K_POLLEN] = "pollen", [M2_SW_K_PLANE] = "inclined plane",
};

const char *const m2_sw_trait_kind_names[M2_SW_TR_COUNT] = {"plant height", "seed shape", "seed color", "flower color",
                                                    "flower size", "leaf size", "leaf shape"};
const m2_sw_species m2_sw_species_tab[M2_SW_NUM_SPECIES] = {
    {"pea", {M2_SW_TR_PLANT_HEIGHT, M2_SW_TR_SEED_SHAPE, M2_SW_TR_SEED_COLOR, M2_SW_TR_FLOWER_COLOR},
     {"tall", "round", "green", "purple"}, {"short", "wrinkly", "orange", "white"}},
    {"unknown E", {M2_SW_TR_SEED_COLOR, M2_SW_TR_SEED_SHAPE, M2_SW_TR_LEAF_SHAPE, M2_SW_TR_FLOWER_SIZE},
     {"blue", "round", "elliptical", "small"}, {"brown", "square", "linear", "large"}},
    {"unknown B", {M2_SW_TR_PLANT_HEIGHT, M2_SW_TR_SEED_COLOR, M2_SW_TR_FLOWER_SIZE, M2_SW_TR_FLOWER_COLOR},
     {"short", "green", "large", "orange"}, {"tall", "yellow", "small", "yellow"}},
    {"unknown C", {M2_SW_TR_PLANT_HEIGHT, M2_SW_TR_LEAF_SHAPE, M2_SW_TR_FLOWER_SIZE, M2_SW_TR_FLOWER_COLOR},
     {"short", "pointed", "large", "orange"}, {"tall", "round", "small", "yellow"}},
    {"unknown D", {M2_SW_TR_SEED_SHAPE, M2_SW_TR_LEAF_SIZE, M2_SW_TR_FLOWER_SIZE, M2_SW_TR_FLOWER_COLOR},
     {"spherical", "medium", "small", "blue"}, {"ovate", "large", "medium", "red"}},
};
int m2_sw_species_of(const char *lifeform) {
    for (int i = 0; i < M2_SW_NUM_SPECIES; i++) if (!strcmp(m2_sw_species_tab[i].lifeform, lifeform)) return i;
    return -1;
}
/* The phenotype value of trait kind `kind` of a plant with genes, "" when its species lacks the trait. */
static const char *plant_trait_value(const m2_sw_world *w, int plant, int kind) {
    int sp = m2_sw_species_of(w->o[plant].alt);
    if (sp < 0 || !w->o[plant].has_genes) return "";
    for (int t = 0; t < M2_SW_NUM_TRAITS; t++)
        if (m2_sw_species_tab[sp].kind[t] == kind)
            return m2_sw_plant_trait_dominant(w, plant, t) ? m2_sw_species_tab[sp].dom[t] : m2_sw_species_tab[sp].rec[t];
    return "";
}
/* ChromosomePair.getPhenotype: recessive only when both alleles are. */
int m2_sw_plant_trait_dominant(const m2_sw_world *w, int plant, int trait) {
    return (w->o[plant].genes >> (2 * trait) & 3) != 0;
}

/* GeneticReproduction.mateGenesPunnetSquare: per trait, one allele drawn from each parent. */
static uint8_t punnett(m2_sw_world *w, int p1, int p2) {
    uint8_t g = 0;
    for (int t = 0; t < M2_SW_NUM_TRAITS; t++) {
        int pick = m2_sw_jrand_next_int(&w->rng, 4);   /* one of the square's four cells */
        int a = w->o[p1].genes >> (2 * t + (pick >> 1)) & 1, b = w->o[p2].genes >> (2 * t + (pick & 1)) & 1;
        g |= (uint8_t)((a | b << 1) << (2 * t));
    }
    return g;
}

static int flower_pollinate(m2_sw_world *w, int flower, int pollen) {
    m2_sw_obj *f = &w->o[flower];
    int from = w->o[pollen].door_a, own = f->door_a;
    if (from == own || from == M2_SW_NONE || own == M2_SW_NONE) return 0;
    if (strcmp(w->o[from].alt, w->o[own].alt)) return 0;
    m2_sw_delete(w, pollen);
    f->extra = 1;
    f->door_b = (int16_t)from;   /* the pollen's plant: the other parent of a pea seed */
    return 1;
}

/* Flower.tick: a pollinated flower turns into the plant's fruit after 5 more ticks (its contents drop
 * onto the plant); an unpollinated one keeps one pollen of its own plant and checks everything inside
 * it (and inside what is inside it, e.g. bees) for pollen that pollinates it. */
static void flower_tick(m2_sw_world *w, int flower) {
    m2_sw_obj *f = &w->o[flower];
    if (f->extra > 0) {
        if (++f->extra > 5 && f->parent != M2_SW_NONE) {
            int plant = f->door_a, where = f->parent;
            if (plant != M2_SW_NONE) {   /* PlantReproduction.createFruit */
                if (w->o[plant].has_genes && f->door_b != M2_SW_NONE && w->o[f->door_b].has_genes) {
                    /* a pea plant's flower becomes a pea seed with genes from both parents */
                    int seed = m2_sw_add_plant(w, w->o[plant].alt, M2_SW_PLANT_SEED, where);
                    if (seed != M2_SW_NONE) {
                        w->o[seed].has_genes = 1;
                        w->o[seed].genes = punnett(w, plant, f->door_b);
                    }
                } else {
                    char fruit[M2_SW_NAME];
                    snprintf(fruit, sizeof fruit, "%s", w->o[plant].alt);
                    m2_sw_new(w, M2_SW_K_FOOD, fruit, where);
                }
            }
            for (int i = 0; i < w->n; i++)
                if (w->o[i].parent == flower && !(w->o[i].flags & M2_SW_F_DELETED)) m2_sw_move(w, i, where);
            m2_sw_delete(w, flower);
        }
        return;
    }
    int has_own = 0;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].parent == flower && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].kind == M2_SW_K_POLLEN && w->o[i].door_a == f->door_a)
            has_own = 1;
    if (!has_own) {
        int p = m2_sw_new(w, M2_SW_K_POLLEN, "pollen", flower);
        if (p != M2_SW_NONE) w->o[p].door_a = f->door_a;
    }
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].parent != flower || (w->o[i].flags & M2_SW_F_DELETED)) continue;
        if (w->o[i].kind == M2_SW_K_POLLEN) { if (flower_pollinate(w, flower, i)) return; continue; }
        for (int j = 0; j < w->n; j++)
            if (w->o[j].parent == i && !(w->o[j].flags & M2_SW_F_DELETED) && w->o[j].kind == M2_SW_K_POLLEN && flower_pollinate(w, flower, j))
                return;
    }
}

/* Flowers reachable from `c` through open containers (getContainedAccessibleObjectsOfType), id order. */
static int accessible_flowers(const m2_sw_world *w, int c, int *out, int n, int cap, int depth) {
    if (depth > 8) return n;
    for (int i = 0; i < w->n && n < cap; i++) {
        const m2_sw_obj *x = &w->o[i];
        if (x->parent != c || (x->flags & M2_SW_F_DELETED)) continue;
        if (x->kind == M2_SW_K_FLOWER) out[n++] = i;
        else if ((x->flags & M2_SW_F_CONTAINER) && (x->flags & M2_SW_F_OPEN)) n = accessible_flowers(w, i, out, n, cap, depth + 1);
    }
    return n;
}

/* WanderingAnimal.moveToNewLocation: through a random open door of the room; out of an open container
 * into its room; nothing from a closed one (the bee hive). */
static void bee_move_on(m2_sw_world *w, int bee) {
    int c = w->o[bee].parent;
    if (c == M2_SW_NONE) return;
    int kind = w->o[c].kind;
    if (kind == M2_SW_K_ROOM || kind == M2_SW_K_OUTSIDE) {
        int doors[16], nd = 0;
        for (int i = 0; i < w->n && nd < 16; i++)
            if (w->o[i].kind == M2_SW_K_DOOR && (w->o[i].flags & M2_SW_F_OPEN) && m2_sw_door_other(w, i, c) != M2_SW_NONE) doors[nd++] = i;
        if (!nd) return;
        m2_sw_move(w, bee, m2_sw_door_other(w, doors[m2_sw_jrand_next_int(&w->rng, nd)], c));
        return;
    }
    if (w->o[c].flags & M2_SW_F_OPEN) {
        int room = m2_sw_room_of(w, c);
        if (room != M2_SW_NONE) m2_sw_move(w, bee, room);
    }
}

/* Bee.tick: in a flower, collect a pollen (half the time) or leave; elsewhere, fly into a flower
 * (half the time) or move on. Draws come from the world's seeded generator. */
static void bee_tick(m2_sw_world *w, int bee) {
    int c = w->o[bee].parent;
    if (c == M2_SW_NONE) return;
    if (w->o[c].kind == M2_SW_K_FLOWER) {
        if (m2_sw_jrand_next_int(&w->rng, 2) == 0) {
            int carried = 0, pol[16], np = 0;
            for (int i = 0; i < w->n; i++) {
                if (w->o[i].flags & M2_SW_F_DELETED || w->o[i].kind != M2_SW_K_POLLEN) continue;
                if (w->o[i].parent == bee) carried++;
                else if (w->o[i].parent == c && np < 16) pol[np++] = i;
            }
            if (carried > 5 || !np) return;
            m2_sw_move(w, pol[m2_sw_jrand_next_int(&w->rng, np)], bee);
        } else bee_move_on(w, bee);
        return;
    }
    if (m2_sw_jrand_next_int(&w->rng, 2) == 1) {
        int fl[32];
        int nf = accessible_flowers(w, c, fl, 0, 32, 0);
        if (nf) m2_sw_move(w, bee, fl[m2_sw_jrand_next_int(&w->rng, nf)]);
    } else bee_move_on(w, bee);
}

void m2_sw_life_tick(m2_sw_world *w, int obj) {
    m2_sw_obj *o = &w->o[obj];
    if (o->kind == M2_SW_K_PLANT) { plant_tick(w, obj); return; }
    if (o->kind == M2_SW_K_FLOWER) { flower_tick(w, obj); return; }
    if (o->kind == M2_SW_K_ANIMAL && !strcmp(o->name, "bee")) { bee_tick(w, obj); return; }
    if (o->kind != M2_SW_K_ANIMAL || o->extra <= M2_SW_FAM_NONE || o->extra > M2_SW_FAM_BUTTERFLY) return;
    if (o->stage >= fam_count[o->extra] - 1) return;   /* dead */
    if (++o->stage_ticks >= fam_stages[o->extra][o->stage].ticks) {
        o->stage++;
        o->stage_ticks = 0;
    }
}

const char *m2_sw_descript_name(const m2_sw_world *w, int obj, char *buf, size_t cap) {
    const m2_sw_obj *o = &w->o[obj];
    if (o->kind == M2_SW_K_DOOR) {
        snprintf(buf, cap, "door between %s and %s", w->o[o->door_a].name, w->o[o->door_b].name);
    } else if (o->kind == M2_SW_K_ANIMAL) {
        const char *st = m2_sw_life_stage_name(w, obj);
        const char *canon = (o->extra > M2_SW_FAM_NONE && o->extra <= M2_SW_FAM_BUTTERFLY) ? fam_stages[o->extra][o->stage].canonical : NULL;
        if (o->extra == M2_SW_FAM_NONE && !strcmp(o->name, "bee")) snprintf(buf, cap, "adult bee");   /* adult forever */
        else if (o->extra == M2_SW_FAM_NONE) snprintf(buf, cap, "%s", o->name);
        else if (canon) snprintf(buf, cap, "%s", canon);
        else if (!strcmp(st, "egg")) snprintf(buf, cap, "%s egg", o->alt);
        else snprintf(buf, cap, "%s %s", st, o->alt);
    } else if (o->kind == M2_SW_K_PLANE) {
        /* InclinedPlane.getDescriptName: name, additional name, " with a X surface" (none for the default) */
        char t[M2_SW_NAME * 3];
        snprintf(t, sizeof t, "%s%s%s%s%s%s", o->name, o->alt[0] ? " " : "", o->alt, o->alt2[0] ? " with a " : "",
                 o->alt2, o->alt2[0] ? " surface" : "");
        snprintf(buf, cap, "%s", t);
    } else if (o->combusting) {
        snprintf(buf, cap, "%s (on fire)", o->name);
    } else if (o->combusted && o->mat >= 0 && strcmp(m2_sw_materials[o->mat].name, "ash")) {
        snprintf(buf, cap, "burned %s", o->name);
    } else {
        snprintf(buf, cap, "%s", o->name);
    }
    return buf;
}

/* ---------------- descriptions ---------------- */

static int starts_vowel(const char *s) { return s[0] && strchr("aeiou", s[0]) != NULL; }

static void list_children(const m2_sw_world *w, int parent, int multiline, m2_strbuf *b) {
    int kids[M2_SW_MAX_OBJ];
    int k = m2_sw_children(w, parent, kids, M2_SW_MAX_OBJ, 1);
    int shown = 0;
    for (int i = 0; i < k; i++) {
        if (w->o[kids[i]].flags & M2_SW_F_HIDDEN) continue;
        if (multiline) {
            m2_strbuf_puts(b, "\t");
            m2_sw_describe(w, kids[i], 0, b);
            m2_strbuf_puts(b, "\n");
        } else {
            if (shown) m2_strbuf_puts(b, ", ");
            m2_sw_describe(w, kids[i], 0, b);
        }
        shown++;
    }
    if (!shown) m2_strbuf_puts(b, multiline ? "\tnothing" : "nothing");
}

static const char *state_word(int on) { return on ? "on" : "off"; }

static void describe_contents_in(const m2_sw_world *w, int obj, const char *dn, int detailed, const char *prep, m2_strbuf *b) {
    if (detailed) {
        m2_strbuf_appendf(b, "%s the %s is: \n", prep, dn);
        list_children(w, obj, 1, b);
    } else {
        m2_strbuf_appendf(b, "%s the %s is: ", prep, dn);
        list_children(w, obj, 0, b);
        m2_strbuf_puts(b, ".");
    }
}

void m2_sw_describe(const m2_sw_world *w, int obj, int detailed, m2_strbuf *b) {
    const m2_sw_obj *o = &w->o[obj];
    char dn[M2_SW_NAME * 2];
    m2_sw_descript_name(w, obj, dn, sizeof dn);
    int open = (o->flags & M2_SW_F_OPEN) != 0;
    switch (o->kind) {
    case M2_SW_K_UNIVERSE:
        m2_strbuf_puts(b, "A universe. In this Universe, you see: ");
        list_children(w, obj, 1, b);
        m2_strbuf_puts(b, ".");
        break;
    case M2_SW_K_ROOM: case M2_SW_K_OUTSIDE: {
        if (o->kind == M2_SW_K_ROOM) m2_strbuf_appendf(b, "This room is called the %s. In it, you see: \n", dn);
        else m2_strbuf_appendf(b, "This outside location is called the %s. Here you see: \n", dn);
        list_children(w, obj, 1, b);
        m2_strbuf_puts(b, "You also see:\n");
        /* doors: descriptions sorted as strings */
        char lines[16][M2_SW_NAME * 3];
        int nl = 0;
        for (int i = 0; i < w->n && nl < 16; i++) {
            const m2_sw_obj *d = &w->o[i];
            if (d->kind != M2_SW_K_DOOR || (d->flags & M2_SW_F_HIDDEN)) continue;
            int other = m2_sw_door_other(w, i, obj);
            if (other == M2_SW_NONE) continue;
            snprintf(lines[nl++], sizeof lines[0], "A door to the %s (that is %s)", w->o[other].name,
                     (d->flags & M2_SW_F_OPEN) ? "open" : "closed");
        }
        for (int i = 1; i < nl; i++)
            for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
                char t[M2_SW_NAME * 3];
                memcpy(t, lines[j], sizeof t); memcpy(lines[j], lines[j - 1], sizeof t); memcpy(lines[j - 1], t, sizeof t);
            }
        if (!nl) m2_strbuf_puts(b, "\tnothing");
        for (int i = 0; i < nl; i++) m2_strbuf_appendf(b, "\t%s\n", lines[i]);
        break;
    }
    case M2_SW_K_AGENT: m2_strbuf_puts(b, "the agent"); break;
    case M2_SW_K_DOOR: {
        int here = m2_sw_room_of(w, w->agent);
        int other = m2_sw_door_other(w, obj, here);
        if (other != M2_SW_NONE)
            m2_strbuf_appendf(b, "A door to the %s (that is %s)", w->o[other].name, open ? "open" : "closed");
        else
            m2_strbuf_appendf(b, "A door that connects the %s to the %s (that is %s)", w->o[o->door_a].name,
                         w->o[o->door_b].name, open ? "open" : "closed");
        break;
    }
    case M2_SW_K_SUBSTANCE: m2_strbuf_appendf(b, "a substance called %s", dn); break;
    case M2_SW_K_INVENTORY: case M2_SW_K_CUP: case M2_SW_K_FLOWERPOT: case M2_SW_K_BOOKSHELF: case M2_SW_K_ANSWERBOX: case M2_SW_K_FIREPIT: case M2_SW_K_FOUNTAIN:
        m2_strbuf_appendf(b, "a %s (containing ", dn);
        list_children(w, obj, 0, b);
        m2_strbuf_puts(b, ")");
        break;
    case M2_SW_K_SURFACE: case M2_SW_K_BED: case M2_SW_K_COUCH:
        m2_strbuf_appendf(b, "a %s. ", dn);
        describe_contents_in(w, obj, dn, detailed, "On", b);
        break;
    case M2_SW_K_CLOSABLE: case M2_SW_K_BEEHIVE:
        m2_strbuf_appendf(b, "a %s", dn);
        if ((o->flags & M2_SW_F_DEVICE) && !(o->flags & M2_SW_F_ON)) m2_strbuf_puts(b, ", which is turned off");
        m2_strbuf_appendf(b, ". The %s door is %s. ", dn, open ? "open" : "closed");
        if (open) describe_contents_in(w, obj, dn, (o->flags & M2_SW_F_DEVICE) ? 0 : detailed, "In", b);
        break;
    case M2_SW_K_DRAWER:
        m2_strbuf_appendf(b, "a %s", dn);
        if (detailed) {
            if (!open) m2_strbuf_puts(b, ". The drawer is closed.");
            else { m2_strbuf_puts(b, ". "); describe_contents_in(w, obj, dn, 1, "In", b); }
        }
        break;
    case M2_SW_K_STOVE:
        m2_strbuf_appendf(b, "a %s, which is turned %s. ", o->name, state_word(o->flags & M2_SW_F_ON));
        describe_contents_in(w, obj, "stove", 0, "On", b);
        break;
    case M2_SW_K_OVEN:
        m2_strbuf_appendf(b, "a %s, which is turned %s. The %s door is %s. ", dn, state_word(o->flags & M2_SW_F_ON), dn,
                     open ? "open" : "closed");
        if (open) describe_contents_in(w, obj, dn, detailed, "In", b);
        break;
    case M2_SW_K_SINK:
        m2_strbuf_appendf(b, "a %s, which is turned %s. ", dn, state_word(o->flags & M2_SW_F_ON));
        describe_contents_in(w, obj, dn, 0, "In", b);
        if (detailed) m2_strbuf_puts(b, " The drain is open.");
        break;
    case M2_SW_K_TOILET: {
        int kids[8];
        m2_strbuf_appendf(b, "a %s. ", dn);
        if (m2_sw_children(w, obj, kids, 8, 0) > 0) describe_contents_in(w, obj, dn, 0, "In", b);
        break;
    }
    case M2_SW_K_PAINT: m2_strbuf_puts(b, dn); break;
    case M2_SW_K_FOOD:
        if (!strcmp(o->name, "apple")) m2_strbuf_appendf(b, "a red %s", dn);
        else if (!strcmp(o->name, "apricot")) m2_strbuf_appendf(b, "a orange %s", dn);
        else if (!strcmp(o->name, "jam")) m2_strbuf_appendf(b, "red %s", dn);
        else if (o->mat >= 0) m2_strbuf_puts(b, dn);
        else m2_strbuf_appendf(b, "%s %s", starts_vowel(dn) ? "an" : "a", dn);
        break;
    case M2_SW_K_THERMOMETER:
        m2_strbuf_appendf(b, "a %s, currently reading a temperature of %.0f degrees celsius", dn, m2_sw_java_round(o->temp) + 0.0);
        break;
    case M2_SW_K_STOPWATCH:
        m2_strbuf_appendf(b, "a %s, which is %s. ", dn, (o->flags & M2_SW_F_ON) ? "activated" : "deactivated");
        if (detailed) m2_strbuf_appendf(b, "The time reads %d ticks.", (int)o->watch_user);
        break;
    case M2_SW_K_PLANE: {
        /* InclinedPlane.getDescription: each object's position ("approximately N% down the plane") */
        int kids[64], k = m2_sw_children(w, obj, kids, 64, 1), shown = 0;
        for (int i = 0; i < k; i++) {
            const m2_sw_obj *c = &w->o[kids[i]];
            if (c->flags & M2_SW_F_HIDDEN) continue;
            char cdn[M2_SW_NAME * 2];
            m2_sw_descript_name(w, kids[i], cdn, sizeof cdn);
            if (shown++) m2_strbuf_appendf(b, ", a %s", cdn);
            else m2_strbuf_appendf(b, "an %s, with: a %s", dn, cdn);
            if (c->plane_pos == 0.0) m2_strbuf_puts(b, " at the bottom of the plane");
            else if (c->plane_pos >= (double)0.99f) m2_strbuf_puts(b, " at the top of the plane");
            else m2_strbuf_appendf(b, " approximately %.0f%% down the plane", m2_sw_java_round(100.0 - 100.0 * c->plane_pos) + 0.0);
        }
        if (!shown) m2_strbuf_appendf(b, "an %s", dn);
        break;
    }
    case M2_SW_K_PICTURE:
        if (!detailed) m2_strbuf_appendf(b, "a %s", dn);
        else m2_strbuf_appendf(b, "a %s of %s.  The artist is listed as %s. ", dn, o->alt, o->alt2);
        break;
    case M2_SW_K_BOOK:
        m2_strbuf_appendf(b, "A %s titled %s by %s", dn, o->alt, o->alt2);
        break;
    case M2_SW_K_ANIMAL:
        m2_strbuf_appendf(b, "a %s", dn);
        if (detailed && !strcmp(o->name, "bee")) {
            for (int i = 0; i < w->n; i++)
                if (w->o[i].parent == obj && w->o[i].kind == M2_SW_K_POLLEN && !(w->o[i].flags & M2_SW_F_DELETED)) {
                    m2_strbuf_puts(b, ", that is covered in pollen");
                    break;
                }
        }
        break;
    case M2_SW_K_PLANT: {
        /* FruitingTree.getDescription (sic "a apple seed") */
        if (o->stage == M2_SW_PLANT_DEAD) { m2_strbuf_appendf(b, "a dead %s", o->name); break; }
        if (o->stage == M2_SW_PLANT_SEED) {
            if (o->has_genes) {   /* PeaPlant / RandomGeneticsPlants: the seed shows its seed shape and colour */
                const char *sh = plant_trait_value(w, obj, M2_SW_TR_SEED_SHAPE), *co = plant_trait_value(w, obj, M2_SW_TR_SEED_COLOR);
                m2_strbuf_appendf(b, "a %s%s%s%s%s", sh, *sh ? " " : "", co, *co ? " " : "", o->name);
            } else m2_strbuf_appendf(b, "a %s", o->name);
            break;
        }
        m2_strbuf_appendf(b, "a %s in the %s stage", o->name, m2_sw_life_stage_name(w, obj));
        if (o->has_genes && (o->stage == M2_SW_PLANT_ADULT || o->stage == M2_SW_PLANT_REPRODUCING)) {
            /* " with a tall height", " with a short height and pointed leaves", " with medium leaves" */
            const char *h = plant_trait_value(w, obj, M2_SW_TR_PLANT_HEIGHT), *ls = plant_trait_value(w, obj, M2_SW_TR_LEAF_SIZE),
                       *lh = plant_trait_value(w, obj, M2_SW_TR_LEAF_SHAPE);
            if (*h || *ls || *lh) {
                m2_strbuf_puts(b, " with ");
                if (*h) m2_strbuf_appendf(b, "a %s height", h);
                if (*h && (*ls || *lh)) m2_strbuf_puts(b, " and ");
                if (*ls || *lh) m2_strbuf_appendf(b, "%s%s%s leaves", ls, *ls && *lh ? " " : "", lh);
            }
        }
        if (o->sickly) m2_strbuf_puts(b, " (that looks unwell)");
        int kids[8];
        if (m2_sw_children(w, obj, kids, 8, 0) > 0) {
            m2_strbuf_appendf(b, ". On the %s you see: ", o->name);
            list_children(w, obj, 0, b);
            m2_strbuf_puts(b, ". ");
        }
        break;
    }
    case M2_SW_K_LIGHTBULB: case M2_SW_K_SWITCH: case M2_SW_K_BATTERY: {
        m2_strbuf_appendf(b, "a %s", dn);
        if (!(o->kind == M2_SW_K_BATTERY && o->extra == M2_SW_GEN_BATTERY)) m2_strbuf_appendf(b, ", which is %s", state_word(o->flags & M2_SW_F_ON));
        if (detailed) {
            m2_strbuf_puts(b, ". its anode is connected to: ");
            m2_sw_connected_to_str(w, m2_sw_terminal_of(w, obj, 0), b);
            m2_strbuf_puts(b, ". its cathode is connected to: ");
            m2_sw_connected_to_str(w, m2_sw_terminal_of(w, obj, 1), b);
            m2_strbuf_puts(b, ". ");
        }
        break;
    }
    case M2_SW_K_WIRE:
        m2_strbuf_appendf(b, "a %s", dn);
        if (detailed) {   /* (sic: the original has no separator here) */
            m2_strbuf_puts(b, "its terminal 1 is connected to: ");
            m2_sw_connected_to_str(w, m2_sw_terminal_of(w, obj, 0), b);
            m2_strbuf_puts(b, ". its terminal 2 is connected to: ");
            m2_sw_connected_to_str(w, m2_sw_terminal_of(w, obj, 1), b);
            m2_strbuf_puts(b, ". ");
        }
        break;
    case M2_SW_K_TERMINAL: {
        int p = o->parent;
        if (!detailed) m2_strbuf_appendf(b, "a %s on %s", dn, p != M2_SW_NONE ? w->o[p].name : "");
        else {
            m2_strbuf_appendf(b, "a %s.  it is connected to: ", dn);
            m2_sw_connected_to_str(w, obj, b);
            m2_strbuf_puts(b, ". ");
        }
        break;
    }
    case M2_SW_K_RECIPE: m2_strbuf_appendf(b, "A %s titled %s", dn, o->alt); break;
    case M2_SW_K_FLOWER: {   /* Flower.getDescription: the plant's flower size and colour, if it has genes */
        const char *sz = "", *co = "";
        if (o->door_a != M2_SW_NONE && w->o[o->door_a].has_genes) {
            sz = plant_trait_value(w, o->door_a, M2_SW_TR_FLOWER_SIZE);
            co = plant_trait_value(w, o->door_a, M2_SW_TR_FLOWER_COLOR);
        }
        m2_strbuf_appendf(b, "a %s%s%s%s%s%s", o->extra > 0 ? "wilting " : "", sz, *sz ? " " : "", co, *co ? " " : "", dn);
        if (detailed) { m2_strbuf_puts(b, ". Inside the flower is: "); list_children(w, obj, 0, b); }
        break;
    }
    case M2_SW_K_POLLEN:
        if (detailed && o->door_a != M2_SW_NONE) m2_strbuf_appendf(b, "%s%s", w->o[o->door_a].alt, dn);   /* (sic: no space) */
        else m2_strbuf_puts(b, dn);
        break;
    default:
        if (!strcmp(o->name, "paper")) m2_strbuf_appendf(b, "A blank %s", dn);
        else if (!strcmp(o->name, "metal fork") || !strcmp(o->name, "plastic fork") || !strcmp(o->name, "paper clip") ||
            !strcmp(o->name, "aluminum foil") || (strlen(o->name) > 6 && !strcmp(o->name + strlen(o->name) - 6, " paper")))
            m2_strbuf_appendf(b, "A %s", dn);
        else if (!strcmp(o->name, "iron block") || !strcmp(o->name, "wood block")) m2_strbuf_appendf(b, "a %s", dn);
        else if (strstr(o->name, "unknown substance")) m2_strbuf_puts(b, dn);
        else m2_strbuf_appendf(b, "%s %s", starts_vowel(dn) ? "an" : "a", dn);
        break;
    }
}

void m2_sw_look_around(const m2_sw_world *w, m2_strbuf *b) {
    int here = w->o[w->agent].parent;
    m2_sw_describe(w, here, 1, b);
}

void m2_sw_inventory_text(const m2_sw_world *w, m2_strbuf *b) {
    m2_strbuf_puts(b, "In your inventory, you see:\n");
    int kids[64];
    int k = m2_sw_children(w, w->inventory, kids, 64, 1);
    int shown = 0;
    for (int i = 0; i < k; i++) {
        if (w->o[kids[i]].flags & M2_SW_F_HIDDEN) continue;
        m2_strbuf_puts(b, "\t");
        m2_sw_describe(w, kids[i], 1, b);
        m2_strbuf_puts(b, "\n");
        shown++;
    }
    if (!shown) m2_strbuf_puts(b, "\tnothing");
}

/* ---------------- object factories ---------------- */

static void add_water(m2_sw_world *w, int parent) {
    int id = m2_sw_new(w, M2_SW_K_SUBSTANCE, "water", parent);
    if (id != M2_SW_NONE) m2_sw_set_material(w, id, "water");
}

int m2_sw_add_substance(m2_sw_world *w, const char *name, const char *material, int parent) {
    int id = m2_sw_new(w, M2_SW_K_SUBSTANCE, name, parent);
    if (id == M2_SW_NONE) return id;
    m2_sw_set_material(w, id, material ? material : name);
    return id;
}

/* Animal table: name, lifeform type, life-cycle first stage (0 baby, 1 egg). */
/* Animals: name (= lifeform type) and life-cycle family, after objects/livingthing/animals/Animal.scala. */
static const struct { const char *name; int family; } animals[] = {
    {"butterfly", M2_SW_FAM_BUTTERFLY}, {"moth", M2_SW_FAM_BUTTERFLY}, {"frog", M2_SW_FAM_FROG}, {"common toad", M2_SW_FAM_FROG},
    {"giant tortoise", M2_SW_FAM_TORTOISE}, {"turtle", M2_SW_FAM_TORTOISE}, {"crocodile", M2_SW_FAM_TORTOISE}, {"chameleon", M2_SW_FAM_TORTOISE},
    {"parrot", M2_SW_FAM_BIRD}, {"dove", M2_SW_FAM_BIRD}, {"blue jay", M2_SW_FAM_BIRD},
    {"elephant", M2_SW_FAM_ANIMAL}, {"brown bear", M2_SW_FAM_ANIMAL}, {"beaver", M2_SW_FAM_ANIMAL}, {"wolf", M2_SW_FAM_ANIMAL},
    {"chipmunk", M2_SW_FAM_ANIMAL}, {"rabbit", M2_SW_FAM_ANIMAL}, {"mouse", M2_SW_FAM_ANIMAL}, {"dragonfly", M2_SW_FAM_ANIMAL},
    {"ant", M2_SW_FAM_ANIMAL}, {"hedgehog", M2_SW_FAM_ANIMAL},
};

int m2_sw_add_animal(m2_sw_world *w, const char *name, int parent) {
    int id = m2_sw_new(w, M2_SW_K_ANIMAL, name, parent);
    if (id == M2_SW_NONE) return id;
    m2_sw_obj *o = &w->o[id];
    snprintf(o->alt, sizeof o->alt, "%s", name);
    o->extra = M2_SW_FAM_NONE;   /* bees and unknown animals: no life cycle modelled */
    for (size_t i = 0; i < sizeof animals / sizeof animals[0]; i++)
        if (!strcmp(animals[i].name, name)) o->extra = (int16_t)animals[i].family;
    return id;
}

int m2_sw_add_plant(m2_sw_world *w, const char *lifeform, int stage, int parent) {
    int p = m2_sw_new(w, M2_SW_K_PLANT, lifeform, parent);
    if (p == M2_SW_NONE) return p;
    snprintf(w->o[p].alt, sizeof w->o[p].alt, "%s", lifeform);
    plant_change_stage(&w->o[p], stage);
    plant_set_name(&w->o[p]);
    m2_sw_set_material(w, p, "plant matter");
    return p;
}

int m2_sw_add_plant_in_pot(m2_sw_world *w, const char *type, const char *pot_name, int parent) {
    int pot = m2_sw_new(w, M2_SW_K_FLOWERPOT, pot_name, parent);
    if (pot == M2_SW_NONE) return pot;
    w->o[pot].mat = (int16_t)m2_sw_material_find("ceramic");
    if (type) {
        /* "apple tree" / "pea plant": the lifeform type is the first word(s) */
        char life[M2_SW_NAME];
        snprintf(life, sizeof life, "%s", type);
        char *sp = strrchr(life, ' ');
        if (sp && (!strcmp(sp, " tree") || !strcmp(sp, " plant"))) *sp = 0;
        m2_sw_add_plant(w, life, M2_SW_PLANT_ADULT, pot);
        int soil = m2_sw_new(w, M2_SW_K_THING, "soil", pot);
        if (soil != M2_SW_NONE) m2_sw_set_material(w, soil, "soil");
    }
    return pot;
}

int m2_sw_add_answer_box(m2_sw_world *w, const char *colour, int parent) {
    char name[M2_SW_NAME];
    snprintf(name, sizeof name, "%s box", colour);
    int id = m2_sw_new(w, M2_SW_K_ANSWERBOX, name, parent);
    if (id != M2_SW_NONE) {
        w->o[id].flags &= ~M2_SW_F_MOVABLE;
        snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", colour);
    }
    return id;
}

static int add_fixed(m2_sw_world *w, int kind, const char *name, int parent) {
    int id = m2_sw_new(w, kind, name, parent);
    if (id != M2_SW_NONE) w->o[id].flags &= ~M2_SW_F_MOVABLE;
    return id;
}

static int add_fixed_mat(m2_sw_world *w, int kind, const char *name, const char *mat, int parent) {
    int id = add_fixed(w, kind, name, parent);
    if (id != M2_SW_NONE && mat) m2_sw_set_material(w, id, mat);
    return id;
}

static int add_cooler(m2_sw_world *w, const char *name, int parent) {
    int id = add_fixed(w, M2_SW_K_CLOSABLE, name, parent);
    if (id != M2_SW_NONE) w->o[id].flags |= M2_SW_F_DEVICE | M2_SW_F_ON;
    return id;
}

static int add_with_mat(m2_sw_world *w, int kind, const char *name, const char *mat, int parent) {
    int id = m2_sw_new(w, kind, name, parent);
    if (id != M2_SW_NONE) m2_sw_set_material(w, id, mat);
    return id;
}

static void add_picture(m2_sw_world *w, m2_sw_jrand *r, int parent) {
    static const char *const types[] = {"picture", "drawing", "painting", "finger painting"};
    static const char *const subjects[] = {"a cow", "a chicken", "a farm", "a lush green meadow", "rolling hills",
        "a wintery mountain", "a boat crossing a river", "the moon", "abstract shapes", "two people playing"};
    static const char *const artists[] = {"Alexandra", "Owen", "Bob", "Lily"};
    int t = m2_sw_jrand_next_int(r, 4), s = m2_sw_jrand_next_int(r, 10), a = m2_sw_jrand_next_int(r, 4);
    int id = add_with_mat(w, M2_SW_K_PICTURE, types[t], "paper", parent);
    if (id == M2_SW_NONE) return;
    snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", subjects[s]);
    snprintf(w->o[id].alt2, sizeof w->o[id].alt2, "%s", artists[a]);
}

/* Book.mkRandom: draw 0..9 until one of the six books comes up. */
static const char *const book_titles[6] = {"Moby Dick", "Frankenstein", "Sherlock Holmes", "Pride and Prejudice", "Beowulf",
    "The Foundations of the Origin of Species"};
static const char *const book_authors[6] = {"Herman Melville", "Mary Wollstonecraft Shelley", "Arthur Conan Doyle", "Jane Austen",
    "Beowulf poet", "Charles Darwin"};

int m2_sw_add_book(m2_sw_world *w, int which, int parent) {
    char nm[M2_SW_NAME];
    snprintf(nm, sizeof nm, "book (%s)", book_titles[which]);
    int id = add_with_mat(w, M2_SW_K_BOOK, nm, "paper", parent);
    if (id == M2_SW_NONE) return id;
    snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", book_titles[which]);
    snprintf(w->o[id].alt2, sizeof w->o[id].alt2, "%s", book_authors[which]);
    return id;
}

static void add_bookshelf(m2_sw_world *w, m2_sw_jrand *r, int parent) {
    int shelf = add_with_mat(w, M2_SW_K_BOOKSHELF, "book shelf", "wood", parent);
    int nb = m2_sw_jrand_next_int(r, 4);
    for (int i = 0; i < nb && shelf != M2_SW_NONE; i++) {
        int k;
        do k = m2_sw_jrand_next_int(r, 10); while (k >= 6);
        m2_sw_add_book(w, k, shelf);
    }
}

static int new_room(m2_sw_world *w, int kind, const char *name) {
    int room = m2_sw_new(w, kind, name, w->universe);
    if (room == M2_SW_NONE) return room;
    int air = m2_sw_add_substance(w, "air", "air", room);
    if (air != M2_SW_NONE) w->o[air].temp = 25.0f;
    if (kind == M2_SW_K_OUTSIDE) add_fixed(w, M2_SW_K_THING, "ground", room);
    return room;
}

static void mk_door(m2_sw_world *w, int a, int b) {
    int d = m2_sw_new(w, M2_SW_K_DOOR, "door", M2_SW_NONE);
    if (d == M2_SW_NONE) return;
    w->o[d].door_a = (int16_t)a;
    w->o[d].door_b = (int16_t)b;
    w->o[d].flags = M2_SW_F_CLOSABLE;   /* closed */
}

static int sink(m2_sw_world *w, const char *name, int parent) {
    return add_fixed_mat(w, M2_SW_K_SINK, name, strcmp(name, "bathtub") ? "steel" : "ceramic", parent);
}

void m2_sw_build_house(m2_sw_world *w, m2_sw_jrand *r) {
    /* kitchen */
    int kitchen = new_room(w, M2_SW_K_ROOM, "kitchen");
    sink(w, "sink", kitchen);
    add_fixed(w, M2_SW_K_STOVE, "stove", kitchen);
    add_cooler(w, "fridge", kitchen);
    add_cooler(w, "freezer", kitchen);
    add_fixed(w, M2_SW_K_OVEN, "oven", kitchen);
    int cupboard = add_fixed_mat(w, M2_SW_K_CLOSABLE, "cupboard", "wood", kitchen);
    add_fixed_mat(w, M2_SW_K_DRAWER, "drawer", "wood", cupboard);
    add_with_mat(w, M2_SW_K_CUP, "metal pot", "steel", cupboard);
    add_with_mat(w, M2_SW_K_CUP, "tin cup", "tin", cupboard);
    add_with_mat(w, M2_SW_K_CUP, "ceramic cup", "ceramic", cupboard);
    int counter = add_fixed_mat(w, M2_SW_K_SURFACE, "counter", "wood", kitchen);
    add_fixed_mat(w, M2_SW_K_DRAWER, "drawer", "wood", counter);
    int bowl = add_with_mat(w, M2_SW_K_CUP, "bowl", "wood", counter);
    m2_sw_new(w, M2_SW_K_FOOD, "apple", bowl);
    m2_sw_new(w, M2_SW_K_FOOD, "banana", bowl);
    m2_sw_new(w, M2_SW_K_FOOD, "orange", bowl);
    m2_sw_new(w, M2_SW_K_FOOD, "potato", bowl);
    int fridge = m2_sw_find_named(w, kitchen, "fridge");
    int cup2 = add_with_mat(w, M2_SW_K_CUP, "wood cup", "wood", fridge);
    { int oj = m2_sw_new(w, M2_SW_K_FOOD, "orange juice", cup2); if (oj != M2_SW_NONE) m2_sw_set_material(w, oj, "orange juice"); }
    add_with_mat(w, M2_SW_K_THERMOMETER, "thermometer", "glass", kitchen);
    add_picture(w, r, kitchen);
    int table = add_fixed_mat(w, M2_SW_K_SURFACE, "table", "wood", kitchen);
    add_with_mat(w, M2_SW_K_CUP, "glass cup", "glass", table);
    add_fixed(w, M2_SW_K_SURFACE, "chair", kitchen);
    m2_sw_new(w, M2_SW_K_LIGHTER, "lighter", kitchen);
    int jar = add_with_mat(w, M2_SW_K_CUP, "glass jar", "glass", kitchen);
    w->o[jar].flags |= M2_SW_F_CLOSABLE;   /* a closable container that starts open */
    m2_sw_add_substance(w, "sodium chloride", "sodium chloride", jar);
    m2_sw_add_substance(w, "soap", "soap", kitchen);
    m2_sw_new(w, M2_SW_K_STOPWATCH, "stopwatch", kitchen);

    /* living room */
    int living = new_room(w, M2_SW_K_ROOM, "living room");
    int couch = add_fixed(w, M2_SW_K_COUCH, "couch", living);
    m2_sw_new(w, M2_SW_K_THING, "white pillow", couch);
    add_fixed(w, M2_SW_K_SURFACE, "chair", living);
    {
        int t = m2_sw_jrand_next_int(r, 3);
        int lt = add_fixed_mat(w, M2_SW_K_SURFACE, t == 2 ? "desk" : "table", t == 1 ? "steel" : "wood", living);
        if (t == 2) add_fixed_mat(w, M2_SW_K_DRAWER, "drawer", "wood", lt);
    }
    add_picture(w, r, living);
    if (m2_sw_jrand_next_bool(r)) add_bookshelf(w, r, living);

    /* bedroom */
    int bedroom = new_room(w, M2_SW_K_ROOM, "bedroom");
    int bed = add_fixed(w, M2_SW_K_BED, "bed", bedroom);
    int mattress = add_fixed(w, M2_SW_K_SURFACE, "mattress", bed);
    m2_sw_new(w, M2_SW_K_THING, "white pillow", mattress);
    add_fixed_mat(w, M2_SW_K_SURFACE, "table", "wood", bedroom);
    add_fixed_mat(w, M2_SW_K_CLOSABLE, "closet", "wood", bedroom);
    add_picture(w, r, bedroom);
    if (m2_sw_jrand_next_bool(r)) add_bookshelf(w, r, bedroom);

    /* bathroom */
    int bathroom = new_room(w, M2_SW_K_ROOM, "bathroom");
    sink(w, "sink", bathroom);
    { int toilet = add_fixed_mat(w, M2_SW_K_TOILET, "toilet", "steel", bathroom); if (toilet != M2_SW_NONE) add_water(w, toilet); }
    sink(w, "bathtub", bathroom);
    add_with_mat(w, M2_SW_K_CUP, "glass cup", "glass", bathroom);
    add_picture(w, r, bathroom);

    /* workshop */
    int workshop = new_room(w, M2_SW_K_ROOM, "workshop");
    int wtable = add_fixed_mat(w, M2_SW_K_SURFACE, "table", "wood", workshop);
    {
        static const char *const lights[] = {"red", "green", "blue", "yellow", "orange", "violet"};
        static const char *const wires[] = {"red", "green", "blue", "yellow", "orange", "black"};
        int li[6] = {0, 1, 2, 3, 4, 5}, wi[6] = {0, 1, 2, 3, 4, 5};
        m2_sw_jrand_shuffle(r, li, 6);
        for (int i = 0; i < 3; i++) {
            char nm[M2_SW_NAME];
            snprintf(nm, sizeof nm, "%s light bulb", lights[li[i]]);
            m2_sw_add_component(w, M2_SW_K_LIGHTBULB, nm, wtable);
        }
        m2_sw_jrand_shuffle(r, wi, 6);
        for (int i = 0; i < 3; i++) {
            char nm[M2_SW_NAME];
            snprintf(nm, sizeof nm, "%s wire", wires[wi[i]]);
            int wire = m2_sw_add_component(w, M2_SW_K_WIRE, nm, wtable);
            if (wire != M2_SW_NONE) m2_sw_set_material(w, wire, "metal");
        }
        m2_sw_add_component(w, M2_SW_K_SWITCH, "switch", wtable);
        m2_sw_add_component(w, M2_SW_K_BATTERY, "battery", wtable);   /* extra = M2_SW_GEN_BATTERY */
    }
    add_cooler(w, "ultra low temperature freezer", workshop);

    /* greenhouse */
    int greenhouse = new_room(w, M2_SW_K_ROOM, "greenhouse");
    add_with_mat(w, M2_SW_K_CUP, "jug", "plastic", greenhouse);
    int hive = add_fixed_mat(w, M2_SW_K_BEEHIVE, "bee hive", "wood", greenhouse);
    for (int i = 0; i < 5; i++) m2_sw_add_animal(w, "bee", hive);
    sink(w, "sink", greenhouse);

    /* art studio */
    int art = new_room(w, M2_SW_K_ROOM, "art studio");
    int atable = add_fixed_mat(w, M2_SW_K_SURFACE, "table", "wood", art);
    {
        int mix[3] = {0, 1, 2};
        m2_sw_jrand_shuffle(r, mix, 3);
        static const char *const names[] = {"glass cup", "bowl", "jug"};
        static const char *const mats[] = {"glass", "wood", "plastic"};
        add_with_mat(w, M2_SW_K_CUP, names[mix[0]], mats[mix[0]], atable);
        static const char *const paints[] = {"red paint", "blue paint", "yellow paint"};
        for (int i = 0; i < 3; i++) {
            int c = add_with_mat(w, M2_SW_K_CUP, "wood cup", "wood", art);
            m2_sw_add_paint(w, paints[i], c);
        }
        int lc = add_fixed_mat(w, M2_SW_K_CLOSABLE, "large cupboard", "wood", art);
        add_fixed_mat(w, M2_SW_K_DRAWER, "drawer", "wood", lc);
        for (int i = 0; i < 3; i++) {
            int c = add_with_mat(w, M2_SW_K_CUP, "wood cup", "wood", lc);
            m2_sw_add_paint(w, paints[i], c);
        }
    }

    /* hallway */
    int hallway = new_room(w, M2_SW_K_ROOM, "hallway");
    add_picture(w, r, hallway);

    /* outside */
    int outside = new_room(w, M2_SW_K_OUTSIDE, "outside");
    add_fixed(w, M2_SW_K_FIREPIT, "fire pit", outside);
    m2_sw_add_substance(w, "wood", "wood", outside);
    add_with_mat(w, M2_SW_K_THING, "axe", "steel", outside);
    add_fixed_mat(w, M2_SW_K_FOUNTAIN, "fountain", "ceramic", outside);   /* fills with water on the first tick */

    /* foundry */
    int foundry = new_room(w, M2_SW_K_ROOM, "foundry");
    add_fixed(w, M2_SW_K_OVEN, "blast furnace", foundry);
    sink(w, "sink", foundry);
    add_fixed_mat(w, M2_SW_K_SURFACE, "table", "steel", foundry);

    /* shovel: greenhouse or outside */
    add_with_mat(w, M2_SW_K_THING, "shovel", "steel", m2_sw_jrand_next_int(r, 2) == 1 ? greenhouse : outside);

    mk_door(w, kitchen, hallway);
    mk_door(w, living, hallway);
    mk_door(w, bedroom, hallway);
    mk_door(w, bathroom, kitchen);
    mk_door(w, workshop, hallway);
    mk_door(w, greenhouse, hallway);
    mk_door(w, art, hallway);
    mk_door(w, kitchen, outside);
    mk_door(w, greenhouse, outside);
    mk_door(w, foundry, outside);

}
