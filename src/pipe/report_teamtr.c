/* `multi2 report --teamtr`: TeamTR runs grouped over seeds (pipe/report.h m2_report_teamtr), their
 * tables and the paper's Figure-4 panels. Everything is read back from what a run wrote: config.yaml,
 * artifacts/<stage>/eval.json (success before/after, per-stage certificate and measured gain) and
 * metrics.jsonl (per stage the measured success, per update L^, D^ and D^ before the line search). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "pipe/plan.h"
#include "pipe/report.h"
#include "pipe/run_config.h"

#define TR_MAX_RUNS 256
#define TR_MAX_GROUPS 64
#define TR_MAX_SIZES 16

/* One update of a run: its step and the numbers the figures need. */
typedef struct tr_update { int64_t step; double L, D, D_raw; int out; } tr_update;

typedef struct tr_run {
    const char *dir;
    int reference;                /* a Multi² run (another method) beside the hierarchy: its evaluation only */
    char method[32];
    int hier, agents, variant, sys1_frozen;
    long long seed;
    double delta;
    int stages;
    double J0, J;
    double *cert, *gain, *succ;   /* [stages] */
    double *sum_L, *sum_sqrt_D;   /* [stages]: the certificate's two sums */
    tr_update *u;
    int n_u;
    double rank_corr, violation;
    long rollouts;                /* per stage (the first stage's) */
    double eval_id, eval_ood;     /* the eval stage's greedy success (results.json; NaN: none) */
} tr_run;

typedef struct tr_group {
    char label[64];
    int reference;
    int hier, agents, variant, sys1_frozen;
    int run[TR_MAX_RUNS];
    int n;
} tr_group;

static void run_free(tr_run *r) {
    free(r->cert);
    free(r->gain);
    free(r->succ);
    free(r->sum_L);
    free(r->sum_sqrt_D);
    free(r->u);
}

static int num_array(const cJSON *o, const char *key, double **out, int *n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(a)) return -1;
    *n = cJSON_GetArraySize(a);
    if (!(*out = calloc((size_t)(*n ? *n : 1), sizeof **out))) return -1;
    for (int i = 0; i < *n; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        (*out)[i] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    }
    return 0;
}

static double num_of(const cJSON *o, const char *key) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static int by_step(const void *a, const void *b) {
    int64_t x = ((const tr_update *)a)->step, y = ((const tr_update *)b)->step;
    return x < y ? -1 : x > y;
}

/* The per-update series "teamtr/<agent>/<what>" (three parts) of a run's metrics. */
static int read_updates(tr_run *r, const m2_series_set *set, m2_err *err) {
    int cap = 0;
    for (int i = 0; i < set->n; i++) {
        const char *k = set->s[i].key, *slash = strrchr(k, '/');
        if (strncmp(k, "teamtr/", 7) || !slash || slash == k + 6 || strcmp(slash, "/kl_raw")) continue;
        cap += set->s[i].n;
    }
    if (!(r->u = calloc((size_t)(cap ? cap : 1), sizeof *r->u))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    for (int i = 0; i < set->n; i++) {
        const m2_series *raw = &set->s[i];
        const char *k = raw->key, *slash = strrchr(k, '/');
        if (strncmp(k, "teamtr/", 7) || !slash || slash == k + 6 || strcmp(slash, "/kl_raw")) continue;
        char base[200], key[240];
        snprintf(base, sizeof base, "%.*s", (int)(slash - k), k);
        snprintf(key, sizeof key, "%s/kl", base);
        const m2_series *d = m2_series_find(set, key);
        snprintf(key, sizeof key, "%s/surrogate_gain", base);
        const m2_series *l = m2_series_find(set, key);
        snprintf(key, sizeof key, "%s/out_of_region", base);
        const m2_series *o = m2_series_find(set, key);
        if (!d || !l || !o || d->n != raw->n || l->n != raw->n || o->n != raw->n)
            return m2_errorf(err, M2_EFORMAT, "%s/metrics.jsonl: %s has no matching kl, surrogate_gain and out_of_region",
                             r->dir, k);
        for (int j = 0; j < raw->n; j++)
            r->u[r->n_u++] = (tr_update){.step = raw->step[j], .D_raw = raw->value[j], .D = d->value[j], .L = l->value[j],
                                         .out = o->value[j] > 0};
    }
    qsort(r->u, (size_t)r->n_u, sizeof *r->u, by_step);
    return 0;
}

/* The eval stage's greedy success per split from a run's results.json (absent: left NaN). */
static int read_eval(tr_run *r, m2_err *err) {
    char p[1400], *txt = NULL;
    snprintf(p, sizeof p, "%s/results.json", r->dir);
    if (!m2_path_exists(p)) return 0;
    if (m2_read_file(p, &txt, NULL, err)) return -1;
    cJSON *o = cJSON_Parse(txt), *rows = o ? cJSON_GetObjectItemCaseSensitive(o, "rows") : NULL;
    free(txt);
    if (!cJSON_IsArray(rows)) {
        cJSON_Delete(o);
        return m2_errorf(err, M2_EFORMAT, "%s: no \"rows\" array", p);
    }
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(row, "split");
        double v = num_of(row, "success");
        if (!cJSON_IsString(sp)) continue;
        if (!strcmp(sp->valuestring, "id")) r->eval_id = v;
        if (!strcmp(sp->valuestring, "ood")) r->eval_ood = v;
    }
    cJSON_Delete(o);
    return 0;
}

