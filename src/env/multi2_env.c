/* The stable C API of libmulti2.so (multi2_env.h) over env.h: a handle owns one environment, the
 * last report, a move counter and its last error. Nothing here is global. */
#include "env/multi2_env.h"
#include "env/env.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct m2e_env {
    m2_env *env;        /* the episode the caller plays */
    m2_env *scratch;    /* for m2e_describe, created on first use: some classes reset themselves to describe */
    char *data_path;    /* what scratch is created from */
    m2e_result last;
    int have_episode;
    m2_err err;
};

static void fill(m2e_env *e, const m2_step_result *r, m2e_result *out) {
    e->last = (m2e_result){
        .observation = r->observation ? r->observation : "",
        .reward = r->reward,
        .score = r->score,
        .done = r->done,
        .won = r->won,
        .valid = r->valid,
        .moves = e->last.moves,
    };
    if (out) *out = e->last;
}

/* A split name, or -1 with the handle's error set. */
static int split_of(m2e_env *e, const char *split) {
    int s = m2_split_parse(split ? split : "train");
    if (s < 0) m2_errorf(&e->err, M2_EINVAL, "unknown split '%s' (use train, id/valid_seen/dev or ood/valid_unseen/test)", split);
    return s;
}

int m2e_api_version(void) { return M2E_API_VERSION; }
int m2e_env_count(void) { return m2_env_count(); }
const char *m2e_env_name(int i) {
    const m2_env_class *c = m2_env_at(i);
    return c ? c->name : NULL;
}

m2e_env *m2e_create(const char *name, const char *data_path, char *err, size_t err_cap) {
    if (err && err_cap) err[0] = 0;
    m2e_env *e = calloc(1, sizeof *e);
    if (!e || (data_path && !(e->data_path = strdup(data_path)))) {
        if (err && err_cap) snprintf(err, err_cap, "out of memory");
        free(e);
        return NULL;
    }
    if (m2_env_create(name, data_path, &e->env, &e->err)) {
        if (err && err_cap) snprintf(err, err_cap, "%s", e->err.msg);
        free(e->data_path);
        free(e);
        return NULL;
    }
    e->last.observation = "";
    return e;
}

void m2e_free(m2e_env *e) {
    if (!e) return;
    m2_env_destroy(e->env);
    m2_env_destroy(e->scratch);
    free(e->data_path);
    free(e);
}

const char *m2e_error(const m2e_env *e) { return e ? e->err.msg : "no environment (NULL handle)"; }
const char *m2e_name(const m2e_env *e) { return e->env->cls->name; }
double m2e_score_max(const m2e_env *e) { return e->env->cls->score_max; }
double m2e_unit_score(const m2e_env *e, double score) { return m2_env_unit_score(e->env->cls->name, score); }

int m2e_num_tasks(const m2e_env *e) {
    const m2_env_class *c = e->env->cls;
    return c->num_task_families ? c->num_task_families(e->env) : 0;
}

const char *m2e_task_name(const m2e_env *e, int i) {
    const m2_env_class *c = e->env->cls;
    return (c->task_family_name && i >= 0 && i < m2e_num_tasks(e)) ? c->task_family_name(e->env, i) : NULL;
}

int m2e_num_episodes(m2e_env *e, const char *task, const char *split) {
    m2_err_clear(&e->err);
    int s = split_of(e, split);
    if (s < 0) return -1;
    return e->env->cls->num_episodes(e->env, task, (m2_split)s, &e->err);
}

int m2e_reset(m2e_env *e, const char *task, const char *split, int index, uint64_t seed, m2e_result *out) {
    m2_err_clear(&e->err);
    int s = split_of(e, split);
    if (s < 0) return -1;
    int n = e->env->cls->num_episodes(e->env, task, (m2_split)s, &e->err);
    if (n < 0) return -1;
    /* an index past the split would wrap round to another episode in some classes (TextCraft) */
    if (index < 0 || index >= n)
        return m2_errorf(&e->err, M2_EINVAL, "%s: episode index %d out of range [0, %d) for %s%s%s", m2e_name(e), index, n,
                         task ? task : "", task ? "/" : "", m2_split_name((m2_split)s));
    m2_step_result r;
    if (e->env->cls->reset(e->env, task, (m2_split)s, index, seed, &r, &e->err)) {
        e->have_episode = 0;
        return -1;
    }
    e->have_episode = 1;
    e->last.moves = 0;
    fill(e, &r, out);
    return 0;
}

