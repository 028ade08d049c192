#include "core/jsonl.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

int m2_jsonl_open(m2_jsonl *j, const char *path, int append, m2_err *err) {
    memset(j, 0, sizeof *j);
    snprintf(j->path, sizeof j->path, "%s", path);
    j->f = fopen(path, append ? "ab" : "wb");
    if (!j->f) return m2_errorf(err, M2_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
    return 0;
}

int m2_jsonl_write_raw(m2_jsonl *j, const char *json, m2_err *err) {
    if (!j->f) return m2_errorf(err, M2_EIO, "%s: JSONL file is closed", j->path);
    if (strchr(json, '\n')) return m2_errorf(err, M2_EINVAL, "%s: a JSONL record may not contain a newline", j->path);
    if (fputs(json, j->f) < 0 || fputc('\n', j->f) == EOF || fflush(j->f) != 0)
        return m2_errorf(err, M2_EIO, "%s: write failed: %s", j->path, strerror(errno));
    j->lines++;
    return 0;
}

int m2_jsonl_write(m2_jsonl *j, const cJSON *obj, m2_err *err) {
    char *s = cJSON_PrintUnformatted(obj);
    if (!s) return m2_errorf(err, M2_ENOMEM, "%s: cannot serialise record", j->path);
    int rc = m2_jsonl_write_raw(j, s, err);
    cJSON_free(s);
    return rc;
}

void m2_jsonl_close(m2_jsonl *j) {
    if (j->f) fclose(j->f);
    j->f = NULL;
}

int m2_jsonl_read(const char *path, m2_jsonl_fn fn, void *ctx, int skip_torn_tail, m2_err *err) {
    char *buf;
    size_t len;
    if (m2_read_file(path, &buf, &len, err) != 0) return -1;
    long line_no = 0;
    size_t off = 0;
    int rc = 0;
    while (off < len) {
        char *nl = memchr(buf + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - buf) : len;
        line_no++;
        buf[end] = 0;
        char *line = buf + off;
        off = end + 1;
        size_t k = strspn(line, " \t\r");
        if (!line[k]) continue;
        cJSON *obj = cJSON_Parse(line);
        if (!obj || !cJSON_IsObject(obj)) {
            cJSON_Delete(obj);
            if (!nl && skip_torn_tail) break;
            rc = m2_errorf(err, M2_EFORMAT, "%s:%ld: not a JSON object", path, line_no);
            break;
        }
        rc = fn ? fn(ctx, obj, line_no) : 0;
        cJSON_Delete(obj);
        if (rc) break;
    }
    free(buf);
    return rc;
}