/* One run folder: its config, summary and metrics; a folder that is no finished TeamTR run is an error. */
static int run_read(const char *dir, tr_run *r, m2_err *err) {
    memset(r, 0, sizeof *r);
    r->dir = dir;
    char p[1400];
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_run_config_load(cfg, p, 0, NULL, err);
    r->eval_id = r->eval_ood = NAN;
    if (!rc) {
        snprintf(r->method, sizeof r->method, "%s", m2_method_names[cfg->method]);
        r->reference = !m2_method_of(cfg)->team && !m2_method_of(cfg)->hier_team;
        r->seed = (long long)cfg->run_seed;
    }
    if (!rc && r->reference) {   /* another method's run: only its evaluation, beside the hierarchy's */
        free(cfg);
        if (read_eval(r, err)) return -1;
        if (!isfinite(r->eval_id) && !isfinite(r->eval_ood))
            return m2_errorf(err, M2_EINVAL, "%s: method %s is no TeamTR run and has no evaluated results.json", dir, r->method);
        return 0;
    }
    if (!rc) {
        r->hier = m2_method_of(cfg)->hier_team;
        r->agents = r->hier ? 2 : (int)cfg->teamtr_agents;
        r->variant = cfg->teamtr_variant;
        r->sys1_frozen = r->hier && cfg->teamtr_hier_sys1 == M2_TEAMTR_HIER_SYS1_FROZEN;
        r->delta = cfg->teamtr_variant == M2_TEAMTR_VARIANT_NO_TR ? INFINITY : cfg->teamtr_delta;
    }
    free(cfg);
    if (rc) return -1;
    snprintf(p, sizeof p, "%s/artifacts/%s/eval.json", dir, r->hier ? "teamtr_hier" : "teamtr");
    char *txt = NULL;
    if (m2_read_file(p, &txt, NULL, err)) {
        m2_err_prefix(err, "%s: not a finished TeamTR run: ", dir);
        return -1;
    }
    cJSON *o = cJSON_Parse(txt);
    free(txt);
    int ns = 0, ng = 0;
    if (!o || num_array(o, "certificate", &r->cert, &ns) || num_array(o, "measured_gain", &r->gain, &ng) || ns != ng) {
        cJSON_Delete(o);
        return m2_errorf(err, M2_EFORMAT, "%s: no per-stage certificate and measured_gain arrays of one length", p);
    }
    r->stages = ns;
    r->J0 = num_of(o, "success_before");
    r->J = num_of(o, "success_after");
    r->rank_corr = num_of(o, "rank_corr");
    r->violation = num_of(o, "violation_rate");
    cJSON_Delete(o);
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    m2_series_set set = {0};
    if (m2_metrics_load(p, &set, err)) return -1;
    const m2_series *js = m2_series_find(&set, "teamtr/eval_success"), *ro = m2_series_find(&set, "teamtr/rollouts");
    r->succ = calloc((size_t)(ns ? ns : 1), sizeof *r->succ);
    r->sum_L = calloc((size_t)(ns ? ns : 1), sizeof *r->sum_L);
    r->sum_sqrt_D = calloc((size_t)(ns ? ns : 1), sizeof *r->sum_sqrt_D);
    if (!r->succ || !r->sum_L || !r->sum_sqrt_D) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    else if (!js || js->n != ns) rc = m2_errorf(err, M2_EFORMAT, "%s: %d teamtr/eval_success points for %d stages", p, js ? js->n : 0, ns);
    if (!rc) rc = read_updates(r, &set, err);
    if (!rc) {
        r->rollouts = ro && ro->n ? (long)ro->value[0] : 0;
        /* each update belongs to the first stage whose end step is at or after it */
        int s = 0;
        for (int i = 0; i < r->n_u; i++) {
            while (s < ns && js->step[s] < r->u[i].step) s++;
            if (s == ns) break;
            r->sum_L[s] += r->u[i].L;
            r->sum_sqrt_D[s] += sqrt(r->u[i].D > 0 ? r->u[i].D : 0);
        }
        for (int i = 0; i < ns; i++) r->succ[i] = js->value[i];
    }
    m2_series_free(&set);
    if (!rc && r->hier) rc = read_eval(r, err);
    return rc;
}

