/* The file formats of run and demo folders as docs/runs.md ("File formats") documents them, and a
 * checker: every field a file has must be documented with its JSON type, every required field must
 * be there, and every field name must appear in docs/runs.md. Used by the tests that make real
 * files (tests/test_pipe_train.c: a tiny run; tests/test_cli_demo.c: the demo code path). */
#ifndef M2_TEST_RUN_SCHEMA_H
#define M2_TEST_RUN_SCHEMA_H
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

typedef enum m2s_type {
    M2S_STR, M2S_STR_OR_NULL, M2S_INT, M2S_NUM, M2S_NUM_OR_NULL, M2S_BOOL, M2S_OBJ, M2S_ARR,
    M2S_MAP,   /* an object whose keys are free (stage names, metric names) and values of `item` */
} m2s_type;

typedef struct m2s_obj m2s_obj;
typedef struct m2s_field {
    const char *name;
    m2s_type type;
    int required;
    m2s_type item;          /* M2S_ARR / M2S_MAP: the type of the elements */
    const m2s_obj *sub;     /* M2S_OBJ, or elements of type M2S_OBJ: their fields */
} m2s_field;
struct m2s_obj {
    const char *what;
    const m2s_field *f;
    int n;
};
#define M2S_OBJ_OF(arr, w) {.what = w, .f = arr, .n = (int)(sizeof arr / sizeof arr[0])}
#define M2S_F(nm, t, req) {.name = nm, .type = t, .required = req}
#define M2S_O(nm, req, s) {.name = nm, .type = M2S_OBJ, .required = req, .sub = s}
/* an array (M2S_ARR) or map (M2S_MAP) of elements of type it (objects: fields s) */
#define M2S_L(nm, t, req, it, s) {.name = nm, .type = t, .required = req, .item = it, .sub = s}

/* ---- eval/<split>.jsonl: one record per episode */
static const m2s_field m2s_step_f[] = {
    M2S_F("raw", M2S_STR, 1), M2S_F("action", M2S_STR, 1), M2S_F("flag", M2S_BOOL, 1), M2S_F("obs", M2S_STR, 1),
    M2S_F("reward", M2S_NUM, 1), M2S_F("valid", M2S_BOOL, 1),
};
static const m2s_obj m2s_step = M2S_OBJ_OF(m2s_step_f, "transcript step");
static const m2s_field m2s_subgoal_f[] = {
    M2S_F("subgoal", M2S_STR, 1), M2S_F("raw", M2S_STR, 0), M2S_F("state", M2S_STR, 0), M2S_F("flagged_done", M2S_BOOL, 1),
    M2S_F("success", M2S_BOOL, 0),
    M2S_L("steps", M2S_ARR, 1, M2S_OBJ, &m2s_step),
};
static const m2s_obj m2s_subgoal = M2S_OBJ_OF(m2s_subgoal_f, "transcript entry");
static const m2s_field m2s_tokens_f[] = {
    M2S_F("sys1_prompt", M2S_INT, 1), M2S_F("sys1_gen", M2S_INT, 1), M2S_F("sys2_prompt", M2S_INT, 1), M2S_F("sys2_gen", M2S_INT, 1),
};
static const m2s_obj m2s_tokens = M2S_OBJ_OF(m2s_tokens_f, "token_counts");
static const m2s_field m2s_eval_f[] = {
    M2S_F("env", M2S_STR, 1), M2S_F("split", M2S_STR, 1), M2S_F("method", M2S_STR, 1), M2S_F("index", M2S_INT, 1), M2S_F("seed", M2S_INT, 1),
    M2S_F("task", M2S_STR, 1), M2S_F("task_family", M2S_STR, 0), M2S_F("task_type", M2S_STR, 0), M2S_F("steps", M2S_INT, 1),
    M2S_F("success", M2S_BOOL, 1), M2S_F("score", M2S_NUM, 1), M2S_F("return", M2S_NUM, 1), M2S_F("hit_step_limit", M2S_BOOL, 1),
    M2S_F("invalid_actions", M2S_INT, 1), M2S_F("parse_failures", M2S_INT, 1), M2S_F("sys1_calls", M2S_INT, 1),
    M2S_F("sys2_calls", M2S_INT, 1), M2S_F("tokens", M2S_INT, 1), M2S_O("token_counts", 1, &m2s_tokens),
    M2S_L("transcript", M2S_ARR, 1, M2S_OBJ, &m2s_subgoal),
};
static const m2s_obj m2s_eval_record = M2S_OBJ_OF(m2s_eval_f, "eval record");

