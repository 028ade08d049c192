/* The figures of results over training seeds (pipe/report.h m2_report_figures): box plots of the
 * per-task-type measure over seeds x types (the paper's Figures 6/7), that measure per task type
 * (its Figure 5), tokens per episode per system, and the online stage's learning curves on ID and
 * OOD. Everything is read back from the folders' evaluation records and metrics.jsonl. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/chart.h"
#include "core/fsutil.h"
#include "core/jsonl.h"
#include "core/run.h"
#include "env/env.h"
#include "pipe/report.h"
#include "pipe/run_config.h"

#define NAME_CAP 100
#define UNTYPED "(no type)"   /* the bucket of records without a task_type */
/* The online stage's learning-curve metrics (pipe/stages.c hook_epoch_end), in this order. */
static const char *const CURVE_KEYS[5] = {"sys2_online/eval_epoch", "sys2_online/eval_id_success",
                                          "sys2_online/eval_id_score", "sys2_online/eval_ood_success",
                                          "sys2_online/eval_ood_score"};
static const char *const CURVE_SPLITS[2] = {"id", "ood"};

/* ---------------------------------------------------------------- what is read */

/* Interned names: an index stands for a string. */
typedef struct names { char (*s)[NAME_CAP]; int n, cap; } names;

static int intern(names *t, const char *s) {
    for (int i = 0; i < t->n; i++) if (!strcmp(t->s[i], s)) return i;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        char (*q)[NAME_CAP] = realloc(t->s, (size_t)cap * sizeof *q);
        if (!q) return -1;
        t->s = q;
        t->cap = cap;
    }
    snprintf(t->s[t->n], NAME_CAP, "%s", s);
    return t->n++;
}

/* One evaluation episode of one folder. */
typedef struct fig_ep {
    int folder, series, env, split, type;   /* type -1: the record names none */
    double measure;                         /* success 0/1, or the 0..1 score where the env scores */
    double sys1_tokens, sys2_tokens;
} fig_ep;

/* One learning-curve evaluation of one folder's run. */
typedef struct fig_point {
    int folder, series, env;
    double epoch, v[4];   /* ID success, ID score, OOD success, OOD score */
} fig_point;

typedef struct fig_data {
    names series, envs, splits, types;
    fig_ep *ep;
    int n_ep, cap_ep;
    fig_point *pt;
    int n_pt, cap_pt;
    int folder;   /* the folder being read */
    int series_now;   /* ... its file's series (-1: the record's method) */
    const char *mode_now;
    int oom;
} fig_data;

/* ScienceWorld's successes are rare and its scores partial: the figures show its 0..1 score, the
 * others' success (an environment whose best score exceeds 1 scores in steps). */
static int scored_env(const char *env) {
    const m2_env_class *c = m2_env_find(env);
    return c && c->score_max > 1;
}

static double num_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? 1 : 0) : 0;
}

static int add_record(void *ctx, const cJSON *o, long line_no) {
    (void)line_no;
    fig_data *d = ctx;
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env"), *split = cJSON_GetObjectItemCaseSensitive(o, "split"),
                *method = cJSON_GetObjectItemCaseSensitive(o, "method"), *type = cJSON_GetObjectItemCaseSensitive(o, "task_type");
    if (!cJSON_IsString(env) || !cJSON_IsString(split) || !cJSON_IsString(method) ||
        !cJSON_GetObjectItemCaseSensitive(o, "success"))
        return 0;   /* not an episode record (m2_report_collect's rule) */
    if (d->n_ep == d->cap_ep) {
        int cap = d->cap_ep ? 2 * d->cap_ep : 256;
        fig_ep *q = realloc(d->ep, (size_t)cap * sizeof *q);
        if (!q) { d->oom = 1; return 1; }
        d->ep = q;
        d->cap_ep = cap;
    }
    char sname[NAME_CAP];
    m2_report_series_name(method->valuestring, d->mode_now, sname, sizeof sname);
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o, "token_counts");
    fig_ep e = {.folder = d->folder, .series = intern(&d->series, sname), .env = intern(&d->envs, env->valuestring),
                .split = intern(&d->splits, split->valuestring),
                .type = cJSON_IsString(type) ? intern(&d->types, type->valuestring) : -1,
                .sys1_tokens = num_of(tc, "sys1_prompt") + num_of(tc, "sys1_gen"),
                .sys2_tokens = num_of(tc, "sys2_prompt") + num_of(tc, "sys2_gen")};
    if (e.series < 0 || e.env < 0 || e.split < 0 || (cJSON_IsString(type) && e.type < 0)) { d->oom = 1; return 1; }
    e.measure = scored_env(env->valuestring) ? m2_env_unit_score(env->valuestring, num_of(o, "score"))
                                             : (num_of(o, "success") > 0 ? 1 : 0);
    d->ep[d->n_ep++] = e;
    return 0;
}

