/* dist/ in one process (no launcher, or a build without MPI): rank 0 of 1, every collective leaves
 * its buffers as they are, the sharding rule, the ordered map, the M2_DIST_FAIL hook and its bad
 * values. The 2-rank behaviour is tests/mpi_dist.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dist/dist.h"

static void alone_is_identity(void **state) {
    m2_err err = {0};
    unsetenv("M2_DIST_FAIL");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    int argc = 1;
    char *args[] = {"test", NULL}, **argv = args;
    m2_dist d;
    assert_int_equal(m2_dist_init(&d, &argc, &argv, &err), 0);
    assert_int_equal(d.rank, 0);
    assert_int_equal(d.world, 1);
    assert_int_equal(d.mpi, 0);   /* no launcher: MPI is not started */
    assert_true(m2_dist_alone(&d) && m2_dist_alone(NULL));
    float x[3] = {1.5f, -2.f, 3.25f};
    double y[2] = {0.1, 0.2};
    int64_t k[2] = {7, -9};
    assert_int_equal(m2_dist_sum_f32(&d, x, 3, &err), 0);
    assert_int_equal(m2_dist_sum_f64(&d, y, 2, &err), 0);
    assert_int_equal(m2_dist_sum_i64(&d, k, 2, &err), 0);
    assert_true(x[0] == 1.5f && x[1] == -2.f && x[2] == 3.25f && y[0] == 0.1 && y[1] == 0.2 && k[0] == 7 && k[1] == -9);
    assert_int_equal(m2_dist_bcast(&d, x, sizeof x, 0, &err), 0);
    assert_int_equal(m2_dist_barrier(&d, &err), 0);
    char *all;
    size_t lens[1];
    assert_int_equal(m2_dist_allgather(&d, "abc", 3, &all, lens, &err), 0);
    assert_true(lens[0] == 3 && !strcmp(all, "abc"));
    free(all);
    assert_int_equal(m2_dist_sum_f32(NULL, x, 3, &err), 0);   /* NULL: this process alone */
    m2_dist_abort(&d, "not aborted alone");                 /* returns */
    m2_dist_finalize(&d);
}

static void shard_rule(void **state) {
    int64_t a, n, next = 0;
    for (int r = 0; r < 3; r++) {   /* 10 items over 3 ranks: 3, 3, 4, contiguous, in order */
        m2_dist_shard(10, r, 3, &a, &n);
        assert_int_equal(a, next);
        assert_int_equal(n, r < 2 ? 3 : 4);
        next = a + n;
    }
    assert_int_equal(next, 10);
    m2_dist_shard(7, 0, 1, &a, &n);
    assert_true(a == 0 && n == 7);
}

/* the ordered map alone: make then take, item by item, no collective; an error stops it */
typedef struct order_log { char trail[64]; int fail_at; } order_log;
static int om_make(void *ud, int64_t i, m2_strbuf *out, m2_err *err) {
    order_log *l = ud;
    snprintf(l->trail + strlen(l->trail), sizeof l->trail - strlen(l->trail), "m%d", (int)i);
    if (i == l->fail_at) return m2_errorf(err, M2_EIO, "item %d failed", (int)i);
    return m2_strbuf_putc(out, (char)('a' + i));
}
static int om_take(void *ud, int64_t i, const char *item, size_t len, m2_err *err) {
    order_log *l = ud;
    assert_int_equal(len, 1);
    assert_int_equal(item[0], 'a' + i);
    assert_int_equal(item[1], 0);
    snprintf(l->trail + strlen(l->trail), sizeof l->trail - strlen(l->trail), "t%d", (int)i);
    return 0;
}

static void ordered_map_alone(void **state) {
    m2_err err = {0};
    m2_dist d;
    m2_dist_single(&d);
    order_log l = {.fail_at = -1};
    assert_int_equal(m2_dist_map_ordered(&d, 3, om_make, om_take, &l, &err), 0);
    assert_string_equal(l.trail, "m0t0m1t1m2t2");
    assert_int_equal(d.calls, 0);   /* nothing counted as a collective (M2_DIST_FAIL's numbering) */
    order_log f = {.fail_at = 1};
    assert_int_equal(m2_dist_map_ordered(NULL, 3, om_make, om_take, &f, &err), -1);
    assert_string_equal(f.trail, "m0t0m1");
    assert_non_null(strstr(err.msg, "item 1 failed"));
}

static void fail_hook(void **state) {
    m2_err err = {0};
    int argc = 1;
    char *args[] = {"test", NULL}, **argv = args;
    m2_dist d;
    setenv("M2_DIST_FAIL", "0:2", 1);
    assert_int_equal(m2_dist_init(&d, &argc, &argv, &err), 0);
    float x = 1.f;
    assert_int_equal(m2_dist_sum_f32(&d, &x, 1, &err), 0);
    assert_int_equal(m2_dist_barrier(&d, &err), -1);   /* the 2nd collective */
    assert_non_null(strstr(err.msg, "injected failure at collective 2"));
    assert_int_equal(m2_dist_barrier(&d, &err), 0);    /* once */
    const char *bad[] = {"1", "x:2", "0:0", "-1:3", "0:2z"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("M2_DIST_FAIL", bad[i], 1);
        m2_err e2 = {0};
        assert_int_equal(m2_dist_init(&d, &argc, &argv, &e2), -1);
        assert_non_null(strstr(e2.msg, "M2_DIST_FAIL"));
    }
    unsetenv("M2_DIST_FAIL");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alone_is_identity),
        cmocka_unit_test(shard_rule),
        cmocka_unit_test(ordered_map_alone),
        cmocka_unit_test(fail_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
