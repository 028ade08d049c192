/* env registry: names, unknown names, split parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "env/env.h"

static void registry_knows_three_envs(void **state) {
    assert_int_equal(m2_env_count(), 3);
    assert_non_null(m2_env_find("textcraft"));
    assert_non_null(m2_env_find("alfworld"));
    assert_non_null(m2_env_find("scienceworld"));
    assert_null(m2_env_find("nethack"));
}

static void unknown_env_error_lists_known(void **state) {
    m2_err err = {0};
    m2_env *e = NULL;
    assert_int_equal(m2_env_create("nethack", NULL, &e, &err), -1);
    assert_null(e);
    assert_non_null(strstr(err.msg, "nethack"));
    assert_non_null(strstr(err.msg, "textcraft"));
}

static void split_names(void **state) {
    assert_int_equal(m2_split_parse("valid_seen"), M2_SPLIT_ID);
    assert_int_equal(m2_split_parse("test"), M2_SPLIT_OOD);
    assert_int_equal(m2_split_parse("train"), M2_SPLIT_TRAIN);
    assert_int_equal(m2_split_parse("bogus"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_knows_three_envs),
        cmocka_unit_test(unknown_env_error_lists_known),
        cmocka_unit_test(split_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