static const char *variant_label(const tr_run *r, char *buf, size_t cap) {
    if (r->reference) snprintf(buf, cap, "%s (its own stages)", r->method);
    else if (r->hier) snprintf(buf, cap, "%s, System 1 %s", m2_teamtr_variant_names[r->variant], r->sys1_frozen ? "frozen" : "trained");
    else if (r->agents == 1) snprintf(buf, cap, "single agent");
    else snprintf(buf, cap, "%s", m2_teamtr_variant_names[r->variant]);
    return buf;
}

static int group_of(tr_group *g, int *n_g, const tr_run *r) {
    char label[64];
    variant_label(r, label, sizeof label);
    for (int i = 0; i < *n_g; i++)
        if (g[i].reference == r->reference && g[i].hier == r->hier && g[i].agents == r->agents &&
            g[i].sys1_frozen == r->sys1_frozen && !strcmp(g[i].label, label))
            return i;
    if (*n_g == TR_MAX_GROUPS) return -1;
    tr_group *x = &g[(*n_g)++];
    memset(x, 0, sizeof *x);
    x->hier = r->hier;
    x->agents = r->agents;
    x->variant = r->variant;
    x->sys1_frozen = r->sys1_frozen;
    x->reference = r->reference;
    snprintf(x->label, sizeof x->label, "%s", label);
    return *n_g - 1;
}

/* "0.123 ± 0.004" (or "0.123" for one seed) into md. */
static void put_pm(m2_strbuf *md, double m, double se, const char *fmt) {
    char a[64], b[64];
    snprintf(a, sizeof a, fmt, m);
    m2_strbuf_appendf(md, " %s", a);
    if (isfinite(se)) {   /* the error without the value's sign flag */
        char f2[16];
        size_t k = 0;
        for (const char *c = fmt; *c && k + 1 < sizeof f2; c++)
            if (*c != '+') f2[k++] = *c;
        f2[k] = 0;
        snprintf(b, sizeof b, f2, se);
        m2_strbuf_appendf(md, " ± %s", b);
    }
    m2_strbuf_puts(md, " |");
}

