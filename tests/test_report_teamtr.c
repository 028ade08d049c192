/* TeamTR runs over seeds (pipe/report.h m2_report_teamtr, `multi2 report --teamtr`) on hand-made run
 * folders: groups by team size and variant, means and standard errors by hand, the stale penalty
 * paired by seed, the out-of-region rate and the c at which a stage's bound turns positive, the
 * hierarchy's evaluation beside a reference run, the charts written, and a folder that is no TeamTR
 * run refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "pipe/report.h"
#include "json_file.h"
#include "tmpdir.h"

static char root[128];

static int setup(void **state) {
    (void)state;
    return m2t_tmpdir(root, sizeof root, "reptt");
}

static int teardown(void **state) {
    (void)state;
    return m2_remove_tree(root) == 0 ? 0 : -1;
}

static void put(const char *dir, const char *file, const char *text) {
    m2_err err = {0};
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    char *slash = strrchr(p, '/');
    *slash = 0;
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    *slash = '/';
    assert_int_equal(m2_write_file_atomic(p, text, strlen(text), &err), 0);
}

/* A two-agent, two-stage run: success J0 -> J1 -> J2 (measured gains J1-J0, J2-J1), per stage two
 * updates with surrogate gains L and D^ (final) / D^ before the search (raw), out = D^raw > delta 0.01. */
