/* ALFWorld: golden observation strings, admissible lists, oracle wins on every task type and split
 * (embedded and ALFWorld tables), determinism, game.tw-pddl round trips, bad files, junk actions,
 * segmentation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "core/core.h"
#include "env/env.h"
#include "env/alfworld/alfworld.h"
#include "tmpdir.h"

/* ------------------------------------------------------------------ a hand-written game file */

static const char golden_problem[] =
    "(define (problem golden)\n"
    " (:domain alfred)\n"
    " (:metric minimize (totalCost))\n"
    " (:objects agent1 - agent\n"
    "   Apple Mug - object ; bare class names as ALFRED writes them: dropped\n"
    "   AppleType MugType KnifeType DeskLampType - otype\n"
    "   Apple_bar_1 Apple_bar_2 Mug_bar_1 DeskLamp_bar_1 Knife_bar_1 Pillow_bar_1 - object\n"
    "   CounterTop_bar_1 Fridge_bar_1 Microwave_bar_1 Sink_bar_1_bar_SinkBasin Drawer_bar_1 Drawer_bar_2 Desk_bar_1 - receptacle\n"
    "   loc_bar_0 loc_bar_1 loc_bar_2 loc_bar_3 loc_bar_4 loc_bar_5 loc_bar_6 - location)\n"
    " (:init (= (totalCost) 0) (atLocation agent1 loc_bar_0)\n"
    "   (receptacleType CounterTop_bar_1 CounterTopType) (receptacleAtLocation CounterTop_bar_1 loc_bar_1)\n"
    "   (receptacleType Fridge_bar_1 FridgeType) (receptacleAtLocation Fridge_bar_1 loc_bar_2) (openable Fridge_bar_1)\n"
    "   (receptacleType Microwave_bar_1 MicrowaveType) (receptacleAtLocation Microwave_bar_1 loc_bar_3) (openable Microwave_bar_1)\n"
    "   (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType) (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_4)\n"
    "   (receptacleType Drawer_bar_1 DrawerType) (receptacleAtLocation Drawer_bar_1 loc_bar_5) (openable Drawer_bar_1)\n"
    "   (receptacleType Drawer_bar_2 DrawerType) (receptacleAtLocation Drawer_bar_2 loc_bar_5) (openable Drawer_bar_2)\n"
    "   (receptacleType Desk_bar_1 DeskType) (receptacleAtLocation Desk_bar_1 loc_bar_6)\n"
    "   (objectType Apple_bar_1 AppleType) (inReceptacle Apple_bar_1 CounterTop_bar_1) (pickupable Apple_bar_1)\n"
    "   (heatable Apple_bar_1) (coolable Apple_bar_1) (cleanable Apple_bar_1) (sliceable Apple_bar_1)\n"
    "   (objectType Apple_bar_2 AppleType) (inReceptacle Apple_bar_2 CounterTop_bar_1) (pickupable Apple_bar_2)\n"
    "   (heatable Apple_bar_2) (coolable Apple_bar_2) (cleanable Apple_bar_2) (sliceable Apple_bar_2)\n"
    "   (objectType Mug_bar_1 MugType) (inReceptacle Mug_bar_1 Fridge_bar_1) (pickupable Mug_bar_1) (isReceptacleObject Mug_bar_1)\n"
    "   (objectType DeskLamp_bar_1 DeskLampType) (inReceptacle DeskLamp_bar_1 Desk_bar_1) (toggleable DeskLamp_bar_1)\n"
    "   (wasInReceptacle Apple_bar_1 CounterTop_bar_1) (objectAtLocation Apple_bar_1 loc_bar_1) (checked CounterTop_bar_1)\n"
    "   (objectType Pillow_bar_1 PillowType) (objectAtLocation Pillow_bar_1 loc_bar_1) (pickupable Pillow_bar_1)\n"
    "   (objectType Knife_bar_1 KnifeType) (inReceptacle Knife_bar_1 CounterTop_bar_1) (pickupable Knife_bar_1) (cleanable Knife_bar_1)\n"
    "   (canContain CounterTopType AppleType) (canContain CounterTopType KnifeType) (canContain CounterTopType MugType)\n"
    "   (canContain FridgeType AppleType) (canContain FridgeType MugType) (canContain MicrowaveType AppleType)\n"
    "   (canContain SinkBasinType AppleType) (canContain DrawerType KnifeType) (canContain DeskType MugType))\n"
    " (:goal (and (exists (?r - receptacle) (exists (?o - object)\n"
    "   (and (heatable ?o) (isHot ?o) (inReceptacle ?o ?r) (objectType ?o AppleType) (receptacleType ?r FridgeType)))))))\n";

static char *golden_json(void) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pddl_domain", ";; unused");
    cJSON_AddStringToObject(o, "grammar", "{ \"task\": [ { \"rhs\": \"Your task is to: put a hot apple in fridge.\" } ] }");
    cJSON_AddStringToObject(o, "pddl_problem", golden_problem);
    cJSON_AddBoolToObject(o, "solvable", 1);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}


static char tmpdir[256];

static int setup_tmp(void **state) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/m2_alfworld_test_%ld", (long)getpid());
    m2_err err = {0};
    return m2_mkdir_p(tmpdir, &err);
}
static int teardown_tmp(void **state) {
    m2_remove_tree(tmpdir);   /* best effort: a leftover folder fails no test */
    return 0;
}

static void write_text(const char *path, const char *text) {
    m2_err err = {0};
    assert_int_equal(m2_write_file_atomic(path, text, strlen(text), &err), 0);
}

static m2_env *open_golden(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/golden.tw-pddl", tmpdir);
    char *j = golden_json();
    write_text(path, j);
    free(j);
    m2_err err = {0};
    m2_env *e = NULL;
    if (m2_env_create("alfworld", path, &e, &err)) fail_msg("%s", err.msg);
    return e;
}

static m2_step_result play(m2_env *e, const char *action, const char *expect) {
    m2_step_result r;
    assert_int_equal(e->cls->step(e, action, &r), 0);
    if (expect && strcmp(r.observation, expect)) fail_msg("action '%s'\n  got:      '%s'\n  expected: '%s'", action, r.observation, expect);
    return r;
}

