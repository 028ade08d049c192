/* ScienceWorld world: object pool, containment tree, object descriptions, and the house
 * (10 locations and their doors, after the original's BuildingMaker). */
#include "env/scienceworld/sw.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- string builder ---------------- */

void sw_sb_reset(sw_sb *b) {
    b->n = 0;
    if (b->s) b->s[0] = 0;
}

static int sb_grow(sw_sb *b, size_t extra) {
    if (b->oom) return -1;
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = 1; return -1; }
    b->s = s;
    b->cap = cap;
    return 0;
}

void sw_sb_puts(sw_sb *b, const char *s) {
    size_t k = strlen(s);
    if (sb_grow(b, k)) return;
    memcpy(b->s + b->n, s, k + 1);
    b->n += k;
}

void sw_sb_printf(sw_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < sizeof tmp) { sw_sb_puts(b, tmp); return; }
    if (sb_grow(b, (size_t)k)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

void sw_sb_free(sw_sb *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* ---------------- java.util.Random ---------------- */

#define JR_MULT 0x5DEECE66DULL
#define JR_MASK ((1ULL << 48) - 1)

void sw_jrand_seed(sw_jrand *r, int64_t seed) { r->seed = ((uint64_t)seed ^ JR_MULT) & JR_MASK; }

static int jr_next(sw_jrand *r, int bits) {
    r->seed = (r->seed * JR_MULT + 0xBULL) & JR_MASK;
    return (int)(int32_t)(uint32_t)(r->seed >> (48 - bits));
}

int sw_jrand_next_int(sw_jrand *r, int bound) {
    if (bound <= 0) return 0;
    if ((bound & -bound) == bound) return (int)(((int64_t)bound * (int64_t)jr_next(r, 31)) >> 31);
    int bits, val;
    do {
        bits = jr_next(r, 31);
        val = bits % bound;
    } while (bits - val + (bound - 1) < 0);
    return val;
}

int sw_jrand_next_bool(sw_jrand *r) { return jr_next(r, 1) != 0; }

void sw_jrand_shuffle(sw_jrand *r, int *a, int n) {
    for (int i = n; i >= 2; i--) {
        int k = sw_jrand_next_int(r, i);
        int t = a[i - 1]; a[i - 1] = a[k]; a[k] = t;
    }
}

/* ---------------- object pool ---------------- */

int sw_new(sw_world *w, int kind, const char *name, int parent) {
    if (w->n >= SW_MAX_OBJ) return SW_NONE;
    int id = w->n++;
    sw_obj *o = &w->o[id];
    memset(o, 0, sizeof *o);
    o->kind = (uint16_t)kind;
    o->parent = (int16_t)parent;
    o->door_a = o->door_b = SW_NONE;
    o->mat = -1;
    o->temp = 25.0f;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->flags = F_MOVABLE;
    switch (kind) {
    case K_UNIVERSE: case K_ROOM: case K_OUTSIDE: case K_INVENTORY:
        o->flags = F_CONTAINER | F_OPEN; break;
    case K_AGENT: case K_DOOR: o->flags = 0; break;
    case K_CUP: case K_FLOWERPOT: case K_BOOKSHELF: case K_ANSWERBOX: case K_FIREPIT: case K_FOUNTAIN:
        o->flags |= F_CONTAINER | F_OPEN; break;
    case K_SURFACE: o->flags = F_CONTAINER | F_OPEN; break;
    case K_CLOSABLE: case K_BEEHIVE: o->flags = F_CONTAINER | F_CLOSABLE; break;
    case K_DRAWER: o->flags = F_CONTAINER | F_CLOSABLE; break;
    case K_STOVE: o->flags = F_CONTAINER | F_OPEN | F_DEVICE; break;
    case K_OVEN: o->flags = F_CONTAINER | F_CLOSABLE | F_DEVICE; break;
    case K_SINK: o->flags = F_CONTAINER | F_OPEN | F_DEVICE; break;
    case K_TOILET: o->flags = F_CONTAINER | F_OPEN; break;
    case K_STOPWATCH: case K_SWITCH: o->flags |= F_DEVICE; break;
    case K_PLANE: o->flags |= F_CONTAINER | F_OPEN; o->angle = 45.0f; o->friction = 0.5f; o->seen_move = -1; break;
    case K_TERMINAL: o->flags = 0; o->conn = SW_NONE; break;
    case K_ANIMAL: o->flags |= F_LIVING; break;
    case K_PLANT: o->flags |= F_LIVING | F_CONTAINER | F_OPEN; break;
    case K_FLOWER: o->flags |= F_CONTAINER | F_OPEN; o->door_a = SW_NONE; break;
    case K_POLLEN: o->door_a = SW_NONE; break;
    default: break;
    }
    return id;
}

void sw_move(sw_world *w, int obj, int parent) {
    w->o[obj].parent = (int16_t)parent;
    w->tree_dirty = 1;
    if (parent != SW_NONE && w->o[parent].kind == K_PLANE) w->o[obj].plane_pos = 1.0;   /* starts at the top */
}

void sw_delete(sw_world *w, int obj) {
    w->tree_dirty = 1;
    w->o[obj].flags |= F_DELETED;
    w->o[obj].parent = SW_NONE;
    if (w->focus == obj) w->focus = SW_NONE;
}

static int cmp_world_ids(const sw_world *w, int a, int b) {
    int c = strcmp(w->o[a].name, w->o[b].name);
    return c ? c : (a - b);
}

int sw_children(const sw_world *w, int parent, int *out, int cap, int sorted) {
    int k = 0;
    for (int i = 0; i < w->n; i++) {
        const sw_obj *o = &w->o[i];
        if (o->parent != parent || (o->flags & F_DELETED) || o->kind == K_DOOR) continue;
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

int sw_room_of(const sw_world *w, int obj) {
    int guard = 0;
    while (obj != SW_NONE && guard++ < 64) {
        int k = w->o[obj].kind;
        if (k == K_ROOM || k == K_OUTSIDE) return obj;
        obj = w->o[obj].parent;
    }
    return SW_NONE;
}

int sw_is_inside(const sw_world *w, int obj, int container) {
    int p = w->o[obj].parent, guard = 0;
    while (p != SW_NONE && guard++ < 64) {
        if (p == container) return 1;
        p = w->o[p].parent;
    }
    return 0;
}

int sw_find_named(const sw_world *w, int root, const char *name) {
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].flags & F_DELETED) continue;
        if (strcmp(w->o[i].name, name)) continue;
        if (root == SW_NONE || i == root || sw_is_inside(w, i, root)) return i;
    }
    return SW_NONE;
}

int sw_room(const sw_world *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if ((w->o[i].kind == K_ROOM || w->o[i].kind == K_OUTSIDE) && !strcmp(w->o[i].name, name)) return i;
    return SW_NONE;
}

int sw_door_between(const sw_world *w, int a, int b) {
    for (int i = 0; i < w->n; i++) {
        const sw_obj *o = &w->o[i];
        if (o->kind != K_DOOR) continue;
        if ((o->door_a == a && o->door_b == b) || (o->door_a == b && o->door_b == a)) return i;
    }
    return SW_NONE;
}

int sw_door_other(const sw_world *w, int door, int room) {
    const sw_obj *o = &w->o[door];
    if (o->door_a == room) return o->door_b;
    if (o->door_b == room) return o->door_a;
    return SW_NONE;
}

int sw_is_animal(const sw_world *w, int obj) { return w->o[obj].kind == K_ANIMAL; }
int sw_is_plant(const sw_world *w, int obj) { return w->o[obj].kind == K_PLANT; }
int sw_is_living(const sw_world *w, int obj) { return (w->o[obj].flags & F_LIVING) != 0; }

/* ---------------- life stages ---------------- */

/* Life-cycle families and their first stage, after the original's lifestage/ sources. Animals are
 * created in their first stage; the port does not advance animal stages with time (documented). */
/* stage name, duration in ticks, canonical name (NULL: "<stage> <type>", or "<type> egg") */
typedef struct life_stage { const char *name; int ticks; const char *canonical; } life_stage;
static const life_stage fam_stages[6][5] = {
    [FAM_ANIMAL] = {{"baby", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [FAM_BIRD] = {{"egg", 20, NULL}, {"hatchling", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [FAM_TORTOISE] = {{"egg", 20, NULL}, {"hatchling", 20, NULL}, {"juvenile", 20, NULL}, {"adult", 50, NULL}, {"dead", 0, NULL}},
    [FAM_FROG] = {{"egg", 20, "frog egg"}, {"tadpole", 20, "tadpole"}, {"adult", 50, "adult frog"}, {"death", 0, "dead frog"}},
    [FAM_BUTTERFLY] = {{"egg", 20, "butterfly egg"}, {"caterpillar", 20, "caterpillar"}, {"pupa", 20, "butterfly pupa"},
                       {"adult", 50, "adult butterfly"}, {"death", 0, "dead butterfly"}},
};
static const int fam_count[6] = {0, 4, 5, 5, 4, 5};

int sw_life_stage_count(int family) { return family > 0 && family < 6 ? fam_count[family] : 0; }
const char *sw_life_family_stage(int family, int i) {
    return (family > 0 && family < 6 && i >= 0 && i < fam_count[family]) ? fam_stages[family][i].name : "";
}

static const char *const plant_stage_names[5] = {"seed", "seedling", "adult", "reproducing", "dead"};
/* ticks a plant must meet its needs in a stage before it moves on (seed 10, seedling 10, adult 5) */
static const int plant_stage_ticks[5] = {10, 10, 5, 0, 0};

const char *sw_life_stage_name(const sw_world *w, int obj) {
    const sw_obj *o = &w->o[obj];
    if (o->kind == K_PLANT) return plant_stage_names[o->stage >= 0 && o->stage < 5 ? o->stage : PLANT_ADULT];
    if (o->extra <= FAM_NONE || o->extra > FAM_BUTTERFLY) return "adult";
    return sw_life_family_stage(o->extra, o->stage);
}

int sw_life_ticks_left(const sw_world *w, int obj) {
    const sw_obj *o = &w->o[obj];
    if (o->kind == K_PLANT)
        return o->stage < PLANT_REPRODUCING ? plant_stage_ticks[o->stage] - o->stage_ticks : 1 << 20;
    if (o->extra <= FAM_NONE || o->extra > FAM_BUTTERFLY || o->stage >= fam_count[o->extra] - 1) return 1 << 20;
    return fam_stages[o->extra][o->stage].ticks - o->stage_ticks;
}

/* LifeStage.tick: count ticks in the stage; move on when its duration is reached. */
/* The plant's name follows its stage (FruitingTree.tick): "<type> seed", else "<type> tree" ("pea plant",
 * "unknown B plant"). */
static void plant_set_name(sw_obj *o) {
    char life[32];
    snprintf(life, sizeof life, "%.31s", o->alt);
    if (o->stage == PLANT_SEED) snprintf(o->name, sizeof o->name, "%s seed", life);
    else snprintf(o->name, sizeof o->name, "%s %s", life, !strcmp(life, "pea") || !strncmp(life, "unknown ", 8) ? "plant" : "tree");
}

/* LifeStage.checkContainerHas: a sibling (in the plant's container) named `name`. */
static int plant_container_has(const sw_world *w, int obj, const char *name) {
    int c = w->o[obj].parent;
    if (c == SW_NONE) return SW_NONE;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].parent == c && i != obj && !(w->o[i].flags & F_DELETED) && !strcmp(w->o[i].name, name)) return i;
    return SW_NONE;
}

static void plant_change_stage(sw_obj *o, int stage) {
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
static void plant_tick(sw_world *w, int obj) {
    sw_obj *o = &w->o[obj];
    if (o->stage == PLANT_DEAD) {
        /* PlantLifeStageDeath: flowers are dropped, anything else on the plant falls into its container */
        for (int i = 0; i < w->n; i++) {
            if (w->o[i].parent != obj || (w->o[i].flags & F_DELETED)) continue;
            if (w->o[i].kind == K_FLOWER) {   /* whatever the flower held (bees) drops into the plant's container */
                for (int j = 0; j < w->n; j++)
                    if (w->o[j].parent == i && o->parent != SW_NONE) sw_move(w, j, o->parent);
                sw_delete(w, i);
            } else if (o->parent != SW_NONE) sw_move(w, i, o->parent);
        }
        return;
    }
    int water = plant_container_has(w, obj, "water");
    int soil = plant_container_has(w, obj, "soil");
    if (o->stage == PLANT_SEED) {
        if (water == SW_NONE || soil == SW_NONE) return;
        if (++o->stage_ticks >= plant_stage_ticks[PLANT_SEED]) {
            sw_delete(w, water);
            plant_change_stage(o, PLANT_SEEDLING);
            plant_set_name(o);
        }
        return;
    }
    int stressed = 0, sickly = 0, dies = 0;
    int max_dry = o->stage == PLANT_SEEDLING ? 20 : 50;
    if (water != SW_NONE) {
        o->dry_ticks = 0;
        if (o->stage != PLANT_SEEDLING) sw_delete(w, water);   /* adults drink every tick */
    } else {
        o->dry_ticks++;
        if (o->stage == PLANT_SEEDLING) stressed = 1;
        if (o->dry_ticks >= max_dry / 2) { stressed = 1; sickly = 1; }
        if (o->dry_ticks >= max_dry) dies = 1;
    }
    if (soil != SW_NONE) o->nosoil_ticks = 0;
    else {
        stressed = 1;
        o->nosoil_ticks++;
        if (o->nosoil_ticks >= 2) sickly = 1;
        if (o->nosoil_ticks >= 5) dies = 1;
    }
    o->sickly = (uint8_t)sickly;
    if (dies) { plant_change_stage(o, PLANT_DEAD); o->sickly = 0; return; }
    if (stressed) return;
    o->stage_ticks++;
    if (o->stage == PLANT_SEEDLING && o->stage_ticks >= plant_stage_ticks[PLANT_SEEDLING]) {
        if (water != SW_NONE) sw_delete(w, water);
        plant_change_stage(o, PLANT_ADULT);
    } else if (o->stage == PLANT_ADULT && o->stage_ticks >= plant_stage_ticks[PLANT_ADULT]) {
        plant_change_stage(o, PLANT_REPRODUCING);
    } else if (o->stage == PLANT_REPRODUCING && o->stage_ticks >= 5) {
        int has_flower = 0;
        for (int i = 0; i < w->n; i++)
            if (w->o[i].parent == obj && !(w->o[i].flags & F_DELETED) && w->o[i].kind == K_FLOWER) has_flower = 1;
        if (!has_flower) {
            int f = sw_new(w, K_FLOWER, "flower", obj);
            if (f != SW_NONE) w->o[f].door_a = (int16_t)obj;
        }
        o->stage_ticks = 0;
    }
}

/* Flower.pollinate: pollen of another plant of the same type starts the flower -> fruit process. */
const char *const sw_trait_kind_names[TR_COUNT] = {"plant height", "seed shape", "seed color", "flower color",
                                                    "flower size", "leaf size", "leaf shape"};
const sw_species sw_species_tab[SW_NUM_SPECIES] = {
    {"pea", {TR_PLANT_HEIGHT, TR_SEED_SHAPE, TR_SEED_COLOR, TR_FLOWER_COLOR},
     {"tall", "round", "green", "purple"}, {"short", "wrinkly", "orange", "white"}},
    {"unknown E", {TR_SEED_COLOR, TR_SEED_SHAPE, TR_LEAF_SHAPE, TR_FLOWER_SIZE},
     {"blue", "round", "elliptical", "small"}, {"brown", "square", "linear", "large"}},
    {"unknown B", {TR_PLANT_HEIGHT, TR_SEED_COLOR, TR_FLOWER_SIZE, TR_FLOWER_COLOR},
     {"short", "green", "large", "orange"}, {"tall", "yellow", "small", "yellow"}},
    {"unknown C", {TR_PLANT_HEIGHT, TR_LEAF_SHAPE, TR_FLOWER_SIZE, TR_FLOWER_COLOR},
     {"short", "pointed", "large", "orange"}, {"tall", "round", "small", "yellow"}},
    {"unknown D", {TR_SEED_SHAPE, TR_LEAF_SIZE, TR_FLOWER_SIZE, TR_FLOWER_COLOR},
     {"spherical", "medium", "small", "blue"}, {"ovate", "large", "medium", "red"}},
};
int sw_species_of(const char *lifeform) {
    for (int i = 0; i < SW_NUM_SPECIES; i++) if (!strcmp(sw_species_tab[i].lifeform, lifeform)) return i;
    return -1;
}
/* The phenotype value of trait kind `kind` of a plant with genes, "" when its species lacks the trait. */
static const char *plant_trait_value(const sw_world *w, int plant, int kind) {
    int sp = sw_species_of(w->o[plant].alt);
    if (sp < 0 || !w->o[plant].has_genes) return "";
    for (int t = 0; t < SW_NUM_TRAITS; t++)
        if (sw_species_tab[sp].kind[t] == kind)
            return sw_plant_trait_dominant(w, plant, t) ? sw_species_tab[sp].dom[t] : sw_species_tab[sp].rec[t];
    return "";
}
/* ChromosomePair.getPhenotype: recessive only when both alleles are. */
int sw_plant_trait_dominant(const sw_world *w, int plant, int trait) {
    return (w->o[plant].genes >> (2 * trait) & 3) != 0;
}

/* GeneticReproduction.mateGenesPunnetSquare: per trait, one allele drawn from each parent. */
static uint8_t punnett(sw_world *w, int p1, int p2) {
    uint8_t g = 0;
    for (int t = 0; t < SW_NUM_TRAITS; t++) {
        int pick = sw_jrand_next_int(&w->rng, 4);   /* one of the square's four cells */
        int a = w->o[p1].genes >> (2 * t + (pick >> 1)) & 1, b = w->o[p2].genes >> (2 * t + (pick & 1)) & 1;
        g |= (uint8_t)((a | b << 1) << (2 * t));
    }
    return g;
}

static int flower_pollinate(sw_world *w, int flower, int pollen) {
    sw_obj *f = &w->o[flower];
    int from = w->o[pollen].door_a, own = f->door_a;
    if (from == own || from == SW_NONE || own == SW_NONE) return 0;
    if (strcmp(w->o[from].alt, w->o[own].alt)) return 0;
    sw_delete(w, pollen);
    f->extra = 1;
    f->door_b = (int16_t)from;   /* the pollen's plant: the other parent of a pea seed */
    return 1;
}

/* Flower.tick: a pollinated flower turns into the plant's fruit after 5 more ticks (its contents drop
 * onto the plant); an unpollinated one keeps one pollen of its own plant and checks everything inside
 * it (and inside what is inside it, e.g. bees) for pollen that pollinates it. */
static void flower_tick(sw_world *w, int flower) {
    sw_obj *f = &w->o[flower];
    if (f->extra > 0) {
        if (++f->extra > 5 && f->parent != SW_NONE) {
            int plant = f->door_a, where = f->parent;
            if (plant != SW_NONE) {   /* PlantReproduction.createFruit */
                if (w->o[plant].has_genes && f->door_b != SW_NONE && w->o[f->door_b].has_genes) {
                    /* a pea plant's flower becomes a pea seed with genes from both parents */
                    int seed = sw_add_plant(w, w->o[plant].alt, PLANT_SEED, where);
                    if (seed != SW_NONE) {
                        w->o[seed].has_genes = 1;
                        w->o[seed].genes = punnett(w, plant, f->door_b);
                    }
                } else {
                    char fruit[SW_NAME];
                    snprintf(fruit, sizeof fruit, "%s", w->o[plant].alt);
                    sw_new(w, K_FOOD, fruit, where);
                }
            }
            for (int i = 0; i < w->n; i++)
                if (w->o[i].parent == flower && !(w->o[i].flags & F_DELETED)) sw_move(w, i, where);
            sw_delete(w, flower);
        }
        return;
    }
    int has_own = 0;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].parent == flower && !(w->o[i].flags & F_DELETED) && w->o[i].kind == K_POLLEN && w->o[i].door_a == f->door_a)
            has_own = 1;
    if (!has_own) {
        int p = sw_new(w, K_POLLEN, "pollen", flower);
        if (p != SW_NONE) w->o[p].door_a = f->door_a;
    }
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].parent != flower || (w->o[i].flags & F_DELETED)) continue;
        if (w->o[i].kind == K_POLLEN) { if (flower_pollinate(w, flower, i)) return; continue; }
        for (int j = 0; j < w->n; j++)
            if (w->o[j].parent == i && !(w->o[j].flags & F_DELETED) && w->o[j].kind == K_POLLEN && flower_pollinate(w, flower, j))
                return;
    }
}

