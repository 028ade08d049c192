/* Generic environment tooling: prompts, rollouts, hierarchical high/low records and JSONL, and the
 * play / tasks / eval / data / bench env commands run through the binary (M2_BIN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "data/prompts.h"
#include "core/core.h"
#include "data/data.h"
#include "env/env.h"
#include "tmpdir.h"

static void prompts(void **state) {
    const char *acts[] = {"get 1 oak logs", "it's"};
    char *s = m2_prompt_state(acts, 2, "Got 1 oak logs");
    assert_string_equal(s, "Group action: ['get 1 oak logs', \"it's\"]. Current observation: Got 1 oak logs");
    free(s);
    s = m2_prompt_state(NULL, 0, "obs");
    assert_string_equal(s, "Group action: []. Current observation: obs");
    free(s);
    s = m2_prompt_low_action("get 1 stick", 1);
    assert_string_equal(s, "get 1 stick; True");
    free(s);
    s = m2_prompt_low_context("craft 4 stick", 0);
    assert_true(!strncmp(s, "You are a low-level action executor.", 36));
    assert_non_null(strstr(s, "(true/false).\n Subtask: craft 4 stick"));
    free(s);
    s = m2_prompt_high_context("craft x");
    assert_non_null(strstr(s, "subtask.\n craft x"));
    free(s);
}

static m2_env *make_env(void) {
    m2_err err = {0};
    m2_env *e = NULL;
    if (m2_env_create("textcraft", NULL, &e, &err)) fail_msg("%s", err.msg);
    return e;
}

/* The record shapes of algorithms.md §0: high obs = G+1 states, low obs = T+1 entries, actions
 * "a; False" ... "a; True", intrinsic reward 1 on the last step. */
static void check_records(const cJSON *h, const cJSON *ls, int won) {
    const cJSON *obs = cJSON_GetObjectItem(h, "obs"), *sub = cJSON_GetObjectItem(h, "subtask");
    int G = cJSON_GetArraySize(sub);
    assert_true(G >= 1);
    assert_int_equal(cJSON_GetArraySize(obs), G + 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "reward")), G);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "score")), G);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "done")), G);
    assert_true(!strncmp(cJSON_GetArrayItem(obs, 0)->valuestring, "Group action: []. Current observation: Crafting commands:", 57));
    assert_true(!strncmp(cJSON_GetArrayItem(obs, 1)->valuestring, "Group action: ['", 16));
    assert_true(!strncmp(cJSON_GetObjectItem(h, "task_description")->valuestring, "You are a high-level planner.", 29));
    assert_int_equal(cJSON_GetArraySize(ls), G);
    if (won) {
        assert_true(cJSON_IsTrue(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "done"), G - 1)));
        assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "reward"), G - 1)->valuedouble == 1.0);
    }
    for (int g = 0; g < G; g++) {
        const cJSON *l = cJSON_GetArrayItem(ls, g);
        assert_string_equal(cJSON_GetObjectItem(l, "subgoal")->valuestring, cJSON_GetArrayItem(sub, g)->valuestring);
        assert_non_null(strstr(cJSON_GetObjectItem(l, "subtask")->valuestring, " Subtask: craft "));
        const cJSON *lo = cJSON_GetObjectItem(l, "obs"), *la = cJSON_GetObjectItem(l, "action");
        const cJSON *lr = cJSON_GetObjectItem(l, "reward"), *ld = cJSON_GetObjectItem(l, "done");
        int T = cJSON_GetArraySize(la);
        assert_true(T >= 1);
        assert_int_equal(cJSON_GetArraySize(lo), T + 1);
        assert_int_equal(cJSON_GetArraySize(lr), T);
        for (int i = 0; i <= T; i++) assert_true(!strncmp(cJSON_GetArrayItem(lo, i)->valuestring, "Obs: ", 5));
        int complete = g < G - 1 || won;
        for (int i = 0; i < T; i++) {
            const char *a = cJSON_GetArrayItem(la, i)->valuestring;
            int last = i == T - 1 && complete;
            const char *want = last ? "; True" : "; False";
            assert_string_equal(a + strlen(a) - strlen(want), want);
            assert_true(cJSON_GetArrayItem(lr, i)->valuedouble == (last ? 1.0 : 0.0));
            assert_int_equal(cJSON_IsTrue(cJSON_GetArrayItem(ld, i)), last);
        }
    }
}

