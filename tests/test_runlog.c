/* core/run, tblog, jsonl, progress: the run folder layout, metrics.jsonl lines, TensorBoard event
 * framing (CRC-32C checked byte by byte), resume truncation, progress/summary text, memory plan. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "tmpdir.h"

static char tmpdir[64];

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "run");
}

static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static void crc32c_known_vectors(void **state) {
    assert_int_equal(m2_crc32c("123456789", 9), 0xE3069283u);
    unsigned char zeros[32] = {0};
    assert_int_equal(m2_crc32c(zeros, 32), 0x8A9136AAu);
    /* Extending in pieces equals one pass. */
    const char *s = "The quick brown fox jumps over the lazy dog";
    uint32_t a = m2_crc32c(s, strlen(s));
    uint32_t b = m2_crc32c_extend(m2_crc32c(s, 10), s + 10, strlen(s) - 10);
    assert_int_equal(a, b);
    assert_int_equal(a, 0x22620404u);
}

/* Finds the single event file in dir. */
static int find_event_file(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (m2_tb_is_event_file(e->d_name)) { snprintf(out, cap, "%s/%s", dir, e->d_name); n++; }
    closedir(d);
    return n;
}

typedef struct seen { int n; int64_t steps[64]; char tags[64][64]; float vals[64]; } seen;
static int on_scalar(void *ctx, double wall, int64_t step, const char *tag, float v) {
    seen *s = ctx;
    if (s->n < 64) {
        s->steps[s->n] = step;
        snprintf(s->tags[s->n], 64, "%s", tag);
        s->vals[s->n] = v;
        s->n++;
    }
    assert_true(wall > 1.6e9);
    return 0;
}

static uint32_t rd32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static void run_folder_metrics_and_events(void **state) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/runs/exp", tmpdir);
    m2_run r;
    m2_err err = {0};
    assert_int_equal(m2_run_open(&r, dir, 1, -1, &err), 0);
    for (int64_t step = 1; step <= 4; step++) {
        m2_scalar s[] = {{"sys2/actor_loss", 1.0 / step}, {"sys2/critic_loss", 0.25 * step}, {"eval/nan", NAN}};
        assert_int_equal(m2_run_log(&r, step, s, 3, &err), 0);
    }
    m2_jsonl ev;
    assert_int_equal(m2_run_eval_open(&r, "final_id", 1, &ev, &err), 0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "env", "textcraft");
    cJSON_AddNumberToObject(o, "success", 1);
    assert_int_equal(m2_jsonl_write(&ev, o, &err), 0);
    cJSON_Delete(o);
    m2_jsonl_close(&ev);
    m2_run_close(&r);
    /* Layout. */
    const char *must[] = {"metrics.jsonl", "ckpt", "eval", "plots", "eval/final_id.jsonl"};
    for (int i = 0; i < 5; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, must[i]);
        assert_true(m2_path_exists(p));
    }
    /* metrics.jsonl: exact lines. */
    char p[256], *txt;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    assert_int_equal(m2_read_file(p, &txt, NULL, &err), 0);
    assert_non_null(strstr(txt, "{\"step\":1,\"data\":{\"sys2/actor_loss\":1,\"sys2/critic_loss\":0.25,\"eval/nan\":null}}\n"));
    assert_non_null(strstr(txt, "{\"step\":3,\"data\":{\"sys2/actor_loss\":0.33333333333333331,"));
    free(txt);
    m2_series_set set;
    assert_int_equal(m2_metrics_load(p, &set, &err), 0);
    const m2_series *cl = m2_series_find(&set, "sys2/critic_loss");
    assert_non_null(cl);
    assert_int_equal(cl->n, 4);
    assert_true(cl->value[3] == 1.0 && cl->step[3] == 4);
    m2_series_free(&set);
    /* A fresh open of an existing run is refused. */
    assert_int_equal(m2_run_open(&r, dir, 1, -1, &err), -1);
    assert_non_null(strstr(err.msg, "--resume"));

    /* TensorBoard: walk the framing by hand and check both CRCs of every record. */
    char ef[512];
    assert_int_equal(find_event_file(dir, ef, sizeof ef), 1);
    assert_non_null(strstr(ef, "events.out.tfevents."));
    size_t len;
    assert_int_equal(m2_read_file(ef, &txt, &len, &err), 0);
    const unsigned char *b = (const unsigned char *)txt;
    size_t off = 0;
    int records = 0;
    while (off < len) {
        uint64_t n = 0;
        for (int i = 0; i < 8; i++) n |= (uint64_t)b[off + i] << (8 * i);
        assert_int_equal(rd32(b + off + 8), m2_crc32c_mask(m2_crc32c(b + off, 8)));
        assert_int_equal(rd32(b + off + 12 + n), m2_crc32c_mask(m2_crc32c(b + off + 12, n)));
        if (records == 0) assert_non_null(memmem(b + off + 12, n, "brain.Event:2", 13));
        off += 12 + n + 4;
        records++;
    }
    assert_int_equal(off, len);
    assert_int_equal(records, 5);
    free(txt);
    seen s = {0};
    int n_events;
    char fv[64];
    assert_int_equal(m2_tb_read(ef, on_scalar, &s, &n_events, fv, sizeof fv, &err), 0);
    assert_string_equal(fv, "brain.Event:2");
    assert_int_equal(n_events, 5);
    assert_int_equal(s.n, 12);
    assert_string_equal(s.tags[0], "sys2/actor_loss");
    assert_int_equal(s.steps[11], 4);
    assert_true(s.vals[4] == 0.5f);       /* critic loss at step 2 */
    assert_true(isnan(s.vals[2]));
    /* A flipped byte is caught. */
    FILE *f = fopen(ef, "r+b");
    fseek(f, 40, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(ch ^ 1, f);
    fclose(f);
    assert_int_equal(m2_tb_read(ef, NULL, NULL, NULL, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "CRC mismatch"));
}