/* ---- results.json */
static const m2s_field m2s_row_f[] = {
    M2S_F("method", M2S_STR, 1), M2S_F("env", M2S_STR, 1), M2S_F("split", M2S_STR, 1), M2S_F("action_mode", M2S_STR, 0),
    M2S_F("episodes", M2S_INT, 1),
    M2S_F("success", M2S_NUM, 1), M2S_F("score", M2S_NUM, 1), M2S_F("steps", M2S_NUM, 1), M2S_F("tokens_per_episode", M2S_NUM, 1),
    M2S_F("sys1_tokens_per_episode", M2S_NUM, 1), M2S_F("sys2_tokens_per_episode", M2S_NUM, 1), M2S_F("sys1_calls", M2S_NUM, 1),
    M2S_F("invalid_rate", M2S_NUM, 1),
};
static const m2s_obj m2s_row = M2S_OBJ_OF(m2s_row_f, "results row");
static const m2s_field m2s_results_f[] = {M2S_L("rows", M2S_ARR, 1, M2S_OBJ, &m2s_row)};
static const m2s_obj m2s_results = M2S_OBJ_OF(m2s_results_f, "results.json");

/* ---- artifacts/<RL stage>/probe.json (pipe/probe.h) */
static const m2s_field m2s_probe_f[] = {
    M2S_F("n_states", M2S_INT, 1), M2S_F("changed", M2S_INT, 1), M2S_F("changed_frac", M2S_NUM, 1), M2S_F("kl", M2S_NUM, 1),
    M2S_F("kl_tokens", M2S_INT, 1), M2S_F("start_on_data", M2S_INT, 1), M2S_F("end_on_data", M2S_INT, 1),
};
static const m2s_obj m2s_probe = M2S_OBJ_OF(m2s_probe_f, "probe.json");

/* ---- results over seeds (multi2 report): DIR/results.json */
static const m2s_field m2s_seed_row_f[] = {
    M2S_F("method", M2S_STR, 1), M2S_F("env", M2S_STR, 1), M2S_F("split", M2S_STR, 1), M2S_F("action_mode", M2S_STR, 0),
    M2S_F("seeds", M2S_INT, 1),
    M2S_F("episodes", M2S_NUM, 1), M2S_F("success", M2S_NUM, 1), M2S_F("success_se", M2S_NUM_OR_NULL, 1),
    M2S_F("score", M2S_NUM, 1), M2S_F("score_se", M2S_NUM_OR_NULL, 1), M2S_F("steps", M2S_NUM, 1),
    M2S_F("tokens_per_episode", M2S_NUM, 1), M2S_F("sys1_tokens_per_episode", M2S_NUM_OR_NULL, 1),
    M2S_F("sys2_tokens_per_episode", M2S_NUM_OR_NULL, 1), M2S_F("sys1_calls", M2S_NUM_OR_NULL, 1),
    M2S_F("invalid_rate", M2S_NUM_OR_NULL, 1), M2S_L("success_per_seed", M2S_ARR, 1, M2S_NUM_OR_NULL, NULL),
};
static const m2s_obj m2s_seed_row = M2S_OBJ_OF(m2s_seed_row_f, "results-over-seeds row");
static const m2s_field m2s_seed_rl_f[] = {
    M2S_F("method", M2S_STR, 1), M2S_F("env", M2S_STR, 1), M2S_F("stage", M2S_STR, 1), M2S_F("seeds", M2S_INT, 1),
    M2S_F("probe_changed_pct", M2S_NUM_OR_NULL, 1), M2S_F("probe_changed_pct_se", M2S_NUM_OR_NULL, 1),
    M2S_F("probe_kl", M2S_NUM_OR_NULL, 1), M2S_F("probe_kl_se", M2S_NUM_OR_NULL, 1), M2S_F("adv_std", M2S_NUM_OR_NULL, 1),
    M2S_F("w_std", M2S_NUM_OR_NULL, 1), M2S_F("online_share", M2S_NUM_OR_NULL, 1), M2S_F("start_on_data_pct", M2S_NUM_OR_NULL, 1),
    M2S_F("end_on_data_pct", M2S_NUM_OR_NULL, 1), M2S_F("unchanged_seeds", M2S_INT, 1),
};
static const m2s_obj m2s_seed_rl = M2S_OBJ_OF(m2s_seed_rl_f, "results-over-seeds RL stage");
static const m2s_field m2s_seed_order_f[] = {
    M2S_F("claim", M2S_STR, 1), M2S_F("better", M2S_STR, 1), M2S_F("worse", M2S_STR, 1), M2S_F("env", M2S_STR, 1),
    M2S_F("split", M2S_STR, 1), M2S_F("action_mode", M2S_STR, 0), M2S_F("measure", M2S_STR, 1), M2S_F("seeds", M2S_INT, 1),
    M2S_F("diff", M2S_NUM_OR_NULL, 1), M2S_F("diff_se", M2S_NUM_OR_NULL, 1), M2S_F("verdict", M2S_STR, 1),
};
static const m2s_obj m2s_seed_order = M2S_OBJ_OF(m2s_seed_order_f, "results-over-seeds ordering");
static const m2s_field m2s_seed_made_by_f[] = {
    M2S_F("folder", M2S_STR, 1), M2S_F("run", M2S_STR, 1), M2S_L("stages", M2S_MAP, 1, M2S_STR_OR_NULL, NULL),
};
static const m2s_obj m2s_seed_made_by = M2S_OBJ_OF(m2s_seed_made_by_f, "results-over-seeds made_by");
static const m2s_field m2s_seeds_f[] = {M2S_L("rows", M2S_ARR, 1, M2S_OBJ, &m2s_seed_row), M2S_L("folders", M2S_ARR, 1, M2S_STR, NULL),
                                        M2S_L("rl_stages", M2S_ARR, 0, M2S_OBJ, &m2s_seed_rl),
                                        M2S_L("orderings", M2S_ARR, 0, M2S_OBJ, &m2s_seed_order),
                                        M2S_L("made_by", M2S_ARR, 1, M2S_OBJ, &m2s_seed_made_by)};
