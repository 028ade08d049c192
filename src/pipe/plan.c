#include "pipe/plan.h"
#include <string.h>
#include "pipe/pipe.h"

/* ---------------------------------------------------------------- the stage table */

/* Keys every stage that runs the model reads: the environment, the datasets' form, the base, the
 * adapters, the optimiser, the seed and the thread count (row-parallel sums depend on it). */
#define MODEL_STAGE_READS "env.", "data.", "prompt.", "model.", "lora.", "optim.", "run.seed", "run.threads"
/* Expert/medium data generation (pre-training trains on its text): episodes are rolled out with the
 * environment step budget of eval.step_limit; the records hold System 2's contexts (prompt.*). */
#define DATA_READS "env.", "data.path", "data.expert_episodes", "data.medium_episodes", "data.medium_noise", \
    "eval.step_limit", "sys2.subgoal_budget", "prompt.", "run.seed"

/* A team run (method teamtr) pre-trains on its task family's worked transcripts instead: the questions
 * and the team's shape decide the corpus (not teamtr.variant: the variants of one team share a base). */
#define TEAM_CORPUS_READS "teamtr.task.", "teamtr.agents", "teamtr.protocol", "teamtr.order", "teamtr.turns"

/* System 2's action mode changes every stage that lets System 2 act: rollouts, evaluation and the
 * offline anchor's sampled actions. */
#define ACTION_READS "sys2.action_mode", "sys2.action_logprob"

static const char *const reads_pretrain[] = {DATA_READS, "data.state_sep", "model.", "pretrain.", "optim.",
                                             "run.threads", TEAM_CORPUS_READS, NULL};
static const char *const reads_data[] = {DATA_READS, NULL};
static const char *const reads_sys1_sft[] = {MODEL_STAGE_READS, "sys1.sft.", NULL};
/* The SFT loop shared with System 1 also takes its improvement thresholds. */
static const char *const reads_sys2_warmup[] = {MODEL_STAGE_READS, "sys2.warmup.", "sys1.sft.min_delta",
                                                "sys1.sft.min_rel_improve", NULL};
/* Sampled anchor actions are generated with eval.max_new_tokens. */
static const char *const reads_sys2_offline[] = {MODEL_STAGE_READS, "heads.", "sys2.offline.", "eval.max_new_tokens",
                                                 ACTION_READS, "sys2.probe_states", NULL};
/* Rollouts use the evaluation's action length and step budget; the critic update the offline
 * expectile and head-gradient switch; the learning curves (sys2.online.eval_every) play the eval
 * stage's episodes, seeded from eval.seed. */
static const char *const reads_sys2_online[] = {MODEL_STAGE_READS, "heads.", "sys2.online.", "sys2.subgoal_budget", "sys2.offline.expectile",
                                                "sys2.offline.head_grad_to_adapter", "eval.max_new_tokens",
                                                "eval.step_limit", "eval.seed", ACTION_READS, "sys2.probe_states", NULL};
/* The TeamTR stages read every teamtr.* key and the model (no env data, no other method's keys). */
static const char *const reads_teamtr[] = {"env.", "model.", "optim.grad_clip", "optim.beta1", "optim.beta2", "optim.eps",
                                           "run.seed", "run.threads", "teamtr.", NULL};
/* The hierarchical team plays episodes like the online stage (its action length, step budget and
 * sub-goal budget) and trains with the teamtr.* keys. */
static const char *const reads_teamtr_hier[] = {MODEL_STAGE_READS, "teamtr.", "sys2.subgoal_budget", "eval.max_new_tokens",
                                                "eval.step_limit", ACTION_READS, NULL};
static const char *const reads_eval[] = {MODEL_STAGE_READS, "eval.", "sys2.subgoal_budget", ACTION_READS, NULL};
static const char *const reads_report[] = {NULL};   /* the eval records only */

