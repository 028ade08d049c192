/* The stage runner behind `multi2 train`: runs the stages of a run's plan in order inside the run
 * folder, records finished stages, and resumes an interrupted run exactly.
 *
 * Contract for a stage function (the pipeline fills a table of them):
 *  - Durable outputs that later stages need (pre-trained base, System 1 adapter, datasets, ...)
 *    go under ctx->artifacts (run/artifacts/<stage>/), written atomically, before returning 0.
 *  - Mid-stage state goes into checkpoints through m2_stage_save (every run.ckpt_every steps):
 *    everything needed to continue bit-exactly (weights, optimiser moments, RNG states, cursors).
 *  - If ctx->resume is non-NULL the stage was interrupted: restore from it and continue at
 *    ctx->step (= the checkpoint's step); do not redo earlier steps.
 *  - Metrics go through m2_stage_log at ctx->step (one global step counter for the run).
 *
 * Resume: stages listed in run/stages.json as done are skipped; the first one that is not done
 * gets ckpt/latest if that checkpoint belongs to it, else starts fresh at the step where the
 * previous stage ended. metrics.jsonl and the TensorBoard events are cut back to that step, so a
 * resumed run logs exactly what an uninterrupted one would. */
#ifndef M2_STAGE_H
#define M2_STAGE_H
#include <stdio.h>
#include "core/ckpt.h"
#include "core/run.h"
#include "dist/dist.h"
#include "pipe/run_config.h"

/* Which binary made a stage (core/build_info.h's m2_build_id()); a stage resumed from a checkpoint
 * another binary wrote records both, in order: "multi2 0.1.0 (commit A) then multi2 0.1.0 (commit B)". */
#define M2_MADE_BY_MAX 400

typedef struct m2_stage_ctx {
    const m2_run_config *cfg;
    m2_run *run;
    const char *name;          /* this stage */
    int index, count;          /* position in the plan */
    int64_t step;              /* global step; the stage advances it */
    int64_t total;             /* optional: the stage's last step, for "step i/N" summary lines */
    m2_ckpt *resume;           /* owned by the runner; NULL unless resuming this stage */
    FILE *out;                 /* console */
    char artifacts[1300];      /* run/artifacts/<stage> (created) */
    double last_log_time;
    int64_t last_log_step;
    m2_dist *dist;             /* the ranks running this stage in lock-step (NULL: this process alone) */
    int writer;                /* 1 on rank 0 (or alone): the one rank that writes files (docs/dist.md) */
    char made_by[M2_MADE_BY_MAX]; /* the binaries that ran this stage (m2_run_made_by), saved in its checkpoints */
} m2_stage_ctx;

typedef int (*m2_stage_fn)(m2_stage_ctx *ctx, m2_err *err);

typedef struct m2_stage {
    const char *name;          /* one of m2_stage_names */
    m2_stage_fn fn;            /* NULL: not implemented in this build */
    const char *help;
    const char *const *reads;  /* config keys / key prefixes its numbers depend on (pipe/plan.h); NULL-ended */
    int rank0_only;            /* under MPI only rank 0 runs it (it only writes files the others read later) */
} m2_stage;

/* 1 on the rank that writes the run's files: rank 0 under MPI (docs/dist.md), or a process alone
 * (a ctx made outside the runner too). */
int m2_stage_writes(const m2_stage_ctx *ctx);

/* Saves c as this stage's checkpoint at ctx->step (stage name and step are set here), keeping
 * run.keep_last checkpoints. */
int m2_stage_save(m2_stage_ctx *ctx, m2_ckpt *c, m2_err *err);
/* Logs metrics at ctx->step; every run.log_every steps (and when ctx->step == ctx->total) also
 * prints one summary line with the time per step. */
int m2_stage_log(m2_stage_ctx *ctx, const m2_scalar *s, int n, m2_err *err);

/* Runs cfg's stage plan in run_dir (resume = 0: a fresh run folder; 1: continue it). Before
 * anything is written: stages without a function fail with "stage X not implemented yet"; a fresh
 * run needs an absent or empty run_dir, --resume a run folder (pipe/runfiles.h); the input files the
 * stages still to run read are checked (pipe/inputs.h). A fresh run that fails before it finished
 * a stage of its own or wrote a checkpoint removes the folder it made (the message says so, or how
 * to continue what it kept). Writes config.yaml (a run.stop_at_step already passed saved as 0), and
 * at the end the learning curves (run.plots). */
int m2_train_run(const m2_run_config *cfg, const m2_stage *table, int n_table, const char *run_dir, int resume,
                 FILE *out, m2_err *err);
/* The same on the ranks of d (docs/dist.md), every rank calling it with the same arguments: rank 0
 * alone writes the run folder (config, stages.json, metrics, checkpoints, artifacts, results) and
 * takes the resume decision, which it broadcasts; the folder must be on a file system every rank
 * reads (one host, or NFS and the like). Checkpoints record the world size; a run resumes at any
 * world size (rank 0 says what changes: the gradient sums' order). A barrier ends every stage, so
 * later stages read what rank 0 wrote. */
int m2_train_run_dist(const m2_run_config *cfg, const m2_stage *table, int n_table, const char *run_dir,
                      int resume, FILE *out, m2_dist *dist, m2_err *err);

/* 1 when run_dir's stages.json records `stage` as finished with its end step and metrics line
 * count (what run.reuse_stages needs from a source run), 0 otherwise (older runs, unfinished). */
int m2_run_stage_reusable(const char *run_dir, const char *stage);

/* The finished stages of run_dir in order, each with the binaries that made it (stages.json
 * "made_by"; "" for a stage an older binary finished, before runs recorded it). Returns how many were written to out (at most cap; 0 without stages.json), -1 on a
 * malformed stages.json. A reused stage (run.reuse_stages) keeps its source run's record. */
typedef struct m2_stage_made_by {
    char stage[32];
    char build[M2_MADE_BY_MAX];
} m2_stage_made_by;
int m2_run_made_by(const char *run_dir, m2_stage_made_by *out, int cap, m2_err *err);

/* Number of stages stages.json records as finished in run_dir (0 without one). */
int m2_run_done_count(const char *run_dir);

/* The folder a fresh run of cfg uses: run.out_dir/run.name. */
void m2_run_dir_for(const m2_run_config *cfg, char *out, size_t cap);

#endif
