/* core/ckpt: round trip, atomicity under SIGKILL mid-write, keep-last-K pruning, and clear errors
 * on corrupt or mismatched checkpoints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/core.h"
#include "io/safetensors.h"
#include "tmpdir.h"

static char tmpdir[64];

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "ckpt");
}

static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static void root_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", tmpdir, name); }

/* Arrays whose contents depend on the step, so a loaded checkpoint proves which step it is. */
typedef struct payload { float *w; int64_t n; int32_t cursor[3]; uint8_t bytes[5]; double d; } payload;

static void fill(payload *p, int64_t step, int64_t n) {
    p->n = n;
    p->w = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p->w[i] = (float)(step * 1000 + i % 997) * 0.5f;
    for (int i = 0; i < 3; i++) p->cursor[i] = (int32_t)(step + i);
    for (int i = 0; i < 5; i++) p->bytes[i] = (uint8_t)(step * 3 + i);
    p->d = 1.0 / (double)(step + 3);
}

static int save_step(const char *root, int64_t step, int64_t n, int keep, m2_ckpt_writer_fn hook, void *ctx,
                     m2_err *err) {
    payload p;
    fill(&p, step, n);
    m2_ckpt *c = m2_ckpt_new(step, "sys2_offline");
    int64_t shw[2] = {n / 4, 4}, shc[1] = {3}, shb[1] = {5};
    int rc = m2_ckpt_add(c, "sys2.lora.A", M2_CKPT_F32, p.w, 2, shw, err);
    if (!rc) rc = m2_ckpt_add_copy(c, "data.cursor", M2_CKPT_I32, p.cursor, 1, shc, err);
    if (!rc) rc = m2_ckpt_add_copy(c, "buffer.flags", M2_CKPT_U8, p.bytes, 1, shb, err);
    if (!rc) rc = m2_ckpt_add_copy(c, "scalar", M2_CKPT_F64, &p.d, 0, NULL, err);
    m2_rng r;
    m2_rng_seed(&r, (uint64_t)step);
    if (!rc) rc = m2_ckpt_set_rng(c, "rollout", &r, err);
    cJSON_AddNumberToObject(m2_ckpt_state(c), "episode_cursor", (double)step * 7);
    cJSON_AddStringToObject(m2_ckpt_state(c), "note", "replay buffer meta");
    if (!rc && hook) rc = m2_ckpt_add_writer(c, hook, ctx, err);
    if (!rc) rc = m2_ckpt_save(c, root, keep, NULL, 0, err);
    m2_ckpt_free(c);
    free(p.w);
    return rc;
}

static void check_step(const m2_ckpt *c, int64_t step, int64_t n) {
    m2_err err = {0};
    payload p;
    fill(&p, step, n);
    assert_int_equal(c->step, step);
    assert_string_equal(c->stage, "sys2_offline");
    float *w = malloc((size_t)n * sizeof(float));
    int64_t shw[2] = {n / 4, 4}, shc[1] = {3}, shb[1] = {5};
    assert_int_equal(m2_ckpt_read(c, "sys2.lora.A", M2_CKPT_F32, w, 2, shw, &err), 0);
    assert_memory_equal(w, p.w, (size_t)n * sizeof(float));
    int32_t cur[3];
    assert_int_equal(m2_ckpt_read(c, "data.cursor", M2_CKPT_I32, cur, 1, shc, &err), 0);
    assert_memory_equal(cur, p.cursor, sizeof cur);
    uint8_t b[5];
    assert_int_equal(m2_ckpt_read(c, "buffer.flags", M2_CKPT_U8, b, 1, shb, &err), 0);
    assert_memory_equal(b, p.bytes, 5);
    double d;
    assert_int_equal(m2_ckpt_read(c, "scalar", M2_CKPT_F64, &d, 0, NULL, &err), 0);
    assert_true(d == p.d);
    m2_rng r, want;
    m2_rng_seed(&want, (uint64_t)step);
    assert_int_equal(m2_ckpt_get_rng(c, "rollout", &r, &err), 0);
    assert_memory_equal(&r, &want, sizeof r);
    cJSON *st = cJSON_GetObjectItem(c->state, "episode_cursor");
    assert_non_null(st);
    assert_true(st->valuedouble == (double)step * 7);
    free(w);
    free(p.w);
}

