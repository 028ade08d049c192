/* JSON Lines: one cJSON object per line, each line flushed as it is written, so a reader (or a
 * crash) only ever sees whole lines plus at most one torn last line. */
#ifndef M2_JSONL_H
#define M2_JSONL_H
#include <stdio.h>
#include <cjson/cJSON.h>
#include "core/err.h"

typedef struct m2_jsonl {
    FILE *f;
    char path[1024];
    long lines;          /* lines written through this handle */
} m2_jsonl;

/* append = 0 truncates. */
int m2_jsonl_open(m2_jsonl *j, const char *path, int append, m2_err *err);
/* Writes obj compactly + '\n' and flushes. */
int m2_jsonl_write(m2_jsonl *j, const cJSON *obj, m2_err *err);
/* Writes a line that is already JSON (no newline inside) and flushes. */
int m2_jsonl_write_raw(m2_jsonl *j, const char *json, m2_err *err);
void m2_jsonl_close(m2_jsonl *j);

/* Calls fn(ctx, obj, line_no) for every line (1-based); fn returns non-zero to stop (that value is
 * returned). A line that is not a JSON object is an error naming path:line, except a torn LAST
 * line without a newline when skip_torn_tail is set (what a killed writer leaves). Blank lines are
 * skipped. obj is freed after fn returns. */
typedef int (*m2_jsonl_fn)(void *ctx, const cJSON *obj, long line_no);
int m2_jsonl_read(const char *path, m2_jsonl_fn fn, void *ctx, int skip_torn_tail, m2_err *err);

#endif
