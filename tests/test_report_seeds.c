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
#include "core/strbuf.h"
#include "pipe/report.h"
#include "run_schema.h"
#include "json_file.h"
#include "tmpdir.h"

static void put_results(const char *dir, const char *json) {
    m2_err err = {0};
    char p[1400];
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
    cJSON *j = m2t_read_json(out, "results.json");
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
    assert_non_null(strstr(md, "| multi2 | textcraft | id | 3 | 10 | 50.0 ± 20.8 | 0.500 ± 0.144 | 20.0 | 1000 | - | - | - | 20.0 40.0 90.0 |"));
    assert_non_null(strstr(md, "| flat | textcraft | id | 2 | 10 | 20.0 ± 10.0 |"));
    free(md);
    snprintf(p, sizeof p, "%s/plots/results.svg", out);
    assert_true(m2_path_exists(p));
    /* written again into its own folder: allowed; one folder: no standard error */
    assert_int_equal(m2_report_over_seeds(f, 1, out, "one seed", &err), 0);
    j = m2t_read_json(out, "results.json");
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

/* ---- figures and action modes ---- */

/* dir/name (name may hold a folder: "eval/id.jsonl"), folders made */
static void put_file(const char *dir, const char *name, const char *text) {
    m2_err err = {0};
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    *strrchr(p, '/') = 0;
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(m2_write_file_atomic(p, text, strlen(text), &err), 0);
}

/* An evaluation record with the fields the report reads (type NULL: none). */
static void record(m2_strbuf *b, const char *env, const char *method, const char *type, int success, double score,
                   int sys1, int sys2) {
    m2_strbuf_appendf(b, "{\"env\":\"%s\",\"split\":\"id\",\"method\":\"%s\",", env, method);
    if (type) m2_strbuf_appendf(b, "\"task_type\":\"%s\",", type);
    m2_strbuf_appendf(b, "\"success\":%s,\"score\":%g,\"steps\":5,\"tokens\":%d,\"token_counts\":{\"sys1_prompt\":%d,"
                         "\"sys1_gen\":0,\"sys2_prompt\":%d,\"sys2_gen\":0}}\n",
                      success ? "true" : "false", score, sys1 + sys2, sys1, sys2);
}

static char *read_text(const char *dir, const char *name) {
    m2_err err = {0};
    char p[1400], *t[1] = {NULL};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (m2_read_file(p, t, NULL, &err)) fail_msg("%s", err.msg);
    return t[0];
}

/* Three demo-like seed folders (FOLDER/<env>/<method>/eval), numbers chosen by hand:
 *  textcraft multi2, per seed (depth 1 | depth 2 successes): 1 1 | 0 1,  1 0 | 0 0,  1 1 | 0 0
 *    -> per-type rates x 100 over seeds x types {100, 50, 50, 0, 100, 0}: quartiles (numpy's linear
 *       rule) 12.5 / 50 / 87.5, whiskers 0 to 100; depth 1 per seed 100 50 100 -> 83.3 +- 16.7,
 *       depth 2: 50 0 0 -> 16.7 +- 16.7; System 1 tokens per episode 10, 20, 30 -> 20 +- 5.8
 *  textcraft oracle, two records without a type per seed: 1 1, 1 1, 1 0 -> six values, not three:
 *    {100 x 5, 0}: box 100 / 100 / 100 with 0 beyond the whiskers; no tokens, so not in the tokens chart
 *  scienceworld multi2, one "boil" record per seed, raw scores 50 25 75 -> unit 0.5 0.25 0.75: the
 *    score is its measure: quartiles 0.375 / 0.5 / 0.625
 *  textcraft multi2's online evaluations (metrics.jsonl): ID success at epoch 0: 0, 0.5, 1 -> 50 +- 28.87;
 *    epoch 1: 1 1 1 -> 100 */
static void figures_from_records(void **state) {
    (void)state;
    char dir[256], f[3][300], out[300], d[1000];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_figs"), 0);
    static const int tc[3][4] = {{1, 1, 0, 1}, {1, 0, 0, 0}, {1, 1, 0, 0}}, oracle[3][2] = {{1, 1}, {1, 1}, {1, 0}};
    static const double sw[3] = {50, 25, 75}, online0[3] = {0, 0.5, 1};
    for (int s = 0; s < 3; s++) {
        snprintf(f[s], sizeof f[s], "%s/s%d", dir, s);
        char js[1200];
        snprintf(js, sizeof js, "{\"rows\":[%s,%s,%s]}", row("multi2", "id", 0, 0), row("oracle", "id", 1, 1),
                 "{\"method\":\"multi2\",\"env\":\"scienceworld\",\"split\":\"id\",\"episodes\":1,\"success\":0,"
                 "\"score\":0.5,\"steps\":5,\"tokens_per_episode\":100}");
        put_results(f[s], js);
        m2_strbuf b = {0};
        for (int e = 0; e < 4; e++) record(&b, "textcraft", "multi2", e < 2 ? "depth 1" : "depth 2", tc[s][e], tc[s][e], 10 * (s + 1), 100);
        snprintf(d, sizeof d, "%s/textcraft/multi2", f[s]);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        put_file(d, "config.yaml", "method: multi2\nenv: {name: textcraft}\n");
        m2_strbuf_free(&b);
        m2_strbuf_appendf(&b, "{\"step\":7,\"data\":{\"sys2/actor_loss\":1}}\n"
                              "{\"step\":8,\"data\":{\"sys2_online/eval_epoch\":0,\"sys2_online/eval_id_success\":%g,"
                              "\"sys2_online/eval_id_score\":0,\"sys2_online/eval_ood_success\":0,\"sys2_online/eval_ood_score\":0}}\n"
                              "{\"step\":10,\"data\":{\"sys2_online/eval_epoch\":1,\"sys2_online/eval_id_success\":1,"
                              "\"sys2_online/eval_id_score\":1,\"sys2_online/eval_ood_success\":0,\"sys2_online/eval_ood_score\":0}}\n",
                          online0[s]);
        put_file(d, "metrics.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        for (int e = 0; e < 2; e++) record(&b, "textcraft", "oracle", NULL, oracle[s][e], oracle[s][e], 0, 0);
        snprintf(d, sizeof d, "%s/textcraft/oracle", f[s]);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        record(&b, "scienceworld", "multi2", "boil", 0, sw[s], 5, 50);
        snprintf(d, sizeof d, "%s/scienceworld/multi2", f[s]);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        put_file(d, "config.yaml", "method: multi2\nenv: {name: scienceworld}\n");
        m2_strbuf_free(&b);
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[3] = {f[0], f[1], f[2]};
    assert_int_equal(m2_report_over_seeds(fl, 3, out, NULL, &err), 0);
    char *boxes = read_text(out, "plots/boxes.svg"), *buckets = read_text(out, "plots/buckets_textcraft.svg");
    char *buckets_sw = read_text(out, "plots/buckets_scienceworld.svg");
    char *tokens = read_text(out, "plots/tokens.svg"), *online = read_text(out, "plots/online.svg");
    /* box plots: textcraft in %, scienceworld's score */
    assert_non_null(strstr(boxes, "Panel textcraft: success rate (%) per task type:\n  id: multi2 median 50 (quartiles 12.5 "
                                  "to 87.5, whiskers 0 to 100, 6 values); oracle median 100 (quartiles 100 to 100, whiskers "
                                  "100 to 100, 6 values; beyond the whiskers: 0);"));
    assert_non_null(strstr(boxes, "scienceworld: mean score (0 to 1) per task type:\n  id: multi2 median 0.5 (quartiles "
                                  "0.375 to 0.625, whiskers 0.25 to 0.75, 3 values);"));
    /* per task type, mean +- standard error over the seeds */
    assert_non_null(strstr(buckets, "Panel textcraft id: success rate (%) by task type:\n  depth 1: multi2 83 +- 17;\n"
                                    "  depth 2: multi2 17 +- 17;\n  (no type): oracle 83 +- 17;"));
    assert_non_null(strstr(buckets_sw, "Panel scienceworld id: mean score (0 to 1) by task type:\n  boil: multi2 0.5 +- 0.144;\n<"));
    free(buckets_sw);
    /* tokens: the methods with a model */
    assert_non_null(strstr(tokens, "Series: multi2."));
    assert_non_null(strstr(tokens, "textcraft/id: multi2 20 +- 6;"));
    assert_non_null(strstr(tokens, "Panel System 2 (executor): prompt + generated or scored:\n  "
                                   "textcraft/id: multi2 100;"));
    /* learning curves: epoch 0 over the three seeds, epoch 1 all won */
    assert_non_null(strstr(online, "Panel textcraft id: greedy success rate (%) (x: online epoch):\n  multi2 (2 points): (0, 50 +- 28.87) (1, 100)\n"));
    assert_null(strstr(online, "scienceworld id"));   /* no run logged its curves */
    free(boxes);
    free(buckets);
    free(tokens);
    free(online);
    char *md = read_text(out, "results.md");
    assert_non_null(strstr(md, "## Figures"));
    /* the task-type numbers as a table, after the figures' list */
    const char *by_type = strstr(md, "## By task type");
    assert_non_null(by_type);
    assert_true(by_type > strstr(md, "`plots/online.svg|png`"));
    assert_non_null(strstr(by_type, "| textcraft | id | depth 1 | multi2 | 3 | 83.3 ± 16.7 | 100.0 50.0 100.0 |"));
    assert_non_null(strstr(by_type, "| textcraft | id | depth 2 | multi2 | 3 | 16.7 ± 16.7 | 50.0 0.0 0.0 |"));
    assert_non_null(strstr(by_type, "| textcraft | id | (no type) | oracle | 3 | 83.3 ± 16.7 | 100.0 100.0 50.0 |"));
    assert_non_null(strstr(by_type, "| scienceworld | id | boil | multi2 | 3 | 0.500 ± 0.144 | 0.500 0.250 0.750 |"));
    assert_non_null(strstr(md, "`plots/online.svg|png`"));
    assert_non_null(strstr(md, "`plots/buckets_<env>.svg|png`"));
    free(md);
    char p[1400];
    snprintf(p, sizeof p, "%s/plots/boxes.png", out);
    assert_true(m2_path_exists(p));
    /* written again from folders without curves: the old online chart goes, the md says why */
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/textcraft/multi2/metrics.jsonl", f[s]);
        assert_int_equal(remove(p), 0);
    }
    assert_int_equal(m2_report_over_seeds(fl, 3, out, NULL, &err), 0);
    snprintf(p, sizeof p, "%s/plots/online.svg", out);
    assert_false(m2_path_exists(p));
    md = read_text(out, "results.md");
    assert_non_null(strstr(md, "No online learning curves"));
    free(md);
    m2_remove_tree(dir);
}

/* dir/results.json in the documented format s, and dir/results.md holding the n lines want[]. */
static void tables_hold(const char *dir, const m2s_obj *s, const char *const *want, int n) {
    char p[1400], why[1024];
    snprintf(p, sizeof p, "%s/results.json", dir);
    if (m2s_check_json_file(p, s, why, sizeof why)) fail_msg("%s", why);
    char *md = read_text(dir, "results.md");
    for (int i = 0; i < n; i++) if (!strstr(md, want[i])) fail_msg("%s/results.md: no line %s", dir, want[i]);
    free(md);
}

/* A run evaluated in both action modes (eval/<split>.jsonl its own, sys2.action_mode score here;
 * eval/<split>.generate.jsonl the other): a row per mode naming it, in results.json (the documented
 * format) and a column of results.md; over seeds the modes stay apart. */
static void action_modes_stay_apart(void **state) {
    (void)state;
    char dir[256], f[2][1000], out[300], d[1000];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_modes"), 0);
    for (int s = 0; s < 2; s++) {
        snprintf(f[s], sizeof f[s], "%s/s%d", dir, s);
        snprintf(d, sizeof d, "%.990s/run", f[s]);
        put_file(d, "config.yaml", "method: flat\nenv: {name: textcraft}\nsys2: {action_mode: score}\n");
        m2_strbuf b = {0};
        record(&b, "textcraft", "flat", "depth 1", 1, 1, 0, 10);
        record(&b, "textcraft", "flat", "depth 1", s, s, 0, 10);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));   /* score: 1 and s of 2 won */
        m2_strbuf_free(&b);
        record(&b, "textcraft", "flat", "depth 1", 0, 0, 0, 10);
        put_file(d, "eval/id.generate.jsonl", m2_strbuf_str(&b));   /* generate: none won */
        m2_strbuf_free(&b);
        m2_result_row *rows;
        int n;
        if (m2_report_collect(d, NULL, &rows, &n, &err)) fail_msg("%s", err.msg);
        assert_int_equal(n, 2);
        int own = !strcmp(rows[1].action_mode, "score"), other = 1 - own;
        assert_string_equal(rows[own].action_mode, "score");   /* id.jsonl: the run's own mode */
        assert_true(fabs(rows[own].success - (1 + s) / 2.0) < 1e-12);
        assert_string_equal(rows[other].action_mode, "generate");
        assert_int_equal(rows[other].episodes, 1);
        if (m2_report_write(rows, n, d, NULL, &err)) fail_msg("%s", err.msg);
        free(rows);
        const char *want[2] = {"| flat | textcraft | id | score | 2 | ", "| flat | textcraft | id | generate | 1 | 0.0 |"};
        tables_hold(d, &m2s_results, want, 2);
        snprintf(f[s], sizeof f[s], "%s", d);
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[2] = {f[0], f[1]};
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), 0);
    /* score: 50 %, 100 % -> 75 +- 25; generate: 0 */
    const char *want[2] = {"| flat | textcraft | id | score | 2 | 2 | 75.0 ± 25.0 |",
                           "| flat | textcraft | id | generate | 2 | 1 | 0.0 ± 0.0 |"};
    tables_hold(out, &m2s_seeds, want, 2);
    char *svg = read_text(out, "plots/results.svg");
    assert_non_null(strstr(svg, "Series: flat (score), flat (generate)."));
    free(svg);
    /* a mode of the wrong type is named */
    put_results(f[0], "{\"rows\":[{\"method\":\"flat\",\"env\":\"textcraft\",\"split\":\"id\",\"action_mode\":3,"
                      "\"episodes\":1,\"success\":0,\"score\":0,\"steps\":1,\"tokens_per_episode\":1}]}");
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "rows[0].action_mode"));
    m2_remove_tree(dir);
}