int m2e_step(m2e_env *e, const char *action, m2e_result *out) {
    m2_err_clear(&e->err);
    if (!e->have_episode) return m2_errorf(&e->err, M2_EINVAL, "%s: step before reset", m2e_name(e));
    m2_step_result r;
    if (e->env->cls->step(e->env, action ? action : "", &r))
        return m2_errorf(&e->err, M2_EINVAL, "%s: the step failed", m2e_name(e));
    e->last.moves++;
    fill(e, &r, out);
    return 0;
}

int m2e_step_many(m2e_env *const *envs, const char *const *actions, int n, m2e_result *out) {
    int failed = 0;
    for (int i = 0; i < n; i++) failed += m2e_step(envs[i], actions[i], out ? &out[i] : NULL) != 0;
    return failed;
}

const char *m2e_observation(const m2e_env *e) { return e->last.observation; }

const char *m2e_task_text(const m2e_env *e) {
    if (!e->have_episode) return "";
    const char *t = e->env->cls->task_text(e->env);
    return t ? t : "";
}

int m2e_last(const m2e_env *e, m2e_result *out) {
    *out = e->last;
    return e->have_episode ? 0 : -1;
}

int m2e_admissible(m2e_env *e, const char *const **list, int *n) {
    m2_err_clear(&e->err);
    *list = NULL;
    *n = 0;
    if (!e->have_episode) return m2_errorf(&e->err, M2_EINVAL, "%s: no episode (reset first)", m2e_name(e));
    if (!e->env->cls->admissible) return m2_errorf(&e->err, M2_EUNSUPPORTED, "%s: no admissible actions", m2e_name(e));
    if (e->env->cls->admissible(e->env, list, n)) return m2_errorf(&e->err, M2_ENOMEM, "%s: admissible actions: out of memory", m2e_name(e));
    return 0;
}

int m2e_oracle(m2e_env *e, char *buf, size_t cap) {
    m2_err_clear(&e->err);
    if (cap) buf[0] = 0;
    if (!e->have_episode) return m2_errorf(&e->err, M2_EINVAL, "%s: no episode (reset first)", m2e_name(e));
    if (!e->env->cls->oracle_next) return m2_errorf(&e->err, M2_EUNSUPPORTED, "%s: no expert", m2e_name(e));
    if (e->env->cls->oracle_next(e->env, buf, cap, &e->err)) {
        if (!e->err.msg[0]) m2_errorf(&e->err, M2_EINVAL, "%s: the expert has no action here", m2e_name(e));
        return -1;
    }
    return 0;
}

char *m2e_describe(m2e_env *e, const char *task, const char *split, int index) {
    m2_err_clear(&e->err);
    int s = split_of(e, split);
    if (s < 0) return NULL;
    if (!e->env->cls->describe) { m2_errorf(&e->err, M2_EUNSUPPORTED, "%s: no episode descriptions", m2e_name(e)); return NULL; }
    if (!e->scratch && m2_env_create(m2e_name(e), e->data_path, &e->scratch, &e->err)) return NULL;
    int n = e->scratch->cls->num_episodes(e->scratch, task, (m2_split)s, &e->err);
    if (n < 0) return NULL;
    if (index < 0 || index >= n) {
        m2_errorf(&e->err, M2_EINVAL, "%s: episode index %d out of range [0, %d)", m2e_name(e), index, n);
        return NULL;
    }
    char *js = e->scratch->cls->describe(e->scratch, task, (m2_split)s, index, &e->err);
    if (!js && !e->err.msg[0]) m2_errorf(&e->err, M2_ENOMEM, "%s: describe: out of memory", m2e_name(e));
    return js;
}

char *m2e_inspect(m2e_env *e, const char *what) {
    m2_err_clear(&e->err);
    if (!e->have_episode) { m2_errorf(&e->err, M2_EINVAL, "%s: no episode (reset first)", m2e_name(e)); return NULL; }
    if (!e->env->cls->inspect) {
        m2_errorf(&e->err, M2_EUNSUPPORTED, "%s: nothing to inspect (no '%s')", m2e_name(e), what ? what : "");
        return NULL;
    }
    char *js = e->env->cls->inspect(e->env, what ? what : "", &e->err);
    if (!js && !e->err.msg[0]) m2_errorf(&e->err, M2_ENOMEM, "%s: inspect: out of memory", m2e_name(e));
    return js;
}

void m2e_string_free(char *s) { free(s); }
