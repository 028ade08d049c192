/* ScienceWorld tasks: the 30-task table, variation enumeration and train/dev/test split, world
 * setup per variation, goal sequences and their scoring (after tasks/specifictasks/ sources and
 * tasks/goals/Goal.scala). */
#include "env/scienceworld/tasks.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------- the task table (tasks.json order) ---------------- */

const m2_sw_task_info m2_sw_tasks[M2_SW_NUM_TASKS] = {
    {"1-1", "boil", 30, 1}, {"1-2", "melt", 30, 1}, {"1-3", "freeze", 30, 1},
    {"1-4", "change-the-state-of-matter-of", 30, 1},
    {"2-1", "use-thermometer", 540, 1}, {"2-2", "measure-melting-point-known-substance", 436, 1},
    {"2-3", "measure-melting-point-unknown-substance", 300, 1},
    {"3-1", "power-component", 20, 1}, {"3-2", "power-component-renewable-vs-nonrenewable-energy", 20, 1},
    {"3-3", "test-conductivity", 900, 1}, {"3-4", "test-conductivity-of-unknown-substances", 600, 1},
    {"4-1", "find-living-thing", 300, 1}, {"4-2", "find-non-living-thing", 300, 1},
    {"4-3", "find-plant", 300, 1}, {"4-4", "find-animal", 300, 1},
    {"5-1", "grow-plant", 126, 1}, {"5-2", "grow-fruit", 126, 1},
    {"6-1", "chemistry-mix", 32, 1}, {"6-2", "chemistry-mix-paint-secondary-color", 36, 1},
    {"6-3", "chemistry-mix-paint-tertiary-color", 36, 1},
    {"7-1", "lifespan-longest-lived", 125, 1}, {"7-2", "lifespan-shortest-lived", 125, 1},
    {"7-3", "lifespan-longest-lived-then-shortest-lived", 125, 1},
    {"8-1", "identify-life-stages-1", 14, 1}, {"8-2", "identify-life-stages-2", 10, 1},
    {"9-1", "inclined-plane-determine-angle", 168, 1}, {"9-2", "inclined-plane-friction-named-surfaces", 1386, 1},
    {"9-3", "inclined-plane-friction-unnamed-surfaces", 162, 1},
    {"10-1", "mendelian-genetics-known-plant", 120, 1}, {"10-2", "mendelian-genetics-unknown-plant", 480, 1},
};

int m2_sw_task_find(const char *name) {
    for (int i = 0; i < M2_SW_NUM_TASKS; i++)
        if (!strcmp(m2_sw_tasks[i].name, name) || !strcmp(m2_sw_tasks[i].id, name)) return i;
    return -1;
}

/* PythonInterface.getSets: g = n/4; train = [0, 2g), dev = [2g, 3g), test = [3g, n). */
void m2_sw_split_range(int n, int split, int *lo, int *hi) {
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

/* TaskInclinedPlane3.mkInclinedPlaneSet: letters and angles; the blocks of every inclined-plane task */
static const char *const plane_letters[8] = {"B", "C", "D", "E", "F", "G", "H", "J"};
static const float plane_angles[8] = {70, 80, 20, 10, 60, 40, 30, 50};
static const char *const plane_blocks[3] = {"wood block", "steel block", "brick"};

/* Surface materials (substance name, friction coefficient from MaterialProperties.scala) of
 * TaskInclinedPlane1.mkInclinedPlaneSet (shuffled with scala.util.Random(3)) and of TaskInclinedPlane2's
 * unknown materials (Random(4)). Green paint's substance name really is "greenpaint" (GenericPaintProp). */
static const char *const named_surfaces[23] = {"aluminum", "brass", "bronze", "caesium", "copper", "iron", "lead", "platinum",
    "steel", "tin", "titanium", "zinc", "glass", "plastic", "ceramic", "wood", "paper", "sandpaper", "cloth", "rubber",
    "chocolate", "soapy water", "greenpaint"};
static const float named_frictions_f[23] = {0.45f, 0.50f, 0.40f, 0.50f, 0.60f, 0.7f, 0.43f, 0.8f, 0.6f, 0.3f, 0.0f, 0.62f,
    0.20f, 0.1f, 0.65f, 0.2f, 0.2f, 0.98f, 0.3f, 0.95f, 0.32f, 0.06f, 0.3f};
static const double named_frictions[23] = {0.45, 0.50, 0.40, 0.50, 0.60, 0.7, 0.43, 0.8, 0.6, 0.3, 0.0, 0.62,
    0.20, 0.1, 0.65, 0.2, 0.2, 0.98, 0.3, 0.95, 0.32, 0.06, 0.3};
static const char *const unnamed_surfaces[8] = {"unknown material B", "unknown material C", "unknown material D",
    "unknown material E", "unknown material F", "unknown material G", "unknown material H", "unknown material J"};
static const float unnamed_frictions_f[8] = {0.7f, 0.4f, 0.6f, 0.2f, 0.8f, 0.3f, 0.9f, 0.9f};
static const double unnamed_frictions[8] = {0.7, 0.4, 0.6, 0.2, 0.8, 0.3, 0.9, 0.9};

/* filterDuplicatesAndAddMostLeast over plane1 x plane2 x 3 blocks (materials in the shuffled order): the
 * v-th kept combination. Returns 0 when found. */
static int friction_combo(const double *fr, int n, int seed, int v, int *m1, int *m2, int *block) {
    int order[23];
    for (int i = 0; i < n; i++) order[i] = i;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, seed);
    m2_sw_jrand_shuffle(&r, order, n);
    int count = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (fabs(fr[order[i]] - fr[order[j]]) <= 0.05) continue;   /* too similar (or the same plane) */
            if (v < count + 3) { *m1 = order[i]; *m2 = order[j]; *block = v - count; return 0; }
            count += 3;
        }
    return -1;
}

int m2_sw_friction_variations(int named) {
    int count = 0, a, b, c;
    while (!friction_combo(named ? named_frictions : unnamed_frictions, named ? 23 : 8, named ? 3 : 4, count, &a, &b, &c)) count++;
    return count;
}

static const char *const grow_seeds[7] = {"apple", "avocado", "banana", "cherry", "lemon", "orange", "peach"};
static const char *const grow_locations[6] = {"kitchen", "bathroom", "living room", "bedroom", "workshop", "greenhouse"};

/* TaskChangeOfState: 15 substances (water twice: the second with the kitchen sink disabled) x
 * {stove, stove disabled}. */
static const char *const state_substances[15] = {"water", "water", "ice", "orange juice", "apple juice", "chocolate",
    "marshmallow", "ice cream", "soap", "rubber", "lead", "tin", "mercury", "gallium", "caesium"};

int m2_sw_state_task_mode(const char *name) {
    if (!strcmp(name, "boil")) return 0;
    if (!strcmp(name, "melt")) return 1;
    if (!strcmp(name, "freeze")) return 2;
    if (!strcmp(name, "change-the-state-of-matter-of")) return 3;
    return -1;
}

/* TaskUseInstrumentThermometer: objects (per location x temperature preset: salt, metal fork, wood,
 * wire, 20 x unknown substance B; sorted by name, stably) x 5 thresholds x 15 answer-box pairs =
 * 27,000 combinations, subsampled 2% inside each of train/dev/test with scala Random(5). */
static const int thermo_presets[5] = {-50, 0, 50, 100, 200};
static const char *const thermo_locations[3] = {"living room", "bedroom", "bathroom"};
static const char *const thermo_colours[6] = {"red", "green", "blue", "orange", "yellow", "purple"};

#define SW_SUBSAMPLE_MAX 13500

/* TaskUseInstrumentThermometer2: 7 known substances x 5 presets (sorted by name) x 5 thresholds x 5
 * answer-box pairs = 875, subsampled 50% inside train/dev/test with scala Random(5) -> 436. */
static const int melt_presets[5] = {-10, 10, 50, 150, 200};
static const char *const melt_substances[7] = {"chocolate", "gallium", "lead", "mercury", "orange juice", "tin", "water"};
static const float melt_points[7] = {30.0f, 30.0f, 327.0f, -39.0f, 0.0f, 232.0f, 0.0f};

/* TaskUseInstrumentThermometer3.subsampleWithinTrainDevTest: folds [0, n/2), [n/2, 3n/4), [3n/4, n),
 * each shuffled (one scala Random(5) for all three) and cut to its first fold*proportion entries.
 * Returns the combination index of subsampled variation v (recomputed per call: no cached state). */
static int subsample(int n_total, double proportion, int v) {
    int lo[3] = {0, (int)floor(n_total * 0.5), (int)floor(n_total * 0.75)}, hi[3] = {lo[1], lo[2], n_total};
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, 5);
    int buf[SW_SUBSAMPLE_MAX];
    for (int f = 0; f < 3; f++) {
        int n = hi[f] - lo[f];
        if (n > SW_SUBSAMPLE_MAX) return 0;
        int take = (int)(n * proportion);
        for (int i = 0; i < n; i++) buf[i] = lo[f] + i;
        m2_sw_jrand_shuffle(&r, buf, n);
        if (v < take) return buf[v];
        v -= take;
    }
    return 0;
}

static int melt_combo(int v) { return subsample(875, 0.5, v); }

/* UnknownSubstanceThermal.precomputedMeltPoints */
static double unknown_melt_point(char letter) {
    static const double pts[26] = {25, 75, 115, -30, -10, 275, 30, 225, 75, -75, 520, 325, -25, 175, 25, 75, 425, 30, 15, -2,
                                   625, -220, 575, -175, 675, 775};
    return (letter >= 'A' && letter <= 'Z') ? pts[letter - 'A'] : 0.0;
}

static int thermo_combo(int v) { return subsample(27000, 0.02, v); }

/* The j-th object (in name-sorted order): name, location, own temperature preset. */
static void thermo_object(int j, const char **name, const char **loc, int *preset) {
    /* unsorted order: loc (3) x preset (5) x [salt, fork, wood, wire, B x 20]; sorted by name: metal fork (15),
     * sodium chloride (15), unknown substance B (300), wire (15), wood (15), each group in unsorted order */
    static const char *const names[5] = {"metal fork", "sodium chloride", "unknown substance B", "wire", "wood"};
    static const int sizes[5] = {15, 15, 300, 15, 15};
    int g = 0;
    while (g < 4 && j >= sizes[g]) { j -= sizes[g]; g++; }
    int lp = g == 2 ? j / 20 : j;   /* (loc, preset) slot */
    *name = names[g];
    *loc = thermo_locations[lp / 5];
    *preset = thermo_presets[lp % 5];
}

/* Lifespan combinations (long x medium x short, 125) shuffled with scala Random(0). */
static int lifespan_combo(int v) {
    int order[125];
    for (int i = 0; i < 125; i++) order[i] = i;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, 0);
    m2_sw_jrand_shuffle(&r, order, 125);
    return order[v];
}

