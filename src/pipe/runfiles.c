#include "pipe/runfiles.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/build_info.h"
#include "core/config.h"
#include "core/fsutil.h"
#include "env/env.h"
#include "pipe/run_config.h"

/* demo.json's format tag and version (docs/runs.md); a reader refuses another format. */
#define DEMO_FORMAT "multi2-demo"
#define DEMO_VERSION 1
/* Run folders named in a "this is a demo folder" message before "and N more". */
#define DEMO_RUNS_SHOWN 3

/* ---------------------------------------------------------------- folder kinds */

static int has(const char *dir, const char *name) {
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return m2_path_exists(p);
}

/* What `multi2 demo` puts at a demo folder's top level besides demo.json. */
static int demo_entry(const char *name) {
    return !strcmp(name, "results.md") || !strcmp(name, "results.json") || !strcmp(name, "plots") ||
           m2_env_find(name) != NULL;
}

m2_dir_kind m2_dir_kind_of(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) return M2_DIR_ABSENT;
    if (!S_ISDIR(st.st_mode)) return M2_DIR_OTHER;
    if (has(dir, "demo.json")) return M2_DIR_DEMO;
    if (has(dir, "config.yaml") || has(dir, "metrics.jsonl") || has(dir, "stages.json") || has(dir, "ckpt/latest"))
        return M2_DIR_RUN;
    DIR *d = opendir(dir);
    if (!d) return M2_DIR_OTHER;
    int n = 0, demo_like = 1, env_dirs = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (!demo_entry(e->d_name)) demo_like = 0;
        env_dirs += m2_env_find(e->d_name) != NULL;
    }
    closedir(d);
    if (n == 0) return M2_DIR_EMPTY;
    /* a demo made before demo.json existed: only its results and per-environment folders */
    return demo_like && env_dirs > 0 ? M2_DIR_DEMO : M2_DIR_OTHER;
}

int m2_run_records_only(const char *run_dir) { return has(run_dir, M2_RECORDS_ONLY_FILE); }

/* "DIR/textcraft/multi2, DIR/textcraft/flat, DIR/alfworld/multi2 and 3 more" (or a pattern when
 * none is there yet): the run folders two levels below a demo folder. */
static void demo_runs(const char *dir, char *out, size_t cap) {
    out[0] = 0;
    int shown = 0, more = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !m2_env_find(e->d_name)) continue;
        char env_dir[4200];
        snprintf(env_dir, sizeof env_dir, "%s/%s", dir, e->d_name);
        DIR *d2 = opendir(env_dir);
        struct dirent *r;
        while (d2 && (r = readdir(d2)) != NULL) {
            if (r->d_name[0] == '.') continue;
            char run[4608];
            snprintf(run, sizeof run, "%s/%s", env_dir, r->d_name);
            if (!has(run, "config.yaml")) continue;   /* the oracle / random folders hold no run */
            if (shown < DEMO_RUNS_SHOWN) {
                size_t l = strlen(out);
                snprintf(out + l, cap - l, "%s%s", shown ? ", " : "", run);
                shown++;
            } else {
                more++;
            }
        }
        if (d2) closedir(d2);
    }
    if (d) closedir(d);
    size_t l = strlen(out);
    if (!shown) snprintf(out, cap, "%s/<env>/<method>", dir);
    else if (more) snprintf(out + l, cap - l, " and %d more", more);
}

static const char *elsewhere = "choose another folder (run.name=... or run.out_dir=...)";

int m2_check_fresh_run_dir(const char *dir, m2_err *err) {
    char runs[2048];
    switch (m2_dir_kind_of(dir)) {
    case M2_DIR_ABSENT:
    case M2_DIR_EMPTY:
        return 0;
    case M2_DIR_RUN:
        return m2_errorf(err, M2_EINVAL, "%s already holds a run: continue it with multi2 train --resume %s, or %s",
                         dir, dir, elsewhere);
    case M2_DIR_DEMO:
        demo_runs(dir, runs, sizeof runs);
        return m2_errorf(err, M2_EINVAL, "%s is a multi2 demo folder, not a place for a run (its runs are %s); %s",
                         dir, runs, elsewhere);
    default:
        return m2_errorf(err, M2_EINVAL, "%s exists and is not empty, but holds no run: a fresh run needs a new or "
                         "empty folder; %s", dir, elsewhere);
    }
}

