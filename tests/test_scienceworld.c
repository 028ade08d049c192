/* ScienceWorld: oracle scores 100 on every variation of every split of each implemented task,
 * golden observation texts, the ambiguity dialogue, determinism, splits, unknown-task
 * errors, and arbitrary input never crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "core/core.h"
#include "env/env.h"

static m2_env *mk(void) {
    m2_env *e = NULL;
    m2_err err = {0};
    assert_int_equal(m2_env_create("scienceworld", NULL, &e, &err), 0);
    return e;
}

static const char *const implemented[] = {"boil", "melt", "freeze", "change-the-state-of-matter-of", "use-thermometer",
    "measure-melting-point-known-substance", "power-component", "power-component-renewable-vs-nonrenewable-energy",
    "test-conductivity", "test-conductivity-of-unknown-substances", "chemistry-mix-paint-secondary-color",
    "chemistry-mix-paint-tertiary-color", "chemistry-mix", "measure-melting-point-unknown-substance", "identify-life-stages-1", "identify-life-stages-2",
    "find-living-thing", "find-non-living-thing", "find-plant", "find-animal", "grow-plant", "grow-fruit",
    "lifespan-longest-lived", "lifespan-shortest-lived", "lifespan-longest-lived-then-shortest-lived",
    "inclined-plane-determine-angle", "inclined-plane-friction-named-surfaces", "inclined-plane-friction-unnamed-surfaces",
    "mendelian-genetics-known-plant", "mendelian-genetics-unknown-plant"};

/* Release replays every episode. Under ASan (about 4x slower) every 4th episode of each split, and its
 * last, are replayed so `make asan` stays quick; M2_SW_FULL=1 forces the full replay there too. */
#if defined(__SANITIZE_ADDRESS__)
#define SW_REPLAY_STRIDE 4
#else
#define SW_REPLAY_STRIDE 1
#endif

static void oracle_scores_100_everywhere(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    const char *full = getenv("M2_SW_FULL");
    int stride = full && full[0] == '1' ? 1 : SW_REPLAY_STRIDE;
    for (size_t t = 0; t < sizeof implemented / sizeof implemented[0]; t++)
        for (int sp = 0; sp < 3; sp++) {
            int n = e->cls->num_episodes(e, implemented[t], sp, &err);
            assert_true(n > 0);
            for (int i = 0; i < n; i++) {
                if (i % stride && i != n - 1) continue;
                m2_step_result r;
                assert_int_equal(e->cls->reset(e, implemented[t], sp, i, 0, &r, &err), 0);
                char buf[256];
                int k = 0;
                while (k < 50 && !e->cls->oracle_next(e, buf, sizeof buf, &err)) {   /* Multi²'s env_step_limit */
                    e->cls->step(e, buf, &r);
                    assert_int_equal(r.valid, 1);
                    k++;
                    if (r.done) break;
                }
                if (r.score != 100.0f) fail_msg("%s split %d index %d: oracle scored %.0f", implemented[t], sp, i, r.score);
                assert_int_equal(r.won, 1);
            }
        }
    m2_env_destroy(e);
}

static void splits_follow_the_original_rule(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    assert_int_equal(e->cls->num_task_families(e), 30);
    assert_int_equal(e->cls->num_episodes(e, "find-animal", M2_SPLIT_TRAIN, &err), 150);
    assert_int_equal(e->cls->num_episodes(e, "find-animal", M2_SPLIT_ID, &err), 75);
    assert_int_equal(e->cls->num_episodes(e, "find-animal", M2_SPLIT_OOD, &err), 75);
    assert_int_equal(e->cls->num_episodes(e, "lifespan-longest-lived", M2_SPLIT_TRAIN, &err), 62);
    assert_int_equal(e->cls->num_episodes(e, "lifespan-longest-lived", M2_SPLIT_ID, &err), 31);
    assert_int_equal(e->cls->num_episodes(e, "lifespan-longest-lived", M2_SPLIT_OOD, &err), 32);
    /* all implemented tasks concatenated */
    assert_int_equal(e->cls->num_episodes(e, "boil", M2_SPLIT_TRAIN, &err), 14);
    assert_int_equal(e->cls->num_episodes(e, "boil", M2_SPLIT_ID, &err), 7);
    assert_int_equal(e->cls->num_episodes(e, "boil", M2_SPLIT_OOD, &err), 9);
    assert_int_equal(e->cls->num_episodes(e, "use-thermometer", M2_SPLIT_TRAIN, &err), 270);
    assert_int_equal(e->cls->num_episodes(e, "measure-melting-point-known-substance", M2_SPLIT_TRAIN, &err), 218);
    assert_int_equal(e->cls->num_episodes(e, "measure-melting-point-known-substance", M2_SPLIT_OOD, &err), 109);
    assert_int_equal(e->cls->num_episodes(e, "power-component", M2_SPLIT_TRAIN, &err), 10);
    assert_int_equal(e->cls->num_episodes(e, "test-conductivity", M2_SPLIT_OOD, &err), 225);
    assert_int_equal(e->cls->num_episodes(e, "test-conductivity-of-unknown-substances", M2_SPLIT_ID, &err), 150);
    assert_int_equal(e->cls->num_episodes(e, "chemistry-mix-paint-tertiary-color", M2_SPLIT_TRAIN, &err), 18);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_ID, &err),
                     4 * 7 + 135 + 109 + 75 + 2 * 5 + 225 + 150 + 4 * 75 + 2 * 31 + 8 + 2 * 9 + 3 * 31 + 3 + 2 + 42 + 346 + 40 + 30 + 120);
    assert_int_equal(e->cls->num_episodes(e, "mendelian-genetics-known-plant", M2_SPLIT_TRAIN, &err), 60);
    assert_int_equal(e->cls->num_episodes(e, "mendelian-genetics-known-plant", M2_SPLIT_ID, &err), 30);
    assert_int_equal(e->cls->num_episodes(e, "mendelian-genetics-known-plant", M2_SPLIT_OOD, &err), 30);
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-determine-angle", M2_SPLIT_TRAIN, &err), 84);
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-determine-angle", M2_SPLIT_OOD, &err), 42);
    assert_int_equal(e->cls->num_episodes(e, "grow-plant", M2_SPLIT_TRAIN, &err), 62);
    assert_int_equal(e->cls->num_episodes(e, "grow-plant", M2_SPLIT_ID, &err), 31);
    assert_int_equal(e->cls->num_episodes(e, "grow-plant", M2_SPLIT_OOD, &err), 33);
    /* the friction tasks: plane pairs within 0.05 friction of each other dropped */
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-friction-named-surfaces", M2_SPLIT_TRAIN, &err), 692);
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-friction-named-surfaces", M2_SPLIT_OOD, &err), 348);
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-friction-unnamed-surfaces", M2_SPLIT_TRAIN, &err), 80);
    assert_int_equal(e->cls->num_episodes(e, "inclined-plane-friction-unnamed-surfaces", M2_SPLIT_OOD, &err), 42);
    assert_int_equal(e->cls->num_episodes(e, "mendelian-genetics-unknown-plant", M2_SPLIT_TRAIN, &err), 240);
    assert_int_equal(e->cls->num_episodes(e, "mendelian-genetics-unknown-plant", M2_SPLIT_OOD, &err), 120);
    m2_step_result r;
    assert_int_equal(e->cls->num_episodes(e, "no-such-task", M2_SPLIT_TRAIN, &err), -1);
    assert_int_equal(e->cls->reset(e, "find-animal", M2_SPLIT_ID, 75, 0, &r, &err), -1);
    m2_env_destroy(e);
}