void m2_sw_variation_params(int task, int v, m2_sw_params *p) {
    memset(p, 0, sizeof *p);
    const char *name = m2_sw_tasks[task].name;
    if (!strcmp(name, "inclined-plane-determine-angle")) {
        /* TaskInclinedPlane3: plane1 x plane2 x block, pairs within 5 degrees (i.e. the same plane) dropped;
         * the kept combinations alternate shallowest (even) / steepest (odd) */
        int c = v / 3, i = c / 7, j = c % 7;
        if (j >= i) j++;
        p->plane[0] = i; p->plane[1] = j; p->block = v % 3;
        p->steep = v % 2;
        snprintf(p->location, sizeof p->location, "workshop");
        snprintf(p->object, sizeof p->object, "%s", plane_blocks[p->block]);
        for (int k = 0; k < 2; k++) snprintf(p->plane_name[k], sizeof p->plane_name[k], "inclined plane %s", plane_letters[p->plane[k]]);
        int a = p->plane[0], b = p->plane[1];
        int steeper = plane_angles[a] > plane_angles[b] ? a : b, shallower = steeper == a ? b : a;
        snprintf(p->answer, sizeof p->answer, "%s", plane_letters[p->steep ? steeper : shallower]);
        return;
    }
    if (!strncmp(name, "inclined-plane-friction", 23)) {
        int named = strstr(name, "unnamed") == NULL;
        const double *fr = named ? named_frictions : unnamed_frictions;
        const char *const *nm = named ? named_surfaces : unnamed_surfaces;
        if (friction_combo(fr, named ? 23 : 8, named ? 3 : 4, v, &p->plane[0], &p->plane[1], &p->block)) return;
        p->steep = v % 2 == 0;   /* "most" on even kept combinations, "least" on odd ones */
        snprintf(p->location, sizeof p->location, "workshop");
        snprintf(p->object, sizeof p->object, "%s", plane_blocks[p->block]);
        int a = p->plane[0], b = p->plane[1];
        int most = fr[a] > fr[b] ? a : b, least = most == a ? b : a;
        snprintf(p->answer, sizeof p->answer, "%s", nm[p->steep ? most : least]);
        return;
    }
    if (!strncmp(name, "find-", 5)) {
        int lt = v / 30, ab = v % 30;
        snprintf(p->location, sizeof p->location, "%s", find_locations[ab / 6]);
        snprintf(p->answer_box, sizeof p->answer_box, "%s box", find_colours[ab % 6]);
        snprintf(p->colour, sizeof p->colour, "%s", find_colours[ab % 6]);
        p->seed_group = lt;
    } else if (!strcmp(name, "use-thermometer")) {
        int c = thermo_combo(v);
        int j = c / 75, i = (c / 15) % 5, k = c % 15;
        const char *obj, *loc;
        int preset;
        thermo_object(j, &obj, &loc, &preset);
        snprintf(p->object, sizeof p->object, "%s", obj);
        snprintf(p->location, sizeof p->location, "%s", loc);
        p->threshold = thermo_presets[i];
        snprintf(p->box_above, sizeof p->box_above, "%s box", thermo_colours[k % 5]);
        snprintf(p->box_below, sizeof p->box_below, "%s box", thermo_colours[k % 5 + 1]);
        snprintf(p->box_location, sizeof p->box_location, "%s", thermo_locations[k / 5]);
        /* mkRandTemp: preset +/- (50..149), floored; drawn per object (seeded by its index) */
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, j);
        int delta = m2_sw_jrand_next_int(&r, 100) + 50;
        if (m2_sw_jrand_next_bool(&r)) delta = -delta;
        p->object_temp = preset + delta;
    } else if (!strcmp(name, "identify-life-stages-1")) {
        /* 14 animals, each with 5 distractors (Random(i) shuffle of the 14); order shuffled with Random(1) */
        int order[14];
        for (int i = 0; i < 14; i++) order[i] = i;
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, 1);
        m2_sw_jrand_shuffle(&r, order, 14);
        p->distractor_seed = order[v];
        snprintf(p->part, sizeof p->part, "%s", find_animals[order[v]]);
        snprintf(p->location, sizeof p->location, "outside");
    } else if (!strcmp(name, "identify-life-stages-2")) {
        /* TaskIdentifyLifeStages2: 10 fruit trees outside, one distractor animal (Random(k) shuffle of the 14) */
        static const char *const trees[10] = {"apple", "apricot", "avocado", "banana", "cherry", "grapefruit", "lemon",
                                              "orange", "peach", "pear"};
        static const int distractor[10] = {0, 6, 1, 2, 3, 6, 4, 5, 6, 6};
        snprintf(p->part, sizeof p->part, "%s", trees[v]);
        p->distractor_seed = distractor[v];
        p->n_stages = 4;   /* seed, seedling, adult, reproducing (not dead) */
        snprintf(p->location, sizeof p->location, "outside");
    } else if (!strcmp(name, "chemistry-mix")) {
        /* train: 8 recipes x {kitchen, workshop}; dev: 4 x 2; test: 4 x 2 (location-major inside each block) */
        static const char *const rec[16][4] = {
            {"salt water", "sodium chloride", "water", NULL}, {"soapy water", "soap", "water", NULL},
            {"mixed nuts", "peanut", "almond", "cachew"}, {"sodium acetate", "acetic acid", "sodium bicarbonate", NULL},
            {"banana sandwich", "banana", "bread", NULL}, {"blue paper", "paper", "blue paint", NULL},
            {"peanut butter sandwich", "peanut", "bread", NULL}, {"peanut butter with jam sandwich", "peanut", "jam", "bread"},
            {"smores", "chocolate", "marshmallow", NULL}, {"dough", "flour", "water", NULL},
            {"fruit salad", "apple", "orange", "banana"}, {"jam sandwich", "jam", "bread", NULL},
            {"sugar water", "sugar", "water", NULL}, {"peanut butter with banana sandwich", "peanut", "banana", "bread"},
            {"rust", "iron block", "water", NULL}, {"red paper", "paper", "red paint", NULL}};
        int block = v < 16 ? 0 : v < 24 ? 1 : 2;
        int base = block == 0 ? 0 : block == 1 ? 16 : 24, per = block == 0 ? 8 : 4;
        int loc = (v - base) / per, r = (block == 0 ? 0 : block == 1 ? 8 : 12) + (v - base) % per;
        snprintf(p->result, sizeof p->result, "%s", rec[r][0]);
        p->n_inputs = 0;
        for (int k = 1; k < 4 && rec[r][k]; k++) snprintf(p->inputs[p->n_inputs++], M2_SW_NAME, "%s", rec[r][k]);
        snprintf(p->location, sizeof p->location, "%s", loc ? "workshop" : "kitchen");
    } else if (!strncmp(name, "chemistry-mix-paint", 19)) {
        static const char *const tab[6][6] = {
            {"green paint", "green-blue paint", "blue paint", "yellow paint", "green paint", "blue paint"},
            {"green paint", "yellow-green paint", "blue paint", "yellow paint", "green paint", "yellow paint"},
            {"orange paint", "red-orange paint", "red paint", "yellow paint", "orange paint", "red paint"},
            {"orange paint", "yellow-orange paint", "red paint", "yellow paint", "orange paint", "yellow paint"},
            {"violet paint", "violet-red paint", "red paint", "blue paint", "violet paint", "red paint"},
            {"violet paint", "blue-violet paint", "red paint", "blue paint", "violet paint", "blue paint"}};
        int i = v / 6, j = v % 6;
        snprintf(p->secondary, sizeof p->secondary, "%s", tab[i][0]);
        snprintf(p->tertiary, sizeof p->tertiary, "%s", tab[i][1]);
        for (int k = 0; k < 2; k++) {
            snprintf(p->in_sec[k], sizeof p->in_sec[k], "%s", tab[i][2 + k]);
            snprintf(p->in_ter[k], sizeof p->in_ter[k], "%s", tab[i][4 + k]);
        }
        snprintf(p->location, sizeof p->location, "%s", j / 3 ? "workshop" : "art studio");
        p->sub = j % 3;
    } else if (!strcmp(name, "test-conductivity-of-unknown-substances")) {
        /* 24 letters (B..Z without I) x 5 parts x 5 answer-box pairs; conductive or not drawn per letter */
        static const char letters[] = "BCDEFGHJKLMNOPQRSTUVWXYZ";
        static const char *const parts[5] = {"red light bulb", "green light bulb", "blue light bulb", "electric motor", "electric buzzer"};
        int m = v / 25, j = (v / 5) % 5, k = v % 5;
        snprintf(p->object, sizeof p->object, "unknown substance %c", letters[m]);
        snprintf(p->location, sizeof p->location, "workshop");
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, m);   /* the original draws Random.nextFloat() once per letter at task construction (unseeded) */
        p->conductive = m2_sw_jrand_next_int(&r, 1 << 24) >= (1 << 23);
        snprintf(p->part, sizeof p->part, "%s", parts[j]);
        snprintf(p->box_conductive, sizeof p->box_conductive, "%s box", thermo_colours[k]);
        snprintf(p->box_nonconductive, sizeof p->box_nonconductive, "%s box", thermo_colours[k + 1]);
        snprintf(p->source, sizeof p->source, "battery");
    } else if (!strcmp(name, "test-conductivity")) {
        /* 12 substances x 3 locations (sorted by name, stably) x 5 parts x 5 answer-box pairs */
        static const char *const subs[12] = {"aluminum foil", "apricot", "book (The Foundations of the Origin of Species)",
            "glass jar", "metal fork", "metal pot", "paper clip", "plastic fork", "shovel", "sodium chloride", "water", "wood block"};
        static const int cond[12] = {1, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0};
        static const char *const locs[3] = {"workshop", "kitchen", "living room"};
        static const char *const parts[5] = {"red light bulb", "green light bulb", "blue light bulb", "electric motor", "electric buzzer"};
        int n = v / 25, j = (v / 5) % 5, k = v % 5;
        snprintf(p->object, sizeof p->object, "%s", subs[n / 3]);
        snprintf(p->location, sizeof p->location, "%s", locs[n % 3]);
        p->conductive = cond[n / 3];
        snprintf(p->part, sizeof p->part, "%s", parts[j]);
        snprintf(p->box_conductive, sizeof p->box_conductive, "%s box", thermo_colours[k]);
        snprintf(p->box_nonconductive, sizeof p->box_nonconductive, "%s box", thermo_colours[k + 1]);
        snprintf(p->source, sizeof p->source, "battery");
    } else if (!strncmp(name, "power-component", 15)) {
        static const char *const parts[5] = {"red light bulb", "green light bulb", "blue light bulb", "electric motor", "electric buzzer"};
        static const char *const renew[2] = {"solar panel", "wind generator"}, *const nonrenew[2] = {"gas generator", "nuclear generator"};
        snprintf(p->part, sizeof p->part, "%s", parts[v / 4]);
        snprintf(p->long_animal, sizeof p->long_animal, "%s", renew[(v / 2) % 2]);      /* renewable source present */
        snprintf(p->short_animal, sizeof p->short_animal, "%s", nonrenew[v % 2]);       /* nonrenewable source present */
        p->renewable = v % 2 == 0;
        if (!strcmp(name, "power-component")) snprintf(p->source, sizeof p->source, "battery");
        else snprintf(p->source, sizeof p->source, "%s", p->renewable ? p->long_animal : p->short_animal);
    } else if (!strcmp(name, "measure-melting-point-unknown-substance")) {
        /* 24 letters x 25 (two nested preset loops) sorted by the state-prefixed name, x 5 thresholds x 5 box
         * pairs = 15,000, subsampled 2% inside train/dev/test with Random(5) -> 300 */
        static const char sorted_letters[] = "DEJMTVXBCFGHKLNOPQRSUWYZ";   /* liquids at 10 C first, then solids */
        int c = subsample(15000, 0.02, v);
        int j = c / 25, i = (c / 5) % 5, k = c % 5;
        char letter = sorted_letters[j / 25];
        p->melting_point = unknown_melt_point(letter);
        snprintf(p->object, sizeof p->object, "%s unknown substance %c", p->melting_point > 10.0 ? "solid" : "liquid", letter);
        snprintf(p->location, sizeof p->location, "kitchen");
        p->threshold = melt_presets[i];
        snprintf(p->box_above, sizeof p->box_above, "%s box", thermo_colours[k]);
        snprintf(p->box_below, sizeof p->box_below, "%s box", thermo_colours[k + 1]);
        snprintf(p->box_location, sizeof p->box_location, "kitchen");
        p->sub = -1;
    } else if (!strcmp(name, "measure-melting-point-known-substance")) {
        int c = melt_combo(v);
        int j = c / 25, i = (c / 5) % 5, k = c % 5;
        int sub = j / 5;
        snprintf(p->object, sizeof p->object, "%s", melt_substances[sub]);
        snprintf(p->location, sizeof p->location, "kitchen");
        p->melting_point = melt_points[sub];
        p->threshold = melt_presets[i];
        snprintf(p->box_above, sizeof p->box_above, "%s box", thermo_colours[k]);
        snprintf(p->box_below, sizeof p->box_below, "%s box", thermo_colours[k + 1]);
        snprintf(p->box_location, sizeof p->box_location, "kitchen");
        p->sub = sub;
    } else if (m2_sw_state_task_mode(name) >= 0) {
        p->sub = v / 2;
        p->stove_broken = v % 2;
        p->mode = m2_sw_state_task_mode(name);
        snprintf(p->substance, sizeof p->substance, "%s", state_substances[p->sub]);
    } else if (!strncmp(name, "grow-", 5)) {
        /* TaskGrowPlant: 7 seed types (sorted) x 6 seed-jar rooms x 3 flower-pot cases */
        snprintf(p->object, sizeof p->object, "%s", grow_seeds[v / 18]);
        snprintf(p->location, sizeof p->location, "%s", grow_locations[(v / 3) % 6]);
        p->mode = v % 3;
    } else if (!strncmp(name, "mendelian-genetics-", 19)) {
        /* TaskMendelianGenetics1: 8 genetics (the pea trait list has seed shape twice) x 5 pot sets x 3 box pairs;
         * TaskMendelianGenetics2: 4 unknown plants (E, B, C, D) x their 4 traits x 2 -> 32 genetics */
        static const int pea_slots[4] = {0, 1, 2, 1};
        static const char *const colours[4] = {"red", "green", "blue", "orange"};
        int g = v / 15, set = (v / 3) % 5, box = v % 3;
        int known = !strcmp(name, "mendelian-genetics-known-plant");
        p->family = known ? 0 : 1 + g / 8;               /* m2_sw_species_tab index */
        p->mode = known ? pea_slots[g / 2] : (g / 2) % 4;   /* trait slot */
        p->steep = g % 2 == 0;
        snprintf(p->object, sizeof p->object, "%s", m2_sw_species_tab[p->family].lifeform);
        snprintf(p->location, sizeof p->location, "greenhouse");
        snprintf(p->box_above, sizeof p->box_above, "%s box", colours[box]);
        snprintf(p->box_below, sizeof p->box_below, "%s box", colours[box + 1]);
        /* 6 of "flower pot 1".."flower pot 9" (the original shuffles with the unseeded global Random) */
        int nums[9];
        for (int i = 0; i < 9; i++) nums[i] = i + 1;
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, 1000 + set);
        m2_sw_jrand_shuffle(&r, nums, 9);
        for (int i = 0; i < 6; i++) p->pots[i] = nums[i];
    } else if (!strncmp(name, "lifespan-", 9)) {
        int c = lifespan_combo(v);
        snprintf(p->long_animal, sizeof p->long_animal, "%s", life_long[c / 25]);
        snprintf(p->medium_animal, sizeof p->medium_animal, "%s", life_medium[(c / 5) % 5]);
        snprintf(p->short_animal, sizeof p->short_animal, "%s", life_short[c % 5]);
        snprintf(p->location, sizeof p->location, "outside");
    }
}

/* ---------------- world setup ---------------- */