/* Flowers reachable from `c` through open containers (getContainedAccessibleObjectsOfType), id order. */
static int accessible_flowers(const sw_world *w, int c, int *out, int n, int cap, int depth) {
    if (depth > 8) return n;
    for (int i = 0; i < w->n && n < cap; i++) {
        const sw_obj *x = &w->o[i];
        if (x->parent != c || (x->flags & F_DELETED)) continue;
        if (x->kind == K_FLOWER) out[n++] = i;
        else if ((x->flags & F_CONTAINER) && (x->flags & F_OPEN)) n = accessible_flowers(w, i, out, n, cap, depth + 1);
    }
    return n;
}

/* WanderingAnimal.moveToNewLocation: through a random open door of the room; out of an open container
 * into its room; nothing from a closed one (the bee hive). */
static void bee_move_on(sw_world *w, int bee) {
    int c = w->o[bee].parent;
    if (c == SW_NONE) return;
    int kind = w->o[c].kind;
    if (kind == K_ROOM || kind == K_OUTSIDE) {
        int doors[16], nd = 0;
        for (int i = 0; i < w->n && nd < 16; i++)
            if (w->o[i].kind == K_DOOR && (w->o[i].flags & F_OPEN) && sw_door_other(w, i, c) != SW_NONE) doors[nd++] = i;
        if (!nd) return;
        sw_move(w, bee, sw_door_other(w, doors[sw_jrand_next_int(&w->rng, nd)], c));
        return;
    }
    if (w->o[c].flags & F_OPEN) {
        int room = sw_room_of(w, c);
        if (room != SW_NONE) sw_move(w, bee, room);
    }
}

