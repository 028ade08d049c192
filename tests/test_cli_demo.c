/* `multi2 demo` end to end on a very small config: three methods on TextCraft (the later two reuse
 * the first run's stages), the oracle and random rows, results.md / results.json with the keys the
 * issue asks for; a re-run continues (every stage done), and a re-run with another config in the
 * same folder is refused with the key that differs. Needs the binary (M2_BIN, set by CTest). */
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
#include "core/core.h"
#include "tmpdir.h"

static char tmpdir[256];

static const char small_overrides[] =
    "--envs textcraft --methods multi2,offline_only,flat --episodes 1 --threads 1 run.tensorboard=false "
    "run.plots=false model.tiny.vocab=320 model.tiny.dim=16 model.tiny.layers=1 model.tiny.heads=2 "
    "model.tiny.kv_heads=1 model.tiny.ffn=32 pretrain.steps=3 pretrain.batch=2 data.expert_episodes=6 "
    "sys1.sft.epochs=1 sys2.warmup.epochs=1 sys2.offline.max_steps=2 sys2.online.epochs=1 "
    "sys2.online.episodes_per_epoch=1 sys2.online.updates_per_epoch=1 sys2.online.batch=2 "
    "eval.max_new_tokens=8";

static int run_demo(const char *extra, char *out, size_t cap) {
    const char *bin = getenv("M2_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s demo --out %s/demo %s %s 2>&1", tmpdir, bin, tmpdir, small_overrides, extra);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void demo_small(void **state) {
    (void)state;
    if (!getenv("M2_BIN")) skip();
    static char out[1 << 20];
    if (run_demo("", out, sizeof out) != 0) fail_msg("demo failed:\n%s", out);
    assert_non_null(strstr(out, "reused pretrain,data,sys1_sft,sys2_warmup,sys2_offline from"));   /* offline_only */
    assert_non_null(strstr(out, "reused pretrain,data from"));                                      /* flat */
    char p[512];
    snprintf(p, sizeof p, "%s/demo/results.json", tmpdir);
    char *txt = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &txt, NULL, &err)) fail_msg("%s", err.msg);
    cJSON *rows = cJSON_Parse(txt);
    free(txt);
    assert_true(cJSON_IsArray(rows));
    assert_int_equal(cJSON_GetArraySize(rows), 10);   /* (3 methods + oracle + random) x (id, ood) */
    const cJSON *r;
    int oracle_ok = 0;
    cJSON_ArrayForEach(r, rows) {
        const char *keys[] = {"method", "env", "split", "success", "score", "tokens_per_episode"};
        for (int k = 0; k < 6; k++) assert_non_null(cJSON_GetObjectItemCaseSensitive(r, keys[k]));
        const char *m = cJSON_GetObjectItem(r, "method")->valuestring;
        if (!strcmp(m, "oracle")) oracle_ok += cJSON_GetObjectItem(r, "success")->valuedouble == 1.0;
        if (strcmp(m, "oracle") && strcmp(m, "random")) assert_true(cJSON_GetObjectItem(r, "tokens_per_episode")->valuedouble > 0);
    }
    assert_int_equal(oracle_ok, 2);
    cJSON_Delete(rows);
    snprintf(p, sizeof p, "%s/demo/results.md", tmpdir);
    assert_true(m2_path_exists(p));
    /* the same command again: every run is finished, nothing is recomputed */
    if (run_demo("", out, sizeof out) != 0) fail_msg("re-run failed:\n%s", out);
    assert_non_null(strstr(out, "every stage is done already"));
    assert_null(strstr(out, "== stage"));
    /* another config in the same folder is refused, naming the key */
    assert_int_equal(run_demo("pretrain.steps=4", out, sizeof out), 1);
    assert_non_null(strstr(out, "holds a run made with another config"));
    assert_non_null(strstr(out, "pretrain.steps"));
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