static void setup_find(m2_sw_world *w, const m2_sw_params *p) {
    int lt = p->seed_group;
    int outside = m2_sw_room(w, "outside"), greenhouse = m2_sw_room(w, "greenhouse");
    /* 3 animals outside: Random(variation group) shuffle of the 14 */
    int a[14];
    for (int i = 0; i < 14; i++) a[i] = i;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, lt);
    m2_sw_jrand_shuffle(&r, a, 14);
    for (int i = 0; i < 3; i++) m2_sw_add_animal(w, find_animals[a[i]], outside);
    /* 3 adult plants in flower pots + 2 empty pots in the greenhouse */
    int pots[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    m2_sw_jrand rp;
    m2_sw_jrand_seed(&rp, 1000 + lt);   /* the original draws these from the unseeded global RNG */
    m2_sw_jrand_shuffle(&rp, pots, 9);
    int pl[8];
    for (int i = 0; i < 8; i++) pl[i] = i;
    m2_sw_jrand rs;
    m2_sw_jrand_seed(&rs, lt);
    m2_sw_jrand_shuffle(&rs, pl, 8);
    char nm[M2_SW_NAME];
    for (int i = 0; i < 5; i++) {
        snprintf(nm, sizeof nm, "flower pot %d", pots[i]);
        m2_sw_add_plant_in_pot(w, i < 3 ? find_plants[pl[i]] : NULL, nm, greenhouse);
    }
    m2_sw_add_answer_box(w, p->colour, m2_sw_room(w, p->location));
}

static void setup_lifespan(m2_sw_world *w, const m2_sw_params *p) {
    int outside = m2_sw_room(w, "outside");
    m2_sw_add_animal(w, p->long_animal, outside);
    m2_sw_add_animal(w, p->medium_animal, outside);
    m2_sw_add_animal(w, p->short_animal, outside);
}

/* ---------------- goals ---------------- */

static m2_sw_goal *add_goal(m2_sw_goalseq *gs, int ordered, int type, const char *str, int optional) {
    int *n = ordered ? &gs->n_ordered : &gs->n_unordered;
    if (*n >= M2_SW_MAX_GOALS) { memset(&gs->scratch, 0, sizeof gs->scratch); return &gs->scratch; }
    m2_sw_goal *g = ordered ? &gs->ordered[(*n)++] : &gs->unordered[(*n)++];
    memset(g, 0, sizeof *g);
    g->type = type;
    if (str) snprintf(g->str, sizeof g->str, "%s", str);
    g->optional = optional;
    return g;
}

static void goals_find(m2_sw_goalseq *gs, int mode, const m2_sw_params *p) {
    static const int focus_goal[4] = {M2_SW_G_FOCUS_LIVING, M2_SW_G_FOCUS_NONLIVING, M2_SW_G_FOCUS_PLANT, M2_SW_G_FOCUS_ANIMAL};
    add_goal(gs, 1, focus_goal[mode], NULL, 0);
    add_goal(gs, 1, M2_SW_G_OBJ_IN_CONTAINER, p->answer_box, 0);
    add_goal(gs, 0, M2_SW_G_OBJ_IN_CONTAINER, "inventory", 0);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_OPEN_DOOR, NULL, 1);
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
}

static void goals_lifespan(m2_sw_goalseq *gs, int mode, const m2_sw_params *p) {
    if (mode == 0 || mode == 2) {
        m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->long_animal, 0);
        g->fail_if_wrong = 1;
        g->defocus = mode == 2;
    }
    if (mode == 1 || mode == 2) {
        m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->short_animal, 0);
        g->fail_if_wrong = 1;
    }
    m2_sw_goal *g = add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->location);   /* unlessInLocation */
    add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
}

/* ContainerMaker.mkRandomLiquidCup: a random cup holding the substance, at its temperature. */
static int random_liquid_cup(m2_sw_world *w, m2_sw_jrand *r, int parent) {
    static const char *const names[7] = {"metal pot", "glass cup", "plastic cup", "tin cup", "paper cup", "ceramic cup", "jug"};
    static const char *const mats[7] = {"steel", "glass", "plastic", "tin", "paper", "ceramic", "plastic"};
    int k = m2_sw_jrand_next_int(r, 7);
    int c = m2_sw_new(w, M2_SW_K_CUP, names[k], parent);
    if (c != M2_SW_NONE) m2_sw_set_material(w, c, mats[k]);
    return c;
}

/* TaskObject placement into one of the named containers of a room (shuffled, seeded). */
static int pick_container(m2_sw_world *w, m2_sw_jrand *r, int room, const char *const *names, int nn) {
    int ids[M2_SW_MAX_OBJ], k = 0;
    for (int i = 0; i < w->n; i++) if (!(w->o[i].flags & M2_SW_F_DELETED) && m2_sw_is_inside(w, i, room)) ids[k++] = i;
    m2_sw_jrand_shuffle(r, ids, k);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < nn; j++) if (!strcmp(w->o[ids[i]].name, names[j])) return ids[i];
    return room;
}

static int add_named_substance(m2_sw_world *w, int kind, const char *name, const char *mat, int parent) {
    int id = m2_sw_new(w, kind, name, parent);
    if (id != M2_SW_NONE) m2_sw_set_material(w, id, mat);
    return id;
}

static void setup_change_state(m2_sw_world *w, int v, m2_sw_params *p) {
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, v);
    int kitchen = m2_sw_room(w, "kitchen"), workshop = m2_sw_room(w, "workshop");
    int fridge = m2_sw_find_named(w, kitchen, "fridge"), freezer = m2_sw_find_named(w, kitchen, "freezer");
    static const char *const kitchen_places[3] = {"cupboard", "table", "desk"};
    static const char *const workshop_places[2] = {"table", "desk"};
    const char *s = p->substance;
    if (p->sub == 1) w->o[m2_sw_find_named(w, kitchen, "sink")].flags |= M2_SW_F_BROKEN;
    if (p->stove_broken) w->o[m2_sw_find_named(w, kitchen, "stove")].flags |= M2_SW_F_BROKEN;
    if (!strcmp(s, "ice")) {
        int ice = add_named_substance(w, M2_SW_K_SUBSTANCE, "water", "water", freezer);
        if (ice != M2_SW_NONE) w->o[ice].temp = -10.0f;
    } else if (!strcmp(s, "apple juice") || !strcmp(s, "ice cream")) {
        int cup = random_liquid_cup(w, &r, !strcmp(s, "ice cream") ? freezer : fridge);
        int x = add_named_substance(w, M2_SW_K_FOOD, s, s, cup);
        if (cup != M2_SW_NONE && x != M2_SW_NONE) w->o[cup].temp = w->o[x].temp;
    } else if (!strcmp(s, "chocolate")) {
        add_named_substance(w, M2_SW_K_FOOD, s, s, fridge);
    } else if (!strcmp(s, "marshmallow")) {
        add_named_substance(w, M2_SW_K_FOOD, s, s, pick_container(w, &r, kitchen, kitchen_places, 3));
    } else if (!strcmp(s, "soap")) {
        add_named_substance(w, M2_SW_K_SUBSTANCE, s, s, pick_container(w, &r, kitchen, kitchen_places, 3));
    } else if (!strcmp(s, "rubber")) {
        add_named_substance(w, M2_SW_K_SUBSTANCE, s, s, pick_container(w, &r, workshop, workshop_places, 2));
    } else if (p->sub >= 10) {
        int cup = random_liquid_cup(w, &r, pick_container(w, &r, workshop, workshop_places, 2));
        int x = add_named_substance(w, M2_SW_K_SUBSTANCE, s, s, cup);
        if (cup != M2_SW_NONE && x != M2_SW_NONE) w->o[cup].temp = w->o[x].temp;
    }
    /* settle the initial states (ice is created as cold water) */
    for (int i = 0; i < w->n; i++) m2_sw_update_name_for_state(w, i);
    p->pot = m2_sw_find_named(w, m2_sw_find_named(w, kitchen, "cupboard"), "metal pot");
    p->thermometer = m2_sw_find_named(w, kitchen, "thermometer");
}

static void goals_change_state(m2_sw_goalseq *gs, const m2_sw_params *p) {
    const char *s = p->substance;
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, s, 0);
    g->fail_if_wrong = 1;
    if (p->mode == 3) {
        add_goal(gs, 1, M2_SW_G_IS_STATE, NULL, 0);
        add_goal(gs, 1, M2_SW_G_IS_DIFFERENT_STATE, NULL, 0);
    } else {
        static const int first[3] = {M2_SW_ST_LIQUID, M2_SW_ST_SOLID, M2_SW_ST_LIQUID}, second[3] = {M2_SW_ST_GAS, M2_SW_ST_LIQUID, M2_SW_ST_SOLID};
        add_goal(gs, 1, M2_SW_G_CHANGE_STATE, NULL, 0)->state = first[p->mode];
        g = add_goal(gs, 1, M2_SW_G_CHANGE_STATE, NULL, 0);
        g->state = second[p->mode];
        g->combustion_ok = p->mode == 0;
    }
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, s, 1);
    add_goal(gs, 0, M2_SW_G_OBJS_IN_SINGLE_CONTAINER, s, 1);
    if (p->mode != 2) {
        static const char *const heaters[4] = {"stove", "blast furnace", "oven", "hot plate"};
        for (int i = 0; i < 4; i++) add_goal(gs, 0, M2_SW_G_ACTIVATE_DEVICE_NAMED, heaters[i], 1);
        g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
        snprintf(g->str2, sizeof g->str2, "lighter");
        g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "fire pit", 1);
        snprintf(g->str2, sizeof g->str2, "wood");
        snprintf(g->key, sizeof g->key, "wood1");
        g = add_goal(gs, 0, M2_SW_G_TEMP_ON_FIRE, "wood", 1);
        snprintf(g->key, sizeof g->key, "ignite");
        snprintf(g->prereq, sizeof g->prereq, "wood1");
        static const char *const places[5] = {"stove", "blast furnace", "oven", "hot plate", "fire pit"};
        for (int i = 0; i < 5; i++) add_goal(gs, 0, M2_SW_G_OBJ_IN_CONTAINER, places[i], 1);
    }
    if (p->mode >= 2) {
        add_goal(gs, 0, M2_SW_G_OBJ_IN_CONTAINER, "fridge", 1);
        add_goal(gs, 0, M2_SW_G_OBJ_IN_CONTAINER, "freezer", 1);
    }
    if (p->mode != 2) add_goal(gs, 0, M2_SW_G_TEMP_INCREASE, NULL, 1)->value = p->mode == 3 ? 10.0f : 20.0f;
    if (p->mode >= 2) add_goal(gs, 0, M2_SW_G_TEMP_DECREASE, NULL, 1)->value = p->mode == 3 ? 10.0f : 5.0f;
}

static void setup_thermometer(m2_sw_world *w, m2_sw_params *p) {
    int room = m2_sw_room(w, p->location), x;
    if (!strcmp(p->object, "sodium chloride") || !strcmp(p->object, "wood")) x = add_named_substance(w, M2_SW_K_SUBSTANCE, p->object, p->object, room);
    else if (!strcmp(p->object, "wire")) {
        x = m2_sw_add_component(w, M2_SW_K_WIRE, p->object, room);
        if (x != M2_SW_NONE) m2_sw_set_material(w, x, "metal");
    }
    else if (!strcmp(p->object, "metal fork")) x = add_named_substance(w, M2_SW_K_THING, p->object, "steel", room);
    else x = add_named_substance(w, M2_SW_K_THING, p->object, "metal", room);
    if (x != M2_SW_NONE) w->o[x].temp = (float)p->object_temp;
    p->object_id = x;
    int box_room = m2_sw_room(w, p->box_location);
    char colour[16];
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_above) - 4), p->box_above);
    m2_sw_add_answer_box(w, colour, box_room);
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_below) - 4), p->box_below);
    m2_sw_add_answer_box(w, colour, box_room);
    p->thermometer = m2_sw_find_named(w, m2_sw_room(w, "kitchen"), "thermometer");
}

static void goals_thermometer(m2_sw_goalseq *gs, const m2_sw_params *p) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, "thermometer", 0);
    g->fail_if_wrong = 1;
    g->defocus = 1;
    g = add_goal(gs, 1, M2_SW_G_FIND, p->object, 0);
    g->fail_if_wrong = 1;
    g = add_goal(gs, 1, M2_SW_G_CONTAINER_BY_TEMP, p->box_above, 0);
    snprintf(g->str2, sizeof g->str2, "%s", p->box_below);
    g->value = (float)p->threshold;
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "thermometer", 1);
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "thermometer");
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    g = add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
    snprintf(g->key, sizeof g->key, "move1");
    g = add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->box_location, 1);
    snprintf(g->key, sizeof g->key, "move2");
    snprintf(g->prereq, sizeof g->prereq, "move1");
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    g = add_goal(gs, 0, M2_SW_G_PAST_USE, "thermometer", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    g = add_goal(gs, 0, M2_SW_G_PAST_USE, "thermometer", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    snprintf(g->prereq, sizeof g->prereq, "move2");
}

static void setup_melting(m2_sw_world *w, int v, m2_sw_params *p) {
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, v);
    int kitchen = m2_sw_room(w, "kitchen");
    const char *s = p->object;
    p->object_id = M2_SW_NONE;
    if (!strcmp(s, "chocolate")) {
        p->object_id = add_named_substance(w, M2_SW_K_FOOD, s, s, m2_sw_find_named(w, kitchen, "fridge"));
    } else if (!strcmp(s, "orange juice")) {
        p->object_id = m2_sw_find_named(w, kitchen, "orange juice");
    } else if (strstr(s, "unknown substance")) {
        /* melting point below 15 C: in a random cup (mkRandomSubstanceInContainer) */
        int parent = kitchen, cup = M2_SW_NONE;
        if (p->melting_point < 15.0) parent = cup = random_liquid_cup(w, &r, kitchen);
        int x = m2_sw_new(w, M2_SW_K_THING, s, parent);
        if (x != M2_SW_NONE) {
            m2_sw_set_material(w, x, "metal");
            w->o[x].flags |= M2_SW_F_UNKNOWN;
            w->o[x].melt_ov = (float)p->melting_point;
            snprintf(w->o[x].alt, sizeof w->o[x].alt, "%s", strstr(s, "unknown substance"));
            w->o[x].state = 255;   /* force the state-prefixed name on the first settle */
            if (cup != M2_SW_NONE) w->o[cup].temp = w->o[x].temp;
        }
        p->object_id = x;
    } else if (strcmp(s, "water")) {
        int cup = random_liquid_cup(w, &r, kitchen);
        p->object_id = add_named_substance(w, M2_SW_K_SUBSTANCE, s, s, cup);
        if (cup != M2_SW_NONE && p->object_id != M2_SW_NONE) w->o[cup].temp = w->o[p->object_id].temp;
    }
    for (int i = 0; i < w->n; i++) m2_sw_update_name_for_state(w, i);
    char colour[16];
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_above) - 4), p->box_above);
    m2_sw_add_answer_box(w, colour, kitchen);
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_below) - 4), p->box_below);
    m2_sw_add_answer_box(w, colour, kitchen);
    p->thermometer = m2_sw_find_named(w, kitchen, "thermometer");
    p->pot = m2_sw_find_named(w, m2_sw_find_named(w, kitchen, "cupboard"), "metal pot");
    p->state0 = p->object_id != M2_SW_NONE ? w->o[p->object_id].state : M2_SW_ST_LIQUID;
}