const m2_stage m2_pipe_stages[M2_N_STAGES] = {
    [M2_STAGE_PRETRAIN] = {.name = "pretrain", .fn = m2_stage_pretrain, .help = "pre-train the tiny base on expert text",
                           .reads = reads_pretrain},
    [M2_STAGE_DATA] = {.name = "data", .fn = m2_stage_data, .help = "expert trajectories and hierarchical datasets",
                       .reads = reads_data, .rank0_only = 1},
    [M2_STAGE_SYS1_SFT] = {.name = "sys1_sft", .fn = m2_stage_sys1_sft, .help = "System 1 (planner) SFT",
                           .reads = reads_sys1_sft},
    [M2_STAGE_SYS2_WARMUP] = {.name = "sys2_warmup", .fn = m2_stage_sys2_warmup,
                              .help = "System 2 (executor) warm-up SFT", .reads = reads_sys2_warmup},
    [M2_STAGE_SYS2_OFFLINE] = {.name = "sys2_offline", .fn = m2_stage_sys2_offline,
                               .help = "System 2 offline RL (IQL critic, anchored actor)", .reads = reads_sys2_offline},
    [M2_STAGE_SYS2_ONLINE] = {.name = "sys2_online", .fn = m2_stage_sys2_online,
                              .help = "System 2 online refinement (AWAC + KL)", .reads = reads_sys2_online},
    [M2_STAGE_TEAMTR] = {.name = "teamtr", .fn = m2_stage_teamtr,
                         .help = "TeamTR: agent-by-agent PPO-clip on fresh team rollouts inside a token-KL trust region",
                         .reads = reads_teamtr},
    [M2_STAGE_TEAMTR_HIER] = {.name = "teamtr_hier", .fn = m2_stage_teamtr_hier,
                              .help = "the Multi2 hierarchy as a two-agent TeamTR team: planner and executor in the environment",
                              .reads = reads_teamtr_hier},
    [M2_STAGE_EVAL] = {.name = "eval", .fn = m2_stage_eval, .help = "pass@1 evaluation per split", .reads = reads_eval},
    [M2_STAGE_REPORT] = {.name = "report", .fn = m2_stage_report, .help = "results table and charts",
                         .reads = reads_report, .rank0_only = 1},
};
const int m2_pipe_n_stages = M2_N_STAGES;

/* ---------------------------------------------------------------- the method table */

#define SKIP(id) (1u << M2_STAGE_##id)

const m2_method_info m2_methods[M2_N_METHODS] = {
    [M2_METHOD_MULTI2] = {.help = "System 1 SFT; System 2 warm-up, offline RL with the anchor, online AWAC + KL"},
    [M2_METHOD_FLAT] = {.skip = SKIP(SYS1_SFT), .flat = 1,
                        .help = "no planner: one policy acting on whole tasks, trained like System 2"},
    [M2_METHOD_SHARED_ADAPTER] = {.shared_adapter = 1, .help = "both roles train and use ONE adapter"},
    [M2_METHOD_SFT_ONLY] = {.skip = SKIP(SYS2_OFFLINE) | SKIP(SYS2_ONLINE),
                            .help = "System 2 stops after its warm-up SFT"},
    [M2_METHOD_OFFLINE_ONLY] = {.skip = SKIP(SYS2_ONLINE), .help = "System 2 stops after offline RL"},
    [M2_METHOD_RL_ONLY] = {.skip = SKIP(SYS2_WARMUP), .help = "System 2 starts RL from the base, without warm-up SFT"},
    [M2_METHOD_ROLE_SWAP] = {.role_swap = 1, .help = "trained as multi2; at inference the roles swap adapters"},
    [M2_METHOD_NO_ANCHOR] = {.no_anchor = 1, .help = "offline RL with lambda = 0 (vanilla IQL/AWR)"},
    [M2_METHOD_NO_KL] = {.no_kl = 1, .help = "online RL with eta = 0 (vanilla AWAC)"},
    [M2_METHOD_TEAMTR] = {.skip = SKIP(DATA) | SKIP(SYS1_SFT) | SKIP(SYS2_WARMUP) | SKIP(SYS2_OFFLINE) | SKIP(SYS2_ONLINE) |
                                  SKIP(EVAL) | SKIP(REPORT),
                          .team = 1,
                          .help = "a team sharing one context, fine-tuned agent by agent (teamtr.*; pretrain on its tasks)"},
    [M2_METHOD_TEAMTR_HIER] = {.skip = SKIP(SYS2_ONLINE), .hier_team = 1,
                               .help = "multi2 up to offline RL, then planner and executor as a TeamTR team in the environment "
                                       "(teamtr.*, teamtr.hier.sys1)"},
};