static void expert_records(void **state) {
    m2_env *e = make_env();
    m2_err err = {0};
    m2_rollout_opts ro = {.policy = M2_POLICY_ORACLE, .max_steps = 50};
    int n = e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err);
    for (int i = 0; i < n; i++) {
        m2_env_traj t;
        assert_int_equal(m2_rollout(e, NULL, M2_SPLIT_TRAIN, i, 0, &ro, &t, &err), 0);
        assert_true(t.won);
        cJSON *h, *ls;
        assert_int_equal(m2_hier_records(e, &t, "expert", NULL, &h, &ls, &err), 0);
        check_records(h, ls, 1);
        /* one JSON object per line, parseable back */
        FILE *f = tmpfile();
        assert_int_equal(m2_hier_write_line(f, h, "tmp", &err), 0);
        rewind(f);
        char *line = NULL;
        size_t cap = 0;
        ssize_t len = getline(&line, &cap, f);
        assert_true(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', (size_t)len - 1));
        cJSON *back = cJSON_Parse(line);
        assert_non_null(back);
        assert_true(cJSON_Compare(back, h, 1));
        cJSON_Delete(back);
        free(line);
        fclose(f);
        cJSON_Delete(h);
        cJSON_Delete(ls);
        m2_env_traj_free(&t);
    }
    m2_env_destroy(e);
}

static void medium_and_random(void **state) {
    m2_env *e = make_env();
    m2_err err = {0};
    m2_rollout_opts ro = {.policy = M2_POLICY_MEDIUM, .max_steps = 50, .noise = 0.3f, .policy_seed = 5};
    int noisy = 0, won = 0;
    for (int i = 0; i < 20; i++) {
        m2_env_traj t, t2;
        assert_int_equal(m2_rollout(e, NULL, M2_SPLIT_TRAIN, i, 0, &ro, &t, &err), 0);
        cJSON *h, *ls;
        assert_int_equal(m2_hier_records(e, &t, "medium", NULL, &h, &ls, &err), 0);
        check_records(h, ls, t.won);
        cJSON_Delete(h);
        cJSON_Delete(ls);
        noisy += t.noisy_steps;
        won += t.won;
        /* same seeds, same episode */
        assert_int_equal(m2_rollout(e, NULL, M2_SPLIT_TRAIN, i, 0, &ro, &t2, &err), 0);
        assert_int_equal(t.n, t2.n);
        for (int s = 0; s < t.n; s++) assert_string_equal(t.steps[s].action, t2.steps[s].action);
        m2_env_traj_free(&t);
        m2_env_traj_free(&t2);
    }
    assert_true(noisy > 0);
    assert_true(won >= 15);   /* the oracle recovers from most noise within 50 steps */
    ro.policy = M2_POLICY_RANDOM;
    m2_env_traj t;
    assert_int_equal(m2_rollout(e, NULL, M2_SPLIT_TRAIN, 0, 0, &ro, &t, &err), 0);
    assert_true(t.n >= 1 && t.n <= 50);
    m2_env_traj_free(&t);
    m2_env_destroy(e);
}

/* ---- the binary ---- */

