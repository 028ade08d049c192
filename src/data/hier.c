#include "data/hier.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "data/prompts.h"

#define M2_MAX_SUBGOALS 1024

static int add_str(cJSON *arr, const char *s) {
    cJSON *x = cJSON_CreateString(s ? s : "");
    return x ? (cJSON_AddItemToArray(arr, x), 0) : -1;
}
static int add_str_owned(cJSON *arr, char *s) {
    if (!s) return -1;
    int rc = add_str(arr, s);
    free(s);
    return rc;
}

int m2_hier_records(const m2_env *env, const m2_env_traj *t, const char *variant, const m2_hier_opts *opts,
                    cJSON **high, cJSON **lows, m2_err *err) {
    *high = NULL; *lows = NULL;
    const m2_hier_opts defaults = {.parts = M2_LOW_PARTS_DEFAULT};
    if (!opts) opts = &defaults;
    const m2_low_episode le = {.env_name = t->env_name, .first_obs = t->first_obs, .parts = opts->parts};
    m2_subgoal *sg = calloc(M2_MAX_SUBGOALS, sizeof *sg);
    const char **acts = malloc(((size_t)t->n + 1) * sizeof *acts);
    const char **obs = malloc(((size_t)t->n + 1) * sizeof *obs);
    cJSON *h = cJSON_CreateObject(), *ls = cJSON_CreateArray();
    if (!sg || !acts || !obs || !h || !ls) goto oom;
    for (int i = 0; i < t->n; i++) { acts[i] = t->steps[i].action; obs[i] = t->steps[i].observation; }
    /* the sub-goals a hierarchical rollout pursued, each judged by the environment; else the
     * segmenter's code rules over the finished trajectory (what happened = what was pursued) */
    int judged = t->n_subgoals > 0;
    int ns = 0;
    if (judged) {
        for (int g = 0; g < t->n_subgoals && ns < M2_MAX_SUBGOALS; g++, ns++) {
            snprintf(sg[ns].text, sizeof sg[ns].text, "%s", t->subgoals[g].text);
            sg[ns].first = t->subgoals[g].first;
            sg[ns].last = t->subgoals[g].last;
        }
    } else {
        ns = t->n && env->cls->segment ? env->cls->segment(env, acts, obs, t->n, sg, M2_MAX_SUBGOALS) : 0;
    }
    if (ns < 0) { free(sg); free(acts); free(obs); cJSON_Delete(h); cJSON_Delete(ls);
                  return m2_errorf(err, M2_EINVAL, "%s: segmenter failed", env->cls->name); }

    cJSON_AddStringToObject(h, "env", t->env_name);
    cJSON_AddStringToObject(h, "split", m2_split_name(t->split));
    cJSON_AddNumberToObject(h, "index", t->index);
    cJSON_AddNumberToObject(h, "seed", (double)t->seed);
    cJSON_AddStringToObject(h, "variant", variant);
    cJSON_AddStringToObject(h, "task", t->task_text);
    if (opts->task_type) cJSON_AddStringToObject(h, "task_type", opts->task_type);
    char *td = m2_prompt_high_context(t->task_text);
    if (!td) goto oom;
    cJSON_AddStringToObject(h, "task_description", td);
    free(td);
    cJSON *hobs = cJSON_AddArrayToObject(h, "obs"), *hsub = cJSON_AddArrayToObject(h, "subtask");
    cJSON *hrew = cJSON_AddArrayToObject(h, "reward"), *hsc = cJSON_AddArrayToObject(h, "score");
    cJSON *hdone = cJSON_AddArrayToObject(h, "done"), *hok = cJSON_AddArrayToObject(h, "subgoal_success");
    if (!hobs || !hsub || !hrew || !hsc || !hdone || !hok) goto oom;
    if (add_str_owned(hobs, m2_prompt_state(NULL, 0, t->first_obs))) goto oom;
    for (int g = 0; g < ns; g++) {
        int a = sg[g].first, b = sg[g].last;
        if (a < 0) a = 0;
        if (b >= t->n) b = t->n - 1;
        if (b < a) continue;
        float rew = 0;
        for (int i = a; i <= b; i++) rew += t->steps[i].reward;
        int completed = judged ? t->subgoals[g].success : (g < ns - 1 || t->won);
        if (add_str_owned(hobs, m2_prompt_state(acts + a, b - a + 1, obs[b])) || add_str(hsub, sg[g].text)) goto oom;
        cJSON_AddItemToArray(hrew, cJSON_CreateNumber(rew));
        cJSON_AddItemToArray(hsc, cJSON_CreateNumber(t->steps[b].score));
        cJSON_AddItemToArray(hdone, cJSON_CreateBool(t->steps[b].done));
        cJSON_AddItemToArray(hok, cJSON_CreateBool(completed));

        cJSON *l = cJSON_CreateObject();
        if (!l) goto oom;
        cJSON_AddItemToArray(ls, l);
        cJSON_AddStringToObject(l, "env", t->env_name);
        cJSON_AddNumberToObject(l, "index", t->index);
        cJSON_AddNumberToObject(l, "subgoal_index", g);
        cJSON_AddStringToObject(l, "variant", variant);
        cJSON_AddStringToObject(l, "subgoal", sg[g].text);   /* plain text; "subtask" holds the prompted one */
        cJSON_AddBoolToObject(l, "success", completed);
        cJSON_AddStringToObject(l, "task", t->task_text);
        if (opts->task_type) cJSON_AddStringToObject(l, "task_type", opts->task_type);
        char *lc, *s0;
        if (m2_prompt_low_start(&le, sg[g].text, a == 0 ? t->first_obs : obs[a - 1], &lc, &s0)) goto oom;
        cJSON_AddStringToObject(l, "subtask", lc);
        free(lc);
        cJSON *lo = cJSON_AddArrayToObject(l, "obs"), *la = cJSON_AddArrayToObject(l, "action");
        cJSON *lr = cJSON_AddArrayToObject(l, "reward"), *lsc = cJSON_AddArrayToObject(l, "score");
        cJSON *ld = cJSON_AddArrayToObject(l, "done"), *ler = cJSON_AddArrayToObject(l, "env_reward");
        if (!lo || !la || !lr || !lsc || !ld || !ler) { free(s0); goto oom; }
        if (add_str_owned(lo, s0)) goto oom;
        for (int i = a; i <= b; i++) {
            int last = i == b && completed;
            if (add_str_owned(lo, m2_prompt_low_obs(obs[i])) || add_str_owned(la, m2_prompt_low_action(acts[i], last))) goto oom;
            cJSON_AddItemToArray(lr, cJSON_CreateNumber(last ? 1 : 0));
            cJSON_AddItemToArray(lsc, cJSON_CreateNumber(last ? 1 : 0));
            /* one rule for the critic: every segment ends in a terminal state, at its sub-goal's
             * completion or when its budget (or the episode) ran out; nothing bootstraps past it */
            cJSON_AddItemToArray(ld, cJSON_CreateBool(i == b));
            cJSON_AddItemToArray(ler, cJSON_CreateNumber(t->steps[i].reward));
        }
    }
    cJSON_AddBoolToObject(h, "success", t->won);
    cJSON_AddNumberToObject(h, "steps", t->n);
    free(sg); free(acts); free(obs);
    *high = h; *lows = ls;
    return 0;
oom:
    free(sg); free(acts); free(obs);
    cJSON_Delete(h); cJSON_Delete(ls);
    return m2_errorf(err, M2_ENOMEM, "hierarchical records: out of memory");
}

