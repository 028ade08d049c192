/* The run folder (DESIGN.md §8) and the metrics it collects.
 *
 *   runs/NAME/config.yaml                      resolved config (every key)
 *   runs/NAME/metrics.jsonl                    {"step":N,"data":{"sys2/actor_loss":...}} per line, flushed
 *   runs/NAME/events.out.tfevents.<t>.<host>   the same scalars for TensorBoard
 *   runs/NAME/ckpt/step_N/, ckpt/latest        checkpoints (core/ckpt.h)
 *   runs/NAME/eval/SPLIT.jsonl                 one record per evaluation episode
 *   runs/NAME/plots/NAME.svg, .png            learning curves, results chart (core/chart.h)
 *
 * Steps are one counter for the whole run (monotonic across stages), so a resumed run can drop
 * whatever was logged after its checkpoint and log it again identically. */
#ifndef M2_RUN_H
#define M2_RUN_H
#include <stdint.h>
#include "core/err.h"
#include "core/jsonl.h"
#include "core/tblog.h"

typedef struct m2_scalar {
    const char *key;    /* slash-namespaced: "sys2/actor_loss", "eval/id/success" */
    double value;
} m2_scalar;

typedef struct m2_run {
    char dir[1024];
    char ckpt_dir[1100];   /* dir/ckpt */
    m2_jsonl metrics;
    m2_tb_writer tb;
    int tb_on;
} m2_run;

/* Fresh run (resume_step < 0): creates the layout; fails if dir already holds a run (metrics.jsonl
 * or ckpt/latest), so nothing is overwritten by accident.
 * Resume (resume_step >= 0): keeps metrics.jsonl and the TensorBoard scalars with step <=
 * resume_step (rewriting both), then appends. */
int m2_run_open(m2_run *r, const char *dir, int tensorboard, int64_t resume_step, m2_err *err);
void m2_run_close(m2_run *r);
/* True if dir holds a run (metrics.jsonl or ckpt/latest). */
int m2_run_exists(const char *dir);

/* Appends one metrics record and one TensorBoard event. Non-finite values are written as null in
 * JSON (and as-is to TensorBoard). */
int m2_run_log(m2_run *r, int64_t step, const m2_scalar *s, int n, m2_err *err);
/* Opens dir/eval/<name>.jsonl for appending (truncate = 1 to start it over). */
int m2_run_eval_open(m2_run *r, const char *name, int truncate, m2_jsonl *out, m2_err *err);

/* Drops records with step > max_step from metrics.jsonl (and a torn last line), atomically. */
int m2_metrics_truncate(const char *path, int64_t max_step, m2_err *err);

/* Per-key series read back from metrics.jsonl (for charts and tests). */
typedef struct m2_series {
    char *key;
    int n, cap;
    int64_t *step;
    double *value;
} m2_series;
typedef struct m2_series_set {
    m2_series *s;
    int n, cap;
} m2_series_set;
int m2_metrics_load(const char *path, m2_series_set *out, m2_err *err);
const m2_series *m2_series_find(const m2_series_set *set, const char *key);
void m2_series_free(m2_series_set *set);

#endif
