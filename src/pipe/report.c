#include "pipe/report.h"
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "core/chart.h"
#include "core/fsutil.h"
#include "core/jsonl.h"
#include "core/run.h"
#include "core/strbuf.h"
#include "data/traj.h"
#include "env/env.h"
#include "pipe/probe.h"
#include "pipe/runfiles.h"

typedef struct agg {
    m2_result_row *rows;
    int n, cap;
    const char *method;
    const char *mode;   /* the action mode of the file being read ("" = the run's own) */
    int oom;
} agg;

static double num_or_sum(const cJSON *v) {
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? 1 : 0;
    double s = 0;
    const cJSON *c;
    if (cJSON_IsObject(v)) cJSON_ArrayForEach(c, v) if (cJSON_IsNumber(c)) s += c->valuedouble;
    return s;
}

static int add_episode(void *ctx, const cJSON *o, long line_no) {
    agg *a = ctx;
    cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
    cJSON *split = cJSON_GetObjectItemCaseSensitive(o, "split");
    cJSON *succ = cJSON_GetObjectItemCaseSensitive(o, "success");
    if (!cJSON_IsString(env) || !cJSON_IsString(split) || !succ) return 0;   /* not an episode record */
    m2_result_row *r = NULL;
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->rows[i].env, env->valuestring) && !strcmp(a->rows[i].split, split->valuestring) &&
            !strcmp(a->rows[i].action_mode, a->mode))
            r = &a->rows[i];
    if (!r) {
        if (a->n == a->cap) {
            int cap = a->cap ? 2 * a->cap : 8;
            m2_result_row *q = realloc(a->rows, (size_t)cap * sizeof *q);
            if (!q) { a->oom = 1; return 1; }
            a->rows = q;
            a->cap = cap;
        }
        r = &a->rows[a->n++];
        memset(r, 0, sizeof *r);
        snprintf(r->method, sizeof r->method, "%s", a->method);
        snprintf(r->env, sizeof r->env, "%s", env->valuestring);
        snprintf(r->split, sizeof r->split, "%s", split->valuestring);
        snprintf(r->action_mode, sizeof r->action_mode, "%s", a->mode);
    }
    r->episodes++;
    r->success += num_or_sum(succ) > 0 ? 1 : 0;
    r->score += m2_env_unit_score(env->valuestring, num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "score")));
    r->steps += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "steps"));
    r->tokens += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "tokens"));
    /* the model runs' split per system (agent/eval.h records; reference policies have none) */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o, "token_counts");
    r->sys1_tokens += num_or_sum(cJSON_GetObjectItemCaseSensitive(tc, "sys1_prompt")) +
                      num_or_sum(cJSON_GetObjectItemCaseSensitive(tc, "sys1_gen"));
    r->sys2_tokens += num_or_sum(cJSON_GetObjectItemCaseSensitive(tc, "sys2_prompt")) +
                      num_or_sum(cJSON_GetObjectItemCaseSensitive(tc, "sys2_gen"));
    r->sys1_calls += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "sys1_calls"));
    r->invalid_rate += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "invalid_actions"));   /* a count until the end */
    return 0;
}

/* Eval files by split, the run's own mode (eval/<split>.jsonl) before the others of its split. */
static int cmp_name(const void *a, const void *b) {
    const char *x = ((const m2_eval_file *)a)->name, *y = ((const m2_eval_file *)b)->name;
    size_t nx = strcspn(x, "."), ny = strcspn(y, ".");
    int c = strncmp(x, y, nx < ny ? nx : ny);
    if (c || nx != ny) return c ? c : nx < ny ? -1 : 1;
    int ox = !strcmp(x + nx, ".jsonl"), oy = !strcmp(y + ny, ".jsonl");
    return ox != oy ? oy - ox : strcmp(x, y);
}

/* The method, environment and sys2.action_mode of run_dir/config.yaml (env, mode may be NULL). */
static int run_identity(const char *run_dir, char *method, size_t mcap, char *env, size_t ecap, char *mode, size_t ocap,
                        m2_err *err) {
    m2_run_config *cfg = malloc(sizeof *cfg);
    char p[1300];
    snprintf(p, sizeof p, "%s/config.yaml", run_dir);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(cfg, p, 0, NULL, err) != 0) { free(cfg); return -1; }
    snprintf(method, mcap, "%s", m2_method_names[cfg->method]);
    if (env) snprintf(env, ecap, "%.*s", (int)ecap - 1, cfg->env_name);
    if (mode) snprintf(mode, ocap, "%s", m2_action_mode_names[cfg->sys2_action_mode]);
    free(cfg);
    return 0;
}

void m2_report_series_name(const char *method, const char *action_mode, char *out, size_t cap) {
    if (action_mode && *action_mode) snprintf(out, cap, "%s (%s)", method, action_mode);
    else snprintf(out, cap, "%s", method);
}

int m2_report_eval_files(const char *run_dir, m2_eval_file **files, int *n, m2_err *err) {
    *files = NULL;
    *n = 0;
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/eval", run_dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    m2_eval_file *f = NULL;
    int k = 0, cap = 0, other_modes = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 6 || strcmp(e->d_name + l - 6, ".jsonl") || l >= sizeof f->name) continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 8;
            m2_eval_file *q = realloc(f, (size_t)cap * sizeof *q);
            if (!q) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
            f = q;
        }
        snprintf(f[k].name, sizeof f[k].name, "%s", e->d_name);
        m2_eval_file_mode(e->d_name, f[k].action_mode, sizeof f[k].action_mode);
        other_modes |= f[k].action_mode[0] != 0;
        k++;
    }
    closedir(d);
    if (rc == 0 && k) qsort(f, (size_t)k, sizeof *f, cmp_name);
    /* another mode's records: every file names its mode, the run's own from its config */
    char method[64], own[16] = "", p[1300];
    snprintf(p, sizeof p, "%s/config.yaml", run_dir);
    if (rc == 0 && other_modes && m2_path_exists(p)) rc = run_identity(run_dir, method, sizeof method, NULL, 0, own, sizeof own, err);
    for (int i = 0; rc == 0 && i < k; i++)
        if (!f[i].action_mode[0]) snprintf(f[i].action_mode, sizeof f[i].action_mode, "%s", own);
    if (rc) { free(f); return -1; }
    *files = f;
    *n = k;
    return 0;
}