/* Bee.tick: in a flower, collect a pollen (half the time) or leave; elsewhere, fly into a flower
 * (half the time) or move on. Draws come from the world's seeded generator. */
static void bee_tick(sw_world *w, int bee) {
    int c = w->o[bee].parent;
    if (c == SW_NONE) return;
    if (w->o[c].kind == K_FLOWER) {
        if (sw_jrand_next_int(&w->rng, 2) == 0) {
            int carried = 0, pol[16], np = 0;
            for (int i = 0; i < w->n; i++) {
                if (w->o[i].flags & F_DELETED || w->o[i].kind != K_POLLEN) continue;
                if (w->o[i].parent == bee) carried++;
                else if (w->o[i].parent == c && np < 16) pol[np++] = i;
            }
            if (carried > 5 || !np) return;
            sw_move(w, pol[sw_jrand_next_int(&w->rng, np)], bee);
        } else bee_move_on(w, bee);
        return;
    }
    if (sw_jrand_next_int(&w->rng, 2) == 1) {
        int fl[32];
        int nf = accessible_flowers(w, c, fl, 0, 32, 0);
        if (nf) sw_move(w, bee, fl[sw_jrand_next_int(&w->rng, nf)]);
    } else bee_move_on(w, bee);
}

void sw_life_tick(sw_world *w, int obj) {
    sw_obj *o = &w->o[obj];
    if (o->kind == K_PLANT) { plant_tick(w, obj); return; }
    if (o->kind == K_FLOWER) { flower_tick(w, obj); return; }
    if (o->kind == K_ANIMAL && !strcmp(o->name, "bee")) { bee_tick(w, obj); return; }
    if (o->kind != K_ANIMAL || o->extra <= FAM_NONE || o->extra > FAM_BUTTERFLY) return;
    if (o->stage >= fam_count[o->extra] - 1) return;   /* dead */
    if (++o->stage_ticks >= fam_stages[o->extra][o->stage].ticks) {
        o->stage++;
        o->stage_ticks = 0;
    }
}