static void task_names_match_tasks_json(void **state) {
    char path[1024];
    snprintf(path, sizeof path, "%s/scienceworld/tasks.json", m2_shared_data_dir());
    FILE *f = fopen(path, "rb");
    if (!f) skip();
    static char txt[65536];
    size_t n = fread(txt, 1, sizeof txt - 1, f);
    fclose(f);
    txt[n] = 0;
    cJSON *j = cJSON_Parse(txt);
    assert_non_null(j);
    m2_env *e = mk();
    assert_int_equal(cJSON_GetArraySize(j), e->cls->num_task_families(e));
    for (int i = 0; i < cJSON_GetArraySize(j); i++) {
        cJSON *it = cJSON_GetArrayItem(j, i);
        assert_string_equal(cJSON_GetObjectItem(it, "task_name")->valuestring, e->cls->task_family_name(e, i));
    }
    cJSON_Delete(j);
    m2_env_destroy(e);
}

static const char *step(m2_env *e, const char *a, m2_step_result *r) {
    e->cls->step(e, a, r);
    return r->observation;
}

static void golden_texts(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "find-animal", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e),
        "Your task is to find a(n) animal. First, focus on the thing. Then, move it to the red box in the kitchen.");
    assert_string_equal(r.observation,
        "This room is called the hallway. In it, you see: \n\tthe agent\n\ta substance called air\n\ta picture\n"
        "You also see:\n\tA door to the art studio (that is closed)\n\tA door to the bedroom (that is closed)\n"
        "\tA door to the greenhouse (that is closed)\n\tA door to the kitchen (that is closed)\n"
        "\tA door to the living room (that is closed)\n\tA door to the workshop (that is closed)\n");
    assert_string_equal(step(e, "go to kitchen", &r), "The door is not open.");
    assert_string_equal(step(e, "open door to kitchen", &r), "The door is now open.");
    assert_string_equal(step(e, "open door to kitchen", &r), "The door is already open.");
    assert_string_equal(step(e, "go to kitchen", &r), "You move to the kitchen.");
    assert_string_equal(step(e, "look around", &r),
        "This room is called the kitchen. In it, you see: \n\tthe agent\n\ta substance called air\n"
        "\ta chair. On the chair is: nothing.\n"
        "\ta counter. On the counter is: a bowl (containing a red apple, a banana, an orange, a potato), a drawer.\n"
        "\ta cupboard. The cupboard door is closed. \n\ta freezer. The freezer door is closed. \n"
        "\ta fridge. The fridge door is closed. \n\ta glass jar (containing a substance called sodium chloride)\n"
        "\ta lighter\n\ta oven, which is turned off. The oven door is closed. \n\ta painting\n"
        "\ta red box (containing nothing)\n\ta sink, which is turned off. In the sink is: nothing.\n"
        "\ta substance called soap\n\ta stopwatch, which is deactivated. \n"
        "\ta stove, which is turned off. On the stove is: nothing.\n"
        "\ta table. On the table is: a glass cup (containing nothing).\n"
        "\ta thermometer, currently reading a temperature of 10 degrees celsius\n"
        "You also see:\n\tA door to the bathroom (that is closed)\n\tA door to the hallway (that is open)\n"
        "\tA door to the outside (that is closed)");
    assert_string_equal(step(e, "inventory", &r), "In your inventory, you see:\n\tnothing");
    assert_string_equal(step(e, "pick up metal pot", &r), "No known action matches that input.");
    assert_int_equal(r.valid, 0);
    /* words are whole tokens (InputParser): run together, they match nothing */
    assert_string_equal(step(e, "opencupboard", &r), "No known action matches that input.");
    assert_int_equal(r.valid, 0);
    assert_string_equal(step(e, "look atsink", &r), "No known action matches that input.");
    assert_int_equal(r.valid, 0);
    assert_string_equal(step(e, "open cupboard", &r), "The cupboard is now open.");
    assert_string_equal(step(e, "pick up metal pot", &r), "You move the metal pot to the inventory.");
    assert_string_equal(step(e, "inventory", &r), "In your inventory, you see:\n\ta metal pot (containing nothing)");
    assert_string_equal(step(e, "move metal pot totable", &r), "No known action matches that input.");
    assert_int_equal(r.valid, 0);
    assert_string_equal(step(e, "move metal pot to table", &r), "You move the metal pot to the table.");
    assert_string_equal(step(e, "look at table", &r),
        "a table. On the table is: \n\ta glass cup (containing nothing)\n\ta metal pot (containing nothing)");
    assert_string_equal(step(e, "look in bowl", &r), "Inside the bowl is: \n\ta red apple\n\ta banana\n\tan orange\n\ta potato");
    assert_string_equal(step(e, "close cupboard", &r), "The cupboard is now closed.");
    assert_string_equal(step(e, "move sink to table", &r), "The sink is not moveable.");
    assert_string_equal(step(e, "pick up thermometer", &r), "You move the thermometer to the inventory.");
    assert_string_equal(step(e, "use thermometer on metal pot", &r), "the thermometer measures a temperature of 10 degrees celsius");
    assert_string_equal(step(e, "activate sink", &r), "The sink is now activated.");
    assert_string_equal(step(e, "activate sink", &r), "The sink is already activated.");
    assert_string_equal(step(e, "activate table", &r), "The table is not something that can be activated.");
    assert_string_equal(step(e, "deactivate sink", &r), "The sink is now deactivated.");
    assert_string_equal(step(e, "wait", &r), "You decide to wait for 10 iterations.");
    assert_string_equal(step(e, "wait1", &r), "You decide to wait for 1 iterations.");
    assert_string_equal(step(e, "xyzzy", &r), "No known action matches that input.");
    /* the ambiguity dialogue */
    assert_string_equal(step(e, "open door", &r),
        "Ambiguous request: Please enter the number for the action you intended (or blank to cancel):\n"
        "0:\topen door between kitchen and hallway\n1:\topen door between bathroom and kitchen\n"
        "2:\topen door between kitchen and outside\n");
    const char *const *adm;
    int na;
    assert_int_equal(e->cls->admissible(e, &adm, &na), 0);
    assert_int_equal(na, 3);
    assert_string_equal(step(e, "1", &r), "The door is now open.");
    assert_non_null(strstr(step(e, "open door", &r), "Ambiguous request"));
    assert_string_equal(step(e, "9", &r), "ERROR: Value out of range (9). Action cancelled.");
    assert_string_equal(step(e, "go to bathroom", &r), "You move to the bathroom.");
    /* focusing on a non-animal fails the task: score -100, done */
    assert_string_equal(step(e, "focus on toilet", &r), "You focus on the toilet.");
    assert_float_equal(r.score, -100.0f, 0.0f);
    assert_int_equal(r.done, 1);
    m2_env_destroy(e);
}

