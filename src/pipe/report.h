/* Results of runs: aggregates the per-episode evaluation records (eval/NAME.jsonl directly in a
 * run folder; one JSON object per episode with at least env, split, success, and optionally score,
 * steps, tokens) into a table per (env, split): episodes, success rate, mean score, mean steps,
 * mean tokens. Writes results.json, results.md and plots/results.svg and .png (success and score). */
#ifndef M2_REPORT_H
#define M2_REPORT_H
#include <stdio.h>
#include "core/err.h"
#include "core/strbuf.h"
#include "pipe/stage.h"

typedef struct m2_result_row {
    char method[64], env[64], split[32];
    char action_mode[16];                   /* System 2's action mode; "" = the run's sys2.action_mode (the
                                             * rows of a run evaluated in one mode) */
    long episodes;
    double success, score, steps, tokens;   /* means over episodes */
    double sys1_tokens, sys2_tokens;        /* means over episodes: each system's prompt + generated tokens */
    double sys1_calls;                      /* mean System 1 calls per episode */
    double invalid_rate;                    /* invalid actions / environment steps */
} m2_result_row;

/* Rows of one run folder (method from its config.yaml, or `method` when non-NULL), one per (env,
 * split, action mode): the records of eval/<split>.jsonl are the run's own sys2.action_mode, those of
 * eval/<split>.<mode>.jsonl another mode's (eval.action_modes). When a run holds another mode's
 * records every row names its mode, else none does. *rows is malloc'd. A run without eval files
 * gives 0 rows. */
int m2_report_collect(const char *run_dir, const char *method, m2_result_row **rows, int *n, m2_err *err);
/* The evaluation record files directly in run_dir/eval, sorted by name, and the action mode each
 * holds: "" for every file when the run was evaluated in one mode; else each file's mode
 * (eval/<split>.<mode>.jsonl), the run's own sys2.action_mode (config.yaml) for eval/<split>.jsonl.
 * *files is malloc'd; no eval folder gives 0 files. */
typedef struct m2_eval_file {
    char name[256];
    char action_mode[16];
} m2_eval_file;
int m2_report_eval_files(const char *run_dir, m2_eval_file **files, int *n, m2_err *err);

typedef struct m2_report_opts {
    const char *title;   /* results.md heading and chart title (NULL: "Results") */
    const char *note;    /* a Markdown paragraph under the heading (NULL: none) */
} m2_report_opts;

/* The ONE writer of results.json ({"rows": [...]}, docs/runs.md) and results.md, for a run's report
 * stage and for multi2 demo alike, plus plots/results.svg and .png (success and score). opts may be NULL. */
int m2_report_write(const m2_result_row *rows, int n, const char *out_dir, const m2_report_opts *opts, m2_err *err);
/* The name a row's method goes by in tables' charts: the method, and its action mode when the row
 * names one ("multi2 (score)"). */
void m2_report_series_name(const char *method, const char *action_mode, char *out, size_t cap);
/* The rows as a console table, columns as wide as their longest value. */
void m2_report_print(const m2_result_row *rows, int n, FILE *f);
/* Collects several runs (e.g. one per method) and writes their combined table into out_dir. */
int m2_report_runs(const char *const *run_dirs, int n_runs, const char *out_dir, m2_err *err);

/* Appends a "Per task type" table (method, env, split, task type, episodes, success %, score) to
 * run_dir/results.md from the eval stage's artifacts/eval/eval_summary.json; nothing without it. */
int m2_report_write_task_types(const char *run_dir, const char *method, const char *env, m2_err *err);

/* Results over training seeds: folders made alike but for run.seed (each a demo folder or a run
 * folder holding results.json, e.g. `multi2 demo --out runs/s23 run.seed=23`), aggregated per
 * (method, env, split, action mode): the mean over the folders of each one's success rate and mean
 * score, their standard error (sample standard deviation / sqrt(n); none for one folder), the folders' mean
 * steps, tokens, System 1 calls and invalid-action rate per episode, and every folder's own success
 * rate; and per (method, env, RL stage) of the folders' runs what the stage changed (probe decisions
 * and KL, mean +- SE over folders; advantage and weight spread; online buffer share); and the paper's
 * orderings (Multi² above each baseline and ablation, role swap the worst) as the per-folder
 * difference's mean +- SE with a verdict (holds / reversed / not resolved). Writes
 * out_dir/results.md, out_dir/results.json ({"rows": [{method, env, split, seeds, episodes, success,
 * success_se, score, score_se, steps, tokens_per_episode, sys1_calls, invalid_rate,
 * success_per_seed[]}], "folders": [...], "orderings": [...], "rl_stages": [...]}, docs/runs.md) and
 * out_dir/plots/results.svg|png (means with standard-error bars), and the figures of
 * m2_report_figures. A row missing from some folder is
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

/* The figures of results over seeds (m2_report_over_seeds), from every evaluation record and
 * metrics.jsonl of each folder's runs (the folder itself when it has eval/, else its sub-folders
 * two levels down, as a demo folder holds DIR/<env>/<method>), into out_dir/plots/ as SVG and PNG:
 *  - boxes: per environment, split and method, the distribution over seeds x task types of the
 *    per-type success rate (ScienceWorld: mean score), a record without a type counting alone;
 *  - buckets_<env>: per split, per task type (TextCraft crafting depth, ALFWorld task type,
 *    ScienceWorld task) and method, that measure's mean over seeds +- standard error;
 *  - tokens: System 1 and System 2 tokens per episode per method (methods with a model), mean over
 *    seeds +- standard error;
 *  - online: the online stage's greedy evaluations (sys2_online/eval_*, sys2.online.eval_every)
 *    against the online epoch, per environment, split and method, mean over seeds +- standard error.
 * series[i], envs[i] (i < n_rows): the results rows' method names (m2_report_series_name) and
 * environments, in the order colours and panels take (others follow as met). A figure without data
 * is not drawn (an older file of it is removed); md gets a "Figures" section saying what each file
 * shows, or why it is missing. */
int m2_report_figures(const char *const *folders, int n_folders, const char *const *series, const char *const *envs,
                      int n_rows, const char *out_dir, m2_strbuf *md, m2_err *err);

/* The runs of a results folder: the folder itself when it holds eval/, else every FOLDER/a/b holding
 * eval/ (a demo's FOLDER/<env>/<method>), sorted; of a demo still running (no FOLDER/results.json),
 * only the runs that have finished (their own results.json), so that figures and the RL-stage table
 * cover the runs the results table does, never a run's partial evaluation. *dirs (malloc'd paths) is freed with
 * m2_report_folder_runs_free. A folder without runs gives 0. */
int m2_report_folder_runs(const char *folder, char ***dirs, int *n, m2_err *err);
void m2_report_folder_runs_free(char **dirs, int n);

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
