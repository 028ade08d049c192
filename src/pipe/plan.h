/* The plan of a run: the ONE stage table (order, function, help, the config keys each stage reads),
 * the ONE method table (which stages a method runs and how it runs them), a run's stage plan, and
 * stage reuse between runs (run.reuse_from), which compares exactly the keys each stage declares. */
#ifndef M2_PIPE_PLAN_H
#define M2_PIPE_PLAN_H
#include "pipe/run_config.h"
#include "pipe/stage.h"

/* Indexed by m2_stage_id (plan order). .reads: the keys the stage's numbers depend on, each an exact
 * dotted key or a prefix ending in '.' ("sys2.offline."). Keys that steer a run without changing a
 * number (run.* but run.seed and run.threads; model.recompute) are read by no stage. */
extern const m2_stage m2_pipe_stages[M2_N_STAGES];
extern const int m2_pipe_n_stages;

/* What a method does differently from multi2. */
typedef struct m2_method_info {
    unsigned skip;             /* stages left out of its plan: bits 1u << m2_stage_id */
    int flat;                  /* no System 1: System 2 acts on whole tasks (its sub-goal = the task) */
    int shared_adapter;        /* both roles train and use ONE adapter, "shared" */
    int role_swap;             /* trained as multi2; at inference each role runs the other's adapter */
    int no_anchor;             /* the offline stage trains with lambda = 0 whatever the keys say */
    int no_kl;                 /* the online stage trains with eta = 0 whatever the keys say */
    int team;                  /* a TeamTR team run: pretrain on its task family, then the teamtr stage (no
                                * other method runs that stage) */
    int hier_team;             /* the Multi² hierarchy as a TeamTR team: multi2's stages up to sys2_offline,
                                * then the teamtr_hier stage in place of sys2_online (no other method runs
                                * that stage) */
    const char *help;
} m2_method_info;

extern const m2_method_info m2_methods[M2_N_METHODS];
const m2_method_info *m2_method_of(const m2_run_config *cfg);

/* 1 when the stage's declared reads cover `key`. */
int m2_stage_reads_key(m2_stage_id stage, const char *key);
/* 1 for keys that change no number of a run (run.* but the seed and the thread count; model.recompute,
 * the same gradients bit for bit: tests/test_pipe_train.c). */
int m2_key_steers_only(const char *key);
/* The stage id of a name; -1 if unknown. */
int m2_stage_find(const char *name);

/* The stages a run executes, in order: run.stages if set, else the method's plan (pretrain only
 * when model.base is "tiny"). Writes up to cap names (static strings); returns the count. */
int m2_run_stage_plan(const m2_run_config *cfg, const char **stages, int cap);

/* The plan's stages cfg may take from the finished run src (config src_cfg, stages.json "ends"
 * already checked by the caller): the longest common prefix of both plans in which no stage reads a
 * key the two configs differ in, and every stage is run the same way by both methods. Writes the
 * names into stages (static strings); returns the count. With why != NULL, the reason the next stage
 * cannot be reused (or "") goes there. */
int m2_run_reusable_prefix(const m2_run_config *src_cfg, const m2_run_config *cfg, const char **stages, int cap,
                           char *why, size_t why_cap);

/* The anchor weight lambda and the KL weight eta a method trains with (the keys' values, or 0 for
 * no_anchor / no_kl). */
double m2_run_offline_lambda(const m2_run_config *cfg);
double m2_run_online_eta(const m2_run_config *cfg);

/* --resume RUN key=value: 1 when the overrides would change what the run computes, with why = "KEY:
 * reason" naming the stage (saved: RUN/config.yaml; cfg: it with the overrides). Refused: a changed
 * stage plan (method, run.stages, model.base tiny <-> a file), another method, run.reuse_from /
 * run.reuse_stages (only a fresh run reuses), and every key a stage of the plan reads, done or still
 * to run (a resumed run must give the bits of an uninterrupted one of its saved config). Allowed:
 * keys that only steer (m2_key_steers_only: logging, checkpoints, plots, the stop step) and keys no
 * stage of this plan reads. */
int m2_run_resume_conflict(const m2_run_config *saved, const m2_run_config *cfg, char *why, size_t cap);

#endif