/* Runs the oracle until an observation starts with `prefix` (or it stops); returns 1 when seen. */
static int oracle_until(m2_env *e, const char *prefix, m2_step_result *r) {
    m2_err err = {0};
    char buf[256];
    for (int k = 0; k < 60 && !e->cls->oracle_next(e, buf, sizeof buf, &err); k++) {
        e->cls->step(e, buf, r);
        if (!strncmp(r->observation, prefix, strlen(prefix))) return 1;
    }
    return 0;
}

/* Plant life cycle: a seed sprouts after 10 watered ticks, a seedling left dry dies after 20; digging;
 * bees pollinate flowers into fruit; self-watering pots; the texts of seeds, trees, flowers, bees. */
static void plants_grow_and_texts(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "grow-plant", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e),
        "Your task is to grow a apple plant from seed. Seeds can be found in the kitchen. First, focus on a seed. Then, "
        "make changes to the environment that grow the plant until it reaches the reproduction life stage.");
    assert_true(oracle_until(e, "You focus on the apple seed.", &r));
    assert_string_equal(step(e, "look at flower pot 1", &r), "a flower pot 1 (containing a apple seed, a soil)");
    assert_string_equal(step(e, "look in seed jar", &r),
        "Inside the seed jar is: \n\ta apple seed\n\ta apple seed\n\ta apple seed\n\ta apple seed");
    step(e, "move jug to sink", &r);
    step(e, "activate sink", &r);
    assert_string_equal(step(e, "pour jug into flower pot 1", &r), "You pour the contents of the jug into the flower pot 1.");
    assert_string_equal(step(e, "look at flower pot 1", &r),
        "a flower pot 1 (containing a apple seed, a soil, a substance called water)");
    step(e, "wait", &r);   /* 10 watered ticks: the seed sprouts and uses up the water */
    assert_string_equal(step(e, "look at flower pot 1", &r), "a flower pot 1 (containing a apple tree in the seedling stage, a soil)");
    assert_float_equal(r.score, 63.0f, 0.0f);
    assert_string_equal(step(e, "focus on seedling plant", &r), "You focus on the apple tree.");
    step(e, "wait", &r);
    step(e, "wait", &r);   /* 20 dry ticks: the seedling dies */
    assert_string_equal(step(e, "look at flower pot 1", &r), "a flower pot 1 (containing a dead apple tree, a soil)");
    /* no soil anywhere (variation 2): dig it up outside */
    assert_int_equal(e->cls->reset(e, "grow-plant", M2_SPLIT_TRAIN, 2, 0, &r, &err), 0);
    assert_true(oracle_until(e, "You dig a hole in the ground, and place the soil nearby.", &r));
    assert_non_null(strstr(step(e, "look around", &r), "\ta ground\n\ta hole\n\ta soil\n"));
    /* grow-fruit: three trees, the bees released in the closed greenhouse, fruit on the trees */
    assert_int_equal(e->cls->reset(e, "grow-fruit", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_true(oracle_until(e, "You focus on the apple.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    const char *look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\ta adult bee\n"));
    assert_non_null(strstr(look, "a bee hive. The bee hive door is open. In the bee hive is: nothing.\n"));
    assert_non_null(strstr(look, "\ta flower pot 3 (containing a apple tree in the reproducing stage. On the apple tree you see: "
                                 "a red apple, a flower. , a soil)\n"));
    assert_non_null(strstr(look, "On the apple tree you see: a wilting flower. "));
    /* mendelian-genetics-known-plant: pea seeds show their seed shape and colour, adult pea plants their height;
     * the cross of the two parents gives a heterozygous seed on a parent */
    assert_int_equal(e->cls->reset(e, "mendelian-genetics-known-plant", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to determine whether tall plant height is a dominant or recessive "
        "trait in the pea plant. If the trait is dominant, focus on the red box. If the trait is recessive, focus on the green box.");
    assert_true(oracle_until(e, "You move to the greenhouse.", &r));
    assert_string_equal(step(e, "look at seed jar", &r), "a seed jar (containing a round orange pea seed, a round green pea seed)");
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\ta flower pot 1 (containing a soil)\n\ta flower pot 3 (containing a soil)\n"));
    assert_non_null(strstr(look, "\ta green box (containing nothing)\n"));
    assert_true(oracle_until(e, "You move the pea seed to the flower pot 9.", &r));
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\ta flower pot 6 (containing a pea plant in the reproducing stage with a short height. On the pea "
                                 "plant you see: a purple flower. , a soil)\n"));   /* flower colour: a random trait here */
    assert_non_null(strstr(look, "a pea plant in the reproducing stage with a tall height."));
    assert_non_null(strstr(look, "\ta flower pot 9 (containing a wrinkly green pea seed, a soil)\n"));   /* the offspring */
    assert_true(oracle_until(e, "You focus on the red box.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    assert_int_equal(r.done, 1);
    /* seed shape (variation 30: round, dominant): read off the offspring seed */
    assert_int_equal(e->cls->reset(e, "mendelian-genetics-known-plant", M2_SPLIT_TRAIN, 30, 0, &r, &err), 0);
    assert_true(oracle_until(e, "You focus on the red box.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "On the pea plant you see: a wilting purple flower, a round green pea seed. , a soil)\n"));
    assert_non_null(strstr(look, "On the pea plant you see: a wilting white flower. , a soil)\n"));
    /* mendelian-genetics-unknown-plant, unknown E, leaf shape (variation 60: elliptical, dominant) */
    assert_int_equal(e->cls->reset(e, "mendelian-genetics-unknown-plant", M2_SPLIT_TRAIN, 60, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to determine whether elliptical leaf shape is a dominant or "
        "recessive trait in the unknown E plant. If the trait is dominant, focus on the red box. If the trait is recessive, "
        "focus on the green box.");
    assert_true(oracle_until(e, "You focus on the red box.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\ta flower pot 9 (containing a soil, a unknown E plant in the adult stage with elliptical leaves)\n"));
    assert_non_null(strstr(look, "\ta flower pot 7 (containing a soil, a dead unknown E plant, a round blue unknown E seed)\n"));
    /* identify-life-stages-2: five trees, one per stage, in self-watering pots; an animal at each stage */
    assert_int_equal(e->cls->reset(e, "identify-life-stages-2", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to focus on the life stages of the apple plant, starting from "
                                              "earliest to latest. The plants are located outside.");
    assert_true(oracle_until(e, "You move to the outside.", &r));
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\ta blue jay egg\n\ta hatchling blue jay\n\ta juvenile blue jay\n\ta adult blue jay\n\ta dead blue jay\n"));
    assert_non_null(strstr(look, "\ta self watering flower pot 4 (containing a apple seed, a soil, a substance called water)\n"));
    assert_non_null(strstr(look, "(containing a apple tree in the seedling stage, a soil, a substance called water)"));
    assert_non_null(strstr(look, "(containing a dead apple tree, a soil"));
    assert_int_equal(oracle_until(e, "never", &r), 0);
    assert_float_equal(r.score, 100.0f, 0.0f);
    m2_env_destroy(e);
}

/* Inclined planes: the plane and stopwatch texts, sliding at g sin(angle) (1 - friction) per tick, the
 * experiment goals (block on plane, stopwatch on, off, read) and the focus goal. */
static void inclined_planes(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "inclined-plane-determine-angle", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to determine which of the two inclined planes (B, C) has the "
        "shallowest angle. After completing your experiment, focus on the inclined plane with the shallowest angle.");
    assert_true(oracle_until(e, "You move to the workshop.", &r));
    const char *look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\tan inclined plane B\n\tan inclined plane C\n"));
    assert_non_null(strstr(look, "\ta stopwatch, which is deactivated. \n"));
    {   /* the experiment's first step is admissible straight from the floor */
        const char *const *acts = NULL;
        int na = 0, seen = 0;
        assert_int_equal(e->cls->admissible(e, &acts, &na), 0);
        for (int i = 0; i < na; i++) seen |= !strcmp(acts[i], "move block to plane b");
        assert_true(seen);
    }
    assert_string_equal(step(e, "pick up stopwatch", &r), "You move the stopwatch to the inventory.");
    assert_string_equal(step(e, "move wood block to inclined plane B", &r), "You move the wood block to the inclined plane.");
    /* 70 degrees, friction 0.5: 0.1 sin(70) 0.5 = 0.047 of the plane per tick */
    assert_string_equal(step(e, "look at plane B", &r), "an inclined plane B, with: a wood block approximately 5% down the plane");
    assert_string_equal(step(e, "activate stopwatch", &r), "The stopwatch is now activated.");
    step(e, "wait", &r);
    assert_string_equal(step(e, "look at stopwatch", &r), "a stopwatch, which is activated. The time reads 12 ticks.");
    step(e, "wait", &r);   /* 27 ticks: at the bottom */
    assert_string_equal(step(e, "look at inclined plane B", &r), "an inclined plane B, with: a wood block at the bottom of the plane");
    assert_string_equal(step(e, "deactivate stopwatch", &r), "The stopwatch is now deactivated.");
    step(e, "wait1", &r);   /* the reading stays after it stops */
    assert_string_equal(step(e, "examine stopwatch", &r), "a stopwatch, which is deactivated. The time reads 25 ticks.");
    assert_float_equal(r.score, 30.0f, 0.0f);   /* moved, in the workshop, b1, aTime1, dTime1, readTime1 */
    assert_string_equal(step(e, "move wood block to plane C", &r), "You move the wood block to the inclined plane.");
    assert_string_equal(step(e, "look at plane C", &r), "an inclined plane C, with: a wood block approximately 5% down the plane");
    /* the steeper plane is the wrong answer: the task fails */
    assert_string_equal(step(e, "focus on plane C", &r), "You focus on the inclined plane C.");
    assert_float_equal(r.score, -100.0f, 0.0f);
    assert_int_equal(r.done, 1);
    /* friction: surfaces named after their material; 0.1 sin(45) (1 - friction) per tick */
    assert_int_equal(e->cls->reset(e, "inclined-plane-friction-unnamed-surfaces", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to determine which of the two inclined planes (unknown material C, "
        "unknown material H) has the most friction. After completing your experiment, focus on the inclined plane with the most friction.");
    assert_true(oracle_until(e, "You move to the workshop.", &r));
    look = step(e, "look around", &r);
    assert_non_null(strstr(look, "\tan inclined plane with a unknown material H surface\n\tan inclined plane with a unknown material C surface\n"));
    /* H (0.9) then C (0.4), 13 ticks each */
    assert_true(oracle_until(e, "an inclined plane with a unknown material H surface, with: a wood block approximately 9% down the plane", &r));
    assert_true(oracle_until(e, "an inclined plane with a unknown material C surface, with: a wood block approximately 55% down the plane", &r));
    assert_true(oracle_until(e, "You focus on the inclined plane with a unknown material H surface.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    assert_int_equal(e->cls->reset(e, "inclined-plane-friction-named-surfaces", M2_SPLIT_OOD, 5, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to determine which of the two inclined planes (zinc, aluminum) has "
        "the least friction. After completing your experiment, focus on the inclined plane with the least friction.");
    assert_true(oracle_until(e, "You move to the workshop.", &r));
    assert_string_equal(step(e, "look at inclined plane with a aluminum surface", &r), "an inclined plane with a aluminum surface");
    /* the oracle's own run */
    assert_int_equal(e->cls->reset(e, "inclined-plane-determine-angle", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_true(oracle_until(e, "an inclined plane B, with: a wood block approximately 61% down the plane", &r));
    assert_true(oracle_until(e, "a stopwatch, which is deactivated. The time reads 13 ticks.", &r));
    assert_true(oracle_until(e, "an inclined plane C, with: a wood block approximately 64% down the plane", &r));
    assert_true(oracle_until(e, "You focus on the inclined plane B.", &r));
    assert_float_equal(r.score, 100.0f, 0.0f);
    /* oracle runs do the whole experiment: all 10 unordered goals (half the score) before the focus (every 5th
     * variation here; oracle_scores_100_everywhere replays them all) */
    static const char *const plane_tasks[3] = {"inclined-plane-determine-angle", "inclined-plane-friction-named-surfaces",
                                               "inclined-plane-friction-unnamed-surfaces"};
    for (int t = 0; t < 3; t++)
    for (int sp = 0; sp < 3; sp++) {
        int n = e->cls->num_episodes(e, plane_tasks[t], sp, &err);
        for (int i = 0; i < n; i += 5 * SW_REPLAY_STRIDE) {
            assert_int_equal(e->cls->reset(e, plane_tasks[t], sp, i, 0, &r, &err), 0);
            float before = 0;
            char buf[256];
            for (int k = 0; k < 50 && !e->cls->oracle_next(e, buf, sizeof buf, &err); k++) {
                before = r.score;
                e->cls->step(e, buf, &r);
            }
            assert_float_equal(before, 50.0f, 0.0f);
            assert_float_equal(r.score, 100.0f, 0.0f);
        }
    }
    m2_env_destroy(e);
}

/* Water boils on the stove: the pot fills at the sink, the stove heats it, water turns to steam. */
static void physics_boils_water(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "boil", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to boil water. For compounds without a boiling point, combusting the "
        "substance is also acceptable. First, focus on the substance. Then, take actions that will cause it to change its state of matter.");
    char buf[128];
    int saw_sink = 0, saw_steam = 0;
    while (!e->cls->oracle_next(e, buf, sizeof buf, &err)) {
        e->cls->step(e, buf, &r);
        if (!strcmp(buf, "activate sink")) {
            assert_string_equal(r.observation, "The sink is now activated.");
            saw_sink = 1;
        }
        if (r.done) break;
    }
    assert_true(saw_sink);
    assert_float_equal(r.score, 100.0f, 0.0f);
    e->cls->step(e, "look at stove", &r);
    saw_steam = strstr(r.observation, "steam") != NULL;
    assert_true(saw_steam);
    m2_env_destroy(e);
}

/* A battery, two wires and a light bulb make a circuit; the bulb lights after a tick. */
static void electrical_circuit(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "power-component", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(e->cls->task_text(e), "Your task is to turn on the red light bulb. First, focus on the red light bulb. "
                        "Then, create an electrical circuit that powers it on.");
    char buf[128];
    int connects = 0;
    while (!e->cls->oracle_next(e, buf, sizeof buf, &err)) {
        e->cls->step(e, buf, &r);
        if (!strncmp(buf, "connect ", 8)) {
            assert_non_null(strstr(r.observation, " is now connected to "));
            connects++;
        }
        if (r.done) break;
    }
    assert_int_equal(connects, 4);
    assert_float_equal(r.score, 100.0f, 0.0f);
    assert_string_equal(step(e, "connect battery to red light bulb", &r),
        "Connections must specify specific points of contact on polarized electrical components (e.g. anode, cathode)");
    assert_string_equal(step(e, "disconnect battery anode", &r),
        "You must disconnect entire objects (such as battery) instead of just single terminals");
    assert_string_equal(step(e, "disconnect battery", &r), "battery has been disconnected");
    assert_string_equal(step(e, "wait1", &r), "You decide to wait for 1 iterations.");
    assert_non_null(strstr(step(e, "look at red light bulb", &r), "a red light bulb, which is off. its anode is connected to: a terminal 2 on"));
    m2_env_destroy(e);
}

static void lifespan_scoring(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "lifespan-shortest-lived", M2_SPLIT_OOD, 0, 0, &r, &err), 0);
    assert_non_null(strstr(e->cls->task_text(e), "shortest life span"));
    char buf[128];
    float last = 0;
    while (!e->cls->oracle_next(e, buf, sizeof buf, &err)) {
        e->cls->step(e, buf, &r);
        assert_true(r.score >= last);
        assert_float_equal(r.reward, r.score - last, 0.0f);
        last = r.score;
        if (r.done) break;
    }
    assert_float_equal(r.score, 100.0f, 0.0f);
    m2_env_destroy(e);
}

/* Same episode, same actions -> byte-identical observations. */
static void deterministic(void **state) {
    m2_env *a = mk(), *b = mk();
    m2_err err = {0};
    m2_step_result ra, rb;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(a->cls->reset(a, "find-living-thing", M2_SPLIT_TRAIN, i * 7, 1, &ra, &err), 0);
        assert_int_equal(b->cls->reset(b, "find-living-thing", M2_SPLIT_TRAIN, i * 7, 2, &rb, &err), 0);
        assert_string_equal(ra.observation, rb.observation);
        char buf[128];
        while (!a->cls->oracle_next(a, buf, sizeof buf, &err)) {
            a->cls->step(a, buf, &ra);
            b->cls->step(b, buf, &rb);
            assert_string_equal(ra.observation, rb.observation);
            if (ra.done) break;
        }
    }
    m2_env_destroy(a);
    m2_env_destroy(b);
}

static void random_input_never_crashes(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "find-plant", M2_SPLIT_TRAIN, 3, 0, &r, &err), 0);
    m2_rng rng;
    m2_rng_seed(&rng, 1234);
    static const char *const words[] = {"open", "door", "to", "go", "kitchen", "move", "pot", "in", "focus", "on",
        "the", "a", "pick", "up", "look", "at", "around", "0", "1", "-3", "wait", "pour", "use", "thermometer", "box", ""};
    char in[600];
    for (int it = 0; it < 3000; it++) {
        int kind = (int)((uint32_t)m2_rng_u64(&rng) % 3);
        int len = (int)((uint32_t)m2_rng_u64(&rng) % 80);
        if (kind == 0) {
            for (int i = 0; i < len; i++) in[i] = (char)(1 + (uint32_t)m2_rng_u64(&rng) % 255);
            in[len] = 0;
        } else {
            in[0] = 0;
            int nw = 1 + (int)((uint32_t)m2_rng_u64(&rng) % 6);
            for (int i = 0; i < nw; i++) {
                strcat(in, words[(uint32_t)m2_rng_u64(&rng) % (sizeof words / sizeof words[0])]);
                strcat(in, " ");
            }
        }
        e->cls->step(e, in, &r);
        assert_non_null(r.observation);
        const char *const *adm;
        int na;
        if (it % 50 == 0) assert_int_equal(e->cls->admissible(e, &adm, &na), 0);
        if (r.done) assert_int_equal(e->cls->reset(e, "find-plant", M2_SPLIT_TRAIN, it % 150, 0, &r, &err), 0);
    }
    e->cls->step(e, NULL, &r);
    assert_non_null(r.observation);
    m2_env_destroy(e);
}

static void describe_and_segment(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    char *js = e->cls->describe(e, "find-animal", M2_SPLIT_OOD, 0, &err);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"variation\":225"));
    free(js);
    const char *acts[] = {"open door to kitchen", "go to kitchen", "open door to outside", "go to outside",
                          "look around", "focus on wolf", "pick up wolf", "go to kitchen", "move wolf to box"};
    const char *obs[9] = {0};
    m2_subgoal sg[8];
    int n = e->cls->segment(e, acts, obs, 9, sg, 8);
    assert_int_equal(n, 5);
    assert_string_equal(sg[0].text, "go to outside");
    assert_int_equal(sg[0].last, 4);
    assert_string_equal(sg[1].text, "focus on wolf");
    assert_string_equal(sg[3].text, "go to kitchen");
    m2_env_destroy(e);
}

/* A JSON value the environment shows of its state (inspect), parsed. */
static cJSON *inspect_json(m2_env *e, const char *what) {
    m2_err err = {0};
    char *js = e->cls->inspect(e, what, &err);
    if (!js) fail_msg("inspect %s: %s", what, err.msg);
    cJSON *v = cJSON_Parse(js);
    free(js);
    assert_non_null(v);
    return v;
}

/* ScienceWorld's getPossibleActions() without simplifications (ActionDefinitions.scala: each
 * action's first trigger words, OBJ for an object, sorted), and the ids getPossibleActionsWithIDs
 * gives them. */
static const struct { const char *text; int id; } original_templates[] = {
    {"activate OBJ", 6}, {"close OBJ", 1}, {"connect OBJ to OBJ", 16}, {"deactivate OBJ", 7}, {"disconnect OBJ", 17},
    {"dunk OBJ in OBJ", 26}, {"eat OBJ", 8}, {"flush OBJ", 15}, {"focus on OBJ", 11}, {"go OBJ", 2},
    {"inventory", 20}, {"look around", 3}, {"look at OBJ", 4}, {"look in OBJ", 5}, {"mix OBJ", 23},
    {"move OBJ to OBJ", 9}, {"open OBJ", 0}, {"pick up OBJ", 21}, {"pour OBJ in OBJ", 10}, {"put down OBJ", 22},
    {"read OBJ", 14}, {"reset task", 12}, {"task", 24}, {"use OBJ on OBJ", 13}, {"wait", 19}, {"wait1", 18},
};
#define N_TEMPLATES ((int)(sizeof original_templates / sizeof original_templates[0]))

static void action_templates_are_the_originals(void **state) {
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, "boil", M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    cJSON *a = inspect_json(e, "possible_actions");
    assert_int_equal(cJSON_GetArraySize(a), N_TEMPLATES);
    for (int i = 0; i < N_TEMPLATES; i++) assert_string_equal(cJSON_GetArrayItem(a, i)->valuestring, original_templates[i].text);
    cJSON_Delete(a);
    a = inspect_json(e, "possible_actions_with_ids");   /* by id; each template with its own id */
    assert_int_equal(cJSON_GetArraySize(a), N_TEMPLATES);
    int last = -1;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        const char *t = cJSON_GetObjectItem(x, "action_example")->valuestring;
        int id = cJSON_GetObjectItem(x, "template_id")->valueint, k = 0;
        assert_true(id > last);
        last = id;
        while (k < N_TEMPLATES && strcmp(original_templates[k].text, t)) k++;
        assert_true(k < N_TEMPLATES);
        assert_int_equal(original_templates[k].id, id);
    }
    cJSON_Delete(a);
    /* "help" answers the same list */
    e->cls->step(e, "help", &r);
    const char *p = r.observation;
    assert_true(!strncmp(p, "Possible actions: ", 18));
    p += 18;
    for (int i = 0; i < N_TEMPLATES; i++) {
        assert_true(!strncmp(p, "\n\t", 2));
        p += 2;
        size_t L = strlen(original_templates[i].text);
        assert_true(!strncmp(p, original_templates[i].text, L));
        p += L;
    }
    assert_int_equal(*p, 0);
    m2_env_destroy(e);
}

/* The templates are what the parser reads: every template filled with objects (the action-object
 * combinations) is parsed as an action, from the states of two tasks; the combinations are every
 * ordered choice of distinct possible objects, named in the look-up table. */
static void templates_are_what_the_parser_accepts(void **state) {
    static const char *const tasks[] = {"boil", "power-component"};
    m2_env *e = mk();
    m2_err err = {0};
    m2_step_result r;
    for (int t = 0; t < 2; t++) {
        assert_int_equal(e->cls->reset(e, tasks[t], M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
        cJSON *objs = inspect_json(e, "possible_objects"), *c = inspect_json(e, "action_object_combinations");
        int n = cJSON_GetArraySize(objs);
        const cJSON *list = cJSON_GetObjectItem(c, "templates"), *lut = cJSON_GetObjectItem(c, "lookUpTable");
        int expect = 0;
        for (int i = 0; i < N_TEMPLATES; i++) {
            int slots = 0;
            for (const char *p = original_templates[i].text; (p = strstr(p, "OBJ")); p += 3) slots++;
            expect += slots == 0 ? 1 : slots == 1 ? n : n * (n - 1);
        }
        assert_int_equal(cJSON_GetArraySize(list), expect);
        assert_int_equal(cJSON_GetArraySize(lut), n);
        const cJSON *o;
        cJSON_ArrayForEach(o, lut) {   /* the table names the possible objects */
            int found = 0;
            const cJSON *y;
            cJSON_ArrayForEach(y, objs) found |= !strcmp(y->valuestring, o->valuestring);
            assert_true(found);
        }
        /* the first three fillings of each template (and the last one), each from the episode's start */
        int tried[32] = {0}, checked = 0, k = 0, size = cJSON_GetArraySize(list);
        cJSON_ArrayForEach(o, list) {
            int id = cJSON_GetObjectItem(o, "template_id")->valueint;
            const cJSON *ids = cJSON_GetObjectItem(o, "obj_ids");
            char action[512];
            snprintf(action, sizeof action, "%s", cJSON_GetObjectItem(o, "action")->valuestring);
            k++;
            if (id == 12) continue;   /* reset task: parsed, and not worth replaying the episode for */
            if (tried[id]++ >= 3 && k != size) continue;
            const cJSON *oid;
            cJSON_ArrayForEach(oid, ids) {   /* each object id is in the table */
                char key[16];
                snprintf(key, sizeof key, "%d", oid->valueint);
                assert_non_null(cJSON_GetObjectItem(lut, key));
            }
            assert_int_equal(e->cls->reset(e, tasks[t], M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
            e->cls->step(e, action, &r);
            if (!r.valid || !strcmp(r.observation, "No known action matches that input."))
                fail_msg("%s: template filling \"%s\" is not parsed: %s", tasks[t], action, r.observation);
            checked++;
        }
        assert_true(checked > 60);
        cJSON_Delete(objs);
        cJSON_Delete(c);
    }
    m2_env_destroy(e);
}

/* Reads getGoalProgressStr's layout back: the done marks of the sequential and the optional
 * sub-goals, the layout's fixed lines and columns checked on the way. */
typedef struct progress { int seq[64], nseq, opt[64], nopt; char keys[256]; } progress;

static void parse_progress(const char *txt, progress *pg) {
    static const char rule[] = "----------------------------------------------------------------------------------------------------";
    memset(pg, 0, sizeof *pg);
    char *copy = strdup(txt), *save = NULL;
    assert_non_null(copy);
    char *line = strtok_r(copy, "\n", &save);
    assert_non_null(line);
    assert_true(!strncmp(line, "Completed keys: ", 16));
    snprintf(pg->keys, sizeof pg->keys, "%s", line + 16);
    static const char *const heads[2] = {"Sequential Subgoals:", "Unordered and Optional Subgoals:"};
    for (int part = 0; part < 2; part++) {
        if (part == 0) assert_string_equal(strtok_r(NULL, "\n", &save), rule);   /* part 1's opening rule closed part 0 */
        assert_string_equal(strtok_r(NULL, "\n", &save), heads[part]);
        assert_string_equal(strtok_r(NULL, "\n", &save), rule);
        int *marks = part ? pg->opt : pg->seq, *n = part ? &pg->nopt : &pg->nseq;
        while ((line = strtok_r(NULL, "\n", &save)) && strcmp(line, rule)) {
            int idx = -1;
            char flag[8] = "";
            assert_int_equal(sscanf(line, "%d\t%7[a-z]\t", &idx, flag), 2);
            assert_int_equal(idx, *n);
            const char *cls = strchr(strchr(line, '\t') + 1, '\t') + 1, *tab = strchr(cls, '\t');
            assert_non_null(tab);
            assert_int_equal((int)(tab - cls), 40);   /* the class, right-aligned in 40 columns */
            const char *name = cls;
            while (*name == ' ') name++;
            assert_true(!strncmp(name, "Goal", 4));
            assert_true(tab[1] != 0);   /* a description */
            assert_true(!strcmp(flag, "true") || !strcmp(flag, "false"));
            assert_true(*n < 64);
            marks[(*n)++] = !strcmp(flag, "true");
        }
        assert_non_null(line);   /* each part ends with the rule */
    }
    assert_null(strtok_r(NULL, "\n", &save));
    free(copy);
}

/* The score the done marks give (GoalSequence.score, x100 and rounded as the Python API). */
static int progress_score(const progress *pg) {
    double s = (double)0, unit = (1.0 / (pg->nseq + 1.0)) / (pg->nopt ? pg->nopt : 1);
    int done = 0;
    while (done < pg->nseq && pg->seq[done]) done++;
    s = (double)done / pg->nseq;
    for (int i = 0; i < pg->nopt; i++) if (pg->opt[i]) s += unit;
    return (int)nearbyint((s > 1.0 ? 1.0 : s) * 100.0);
}

/* The goal-progress text as the oracle plays: the sequential marks stay a growing run of "true"
 * from the top, optional marks never go back, the marks give the step's score, and the won episode
 * ends with every sequential sub-goal done. */
static void goal_progress_follows_the_oracle(void **state) {
    static const char *const tasks[] = {"boil", "use-thermometer", "power-component", "find-animal",
                                        "chemistry-mix-paint-tertiary-color", "inclined-plane-determine-angle"};
    m2_env *e = mk();
    m2_err err = {0};
    int saw_optional = 0, saw_key = 0;
    for (size_t t = 0; t < sizeof tasks / sizeof tasks[0]; t++) {
        m2_step_result r;
        assert_int_equal(e->cls->reset(e, tasks[t], M2_SPLIT_TRAIN, 1, 0, &r, &err), 0);
        progress pg, before;
        cJSON *txt = inspect_json(e, "goal_progress");
        parse_progress(txt->valuestring, &before);
        cJSON_Delete(txt);
        assert_true(before.nseq > 0);
        assert_int_equal(progress_score(&before), (int)r.score);
        char buf[256];
        int steps = 0, ran_seq = 0;
        while (steps++ < 60 && !e->cls->oracle_next(e, buf, sizeof buf, &err)) {
            e->cls->step(e, buf, &r);
            txt = inspect_json(e, "goal_progress");
            parse_progress(txt->valuestring, &pg);
            cJSON_Delete(txt);
            assert_int_equal(pg.nseq, before.nseq);
            assert_int_equal(pg.nopt, before.nopt);
            int run = 0;
            while (run < pg.nseq && pg.seq[run]) run++;
            for (int i = run; i < pg.nseq; i++) assert_false(pg.seq[i]);   /* done marks come in order */
            assert_true(run >= ran_seq);
            ran_seq = run;
            for (int i = 0; i < pg.nopt; i++) {
                assert_true(pg.opt[i] >= before.opt[i]);
                saw_optional |= pg.opt[i];
            }
            saw_key |= pg.keys[0] != 0;
            if (progress_score(&pg) != (int)r.score)
                fail_msg("%s after \"%s\": the marks give %d, the step scored %.0f", tasks[t], buf, progress_score(&pg), r.score);
            before = pg;
            if (r.done) break;
        }
        assert_int_equal(r.won, 1);
        assert_int_equal(ran_seq, pg.nseq);
    }
    assert_true(saw_optional);
    assert_true(saw_key);
    m2_env_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_follow_the_original_rule),
        cmocka_unit_test(task_names_match_tasks_json),
        cmocka_unit_test(golden_texts),
        cmocka_unit_test(lifespan_scoring),
        cmocka_unit_test(physics_boils_water),
        cmocka_unit_test(electrical_circuit),
        cmocka_unit_test(deterministic),
        cmocka_unit_test(random_input_never_crashes),
        cmocka_unit_test(describe_and_segment),
        cmocka_unit_test(plants_grow_and_texts),
        cmocka_unit_test(inclined_planes),
        cmocka_unit_test(action_templates_are_the_originals),
        cmocka_unit_test(templates_are_what_the_parser_accepts),
        cmocka_unit_test(goal_progress_follows_the_oracle),
        cmocka_unit_test(oracle_scores_100_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