/* The learning-curve points of run_dir/metrics.jsonl, named by its config's method and environment. */
static int read_curves(fig_data *d, const char *run_dir, m2_err *err) {
    char p[1400];
    snprintf(p, sizeof p, "%s/config.yaml", run_dir);
    if (!m2_path_exists(p)) return 0;   /* a reference policy's folder */
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(cfg, p, 0, NULL, err)) { free(cfg); return -1; }
    int series = intern(&d->series, m2_method_names[cfg->method]), env = intern(&d->envs, cfg->env_name);
    free(cfg);
    if (series < 0 || env < 0) return m2_errorf(err, M2_ENOMEM, "out of memory");
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    if (!m2_path_exists(p)) return 0;
    m2_series_set set;
    if (m2_metrics_load(p, &set, err)) return -1;
    const m2_series *s[5];
    for (int k = 0; k < 5; k++) s[k] = m2_series_find(&set, CURVE_KEYS[k]);
    int rc = 0;
    /* the five are logged together, one line per evaluation: their i-th points belong together */
    for (int i = 0; s[0] && i < s[0]->n && rc == 0; i++) {
        fig_point q = {.folder = d->folder, .series = series, .env = env, .epoch = s[0]->value[i]};
        for (int k = 0; k < 4; k++) q.v[k] = s[k + 1] && s[k + 1]->n == s[0]->n ? s[k + 1]->value[i] : NAN;
        if (d->n_pt == d->cap_pt) {
            int cap = d->cap_pt ? 2 * d->cap_pt : 64;
            fig_point *nq = realloc(d->pt, (size_t)cap * sizeof *nq);
            if (!nq) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
            d->pt = nq;
            d->cap_pt = cap;
        }
        d->pt[d->n_pt++] = q;
    }
    m2_series_free(&set);
    return rc;
}

