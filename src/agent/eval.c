#include "agent/eval.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "data/episodes.h"
#include "env/env.h"

void m2_eval_agg_init(m2_eval_agg *a) { memset(a, 0, sizeof *a); }
void m2_eval_agg_free(m2_eval_agg *a) {
    for (int i = 0; i < a->n; i++) free(a->cells[i].task_type);
    free(a->cells);
    memset(a, 0, sizeof *a);
}

const m2_eval_cell *m2_eval_agg_find(const m2_eval_agg *a, const char *split, const char *task_type) {
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->cells[i].split, split) && !strcmp(a->cells[i].task_type, task_type)) return &a->cells[i];
    return NULL;
}

static m2_eval_cell *cell(m2_eval_agg *a, const char *split, const char *task_type, m2_err *err) {
    m2_eval_cell *c = (m2_eval_cell *)m2_eval_agg_find(a, split, task_type);
    if (c) return c;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        m2_eval_cell *v = realloc(a->cells, (size_t)cap * sizeof *v);
        if (!v) { m2_errorf(err, M2_ENOMEM, "eval: out of memory"); return NULL; }
        a->cells = v;
        a->cap = cap;
    }
    c = &a->cells[a->n];
    memset(c, 0, sizeof *c);
    snprintf(c->split, sizeof c->split, "%s", split);
    /* a copy, not a fixed-size field: a cut name (ScienceWorld's task names reach 48 characters)
     * would never be found again and open a new cell per episode */
    if (!(c->task_type = strdup(task_type))) { m2_errorf(err, M2_ENOMEM, "eval: out of memory"); return NULL; }
    a->n++;
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
    if (ep->task_type) {
        if (!(c = cell(a, ep->split, ep->task_type, err))) return -1;
        add_to(c, ep);
    }
    return 0;
}

void m2_eval_traj_episode(const m2_env_traj *t, const char *task_type, m2_episode *ep) {
    int invalid = 0;
    for (int s = 0; s < t->n; s++) invalid += !t->steps[s].valid;
    *ep = (m2_episode){.steps = t->n, .invalid = invalid, .success = t->won, .score = t->score,
                       .task_type = (char *)task_type};
    snprintf(ep->env, sizeof ep->env, "%s", t->env_name);
    snprintf(ep->split, sizeof ep->split, "%s", m2_split_name(t->split));
}

int m2_eval_agg_add_traj(m2_eval_agg *a, const m2_env_traj *t, const char *task_type, m2_err *err) {
    m2_episode ep;
    m2_eval_traj_episode(t, task_type, &ep);
    return m2_eval_agg_add(a, &ep, err);
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
        if (!strcmp(c->task_type, "all")) {
            cJSON_AddItemToObject(s, "all", cell_json(c));
        } else {
            cJSON *b = cJSON_GetObjectItemCaseSensitive(s, "task_types");
            if (!b) b = cJSON_AddObjectToObject(s, "task_types");
            cJSON_AddItemToObject(b, c->task_type, cell_json(c));
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* An evaluated episode on the wire (m2_eval_wire_put): the fields the aggregate reads, then its
 * task type and its record, each NUL-ended. */
typedef struct ep_wire {
    char env[32], split[8];
    int steps, sys1_calls, invalid, success;
    long sys1_prompt_tok, sys1_gen_tok, sys2_prompt_tok, sys2_gen_tok;
    float score;
    uint32_t type_len, rec_len;
} ep_wire;

int m2_eval_wire_put(m2_strbuf *b, const m2_episode *ep, const char *rec, m2_err *err) {
    ep_wire x;
    memset(&x, 0, sizeof x);
    memcpy(x.env, ep->env, sizeof x.env);
    memcpy(x.split, ep->split, sizeof x.split);
    x.steps = ep->steps;
    x.sys1_calls = ep->sys1_calls;
    x.invalid = ep->invalid;
    x.success = ep->success;
    x.sys1_prompt_tok = ep->sys1_prompt_tok;
    x.sys1_gen_tok = ep->sys1_gen_tok;
    x.sys2_prompt_tok = ep->sys2_prompt_tok;
    x.sys2_gen_tok = ep->sys2_gen_tok;
    x.score = ep->score;
    const char *t = ep->task_type ? ep->task_type : "";
    x.type_len = (uint32_t)strlen(t) + 1;
    x.rec_len = (uint32_t)strlen(rec) + 1;
    if (m2_strbuf_append(b, &x, sizeof x) || m2_strbuf_append(b, t, x.type_len) || m2_strbuf_append(b, rec, x.rec_len))
        return m2_errorf(err, M2_ENOMEM, "eval: out of memory");
    return 0;
}

int m2_eval_wire_get(const char *buf, size_t len, m2_episode *ep, const char **rec, m2_err *err) {
    ep_wire x;
    if (len < sizeof x) return m2_errorf(err, M2_EFORMAT, "eval: a rank sent a truncated episode");
    memcpy(&x, buf, sizeof x);
    if (len - sizeof x != (size_t)x.type_len + x.rec_len || !x.type_len || !x.rec_len ||
        buf[sizeof x + x.type_len - 1] || buf[len - 1])
        return m2_errorf(err, M2_EFORMAT, "eval: a rank sent a truncated episode");
    const char *t = buf + sizeof x;
    memset(ep, 0, sizeof *ep);
    memcpy(ep->env, x.env, sizeof ep->env);
    memcpy(ep->split, x.split, sizeof ep->split);
    ep->steps = x.steps;
    ep->sys1_calls = x.sys1_calls;
    ep->invalid = x.invalid;
    ep->success = x.success;
    ep->sys1_prompt_tok = x.sys1_prompt_tok;
    ep->sys1_gen_tok = x.sys1_gen_tok;
    ep->sys2_prompt_tok = x.sys2_prompt_tok;
    ep->sys2_gen_tok = x.sys2_gen_tok;
    ep->score = x.score;
    ep->task_type = *t ? (char *)t : NULL;
    *rec = t + x.type_len;
    return 0;
}

int m2_eval_run(m2_env *env, const char *task, m2_split split, int first, int n, uint64_t seed,
                const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg, FILE *jsonl,
                m2_eval_agg *agg, m2_err *err) {
    m2_episode_order order;
    if (m2_episode_order_build(env, task, split, &order, err)) return -1;
    if (first + n > order.n) n = order.n - first;   /* each episode once: no wrap-around in an evaluation */
    int rc = 0;
    for (int k = first; rc == 0 && k < first + n; k++) {
        const m2_episode_ref *r = m2_episode_order_at(&order, k);
        m2_episode ep;
        if (m2_run_episode(env, r->task, split, r->index, seed + (uint64_t)k, sys1, sys2, cfg, &ep, err)) { rc = -1; break; }
        if (!(ep.task_type = strdup(r->type))) rc = m2_errorf(err, M2_ENOMEM, "eval: out of memory");
        if (!rc && jsonl) {
            char *line = m2_episode_to_json(&ep);
            if (!line || fprintf(jsonl, "%s\n", line) < 0) rc = m2_errorf(err, M2_EIO, "eval: cannot write the episode record");
            free(line);
        }
        if (!rc && agg) rc = m2_eval_agg_add(agg, &ep, err);
        m2_episode_free(&ep);
    }
    m2_episode_order_free(&order);
    return rc;
}