static void golden_texts(void **state) {
    m2_env *e = open_golden();
    m2_err err = {0};
    m2_step_result r;
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err), 1);
    assert_int_equal(e->cls->num_episodes(e, "heat", M2_SPLIT_OOD, &err), 1);
    assert_int_equal(e->cls->num_episodes(e, "cool", M2_SPLIT_OOD, &err), 0);
    assert_int_equal(e->cls->reset(e, NULL, M2_SPLIT_TRAIN, 0, 0, &r, &err), 0);
    assert_string_equal(r.observation,
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see "
        "a countertop 1, a desk 1, a drawer 2, a drawer 1, a fridge 1, a microwave 1, and a sinkbasin 1.\n\n"
        "Your task is to: put a hot apple in fridge.");
    assert_string_equal(e->cls->task_text(e), "Your task is to: put a hot apple in fridge.");
    play(e, "look", "You are in the middle of a room. Looking quickly around you, you see a countertop 1, a desk 1, "
                    "a drawer 2, a drawer 1, a fridge 1, a microwave 1, and a sinkbasin 1.");
    play(e, "go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a apple 2, a apple 1, and a knife 1.");
    play(e, "look", "You are facing the countertop 1. Next to it, you see a pillow 1.");   /* on the floor */
    const char *const *adm;
    int n;
    assert_int_equal(e->cls->admissible(e, &adm, &n), 0);
    static const char *const want[] = {
        "examine apple 1", "examine apple 2", "examine countertop 1", "examine knife 1", "go to desk 1", "go to drawer 1",
        "go to drawer 2", "go to fridge 1", "go to microwave 1", "go to sinkbasin 1", "help", "inventory", "look",
        "take apple 1 from countertop 1", "take apple 2 from countertop 1", "take knife 1 from countertop 1"};
    assert_int_equal(n, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < n; i++) assert_string_equal(adm[i], want[i]);
    play(e, "take knife 1 from countertop 1", "You pick up the knife 1 from the countertop 1.");
    play(e, "take apple 1 from countertop 1", "Nothing happens.");   /* hands full */
    play(e, "slice apple 1 with knife 1", "You sliced the apple 1 with the knife 1.");
    play(e, "examine apple 1", "This is a sliced apple 1.");
    play(e, "inventory", "You are carrying: a knife 1.");
    r = play(e, "put knife 1 in/on countertop 1", "You move the knife 1 to the countertop 1.");
    assert_int_equal(r.valid, 1);
    play(e, "inventory", "You are not carrying anything.");
    play(e, "  take apple 2 from countertop 1  ", "You pick up the apple 2 from the countertop 1.");
    play(e, "examine apple 2", "There's nothing special about apple 2.");
    r = play(e, "heat apple 2 with microwave 1", "Nothing happens.");
    assert_int_equal(r.valid, 0);
    play(e, "go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed.");
    play(e, "heat apple 2 with microwave 1", "You heat the apple 2 using the microwave 1.");
    play(e, "examine apple 2", "This is a hot apple 2.");
    play(e, "go to sinkbasin 1", "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing.");
    play(e, "clean apple 2 with sinkbasin 1", "You clean the apple 2 using the sinkbasin 1.");
    play(e, "examine apple 2", "This is a hot and clean apple 2.");
    play(e, "go to drawer 2", "You arrive at drawer 2. The drawer 2 is closed.");
    play(e, "look", "You are facing the drawer 2, and drawer 1. Next to it, you see nothing.");
    play(e, "go to drawer 1", "Nothing happens.");   /* same location as drawer 2 */
    play(e, "open drawer 1", "You open the drawer 1. The drawer 1 is open. In it, you see nothing.");
    play(e, "examine drawer 1", "The drawer 1 is open. In it, you see nothing.");
    play(e, "close drawer 1", "You close the drawer 1.");
    play(e, "close drawer 1", "Nothing happens.");
    play(e, "examine drawer 1", "The drawer 1 is closed.");
    play(e, "go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed.");
    play(e, "move apple 2 to fridge 1", "Nothing happens.");   /* closed */
    play(e, "open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a mug 1.");
    play(e, "examine mug 1", "This is a normal mug 1. In it, you see nothing.");
    play(e, "cool apple 2 with fridge 1", "You cool the apple 2 using the fridge 1.");
    play(e, "examine apple 2", "This is a cool and clean apple 2.");
    r = play(e, "move apple 2 to fridge 1", "You move the apple 2 to the fridge 1.");
    assert_int_equal(r.won, 0);   /* cooled: no longer hot */
    play(e, "examine fridge 1", "The fridge 1 is open. In it, you see a apple 2, and a mug 1.");
    play(e, "take apple 2 from fridge 1", "You pick up the apple 2 from the fridge 1.");
    play(e, "go to desk 1", "You arrive at desk 1. On the desk 1, you see a desklamp 1.");
    play(e, "examine desklamp 1", "This desklamp 1 is off.");
    play(e, "use desklamp 1", "You turn on the desklamp 1.");
    play(e, "examine desklamp 1", "This desklamp 1 is on.");
    play(e, "use desklamp 1", "You turn on the desklamp 1.");   /* isToggled stays set, as in alfworld */
    r = play(e, "xyzzy", "Nothing happens.");
    assert_int_equal(r.valid, 0);
    play(e, "help", m2_aw_help_text);
    play(e, "go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed.");
    play(e, "heat apple 2 with microwave 1", "You heat the apple 2 using the microwave 1.");
    r = play(e, "go to fridge 1", "You arrive at fridge 1. The fridge 1 is open. In it, you see a mug 1.");
    assert_int_equal(r.done, 0);
    assert_true(r.reward == 0.f);
    r = play(e, "put apple 2 in fridge 1", "You move the apple 2 to the fridge 1.");
    assert_int_equal(r.won, 1);
    assert_int_equal(r.done, 1);
    assert_true(r.reward == 1.f && r.score == 1.f);
    r = play(e, "look", "You are facing the fridge 1. Next to it, you see nothing.");
    assert_true(r.reward == 0.f);
    assert_int_equal(r.won, 1);
    m2_env_destroy(e);
}

/* The help text and the feedback templates match alfred.twl2 when the reference data is present. */
static void texts_match_grammar(void **state) {
    const char *dir = m2_shared_data_dir();
    if (!dir) skip();
    char path[512], *g = NULL;
    snprintf(path, sizeof path, "%s/alfworld/alfred.twl2", dir);
    m2_err err = {0};
    if (m2_read_file(path, &g, NULL, &err)) skip();
    char esc[4096];
    size_t k = 0;
    for (const char *p = m2_aw_help_text; *p; p++) {
        if (*p == '\n') { esc[k++] = '\\'; esc[k++] = 'n'; } else esc[k++] = *p;
    }
    esc[k] = 0;
    assert_non_null(strstr(g, esc));
    static const char *const tmpl[] = {
        "You arrive at {r.name}. #examineReceptacle.feedback#", "You open the {r.name}. #examineReceptacle.feedback#",
        "You close the {r.name}.", "You pick up the {o.name} from the {r.name}.", "You move the {o.name} to the {r.name}.",
        "The {r.name} is open. In it, you see [", "The {r.name} is closed.", "On the {r.name}, you see [",
        "You are carrying: [", "You are not carrying anything.", "This is a hot and clean {o.name}.",
        "This is a cold {o.name}.", "This {o.name} is on.", "There's nothing special about {o.name}.",
        "You turn on the {o.name}.", "You heat the {o.name} using the {r.name}.", "You cool the {o.name} using the {r.name}.",
        "You clean the {o.name} using the {r.name}.", "You sliced the {co.name} with the {ko.name}.",
        "Next to it, you see", "You are in the middle of a room. Looking quickly around you, you see",
        "-= Welcome to TextWorld, ALFRED! =-", "This is a normal {o.name}. In it, you see ["};
    for (size_t i = 0; i < sizeof tmpl / sizeof tmpl[0]; i++)
        if (!strstr(g, tmpl[i])) fail_msg("template not in alfred.twl2: %s", tmpl[i]);
    free(g);
}

