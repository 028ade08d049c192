/* ScienceWorld tasks: the 30-task table, variation enumeration and train/dev/test split, world
 * setup per variation, goal sequences and their scoring (after tasks/specifictasks/ sources and
 * tasks/goals/Goal.scala). */
#include "env/scienceworld/tasks.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------- the task table (tasks.json order) ---------------- */

const sw_task_info sw_tasks[SW_NUM_TASKS] = {
    {"1-1", "boil", 30, 0}, {"1-2", "melt", 30, 0}, {"1-3", "freeze", 30, 0},
    {"1-4", "change-the-state-of-matter-of", 30, 0},
    {"2-1", "use-thermometer", 540, 0}, {"2-2", "measure-melting-point-known-substance", 436, 0},
    {"2-3", "measure-melting-point-unknown-substance", 300, 0},
    {"3-1", "power-component", 20, 0}, {"3-2", "power-component-renewable-vs-nonrenewable-energy", 20, 0},
    {"3-3", "test-conductivity", 900, 0}, {"3-4", "test-conductivity-of-unknown-substances", 600, 0},
    {"4-1", "find-living-thing", 300, 1}, {"4-2", "find-non-living-thing", 300, 1},
    {"4-3", "find-plant", 300, 1}, {"4-4", "find-animal", 300, 1},
    {"5-1", "grow-plant", 126, 0}, {"5-2", "grow-fruit", 126, 0},
    {"6-1", "chemistry-mix", 32, 0}, {"6-2", "chemistry-mix-paint-secondary-color", 36, 0},
    {"6-3", "chemistry-mix-paint-tertiary-color", 36, 0},
    {"7-1", "lifespan-longest-lived", 125, 1}, {"7-2", "lifespan-shortest-lived", 125, 1},
    {"7-3", "lifespan-longest-lived-then-shortest-lived", 125, 1},
    {"8-1", "identify-life-stages-1", 14, 0}, {"8-2", "identify-life-stages-2", 10, 0},
    {"9-1", "inclined-plane-determine-angle", 168, 0}, {"9-2", "inclined-plane-friction-named-surfaces", 1386, 0},
    {"9-3", "inclined-plane-friction-unnamed-surfaces", 162, 0},
    {"10-1", "mendelian-genetics-known-plant", 120, 0}, {"10-2", "mendelian-genetics-unknown-plant", 480, 0},
};

int sw_task_find(const char *name) {
    for (int i = 0; i < SW_NUM_TASKS; i++)
        if (!strcmp(sw_tasks[i].name, name) || !strcmp(sw_tasks[i].id, name)) return i;
    return -1;
}

/* PythonInterface.getSets: g = n/4; train = [0, 2g), dev = [2g, 3g), test = [3g, n). */
void sw_split_range(int n, int split, int *lo, int *hi) {
    int g = n / 4;
    if (n <= 4) { /* too few to split: every split sees all variations */
        *lo = 0; *hi = n; return;
    }
    if (split == M2_SPLIT_TRAIN) { *lo = 0; *hi = 2 * g; }
    else if (split == M2_SPLIT_ID) { *lo = 2 * g; *hi = 3 * g; }
    else { *lo = 3 * g; *hi = n; }
}

/* ---------------- variation parameters ---------------- */

static const char *const find_colours[6] = {"red", "green", "blue", "orange", "yellow", "purple"};
static const char *const find_locations[5] = {"kitchen", "bathroom", "living room", "bedroom", "workshop"};
static const char *const find_animals[14] = {"butterfly", "moth", "frog", "common toad", "giant tortoise", "turtle",
    "crocodile", "parrot", "dove", "blue jay", "elephant", "brown bear", "beaver", "wolf"};
static const char *const find_plants[8] = {"apple tree", "avocado tree", "banana tree", "cherry tree", "lemon tree",
    "orange tree", "peach tree", "pea plant"};
static const char *const life_long[5] = {"giant tortoise", "parrot", "elephant", "crocodile", "brown bear"};
static const char *const life_medium[5] = {"beaver", "wolf", "chipmunk", "common toad", "rabbit"};
static const char *const life_short[5] = {"hedgehog", "mouse", "chameleon", "dragonfly", "ant"};

