#include "data/records_read.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/prompts.h"
#include "core/fsutil.h"

static char *dupstr(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* First present field among the NULL-terminated names. */
static const cJSON *field(const cJSON *o, const char *const *names, const char **which) {
    for (int i = 0; names[i]; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, names[i]);
        if (f) { if (which) *which = names[i]; return f; }
    }
    if (which) *which = names[0];
    return NULL;
}

static int get_string(const cJSON *o, const char *const *names, char **out, m2_err *err) {
    const char *w;
    const cJSON *f = field(o, names, &w);
    if (!f) return m2_errorf(err, M2_EFORMAT, "missing field \"%s\"", names[0]);
    if (!cJSON_IsString(f)) return m2_errorf(err, M2_EFORMAT, "field \"%s\" is not a string", w);
    if (!(*out = dupstr(f->valuestring))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    return 0;
}

/* Optional string: absent -> NULL and 0. */
static int opt_string(const cJSON *o, const char *const *names, char **out, m2_err *err) {
    *out = NULL;
    if (!field(o, names, NULL)) return 0;
    return get_string(o, names, out, err);
}

static int get_strings(const cJSON *o, const char *const *names, char ***out, int *n, m2_err *err) {
    const char *w;
    const cJSON *f = field(o, names, &w);
    *out = NULL;
    *n = 0;
    if (!f) return m2_errorf(err, M2_EFORMAT, "missing field \"%s\"", names[0]);
    if (!cJSON_IsArray(f)) return m2_errorf(err, M2_EFORMAT, "field \"%s\" is not an array", w);
    int k = cJSON_GetArraySize(f);
    char **v = calloc((size_t)(k ? k : 1), sizeof *v);
    if (!v) return m2_errorf(err, M2_ENOMEM, "out of memory for field \"%s\"", w);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        if (!cJSON_IsString(e) || !(v[i] = dupstr(e->valuestring))) {
            for (int j = 0; j < i; j++) free(v[j]);
            free(v);
            return m2_errorf(err, M2_EFORMAT, "field \"%s\"[%d] is not a string", w, i);
        }
        i++;
    }
    *out = v;
    *n = k;
    return 0;
}

/* Numbers or booleans, exactly `want` of them; absent -> zeros. */
static int get_floats(const cJSON *o, const char *const *names, int want, float **out, m2_err *err) {
    const char *w;
    const cJSON *f = field(o, names, &w);
    float *v = calloc((size_t)(want ? want : 1), sizeof *v);
    if (!v) return m2_errorf(err, M2_ENOMEM, "out of memory for field \"%s\"", w);
    *out = v;
    if (!f) return 0;
    if (!cJSON_IsArray(f)) return m2_errorf(err, M2_EFORMAT, "field \"%s\" is not an array", w);
    if (cJSON_GetArraySize(f) != want)
        return m2_errorf(err, M2_EFORMAT, "field \"%s\" has %d entries, expected %d", w, cJSON_GetArraySize(f), want);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        if (cJSON_IsNumber(e)) v[i] = (float)e->valuedouble;
        else if (cJSON_IsBool(e)) v[i] = cJSON_IsTrue(e) ? 1.f : 0.f;
        else return m2_errorf(err, M2_EFORMAT, "field \"%s\"[%d] is not a number or boolean", w, i);
        i++;
    }
    return 0;
}