/* A probe record of an RL stage (pipe/probe.h) in run_dir/artifacts/<stage>/probe.json. */
static void put_probe(const char *run_dir, const char *stage, int changed, double kl, int on0, int on1) {
    char name[200], js[300], on[80] = "";
    snprintf(name, sizeof name, "artifacts/%s/probe.json", stage);
    if (on0 >= 0) snprintf(on, sizeof on, ",\"start_on_data\":%d,\"end_on_data\":%d", on0, on1);   /* older runs: none */
    snprintf(js, sizeof js, "{\"n_states\":32,\"changed\":%d,\"changed_frac\":%g,\"kl\":%g,\"kl_tokens\":100%s}\n", changed,
             changed / 32.0, kl, on);
    put_file(run_dir, name, js);
}

/* The RL stages over seeds and the per-row System 1 calls and invalid rate, by hand over two demo-like
 * folders:
 *  sys2_offline changed 2 and 6 of 32 probe states -> 6.25 %, 18.75 %: 12.5 +- 6.25; KL 0.01, 0.03 ->
 *    0.02 +- 0.01; advantage std per seed the mean of its logged steps (0.1, 0.3 -> 0.2) and 0.4 -> 0.3
 *    on the data's action at the start 16 and 24 of 32 -> 62.5 %, at the end 18 and 25 -> 67.2 %
 *  sys2_online changed none in either -> "2 of 2" and named as changing nothing in any folder (its
 *    records lack the on-data counts, as older runs' do: "-"); its online
 *    share is the last logged value per seed (0.2 then 0.5 -> 0.5; 0.7) -> 0.60
 *  System 1 calls 2 and 4 -> 3.00, invalid rate 0.1 and 0.3 -> 20.0 %, System 1 / System 2 tokens
 *    30 / 70 and 50 / 50 -> 40 / 60 */
