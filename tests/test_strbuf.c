/* core/strbuf: appends of every kind, long formatted text, binary bytes, reset, take, and
 * out-of-memory reported (not a torn or silently cut text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/strbuf.h"

/* This program links with -Wl,--wrap=realloc (CMakeLists.txt): while fail_reallocs is set, every
 * realloc returns NULL, which is how the buffer grows. */
void *__real_realloc(void *p, size_t n);
static atomic_int fail_reallocs;
void *__wrap_realloc(void *p, size_t n) { return atomic_load(&fail_reallocs) ? NULL : __real_realloc(p, n); }

static void empty_buffer_is_the_empty_string(void **state) {
    m2_strbuf b = {0};
    assert_string_equal(m2_strbuf_str(&b), "");
    assert_int_equal(b.len, 0);
    char *s = m2_strbuf_take(&b);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    m2_strbuf_free(&b);   /* freeing an empty buffer is fine */
}

static void appends_of_every_kind(void **state) {
    m2_strbuf b = {0};
    assert_int_equal(m2_strbuf_puts(&b, "get "), 0);
    assert_int_equal(m2_strbuf_put_int(&b, 12), 0);
    assert_int_equal(m2_strbuf_putc(&b, ' '), 0);
    assert_int_equal(m2_strbuf_append(&b, "oak planksXX", 10), 0);
    assert_int_equal(m2_strbuf_appendf(&b, " (%d of %s)", 3, "4"), 0);
    assert_string_equal(b.p, "get 12 oak planks (3 of 4)");
    assert_int_equal(b.len, strlen(b.p));
    m2_strbuf_free(&b);
    assert_null(b.p);
}

static void put_int_matches_printf(void **state) {
    const long long v[] = {0, 7, -7, 10, -10, 123456789012345LL, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        m2_strbuf b = {0};
        char want[32];
        snprintf(want, sizeof want, "%lld", v[i]);
        assert_int_equal(m2_strbuf_put_int(&b, v[i]), 0);
        assert_string_equal(b.p, want);
        m2_strbuf_free(&b);
    }
}

static void long_formatted_text_is_whole(void **state) {
    /* longer than the first allocation and than any fixed scratch a formatter might use */
    size_t n = 10000;
    char *big = malloc(n + 1);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++) big[i] = (char)('a' + i % 26);
    big[n] = 0;
    m2_strbuf b = {0};
    assert_int_equal(m2_strbuf_puts(&b, "<"), 0);
    assert_int_equal(m2_strbuf_appendf(&b, "%s|%zu", big, n), 0);
    assert_int_equal(b.len, 1 + n + 1 + 5);
    assert_memory_equal(b.p + 1, big, n);
    assert_string_equal(b.p + 1 + n, "|10000");
    /* and many small appends across several growths */
    m2_strbuf_reset(&b);
    for (int i = 0; i < 5000; i++) assert_int_equal(m2_strbuf_appendf(&b, "%d,", i % 10), 0);
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.p[b.len], 0);
    assert_memory_equal(b.p, "0,1,2,", 6);
    free(big);
    m2_strbuf_free(&b);
}

static void binary_bytes_and_reset(void **state) {
    m2_strbuf b = {0};
    const unsigned char bytes[] = {0x08, 0x00, 0xff, 0x00, 0x7f};
    assert_int_equal(m2_strbuf_append(&b, bytes, sizeof bytes), 0);
    assert_int_equal(m2_strbuf_putc(&b, 0), 0);
    assert_int_equal(b.len, sizeof bytes + 1);
    assert_memory_equal(b.p, bytes, sizeof bytes);
    assert_int_equal(b.p[b.len], 0);
    char *keep = b.p;
    m2_strbuf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(m2_strbuf_str(&b), "");
    assert_ptr_equal(b.p, keep);   /* memory kept for the next use */
    assert_int_equal(m2_strbuf_reserve(&b, 100000), 0);
    assert_true(b.cap >= 100001);
    assert_int_equal(b.len, 0);
    m2_strbuf_free(&b);
}

static void out_of_memory_is_reported_and_sticky(void **state) {
    m2_strbuf b = {0};
    assert_int_equal(m2_strbuf_puts(&b, "kept"), 0);
    size_t cap = b.cap;
    char *big = calloc(cap + 1, 1);
    assert_non_null(big);
    memset(big, 'x', cap);
    atomic_store(&fail_reallocs, 1);
    assert_int_equal(m2_strbuf_puts(&b, big), -1);
    assert_true(b.oom);
    assert_string_equal(b.p, "kept");                       /* the text is untouched, not cut */
    assert_int_equal(m2_strbuf_appendf(&b, "%s", big), -1);
    assert_string_equal(b.p, "kept");
    atomic_store(&fail_reallocs, 0);
    assert_int_equal(m2_strbuf_puts(&b, "!"), -1);         /* sticky: fits, but the text is no longer whole */
    assert_string_equal(b.p, "kept");
    m2_strbuf_reset(&b);                                     /* a reset starts over */
    assert_false(b.oom);
    assert_int_equal(m2_strbuf_puts(&b, "again"), 0);
    assert_string_equal(b.p, "again");

    atomic_store(&fail_reallocs, 1);
    assert_int_equal(m2_strbuf_appendf(&b, "%s", big), -1);
    atomic_store(&fail_reallocs, 0);
    assert_null(m2_strbuf_take(&b));                         /* take reports the failure too */
    assert_null(b.p);

    atomic_store(&fail_reallocs, 1);
    m2_strbuf fresh = {0};
    assert_int_equal(m2_strbuf_putc(&fresh, 'a'), -1);      /* the very first allocation */
    assert_null(fresh.p);
    assert_string_equal(m2_strbuf_str(&fresh), "");
    atomic_store(&fail_reallocs, 0);
    m2_strbuf_free(&fresh);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_buffer_is_the_empty_string),
        cmocka_unit_test(appends_of_every_kind),
        cmocka_unit_test(put_int_matches_printf),
        cmocka_unit_test(long_formatted_text_is_whole),
        cmocka_unit_test(binary_bytes_and_reset),
        cmocka_unit_test(out_of_memory_is_reported_and_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
