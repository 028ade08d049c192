/* Results over training seeds (pipe/report.h m2_report_over_seeds, `multi2 report`): means and
 * standard errors by hand, rows missing from a folder, one folder, damaged inputs named, and an
 * output folder that would overwrite a run or a demo refused. */
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
#include <sys/wait.h>
#include "core/fsutil.h"
#include "pipe/report.h"
#include "run_schema.h"
#include "tmpdir.h"

static void put_results(const char *dir, const char *json) {
    m2_err err = {0};
    char p[600];
    assert_int_equal(m2_mkdir_p(dir, &err), 0);
    snprintf(p, sizeof p, "%s/results.json", dir);
    assert_int_equal(m2_write_file_atomic(p, json, strlen(json), &err), 0);
}

static char *row(const char *method, const char *split, double success, double score) {
    static char buf[4][300];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0],
             "{\"method\":\"%s\",\"env\":\"textcraft\",\"split\":\"%s\",\"episodes\":10,\"success\":%g,\"score\":%g,"
             "\"steps\":20,\"tokens_per_episode\":1000}",
             method, split, success, score);
    return b;
}

static cJSON *read_json(const char *dir) {
    m2_err err = {0};
    char p[600], *text = NULL;
    snprintf(p, sizeof p, "%s/results.json", dir);
    assert_int_equal(m2_read_file(p, &text, NULL, &err), 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static const cJSON *find_row(const cJSON *j, const char *method, const char *split) {
    for (const cJSON *o = cJSON_GetObjectItem(j, "rows")->child; o; o = o->next)
        if (!strcmp(cJSON_GetObjectItem(o, "method")->valuestring, method) &&
            !strcmp(cJSON_GetObjectItem(o, "split")->valuestring, split))
            return o;
    fail_msg("no row %s %s", method, split);
    return NULL;
}

static void means_and_standard_errors(void **state) {
    (void)state;
    char dir[256], a[300], b[300], c[300], out[300], js[1200];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds"), 0);
    snprintf(a, sizeof a, "%s/s22", dir);
    snprintf(b, sizeof b, "%s/s23", dir);
    snprintf(c, sizeof c, "%s/s24", dir);
    snprintf(out, sizeof out, "%s/over", dir);
    snprintf(js, sizeof js, "{\"rows\":[%s,%s]}", row("multi2", "id", 0.2, 0.25), row("flat", "id", 0.1, 0.1));
    put_results(a, js);
    snprintf(js, sizeof js, "{\"rows\":[%s,%s]}", row("multi2", "id", 0.4, 0.5), row("flat", "id", 0.3, 0.3));
    put_results(b, js);
    snprintf(js, sizeof js, "{\"rows\":[%s]}", row("multi2", "id", 0.9, 0.75));   /* flat missing here */
    put_results(c, js);
    const char *f[3] = {a, b, c};
    assert_int_equal(m2_report_over_seeds(f, 3, out, NULL, &err), 0);
    char why[1024], jp[600];
    snprintf(jp, sizeof jp, "%s/results.json", out);
    if (m2s_check_json_file(jp, &m2s_seeds, why, sizeof why)) fail_msg("%s", why);   /* docs/runs.md's format */
    cJSON *j = read_json(out);
    /* multi2: 0.2, 0.4, 0.9 -> mean 0.5, sample sd sqrt(0.13) = 0.360555, se 0.208167 */
    const cJSON *m = find_row(j, "multi2", "id");
    assert_int_equal(cJSON_GetObjectItem(m, "seeds")->valueint, 3);
    assert_true(fabs(cJSON_GetObjectItem(m, "success")->valuedouble - 0.5) < 1e-12);
    assert_true(fabs(cJSON_GetObjectItem(m, "success_se")->valuedouble - 0.2081666) < 1e-6);
    /* score 0.25, 0.5, 0.75 -> 0.5 +- 0.25 / sqrt(3) */
    assert_true(fabs(cJSON_GetObjectItem(m, "score_se")->valuedouble - 0.25 / sqrt(3.0)) < 1e-12);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m, "success_per_seed")), 3);
    /* flat over the two folders that have it: 0.1, 0.3 -> 0.2 +- 0.1 */
    const cJSON *fl = find_row(j, "flat", "id");
    assert_int_equal(cJSON_GetObjectItem(fl, "seeds")->valueint, 2);
    assert_true(fabs(cJSON_GetObjectItem(fl, "success_se")->valuedouble - 0.1) < 1e-12);
    assert_true(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItem(fl, "success_per_seed"), 2)));
    cJSON_Delete(j);
    char p[600], *md = NULL;
    snprintf(p, sizeof p, "%s/results.md", out);
    assert_int_equal(m2_read_file(p, &md, NULL, &err), 0);
    assert_non_null(strstr(md, "| multi2 | textcraft | id | 3 | 10 | 50.0 ± 20.8 | 0.500 ± 0.144 | 20.0 | 1000 | 20.0 40.0 90.0 |"));
    assert_non_null(strstr(md, "| flat | textcraft | id | 2 | 10 | 20.0 ± 10.0 |"));
    free(md);
    snprintf(p, sizeof p, "%s/plots/results.svg", out);
    assert_true(m2_path_exists(p));
    /* written again into its own folder: allowed; one folder: no standard error */
    assert_int_equal(m2_report_over_seeds(f, 1, out, "one seed", &err), 0);
    j = read_json(out);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(find_row(j, "multi2", "id"), "success_se")));
    cJSON_Delete(j);
    snprintf(p, sizeof p, "%s/results.md", out);
    assert_int_equal(m2_read_file(p, &md, NULL, &err), 0);
    assert_non_null(strstr(md, "| multi2 | textcraft | id | 1 | 10 | 20.0 | 0.250 |"));
    free(md);
    m2_remove_tree(dir);
}

