#include "pipe/report.h"
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "core/chart.h"
#include "core/fsutil.h"
#include "core/jsonl.h"
#include "env/env.h"

typedef struct agg { m2_result_row *rows; int n, cap; const char *method; int oom; } agg;

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
        if (!strcmp(a->rows[i].env, env->valuestring) && !strcmp(a->rows[i].split, split->valuestring)) r = &a->rows[i];
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
    }
    r->episodes++;
    r->success += num_or_sum(succ) > 0 ? 1 : 0;
    r->score += m2_env_unit_score(env->valuestring, num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "score")));
    r->steps += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "steps"));
    r->tokens += num_or_sum(cJSON_GetObjectItemCaseSensitive(o, "tokens"));
    return 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int m2_report_collect(const char *run_dir, const char *method, m2_result_row **rows, int *n, m2_err *err) {
    *rows = NULL;
    *n = 0;
    char m[64] = "?";
    if (method) snprintf(m, sizeof m, "%s", method);
    else {
        m2_run_config *cfg = malloc(sizeof *cfg);
        char p[1300];
        snprintf(p, sizeof p, "%s/config.yaml", run_dir);
        if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
        if (m2_run_config_load(cfg, p, 0, NULL, err) != 0) { free(cfg); return -1; }
        snprintf(m, sizeof m, "%.63s", m2_method_names[cfg->method]);
        free(cfg);
    }
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/eval", run_dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[1024];
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 1024) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".jsonl")) names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_name);
    agg a = {.method = m};
    int rc = 0;
    for (int i = 0; i < nn; i++) {
        char p[1600];
        snprintf(p, sizeof p, "%s/%s", dir, names[i] ? names[i] : "");
        if (rc == 0 && names[i] && m2_jsonl_read(p, add_episode, &a, 1, err) != 0) rc = -1;
        free(names[i]);
    }
    if (rc == 0 && a.oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    if (rc != 0) { free(a.rows); return rc; }
    for (int i = 0; i < a.n; i++) {
        double k = (double)a.rows[i].episodes;
        a.rows[i].success /= k;
        a.rows[i].score /= k;
        a.rows[i].steps /= k;
        a.rows[i].tokens /= k;
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
        cJSON_AddNumberToObject(o, "episodes", (double)rows[i].episodes);
        cJSON_AddNumberToObject(o, "success", rows[i].success);
        cJSON_AddNumberToObject(o, "score", rows[i].score);
        cJSON_AddNumberToObject(o, "steps", rows[i].steps);
        cJSON_AddNumberToObject(o, "tokens_per_episode", rows[i].tokens);
        cJSON_AddItemToArray(arr, o);
    }
    char *js = cJSON_Print(j);
    cJSON_Delete(j);
    if (!js) return m2_errorf(err, M2_ENOMEM, "out of memory");
    snprintf(p, sizeof p, "%s/results.json", out_dir);
    int rc = m2_write_file_atomic(p, js, strlen(js), err);
    cJSON_free(js);
    if (rc) return -1;
    /* Markdown table. */
    size_t cap = 512 + (note ? strlen(note) : 0) + (size_t)n * 256;
    char *md = malloc(cap);
    if (!md) return m2_errorf(err, M2_ENOMEM, "out of memory");
    size_t k = (size_t)snprintf(md, cap, "# %s\n\n%s%s| method | env | split | episodes | success %% | score | steps | "
                                         "tokens/episode |\n|---|---|---|---:|---:|---:|---:|---:|\n",
                                title ? title : "Results", note ? note : "", note ? "\n\n" : "");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(md + k, cap - k, "| %s | %s | %s | %ld | %.1f | %.3f | %.1f | %.0f |\n", rows[i].method,
                              rows[i].env, rows[i].split, rows[i].episodes, 100 * rows[i].success, rows[i].score,
                              rows[i].steps, rows[i].tokens);
    if (n == 0 && k < cap) k += (size_t)snprintf(md + k, cap - k, "\n(no evaluation episodes found)\n");
    snprintf(p, sizeof p, "%s/results.md", out_dir);
    rc = m2_write_file_atomic(p, md, strlen(md), err);
    free(md);
    if (rc) return -1;
    /* Chart: groups env/split, one bar per method; success and the 0..1 score in two panels. */
    m2_bar *bars = malloc((size_t)(n ? n : 1) * 2 * sizeof *bars);
    char (*groups)[100] = malloc((size_t)(n ? n : 1) * sizeof *groups);
    if (!bars || !groups) { free(bars); free(groups); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    for (int i = 0; i < n; i++) {
        snprintf(groups[i], sizeof groups[i], "%s/%s", rows[i].env, rows[i].split);
        bars[i] = (m2_bar){groups[i], rows[i].method, 100 * rows[i].success};
        bars[n + i] = (m2_bar){groups[i], rows[i].method, rows[i].score};
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
    fprintf(f, "%-*s  %-*s  %-*s  %8s  %8s  %6s  %6s  %14s\n", wm, "method", we, "env", ws, "split", "episodes",
            "success%", "score", "steps", "tokens/episode");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-*s  %-*s  %-*s  %8ld  %8.1f  %6.3f  %6.1f  %14.0f\n", wm, rows[i].method, we, rows[i].env, ws,
                rows[i].split, rows[i].episodes, 100 * rows[i].success, rows[i].score, rows[i].steps, rows[i].tokens);
}

int m2_report_write_task_types(const char *run_dir, const char *method, const char *env, m2_err *err) {
    char p[1400];
    snprintf(p, sizeof p, "%s/artifacts/eval/eval_summary.json", run_dir);
    if (!m2_path_exists(p)) return 0;   /* no eval stage in this run */
    char *js = NULL, *md = NULL;
    if (m2_read_file(p, &js, NULL, err)) return -1;
    cJSON *sum = cJSON_Parse(js);
    free(js);
    if (!sum) return m2_errorf(err, M2_EFORMAT, "%s: not JSON", p);
    snprintf(p, sizeof p, "%s/results.md", run_dir);
    size_t len = 0;
    if (m2_read_file(p, &md, &len, err)) { cJSON_Delete(sum); return -1; }
    /* the eval stage's aggregate per split and task type (agent/eval.h), as a second table */
    size_t cap = len + 256;
    for (const cJSON *sp = sum->child; sp; sp = sp->next) {
        const cJSON *types = cJSON_GetObjectItemCaseSensitive(sp, "task_types");
        for (const cJSON *t = types ? types->child : NULL; t; t = t->next) cap += 256 + strlen(t->string);
    }
    char *out = malloc(cap);
    if (!out) { free(md); cJSON_Delete(sum); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    size_t k = (size_t)snprintf(out, cap, "%s\n## Per task type\n\n| method | env | split | task type | episodes | success %% | score |\n"
                                          "|---|---|---|---|---:|---:|---:|\n", md);
    free(md);
    for (const cJSON *sp = sum->child; sp; sp = sp->next) {
        const cJSON *types = cJSON_GetObjectItemCaseSensitive(sp, "task_types");
        for (const cJSON *t = types ? types->child : NULL; t && k < cap; t = t->next) {
            const cJSON *ep = cJSON_GetObjectItemCaseSensitive(t, "episodes"), *su = cJSON_GetObjectItemCaseSensitive(t, "pass@1"),
                        *sc = cJSON_GetObjectItemCaseSensitive(t, "score");
            k += (size_t)snprintf(out + k, cap - k, "| %s | %s | %s | %s | %.0f | %.1f | %.3f |\n", method, env, sp->string,
                                  t->string, cJSON_IsNumber(ep) ? ep->valuedouble : 0, cJSON_IsNumber(su) ? 100 * su->valuedouble : 0,
                                  cJSON_IsNumber(sc) ? sc->valuedouble : 0);
        }
    }
    cJSON_Delete(sum);
    int rc = m2_write_file_atomic(p, out, strlen(out), err);
    free(out);
    return rc;
}

int m2_stage_report(m2_stage_ctx *ctx, m2_err *err) {
    m2_result_row *rows;
    int n;
    if (m2_report_collect(ctx->run->dir, m2_method_names[ctx->cfg->method], &rows, &n, err) != 0) return -1;
    int rc = m2_report_write(rows, n, ctx->run->dir, NULL, err);
    if (rc == 0) rc = m2_report_write_task_types(ctx->run->dir, m2_method_names[ctx->cfg->method], ctx->cfg->env_name, err);
    if (rc == 0 && ctx->out) {
        if (n) m2_report_print(rows, n, ctx->out);
        else fprintf(ctx->out, "(no evaluation episodes in %s/eval)\n", ctx->run->dir);
    }
    free(rows);
    return rc;
}
