#include "core/run.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "core/strbuf.h"

int m2_run_exists(const char *dir) {
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (m2_path_exists(p)) return 1;
    snprintf(p, sizeof p, "%s/ckpt/latest", dir);
    return m2_path_exists(p);
}

/* ---------------------------------------------------------------- metrics truncation */

typedef struct trunc_ctx { int64_t max_step; m2_strbuf out; int oom; } trunc_ctx;

static int keep_line(void *ctx, const cJSON *obj, long line_no) {
    trunc_ctx *t = ctx;
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "step");
    if (!cJSON_IsNumber(st) || st->valuedouble > (double)t->max_step) return 0;
    char *s = cJSON_PrintUnformatted(obj);
    if (!s) { t->oom = 1; return 1; }
    int rc = m2_strbuf_puts(&t->out, s) || m2_strbuf_putc(&t->out, '\n');
    cJSON_free(s);
    if (rc) { t->oom = 1; return 1; }
    return 0;
}

int m2_metrics_truncate(const char *path, int64_t max_step, m2_err *err) {
    if (!m2_path_exists(path)) return 0;
    trunc_ctx t = {.max_step = max_step};
    int rc = m2_jsonl_read(path, keep_line, &t, 1, err);
    if (rc == 0 && t.oom) rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    if (rc == 0) rc = m2_write_file_atomic(path, m2_strbuf_str(&t.out), t.out.len, err);
    m2_strbuf_free(&t.out);
    return rc;
}

/* ---------------------------------------------------------------- TensorBoard filtering on resume */

typedef struct tb_item { double wall; int64_t step; char *tag; float value; } tb_item;
typedef struct tb_collect { int64_t max_step; tb_item *items; int n, cap; int oom; } tb_collect;

static int collect_scalar(void *ctx, double wall, int64_t step, const char *tag, float value) {
    tb_collect *c = ctx;
    if (step > c->max_step) return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        tb_item *q = realloc(c->items, (size_t)cap * sizeof *q);
        if (!q) { c->oom = 1; return 1; }
        c->items = q;
        c->cap = cap;
    }
    c->items[c->n].tag = strdup(tag);
    if (!c->items[c->n].tag) { c->oom = 1; return 1; }
    c->items[c->n].wall = wall;
    c->items[c->n].step = step;
    c->items[c->n].value = value;
    c->n++;
    return 0;
}

/* Reads every event file in dir, keeps the scalars with step <= max_step, writes them to a new
 * event file through r->tb (already open) and deletes the old files. Unreadable old files (e.g. a
 * torn last record) keep what could be read before the damage. */
static int tb_rewrite(m2_run *r, int64_t max_step, m2_err *err) {
    DIR *d = opendir(r->dir);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot list: %s", r->dir, strerror(errno));
    tb_collect c = {max_step, NULL, 0, 0, 0};
    char **old = NULL;
    int n_old = 0;
    struct dirent *e;
    const char *newname = strrchr(r->tb.path, '/') ? strrchr(r->tb.path, '/') + 1 : r->tb.path;
    while ((e = readdir(d))) {
        if (!m2_tb_is_event_file(e->d_name) || !strcmp(e->d_name, newname)) continue;
        char p[2400];
        snprintf(p, sizeof p, "%s/%s", r->dir, e->d_name);
        m2_err ignore = {0};
        m2_tb_read(p, collect_scalar, &c, NULL, NULL, 0, &ignore);
        char **q = realloc(old, (size_t)(n_old + 1) * sizeof *q);
        if (!q) { c.oom = 1; break; }
        old = q;
        old[n_old++] = strdup(p);
    }
    closedir(d);
    int rc = c.oom ? m2_errorf(err, M2_ENOMEM, "out of memory while filtering TensorBoard events") : 0;
    /* Group consecutive scalars of one step back into one event. */
    for (int i = 0; rc == 0 && i < c.n;) {
        int j = i;
        while (j < c.n && c.items[j].step == c.items[i].step && j - i < 256) j++;
        const char *tags[256];
        float vals[256];
        for (int k = i; k < j; k++) { tags[k - i] = c.items[k].tag; vals[k - i] = c.items[k].value; }
        rc = m2_tb_scalars(&r->tb, c.items[i].step, c.items[i].wall, tags, vals, j - i, err);
        i = j;
    }
    for (int i = 0; i < c.n; i++) free(c.items[i].tag);
    free(c.items);
    for (int i = 0; i < n_old; i++) {
        if (rc == 0 && old[i]) unlink(old[i]);
        free(old[i]);
    }
    free(old);
    return rc;
}

/* ---------------------------------------------------------------- open / log */