static void json_pm(cJSON *o, const char *key, double m, double se) {
    char k[80];
    if (isfinite(m)) cJSON_AddNumberToObject(o, key, m); else cJSON_AddNullToObject(o, key);
    snprintf(k, sizeof k, "%s_se", key);
    if (isfinite(se)) cJSON_AddNumberToObject(o, k, se); else cJSON_AddNullToObject(o, k);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Per group: numbers over its runs (seeds). */
typedef struct tr_stats {
    double J0, J0_se, J, J_se, gain, gain_se, cert, rank, viol;
    double oor, D_mean, D_max, D_raw_max, c_half, pos_frac;
    long updates, rollouts;
    int stages;
} tr_stats;

static void group_stats(const tr_group *g, const tr_run *runs, tr_stats *s) {
    memset(s, 0, sizeof *s);
    double j0[TR_MAX_RUNS], j1[TR_MAX_RUNS], gn[TR_MAX_RUNS], ce[TR_MAX_RUNS], rk[TR_MAX_RUNS], vi[TR_MAX_RUNS];
    int k, n_c = 0, n_stage_all = 0, outs = 0;
    double dsum = 0;
    for (int i = 0; i < g->n; i++) n_stage_all += runs[g->run[i]].stages;
    double *cs = malloc((size_t)(n_stage_all ? n_stage_all : 1) * sizeof *cs);
    s->stages = g->n ? runs[g->run[0]].stages : 0;
    for (int i = 0; i < g->n; i++) {
        const tr_run *r = &runs[g->run[i]];
        j0[i] = r->J0;
        j1[i] = r->J;
        gn[i] = r->J - r->J0;
        ce[i] = 0;
        for (int t = 0; t < r->stages; t++) ce[i] += r->cert[t];
        rk[i] = r->rank_corr;
        vi[i] = r->violation;
        s->rollouts = r->rollouts;
        for (int q = 0; q < r->n_u; q++) {
            dsum += r->u[q].D;
            outs += r->u[q].out;
            if (r->u[q].D > s->D_max) s->D_max = r->u[q].D;
            if (r->u[q].D_raw > s->D_raw_max) s->D_raw_max = r->u[q].D_raw;
        }
        s->updates += r->n_u;
        /* the c below which a stage's bound sum L - c sum sqrt(D) is positive (only stages with sum L > 0 have one) */
        for (int t = 0; t < r->stages && cs; t++)
            if (r->sum_L[t] > 0 && r->sum_sqrt_D[t] > 0) cs[n_c++] = r->sum_L[t] / r->sum_sqrt_D[t];
    }
    m2_mean_se(j0, g->n, &s->J0, &s->J0_se, &k);
    m2_mean_se(j1, g->n, &s->J, &s->J_se, &k);
    m2_mean_se(gn, g->n, &s->gain, &s->gain_se, &k);
    double se;
    m2_mean_se(ce, g->n, &s->cert, &se, &k);
    m2_mean_se(rk, g->n, &s->rank, &se, &k);
    m2_mean_se(vi, g->n, &s->viol, &se, &k);
    s->oor = s->updates ? (double)outs / s->updates : NAN;
    s->D_mean = s->updates ? dsum / s->updates : NAN;
    s->pos_frac = n_stage_all ? (double)n_c / n_stage_all : NAN;
    s->c_half = NAN;
    if (cs && n_c) {
        qsort(cs, (size_t)n_c, sizeof *cs, cmp_double);
        s->c_half = n_c % 2 ? cs[n_c / 2] : 0.5 * (cs[n_c / 2 - 1] + cs[n_c / 2]);
    }
    free(cs);
}

/* The run of group g with seed `seed` (-1: none). */
static int run_with_seed(const tr_group *g, const tr_run *runs, long long seed) {
    for (int i = 0; i < g->n; i++) if (runs[g->run[i]].seed == seed) return g->run[i];
    return -1;
}

/* Stale penalty of group `other` against TeamTR group `tt` (same size): per seed both have, other's
 * measured gain minus TeamTR's; mean and standard error over those seeds. */
static int penalty(const tr_group *other, const tr_group *tt, const tr_run *runs, double *m, double *se) {
    double d[TR_MAX_RUNS];
    int n = 0, k;
    for (int i = 0; i < other->n; i++) {
        const tr_run *a = &runs[other->run[i]];
        int b = run_with_seed(tt, runs, a->seed);
        if (b >= 0) d[n++] = (a->J - a->J0) - (runs[b].J - runs[b].J0);
    }
    m2_mean_se(d, n, m, se, &k);
    return n;
}

static int find_group(const tr_group *g, int n_g, int hier, int agents, int variant) {
    for (int i = 0; i < n_g; i++)
        if (!g[i].hier && !hier && g[i].agents == agents && g[i].variant == variant) return i;
    return -1;
}

/* ---- charts ---- */

typedef struct tr_chart_mem {   /* every array a chart points at, freed together */
    double **p;
    int n, cap;
    int oom;
} tr_chart_mem;

static double *cm_alloc(tr_chart_mem *m, int n) {
    if (m->n == m->cap) {
        int c = m->cap ? 2 * m->cap : 64;
        double **q = realloc(m->p, (size_t)c * sizeof *q);
        if (!q) { m->oom = 1; return NULL; }
        m->p = q;
        m->cap = c;
    }
    double *x = calloc((size_t)(n > 0 ? n : 1), sizeof *x);
    if (!x) { m->oom = 1; return NULL; }
    return m->p[m->n++] = x;
}

static void cm_free(tr_chart_mem *m) {
    for (int i = 0; i < m->n; i++) free(m->p[i]);
    free(m->p);
}

/* The panel key of a group: its team size (the hierarchy its own). */
static int panel_of(const tr_group *g, const int *sizes, int n_sizes) {
    for (int i = 0; i < n_sizes; i++) if (sizes[i] == (g->hier ? -1 : g->agents)) return i;
    return -1;
}

static int write_chart(const m2_xy_panel *panels, int n, const char *title, const char *out_dir, const char *name,
                       m2_err *err) {
    char p[1400];
    for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, "%s/plots/%s.%s", out_dir, name, f ? "png" : "svg");
        if (m2_chart_xy(panels, n, title, p, err)) return -1;
    }
    return 0;
}