int m2_report_collect(const char *run_dir, const char *method, m2_result_row **rows, int *n, m2_err *err) {
    *rows = NULL;
    *n = 0;
    char m[64] = "?", own_mode[16];
    if (method) snprintf(m, sizeof m, "%s", method);
    else if (run_identity(run_dir, m, sizeof m, NULL, 0, own_mode, sizeof own_mode, err)) return -1;
    m2_eval_file *files;
    int nf;
    if (m2_report_eval_files(run_dir, &files, &nf, err)) return -1;
    agg a = {.method = m};
    int rc = 0;
    for (int i = 0; i < nf && rc == 0; i++) {
        char p[1600];
        snprintf(p, sizeof p, "%s/eval/%s", run_dir, files[i].name);
        a.mode = files[i].action_mode;
        if (m2_jsonl_read(p, add_episode, &a, 1, err) != 0) rc = -1;
    }
    free(files);
    if (rc == 0 && a.oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    if (rc != 0) { free(a.rows); return rc; }
    for (int i = 0; i < a.n; i++) {
        double k = (double)a.rows[i].episodes, steps = a.rows[i].steps;
        a.rows[i].success /= k;
        a.rows[i].score /= k;
        a.rows[i].steps /= k;
        a.rows[i].tokens /= k;
        a.rows[i].sys1_tokens /= k;
        a.rows[i].sys2_tokens /= k;
        a.rows[i].sys1_calls /= k;
        a.rows[i].invalid_rate = steps > 0 ? a.rows[i].invalid_rate / steps : 0;
    }
    *rows = a.rows;
    *n = a.n;
    return 0;
}

int m2_report_write(const m2_result_row *rows, int n, const char *out_dir, const m2_report_opts *opts, m2_err *err) {
    const char *title = opts ? opts->title : NULL;
    const char *note = opts ? opts->note : NULL;
    char p[1400];
    snprintf(p, sizeof p, "%s/plots", out_dir);
    if (m2_mkdir_p(p, err) != 0) return -1;
    /* results.json: the same shape for a run's report stage and for multi2 demo (docs/runs.md) */
    cJSON *j = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(j, "rows");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "method", rows[i].method);
        cJSON_AddStringToObject(o, "env", rows[i].env);
        cJSON_AddStringToObject(o, "split", rows[i].split);
        if (*rows[i].action_mode) cJSON_AddStringToObject(o, "action_mode", rows[i].action_mode);
        cJSON_AddNumberToObject(o, "episodes", (double)rows[i].episodes);
        cJSON_AddNumberToObject(o, "success", rows[i].success);
        cJSON_AddNumberToObject(o, "score", rows[i].score);
        cJSON_AddNumberToObject(o, "steps", rows[i].steps);
        cJSON_AddNumberToObject(o, "tokens_per_episode", rows[i].tokens);
        cJSON_AddNumberToObject(o, "sys1_tokens_per_episode", rows[i].sys1_tokens);
        cJSON_AddNumberToObject(o, "sys2_tokens_per_episode", rows[i].sys2_tokens);
        cJSON_AddNumberToObject(o, "sys1_calls", rows[i].sys1_calls);
        cJSON_AddNumberToObject(o, "invalid_rate", rows[i].invalid_rate);
        cJSON_AddItemToArray(arr, o);
    }
    char *js = cJSON_Print(j);
    cJSON_Delete(j);
    if (!js) return m2_errorf(err, M2_ENOMEM, "out of memory");
    snprintf(p, sizeof p, "%s/results.json", out_dir);
    int rc = m2_write_file_atomic(p, js, strlen(js), err);
    cJSON_free(js);
    if (rc) return -1;
    /* Markdown table; an action-mode column only when a row names its mode */
    int modes = 0;
    for (int i = 0; i < n; i++) modes |= *rows[i].action_mode != 0;
    m2_strbuf md = {0};
    m2_strbuf_appendf(&md, "# %s\n\n%s%s| method | env | split |%s episodes | success %% | score | steps | "
                           "tokens/episode | System 1 / System 2 tokens | System 1 calls | invalid %% |\n"
                           "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|\n",
                      title ? title : "Results", note ? note : "", note ? "\n\n" : "", modes ? " action mode |" : "",
                      modes ? "---|" : "");
    for (int i = 0; i < n; i++) {
        m2_strbuf_appendf(&md, "| %s | %s | %s |", rows[i].method, rows[i].env, rows[i].split);
        if (modes) m2_strbuf_appendf(&md, " %s |", *rows[i].action_mode ? rows[i].action_mode : "-");
        m2_strbuf_appendf(&md, " %ld | %.1f | %.3f | %.1f | %.0f | %.0f / %.0f | %.1f | %.1f |\n", rows[i].episodes,
                          100 * rows[i].success, rows[i].score, rows[i].steps, rows[i].tokens, rows[i].sys1_tokens,
                          rows[i].sys2_tokens, rows[i].sys1_calls, 100 * rows[i].invalid_rate);
    }
    if (n == 0) m2_strbuf_puts(&md, "\n(no evaluation episodes found)\n");
    snprintf(p, sizeof p, "%s/results.md", out_dir);
    rc = md.oom ? m2_errorf(err, M2_ENOMEM, "out of memory") : m2_write_file_atomic(p, md.p, md.len, err);
    m2_strbuf_free(&md);
    if (rc) return -1;
    /* Chart: groups env/split, one bar per method; success and the 0..1 score in two panels. */
    m2_bar *bars = malloc((size_t)(n ? n : 1) * 2 * sizeof *bars);
    char (*groups)[100] = malloc((size_t)(n ? n : 1) * sizeof *groups);
    char (*series)[100] = malloc((size_t)(n ? n : 1) * sizeof *series);
    if (!bars || !groups || !series) {
        free(bars); free(groups); free(series);
        return m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        snprintf(groups[i], sizeof groups[i], "%s/%s", rows[i].env, rows[i].split);
        m2_report_series_name(rows[i].method, rows[i].action_mode, series[i], sizeof series[i]);
        bars[i] = (m2_bar){.group = groups[i], .series = series[i], .value = 100 * rows[i].success};
        bars[n + i] = (m2_bar){.group = groups[i], .series = series[i], .value = rows[i].score};
    }
    const m2_bar_panel panels[] = {
        {.title = "success rate (%)", .bars = bars, .n = n, .y_max = 100, .decimals = 0},
        {.title = "mean score (0 to 1)", .bars = bars + n, .n = n, .y_max = 1, .decimals = 3}};
    for (int f = 0; f < 2 && rc == 0; f++) {
        snprintf(p, sizeof p, "%s/plots/results.%s", out_dir, f ? "png" : "svg");
        rc = m2_chart_bars(panels, 2, title ? title : "results (pass@1)", p, err);
    }
    free(bars);
    free(groups);
    free(series);
    return rc;
}

