#include "core/chart.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/canvas.h"
#include "core/fsutil.h"

static const uint32_t palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

/* "Nice" tick spacing (1, 2, 5 x 10^k) for about n ticks over [lo, hi]. */
static double nice_step(double lo, double hi, int n) {
    double span = hi - lo;
    if (!(span > 0)) span = fabs(hi) > 0 ? fabs(hi) : 1;
    double raw = span / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

static void fmt_tick(double v, double step, char *buf, size_t cap) {
    if (fabs(v) < step * 1e-6) v = 0;
    double a = fabs(v);
    if (a != 0 && (a >= 1e5 || a < 1e-3)) snprintf(buf, cap, "%.1e", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        if (dec > 6) dec = 6;
        snprintf(buf, cap, "%.*f", dec, v);
    }
}

/* Draws axes with ticks into the box (x, y, w, h) for data ranges, returns the data->pixel maps. */
typedef struct axes { double x, y, w, h, x0, x1, y0, y1; } axes;
static double ax_px(const axes *a, double v) { return a->x + (v - a->x0) / (a->x1 - a->x0) * a->w; }
static double ax_py(const axes *a, double v) { return a->y + a->h - (v - a->y0) / (a->y1 - a->y0) * a->h; }

static void draw_axes(m2_canvas *c, axes *a, int x_ticks) {
    double ys = nice_step(a->y0, a->y1, 4);
    a->y0 = floor(a->y0 / ys) * ys;
    a->y1 = ceil(a->y1 / ys) * ys;
    if (a->y1 <= a->y0) a->y1 = a->y0 + ys;
    m2_canvas_rect(c, a->x, a->y, a->w, a->h, 0xffffff, 0xbbbbbb);
    char t[64];
    for (double v = a->y0; v <= a->y1 + ys * 0.5; v += ys) {
        double py = ax_py(a, v);
        m2_canvas_line(c, a->x, py, a->x + a->w, py, 0xeeeeee, 1);
        m2_canvas_line(c, a->x - 4, py, a->x, py, 0x333333, 1);
        fmt_tick(v, ys, t, sizeof t);
        m2_canvas_text(c, a->x - 6, py + 4, t, 11, M2_ANCHOR_END, 0x333333);
    }
    if (x_ticks) {
        double xs = nice_step(a->x0, a->x1, 4);
        for (double v = ceil(a->x0 / xs) * xs; v <= a->x1 + xs * 1e-9; v += xs) {
            double px = ax_px(a, v);
            m2_canvas_line(c, px, a->y + a->h, px, a->y + a->h + 4, 0x333333, 1);
            fmt_tick(v, xs, t, sizeof t);
            m2_canvas_text(c, px, a->y + a->h + 16, t, 11, M2_ANCHOR_MIDDLE, 0x333333);
        }
    }
    m2_canvas_line(c, a->x, a->y + a->h, a->x + a->w, a->y + a->h, 0x333333, 1);
    m2_canvas_line(c, a->x, a->y, a->x, a->y + a->h, 0x333333, 1);
}

int m2_chart_curves(const m2_series_set *set, const char *const *keys, int n_keys, const char *title,
                    const char *out_path, m2_err *err) {
    const m2_series *sel[256];
    int n = 0;
    if (keys) {
        for (int i = 0; i < n_keys && n < 256; i++) {
            const m2_series *s = m2_series_find(set, keys[i]);
            if (!s) return m2_errorf(err, M2_ENOTFOUND, "%s: no metric '%s' to plot", out_path, keys[i]);
            sel[n++] = s;
        }
    } else {
        for (int i = 0; i < set->n && n < 256; i++) sel[n++] = &set->s[i];
    }
    const double pw = 340, ph = 230, top = title ? 40 : 10;
    int cols = n < 3 ? (n ? n : 1) : 3, rows = n ? (n + cols - 1) / cols : 1;
    m2_canvas *c = m2_canvas_new((int)(cols * pw), (int)(rows * ph + top));
    if (!c) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (title) m2_canvas_text(c, cols * pw / 2, 26, title, 16, M2_ANCHOR_MIDDLE, 0x111111);
    if (n == 0) m2_canvas_text(c, pw / 2, top + ph / 2, "no metrics yet", 13, M2_ANCHOR_MIDDLE, 0x777777);
    for (int k = 0; k < n; k++) {
        const m2_series *s = sel[k];
        double ox = (k % cols) * pw, oy = top + (k / cols) * ph;
        axes a = {ox + 62, oy + 28, pw - 80, ph - 62, 0, 1, 0, 1};
        int have = 0;
        for (int i = 0; i < s->n; i++) {
            double v = s->value[i];
            if (!isfinite(v)) continue;
            double x = (double)s->step[i];
            if (!have) { a.x0 = a.x1 = x; a.y0 = a.y1 = v; have = 1; }
            if (x < a.x0) a.x0 = x;
            if (x > a.x1) a.x1 = x;
            if (v < a.y0) a.y0 = v;
            if (v > a.y1) a.y1 = v;
        }
        if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
        if (a.y1 <= a.y0) { double d = fabs(a.y0) > 0 ? fabs(a.y0) * 0.1 : 1; a.y0 -= d; a.y1 += d; }
        m2_canvas_text(c, ox + pw / 2, oy + 18, s->key, 13, M2_ANCHOR_MIDDLE, 0x111111);
        draw_axes(c, &a, 1);
        /* One polyline per run of finite points. */
        double *pts = malloc((size_t)(s->n ? s->n : 1) * 2 * sizeof(double));
        if (!pts) { m2_canvas_free(c); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
        int np = 0;
        for (int i = 0; i <= s->n; i++) {
            if (i < s->n && isfinite(s->value[i])) {
                pts[2 * np] = ax_px(&a, (double)s->step[i]);
                pts[2 * np + 1] = ax_py(&a, s->value[i]);
                np++;
                continue;
            }
            if (np == 1) m2_canvas_rect(c, pts[0] - 1.5, pts[1] - 1.5, 3, 3, palette[k % 10], palette[k % 10]);
            else if (np > 1) m2_canvas_polyline(c, pts, np, palette[k % 10], 1.5);
            np = 0;
        }
        free(pts);
        m2_canvas_text(c, a.x + a.w, a.y + a.h + 30, "step", 11, M2_ANCHOR_END, 0x555555);
    }
    int rc = m2_canvas_save(c, out_path, err);
    m2_canvas_free(c);
    return rc;
}

static int index_of(const char **names, int n, const char *s) {
    for (int i = 0; i < n; i++) if (!strcmp(names[i], s)) return i;
    return -1;
}

int m2_chart_bars(const m2_bar *bars, int n, const char *title, const char *y_label, const char *out_path,
                  m2_err *err) {
    const char *groups[64], *series[32];
    int ng = 0, ns = 0;
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        if (index_of(groups, ng, bars[i].group) < 0) {
            if (ng == 64) return m2_errorf(err, M2_EINVAL, "%s: more than 64 bar groups", out_path);
            groups[ng++] = bars[i].group;
        }
        if (index_of(series, ns, bars[i].series) < 0) {
            if (ns == 32) return m2_errorf(err, M2_EINVAL, "%s: more than 32 bar series", out_path);
            series[ns++] = bars[i].series;
        }
        if (isfinite(bars[i].value)) {
            if (bars[i].value > hi) hi = bars[i].value;
            if (bars[i].value < lo) lo = bars[i].value;
        }
    }
    if (hi <= lo) hi = lo + 1;
    double gw = 40 + 26.0 * (ns ? ns : 1), legend_w = 170;
    double W = 80 + gw * (ng ? ng : 1) + legend_w, H = 380;
    m2_canvas *c = m2_canvas_new((int)W, (int)H);
    if (!c) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (title) m2_canvas_text(c, (W - legend_w) / 2 + 40, 26, title, 16, M2_ANCHOR_MIDDLE, 0x111111);
    axes a = {70, 50, gw * (ng ? ng : 1), H - 120, 0, 1, lo, hi};
    draw_axes(c, &a, 0);
    if (y_label) m2_canvas_text(c, 14, a.y - 12, y_label, 12, M2_ANCHOR_START, 0x333333);
    double bw = 22;
    for (int g = 0; g < ng; g++) {
        double gx = a.x + g * gw + 20;
        m2_canvas_text(c, a.x + g * gw + gw / 2, a.y + a.h + 18, groups[g], 12, M2_ANCHOR_MIDDLE, 0x111111);
        for (int i = 0; i < n; i++) {
            if (strcmp(bars[i].group, groups[g]) || !isfinite(bars[i].value)) continue;
            int s = index_of(series, ns, bars[i].series);
            double x = gx + s * 26, y0 = ax_py(&a, 0 > a.y0 ? 0 : a.y0), y1 = ax_py(&a, bars[i].value);
            double top = y1 < y0 ? y1 : y0, h = fabs(y0 - y1);
            m2_canvas_rect(c, x, top, bw, h < 0.5 ? 0.5 : h, palette[s % 10], palette[s % 10]);
            char v[32];
            double av = fabs(bars[i].value);
            snprintf(v, sizeof v, av >= 100 || av == floor(av) ? "%.0f" : av >= 10 ? "%.1f" : "%.2f", bars[i].value);
            m2_canvas_text(c, x + bw / 2, top - 4, v, 9, M2_ANCHOR_MIDDLE, 0x333333);
        }
    }
    for (int s = 0; s < ns; s++) {
        double lx = a.x + a.w + 20, ly = a.y + 8 + s * 20;
        m2_canvas_rect(c, lx, ly - 10, 12, 12, palette[s % 10], palette[s % 10]);
        m2_canvas_text(c, lx + 18, ly, series[s], 12, M2_ANCHOR_START, 0x111111);
    }
    int rc = m2_canvas_save(c, out_path, err);
    m2_canvas_free(c);
    return rc;
}

int m2_chart_run_curves(const char *run_dir, m2_err *err) {
    char mp[1200], out[1200];
    snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dir);
    m2_series_set set;
    if (m2_metrics_load(mp, &set, err) != 0) return -1;
    snprintf(out, sizeof out, "%s/plots", run_dir);
    int rc = m2_mkdir_p(out, err);
    const char *name = strrchr(run_dir, '/');
    name = name ? name + 1 : run_dir;
    char title[300];
    snprintf(title, sizeof title, "%s: learning curves", name);
    if (rc == 0) {
        snprintf(out, sizeof out, "%s/plots/curves.svg", run_dir);
        rc = m2_chart_curves(&set, NULL, 0, title, out, err);
    }
    if (rc == 0 && m2_chart_png_supported()) {
        snprintf(out, sizeof out, "%s/plots/curves.png", run_dir);
        rc = m2_chart_curves(&set, NULL, 0, title, out, err);
    }
    m2_series_free(&set);
    return rc;
}

int m2_chart_png_supported(void) { return m2_canvas_png_supported(); }
