#include "agent/loop.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/parse.h"
#include "core/rng.h"
#include "data/prompts.h"

void m2_loop_cfg_default(m2_loop_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->step_limit = 50;
    cfg->subgoal_budget = 10;
    cfg->low_parts = M2_LOW_PARTS_DEFAULT;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s ? s : "");
    char *d = malloc(n + 1);
    if (d) memcpy(d, s ? s : "", n + 1);
    return d;
}

/* a + sep + b, malloc'd */
static char *join3(const char *a, const char *sep, const char *b) {
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, sep, b);
    return s;
}

void m2_episode_free(m2_episode *ep) {
    if (!ep) return;
    /* every allocated slot (zeroed when grown): an error may leave a half-filled one past the count */
    for (int i = 0; i < ep->cap_step; i++) {
        free(ep->step[i].raw); free(ep->step[i].action); free(ep->step[i].obs);
    }
    for (int i = 0; i < ep->cap_sub; i++) {
        free(ep->sub[i].text); free(ep->sub[i].raw); free(ep->sub[i].state); free(ep->sub[i].obs0);
    }
    free(ep->step); free(ep->sub); free(ep->task); free(ep->first_obs); free(ep->task_type);
    memset(ep, 0, sizeof *ep);
}

static int grow(void **p, int *cap, int need, size_t sz, m2_err *err) {
    if (need <= *cap) return 0;
    int c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * sz);
    if (!q) return m2_errorf(err, M2_ENOMEM, "loop: out of memory");
    memset((char *)q + (size_t)*cap * sz, 0, (size_t)(c - *cap) * sz);
    *p = q;
    *cap = c;
    return 0;
}

/* Contexts exactly as the data writer builds them (data/prompts.h), unless the config overrides
 * the instruction text (tests, custom prompts). */
static char *high_context(const m2_loop_cfg *c, const char *task) {
    return c->high_prompt ? join3(c->high_prompt, " ", task) : m2_prompt_high_context(task);
}
/* System 2's prompt and first state for a sub-goal: the one builder of data/prompts.h, fed with what
 * the data writer feeds it (environment, first observation, prompt.low.*). */
static int low_start(const m2_loop_cfg *c, const m2_episode *ep, const char *subgoal, const char *obs0,
                     char **prompt, char **state0) {
    m2_low_episode le = {.env_name = ep->env, .first_obs = ep->first_obs, .parts = c->low_parts,
                         .instruction = c->low_prompt};
    return m2_prompt_low_start(&le, subgoal, obs0, prompt, state0);
}
static char *low_state(const char *obs) { return m2_prompt_low_obs(obs); }

/* Score mode: System 2's output is the candidate its policy picks among the admissible actions of
 * the current state, each with both flag values (agent/choose.h); no admissible action, or a
 * context the policy cannot read, gives the empty output (an unparsable, invalid step). */
static int sys2_choose(m2_env *env, const m2_policy *sys2, const m2_traj *low, char **out, int *np, int *ng,
                       m2_err *err) {
    *out = NULL;
    if (!sys2->choose) return m2_errorf(err, M2_EINVAL, "loop: action mode score needs a policy that scores candidates");
    const char *const *acts = NULL;
    int n = 0, pick = -1;
    if (env->cls->admissible && env->cls->admissible(env, &acts, &n))
        return m2_errorf(err, M2_ENOMEM, "%s: admissible actions: out of memory", env->cls->name);
    if (n <= 0) { *out = dupstr(""); return *out ? 0 : m2_errorf(err, M2_ENOMEM, "loop: out of memory"); }
    char **cands;
    if (m2_action_candidates(acts, n, &cands, err)) return -1;
    int rc = sys2->choose(sys2->ctx, M2_ROLE_SYS2, low, (const char *const *)cands, 2 * n, &pick, np, ng, err);
    if (!rc && pick >= 2 * n) rc = m2_errorf(err, M2_EINVAL, "loop: the policy picked candidate %d of %d", pick, 2 * n);
    if (!rc && !(*out = dupstr(pick >= 0 ? cands[pick] : ""))) rc = m2_errorf(err, M2_ENOMEM, "loop: out of memory");
    m2_candidates_free(cands, 2 * n);
    return rc;
}

uint64_t m2_episode_stream(uint64_t round, m2_split split, uint64_t episode_seed) {
    return m2_hash64(m2_hash64(m2_hash64(round) ^ (uint64_t)split) ^ episode_seed);
}

