/* Sub-goals judged by the environments themselves (env.h subgoal_next / subgoal_begin /
 * subgoal_done) and the data built on them: every expert sub-goal of every environment and task type
 * is achieved, its predicate turns true exactly on its last step, and that last action is the one the
 * sub-goal names (so System 2 can tell it is done from what it has seen when it acts); medium data
 * holds failed sub-goals with return 0, flags False and a terminal last step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "data/data.h"
#include "env/env.h"

/* The last action the sub-goal's text names, per environment's naming rule. */
static int names_last_action(const char *env, const char *sg, const char *act) {
    char want[600];
    if (!strcmp(env, "textcraft")) {
        long n;
        char item[300];
        if (sscanf(sg, "craft %ld %299[^\n]", &n, item) != 2) return 0;
        snprintf(want, sizeof want, " %s using ", item);
        return !strncmp(act, "craft ", 6) && strstr(act, want) != NULL;
    }
    if (!strcmp(env, "alfworld")) {
        if (!strncmp(sg, "take ", 5)) { snprintf(want, sizeof want, "%s ", sg); return !strncmp(act, want, strlen(want)); }
        if (!strncmp(sg, "put down ", 9)) { snprintf(want, sizeof want, "move %s to ", sg + 9); return !strncmp(act, want, strlen(want)); }
        if (!strncmp(sg, "put ", 4)) {
            const char *sep = strstr(sg, " in/on ");
            if (!sep) return 0;
            snprintf(want, sizeof want, "move %.*s to %s", (int)(sep - sg - 4), sg + 4, sep + 7);
            return !strcmp(act, want);
        }
        return !strcmp(act, sg);   /* heat/cool/clean X with Y, use L */
    }
    return !strcmp(act, sg);      /* scienceworld: "go to R" ends on "go to R"; other sub-goals are the action */
}

/* Plays episode (task, index) sub-goal by sub-goal with the given policy; for the expert checks each
 * segment step by step on a replay. Returns the segments seen and counts failures into *failed. */
static int check_episode(m2_env *env, const char *task, int index, m2_policy_kind policy, int *failed) {
    const m2_env_class *c = env->cls;
    m2_rollout_opts ro = {.policy = policy, .max_steps = 50, .noise = 0.3f, .policy_seed = 7, .hierarchical = 1,
                          .subgoal_budget = policy == M2_POLICY_ORACLE ? 0 : 10};
    m2_env_traj t;
    m2_err err = {0};
    if (m2_rollout(env, task, M2_SPLIT_TRAIN, index, 3, &ro, &t, &err)) fail_msg("%s: %s", c->name, err.msg);
    assert_true(t.n_subgoals > 0);
    if (policy == M2_POLICY_ORACLE) {
        if (!t.won) fail_msg("%s %s %d: the expert did not win", c->name, task ? task : "", index);
        /* replay: the predicate of each sub-goal is false before its last step and true after it */
        m2_step_result r;
        if (c->reset(env, task, M2_SPLIT_TRAIN, index, 3, &r, &err)) fail_msg("%s", err.msg);
        for (int g = 0; g < t.n_subgoals; g++) {
            const m2_env_subgoal_rec *s = &t.subgoals[g];
            if (!s->success) fail_msg("%s %d: expert sub-goal '%s' failed", c->name, index, s->text);
            assert_int_equal(s->first, g ? t.subgoals[g - 1].last + 1 : 0);
            c->subgoal_begin(env, s->text);
            for (int i = s->first; i <= s->last; i++) {
                c->step(env, t.steps[i].action, &r);
                int holds = c->subgoal_done(env, s->text);
                if (holds != (i == s->last))
                    fail_msg("%s %d: sub-goal '%s' %s at step %d (%s), its last is %d", c->name, index, s->text,
                             holds ? "holds" : "does not hold", i, t.steps[i].action, s->last);
            }
            if (!names_last_action(c->name, s->text, t.steps[s->last].action))
                fail_msg("%s %d: sub-goal '%s' ends on '%s', an action it does not name", c->name, index, s->text,
                         t.steps[s->last].action);
        }
        assert_int_equal(t.subgoals[t.n_subgoals - 1].last, t.n - 1);
        /* TextCraft and ALFWorld: the expert's sub-goals are the segmenter's, one craft (batch) or
         * one take / appliance / placement each (ScienceWorld's segmenter merges navigation runs) */
        if (strcmp(c->name, "scienceworld")) {
            const char **acts = malloc((size_t)t.n * sizeof *acts), **obs = malloc((size_t)t.n * sizeof *obs);
            m2_subgoal seg[256];
            for (int i = 0; i < t.n; i++) { acts[i] = t.steps[i].action; obs[i] = t.steps[i].observation; }
            int ns = c->segment(env, acts, obs, t.n, seg, 256);
            if (ns != t.n_subgoals) fail_msg("%s %d: %d sub-goals, the segmenter finds %d", c->name, index, t.n_subgoals, ns);
            for (int g = 0; g < ns; g++) {
                assert_string_equal(seg[g].text, t.subgoals[g].text);
                assert_int_equal(seg[g].last, t.subgoals[g].last);
            }
            free(acts);
            free(obs);
        }
    }
    int n = t.n_subgoals;
    for (int g = 0; g < n; g++) *failed += !t.subgoals[g].success;
    /* records: a failed segment has return 0, no True flag, and a terminal last step */
    cJSON *h = NULL, *ls = NULL;
    if (m2_hier_records(env, &t, "x", NULL, &h, &ls, &err)) fail_msg("%s", err.msg);
    assert_int_equal(cJSON_GetArraySize(ls), n);
    for (int g = 0; g < n; g++) {
        const cJSON *l = cJSON_GetArrayItem(ls, g);
        const cJSON *rw = cJSON_GetObjectItem(l, "reward"), *dn = cJSON_GetObjectItem(l, "done"), *ac = cJSON_GetObjectItem(l, "action");
        int k = cJSON_GetArraySize(rw), ok = t.subgoals[g].success;
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(l, "success")), ok);
        assert_true(cJSON_IsTrue(cJSON_GetArrayItem(dn, k - 1)));
        for (int i = 0; i < k; i++) {
            int last = i == k - 1;
            assert_true(cJSON_GetArrayItem(rw, i)->valuedouble == (last && ok ? 1.0 : 0.0));
            const char *a = cJSON_GetArrayItem(ac, i)->valuestring;
            assert_int_equal(strstr(a, "; True") != NULL, last && ok);
            if (!last) assert_false(cJSON_IsTrue(cJSON_GetArrayItem(dn, i)));
        }
    }
    cJSON_Delete(h);
    cJSON_Delete(ls);
    m2_env_traj_free(&t);
    return n;
}