const char *sw_descript_name(const sw_world *w, int obj, char *buf, size_t cap) {
    const sw_obj *o = &w->o[obj];
    if (o->kind == K_DOOR) {
        snprintf(buf, cap, "door between %s and %s", w->o[o->door_a].name, w->o[o->door_b].name);
    } else if (o->kind == K_ANIMAL) {
        const char *st = sw_life_stage_name(w, obj);
        const char *canon = (o->extra > FAM_NONE && o->extra <= FAM_BUTTERFLY) ? fam_stages[o->extra][o->stage].canonical : NULL;
        if (o->extra == FAM_NONE && !strcmp(o->name, "bee")) snprintf(buf, cap, "adult bee");   /* adult forever */
        else if (o->extra == FAM_NONE) snprintf(buf, cap, "%s", o->name);
        else if (canon) snprintf(buf, cap, "%s", canon);
        else if (!strcmp(st, "egg")) snprintf(buf, cap, "%s egg", o->alt);
        else snprintf(buf, cap, "%s %s", st, o->alt);
    } else if (o->kind == K_PLANE) {
        /* InclinedPlane.getDescriptName: name, additional name, " with a X surface" (none for the default) */
        char t[SW_NAME * 3];
        snprintf(t, sizeof t, "%s%s%s%s%s%s", o->name, o->alt[0] ? " " : "", o->alt, o->alt2[0] ? " with a " : "",
                 o->alt2, o->alt2[0] ? " surface" : "");
        snprintf(buf, cap, "%s", t);
    } else if (o->combusting) {
        snprintf(buf, cap, "%s (on fire)", o->name);
    } else if (o->combusted && o->mat >= 0 && strcmp(sw_materials[o->mat].name, "ash")) {
        snprintf(buf, cap, "burned %s", o->name);
    } else {
        snprintf(buf, cap, "%s", o->name);
    }
    return buf;
}

/* ---------------- descriptions ---------------- */

static int starts_vowel(const char *s) { return s[0] && strchr("aeiou", s[0]) != NULL; }

static void list_children(const sw_world *w, int parent, int multiline, sw_sb *b) {
    int kids[SW_MAX_OBJ];
    int k = sw_children(w, parent, kids, SW_MAX_OBJ, 1);
    int shown = 0;
    for (int i = 0; i < k; i++) {
        if (w->o[kids[i]].flags & F_HIDDEN) continue;
        if (multiline) {
            sw_sb_puts(b, "\t");
            sw_describe(w, kids[i], 0, b);
            sw_sb_puts(b, "\n");
        } else {
            if (shown) sw_sb_puts(b, ", ");
            sw_describe(w, kids[i], 0, b);
        }
        shown++;
    }
    if (!shown) sw_sb_puts(b, multiline ? "\tnothing" : "nothing");
}

static const char *state_word(int on) { return on ? "on" : "off"; }

static void describe_contents_in(const sw_world *w, int obj, const char *dn, int detailed, const char *prep, sw_sb *b) {
    if (detailed) {
        sw_sb_printf(b, "%s the %s is: \n", prep, dn);
        list_children(w, obj, 1, b);
    } else {
        sw_sb_printf(b, "%s the %s is: ", prep, dn);
        list_children(w, obj, 0, b);
        sw_sb_puts(b, ".");
    }
}