const m2_method_info *m2_method_of(const m2_run_config *cfg) {
    int m = cfg->method >= 0 && cfg->method < M2_N_METHODS ? cfg->method : M2_METHOD_MULTI2;
    return &m2_methods[m];
}

double m2_run_offline_lambda(const m2_run_config *cfg) {
    return m2_method_of(cfg)->no_anchor ? 0.0 : cfg->sys2_offline_lambda;
}

double m2_run_online_eta(const m2_run_config *cfg) {
    return m2_method_of(cfg)->no_kl ? 0.0 : cfg->sys2_online_eta;
}

/* ---------------------------------------------------------------- plans */

int m2_stage_find(const char *name) {
    for (int i = 0; i < M2_N_STAGES; i++) if (!strcmp(m2_stage_names[i], name)) return i;
    return -1;
}

int m2_run_stage_plan(const m2_run_config *cfg, const char **stages, int cap) {
    int n = 0;
    if (*cfg->run_stages) {
        char item[64];
        for (int i = 0; m2_cfg_list_item(cfg->run_stages, i, item, sizeof item) && n < cap; i++) {
            int k = m2_stage_find(item);
            if (k >= 0) stages[n++] = m2_stage_names[k];
        }
        return n;
    }
    unsigned skip = m2_method_of(cfg)->skip;
    if (!m2_method_of(cfg)->team) skip |= SKIP(TEAMTR);   /* only team methods run the TeamTR stage */
    if (!m2_method_of(cfg)->hier_team) skip |= SKIP(TEAMTR_HIER);
    if (strcmp(cfg->model_base, "tiny")) skip |= SKIP(PRETRAIN);   /* a real backbone: nothing to pre-train */
    for (int k = 0; k < M2_N_STAGES && n < cap; k++)
        if (!(skip & (1u << k))) stages[n++] = m2_stage_names[k];
    return n;
}

/* ---------------------------------------------------------------- stage reuse */

static int key_matches(const char *pattern, const char *key) {
    size_t n = strlen(pattern);
    return n && pattern[n - 1] == '.' ? !strncmp(key, pattern, n) : !strcmp(key, pattern);
}

int m2_stage_reads_key(m2_stage_id stage, const char *key) {
    if (stage < 0 || stage >= M2_N_STAGES) return 0;
    for (const char *const *r = m2_pipe_stages[stage].reads; r && *r; r++)
        if (key_matches(*r, key)) return 1;
    return 0;
}

int m2_key_steers_only(const char *key) {
    return (!strncmp(key, "run.", 4) && strcmp(key, "run.seed") && strcmp(key, "run.threads")) ||
           !strcmp(key, "model.recompute");
}

/* What a method does in a stage, as a label: two methods with the same label run the stage the same
 * way (given the same earlier stages and config). */
static const char *stage_role(m2_stage_id stage, const m2_run_config *cfg) {
    const m2_method_info *m = m2_method_of(cfg);
    if (m->team) return "team";   /* its pre-training corpus is its task family's */
    if (stage <= M2_STAGE_DATA) return "common";
    if (m->shared_adapter) return "shared";
    if (m->flat) return "flat";
    if (stage == M2_STAGE_SYS2_OFFLINE && m->no_anchor) return "no_anchor";
    if (stage == M2_STAGE_SYS2_ONLINE && m->no_kl) return "no_kl";
    if (stage >= M2_STAGE_EVAL) return m2_method_names[cfg->method];   /* each method its own records */
    return "sys";
}

/* The first key (schema order) that differs between a and b and that `stage` reads; NULL if none.
 * A key no stage declares counts as read by every stage (conservative). */
static const char *differing_key_read(const m2_run_config *a, const m2_run_config *b, m2_stage_id stage) {
    const m2_cfg_schema *s = m2_run_config_schema();
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *f = &s->fields[i];
        if (!strcmp(f->key, "method") || m2_key_steers_only(f->key)) continue;
        int declared = 0;
        for (int k = 0; k < M2_N_STAGES && !declared; k++) declared = m2_stage_reads_key((m2_stage_id)k, f->key);
        if (declared && !m2_stage_reads_key(stage, f->key)) continue;
        char va[M2_CFG_STR_MAX + 64], vb[M2_CFG_STR_MAX + 64];
        if (strcmp(m2_cfg_format_value(f, a, va, sizeof va), m2_cfg_format_value(f, b, vb, sizeof vb))) return f->key;
    }
    return NULL;
}

