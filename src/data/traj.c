#include "data/traj.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"

#define M2_ACTION_CAP 8192

void m2_env_traj_free(m2_env_traj *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) { free(t->steps[i].action); free(t->steps[i].observation); }
    for (int i = 0; i < t->n_subgoals; i++) free(t->subgoals[i].text);
    free(t->subgoals);
    free(t->steps); free(t->task); free(t->task_text); free(t->first_obs);
    memset(t, 0, sizeof *t);
}

int m2_policy_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "oracle") || !strcmp(s, "expert")) return M2_POLICY_ORACLE;
    if (!strcmp(s, "random")) return M2_POLICY_RANDOM;
    if (!strcmp(s, "medium")) return M2_POLICY_MEDIUM;
    return -1;
}

const char *m2_policy_name(m2_policy_kind k) {
    return k == M2_POLICY_ORACLE ? "oracle" : k == M2_POLICY_RANDOM ? "random" : k == M2_POLICY_MEDIUM ? "medium" : "?";
}

static int push_step(m2_env_traj *t, const char *action, const m2_step_result *r) {
    if (t->n == t->cap) {
        int nc = t->cap ? t->cap * 2 : 32;
        m2_env_step_rec *s = realloc(t->steps, (size_t)nc * sizeof *s);
        if (!s) return -1;
        t->steps = s; t->cap = nc;
    }
    m2_env_step_rec *s = &t->steps[t->n];
    s->action = strdup(action);
    s->observation = strdup(r->observation ? r->observation : "");
    if (!s->action || !s->observation) { free(s->action); free(s->observation); return -1; }
    s->reward = r->reward; s->score = r->score; s->done = r->done; s->won = r->won; s->valid = r->valid;
    t->n++;
    t->ret += r->reward;
    t->score = r->score;
    t->won = r->won;
    return 0;
}

static m2_env_subgoal_rec *push_subgoal(m2_env_traj *t, const char *text, int first) {
    if (t->n_subgoals == t->cap_subgoals) {
        int nc = t->cap_subgoals ? t->cap_subgoals * 2 : 16;
        m2_env_subgoal_rec *s = realloc(t->subgoals, (size_t)nc * sizeof *s);
        if (!s) return NULL;
        t->subgoals = s; t->cap_subgoals = nc;
    }
    m2_env_subgoal_rec *s = &t->subgoals[t->n_subgoals];
    *s = (m2_env_subgoal_rec){.text = strdup(text), .first = first, .last = first - 1};
    if (!s->text) return NULL;
    t->n_subgoals++;
    return s;
}

/* Medium noise, wrong number: the last integer of the expert action moved by 1 or 2 (never below
 * 0, never unchanged). Returns 0 if the action has no digit. */
static int corrupt_number(const char *expert, char *out, size_t cap, m2_rng *rng) {
    size_t n = strlen(expert);
    long end = -1;
    for (long i = (long)n - 1; i >= 0; i--) if (expert[i] >= '0' && expert[i] <= '9') { end = i; break; }
    if (end < 0 || n + 24 > cap) return 0;
    long beg = end;
    while (beg > 0 && expert[beg - 1] >= '0' && expert[beg - 1] <= '9') beg--;
    long long v = 0;
    for (long i = beg; i <= end && v < 100000000000LL; i++) v = v * 10 + (expert[i] - '0');
    long long d = 1 + (long long)m2_rng_below(rng, 2);
    long long w = (v >= d && m2_rng_below(rng, 2)) ? v - d : v + d;
    int k = snprintf(out, cap, "%.*s%lld%s", (int)beg, expert, w, expert + end + 1);
    return k > 0 && (size_t)k < cap;
}

