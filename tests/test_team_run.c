/* `multi2 train` of a TeamTR run (method teamtr) on a very small config: the plan (pretrain on the
 * task family, then teamtr), the files (metrics under teamtr/agentK/, eval.json, one PEFT folder per
 * agent), and exact resume: a run stopped after a stage's checkpoint (run.stop_at_step) and a run
 * SIGKILLed after its first TeamTR checkpoint, both resumed, end with the same metrics, adapters and
 * evaluation as an uninterrupted run, byte for byte. Every baseline variant runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/core.h"
#include "pipe/pipe.h"
#include "tiny_run.h"
#include "tmpdir.h"

static char root[128];

#define PRETRAIN_STEPS 60
#define AGENTS 2
#define STAGES 4

static const char *yaml = M2T_TINY_TEAM_YAML;

static int setup(void **state) {
    (void)state;
    return m2t_tmpdir(root, sizeof root, "teamrun");
}

static int teardown(void **state) {
    (void)state;
    return m2_remove_tree(root) == 0 ? 0 : -1;
}

static void load(m2_run_config *cfg, const char *out, const char *name, int n, const char **over) {
    m2t_load_yaml(cfg, yaml, out, name, n, over);
}

static int run(const m2_run_config *cfg, int resume, m2_err *err) { return m2t_train(cfg, resume, err); }

static char *slurp(const char *dir, const char *file, size_t *len) {
    char p[900];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    char *s = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &s, len, &err)) fail_msg("%s", err.msg);
    return s;
}

/* The files that carry a run's numbers, byte for byte. */
static void same_results(const char *a, const char *b) {
    const char *files[] = {"metrics.jsonl", "artifacts/teamtr/eval.json", "artifacts/pretrain/base.gguf",
                           "artifacts/teamtr/adapter_agent1/adapter_model.safetensors",
                           "artifacts/teamtr/adapter_agent2/adapter_model.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        size_t la, lb;
        char *x = slurp(a, files[i], &la), *y = slurp(b, files[i], &lb);
        if (la != lb || memcmp(x, y, la)) fail_msg("%s differs between the uninterrupted and the resumed run", files[i]);
        free(x);
        free(y);
    }
}

static void plan_and_files(void **state) {
    (void)state;
    m2_run_config *a = malloc(sizeof *a);
    load(a, root, "straight", 0, NULL);
    const char *plan[M2_N_STAGES];
    int n = m2_run_stage_plan(a, plan, M2_N_STAGES);
    assert_int_equal(n, 2);
    assert_string_equal(plan[0], "pretrain");
    assert_string_equal(plan[1], "teamtr");
    /* no Multi² method runs the TeamTR stage */
    m2_run_config *b = malloc(sizeof *b);
    const char *m2[1] = {"method=multi2"};
    load(b, root, "x", 1, m2);
    n = m2_run_stage_plan(b, plan, M2_N_STAGES);
    for (int i = 0; i < n; i++) assert_string_not_equal(plan[i], "teamtr");
    free(b);
    m2_err err = {0};
    if (run(a, 0, &err)) fail_msg("%s", err.msg);
    char dir[600];
    m2_run_dir_for(a, dir, sizeof dir);
    char *m = slurp(dir, "metrics.jsonl", NULL);
    for (int k = 1; k <= AGENTS; k++) {
        char key[64];
        snprintf(key, sizeof key, "\"teamtr/agent%d/kl\"", k);
        assert_non_null(strstr(m, key));
        snprintf(key, sizeof key, "\"teamtr/agent%d/surrogate_gain\"", k);
        assert_non_null(strstr(m, key));
    }
    assert_non_null(strstr(m, "\"teamtr/certificate\""));
    assert_non_null(strstr(m, "\"teamtr/measured_gain\""));
    assert_non_null(strstr(m, "\"teamtr/rank_corr\""));
    /* the last update's step: pretrain steps + stages x agents */
    char last[64];
    snprintf(last, sizeof last, "{\"step\":%d,", PRETRAIN_STEPS + STAGES * AGENTS);
    assert_non_null(strstr(m, last));
    free(m);
    char *e = slurp(dir, "artifacts/teamtr/eval.json", NULL);
    cJSON *o = cJSON_Parse(e);
    assert_non_null(o);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "certificate")), STAGES);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "alone")), AGENTS);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "chain")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "best_of")));
    /* multi2 eval --run: the saved PEFT adapters give the stage's own final numbers */
    m2_team_eval ev;
    char recs[800];
    snprintf(recs, sizeof recs, "%s/eval_records.jsonl", root);
    FILE *rf = fopen(recs, "w");
    if (m2_pipe_eval_team_run(dir, 0, rf, &ev, &err)) fail_msg("%s", err.msg);
    fclose(rf);
    assert_int_equal(ev.n_agents, AGENTS);
    assert_true(ev.chain == cJSON_GetObjectItem(o, "chain")->valuedouble);
    assert_true(ev.best_of == cJSON_GetObjectItem(o, "best_of")->valuedouble);
    for (int k = 0; k < AGENTS; k++)
        assert_true(ev.alone[k] == cJSON_GetArrayItem(cJSON_GetObjectItem(o, "alone"), k)->valuedouble);
    char *rt = slurp(root, "eval_records.jsonl", NULL);
    int lines = 0;
    for (char *c = rt; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, ev.questions);
    assert_non_null(strstr(rt, "\"messages\":["));
    free(rt);
    cJSON_Delete(o);
    free(e);
    char p[800];
    snprintf(p, sizeof p, "%s/artifacts/teamtr/adapter_agent2/adapter_config.json", dir);
    assert_true(m2_path_exists(p));
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    assert_true(m2_path_exists(p));
    free(a);
}