/* ------------------------------------------------------------------ oracle over generated tasks */
static char *shared_alfworld(void);

static int in_list(const char *const *l, int n, const char *s) {
    for (int i = 0; i < n; i++) if (!strcmp(l[i], s)) return 1;
    return 0;
}

static void check_sorted_unique(const char *const *l, int n) {
    for (int i = 1; i < n; i++) assert_true(strcmp(l[i - 1], l[i]) < 0);
}

/* Runs the oracle on episodes of (type, split): every action admissible, every episode won within 50 steps. */
static void oracle_sweep(m2_env *e, int type, m2_split split, int max_eps, uint64_t seed) {
    m2_err err = {0};
    const m2_env_class *c = e->cls;
    const char *task = m2_aw_task_type_name(type);
    int n = c->num_episodes(e, task, split, &err);
    assert_true(n > 0);
    if (n > max_eps) n = max_eps;
    for (int i = 0; i < n; i++) {
        m2_step_result r;
        if (c->reset(e, task, split, i, seed + (uint64_t)i, &r, &err)) fail_msg("reset %s/%d: %s", task, i, err.msg);
        int steps = 0;
        while (!r.done) {
            char a[256];
            if (c->oracle_next(e, a, sizeof a, &err)) fail_msg("%s %s #%d: oracle: %s", task, m2_split_name(split), i, err.msg);
            const char *const *adm;
            int na;
            assert_int_equal(c->admissible(e, &adm, &na), 0);
            check_sorted_unique(adm, na);
            if (!in_list(adm, na, a)) fail_msg("%s #%d: oracle action '%s' not admissible", task, i, a);
            c->step(e, a, &r);
            assert_int_equal(r.valid, 1);
            if (++steps > 50) fail_msg("%s %s #%d: not won within 50 steps", task, m2_split_name(split), i);
        }
        assert_int_equal(r.won, 1);
        assert_true(r.reward == 1.f);
        char a[256];
        assert_int_equal(c->oracle_next(e, a, sizeof a, &err), -1);   /* nothing left to do */
    }
}

static void oracle_all(m2_env *e) {
    for (int t = 1; t <= 6; t++) {
        oracle_sweep(e, t, M2_SPLIT_TRAIN, 120, 11);
        oracle_sweep(e, t, M2_SPLIT_ID, 1000, 0);
        oracle_sweep(e, t, M2_SPLIT_OOD, 1000, 0);
    }
}

/* Scene level: 100+ generated episodes per (split, type); id/ood use their fixed indices with many seeds
 * so the unseen plans get 100+ distinct scenes per type too. */
static void scene_sweep(const m2_aw_tables *t, int mode) {
    m2_err err = {0};
    m2_aw_cmdlist l = {0};
    for (int sp = 0; sp < 3; sp++)
        for (int type = 1; type <= 6; type++) {
            int count = m2_aw_num_generated(type, sp), wins = 0;
            for (int k = 0; k < 100; k++) {
                m2_aw_scene s;
                if (m2_aw_generate(t, type, sp, k % count, 1000 + (uint64_t)k, &s, &err)) fail_msg("%s", err.msg);
                m2_aw_state st;
                assert_int_equal(m2_aw_state_init(&st, &s, &err), 0);
                assert_false(m2_aw_won(&s, &st));
                for (int step = 0; step < 50 && !m2_aw_won(&s, &st); step++) {
                    char a[256], buf[8192];
                    if (m2_aw_oracle_mode(&s, &st, mode, a, sizeof a, &err)) fail_msg("%s: %s", s.source, err.msg);
                    assert_int_equal(m2_aw_admissible(&s, &st, &l), 0);
                    if (!in_list(l.items, l.n, a)) fail_msg("%s: '%s' not admissible", s.source, a);
                    m2_aw_cmd c;
                    assert_int_equal(m2_aw_parse(&s, a, &c), 0);
                    m2_aw_apply(&s, &st, &c, buf, sizeof buf);
                }
                wins += m2_aw_won(&s, &st);
                m2_aw_state_free(&st);
                m2_aw_scene_free(&s);
            }
            assert_int_equal(wins, 100);
        }
    m2_aw_cmdlist_free(&l);
}

/* The searching expert only takes objects from receptacles the agent has seen, and its first step
 * from the middle of the room is a "go to". */
static void search_expert_is_not_psychic(void **state) {
    m2_err err = {0};
    m2_aw_tables t;
    assert_int_equal(m2_aw_tables_embedded(&t, &err), 0);
    int searched = 0;
    for (int i = 0; i < 200; i++) {
        m2_aw_scene s;
        assert_int_equal(m2_aw_generate(&t, 1 + i % 6, M2_SPLIT_TRAIN, i, 77, &s, &err), 0);
        m2_aw_state st;
        assert_int_equal(m2_aw_state_init(&st, &s, &err), 0);
        int visits = 0;
        for (int k = 0; k < 50 && !m2_aw_won(&s, &st); k++) {
            char a[256], buf[8192];
            assert_int_equal(m2_aw_oracle(&s, &st, a, sizeof a, &err), 0);
            m2_aw_cmd c;
            assert_int_equal(m2_aw_parse(&s, a, &c), 0);
            if (k == 0) assert_int_equal(c.verb, M2_AW_C_GOTO);
            if (c.verb == M2_AW_C_TAKE) assert_true(st.seen[c.b]);
            if (c.verb == M2_AW_C_USE) assert_true(st.seen[st.in[c.a]]);
            visits += c.verb == M2_AW_C_GOTO;
            m2_aw_apply(&s, &st, &c, buf, sizeof buf);
        }
        assert_true(m2_aw_won(&s, &st));
        searched += visits > 3;
        m2_aw_state_free(&st);
        m2_aw_scene_free(&s);
    }
    assert_true(searched > 40);   /* it does search, not walk straight to the object */
    m2_aw_tables_free(&t);
}

static void oracle_scene_sweep(void **state) {
    m2_err err = {0};
    m2_aw_tables t;
    assert_int_equal(m2_aw_tables_embedded(&t, &err), 0);
    scene_sweep(&t, M2_AW_ORACLE_SEARCH);
    scene_sweep(&t, M2_AW_ORACLE_PLANNER);
    m2_aw_tables_free(&t);
    char *dir = shared_alfworld();
    if (!dir) return;
    if (m2_aw_tables_load(&t, dir, &err)) fail_msg("%s", err.msg);
    scene_sweep(&t, M2_AW_ORACLE_SEARCH);
    scene_sweep(&t, M2_AW_ORACLE_PLANNER);
    m2_aw_tables_free(&t);
}

static void oracle_wins_embedded(void **state) {
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("alfworld", NULL, &e, &err), 0);
    oracle_all(e);
    assert_int_equal(m2_aw_set_oracle(e, "planner", &err), 0);
    oracle_all(e);
    assert_int_equal(m2_aw_set_oracle(e, "psychic", &err), -1);
    assert_non_null(strstr(err.msg, "psychic"));
    m2_env_destroy(e);
}

static char *shared_alfworld(void) {
    const char *dir = m2_shared_data_dir();
    if (!dir) return NULL;
    static char path[512];
    snprintf(path, sizeof path, "%s/alfworld", dir);
    char probe[600];
    snprintf(probe, sizeof probe, "%s/constants.json", path);
    return m2_path_exists(probe) ? path : NULL;
}