static char *run(const char *cmd, int *status) {
    const char *bin = getenv("M2_BIN");
    char full[8192];
    snprintf(full, sizeof full, cmd, bin);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    size_t k;
    while ((k = fread(out + n, 1, cap - 1 - n, p)) > 0) n += k;
    out[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static void cli_play_piped(void **state) {
    if (!getenv("M2_BIN")) skip();
    int st;
    char *o = run("printf 'help\\nadmissible\\nhint\\nget 1 pine logs\\ncraft 4 pine planks using 1 pine logs\\n"
                  "craft 4 stick using 2 pine planks\\nget 1 pine logs\\ncraft 4 pine planks using 1 pine logs\\n"
                  "inventory\\ncraft 3 pine sign using 6 pine planks, 1 stick\\n' | %s play --env textcraft --task 'pine sign' 2>&1", &st);
    assert_int_equal(st, 0);
    const char *want[] = {"Goal: craft pine sign.", "admissible", "  get 1 pine logs", "hint: get ", "> get 1 pine logs\nGot 1 pine logs",
                          "Crafted 4 minecraft:stick", "Inventory: [pine planks] (6) [stick] (4) ",
                          "Crafted 3 minecraft:pine_sign", "(reward 1, score 1)", "Episode over after 7 steps: won"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(o, want[i])) fail_msg("play output lacks '%s':\n%s", want[i], o);
    free(o);
    o = run("echo quit | %s play --env nethack 2>&1", &st);
    assert_int_equal(st, 1);
    assert_non_null(strstr(o, "unknown environment 'nethack'"));
    free(o);
    o = run("%s play --env textcraft --bogus 2>&1", &st);
    assert_int_equal(st, 2);
    free(o);
    /* an index past the split is refused, naming the split's size (it used to wrap round) */
    o = run("%s tasks --env textcraft --split train --json", &st);
    assert_int_equal(st, 0);
    cJSON *j = cJSON_Parse(o);
    assert_non_null(j);
    int n = cJSON_GetObjectItem(j, "count")->valueint;
    cJSON_Delete(j);
    free(o);
    char cmd[256], msg[128];
    snprintf(cmd, sizeof cmd, "echo quit | %%s play --env textcraft --index %d 2>&1", n);
    o = run(cmd, &st);
    assert_int_equal(st, 2);
    snprintf(msg, sizeof msg, "--index %d, but split train of textcraft has %d episodes (indices 0..%d)", n, n, n - 1);
    if (!strstr(o, msg)) fail_msg("play output lacks '%s':\n%s", msg, o);
    free(o);
    snprintf(cmd, sizeof cmd, "echo quit | %%s play --env textcraft --index %d 2>&1", n - 1);   /* the last one plays */
    o = run(cmd, &st);
    assert_int_equal(st, 0);
    assert_non_null(strstr(o, "Stopped after 0 steps"));
    free(o);
    o = run("echo quit | %s play --env scienceworld --split ood --index 99999 2>&1", &st);
    assert_int_equal(st, 2);
    assert_non_null(strstr(o, "--index 99999, but split ood of scienceworld has 1819 episodes"));
    free(o);
}

static void cli_tasks_eval_data_bench(void **state) {
    if (!getenv("M2_BIN")) skip();
    int st;
    char *o = run("%s tasks --env textcraft --split ood --json", &st);
    assert_int_equal(st, 0);
    cJSON *j = cJSON_Parse(o);
    assert_non_null(j);
    int n = cJSON_GetObjectItem(j, "count")->valueint;
    const cJSON *tasks = cJSON_GetObjectItem(j, "tasks");
    assert_int_equal(cJSON_GetArraySize(tasks), n);
    const cJSON *t0 = cJSON_GetArrayItem(tasks, 0);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(t0, "goal")));
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(t0, "commands")) >= 1);
    cJSON_Delete(j);
    free(o);

    o = run("%s eval --env textcraft --policy oracle --split ood --json", &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    assert_true(cJSON_GetObjectItem(j, "success")->valuedouble == 1.0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "results")), n);
    cJSON_Delete(j);
    free(o);
    o = run("%s eval --env textcraft --policy random --split train --episodes 5 --seed 3 --json", &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "episodes")->valueint, 5);
    cJSON_Delete(j);
    free(o);
    /* an unknown policy points at --run for trained policies (exit 2: a usage error) */
    o = run("%s eval --env textcraft --policy smart --split ood 2>&1", &st);
    assert_int_equal(st, 2);
    assert_non_null(strstr(o, "unknown policy 'smart'"));
    assert_non_null(strstr(o, "evaluated with --run RUN_DIR"));
    assert_null(strstr(o, "will come"));
    free(o);
    /* --episodes past the split: refused before any episode runs, naming the split's size */
    char big[256];
    snprintf(big, sizeof big, "%%s eval --env textcraft --policy oracle --split ood --episodes %d --json 2>&1", n + 1);
    o = run(big, &st);
    assert_int_equal(st, 2);
    char want[160];
    snprintf(want, sizeof want, "--episodes %d, but split ood of textcraft has %d episodes (use --episodes %d or fewer)",
             n + 1, n, n);
    if (!strstr(o, want)) fail_msg("eval output lacks '%s':\n%s", want, o);
    assert_null(strstr(o, "\"results\""));
    free(o);
    o = run("%s eval --env scienceworld --policy oracle --split ood --episodes 5000 2>&1", &st);
    assert_int_equal(st, 2);
    assert_non_null(strstr(o, "split ood of scienceworld has 1819 episodes"));
    assert_null(strstr(o, "out of range"));
    free(o);
    /* --episodes N without --task: the episode order (data/episodes.h), a breakdown per task type */
    o = run("%s eval --env scienceworld --policy oracle --split train --episodes 60 --json", &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    const cJSON *types = cJSON_GetObjectItem(j, "task_types");
    assert_int_equal(cJSON_GetArraySize(types), 30);
    for (const cJSON *t = types->child; t; t = t->next) {
        assert_int_equal(cJSON_GetObjectItem(t, "episodes")->valueint, 2);
        assert_true(cJSON_GetObjectItem(t, "success")->valuedouble == 1.0);
        assert_true(cJSON_GetObjectItem(t, "score")->valuedouble == 1.0);
    }
    const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 1);
    assert_string_equal(cJSON_GetObjectItem(r1, "task_type")->valuestring, "melt");   /* the second task */
    cJSON_Delete(j);
    free(o);
    /* the summary's mean score is on 0..1 like the per-type rows and the run reports: random play
     * in ScienceWorld ends with -100 (a wrong focus), which counts as 0, not as -100 */
    o = run("%s eval --env scienceworld --policy random --split id --episodes 6 --json", &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    double ms = cJSON_GetObjectItem(j, "mean_score")->valuedouble;
    assert_true(ms >= 0 && ms <= 1);
    int any_negative = 0;
    for (const cJSON *r = cJSON_GetObjectItem(j, "results")->child; r; r = r->next)
        any_negative |= cJSON_GetObjectItem(r, "score")->valuedouble < 0;
    assert_true(any_negative);   /* the per-episode records keep the game's own score */
    cJSON_Delete(j);
    free(o);
    o = run("%s eval --env alfworld --policy oracle --split id --episodes 12", &st);
    assert_int_equal(st, 0);
    assert_non_null(strstr(o, "pick_heat_then_place_in_recep"));
    assert_non_null(strstr(o, "2 episodes  success 1.0000"));
    free(o);
    o = run("%s eval --env textcraft --policy smart --split ood 2>&1", &st);
    assert_int_equal(st, 2);
    free(o);

    char dir[64];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "env"), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%%s data --env textcraft --split train --episodes 4 --out %s/exp --json", dir);
    o = run(cmd, &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "high_records")->valueint, 4);
    int nlow = cJSON_GetObjectItem(j, "low_records")->valueint;
    cJSON_Delete(j);
    free(o);
    char path[1200];
    snprintf(path, sizeof path, "%s/exp/low.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        assert_non_null(r);
        const cJSON *a = cJSON_GetObjectItem(r, "action");
        const char *last = cJSON_GetArrayItem(a, cJSON_GetArraySize(a) - 1)->valuestring;
        assert_string_equal(last + strlen(last) - 6, "; True");
        cJSON_Delete(r);
        lines++;
    }
    free(line);
    fclose(f);
    assert_int_equal(lines, nlow);
    /* the readers of data/records_read.h take the plain texts (the prompt is added by the caller) */
    m2_err err = {0};
    m2_low_record *lr = NULL;
    m2_high_record *hr = NULL;
    int nl = 0, nh = 0;
    assert_int_equal(m2_low_records_read(path, &lr, &nl, &err), 0);
    assert_int_equal(nl, nlow);
    assert_true(!strncmp(lr[0].subgoal, "craft ", 6));
    assert_int_equal(lr[0].n_obs, lr[0].n_steps + 1);
    m2_low_records_free(lr, nl);
    snprintf(path, sizeof path, "%s/exp/high.jsonl", dir);
    assert_int_equal(m2_high_records_read(path, &hr, &nh, &err), 0);
    assert_int_equal(nh, 4);
    assert_true(!strncmp(hr[0].task, "craft ", 6));
    assert_int_equal(hr[0].n_states, hr[0].n_subgoals + 1);
    m2_high_records_free(hr, nh);
    snprintf(cmd, sizeof cmd, "%%s data --env textcraft --split id --episodes 3 --variant medium --seed 2 --out %s/med 2>&1", dir);
    o = run(cmd, &st);
    assert_int_equal(st, 0);
    free(o);
    /* eval --run: the same up-front check, before the run's model is looked for (this run folder
     * has only its config) */
    snprintf(path, sizeof path, "%s/run", dir);
    assert_int_equal(m2_mkdir_p(path, NULL), 0);
    snprintf(path, sizeof path, "%s/run/config.yaml", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("env:\n  name: textcraft\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "%%s eval --run %s/run --split ood --episodes %d 2>&1", dir, n + 1);
    o = run(cmd, &st);
    assert_int_equal(st, 2);
    if (!strstr(o, want)) fail_msg("eval --run output lacks '%s':\n%s", want, o);
    assert_null(strstr(o, "base.gguf"));
    free(o);
    snprintf(cmd, sizeof cmd, "%%s eval --run %s/run --split ood --episodes %d 2>&1", dir, n);   /* in range: gets to the model */
    o = run(cmd, &st);
    assert_int_equal(st, 1);
    assert_non_null(strstr(o, "base.gguf: missing"));
    free(o);
    /* --action-mode: a bad name is a usage error naming the choices; a good one gets to the model */
    snprintf(cmd, sizeof cmd, "%%s eval --run %s/run --split ood --action-mode pick 2>&1", dir);
    o = run(cmd, &st);
    assert_int_equal(st, 2);
    assert_non_null(strstr(o, "--action-mode 'pick': expected generate|score"));
    free(o);
    snprintf(cmd, sizeof cmd, "%%s eval --run %s/run --split ood --action-mode score 2>&1", dir);
    o = run(cmd, &st);
    assert_int_equal(st, 1);
    assert_non_null(strstr(o, "base.gguf: missing"));
    free(o);
    /* ALFWorld: 12 episodes, two of each task type, each record names it */
    snprintf(cmd, sizeof cmd, "%%s data --env alfworld --split train --episodes 12 --out %s/aw 2>&1", dir);
    o = run(cmd, &st);
    assert_int_equal(st, 0);
    free(o);
    snprintf(path, sizeof path, "%s/aw/high.jsonl", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    int per_type[7] = {0};
    lines = 0;
    line = NULL;   /* freed after the first file */
    cap = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        const char *ty = cJSON_GetObjectItem(r, "task_type")->valuestring;
        static const char *const names[6] = {"pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
                                             "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place"};
        int k = 0;
        while (k < 6 && strcmp(names[k], ty)) k++;
        per_type[k]++;
        cJSON_Delete(r);
        lines++;
    }
    free(line);
    fclose(f);
    assert_int_equal(lines, 12);
    for (int k = 0; k < 6; k++) assert_int_equal(per_type[k], 2);
    assert_int_equal(m2_remove_tree(dir), 0);

    o = run("%s bench env --json --seconds 0.05", &st);
    assert_int_equal(st, 0);
    j = cJSON_Parse(o);
    assert_non_null(j);
    const cJSON *res = cJSON_GetObjectItem(j, "results");
    int tc = 0;
    for (int i = 0; i < cJSON_GetArraySize(res); i++) {
        const cJSON *r = cJSON_GetArrayItem(res, i);
        if (!strcmp(cJSON_GetObjectItem(r, "env")->valuestring, "textcraft")) {
            tc++;
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "available")));
            assert_true(cJSON_GetObjectItem(r, "steps")->valuedouble > 0);
        } else assert_non_null(cJSON_GetObjectItem(r, "available"));
    }
    assert_int_equal(tc, 2);
    cJSON_Delete(j);
    free(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prompts),
        cmocka_unit_test(expert_records),
        cmocka_unit_test(medium_and_random),
        cmocka_unit_test(cli_play_piped),
        cmocka_unit_test(cli_tasks_eval_data_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