static void goals_melting(m2_sw_goalseq *gs, const m2_sw_params *p) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, "thermometer", 0);
    g->fail_if_wrong = 1;
    g->defocus = 1;
    g = add_goal(gs, 1, M2_SW_G_FIND, p->object, 0);
    g->fail_if_wrong = 1;
    snprintf(g->key, sizeof g->key, "focusObject");
    add_goal(gs, 1, M2_SW_G_FIND_ANSWER_BOX, p->melting_point >= p->threshold ? p->box_above : p->box_below, 0);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "thermometer", 1);
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "thermometer");
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1)->key, 16, "move1");
    snprintf(add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->box_location, 1)->key, 16, "move1");
    static const char *const heat_rooms[3] = {"kitchen", "outside", "foundry"};
    static const char *const heat_keys[3] = {"move2a", "move2b", "move2c"};
    for (int i = 0; i < 3; i++) {
        g = add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, heat_rooms[i], 1);
        snprintf(g->key, sizeof g->key, "%s", heat_keys[i]);
        snprintf(g->prereq, sizeof g->prereq, "move1");
    }
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    g = add_goal(gs, 0, M2_SW_G_PAST_USE, "thermometer", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    g = add_goal(gs, 0, M2_SW_G_PAST_USE, "thermometer", 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->object);
    snprintf(g->prereq, sizeof g->prereq, "heatObject");
    add_goal(gs, 0, M2_SW_G_OBJS_IN_SINGLE_CONTAINER, p->object, 1);
    static const char *const heaters[4] = {"stove", "blast furnace", "oven", "hot plate"};
    for (int i = 0; i < 4; i++) add_goal(gs, 0, M2_SW_G_ACTIVATE_DEVICE_NAMED, heaters[i], 1);
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "lighter");
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "fire pit", 1);
    snprintf(g->str2, sizeof g->str2, "wood");
    snprintf(g->key, sizeof g->key, "wood1");
    g = add_goal(gs, 0, M2_SW_G_TEMP_ON_FIRE, "wood", 1);
    snprintf(g->key, sizeof g->key, "ignite");
    snprintf(g->prereq, sizeof g->prereq, "wood1");
    static const char *const places[5] = {"stove", "blast furnace", "oven", "hot plate", "fire pit"};
    for (int i = 0; i < 5; i++) snprintf(add_goal(gs, 0, M2_SW_G_OBJ_IN_CONTAINER, places[i], 1)->prereq, 16, "focusObject");
    g = add_goal(gs, 0, M2_SW_G_TEMP_INCREASE, NULL, 1);
    g->value = 20.0f;
    snprintf(g->key, sizeof g->key, "heatObject");
    snprintf(g->prereq, sizeof g->prereq, "focusObject");
}

static void setup_power(m2_sw_world *w, m2_sw_params *p) {
    int workshop = m2_sw_room(w, "workshop");
    static const char *const parts[5] = {"red light bulb", "green light bulb", "blue light bulb", "electric motor", "electric buzzer"};
    for (int i = 0; i < 5; i++)
        if (m2_sw_find_named(w, workshop, parts[i]) == M2_SW_NONE) m2_sw_add_component(w, M2_SW_K_LIGHTBULB, parts[i], workshop);
    int r = m2_sw_add_component(w, M2_SW_K_BATTERY, p->long_animal, workshop);
    if (r != M2_SW_NONE) w->o[r].extra = M2_SW_GEN_RENEWABLE;
    int f = m2_sw_add_component(w, M2_SW_K_BATTERY, p->short_animal, workshop);
    if (f != M2_SW_NONE) { w->o[f].extra = M2_SW_GEN_FUEL; w->o[f].flags |= M2_SW_F_DEVICE; }
    p->part_id = m2_sw_find_named(w, workshop, p->part);
    p->source_id = m2_sw_find_named(w, workshop, p->source);
    p->wire1 = p->wire2 = M2_SW_NONE;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_WIRE && m2_sw_is_inside(w, i, workshop)) {
            if (p->wire1 == M2_SW_NONE) p->wire1 = i;
            else if (p->wire2 == M2_SW_NONE) p->wire2 = i;
        }
}

static void goals_power(m2_sw_goalseq *gs, const m2_sw_params *p, int renewable_task) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->part, 0);
    g->fail_if_wrong = 1;
    add_goal(gs, 1, M2_SW_G_ACTIVATE_DEVICE, p->part, 0);
    if (renewable_task) add_goal(gs, 1, M2_SW_G_ELEC_CONNECTED, p->source, 0)->fail_if_wrong = 1;
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->part, 1);
    add_goal(gs, 0, M2_SW_G_OBJ_CONNECTED_TO_WIRE, p->part, 1)->state = 0;
    add_goal(gs, 0, M2_SW_G_OBJ_CONNECTED_TO_WIRE, p->part, 1)->state = 1;
    g = add_goal(gs, 0, M2_SW_G_WIRE_CONNECTS_POWER, p->part, 1);
    if (renewable_task) snprintf(g->str2, sizeof g->str2, "%s", p->source);
}

/* A test object of the conductivity tasks, by name. */
static int add_test_object(m2_sw_world *w, const char *name, int room) {
    if (!strcmp(name, "aluminum foil")) return add_named_substance(w, M2_SW_K_THING, name, "aluminum", room);
    if (!strcmp(name, "apricot")) return add_named_substance(w, M2_SW_K_FOOD, name, "plant matter", room);
    if (!strncmp(name, "book (", 6)) return m2_sw_add_book(w, 5, room);
    if (!strcmp(name, "glass jar")) {
        int id = add_named_substance(w, M2_SW_K_CUP, name, "glass", room);
        if (id != M2_SW_NONE) w->o[id].flags |= M2_SW_F_CLOSABLE;
        return id;
    }
    if (!strcmp(name, "metal fork") || !strcmp(name, "paper clip")) return add_named_substance(w, M2_SW_K_THING, name, "steel", room);
    if (!strcmp(name, "metal pot")) return add_named_substance(w, M2_SW_K_CUP, name, "steel", room);
    if (!strcmp(name, "plastic fork")) return add_named_substance(w, M2_SW_K_THING, name, "plastic", room);
    if (!strcmp(name, "shovel")) return add_named_substance(w, M2_SW_K_THING, name, "steel", room);
    if (!strcmp(name, "sodium chloride")) return add_named_substance(w, M2_SW_K_SUBSTANCE, name, name, room);
    if (!strcmp(name, "wood block")) return add_named_substance(w, M2_SW_K_SUBSTANCE, name, "wood", room);
    if (!strncmp(name, "unknown substance", 17)) return add_named_substance(w, M2_SW_K_THING, name, "metal", room);
    return M2_SW_NONE;   /* water: found in the house */
}

static void setup_conductivity(m2_sw_world *w, m2_sw_params *p) {
    int workshop = m2_sw_room(w, "workshop");
    if (m2_sw_find_named(w, workshop, p->part) == M2_SW_NONE) m2_sw_add_component(w, M2_SW_K_LIGHTBULB, p->part, workshop);
    p->object_id = add_test_object(w, p->object, m2_sw_room(w, p->location));
    if (p->object_id != M2_SW_NONE && !strncmp(p->object, "unknown substance", 17)) {
        if (p->conductive) w->o[p->object_id].flags |= M2_SW_F_CONDUCTIVE;
        else w->o[p->object_id].flags &= ~M2_SW_F_CONDUCTIVE;
    }
    char colour[16];
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_conductive) - 4), p->box_conductive);
    m2_sw_add_answer_box(w, colour, workshop);
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_nonconductive) - 4), p->box_nonconductive);
    m2_sw_add_answer_box(w, colour, workshop);
    p->part_id = m2_sw_find_named(w, workshop, p->part);
    p->source_id = m2_sw_find_named(w, workshop, "battery");
    p->wire1 = p->wire2 = p->wire3 = M2_SW_NONE;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_WIRE && m2_sw_is_inside(w, i, workshop)) {
            if (p->wire1 == M2_SW_NONE) p->wire1 = i;
            else if (p->wire2 == M2_SW_NONE) p->wire2 = i;
            else if (p->wire3 == M2_SW_NONE) p->wire3 = i;
        }
    int kitchen = m2_sw_room(w, "kitchen");
    p->pot = m2_sw_find_named(w, m2_sw_find_named(w, kitchen, "table"), "glass cup");   /* a cup to carry water in */
}

static void goals_conductivity(m2_sw_goalseq *gs, const m2_sw_params *p) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->object, 0);
    g->fail_if_wrong = 1;
    g = add_goal(gs, 1, M2_SW_G_OBJ_IN_CONTAINER_BY_NAME, p->conductive ? p->box_conductive : p->box_nonconductive, 0);
    snprintf(g->str2, sizeof g->str2, "%s", p->conductive ? p->box_nonconductive : p->box_conductive);
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->object, 1);
    add_goal(gs, 0, M2_SW_G_OBJ_CONNECTED_TO_WIRE, p->object, 1)->state = 0;
    add_goal(gs, 0, M2_SW_G_OBJ_CONNECTED_TO_WIRE, p->object, 1)->state = 1;
    add_goal(gs, 0, M2_SW_G_WIRE_CONNECTS_POWER, p->object, 1);
    add_goal(gs, 0, M2_SW_G_WIRE_CONNECTS_LIGHT, p->object, 1);
    add_goal(gs, 0, M2_SW_G_WIRE_POWER_AND_LIGHT, NULL, 1);
}

static void setup_paint(m2_sw_world *w, m2_sw_params *p) {
    int room = m2_sw_room(w, p->location);
    static const char *const paints[3] = {"red paint", "blue paint", "yellow paint"};
    static const char *const furn[3] = {"paint cupboard", "paint closet", "desk"};
    static const char *const cups[3] = {"wood cup", "glass cup", "tin cup"}, *const cup_mats[3] = {"wood", "glass", "tin"};
    int f;
    if (p->sub == 2) f = m2_sw_new(w, M2_SW_K_SURFACE, furn[2], room);
    else f = m2_sw_new(w, M2_SW_K_CLOSABLE, furn[p->sub], room);
    if (f != M2_SW_NONE) {
        w->o[f].flags &= ~M2_SW_F_MOVABLE;
        m2_sw_set_material(w, f, "wood");
        if (p->sub != 1) {
            int d = m2_sw_new(w, M2_SW_K_DRAWER, "drawer", f);
            if (d != M2_SW_NONE) { w->o[d].flags &= ~M2_SW_F_MOVABLE; m2_sw_set_material(w, d, "wood"); }
        }
        for (int i = 0; i < 3; i++) {
            int c = m2_sw_new(w, M2_SW_K_CUP, cups[p->sub], f);
            if (c != M2_SW_NONE) { m2_sw_set_material(w, c, cup_mats[p->sub]); m2_sw_add_paint(w, paints[i], c); }
        }
    }
    p->furniture = f;
    if (!strcmp(p->location, "workshop")) {
        /* the mixing containers are shuffled once when the task table is built (unseeded there) */
        static const char *const names[3] = {"glass cup", "bowl", "jug"}, *const mats[3] = {"glass", "wood", "plastic"};
        int order[3] = {0, 1, 2};
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, 0);
        m2_sw_jrand_shuffle(&r, order, 3);
        p->mixer = m2_sw_new(w, M2_SW_K_CUP, names[order[p->sub]], room);
        if (p->mixer != M2_SW_NONE) m2_sw_set_material(w, p->mixer, mats[order[p->sub]]);
    } else {
        int table = m2_sw_find_named(w, room, "table");
        p->mixer = M2_SW_NONE;
        for (int i = 0; i < w->n; i++) if (w->o[i].parent == table && w->o[i].kind == M2_SW_K_CUP) { p->mixer = i; break; }
    }
}

static void goals_paint(m2_sw_goalseq *gs, const m2_sw_params *p, int tertiary) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->secondary, 0);
    g->fail_if_wrong = 1;
    g->defocus = tertiary;
    if (tertiary) add_goal(gs, 1, M2_SW_G_FIND, p->tertiary, 0)->fail_if_wrong = 1;
    g = add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    if (tertiary) {
        snprintf(g->str2, sizeof g->str2, "%s", p->location);
        add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
    }
    for (int k = 0; k < 2; k++) add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->in_sec[k], 1);
    g = add_goal(gs, 0, M2_SW_G_OBJS_IN_SINGLE_CONTAINER, NULL, 1);
    snprintf(g->str, sizeof g->str, "%.23s,%.23s", p->in_sec[0], p->in_sec[1]);
    g = add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->secondary, 1);
    if (!tertiary) return;
    snprintf(g->key, sizeof g->key, "secondary");
    for (int k = 0; k < 2; k++) {
        g = add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->in_ter[k], 1);
        snprintf(g->key, sizeof g->key, "tertiary_%d", k);
        snprintf(g->prereq, sizeof g->prereq, "secondary");
    }
    g = add_goal(gs, 0, M2_SW_G_OBJS_IN_SINGLE_CONTAINER, NULL, 1);
    snprintf(g->str, sizeof g->str, "%.23s,%.23s", p->in_ter[0], p->in_ter[1]);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->tertiary, 1);
}