void sw_describe(const sw_world *w, int obj, int detailed, sw_sb *b) {
    const sw_obj *o = &w->o[obj];
    char dn[SW_NAME * 2];
    sw_descript_name(w, obj, dn, sizeof dn);
    int open = (o->flags & F_OPEN) != 0;
    switch (o->kind) {
    case K_UNIVERSE:
        sw_sb_puts(b, "A universe. In this Universe, you see: ");
        list_children(w, obj, 1, b);
        sw_sb_puts(b, ".");
        break;
    case K_ROOM: case K_OUTSIDE: {
        if (o->kind == K_ROOM) sw_sb_printf(b, "This room is called the %s. In it, you see: \n", dn);
        else sw_sb_printf(b, "This outside location is called the %s. Here you see: \n", dn);
        list_children(w, obj, 1, b);
        sw_sb_puts(b, "You also see:\n");
        /* doors: descriptions sorted as strings */
        char lines[16][SW_NAME * 3];
        int nl = 0;
        for (int i = 0; i < w->n && nl < 16; i++) {
            const sw_obj *d = &w->o[i];
            if (d->kind != K_DOOR || (d->flags & F_HIDDEN)) continue;
            int other = sw_door_other(w, i, obj);
            if (other == SW_NONE) continue;
            snprintf(lines[nl++], sizeof lines[0], "A door to the %s (that is %s)", w->o[other].name,
                     (d->flags & F_OPEN) ? "open" : "closed");
        }
        for (int i = 1; i < nl; i++)
            for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
                char t[SW_NAME * 3];
                memcpy(t, lines[j], sizeof t); memcpy(lines[j], lines[j - 1], sizeof t); memcpy(lines[j - 1], t, sizeof t);
            }
        if (!nl) sw_sb_puts(b, "\tnothing");
        for (int i = 0; i < nl; i++) sw_sb_printf(b, "\t%s\n", lines[i]);
        break;
    }
    case K_AGENT: sw_sb_puts(b, "the agent"); break;
    case K_DOOR: {
        int here = sw_room_of(w, w->agent);
        int other = sw_door_other(w, obj, here);
        if (other != SW_NONE)
            sw_sb_printf(b, "A door to the %s (that is %s)", w->o[other].name, open ? "open" : "closed");
        else
            sw_sb_printf(b, "A door that connects the %s to the %s (that is %s)", w->o[o->door_a].name,
                         w->o[o->door_b].name, open ? "open" : "closed");
        break;
    }
    case K_SUBSTANCE: sw_sb_printf(b, "a substance called %s", dn); break;
    case K_INVENTORY: case K_CUP: case K_FLOWERPOT: case K_BOOKSHELF: case K_ANSWERBOX: case K_FIREPIT: case K_FOUNTAIN:
        sw_sb_printf(b, "a %s (containing ", dn);
        list_children(w, obj, 0, b);
        sw_sb_puts(b, ")");
        break;
    case K_SURFACE: case K_BED: case K_COUCH:
        sw_sb_printf(b, "a %s. ", dn);
        describe_contents_in(w, obj, dn, detailed, "On", b);
        break;
    case K_CLOSABLE: case K_BEEHIVE:
        sw_sb_printf(b, "a %s", dn);
        if ((o->flags & F_DEVICE) && !(o->flags & F_ON)) sw_sb_puts(b, ", which is turned off");
        sw_sb_printf(b, ". The %s door is %s. ", dn, open ? "open" : "closed");
        if (open) describe_contents_in(w, obj, dn, (o->flags & F_DEVICE) ? 0 : detailed, "In", b);
        break;
    case K_DRAWER:
        sw_sb_printf(b, "a %s", dn);
        if (detailed) {
            if (!open) sw_sb_puts(b, ". The drawer is closed.");
            else { sw_sb_puts(b, ". "); describe_contents_in(w, obj, dn, 1, "In", b); }
        }
        break;
    case K_STOVE:
        sw_sb_printf(b, "a %s, which is turned %s. ", o->name, state_word(o->flags & F_ON));
        describe_contents_in(w, obj, "stove", 0, "On", b);
        break;
    case K_OVEN:
        sw_sb_printf(b, "a %s, which is turned %s. The %s door is %s. ", dn, state_word(o->flags & F_ON), dn,
                     open ? "open" : "closed");
        if (open) describe_contents_in(w, obj, dn, detailed, "In", b);
        break;
    case K_SINK:
        sw_sb_printf(b, "a %s, which is turned %s. ", dn, state_word(o->flags & F_ON));
        describe_contents_in(w, obj, dn, 0, "In", b);
        if (detailed) sw_sb_puts(b, " The drain is open.");
        break;
    case K_TOILET: {
        int kids[8];
        sw_sb_printf(b, "a %s. ", dn);
        if (sw_children(w, obj, kids, 8, 0) > 0) describe_contents_in(w, obj, dn, 0, "In", b);
        break;
    }
    case K_PAINT: sw_sb_puts(b, dn); break;
    case K_FOOD:
        if (!strcmp(o->name, "apple")) sw_sb_printf(b, "a red %s", dn);
        else if (!strcmp(o->name, "apricot")) sw_sb_printf(b, "a orange %s", dn);
        else if (!strcmp(o->name, "jam")) sw_sb_printf(b, "red %s", dn);
        else if (o->mat >= 0) sw_sb_puts(b, dn);
        else sw_sb_printf(b, "%s %s", starts_vowel(dn) ? "an" : "a", dn);
        break;
    case K_THERMOMETER:
        sw_sb_printf(b, "a %s, currently reading a temperature of %.0f degrees celsius", dn, sw_java_round(o->temp) + 0.0);
        break;
    case K_STOPWATCH:
        sw_sb_printf(b, "a %s, which is %s. ", dn, (o->flags & F_ON) ? "activated" : "deactivated");
        if (detailed) sw_sb_printf(b, "The time reads %d ticks.", (int)o->watch_user);
        break;
    case K_PLANE: {
        /* InclinedPlane.getDescription: each object's position ("approximately N% down the plane") */
        int kids[64], k = sw_children(w, obj, kids, 64, 1), shown = 0;
        for (int i = 0; i < k; i++) {
            const sw_obj *c = &w->o[kids[i]];
            if (c->flags & F_HIDDEN) continue;
            char cdn[SW_NAME * 2];
            sw_descript_name(w, kids[i], cdn, sizeof cdn);
            if (shown++) sw_sb_printf(b, ", a %s", cdn);
            else sw_sb_printf(b, "an %s, with: a %s", dn, cdn);
            if (c->plane_pos == 0.0) sw_sb_puts(b, " at the bottom of the plane");
            else if (c->plane_pos >= (double)0.99f) sw_sb_puts(b, " at the top of the plane");
            else sw_sb_printf(b, " approximately %.0f%% down the plane", sw_java_round(100.0 - 100.0 * c->plane_pos) + 0.0);
        }
        if (!shown) sw_sb_printf(b, "an %s", dn);
        break;
    }
    case K_PICTURE:
        if (!detailed) sw_sb_printf(b, "a %s", dn);
        else sw_sb_printf(b, "a %s of %s.  The artist is listed as %s. ", dn, o->alt, o->alt2);
        break;
    case K_BOOK:
        sw_sb_printf(b, "A %s titled %s by %s", dn, o->alt, o->alt2);
        break;
    case K_ANIMAL:
        sw_sb_printf(b, "a %s", dn);
        if (detailed && !strcmp(o->name, "bee")) {
            for (int i = 0; i < w->n; i++)
                if (w->o[i].parent == obj && w->o[i].kind == K_POLLEN && !(w->o[i].flags & F_DELETED)) {
                    sw_sb_puts(b, ", that is covered in pollen");
                    break;
                }
        }
        break;
    case K_PLANT: {
        /* FruitingTree.getDescription (sic "a apple seed") */
        if (o->stage == PLANT_DEAD) { sw_sb_printf(b, "a dead %s", o->name); break; }
        if (o->stage == PLANT_SEED) {
            if (o->has_genes) {   /* PeaPlant / RandomGeneticsPlants: the seed shows its seed shape and colour */
                const char *sh = plant_trait_value(w, obj, TR_SEED_SHAPE), *co = plant_trait_value(w, obj, TR_SEED_COLOR);
                sw_sb_printf(b, "a %s%s%s%s%s", sh, *sh ? " " : "", co, *co ? " " : "", o->name);
            } else sw_sb_printf(b, "a %s", o->name);
            break;
        }
        sw_sb_printf(b, "a %s in the %s stage", o->name, sw_life_stage_name(w, obj));
        if (o->has_genes && (o->stage == PLANT_ADULT || o->stage == PLANT_REPRODUCING)) {
            /* " with a tall height", " with a short height and pointed leaves", " with medium leaves" */
            const char *h = plant_trait_value(w, obj, TR_PLANT_HEIGHT), *ls = plant_trait_value(w, obj, TR_LEAF_SIZE),
                       *lh = plant_trait_value(w, obj, TR_LEAF_SHAPE);
            if (*h || *ls || *lh) {
                sw_sb_puts(b, " with ");
                if (*h) sw_sb_printf(b, "a %s height", h);
                if (*h && (*ls || *lh)) sw_sb_puts(b, " and ");
                if (*ls || *lh) sw_sb_printf(b, "%s%s%s leaves", ls, *ls && *lh ? " " : "", lh);
            }
        }
        if (o->sickly) sw_sb_puts(b, " (that looks unwell)");
        int kids[8];
        if (sw_children(w, obj, kids, 8, 0) > 0) {
            sw_sb_printf(b, ". On the %s you see: ", o->name);
            list_children(w, obj, 0, b);
            sw_sb_puts(b, ". ");
        }
        break;
    }
    case K_LIGHTBULB: case K_SWITCH: case K_BATTERY: {
        sw_sb_printf(b, "a %s", dn);
        if (!(o->kind == K_BATTERY && o->extra == GEN_BATTERY)) sw_sb_printf(b, ", which is %s", state_word(o->flags & F_ON));
        if (detailed) {
            sw_sb_puts(b, ". its anode is connected to: ");
            sw_connected_to_str(w, sw_terminal_of(w, obj, 0), b);
            sw_sb_puts(b, ". its cathode is connected to: ");
            sw_connected_to_str(w, sw_terminal_of(w, obj, 1), b);
            sw_sb_puts(b, ". ");
        }
        break;
    }
    case K_WIRE:
        sw_sb_printf(b, "a %s", dn);
        if (detailed) {   /* (sic: the original has no separator here) */
            sw_sb_puts(b, "its terminal 1 is connected to: ");
            sw_connected_to_str(w, sw_terminal_of(w, obj, 0), b);
            sw_sb_puts(b, ". its terminal 2 is connected to: ");
            sw_connected_to_str(w, sw_terminal_of(w, obj, 1), b);
            sw_sb_puts(b, ". ");
        }
        break;
    case K_TERMINAL: {
        int p = o->parent;
        if (!detailed) sw_sb_printf(b, "a %s on %s", dn, p != SW_NONE ? w->o[p].name : "");
        else {
            sw_sb_printf(b, "a %s.  it is connected to: ", dn);
            sw_connected_to_str(w, obj, b);
            sw_sb_puts(b, ". ");
        }
        break;
    }
    case K_RECIPE: sw_sb_printf(b, "A %s titled %s", dn, o->alt); break;
    case K_FLOWER: {   /* Flower.getDescription: the plant's flower size and colour, if it has genes */
        const char *sz = "", *co = "";
        if (o->door_a != SW_NONE && w->o[o->door_a].has_genes) {
            sz = plant_trait_value(w, o->door_a, TR_FLOWER_SIZE);
            co = plant_trait_value(w, o->door_a, TR_FLOWER_COLOR);
        }
        sw_sb_printf(b, "a %s%s%s%s%s%s", o->extra > 0 ? "wilting " : "", sz, *sz ? " " : "", co, *co ? " " : "", dn);
        if (detailed) { sw_sb_puts(b, ". Inside the flower is: "); list_children(w, obj, 0, b); }
        break;
    }
    case K_POLLEN:
        if (detailed && o->door_a != SW_NONE) sw_sb_printf(b, "%s%s", w->o[o->door_a].alt, dn);   /* (sic: no space) */
        else sw_sb_puts(b, dn);
        break;
    default:
        if (!strcmp(o->name, "paper")) sw_sb_printf(b, "A blank %s", dn);
        else if (!strcmp(o->name, "metal fork") || !strcmp(o->name, "plastic fork") || !strcmp(o->name, "paper clip") ||
            !strcmp(o->name, "aluminum foil") || (strlen(o->name) > 6 && !strcmp(o->name + strlen(o->name) - 6, " paper")))
            sw_sb_printf(b, "A %s", dn);
        else if (!strcmp(o->name, "iron block") || !strcmp(o->name, "wood block")) sw_sb_printf(b, "a %s", dn);
        else if (strstr(o->name, "unknown substance")) sw_sb_puts(b, dn);
        else sw_sb_printf(b, "%s %s", starts_vowel(dn) ? "an" : "a", dn);
        break;
    }
}