static void env_subgoals(const char *name, int per_family) {
    m2_env *env;
    m2_err err = {0};
    if (m2_env_create(name, NULL, &env, &err)) fail_msg("%s", err.msg);
    int nf = env->cls->num_task_families(env), segs = 0, failed = 0, med_segs = 0, med_failed = 0;
    for (int f = 0; f < nf; f++) {
        const char *task = env->cls->task_family_name(env, f);
        int ne = env->cls->num_episodes(env, task, M2_SPLIT_TRAIN, &err);
        for (int i = 0; i < per_family && i < ne; i++) {
            segs += check_episode(env, task, i * 7 % ne, M2_POLICY_ORACLE, &failed);
            med_segs += check_episode(env, task, i * 7 % ne, M2_POLICY_MEDIUM, &med_failed);
        }
    }
    assert_int_equal(failed, 0);
    assert_true(segs > nf);
    /* noise makes the executor fail some sub-goals within its budget */
    if (med_failed == 0) fail_msg("%s: no failed sub-goal in %d medium segments", name, med_segs);
    print_message("%s: %d expert sub-goals over %d task types, all decidable; medium %d/%d failed\n", name, segs, nf,
                  med_failed, med_segs);
    m2_env_destroy(env);
}

static void textcraft_subgoals(void **s) { env_subgoals("textcraft", 40); }
static void alfworld_subgoals(void **s) { env_subgoals("alfworld", 6); }
static void scienceworld_subgoals(void **s) { env_subgoals("scienceworld", 2); }

/* Predicates read the state, not the text's source: unreadable text never holds; counts are relative
 * to the sub-goal's start. */
static void predicates(void **s) {
    m2_env *env;
    m2_err err = {0};
    m2_step_result r;
    if (m2_env_create("textcraft", NULL, &env, &err) || env->cls->reset(env, NULL, M2_SPLIT_TRAIN, 0, 0, &r, &err))
        fail_msg("%s", err.msg);
    char sg[256];
    assert_int_equal(env->cls->subgoal_next(env, sg, sizeof sg, &err), 0);
    assert_true(!strncmp(sg, "craft ", 6));
    env->cls->subgoal_begin(env, sg);
    assert_int_equal(env->cls->subgoal_done(env, sg), 0);
    assert_int_equal(env->cls->subgoal_done(env, "dance a jig"), 0);
    assert_int_equal(env->cls->subgoal_done(env, "craft 1 no such item"), 0);
    m2_env_destroy(env);
    if (m2_env_create("alfworld", NULL, &env, &err) || env->cls->reset(env, NULL, M2_SPLIT_TRAIN, 0, 0, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(env->cls->subgoal_next(env, sg, sizeof sg, &err), 0);
    assert_true(!strncmp(sg, "take ", 5));
    assert_int_equal(env->cls->subgoal_done(env, sg), 0);   /* nothing held at the start */
    assert_int_equal(env->cls->subgoal_done(env, "put nothing in/on nowhere"), 0);
    m2_env_destroy(env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(predicates),
        cmocka_unit_test(textcraft_subgoals),
        cmocka_unit_test(alfworld_subgoals),
        cmocka_unit_test(scienceworld_subgoals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