static void oracle_wins_shared(void **state) {
    char *dir = shared_alfworld();
    if (!dir) skip();
    m2_err err = {0};
    m2_env *e = NULL;
    if (m2_env_create("alfworld", dir, &e, &err)) fail_msg("%s", err.msg);
    oracle_all(e);
    m2_env_destroy(e);
}

/* Seen plans serve train/id, unseen plans serve ood, for both table sets. */
static void splits_use_disjoint_plans(void **state) {
    m2_err err = {0};
    for (int which = 0; which < 2; which++) {
        m2_aw_tables t;
        if (which == 0) assert_int_equal(m2_aw_tables_embedded(&t, &err), 0);
        else {
            char *dir = shared_alfworld();
            if (!dir) continue;
            if (m2_aw_tables_load(&t, dir, &err)) fail_msg("%s", err.msg);
            assert_int_equal(t.n_plans, 96);
        }
        for (int sp = 0; sp < 3; sp++)
            for (int i = 0; i < 60; i++) {
                m2_aw_scene s;
                if (m2_aw_generate(&t, 0, sp, i * 7 % m2_aw_num_generated(0, sp), 3, &s, &err)) fail_msg("%s", err.msg);
                int unseen = -1;
                for (int p = 0; p < t.n_plans; p++) if (t.plans[p].number == s.plan) unseen = t.plans[p].unseen;
                assert_int_equal(unseen, sp == M2_SPLIT_OOD);
                m2_aw_scene_free(&s);
            }
        if (which == 1) {
            /* ALFWorld's valid_unseen rooms */
            int un[4] = {0}, k = 0;
            for (int p = 0; p < t.n_plans; p++) if (t.plans[p].unseen && k < 4) un[k++] = t.plans[p].number;
            assert_int_equal(k, 4);
            assert_int_equal(un[0] + un[1] + un[2] + un[3], 10 + 219 + 308 + 424);
        }
        m2_aw_tables_free(&t);
    }
}

/* ------------------------------------------------------------------ determinism */

static char *transcript(m2_env *e, const char *task, m2_split sp, int idx, uint64_t seed) {
    m2_err err = {0};
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(cap, 1);
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, task, sp, idx, seed, &r, &err), 0);
    len += (size_t)snprintf(out + len, cap - len, "%s\n", r.observation);
    for (int k = 0; k < 50 && !r.done; k++) {
        char a[256];
        assert_int_equal(e->cls->oracle_next(e, a, sizeof a, &err), 0);
        e->cls->step(e, a, &r);
        len += (size_t)snprintf(out + len, cap - len, "> %s\n%s\n", a, r.observation);
    }
    return out;
}

static void determinism(void **state) {
    m2_err err = {0};
    m2_env *a = NULL, *b = NULL;
    assert_int_equal(m2_env_create("alfworld", NULL, &a, &err), 0);
    assert_int_equal(m2_env_create("alfworld", NULL, &b, &err), 0);
    int differ = 0;
    for (int i = 0; i < 40; i++) {
        char *x = transcript(a, NULL, M2_SPLIT_TRAIN, i * 37, 5);
        free(transcript(b, NULL, M2_SPLIT_TRAIN, 3, 99));   /* interleave other work */
        char *y = transcript(b, NULL, M2_SPLIT_TRAIN, i * 37, 5);
        assert_string_equal(x, y);
        char *z = transcript(b, NULL, M2_SPLIT_TRAIN, i * 37, 6);
        differ += strcmp(x, z) != 0;
        free(x); free(y); free(z);
        /* eval splits are fixed sets: the seed does not change them */
        x = transcript(a, NULL, M2_SPLIT_OOD, i, 1);
        y = transcript(b, NULL, M2_SPLIT_OOD, i, 2);
        assert_string_equal(x, y);
        free(x); free(y);
    }
    assert_true(differ > 30);
    /* id and train differ for the same index */
    char *x = transcript(a, NULL, M2_SPLIT_TRAIN, 0, 0), *y = transcript(a, NULL, M2_SPLIT_ID, 0, 0);
    assert_true(strcmp(x, y) != 0);
    free(x); free(y);
    m2_env_destroy(a);
    m2_env_destroy(b);
}

/* ------------------------------------------------------------------ game.tw-pddl round trip */

static void run_oracle_on_scene(const m2_aw_scene *s, char *log, size_t cap) {
    m2_aw_state st;
    m2_err err = {0};
    assert_int_equal(m2_aw_state_init(&st, s, &err), 0);
    m2_aw_cmdlist l = {0};
    size_t len = 0;
    char buf[8192];
    m2_aw_text_intro(s, &st, buf, sizeof buf);
    len += (size_t)snprintf(log + len, cap - len, "%s\n", buf);
    for (int k = 0; k < 50 && !m2_aw_won(s, &st); k++) {
        char a[256];
        assert_int_equal(m2_aw_admissible(s, &st, &l), 0);
        for (int i = 0; i < l.n; i++) len += (size_t)snprintf(log + len, cap - len, "[%s]", l.items[i]);
        assert_int_equal(m2_aw_oracle(s, &st, a, sizeof a, &err), 0);
        m2_aw_cmd c;
        assert_int_equal(m2_aw_parse(s, a, &c), 0);
        assert_true(m2_aw_applicable(s, &st, &c));
        m2_aw_apply(s, &st, &c, buf, sizeof buf);
        len += (size_t)snprintf(log + len, cap - len, "\n> %s\n%s\n", a, buf);
    }
    assert_true(m2_aw_won(s, &st));
    m2_aw_cmdlist_free(&l);
    m2_aw_state_free(&st);
}

static void roundtrip_tables(m2_aw_tables *t) {
    m2_err err = {0};
    char *la = malloc(1 << 18), *lb = malloc(1 << 18);
    for (int sp = 0; sp < 3; sp++)
        for (int type = 1; type <= 6; type++)
            for (int i = 0; i < 6; i++) {
                m2_aw_scene s, back;
                if (m2_aw_generate(t, type, sp, i, 42, &s, &err)) fail_msg("%s", err.msg);
                char *j = m2_aw_write_twpddl(&s, t, &err);
                assert_non_null(j);
                if (m2_aw_load_twpddl_text(j, strlen(j), "roundtrip", &back, &err)) fail_msg("%s\n", err.msg);
                assert_string_equal(s.task_text, back.task_text);
                assert_int_equal(s.goal.type, back.goal.type);
                assert_int_equal(s.n_obj, back.n_obj);
                assert_int_equal(s.n_recep, back.n_recep);
                assert_int_equal(s.plan, back.plan);
                run_oracle_on_scene(&s, la, 1 << 18);
                run_oracle_on_scene(&back, lb, 1 << 18);
                assert_string_equal(la, lb);
                free(j);
                m2_aw_scene_free(&s);
                m2_aw_scene_free(&back);
            }
    free(la);
    free(lb);
}