static void rl_stages_and_calls_over_seeds(void **state) {
    (void)state;
    char dir[256], f[2][300], out[300], d[1000];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_rl"), 0);
    static const int off_changed[2] = {2, 6};
    static const double off_kl[2] = {0.01, 0.03}, on_kl[2] = {0.03, 0.05};
    static const char *const metrics[2] = {
        "{\"step\":1,\"data\":{\"sys2/adv_std\":0.1,\"sys2/w_std\":1}}\n{\"step\":2,\"data\":{\"sys2/adv_std\":0.3,\"sys2/w_std\":1}}\n"
        "{\"step\":3,\"data\":{\"sys2_online/adv_std\":0.05,\"sys2_online/buffer_online_frac\":0.2}}\n"
        "{\"step\":4,\"data\":{\"sys2_online/adv_std\":0.05,\"sys2_online/buffer_online_frac\":0.5}}\n",
        "{\"step\":1,\"data\":{\"sys2/adv_std\":0.4,\"sys2/w_std\":3}}\n"
        "{\"step\":3,\"data\":{\"sys2_online/adv_std\":0.15,\"sys2_online/buffer_online_frac\":0.7}}\n"};
    for (int s = 0; s < 2; s++) {
        snprintf(f[s], sizeof f[s], "%s/s%d", dir, s);
        char js[600];
        snprintf(js, sizeof js,
                 "{\"rows\":[{\"method\":\"multi2\",\"env\":\"textcraft\",\"split\":\"id\",\"episodes\":1,\"success\":1,"
                 "\"score\":1,\"steps\":5,\"tokens_per_episode\":100,\"sys1_tokens_per_episode\":%d,"
                 "\"sys2_tokens_per_episode\":%d,\"sys1_calls\":%d,\"invalid_rate\":%g}]}",
                 30 + 20 * s, 70 - 20 * s, 2 + 2 * s, 0.1 + 0.2 * s);
        put_results(f[s], js);
        m2_strbuf b = {0};
        record(&b, "textcraft", "multi2", "depth 1", 1, 1, 10, 100);
        snprintf(d, sizeof d, "%s/textcraft/multi2", f[s]);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        put_file(d, "config.yaml", "method: multi2\nenv: {name: textcraft}\n");
        put_file(d, "metrics.jsonl", metrics[s]);
        put_probe(d, "sys2_offline", off_changed[s], off_kl[s], 16 + 8 * s, 18 + 7 * s);
        put_probe(d, "sys2_online", 0, on_kl[s], -1, -1);
        snprintf(d, sizeof d, "%s/textcraft/oracle", f[s]);   /* a run without RL stages adds no row */
        record(&b, "textcraft", "oracle", "depth 1", 1, 1, 0, 0);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[2] = {f[0], f[1]};
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), 0);
    const char *want[4] = {
        "| multi2 | textcraft | id | 2 | 1 | 100.0 ± 0.0 | 1.000 ± 0.000 | 5.0 | 100 | 40 / 60 | 3.00 | 20.0 | 100.0 100.0 |",
        "| multi2 | textcraft | sys2_offline | 2 | 12.5 ± 6.2 | 0.02 ± 0.01 | 62.5 → 67.2 | 0.3 | 2 | - | 0 of 2 |",
        "| multi2 | textcraft | sys2_online | 2 | 0.0 ± 0.0 | 0.04 ± 0.01 | - | 0.1 | - | 0.60 | 2 of 2 |",
        "in any folder: multi2 textcraft sys2_online. "};
    tables_hold(out, &m2s_seeds, want, 4);
    char *md = read_text(out, "results.md");
    assert_null(strstr(md, "| oracle | textcraft | sys2_"));
    free(md);
    cJSON *j = m2t_read_json(out, "results.json");
    const cJSON *rl = cJSON_GetObjectItem(j, "rl_stages");
    assert_int_equal(cJSON_GetArraySize(rl), 2);
    const cJSON *off = cJSON_GetArrayItem(rl, 0);
    assert_string_equal(cJSON_GetObjectItem(off, "stage")->valuestring, "sys2_offline");
    assert_true(fabs(cJSON_GetObjectItem(off, "probe_changed_pct")->valuedouble - 12.5) < 1e-12);
    assert_true(fabs(cJSON_GetObjectItem(off, "probe_changed_pct_se")->valuedouble - 6.25) < 1e-12);
    assert_true(fabs(cJSON_GetObjectItem(off, "adv_std")->valuedouble - 0.3) < 1e-12);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(off, "online_share")));
    const cJSON *row0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0);
    assert_true(fabs(cJSON_GetObjectItem(row0, "invalid_rate")->valuedouble - 0.2) < 1e-12);
    cJSON_Delete(j);
    /* a damaged probe record is named */
    snprintf(d, sizeof d, "%s/textcraft/multi2", f[1]);
    put_file(d, "artifacts/sys2_online/probe.json", "{\"n_states\":32}");
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "s1/textcraft/multi2/artifacts/sys2_online/probe.json: not a probe record"));
    m2_remove_tree(dir);
}