int m2_check_resume_dir(const char *dir, m2_err *err) {
    char runs[2048];
    switch (m2_dir_kind_of(dir)) {
    case M2_DIR_RUN:
        if (has(dir, "config.yaml")) return 0;
        return m2_errorf(err, M2_EFORMAT, "%s: not a complete run folder (no config.yaml)", dir);
    case M2_DIR_ABSENT:
        return m2_errorf(err, M2_ENOTFOUND, "%s: no such run folder", dir);
    case M2_DIR_DEMO:
        demo_runs(dir, runs, sizeof runs);
        return m2_errorf(err, M2_EINVAL, "%s is a multi2 demo folder, not a run: resume one of its runs (%s), or "
                         "continue the whole demo with multi2 demo --out %s", dir, runs, dir);
    default:
        return m2_errorf(err, M2_EINVAL, "%s is not a run folder (no config.yaml)", dir);
    }
}

int m2_check_demo_dir(const char *dir, m2_err *err) {
    switch (m2_dir_kind_of(dir)) {
    case M2_DIR_ABSENT:
    case M2_DIR_EMPTY:
    case M2_DIR_DEMO:
        return 0;
    case M2_DIR_RUN:
        return m2_errorf(err, M2_EINVAL, "--out %s: the folder holds a training run (multi2 train), not a demo; "
                         "choose another --out", dir);
    default:
        return m2_errorf(err, M2_EINVAL, "--out %s: the folder is not empty and is no multi2 demo folder (no "
                         "demo.json); choose another --out, or empty it", dir);
    }
}

/* ---------------------------------------------------------------- demo.json */

static int in_array(const cJSON *a, const char *s) {
    const cJSON *x;
    cJSON_ArrayForEach(x, a) if (cJSON_IsString(x) && !strcmp(x->valuestring, s)) return 1;
    return 0;
}

/* dst gets the strings of old (when an array) and then "env/name" for every env x name not
 * already there. */
static void merge_folders(cJSON *dst, const cJSON *old, const char *envs, const char *names) {
    const cJSON *x;
    if (cJSON_IsArray(old))
        cJSON_ArrayForEach(x, old) if (cJSON_IsString(x) && !in_array(dst, x->valuestring))
            cJSON_AddItemToArray(dst, cJSON_CreateString(x->valuestring));
    char e[64], m[64], f[160];
    for (int i = 0; m2_cfg_list_item(envs, i, e, sizeof e); i++)
        for (int k = 0; m2_cfg_list_item(names, k, m, sizeof m); k++) {
            snprintf(f, sizeof f, "%s/%s", e, m);
            if (!in_array(dst, f)) cJSON_AddItemToArray(dst, cJSON_CreateString(f));
        }
}

static cJSON *list_array(const char *list) {
    cJSON *a = cJSON_CreateArray();
    char item[128];
    for (int i = 0; a && m2_cfg_list_item(list, i, item, sizeof item); i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(item));
    return a;
}

int m2_demo_marker_write(const char *dir, const m2_demo_marker *d, m2_err *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/demo.json", dir);
    cJSON *old = NULL;
    if (m2_path_exists(path)) {
        char *txt;
        if (m2_read_file(path, &txt, NULL, err)) return -1;
        old = cJSON_Parse(txt);
        free(txt);
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(old, "format");
        if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, DEMO_FORMAT)) {
            cJSON_Delete(old);
            return m2_errorf(err, M2_EFORMAT, "%s: field format: expected \"%s\" (not a multi2 demo marker)", path,
                             DEMO_FORMAT);
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", DEMO_FORMAT);
    cJSON_AddNumberToObject(o, "version", DEMO_VERSION);
    cJSON_AddStringToObject(o, "config", d->config ? d->config : "embedded");
    cJSON_AddItemToObject(o, "envs", list_array(d->envs));
    cJSON_AddItemToObject(o, "methods", list_array(d->methods));
    cJSON *ov = cJSON_AddArrayToObject(o, "overrides");
    for (int i = 0; i < d->n_overrides; i++) cJSON_AddItemToArray(ov, cJSON_CreateString(d->overrides[i]));
    merge_folders(cJSON_AddArrayToObject(o, "runs"), cJSON_GetObjectItemCaseSensitive(old, "runs"), d->envs,
                  d->methods);
    merge_folders(cJSON_AddArrayToObject(o, "references"), cJSON_GetObjectItemCaseSensitive(old, "references"), d->envs,
                  "oracle,random");
    cJSON_Delete(old);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int rc = m2_mkdir_p(dir, err) || m2_write_file_atomic(path, s, strlen(s), err) ? -1 : 0;
    cJSON_free(s);
    return rc;
}

