#include "agent/expert.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void m2_expert_plan_free(m2_expert_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_actions; i++) free(p->actions[i]);
    free(p->actions);
    free(p->sub);
    memset(p, 0, sizeof *p);
}

int m2_expert_plan_build(const m2_env_class *cls, const char *data_path, const char *task,
                         m2_split split, int index, uint64_t seed, int max_steps,
                         const m2_tok_iface *tok, m2_expert_plan *p, m2_err *err) {
    memset(p, 0, sizeof *p);
    p->tok = tok;
    if (max_steps <= 0) return m2_errorf(err, M2_ECONFIG, "expert plan: max_steps %d must be > 0", max_steps);
    m2_env *env = NULL;
    if (cls->create(&env, data_path, err)) return -1;
    char **obs = calloc((size_t)max_steps, sizeof *obs);
    p->actions = calloc((size_t)max_steps, sizeof *p->actions);
    p->sub = calloc((size_t)max_steps, sizeof *p->sub);
    int rc = -1;
    if (!obs || !p->actions || !p->sub) { m2_errorf(err, M2_ENOMEM, "expert plan: out of memory"); goto out; }
    m2_step_result sr;
    if (cls->reset(env, task, split, index, seed, &sr, err)) goto out;
    while (!sr.done && p->n_actions < max_steps) {
        char buf[1024];
        if (cls->oracle_next(env, buf, sizeof buf, err)) break;   /* no expert action: stop here */
        if (cls->step(env, buf, &sr)) { m2_errorf(err, M2_EIO, "expert plan: step \"%s\" failed", buf); goto out; }
        p->actions[p->n_actions] = strdup(buf);
        obs[p->n_actions] = strdup(sr.observation);
        if (!p->actions[p->n_actions] || !obs[p->n_actions]) { m2_errorf(err, M2_ENOMEM, "expert plan: out of memory"); goto out; }
        p->n_actions++;
    }
    if (p->n_actions == 0) { m2_errorf(err, M2_EINVAL, "expert plan: the oracle gave no action for index %d", index); goto out; }
    m2_err_clear(err);
    p->n_sub = cls->segment(env, (const char *const *)p->actions, (const char *const *)obs, p->n_actions, p->sub, max_steps);
    if (p->n_sub <= 0) { m2_errorf(err, M2_EINVAL, "expert plan: the segmenter returned no sub-goal"); goto out; }
    rc = 0;
out:
    if (obs) for (int i = 0; i < max_steps; i++) free(obs[i]);
    free(obs);
    cls->destroy(env);
    if (rc) m2_expert_plan_free(p);
    return rc;
}

static int count(const m2_expert_plan *p, const m2_traj *ctx, const char *out, int *np, int *ng, m2_err *err) {
    *np = *ng = 0;
    if (!p->tok) return 0;
    long n = m2_context_tokens(p->tok, ctx, err);
    if (n < 0) return -1;
    int g = p->tok->encode(p->tok->ctx, out, NULL, 0, err);
    if (g < 0) return -1;
    *np = (int)n;
    *ng = g + 1;   /* the EOS that ends a generation */
    return 0;
}

static int sys1_generate(void *ctx, m2_role role, const m2_traj *context, char **out, int *np, int *ng,
                         m2_err *err) {
    m2_expert_plan *p = ctx;
    int k = p->next_sub < p->n_sub ? p->next_sub : p->n_sub - 1;
    /* skip the sub-goals System 2 has already finished (the loop may have moved past them) */
    while (k + 1 < p->n_sub && p->sub[k].last < p->next_action) k++;
    p->next_sub = k + 1;
    if (!(*out = strdup(p->sub[k].text))) return m2_errorf(err, M2_ENOMEM, "expert: out of memory");
    return count(p, context, *out, np, ng, err);
}

static int sys2_generate(void *ctx, m2_role role, const m2_traj *context, char **out, int *np, int *ng,
                         m2_err *err) {
    m2_expert_plan *p = ctx;
    int a = p->next_action < p->n_actions ? p->next_action : p->n_actions - 1;
    int last = 0;
    for (int k = 0; k < p->n_sub; k++) if (p->sub[k].last == a) last = 1;
    p->next_action = a + 1;
    size_t n = strlen(p->actions[a]) + 8;
    if (!(*out = malloc(n))) return m2_errorf(err, M2_ENOMEM, "expert: out of memory");
    snprintf(*out, n, "%s; %s", p->actions[a], last ? "True" : "False");
    return count(p, context, *out, np, ng, err);
}

m2_policy m2_expert_sys1_policy(m2_expert_plan *plan) { return (m2_policy){.ctx = plan, .generate = sys1_generate}; }
m2_policy m2_expert_sys2_policy(m2_expert_plan *plan) { return (m2_policy){.ctx = plan, .generate = sys2_generate}; }