static void resume_drops_later_steps(void **state) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/runs/resume", tmpdir);
    m2_run r;
    m2_err err = {0};
    assert_int_equal(m2_run_open(&r, dir, 1, -1, &err), 0);
    for (int64_t step = 1; step <= 10; step++) {
        m2_scalar s[] = {{"loss", (double)step}};
        assert_int_equal(m2_run_log(&r, step, s, 1, &err), 0);
    }
    m2_run_close(&r);
    /* A torn last line, as a killed writer leaves it. */
    char p[256];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    FILE *f = fopen(p, "ab");
    fputs("{\"step\":11,\"da", f);
    fclose(f);
    assert_int_equal(m2_run_open(&r, dir, 1, 6, &err), 0);
    for (int64_t step = 7; step <= 8; step++) {
        m2_scalar s[] = {{"loss", (double)step * 10}};
        assert_int_equal(m2_run_log(&r, step, s, 1, &err), 0);
    }
    m2_run_close(&r);
    m2_series_set set;
    assert_int_equal(m2_metrics_load(p, &set, &err), 0);
    const m2_series *l = m2_series_find(&set, "loss");
    assert_int_equal(l->n, 8);
    for (int i = 0; i < 6; i++) assert_true(l->value[i] == i + 1);
    assert_true(l->value[6] == 70 && l->value[7] == 80);
    m2_series_free(&set);
    char ef[512];
    assert_int_equal(find_event_file(dir, ef, sizeof ef), 1);   /* old file replaced */
    seen s = {0};
    assert_int_equal(m2_tb_read(ef, on_scalar, &s, NULL, NULL, 0, &err), 0);
    assert_int_equal(s.n, 8);
    assert_int_equal(s.steps[5], 6);
    assert_true(s.vals[7] == 80.0f);
}

static void jsonl_errors(void **state) {
    char p[256];
    snprintf(p, sizeof p, "%s/bad.jsonl", tmpdir);
    FILE *f = fopen(p, "w");
    fputs("{\"a\":1}\n\n[1,2]\n{\"b\":2}\n", f);
    fclose(f);
    m2_err err = {0};
    assert_int_equal(m2_jsonl_read(p, NULL, NULL, 1, &err), -1);
    assert_non_null(strstr(err.msg, "bad.jsonl:3: not a JSON object"));
    m2_jsonl j;
    assert_int_equal(m2_jsonl_open(&j, p, 0, &err), 0);
    assert_int_equal(m2_jsonl_write_raw(&j, "{\"x\":\n1}", &err), -1);
    m2_jsonl_close(&j);
}

static void progress_summary_memplan(void **state) {
    char buf[512];
    m2_progress_format(buf, sizeof buf, "rollouts", 25, 100, 5.0, 10, "succ 0.40");
    assert_string_equal(buf, "rollouts 25/100 [==>       ]  25% 5.0 it/s eta 15s succ 0.40");
    m2_progress_format(buf, sizeof buf, "tokens", 7, 0, 2.0, 10, NULL);
    assert_string_equal(buf, "tokens 7 3.5 it/s 2s");
    m2_scalar s[] = {{"sys2/actor_loss", 0.123456}, {"sys2/critic_loss", 1.5e-5}, {"rollout/success", 1}};
    m2_format_summary(buf, sizeof buf, "sys2_offline", 12, 400, s, 3, 812.4, 3400);
    assert_string_equal(buf, "step 12/400 | sys2_offline | actor_loss 0.1235 | critic_loss 1.500e-05 | success 1 | 812 ms | 3.4k tok/s");
    m2_format_summary(buf, sizeof buf, NULL, 3, 0, NULL, 0, 0, 0);
    assert_string_equal(buf, "step 3");
    m2_format_bytes(1536, buf, sizeof buf);
    assert_string_equal(buf, "1.50 KiB");
    m2_memplan m = {0};
    m2_memplan_add(&m, "base weights (f32)", 3.0 * 1024 * 1024);
    m2_memplan_add(&m, "LoRA + AdamW moments", 1024 * 1024);
    assert_true(m2_memplan_total(&m) == 4.0 * 1024 * 1024);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    m2_memplan_print(&m, f);
    /* Not a terminal: plain lines, one per 10%. */
    m2_progress p;
    m2_progress_begin(&p, f, "epoch", 20, "auto");
    for (int i = 1; i <= 20; i++) m2_progress_update(&p, i, NULL);
    m2_progress_end(&p, "done");
    fclose(f);
    assert_non_null(strstr(out, "base weights (f32)       3.00 MiB  75.0%"));
    assert_non_null(strstr(out, "total"));
    assert_non_null(strstr(out, "4.00 MiB"));
    int lines = 0;
    for (char *q = strstr(out, "epoch "); q; q = strstr(q + 1, "epoch ")) lines++;
    assert_int_equal(lines, 11);
    assert_null(strchr(out, '\r'));
    free(out);
}

int main(void) {
    unsetenv("M2_PROGRESS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32c_known_vectors),
        cmocka_unit_test(run_folder_metrics_and_events),
        cmocka_unit_test(resume_drops_later_steps),
        cmocka_unit_test(jsonl_errors),
        cmocka_unit_test(progress_summary_memplan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