int m2_run_reusable_prefix(const m2_run_config *src_cfg, const m2_run_config *cfg, const char **stages, int cap,
                           char *why, size_t why_cap) {
    const char *a[M2_N_STAGES], *b[M2_N_STAGES];
    int na = m2_run_stage_plan(src_cfg, a, M2_N_STAGES), nb = m2_run_stage_plan(cfg, b, M2_N_STAGES), n = 0;
    if (why && why_cap) why[0] = 0;
    while (n < na && n < nb && n < cap && !strcmp(a[n], b[n])) {
        m2_stage_id st = (m2_stage_id)m2_stage_find(b[n]);
        const char *key = differing_key_read(src_cfg, cfg, st);
        if (key) {
            if (why) snprintf(why, why_cap, "%s: the two configs differ in %s", b[n], key);
            break;
        }
        if (strcmp(stage_role(st, src_cfg), stage_role(st, cfg))) {
            if (why)
                snprintf(why, why_cap, "%s: method %s runs it differently from %s", b[n], m2_method_names[cfg->method],
                         m2_method_names[src_cfg->method]);
            break;
        }
        stages[n] = b[n];
        n++;
    }
    if (why && !why[0] && n < nb) {
        if (n < na) snprintf(why, why_cap, "%s: the plans differ here (%s vs %s)", b[n], a[n], b[n]);
        else snprintf(why, why_cap, "%s: not in the plan of %s", b[n], m2_method_names[src_cfg->method]);
    }
    return n;
}

/* ---------------------------------------------------------------- resume overrides */

static void join_plan(const char *const *p, int n, char *out, size_t cap) {
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s", i ? "," : "", p[i]);
    }
}

int m2_run_resume_conflict(const m2_run_config *saved, const m2_run_config *cfg, char *why, size_t cap) {
    const char *a[M2_N_STAGES], *b[M2_N_STAGES];
    int na = m2_run_stage_plan(saved, a, M2_N_STAGES), nb = m2_run_stage_plan(cfg, b, M2_N_STAGES);
    char pa[256], pb[256];
    join_plan(a, na, pa, sizeof pa);
    join_plan(b, nb, pb, sizeof pb);
    const m2_cfg_schema *s = m2_run_config_schema();
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *f = &s->fields[i];
        char va[M2_CFG_STR_MAX + 64], vb[M2_CFG_STR_MAX + 64];
        if (!strcmp(m2_cfg_format_value(f, saved, va, sizeof va), m2_cfg_format_value(f, cfg, vb, sizeof vb))) continue;
        const char *key = f->key;
        if (strcmp(pa, pb) && (!strcmp(key, "method") || !strcmp(key, "run.stages") || !strcmp(key, "model.base"))) {
            snprintf(why, cap, "%s: changes the run's stage plan (%s -> %s)", key, pa, pb);
            return 1;
        }
        if (!strcmp(key, "method")) {
            snprintf(why, cap, "method: the run is %s (%s is another run)", va, vb);
            return 1;
        }
        if (!strcmp(key, "run.reuse_from") || !strcmp(key, "run.reuse_stages")) {
            snprintf(why, cap, "%s: only a fresh run takes stages from another run", key);
            return 1;
        }
        if (m2_key_steers_only(key)) continue;
        /* the first stage of the plan that reads the key; a key no stage declares counts as read by all */
        int declared = 0;
        for (int k = 0; k < M2_N_STAGES && !declared; k++) declared = m2_stage_reads_key((m2_stage_id)k, key);
        for (int k = 0; k < nb; k++)
            if (!declared || m2_stage_reads_key((m2_stage_id)m2_stage_find(b[k]), key)) {
                snprintf(why, cap, "%s: read by stage %s of this run", key, b[k]);
                return 1;
            }
    }
    if (why && cap) why[0] = 0;
    return 0;
}
