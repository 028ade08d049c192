/* The Multi² hierarchy as a two-agent TeamTR team (issue #16 item 1c; method teamtr_hier): the
 * `teamtr_hier` stage takes the planner (sys1) and executor (sys2) adapters the earlier stages of the
 * multi2 plan trained (System 1 SFT; System 2 warm-up and offline RL — or a multi2 run's, through
 * run.reuse_from), and runs teamtr.stages stages of agent-by-agent updates on fresh episodes of the
 * environment's train split played through the control loop (agent/team_hier.h; pipe/team_run.h:
 * metrics under teamtr/sys1/ and teamtr/sys2/, checkpoints, the certificate beside the measured gain
 * on the ID split's first teamtr.eval_tasks episodes). teamtr.hier.sys1 frozen trains the executor
 * alone with the planner fixed: Multi²'s online stage's setting, with TeamTR's update in place of
 * AWAC + KL. Both adapters go to artifacts/teamtr_hier/ for the eval stage; eval.json holds the
 * stages' summary with the measured success per task type.
 *
 * Rollouts sample both roles at teamtr.temperature (the planner too: a trained agent must explore),
 * with eval.max_new_tokens per output, eval.step_limit steps and sys2.subgoal_budget per sub-goal, as
 * the online stage and the evaluation play. */
#include <stdlib.h>
#include <string.h>
#include "pipe/pipe.h"
#include "pipe/team_run.h"
#include "pipe/world.h"

/* A frozen copy of a (its snapshot, or its initial policy): same config, its own name. */
static m2_adapter *frozen_copy(pw_world *w, m2_adapter *a, const char *suffix, m2_err *err) {
    m2_lora_config lc = a->cfg;
    char name[sizeof lc.name + 16];
    snprintf(name, sizeof name, "%s_%s", a->cfg.name, suffix);
    snprintf(lc.name, sizeof lc.name, "%.*s", (int)sizeof lc.name - 1, name);
    m2_adapter *c = m2_adapter_add(w->m, &lc, 0, err);
    if (!c || m2_adapter_copy_weights(c, a, err) || m2_adapter_set_trainable(c, 0, err)) return NULL;
    return c;
}

int m2_stage_teamtr_hier(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    pw_team_run r = {.cfg = cfg, .loop = pw_team_loop_cfg(cfg)};
    r.loop.gen.max_new_tokens = (int)cfg->eval_max_new_tokens;   /* as the online stage and the evaluation */
    m2_episode_order train = {0}, test = {0};
    m2_team_hier h_train = {0}, h_test = {0};
    const char **labels = NULL;
    int rc = -1, frozen = cfg->teamtr_hier_sys1 == M2_TEAMTR_HIER_SYS1_FROZEN;
    const char *task = cfg->env_task[0] ? cfg->env_task : NULL;
    if (pw_is_flat(cfg) || m2_method_of(cfg)->shared_adapter) {
        m2_errorf(err, M2_ECONFIG, "teamtr_hier: the hierarchy needs two adapters (sys1, sys2)");
        goto out;
    }
    m2_adapter *a[M2_TEAM_HIER_AGENTS];
    a[M2_TEAM_HIER_PLANNER] = pw_adapter(&w, pw_adapter_name(cfg, M2_ROLE_SYS1), ctx->name, 0, err);
    a[M2_TEAM_HIER_EXECUTOR] = a[0] ? pw_adapter(&w, pw_adapter_name(cfg, M2_ROLE_SYS2), ctx->name, 0, err) : NULL;
    if (!a[0] || !a[1]) goto out;
    static const char *const names[M2_TEAM_HIER_AGENTS] = {"sys1", "sys2"};
    r.tt.n = M2_TEAM_HIER_AGENTS;
    for (int k = 0; k < M2_TEAM_HIER_AGENTS; k++) {
        int train_it = k == M2_TEAM_HIER_EXECUTOR || !frozen;
        if (m2_adapter_set_trainable(a[k], train_it, err)) goto out;
        r.tt.model[k] = w.m;
        r.tt.adapter[k] = a[k];
        r.agent_name[k] = names[k];
        if (!(r.tt.old[k] = frozen_copy(&w, a[k], "old", err))) goto out;
        if (cfg->teamtr_kl_init > 0 && !(r.tt.init[k] = frozen_copy(&w, a[k], "init", err))) goto out;
        if (train_it) r.update[r.n_update++] = k;
    }
    if (m2_episode_order_build(w.env, task, M2_SPLIT_TRAIN, &train, err) ||
        m2_episode_order_build(w.env, task, M2_SPLIT_ID, &test, err))
        goto out;
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = (int)cfg->eval_step_limit;
    lc.subgoal_budget = (int)cfg->sys2_subgoal_budget;
    lc.env_name = cfg->env_name;
    lc.low_parts = pw_low_parts(cfg);
    lc.action_mode = (m2_action_mode)cfg->sys2_action_mode;
    h_train = (m2_team_hier){.env = w.env, .order = &train, .split = M2_SPLIT_TRAIN, .model = w.m, .sys1 = a[0],
                             .sys2 = a[1], .tok = &w.tok, .loop = lc};
    h_test = h_train;
    h_test.order = &test;
    h_test.split = M2_SPLIT_ID;
    r.tt.src = m2_team_hier_source(&h_train);
    r.n_train = train.n;
    r.test = m2_team_hier_source(&h_test);
    r.n_test = cfg->teamtr_eval_tasks < test.n ? (int)cfg->teamtr_eval_tasks : test.n;
    if (!(labels = calloc((size_t)(r.n_test > 0 ? r.n_test : 1), sizeof *labels))) {
        m2_errorf(err, M2_ENOMEM, "teamtr_hier: out of memory");
        goto out;
    }
    for (int i = 0; i < r.n_test; i++) labels[i] = m2_episode_order_at(&test, i)->type;
    r.test_label = labels;
    char label[640];
    snprintf(label, sizeof label, "the hierarchy on %s (System 1 %s)", cfg->env_name, frozen ? "frozen" : "trained");
    if (pw_team_run_stages(ctx, &r, label, err)) goto out;
    for (int k = 0; k < M2_TEAM_HIER_AGENTS; k++)
        if (m2_stage_writes(ctx) && pw_save_adapter(&w, a[k], ctx->artifacts, err)) goto out;
    cJSON *o = pw_team_run_summary(&r);
    if (o) {
        cJSON_AddStringToObject(o, "env", cfg->env_name);
        cJSON_AddStringToObject(o, "sys1", frozen ? "frozen" : "train");
        cJSON_AddNumberToObject(o, "episodes_measured", r.n_test);
    }
    if (pw_team_write_summary(ctx, o, err)) goto out;
    if (ctx->out)
        fprintf(ctx->out, "teamtr_hier: sampled ID success %.3f -> %.3f; adapters -> %s\n", r.J0, r.J, ctx->artifacts);
    rc = 0;
out:
    pw_team_run_free(&r);
    m2_team_hier_free(&h_train);
    m2_team_hier_free(&h_test);
    free(labels);
    m2_episode_order_free(&train);
    m2_episode_order_free(&test);
    pw_close(&w);
    return rc;
}