static int read_run(fig_data *d, const char *run_dir, m2_err *err) {
    m2_eval_file *files;
    int nf, rc = 0;
    if (m2_report_eval_files(run_dir, &files, &nf, err)) return -1;
    for (int i = 0; i < nf && rc == 0; i++) {
        char p[1600];
        snprintf(p, sizeof p, "%s/eval/%s", run_dir, files[i].name);
        d->mode_now = files[i].action_mode;
        if (m2_jsonl_read(p, add_record, d, 1, err)) rc = -1;
        else if (d->oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    free(files);
    return rc ? -1 : read_curves(d, run_dir, err);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The sub-folders of dir, sorted (malloc'd names). */
static int sub_folders(const char *dir, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    DIR *dd = opendir(dir);
    if (!dd) return 0;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(dd))) {
        if (e->d_name[0] == '.') continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!is_dir(p)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **q = realloc(*out, (size_t)cap * sizeof *q);
            if (!q) break;
            *out = q;
        }
        if (!((*out)[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(dd);
    if (*n) qsort(*out, (size_t)*n, sizeof **out, cmp_str);
    return 0;
}

static void free_names(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Appends a copy of dir to *dirs when dir/eval is a folder. */
static int add_run_dir(const char *dir, char ***dirs, int *n, int *cap, m2_err *err) {
    char p[2100];
    snprintf(p, sizeof p, "%s/eval", dir);
    if (!is_dir(p)) return 0;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        char **q = realloc(*dirs, (size_t)c * sizeof *q);
        if (!q) return m2_errorf(err, M2_ENOMEM, "out of memory");
        *dirs = q;
        *cap = c;
    }
    if (!((*dirs)[*n] = strdup(dir))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    (*n)++;
    return 0;
}

int m2_report_folder_runs(const char *folder, char ***dirs, int *n, m2_err *err) {
    *dirs = NULL;
    *n = 0;
    int cap = 0, rc = add_run_dir(folder, dirs, n, &cap, err);
    if (rc == 0 && *n == 0) {   /* not a run: a demo's FOLDER/<env>/<method> */
        char top[1400];
        snprintf(top, sizeof top, "%s/results.json", folder);
        int running = !m2_path_exists(top);   /* a demo still running: its finished runs only */
        char **a;
        int na;
        sub_folders(folder, &a, &na);
        for (int i = 0; i < na && rc == 0; i++) {
            char pa[1400], **b;
            int nb;
            snprintf(pa, sizeof pa, "%s/%s", folder, a[i]);
            sub_folders(pa, &b, &nb);
            for (int j = 0; j < nb && rc == 0; j++) {
                char pb[2000];
                snprintf(pb, sizeof pb, "%s/%s", pa, b[j]);
                char done[2100];
                snprintf(done, sizeof done, "%s/results.json", pb);
                if (running && !m2_path_exists(done)) continue;   /* still training or evaluating */
                rc = add_run_dir(pb, dirs, n, &cap, err);
            }
            free_names(b, nb);
        }
        free_names(a, na);
    }
    if (rc) { free_names(*dirs, *n); *dirs = NULL; *n = 0; }
    return rc;
}

void m2_report_folder_runs_free(char **dirs, int n) { free_names(dirs, n); }

static int read_folder(fig_data *d, const char *folder, m2_err *err) {
    char **runs;
    int n, rc = m2_report_folder_runs(folder, &runs, &n, err);
    for (int i = 0; i < n && rc == 0; i++) rc = read_run(d, runs[i], err);
    free_names(runs, n);
    return rc;
}

/* ---------------------------------------------------------------- aggregates */

/* Per (folder, series, env, split, type): episodes and the sum of their measure. */
typedef struct cell { int folder, series, env, split, type; int n; double sum; } cell;

static int cell_of(cell **c, int *n, int *cap, const fig_ep *e, int type) {
    for (int i = *n - 1; i >= 0; i--) {
        const cell *x = &(*c)[i];
        if (x->folder == e->folder && x->series == e->series && x->env == e->env && x->split == e->split && x->type == type)
            return i;
    }
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        cell *q = realloc(*c, (size_t)nc * sizeof *q);
        if (!q) return -1;
        *c = q;
        *cap = nc;
    }
    (*c)[*n] = (cell){.folder = e->folder, .series = e->series, .env = e->env, .split = e->split, .type = type};
    return (*n)++;
}

/* The measure's name on a panel, and its scale and decimals. */
static void measure_of(const char *env, const char **what, double *scale, int *decimals) {
    int sc = scored_env(env);
    *what = sc ? "mean score (0 to 1)" : "success rate (%)";
    *scale = sc ? 1 : 100;
    *decimals = sc ? 3 : 0;
}

/* Writes out_dir/plots/<name>.svg and .png with draw(...), or removes them when there is nothing to
 * draw (an older report's file would otherwise stand for this one's). */
typedef int (*figure_fn)(const void *ud, const char *path, m2_err *err);
static int write_figure(const char *out_dir, const char *name, int have, figure_fn draw, const void *ud, m2_err *err) {
    static const char *const ext[2] = {"svg", "png"};
    for (int f = 0; f < 2; f++) {
        char p[1400];
        snprintf(p, sizeof p, "%s/plots/%s.%s", out_dir, name, ext[f]);
        if (!have) { if (m2_path_exists(p)) remove(p); continue; }
        if (draw(ud, p, err)) return -1;
    }
    return 0;
}

typedef struct bars_fig { const m2_bar_panel *panels; int n; const char *title; } bars_fig;
static int draw_bars_fig(const void *ud, const char *path, m2_err *err) {
    const bars_fig *b = ud;
    return m2_chart_bars(b->panels, b->n, b->title, path, err);
}
typedef struct xy_fig { const m2_xy_panel *panels; int n; const char *title; } xy_fig;
static int draw_xy_fig(const void *ud, const char *path, m2_err *err) {
    const xy_fig *b = ud;
    return m2_chart_xy(b->panels, b->n, b->title, path, err);
}

/* ---------------------------------------------------------------- the figures */

/* Box plots: one panel per environment, a box per split and series of the per-type measure of
 * every folder (a record without a type counts alone). */
static int fig_boxes(const fig_data *d, const cell *c, int nc, const char *out_dir, m2_strbuf *md, m2_err *err) {
    int nb = d->envs.n * d->splits.n * d->series.n, rc = -1, n_panels = 0;
    m2_bar *bars = calloc((size_t)(nb ? nb : 1), sizeof *bars);
    m2_box *boxes = calloc((size_t)(nb ? nb : 1), sizeof *boxes);
    double *vals = malloc((size_t)(nc + d->n_ep + 1) * sizeof *vals);
    m2_bar_panel *panels = calloc((size_t)(d->envs.n ? d->envs.n : 1), sizeof *panels);
    char (*titles)[160] = calloc((size_t)(d->envs.n ? d->envs.n : 1), sizeof *titles);
    if (!bars || !boxes || !vals || !panels || !titles) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    int k = 0, used = 0;
    for (int e = 0; e < d->envs.n; e++) {
        const char *what;
        double scale;
        int dec, first = k;
        measure_of(d->envs.s[e], &what, &scale, &dec);
        for (int sp = 0; sp < d->splits.n; sp++)
            for (int s = 0; s < d->series.n; s++) {
                int m = 0;
                double *v = vals + used;
                for (int i = 0; i < nc; i++)
                    if (c[i].env == e && c[i].split == sp && c[i].series == s && c[i].type >= 0) v[m++] = scale * c[i].sum / c[i].n;
                for (int i = 0; i < d->n_ep; i++)
                    if (d->ep[i].env == e && d->ep[i].split == sp && d->ep[i].series == s && d->ep[i].type < 0)
                        v[m++] = scale * d->ep[i].measure;
                if (!m) continue;
                m2_box_of(v, m, &boxes[k]);
                used += m;
                bars[k] = (m2_bar){.group = d->splits.s[sp], .series = d->series.s[s], .box = &boxes[k]};
                k++;
            }
        if (k == first) continue;
        snprintf(titles[n_panels], sizeof titles[n_panels], "%s: %s per task type", d->envs.s[e], what);
        panels[n_panels] = (m2_bar_panel){.title = titles[n_panels], .bars = bars + first, .n = k - first,
                                          .y_max = scale, .decimals = dec};
        n_panels++;
    }
    bars_fig f = {.panels = panels, .n = n_panels, .title = "box plots over seeds x task types"};
    rc = write_figure(out_dir, "boxes", n_panels > 0, draw_bars_fig, &f, err);
    if (rc == 0 && n_panels)
        m2_strbuf_puts(md, "- `plots/boxes.svg|png`: per environment, split and method, the distribution over seeds x "
                           "task types of the success rate of each task type (ScienceWorld: the mean score; a record "
                           "without a type counts alone): median, quartiles, whiskers to the last value within 1.5 IQR, "
                           "the values beyond as dots (the paper's Figures 6 and 7).\n");
out:
    free(bars);
    free(boxes);
    free(vals);
    free(panels);
    free(titles);
    return rc;
}

/* Removes out_dir/plots/<prefix>*.svg|png: the per-environment files of an earlier report. */
static void remove_figures(const char *out_dir, const char *prefix) {
    char dir[1400];
    snprintf(dir, sizeof dir, "%s/plots", out_dir);
    DIR *dd = opendir(dir);
    if (!dd) return;
    struct dirent *e;
    size_t n = strlen(prefix);
    while ((e = readdir(dd))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, n) || l < 4 || (strcmp(e->d_name + l - 4, ".svg") && strcmp(e->d_name + l - 4, ".png")))
            continue;
        char p[1800];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(dd);
}

/* Per task type, one file per environment (each has its own types): a panel per split, a group per
 * task type, a bar per series with the mean over folders of each folder's per-type measure +- its
 * standard error. */
static int fig_buckets(const fig_data *d, const cell *c, int nc, int n_folders, const char *out_dir, m2_strbuf *md,
                       m2_strbuf *table, m2_err *err) {
    int nt = d->types.n + 1;   /* + UNTYPED */
    int nb = d->splits.n * d->series.n * nt, np = d->splits.n ? d->splits.n : 1, rc = -1, files = 0;
    m2_bar *bars = calloc((size_t)(nb ? nb : 1), sizeof *bars);
    m2_bar_panel *panels = calloc((size_t)np, sizeof *panels);
    char (*titles)[160] = calloc((size_t)np, sizeof *titles);
    double *per = malloc((size_t)n_folders * sizeof *per);
    int *order = malloc((size_t)nt * sizeof *order);
    if (!bars || !panels || !titles || !per || !order) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    remove_figures(out_dir, "buckets_");
    /* task types by name ("depth 1" before "depth 2"), records without one last */
    for (int t = 0; t < d->types.n; t++) order[t] = t;
    for (int i = 1; i < d->types.n; i++)
        for (int j = i; j > 0 && strcmp(d->types.s[order[j - 1]], d->types.s[order[j]]) > 0; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    order[nt - 1] = -1;
    rc = 0;
    for (int e = 0; e < d->envs.n && rc == 0; e++) {
        const char *what;
        double scale;
        int dec, k = 0, n_panels = 0;
        measure_of(d->envs.s[e], &what, &scale, &dec);
        int tdec = dec ? dec : 1;   /* the table's decimals: success % to one place */
        for (int sp = 0; sp < d->splits.n; sp++) {
            int first = k;
            for (int ti = 0; ti < nt; ti++)
                for (int s = 0; s < d->series.n; s++) {
                    int t = order[ti], any = 0;
                    for (int f = 0; f < n_folders; f++) per[f] = NAN;
                    for (int i = 0; i < nc; i++)
                        if (c[i].env == e && c[i].split == sp && c[i].series == s && c[i].type == t) {
                            per[c[i].folder] = scale * c[i].sum / c[i].n;
                            any = 1;
                        }
                    if (!any) continue;
                    double mean, se;
                    int m;
                    m2_mean_se(per, n_folders, &mean, &se, &m);
                    bars[k++] = (m2_bar){.group = t >= 0 ? d->types.s[t] : UNTYPED, .series = d->series.s[s],
                                         .value = mean, .err = se};
                    if (!table->len)
                        m2_strbuf_puts(table, "\n## By task type\n\nThe numbers of `plots/buckets_<env>`: per environment, "
                                              "split, task type and method, the mean over seed folders of each folder's "
                                              "success rate in % (ScienceWorld: mean score) on that type ± standard error, "
                                              "and each folder's value.\n\n| env | split | task type | method | seeds | "
                                              "mean | per seed |\n|---|---|---|---|---:|---:|---|\n");
                    m2_strbuf_appendf(table, "| %s | %s | %s | %s | %d | %.*f", d->envs.s[e], d->splits.s[sp],
                                      t >= 0 ? d->types.s[t] : UNTYPED, d->series.s[s], m, tdec, mean);
                    if (isfinite(se)) m2_strbuf_appendf(table, " ± %.*f", tdec, se);
                    m2_strbuf_puts(table, " |");
                    for (int f = 0; f < n_folders; f++) {
                        if (isfinite(per[f])) m2_strbuf_appendf(table, " %.*f", tdec, per[f]);
                        else m2_strbuf_puts(table, " -");
                    }
                    m2_strbuf_puts(table, " |\n");
                }
            if (k == first) continue;
            snprintf(titles[n_panels], sizeof titles[n_panels], "%s %s: %s by task type", d->envs.s[e], d->splits.s[sp], what);
            panels[n_panels] = (m2_bar_panel){.title = titles[n_panels], .bars = bars + first, .n = k - first,
                                              .y_max = scale, .decimals = dec};
            n_panels++;
        }
        if (!n_panels) continue;
        char name[NAME_CAP + 16], title[NAME_CAP + 80];
        snprintf(name, sizeof name, "buckets_%s", d->envs.s[e]);
        snprintf(title, sizeof title, "%s by task type (mean +- s.e.)", d->envs.s[e]);
        bars_fig f = {.panels = panels, .n = n_panels, .title = title};
        rc = write_figure(out_dir, name, 1, draw_bars_fig, &f, err);
        files++;
    }
    if (rc == 0 && files)
        m2_strbuf_puts(md, "- `plots/buckets_<env>.svg|png`: per split, the success rate (ScienceWorld: the mean score) "
                           "of each task type — TextCraft's crafting depth, ALFWorld's task type, ScienceWorld's task — "
                           "per method: the mean over seeds of each seed's rate, whiskers +- its standard error (the "
                           "paper's Figure 5).\n");
out:
    free(bars);
    free(panels);
    free(titles);
    free(per);
    free(order);
    return rc;
}

/* Tokens per episode: two panels (System 1, System 2), a group per environment/split, a bar per
 * series with a model (a reference policy spends none), mean over folders +- standard error. */
static int fig_tokens(const fig_data *d, int n_folders, const char *out_dir, m2_strbuf *md, m2_err *err) {
    int ng = d->envs.n * d->splits.n, nb = ng * d->series.n, rc = -1;
    m2_bar *bars = calloc((size_t)(nb ? nb : 1) * 2, sizeof *bars);
    char (*groups)[NAME_CAP * 2] = calloc((size_t)(ng ? ng : 1), sizeof *groups);
    double *acc = calloc((size_t)n_folders * 3, sizeof *acc), *per = malloc((size_t)n_folders * 2 * sizeof *per);
    double *spent = calloc((size_t)(d->series.n ? d->series.n : 1), sizeof *spent);
    if (!bars || !groups || !acc || !per || !spent) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    for (int i = 0; i < d->n_ep; i++) spent[d->ep[i].series] += d->ep[i].sys1_tokens + d->ep[i].sys2_tokens;
    int k = 0;
    for (int e = 0; e < d->envs.n; e++)
        for (int sp = 0; sp < d->splits.n; sp++) {
            int g = e * d->splits.n + sp;
            snprintf(groups[g], sizeof groups[g], "%s/%s", d->envs.s[e], d->splits.s[sp]);
            for (int s = 0; s < d->series.n; s++) {
                if (!(spent[s] > 0)) continue;
                memset(acc, 0, (size_t)n_folders * 3 * sizeof *acc);   /* per folder: episodes, System 1, System 2 */
                for (int i = 0; i < d->n_ep; i++) {
                    const fig_ep *x = &d->ep[i];
                    if (x->env != e || x->split != sp || x->series != s) continue;
                    acc[3 * x->folder] += 1;
                    acc[3 * x->folder + 1] += x->sys1_tokens;
                    acc[3 * x->folder + 2] += x->sys2_tokens;
                }
                int any = 0;
                for (int f = 0; f < n_folders; f++) {
                    per[f] = acc[3 * f] > 0 ? acc[3 * f + 1] / acc[3 * f] : NAN;
                    per[n_folders + f] = acc[3 * f] > 0 ? acc[3 * f + 2] / acc[3 * f] : NAN;
                    any |= acc[3 * f] > 0;
                }
                if (!any) continue;
                double m1, se1, m2, se2;
                int c1, c2;
                m2_mean_se(per, n_folders, &m1, &se1, &c1);
                m2_mean_se(per + n_folders, n_folders, &m2, &se2, &c2);
                bars[k] = (m2_bar){.group = groups[g], .series = d->series.s[s], .value = m1, .err = se1};
                bars[nb + k] = (m2_bar){.group = groups[g], .series = d->series.s[s], .value = m2, .err = se2};
                k++;
            }
        }
    const m2_bar_panel panels[2] = {
        {.title = "System 1 (planner): prompt + generated", .bars = bars, .n = k},
        {.title = "System 2 (executor): prompt + generated or scored", .bars = bars + nb, .n = k}};
    bars_fig f = {.panels = panels, .n = 2, .title = "tokens per episode: mean over seeds +- s.e."};
    rc = write_figure(out_dir, "tokens", k > 0, draw_bars_fig, &f, err);
    if (rc == 0 && k)
        m2_strbuf_puts(md, "- `plots/tokens.svg|png`: tokens per episode of System 1 and of System 2 (prompt tokens "
                           "prefilled plus tokens generated, or scored in score mode; the records' `token_counts`) per "
                           "environment, split and method with a model: mean over seeds +- standard error.\n");
out:
    free(bars);
    free(groups);
    free(acc);
    free(per);
    free(spent);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Online learning curves: a panel per (environment, split), a line per series through the mean over
 * folders at each logged epoch, whiskers +- the standard error. */
static int fig_online(const fig_data *d, int n_folders, const char *out_dir, m2_strbuf *md, m2_err *err) {
    int np = d->envs.n * 2, nl = np * d->series.n, rc = -1, n_panels = 0;
    m2_xy_panel *panels = calloc((size_t)(np ? np : 1), sizeof *panels);
    m2_xy_series *lines = calloc((size_t)(nl ? nl : 1), sizeof *lines);
    char (*titles)[160] = calloc((size_t)(np ? np : 1), sizeof *titles);
    /* per line: x, y, err over the distinct epochs (at most the points there are) */
    double *xs = malloc((size_t)(d->n_pt + 1) * 3 * (size_t)(nl ? nl : 1) * sizeof *xs);
    double *per = malloc((size_t)n_folders * sizeof *per);
    if (!panels || !lines || !titles || !xs || !per) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    int k = 0;
    size_t used = 0;
    for (int e = 0; e < d->envs.n; e++)
        for (int sp = 0; sp < 2; sp++) {
            const char *what;
            double scale;
            int dec, first = k, vi = 2 * sp + (scored_env(d->envs.s[e]) ? 1 : 0);
            measure_of(d->envs.s[e], &what, &scale, &dec);
            for (int s = 0; s < d->series.n; s++) {
                double *x = xs + used, *y, *se;
                int n = 0;
                for (int i = 0; i < d->n_pt; i++)
                    if (d->pt[i].env == e && d->pt[i].series == s && isfinite(d->pt[i].epoch)) x[n++] = d->pt[i].epoch;
                if (!n) continue;
                qsort(x, (size_t)n, sizeof *x, cmp_double);
                int u = 0;
                for (int i = 0; i < n; i++) if (!u || x[i] != x[u - 1]) x[u++] = x[i];
                y = x + u;
                se = y + u;
                for (int j = 0; j < u; j++) {
                    for (int f = 0; f < n_folders; f++) per[f] = NAN;
                    for (int i = 0; i < d->n_pt; i++)
                        if (d->pt[i].env == e && d->pt[i].series == s && d->pt[i].epoch == x[j]) per[d->pt[i].folder] = scale * d->pt[i].v[vi];
                    int m;
                    m2_mean_se(per, n_folders, &y[j], &se[j], &m);
                }
                used += (size_t)3 * u;
                lines[k++] = (m2_xy_series){.name = d->series.s[s], .x = x, .y = y, .err = se, .n = u};
            }
            if (k == first) continue;
            snprintf(titles[n_panels], sizeof titles[n_panels], "%s %s: greedy %s", d->envs.s[e], CURVE_SPLITS[sp], what);
            panels[n_panels] = (m2_xy_panel){.title = titles[n_panels], .x_label = "online epoch", .series = lines + first,
                                             .n_series = k - first, .vline = NAN, .hline = NAN, .y_min = 0, .y_max = scale};
            n_panels++;
        }
    xy_fig f = {.panels = panels, .n = n_panels, .title = "online learning curves: mean over seeds +- s.e."};
    rc = write_figure(out_dir, "online", n_panels > 0, draw_xy_fig, &f, err);
    if (rc == 0)
        m2_strbuf_puts(md, n_panels ? "- `plots/online.svg|png`: the online stage's greedy evaluations on the first "
                                      "`sys2.online.eval_episodes` ID and OOD episodes, before its first epoch and after "
                                      "every `sys2.online.eval_every` epochs, per environment, split and method: mean "
                                      "over seeds at each epoch +- standard error.\n"
                                    : "- No online learning curves: no run logged `sys2_online/eval_*` (set "
                                      "`sys2.online.eval_every`).\n");
out:
    free(panels);
    free(lines);
    free(titles);
    free(xs);
    free(per);
    return rc;
}

int m2_report_figures(const char *const *folders, int n_folders, const char *const *series, const char *const *envs,
                      int n_rows, const char *out_dir, m2_strbuf *md, m2_err *err) {
    fig_data d = {0};
    cell *c = NULL;
    m2_strbuf table = {0};   /* the task-type numbers, after the figures' list */
    int nc = 0, cap = 0, rc = -1;
    for (int i = 0; i < n_rows; i++)
        if (intern(&d.series, series[i]) < 0 || intern(&d.envs, envs[i]) < 0) {
            m2_errorf(err, M2_ENOMEM, "out of memory");
            goto out;
        }
    for (int f = 0; f < n_folders; f++) {
        d.folder = f;
        if (read_folder(&d, folders[f], err)) { m2_err_prefix(err, "%s: ", folders[f]); goto out; }
    }
    /* the per-type cells of every folder (records without a type in their own cell) */
    for (int i = 0; i < d.n_ep; i++) {
        int j = cell_of(&c, &nc, &cap, &d.ep[i], d.ep[i].type);
        if (j < 0) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
        c[j].n++;
        c[j].sum += d.ep[i].measure;
    }
    char p[1400];
    snprintf(p, sizeof p, "%s/plots", out_dir);
    if (m2_mkdir_p(p, err)) goto out;
    m2_strbuf_puts(md, "\n## Figures\n\nFrom every evaluation record and `metrics.jsonl` of the folders' runs; each "
                       "as SVG and PNG.\n\n");
    if (!d.n_ep) m2_strbuf_puts(md, "- No box plots, task-type bars or token charts: the folders hold no evaluation records.\n");
    if (fig_boxes(&d, c, nc, out_dir, md, err) || fig_buckets(&d, c, nc, n_folders, out_dir, md, &table, err) ||
        fig_tokens(&d, n_folders, out_dir, md, err) || fig_online(&d, n_folders, out_dir, md, err))
        goto out;
    m2_strbuf_append(md, table.p, table.len);
    rc = md->oom || table.oom ? m2_errorf(err, M2_ENOMEM, "out of memory") : 0;
out:
    m2_strbuf_free(&table);
    free(c);
    free(d.ep);
    free(d.pt);
    free(d.series.s);
    free(d.envs.s);
    free(d.splits.s);
    free(d.types.s);
    return rc;
}