/* Lifespan combinations (long x medium x short, 125) shuffled with scala Random(0). */
static int lifespan_combo(int v) {
    int order[125];
    for (int i = 0; i < 125; i++) order[i] = i;
    sw_jrand r;
    sw_jrand_seed(&r, 0);
    sw_jrand_shuffle(&r, order, 125);
    return order[v];
}

void sw_variation_params(int task, int v, sw_params *p) {
    memset(p, 0, sizeof *p);
    const char *name = sw_tasks[task].name;
    if (!strncmp(name, "find-", 5)) {
        int lt = v / 30, ab = v % 30;
        snprintf(p->location, sizeof p->location, "%s", find_locations[ab / 6]);
        snprintf(p->answer_box, sizeof p->answer_box, "%s box", find_colours[ab % 6]);
        snprintf(p->colour, sizeof p->colour, "%s", find_colours[ab % 6]);
        p->seed_group = lt;
    } else if (!strncmp(name, "lifespan-", 9)) {
        int c = lifespan_combo(v);
        snprintf(p->long_animal, sizeof p->long_animal, "%s", life_long[c / 25]);
        snprintf(p->medium_animal, sizeof p->medium_animal, "%s", life_medium[(c / 5) % 5]);
        snprintf(p->short_animal, sizeof p->short_animal, "%s", life_short[c % 5]);
        snprintf(p->location, sizeof p->location, "outside");
    }
}

/* ---------------- world setup ---------------- */

