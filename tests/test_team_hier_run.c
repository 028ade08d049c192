/* `multi2 train` of the hierarchical team (method teamtr_hier) on a very small TextCraft config, its
 * first five stages taken from a multi2 run (run.reuse_from): it starts from that run's sys1 / sys2
 * adapters (with a zero learning rate it saves them unchanged), a frozen System 1 is saved as it came
 * and only System 2 is logged and trained (one rollout batch a stage instead of two), and a run
 * stopped after a stage's checkpoint and resumed ends with the same metrics, adapters, summary and
 * evaluation records as an uninterrupted one, byte for byte. A random tiny model never wins, so
 * the rewards are 0: AdamW's weight decay (teamtr.weight_decay) is what moves the weights here, so
 * a resume that lost them would show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "pipe/pipe.h"
#include "tiny_run.h"
#include "tmpdir.h"

static char root[128];

#define STAGES 3
#define REUSED "run.reuse_stages=[pretrain, data, sys1_sft, sys2_warmup, sys2_offline]"

static const char *yaml =
    "method: multi2\n" M2T_TINY_PIPELINE_YAML
    "  online: {epochs: 1, episodes_per_epoch: 1, updates_per_epoch: 2, batch: 2, buffer_capacity: 40, seed_offline: 10}\n"
    "eval: {episodes: 2, splits: [id], max_new_tokens: 6, step_limit: 4}\n"
    "teamtr: {stages: 3, tasks_per_stage: 2, group: 2, epochs: 2, lr: 0.05, weight_decay: 0.5, eval_tasks: 2, eval_samples: 1}\n";

static int setup(void **state) {
    (void)state;
    return m2t_tmpdir(root, sizeof root, "teamhier");
}

static int teardown(void **state) {
    (void)state;
    return m2_remove_tree(root) == 0 ? 0 : -1;
}

/* The test config as run `name` under root, with overrides over[n]. */
static m2_run_config *load(const char *name, int n, const char **over) {
    m2_run_config *cfg = malloc(sizeof *cfg);
    m2t_load_yaml(cfg, yaml, root, name, n, over);
    return cfg;
}

static char *slurp(const char *run, const char *file, size_t *len) {
    char p[900];
    snprintf(p, sizeof p, "%s/%s/%s", root, run, file);
    char *s = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &s, len, &err)) fail_msg("%s", err.msg);
    return s;
}

static void same_file(const char *ra, const char *fa, const char *rb, const char *fb, int want_same) {
    size_t la, lb;
    char *x = slurp(ra, fa, &la), *y = slurp(rb, fb, &lb);
    int same = la == lb && !memcmp(x, y, la);
    if (same != want_same) fail_msg("%s/%s and %s/%s: %s", ra, fa, rb, fb, same ? "the same" : "differ");
    free(x);
    free(y);
}

/* The multi2 run the hierarchical runs start from (made once). */
static void source_run(void) {
    static int done;
    if (done) return;
    m2_run_config *c = load("src", 0, NULL);
    m2_err err = {0};
    if (m2t_train(c, 0, &err)) fail_msg("multi2: %s", err.msg);
    free(c);
    done = 1;
}

/* A teamtr_hier run `name` from the source run, with more overrides. */
static void hier_run(const char *name, int n, const char **more, int64_t stop_at, int resume) {
    const char *over[8] = {"method=teamtr_hier", REUSED};
    char from[300];
    snprintf(from, sizeof from, "run.reuse_from=%s/src", root);
    over[2] = from;
    for (int i = 0; i < n; i++) over[3 + i] = more[i];
    m2_run_config *c = load(name, 3 + n, over);
    c->run_stop_at_step = stop_at;
    m2_err err = {0};
    int rc = m2t_train(c, resume, &err);
    if (stop_at) {
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, M2_ESTOPPED);
    } else if (rc) {
        fail_msg("%s: %s", name, err.msg);
    }
    free(c);
}

#define ADAPTER(role) "artifacts/" role "/adapter_model.safetensors"