static void make_run(const char *name, const char *variant, int seed, double J0, double J1, double J2,
                     const double L[4], const double D[4], const double raw[4]) {
    char dir[400], cfg[300], ev[600], m[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(cfg, sizeof cfg, "method: teamtr\nrun: {seed: %d}\nteamtr: {agents: 2, variant: %s, stages: 2}\n", seed, variant);
    put(dir, "config.yaml", cfg);
    double cert[2];
    for (int s = 0; s < 2; s++) cert[s] = L[2 * s] + L[2 * s + 1] - sqrt(D[2 * s]) - sqrt(D[2 * s + 1]);
    snprintf(ev, sizeof ev,
             "{\"success_before\": %g, \"success_after\": %g, \"certificate\": [%.17g, %.17g], \"measured_gain\": [%.17g, %.17g], "
             "\"rank_corr\": 0.5, \"violation_rate\": 0}",
             J0, J2, cert[0], cert[1], J1 - J0, J2 - J1);
    put(dir, "artifacts/teamtr/eval.json", ev);
    int n = 0;
    for (int s = 0; s < 2; s++) {
        for (int j = 0; j < 2; j++) {
            int u = 2 * s + j;
            n += snprintf(m + n, sizeof m - (size_t)n,
                          "{\"step\":%d,\"data\":{\"teamtr/agent%d/surrogate_gain\":%.17g,\"teamtr/agent%d/kl\":%.17g,"
                          "\"teamtr/agent%d/kl_raw\":%.17g,\"teamtr/agent%d/out_of_region\":%d}}\n",
                          100 + u + 1, j + 1, L[u], j + 1, D[u], j + 1, raw[u], j + 1, raw[u] > 0.01);
        }
        n += snprintf(m + n, sizeof m - (size_t)n,
                      "{\"step\":%d,\"data\":{\"teamtr/eval_success\":%g,\"teamtr/rollouts\":64}}\n", 100 + 2 * s + 2,
                      s ? J2 : J1);
    }
    put(dir, "metrics.jsonl", m);
}

static const cJSON *group(const cJSON *j, const char *variant) {
    for (const cJSON *o = cJSON_GetObjectItem(j, "groups")->child; o; o = o->next)
        if (!strcmp(cJSON_GetObjectItem(o, "variant")->valuestring, variant)) return o;
    fail_msg("no group %s", variant);
    return NULL;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItem(o, k);
    if (!cJSON_IsNumber(x)) fail_msg("no number %s", k);
    return x->valuedouble;
}

static void numbers_by_hand(void **state) {
    (void)state;
    const double L[4] = {0.02, 0.01, 0.03, -0.01}, D[4] = {0.0001, 0.0004, 0.0009, 0.0016}, raw[4] = {0.0001, 0.02, 0.0009, 0.0016};
    const double Ls[4] = {0.01, 0.01, 0.01, 0.01}, Dz[4] = {0.0025, 0.0025, 0.0025, 0.0025};
    /* TeamTR gains over seeds 1, 2: 0.20, 0.30; stale: 0.05, 0.25 -> paired penalties -0.15, -0.05 */
    make_run("tt1", "teamtr", 1, 0.40, 0.50, 0.60, L, D, raw);
    make_run("tt2", "teamtr", 2, 0.30, 0.45, 0.60, L, D, raw);
    make_run("st1", "stale", 1, 0.40, 0.40, 0.45, Ls, Dz, Dz);
    make_run("st2", "stale", 2, 0.30, 0.40, 0.55, Ls, Dz, Dz);
    make_run("st3", "stale", 3, 0.30, 0.30, 0.30, Ls, Dz, Dz);   /* no TeamTR run of seed 3: not paired */
    char out[300];
    snprintf(out, sizeof out, "%s/report", root);
    const char *dirs[5];
    char d[5][300];
    const char *names[5] = {"tt1", "tt2", "st1", "st2", "st3"};
    for (int i = 0; i < 5; i++) {
        snprintf(d[i], sizeof d[i], "%s/%s", root, names[i]);
        dirs[i] = d[i];
    }
    m2_err err = {0};
    if (m2_report_teamtr(dirs, 5, out, "test", &err)) fail_msg("%s", err.msg);
    cJSON *j = m2t_read_json(out, "teamtr.json");
    const cJSON *t = group(j, "teamtr"), *s = group(j, "stale");
    assert_int_equal((int)num(t, "seeds"), 2);
    assert_int_equal((int)num(s, "seeds"), 3);
    /* gains 0.2 and 0.3: mean 0.25, sd 0.0707107, se = sd / sqrt(2) = 0.05 */
    assert_true(fabs(num(t, "gain") - 0.25) < 1e-12);
    assert_true(fabs(num(t, "gain_se") - 0.05) < 1e-12);
    assert_true(fabs(num(t, "success_before") - 0.35) < 1e-12);
    /* one of the four updates of a run passed delta before its line search */
    assert_true(fabs(num(t, "out_of_region_rate") - 0.25) < 1e-12);
    assert_true(fabs(num(t, "D_max") - 0.0016) < 1e-15);
    assert_true(fabs(num(t, "D_raw_max") - 0.02) < 1e-15);
    /* c at which a stage's bound is positive: stage 1 0.03 / (0.01 + 0.02) = 1, stage 2 0.02 / (0.03 + 0.04)
     * = 0.285714; the median of {1, 0.2857, 1, 0.2857} is their mean 0.642857 */
    assert_true(fabs(num(t, "c_half") - (1.0 + 0.02 / 0.07) / 2) < 1e-12);
    /* stale: 0.02 / (0.05 + 0.05) = 0.2 at every stage */
    assert_true(fabs(num(s, "c_half") - 0.2) < 1e-12);
    /* penalty: stale's gain minus TeamTR's over the seeds both ran: -0.15, -0.05 -> -0.1 +- 0.05 */
    const cJSON *p = cJSON_GetObjectItem(j, "stale_penalty")->child;
    assert_non_null(p);
    assert_int_equal((int)num(p, "paired_seeds"), 2);
    assert_true(fabs(num(p, "penalty") + 0.1) < 1e-12);
    assert_true(fabs(num(p, "penalty_se") - 0.05) < 1e-12);
    cJSON_Delete(j);
    const char *charts[] = {"teamtr_success", "teamtr_kl", "teamtr_cumulative", "teamtr_bound_vs_gain", "teamtr_stale_penalty"};
    for (int i = 0; i < 5; i++) {
        char f[600];
        snprintf(f, sizeof f, "%s/plots/%s.svg", out, charts[i]);
        if (!m2_path_exists(f)) fail_msg("%s missing", f);
        snprintf(f, sizeof f, "%s/plots/%s.png", out, charts[i]);
        if (!m2_path_exists(f)) fail_msg("%s missing", f);
    }
    /* the markdown holds the table rows */
    char mp[600], *md = NULL;
    snprintf(mp, sizeof mp, "%s/teamtr.md", out);
    assert_int_equal(m2_read_file(mp, &md, NULL, &err), 0);
    assert_non_null(strstr(md, "| n = 2 | teamtr | 2 |"));
    if (!strstr(md, "| 2 | stale | 2 | -0.100 ± 0.050 |")) fail_msg("%s", md);
    free(md);
    /* written again into the folder it wrote */
    if (m2_report_teamtr(dirs, 2, out, NULL, &err)) fail_msg("%s", err.msg);
}

/* The hierarchy's greedy evaluation beside a multi2 run's; a folder that is neither is named. */
static void evaluation_and_refusals(void **state) {
    (void)state;
    const double L[4] = {0.01, 0.01, 0.01, 0.01}, D[4] = {0.001, 0.001, 0.001, 0.001};
    char dir[400], ref[400], bad[400], out[400];
    snprintf(dir, sizeof dir, "%s/hier", root);
    snprintf(ref, sizeof ref, "%s/m2", root);
    snprintf(bad, sizeof bad, "%s/plain", root);
    snprintf(out, sizeof out, "%s/report-h", root);
    put(dir, "config.yaml", "method: teamtr_hier\nrun: {seed: 4}\nteamtr: {stages: 2, hier: {sys1: frozen}}\n");
    char ev[400];
    snprintf(ev, sizeof ev, "{\"success_before\": 0.2, \"success_after\": 0.3, \"certificate\": [%g, %g], "
             "\"measured_gain\": [0.05, 0.05], \"rank_corr\": 0, \"violation_rate\": 0}", 0.0, 0.0);
    put(dir, "artifacts/teamtr_hier/eval.json", ev);
    put(dir, "metrics.jsonl",
        "{\"step\":11,\"data\":{\"teamtr/sys2/surrogate_gain\":0.01,\"teamtr/sys2/kl\":0.001,\"teamtr/sys2/kl_raw\":0.001,"
        "\"teamtr/sys2/out_of_region\":0}}\n{\"step\":11,\"data\":{\"teamtr/eval_success\":0.25,\"teamtr/rollouts\":16}}\n"
        "{\"step\":12,\"data\":{\"teamtr/sys2/surrogate_gain\":0.01,\"teamtr/sys2/kl\":0.001,\"teamtr/sys2/kl_raw\":0.001,"
        "\"teamtr/sys2/out_of_region\":0}}\n{\"step\":12,\"data\":{\"teamtr/eval_success\":0.3,\"teamtr/rollouts\":16}}\n");
    put(dir, "results.json", "{\"rows\": [{\"split\": \"id\", \"success\": 0.4}, {\"split\": \"ood\", \"success\": 0.1}]}");
    put(ref, "config.yaml", "method: multi2\nrun: {seed: 4}\n");
    put(ref, "results.json", "{\"rows\": [{\"split\": \"id\", \"success\": 0.3}, {\"split\": \"ood\", \"success\": 0.2}]}");
    (void)L;
    (void)D;
    const char *dirs[2] = {dir, ref};
    m2_err err = {0};
    if (m2_report_teamtr(dirs, 2, out, NULL, &err)) fail_msg("%s", err.msg);
    cJSON *j = m2t_read_json(out, "teamtr.json");
    const cJSON *e = cJSON_GetObjectItem(j, "evaluation");
    assert_int_equal(cJSON_GetArraySize(e), 2);
    const cJSON *h = cJSON_GetArrayItem(e, 0), *m = cJSON_GetArrayItem(e, 1);
    assert_string_equal(cJSON_GetObjectItem(h, "run")->valuestring, "teamtr, System 1 frozen");
    assert_true(num(h, "id_success") == 0.4 && num(h, "ood_success") == 0.1);
    assert_string_equal(cJSON_GetObjectItem(m, "run")->valuestring, "multi2 (its own stages)");
    assert_true(num(m, "id_success") == 0.3);
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "groups"), 0);
    assert_true(fabs(num(g, "gain") - 0.1) < 1e-12);
    cJSON_Delete(j);
    /* a run of another method without an evaluation is no TeamTR run */
    put(bad, "config.yaml", "method: multi2\n");
    const char *bd[1] = {bad};
    char out2[400];
    snprintf(out2, sizeof out2, "%s/report-bad", root);
    assert_int_equal(m2_report_teamtr(bd, 1, out2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "plain"));
    assert_non_null(strstr(err.msg, "no TeamTR run"));
    /* the output may not be a run folder */
    assert_int_equal(m2_report_teamtr(dirs, 1, ref, NULL, &err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbers_by_hand),
        cmocka_unit_test(evaluation_and_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