int m2_run_episode(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
                   const m2_policy *sys1, const m2_policy *sys2, const m2_loop_cfg *cfg,
                   m2_episode *ep, m2_err *err) {
    memset(ep, 0, sizeof *ep);
    if (!env || !sys2 || !sys2->generate || (!cfg->flat && (!sys1 || !sys1->generate)))
        return m2_errorf(err, M2_EINVAL, "loop: missing environment or policy (System 1 needed unless flat)");
    if (cfg->step_limit <= 0) return m2_errorf(err, M2_ECONFIG, "loop: step_limit %d must be > 0", cfg->step_limit);
    snprintf(ep->env, sizeof ep->env, "%s", cfg->env_name ? cfg->env_name : env->cls->name);
    snprintf(ep->split, sizeof ep->split, "%s", m2_split_name(split));
    ep->index = index;
    ep->seed = seed;
    m2_step_result sr;
    if (env->cls->reset(env, task, split, index, seed, &sr, err)) {
        m2_err_prefix(err, "%s reset(split %s, index %d): ", ep->env, ep->split, index);
        return -1;
    }
    if (!(ep->task = dupstr(env->cls->task_text(env))) || !(ep->first_obs = dupstr(sr.observation))) {
        m2_episode_free(ep);
        return m2_errorf(err, M2_ENOMEM, "loop: out of memory");
    }
    uint64_t stream = m2_episode_stream(cfg->round, split, seed);
    if (!cfg->flat && sys1->reset) sys1->reset(sys1->ctx, stream);
    if (sys2->reset) sys2->reset(sys2->ctx, stream);
    char *obs = dupstr(sr.observation);
    m2_traj high, low;
    m2_traj_init(&high);
    m2_traj_init(&low);
    char *hp = high_context(cfg, ep->task);
    int rc = -1, done = sr.done;
    char **group = NULL;   /* actions System 2 took for the previous sub-goal */
    int n_group = 0, cap_group = 0;
    if (!obs || !hp || m2_traj_set_prompt(&high, hp, err)) { if (!err || !err->code) m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
    ep->score = sr.score;
    ep->success = sr.won;

    while (!done && ep->steps < cfg->step_limit) {
        /* ---- System 1: the next sub-goal ---- */
        if (grow((void **)&ep->sub, &ep->cap_sub, ep->n_sub + 1, sizeof *ep->sub, err)) goto out;
        m2_subgoal_rec *sg = &ep->sub[ep->n_sub];
        char sub_text[1024];
        if (cfg->flat) {
            if (ep->n_sub > 0) break;   /* one "sub-goal" (the task) for the whole episode */
            snprintf(sub_text, sizeof sub_text, "%s", ep->task);
        } else {
            char *state = m2_prompt_state((const char *const *)group, n_group, obs);
            if (!state) { m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
            sg->state = state;
            if (m2_traj_push_state(&high, state, err)) goto out;
            char *out = NULL;
            int np = 0, ng = 0;
            if (sys1->generate(sys1->ctx, M2_ROLE_SYS1, &high, &out, &np, &ng, err)) {
                free(out);
                m2_err_prefix(err, "System 1, step %d: ", ep->steps);
                goto out;
            }
            ep->sys1_calls++;
            ep->sys1_prompt_tok += np;
            ep->sys1_gen_tok += ng;
            sg->raw = out ? out : dupstr("");
            m2_parse_subgoal(sg->raw, sub_text, sizeof sub_text);
            if (m2_traj_push_action(&high, sub_text, 0.f, 0.f, err)) goto out;
        }
        sg->text = dupstr(sub_text);
        sg->obs0 = dupstr(obs);
        sg->first = ep->steps;
        ep->n_sub++;
        if (!sg->text || !sg->obs0) { m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
        for (int i = 0; i < n_group; i++) free(group[i]);
        free(group);
        group = NULL;
        n_group = cap_group = 0;

        /* ---- System 2: actions until its flag, the budget, the limit or the end ---- */
        m2_traj_free(&low);
        m2_traj_init(&low);
        char *lp, *ls;
        if (low_start(cfg, ep, sub_text, obs, &lp, &ls)) { m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
        int prc = m2_traj_set_prompt(&low, lp, err) || m2_traj_push_state(&low, ls, err);
        free(lp);
        free(ls);
        if (prc) goto out;
        if (!cfg->flat && env->cls->subgoal_begin) env->cls->subgoal_begin(env, sub_text);
        int k = 0;
        while (!done && ep->steps < cfg->step_limit) {
            char *out = NULL;
            int np = 0, ng = 0;
            if (cfg->action_mode == M2_ACTION_MODE_SCORE ? sys2_choose(env, sys2, &low, &out, &np, &ng, err)
                                                         : sys2->generate(sys2->ctx, M2_ROLE_SYS2, &low, &out, &np, &ng, err)) {
                free(out);
                m2_err_prefix(err, "System 2, step %d: ", ep->steps);
                goto out;
            }
            ep->sys2_calls++;
            ep->sys2_prompt_tok += np;
            ep->sys2_gen_tok += ng;
            if (grow((void **)&ep->step, &ep->cap_step, ep->steps + 1, sizeof *ep->step, err)) { free(out); goto out; }
            m2_step_rec *st = &ep->step[ep->steps];
            st->raw = out ? out : dupstr("");
            char action[1024];
            st->parsed = m2_parse_action(st->raw, action, sizeof action, &st->flag);
            if (cfg->flat) st->flag = 0;
            st->action = dupstr(action);
            if (!st->raw || !st->action) { m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
            if (env->cls->step(env, action, &sr)) {
                m2_errorf(err, M2_EIO, "%s: step \"%s\" failed", ep->env, action);
                goto out;
            }
            st->obs = dupstr(sr.observation);
            st->valid = sr.valid;
            st->reward = sr.reward;
            st->done = sr.done;
            st->met = cfg->flat ? sr.won : env->cls->subgoal_done ? env->cls->subgoal_done(env, sub_text) == 1 : 0;
            ep->steps++;
            sg->n++;
            k++;
            if (!st->parsed) ep->parse_fail++;
            if (!st->parsed || !sr.valid) ep->invalid++;
            ep->ret += sr.reward;
            ep->score = sr.score;
            ep->success = sr.won;
            done = sr.done;
            free(obs);
            obs = dupstr(sr.observation);
            if (!st->obs || !obs) { m2_errorf(err, M2_ENOMEM, "loop: out of memory"); goto out; }
            if (m2_traj_push_action(&low, st->raw, sr.reward, (float)sr.done, err)) goto out;
            char *s2 = low_state(obs);
            if (!s2 || m2_traj_push_state(&low, s2, err)) { free(s2); goto out; }
            free(s2);
            if (grow((void **)&group, &cap_group, n_group + 1, sizeof *group, err)) goto out;
            group[n_group++] = dupstr(action);
            sg->success = cfg->flat ? st->met : st->flag && st->met;
            if (st->flag) { sg->flagged = 1; break; }
            if (!cfg->flat && cfg->subgoal_budget > 0 && k >= cfg->subgoal_budget) break;
        }
    }
    ep->hit_limit = !done && ep->steps >= cfg->step_limit;
    rc = 0;
out:
    for (int i = 0; i < n_group; i++) free(group[i]);
    free(group);
    free(obs);
    free(hp);
    m2_traj_free(&high);
    m2_traj_free(&low);
    if (rc) m2_episode_free(ep);
    return rc;
}

char *m2_episode_to_json(const m2_episode *ep) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "env", ep->env);
    cJSON_AddStringToObject(o, "split", ep->split);
    cJSON_AddNumberToObject(o, "index", ep->index);
    cJSON_AddNumberToObject(o, "seed", (double)ep->seed);
    if (ep->task_type) cJSON_AddStringToObject(o, "task_type", ep->task_type);
    cJSON_AddStringToObject(o, "task", ep->task ? ep->task : "");
    cJSON_AddNumberToObject(o, "steps", ep->steps);
    cJSON *tok = cJSON_AddObjectToObject(o, "tokens");
    cJSON_AddNumberToObject(tok, "sys1_prompt", (double)ep->sys1_prompt_tok);
    cJSON_AddNumberToObject(tok, "sys1_gen", (double)ep->sys1_gen_tok);
    cJSON_AddNumberToObject(tok, "sys2_prompt", (double)ep->sys2_prompt_tok);
    cJSON_AddNumberToObject(tok, "sys2_gen", (double)ep->sys2_gen_tok);
    /* no "total" inside: readers (core/report.c) sum the members; the total is a top-level field */
    cJSON_AddNumberToObject(o, "tokens_total", (double)(ep->sys1_prompt_tok + ep->sys1_gen_tok + ep->sys2_prompt_tok + ep->sys2_gen_tok));
    cJSON_AddNumberToObject(o, "sys1_calls", ep->sys1_calls);
    cJSON_AddNumberToObject(o, "sys2_calls", ep->sys2_calls);
    cJSON_AddNumberToObject(o, "invalid_actions", ep->invalid);
    cJSON_AddNumberToObject(o, "parse_failures", ep->parse_fail);
    cJSON_AddBoolToObject(o, "success", ep->success);
    cJSON_AddNumberToObject(o, "score", ep->score);
    cJSON_AddNumberToObject(o, "return", ep->ret);
    cJSON_AddBoolToObject(o, "hit_step_limit", ep->hit_limit);
    cJSON *tr = cJSON_AddArrayToObject(o, "transcript");
    for (int i = 0; i < ep->n_sub; i++) {
        const m2_subgoal_rec *sg = &ep->sub[i];
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "subgoal", sg->text ? sg->text : "");
        if (sg->raw) cJSON_AddStringToObject(s, "raw", sg->raw);
        if (sg->state) cJSON_AddStringToObject(s, "state", sg->state);
        cJSON_AddBoolToObject(s, "flagged_done", sg->flagged);
        cJSON_AddBoolToObject(s, "success", sg->success);
        cJSON *steps = cJSON_AddArrayToObject(s, "steps");
        for (int k = sg->first; k < sg->first + sg->n && k < ep->steps; k++) {
            const m2_step_rec *st = &ep->step[k];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "raw", st->raw);
            cJSON_AddStringToObject(j, "action", st->action);
            cJSON_AddBoolToObject(j, "flag", st->flag);
            cJSON_AddStringToObject(j, "obs", st->obs ? st->obs : "");
            cJSON_AddNumberToObject(j, "reward", st->reward);
            cJSON_AddBoolToObject(j, "valid", st->valid && st->parsed);
            cJSON_AddItemToArray(steps, j);
        }
        cJSON_AddItemToArray(tr, s);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int m2_episode_segments(const m2_episode *ep, const m2_loop_cfg *cfg, m2_traj **segs, int *n,
                        m2_err *err) {
    *segs = NULL;
    *n = 0;
    int cnt = 0;
    for (int i = 0; i < ep->n_sub; i++) cnt += ep->sub[i].n > 0;
    if (!cnt) return 0;
    m2_traj *v = calloc((size_t)cnt, sizeof *v);
    if (!v) return m2_errorf(err, M2_ENOMEM, "loop: out of memory for %d segments", cnt);
    int j = 0;
    for (int i = 0; i < ep->n_sub; i++) {
        const m2_subgoal_rec *sg = &ep->sub[i];
        if (sg->n == 0) continue;
        m2_traj *t = &v[j++];
        m2_traj_init(t);
        char *lp = NULL, *s0 = NULL;
        int bad = low_start(cfg, ep, sg->text, sg->obs0, &lp, &s0) || m2_traj_set_prompt(t, lp, err) ||
                  m2_traj_push_state(t, s0, err);
        free(lp);
        free(s0);
        /* System 2's one reward, as offline (data/hier.h): 1 on the segment's last step when the
         * sub-goal succeeded, else 0; the last step is terminal (completion, flag, budget or the
         * episode's end), so the critic never bootstraps into the next sub-goal */
        int end = sg->first + sg->n - 1;
        for (int k = sg->first; !bad && k <= end; k++) {
            const m2_step_rec *st = &ep->step[k];
            char *s = low_state(st->obs);
            float r = k == end && sg->success ? 1.f : 0.f;
            bad = !s || m2_traj_push_action(t, st->raw, r, k == end ? 1.f : 0.f, err) || m2_traj_push_state(t, s, err);
            free(s);
        }
        if (bad) {
            if (!err || !err->code) m2_errorf(err, M2_ENOMEM, "loop: out of memory");
            for (int q = 0; q < j; q++) m2_traj_free(&v[q]);
            free(v);
            return -1;
        }
    }
    *segs = v;
    *n = j;
    return 0;
}

int m2_episode_planner_traj(const m2_episode *ep, const m2_loop_cfg *cfg, m2_traj *tr, m2_err *err) {
    m2_traj_init(tr);
    char *hp = high_context(cfg, ep->task ? ep->task : "");
    int rc = hp ? m2_traj_set_prompt(tr, hp, err) : m2_errorf(err, M2_ENOMEM, "loop: out of memory");
    free(hp);
    for (int i = 0; i < ep->n_sub && !rc && !cfg->flat; i++) {
        const m2_subgoal_rec *sg = &ep->sub[i];
        if (!sg->state || !sg->text) continue;   /* no System 1 call made it */
        rc = m2_traj_push_state(tr, sg->state, err);
        if (!rc) rc = m2_traj_push_action(tr, sg->text, 0.f, 0.f, err);
    }
    if (rc) m2_traj_free(tr);
    return rc;
}

long m2_context_tokens(const m2_tok_iface *tok, const m2_traj *ctx, m2_err *err) {
    long n = tok->bos == M2_BOS_SEQUENCE ? 1 : 0;
    int c = tok->encode(tok->ctx, ctx->prompt ? ctx->prompt : "", NULL, 0, err);
    if (c < 0) return -1;
    n += c;
    for (int i = 0; i < ctx->n_states; i++) {
        if ((c = tok->encode(tok->ctx, ctx->states[i], NULL, 0, err)) < 0) return -1;
        n += c + (tok->state_sep ? 1 : 0);
    }
    for (int i = 0; i < ctx->n_actions; i++) {
        if ((c = tok->encode(tok->ctx, ctx->actions[i], NULL, 0, err)) < 0) return -1;
        n += c + 1;
    }
    return n;
}