void sw_look_around(const sw_world *w, sw_sb *b) {
    int here = w->o[w->agent].parent;
    sw_describe(w, here, 1, b);
}

void sw_inventory_text(const sw_world *w, sw_sb *b) {
    sw_sb_puts(b, "In your inventory, you see:\n");
    int kids[64];
    int k = sw_children(w, w->inventory, kids, 64, 1);
    int shown = 0;
    for (int i = 0; i < k; i++) {
        if (w->o[kids[i]].flags & F_HIDDEN) continue;
        sw_sb_puts(b, "\t");
        sw_describe(w, kids[i], 1, b);
        sw_sb_puts(b, "\n");
        shown++;
    }
    if (!shown) sw_sb_puts(b, "\tnothing");
}

/* ---------------- object factories ---------------- */

static void add_water(sw_world *w, int parent) {
    int id = sw_new(w, K_SUBSTANCE, "water", parent);
    if (id != SW_NONE) sw_set_material(w, id, "water");
}

int sw_add_substance(sw_world *w, const char *name, const char *material, int parent) {
    int id = sw_new(w, K_SUBSTANCE, name, parent);
    if (id == SW_NONE) return id;
    sw_set_material(w, id, material ? material : name);
    return id;
}

/* Animal table: name, lifeform type, life-cycle first stage (0 baby, 1 egg). */
/* Animals: name (= lifeform type) and life-cycle family, after objects/livingthing/animals/Animal.scala. */
static const struct { const char *name; int family; } animals[] = {
    {"butterfly", FAM_BUTTERFLY}, {"moth", FAM_BUTTERFLY}, {"frog", FAM_FROG}, {"common toad", FAM_FROG},
    {"giant tortoise", FAM_TORTOISE}, {"turtle", FAM_TORTOISE}, {"crocodile", FAM_TORTOISE}, {"chameleon", FAM_TORTOISE},
    {"parrot", FAM_BIRD}, {"dove", FAM_BIRD}, {"blue jay", FAM_BIRD},
    {"elephant", FAM_ANIMAL}, {"brown bear", FAM_ANIMAL}, {"beaver", FAM_ANIMAL}, {"wolf", FAM_ANIMAL},
    {"chipmunk", FAM_ANIMAL}, {"rabbit", FAM_ANIMAL}, {"mouse", FAM_ANIMAL}, {"dragonfly", FAM_ANIMAL},
    {"ant", FAM_ANIMAL}, {"hedgehog", FAM_ANIMAL},
};