/* A results row of any env and action mode ("" for none). */
static void mode_row(m2_strbuf *b, const char *method, const char *env, const char *mode, double success, double score) {
    m2_strbuf_appendf(b, "%s{\"method\":\"%s\",\"env\":\"%s\",\"split\":\"id\",", b->len > 9 ? "," : "", method, env);
    if (*mode) m2_strbuf_appendf(b, "\"action_mode\":\"%s\",", mode);
    m2_strbuf_appendf(b, "\"episodes\":10,\"success\":%g,\"score\":%g,\"steps\":5,\"tokens_per_episode\":10}", success, score);
}

/* The paper's orderings, by hand over three folders (differences paired by folder):
 *  textcraft generate: multi2 .5 .6 .7 - flat .2 .3 .4 = .3 each -> +30.0 ± 0.0, holds;
 *    - random (no mode: stands for both) .6 .5 .8 -> -.1 .1 -.1: -3.3 ± 6.7, not resolved;
 *    role swap .9 .8 .9 above multi2: -26.7 ± 6.7, reversed; and above flat: -56.7 ± 6.7
 *  textcraft score: multi2 .5 .5 .5 against random: -.1 0 -.3 -> -13.3 ± 8.8, reversed; no flat row
 *    in score mode, so no flat claim there
 *  scienceworld (scores, no mode): multi2 .30 .25 .20 - flat .10 .15 .20 -> +0.100 ± 0.058, holds
 *  a learned run evaluated in one mode has rows without a mode, which stand for its own mode alone
 *    (its config.yaml), never for another: offline only .4 .5 .6 (generate) against multi2 generating
 *    -> +10.0 ± 0.0, holds, and no claim in score mode (there it would read 0.0 ± 5.8 against multi2's
 *    score rows); no KL without a config.yaml stays without a mode and meets no multi2 row of no mode */
