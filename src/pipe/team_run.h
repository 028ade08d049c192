/* Internal to the pipeline: the stage loop every TeamTR stage shares (pipe/stage_teamtr.c, the
 * shared-context team over questions; pipe/stage_team_hier.c, the Multi² hierarchy in an
 * environment). The caller sets up the agents, their snapshots and the two rollout sources (train
 * and test, agent/team.h); this runs teamtr.stages stages of agent-by-agent updates
 * (algo/team_train.h), each followed by the team's measured gain on the test source beside the
 * stage's certificate.
 *
 * Global steps: one per agent update (stage s, position j: base + s*n_update + j + 1). Metrics per
 * update under teamtr/<agent>/ (agent1..agentN, or the caller's names): surrogate_gain (L^), kl
 * (D^), kl_raw (before the line search), out_of_region, backtracks, rolled_back, reward, loss,
 * clip_frac, tokens. Per stage (at its last update's step) under teamtr/: certificate,
 * measured_gain, eval_success, rollouts, cum_bound, cum_gain, out_of_region_rate, rank_corr and
 * violation_rate over the stages so far.
 *
 * Checkpoints at every stage end (the stale variants' cached rollouts live within a stage, so a
 * stage boundary holds no rollouts): every agent's adapter with its AdamW moments and step, the
 * stages done, the measured success (overall and per test task, before the first stage and now)
 * and the per-stage history. Every random stream is derived from run.seed, the stage and the
 * position in it, so nothing else is needed to continue bit for bit. run.ckpt_every is not used:
 * a stage end is the only point without cached rollouts. */
#ifndef M2_PIPE_TEAM_RUN_H
#define M2_PIPE_TEAM_RUN_H
#include <cjson/cJSON.h>
#include "pipe/world.h"

typedef struct pw_team_run {
    /* set by the caller */
    const m2_run_config *cfg;
    m2_teamtr tt;                        /* agents (adapter, model), snapshots, init copies, train source */
    m2_teamtr_cfg loop;                  /* pw_team_loop_cfg, possibly adjusted; the measured gain samples
                                          * with its sampler and message length */
    const char *agent_name[M2_TEAM_MAX]; /* metric names (NULL: "agentK") */
    int update[M2_TEAM_MAX], n_update;   /* the agents trained; a stage's sigma orders these */
    int n_train;                         /* tasks of the train source */
    m2_team_source test;                 /* the measured gain's source */
    int n_test;                          /* its tasks measured (teamtr.eval_tasks, at most its size) */
    const char *const *test_label;       /* per test task a difficulty label (the eval.json breakdown) */
    /* the run's state (pw_team_run_stages) */
    int stages, done;
    int64_t base;                        /* global step before the first update */
    double J, J0;                        /* the last measured success; before the first stage */
    double *task_J, *task_J0;            /* the same per test task [n_test] */
    double *cert, *gain;                 /* [stages] */
    long updates, outside;               /* updates so far, of which out of the region */
} pw_team_run;

/* The loop's settings from the config (teamtr.*). */
m2_teamtr_cfg pw_team_loop_cfg(const m2_run_config *cfg);

/* Runs (or, with ctx->resume, continues) the stages; a label for the console ("2 agents (chain)"). */
int pw_team_run_stages(m2_stage_ctx *ctx, pw_team_run *r, const char *label, m2_err *err);

/* eval.json's common fields: variant, agents, success before/after (overall and per difficulty
 * label), per-stage certificates and gains, rank correlation, violation rate, out-of-region rate. */
cJSON *pw_team_run_summary(const pw_team_run *r);

/* Writes o (consumed) to artifacts/<stage>/eval.json (rank 0 under MPI; the others drop it). */
int pw_team_write_summary(m2_stage_ctx *ctx, cJSON *o, m2_err *err);

void pw_team_run_free(pw_team_run *r);   /* the state arrays and the loop's ctxs */

#endif
