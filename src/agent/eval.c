#include "agent/eval.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "env/env.h"

void m2_eval_agg_init(m2_eval_agg *a) { memset(a, 0, sizeof *a); }
void m2_eval_agg_free(m2_eval_agg *a) { free(a->cells); memset(a, 0, sizeof *a); }

const m2_eval_cell *m2_eval_agg_find(const m2_eval_agg *a, const char *split, const char *bucket) {
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->cells[i].split, split) && !strcmp(a->cells[i].bucket, bucket)) return &a->cells[i];
    return NULL;
}

static m2_eval_cell *cell(m2_eval_agg *a, const char *split, const char *bucket, m2_err *err) {
    m2_eval_cell *c = (m2_eval_cell *)m2_eval_agg_find(a, split, bucket);
    if (c) return c;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        m2_eval_cell *v = realloc(a->cells, (size_t)cap * sizeof *v);
        if (!v) { m2_errorf(err, M2_ENOMEM, "eval: out of memory"); return NULL; }
        a->cells = v;
        a->cap = cap;
    }
    c = &a->cells[a->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->split, sizeof c->split, "%s", split);
    snprintf(c->bucket, sizeof c->bucket, "%s", bucket);
    return c;
}

static void add_to(m2_eval_cell *c, const m2_episode *ep) {
    c->n++;
    c->success += ep->success ? 1 : 0;
    c->score += m2_env_unit_score(ep->env, ep->score);
    c->steps += ep->steps;
    c->sys1_prompt += ep->sys1_prompt_tok;
    c->sys1_gen += ep->sys1_gen_tok;
    c->sys2_prompt += ep->sys2_prompt_tok;
    c->sys2_gen += ep->sys2_gen_tok;
    c->sys1_calls += ep->sys1_calls;
    c->invalid += ep->invalid;
}

int m2_eval_agg_add(m2_eval_agg *a, const m2_episode *ep, m2_err *err) {
    m2_eval_cell *c = cell(a, ep->split, "all", err);
    if (!c) return -1;
    add_to(c, ep);
    if (ep->bucket) {
        if (!(c = cell(a, ep->split, ep->bucket, err))) return -1;
        add_to(c, ep);
    }
    return 0;
}

static cJSON *cell_json(const m2_eval_cell *c) {
    cJSON *o = cJSON_CreateObject();
    double n = c->n ? c->n : 1;
    cJSON_AddNumberToObject(o, "episodes", c->n);
    cJSON_AddNumberToObject(o, "pass@1", c->success / n);
    cJSON_AddNumberToObject(o, "successes", c->success);
    cJSON_AddNumberToObject(o, "score", c->score / n);
    cJSON_AddNumberToObject(o, "steps", c->steps / n);
    cJSON *t = cJSON_AddObjectToObject(o, "tokens");
    cJSON_AddNumberToObject(t, "sys1_prompt", c->sys1_prompt / n);
    cJSON_AddNumberToObject(t, "sys1_gen", c->sys1_gen / n);
    cJSON_AddNumberToObject(t, "sys2_prompt", c->sys2_prompt / n);
    cJSON_AddNumberToObject(t, "sys2_gen", c->sys2_gen / n);
    cJSON_AddNumberToObject(t, "total", (c->sys1_prompt + c->sys1_gen + c->sys2_prompt + c->sys2_gen) / n);
    cJSON_AddNumberToObject(o, "sys1_calls", c->sys1_calls / n);
    cJSON_AddNumberToObject(o, "invalid_action_rate", c->steps > 0 ? c->invalid / c->steps : 0.0);
    return o;
}

char *m2_eval_agg_to_json(const m2_eval_agg *a) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    for (int i = 0; i < a->n; i++) {
        const m2_eval_cell *c = &a->cells[i];
        cJSON *s = cJSON_GetObjectItemCaseSensitive(o, c->split);
        if (!s) s = cJSON_AddObjectToObject(o, c->split);
        if (!strcmp(c->bucket, "all")) {
            cJSON_AddItemToObject(s, "all", cell_json(c));
        } else {
            cJSON *b = cJSON_GetObjectItemCaseSensitive(s, "buckets");
            if (!b) b = cJSON_AddObjectToObject(s, "buckets");
            cJSON_AddItemToObject(b, c->bucket, cell_json(c));
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *m2_eval_bucket(m2_env *env, const char *task, m2_split split, int index) {
    if (!env->cls->describe) return NULL;
    m2_err err = {0};
    char *d = env->cls->describe(env, task, split, index, &err);
    if (!d) return NULL;
    cJSON *o = cJSON_Parse(d);
    free(d);
    char *out = NULL;
    /* the field that grades an episode, in each environment's describe(): an explicit "difficulty",
     * else TextCraft's crafting depth, else ALFWorld's task type, else ScienceWorld's task family */
    static const char *const keys[] = {"difficulty", "depth", "task_type", "task"};
    for (int k = 0; k < 4 && !out; k++) {
        const cJSON *f = o ? cJSON_GetObjectItemCaseSensitive(o, keys[k]) : NULL;
        if (!f) continue;
        if (!strcmp(keys[k], "task") && !cJSON_GetObjectItemCaseSensitive(o, "task_id")) break;   /* a task text */
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

int m2_eval_run(m2_env *env, const char *task, m2_split split, int first, int n, uint64_t seed,
                const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg, FILE *jsonl,
                m2_eval_agg *agg, m2_err *err) {
    for (int i = first; i < first + n; i++) {
        m2_episode ep;
        if (m2_run_episode(env, task, split, i, seed + (uint64_t)i, sys1, sys2, cfg, &ep, err)) return -1;
        ep.bucket = m2_eval_bucket(env, task, split, i);
        int rc = 0;
        if (jsonl) {
            char *line = m2_episode_to_json(&ep);
            if (!line || fprintf(jsonl, "%s\n", line) < 0) rc = m2_errorf(err, M2_EIO, "eval: cannot write the episode record");
            free(line);
        }
        if (!rc && agg) rc = m2_eval_agg_add(agg, &ep, err);
        m2_episode_free(&ep);
        if (rc) return -1;
    }
    return 0;
}
