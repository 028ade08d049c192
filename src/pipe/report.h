/* Results of runs: aggregates the per-episode evaluation records (eval/NAME.jsonl directly in a
 * run folder; one JSON object per episode with at least env, split, success, and optionally score,
 * steps, tokens) into a table per (env, split): episodes, success rate, mean score, mean steps,
 * mean tokens. Writes results.json, results.md and plots/results.svg and .png (success and score). */
#ifndef M2_REPORT_H
#define M2_REPORT_H
#include <stdio.h>
#include "core/err.h"
#include "pipe/stage.h"

typedef struct m2_result_row {
    char method[64], env[64], split[32];
    long episodes;
    double success, score, steps, tokens;   /* means over episodes */
    double sys1_tokens, sys2_tokens;        /* means over episodes: each system's prompt + generated tokens */
    double sys1_calls;                      /* mean System 1 calls per episode */
    double invalid_rate;                    /* invalid actions / environment steps */
} m2_result_row;

/* Rows of one run folder (method from its config.yaml, or `method` when non-NULL). *rows is
 * malloc'd. A run without eval files gives 0 rows. */
int m2_report_collect(const char *run_dir, const char *method, m2_result_row **rows, int *n, m2_err *err);
typedef struct m2_report_opts {
    const char *title;   /* results.md heading and chart title (NULL: "Results") */
    const char *note;    /* a Markdown paragraph under the heading (NULL: none) */
} m2_report_opts;

/* The ONE writer of results.json ({"rows": [...]}, docs/runs.md) and results.md, for a run's report
 * stage and for multi2 demo alike, plus plots/results.svg and .png (success and score). opts may be NULL. */
int m2_report_write(const m2_result_row *rows, int n, const char *out_dir, const m2_report_opts *opts, m2_err *err);
/* The rows as a console table, columns as wide as their longest value. */
void m2_report_print(const m2_result_row *rows, int n, FILE *f);
/* Collects several runs (e.g. one per method) and writes their combined table into out_dir. */
int m2_report_runs(const char *const *run_dirs, int n_runs, const char *out_dir, m2_err *err);

/* Appends a "Per task type" table (method, env, split, task type, episodes, success %, score) to
 * run_dir/results.md from the eval stage's artifacts/eval/eval_summary.json; nothing without it. */
int m2_report_write_task_types(const char *run_dir, const char *method, const char *env, m2_err *err);

/* Results over training seeds: folders made alike but for run.seed (each a demo folder or a run
 * folder holding results.json, e.g. `multi2 demo --out runs/s23 run.seed=23`), aggregated per
 * (method, env, split): the mean over the folders of each one's success rate and mean score, their
 * standard error (sample standard deviation / sqrt(n); none for one folder), the folders' mean
 * steps and tokens per episode, and every folder's own success rate. Writes out_dir/results.md,
 * out_dir/results.json ({"rows": [{method, env, split, seeds, episodes, success, success_se, score,
 * score_se, steps, tokens_per_episode, success_per_seed[]}], "folders": [...]}, docs/runs.md) and
 * out_dir/plots/results.svg|png (means with standard-error bars). A row missing from some folder is
 * aggregated over the folders that have it (its `seeds` says how many). out_dir must be absent,
 * empty, or a folder this function wrote (it holds seeds.json); a run or demo folder is refused. */
int m2_report_over_seeds(const char *const *folders, int n_folders, const char *out_dir, const char *title,
                         m2_err *err);

/* Mean and standard error (sample standard deviation / sqrt(count); NaN below two values) of the
 * finite values of v[n]; *k = their count. The one home of the reports' standard error. */
void m2_mean_se(const double *v, int n, double *mean, double *se, int *k);

/* A report's output folder: absent, empty, or holding `marker` (a file the report wrote there);
 * else an error naming what it holds ("OUT: holds a training run; <what> to a new folder ..."). */
int m2_report_out_dir_check(const char *out_dir, const char *marker, const char *what, m2_err *err);

/* TeamTR runs (methods teamtr and teamtr_hier), grouped by (method, agents, variant; the single-agent
 * baseline is agents = 1; the hierarchy by its System 1 setting) over their seeds: success before and
 * after, measured gain, certificate, rank correlation, violation rate, D^ and the out-of-region rate
 * (mean and standard error over seeds), the stale penalty per team size (stale's measured gain minus
 * TeamTR's) beside the O(n) and O(n^2) shapes, and the certificate constant c at which a stage's bound
 * turns positive. Writes out_dir/teamtr.md, out_dir/teamtr.json and, as SVG and PNG, the charts
 * out_dir/plots/teamtr_success (measured success over stages), teamtr_kl (the per-update D^
 * distribution before the line search, with delta), teamtr_cumulative (cumulative measured gain and
 * cumulative bound), teamtr_bound_vs_gain (per-stage bound against measured gain, y = x) and
 * teamtr_stale_penalty. Folders that are no finished TeamTR run are an error naming them. */
int m2_report_teamtr(const char *const *runs, int n_runs, const char *out_dir, const char *title, m2_err *err);

/* One run of an RL-stage table: its folder and the names its rows carry. */
typedef struct m2_report_run {
    const char *dir, *method, *env;
} m2_report_run;

/* Appends to md_path a "RL stages" table, one row per run and RL stage it holds (sys2_offline,
 * sys2_online): the probe set's share of changed greedy actions and KL from the stage's start
 * (artifacts/<stage>/probe.json, pipe/probe.h), the mean spread of advantages and weights over the
 * stage's logged steps and the last online share of the replay buffer (metrics.jsonl), and a line
 * naming every stage that changed no greedy decision. Nothing is appended when no run holds one. */
int m2_report_append_rl_stages(const char *md_path, const m2_report_run *runs, int n_runs, m2_err *err);

/* The `report` stage: m2_report_collect + m2_report_write + m2_report_write_task_types on its own
 * run folder. */
int m2_stage_report(m2_stage_ctx *ctx, m2_err *err);

#endif
