/* `multi2 demo` end to end on a very small config: three methods on TextCraft (the later two reuse
 * the first run's stages), the oracle and random rows, results.md / results.json; every file the
 * demo path writes (demo.json, results.json, each run's stages.json, metrics.jsonl and eval records,
 * the reference policies' records) in its documented format (tests/run_schema.h); a re-run
 * continues (every stage done) and says so in results.md; a re-run with another config in the same
 * folder is refused with the key that differs; the demo folder and a run folder refuse each other's
 * commands; --jobs 2 (later methods side by side, each in a process of its own) writes the same
 * bits as one after the other. Needs the binary (M2_BIN, set by CTest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/core.h"
#include "tmpdir.h"
#include "file_tree.h"
#include "run_schema.h"
#include "json_file.h"

static char tmpdir[256];

static const char small_overrides[] =
    "--envs textcraft --methods multi2,offline_only,flat --episodes 1 --threads 1 run.tensorboard=false "
    "run.plots=false model.tiny.vocab=320 model.tiny.dim=16 model.tiny.layers=1 model.tiny.heads=2 "
    "model.tiny.kv_heads=1 model.tiny.ffn=32 pretrain.steps=3 pretrain.batch=2 data.expert_episodes=6 "
    "sys1.sft.epochs=1 sys2.warmup.epochs=1 sys2.offline.max_steps=2 sys2.online.epochs=1 "
    "sys2.online.episodes_per_epoch=1 sys2.online.updates_per_epoch=1 sys2.online.batch=2 "
    "eval.max_new_tokens=8";

static int run_cmd(const char *args, char *out, size_t cap) {
    const char *bin = getenv("M2_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s 2>&1", tmpdir, bin, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_demo(const char *extra, char *out, size_t cap) {
    char args[4096];
    snprintf(args, sizeof args, "demo --out %s/demo %s %s", tmpdir, small_overrides, extra);
    return run_cmd(args, out, cap);
}

/* multi2 ARGS exits with `code` and its output says `needle`. */
static void expect_exit(const char *args, int code, const char *needle) {
    static char out[1 << 16];
    int rc = run_cmd(args, out, sizeof out);
    if (rc != code || !strstr(out, needle))
        fail_msg("multi2 %s: exit %d (expected %d), output lacks \"%s\":\n%s", args, rc, code, needle, out);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Every file of the demo folder whose format docs/runs.md fixes. */
static void demo_files_match_schema(void) {
    char why[2048], p[600];
    snprintf(p, sizeof p, "%s/demo/demo.json", tmpdir);
    if (m2s_check_json_file(p, &m2s_demo, why, sizeof why)) fail_msg("%s", why);
    snprintf(p, sizeof p, "%s/demo/results.json", tmpdir);
    if (m2s_check_json_file(p, &m2s_results, why, sizeof why)) fail_msg("%s", why);
    const char *runs[] = {"multi2", "offline_only", "flat"};
    for (int i = 0; i < 3; i++) {
        char d[500];
        int n = 0;
        snprintf(d, sizeof d, "%s/demo/textcraft/%s", tmpdir, runs[i]);
        snprintf(p, sizeof p, "%s/results.json", d);
        if (m2s_check_json_file(p, &m2s_results, why, sizeof why)) fail_msg("%s", why);
        snprintf(p, sizeof p, "%s/stages.json", d);
        if (m2s_check_json_file(p, &m2s_stages, why, sizeof why)) fail_msg("%s", why);
        snprintf(p, sizeof p, "%s/metrics.jsonl", d);
        if (m2s_check_jsonl_file(p, &m2s_metrics_line, &n, why, sizeof why)) fail_msg("%s", why);
        assert_true(n > 0);
        if (m2s_check_eval_dir(d, &n, why, sizeof why)) fail_msg("%s", why);
        assert_int_equal(n, 2);   /* one episode per split */
    }
    const char *refs[] = {"oracle", "random"};
    for (int i = 0; i < 2; i++) {
        char d[500];
        int n = 0;
        snprintf(d, sizeof d, "%s/demo/textcraft/%s", tmpdir, refs[i]);
        if (m2s_check_eval_dir(d, &n, why, sizeof why)) fail_msg("%s", why);
        assert_int_equal(n, 2);
        snprintf(p, sizeof p, "%s/reference.json", d);   /* the binary and seeds that made the records */
        if (m2s_check_json_file(p, &m2s_reference, why, sizeof why)) fail_msg("%s", why);
        cJSON *rj = m2t_read_json(d, "reference.json");
        assert_string_equal(cJSON_GetObjectItem(rj, "policy")->valuestring, refs[i]);
        assert_int_equal(cJSON_GetObjectItem(rj, "run_seed")->valueint, 22);   /* the demo's run.seed */
        assert_non_null(strstr(cJSON_GetObjectItem(rj, "made_by")->valuestring, "multi2 "));
        cJSON_Delete(rj);
    }
    /* and every field of every format is documented */
    char *doc = NULL;
    m2_err err = {0};
    snprintf(p, sizeof p, "%s/docs/runs.md", M2_SOURCE_DIR);
    if (m2_read_file(p, &doc, NULL, &err)) fail_msg("%s", err.msg);
    const m2s_obj *all[] = {&m2s_eval_record, &m2s_results, &m2s_metrics_line, &m2s_stages, &m2s_demo, &m2s_reference};
    for (int i = 0; i < 6; i++)
        if (m2s_documented(doc, all[i], why, sizeof why)) fail_msg("%s", why);
    free(doc);
}

/* Every file under a/rel also under b/rel with the same bytes, but a run's config.yaml (it names
 * its folder) and results.md (it gives the wall time); returns how many were compared. */
static int same_files(const char *a, const char *b, const char *rel) {
    m2t_file_list fl = {0};
    m2t_list_files(a, rel, &fl);
    int n = 0;
    for (int i = 0; i < fl.n; i++) {
        const char *base = strrchr(fl.p[i], '/');
        base = base ? base + 1 : fl.p[i];
        if (!strcmp(base, "config.yaml") || !strcmp(base, "results.md")) continue;
        size_t nx = 0, ny = 0;
        char *x = m2t_read_at(a, fl.p[i], &nx), *y = m2t_read_at(b, fl.p[i], &ny);
        if (nx != ny || memcmp(x, y, nx)) fail_msg("%s/%s and %s/%s differ", a, fl.p[i], b, fl.p[i]);
        free(x);
        free(y);
        n++;
    }
    m2t_file_list_free(&fl);
    return n;
}

static void demo_small(void **state) {
    (void)state;
    if (!getenv("M2_BIN")) skip();
    static char out[1 << 20];
    if (run_demo("", out, sizeof out) != 0) fail_msg("demo failed:\n%s", out);
    assert_non_null(strstr(out, "reused pretrain,data,sys1_sft,sys2_warmup,sys2_offline from"));   /* offline_only */
    assert_non_null(strstr(out, "reused pretrain,data from"));                                      /* flat */
    /* outside a terminal each evaluation's last progress line is printed once: 3 runs x 1 line */
    assert_int_equal(count(out, "eval textcraft/id 1/1"), 3);
    char p[512];
    snprintf(p, sizeof p, "%s/demo/results.json", tmpdir);
    char *txt = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &txt, NULL, &err)) fail_msg("%s", err.msg);
    cJSON *doc = cJSON_Parse(txt);
    free(txt);
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "rows");
    assert_true(cJSON_IsArray(rows));
    assert_int_equal(cJSON_GetArraySize(rows), 10);   /* (3 methods + oracle + random) x (id, ood) */
    const cJSON *r;
    int oracle_ok = 0;
    cJSON_ArrayForEach(r, rows) {
        const char *m = cJSON_GetObjectItem(r, "method")->valuestring;
        if (!strcmp(m, "oracle")) oracle_ok += cJSON_GetObjectItem(r, "success")->valuedouble == 1.0;
        if (strcmp(m, "oracle") && strcmp(m, "random")) assert_true(cJSON_GetObjectItem(r, "tokens_per_episode")->valuedouble > 0);
    }
    assert_int_equal(oracle_ok, 2);
    cJSON_Delete(doc);
    demo_files_match_schema();
    snprintf(p, sizeof p, "%s/demo/results.md", tmpdir);
    char *md = NULL;
    if (m2_read_file(p, &md, NULL, &err)) fail_msg("%s", err.msg);
    assert_non_null(strstr(md, "this invocation computed"));
    free(md);
    /* the later methods side by side, each in a process of its own: the same bits, each run's
     * output in its log */
    char args[4096], a[600], b[600];
    snprintf(args, sizeof args, "demo --out %s/demo_jobs --jobs 2 %s", tmpdir, small_overrides);
    if (run_cmd(args, out, sizeof out) != 0) fail_msg("demo --jobs 2 failed:\n%s", out);
    assert_int_equal(count(out, "in a process of its own"), 3);   /* multi2, offline_only and flat */
    assert_int_equal(count(out, "eval textcraft/id 1/1"), 0);     /* each run's is in its log */
    static const char *const logs[3] = {"multi2", "offline_only", "flat"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/demo_jobs/textcraft/%s.log", tmpdir, logs[i]);
        if (m2_read_file(p, &md, NULL, &err)) fail_msg("%s", err.msg);
        assert_non_null(strstr(md, "eval textcraft/id 1/1"));
        if (i) assert_non_null(strstr(md, "reused pretrain,data"));   /* taken from multi2's run, finished */
        free(md);
    }
    snprintf(a, sizeof a, "%s/demo", tmpdir);
    snprintf(b, sizeof b, "%s/demo_jobs", tmpdir);
    assert_true(same_files(a, b, "textcraft") > 20);
    snprintf(p, sizeof p, "%s/demo/results.json", tmpdir);
    char *ra = NULL, *rb = NULL;
    if (m2_read_file(p, &ra, NULL, &err)) fail_msg("%s", err.msg);
    snprintf(p, sizeof p, "%s/demo_jobs/results.json", tmpdir);
    if (m2_read_file(p, &rb, NULL, &err)) fail_msg("%s", err.msg);
    assert_string_equal(ra, rb);
    free(ra);
    free(rb);
    /* --jobs starts a later method as soon as the first run has made the stages it takes, not when
     * that run ends: with multi2 stopped in its SFT (base and data made) and continued with flat
     * beside it, flat starts before multi2 has ended; both end as in the straight demo */
    snprintf(args, sizeof args, "demo --out %s/demo_early %s --methods multi2 multi2:run.stop_at_step=4", tmpdir,
             small_overrides);
    expect_exit(args, 1, "stopped after the checkpoint of step 4");
    snprintf(args, sizeof args, "demo --out %s/demo_early %s --methods multi2,flat --jobs 2", tmpdir, small_overrides);
    if (run_cmd(args, out, sizeof out) != 0) fail_msg("demo --jobs 2 continuing a stopped first run failed:\n%s", out);
    const char *flat_starts = strstr(out, "=== textcraft / flat ->"), *multi2_ends = strstr(out, "=== textcraft / multi2 done");
    assert_non_null(flat_starts);
    assert_non_null(multi2_ends);
    if (flat_starts > multi2_ends) fail_msg("flat waited for the whole first run:\n%s", out);
    static const char *const same[5] = {"eval/id.jsonl", "eval/ood.jsonl", "metrics.jsonl", "stages.json", "results.json"};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < 5; f++) {
            char x[700], y[700];
            snprintf(x, sizeof x, "%s/demo/textcraft/%s/%s", tmpdir, logs[2 * i], same[f]);   /* multi2, flat */
            snprintf(y, sizeof y, "%s/demo_early/textcraft/%s/%s", tmpdir, logs[2 * i], same[f]);
            char *tx = NULL, *ty = NULL;
            if (m2_read_file(x, &tx, NULL, &err) || m2_read_file(y, &ty, NULL, &err)) fail_msg("%s", err.msg);
            if (strcmp(tx, ty)) fail_msg("%s and %s differ", x, y);
            free(tx);
            free(ty);
        }
    /* METHOD:key=value is for that method's runs alone: flat evaluates in both action modes and
     * still takes the first run's base; multi2 is the same bits as without the override */
    snprintf(args, sizeof args, "demo --out %s/demo_scoped %s --methods multi2,flat flat:eval.action_modes=[generate,score]",
             tmpdir, small_overrides);
    if (run_cmd(args, out, sizeof out) != 0) fail_msg("demo with a method's override failed:\n%s", out);
    assert_non_null(strstr(out, "reused pretrain,data from"));
    struct stat st;
    snprintf(p, sizeof p, "%s/demo_scoped/textcraft/flat/eval/id.score.jsonl", tmpdir);
    assert_int_equal(stat(p, &st), 0);
    snprintf(p, sizeof p, "%s/demo_scoped/textcraft/multi2/eval/id.score.jsonl", tmpdir);
    assert_int_not_equal(stat(p, &st), 0);
    snprintf(b, sizeof b, "%s/demo_scoped", tmpdir);
    assert_true(same_files(a, b, "textcraft/multi2") > 10);
    snprintf(p, sizeof p, "%s/demo_scoped/results.json", tmpdir);
    if (m2_read_file(p, &ra, NULL, &err)) fail_msg("%s", err.msg);
    doc = cJSON_Parse(ra);
    free(ra);
    int flat_rows = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "rows"))
        flat_rows += !strcmp(cJSON_GetObjectItem(r, "method")->valuestring, "flat");
    assert_int_equal(flat_rows, 4);   /* (generate, score) x (id, ood) */
    cJSON_Delete(doc);
    /* a method's override for a method not run, or with a key that does not exist, is a usage error */
    snprintf(args, sizeof args, "demo --out %s/demo_scoped2 %s role_swap:eval.episodes=2", tmpdir, small_overrides);
    expect_exit(args, 2, "names method 'role_swap', which is not among the methods");
    snprintf(args, sizeof args, "demo --out %s/demo_scoped2 %s flat:eval.no_such_key=2", tmpdir, small_overrides);
    expect_exit(args, 2, "eval.no_such_key");
    snprintf(p, sizeof p, "%s/demo_scoped2", tmpdir);
    assert_int_not_equal(stat(p, &st), 0);   /* refused before anything was written */
    snprintf(args, sizeof args, "demo --out %s/demo_jobs --jobs 2 %s", tmpdir, small_overrides);
    /* a later method that fails in its process: the demo waits for the others, names the run and
     * its log, and fails (a plain file where offline_only's run folder was) */
    snprintf(p, sizeof p, "%s/demo_jobs/textcraft/offline_only", tmpdir);
    assert_int_equal(m2_remove_tree(p), 0);
    assert_int_equal(m2_write_file_atomic(p, "x\n", 2, &err), 0);
    if (run_cmd(args, out, sizeof out) != 1) fail_msg("demo --jobs 2 with a failing method did not fail:\n%s", out);
    assert_non_null(strstr(out, "/demo_jobs/textcraft/offline_only failed (exit 1): its output is in"));
    assert_non_null(strstr(out, "=== textcraft / flat done in"));
    snprintf(p, sizeof p, "%s/demo_jobs/textcraft/offline_only.log", tmpdir);
    if (m2_read_file(p, &md, NULL, &err)) fail_msg("%s", err.msg);
    assert_non_null(strstr(md, "multi2 demo: "));
    free(md);
    snprintf(p, sizeof p, "%s/demo/results.md", tmpdir);
    /* the same command again: every run is finished, nothing is recomputed, and results.md says so
     * instead of a wall time of a few seconds */
    if (run_demo("", out, sizeof out) != 0) fail_msg("re-run failed:\n%s", out);
    assert_non_null(strstr(out, "every stage is done already"));
    assert_null(strstr(out, "== stage"));
    if (m2_read_file(p, &md, NULL, &err)) fail_msg("%s", err.msg);
    assert_non_null(strstr(md, "All 3 runs were already finished: this invocation computed no stage"));
    assert_null(strstr(md, "Wall time"));
    free(md);
    /* another config in the same folder is refused, naming the key */
    assert_int_equal(run_demo("pretrain.steps=4", out, sizeof out), 1);
    assert_non_null(strstr(out, "holds a run made with another config"));
    assert_non_null(strstr(out, "pretrain.steps"));
    /* the README's `multi2 train configs/demo.yaml` would write into runs/demo: a demo folder is no
     * place for a run, and --resume of it names its runs */
    snprintf(args, sizeof args, "train %s/configs/demo.yaml run.out_dir=%s --dry-run", M2_SOURCE_DIR, tmpdir);
    assert_int_equal(run_cmd(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "is a multi2 demo folder"));
    assert_non_null(strstr(out, "/demo/textcraft/"));
    snprintf(args, sizeof args, "train --resume %s/demo", tmpdir);
    expect_exit(args, 1, "is a multi2 demo folder, not a run");
    /* and a demo does not go into a run folder or a foreign one */
    /* (the small config: were a refusal to break, the demo would still be quick) */
    snprintf(args, sizeof args, "demo --out %s/demo/textcraft/multi2 %s", tmpdir, small_overrides);
    expect_exit(args, 1, "holds a training run");
    snprintf(p, sizeof p, "%s/foreign", tmpdir);
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/foreign/notes.txt", tmpdir);
    assert_int_equal(m2_write_file_atomic(p, "x\n", 2, &err), 0);
    snprintf(args, sizeof args, "demo --out %s/foreign %s", tmpdir, small_overrides);
    expect_exit(args, 1, "no demo.json");
}

static int setup(void **state) {
    (void)state;
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "demo");
}

static int teardown(void **state) {
    (void)state;
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(demo_small),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