/* An ingredient object of the chemistry-mix task, by name. */
static int add_ingredient(m2_sw_world *w, const char *name, int room) {
    if (!strcmp(name, "peanut") || !strcmp(name, "almond") || !strcmp(name, "cachew")) return add_named_substance(w, M2_SW_K_FOOD, name, "nut", room);
    if (!strcmp(name, "bread") || !strcmp(name, "flour")) return add_named_substance(w, M2_SW_K_FOOD, name, "flour", room);
    if (!strcmp(name, "jam")) return add_named_substance(w, M2_SW_K_FOOD, name, "jam", room);
    if (!strcmp(name, "chocolate") || !strcmp(name, "marshmallow")) return add_named_substance(w, M2_SW_K_FOOD, name, name, room);
    if (!strcmp(name, "paper")) return add_named_substance(w, M2_SW_K_THING, name, "paper", room);
    if (!strcmp(name, "iron block")) return add_named_substance(w, M2_SW_K_THING, name, "iron", room);
    if (!strcmp(name, "apple") || !strcmp(name, "orange") || !strcmp(name, "banana")) return m2_sw_new(w, M2_SW_K_FOOD, name, room);
    return add_named_substance(w, M2_SW_K_SUBSTANCE, name, name, room);   /* soap, sodium chloride, sugar, acids, ... */
}

static void setup_chemistry(m2_sw_world *w, m2_sw_params *p) {
    int room = m2_sw_room(w, p->location);
    for (int k = 0; k < p->n_inputs; k++) {
        const char *in = p->inputs[k];
        if (!strcmp(in, "water") || strstr(in, " paint")) continue;   /* found in the house */
        if (m2_sw_find_named(w, room, in) != M2_SW_NONE) continue;         /* TaskObject: already there */
        add_ingredient(w, in, room);
    }
    int rec = m2_sw_new(w, M2_SW_K_RECIPE, "recipe", room);
    if (rec != M2_SW_NONE) {
        m2_sw_set_material(w, rec, "paper");
        snprintf(w->o[rec].alt, sizeof w->o[rec].alt, "instructions to make %.24s", p->result);
        size_t o = (size_t)snprintf(w->recipe_text, sizeof w->recipe_text, "To make %s, you need to mix ", p->result);
        for (int k = 0; k < p->n_inputs && o < sizeof w->recipe_text; k++)
            o += (size_t)snprintf(w->recipe_text + o, sizeof w->recipe_text - o, "%s%s", k ? ", " : "", p->inputs[k]);
        if (o < sizeof w->recipe_text) snprintf(w->recipe_text + o, sizeof w->recipe_text - o, ".");
    }
    int kitchen = m2_sw_room(w, "kitchen");
    p->pot = m2_sw_find_named(w, m2_sw_find_named(w, kitchen, "cupboard"), "metal pot");
}

static void goals_chemistry(m2_sw_goalseq *gs, const m2_sw_params *p) {
    add_goal(gs, 1, M2_SW_G_FIND, p->result, 0)->fail_if_wrong = 1;
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    for (int k = 0; k < p->n_inputs; k++) add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->inputs[k], 1);
    m2_sw_goal *g = add_goal(gs, 0, M2_SW_G_OBJS_IN_SINGLE_CONTAINER, NULL, 1);
    size_t o = 0;
    for (int k = 0; k < p->n_inputs && o < sizeof g->str; k++)
        o += (size_t)snprintf(g->str + o, sizeof g->str - o, "%s%s", k ? "," : "", p->inputs[k]);
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->result, 1);
    add_goal(gs, 0, M2_SW_G_PAST_READ, "recipe", 1);
}

static void setup_life_stages(m2_sw_world *w, m2_sw_params *p) {
    int outside = m2_sw_room(w, p->location);
    p->part_id = m2_sw_add_animal(w, p->part, outside);
    p->family = p->part_id != M2_SW_NONE ? w->o[p->part_id].extra : M2_SW_FAM_NONE;
    p->n_stages = m2_sw_life_stage_count(p->family) - 1;   /* the last stage (dead) is not asked for */
    int a[14];
    for (int i = 0; i < 14; i++) a[i] = i;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, p->distractor_seed);
    m2_sw_jrand_shuffle(&r, a, 14);
    for (int i = 0; i < 5; i++)
        if (m2_sw_find_named(w, outside, find_animals[a[i]]) == M2_SW_NONE) m2_sw_add_animal(w, find_animals[a[i]], outside);
}

/* TaskIdentifyLifeStages2: the tree at each of its 5 life stages, each in a self-watering flower pot with
 * soil (pot numbers: a shuffle of 1..9, drawn here with Random(v) where the original's is unseeded), and
 * every life stage of one distractor animal. */
static void setup_life_stages2(m2_sw_world *w, int v, m2_sw_params *p) {
    int outside = m2_sw_room(w, p->location);
    int nums[9];
    for (int i = 0; i < 9; i++) nums[i] = i + 1;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, v);
    m2_sw_jrand_shuffle(&r, nums, 9);
    for (int st = M2_SW_PLANT_SEED; st <= M2_SW_PLANT_DEAD; st++) {
        char nm[M2_SW_NAME];
        snprintf(nm, sizeof nm, "self watering flower pot %d", nums[st]);
        int pot = m2_sw_add_plant_in_pot(w, NULL, nm, outside);
        if (pot == M2_SW_NONE) continue;
        w->o[pot].extra = 1;   /* self-watering */
        int soil = m2_sw_new(w, M2_SW_K_THING, "soil", pot);
        if (soil != M2_SW_NONE) m2_sw_set_material(w, soil, "soil");
        m2_sw_add_plant(w, p->part, st, pot);
    }
    int a[14];
    for (int i = 0; i < 14; i++) a[i] = i;
    m2_sw_jrand_seed(&r, p->distractor_seed);
    m2_sw_jrand_shuffle(&r, a, 14);
    int first = m2_sw_add_animal(w, find_animals[a[0]], outside);
    int fam = first != M2_SW_NONE ? w->o[first].extra : M2_SW_FAM_NONE;
    for (int i = 1; i < m2_sw_life_stage_count(fam); i++) {
        int x = m2_sw_add_animal(w, find_animals[a[0]], outside);
        if (x != M2_SW_NONE) w->o[x].stage = (int16_t)i;
    }
}

static void goals_life_stages(m2_sw_goalseq *gs, const m2_sw_params *p) {
    static const char *const plant_stages[4] = {"seed", "seedling", "adult", "reproducing"};
    for (int i = 0; i < p->n_stages; i++) {
        m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND_LIFE_STAGE, p->part, 0);
        snprintf(g->str2, sizeof g->str2, "%s", p->family == M2_SW_FAM_NONE ? plant_stages[i] : m2_sw_life_family_stage(p->family, i));
        g->fail_if_wrong = 1;
        g->defocus = 1;
    }
    m2_sw_goal *g = add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->location);
    add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
    for (int k = 1; k <= 3; k++) add_goal(gs, 0, M2_SW_G_STAY_IN_LOCATION, p->location, 1)->value = 10.0f * k;
}

/* TaskGrowPlant: a seed jar (a ceramic cup named "seed jar" holding 5 seeds) in the seed room; three
 * flower pots in the greenhouse, with soil (case 0), next to 3 piles of soil (case 1) or bare (case 2). */
static void setup_grow(m2_sw_world *w, m2_sw_params *p) {
    int jar = m2_sw_new(w, M2_SW_K_CUP, "seed jar", m2_sw_room(w, p->location));
    if (jar != M2_SW_NONE) {
        m2_sw_set_material(w, jar, "ceramic");
        for (int i = 0; i < 5; i++) m2_sw_add_plant(w, p->object, M2_SW_PLANT_SEED, jar);
    }
    int greenhouse = m2_sw_room(w, "greenhouse");
    for (int i = 0; i < 3; i++) {
        char nm[M2_SW_NAME];
        snprintf(nm, sizeof nm, "flower pot %d", i + 1);
        int pot = m2_sw_add_plant_in_pot(w, NULL, nm, greenhouse);
        if (pot == M2_SW_NONE) continue;
        if (p->mode != 2) {
            int soil = m2_sw_new(w, M2_SW_K_THING, "soil", p->mode == 0 ? pot : greenhouse);
            if (soil != M2_SW_NONE) m2_sw_set_material(w, soil, "soil");
        }
    }
}

static void goals_grow(m2_sw_goalseq *gs, const m2_sw_params *p, int fruit) {
    static const char *const stages[4] = {"seed", "seedling", "adult", "reproducing"};
    if (!fruit)
        for (int i = 0; i < 4; i++)
            snprintf(add_goal(gs, 1, M2_SW_G_LIFE_STAGE, p->object, 0)->str2, M2_SW_NAME, "%s", stages[i]);
    else
        add_goal(gs, 1, M2_SW_G_FIND, p->object, 0)->fail_if_wrong = 1;   /* focus on the grown fruit */
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "seed jar", 1);
    m2_sw_goal *g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "seed jar");
    snprintf(g->key, sizeof g->key, "haveSeedJar");
    snprintf(add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1)->str2, M2_SW_NAME, "shovel");
    snprintf(add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1)->str2, M2_SW_NAME, "soil");
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "soil", 1);
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, "greenhouse", 1)->key, 16, "move1");
    g = add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, "greenhouse", 1);
    snprintf(g->key, sizeof g->key, "move2");
    snprintf(g->prereq, sizeof g->prereq, "haveSeedJar");
    static const char *const what[3] = {"soil", "water", NULL};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++) {
            char pot[M2_SW_NAME];
            snprintf(pot, sizeof pot, "flower pot %d", i + 1);
            g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, pot, 1);
            if (what[k]) snprintf(g->str2, sizeof g->str2, "%s", what[k]);
            else snprintf(g->str2, sizeof g->str2, "%.24s seed", p->object);
        }
    if (!fruit) return;
    for (int n = 1; n <= 2; n++)
        for (int i = 0; i < 4; i++) {
            g = add_goal(gs, 0, M2_SW_G_LIFE_STAGE_ANYWHERE, p->object, 1);
            snprintf(g->str2, sizeof g->str2, "%s", stages[i]);
            g->value = (float)n;
            if (i == 3) snprintf(g->key, sizeof g->key, "atLeast%dRepro", n);
        }
    add_goal(gs, 0, M2_SW_G_CONTAINER_OPEN, "bee hive", 1);
    snprintf(add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "adult bee", 1)->prereq, 16, "atLeast2Repro");
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->object, 1);
}

/* TaskMendelianGenetics1/2: a seed jar with a seed homozygous dominant and one homozygous recessive for
 * the trait (the other traits random, GeneticTraitPeas.mkRandomChromosomePairExcept), 6 flower pots with
 * soil and the two answer boxes, all in the greenhouse. */
static void setup_mendel(m2_sw_world *w, int v, m2_sw_params *p) {
    int greenhouse = m2_sw_room(w, "greenhouse");
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, 7700 + v);
    int jar = m2_sw_new(w, M2_SW_K_CUP, "seed jar", greenhouse);
    if (jar != M2_SW_NONE) {
        m2_sw_set_material(w, jar, "ceramic");
        for (int k = 0; k < 2; k++) {
            int seed = m2_sw_add_plant(w, p->object, M2_SW_PLANT_SEED, jar);
            if (seed == M2_SW_NONE) continue;
            uint8_t g = 0;
            for (int t = 0; t < M2_SW_NUM_TRAITS; t++)
                for (int a = 0; a < 2; a++) {
                    int dom = t == p->mode ? k == 0 : m2_sw_jrand_next_int(&r, 2) == 0;
                    g |= (uint8_t)(dom << (2 * t + a));
                }
            w->o[seed].has_genes = 1;
            w->o[seed].genes = g;
        }
    }
    for (int i = 0; i < 6; i++) {
        char nm[M2_SW_NAME];
        snprintf(nm, sizeof nm, "flower pot %d", p->pots[i]);
        int pot = m2_sw_add_plant_in_pot(w, NULL, nm, greenhouse);
        if (pot == M2_SW_NONE) continue;
        int soil = m2_sw_new(w, M2_SW_K_THING, "soil", pot);
        if (soil != M2_SW_NONE) m2_sw_set_material(w, soil, "soil");
    }
    char colour[M2_SW_NAME];
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_above) - 4), p->box_above);
    m2_sw_add_answer_box(w, colour, greenhouse);
    snprintf(colour, sizeof colour, "%.*s", (int)(strlen(p->box_below) - 4), p->box_below);
    m2_sw_add_answer_box(w, colour, greenhouse);
}

