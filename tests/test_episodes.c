/* The episode order (data/episodes.h, issue #14 item 3): the data stage, the online rollouts, the
 * eval stage and the CLI take position k of ONE order that walks the task types in turn. Checked on
 * the three real environments (embedded data): the first 60 train positions cover every task type
 * (ScienceWorld's 30 tasks twice each, ALFWorld's 6 types ten times each, TextCraft's depths in
 * turn), the order is a permutation of the split and a pure function of (env, task, split, k), its
 * labels are the types describe() gives, and the data stage, the online collection and the
 * evaluation play it, writing the type into their records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "data/data.h"
#include "pipe/pipe.h"
#include "pipe/world.h"
#include "tmpdir.h"

static const char *const envs[3] = {"textcraft", "alfworld", "scienceworld"};

static m2_env *make_env(const char *name) {
    m2_env *env = NULL;
    m2_err err = {0};
    if (m2_env_create(name, NULL, &env, &err)) fail_msg("%s: %s", name, err.msg);
    return env;
}

static void build(m2_env *env, const char *task, m2_split split, m2_episode_order *o) {
    m2_err err = {0};
    if (m2_episode_order_build(env, task, split, o, &err)) fail_msg("%s: %s", env->cls->name, err.msg);
}

/* how often each type occurs among positions 0..n-1 (types in rotation order) */
static void type_counts(const m2_episode_order *o, int n, int *count) {
    memset(count, 0, (size_t)o->n_types * sizeof *count);
    for (int k = 0; k < n; k++) {
        const m2_episode_ref *r = m2_episode_order_at(o, k);
        int t = 0;
        while (t < o->n_types && strcmp(o->types[t], r->type)) t++;
        assert_true(t < o->n_types);
        count[t]++;
    }
}

static void first_60_cover_every_type(void **state) {
    (void)state;
    for (int e = 0; e < 3; e++) {
        m2_env *env = make_env(envs[e]);
        m2_episode_order o;
        build(env, NULL, M2_SPLIT_TRAIN, &o);
        int count[64];
        assert_true(o.n_types <= 64);
        type_counts(&o, 60, count);
        for (int t = 0; t < o.n_types; t++)
            if (count[t] == 0) fail_msg("%s: type %s missing from the first 60 train episodes", envs[e], o.types[t]);
        if (!strcmp(envs[e], "scienceworld")) {
            assert_int_equal(o.n_types, 30);
            for (int t = 0; t < 30; t++) assert_int_equal(count[t], 2);
        } else if (!strcmp(envs[e], "alfworld")) {
            assert_int_equal(o.n_types, 6);
            for (int t = 0; t < 6; t++) assert_int_equal(count[t], 10);
            assert_string_equal(o.types[0], "pick_and_place_simple");
        } else {
            /* TextCraft's goals are sorted by depth, deepest first: depths 4, 3, 2 in turn */
            assert_int_equal(o.n_types, 3);
            assert_string_equal(o.types[0], "depth 4");
            assert_string_equal(o.types[1], "depth 3");
            assert_string_equal(o.types[2], "depth 2");
            for (int k = 0; k < 9; k++) assert_string_equal(m2_episode_order_at(&o, k)->type, o.types[k % 3]);
        }
        /* the ID evaluation's first 10: ten distinct types where there are that many */
        m2_episode_order id;
        build(env, NULL, M2_SPLIT_ID, &id);
        type_counts(&id, 10, count);
        int distinct = 0;
        for (int t = 0; t < id.n_types; t++) distinct += count[t] > 0;
        assert_int_equal(distinct, id.n_types < 10 ? id.n_types : 10);
        m2_episode_order_free(&id);
        m2_episode_order_free(&o);
        m2_env_destroy(env);
    }
}