static void bad_inputs_and_folders_are_refused(void **state) {
    (void)state;
    char dir[256], a[300], b[300], out[300], js[1200], p[600];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_bad"), 0);
    snprintf(a, sizeof a, "%s/s22", dir);
    snprintf(b, sizeof b, "%s/s23", dir);
    snprintf(out, sizeof out, "%s/over", dir);
    snprintf(js, sizeof js, "{\"rows\":[%s]}", row("multi2", "id", 0.2, 0.25));
    put_results(a, js);
    const char *f[2] = {a, b};
    /* b has no results.json: named */
    assert_int_equal(m2_report_over_seeds(f, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "s23/results.json"));
    assert_false(m2_path_exists(out));   /* nothing written */
    /* a row without its success field: file, row and field named */
    put_results(b, "{\"rows\":[{\"method\":\"multi2\",\"env\":\"textcraft\",\"split\":\"id\",\"episodes\":10}]}");
    assert_int_equal(m2_report_over_seeds(f, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "s23/results.json: rows[0].success"));
    put_results(b, "[1, 2]");
    assert_int_equal(m2_report_over_seeds(f, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no \"rows\" array"));
    /* the same row twice in one folder */
    snprintf(js, sizeof js, "{\"rows\":[%s,%s]}", row("multi2", "id", 0.2, 0.25), row("multi2", "id", 0.3, 0.3));
    put_results(b, js);
    assert_int_equal(m2_report_over_seeds(f, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "a second row"));
    /* output folders that hold something else are left alone */
    snprintf(p, sizeof p, "%s/demo.json", out);
    assert_int_equal(m2_mkdir_p(out, &err), 0);
    assert_int_equal(m2_write_file_atomic(p, "{}", 2, &err), 0);
    assert_int_equal(m2_report_over_seeds(f, 1, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "holds a demo"));
    snprintf(p, sizeof p, "%s/results.json", out);
    assert_false(m2_path_exists(p));
    assert_int_equal(m2_report_over_seeds(f, 1, a, NULL, &err), -1);   /* an input folder as the output */
    m2_remove_tree(dir);
}

static void cli_usage(void **state) {
    (void)state;
    const char *bin = getenv("M2_BIN");
    if (!bin) skip();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s report some/folder >/dev/null 2>&1", bin);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);   /* no --out */
    snprintf(cmd, sizeof cmd, "%s report --help >/dev/null 2>&1", bin);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
    snprintf(cmd, sizeof cmd, "%s report --out /tmp/m2_no_such_seeds_out /tmp/m2_no_such_seed_folder >/dev/null 2>&1", bin);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(means_and_standard_errors),
        cmocka_unit_test(bad_inputs_and_folders_are_refused),
        cmocka_unit_test(cli_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