/* ---------------------------------------------------------------- reference.json */

#define REFERENCE_FORMAT "multi2-reference"
#define REFERENCE_VERSION 1

int m2_reference_marker_write(const char *dir, const m2_reference_marker *m, m2_err *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/reference.json", dir);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", REFERENCE_FORMAT);
    cJSON_AddNumberToObject(o, "version", REFERENCE_VERSION);
    cJSON_AddStringToObject(o, "policy", m->policy);
    cJSON_AddStringToObject(o, "env", m->env);
    cJSON_AddNumberToObject(o, "episodes", (double)m->episodes);
    cJSON_AddNumberToObject(o, "step_limit", (double)m->step_limit);
    cJSON_AddNumberToObject(o, "eval_seed", (double)m->eval_seed);
    cJSON_AddNumberToObject(o, "run_seed", (double)m->run_seed);
    cJSON_AddStringToObject(o, "made_by", m2_build_id());
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    if (!txt) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int rc = m2_write_file_atomic(path, txt, strlen(txt), err) ? -1 : 0;
    cJSON_free(txt);
    return rc;
}

int m2_reference_made_by(const char *dir, char *out, size_t cap, m2_err *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/reference.json", dir);
    if (cap) out[0] = 0;
    if (!m2_path_exists(path)) return 0;
    char *txt;
    if (m2_read_file(path, &txt, NULL, err)) return -1;
    cJSON *o = cJSON_Parse(txt);
    free(txt);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "format"), *mb = cJSON_GetObjectItemCaseSensitive(o, "made_by");
    int rc = 1;
    if (!o)
        rc = m2_errorf(err, M2_EFORMAT, "%s: not JSON", path);
    else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, REFERENCE_FORMAT))
        rc = m2_errorf(err, M2_EFORMAT, "%s: field format: expected \"%s\"", path, REFERENCE_FORMAT);
    else if (!cJSON_IsString(mb))
        rc = m2_errorf(err, M2_EFORMAT, "%s: field made_by: expected a string", path);
    else
        snprintf(out, cap, "%s", mb->valuestring);
    cJSON_Delete(o);
    return rc;
}

/* ---------------------------------------------------------------- eval records */

/* The fields every record has, whoever played the episode (docs/runs.md, eval/<split>.jsonl). */
typedef struct eval_fields {
    const char *env, *split, *method, *task, *family, *task_type;
    int index;
    uint64_t seed;
    int steps, success, hit_limit, invalid, parse_failures, sys1_calls, sys2_calls;
    double score, ret;
    long sys1_prompt, sys1_gen, sys2_prompt, sys2_gen;
} eval_fields;