/* Every episode of the split exactly once; within a type in index order; positions wrap. */
static void order_is_a_permutation(void **state) {
    (void)state;
    for (int e = 0; e < 3; e++) {
        m2_env *env = make_env(envs[e]);
        m2_err err = {0};
        for (int sp = 0; sp < 3; sp++) {
            m2_episode_order o;
            build(env, NULL, (m2_split)sp, &o);
            assert_int_equal(o.n, env->cls->num_episodes(env, NULL, (m2_split)sp, &err));
            int last[64];
            assert_true(o.n_types <= 64);
            for (int t = 0; t < 64; t++) last[t] = -1;
            /* per reset task (a family, or NULL for all of TextCraft's depths): each index once */
            const char *tasks[64];
            char *seen[64];
            int n_tasks = 0, size[64];
            for (int k = 0; k < o.n; k++) {
                const m2_episode_ref *r = m2_episode_order_at(&o, k);
                int t = 0;
                while (strcmp(o.types[t], r->type)) t++;
                assert_true(r->index > last[t]);   /* ascending within a type */
                last[t] = r->index;
                int q = 0;
                while (q < n_tasks && !((!tasks[q] && !r->task) || (tasks[q] && r->task && !strcmp(tasks[q], r->task)))) q++;
                if (q == n_tasks) {
                    tasks[q] = r->task;
                    size[q] = env->cls->num_episodes(env, r->task, (m2_split)sp, &err);
                    seen[q] = calloc((size_t)size[q], 1);
                    n_tasks++;
                }
                assert_true(r->index >= 0 && r->index < size[q]);
                if (seen[q][r->index]++) fail_msg("%s: episode %d of %s listed twice", envs[e], r->index, r->task ? r->task : "all");
            }
            for (int q = 0; q < n_tasks; q++) {   /* and every index of every family is there */
                for (int i = 0; i < size[q]; i++) assert_int_equal(seen[q][i], 1);
                free(seen[q]);
            }
            assert_ptr_equal(m2_episode_order_at(&o, o.n), m2_episode_order_at(&o, 0));
            assert_ptr_equal(m2_episode_order_at(&o, 2L * o.n + 3), m2_episode_order_at(&o, 3));
            m2_episode_order_free(&o);
        }
        m2_env_destroy(env);
    }
}

/* The same (env, task, split, k) gives the same episode: on a fresh instance, after playing
 * episodes on the env, and whatever number of episodes the caller goes on to play. */
static void order_is_deterministic(void **state) {
    (void)state;
    for (int e = 0; e < 3; e++) {
        m2_env *a = make_env(envs[e]), *b = make_env(envs[e]);
        m2_episode_order oa, ob;
        build(a, NULL, M2_SPLIT_TRAIN, &oa);
        m2_err err = {0};
        m2_env_traj t;
        m2_rollout_opts ro = {.policy = M2_POLICY_RANDOM, .max_steps = 5, .policy_seed = 1};
        assert_int_equal(m2_rollout(b, NULL, M2_SPLIT_TRAIN, 3, 7, &ro, &t, &err), 0);   /* b in another state */
        m2_env_traj_free(&t);
        build(b, NULL, M2_SPLIT_TRAIN, &ob);
        assert_int_equal(oa.n, ob.n);
        assert_int_equal(oa.n_types, ob.n_types);
        for (int k = 0; k < oa.n; k++) {
            const m2_episode_ref *x = m2_episode_order_at(&oa, k), *y = m2_episode_order_at(&ob, k);
            assert_int_equal(x->index, y->index);
            assert_string_equal(x->type, y->type);
            assert_true((!x->task && !y->task) || !strcmp(x->task, y->task));
        }
        m2_episode_order_free(&oa);
        m2_episode_order_free(&ob);
        m2_env_destroy(a);
        m2_env_destroy(b);
    }
}

