/* The folders multi2 writes and the file kinds in them that have a fixed shape (docs/runs.md,
 * "File formats"): which kind a folder is (a run, a demo, something else), the checks that keep
 * every command's output folder its own, the demo's marker demo.json, and the evaluation records
 * eval/<split>.jsonl, written by ONE function for trained and reference policies alike.
 *
 * Other file kinds and their single writers: metrics.jsonl (core/run.h m2_run_log), stages.json
 * (pipe/stage.c), results.json / results.md (pipe/report.h m2_report_write). */
#ifndef M2_PIPE_RUNFILES_H
#define M2_PIPE_RUNFILES_H
#include "agent/loop.h"
#include "core/err.h"
#include "data/traj.h"

typedef enum m2_dir_kind {
    M2_DIR_ABSENT = 0,   /* nothing there */
    M2_DIR_EMPTY,        /* an empty folder */
    M2_DIR_RUN,          /* a run folder: config.yaml, metrics.jsonl, stages.json or ckpt/latest */
    M2_DIR_DEMO,         /* a `multi2 demo` folder: demo.json (or the layout an older demo left) */
    M2_DIR_OTHER,        /* a file, or a folder holding something else */
} m2_dir_kind;

m2_dir_kind m2_dir_kind_of(const char *dir);

/* A finished run kept as its records alone (scripts/keep_records.sh writes RUN/records_only.txt):
 * its weights, checkpoints and corpora were left out, its records (config, stages.json, metrics,
 * evaluation records, probe results, results) are whole. Such a run counts as finished wherever its
 * records are read, but it cannot continue, and no run takes stages from it (run.reuse_from): their
 * artifacts are gone. */
#define M2_RECORDS_ONLY_FILE "records_only.txt"
int m2_run_records_only(const char *run_dir);

/* A fresh run's folder must be absent or empty; otherwise the error names the folder, what it
 * holds (a run: continue it with --resume; a demo: where its runs are) and how to choose another
 * one (run.name / run.out_dir). */
int m2_check_fresh_run_dir(const char *dir, m2_err *err);
/* --resume needs a run folder; a demo folder is refused naming its runs. */
int m2_check_resume_dir(const char *dir, m2_err *err);
/* `multi2 demo --out dir`: absent, empty or a demo folder (continued); a run or anything else is
 * refused. */
int m2_check_demo_dir(const char *dir, m2_err *err);

/* demo.json: what a demo folder was made by. The lists are comma-separated; overrides are the
 * key=value arguments every run of the demo got (--episodes / --threads as the keys they set). */
typedef struct m2_demo_marker {
    const char *config;                /* the --config file, or NULL: the embedded demo config */
    const char *envs, *methods;
    const char *const *overrides;
    int n_overrides;
} m2_demo_marker;

/* Writes dir/demo.json atomically. The runs and references of an existing marker are kept (a demo
 * re-run with fewer environments or methods leaves the other runs in place), followed by this
 * invocation's new ones. */
int m2_demo_marker_write(const char *dir, const m2_demo_marker *d, m2_err *err);

/* reference.json in a reference policy's folder (the demo's oracle and random rows): the binary
 * and the seeds that made its eval records, which have no stages.json to say it (docs/runs.md). */
typedef struct m2_reference_marker {
    const char *policy, *env;
    int64_t episodes;      /* asked per split (capped at the split's size) */
    int64_t step_limit;    /* eval.step_limit */
    int64_t eval_seed;     /* eval.seed: episode k plays with environment seed eval_seed + k */
    int64_t run_seed;      /* run.seed: the random policy's draws are keyed by it */
} m2_reference_marker;

/* Writes dir/reference.json atomically, made_by the running binary (core/build_info.h). */
int m2_reference_marker_write(const char *dir, const m2_reference_marker *m, m2_err *err);
/* The made_by of dir/reference.json into out: 1, or 0 when dir has none (reference rows made
 * before they recorded it: their draws were seed 0's, whatever run.seed), or -1 when the file is
 * not a reference marker (err names the file and the field). */
int m2_reference_made_by(const char *dir, char *out, size_t cap, m2_err *err);

/* The name of an evaluation record file under eval/, without ".jsonl": "<split>" for the run's own
 * sys2.action_mode (mode NULL), "<split>.<mode>" for another action mode (eval.action_modes). */
void m2_eval_file_stem(const char *split, const char *mode, char *out, size_t cap);
/* The action mode an eval/ file stands for: <mode> of "<split>.<mode>.jsonl" when it is an action
 * mode's name, else "" (the run's own sys2.action_mode; the files of reference policies too). */
void m2_eval_file_mode(const char *file_name, char *out, size_t cap);

/* eval/<split>.jsonl records (malloc'd one-line JSON). family: env.task the episodes were drawn
 * from, or NULL. */
char *m2_eval_record_episode(const m2_episode *ep, const char *method, const char *family);
/* A reference policy's episode (no model: tokens and calls 0; the whole episode is one transcript
 * entry without a sub-goal). task_type (data/episodes.h) may be NULL; step_limit tells hit_step_limit. */
char *m2_eval_record_traj(const m2_env_traj *t, const char *method, const char *task_type,
                          int step_limit);

#endif