static void goals_mendel(m2_sw_goalseq *gs, const m2_sw_params *p) {
    static const char *const stages[4] = {"seed", "seedling", "adult", "reproducing"};
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND, p->steep ? p->box_above : p->box_below, 0);
    g->fail_if_wrong = 1;
    add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "seed jar", 1);
    g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, "inventory", 1);
    snprintf(g->str2, sizeof g->str2, "seed jar");
    snprintf(g->key, sizeof g->key, "haveSeedJar");
    add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, "greenhouse", 1)->key, 16, "move1");
    g = add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, "greenhouse", 1);
    snprintf(g->key, sizeof g->key, "move2");
    snprintf(g->prereq, sizeof g->prereq, "haveSeedJar");
    char seedname[M2_SW_NAME];
    snprintf(seedname, sizeof seedname, "%.24s seed", p->object);
    const char *const what[3] = {"soil", "water", seedname};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 6; i++) {
            char pot[M2_SW_NAME];
            snprintf(pot, sizeof pot, "flower pot %d", p->pots[i]);
            snprintf(add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, pot, 1)->str2, M2_SW_NAME, "%s", what[k]);
        }
    for (int n = 1; n <= 6; n++)
        for (int i = 0; i < 4; i++) {
            g = add_goal(gs, 0, M2_SW_G_LIFE_STAGE_ANYWHERE, p->object, 1);
            snprintf(g->str2, sizeof g->str2, "%s", stages[i]);
            g->value = (float)n;
            if (i == 3) snprintf(g->key, sizeof g->key, "atLeast%dRepro", n);
        }
    snprintf(add_goal(gs, 0, M2_SW_G_CONTAINER_OPEN, "bee hive", 1)->prereq, 16, "atLeast2Repro");
    snprintf(add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, "adult bee", 1)->prereq, 16, "atLeast2Repro");
    snprintf(add_goal(gs, 0, M2_SW_G_IN_ROOM_WITH_OBJECT, p->object, 1)->prereq, 16, "atLeast2Repro");
}

/* Inclined planes: the two planes, the block and a stopwatch on the workshop floor. */
static void setup_planes(m2_sw_world *w, m2_sw_params *p, const float *angles, const char *const *letters, const char *const *surfaces,
                         const float *frictions) {
    int room = m2_sw_room(w, p->location);
    for (int k = 0; k < 2; k++) {
        int id = m2_sw_new(w, M2_SW_K_PLANE, "inclined plane", room);
        if (id == M2_SW_NONE) continue;
        int x = p->plane[k];
        if (angles) w->o[id].angle = angles[x];
        if (letters) snprintf(w->o[id].alt, sizeof w->o[id].alt, "%s", letters[x]);
        if (surfaces) snprintf(w->o[id].alt2, sizeof w->o[id].alt2, "%s", surfaces[x]);
        if (frictions) w->o[id].friction = frictions[x];
        p->plane_id[k] = id;
        m2_sw_descript_name(w, id, p->plane_name[k], sizeof p->plane_name[k]);
    }
    p->block_id = m2_sw_new(w, M2_SW_K_THING, p->object, room);
    p->watch_id = m2_sw_new(w, M2_SW_K_STOPWATCH, "stopwatch", room);
}

static void goals_planes(m2_sw_goalseq *gs, const m2_sw_params *p, int by_surface) {
    m2_sw_goal *g = add_goal(gs, 1, M2_SW_G_FIND_PLANE, p->answer, 0);
    g->state = by_surface;
    g->fail_if_wrong = 1;
    g->defocus = 1;
    g = add_goal(gs, 0, M2_SW_G_MOVE_NEW_LOCATION, NULL, 1);
    snprintf(g->str2, sizeof g->str2, "%s", p->location);
    add_goal(gs, 0, M2_SW_G_MOVE_TO_LOCATION, p->location, 1);
    for (int k = 0; k < 2; k++) {
        static const char *const keys[2][4] = {{"b1", "aTime1", "dTime1", "readTime1"}, {"b2", "aTime2", "dTime2", "readTime2"}};
        g = add_goal(gs, 0, M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER, p->plane_name[k], 0);
        snprintf(g->str2, sizeof g->str2, "%s", p->object);
        snprintf(g->key, sizeof g->key, "%s", keys[k][0]);
        static const int types[3] = {M2_SW_G_ACTIVATE_DEVICE_NAMED, M2_SW_G_DEACTIVATE_DEVICE_NAMED, M2_SW_G_PAST_EXAMINE};
        for (int t = 0; t < 3; t++) {
            g = add_goal(gs, 0, types[t], "stopwatch", 0);
            snprintf(g->key, sizeof g->key, "%s", keys[k][t + 1]);
            snprintf(g->prereq, sizeof g->prereq, "%s", keys[k][t]);
        }
    }
}