/* The labels are the types describe() gives (one definition of a task type) and the refs reset. */
static void types_are_described_types(void **state) {
    (void)state;
    for (int e = 0; e < 3; e++) {
        m2_env *env = make_env(envs[e]);
        m2_episode_order o;
        build(env, NULL, M2_SPLIT_TRAIN, &o);
        for (int k = 0; k < 60 && k < o.n; k++) {
            const m2_episode_ref *r = m2_episode_order_at(&o, k);
            char *ty = m2_episode_type(env, r->task, M2_SPLIT_TRAIN, r->index);
            assert_non_null(ty);
            assert_string_equal(ty, r->type);
            free(ty);
            m2_step_result sr;
            m2_err err = {0};
            if (env->cls->reset(env, r->task, M2_SPLIT_TRAIN, r->index, 0, &sr, &err)) fail_msg("%s", err.msg);
        }
        m2_episode_order_free(&o);
        /* a named family of a multi-family env is one type */
        if (!strcmp(envs[e], "alfworld")) {
            build(env, "pick_two", M2_SPLIT_TRAIN, &o);
            assert_int_equal(o.n_types, 1);
            assert_string_equal(o.types[0], "pick_two_obj_and_place");
            for (int k = 0; k < o.n; k++) assert_int_equal(m2_episode_order_at(&o, k)->index, k);
            m2_episode_order_free(&o);
        }
        m2_env_destroy(env);
    }
}

/* The task text of the order's position k when played with episode seed `seed`. */
static char *task_text_at(m2_env *env, const m2_episode_order *o, m2_split split, long k, uint64_t seed) {
    const m2_episode_ref *r = m2_episode_order_at(o, k);
    m2_step_result sr;
    m2_err err = {0};
    if (env->cls->reset(env, r->task, split, r->index, seed, &sr, &err)) fail_msg("%s", err.msg);
    return strdup(env->cls->task_text(env));
}

static int count_lines_with(const char *path, const char *key, const char *value) {
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: missing", path);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *v = cJSON_GetObjectItem(o, key);
        if (cJSON_IsString(v) && (!value || !strcmp(v->valuestring, value))) n++;
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    return n;
}

/* The data stage plays the order: 60 expert episodes name every type (ScienceWorld twice each). */
static void data_stage_is_balanced(void **state) {
    (void)state;
    char dir[64];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "episodes"), 0);
    for (int e = 1; e < 3; e++) {   /* ALFWorld and ScienceWorld: several families */
        char env_kv[64];
        snprintf(env_kv, sizeof env_kv, "env.name=%s", envs[e]);
        char *over[] = {env_kv, "data.expert_episodes=60", "data.medium_episodes=0"};
        m2_run_config *cfg = malloc(sizeof *cfg);
        m2_err err = {0};
        if (m2_run_config_load(cfg, NULL, 3, over, &err)) fail_msg("%s", err.msg);
        char run[256];
        snprintf(run, sizeof run, "%s/%s", dir, envs[e]);
        if (pw_data_ensure(cfg, run, NULL, &err)) fail_msg("%s", err.msg);
        char high[512];
        snprintf(high, sizeof high, "%s/artifacts/data/expert/high.jsonl", run);
        assert_int_equal(count_lines_with(high, "task_type", NULL), 60);
        m2_env *env = make_env(envs[e]);
        int nf = env->cls->num_task_families(env);
        for (int f = 0; f < nf; f++)
            assert_int_equal(count_lines_with(high, "task_type", env->cls->task_family_name(env, f)), 60 / nf);
        /* the episodes played are the order's: record k (the expert wins them all) has the task
         * text of position k */
        m2_episode_order o;
        build(env, NULL, M2_SPLIT_TRAIN, &o);
        FILE *f = fopen(high, "r");
        char *line = NULL;
        size_t cap = 0;
        for (int k = 0; getline(&line, &cap, f) > 0; k++) {
            cJSON *r = cJSON_Parse(line);
            char *want = task_text_at(env, &o, M2_SPLIT_TRAIN, k, pw_seed(cfg, PW_SEED_DATA_EPISODES) + (uint64_t)k);
            assert_string_equal(cJSON_GetObjectItem(r, "task")->valuestring, want);
            assert_int_equal(cJSON_GetObjectItem(r, "index")->valueint, m2_episode_order_at(&o, k)->index);
            free(want);
            cJSON_Delete(r);
        }
        free(line);
        fclose(f);
        m2_episode_order_free(&o);
        m2_env_destroy(env);
        free(cfg);
    }
    assert_int_equal(m2_remove_tree(dir), 0);
}