static const m2s_obj m2s_seeds = M2S_OBJ_OF(m2s_seeds_f, "results over seeds");

/* ---- metrics.jsonl: one line per log call */
static const m2s_field m2s_metrics_f[] = {M2S_F("step", M2S_INT, 1), M2S_L("data", M2S_MAP, 1, M2S_NUM_OR_NULL, NULL)};
static const m2s_obj m2s_metrics_line = M2S_OBJ_OF(m2s_metrics_f, "metrics.jsonl line");

/* ---- stages.json */
static const m2s_field m2s_stages_f[] = {
    M2S_L("done", M2S_ARR, 1, M2S_STR, NULL), M2S_F("step", M2S_INT, 1), M2S_L("ends", M2S_MAP, 1, M2S_INT, NULL),
    M2S_L("metrics_lines", M2S_MAP, 1, M2S_INT, NULL), M2S_L("made_by", M2S_MAP, 0, M2S_STR, NULL),
};
static const m2s_obj m2s_stages = M2S_OBJ_OF(m2s_stages_f, "stages.json");

/* ---- demo.json */
static const m2s_field m2s_demo_f[] = {
    M2S_F("format", M2S_STR, 1), M2S_F("version", M2S_INT, 1), M2S_F("config", M2S_STR, 1), M2S_L("envs", M2S_ARR, 1, M2S_STR, NULL),
    M2S_L("methods", M2S_ARR, 1, M2S_STR, NULL), M2S_L("overrides", M2S_ARR, 1, M2S_STR, NULL), M2S_L("runs", M2S_ARR, 1, M2S_STR, NULL),
    M2S_L("references", M2S_ARR, 1, M2S_STR, NULL),
};
static const m2s_obj m2s_demo = M2S_OBJ_OF(m2s_demo_f, "demo.json");

/* ---- reference.json (an oracle or random folder of a demo) */
static const m2s_field m2s_reference_f[] = {
    M2S_F("format", M2S_STR, 1), M2S_F("version", M2S_INT, 1), M2S_F("policy", M2S_STR, 1), M2S_F("env", M2S_STR, 1),
    M2S_F("episodes", M2S_INT, 1), M2S_F("step_limit", M2S_INT, 1), M2S_F("eval_seed", M2S_INT, 1),
    M2S_F("run_seed", M2S_INT, 1), M2S_F("made_by", M2S_STR, 1),
};
static const m2s_obj m2s_reference = M2S_OBJ_OF(m2s_reference_f, "reference.json");

/* 1 when v has type t; why gets the reason otherwise. */
static inline int m2s_type_ok(const cJSON *v, m2s_type t) {
    switch (t) {
    case M2S_STR: return cJSON_IsString(v);
    case M2S_STR_OR_NULL: return cJSON_IsString(v) || cJSON_IsNull(v);
    case M2S_INT: return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    case M2S_NUM: return cJSON_IsNumber(v);
    case M2S_NUM_OR_NULL: return cJSON_IsNumber(v) || cJSON_IsNull(v);
    case M2S_BOOL: return cJSON_IsBool(v);
    case M2S_OBJ: case M2S_MAP: return cJSON_IsObject(v);
    case M2S_ARR: return cJSON_IsArray(v);
    }
    return 0;
}

static inline int m2s_check_obj(const cJSON *o, const m2s_obj *s, const char *where, char *why, size_t cap);