/* The one writer of eval records; takes ownership of transcript. */
static char *eval_record(const eval_fields *f, cJSON *transcript) {
    cJSON *o = cJSON_CreateObject();
    if (!o) { cJSON_Delete(transcript); return NULL; }
    cJSON_AddStringToObject(o, "env", f->env);
    cJSON_AddStringToObject(o, "split", f->split);
    cJSON_AddStringToObject(o, "method", f->method);
    cJSON_AddNumberToObject(o, "index", f->index);
    cJSON_AddNumberToObject(o, "seed", (double)f->seed);
    cJSON_AddStringToObject(o, "task", f->task ? f->task : "");
    if (f->family) cJSON_AddStringToObject(o, "task_family", f->family);
    if (f->task_type) cJSON_AddStringToObject(o, "task_type", f->task_type);
    cJSON_AddNumberToObject(o, "steps", f->steps);
    cJSON_AddBoolToObject(o, "success", f->success);
    cJSON_AddNumberToObject(o, "score", f->score);
    cJSON_AddNumberToObject(o, "return", f->ret);
    cJSON_AddBoolToObject(o, "hit_step_limit", f->hit_limit);
    cJSON_AddNumberToObject(o, "invalid_actions", f->invalid);
    cJSON_AddNumberToObject(o, "parse_failures", f->parse_failures);
    cJSON_AddNumberToObject(o, "sys1_calls", f->sys1_calls);
    cJSON_AddNumberToObject(o, "sys2_calls", f->sys2_calls);
    cJSON_AddNumberToObject(o, "tokens", (double)(f->sys1_prompt + f->sys1_gen + f->sys2_prompt + f->sys2_gen));
    cJSON *tc = cJSON_AddObjectToObject(o, "token_counts");
    cJSON_AddNumberToObject(tc, "sys1_prompt", (double)f->sys1_prompt);
    cJSON_AddNumberToObject(tc, "sys1_gen", (double)f->sys1_gen);
    cJSON_AddNumberToObject(tc, "sys2_prompt", (double)f->sys2_prompt);
    cJSON_AddNumberToObject(tc, "sys2_gen", (double)f->sys2_gen);
    cJSON_AddItemToObject(o, "transcript", transcript ? transcript : cJSON_CreateArray());
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ---------------------------------------------------------------- evaluation records */

void m2_eval_file_stem(const char *split, const char *mode, char *out, size_t cap) {
    if (mode && *mode) snprintf(out, cap, "%s.%s", split, mode);
    else snprintf(out, cap, "%s", split);
}

void m2_eval_file_mode(const char *file_name, char *out, size_t cap) {
    if (cap) out[0] = 0;
    size_t n = strlen(file_name);
    if (n > 6 && !strcmp(file_name + n - 6, ".jsonl")) n -= 6;
    const char *dot = memchr(file_name, '.', n);
    if (!dot) return;
    size_t len = n - (size_t)(dot + 1 - file_name);
    for (int m = 0; m < M2_N_ACTION_MODES; m++)
        if (strlen(m2_action_mode_names[m]) == len && !strncmp(dot + 1, m2_action_mode_names[m], len)) {
            snprintf(out, cap, "%s", m2_action_mode_names[m]);
            return;
        }
}

char *m2_eval_record_episode(const m2_episode *ep, const char *method, const char *family) {
    /* the loop's own rendering of the transcript: sub-goals with their steps */
    char *s = m2_episode_to_json(ep);
    cJSON *full = s ? cJSON_Parse(s) : NULL;
    free(s);
    if (!full) return NULL;
    cJSON *tr = cJSON_DetachItemFromObjectCaseSensitive(full, "transcript");
    cJSON_Delete(full);
    eval_fields f = {.env = ep->env, .split = ep->split, .method = method, .task = ep->task, .family = family,
                     .task_type = ep->task_type, .index = ep->index, .seed = ep->seed, .steps = ep->steps,
                     .success = ep->success, .hit_limit = ep->hit_limit, .invalid = ep->invalid,
                     .parse_failures = ep->parse_fail, .sys1_calls = ep->sys1_calls, .sys2_calls = ep->sys2_calls,
                     .score = ep->score, .ret = ep->ret, .sys1_prompt = ep->sys1_prompt_tok,
                     .sys1_gen = ep->sys1_gen_tok, .sys2_prompt = ep->sys2_prompt_tok, .sys2_gen = ep->sys2_gen_tok};
    return eval_record(&f, tr);
}

char *m2_eval_record_traj(const m2_env_traj *t, const char *method, const char *task_type,
                          int step_limit) {
    /* one transcript entry, as a flat episode's: no sub-goal, the first observation as its state;
     * a reference policy's action is its own raw output and never flags a sub-goal */
    cJSON *tr = cJSON_CreateArray(), *sg = cJSON_CreateObject();
    if (!tr || !sg) { cJSON_Delete(tr); cJSON_Delete(sg); return NULL; }
    cJSON_AddItemToArray(tr, sg);
    cJSON_AddStringToObject(sg, "subgoal", "");
    cJSON_AddStringToObject(sg, "state", t->first_obs ? t->first_obs : "");
    cJSON_AddBoolToObject(sg, "flagged_done", 0);
    cJSON *steps = cJSON_AddArrayToObject(sg, "steps");
    int invalid = 0, done = 0;
    for (int i = 0; i < t->n; i++) {
        const m2_env_step_rec *st = &t->steps[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) { cJSON_Delete(tr); return NULL; }
        cJSON_AddStringToObject(j, "raw", st->action);
        cJSON_AddStringToObject(j, "action", st->action);
        cJSON_AddBoolToObject(j, "flag", 0);
        cJSON_AddStringToObject(j, "obs", st->observation ? st->observation : "");
        cJSON_AddNumberToObject(j, "reward", st->reward);
        cJSON_AddBoolToObject(j, "valid", st->valid);
        cJSON_AddItemToArray(steps, j);
        invalid += !st->valid;
        done = st->done;
    }
    eval_fields f = {.env = t->env_name, .split = m2_split_name(t->split), .method = method, .task = t->task_text,
                     .family = t->task, .task_type = task_type, .index = t->index, .seed = t->seed, .steps = t->n,
                     .success = t->won, .hit_limit = !done && t->n >= step_limit, .invalid = invalid,
                     .score = t->score, .ret = t->ret};
    return eval_record(&f, tr);
}