int sw_add_animal(sw_world *w, const char *name, int parent) {
    int id = sw_new(w, K_ANIMAL, name, parent);
    if (id == SW_NONE) return id;
    sw_obj *o = &w->o[id];
    snprintf(o->alt, sizeof o->alt, "%s", name);
    o->extra = FAM_NONE;   /* bees and unknown animals: no life cycle modelled */
    for (size_t i = 0; i < sizeof animals / sizeof animals[0]; i++)
        if (!strcmp(animals[i].name, name)) o->extra = (int16_t)animals[i].family;
    return id;
}

int sw_add_plant(sw_world *w, const char *lifeform, int stage, int parent) {
    int p = sw_new(w, K_PLANT, lifeform, parent);
    if (p == SW_NONE) return p;
    snprintf(w->o[p].alt, sizeof w->o[p].alt, "%s", lifeform);
    plant_change_stage(&w->o[p], stage);
    plant_set_name(&w->o[p]);
    sw_set_material(w, p, "plant matter");
    return p;
}

int sw_add_plant_in_pot(sw_world *w, const char *type, const char *pot_name, int parent) {
    int pot = sw_new(w, K_FLOWERPOT, pot_name, parent);
    if (pot == SW_NONE) return pot;
    w->o[pot].mat = (int16_t)sw_material_find("ceramic");
    if (type) {
        /* "apple tree" / "pea plant": the lifeform type is the first word(s) */
        char life[SW_NAME];
        snprintf(life, sizeof life, "%s", type);
        char *sp = strrchr(life, ' ');
        if (sp && (!strcmp(sp, " tree") || !strcmp(sp, " plant"))) *sp = 0;
        sw_add_plant(w, life, PLANT_ADULT, pot);
        int soil = sw_new(w, K_THING, "soil", pot);
        if (soil != SW_NONE) sw_set_material(w, soil, "soil");
    }
    return pot;
}

int sw_add_answer_box(sw_world *w, const char *colour, int parent) {
    char name[SW_NAME];
    snprintf(name, sizeof name, "%s box", colour);
    int id = sw_new(w, K_ANSWERBOX, name, parent);
    if (id != SW_NONE) {
        w->o[id].flags &= ~F_MOVABLE;
        snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", colour);
    }
    return id;
}

static int add_fixed(sw_world *w, int kind, const char *name, int parent) {
    int id = sw_new(w, kind, name, parent);
    if (id != SW_NONE) w->o[id].flags &= ~F_MOVABLE;
    return id;
}

static int add_fixed_mat(sw_world *w, int kind, const char *name, const char *mat, int parent) {
    int id = add_fixed(w, kind, name, parent);
    if (id != SW_NONE && mat) sw_set_material(w, id, mat);
    return id;
}

static int add_cooler(sw_world *w, const char *name, int parent) {
    int id = add_fixed(w, K_CLOSABLE, name, parent);
    if (id != SW_NONE) w->o[id].flags |= F_DEVICE | F_ON;
    return id;
}

static int add_with_mat(sw_world *w, int kind, const char *name, const char *mat, int parent) {
    int id = sw_new(w, kind, name, parent);
    if (id != SW_NONE) sw_set_material(w, id, mat);
    return id;
}

static void add_picture(sw_world *w, sw_jrand *r, int parent) {
    static const char *const types[] = {"picture", "drawing", "painting", "finger painting"};
    static const char *const subjects[] = {"a cow", "a chicken", "a farm", "a lush green meadow", "rolling hills",
        "a wintery mountain", "a boat crossing a river", "the moon", "abstract shapes", "two people playing"};
    static const char *const artists[] = {"Alexandra", "Owen", "Bob", "Lily"};
    int t = sw_jrand_next_int(r, 4), s = sw_jrand_next_int(r, 10), a = sw_jrand_next_int(r, 4);
    int id = add_with_mat(w, K_PICTURE, types[t], "paper", parent);
    if (id == SW_NONE) return;
    snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", subjects[s]);
    snprintf(w->o[id].alt2, sizeof w->o[id].alt2, "%s", artists[a]);
}

/* Book.mkRandom: draw 0..9 until one of the six books comes up. */
static const char *const book_titles[6] = {"Moby Dick", "Frankenstein", "Sherlock Holmes", "Pride and Prejudice", "Beowulf",
    "The Foundations of the Origin of Species"};
static const char *const book_authors[6] = {"Herman Melville", "Mary Wollstonecraft Shelley", "Arthur Conan Doyle", "Jane Austen",
    "Beowulf poet", "Charles Darwin"};

int sw_add_book(sw_world *w, int which, int parent) {
    char nm[SW_NAME];
    snprintf(nm, sizeof nm, "book (%s)", book_titles[which]);
    int id = add_with_mat(w, K_BOOK, nm, "paper", parent);
    if (id == SW_NONE) return id;
    snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", book_titles[which]);
    snprintf(w->o[id].alt2, sizeof w->o[id].alt2, "%s", book_authors[which]);
    return id;
}

static void add_bookshelf(sw_world *w, sw_jrand *r, int parent) {
    int shelf = add_with_mat(w, K_BOOKSHELF, "book shelf", "wood", parent);
    int nb = sw_jrand_next_int(r, 4);
    for (int i = 0; i < nb && shelf != SW_NONE; i++) {
        int k;
        do k = sw_jrand_next_int(r, 10); while (k >= 6);
        sw_add_book(w, k, shelf);
    }
}

static int new_room(sw_world *w, int kind, const char *name) {
    int room = sw_new(w, kind, name, w->universe);
    if (room == SW_NONE) return room;
    int air = sw_add_substance(w, "air", "air", room);
    if (air != SW_NONE) w->o[air].temp = 25.0f;
    if (kind == K_OUTSIDE) add_fixed(w, K_THING, "ground", room);
    return room;
}

static void mk_door(sw_world *w, int a, int b) {
    int d = sw_new(w, K_DOOR, "door", SW_NONE);
    if (d == SW_NONE) return;
    w->o[d].door_a = (int16_t)a;
    w->o[d].door_b = (int16_t)b;
    w->o[d].flags = F_CLOSABLE;   /* closed */
}

static int sink(sw_world *w, const char *name, int parent) {
    return add_fixed_mat(w, K_SINK, name, strcmp(name, "bathtub") ? "steel" : "ceramic", parent);
}