static void paper_orderings(void **state) {
    (void)state;
    char dir[256], f[3][300], out[300];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_order"), 0);
    static const double m2g[3] = {.5, .6, .7}, flat[3] = {.2, .3, .4}, rnd[3] = {.6, .5, .8}, swap[3] = {.9, .8, .9},
                        swm[3] = {.30, .25, .20}, swf[3] = {.10, .15, .20}, off[3] = {.4, .5, .6};
    for (int k = 0; k < 3; k++) {
        snprintf(f[k], sizeof f[k], "%s/s%d", dir, k);
        m2_strbuf b = {0};
        m2_strbuf_puts(&b, "{\"rows\":[");
        mode_row(&b, "multi2", "textcraft", "generate", m2g[k], m2g[k]);
        mode_row(&b, "multi2", "textcraft", "score", .5, .5);
        mode_row(&b, "flat", "textcraft", "generate", flat[k], flat[k]);
        mode_row(&b, "random", "textcraft", "", rnd[k], rnd[k]);
        mode_row(&b, "role_swap", "textcraft", "generate", swap[k], swap[k]);
        mode_row(&b, "offline_only", "textcraft", "", off[k], off[k]);
        mode_row(&b, "no_kl", "textcraft", "", off[k], off[k]);
        mode_row(&b, "multi2", "scienceworld", "", 0, swm[k]);
        mode_row(&b, "flat", "scienceworld", "", 0, swf[k]);
        m2_strbuf_puts(&b, "]}");
        put_results(f[k], m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        char run[400];
        snprintf(run, sizeof run, "%.300s/textcraft/offline_only", f[k]);
        put_file(run, "config.yaml", "method: offline_only\nenv: {name: textcraft}\nsys2: {action_mode: generate}\n");
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[3] = {f[0], f[1], f[2]};
    assert_int_equal(m2_report_over_seeds(fl, 3, out, NULL, &err), 0);
    const char *want[10] = {
        "| Multi² above the flat single model | textcraft | id | generate | success % | flat | 3 | +30.0 ± 0.0 | holds |",
        "| Multi² above random play | textcraft | id | generate | success % | random | 3 | -3.3 ± 6.7 | not resolved |",
        "| role swap the worst: multi2 above it | textcraft | id | generate | success % | role_swap | 3 | -26.7 ± 6.7 | reversed |",
        "| Multi² above random play | textcraft | id | score | success % | random | 3 | -13.3 ± 8.8 | reversed |",
        "| role swap the worst: flat above it | textcraft | id | generate | success % | role_swap | 3 | -56.7 ± 6.7 | reversed |",
        "| Multi² above the flat single model | scienceworld | id | - | score | flat | 3 | +0.100 ± 0.058 | holds |",
        "## The paper's orderings",
        "| difference | verdict |",
        "| online RL above offline only | textcraft | id | generate | success % | offline_only | 3 | +10.0 ± 0.0 | holds |",
        "| offline_only | textcraft | id | - | 3 | 10 | 50.0 ± 5.8 |"};   /* shown as recorded */
    tables_hold(out, &m2s_seeds, want, 10);
    char *md = read_text(out, "results.md");
    assert_null(strstr(md, "| online RL above offline only | textcraft | id | score |"));   /* its rows are generate's */
    assert_null(strstr(md, "| the KL term helps |"));   /* no_kl's mode is unknown: no pair */
    assert_null(strstr(md, "| Multi² above the flat single model | textcraft | id | score |"));   /* no flat score row */
    assert_null(strstr(md, "random above it"));   /* a reference is not a learned method */
    free(md);
    cJSON *j = m2t_read_json(out, "results.json");
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "orderings"), 0);
    assert_string_equal(cJSON_GetObjectItem(o, "verdict")->valuestring, "holds");
    assert_true(fabs(cJSON_GetObjectItem(o, "diff")->valuedouble - 0.3) < 1e-12);
    cJSON_Delete(j);
    /* one folder: no verdict */
    assert_int_equal(m2_report_over_seeds(fl, 1, out, NULL, &err), 0);
    md = read_text(out, "results.md");
    assert_non_null(strstr(md, "| flat | 1 | +30.0 | one seed: no verdict |"));
    free(md);
    m2_remove_tree(dir);
}