static void round_trip_and_validation(void **state) {
    char root[128];
    root_path(root, sizeof root, "rt/ckpt");
    m2_err err = {0};
    assert_int_equal(save_step(root, 10, 1024, 0, NULL, NULL, &err), 0);
    m2_ckpt *c;
    if (m2_ckpt_load_latest(root, &c, &err) != 0) fail_msg("%s", err.msg);
    check_step(c, 10, 1024);
    /* Wrong dtype / shape / name: clear errors naming the array. */
    float buf[1024];
    int64_t bad[2] = {4, 256};
    assert_int_equal(m2_ckpt_read(c, "sys2.lora.A", M2_CKPT_F32, buf, 2, bad, &err), -1);
    assert_non_null(strstr(err.msg, "'sys2.lora.A' has shape [256, 4], expected [4, 256]"));
    int64_t good[2] = {256, 4};
    assert_int_equal(m2_ckpt_read(c, "sys2.lora.A", M2_CKPT_I32, buf, 2, good, &err), -1);
    assert_non_null(strstr(err.msg, "dtype F32, expected I32"));
    assert_int_equal(m2_ckpt_read(c, "sys2.lora.B", M2_CKPT_F32, buf, 2, good, &err), -1);
    assert_non_null(strstr(err.msg, "'sys2.lora.B' is missing"));
    m2_rng r;
    assert_int_equal(m2_ckpt_get_rng(c, "nope", &r, &err), -1);
    m2_ckpt_free(c);
    /* Duplicate names are refused. */
    m2_ckpt *d = m2_ckpt_new(1, "x");
    int64_t sh[1] = {1};
    float v = 1;
    assert_int_equal(m2_ckpt_add(d, "a", M2_CKPT_F32, &v, 1, sh, &err), 0);
    assert_int_equal(m2_ckpt_add(d, "a", M2_CKPT_F32, &v, 1, sh, &err), -1);
    m2_ckpt_free(d);
    /* Saving the same step again replaces it. */
    assert_int_equal(save_step(root, 10, 1024, 0, NULL, NULL, &err), 0);
    assert_int_equal(m2_ckpt_load_latest(root, &c, &err), 0);
    m2_ckpt_free(c);
    /* No checkpoint yet. */
    char empty[128];
    root_path(empty, sizeof empty, "none/ckpt");
    assert_int_equal(m2_ckpt_load_latest(empty, &c, &err), -1);
    assert_int_equal(err.code, M2_ENOTFOUND);
}

static void pruning_keeps_last_k(void **state) {
    char root[128];
    root_path(root, sizeof root, "prune/ckpt");
    m2_err err = {0};
    for (int s = 1; s <= 6; s++) assert_int_equal(save_step(root, s * 100, 64, 3, NULL, NULL, &err), 0);
    char p[256];
    for (int s = 1; s <= 6; s++) {
        snprintf(p, sizeof p, "%s/step_%d", root, s * 100);
        assert_int_equal(m2_path_exists(p), s >= 4);
    }
    char dir[512];
    assert_int_equal(m2_ckpt_latest_dir(root, dir, sizeof dir, &err), 0);
    snprintf(p, sizeof p, "%s/step_600", root);
    assert_string_equal(dir, p);
}

