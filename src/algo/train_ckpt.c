#include "algo/train_ckpt.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static cJSON *state_obj(m2_ckpt *c, const char *key, m2_err *err) {
    cJSON *st = m2_ckpt_state(c);
    cJSON *o = st ? cJSON_GetObjectItemCaseSensitive(st, key) : NULL;
    if (!o && st) o = cJSON_AddObjectToObject(st, key);
    if (!o) m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory for state \"%s\"", key);
    return o;
}

static const cJSON *state_get(const m2_ckpt *c, const char *key, m2_err *err) {
    const cJSON *o = c->state ? cJSON_GetObjectItemCaseSensitive(c->state, key) : NULL;
    if (!o) m2_errorf(err, M2_EFORMAT, "checkpoint %s: no state \"%s\"", c->dir, key);
    return o;
}

static int num(const cJSON *o, const char *k, double *v, const m2_ckpt *c, const char *key, m2_err *err) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNull(f)) { *v = INFINITY; return 0; }
    if (!cJSON_IsNumber(f)) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: state \"%s\".%s missing or not a number", c->dir, key, k);
    *v = f->valuedouble;
    return 0;
}

int m2_ckpt_add_params(m2_ckpt *c, const char *key, const m2_params *p, m2_err *err) {
    char name[256];
    int64_t shape[1] = {(int64_t)p->n};
    snprintf(name, sizeof name, "%s.w", key);
    if (m2_ckpt_add(c, name, M2_CKPT_F32, p->w, 1, shape, err)) return -1;
    if (p->m && p->v) {
        snprintf(name, sizeof name, "%s.m", key);
        if (m2_ckpt_add(c, name, M2_CKPT_F32, p->m, 1, shape, err)) return -1;
        snprintf(name, sizeof name, "%s.v", key);
        if (m2_ckpt_add(c, name, M2_CKPT_F32, p->v, 1, shape, err)) return -1;
    }
    cJSON *o = state_obj(c, key, err);
    if (!o) return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "adam_step");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "n");
    cJSON_AddNumberToObject(o, "adam_step", (double)p->step);
    cJSON_AddNumberToObject(o, "n", (double)p->n);
    return 0;
}

int m2_ckpt_restore_params(const m2_ckpt *c, const char *key, m2_params *p, m2_err *err) {
    char name[256];
    int64_t shape[1] = {(int64_t)p->n};
    const cJSON *o = state_get(c, key, err);
    double step = 0, n = 0;
    if (!o || num(o, "adam_step", &step, c, key, err) || num(o, "n", &n, c, key, err)) return -1;
    if ((size_t)n != p->n)
        return m2_errorf(err, M2_ESHAPE, "checkpoint %s: \"%s\" has %.0f values, the model has %zu", c->dir, key, n, p->n);
    snprintf(name, sizeof name, "%s.w", key);
    if (m2_ckpt_read(c, name, M2_CKPT_F32, p->w, 1, shape, err)) return -1;
    snprintf(name, sizeof name, "%s.m", key);
    if (m2_ckpt_find(c, name)) {
        if (m2_params_alloc_moments(p, err)) return -1;
        if (m2_ckpt_read(c, name, M2_CKPT_F32, p->m, 1, shape, err)) return -1;
        snprintf(name, sizeof name, "%s.v", key);
        if (m2_ckpt_read(c, name, M2_CKPT_F32, p->v, 1, shape, err)) return -1;
    }
    p->step = (long)step;
    return 0;
}

int m2_ckpt_add_adapter(m2_ckpt *c, const m2_adapter *a, m2_err *err) {
    char key[128];
    snprintf(key, sizeof key, "adapter.%s", a->cfg.name);
    return m2_ckpt_add_params(c, key, &a->params, err);
}

int m2_ckpt_restore_adapter(const m2_ckpt *c, m2_adapter *a, m2_err *err) {
    char key[128];
    snprintf(key, sizeof key, "adapter.%s", a->cfg.name);
    return m2_ckpt_restore_params(c, key, &a->params, err);
}

int m2_ckpt_add_head(m2_ckpt *c, const m2_head *h, m2_err *err) {
    char key[128], name[160];
    snprintf(key, sizeof key, "head.%s", h->name);
    if (m2_ckpt_add_params(c, key, &h->params, err)) return -1;
    snprintf(name, sizeof name, "%s.target", key);
    int64_t shape[1] = {(int64_t)h->params.n};
    return m2_ckpt_add(c, name, M2_CKPT_F32, h->target, 1, shape, err);
}

int m2_ckpt_restore_head(const m2_ckpt *c, m2_head *h, m2_err *err) {
    char key[128], name[160];
    snprintf(key, sizeof key, "head.%s", h->name);
    if (m2_ckpt_restore_params(c, key, &h->params, err)) return -1;
    snprintf(name, sizeof name, "%s.target", key);
    int64_t shape[1] = {(int64_t)h->params.n};
    return m2_ckpt_read(c, name, M2_CKPT_F32, h->target, 1, shape, err);
}

int m2_ckpt_add_train_state(m2_ckpt *c, const char *key, const m2_train_state *s, m2_err *err) {
    cJSON *o = state_obj(c, key, err);
    if (!o) return -1;
    cJSON_AddNumberToObject(o, "step", (double)s->step);
    cJSON_AddNumberToObject(o, "epoch", (double)s->epoch);
    cJSON_AddNumberToObject(o, "pos", s->pos);
    if (isfinite(s->best_val)) cJSON_AddNumberToObject(o, "best_val", s->best_val);
    else cJSON_AddNullToObject(o, "best_val");
    cJSON_AddNumberToObject(o, "bad_evals", s->bad_evals);
    cJSON_AddBoolToObject(o, "stopped", s->stopped);
    return 0;
}

int m2_ckpt_get_train_state(const m2_ckpt *c, const char *key, m2_train_state *s, m2_err *err) {
    const cJSON *o = state_get(c, key, err);
    double step = 0, epoch = 0, pos = 0, best = 0, bad = 0;
    if (!o || num(o, "step", &step, c, key, err) || num(o, "epoch", &epoch, c, key, err) ||
        num(o, "pos", &pos, c, key, err) || num(o, "best_val", &best, c, key, err) ||
        num(o, "bad_evals", &bad, c, key, err)) return -1;
    if (step < 0 || epoch < 0 || pos < -1 || bad < 0)
        return m2_errorf(err, M2_EFORMAT, "checkpoint %s: state \"%s\" has negative counters", c->dir, key);
    m2_train_state_init(s);
    s->step = (int64_t)step;
    s->epoch = (int64_t)epoch;
    s->pos = (int)pos;
    s->best_val = best;
    s->bad_evals = (int)bad;
    s->stopped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stopped"));
    return 0;
}

static int write_replay(void *ctx, const char *dir, m2_err *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/replay.json", dir);
    return m2_replay_save(ctx, path, err);
}

int m2_ckpt_add_replay(m2_ckpt *c, const m2_replay *r, m2_err *err) {
    return m2_ckpt_add_writer(c, write_replay, (void *)r, err);
}

int m2_ckpt_restore_replay(const m2_ckpt *c, m2_replay *r, m2_err *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/replay.json", c->dir);
    return m2_replay_load(r, path, err);
}
