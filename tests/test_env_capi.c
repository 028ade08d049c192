/* The stable C API of libmulti2.so (env/multi2_env.h): the same episodes as env.h, errors by
 * message and never by crash, step_many equal to single steps, describe leaving the episode alone.
 * Linked against the static library (the shared one holds the same objects); the Python tests
 * (tests/python/) drive the shared library itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env/env.h"
#include "env/multi2_env.h"

static void names_and_versions(void **state) {
    assert_int_equal(m2e_api_version(), M2E_API_VERSION);
    assert_int_equal(m2e_env_count(), m2_env_count());
    assert_string_equal(m2e_env_name(0), "textcraft");
    assert_null(m2e_env_name(m2e_env_count()));
    char msg[256];
    assert_null(m2e_create("zork", NULL, msg, sizeof msg));
    assert_non_null(strstr(msg, "zork"));
    assert_null(m2e_create("zork", NULL, NULL, 0));   /* no buffer: still no crash */
}

/* The API's episode is env.h's episode: same observations for the same (split, index, seed). */
static void same_as_env_h(void **state) {
    for (int k = 0; k < m2_env_count(); k++) {
        const char *name = m2e_env_name(k);
        char msg[256];
        m2e_env *e = m2e_create(name, NULL, msg, sizeof msg);
        assert_non_null(e);
        m2_env *raw = NULL;
        m2_err err = {0};
        assert_int_equal(m2_env_create(name, NULL, &raw, &err), 0);
        m2e_result a;
        m2_step_result b;
        assert_int_equal(m2e_reset(e, NULL, "ood", 1, 9, &a), 0);
        assert_int_equal(raw->cls->reset(raw, NULL, M2_SPLIT_OOD, 1, 9, &b, &err), 0);
        assert_string_equal(a.observation, b.observation);
        assert_int_equal(a.moves, 0);
        for (int s = 0; s < 12; s++) {
            char act[1024];
            if (m2e_oracle(e, act, sizeof act)) strcpy(act, "look");
            assert_int_equal(m2e_step(e, act, &a), 0);
            assert_int_equal(raw->cls->step(raw, act, &b), 0);
            assert_string_equal(a.observation, b.observation);
            assert_true(a.reward == b.reward && a.score == b.score && a.done == b.done && a.won == b.won);
            assert_int_equal(a.moves, s + 1);
            assert_string_equal(m2e_observation(e), a.observation);
            if (a.done) break;
        }
        m2_env_destroy(raw);
        m2e_free(e);
    }
}

static void errors_are_messages(void **state) {
    char msg[256];
    m2e_env *e = m2e_create("alfworld", NULL, msg, sizeof msg);
    assert_non_null(e);
    m2e_result r;
    assert_int_equal(m2e_step(e, "look", &r), -1);
    assert_non_null(strstr(m2e_error(e), "before reset"));
    const char *const *adm;
    int n;
    assert_int_equal(m2e_admissible(e, &adm, &n), -1);
    assert_int_equal(m2e_reset(e, NULL, "bogus", 0, 0, &r), -1);
    assert_non_null(strstr(m2e_error(e), "bogus"));
    assert_int_equal(m2e_reset(e, NULL, "id", 1 << 30, 0, &r), -1);
    assert_non_null(strstr(m2e_error(e), "out of range"));
    assert_int_equal(m2e_reset(e, NULL, "id", -1, 0, &r), -1);
    assert_int_equal(m2e_reset(e, "no_such_type", "id", 0, 0, &r), -1);
    assert_int_equal(m2e_num_episodes(e, NULL, "nope"), -1);
    assert_null(m2e_describe(e, NULL, "id", 1 << 30));
    assert_int_equal(m2e_reset(e, NULL, "id", 0, 0, &r), 0);
    assert_string_equal(m2e_error(e), "");
    assert_int_equal(m2e_step(e, NULL, &r), 0);   /* NULL is the empty action */
    assert_int_equal(m2e_admissible(e, &adm, &n), 0);
    assert_true(n > 0);
    m2e_free(e);
    m2e_free(NULL);
}

static void step_many_equals_steps(void **state) {
    enum { N = 4 };
    m2e_env *many[N], *one[N];
    const char *acts[N];
    char buf[N][1024];
    for (int i = 0; i < N; i++) {
        many[i] = m2e_create("textcraft", NULL, NULL, 0);
        one[i] = m2e_create("textcraft", NULL, NULL, 0);
        assert_int_equal(m2e_reset(many[i], NULL, "train", i, 3, NULL), 0);
        assert_int_equal(m2e_reset(one[i], NULL, "train", i, 3, NULL), 0);
    }
    for (int s = 0; s < 6; s++) {
        m2e_result out[N], r;
        for (int i = 0; i < N; i++) {
            if (m2e_oracle(one[i], buf[i], sizeof buf[i])) strcpy(buf[i], "inventory");
            acts[i] = buf[i];
        }
        assert_int_equal(m2e_step_many(many, acts, N, out), 0);
        for (int i = 0; i < N; i++) {
            assert_int_equal(m2e_step(one[i], acts[i], &r), 0);
            assert_string_equal(out[i].observation, r.observation);
            assert_true(out[i].reward == r.reward);
        }
    }
    m2e_env *fresh = m2e_create("textcraft", NULL, NULL, 0);
    m2e_env *mixed[2] = {many[0], fresh};
    const char *two[2] = {"inventory", "inventory"};
    assert_int_equal(m2e_step_many(mixed, two, 2, NULL), 1);   /* the one without a reset fails */
    assert_non_null(strstr(m2e_error(fresh), "before reset"));
    m2e_free(fresh);
    for (int i = 0; i < N; i++) { m2e_free(many[i]); m2e_free(one[i]); }
}