static int charts(const tr_group *g, int n_g, const tr_run *runs, const int *sizes, int n_sizes, const char *out_dir,
                  m2_err *err) {
    tr_chart_mem mem = {0};
    int rc = -1, n_p = n_sizes;
    m2_xy_panel *pan = calloc((size_t)(4 * n_p + 1), sizeof *pan);
    m2_xy_series *ser = calloc((size_t)(4 * (n_g + 1) * TR_MAX_RUNS + 8), sizeof *ser);
    char (*ptitle)[128] = calloc((size_t)(4 * n_p + 1), sizeof *ptitle);
    int ns = 0;
    if (!pan || !ser || !ptitle) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    double delta = NAN;
    for (int i = 0; i < n_g && !isfinite(delta); i++) {
        const tr_run *r = &runs[g[i].run[0]];
        if (isfinite(r->delta)) delta = r->delta;
    }
    /* 1: measured success over stages (mean +- standard error over seeds), a panel per team size */
    for (int p = 0; p < n_p; p++) {
        snprintf(ptitle[p], sizeof ptitle[p], sizes[p] < 0 ? "the hierarchy: sampled success" : "n = %d: sampled success", sizes[p]);
        pan[p] = (m2_xy_panel){.title = ptitle[p], .x_label = "stage", .series = ser + ns, .vline = NAN, .hline = NAN};
        for (int i = 0; i < n_g; i++) {
            if (panel_of(&g[i], sizes, n_sizes) != p) continue;
            int S = runs[g[i].run[0]].stages;
            double *x = cm_alloc(&mem, S + 1), *y = cm_alloc(&mem, S + 1), *e = cm_alloc(&mem, S + 1);
            if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
            for (int t = 0; t <= S; t++) {
                double v[TR_MAX_RUNS];
                int k;
                for (int q = 0; q < g[i].n; q++) {
                    const tr_run *r = &runs[g[i].run[q]];
                    v[q] = t == 0 ? r->J0 : t <= r->stages ? r->succ[t - 1] : NAN;
                }
                x[t] = t;
                m2_mean_se(v, g[i].n, &y[t], &e[t], &k);
            }
            ser[ns++] = (m2_xy_series){.name = g[i].label, .x = x, .y = y, .err = e, .n = S + 1};
            pan[p].n_series++;
        }
    }
    if (write_chart(pan, n_p, "Measured test success over stages", out_dir,
                    "teamtr_success", err))
        goto out;
    /* 2: D^ before the line search, its distribution over every update (ECDF), with delta */
    ns = 0;
    for (int p = 0; p < n_p; p++) {
        snprintf(ptitle[p], sizeof ptitle[p], sizes[p] < 0 ? "the hierarchy: D^ (ECDF)" : "n = %d: D^ (ECDF)", sizes[p]);
        pan[p] = (m2_xy_panel){.title = ptitle[p], .x_label = "D^ before the line search", .series = ser + ns,
                               .vline = delta, .vline_label = "δ", .hline = NAN};
        for (int i = 0; i < n_g; i++) {
            if (panel_of(&g[i], sizes, n_sizes) != p) continue;
            int n = 0;
            for (int q = 0; q < g[i].n; q++) n += runs[g[i].run[q]].n_u;
            double *x = cm_alloc(&mem, n), *y = cm_alloc(&mem, n);
            if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
            int m = 0;
            for (int q = 0; q < g[i].n; q++)
                for (int u = 0; u < runs[g[i].run[q]].n_u; u++) x[m++] = runs[g[i].run[q]].u[u].D_raw;
            qsort(x, (size_t)m, sizeof *x, cmp_double);
            for (int u = 0; u < m; u++) y[u] = (u + 1.0) / m;
            ser[ns++] = (m2_xy_series){.name = g[i].label, .x = x, .y = y, .n = m};
            pan[p].n_series++;
        }
    }
    if (write_chart(pan, n_p, "Per-update token KL before the line search",
                    out_dir, "teamtr_kl", err))
        goto out;
    /* 3: cumulative measured gain (solid) and cumulative bound (dashed), means over seeds */
    ns = 0;
    for (int p = 0; p < n_p; p++) {
        snprintf(ptitle[p], sizeof ptitle[p], sizes[p] < 0 ? "the hierarchy: gain (solid), bound (dashed)"
                                                          : "n = %d: gain (solid), bound (dashed)", sizes[p]);
        pan[p] = (m2_xy_panel){.title = ptitle[p], .x_label = "stage", .series = ser + ns, .vline = NAN, .hline = 0};
        for (int i = 0; i < n_g; i++) {
            if (panel_of(&g[i], sizes, n_sizes) != p) continue;
            int S = runs[g[i].run[0]].stages;
            double *x = cm_alloc(&mem, S + 1), *cg = cm_alloc(&mem, S + 1), *cb = cm_alloc(&mem, S + 1);
            if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
            for (int q = 0; q < g[i].n; q++) {
                const tr_run *r = &runs[g[i].run[q]];
                double a = 0, b = 0;
                for (int t = 1; t <= S && t <= r->stages; t++) {
                    a += r->gain[t - 1];
                    b += r->cert[t - 1];
                    cg[t] += a / g[i].n;
                    cb[t] += b / g[i].n;
                }
            }
            for (int t = 0; t <= S; t++) x[t] = t;
            ser[ns++] = (m2_xy_series){.name = g[i].label, .x = x, .y = cg, .n = S + 1};
            ser[ns++] = (m2_xy_series){.name = g[i].label, .x = x, .y = cb, .n = S + 1, .dashed = 1};
            pan[p].n_series += 2;
        }
    }
    if (write_chart(pan, n_p, "Cumulative gain vs cumulative bound",
                    out_dir, "teamtr_cumulative", err))
        goto out;
    /* 4: per-stage bound against measured gain, every stage of every run, with y = x */
    ns = 0;
    for (int p = 0; p < n_p; p++) {
        snprintf(ptitle[p], sizeof ptitle[p], sizes[p] < 0 ? "the hierarchy: gain (y) vs bound (x)" : "n = %d: gain (y) vs bound (x)", sizes[p]);
        pan[p] = (m2_xy_panel){.title = ptitle[p], .x_label = "certificate (bound) of the stage", .series = ser + ns,
                               .vline = NAN, .hline = NAN, .diagonal = 1};
        for (int i = 0; i < n_g; i++) {
            if (panel_of(&g[i], sizes, n_sizes) != p) continue;
            int n = 0;
            for (int q = 0; q < g[i].n; q++) n += runs[g[i].run[q]].stages;
            double *x = cm_alloc(&mem, n), *y = cm_alloc(&mem, n);
            if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
            int m = 0;
            for (int q = 0; q < g[i].n; q++)
                for (int t = 0; t < runs[g[i].run[q]].stages; t++) {
                    x[m] = runs[g[i].run[q]].cert[t];
                    y[m++] = runs[g[i].run[q]].gain[t];
                }
            ser[ns++] = (m2_xy_series){.name = g[i].label, .x = x, .y = y, .n = m, .dots = 1};
            pan[p].n_series++;
        }
    }
    if (write_chart(pan, n_p, "Per-stage measured gain vs bound",
                    out_dir, "teamtr_bound_vs_gain", err))
        goto out;
    /* 5: the stale penalty against n, beside the O(n) and O(n^2) shapes through its smallest-n value */
    ns = 0;
    {
        static const int others[2] = {M2_TEAMTR_VARIANT_STALE, M2_TEAMTR_VARIANT_STALE_HAPPO};
        static const char *const names[2] = {"stale - TeamTR", "stale_happo - TeamTR"};
        pan[0] = (m2_xy_panel){.title = "baseline's gain minus TeamTR's", .x_label = "agents n",
                               .series = ser, .vline = NAN, .hline = 0};
        for (int v = 0; v < 2; v++) {
            double *x = cm_alloc(&mem, n_sizes), *y = cm_alloc(&mem, n_sizes), *e = cm_alloc(&mem, n_sizes);
            if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
            int m = 0;
            for (int p = 0; p < n_sizes; p++) {
                int a = sizes[p] > 0 ? find_group(g, n_g, 0, sizes[p], others[v]) : -1;
                int b = sizes[p] > 0 ? find_group(g, n_g, 0, sizes[p], M2_TEAMTR_VARIANT_TEAMTR) : -1;
                if (a < 0 || b < 0 || penalty(&g[a], &g[b], runs, &y[m], &e[m]) == 0) continue;
                x[m++] = sizes[p];
            }
            if (m == 0) continue;
            ser[ns++] = (m2_xy_series){.name = names[v], .x = x, .y = y, .err = e, .n = m};
            pan[0].n_series++;
            if (v == 0 && m >= 2) {   /* the predicted shapes through the smallest n */
                double *r1 = cm_alloc(&mem, m), *r2 = cm_alloc(&mem, m);
                if (mem.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
                for (int q = 0; q < m; q++) {
                    r1[q] = y[0] * x[q] / x[0];
                    r2[q] = y[0] * (x[q] / x[0]) * (x[q] / x[0]);
                }
                ser[ns++] = (m2_xy_series){.name = "O(n) through the first point", .x = x, .y = r1, .n = m, .dashed = 1};
                ser[ns++] = (m2_xy_series){.name = "O(n^2) through the first point", .x = x, .y = r2, .n = m, .dashed = 1};
                pan[0].n_series += 2;
            }
        }
    }
    if (pan[0].n_series &&
        write_chart(pan, 1, "Stale penalty against team size", out_dir,
                    "teamtr_stale_penalty", err))
        goto out;
    rc = 0;
out:
    cm_free(&mem);
    free(pan);
    free(ser);
    free(ptitle);
    return rc;
}

/* Team sizes ascending, the hierarchy (key -1) last. */
static int cmp_size(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if ((x < 0) != (y < 0)) return x < 0 ? 1 : -1;
    return (x > y) - (x < y);
}

int m2_report_teamtr(const char *const *dirs, int n_runs, const char *out_dir, const char *title, m2_err *err) {
    if (n_runs < 1 || n_runs > TR_MAX_RUNS) return m2_errorf(err, M2_EINVAL, "report --teamtr: %d folders (1 to %d)", n_runs, TR_MAX_RUNS);
    char marker[1400];
    snprintf(marker, sizeof marker, "%s/teamtr.json", out_dir);
    if (m2_report_out_dir_check(out_dir, marker, "TeamTR reports go", err)) return -1;
    tr_run *runs = calloc((size_t)n_runs, sizeof *runs);
    tr_group *g = calloc(TR_MAX_GROUPS, sizeof *g);
    m2_strbuf md = {0};
    cJSON *j = cJSON_CreateObject(), *arr = j ? cJSON_AddArrayToObject(j, "groups") : NULL;
    int n_g = 0, rc = -1;
    if (!runs || !g || !arr) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    for (int i = 0; i < n_runs; i++) {
        if (run_read(dirs[i], &runs[i], err)) goto out;
        int k = group_of(g, &n_g, &runs[i]);
        if (k < 0) { m2_errorf(err, M2_EINVAL, "report --teamtr: more than %d groups", TR_MAX_GROUPS); goto out; }
        g[k].run[g[k].n++] = i;
    }
    int sizes[TR_MAX_SIZES], n_sizes = 0;
    for (int i = 0; i < n_g; i++) {
        if (g[i].reference) continue;
        int key = g[i].hier ? -1 : g[i].agents, seen = 0;
        for (int q = 0; q < n_sizes; q++) seen |= sizes[q] == key;
        if (!seen && n_sizes < TR_MAX_SIZES) sizes[n_sizes++] = key;
    }
    qsort(sizes, (size_t)n_sizes, sizeof *sizes, cmp_size);
    m2_strbuf_appendf(&md, "# %s\n\n", title ? title : "TeamTR runs over seeds");
    m2_strbuf_puts(&md, "Mean ± standard error over seeds (sample standard deviation / sqrt(seeds)). Success is the "
                        "team's sampled success on the measured-gain plays (the same test tasks and sampling streams "
                        "at every stage); gain = after − before; certificate = Σ over stages of Σ_i L̂_i − c Σ_i √D̂_i "
                        "(c as run); out of region = updates whose iterate passed δ before the line search; c½ = "
                        "median over stages with Σ L̂ > 0 of Σ L̂ / Σ √D̂, the c below which a stage's bound is "
                        "positive (an observation, not a calibrated constant).\n\n");
    m2_strbuf_puts(&md, "| team | variant | seeds | stages | rollouts/stage | success before | success after | gain | "
                        "certificate | rank corr | violation rate | out of region | mean / max D̂ | max D̂ before search | "
                        "stages with Σ L̂ > 0 | c½ |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int q = 0; q < n_sizes; q++)
        for (int i = 0; i < n_g; i++) {
            if ((g[i].hier ? -1 : g[i].agents) != sizes[q]) continue;
            tr_stats s;
            group_stats(&g[i], runs, &s);
            char team[32];
            if (g[i].hier) snprintf(team, sizeof team, "hierarchy");
            else snprintf(team, sizeof team, "n = %d", g[i].agents);
            m2_strbuf_appendf(&md, "| %s | %s | %d | %d | %ld |", team, g[i].label, g[i].n, s.stages, s.rollouts);
            put_pm(&md, s.J0, s.J0_se, "%.3f");
            put_pm(&md, s.J, s.J_se, "%.3f");
            put_pm(&md, s.gain, s.gain_se, "%+.3f");
            char ch[32];
            if (isfinite(s.c_half)) snprintf(ch, sizeof ch, "%.3g", s.c_half);
            else snprintf(ch, sizeof ch, "none");   /* no stage had sum L > 0 */
            m2_strbuf_appendf(&md, " %+.3f | %+.2f | %.2f | %.2f | %.4f / %.4f | %.4f | %.2f | %s |\n", s.cert, s.rank, s.viol,
                              s.oor, s.D_mean, s.D_max, s.D_raw_max, s.pos_frac, ch);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "team", team);
            cJSON_AddStringToObject(o, "variant", g[i].label);
            cJSON_AddNumberToObject(o, "agents", g[i].agents);
            cJSON_AddNumberToObject(o, "seeds", g[i].n);
            cJSON_AddNumberToObject(o, "stages", s.stages);
            cJSON_AddNumberToObject(o, "rollouts_per_stage", (double)s.rollouts);
            json_pm(o, "success_before", s.J0, s.J0_se);
            json_pm(o, "success_after", s.J, s.J_se);
            json_pm(o, "gain", s.gain, s.gain_se);
            cJSON_AddNumberToObject(o, "certificate", s.cert);
            cJSON_AddNumberToObject(o, "rank_corr", s.rank);
            cJSON_AddNumberToObject(o, "violation_rate", s.viol);
            if (isfinite(s.oor)) cJSON_AddNumberToObject(o, "out_of_region_rate", s.oor);
            cJSON_AddNumberToObject(o, "D_mean", s.D_mean);
            cJSON_AddNumberToObject(o, "D_max", s.D_max);
            cJSON_AddNumberToObject(o, "D_raw_max", s.D_raw_max);
            cJSON_AddNumberToObject(o, "positive_sum_L_stage_frac", s.pos_frac);
            if (isfinite(s.c_half)) cJSON_AddNumberToObject(o, "c_half", s.c_half); else cJSON_AddNullToObject(o, "c_half");
            cJSON *sd = cJSON_AddArrayToObject(o, "runs");
            for (int q2 = 0; q2 < g[i].n; q2++) cJSON_AddItemToArray(sd, cJSON_CreateString(runs[g[i].run[q2]].dir));
            cJSON_AddItemToArray(arr, o);
        }
    /* the stale penalty per team size */
    m2_strbuf_puts(&md, "\nStale penalty: the baseline's measured gain minus TeamTR's, per seed both ran (mean ± "
                        "standard error over those seeds). The theory's penalty of stale occupancy grows as O(n²√δ) "
                        "against TeamTR's O(n√δ); the last two columns divide the penalty by n and by n².\n\n"
                        "| n | baseline | paired seeds | penalty | penalty / n | penalty / n² |\n|---:|---|---:|---:|---:|---:|\n");
    cJSON *pj = cJSON_AddArrayToObject(j, "stale_penalty");
    for (int q = 0; q < n_sizes; q++) {
        if (sizes[q] < 2) continue;
        int b = find_group(g, n_g, 0, sizes[q], M2_TEAMTR_VARIANT_TEAMTR);
        static const int others[2] = {M2_TEAMTR_VARIANT_STALE, M2_TEAMTR_VARIANT_STALE_HAPPO};
        for (int v = 0; v < 2 && b >= 0; v++) {
            int a = find_group(g, n_g, 0, sizes[q], others[v]);
            double m, se;
            int k = a >= 0 ? penalty(&g[a], &g[b], runs, &m, &se) : 0;
            if (!k) continue;
            int n = sizes[q];
            m2_strbuf_appendf(&md, "| %d | %s | %d |", n, m2_teamtr_variant_names[others[v]], k);
            put_pm(&md, m, se, "%+.3f");
            m2_strbuf_appendf(&md, " %+.4f | %+.5f |\n", m / n, m / ((double)n * n));
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "agents", n);
            cJSON_AddStringToObject(o, "baseline", m2_teamtr_variant_names[others[v]]);
            cJSON_AddNumberToObject(o, "paired_seeds", k);
            json_pm(o, "penalty", m, se);
            cJSON_AddItemToArray(pj, o);
        }
    }
    /* the hierarchy's greedy evaluation (its eval stage) beside the reference runs of other methods */
    int any_eval = 0;
    for (int i = 0; i < n_g; i++) any_eval |= g[i].hier || g[i].reference;
    if (any_eval) {
        m2_strbuf_puts(&md, "\nThe hierarchy after its stages: the eval stage's greedy success (pass@1) per split, beside "
                            "the other methods' runs given (their own stages, e.g. multi2's online AWAC + KL).\n\n"
                            "| run | seeds | ID success | OOD success |\n|---|---:|---:|---:|\n");
        cJSON *ej = cJSON_AddArrayToObject(j, "evaluation");
        for (int i = 0; i < n_g; i++) {
            if (!g[i].hier && !g[i].reference) continue;
            double id[TR_MAX_RUNS], ood[TR_MAX_RUNS], mi, si, mo, so;
            int k;
            for (int q = 0; q < g[i].n; q++) {
                id[q] = runs[g[i].run[q]].eval_id;
                ood[q] = runs[g[i].run[q]].eval_ood;
            }
            m2_mean_se(id, g[i].n, &mi, &si, &k);
            m2_mean_se(ood, g[i].n, &mo, &so, &k);
            m2_strbuf_appendf(&md, "| %s | %d |", g[i].label, g[i].n);
            put_pm(&md, mi, si, "%.3f");
            put_pm(&md, mo, so, "%.3f");
            m2_strbuf_putc(&md, '\n');
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "run", g[i].label);
            cJSON_AddNumberToObject(o, "seeds", g[i].n);
            json_pm(o, "id_success", mi, si);
            json_pm(o, "ood_success", mo, so);
            cJSON_AddItemToArray(ej, o);
        }
    }
    if (md.oom) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto out; }
    char p[1400];
    snprintf(p, sizeof p, "%s/plots", out_dir);
    if (m2_mkdir_p(p, err)) goto out;
    {
        cJSON *fl = cJSON_AddArrayToObject(j, "folders");
        for (int i = 0; i < n_runs; i++) cJSON_AddItemToArray(fl, cJSON_CreateString(dirs[i]));
        char *js = cJSON_Print(j);
        int w = js ? m2_write_file_atomic(marker, js, strlen(js), err) : m2_errorf(err, M2_ENOMEM, "out of memory");
        cJSON_free(js);
        if (w) goto out;
    }
    snprintf(p, sizeof p, "%s/teamtr.md", out_dir);
    if (m2_write_file_atomic(p, md.p, md.len, err)) goto out;
    rc = charts(g, n_g, runs, sizes, n_sizes, out_dir, err);
out:
    for (int i = 0; runs && i < n_runs; i++) run_free(&runs[i]);   /* calloc'd: an unread one frees nothing */
    free(runs);
    free(g);
    cJSON_Delete(j);
    m2_strbuf_free(&md);
    return rc;
}