/* A System 2 that only looks around: the episode ends at the step limit. */
static int look_gen(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    (void)ctx; (void)c; (void)err;
    *np = *ng = 0;
    *out = strdup(role == M2_ROLE_SYS1 ? "look around" : "look; True");
    return *out ? 0 : -1;
}

/* The online collection and the evaluation play positions of the order and name the type. */
static void collection_and_eval_follow_the_order(void **state) {
    (void)state;
    m2_env *env = make_env("scienceworld");
    m2_policy p = {.generate = look_gen};
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = 1;
    m2_replay buf;
    m2_err err = {0};
    assert_int_equal(m2_replay_init(&buf, 100, 1.f, 1, &err), 0);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    int pos[30];
    for (int i = 0; i < 30; i++) pos[i] = 30 + i;   /* the second round over the 30 tasks */
    m2_collect_stats cs = {0};
    if (m2_collect_online(env, NULL, M2_SPLIT_TRAIN, pos, 30, 5, &p, &p, &lc, &buf, f, &cs, &err)) fail_msg("%s", err.msg);
    fclose(f);
    assert_int_equal(cs.episodes, 30);
    m2_episode_order o;
    build(env, NULL, M2_SPLIT_TRAIN, &o);
    int k = 0;
    for (char *line = strtok(mem, "\n"); line; line = strtok(NULL, "\n"), k++) {
        cJSON *r = cJSON_Parse(line);
        const m2_episode_ref *want = m2_episode_order_at(&o, 30 + k);
        assert_string_equal(cJSON_GetObjectItem(r, "task_type")->valuestring, want->type);
        assert_int_equal(cJSON_GetObjectItem(r, "index")->valueint, want->index);
        assert_int_equal(want->index, 1);   /* each task's second episode */
        assert_int_equal((int)cJSON_GetObjectItem(r, "seed")->valuedouble, 5 + 30 + k);
        m2_env *chk = make_env("scienceworld");
        char *text = task_text_at(chk, &o, M2_SPLIT_TRAIN, 30 + k, (uint64_t)(5 + 30 + k));
        assert_string_equal(cJSON_GetObjectItem(r, "task")->valuestring, text);
        free(text);
        m2_env_destroy(chk);
        cJSON_Delete(r);
    }
    assert_int_equal(k, 30);
    free(mem);
    m2_episode_order_free(&o);
    m2_replay_free(&buf);
    m2_env_destroy(env);

    /* evaluation on ALFWorld ID: 12 episodes, two per type, aggregated per type */
    env = make_env("alfworld");
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    mem = NULL;
    f = open_memstream(&mem, &len);
    if (m2_eval_run(env, NULL, M2_SPLIT_ID, 0, 12, 0, &p, &p, &lc, f, &agg, &err)) fail_msg("%s", err.msg);
    fclose(f);
    assert_non_null(strstr(mem, "\"task_type\":\"pick_two_obj_and_place\""));
    m2_env *chk = make_env("alfworld");
    build(chk, NULL, M2_SPLIT_ID, &o);
    k = 0;
    for (char *line = strtok(mem, "\n"); line; line = strtok(NULL, "\n"), k++) {   /* the order's episodes */
        cJSON *r = cJSON_Parse(line);
        char *text = task_text_at(chk, &o, M2_SPLIT_ID, k, (uint64_t)k);
        assert_string_equal(cJSON_GetObjectItem(r, "task")->valuestring, text);
        free(text);
        cJSON_Delete(r);
    }
    assert_int_equal(k, 12);
    m2_episode_order_free(&o);
    m2_env_destroy(chk);
    free(mem);
    const m2_eval_cell *all = m2_eval_agg_find(&agg, "id", "all");
    assert_non_null(all);
    assert_int_equal(all->n, 12);
    for (int t = 0; t < 6; t++) {
        const m2_eval_cell *c = m2_eval_agg_find(&agg, "id", env->cls->task_family_name(env, t));
        assert_non_null(c);
        assert_int_equal(c->n, 2);
    }
    char *js = m2_eval_agg_to_json(&agg);
    cJSON *j = cJSON_Parse(js);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "id"), "task_types")), 6);
    cJSON_Delete(j);
    free(js);
    m2_eval_agg_free(&agg);
    m2_env_destroy(env);
}

