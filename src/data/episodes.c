#include "data/episodes.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *m2_episode_type(m2_env *env, const char *task, m2_split split, int index) {
    if (!env->cls->describe) return NULL;
    m2_err err = {0};
    char *d = env->cls->describe(env, task, split, index, &err);
    if (!d) return NULL;
    cJSON *o = cJSON_Parse(d);
    free(d);
    char *out = NULL;
    /* the field that types an episode in each environment's describe(): an explicit "difficulty",
     * else TextCraft's crafting depth, else ALFWorld's task type, else ScienceWorld's task (whose
     * describe() has a task_id; elsewhere "task" is the task text, not a type) */
    static const char *const keys[] = {"difficulty", "depth", "task_type", "task"};
    for (int k = 0; k < 4 && !out; k++) {
        const cJSON *f = o ? cJSON_GetObjectItemCaseSensitive(o, keys[k]) : NULL;
        if (!f) continue;
        if (!strcmp(keys[k], "task") && !cJSON_GetObjectItemCaseSensitive(o, "task_id")) break;
        out = malloc(strlen(keys[k]) + (cJSON_IsString(f) ? strlen(f->valuestring) : 32) + 2);
        if (!out) break;
        if (cJSON_IsString(f)) strcpy(out, f->valuestring);
        else if (cJSON_IsNumber(f) && k == 1) sprintf(out, "depth %g", f->valuedouble);
        else if (cJSON_IsNumber(f)) sprintf(out, "%g", f->valuedouble);
        else { free(out); out = NULL; }
    }
    cJSON_Delete(o);
    return out;
}

void m2_episode_order_free(m2_episode_order *o) {
    if (!o) return;
    for (int t = 0; t < o->n_types; t++) { free(o->types[t]); free(o->tasks[t]); }
    free(o->types);
    free(o->tasks);
    free(o->at);
    memset(o, 0, sizeof *o);
}

const m2_episode_ref *m2_episode_order_at(const m2_episode_order *o, long k) {
    if (!o || o->n <= 0) return NULL;
    long m = k % o->n;
    return &o->at[m < 0 ? m + o->n : m];
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* One type's episodes before the rotation: indices into `task` (ascending). */
typedef struct group { int *idx; int n, cap; } group;

static int group_push(group *g, int i) {
    if (g->n == g->cap) {
        int c = g->cap ? 2 * g->cap : 16;
        int *p = realloc(g->idx, (size_t)c * sizeof *p);
        if (!p) return -1;
        g->idx = p;
        g->cap = c;
    }
    g->idx[g->n++] = i;
    return 0;
}

/* Adds a type (label, reset task) and returns its slot, or -1 when out of memory. */
static int add_type(m2_episode_order *o, group **gs, const char *label, const char *task) {
    int t = o->n_types;
    char **ty = realloc(o->types, (size_t)(t + 1) * sizeof *ty);
    if (ty) o->types = ty;
    char **ta = realloc(o->tasks, (size_t)(t + 1) * sizeof *ta);
    if (ta) o->tasks = ta;
    group *g = realloc(*gs, (size_t)(t + 1) * sizeof *g);
    if (g) *gs = g;
    if (!ty || !ta || !g) return -1;
    o->types[t] = strdup(label);
    o->tasks[t] = dup_or_null(task);
    memset(&g[t], 0, sizeof g[t]);
    o->n_types = t + 1;   /* owned from here on: freed with the order even when a copy failed */
    if (!o->types[t] || (task && !o->tasks[t])) return -1;
    return t;
}

int m2_episode_order_build(m2_env *env, const char *task, m2_split split, m2_episode_order *o, m2_err *err) {
    memset(o, 0, sizeof *o);
    const m2_env_class *c = env->cls;
    group *gs = NULL;
    int rc = -1, nf = c->num_task_families ? c->num_task_families(env) : 1;
    if (!task && nf > 1) {
        /* every family of the split: the family IS the type, so nothing needs describing */
        for (int f = 0; f < nf; f++) {
            const char *fam = c->task_family_name(env, f);
            int cnt = fam ? c->num_episodes(env, fam, split, err) : 0;
            if (cnt < 0 && err && err->code == M2_EUNSUPPORTED) { m2_err_clear(err); continue; }   /* not in the split */
            if (cnt < 0) goto out;
            if (cnt == 0) continue;
            int t = add_type(o, &gs, fam, fam);
            if (t < 0) goto oom;
            for (int i = 0; i < cnt; i++) if (group_push(&gs[t], i)) goto oom;
        }
    } else {
        int cnt = c->num_episodes(env, task, split, err);
        if (cnt < 0) goto out;
        const char *fam0 = c->task_family_name ? c->task_family_name(env, 0) : NULL;
        const char *fallback = task ? task : fam0 ? fam0 : "all";   /* an episode describe() does not type */
        for (int i = 0; i < cnt; i++) {
            /* one named family of a multi-family env is one type; a single-family env (TextCraft)
             * types each episode by its description (crafting depth) */
            char *label = (nf > 1 && i > 0) ? NULL : m2_episode_type(env, task, split, i);
            int t = -1;
            if (nf > 1 && i > 0) t = 0;
            for (int k = 0; t < 0 && k < o->n_types; k++)
                if (!strcmp(o->types[k], label ? label : fallback)) t = k;
            if (t < 0) t = add_type(o, &gs, label ? label : fallback, task);
            free(label);
            if (t < 0 || group_push(&gs[t], i)) goto oom;
        }
    }
    for (int t = 0; t < o->n_types; t++) o->n += gs[t].n;
    if (o->n == 0) {
        m2_errorf(err, M2_EINVAL, "%s: no episodes in split %s%s%s", c->name, m2_split_name(split), task ? " of task " : "",
                  task ? task : "");
        goto out;
    }
    if (!(o->at = malloc((size_t)o->n * sizeof *o->at))) goto oom;
    int k = 0;
    for (int round = 0; k < o->n; round++)
        for (int t = 0; t < o->n_types; t++)
            if (round < gs[t].n) o->at[k++] = (m2_episode_ref){.task = o->tasks[t], .index = gs[t].idx[round], .type = o->types[t]};
    rc = 0;
    goto out;
oom:
    m2_errorf(err, M2_ENOMEM, "episode order: out of memory");
out:
    for (int t = 0; t < o->n_types; t++) free(gs ? gs[t].idx : NULL);
    free(gs);
    if (rc) m2_episode_order_free(o);
    return rc;
}