static inline int m2s_check_value(const cJSON *v, const m2s_field *f, const char *where, char *why, size_t cap) {
    if (!m2s_type_ok(v, f->type)) { snprintf(why, cap, "%.600s: field %s has the wrong JSON type", where, f->name); return -1; }
    char sub[600];
    snprintf(sub, sizeof sub, "%.400s.%.100s", where, f->name);
    if (f->type == M2S_OBJ) return m2s_check_obj(v, f->sub, sub, why, cap);
    if (f->type == M2S_ARR || f->type == M2S_MAP) {
        const cJSON *x;
        cJSON_ArrayForEach(x, v) {
            if (!m2s_type_ok(x, f->item)) { snprintf(why, cap, "%s: an element has the wrong JSON type", sub); return -1; }
            if (f->item == M2S_OBJ && m2s_check_obj(x, f->sub, sub, why, cap)) return -1;
        }
    }
    return 0;
}

/* Every field documented with its type, every required one present. */
static inline int m2s_check_obj(const cJSON *o, const m2s_obj *s, const char *where, char *why, size_t cap) {
    if (!cJSON_IsObject(o)) { snprintf(why, cap, "%.600s: not a JSON object (%s)", where, s->what); return -1; }
    const cJSON *x;
    cJSON_ArrayForEach(x, o) {
        int k = 0;
        while (k < s->n && strcmp(s->f[k].name, x->string)) k++;
        if (k == s->n) { snprintf(why, cap, "%.600s: field %.100s is not in the %s format", where, x->string, s->what); return -1; }
        if (m2s_check_value(x, &s->f[k], where, why, cap)) return -1;
    }
    for (int k = 0; k < s->n; k++)
        if (s->f[k].required && !cJSON_GetObjectItemCaseSensitive(o, s->f[k].name)) {
            snprintf(why, cap, "%.600s: required field %s (%s) is missing", where, s->f[k].name, s->what);
            return -1;
        }
    return 0;
}

/* A JSON file (one document) against s. */
static inline int m2s_check_json_file(const char *path, const m2s_obj *s, char *why, size_t cap) {
    char *txt = NULL;
    m2_err err = {0};
    if (m2_read_file(path, &txt, NULL, &err)) { snprintf(why, cap, "%s", err.msg); return -1; }
    cJSON *o = cJSON_Parse(txt);
    free(txt);
    if (!o) { snprintf(why, cap, "%.600s: not JSON", path); return -1; }
    int rc = m2s_check_obj(o, s, path, why, cap);
    cJSON_Delete(o);
    return rc;
}

/* Every line of a JSONL file against s; *lines gets their count. */
static inline int m2s_check_jsonl_file(const char *path, const m2s_obj *s, int *lines, char *why, size_t cap) {
    char *txt = NULL;
    m2_err err = {0};
    *lines = 0;
    if (m2_read_file(path, &txt, NULL, &err)) { snprintf(why, cap, "%s", err.msg); return -1; }
    int rc = 0;
    for (char *p = txt, *e; rc == 0 && *p; p = e + 1) {
        e = strchr(p, '\n');
        if (!e) { snprintf(why, cap, "%s: last line has no newline", path); rc = -1; break; }
        *e = 0;
        cJSON *o = cJSON_Parse(p);
        char where[700];
        snprintf(where, sizeof where, "%.600s:%d", path, *lines + 1);
        if (!o) { snprintf(why, cap, "%s: not JSON", where); rc = -1; break; }
        rc = m2s_check_obj(o, s, where, why, cap);
        cJSON_Delete(o);
        (*lines)++;
    }
    free(txt);
    return rc;
}

/* Every .jsonl file directly in dir/eval: records of the one eval format; *records their count. */
static inline int m2s_check_eval_dir(const char *dir, int *records, char *why, size_t cap) {
    char ed[1200];
    snprintf(ed, sizeof ed, "%s/eval", dir);
    *records = 0;
    DIR *d = opendir(ed);
    if (!d) { snprintf(why, cap, "%s: no eval folder", dir); return -1; }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl")) continue;
        char p[1500];
        int n = 0;
        snprintf(p, sizeof p, "%s/%s", ed, e->d_name);
        rc = m2s_check_jsonl_file(p, &m2s_eval_record, &n, why, cap);
        *records += n;
    }
    closedir(d);
    return rc;
}

/* Every field name of s (and its sub-objects) appears in docs/runs.md as `name`. */
static inline int m2s_documented(const char *doc, const m2s_obj *s, char *why, size_t cap) {
    for (int k = 0; k < s->n; k++) {
        char q[96];
        snprintf(q, sizeof q, "`%s`", s->f[k].name);
        if (!strstr(doc, q)) { snprintf(why, cap, "docs/runs.md does not document %s field %s", s->what, q); return -1; }
        if (s->f[k].sub && m2s_documented(doc, s->f[k].sub, why, cap)) return -1;
    }
    return 0;
}

#endif