/* The reference rows of a run config (m2_pipe_eval_reference, the demo's oracle and random rows):
 * record k plays the order's position k with environment seed eval.seed + k, as the eval stage
 * does; the random policy's draws follow run.seed (the same seed, the same bytes; another seed,
 * other actions), so its row varies over an experiment's seeds; the oracle's do not. */
static char *reference_records(const char *policy, const char *run_seed) {
    char seed_kv[64];
    snprintf(seed_kv, sizeof seed_kv, "run.seed=%s", run_seed);
    char *over[] = {"env.name=textcraft", "eval.seed=7", seed_kv};
    m2_run_config *cfg = malloc(sizeof *cfg);
    m2_err err = {0};
    if (m2_run_config_load(cfg, NULL, 3, over, &err)) fail_msg("%s", err.msg);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    double success = -1;
    if (m2_pipe_eval_reference(cfg, "textcraft", policy, "id", 10, f, &success, NULL, &err)) fail_msg("%s", err.msg);
    fclose(f);
    assert_true(success >= 0 && success <= 1);
    free(cfg);
    return mem;
}

static void reference_rows_follow_the_run(void **state) {
    (void)state;
    char *r22 = reference_records("random", "22"), *again = reference_records("random", "22");
    char *r23 = reference_records("random", "23");
    assert_string_equal(r22, again);
    assert_string_not_equal(r22, r23);
    char *o22 = reference_records("oracle", "22"), *o23 = reference_records("oracle", "23");
    assert_string_equal(o22, o23);
    m2_env *env = make_env("textcraft"), *chk = make_env("textcraft");
    m2_episode_order o;
    build(env, NULL, M2_SPLIT_ID, &o);
    char *recs[2] = {r23, o22};
    for (int i = 0; i < 2; i++) {
        int k = 0;
        char *save = NULL;
        for (char *line = strtok_r(recs[i], "\n", &save); line; line = strtok_r(NULL, "\n", &save), k++) {
            cJSON *r = cJSON_Parse(line);
            assert_int_equal((int)cJSON_GetObjectItem(r, "seed")->valuedouble, 7 + k);
            assert_int_equal(cJSON_GetObjectItem(r, "index")->valueint, m2_episode_order_at(&o, k)->index);
            char *text = task_text_at(chk, &o, M2_SPLIT_ID, k, (uint64_t)(7 + k));
            assert_string_equal(cJSON_GetObjectItem(r, "task")->valuestring, text);
            free(text);
            cJSON_Delete(r);
        }
        assert_int_equal(k, 10);
    }
    m2_episode_order_free(&o);
    m2_env_destroy(env);
    m2_env_destroy(chk);
    free(r22), free(again), free(r23), free(o22), free(o23);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_60_cover_every_type),
        cmocka_unit_test(order_is_a_permutation),
        cmocka_unit_test(order_is_deterministic),
        cmocka_unit_test(types_are_described_types),
        cmocka_unit_test(data_stage_is_balanced),
        cmocka_unit_test(collection_and_eval_follow_the_order),
        cmocka_unit_test(reference_rows_follow_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