int m2_run_open(m2_run *r, const char *dir, int tensorboard, int64_t resume_step, m2_err *err) {
    memset(r, 0, sizeof *r);
    if (strlen(dir) >= sizeof r->dir - 16) return m2_errorf(err, M2_EINVAL, "%s: run folder path too long", dir);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    snprintf(r->ckpt_dir, sizeof r->ckpt_dir, "%s/ckpt", dir);
    if (resume_step < 0 && m2_run_exists(dir))
        return m2_errorf(err, M2_EINVAL,
                         "%s: already holds a run; use --resume %s to continue it, or another run.name", dir, dir);
    static const char *subs[] = {"", "/ckpt", "/eval", "/plots"};
    for (int i = 0; i < 4; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s%s", dir, subs[i]);
        if (m2_mkdir_p(p, err) != 0) return -1;
    }
    char mp[1200];
    snprintf(mp, sizeof mp, "%s/metrics.jsonl", dir);
    if (resume_step >= 0 && m2_metrics_truncate(mp, resume_step, err) != 0) return -1;
    if (m2_jsonl_open(&r->metrics, mp, resume_step >= 0, err) != 0) return -1;
    if (tensorboard) {
        if (m2_tb_open(&r->tb, dir, err) != 0) { m2_jsonl_close(&r->metrics); return -1; }
        r->tb_on = 1;
        if (resume_step >= 0 && tb_rewrite(r, resume_step, err) != 0) { m2_run_close(r); return -1; }
    }
    return 0;
}

void m2_run_close(m2_run *r) {
    m2_jsonl_close(&r->metrics);
    if (r->tb_on) m2_tb_close(&r->tb);
    r->tb_on = 0;
}

int m2_run_log(m2_run *r, int64_t step, const m2_scalar *s, int n, m2_err *err) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON *d = cJSON_AddObjectToObject(o, "data");
    for (int i = 0; i < n; i++) {
        if (isfinite(s[i].value)) cJSON_AddNumberToObject(d, s[i].key, s[i].value);
        else cJSON_AddNullToObject(d, s[i].key);
    }
    int rc = m2_jsonl_write(&r->metrics, o, err);
    cJSON_Delete(o);
    if (rc == 0 && r->tb_on && n > 0) {
        const char *tags[64];
        float vals[64];
        for (int i = 0; rc == 0 && i < n; i += 64) {
            int k = n - i < 64 ? n - i : 64;
            for (int j = 0; j < k; j++) { tags[j] = s[i + j].key; vals[j] = (float)s[i + j].value; }
            rc = m2_tb_scalars(&r->tb, step, 0, tags, vals, k, err);
        }
    }
    return rc;
}

int m2_run_eval_open(m2_run *r, const char *name, int truncate, m2_jsonl *out, m2_err *err) {
    if (!*name || strchr(name, '/')) return m2_errorf(err, M2_EINVAL, "eval file name '%s': must be a plain name", name);
    char p[1400];
    snprintf(p, sizeof p, "%s/eval/%s.jsonl", r->dir, name);
    return m2_jsonl_open(out, p, !truncate, err);
}

/* ---------------------------------------------------------------- reading series back */

const m2_series *m2_series_find(const m2_series_set *set, const char *key) {
    for (int i = 0; i < set->n; i++) if (!strcmp(set->s[i].key, key)) return &set->s[i];
    return NULL;
}

static int series_add(m2_series_set *set, const char *key, int64_t step, double v) {
    m2_series *s = (m2_series *)m2_series_find(set, key);
    if (!s) {
        if (set->n == set->cap) {
            int cap = set->cap ? 2 * set->cap : 16;
            m2_series *q = realloc(set->s, (size_t)cap * sizeof *q);
            if (!q) return -1;
            set->s = q;
            set->cap = cap;
        }
        s = &set->s[set->n];
        memset(s, 0, sizeof *s);
        s->key = strdup(key);
        if (!s->key) return -1;
        set->n++;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        int64_t *a = realloc(s->step, (size_t)cap * sizeof *a);
        if (!a) return -1;
        s->step = a;
        double *b = realloc(s->value, (size_t)cap * sizeof *b);
        if (!b) return -1;
        s->value = b;
        s->cap = cap;
    }
    s->step[s->n] = step;
    s->value[s->n] = v;
    s->n++;
    return 0;
}

static int load_line(void *ctx, const cJSON *obj, long line_no) {
    m2_series_set *set = ctx;
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "step");
    cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "data");
    if (!cJSON_IsNumber(st) || !cJSON_IsObject(d)) return 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, d) {
        double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (series_add(set, v->string, (int64_t)st->valuedouble, x) != 0) return -1;
    }
    return 0;
}

int m2_metrics_load(const char *path, m2_series_set *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    int rc = m2_jsonl_read(path, load_line, out, 1, err);
    if (rc == -1 && err && !err->code) rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    if (rc != 0) { m2_series_free(out); return -1; }
    return 0;
}

void m2_series_free(m2_series_set *set) {
    for (int i = 0; i < set->n; i++) { free(set->s[i].key); free(set->s[i].step); free(set->s[i].value); }
    free(set->s);
    memset(set, 0, sizeof *set);
}
