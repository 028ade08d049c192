/* core/: RNG determinism and distribution, thread pool ranges, atomic writes, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "tmpdir.h"

static void rng_same_seed_same_stream(void **state) {
    m2_rng a, b;
    m2_rng_seed(&a, 42);
    m2_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++) assert_int_equal(m2_rng_u64(&a), m2_rng_u64(&b));
    m2_rng_seed_stream(&a, 42, 1);
    m2_rng_seed_stream(&b, 42, 2);
    assert_true(m2_rng_u64(&a) != m2_rng_u64(&b));
}

static void rng_moments(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 7);
    double su = 0, sn = 0, sn2 = 0;
    int n = 200000, counts[10] = {0};
    for (int i = 0; i < n; i++) {
        float u = m2_rng_uniform(&r);
        assert_true(u >= 0.f && u < 1.f);
        su += u;
        float z = m2_rng_normal(&r);
        sn += z; sn2 += (double)z * z;
        counts[m2_rng_below(&r, 10)]++;
    }
    assert_true(fabs(su / n - 0.5) < 0.01);
    assert_true(fabs(sn / n) < 0.01);
    assert_true(fabs(sn2 / n - 1.0) < 0.02);
    for (int k = 0; k < 10; k++) assert_true(abs(counts[k] - n / 10) < n / 100);
}

typedef struct { long *hits; } pool_ctx;
static void mark(void *ctx, long b, long e, int tid) {
    pool_ctx *c = ctx;
    for (long i = b; i < e; i++) c->hits[i] += 1 + tid * 0;
}

static void pool_covers_every_index_once(void **state) {
    m2_err err = {0};
    for (int t = 1; t <= 4; t++) {
        m2_pool *p = m2_pool_create(t, &err);
        assert_non_null(p);
        assert_int_equal(m2_pool_threads(p), t);
        for (long n = 0; n < 50; n += 7) {
            long hits[64] = {0};
            pool_ctx c = {hits};
            for (int rep = 0; rep < 3; rep++) m2_pool_for(p, n, mark, &c);
            for (long i = 0; i < n; i++) assert_int_equal(hits[i], 3);
        }
        m2_pool_destroy(p);
    }
}

static void atomic_write_and_read_back(void **state) {
    m2_err err = {0};
    char dir[64];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "core"), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/a/b/c.txt", dir);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    assert_int_equal(m2_mkdir_p(sub, &err), 0);
    assert_int_equal(m2_write_file_atomic(path, "hello", 5, &err), 0);
    assert_int_equal(m2_write_file_atomic(path, "world!", 6, &err), 0);
    char *buf; size_t len;
    assert_int_equal(m2_read_file(path, &buf, &len, &err), 0);
    assert_int_equal(len, 6);
    assert_string_equal(buf, "world!");
    free(buf);
    assert_int_equal(m2_read_file("/nonexistent/x", &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/x"));
    /* m2_remove_tree: the whole folder goes, a link inside is removed but not followed */
    char outside[64], target[128], link[256];
    assert_int_equal(m2t_tmpdir(outside, sizeof outside, "core_out"), 0);
    snprintf(target, sizeof target, "%s/keep.txt", outside);
    assert_int_equal(m2_write_file_atomic(target, "keep", 4, &err), 0);
    snprintf(link, sizeof link, "%s/a/link", dir);
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(m2_remove_tree(dir), 0);
    assert_false(m2_path_exists(dir));
    assert_true(m2_path_exists(target));
    assert_int_equal(m2_remove_tree(dir), 0);   /* already gone */
    assert_int_equal(m2_remove_tree(outside), 0);
    assert_false(m2_path_exists(outside));
}

static void error_prefix_names_file(void **state) {
    m2_err err = {0};
    assert_int_equal(m2_errorf(&err, M2_EFORMAT, "field '%s': %s", "n_layer", "must be positive"), -1);
    m2_err_prefix(&err, "%s: ", "config.json");
    assert_string_equal(err.msg, "config.json: field 'n_layer': must be positive");
    assert_int_equal(err.code, M2_EFORMAT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_same_seed_same_stream),
        cmocka_unit_test(rng_moments),
        cmocka_unit_test(pool_covers_every_index_once),
        cmocka_unit_test(atomic_write_and_read_back),
        cmocka_unit_test(error_prefix_names_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