static void free_strings(char **v, int n) {
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void m2_high_record_free(m2_high_record *r) {
    if (!r) return;
    free(r->task);
    free(r->context);
    free_strings(r->states, r->n_states);
    free_strings(r->subgoals, r->n_subgoals);
    free(r->reward); free(r->score); free(r->done);
    memset(r, 0, sizeof *r);
}

void m2_low_record_free(m2_low_record *r) {
    if (!r) return;
    free(r->subgoal);
    free(r->context);
    free_strings(r->obs, r->n_obs);
    free_strings(r->actions, r->n_steps);
    free(r->reward); free(r->score); free(r->done);
    memset(r, 0, sizeof *r);
}

void m2_high_records_free(m2_high_record *r, int n) {
    if (!r) return;
    for (int i = 0; i < n; i++) m2_high_record_free(&r[i]);
    free(r);
}

void m2_low_records_free(m2_low_record *r, int n) {
    if (!r) return;
    for (int i = 0; i < n; i++) m2_low_record_free(&r[i]);
    free(r);
}

static const char *const F_TASK[] = {"task", NULL};
static const char *const F_HCTX[] = {"task_description", NULL};
static const char *const F_LCTX[] = {"subtask", NULL};
static const char *const F_HSTATES[] = {"states", "obs", NULL};
static const char *const F_SUBGOALS[] = {"subgoals", "subtask", NULL};
static const char *const F_SUBGOAL[] = {"subgoal", "goal", NULL};
static const char *const F_OBS[] = {"obs", "observations", NULL};
static const char *const F_ACTIONS[] = {"actions", "action", NULL};
static const char *const F_REWARD[] = {"reward", "rewards", NULL};
static const char *const F_SCORE[] = {"score", "scores", NULL};
static const char *const F_DONE[] = {"done", "dones", NULL};

/* The part both record kinds share: `n` items (sub-goals or actions) with n or n+1 context strings
 * (states or observations) and per-item reward, score and done. */
static int parse_steps(const cJSON *o, const char *const *f_ctx, char ***ctx, int *n_ctx,
                       const char *const *f_items, const char *item_noun, char ***items, int *n_items,
                       float **reward, float **score, float **done, m2_err *err) {
    if (get_strings(o, f_ctx, ctx, n_ctx, err) || get_strings(o, f_items, items, n_items, err)) return -1;
    int n = *n_items;
    if (n == 0) return m2_errorf(err, M2_EFORMAT, "field \"%s\" is empty", f_items[0]);
    if (*n_ctx != n && *n_ctx != n + 1)
        return m2_errorf(err, M2_EFORMAT, "field \"%s\" has %d entries for %d %s (need %d or %d)", f_ctx[0],
                         *n_ctx, n, item_noun, n, n + 1);
    if (get_floats(o, F_REWARD, n, reward, err) || get_floats(o, F_SCORE, n, score, err) ||
        get_floats(o, F_DONE, n, done, err)) return -1;
    return 0;
}

static cJSON *parse_object(const char *json, m2_err *err) {
    cJSON *o = cJSON_Parse(json);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        m2_errorf(err, M2_EFORMAT, "not a JSON object");
        return NULL;
    }
    return o;
}

int m2_high_record_parse(const char *json, m2_high_record *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    cJSON *o = parse_object(json, err);
    if (!o) return -1;
    int rc = -1;
    if (opt_string(o, F_TASK, &out->task, err) || opt_string(o, F_HCTX, &out->context, err)) goto done;
    if (!out->task && !out->context) { m2_errorf(err, M2_EFORMAT, "missing field \"task\" (or \"task_description\")"); goto done; }
    rc = parse_steps(o, F_HSTATES, &out->states, &out->n_states, F_SUBGOALS, "sub-goals", &out->subgoals,
                     &out->n_subgoals, &out->reward, &out->score, &out->done, err);
done:
    cJSON_Delete(o);
    if (rc) m2_high_record_free(out);
    return rc;
}

int m2_low_record_parse(const char *json, m2_low_record *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    cJSON *o = parse_object(json, err);
    if (!o) return -1;
    int rc = -1;
    if (opt_string(o, F_SUBGOAL, &out->subgoal, err) || opt_string(o, F_LCTX, &out->context, err)) goto done;
    if (!out->subgoal && !out->context) { m2_errorf(err, M2_EFORMAT, "missing field \"goal\" (or \"subtask\")"); goto done; }
    rc = parse_steps(o, F_OBS, &out->obs, &out->n_obs, F_ACTIONS, "actions", &out->actions, &out->n_steps,
                     &out->reward, &out->score, &out->done, err);
done:
    cJSON_Delete(o);
    if (rc) m2_low_record_free(out);
    return rc;
}