/* A demo folder still running (demo.json, no results.json yet) gives the rows of the runs it has
 * finished (their own results.json), never an unfinished run's partial records; the table says so. */
static void running_demo_gives_finished_runs(void **state) {
    (void)state;
    char dir[256], f[2][300], out[300], d[1000];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_running"), 0);
    for (int k = 0; k < 2; k++) {
        snprintf(f[k], sizeof f[k], "%s/s%d", dir, k);
        put_file(f[k], "demo.json", "{}");
        m2_strbuf b = {0};
        record(&b, "textcraft", "multi2", "depth 1", 1, 1, 10, 100);
        snprintf(d, sizeof d, "%s/textcraft/multi2", f[k]);   /* finished: its report wrote results.json */
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        put_file(d, "results.json", k ? "{\"rows\":[{\"method\":\"multi2\",\"env\":\"textcraft\",\"split\":\"id\",\"episodes\":4,"
                                        "\"success\":0.25,\"score\":0.25,\"steps\":5,\"tokens_per_episode\":10}]}"
                                      : "{\"rows\":[{\"method\":\"multi2\",\"env\":\"textcraft\",\"split\":\"id\",\"episodes\":4,"
                                        "\"success\":0.75,\"score\":0.75,\"steps\":5,\"tokens_per_episode\":10}]}");
        record(&b, "textcraft", "flat", "depth 1", 1, 1, 0, 100);
        snprintf(d, sizeof d, "%s/textcraft/flat", f[k]);   /* still evaluating: records, no results.json */
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        put_file(d, "config.yaml", "method: flat\nenv: {name: textcraft}\n");   /* its RL stages are done */
        put_file(d, "metrics.jsonl", "{\"step\":1,\"data\":{\"sys2/adv_std\":0.1,\"sys2/w_std\":1}}\n");
        put_probe(d, "sys2_offline", 3, 0.02, 16, 18);
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[2] = {f[0], f[1]};
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), 0);
    const char *want[3] = {"| multi2 | textcraft | id | 2 | 4 | 50.0 ± 25.0 |", "/s1` (a demo still running: its finished runs only)",
                           "| textcraft | id | depth 1 | multi2 | 2 | 100.0 ± 0.0 |"};
    tables_hold(out, &m2s_seeds, want, 3);
    char *md = read_text(out, "results.md");
    /* neither the results table, nor the figures and their task-type table, nor the RL-stage table
     * take the unfinished run */
    assert_null(strstr(md, "flat"));
    free(md);
    /* a folder that is neither finished nor a demo is still an error naming its results.json */
    snprintf(d, sizeof d, "%s/s2", dir);
    put_file(d, "notes.txt", "not a demo");
    const char *fl3[3] = {f[0], f[1], d};
    assert_int_equal(m2_report_over_seeds(fl3, 3, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "s2/results.json"));
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