static void corrupt_checkpoints_fail_clearly(void **state) {
    char root[128], cmd[512], dir[256];
    root_path(root, sizeof root, "bad/ckpt");
    m2_err err = {0};
    assert_int_equal(save_step(root, 5, 4096, 0, NULL, NULL, &err), 0);
    snprintf(dir, sizeof dir, "%s/step_5", root);
    m2_ckpt *c;
    /* 1. a flipped byte in the tensor data */
    char tf[300];
    snprintf(tf, sizeof tf, "%s/tensors.safetensors", dir);
    FILE *f = fopen(tf, "r+b");
    assert_non_null(f);
    fseek(f, -100, SEEK_END);
    int ch = fgetc(f);
    fseek(f, -100, SEEK_END);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    assert_int_equal(m2_ckpt_load(dir, &c, &err), -1);
    assert_non_null(strstr(err.msg, "CRC-32C mismatch"));
    assert_non_null(strstr(err.msg, "sys2.lora.A"));
    /* 2. a truncated tensors file */
    assert_int_equal(save_step(root, 5, 4096, 0, NULL, NULL, &err), 0);
    assert_int_equal(truncate(tf, 2000), 0);
    assert_int_equal(m2_ckpt_load(dir, &c, &err), -1);
    assert_non_null(strstr(err.msg, "truncated"));
    /* 3. a header length larger than the file */
    f = fopen(tf, "r+b");
    unsigned char big[8] = {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0};
    fwrite(big, 1, 8, f);
    fclose(f);
    assert_int_equal(m2_ckpt_load(dir, &c, &err), -1);
    assert_non_null(strstr(err.msg, "header length"));
    /* 4. a broken manifest */
    assert_int_equal(save_step(root, 5, 4096, 0, NULL, NULL, &err), 0);
    snprintf(cmd, sizeof cmd, "printf '{\"format\": \"multi2-checkpoint\", \"vers' > %s/manifest.json", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(m2_ckpt_load(dir, &c, &err), -1);
    assert_non_null(strstr(err.msg, "manifest.json"));
    /* 5. a missing tensors file */
    assert_int_equal(save_step(root, 5, 4096, 0, NULL, NULL, &err), 0);
    unlink(tf);
    assert_int_equal(m2_ckpt_load(dir, &c, &err), -1);
    assert_non_null(strstr(err.msg, "tensors.safetensors"));
    /* 6. a bad 'latest' */
    snprintf(cmd, sizeof cmd, "echo garbage > %s/latest", root);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(m2_ckpt_load_latest(root, &c, &err), -1);
    assert_non_null(strstr(err.msg, "expected 'step_N'"));
}

/* Writer hook of the child: writes half an extra file, tells the parent, then waits to be killed. */
static int hang_hook(void *ctx, const char *dir, m2_err *err) {
    int fd = *(int *)ctx;
    char p[512];
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    fputs("partial", f);
    fflush(f);
    if (write(fd, "x", 1) != 1) return -1;
    for (;;) pause();
    return 0;
}

static int extra_hook(void *ctx, const char *dir, m2_err *err) {
    char p[512];
    snprintf(p, sizeof p, "%s/sub", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/sub/adapter_config.json", dir);
    FILE *f = fopen(p, "wb");
    fputs("{\"r\": 8}", f);
    fclose(f);
    return 0;
}

static void sigkill_mid_write_keeps_previous(void **state) {
    char root[128];
    root_path(root, sizeof root, "kill/ckpt");
    m2_err err = {0};
    const int64_t n = 1 << 20;   /* 4 MiB of floats */
    assert_int_equal(save_step(root, 1, n, 3, extra_hook, NULL, &err), 0);

    /* Deterministic: kill while the writer hook of step 2 is half done. */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        m2_err e2 = {0};
        save_step(root, 2, n, 3, hang_hook, &fds[1], &e2);
        _exit(0);
    }
    close(fds[1]);
    char x;
    assert_int_equal(read(fds[0], &x, 1), 1);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    close(fds[0]);
    m2_ckpt *c;
    if (m2_ckpt_load_latest(root, &c, &err) != 0) fail_msg("%s", err.msg);
    check_step(c, 1, n);
    m2_ckpt_free(c);
    char p[256];
    snprintf(p, sizeof p, "%s/step_2", root);
    assert_false(m2_path_exists(p));

    /* Arbitrary kill points: a child saves step after step and reports each finished save; the
     * parent waits for trial+1 of them, then kills it at a varying moment of the next save.
     * Whatever `latest` names must load and hold exactly its step's data. */
    int progressed = 0;
    for (int trial = 0; trial < 6; trial++) {
        int pf[2];
        assert_int_equal(pipe(pf), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pf[0]);
            m2_err e2 = {0};
            for (int64_t s = 10 + trial * 100;; s++)
                if (save_step(root, s, n, 3, NULL, NULL, &e2) == 0 && write(pf[1], "x", 1) != 1) _exit(1);
        }
        close(pf[1]);
        for (int k = 0; k <= trial; k++) assert_int_equal(read(pf[0], &x, 1), 1);
        usleep((useconds_t)(trial * 700));
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        close(pf[0]);
        if (m2_ckpt_load_latest(root, &c, &err) != 0) fail_msg("trial %d: %s", trial, err.msg);
        check_step(c, c->step, n);
        progressed += c->step >= 10 + trial * 100;
        m2_ckpt_free(c);
    }
    assert_int_equal(progressed, 6);   /* each child's finished saves are visible after its death */
    /* The next save cleans up the dead children's temporary folders. */
    assert_int_equal(save_step(root, 100000, 64, 3, NULL, NULL, &err), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", root);
    FILE *pp = popen(cmd, "r");
    int leftovers = -1;
    assert_int_equal(fscanf(pp, "%d", &leftovers), 1);
    pclose(pp);
    assert_int_equal(leftovers, 0);
}

static void extra_files_are_verified(void **state) {
    char root[128];
    root_path(root, sizeof root, "extra/ckpt");
    m2_err err = {0};
    assert_int_equal(save_step(root, 3, 64, 0, extra_hook, NULL, &err), 0);
    m2_ckpt *c;
    assert_int_equal(m2_ckpt_load_latest(root, &c, &err), 0);
    m2_ckpt_free(c);
    char p[256];
    snprintf(p, sizeof p, "%s/step_3/sub/adapter_config.json", root);
    FILE *f = fopen(p, "wb");
    fputs("{\"r\": 9}", f);
    fclose(f);
    assert_int_equal(m2_ckpt_load_latest(root, &c, &err), -1);
    assert_non_null(strstr(err.msg, "sub/adapter_config.json"));
}

/* The tensors file is plain safetensors: the project's io/ reader opens it. */
static void tensors_file_is_standard_safetensors(void **state) {
    char root[128], p[300];
    root_path(root, sizeof root, "st/ckpt");
    m2_err err = {0};
    assert_int_equal(save_step(root, 4, 64, 0, NULL, NULL, &err), 0);
    snprintf(p, sizeof p, "%s/step_4/tensors.safetensors", root);
    m2_safetensors *st = m2_st_open(p, &err);
    if (!st) fail_msg("%s", err.msg);
    assert_int_equal(st->n_tensors, 4);
    const m2_st_tensor *t = m2_st_find(st, "sys2.lora.A");
    assert_non_null(t);
    assert_string_equal(t->dtype, "F32");
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->shape[0], 16);
    float w[64];
    assert_int_equal(m2_st_tensor_to_f32(st, t, w, &err), 0);
    payload pl;
    fill(&pl, 4, 64);
    assert_memory_equal(w, pl.w, sizeof w);
    free(pl.w);
    assert_string_equal(m2_st_find(st, "data.cursor")->dtype, "I32");
    assert_string_equal(m2_st_find(st, "buffer.flags")->dtype, "U8");
    assert_int_equal(m2_st_find(st, "scalar")->n_dims, 0);
    m2_st_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_and_validation),
        cmocka_unit_test(pruning_keeps_last_k),
        cmocka_unit_test(corrupt_checkpoints_fail_clearly),
        cmocka_unit_test(sigkill_mid_write_keeps_previous),
        cmocka_unit_test(extra_files_are_verified),
        cmocka_unit_test(tensors_file_is_standard_safetensors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