void sw_build_house(sw_world *w, sw_jrand *r) {
    /* kitchen */
    int kitchen = new_room(w, K_ROOM, "kitchen");
    sink(w, "sink", kitchen);
    add_fixed(w, K_STOVE, "stove", kitchen);
    add_cooler(w, "fridge", kitchen);
    add_cooler(w, "freezer", kitchen);
    add_fixed(w, K_OVEN, "oven", kitchen);
    int cupboard = add_fixed_mat(w, K_CLOSABLE, "cupboard", "wood", kitchen);
    add_fixed_mat(w, K_DRAWER, "drawer", "wood", cupboard);
    add_with_mat(w, K_CUP, "metal pot", "steel", cupboard);
    add_with_mat(w, K_CUP, "tin cup", "tin", cupboard);
    add_with_mat(w, K_CUP, "ceramic cup", "ceramic", cupboard);
    int counter = add_fixed_mat(w, K_SURFACE, "counter", "wood", kitchen);
    add_fixed_mat(w, K_DRAWER, "drawer", "wood", counter);
    int bowl = add_with_mat(w, K_CUP, "bowl", "wood", counter);
    sw_new(w, K_FOOD, "apple", bowl);
    sw_new(w, K_FOOD, "banana", bowl);
    sw_new(w, K_FOOD, "orange", bowl);
    sw_new(w, K_FOOD, "potato", bowl);
    int fridge = sw_find_named(w, kitchen, "fridge");
    int cup2 = add_with_mat(w, K_CUP, "wood cup", "wood", fridge);
    { int oj = sw_new(w, K_FOOD, "orange juice", cup2); if (oj != SW_NONE) sw_set_material(w, oj, "orange juice"); }
    add_with_mat(w, K_THERMOMETER, "thermometer", "glass", kitchen);
    add_picture(w, r, kitchen);
    int table = add_fixed_mat(w, K_SURFACE, "table", "wood", kitchen);
    add_with_mat(w, K_CUP, "glass cup", "glass", table);
    add_fixed(w, K_SURFACE, "chair", kitchen);
    sw_new(w, K_LIGHTER, "lighter", kitchen);
    int jar = add_with_mat(w, K_CUP, "glass jar", "glass", kitchen);
    w->o[jar].flags |= F_CLOSABLE;   /* a closable container that starts open */
    sw_add_substance(w, "sodium chloride", "sodium chloride", jar);
    sw_add_substance(w, "soap", "soap", kitchen);
    sw_new(w, K_STOPWATCH, "stopwatch", kitchen);

    /* living room */
    int living = new_room(w, K_ROOM, "living room");
    int couch = add_fixed(w, K_COUCH, "couch", living);
    sw_new(w, K_THING, "white pillow", couch);
    add_fixed(w, K_SURFACE, "chair", living);
    {
        int t = sw_jrand_next_int(r, 3);
        int lt = add_fixed_mat(w, K_SURFACE, t == 2 ? "desk" : "table", t == 1 ? "steel" : "wood", living);
        if (t == 2) add_fixed_mat(w, K_DRAWER, "drawer", "wood", lt);
    }
    add_picture(w, r, living);
    if (sw_jrand_next_bool(r)) add_bookshelf(w, r, living);

    /* bedroom */
    int bedroom = new_room(w, K_ROOM, "bedroom");
    int bed = add_fixed(w, K_BED, "bed", bedroom);
    int mattress = add_fixed(w, K_SURFACE, "mattress", bed);
    sw_new(w, K_THING, "white pillow", mattress);
    add_fixed_mat(w, K_SURFACE, "table", "wood", bedroom);
    add_fixed_mat(w, K_CLOSABLE, "closet", "wood", bedroom);
    add_picture(w, r, bedroom);
    if (sw_jrand_next_bool(r)) add_bookshelf(w, r, bedroom);

    /* bathroom */
    int bathroom = new_room(w, K_ROOM, "bathroom");
    sink(w, "sink", bathroom);
    { int toilet = add_fixed_mat(w, K_TOILET, "toilet", "steel", bathroom); if (toilet != SW_NONE) add_water(w, toilet); }
    sink(w, "bathtub", bathroom);
    add_with_mat(w, K_CUP, "glass cup", "glass", bathroom);
    add_picture(w, r, bathroom);

    /* workshop */
    int workshop = new_room(w, K_ROOM, "workshop");
    int wtable = add_fixed_mat(w, K_SURFACE, "table", "wood", workshop);
    {
        static const char *const lights[] = {"red", "green", "blue", "yellow", "orange", "violet"};
        static const char *const wires[] = {"red", "green", "blue", "yellow", "orange", "black"};
        int li[6] = {0, 1, 2, 3, 4, 5}, wi[6] = {0, 1, 2, 3, 4, 5};
        sw_jrand_shuffle(r, li, 6);
        for (int i = 0; i < 3; i++) {
            char nm[SW_NAME];
            snprintf(nm, sizeof nm, "%s light bulb", lights[li[i]]);
            sw_add_component(w, K_LIGHTBULB, nm, wtable);
        }
        sw_jrand_shuffle(r, wi, 6);
        for (int i = 0; i < 3; i++) {
            char nm[SW_NAME];
            snprintf(nm, sizeof nm, "%s wire", wires[wi[i]]);
            int wire = sw_add_component(w, K_WIRE, nm, wtable);
            if (wire != SW_NONE) sw_set_material(w, wire, "metal");
        }
        sw_add_component(w, K_SWITCH, "switch", wtable);
        sw_add_component(w, K_BATTERY, "battery", wtable);   /* extra = GEN_BATTERY */
    }
    add_cooler(w, "ultra low temperature freezer", workshop);

    /* greenhouse */
    int greenhouse = new_room(w, K_ROOM, "greenhouse");
    add_with_mat(w, K_CUP, "jug", "plastic", greenhouse);
    int hive = add_fixed_mat(w, K_BEEHIVE, "bee hive", "wood", greenhouse);
    for (int i = 0; i < 5; i++) sw_add_animal(w, "bee", hive);
    sink(w, "sink", greenhouse);

    /* art studio */
    int art = new_room(w, K_ROOM, "art studio");
    int atable = add_fixed_mat(w, K_SURFACE, "table", "wood", art);
    {
        int mix[3] = {0, 1, 2};
        sw_jrand_shuffle(r, mix, 3);
        static const char *const names[] = {"glass cup", "bowl", "jug"};
        static const char *const mats[] = {"glass", "wood", "plastic"};
        add_with_mat(w, K_CUP, names[mix[0]], mats[mix[0]], atable);
        static const char *const paints[] = {"red paint", "blue paint", "yellow paint"};
        for (int i = 0; i < 3; i++) {
            int c = add_with_mat(w, K_CUP, "wood cup", "wood", art);
            sw_add_paint(w, paints[i], c);
        }
        int lc = add_fixed_mat(w, K_CLOSABLE, "large cupboard", "wood", art);
        add_fixed_mat(w, K_DRAWER, "drawer", "wood", lc);
        for (int i = 0; i < 3; i++) {
            int c = add_with_mat(w, K_CUP, "wood cup", "wood", lc);
            sw_add_paint(w, paints[i], c);
        }
    }

    /* hallway */
    int hallway = new_room(w, K_ROOM, "hallway");
    add_picture(w, r, hallway);

    /* outside */
    int outside = new_room(w, K_OUTSIDE, "outside");
    add_fixed(w, K_FIREPIT, "fire pit", outside);
    sw_add_substance(w, "wood", "wood", outside);
    add_with_mat(w, K_THING, "axe", "steel", outside);
    add_fixed_mat(w, K_FOUNTAIN, "fountain", "ceramic", outside);   /* fills with water on the first tick */

    /* foundry */
    int foundry = new_room(w, K_ROOM, "foundry");
    add_fixed(w, K_OVEN, "blast furnace", foundry);
    sink(w, "sink", foundry);
    add_fixed_mat(w, K_SURFACE, "table", "steel", foundry);

    /* shovel: greenhouse or outside */
    add_with_mat(w, K_THING, "shovel", "steel", sw_jrand_next_int(r, 2) == 1 ? greenhouse : outside);

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