int m2_report_runs(const char *const *run_dirs, int n_runs, const char *out_dir, m2_err *err) {
    m2_result_row *all = NULL;
    int n = 0;
    for (int r = 0; r < n_runs; r++) {
        m2_result_row *rows;
        int k;
        if (m2_report_collect(run_dirs[r], NULL, &rows, &k, err) != 0) { free(all); return m2_err_prefix(err, "%s: ", run_dirs[r]); }
        m2_result_row *q = realloc(all, (size_t)(n + k + 1) * sizeof *q);
        if (!q) { free(rows); free(all); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
        all = q;
        if (k) memcpy(all + n, rows, (size_t)k * sizeof *rows);
        n += k;
        free(rows);
    }
    m2_report_opts o = {.title = "results by method (pass@1)"};
    int rc = m2_report_write(all, n, out_dir, &o, err);
    free(all);
    return rc;
}

/* Column width: the longest of the header and the values (an environment name such as
 * "scienceworld" is longer than the header "env"). */
static int col_width(const m2_result_row *rows, int n, const char *head, size_t off) {
    int w = (int)strlen(head);
    for (int i = 0; i < n; i++) {
        int l = (int)strlen((const char *)&rows[i] + off);
        if (l > w) w = l;
    }
    return w;
}

void m2_report_print(const m2_result_row *rows, int n, FILE *f) {
    int wm = col_width(rows, n, "method", offsetof(m2_result_row, method));
    int we = col_width(rows, n, "env", offsetof(m2_result_row, env));
    int ws = col_width(rows, n, "split", offsetof(m2_result_row, split));
    char name[100];
    for (int i = 0; i < n; i++) {   /* a row of another action mode names it after the method */
        m2_report_series_name(rows[i].method, rows[i].action_mode, name, sizeof name);
        if ((int)strlen(name) > wm) wm = (int)strlen(name);
    }
    fprintf(f, "%-*s  %-*s  %-*s  %8s  %8s  %6s  %6s  %14s\n", wm, "method", we, "env", ws, "split", "episodes",
            "success%", "score", "steps", "tokens/episode");
    for (int i = 0; i < n; i++) {
        m2_report_series_name(rows[i].method, rows[i].action_mode, name, sizeof name);
        fprintf(f, "%-*s  %-*s  %-*s  %8ld  %8.1f  %6.3f  %6.1f  %14.0f\n", wm, name, we, rows[i].env, ws,
                rows[i].split, rows[i].episodes, 100 * rows[i].success, rows[i].score, rows[i].steps, rows[i].tokens);
    }
}

int m2_report_write_task_types(const char *run_dir, const char *method, const char *env, m2_err *err) {
    /* the eval stage's aggregates (agent/eval.h): artifacts/eval/eval_summary.json for the run's own
     * action mode, eval_summary.<mode>.json for each other mode of eval.action_modes */
    char paths[M2_N_ACTION_MODES + 1][1400], modes[M2_N_ACTION_MODES + 1][16];
    int nf = 0;
    for (int m = -1; m < M2_N_ACTION_MODES; m++) {
        char stem[64];
        m2_eval_file_stem("eval_summary", m < 0 ? NULL : m2_action_mode_names[m], stem, sizeof stem);
        snprintf(paths[nf], sizeof paths[nf], "%s/artifacts/eval/%s.json", run_dir, stem);
        snprintf(modes[nf], sizeof modes[nf], "%s", m < 0 ? "" : m2_action_mode_names[m]);
        if (m2_path_exists(paths[nf])) nf++;
    }
    if (nf == 0) return 0;   /* no eval stage in this run */
    if (nf > 1 && !*modes[0]) {   /* several modes: the plain file is the run's own */
        char m[64];
        if (run_identity(run_dir, m, sizeof m, NULL, 0, modes[0], sizeof modes[0], err)) return -1;
    }
    char p[1400], *md = NULL;
    snprintf(p, sizeof p, "%s/results.md", run_dir);
    size_t len = 0;
    if (m2_read_file(p, &md, &len, err)) return -1;
    m2_strbuf out = {0};
    m2_strbuf_append(&out, md, len);
    free(md);
    m2_strbuf_appendf(&out, "\n## Per task type\n\n| method | env | split |%s task type | episodes | success %% | score |\n"
                            "|---|---|---|%s---|---:|---:|---:|\n", nf > 1 ? " action mode |" : "", nf > 1 ? "---|" : "");
    int rc = 0;
    for (int f = 0; f < nf && rc == 0; f++) {
        char *js = NULL;
        if (m2_read_file(paths[f], &js, NULL, err)) { rc = -1; break; }
        cJSON *sum = cJSON_Parse(js);
        free(js);
        if (!sum) { rc = m2_errorf(err, M2_EFORMAT, "%s: not JSON", paths[f]); break; }
        for (const cJSON *sp = sum->child; sp; sp = sp->next) {
            const cJSON *types = cJSON_GetObjectItemCaseSensitive(sp, "task_types");
            for (const cJSON *t = types ? types->child : NULL; t; t = t->next) {
                const cJSON *ep = cJSON_GetObjectItemCaseSensitive(t, "episodes"),
                            *su = cJSON_GetObjectItemCaseSensitive(t, "pass@1"), *sc = cJSON_GetObjectItemCaseSensitive(t, "score");
                m2_strbuf_appendf(&out, "| %s | %s | %s |", method, env, sp->string);
                if (nf > 1) m2_strbuf_appendf(&out, " %s |", modes[f]);
                m2_strbuf_appendf(&out, " %s | %.0f | %.1f | %.3f |\n", t->string, cJSON_IsNumber(ep) ? ep->valuedouble : 0,
                                  cJSON_IsNumber(su) ? 100 * su->valuedouble : 0, cJSON_IsNumber(sc) ? sc->valuedouble : 0);
            }
        }
        cJSON_Delete(sum);
    }
    if (rc == 0) rc = out.oom ? m2_errorf(err, M2_ENOMEM, "out of memory") : m2_write_file_atomic(p, out.p, out.len, err);
    m2_strbuf_free(&out);
    return rc;
}

/* ---------------------------------------------------------------- what the RL stages changed */

static const char *const RL_STAGES[2] = {"sys2_offline", "sys2_online"};
static const char *const RL_PREFIX[2] = {"sys2", "sys2_online"};   /* their metrics' keys (algo/train.c) */

/* What one RL stage of a run changed. */
typedef struct rl_measure {
    pw_probe_result probe;    /* artifacts/<stage>/probe.json */
    double adv_std, w_std;    /* means over the stage's logged steps (NaN: not logged) */
    double online_share;      /* the online stage's last buffer_online_frac (NaN: none) */
} rl_measure;

/* Mean of a metrics series (each key names its stage: "sys2_online/adv_std"); NAN when absent. */
static double series_mean(const m2_series *s) {
    double sum = 0;
    for (int i = 0; s && i < s->n; i++) sum += s->value[i];
    return s && s->n ? sum / s->n : NAN;
}

static double series_last(const m2_series *s) { return s && s->n ? s->value[s->n - 1] : NAN; }

/* 1 and *m when run_dir holds RL stage k's probe record, 0 when it does not, -1 on error; ms: the
 * run's metrics.jsonl (empty when it has none). */
static int rl_measure_read(const char *run_dir, int k, const m2_series_set *ms, rl_measure *m, m2_err *err) {
    char d[1400], key[96];
    snprintf(d, sizeof d, "%s/artifacts/%s", run_dir, RL_STAGES[k]);
    int have = pw_probe_read(d, &m->probe, err);
    if (have <= 0) return have;
    snprintf(key, sizeof key, "%s/adv_std", RL_PREFIX[k]);
    m->adv_std = series_mean(m2_series_find(ms, key));
    snprintf(key, sizeof key, "%s/w_std", RL_PREFIX[k]);
    m->w_std = series_mean(m2_series_find(ms, key));
    m->online_share = k == 1 ? series_last(m2_series_find(ms, "sys2_online/buffer_online_frac")) : NAN;
    return 1;
}

/* run_dir/metrics.jsonl into *ms (left empty when there is none). */
static int run_metrics(const char *run_dir, m2_series_set *ms, m2_err *err) {
    char p[1400];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    memset(ms, 0, sizeof *ms);
    return m2_path_exists(p) ? m2_metrics_load(p, ms, err) : 0;
}

static double changed_pct(const pw_probe_result *r) { return r->n_states ? 100.0 * r->changed / r->n_states : 0.0; }

/* The share (%) of probe states whose greedy action is the data's, at the start (end = 0) or end. */
static double on_data_pct(const pw_probe_result *r, int end) {
    int k = end ? r->end_on_data : r->start_on_data;
    return k >= 0 && r->n_states ? 100.0 * k / r->n_states : NAN;
}

/* "; " + "method env stage" + why, for the list of stages that changed nothing. */
static void put_idle(m2_strbuf *idle, const char *method, const char *env, int stage, const pw_probe_result *r) {
    m2_strbuf_appendf(idle, "%s%s %s %s", idle->len ? "; " : "", method, env, RL_STAGES[stage]);
    if (r && r->start_on_data >= 0)
        m2_strbuf_appendf(idle, " (its start already took the data's own action at %d of %d probe states)", r->start_on_data,
                          r->n_states);
}

/* " mean ± se |" (fmt formats one number; no "±" part without a standard error) */
static void put_pm(m2_strbuf *b, double mean, double se, double scale, const char *fmt) {
    m2_strbuf_putc(b, ' ');
    m2_strbuf_appendf(b, fmt, scale * mean);
    if (isfinite(se)) { m2_strbuf_puts(b, " ± "); m2_strbuf_appendf(b, fmt, scale * se); }
    m2_strbuf_puts(b, " |");
}

static void put_num(m2_strbuf *b, double v, const char *fmt) {
    if (isnan(v)) m2_strbuf_puts(b, " - |");
    else m2_strbuf_appendf(b, fmt, v);
}

static const char RL_TABLE_INTRO[] =
    "Each RL stage against its start, on a fixed probe set of states from the low-level data "
    "(`sys2.probe_states`): the share of states whose greedy action changed and KL(start || end) "
    "per action token; the spread (standard deviation) of the advantages and of the actor's "
    "weights, averaged over the stage's logged steps; the online share of the replay buffer at "
    "the stage's end; and on how many probe states the greedy action is the data's own action, at the "
    "stage's start and end.";
static const char RL_IDLE_WHY[] =
    "Such a stage leaves the evaluation's choices as the stage before it made them (a KL near 0 says the "
    "policy barely moved; a KL well above 0 with no changed decision says it moved only away from the argmax). "
    "A stage that starts on the data's action nearly everywhere and weights those same actions cannot move "
    "the argmax much.";

int m2_report_append_rl_stages(const char *md_path, const m2_report_run *runs, int n_runs, m2_err *err) {
    m2_strbuf t = {0}, idle = {0};
    int rows = 0, rc = -1;
    char *md = NULL;
    m2_strbuf_appendf(&t, "\n## RL stages: what they changed\n\n%s\n\n"
                          "| method | env | stage | probe states | greedy changed %% | KL per token | on the data's action, "
                          "start → end | advantage std | weight std | online share of buffer |\n"
                          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
                      RL_TABLE_INTRO);
    for (int r = 0; r < n_runs; r++) {
        m2_series_set ms;
        if (run_metrics(runs[r].dir, &ms, err)) goto out;
        for (int k = 0; k < 2; k++) {
            rl_measure m;
            int have = rl_measure_read(runs[r].dir, k, &ms, &m, err);
            if (have < 0) { m2_series_free(&ms); goto out; }
            if (!have) continue;
            m2_strbuf_appendf(&t, "| %s | %s | %s | %d | %.1f | %.4g |", runs[r].method, runs[r].env, RL_STAGES[k],
                              m.probe.n_states, changed_pct(&m.probe), m.probe.kl);
            if (m.probe.start_on_data >= 0) m2_strbuf_appendf(&t, " %d → %d |", m.probe.start_on_data, m.probe.end_on_data);
            else m2_strbuf_puts(&t, " - |");
            put_num(&t, m.adv_std, " %.4g |");
            put_num(&t, m.w_std, " %.4g |");
            put_num(&t, m.online_share, " %.2f |");
            m2_strbuf_puts(&t, "\n");
            if (m.probe.changed == 0) put_idle(&idle, runs[r].method, runs[r].env, k, &m.probe);
            rows++;
        }
        m2_series_free(&ms);
    }
    if (!rows) { rc = 0; goto out; }
    if (idle.len) m2_strbuf_appendf(&t, "\nChanged no greedy decision on the probe set: %s. %s\n", m2_strbuf_str(&idle), RL_IDLE_WHY);
    size_t len = 0;
    if (m2_read_file(md_path, &md, &len, err)) goto out;
    m2_strbuf all = {0};
    m2_strbuf_append(&all, md, len);
    m2_strbuf_append(&all, t.p, t.len);
    rc = all.oom || t.oom || idle.oom ? m2_errorf(err, M2_ENOMEM, "out of memory")
                                      : m2_write_file_atomic(md_path, all.p, all.len, err);
    m2_strbuf_free(&all);
out:
    free(md);
    m2_strbuf_free(&t);
    m2_strbuf_free(&idle);
    return rc;
}

/* One (method, env, RL stage) over the seed folders: each folder's measures (NaN: absent). */
typedef struct rl_group {
    char method[64], env[64];
    int stage;
    double *v;   /* [RL_NV][n_folders]: changed %, KL, advantage std, weight std, online share, % on the
                  * data's action at the start and at the end */
} rl_group;
enum { RL_CHANGED, RL_KL, RL_ADV, RL_W, RL_SHARE, RL_ON0, RL_ON1, RL_NV };

static cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* Appends to md the table "RL stages over seeds" and to j the array "rl_stages" (docs/runs.md): per
 * (method, env, RL stage) found in the folders' runs, the mean over folders +- standard error of the
 * probe set's changed share and KL, the mean spreads and online share, and how many folders' stage
 * changed no greedy decision. Nothing is added when no run holds an RL stage's record. */
static int rl_stages_over_seeds(const char *const *folders, int nf, m2_strbuf *md, cJSON *j, m2_err *err) {
    rl_group *g = NULL;
    int ng = 0, rc = 0;
    for (int f = 0; f < nf && rc == 0; f++) {
        char **runs;
        int nr;
        if (m2_report_folder_runs(folders[f], &runs, &nr, err)) { rc = -1; break; }
        for (int r = 0; r < nr && rc == 0; r++) {
            m2_series_set ms;
            if (run_metrics(runs[r], &ms, err)) { rc = -1; break; }
            char method[64] = "", env[64] = "";
            for (int k = 0; k < 2 && rc == 0; k++) {
                rl_measure m;
                int have = rl_measure_read(runs[r], k, &ms, &m, err);
                if (have <= 0) { rc = have; continue; }
                if (!*method && run_identity(runs[r], method, sizeof method, env, sizeof env, NULL, 0, err)) { rc = -1; break; }
                int i = 0;
                while (i < ng && (g[i].stage != k || strcmp(g[i].method, method) || strcmp(g[i].env, env))) i++;
                if (i == ng) {
                    rl_group *q = realloc(g, (size_t)(ng + 1) * sizeof *q);
                    double *v = malloc((size_t)RL_NV * nf * sizeof *v);
                    if (!q || !v) { free(v); if (q) g = q; rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
                    g = q;
                    g[ng] = (rl_group){.stage = k, .v = v};
                    snprintf(g[ng].method, sizeof g[ng].method, "%s", method);
                    snprintf(g[ng].env, sizeof g[ng].env, "%s", env);
                    for (int x = 0; x < RL_NV * nf; x++) v[x] = NAN;
                    ng++;
                }
                double *v = g[i].v;
                if (isfinite(v[RL_CHANGED * nf + f])) {
                    rc = m2_errorf(err, M2_EFORMAT, "%s: a second run of %s on %s with a %s stage", folders[f], method, env,
                                   RL_STAGES[k]);
                    break;
                }
                v[RL_CHANGED * nf + f] = changed_pct(&m.probe);
                v[RL_KL * nf + f] = m.probe.kl;
                v[RL_ADV * nf + f] = m.adv_std;
                v[RL_W * nf + f] = m.w_std;
                v[RL_SHARE * nf + f] = m.online_share;
                v[RL_ON0 * nf + f] = on_data_pct(&m.probe, 0);
                v[RL_ON1 * nf + f] = on_data_pct(&m.probe, 1);
            }
            m2_series_free(&ms);
        }
        m2_report_folder_runs_free(runs, nr);
    }
    if (rc == 0 && ng) {
        cJSON *arr = cJSON_AddArrayToObject(j, "rl_stages");
        m2_strbuf idle = {0};
        m2_strbuf_appendf(md, "\n## RL stages over seeds: what they changed\n\n%s Mean over the folders ± standard "
                              "error; the last column counts the folders whose stage changed no greedy decision.\n\n"
                              "| method | env | stage | seeds | greedy changed %% | KL per token | on the data's action %%, "
                              "start → end | advantage std | weight std | online share of buffer | changed nothing |\n"
                              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                          RL_TABLE_INTRO);
        for (int i = 0; i < ng; i++) {
            double mean[RL_NV], se[RL_NV];
            int seeds = 0, idle_n = 0, c;
            for (int x = 0; x < RL_NV; x++) m2_mean_se(g[i].v + x * nf, nf, &mean[x], &se[x], x == RL_CHANGED ? &seeds : &c);
            for (int f = 0; f < nf; f++) idle_n += g[i].v[RL_CHANGED * nf + f] == 0;
            m2_strbuf_appendf(md, "| %s | %s | %s | %d |", g[i].method, g[i].env, RL_STAGES[g[i].stage], seeds);
            put_pm(md, mean[RL_CHANGED], se[RL_CHANGED], 1, "%.1f");
            put_pm(md, mean[RL_KL], se[RL_KL], 1, "%.4g");
            if (isfinite(mean[RL_ON0]) && isfinite(mean[RL_ON1])) m2_strbuf_appendf(md, " %.1f → %.1f |", mean[RL_ON0], mean[RL_ON1]);
            else m2_strbuf_puts(md, " - |");
            put_num(md, seeds && isfinite(mean[RL_ADV]) ? mean[RL_ADV] : NAN, " %.4g |");
            put_num(md, seeds && isfinite(mean[RL_W]) ? mean[RL_W] : NAN, " %.4g |");
            put_num(md, seeds && isfinite(mean[RL_SHARE]) ? mean[RL_SHARE] : NAN, " %.2f |");
            m2_strbuf_appendf(md, " %d of %d |\n", idle_n, seeds);
            if (idle_n == seeds) {
                put_idle(&idle, g[i].method, g[i].env, g[i].stage, NULL);
                if (isfinite(mean[RL_ON0]))
                    m2_strbuf_appendf(&idle, " (its start already took the data's own action at %.1f %% of the probe states)",
                                      mean[RL_ON0]);
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "method", g[i].method);
            cJSON_AddStringToObject(o, "env", g[i].env);
            cJSON_AddStringToObject(o, "stage", RL_STAGES[g[i].stage]);
            cJSON_AddNumberToObject(o, "seeds", seeds);
            static const char *const keys[RL_NV] = {"probe_changed_pct", "probe_kl", "adv_std", "w_std", "online_share",
                                                    "start_on_data_pct", "end_on_data_pct"};
            for (int x = 0; x < RL_NV; x++) {
                char k[48];
                cJSON_AddItemToObject(o, keys[x], num_or_null(mean[x]));
                if (x <= RL_KL) {
                    snprintf(k, sizeof k, "%s_se", keys[x]);
                    cJSON_AddItemToObject(o, k, num_or_null(se[x]));
                }
            }
            cJSON_AddNumberToObject(o, "unchanged_seeds", idle_n);
            cJSON_AddItemToArray(arr, o);
        }
        if (idle.len) m2_strbuf_appendf(md, "\nChanged no greedy decision on the probe set in any folder: %s. %s\n", m2_strbuf_str(&idle), RL_IDLE_WHY);
        if (idle.oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
        m2_strbuf_free(&idle);
    }
    for (int i = 0; i < ng; i++) free(g[i].v);
    free(g);
    return rc;
}

/* ---------------------------------------------------------------- results over seeds */

typedef struct seed_row {
    char method[64], env[64], split[32], action_mode[16];   /* action_mode "": the folders' own */
    char own_mode[16];   /* with action_mode "": the run's own (config.yaml) when known, for pairing alone */
    int n;                            /* folders holding the row */
    double episodes, steps, tokens;   /* sums over those folders */
    double sys1_calls, invalid;       /* sums over the n_extra folders whose row has sys1_calls, invalid_rate, */
    double sys1_tokens, sys2_tokens;  /* sys1_tokens_per_episode and sys2_tokens_per_episode */
    int n_extra;
    double *success, *score;          /* [n_folders] each folder's value (NaN: absent) */
} seed_row;

static const char *json_str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int json_num(const cJSON *o, const char *k, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v)) return -1;
    *out = v->valuedouble;
    return 0;
}

int m2_report_out_dir_check(const char *out_dir, const char *marker, const char *what, m2_err *err) {
    m2_dir_kind kind = m2_dir_kind_of(out_dir);
    if (kind != M2_DIR_ABSENT && kind != M2_DIR_EMPTY && !m2_path_exists(marker))
        return m2_errorf(err, M2_EINVAL, "%s: holds %s; %s to a new folder (or one they were written to)", out_dir,
                         kind == M2_DIR_RUN ? "a training run" : kind == M2_DIR_DEMO ? "a demo" : "other files", what);
    return 0;
}

void m2_mean_se(const double *v, int n, double *mean, double *se, int *k) {
    double s = 0, s2 = 0;
    int c = 0;
    for (int i = 0; i < n; i++) if (isfinite(v[i])) { s += v[i]; c++; }
    *mean = c ? s / c : NAN;
    for (int i = 0; i < n; i++) if (isfinite(v[i])) s2 += (v[i] - *mean) * (v[i] - *mean);
    *se = c >= 2 ? sqrt(s2 / (c - 1)) / sqrt((double)c) : NAN;
    *k = c;
}

/* A reference policy's rows (multi2 demo's oracle and random runs) carry the policy's name. */
static int is_reference(const char *method) {
    return !strcmp(method, m2_policy_name(M2_POLICY_ORACLE)) || !strcmp(method, m2_policy_name(M2_POLICY_RANDOM));
}

/* Adds the rows of results.json file p as folder f's (of nf) to *rows / *n. A learned run's row
 * without an action mode (its run evaluated in one mode) keeps none, as the tables show it, and
 * learns its run's own mode (config.yaml sys2.action_mode) for the pairing of the orderings: the run
 * is run_dir, or when NULL the demo folder's ENV/METHOD under folder; none without a config.yaml. */
static int seeds_read_file(const char *p, const char *folder, const char *run_dir, int f, int nf, seed_row **rows_io,
                           int *n_io, m2_err *err) {
    seed_row *rows = *rows_io;
    int n = *n_io, rc = 0;
    char *text = NULL;
    size_t len = 0;
    if (m2_read_file(p, &text, &len, err)) return -1;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *arr = j ? cJSON_GetObjectItemCaseSensitive(j, "rows") : NULL;
    if (!cJSON_IsArray(arr)) {
        rc = m2_errorf(err, M2_EFORMAT, "%s: %s", p, j ? "no \"rows\" array" : "not JSON");
        cJSON_Delete(j);
        return rc;
    }
    int i = 0;
    for (const cJSON *o = arr->child; o && !rc; o = o->next, i++) {
        const char *m = json_str(o, "method"), *e = json_str(o, "env"), *sp = json_str(o, "split");
        double ep, su, sc, st, tk;
        const char *bad = !m ? "method" : !e ? "env" : !sp ? "split" : json_num(o, "episodes", &ep) ? "episodes"
                        : json_num(o, "success", &su) ? "success" : json_num(o, "score", &sc) ? "score"
                        : json_num(o, "steps", &st) ? "steps" : json_num(o, "tokens_per_episode", &tk) ? "tokens_per_episode" : NULL;
        const cJSON *am = cJSON_GetObjectItemCaseSensitive(o, "action_mode");
        if (!bad && am && !cJSON_IsString(am)) bad = "action_mode";
        if (bad) { rc = m2_errorf(err, M2_EFORMAT, "%s: rows[%d].%s is missing or of the wrong type", p, i, bad); break; }
        const char *mo = am ? am->valuestring : "";
        char own[16] = "";
        if (!am && !is_reference(m)) {
            char rd[1400], cp[1500], method[64];
            if (run_dir) snprintf(rd, sizeof rd, "%s", run_dir);
            else snprintf(rd, sizeof rd, "%.900s/%.64s/%.64s", folder, e, m);
            snprintf(cp, sizeof cp, "%s/config.yaml", rd);
            if (m2_path_exists(cp) && run_identity(rd, method, sizeof method, NULL, 0, own, sizeof own, err)) { rc = -1; break; }
        }
        int r = 0;
        while (r < n && (strcmp(rows[r].method, m) || strcmp(rows[r].env, e) || strcmp(rows[r].split, sp) ||
                         strcmp(rows[r].action_mode, mo)))
            r++;
        if (r == n) {
            seed_row *nr = realloc(rows, (size_t)(n + 1) * sizeof *nr);
            double *a = calloc((size_t)nf * 2, sizeof *a);
            if (!nr || !a) { free(a); if (nr) rows = nr; rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
            rows = nr;
            memset(&rows[n], 0, sizeof rows[n]);
            snprintf(rows[n].method, sizeof rows[n].method, "%s", m);
            snprintf(rows[n].env, sizeof rows[n].env, "%s", e);
            snprintf(rows[n].split, sizeof rows[n].split, "%s", sp);
            snprintf(rows[n].action_mode, sizeof rows[n].action_mode, "%s", mo);
            rows[n].success = a;
            rows[n].score = a + nf;
            for (int k = 0; k < nf; k++) rows[n].success[k] = rows[n].score[k] = NAN;
            n++;
        }
        if (isfinite(rows[r].success[f])) {
            rc = m2_errorf(err, M2_EFORMAT, "%s: rows[%d]: a second row for %s / %s / %s%s%s", p, i, m, e, sp,
                           *mo ? " / " : "", mo);
            break;
        }
        if (!*rows[r].own_mode) snprintf(rows[r].own_mode, sizeof rows[r].own_mode, "%s", own);
        rows[r].success[f] = su;
        rows[r].score[f] = sc;
        rows[r].n++;
        rows[r].episodes += ep;
        rows[r].steps += st;
        rows[r].tokens += tk;
        double calls, inv, t1, t2;   /* optional: results written before they existed lack them */
        if (!json_num(o, "sys1_calls", &calls) && !json_num(o, "invalid_rate", &inv) &&
            !json_num(o, "sys1_tokens_per_episode", &t1) && !json_num(o, "sys2_tokens_per_episode", &t2)) {
            rows[r].sys1_calls += calls;
            rows[r].invalid += inv;
            rows[r].sys1_tokens += t1;
            rows[r].sys2_tokens += t2;
            rows[r].n_extra++;
        }
    }
    cJSON_Delete(j);
    *rows_io = rows;
    *n_io = n;
    return rc;
}

/* Every folder's rows: its results.json, or, for a demo folder still running (no results.json yet),
 * the results.json of each run it has finished; partial[f] = 1 then. */
static int seeds_read(const char *const *folders, int nf, int *partial, seed_row **rows_out, int *n_out, m2_err *err) {
    seed_row *rows = NULL;
    int n = 0, rc = 0;
    for (int f = 0; f < nf && !rc; f++) {
        char p[1400];
        snprintf(p, sizeof p, "%s/results.json", folders[f]);
        partial[f] = 0;
        char **runs = NULL;
        int nr = 0, finished = 0;
        if (!m2_path_exists(p) && m2_dir_kind_of(folders[f]) == M2_DIR_DEMO && m2_report_folder_runs(folders[f], &runs, &nr, err)) {
            rc = -1;
            break;
        }
        for (int r = 0; r < nr && !rc; r++) {   /* the finished runs alone (m2_report_folder_runs) */
            char rp[1400];
            snprintf(rp, sizeof rp, "%s/results.json", runs[r]);
            rc = seeds_read_file(rp, folders[f], runs[r], f, nf, &rows, &n, err);
            finished++;
        }
        m2_report_folder_runs_free(runs, nr);
        if (finished) partial[f] = 1;
        else if (!rc) rc = seeds_read_file(p, folders[f], NULL, f, nf, &rows, &n, err);
    }
    if (rc) {
        for (int r = 0; r < n; r++) free(rows[r].success);
        free(rows);
        return -1;
    }
    *rows_out = rows;
    *n_out = n;
    return 0;
}


/* ---------------------------------------------------------------- the paper's orderings */

/* A claim of the paper that one method does better than another (Multi², reference/paper.md). */
typedef struct ordering { const char *claim, *better, *worse; } ordering;
static const ordering ORDERINGS[] = {
    {"Multi² above the flat single model", "multi2", "flat"},
    {"Multi² above the shared adapter", "multi2", "shared_adapter"},
    {"Multi² above random play", "multi2", "random"},
    {"online RL above offline only", "multi2", "offline_only"},
    {"the anchor term helps", "multi2", "no_anchor"},
    {"the KL term helps", "multi2", "no_kl"},
    {"SFT planner + RL executor above only SFT", "multi2", "sft_only"},
    {"SFT planner + RL executor above only RL", "multi2", "rl_only"},
};
/* "role swap the worst": every learned method of the folders above it */
static const char ROLE_SWAP[] = "role_swap";

/* The action mode a row was evaluated in, as far as the records say: its own, else its run's. */
static const char *row_mode(const seed_row *r) { return *r->action_mode ? r->action_mode : r->own_mode; }

/* The row of method on (env, split) evaluated in the mode of row b; a reference policy's rows (no
 * model, no mode) stand for every mode, a learned method's for the mode it was evaluated in alone
 * (a run evaluated in one mode has rows without one: its config.yaml's). */
static const seed_row *find_seed_row(const seed_row *rows, int n, const char *method, const seed_row *b) {
    for (int r = 0; r < n; r++)
        if (!strcmp(rows[r].method, method) && !strcmp(rows[r].env, b->env) && !strcmp(rows[r].split, b->split) &&
            (!strcmp(row_mode(&rows[r]), row_mode(b)) || (!*rows[r].action_mode && is_reference(method))))
            return &rows[r];
    return NULL;
}

/* One claim on one (env, split, mode): the per-seed difference better - worse of the environment's
 * measure (success; ScienceWorld: mean score), paired by folder, its mean and standard error, and
 * the verdict: holds when the mean exceeds its standard error, reversed when it is below minus it. */
static void put_ordering(m2_strbuf *md, cJSON *arr, const char *claim, const seed_row *b, const seed_row *w, int nf,
                         double *diff) {
    const m2_env_class *ec = m2_env_find(b->env);
    int scored = ec && ec->score_max > 1;
    const double *vb = scored ? b->score : b->success, *vw = scored ? w->score : w->success;
    for (int f = 0; f < nf; f++) diff[f] = isfinite(vb[f]) && isfinite(vw[f]) ? vb[f] - vw[f] : NAN;
    double mean, se;
    int k;
    m2_mean_se(diff, nf, &mean, &se, &k);
    const char *verdict = k < 2 ? "one seed: no verdict" : mean > se ? "holds" : mean < -se ? "reversed" : "not resolved";
    double scale = scored ? 1 : 100;
    m2_strbuf_appendf(md, "| %s | %s | %s | %s | %s | %s | %d |", claim, b->env, b->split, *b->action_mode ? b->action_mode : "-",
                      scored ? "score" : "success %", w->method, k);
    int dec = scored ? 3 : 1;
    if (k) m2_strbuf_appendf(md, " %+.*f", dec, scale * mean);
    else m2_strbuf_puts(md, " -");
    if (isfinite(se)) m2_strbuf_appendf(md, " ± %.*f", dec, scale * se);
    m2_strbuf_appendf(md, " | %s |\n", verdict);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "claim", claim);
    cJSON_AddStringToObject(o, "better", b->method);
    cJSON_AddStringToObject(o, "worse", w->method);
    cJSON_AddStringToObject(o, "env", b->env);
    cJSON_AddStringToObject(o, "split", b->split);
    if (*b->action_mode) cJSON_AddStringToObject(o, "action_mode", b->action_mode);
    cJSON_AddStringToObject(o, "measure", scored ? "score" : "success");
    cJSON_AddNumberToObject(o, "seeds", k);
    cJSON_AddItemToObject(o, "diff", num_or_null(k ? mean : NAN));
    cJSON_AddItemToObject(o, "diff_se", num_or_null(se));
    cJSON_AddStringToObject(o, "verdict", verdict);
    cJSON_AddItemToArray(arr, o);
}

/* Appends to md the table "The paper's orderings" and to j the array "orderings" (docs/runs.md):
 * every claim of ORDERINGS whose two methods the rows hold, and role swap below every other learned
 * method, per environment, split and action mode of the better method. Nothing without such a pair. */
static int orderings_over_seeds(const seed_row *rows, int n, int nf, m2_strbuf *md, cJSON *j, m2_err *err) {
    double *diff = malloc((size_t)(nf ? nf : 1) * sizeof *diff);
    if (!diff) return m2_errorf(err, M2_ENOMEM, "out of memory");
    cJSON *arr = NULL;
    for (int r = 0; r < n; r++) {   /* each row of a better method in turn: the table keeps the rows' order */
        const seed_row *b = &rows[r];
        for (size_t c = 0; c <= sizeof ORDERINGS / sizeof *ORDERINGS; c++) {
            int swap = c == sizeof ORDERINGS / sizeof *ORDERINGS;
            if (swap ? is_reference(b->method) || !strcmp(b->method, ROLE_SWAP) : strcmp(b->method, ORDERINGS[c].better))
                continue;
            const seed_row *w = find_seed_row(rows, n, swap ? ROLE_SWAP : ORDERINGS[c].worse, b);
            if (!w) continue;
            if (!arr) {
                arr = cJSON_AddArrayToObject(j, "orderings");
                m2_strbuf_puts(md, "\n## The paper's orderings\n\nEach claim as the difference better − worse of the "
                                   "environment's measure (success in points; ScienceWorld: mean score), paired by seed "
                                   "folder: mean ± its standard error. It **holds** when the mean exceeds its standard "
                                   "error, is **reversed** below minus it, and is **not resolved** between; one folder "
                                   "gives no verdict. A reference policy (random, oracle) has no action mode and stands "
                                   "against both.\n\n| claim | env | split | action mode | measure | against | seeds | "
                                   "difference | verdict |\n|---|---|---|---|---|---|---:|---:|---|\n");
            }
            char claim[160];
            if (swap) snprintf(claim, sizeof claim, "role swap the worst: %s above it", b->method);
            else snprintf(claim, sizeof claim, "%s", ORDERINGS[c].claim);
            put_ordering(md, arr, claim, b, w, nf, diff);
        }
    }
    free(diff);
    return 0;
}

/* The "Made by" section (stages.json "made_by", pipe/stage.h) into md, and j's array "made_by": per
 * run of the folders, its finished stages and the binaries that made them. Grouped by binary in the
 * table; a run whose stages were not all made by one binary names its stages under each. */
static int made_by_over_folders(const char *const *folders, int nf, m2_strbuf *md, cJSON *j, m2_err *err) {
    enum { MAX_STAGES = 16 };
    static const char NOT_RECORDED[] = "not recorded (finished before runs recorded their binary)";
    static const char REFERENCE_NOT_RECORDED[] = "not recorded (reference rows made before they recorded their "
                                                 "binary in reference.json; before 104acb5 the random policy drew "
                                                 "seed 0's actions on every seed)";
    static const char REFERENCE_STAGE[] = "reference";   /* its one entry in results.json */
    typedef struct build_group { char build[M2_MADE_BY_MAX]; m2_strbuf runs; } build_group;
    build_group *g = NULL;
    int ng = 0, rc = 0, any = 0;
    m2_stage_made_by *mb = malloc(MAX_STAGES * sizeof *mb);
    cJSON *arr = cJSON_AddArrayToObject(j, "made_by");
    if (!mb || !arr) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    for (int f = 0; f < nf && rc == 0; f++) {
        char **runs;
        int nr;
        if (m2_report_folder_runs(folders[f], &runs, &nr, err)) { rc = -1; break; }
        size_t fl = strlen(folders[f]);
        for (int r = 0; r < nr && rc == 0; r++) {
            int n = m2_run_made_by(runs[r], mb, MAX_STAGES, err);
            if (n < 0) { rc = -1; break; }
            int reference = n == 0;   /* a reference policy's folder: no stages, its reference.json */
            if (reference) {
                int got = m2_reference_made_by(runs[r], mb[0].build, sizeof mb[0].build, err);
                if (got < 0) { rc = -1; break; }
                snprintf(mb[0].stage, sizeof mb[0].stage, "%s", REFERENCE_STAGE);
                n = 1;
            }
            any = 1;
            const char *rel = !strncmp(runs[r], folders[f], fl) && runs[r][fl] == '/' ? runs[r] + fl + 1 : runs[r];
            cJSON *o = cJSON_CreateObject(), *st = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "folder", folders[f]);
            cJSON_AddStringToObject(o, "run", rel);
            cJSON_AddItemToObject(o, "stages", st);
            cJSON_AddItemToArray(arr, o);
            int one = 1;
            for (int i = 0; i < n; i++) {
                cJSON_AddItemToObject(st, mb[i].stage, *mb[i].build ? cJSON_CreateString(mb[i].build) : cJSON_CreateNull());
                one &= !strcmp(mb[i].build, mb[0].build);
            }
            for (int i = 0; i < n && rc == 0; i++) {
                int first = 1;   /* this build's first stage in the run: list it once */
                for (int k = 0; k < i; k++) first &= strcmp(mb[k].build, mb[i].build) != 0;
                if (!first) continue;
                const char *label = *mb[i].build ? mb[i].build : reference ? REFERENCE_NOT_RECORDED : NOT_RECORDED;
                int x = 0;
                while (x < ng && strcmp(g[x].build, label)) x++;
                if (x == ng) {
                    build_group *q = realloc(g, (size_t)(ng + 1) * sizeof *q);
                    if (!q) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
                    g = q;
                    g[ng] = (build_group){.runs = {0}};
                    snprintf(g[ng++].build, M2_MADE_BY_MAX, "%s", label);
                }
                m2_strbuf_appendf(&g[x].runs, "%s%d `%s`", g[x].runs.len ? ", " : "", f + 1, rel);
                if (one || reference) continue;
                m2_strbuf_puts(&g[x].runs, " (");
                for (int k = i, sep = 0; k < n; k++)
                    if (!strcmp(mb[k].build, mb[i].build)) m2_strbuf_appendf(&g[x].runs, "%s%s", sep++ ? ", " : "", mb[k].stage);
                m2_strbuf_puts(&g[x].runs, ")");
            }
        }
        m2_report_folder_runs_free(runs, nr);
    }
    if (rc == 0 && any) {
        m2_strbuf_puts(md, "\n## Made by\n\nThe binary that made each finished stage of the folders' runs (`stages.json` "
                           "`made_by`, docs/runs.md), by the folders' numbers above; a run is listed with its stages "
                           "when not all of them were made by one binary, and a stage resumed from another binary's "
                           "checkpoint names both. The oracle and random folders have no stages: the binary that made "
                           "their records is their `reference.json`'s.\n\n"
                           "| binary | runs |\n|---|---|\n");
        for (int x = 0; x < ng; x++) m2_strbuf_appendf(md, "| %s | %s |\n", g[x].build, g[x].runs.p ? g[x].runs.p : "");
    }
    for (int x = 0; x < ng; x++) {
        if (g[x].runs.oom) md->oom = 1;
        m2_strbuf_free(&g[x].runs);
    }
    free(g);
    free(mb);
    return rc;
}

