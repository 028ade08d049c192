/* Temporary folders for the tests: m2t_tmpdir makes a fresh /tmp/m2_<tag>_XXXXXX; tests remove
 * it with m2_remove_tree (core/fsutil.h), no shell involved. */
#ifndef M2_TEST_TMPDIR_H
#define M2_TEST_TMPDIR_H
#include <stdio.h>
#include <stdlib.h>
#include "core/fsutil.h"

static inline int m2t_tmpdir(char *buf, size_t cap, const char *tag) {
    int n = snprintf(buf, cap, "/tmp/m2_%s_XXXXXX", tag);
    return n > 0 && (size_t)n < cap && mkdtemp(buf) ? 0 : -1;
}

#endif