int m2_sw_task_setup(int task, int v, m2_sw_world *w, char *desc, size_t cap, m2_sw_params *p) {
    m2_sw_variation_params(task, v, p);
    const char *name = m2_sw_tasks[task].name;
    m2_sw_goalseq *gs = &w->gs;
    memset(gs, 0, sizeof *gs);
    gs->last_obj = M2_SW_NONE;
    gs->stored_state = -1;
    m2_sw_jrand_seed(&w->rng, 0x5eed0000LL + v);   /* bees (the original draws from the unseeded global Random) */
    if (!strcmp(name, "inclined-plane-determine-angle")) {
        setup_planes(w, p, plane_angles, plane_letters, NULL, NULL);
        goals_planes(gs, p, 0);
        /* the two names in a random order (the original shuffles with the unseeded global Random) */
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, 9100 + v);
        int a = p->plane[0], b = p->plane[1];
        const char *st = plane_letters[plane_angles[a] > plane_angles[b] ? a : b];
        const char *sh = plane_letters[plane_angles[a] > plane_angles[b] ? b : a];
        int swap = m2_sw_jrand_next_bool(&r);
        const char *mode = p->steep ? "steepest" : "shallowest";
        snprintf(desc, cap, "Your task is to determine which of the two inclined planes (%s, %s) has the %s angle. After "
                 "completing your experiment, focus on the inclined plane with the %s angle.", swap ? sh : st, swap ? st : sh, mode, mode);
        return 0;
    }
    if (!strncmp(name, "inclined-plane-friction", 23)) {
        int named = strstr(name, "unnamed") == NULL;
        const double *fr = named ? named_frictions : unnamed_frictions;
        const char *const *nm = named ? named_surfaces : unnamed_surfaces;
        setup_planes(w, p, NULL, NULL, nm, named ? named_frictions_f : unnamed_frictions_f);
        goals_planes(gs, p, 1);
        m2_sw_jrand r;
        m2_sw_jrand_seed(&r, (named ? 9200 : 9300) + v);
        int a = p->plane[0], b = p->plane[1];
        const char *most = nm[fr[a] > fr[b] ? a : b], *least = nm[fr[a] > fr[b] ? b : a];
        int swap = m2_sw_jrand_next_bool(&r);
        const char *mode = p->steep ? "most" : "least";
        snprintf(desc, cap, "Your task is to determine which of the two inclined planes (%s, %s) has the %s friction. After "
                 "completing your experiment, focus on the inclined plane with the %s friction.", swap ? least : most,
                 swap ? most : least, mode, mode);
        return 0;
    }
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
    if (!strncmp(name, "mendelian-genetics-", 19)) {
        setup_mendel(w, v, p);
        goals_mendel(gs, p);
        const m2_sw_species *sp = &m2_sw_species_tab[p->family];
        snprintf(desc, cap, "Your task is to determine whether %s %s is a dominant or recessive trait in the %s plant. "
                 "If the trait is dominant, focus on the %s. If the trait is recessive, focus on the %s.",
                 p->steep ? sp->dom[p->mode] : sp->rec[p->mode], m2_sw_trait_kind_names[sp->kind[p->mode]], p->object,
                 p->box_above, p->box_below);
        return 0;
    }
    if (!strcmp(name, "grow-fruit")) {
        setup_grow(w, p);
        goals_grow(gs, p, 1);
        snprintf(desc, cap, "Your task is to grow a %s. This will require growing several plants, and them being "
                 "crosspollinated to produce fruit.  Seeds can be found in the %s. To complete the task, focus on the grown %s.",
                 p->object, p->location, p->object);
        return 0;
    }
    if (!strcmp(name, "grow-plant")) {
        setup_grow(w, p);
        goals_grow(gs, p, 0);
        snprintf(desc, cap, "Your task is to grow a %s plant from seed. Seeds can be found in the %s. First, focus on a seed. "
                 "Then, make changes to the environment that grow the plant until it reaches the reproduction life stage.",
                 p->object, p->location);
        return 0;
    }
    if (!strcmp(name, "identify-life-stages-2")) {
        setup_life_stages2(w, v, p);
        goals_life_stages(gs, p);
        snprintf(desc, cap, "Your task is to focus on the life stages of the %s plant, starting from earliest to latest. "
                 "The plants are located %s.", p->part, p->location);
        return 0;
    }
    if (!strcmp(name, "identify-life-stages-1")) {
        setup_life_stages(w, p);
        goals_life_stages(gs, p);
        snprintf(desc, cap, "Your task is to focus on the %d life stages of the %s, starting from earliest to latest.", p->n_stages, p->part);
        return 0;
    }
    if (!strcmp(name, "chemistry-mix")) {
        setup_chemistry(w, p);
        goals_chemistry(gs, p);
        snprintf(desc, cap, "Your task is to use chemistry to create the substance '%s'. A recipe and some of the ingredients "
                 "might be found near the %s. When you are done, focus on the %s.", p->result, p->location, p->result);
        return 0;
    }
    if (!strncmp(name, "chemistry-mix-paint", 19)) {
        int tertiary = strstr(name, "tertiary") != NULL;
        setup_paint(w, p);
        goals_paint(gs, p, tertiary);
        if (!tertiary)
            snprintf(desc, cap, "Your task is to use chemistry to create %s. When you are done, focus on the %s.", p->secondary, p->secondary);
        else
            snprintf(desc, cap, "Your task is to use chemistry to create %s. When you are part-way done, focus on the intermediate "
                     "(secondary color) paint you created.  When you are completely done, focus on the %s.", p->tertiary, p->secondary);
        return 0;
    }
    if (!strcmp(name, "test-conductivity") || !strcmp(name, "test-conductivity-of-unknown-substances")) {
        setup_conductivity(w, p);
        goals_conductivity(gs, p);
        const char *o = p->object;
        snprintf(desc, cap, "Your task is to determine if %s is electrically conductive. The %s is located around the %s. "
                 "First, focus on the %s. If it is electrically conductive, place it in the %s. If it is electrically "
                 "nonconductive, place it in the %s.", o, o, p->location, o, p->box_conductive, p->box_nonconductive);
        return 0;
    }
    if (!strncmp(name, "power-component", 15)) {
        int renewable_task = strcmp(name, "power-component") != 0;
        setup_power(w, p);
        goals_power(gs, p, renewable_task);
        if (!renewable_task)
            snprintf(desc, cap, "Your task is to turn on the %s. First, focus on the %s. Then, create an electrical circuit that powers it on.",
                     p->part, p->part);
        else
            snprintf(desc, cap, "Your task is to turn on the %s by powering it using a %s power source. First, focus on the %s. "
                     "Then, create an electrical circuit that powers it on.", p->part, p->renewable ? "renewable" : "nonrenewable", p->part);
        return 0;
    }
    if (!strncmp(name, "measure-melting-point-", 22)) {
        setup_melting(w, v, p);
        goals_melting(gs, p);
        const char *o = p->object;
        snprintf(desc, cap, "Your task is to measure the melting point of %s, which is located around the %s. First, focus on "
                 "the thermometer. Next, focus on the %s. If the melting point of %s is above %.1f degrees, focus on the %s. "
                 "If the melting point of %s is below %.1f degrees, focus on the %s. The boxes are located around the %s.",
                 o, p->location, o, o, p->threshold, p->box_above, o, p->threshold, p->box_below, p->box_location);
        return 0;
    }
    if (!strcmp(name, "use-thermometer")) {
        setup_thermometer(w, p);
        goals_thermometer(gs, p);
        const char *o = p->object;
        snprintf(desc, cap, "Your task is to measure the temperature of %s, which is located around the %s. First, focus on the "
                 "thermometer. Next, focus on the %s. If the %s temperature is above %.1f degrees celsius, place it in the %s. "
                 "If the %s temperature is below %.1f degrees celsius, place it in the %s. The boxes are located around the %s.",
                 o, p->location, o, o, p->threshold, p->box_above, o, p->threshold, p->box_below, p->box_location);
        return 0;
    }
    if (m2_sw_state_task_mode(name) >= 0) {
        static const char *const sub[4] = {"boil", "melt", "freeze", "change the state of matter of"};
        setup_change_state(w, v, p);
        goals_change_state(gs, p);
        snprintf(desc, cap, "Your task is to %s %s. %sFirst, focus on the substance. Then, take actions that will cause it to change its state of matter.",
                 sub[p->mode], p->substance,
                 p->mode == 0 ? "For compounds without a boiling point, combusting the substance is also acceptable. " : "");
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

static int eval_goal(m2_sw_world *w, m2_sw_goal *g, int obj) {
    m2_sw_goalseq *gs = &w->gs;
    int room = w->o[w->agent].parent;
    switch (g->type) {
    case M2_SW_G_FOCUS_LIVING: case M2_SW_G_FOCUS_PLANT: case M2_SW_G_FOCUS_ANIMAL: {
        if (obj == M2_SW_NONE) return R_NO;
        int ok = g->type == M2_SW_G_FOCUS_LIVING ? m2_sw_is_living(w, obj) : g->type == M2_SW_G_FOCUS_PLANT ? m2_sw_is_plant(w, obj)
                                                                                              : m2_sw_is_animal(w, obj);
        return ok ? R_OK : R_FAIL;
    }
    case M2_SW_G_FOCUS_NONLIVING:
        if (obj == M2_SW_NONE) return R_NO;
        if (m2_sw_is_living(w, obj)) return R_FAIL;
        return (w->o[obj].flags & M2_SW_F_MOVABLE) ? R_OK : R_NO;
    case M2_SW_G_OBJ_IN_CONTAINER: {
        if (obj == M2_SW_NONE) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        int c = w->o[obj].parent;
        for (int steps = 0; c != M2_SW_NONE && steps < 20; steps++) {
            if (name_ieq(w->o[c].name, g->str)) return R_OK;
            c = w->o[c].parent;
        }
        return R_NO;
    }
    case M2_SW_G_IN_ROOM_OPEN_DOOR:
        for (int i = 0; i < w->n; i++)
            if (w->o[i].kind == M2_SW_K_DOOR && (w->o[i].flags & M2_SW_F_OPEN) && m2_sw_door_other(w, i, room) != M2_SW_NONE) return R_OK;
        return R_NO;
    case M2_SW_G_MOVE_NEW_LOCATION:
        if (g->str2[0] && !strcmp(w->o[room].name, g->str2)) return R_OK;
        if (!g->start_loc[0]) { memcpy(g->start_loc, w->o[room].name, sizeof g->start_loc); return R_NO; }
        return strcmp(w->o[room].name, g->start_loc) ? R_OK : R_NO;
    case M2_SW_G_MOVE_TO_LOCATION:
        return !strcmp(w->o[room].name, g->str) ? R_OK : R_NO;
    case M2_SW_G_FIND:
        if (obj == M2_SW_NONE) return R_NO;
        if (name_ieq(w->o[obj].name, g->str)) return R_OK;
        return g->fail_if_wrong ? R_FAIL : R_NO;
    case M2_SW_G_CHANGE_STATE: case M2_SW_G_IS_STATE: case M2_SW_G_IS_DIFFERENT_STATE: {
        if (obj == M2_SW_NONE || w->o[obj].mat < 0) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        int st = w->o[obj].state;
        if (g->type == M2_SW_G_IS_STATE) { gs->stored_state = st; return R_OK; }
        if (g->type == M2_SW_G_IS_DIFFERENT_STATE) return (gs->stored_state >= 0 && st != gs->stored_state) ? R_OK : R_NO;
        if (st == g->state) return R_OK;
        if (g->combustion_ok && w->o[obj].combusting) return R_OK;
        return R_NO;
    }
    case M2_SW_G_TEMP_INCREASE: case M2_SW_G_TEMP_DECREASE: {
        if (obj == M2_SW_NONE || w->o[obj].mat < 0) return R_NO;
        float t = w->o[obj].temp;
        if (!g->has_init) { g->has_init = 1; g->init = t; }
        if (g->type == M2_SW_G_TEMP_INCREASE) return t >= g->init + g->value ? R_OK : R_NO;
        return t <= g->init - g->value ? R_OK : R_NO;
    }
    case M2_SW_G_FIND_PLANE:
        if (obj == M2_SW_NONE) return R_NO;
        if (w->o[obj].kind == M2_SW_K_PLANE && !strcmp(g->state ? w->o[obj].alt2 : w->o[obj].alt, g->str)) return R_OK;
        return g->fail_if_wrong ? R_FAIL : R_NO;
    case M2_SW_G_PAST_EXAMINE:
        /* only "look at" actions after the goal's preconditions held (GoalPastActionExamineObject.activatedAtStep) */
        if (!g->has_init) { g->has_init = 1; g->init = (float)w->look_serial; return R_NO; }
        if ((float)w->look_serial > g->init && (name_ieq(w->look_name, g->str) || name_ieq(w->look_dname, g->str))) return R_OK;
        return R_NO;
    case M2_SW_G_IN_ROOM_WITH_OBJECT: case M2_SW_G_OBJS_IN_SINGLE_CONTAINER: case M2_SW_G_ACTIVATE_DEVICE_NAMED: case M2_SW_G_DEACTIVATE_DEVICE_NAMED:
    case M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER: case M2_SW_G_TEMP_ON_FIRE: {
        /* over everything in the agent's location (open or closed containers alike) */
        for (int i = 0; i < w->n; i++) {
            const m2_sw_obj *o = &w->o[i];
            if ((o->flags & (M2_SW_F_DELETED | M2_SW_F_HIDDEN)) || !m2_sw_is_inside(w, i, room)) continue;
            char dn[M2_SW_NAME * 2];
            m2_sw_descript_name(w, i, dn, sizeof dn);
            int named = name_ieq(o->name, g->str) || name_ieq(dn, g->str);
            if (g->type == M2_SW_G_IN_ROOM_WITH_OBJECT && named) return R_OK;
            if (g->type == M2_SW_G_ACTIVATE_DEVICE_NAMED && named && (o->flags & M2_SW_F_DEVICE) && (o->flags & M2_SW_F_ON)) return R_OK;
            if (g->type == M2_SW_G_DEACTIVATE_DEVICE_NAMED && named && (o->flags & M2_SW_F_DEVICE) && !(o->flags & M2_SW_F_ON)) return R_OK;
            if (g->type == M2_SW_G_TEMP_ON_FIRE && named && o->combusting) return R_OK;
            if (g->type == M2_SW_G_OBJS_IN_SINGLE_CONTAINER || (g->type == M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER && named)) {
                /* M2_SW_G_OBJS_IN_SINGLE_CONTAINER: str is a comma-separated list; the contents are exactly as
                 * many, each named in the list */
                int kids[64], k = m2_sw_children(w, i, kids, 64, 0), nk = 0, hit = 0;
                int nwant = 1;
                if (g->type == M2_SW_G_OBJS_IN_SINGLE_CONTAINER) for (const char *c = g->str; *c; c++) nwant += *c == ',';
                for (int j = 0; j < k; j++) {
                    if (w->o[kids[j]].flags & M2_SW_F_HIDDEN) continue;
                    nk++;
                    char cdn[M2_SW_NAME * 2];
                    m2_sw_descript_name(w, kids[j], cdn, sizeof cdn);
                    if (g->type == M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER) {
                        if (!strcmp(w->o[kids[j]].name, g->str2) || !strcmp(cdn, g->str2)) hit++;
                        continue;
                    }
                    const char *c = g->str;
                    while (*c) {
                        const char *e = strchr(c, ',');
                        size_t L = e ? (size_t)(e - c) : strlen(c);
                        if ((strlen(w->o[kids[j]].name) == L && !strncmp(w->o[kids[j]].name, c, L)) ||
                            (strlen(cdn) == L && !strncmp(cdn, c, L))) { hit++; break; }
                        c += L;
                        if (*c == ',') c++;
                    }
                }
                if (g->type == M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER && hit) return R_OK;
                if (g->type == M2_SW_G_OBJS_IN_SINGLE_CONTAINER && nk == nwant && hit == nwant) return R_OK;
            }
        }
        return R_NO;
    }
    case M2_SW_G_CONTAINER_BY_TEMP: {
        if (obj == M2_SW_NONE || w->o[obj].mat < 0) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        int c = w->o[obj].parent;
        if (c == M2_SW_NONE) return R_NO;
        int above = !strcmp(w->o[c].name, g->str), below = !strcmp(w->o[c].name, g->str2);
        if (!above && !below) return R_NO;
        if (above && w->o[obj].temp >= g->value) return R_OK;
        if (below && w->o[obj].temp <= g->value) return R_OK;
        return R_FAIL;
    }
    case M2_SW_G_ACTIVATE_DEVICE:
        if (obj == M2_SW_NONE) return R_NO;
        return (!strcmp(w->o[obj].name, g->str) && (w->o[obj].flags & M2_SW_F_ON)) ? R_OK : R_NO;
    case M2_SW_G_ELEC_CONNECTED:
        if (obj == M2_SW_NONE) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        if (m2_sw_connected_to_named(w, obj, g->str)) return R_OK;
        return g->fail_if_wrong ? R_FAIL : R_NO;
    case M2_SW_G_OBJ_IN_CONTAINER_BY_NAME: {
        if (obj == M2_SW_NONE) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        int c = w->o[obj].parent;
        for (int steps = 0; c != M2_SW_NONE && steps < 20; steps++, c = w->o[c].parent)
            if (!strcmp(w->o[c].name, g->str2)) return R_FAIL;
        c = w->o[obj].parent;
        for (int steps = 0; c != M2_SW_NONE && steps < 20; steps++, c = w->o[c].parent)
            if (name_ieq(w->o[c].name, g->str)) return R_OK;
        return R_NO;
    }
    case M2_SW_G_WIRE_CONNECTS_LIGHT: case M2_SW_G_WIRE_POWER_AND_LIGHT:
        for (int i = 0; i < w->n; i++) {
            const m2_sw_obj *o = &w->o[i];
            if (o->kind != M2_SW_K_WIRE || (o->flags & (M2_SW_F_DELETED | M2_SW_F_HIDDEN)) || !m2_sw_is_inside(w, i, room)) continue;
            int found_obj = 0, found_power = 0, found_light = 0;
            for (int k = 0; k < 2; k++) {
                int t = m2_sw_terminal_of(w, i, k);
                if (t == M2_SW_NONE || w->o[t].conn == M2_SW_NONE) continue;
                int po = w->o[w->o[t].conn].parent;
                if (po == M2_SW_NONE) continue;
                if (g->type == M2_SW_G_WIRE_CONNECTS_LIGHT && name_ieq(w->o[po].name, g->str)) found_obj = 1;
                if (w->o[po].kind == M2_SW_K_BATTERY) found_power = 1;
                if (w->o[po].kind == M2_SW_K_LIGHTBULB && strstr(w->o[po].name, "light bulb")) found_light = 1;
            }
            if (g->type == M2_SW_G_WIRE_CONNECTS_LIGHT && found_obj && found_light) return R_OK;
            if (g->type == M2_SW_G_WIRE_POWER_AND_LIGHT && found_power && found_light) return R_OK;
        }
        return R_NO;
    case M2_SW_G_OBJ_CONNECTED_TO_WIRE: case M2_SW_G_WIRE_CONNECTS_POWER:
        for (int i = 0; i < w->n; i++) {
            const m2_sw_obj *o = &w->o[i];
            if ((o->flags & (M2_SW_F_DELETED | M2_SW_F_HIDDEN)) || !m2_sw_is_inside(w, i, room)) continue;
            if (g->type == M2_SW_G_OBJ_CONNECTED_TO_WIRE) {
                if (!name_ieq(o->name, g->str)) continue;
                int t = m2_sw_terminal_of(w, i, g->state);
                if (t == M2_SW_NONE || w->o[t].conn == M2_SW_NONE) continue;
                int po = w->o[w->o[t].conn].parent;
                if (po != M2_SW_NONE && w->o[po].kind == M2_SW_K_WIRE) return R_OK;
            } else {
                if (o->kind != M2_SW_K_WIRE) continue;
                int found_obj = 0, found_power = 0;
                for (int k = 0; k < 2; k++) {
                    int t = m2_sw_terminal_of(w, i, k);
                    if (t == M2_SW_NONE || w->o[t].conn == M2_SW_NONE) continue;
                    int po = w->o[w->o[t].conn].parent;
                    if (po == M2_SW_NONE) continue;
                    if (name_ieq(w->o[po].name, g->str)) found_obj = 1;
                    if (w->o[po].kind == M2_SW_K_BATTERY && (!g->str2[0] || name_ieq(w->o[po].name, g->str2))) found_power = 1;
                }
                if (found_obj && found_power) return R_OK;
            }
        }
        return R_NO;
    case M2_SW_G_FIND_LIFE_STAGE:
        if (obj == M2_SW_NONE) return R_NO;
        if (m2_sw_is_living(w, obj) && !strcmp(w->o[obj].alt, g->str) && !strcmp(m2_sw_life_stage_name(w, obj), g->str2)) return R_OK;
        return g->fail_if_wrong ? R_FAIL : R_NO;
    case M2_SW_G_LIFE_STAGE:
        if (obj == M2_SW_NONE) return R_NO;
        if (gs->last_obj != M2_SW_NONE && gs->last_obj != obj) return R_NO;
        if (!m2_sw_is_living(w, obj) || strcmp(w->o[obj].alt, g->str) || strcmp(m2_sw_life_stage_name(w, obj), g->str2)) return R_NO;
        return R_OK;
    case M2_SW_G_LIFE_STAGE_ANYWHERE: case M2_SW_G_CONTAINER_OPEN: {
        /* over what is visible from the agent's location (through open containers) */
        int n = 0;
        for (int i = 0; i < w->n; i++) {
            const m2_sw_obj *o = &w->o[i];
            if ((o->flags & (M2_SW_F_DELETED | M2_SW_F_HIDDEN)) || !m2_sw_is_inside(w, i, room)) continue;
            int seen = 1;
            for (int c = o->parent; c != room && c != M2_SW_NONE; c = w->o[c].parent)
                if (!(w->o[c].flags & M2_SW_F_OPEN)) seen = 0;
            if (!seen) continue;
            if (g->type == M2_SW_G_CONTAINER_OPEN) {
                if (name_ieq(o->name, g->str) && (o->flags & M2_SW_F_OPEN)) return R_OK;
                continue;
            }
            if (m2_sw_is_living(w, i) && !strcmp(o->alt, g->str) && !strcmp(m2_sw_life_stage_name(w, i), g->str2)) n++;
        }
        return g->type == M2_SW_G_LIFE_STAGE_ANYWHERE && n >= (int)g->value ? R_OK : R_NO;
    }
    case M2_SW_G_STAY_IN_LOCATION:
        if (strcmp(w->o[room].name, g->str)) { g->init = 0; return R_NO; }
        g->init += 1.0f;
        return g->init >= g->value ? R_OK : R_NO;
    case M2_SW_G_FIND_ANSWER_BOX:
        if (obj == M2_SW_NONE || w->o[obj].kind != M2_SW_K_ANSWERBOX) return R_NO;
        return name_ieq(w->o[obj].name, g->str) ? R_OK : R_FAIL;
    case M2_SW_G_PAST_READ:
        for (int i = 0; i < w->n_used; i++)
            if (!strcmp(w->used[i][0], "read") && !strcmp(w->used[i][1], g->str)) return R_OK;
        return R_NO;
    case M2_SW_G_PAST_USE:
        for (int i = 0; i < w->n_used; i++)
            if (!strcmp(w->used[i][0], g->str) && !strcmp(w->used[i][1], g->str2)) return R_OK;
        return R_NO;
    default:
        return R_NO;
    }
}

static int has_key(const m2_sw_goalseq *gs, const char *k) {
    if (!k[0]) return 1;
    for (int i = 0; i < gs->n_keys; i++) if (!strcmp(gs->keys[i], k)) return 1;
    return 0;
}

static void add_key(m2_sw_goalseq *gs, const char *k) {
    if (!k[0] || has_key(gs, k) || gs->n_keys >= 8) return;
    size_t L = strlen(k);
    if (L >= sizeof gs->keys[0]) L = sizeof gs->keys[0] - 1;
    memcpy(gs->keys[gs->n_keys], k, L);
    gs->keys[gs->n_keys++][L] = 0;
}

void m2_sw_goals_tick(m2_sw_world *w) {
    m2_sw_goalseq *gs = &w->gs;
    if (gs->failed) return;
    /* ordered subgoals: advance while the focused object satisfies the current one */
    while (gs->cur < gs->n_ordered) {
        m2_sw_goal *g = &gs->ordered[gs->cur];
        int r = R_NO;
        if (has_key(gs, g->prereq) && w->focus != M2_SW_NONE) r = eval_goal(w, g, w->focus);
        if (r == R_FAIL) { gs->failed = 1; return; }
        if (r != R_OK) break;
        gs->last_obj = w->focus;
        if (g->defocus) w->focus = M2_SW_NONE;
        add_key(gs, g->key);
        gs->cur++;
    }
    /* unordered (optional) subgoals: without a focus object first, then with it */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < gs->n_unordered; i++) {
            if (gs->done_unordered[i]) continue;
            m2_sw_goal *g = &gs->unordered[i];
            if (!has_key(gs, g->prereq)) continue;
            int r = eval_goal(w, g, M2_SW_NONE);
            if (r != R_OK && w->focus != M2_SW_NONE) r = eval_goal(w, g, w->focus);
            if (r == R_OK) { gs->done_unordered[i] = 1; add_key(gs, g->key); changed = 1; }
        }
    }
}