int m2_report_over_seeds(const char *const *folders, int n_folders, const char *out_dir, const char *title,
                         m2_err *err) {
    if (n_folders < 1) return m2_errorf(err, M2_EINVAL, "results over seeds: no folder given");
    char marker[1400];
    snprintf(marker, sizeof marker, "%s/seeds.json", out_dir);
    if (m2_report_out_dir_check(out_dir, marker, "results over seeds go", err)) return -1;
    for (int f = 0; f < n_folders; f++)
        if (!strcmp(folders[f], out_dir))
            return m2_errorf(err, M2_EINVAL, "%s: is both an input folder and the output folder", out_dir);
    seed_row *rows;
    int n, *partial = calloc((size_t)n_folders, sizeof *partial);
    if (!partial) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (seeds_read(folders, n_folders, partial, &rows, &n, err)) { free(partial); return -1; }
    int rc = -1;
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "rows"), *fl = cJSON_AddArrayToObject(j, "folders");
    m2_strbuf md = {0}, made_by_md = {0};   /* the "Made by" section goes last */
    m2_bar *bars = calloc((size_t)(n ? n : 1) * 2, sizeof *bars);
    char (*groups)[100] = calloc((size_t)(n ? n : 1), sizeof *groups);
    char (*series)[100] = calloc((size_t)(n ? n : 1), sizeof *series);
    char p[1400];
    if (!bars || !groups || !series || !arr || !fl) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    for (int f = 0; f < n_folders; f++) cJSON_AddItemToArray(fl, cJSON_CreateString(folders[f]));
    m2_strbuf_appendf(&md, "# %s\n\nMean over %d folders (one per training seed) ± standard error (sample standard "
                           "deviation / sqrt(seeds); none for one seed). Folders:", title ? title : "Results over seeds",
                      n_folders);
    for (int f = 0; f < n_folders; f++)
        m2_strbuf_appendf(&md, " %d. `%s`%s", f + 1, folders[f], partial[f] ? " (a demo still running: its finished runs only)" : "");
    int modes = 0;   /* an action-mode column only when a row names its mode */
    for (int r = 0; r < n; r++) modes |= *rows[r].action_mode != 0;
    m2_strbuf_appendf(&md, "\n\n| method | env | split |%s seeds | episodes per seed | success %% | score | steps | "
                           "tokens/episode | System 1 / System 2 tokens | System 1 calls | invalid %% | success %% per seed |\n"
                           "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
                      modes ? " action mode |" : "", modes ? "---|" : "");
    for (int r = 0; r < n; r++) {
        const seed_row *R = &rows[r];
        double sm, sse, cm, cse;
        int k;
        m2_mean_se(R->success, n_folders, &sm, &sse, &k);
        m2_mean_se(R->score, n_folders, &cm, &cse, &k);
        m2_strbuf_appendf(&md, "| %s | %s | %s |", R->method, R->env, R->split);
        if (modes) m2_strbuf_appendf(&md, " %s |", *R->action_mode ? R->action_mode : "-");
        m2_strbuf_appendf(&md, " %d | %.0f |", R->n, R->episodes / R->n);
        put_pm(&md, sm, sse, 100, "%.1f");
        put_pm(&md, cm, cse, 1, "%.3f");
        m2_strbuf_appendf(&md, " %.1f | %.0f |", R->steps / R->n, R->tokens / R->n);
        if (R->n_extra)
            m2_strbuf_appendf(&md, " %.0f / %.0f | %.2f | %.1f |", R->sys1_tokens / R->n_extra, R->sys2_tokens / R->n_extra,
                              R->sys1_calls / R->n_extra, 100 * R->invalid / R->n_extra);
        else m2_strbuf_puts(&md, " - | - | - |");
        for (int f = 0; f < n_folders; f++) {
            if (isfinite(R->success[f])) m2_strbuf_appendf(&md, " %.1f", 100 * R->success[f]);
            else m2_strbuf_puts(&md, " -");
        }
        m2_strbuf_puts(&md, " |\n");
        cJSON *o = cJSON_CreateObject(), *per = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "method", R->method);
        cJSON_AddStringToObject(o, "env", R->env);
        cJSON_AddStringToObject(o, "split", R->split);
        if (*R->action_mode) cJSON_AddStringToObject(o, "action_mode", R->action_mode);
        cJSON_AddNumberToObject(o, "seeds", R->n);
        cJSON_AddNumberToObject(o, "episodes", R->episodes / R->n);
        cJSON_AddNumberToObject(o, "success", sm);
        if (isfinite(sse)) cJSON_AddNumberToObject(o, "success_se", sse); else cJSON_AddNullToObject(o, "success_se");
        cJSON_AddNumberToObject(o, "score", cm);
        if (isfinite(cse)) cJSON_AddNumberToObject(o, "score_se", cse); else cJSON_AddNullToObject(o, "score_se");
        cJSON_AddNumberToObject(o, "steps", R->steps / R->n);
        cJSON_AddNumberToObject(o, "tokens_per_episode", R->tokens / R->n);
        static const char *const extra_keys[4] = {"sys1_tokens_per_episode", "sys2_tokens_per_episode", "sys1_calls",
                                                  "invalid_rate"};
        const double extra[4] = {R->sys1_tokens, R->sys2_tokens, R->sys1_calls, R->invalid};
        for (int x = 0; x < 4; x++) cJSON_AddItemToObject(o, extra_keys[x], num_or_null(R->n_extra ? extra[x] / R->n_extra : NAN));
        for (int f = 0; f < n_folders; f++)
            cJSON_AddItemToArray(per, isfinite(R->success[f]) ? cJSON_CreateNumber(R->success[f]) : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "success_per_seed", per);
        cJSON_AddItemToArray(arr, o);
        snprintf(groups[r], sizeof groups[r], "%s/%s", R->env, R->split);
        m2_report_series_name(R->method, R->action_mode, series[r], sizeof series[r]);
        bars[r] = (m2_bar){.group = groups[r], .series = series[r], .value = 100 * sm, .err = 100 * sse};
        bars[n + r] = (m2_bar){.group = groups[r], .series = series[r], .value = cm, .err = cse};
    }
    if (orderings_over_seeds(rows, n, n_folders, &md, j, err) || rl_stages_over_seeds(folders, n_folders, &md, j, err) ||
        made_by_over_folders(folders, n_folders, &made_by_md, j, err))
        goto out;
    if (md.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    snprintf(p, sizeof p, "%s/plots", out_dir);
    if (m2_mkdir_p(p, err)) goto out;
    {
        char *js = cJSON_Print(j), *mk = NULL;
        cJSON *mj = cJSON_CreateObject();
        cJSON_AddItemReferenceToObject(mj, "folders", fl);
        mk = cJSON_Print(mj);
        cJSON_Delete(mj);
        snprintf(p, sizeof p, "%s/results.json", out_dir);
        int w = js && mk ? m2_write_file_atomic(marker, mk, strlen(mk), err) || m2_write_file_atomic(p, js, strlen(js), err)
                         : m2_errorf(err, M2_ENOMEM, "out of memory");
        cJSON_free(js);
        cJSON_free(mk);
        if (w) goto out;
    }
    {
        const char **names = malloc((size_t)(n ? n : 1) * 2 * sizeof *names);
        if (!names) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
        for (int r = 0; r < n; r++) {
            names[r] = series[r];
            names[n + r] = rows[r].env;
        }
        int f = m2_report_figures(folders, n_folders, names, names + n, n, out_dir, &md, err);
        free(names);
        if (f) goto out;
    }
    if (made_by_md.len) m2_strbuf_puts(&md, made_by_md.p);
    if (md.oom || made_by_md.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    snprintf(p, sizeof p, "%s/results.md", out_dir);
    if (m2_write_file_atomic(p, md.p, md.len, err)) goto out;
    const m2_bar_panel panels[] = {
        {.title = "success rate (%)", .bars = bars, .n = n, .y_max = 100, .decimals = 0},
        {.title = "mean score (0 to 1)", .bars = bars + n, .n = n, .y_max = 1, .decimals = 3}};
    rc = 0;
    for (int f = 0; f < 2 && rc == 0; f++) {
        snprintf(p, sizeof p, "%s/plots/results.%s", out_dir, f ? "png" : "svg");
        rc = m2_chart_bars(panels, 2, title ? title : "mean ± standard error over seeds", p, err);
    }
out:
    cJSON_Delete(j);
    m2_strbuf_free(&md);
    m2_strbuf_free(&made_by_md);
    free(bars);
    free(groups);
    free(series);
    for (int r = 0; r < n; r++) free(rows[r].success);
    free(rows);
    free(partial);
    return rc;
}

int m2_stage_report(m2_stage_ctx *ctx, m2_err *err) {
    m2_result_row *rows;
    int n;
    if (m2_report_collect(ctx->run->dir, m2_method_names[ctx->cfg->method], &rows, &n, err) != 0) return -1;
    int rc = m2_report_write(rows, n, ctx->run->dir, NULL, err);
    if (rc == 0) rc = m2_report_write_task_types(ctx->run->dir, m2_method_names[ctx->cfg->method], ctx->cfg->env_name, err);
    if (rc == 0) {
        char md[1300];
        snprintf(md, sizeof md, "%s/results.md", ctx->run->dir);
        m2_report_run one = {.dir = ctx->run->dir, .method = m2_method_names[ctx->cfg->method], .env = ctx->cfg->env_name};
        rc = m2_report_append_rl_stages(md, &one, 1, err);
    }
    if (rc == 0 && ctx->out) {
        if (n) m2_report_print(rows, n, ctx->out);
        else fprintf(ctx->out, "(no evaluation episodes in %s/eval)\n", ctx->run->dir);
    }
    free(rows);
    return rc;
}