/* A fixed script over a scene, transcript into log. */
static void script(const m2_aw_scene *s, const char *const *acts, int n, char *log, size_t cap) {
    m2_aw_state st;
    m2_err err = {0};
    assert_int_equal(m2_aw_state_init(&st, s, &err), 0);
    size_t len = 0;
    char buf[8192];
    m2_aw_text_intro(s, &st, buf, sizeof buf);
    len += (size_t)snprintf(log + len, cap - len, "%s\n", buf);
    for (int i = 0; i < n; i++) {
        m2_aw_cmd c;
        if (!m2_aw_parse(s, acts[i], &c) && m2_aw_applicable(s, &st, &c)) m2_aw_apply(s, &st, &c, buf, sizeof buf);
        else snprintf(buf, sizeof buf, "Nothing happens.");
        len += (size_t)snprintf(log + len, cap - len, "> %s\n%s [%d]\n", acts[i], buf, m2_aw_won(s, &st));
    }
    m2_aw_state_free(&st);
}

static void twpddl_roundtrip(void **state) {
    m2_err err = {0};
    m2_aw_tables t;
    {   /* the hand-written file survives write + read: same transcript */
        m2_aw_scene a, b;
        char *j = golden_json();
        assert_int_equal(m2_aw_load_twpddl_text(j, strlen(j), "golden", &a, &err), 0);
        free(j);
        j = m2_aw_write_twpddl(&a, NULL, &err);
        assert_non_null(j);
        if (m2_aw_load_twpddl_text(j, strlen(j), "golden-written", &b, &err)) fail_msg("%s", err.msg);
        free(j);
        static const char *const acts[] = {"go to countertop 1", "look", "take apple 2 from countertop 1", "go to microwave 1",
            "heat apple 2 with microwave 1", "go to drawer 1", "look", "go to fridge 1", "open fridge 1", "move apple 2 to fridge 1"};
        char la[8192], lb[8192];
        script(&a, acts, 10, la, sizeof la);
        script(&b, acts, 10, lb, sizeof lb);
        assert_string_equal(la, lb);
        assert_non_null(strstr(la, "Next to it, you see a pillow 1."));
        assert_non_null(strstr(la, "You move the apple 2 to the fridge 1. [1]"));
        m2_aw_scene_free(&a);
        m2_aw_scene_free(&b);
    }
    assert_int_equal(m2_aw_tables_embedded(&t, &err), 0);
    roundtrip_tables(&t);
    /* through a file and the env: a folder of games with split names in the paths */
    char dir[512], path[700];
    const char *splits[] = {"train", "valid_seen", "valid_unseen"};
    for (int sp = 0; sp < 3; sp++) {
        snprintf(dir, sizeof dir, "%s/games/%s/g0", tmpdir, splits[sp]);
        assert_int_equal(m2_mkdir_p(dir, &err), 0);
        m2_aw_scene s;
        assert_int_equal(m2_aw_generate(&t, M2_AW_HEAT, sp, 0, 1, &s, &err), 0);
        snprintf(path, sizeof path, "%s/game.tw-pddl", dir);
        assert_int_equal(m2_aw_save_twpddl(&s, &t, path, &err), 0);
        m2_aw_scene_free(&s);
    }
    snprintf(dir, sizeof dir, "%s/games", tmpdir);
    /* an ALFWorld-style tree written by the exporter joins the same folder */
    assert_int_equal(m2_aw_export(&t, M2_AW_LOOK, M2_SPLIT_OOD, 3, 0, dir, &err), 3);
    assert_int_equal(m2_aw_export(&t, 0, M2_SPLIT_ID, 4, 0, dir, &err), 4);
    m2_aw_tables_free(&t);
    m2_env *e = NULL;
    if (m2_env_create("alfworld", dir, &e, &err)) fail_msg("%s", err.msg);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err), 1);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_ID, &err), 5);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_OOD, &err), 4);
    assert_int_equal(e->cls->num_episodes(e, "look", M2_SPLIT_OOD, &err), 3);
    assert_int_equal(e->cls->num_episodes(e, "pick", M2_SPLIT_ID, &err), 4);   /* the first 4 of id are pick tasks */
    for (int sp = 0; sp < 3; sp++) assert_int_equal(e->cls->num_episodes(e, "pick_heat_then_place_in_recep", sp, &err), 1);
    oracle_sweep(e, M2_AW_HEAT, M2_SPLIT_OOD, 5, 0);
    oracle_sweep(e, M2_AW_LOOK, M2_SPLIT_OOD, 5, 0);
    oracle_sweep(e, M2_AW_PICK, M2_SPLIT_ID, 5, 0);
    {   /* each exported eval episode plays exactly like one of the generated ones (folder order is by path) */
        m2_env *g = NULL;
        assert_int_equal(m2_env_create("alfworld", NULL, &g, &err), 0);
        for (int i = 0; i < 3; i++) {
            char *y = transcript(e, "look", M2_SPLIT_OOD, i, 0);
            int match = 0;
            for (int k = 0; k < 3; k++) {
                char *x = transcript(g, "look", M2_SPLIT_OOD, k, 0);
                match += !strcmp(x, y);
                free(x);
            }
            assert_int_equal(match, 1);
            free(y);
        }
        m2_env_destroy(g);
    }
    char *d = e->cls->describe(e, NULL, M2_SPLIT_ID, 0, &err);
    assert_non_null(d);
    assert_non_null(strstr(d, "pick_heat_then_place_in_recep"));
    free(d);
    m2_env_destroy(e);
    char *shared = shared_alfworld();
    if (shared) {
        if (m2_aw_tables_load(&t, shared, &err)) fail_msg("%s", err.msg);
        roundtrip_tables(&t);
        /* exports from the shared tables carry ALFWorld's own domain and grammar */
        m2_aw_scene s;
        assert_int_equal(m2_aw_generate(&t, M2_AW_COOL, M2_SPLIT_ID, 3, 0, &s, &err), 0);
        char *j = m2_aw_write_twpddl(&s, &t, &err);
        assert_non_null(strstr(j, "(:action PutObject"));
        assert_non_null(strstr(j, "Your task is to: "));
        free(j);
        m2_aw_scene_free(&s);
        m2_aw_tables_free(&t);
    }
}

/* ------------------------------------------------------------------ bad inputs */