static void plan_files_and_start(void **state) {
    (void)state;
    source_run();
    m2_run_config *c = load("x", 1, (const char *[]){"method=teamtr_hier"});
    const char *plan[M2_N_STAGES];
    int n = m2_run_stage_plan(c, plan, M2_N_STAGES);
    free(c);
    const char *want[8] = {"pretrain", "data", "sys1_sft", "sys2_warmup", "sys2_offline", "teamtr_hier", "eval", "report"};
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) assert_string_equal(plan[i], want[i]);
    hier_run("straight", 0, NULL, 0, 0);
    char *m = slurp("straight", "metrics.jsonl", NULL);
    assert_non_null(strstr(m, "\"teamtr/sys1/kl\""));
    assert_non_null(strstr(m, "\"teamtr/sys2/kl\""));
    assert_non_null(strstr(m, "\"teamtr/rollouts\":8"));   /* fresh: 2 agents x 2 tasks x G 2 */
    assert_null(strstr(m, "sys2_online"));
    free(m);
    char *st = slurp("straight", "stages.json", NULL);
    assert_non_null(strstr(st, "teamtr_hier"));
    free(st);
    /* the eval stage plays the team's adapters; the records exist */
    free(slurp("straight", "eval/id.jsonl", NULL));
    free(slurp("straight", "artifacts/teamtr_hier/eval.json", NULL));
    /* weight decay moved both; a zero learning rate leaves the source run's adapters as they were */
    same_file("src", ADAPTER("sys1_sft/adapter_sys1"), "straight", ADAPTER("teamtr_hier/adapter_sys1"), 0);
    same_file("src", ADAPTER("sys2_offline/adapter_sys2"), "straight", ADAPTER("teamtr_hier/adapter_sys2"), 0);
    hier_run("lr0", 1, (const char *[]){"teamtr.lr=0"}, 0, 0);
    same_file("src", ADAPTER("sys1_sft/adapter_sys1"), "lr0", ADAPTER("teamtr_hier/adapter_sys1"), 1);
    same_file("src", ADAPTER("sys2_offline/adapter_sys2"), "lr0", ADAPTER("teamtr_hier/adapter_sys2"), 1);
}

/* System 1 frozen: saved as it came, never logged, one rollout batch a stage. */
static void frozen_planner(void **state) {
    (void)state;
    source_run();
    hier_run("frozen", 1, (const char *[]){"teamtr.hier.sys1=frozen"}, 0, 0);
    same_file("src", ADAPTER("sys1_sft/adapter_sys1"), "frozen", ADAPTER("teamtr_hier/adapter_sys1"), 1);
    same_file("src", ADAPTER("sys2_offline/adapter_sys2"), "frozen", ADAPTER("teamtr_hier/adapter_sys2"), 0);
    char *m = slurp("frozen", "metrics.jsonl", NULL);
    assert_null(strstr(m, "teamtr/sys1/"));
    assert_non_null(strstr(m, "\"teamtr/sys2/kl\""));
    assert_non_null(strstr(m, "\"teamtr/rollouts\":4"));   /* one batch: 2 tasks x G 2 */
    free(m);
}

/* Stopped after stage 1's checkpoint, resumed: the same bits as the uninterrupted run. */
static void resume_is_exact(void **state) {
    (void)state;
    source_run();
    /* the step of the first stage's end: where the straight run logged its first certificate */
    char *straight = slurp("straight", "metrics.jsonl", NULL);
    const char *first = strstr(straight, "\"teamtr/certificate\"");
    assert_non_null(first);
    const char *s = first;
    while (s > straight && strncmp(s, "{\"step\":", 8)) s--;
    long step = strtol(s + 8, NULL, 10);
    free(straight);
    hier_run("resumed", 0, NULL, step, 0);
    hier_run("resumed", 0, NULL, 0, 1);
    const char *files[] = {"metrics.jsonl", "artifacts/teamtr_hier/eval.json", "eval/id.jsonl",
                           ADAPTER("teamtr_hier/adapter_sys1"), ADAPTER("teamtr_hier/adapter_sys2")};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) same_file("straight", files[i], "resumed", files[i], 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_files_and_start),
        cmocka_unit_test(frozen_planner),
        cmocka_unit_test(resume_is_exact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
