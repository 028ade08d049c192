/* Comparing folders in the tests: the files of a tree by their paths relative to its top, and a
 * file read by such a path. Include after <cmocka.h> (a folder that cannot be read fails the test). */
#ifndef M2_TEST_FILE_TREE_H
#define M2_TEST_FILE_TREE_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"

typedef struct m2t_file_list { char **p; int n, cap; } m2t_file_list;

/* Appends every file under top/rel (rel "" for the whole tree) to fl as a path relative to top;
 * folders are walked, not listed. */
static inline void m2t_list_files(const char *top, const char *rel, m2t_file_list *fl) {
    char dir[2500];
    snprintf(dir, sizeof dir, "%s%s%s", top, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char r[1500], full[2500];
        snprintf(r, sizeof r, "%.1200s%s%.255s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", top, r);
        struct stat st;
        assert_int_equal(lstat(full, &st), 0);
        if (S_ISDIR(st.st_mode)) { m2t_list_files(top, r, fl); continue; }
        if (fl->n == fl->cap) {
            fl->cap = fl->cap ? 2 * fl->cap : 64;
            fl->p = realloc(fl->p, (size_t)fl->cap * sizeof *fl->p);
            assert_non_null(fl->p);
        }
        fl->p[fl->n++] = strdup(r);
    }
    closedir(d);
}

static inline int m2t_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* In byte order, so two trees' lists line up. */
static inline void m2t_file_list_sort(m2t_file_list *fl) {
    if (fl->n) qsort(fl->p, (size_t)fl->n, sizeof *fl->p, m2t_cmp_str);
}

static inline void m2t_file_list_free(m2t_file_list *fl) {
    for (int i = 0; i < fl->n; i++) free(fl->p[i]);
    free(fl->p);
    *fl = (m2t_file_list){0};
}

/* top/rel's bytes (NUL-terminated; *len their count when len is not NULL). */
static inline char *m2t_read_at(const char *top, const char *rel, size_t *len) {
    char p[2500], *s = NULL;
    snprintf(p, sizeof p, "%s/%s", top, rel);
    m2_err err = {0};
    if (m2_read_file(p, &s, len, &err)) fail_msg("%s", err.msg);
    return s;
}

#endif