double m2_sw_goals_score(const m2_sw_world *w) {
    const m2_sw_goalseq *gs = &w->gs;
    if (gs->failed) return -1.0;
    if (gs->n_ordered == 0) return 0.0;
    double s = (double)gs->cur / gs->n_ordered;
    if (gs->n_unordered > 0) {
        double unit = (1.0 / (gs->n_ordered + 1.0)) / gs->n_unordered;
        for (int i = 0; i < gs->n_unordered; i++) if (gs->done_unordered[i]) s += unit;
    }
    return s > 1.0 ? 1.0 : s;
}

/* ---------------- goal progress (GoalSequence.getProgressString) ---------------- */

/* The original's goal class each goal type stands for (the progress text's second column). */
static const char *const goal_class[] = {
    [M2_SW_G_FOCUS_LIVING] = "GoalFocusOnLivingThing", [M2_SW_G_FOCUS_NONLIVING] = "GoalFocusOnNonlivingThing",
    [M2_SW_G_FOCUS_PLANT] = "GoalFocusOnPlant", [M2_SW_G_FOCUS_ANIMAL] = "GoalFocusOnAnimal",
    [M2_SW_G_OBJ_IN_CONTAINER] = "GoalObjectInContainer", [M2_SW_G_IN_ROOM_OPEN_DOOR] = "GoalInRoomWithOpenDoor",
    [M2_SW_G_MOVE_NEW_LOCATION] = "GoalMoveToNewLocation", [M2_SW_G_MOVE_TO_LOCATION] = "GoalMoveToLocation",
    [M2_SW_G_FIND] = "GoalFind", [M2_SW_G_CHANGE_STATE] = "GoalChangeStateOfMatter",
    [M2_SW_G_IS_STATE] = "GoalIsStateOfMatter", [M2_SW_G_IS_DIFFERENT_STATE] = "GoalIsDifferentStateOfMatter",
    [M2_SW_G_ACTIVATE_DEVICE_NAMED] = "GoalActivateDeviceWithName", [M2_SW_G_IN_ROOM_WITH_OBJECT] = "GoalInRoomWithObject",
    [M2_SW_G_OBJS_IN_SINGLE_CONTAINER] = "GoalObjectsInSingleContainer",
    [M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER] = "GoalSpecificObjectInDirectContainer",
    [M2_SW_G_TEMP_ON_FIRE] = "GoalTemperatureOnFire", [M2_SW_G_TEMP_INCREASE] = "GoalTemperatureIncrease",
    [M2_SW_G_TEMP_DECREASE] = "GoalTemperatureDecrease", [M2_SW_G_CONTAINER_BY_TEMP] = "GoalContainerByTemperature",
    [M2_SW_G_PAST_USE] = "GoalPastActionUseObjectOnObject", [M2_SW_G_FIND_ANSWER_BOX] = "GoalFindAnswerBox",
    [M2_SW_G_PAST_READ] = "GoalPastActionReadObject", [M2_SW_G_FIND_LIFE_STAGE] = "GoalFindLivingThingStage",
    [M2_SW_G_STAY_IN_LOCATION] = "GoalStayInLocation", [M2_SW_G_ACTIVATE_DEVICE] = "GoalActivateDevice",
    [M2_SW_G_ELEC_CONNECTED] = "GoalElectricallyConnected", [M2_SW_G_OBJ_CONNECTED_TO_WIRE] = "GoalObjectConnectedToWire",
    [M2_SW_G_WIRE_CONNECTS_POWER] = "GoalWireConnectsObjectAndAnyPowerSource",
    [M2_SW_G_WIRE_CONNECTS_LIGHT] = "GoalWireConnectsObjectAndAnyLightBulb",
    [M2_SW_G_WIRE_POWER_AND_LIGHT] = "GoalWireConnectsPowerSourceAndAnyLightBulb",
    [M2_SW_G_OBJ_IN_CONTAINER_BY_NAME] = "GoalObjectInContainerByName", [M2_SW_G_LIFE_STAGE] = "GoalLifeStage",
    [M2_SW_G_LIFE_STAGE_ANYWHERE] = "GoalLifeStageAnywhere", [M2_SW_G_CONTAINER_OPEN] = "GoalContainerOpen",
    [M2_SW_G_DEACTIVATE_DEVICE_NAMED] = "GoalDeactivateDeviceWithName", [M2_SW_G_PAST_EXAMINE] = "GoalPastActionExamineObject",
};

static const char *goal_class_name(const m2_sw_goal *g) {
    if (g->type == M2_SW_G_FIND_PLANE) return g->state ? "GoalFindInclinedPlane" : "GoalFindInclinedPlaneNamed";
    size_t n = sizeof goal_class / sizeof goal_class[0];
    return g->type >= 0 && (size_t)g->type < n && goal_class[g->type] ? goal_class[g->type] : "Goal";
}

/* A goal in words, from what the goal checks (the original words each goal per task; these are
 * multi2's words, the same for every task). */
static void goal_description(const m2_sw_goal *g, m2_strbuf *b) {
    const char *s = g->str, *s2 = g->str2;
    switch (g->type) {
    case M2_SW_G_FOCUS_LIVING: m2_strbuf_puts(b, "focus on a living thing"); break;
    case M2_SW_G_FOCUS_NONLIVING: m2_strbuf_puts(b, "focus on a non-living thing"); break;
    case M2_SW_G_FOCUS_PLANT: m2_strbuf_puts(b, "focus on a plant"); break;
    case M2_SW_G_FOCUS_ANIMAL: m2_strbuf_puts(b, "focus on an animal"); break;
    case M2_SW_G_OBJ_IN_CONTAINER: m2_strbuf_appendf(b, "the focused thing is in the %s", s); break;
    case M2_SW_G_IN_ROOM_OPEN_DOOR: m2_strbuf_puts(b, "be in a room with an open door"); break;
    case M2_SW_G_MOVE_NEW_LOCATION: m2_strbuf_puts(b, "move to a new location"); break;
    case M2_SW_G_MOVE_TO_LOCATION: m2_strbuf_appendf(b, "move to the %s", s); break;
    case M2_SW_G_FIND: m2_strbuf_appendf(b, "focus on the %s", s); break;
    case M2_SW_G_CHANGE_STATE: m2_strbuf_appendf(b, "the focused substance is a %s", m2_sw_state_name(g->state)); break;
    case M2_SW_G_IS_STATE: m2_strbuf_puts(b, "note the focused substance's state of matter"); break;
    case M2_SW_G_IS_DIFFERENT_STATE: m2_strbuf_puts(b, "the focused substance is in a different state of matter"); break;
    case M2_SW_G_ACTIVATE_DEVICE_NAMED: m2_strbuf_appendf(b, "turn on the %s", s); break;
    case M2_SW_G_DEACTIVATE_DEVICE_NAMED: m2_strbuf_appendf(b, "turn off the %s", s); break;
    case M2_SW_G_IN_ROOM_WITH_OBJECT: m2_strbuf_appendf(b, "be in the same location as the %s", s); break;
    case M2_SW_G_OBJS_IN_SINGLE_CONTAINER: m2_strbuf_appendf(b, "have only %s together in one container", s); break;
    case M2_SW_G_SPECIFIC_IN_DIRECT_CONTAINER: m2_strbuf_appendf(b, "the %s is directly in the %s", s2, s); break;
    case M2_SW_G_TEMP_ON_FIRE: m2_strbuf_appendf(b, "the %s is on fire", s); break;
    case M2_SW_G_TEMP_INCREASE: m2_strbuf_appendf(b, "the focused thing warms by %g degrees", (double)g->value); break;
    case M2_SW_G_TEMP_DECREASE: m2_strbuf_appendf(b, "the focused thing cools by %g degrees", (double)g->value); break;
    case M2_SW_G_CONTAINER_BY_TEMP:
        m2_strbuf_appendf(b, "the focused thing is in the %s if above %.1f degrees, else in the %s", s, (double)g->value, s2);
        break;
    case M2_SW_G_PAST_USE: m2_strbuf_appendf(b, "use the %s on the %s", s, s2); break;
    case M2_SW_G_FIND_ANSWER_BOX: m2_strbuf_appendf(b, "focus on the %s", s); break;
    case M2_SW_G_PAST_READ: m2_strbuf_appendf(b, "read the %s", s); break;
    case M2_SW_G_FIND_LIFE_STAGE: m2_strbuf_appendf(b, "focus on the %s in the %s stage", s, s2); break;
    case M2_SW_G_STAY_IN_LOCATION: m2_strbuf_appendf(b, "stay in the %s for %g checks", s, (double)g->value); break;
    case M2_SW_G_ACTIVATE_DEVICE: m2_strbuf_appendf(b, "the focused %s is on", s); break;
    case M2_SW_G_ELEC_CONNECTED: m2_strbuf_appendf(b, "the focused thing is powered by the %s", s); break;
    case M2_SW_G_OBJ_CONNECTED_TO_WIRE: m2_strbuf_appendf(b, "a wire is connected to terminal %d of the %s", g->state + 1, s); break;
    case M2_SW_G_WIRE_CONNECTS_POWER:
        m2_strbuf_appendf(b, "a wire connects the %s and %s%s", s, s2[0] ? "the " : "a power source", s2);
        break;
    case M2_SW_G_WIRE_CONNECTS_LIGHT: m2_strbuf_appendf(b, "a wire connects the %s and a light bulb", s); break;
    case M2_SW_G_WIRE_POWER_AND_LIGHT: m2_strbuf_puts(b, "a wire connects a power source and a light bulb"); break;
    case M2_SW_G_OBJ_IN_CONTAINER_BY_NAME: m2_strbuf_appendf(b, "the focused thing is in the %s, not the %s", s, s2); break;
    case M2_SW_G_LIFE_STAGE: m2_strbuf_appendf(b, "the focused %s is in the %s stage", s, s2); break;
    case M2_SW_G_LIFE_STAGE_ANYWHERE: m2_strbuf_appendf(b, "%g %s in the %s stage in view", (double)g->value, s, s2); break;
    case M2_SW_G_CONTAINER_OPEN: m2_strbuf_appendf(b, "open the %s", s); break;
    case M2_SW_G_PAST_EXAMINE: m2_strbuf_appendf(b, "look at the %s", s); break;
    case M2_SW_G_FIND_PLANE: m2_strbuf_appendf(b, g->state ? "focus on the inclined plane with the %s surface" : "focus on inclined plane %s", s); break;
    default: m2_strbuf_puts(b, "?"); break;
    }
}

static void progress_rows(const m2_sw_goal *goals, int n, const int *passed, int cur, m2_strbuf *b) {
    for (int i = 0; i < n; i++) {
        int done = passed ? passed[i] : i < cur;
        m2_strbuf_appendf(b, "%d\t%s\t%40s\t", i, done ? "true" : "false", goal_class_name(&goals[i]));
        goal_description(&goals[i], b);
        m2_strbuf_puts(b, "\n");
    }
}

void m2_sw_goal_progress(const m2_sw_world *w, m2_strbuf *b) {
    static const char rule[] = "----------------------------------------------------------------------------------------------------\n";
    const m2_sw_goalseq *gs = &w->gs;
    m2_strbuf_puts(b, "Completed keys: ");
    for (int i = 0; i < gs->n_keys; i++) m2_strbuf_appendf(b, "%s%s", i ? ", " : "", gs->keys[i]);
    m2_strbuf_appendf(b, "\n%sSequential Subgoals:\n%s", rule, rule);
    progress_rows(gs->ordered, gs->n_ordered, NULL, gs->cur, b);
    m2_strbuf_appendf(b, "%sUnordered and Optional Subgoals:\n%s", rule, rule);
    progress_rows(gs->unordered, gs->n_unordered, gs->done_unordered, 0, b);
    m2_strbuf_puts(b, rule);
}