/* The step ckpt/latest names (-1: none yet). */
static long latest_step(const char *path) {
    if (!m2_path_exists(path)) return -1;
    char *s = NULL;
    m2_err err = {0};
    if (m2_read_file(path, &s, NULL, &err)) return -1;
    const char *p = strstr(s, "step_");
    long v = p ? strtol(p + 5, NULL, 10) : -1;
    free(s);
    return v;
}

/* Stopped after the checkpoint of stage 1's end, then at a step inside stage 3 (which stops at that
 * stage's end, its checkpoint), resumed: the same bits. */
static void resume_stop_is_exact(void **state) {
    (void)state;
    m2_run_config *b = malloc(sizeof *b);
    char out[300];
    snprintf(out, sizeof out, "%s/stopped", root);
    load(b, out, "straight", 0, NULL);
    b->run_stop_at_step = PRETRAIN_STEPS + 1 * AGENTS;
    m2_err err = {0};
    assert_int_equal(run(b, 0, &err), -1);
    assert_int_equal(err.code, M2_ESTOPPED);
    b->run_stop_at_step = PRETRAIN_STEPS + 2 * AGENTS + 1;
    assert_int_equal(run(b, 1, &err), -1);
    assert_int_equal(err.code, M2_ESTOPPED);
    char dir[600], ck[800];
    m2_run_dir_for(b, dir, sizeof dir);
    snprintf(ck, sizeof ck, "%s/ckpt/latest", dir);
    assert_int_equal(latest_step(ck), PRETRAIN_STEPS + 3 * AGENTS);
    if (run(b, 1, &err)) fail_msg("%s", err.msg);
    char sa[300], sb[600];
    snprintf(sa, sizeof sa, "%s/straight", root);
    m2_run_dir_for(b, sb, sizeof sb);
    same_results(sa, sb);
    free(b);
}

/* SIGKILLed as soon as the first TeamTR checkpoint is the latest, then resumed from it. */
static void resume_after_kill_is_exact(void **state) {
    (void)state;
    m2_run_config *b = malloc(sizeof *b);
    char out[300], dir[600], ck[800];
    snprintf(out, sizeof out, "%s/killed", root);
    load(b, out, "straight", 0, NULL);
    m2_run_dir_for(b, dir, sizeof dir);
    snprintf(ck, sizeof ck, "%s/ckpt/latest", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        m2_err err = {0};
        _exit(run(b, 0, &err) ? 3 : 0);
    }
    int status = 0, killed = 0;
    for (int i = 0; i < 60000; i++) {   /* up to 10 minutes, polling every 10 ms */
        if (waitpid(pid, &status, WNOHANG) == pid) break;
        if (latest_step(ck) >= PRETRAIN_STEPS + AGENTS) {   /* a TeamTR checkpoint is the latest */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            killed = 1;
            break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(killed);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    m2_err err = {0};
    if (run(b, 1, &err)) fail_msg("%s", err.msg);
    char sa[300];
    snprintf(sa, sizeof sa, "%s/straight", root);
    same_results(sa, dir);
    free(b);
}

/* Every baseline runs to its end (2 stages), with its rollout count per stage. */
static void variants_run(void **state) {
    (void)state;
    const char *variants[5] = {"stale", "stale_happo", "joint", "no_tr", "teamtr"};
    for (int v = 0; v < 5; v++) {
        m2_run_config *c = malloc(sizeof *c);
        char name[64], vk[64];
        snprintf(name, sizeof name, "v_%s", variants[v]);
        snprintf(vk, sizeof vk, "teamtr.variant=%s", variants[v]);
        /* the last one is the single-agent baseline: a team of one */
        const char *over[3] = {vk, "teamtr.stages=2", v == 4 ? "teamtr.agents=1" : "teamtr.agents=2"};
        load(c, root, name, 3, over);
        m2_err err = {0};
        if (run(c, 0, &err)) fail_msg("%s: %s", variants[v], err.msg);
        char dir[600];
        m2_run_dir_for(c, dir, sizeof dir);
        char *m = slurp(dir, "metrics.jsonl", NULL);
        int agents = v == 4 ? 1 : AGENTS;
        /* stale variants and joint play the stage's rollouts once: tasks x G; single: one agent */
        int want = 4 * 4 * (!strcmp(variants[v], "no_tr") || v == 4 ? agents : 1);
        char key[64];
        snprintf(key, sizeof key, "\"teamtr/rollouts\":%d", want);
        if (!strstr(m, key)) fail_msg("%s: no %s in the metrics", variants[v], key);
        snprintf(key, sizeof key, "\"teamtr/agent%d/kl\"", agents);
        assert_non_null(strstr(m, key));
        if (agents == 1) assert_null(strstr(m, "teamtr/agent2/"));
        free(m);
        free(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_and_files),
        cmocka_unit_test(resume_stop_is_exact),
        cmocka_unit_test(resume_after_kill_is_exact),
        cmocka_unit_test(variants_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