/* describe reads another episode without disturbing the one being played (TextCraft's class
 * resets itself to describe). */
static void describe_leaves_the_episode(void **state) {
    m2e_env *e = m2e_create("textcraft", NULL, NULL, 0);
    m2e_result r, again;
    assert_int_equal(m2e_reset(e, NULL, "id", 2, 5, &r), 0);
    char *before = strdup(r.observation), *task = strdup(m2e_task_text(e));
    char *js = m2e_describe(e, NULL, "ood", 3);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"goal\""));
    m2e_string_free(js);
    assert_int_equal(m2e_last(e, &again), 0);
    assert_string_equal(m2e_observation(e), before);
    assert_string_equal(m2e_task_text(e), task);
    assert_int_equal(m2e_step(e, "inventory", &r), 0);
    assert_non_null(strstr(r.observation, "Inventory"));
    free(before);
    free(task);
    m2e_free(e);
}

static void task_lists(void **state) {
    m2e_env *e = m2e_create("scienceworld", NULL, NULL, 0);
    assert_int_equal(m2e_num_tasks(e), 30);
    assert_null(m2e_task_name(e, 30));
    int total = 0;
    for (int i = 0; i < 30; i++) total += m2e_num_episodes(e, m2e_task_name(e, i), "train");
    assert_int_equal(total, m2e_num_episodes(e, NULL, "train"));
    assert_true(m2e_score_max(e) == 100);
    assert_true(m2e_unit_score(e, 50) == 0.5 && m2e_unit_score(e, -100) == 0);
    m2e_free(e);
}

/* m2e_inspect shows ScienceWorld's state without touching it: the episode plays on exactly as a
 * twin's that is never inspected, the free look's words are the step's, the rooms one can go to
 * are among the possible objects; the wrong name or class is an error, not a crash. */
static void inspect_leaves_the_episode(void **state) {
    m2e_env *e = m2e_create("scienceworld", NULL, NULL, 0), *twin = m2e_create("scienceworld", NULL, NULL, 0);
    assert_null(m2e_inspect(e, "look"));
    assert_non_null(strstr(m2e_error(e), "reset first"));
    m2e_result a, b;
    /* boil: the expert lights the stove early, so every tick shows in the water's temperature */
    assert_int_equal(m2e_reset(e, "boil", "train", 0, 0, &a), 0);
    assert_int_equal(m2e_reset(twin, "boil", "train", 0, 0, &b), 0);
    int hot = 0;
    for (int s = 0; s < 40 && !a.done; s++) {
        static const char *const what[] = {"look", "inventory", "possible_objects", "object_tree"};
        for (int k = 0; k < 4; k++) {
            char *js = m2e_inspect(e, what[k]);
            assert_non_null(js);
            if (k == 3) assert_non_null(strstr(js, "\"type\":\"agent\""));
            if (k == 2) {   /* every room the agent can go to is a possible object */
                const char *const *adm;
                int n;
                assert_int_equal(m2e_admissible(e, &adm, &n), 0);
                for (int i = 0; i < n; i++) {
                    if (strncmp(adm[i], "go to ", 6)) continue;
                    char quoted[256];
                    snprintf(quoted, sizeof quoted, "\"%s\"", adm[i] + 6);
                    assert_non_null(strstr(js, quoted));
                }
            }
            m2e_string_free(js);
        }
        assert_int_equal(m2e_last(e, &a), 0);
        assert_int_equal(a.moves, s);   /* inspecting spent no move, nor any tick: the worlds agree */
        char *te = m2e_inspect(e, "object_tree"), *tt = m2e_inspect(twin, "object_tree");
        assert_string_equal(te, tt);
        hot |= strstr(te, "\"isActivated\":true") != NULL;
        m2e_string_free(te);
        m2e_string_free(tt);
        char act[512];
        if (m2e_oracle(twin, act, sizeof act)) strcpy(act, "look around");
        assert_int_equal(m2e_step(e, act, &a), 0);
        assert_int_equal(m2e_step(twin, act, &b), 0);
        assert_string_equal(a.observation, b.observation);
        assert_true(a.score == b.score && a.done == b.done);
    }
    assert_true(hot);   /* a device was on: the ticks had something to change */
    char *look = m2e_inspect(e, "look"), *inv = m2e_inspect(e, "inventory");
    assert_int_equal(m2e_step(twin, "look around", &b), 0);
    assert_non_null(look);
    cJSON *lj = cJSON_Parse(look), *ij = cJSON_Parse(inv);   /* JSON strings */
    assert_true(cJSON_IsString(lj) && cJSON_IsString(ij));
    assert_string_equal(lj->valuestring, b.observation);
    assert_int_equal(m2e_step(twin, "inventory", &b), 0);
    assert_string_equal(ij->valuestring, b.observation);
    cJSON_Delete(lj);
    cJSON_Delete(ij);
    m2e_string_free(look);
    m2e_string_free(inv);
    assert_null(m2e_inspect(e, "weather"));
    assert_non_null(strstr(m2e_error(e), "possible_objects"));
    assert_null(m2e_inspect(e, NULL));
    m2e_free(e);
    m2e_free(twin);
    m2e_env *tc = m2e_create("textcraft", NULL, NULL, 0);
    assert_int_equal(m2e_reset(tc, NULL, "train", 0, 0, NULL), 0);
    assert_null(m2e_inspect(tc, "look"));
    assert_non_null(strstr(m2e_error(tc), "nothing to inspect"));
    m2e_free(tc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_versions),
        cmocka_unit_test(same_as_env_h),
        cmocka_unit_test(errors_are_messages),
        cmocka_unit_test(step_many_equals_steps),
        cmocka_unit_test(describe_leaves_the_episode),
        cmocka_unit_test(task_lists),
        cmocka_unit_test(inspect_leaves_the_episode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