static void setup_find(sw_world *w, const sw_params *p) {
    int lt = p->seed_group;
    int outside = sw_room(w, "outside"), greenhouse = sw_room(w, "greenhouse");
    /* 3 animals outside: Random(variation group) shuffle of the 14 */
    int a[14];
    for (int i = 0; i < 14; i++) a[i] = i;
    sw_jrand r;
    sw_jrand_seed(&r, lt);
    sw_jrand_shuffle(&r, a, 14);
    for (int i = 0; i < 3; i++) sw_add_animal(w, find_animals[a[i]], outside);
    /* 3 adult plants in flower pots + 2 empty pots in the greenhouse */
    int pots[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    sw_jrand rp;
    sw_jrand_seed(&rp, 1000 + lt);   /* the original draws these from the unseeded global RNG */
    sw_jrand_shuffle(&rp, pots, 9);
    int pl[8];
    for (int i = 0; i < 8; i++) pl[i] = i;
    sw_jrand rs;
    sw_jrand_seed(&rs, lt);
    sw_jrand_shuffle(&rs, pl, 8);
    char nm[SW_NAME];
    for (int i = 0; i < 5; i++) {
        snprintf(nm, sizeof nm, "flower pot %d", pots[i]);
        sw_add_plant_in_pot(w, i < 3 ? find_plants[pl[i]] : NULL, nm, greenhouse);
    }
    sw_add_answer_box(w, p->colour, sw_room(w, p->location));
}

static void setup_lifespan(sw_world *w, const sw_params *p) {
    int outside = sw_room(w, "outside");
    sw_add_animal(w, p->long_animal, outside);
    sw_add_animal(w, p->medium_animal, outside);
    sw_add_animal(w, p->short_animal, outside);
}

/* ---------------- goals ---------------- */

static sw_goal *add_goal(sw_goalseq *gs, int ordered, int type, const char *str, int optional) {
    sw_goal *g = ordered ? &gs->ordered[gs->n_ordered++] : &gs->unordered[gs->n_unordered++];
    memset(g, 0, sizeof *g);
    g->type = type;
    if (str) snprintf(g->str, sizeof g->str, "%s", str);
    g->optional = optional;
    return g;
}

static void goals_find(sw_goalseq *gs, int mode, const sw_params *p) {
    static const int focus_goal[4] = {G_FOCUS_LIVING, G_FOCUS_NONLIVING, G_FOCUS_PLANT, G_FOCUS_ANIMAL};
    add_goal(gs, 1, focus_goal[mode], NULL, 0);
    add_goal(gs, 1, G_OBJ_IN_CONTAINER, p->answer_box, 0);
    add_goal(gs, 0, G_OBJ_IN_CONTAINER, "inventory", 0);
    add_goal(gs, 0, G_IN_ROOM_OPEN_DOOR, NULL, 1);
    add_goal(gs, 0, G_MOVE_NEW_LOCATION, NULL, 1);
    add_goal(gs, 0, G_MOVE_TO_LOCATION, p->location, 1);
}

static void goals_lifespan(sw_goalseq *gs, int mode, const sw_params *p) {
    if (mode == 0 || mode == 2) {
        sw_goal *g = add_goal(gs, 1, G_FIND, p->long_animal, 0);
        g->fail_if_wrong = 1;
        g->defocus = mode == 2;
    }
    if (mode == 1 || mode == 2) {
        sw_goal *g = add_goal(gs, 1, G_FIND, p->short_animal, 0);
        g->fail_if_wrong = 1;
    }
    sw_goal *g = add_goal(gs, 0, G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->location);   /* unlessInLocation */
    add_goal(gs, 0, G_MOVE_TO_LOCATION, p->location, 1);
}

int sw_task_setup(int task, int v, sw_world *w, char *desc, size_t cap, sw_params *p) {
    sw_variation_params(task, v, p);
    const char *name = sw_tasks[task].name;
    sw_goalseq *gs = &w->gs;
    memset(gs, 0, sizeof *gs);
    gs->last_obj = SW_NONE;
    gs->stored_state = -1;
    if (!strncmp(name, "find-", 5)) {
        int mode = !strcmp(name, "find-living-thing") ? 0 : !strcmp(name, "find-non-living-thing") ? 1
                 : !strcmp(name, "find-plant") ? 2 : 3;
        static const char *const sub[4] = {"living thing", "non-living thing", "plant", "animal"};
        setup_find(w, p);
        goals_find(gs, mode, p);
        snprintf(desc, cap, "Your task is to find a(n) %s. First, focus on the thing. Then, move it to the %s in the %s.",
                 sub[mode], p->answer_box, p->location);
        return 0;
    }
    if (!strncmp(name, "lifespan-", 9)) {
        int mode = !strcmp(name, "lifespan-longest-lived") ? 0 : !strcmp(name, "lifespan-shortest-lived") ? 1 : 2;
        setup_lifespan(w, p);
        goals_lifespan(gs, mode, p);
        if (mode == 0)
            snprintf(desc, cap, "Your task is to find the animal with the longest life span.  The animals are in the '%s' location.  Focus on the animal with the longest life span.", p->location);
        else if (mode == 1)
            snprintf(desc, cap, "Your task is to find the animal with the shortest life span.  The animals are in the '%s' location.  Focus on the animal with the shortest life span.", p->location);
        else
            snprintf(desc, cap, "Your task is to find the animal with the longest life span, then the shortest life span. First, focus on the animal with the longest life span.  Then, focus on the animal with the shortest life span. The animals are in the '%s' location.", p->location);
        return 0;
    }
    return -1;
}

/* ---------------- goal evaluation ---------------- */

enum { R_NO = 0, R_OK = 1, R_FAIL = 2 };

static int name_ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if ((*a | 32) != (*b | 32)) return 0;
    return *a == *b;
}