/* "Made by": each run's stages and the binaries stages.json records for them, grouped by binary in
 * order of first appearance; a run whose stages differ names them; unrecorded stages say so. */
static void made_by_per_run(void **state) {
    (void)state;
    char dir[256], f[2][300], out[300], d[1000];
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "seeds_made_by"), 0);
    static const char A[] = "multi2 0.1.0 (commit aaaaaaaaaaaa)", B[] = "multi2 0.1.0 (commit bbbbbbbbbbbb)";
    for (int s = 0; s < 2; s++) {
        snprintf(f[s], sizeof f[s], "%s/s%d", dir, s);
        char js[1200], st[1200];
        snprintf(js, sizeof js, "{\"rows\":[%s,%s]}", row("multi2", "id", 0.5, 0.5), row("flat", "id", 0.2, 0.2));
        put_results(f[s], js);
        for (int m = 0; m < 2; m++) {
            const char *method = m ? "flat" : "multi2";
            m2_strbuf b = {0};
            record(&b, "textcraft", method, NULL, 1, 1, 0, 10);
            snprintf(d, sizeof d, "%s/textcraft/%s", f[s], method);
            put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
            m2_strbuf_free(&b);
            if (m == 0)   /* multi2: seed 0 all by A; seed 1's eval resumed by B from A's checkpoint */
                snprintf(st, sizeof st, "{\"done\":[\"pretrain\",\"eval\"],\"step\":2,\"ends\":{},\"metrics_lines\":{},"
                         "\"made_by\":{\"pretrain\":\"%s\",\"eval\":\"%s%s%s\"}}", A, A, s ? " then " : "", s ? B : "");
            else if (s == 0)   /* flat on seed 0: made before runs recorded their binary */
                snprintf(st, sizeof st, "{\"done\":[\"eval\"],\"step\":1,\"ends\":{},\"metrics_lines\":{}}");
            else snprintf(st, sizeof st, "{\"done\":[\"eval\"],\"step\":1,\"ends\":{},\"metrics_lines\":{},\"made_by\":{\"eval\":\"%s\"}}", B);
            put_file(d, "stages.json", st);
        }
        /* a reference policy: no stages; its binary from reference.json (seed 1), or not recorded */
        snprintf(d, sizeof d, "%s/textcraft/random", f[s]);
        m2_strbuf b = {0};
        record(&b, "textcraft", "random", NULL, 0, 0, 0, 0);
        put_file(d, "eval/id.jsonl", m2_strbuf_str(&b));
        m2_strbuf_free(&b);
        if (s == 1) {
            snprintf(st, sizeof st, "{\"format\":\"multi2-reference\",\"version\":1,\"policy\":\"random\","
                     "\"env\":\"textcraft\",\"episodes\":1,\"step_limit\":50,\"eval_seed\":0,\"run_seed\":23,"
                     "\"made_by\":\"%s\"}", B);
            put_file(d, "reference.json", st);
        }
    }
    snprintf(out, sizeof out, "%s/over", dir);
    const char *fl[2] = {f[0], f[1]};
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), 0);
    char why[1024], jp[600];
    snprintf(jp, sizeof jp, "%s/results.json", out);
    if (m2s_check_json_file(jp, &m2s_seeds, why, sizeof why)) fail_msg("%s", why);
    char *md = read_text(out, "results.md"), want[2000];
    snprintf(want, sizeof want,
             "| binary | runs |\n|---|---|\n"
             "| not recorded (finished before runs recorded their binary) | 1 `textcraft/flat` |\n"
             "| %s | 1 `textcraft/multi2`, 2 `textcraft/multi2` (pretrain) |\n"
             "| not recorded (reference rows made before they recorded their binary in reference.json; before "
             "104acb5 the random policy drew seed 0's actions on every seed) | 1 `textcraft/random` |\n"
             "| %s | 2 `textcraft/flat`, 2 `textcraft/random` |\n"
             "| %s then %s | 2 `textcraft/multi2` (eval) |\n", A, B, A, B);
    const char *sec = strstr(md, "\n## Made by\n");
    assert_non_null(sec);
    if (!strstr(sec, want)) fail_msg("Made by:\n%s\nwanted:\n%s", sec, want);
    assert_null(strstr(sec + 1, "\n## "));   /* the last section */
    free(md);
    cJSON *j = m2t_read_json(out, "results.json");
    const cJSON *mb = cJSON_GetObjectItem(j, "made_by");
    assert_int_equal(cJSON_GetArraySize(mb), 6);   /* flat, multi2, random per folder */
    const cJSON *flat0 = cJSON_GetArrayItem(mb, 0), *m1 = cJSON_GetArrayItem(mb, 4);
    const cJSON *r0 = cJSON_GetObjectItem(cJSON_GetArrayItem(mb, 2), "stages");
    const cJSON *r1 = cJSON_GetObjectItem(cJSON_GetArrayItem(mb, 5), "stages");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r0, "reference")));
    assert_string_equal(cJSON_GetObjectItem(r1, "reference")->valuestring, B);
    assert_string_equal(cJSON_GetObjectItem(flat0, "run")->valuestring, "textcraft/flat");
    assert_string_equal(cJSON_GetObjectItem(flat0, "folder")->valuestring, f[0]);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(flat0, "stages"), "eval")));
    const cJSON *m1s = cJSON_GetObjectItem(m1, "stages");
    assert_string_equal(cJSON_GetObjectItem(m1, "folder")->valuestring, f[1]);
    assert_string_equal(cJSON_GetObjectItem(m1s, "pretrain")->valuestring, A);
    assert_string_equal(m1s->child->string, "pretrain");   /* plan order */
    cJSON_Delete(j);
    /* a reference.json that is not one: refused, naming the file and the field */
    snprintf(d, sizeof d, "%s/textcraft/random", f[1]);
    put_file(d, "reference.json", "{\"format\":\"multi2-demo\",\"made_by\":\"x\"}");
    snprintf(out, sizeof out, "%s/over2", dir);
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), -1);
    if (!strstr(err.msg, "textcraft/random/reference.json: field format")) fail_msg("%s", err.msg);
    put_file(d, "reference.json", "{\"format\":");   /* cut short */
    snprintf(out, sizeof out, "%s/over3", dir);
    assert_int_equal(m2_report_over_seeds(fl, 2, out, NULL, &err), -1);
    if (!strstr(err.msg, "textcraft/random/reference.json: not JSON")) fail_msg("%s", err.msg);
    m2_remove_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(means_and_standard_errors),
        cmocka_unit_test(bad_inputs_and_folders_are_refused),
        cmocka_unit_test(figures_from_records),
        cmocka_unit_test(action_modes_stay_apart),
        cmocka_unit_test(rl_stages_and_calls_over_seeds),
        cmocka_unit_test(paper_orderings),
        cmocka_unit_test(running_demo_gives_finished_runs),
        cmocka_unit_test(made_by_per_run),
        cmocka_unit_test(cli_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