/* Calls parse(line) for every non-blank line; grows an array of records of size `sz`. */
typedef int (*parse_fn)(const char *json, void *rec, m2_err *err);

static int read_lines(const char *path, size_t sz, parse_fn parse, void (*free_one)(void *),
                      void **out, int *n, m2_err *err) {
    *out = NULL;
    *n = 0;
    char *text;
    size_t len;
    if (m2_read_file(path, &text, &len, err)) return -1;
    unsigned char *recs = NULL;
    int cnt = 0, cap = 0, line_no = 0, rc = 0;
    char *p = text;
    while (p < text + len) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        *end = 0;
        line_no++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q) {
            if (cnt == cap) {
                cap = cap ? 2 * cap : 64;
                unsigned char *r = realloc(recs, (size_t)cap * sz);
                if (!r) { rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory at line %d", path, line_no); break; }
                recs = r;
            }
            if (parse(q, recs + (size_t)cnt * sz, err)) {
                m2_err_prefix(err, "%s:%d: ", path, line_no);
                rc = -1;
                break;
            }
            cnt++;
        }
        p = end + 1;
    }
    free(text);
    if (rc) {
        for (int i = 0; i < cnt; i++) free_one(recs + (size_t)i * sz);
        free(recs);
        return -1;
    }
    *out = recs;
    *n = cnt;
    return 0;
}

static int parse_high(const char *j, void *r, m2_err *e) { return m2_high_record_parse(j, r, e); }
static int parse_low(const char *j, void *r, m2_err *e) { return m2_low_record_parse(j, r, e); }
static void free_high(void *r) { m2_high_record_free(r); }
static void free_low(void *r) { m2_low_record_free(r); }

int m2_high_records_read(const char *path, m2_high_record **out, int *n, m2_err *err) {
    return read_lines(path, sizeof(m2_high_record), parse_high, free_high, (void **)out, n, err);
}

int m2_low_records_read(const char *path, m2_low_record **out, int *n, m2_err *err) {
    return read_lines(path, sizeof(m2_low_record), parse_low, free_low, (void **)out, n, err);
}

int m2_high_record_traj(const m2_high_record *r, const char *prompt, m2_traj *out, m2_err *err) {
    m2_traj_init(out);
    char *own = NULL;
    if (!prompt) {
        if (r->context) prompt = r->context;
        else if (!(prompt = own = m2_prompt_high_context(r->task))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    int prc = m2_traj_set_prompt(out, prompt, err);
    free(own);
    if (prc) goto fail;
    for (int t = 0; t < r->n_states; t++) {
        if (m2_traj_push_state(out, r->states[t], err)) goto fail;
        if (t < r->n_subgoals && m2_traj_push_action(out, r->subgoals[t], r->reward[t], r->done[t], err)) goto fail;
    }
    return 0;
fail:
    m2_traj_free(out);
    return -1;
}

int m2_low_record_traj(const m2_low_record *r, const char *prompt, const char *state_prefix,
                       m2_traj *out, m2_err *err) {
    m2_traj_init(out);
    size_t pl = state_prefix ? strlen(state_prefix) : 0;
    char *own = NULL;
    if (!prompt) {
        if (r->context) prompt = r->context;
        else if (!(prompt = own = m2_prompt_low_context(r->subgoal, 1))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    int prc = m2_traj_set_prompt(out, prompt, err);
    free(own);
    if (prc) goto fail;
    for (int t = 0; t < r->n_obs; t++) {
        const char *o = r->obs[t];
        if (pl && strncmp(o, state_prefix, pl) != 0) {
            size_t n = pl + strlen(o) + 1;
            char *s = malloc(n);
            if (!s) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto fail; }
            snprintf(s, n, "%s%s", state_prefix, o);
            int rc = m2_traj_push_state(out, s, err);
            free(s);
            if (rc) goto fail;
        } else if (m2_traj_push_state(out, o, err)) goto fail;
        if (t < r->n_steps && m2_traj_push_action(out, r->actions[t], r->reward[t], r->done[t], err)) goto fail;
    }
    return 0;
fail:
    m2_traj_free(out);
    return -1;
}