static int eval_goal(sw_world *w, sw_goal *g, int obj) {
    sw_goalseq *gs = &w->gs;
    int room = w->o[w->agent].parent;
    switch (g->type) {
    case G_FOCUS_LIVING: case G_FOCUS_PLANT: case G_FOCUS_ANIMAL: {
        if (obj == SW_NONE) return R_NO;
        int ok = g->type == G_FOCUS_LIVING ? sw_is_living(w, obj) : g->type == G_FOCUS_PLANT ? sw_is_plant(w, obj)
                                                                                              : sw_is_animal(w, obj);
        return ok ? R_OK : R_FAIL;
    }
    case G_FOCUS_NONLIVING:
        if (obj == SW_NONE) return R_NO;
        if (sw_is_living(w, obj)) return R_FAIL;
        return (w->o[obj].flags & F_MOVABLE) ? R_OK : R_NO;
    case G_OBJ_IN_CONTAINER: {
        if (obj == SW_NONE) return R_NO;
        if (gs->last_obj != SW_NONE && gs->last_obj != obj) return R_NO;
        int c = w->o[obj].parent;
        for (int steps = 0; c != SW_NONE && steps < 20; steps++) {
            if (name_ieq(w->o[c].name, g->str)) return R_OK;
            c = w->o[c].parent;
        }
        return R_NO;
    }
    case G_IN_ROOM_OPEN_DOOR:
        for (int i = 0; i < w->n; i++)
            if (w->o[i].kind == K_DOOR && (w->o[i].flags & F_OPEN) && sw_door_other(w, i, room) != SW_NONE) return R_OK;
        return R_NO;
    case G_MOVE_NEW_LOCATION:
        if (g->str2[0] && !strcmp(w->o[room].name, g->str2)) return R_OK;
        if (!g->start_loc[0]) { memcpy(g->start_loc, w->o[room].name, sizeof g->start_loc); return R_NO; }
        return strcmp(w->o[room].name, g->start_loc) ? R_OK : R_NO;
    case G_MOVE_TO_LOCATION:
        return !strcmp(w->o[room].name, g->str) ? R_OK : R_NO;
    case G_FIND:
        if (obj == SW_NONE) return R_NO;
        if (name_ieq(w->o[obj].name, g->str)) return R_OK;
        return g->fail_if_wrong ? R_FAIL : R_NO;
    default:
        return R_NO;
    }
}

static int has_key(const sw_goalseq *gs, const char *k) {
    if (!k[0]) return 1;
    for (int i = 0; i < gs->n_keys; i++) if (!strcmp(gs->keys[i], k)) return 1;
    return 0;
}

static void add_key(sw_goalseq *gs, const char *k) {
    if (!k[0] || has_key(gs, k) || gs->n_keys >= 8) return;
    size_t L = strlen(k);
    if (L >= sizeof gs->keys[0]) L = sizeof gs->keys[0] - 1;
    memcpy(gs->keys[gs->n_keys], k, L);
    gs->keys[gs->n_keys++][L] = 0;
}

void sw_goals_tick(sw_world *w) {
    sw_goalseq *gs = &w->gs;
    if (gs->failed) return;
    /* ordered subgoals: advance while the focused object satisfies the current one */
    while (gs->cur < gs->n_ordered) {
        sw_goal *g = &gs->ordered[gs->cur];
        int r = R_NO;
        if (has_key(gs, g->prereq) && w->focus != SW_NONE) r = eval_goal(w, g, w->focus);
        if (r == R_FAIL) { gs->failed = 1; return; }
        if (r != R_OK) break;
        gs->last_obj = w->focus;
        if (g->defocus) w->focus = SW_NONE;
        add_key(gs, g->key);
        gs->cur++;
    }
    /* unordered (optional) subgoals: without a focus object first, then with it */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < gs->n_unordered; i++) {
            if (gs->done_unordered[i]) continue;
            sw_goal *g = &gs->unordered[i];
            if (!has_key(gs, g->prereq)) continue;
            int r = eval_goal(w, g, SW_NONE);
            if (r != R_OK && w->focus != SW_NONE) r = eval_goal(w, g, w->focus);
            if (r == R_OK) { gs->done_unordered[i] = 1; add_key(gs, g->key); changed = 1; }
        }
    }
}

double sw_goals_score(const sw_world *w) {
    const sw_goalseq *gs = &w->gs;
    if (gs->failed) return -1.0;
    if (gs->n_ordered == 0) return 0.0;
    double s = (double)gs->cur / gs->n_ordered;
    if (gs->n_unordered > 0) {
        double unit = (1.0 / (gs->n_ordered + 1.0)) / gs->n_unordered;
        for (int i = 0; i < gs->n_unordered; i++) if (gs->done_unordered[i]) s += unit;
    }
    return s > 1.0 ? 1.0 : s;
}