int m2_hier_write_line(FILE *f, const cJSON *record, const char *path, m2_err *err) {
    char *s = cJSON_PrintUnformatted(record);
    if (!s) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int bad = fputs(s, f) == EOF || fputc('\n', f) == EOF;
    free(s);
    if (bad) return m2_errorf(err, M2_EIO, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

cJSON *m2_env_traj_to_json(const m2_env_traj *t) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "env", t->env_name);
    cJSON_AddStringToObject(o, "split", m2_split_name(t->split));
    cJSON_AddNumberToObject(o, "index", t->index);
    cJSON_AddNumberToObject(o, "seed", (double)t->seed);
    if (t->task) cJSON_AddStringToObject(o, "task", t->task);
    cJSON_AddStringToObject(o, "task_text", t->task_text ? t->task_text : "");
    cJSON_AddNumberToObject(o, "steps", t->n);
    cJSON_AddBoolToObject(o, "success", t->won);
    cJSON_AddNumberToObject(o, "score", t->score);
    cJSON_AddNumberToObject(o, "return", t->ret);
    int invalid = 0;
    for (int i = 0; i < t->n; i++) invalid += !t->steps[i].valid;
    cJSON_AddNumberToObject(o, "invalid_actions", invalid);
    cJSON *tr = cJSON_AddArrayToObject(o, "transcript");
    if (tr) {
        cJSON *s0 = cJSON_CreateObject();
        if (s0) { cJSON_AddStringToObject(s0, "observation", t->first_obs ? t->first_obs : ""); cJSON_AddItemToArray(tr, s0); }
        for (int i = 0; i < t->n; i++) {
            cJSON *s = cJSON_CreateObject();
            if (!s) break;
            cJSON_AddStringToObject(s, "action", t->steps[i].action);
            cJSON_AddStringToObject(s, "observation", t->steps[i].observation);
            cJSON_AddNumberToObject(s, "reward", t->steps[i].reward);
            cJSON_AddItemToArray(tr, s);
        }
    }
    return o;
}