static void expect_load_error(const char *json, const char *needle) {
    m2_aw_scene s;
    m2_err err = {0};
    if (m2_aw_load_twpddl_text(json, strlen(json), "bad.tw-pddl", &s, &err) == 0) fail_msg("loaded bad file: %s", json);
    if (!strstr(err.msg, "bad.tw-pddl") || !strstr(err.msg, needle)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static char *with_problem(const char *problem) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pddl_problem", problem);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void bad_game_files(void **state) {
    expect_load_error("{not json", "not a JSON object");
    expect_load_error("[1,2]", "not a JSON object");
    expect_load_error("{\"grammar\": \"x\"}", "pddl_problem");
    expect_load_error("{\"pddl_problem\": 3}", "pddl_problem");
    expect_load_error("{\"pddl_problem\": \"(define\", \"grammar\": 1}", "grammar");
    expect_load_error("{\"pddl_problem\": \"(define (problem x))\", \"solvable\": \"yes\"}", "solvable");
    static const struct { const char *problem, *needle; } cases[] = {
        {"(define (problem x)", "unbalanced"},
        {"(define (problem x)))", "unexpected ')'"},
        {"(foo)", "define"},
        {"(define (problem x) (:init) (:goal (and)))", ":objects"},
        {"(define (problem x) (:objects a - agent) (:goal (and)))", ":init"},
        {"(define (problem x) (:objects a - agent l - location) (:init (atLocation a l)))", ":goal"},
        {"(define (problem x) (:objects a - agent) (:init (inReceptacle Foo Bar)) (:goal (and)))", "undeclared"},
        {"(define (problem x) (:objects a - agent l - location) (:init) (:goal (and)))", "atLocation"},
        {"(define (problem x) (:objects a - agent l - location) (:init (atLocation a l)) (:goal (and (foo))))", "task shapes"},
        {"(define (problem x) (:objects a - agent l - location r - receptacle) (:init (atLocation a l)) "
         "(:goal (exists (?o - object ?r - receptacle) (and (inReceptacle ?o ?r) (objectType ?o AppleType) (receptacleType ?r DeskType)))))",
         "receptacleType fact"},
        {"(define (problem x) (:objects a - agent l - location o - object) (:init (atLocation a l) (canContain XType)) (:goal (and)))", "two arguments"},
        {"(define (problem x) (:objects a - agent l - location o - object -) (:init) (:goal (and)))", "without a type"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = with_problem(cases[i].problem);
        expect_load_error(j, cases[i].needle);
        free(j);
    }
    /* deep nesting and truncations of a good file never crash */
    char deep[3000];
    memset(deep, '(', 2000);
    deep[2000] = 0;
    char *j = with_problem(deep);
    expect_load_error(j, "nesting");
    free(j);
    char *good = golden_json();
    size_t n = strlen(good);
    for (size_t cut = 0; cut < n; cut += 7) {
        m2_aw_scene s;
        m2_err err = {0};
        if (m2_aw_load_twpddl_text(good, cut, "cut", &s, &err) == 0) m2_aw_scene_free(&s);
    }
    free(good);
    /* env creation: missing path, folder without games */
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("alfworld", "/nonexistent/alfworld", &e, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/alfworld"));
    char dir[512];
    snprintf(dir, sizeof dir, "%s/empty", tmpdir);
    assert_int_equal(m2_mkdir_p(dir, &err), 0);
    assert_int_equal(m2_env_create("alfworld", dir, &e, &err), -1);
    assert_non_null(strstr(err.msg, "tw-pddl"));
}

static void bad_tables(void **state) {
    m2_err err = {0};
    m2_aw_tables t;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/tables", tmpdir);
    assert_int_equal(m2_mkdir_p(dir, &err), 0);
    snprintf(path, sizeof path, "%s/constants.json", dir);
    write_text(path, "{\"VAL_RECEPTACLE_OBJECTS\": []}");
    assert_int_equal(m2_aw_tables_load(&t, dir, &err), -1);
    assert_non_null(strstr(err.msg, "constants.json"));
    assert_non_null(strstr(err.msg, "VAL_RECEPTACLE_OBJECTS"));
    write_text(path, "{\"VAL_RECEPTACLE_OBJECTS\": {\"Desk\": [\"Book\"]}, \"VAL_ACTION_OBJECTS\": {}}");
    assert_int_equal(m2_aw_tables_load(&t, dir, &err), -1);
    assert_non_null(strstr(err.msg, "OPENABLE_CLASS_LIST"));
    write_text(path, "{\"VAL_RECEPTACLE_OBJECTS\": {\"Desk\": [\"Book\"]}, \"VAL_ACTION_OBJECTS\": {\"Toggleable\": [\"DeskLamp\"], "
                     "\"Cleanable\": [], \"Heatable\": [], \"Coolable\": [], \"Sliceable\": []}, \"OPENABLE_CLASS_LIST\": [], "
                     "\"MOVABLE_RECEPTACLES\": [], \"SCENE_TYPE\": {\"Bedroom\": [301]}, \"TRAIN_SCENE_NUMBERS\": [301]}");
    assert_int_equal(m2_aw_tables_load(&t, dir, &err), -1);
    assert_non_null(strstr(err.msg, "FloorPlan301-objects.json"));
    char lay[600];
    snprintf(lay, sizeof lay, "%s/layouts", dir);
    assert_int_equal(m2_mkdir_p(lay, &err), 0);
    snprintf(lay, sizeof lay, "%s/layouts/FloorPlan301-objects.json", dir);
    write_text(lay, "[\"Desk\", \"Book\", \"DeskLamp\"]");
    snprintf(lay, sizeof lay, "%s/layouts/FloorPlan301-openable.json", dir);
    write_text(lay, "{\"Desk|+01.00|+00.00|+02.00\": [1.0, 2.0, 90]}");
    assert_int_equal(m2_aw_tables_load(&t, dir, &err), -1);
    assert_non_null(strstr(err.msg, "FloorPlan301-openable.json"));
    assert_non_null(strstr(err.msg, "pose"));
    write_text(lay, "{\"Desk|+01.00|+00.00|+02.00\": [1.0, 2.0, 90, 30]}");
    assert_int_equal(m2_aw_tables_load(&t, dir, &err), 0);
    assert_int_equal(t.n_plans, 1);
    /* a one-plan table: bedroom plans serve pick and look; heat has no kitchen -> clear error */
    m2_aw_scene s;
    assert_int_equal(m2_aw_generate(&t, M2_AW_LOOK, M2_SPLIT_TRAIN, 0, 0, &s, &err), 0);
    m2_aw_scene_free(&s);
    assert_int_equal(m2_aw_generate(&t, M2_AW_HEAT, M2_SPLIT_TRAIN, 0, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "pick_heat_then_place_in_recep"));
    assert_int_equal(m2_aw_generate(&t, M2_AW_PICK, M2_SPLIT_OOD, 0, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "unseen"));
    /* counts list only what the plans support: with one desk, nothing can be moved anywhere, so only
     * look tasks exist, and "all" is just them */
    assert_int_equal(m2_aw_num_episodes(&t, M2_AW_HEAT, M2_SPLIT_TRAIN), 0);
    assert_int_equal(m2_aw_num_episodes(&t, M2_AW_PICK, M2_SPLIT_TRAIN), 0);
    assert_int_equal(m2_aw_num_episodes(&t, M2_AW_LOOK, M2_SPLIT_TRAIN), 308);
    assert_int_equal(m2_aw_num_episodes(&t, 0, M2_SPLIT_TRAIN), 308);
    assert_int_equal(m2_aw_num_episodes(&t, 0, M2_SPLIT_OOD), 0);
    assert_int_equal(m2_aw_generate(&t, 0, M2_SPLIT_TRAIN, 5, 0, &s, &err), 0);
    assert_int_equal(s.goal.type, M2_AW_LOOK);
    m2_aw_scene_free(&s);
    m2_aw_tables_free(&t);
}

static void junk_actions(void **state) {
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("alfworld", NULL, &e, &err), 0);
    m2_step_result r;
    /* before reset */
    assert_int_equal(e->cls->step(e, "look", &r), 0);
    assert_string_equal(r.observation, "Nothing happens.");
    assert_int_equal(e->cls->reset(e, "pick_two", M2_SPLIT_TRAIN, 5, 1, &r, &err), 0);
    static const char *const junk[] = {"", " ", "go to", "go to ", "go to nowhere 1", "take", "take  from ", "take apple 1",
        "move to", "put in/on", "put x in", "heat with", "slice with with", "open", "close 1", "examine", "use",
        "LOOK", "look around", "inventory please", "help me", "go to countertop 99", "\xff\xfe", "go to\tcountertop 1",
        "take from from from", "put in/on in/on in/on"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        assert_int_equal(e->cls->step(e, junk[i], &r), 0);
        assert_string_equal(r.observation, "Nothing happens.");
        assert_int_equal(r.valid, 0);
    }
    assert_int_equal(e->cls->step(e, NULL, &r), 0);
    assert_string_equal(r.observation, "Nothing happens.");
    char big[20000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(e->cls->step(e, big, &r), 0);
    assert_string_equal(r.observation, "Nothing happens.");
    m2_rng rng;
    m2_rng_seed(&rng, 3);
    for (int k = 0; k < 2000; k++) {
        char a[64];
        int n = (int)m2_rng_below(&rng, 63);
        for (int i = 0; i < n; i++) a[i] = (char)(1 + m2_rng_below(&rng, 255));
        a[n] = 0;
        assert_int_equal(e->cls->step(e, a, &r), 0);
    }
    m2_env_destroy(e);
}

/* For random walks: a command is admissible exactly when stepping it is valid (every candidate
 * grounding over all entities is checked against the list). */
static void admissible_matches_dynamics(void **state) {
    m2_err err = {0};
    m2_aw_tables t;
    assert_int_equal(m2_aw_tables_embedded(&t, &err), 0);
    m2_rng rng;
    m2_rng_seed(&rng, 17);
    m2_aw_cmdlist l = {0};
    for (int ep = 0; ep < 12; ep++) {
        m2_aw_scene s;
        assert_int_equal(m2_aw_generate(&t, 1 + ep % 6, M2_SPLIT_TRAIN, ep, 9, &s, &err), 0);
        m2_aw_state st;
        assert_int_equal(m2_aw_state_init(&st, &s, &err), 0);
        for (int k = 0; k < 25; k++) {
            assert_int_equal(m2_aw_admissible(&s, &st, &l), 0);
            check_sorted_unique(l.items, l.n);
            int n_ok = 0;
            for (int verb = M2_AW_C_LOOK; verb <= M2_AW_C_EXAMINE_O; verb++) {
                int na = (verb == M2_AW_C_GOTO || verb == M2_AW_C_OPEN || verb == M2_AW_C_CLOSE || verb == M2_AW_C_EXAMINE_R) ? s.n_recep : s.n_obj;
                int nb = (verb == M2_AW_C_TAKE || verb == M2_AW_C_MOVE || verb == M2_AW_C_HEAT || verb == M2_AW_C_COOL || verb == M2_AW_C_CLEAN) ? s.n_recep
                       : verb == M2_AW_C_SLICE ? s.n_obj : 1;
                if (verb <= M2_AW_C_HELP) na = 1;
                for (int a = 0; a < na; a++)
                    for (int b = 0; b < nb; b++) {
                        m2_aw_cmd c = {verb, verb <= M2_AW_C_HELP ? -1 : a, nb > 1 ? b : -1};
                        char text[256];
                        if (m2_aw_format_cmd(&s, &c, text, sizeof text)) continue;
                        int ok = m2_aw_applicable(&s, &st, &c);
                        if (ok != in_list(l.items, l.n, text)) fail_msg("'%s': applicable %d but listed %d", text, ok, !ok);
                        m2_aw_cmd back;
                        assert_int_equal(m2_aw_parse(&s, text, &back), 0);
                        n_ok += ok;
                    }
            }
            assert_int_equal(n_ok, l.n);
            /* random admissible step */
            const char *pick = l.items[m2_rng_below(&rng, (uint32_t)l.n)];
            m2_aw_cmd c;
            assert_int_equal(m2_aw_parse(&s, pick, &c), 0);
            char buf[8192];
            m2_aw_apply(&s, &st, &c, buf, sizeof buf);
            assert_true(strcmp(buf, "Nothing happens.") != 0);
        }
        /* the oracle recovers from wherever the random walk left it */
        for (int k = 0; k < 60 && !m2_aw_won(&s, &st); k++) {
            char a[256];
            if (m2_aw_oracle(&s, &st, a, sizeof a, &err)) fail_msg("oracle after random walk: %s", err.msg);
            m2_aw_cmd c;
            assert_int_equal(m2_aw_parse(&s, a, &c), 0);
            assert_true(m2_aw_applicable(&s, &st, &c));
            char buf[8192];
            m2_aw_apply(&s, &st, &c, buf, sizeof buf);
        }
        assert_true(m2_aw_won(&s, &st));
        m2_aw_state_free(&st);
        m2_aw_scene_free(&s);
    }
    m2_aw_cmdlist_free(&l);
    m2_aw_tables_free(&t);
}

static void numbering_follows_demangler(void **state) {
    m2_err err = {0};
    m2_aw_scene s;
    char *j = golden_json();
    assert_int_equal(m2_aw_load_twpddl_text(j, strlen(j), "golden", &s, &err), 0);
    free(j);
    /* first sorted id gets the highest number */
    for (int i = 0; i < s.n_obj; i++) {
        if (!strcmp(s.objs[i].id, "Apple|1")) assert_string_equal(s.objs[i].name, "apple 2");
        if (!strcmp(s.objs[i].id, "Apple|2")) assert_string_equal(s.objs[i].name, "apple 1");
    }
    for (int i = 0; i < s.n_recep; i++)
        if (!strcmp(s.receps[i].id, "Sink|1|SinkBasin")) assert_string_equal(s.receps[i].name, "sinkbasin 1");
    assert_int_equal(s.n_obj, 6);   /* the bare "Apple"/"Mug" declarations were dropped */
    m2_aw_scene_free(&s);
    char m[256], d[256];
    m2_aw_mangle("Cabinet|+00.68|-02.20|a,b", m, sizeof m);
    assert_string_equal(m, "Cabinet_bar__plus_00_dot_68_bar__minus_02_dot_20_bar_a_comma_b");
    m2_aw_demangle(m, d, sizeof d);
    assert_string_equal(d, "Cabinet|+00.68|-02.20|a,b");
}

/* Every examine-object rule of the grammar, in its order. */
static void examine_rules(void **state) {
    m2_err err = {0};
    m2_aw_scene s;
    char *j = golden_json();
    assert_int_equal(m2_aw_load_twpddl_text(j, strlen(j), "golden", &s, &err), 0);
    free(j);
    m2_aw_state st;
    assert_int_equal(m2_aw_state_init(&st, &s, &err), 0);
    int apple = -1;
    for (int i = 0; i < s.n_obj; i++) if (!strcmp(s.objs[i].name, "apple 1")) apple = i;
    assert_true(apple >= 0);
    static const struct { uint8_t bits; const char *text; } cases[] = {
        {0, "There's nothing special about apple 1."},
        {M2_AW_S_CLEAN | M2_AW_S_HOT | M2_AW_S_SLICED, "This is a hot and clean sliced apple 1."},
        {M2_AW_S_CLEAN | M2_AW_S_COOL | M2_AW_S_SLICED, "This is a cool and clean sliced apple 1."},
        {M2_AW_S_CLEAN | M2_AW_S_SLICED, "This is a clean sliced apple 1."},
        {M2_AW_S_HOT | M2_AW_S_SLICED, "This is a hot sliced apple 1."},
        {M2_AW_S_COOL | M2_AW_S_SLICED, "This is a cool sliced apple 1."},
        {M2_AW_S_CLEAN | M2_AW_S_HOT, "This is a hot and clean apple 1."},
        {M2_AW_S_CLEAN | M2_AW_S_COOL, "This is a cool and clean apple 1."},
        {M2_AW_S_HOT, "This is a hot apple 1."},
        {M2_AW_S_CLEAN, "This is a clean apple 1."},
        {M2_AW_S_COOL, "This is a cold apple 1."},
        {M2_AW_S_SLICED, "This is a sliced apple 1."},
    };
    char buf[512];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        st.bits[apple] = cases[k].bits;
        m2_aw_text_examine_obj(&s, &st, apple, buf, sizeof buf);
        assert_string_equal(buf, cases[k].text);
    }
    /* inventory/list forms */
    st.held = apple;
    m2_aw_text_inventory(&s, &st, buf, sizeof buf);
    assert_string_equal(buf, "You are carrying: a apple 1.");
    m2_aw_state_free(&st);
    m2_aw_scene_free(&s);
}

static void segmenter(void **state) {
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("alfworld", NULL, &e, &err), 0);
    for (int type = 1; type <= 6; type++) {
        for (int i = 0; i < 10; i++) {
            m2_step_result r;
            assert_int_equal(e->cls->reset(e, m2_aw_task_type_name(type), M2_SPLIT_TRAIN, i, 4, &r, &err), 0);
            char acts[64][256], obs[64][1024];
            const char *ap[64], *op[64];
            int n = 0;
            while (!r.done && n < 64) {
                assert_int_equal(e->cls->oracle_next(e, acts[n], sizeof acts[n], &err), 0);
                e->cls->step(e, acts[n], &r);
                snprintf(obs[n], sizeof obs[n], "%s", r.observation);
                ap[n] = acts[n];
                op[n] = obs[n];
                n++;
            }
            m2_subgoal sg[32];
            int k = e->cls->segment(e, ap, op, n, sg, 32);
            assert_true(k >= 2);
            /* contiguous cover of all steps */
            assert_int_equal(sg[0].first, 0);
            assert_int_equal(sg[k - 1].last, n - 1);
            for (int q = 1; q < k; q++) assert_int_equal(sg[q].first, sg[q - 1].last + 1);
            int has_take = 0, has_treat = 0, has_put = 0, has_use = 0;
            for (int q = 0; q < k; q++) {
                has_take += !strncmp(sg[q].text, "take ", 5);
                has_treat += !strncmp(sg[q].text, "heat ", 5) || !strncmp(sg[q].text, "cool ", 5) || !strncmp(sg[q].text, "clean ", 6);
                has_put += !strncmp(sg[q].text, "put ", 4);
                has_use += !strncmp(sg[q].text, "use ", 4);
            }
            assert_int_equal(has_take, type == M2_AW_PICK_TWO ? 2 : 1);
            assert_int_equal(has_treat, type == M2_AW_CLEAN || type == M2_AW_HEAT || type == M2_AW_COOL);
            assert_int_equal(has_put, type == M2_AW_LOOK ? 0 : type == M2_AW_PICK_TWO ? 2 : 1);
            assert_int_equal(has_use, type == M2_AW_LOOK);
            if (type == M2_AW_HEAT) {
                const char *last_treat = NULL;
                for (int q = 0; q < k; q++) if (!strncmp(sg[q].text, "heat ", 5)) last_treat = sg[q].text;
                assert_non_null(strstr(last_treat, " with microwave"));
            }
        }
    }
    m2_env_destroy(e);
}

static void task_families_and_names(void **state) {
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("alfworld", NULL, &e, &err), 0);
    assert_int_equal(e->cls->num_task_families(e), 6);
    assert_string_equal(e->cls->task_family_name(e, 0), "pick_and_place_simple");
    assert_string_equal(e->cls->task_family_name(e, 5), "pick_two_obj_and_place");
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err), 3553);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_ID, &err), 140);
    assert_int_equal(e->cls->num_episodes(e, NULL, M2_SPLIT_OOD, &err), 134);
    assert_int_equal(e->cls->num_episodes(e, "bogus", M2_SPLIT_OOD, &err), -1);
    assert_non_null(strstr(err.msg, "bogus"));
    m2_step_result r;
    assert_int_equal(e->cls->reset(e, NULL, M2_SPLIT_ID, 140, 0, &r, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    /* goal texts follow the templates */
    static const char *const starts[7][2] = {{0, 0}, {"put a ", "put some "}, {"look at ", "examine the "},
        {"put a clean ", "clean some "}, {"put a hot ", "heat some "}, {"put a cool ", "cool some "},
        {"put two ", "find two "}};
    for (int type = 1; type <= 6; type++) {
        int seen[2] = {0, 0};
        for (int i = 0; i < 12; i++) {
            assert_int_equal(e->cls->reset(e, m2_aw_task_type_name(type), M2_SPLIT_TRAIN, i, 0, &r, &err), 0);
            const char *tt = e->cls->task_text(e);
            assert_true(!strncmp(tt, "Your task is to: ", 17));
            assert_true(tt[strlen(tt) - 1] == '.');
            for (int k = 0; k < 2; k++) seen[k] |= !strncmp(tt + 17, starts[type][k], strlen(starts[type][k]));
            assert_true(strstr(r.observation, tt) != NULL);
        }
        assert_true(seen[0] && seen[1]);
    }
    char *d = e->cls->describe(e, "look", M2_SPLIT_OOD, 2, &err);
    assert_non_null(d);
    assert_non_null(strstr(d, "\"task_type\":\"look_at_obj_in_light\""));
    free(d);
    m2_env_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_texts),
        cmocka_unit_test(texts_match_grammar),
        cmocka_unit_test(numbering_follows_demangler),
        cmocka_unit_test(task_families_and_names),
        cmocka_unit_test(oracle_wins_embedded),
        cmocka_unit_test(oracle_wins_shared),
        cmocka_unit_test(oracle_scene_sweep),
        cmocka_unit_test(search_expert_is_not_psychic),
        cmocka_unit_test(splits_use_disjoint_plans),
        cmocka_unit_test(determinism),
        cmocka_unit_test(twpddl_roundtrip),
        cmocka_unit_test(bad_game_files),
        cmocka_unit_test(bad_tables),
        cmocka_unit_test(junk_actions),
        cmocka_unit_test(admissible_matches_dynamics),
        cmocka_unit_test(examine_rules),
        cmocka_unit_test(segmenter),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