int m2_rollout(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
               const m2_rollout_opts *opts, m2_env_traj *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    const m2_env_class *c = env->cls;
    out->env_name = c->name;
    out->split = split; out->index = index; out->seed = seed;
    m2_step_result r;
    if (c->reset(env, task, split, index, seed, &r, err)) return -1;
    out->task = task ? strdup(task) : NULL;
    out->task_text = strdup(c->task_text(env));
    out->first_obs = strdup(r.observation ? r.observation : "");
    if ((task && !out->task) || !out->task_text || !out->first_obs) goto oom;
    m2_rng rng;
    m2_rng_seed_stream(&rng, opts->policy_seed, ((uint64_t)split << 32) ^ (uint64_t)(uint32_t)index);
    char *act = malloc(M2_ACTION_CAP), *alt = malloc(M2_ACTION_CAP);
    if (!act || !alt) { free(act); free(alt); goto oom; }
    int rc = 0;
    int hier = opts->hierarchical && c->subgoal_next && c->subgoal_done;
    m2_env_subgoal_rec *sg = NULL;   /* the sub-goal being pursued (hierarchical) */
    int sg_steps = 0;
    for (int step = 0; step < opts->max_steps && !r.done; step++) {
        if (hier && !sg) {
            char text[512];
            m2_err serr = {0};
            if (c->subgoal_next(env, text, sizeof text, &serr)) break;   /* the expert has no sub-goal: over */
            if (!(sg = push_subgoal(out, text, step))) { free(act); free(alt); goto oom; }
            if (c->subgoal_begin) c->subgoal_begin(env, text);
            sg_steps = 0;
        }
        const char *a = act;
        m2_err oerr = {0};
        if (opts->policy == M2_POLICY_RANDOM) {
            const char *const *adm; int na = 0;
            if (!c->admissible || c->admissible(env, &adm, &na) || na <= 0) break;
            snprintf(act, M2_ACTION_CAP, "%s", adm[m2_rng_below(&rng, (uint32_t)na)]);
        } else {
            if (!c->oracle_next || c->oracle_next(env, act, M2_ACTION_CAP, &oerr)) break;
            if (opts->policy == M2_POLICY_MEDIUM && m2_rng_uniform(&rng) < opts->noise) {
                /* noise: half the time a random admissible action, half the time the expert action
                 * with a wrong number; the oracle replans from whatever state results */
                const char *const *adm; int na = 0;
                int want_adm = m2_rng_below(&rng, 2) == 0;
                int have_adm = c->admissible && !c->admissible(env, &adm, &na) && na > 0;
                if (want_adm && have_adm) { snprintf(alt, M2_ACTION_CAP, "%s", adm[m2_rng_below(&rng, (uint32_t)na)]); a = alt; }
                else if (corrupt_number(act, alt, M2_ACTION_CAP, &rng)) a = alt;
                else if (have_adm) { snprintf(alt, M2_ACTION_CAP, "%s", adm[m2_rng_below(&rng, (uint32_t)na)]); a = alt; }
                if (a == alt) out->noisy_steps++;
            }
        }
        if (c->step(env, a, &r)) { rc = m2_errorf(err, M2_EINVAL, "%s: step failed", c->name); break; }
        if (push_step(out, a, &r)) { free(act); free(alt); goto oom; }
        if (sg) {
            sg = &out->subgoals[out->n_subgoals - 1];   /* push_step does not move it; be explicit */
            sg->last = step;
            sg_steps++;
            sg->success = c->subgoal_done(env, sg->text) == 1;
            if (sg->success || r.done || (opts->subgoal_budget > 0 && sg_steps >= opts->subgoal_budget)) sg = NULL;
        }
    }
    /* a sub-goal begun on the last step the limit allowed, with no step of its own, is no segment */
    if (hier && out->n_subgoals && out->subgoals[out->n_subgoals - 1].last < out->subgoals[out->n_subgoals - 1].first) {
        free(out->subgoals[--out->n_subgoals].text);
    }
    free(act); free(alt);
    return rc;
oom:
    return m2_errorf(err, M2_ENOMEM, "rollout: out of memory");
}
