#include "core/chart.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/chart_kit.h"

/* Type sizes, pixels. */
#define TITLE_PX 17.0
#define PANEL_TITLE_PX 12.5
#define TICK_PX 10.5
#define LEGEND_PX 12.0
#define VALUE_PX 9.5
#define NOTE_PX 10.5
#define MIN_TEXT_PX 7.5   /* labels are shrunk down to this, then cut or turned */
/* Ink. */
#define INK 0x1a1a1au
#define INK_SOFT 0x555555u
#define GRID 0xe8e8e8u
#define FRAME 0x9a9a9au
#define MARGIN 16.0
#define LINE_H 18.0       /* one line of legend or note text */
#define SWATCH 12.0       /* legend colour square */

/* Curves: panels in a grid of up to three columns. */
#define CURVE_COLS 3
#define CURVE_PANEL_W 380.0
#define CURVE_PANEL_H 250.0
#define CURVE_MAX_PANELS 96   /* 32 rows; more would make a picture nobody scrolls through */
#define CURVE_LINE_W 1.6
#define CURVE_LINE_STEP 0.8   /* how much wider each earlier source's line is */
#define CURVE_LINE_EXTRA 3.0  /* ... but the first one at most this much wider than the last */
#define CURVE_DOT_R 2.6
#define CURVE_INSET 6.0   /* data kept off the frame, so a line along an axis limit stays visible */

/* Bars. */
#define BAR_W 18.0
#define BAR_GAP 3.0
#define GROUP_PAD 22.0
#define BAR_PLOT_H 200.0
#define BAR_MAX_PLOT_W 1800.0  /* wider than this, groups stay narrow and their labels turn */

/* Box plots (drawn in a bar's slot). */
#define BOX_WHISKER_IQR 1.5   /* whiskers reach the last value within this many IQRs of the box (Tukey) */
#define BOX_MEDIAN_W 2.0
#define BOX_DOT_R 2.2

static const double TICKS_WANTED = 5;

/* "Nice" tick spacing (1, 2, 5 x 10^k) for about n ticks over [lo, hi]. */
static double nice_step(double lo, double hi, double n) {
    double span = hi - lo;
    if (!(span > 0)) span = fabs(hi) > 0 ? fabs(hi) : 1;
    double raw = span / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

/* A value axis: [lo, hi] widened to whole ticks. */
typedef struct axis { double lo, hi, step; } axis;

static axis value_axis(double lo, double hi) {
    if (!(hi > lo)) {
        /* a constant: a little room each side; a constant 0 (a rate that never moved) sits on the floor */
        double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
        if (lo != 0) lo -= d;
        hi += d;
    }
    axis a = {.step = nice_step(lo, hi, TICKS_WANTED)};
    a.lo = floor(lo / a.step + 1e-9) * a.step;
    a.hi = ceil(hi / a.step - 1e-9) * a.step;
    if (a.hi <= a.lo) a.hi = a.lo + a.step;
    return a;
}

/* One tick label; every label of an axis uses the notation and the digits its step needs. */
static void fmt_tick(double v, const axis *a, char *buf, size_t cap) {
    if (fabs(v) < a->step * 1e-6) v = 0;
    double mag = fmax(fabs(a->lo), fabs(a->hi));
    int step_exp = (int)floor(log10(a->step) + 1e-9);
    if (mag >= 1e5 || mag < 1e-3) {
        int digits = (int)floor(log10(mag) + 1e-9) - step_exp + 1;
        snprintf(buf, cap, v == 0 ? "0" : "%.*g", digits < 1 ? 1 : digits > 15 ? 15 : digits, v);
        return;
    }
    int dec = step_exp < 0 ? -step_exp : 0;
    snprintf(buf, cap, "%.*f", dec > 12 ? 12 : dec, v);
}

static double widest_tick(m2_ck *k, const axis *a) {
    double w = 0;
    char t[64];
    for (double v = a->lo; v <= a->hi + a->step * 0.5; v += a->step) {
        fmt_tick(v, a, t, sizeof t);
        double tw = m2_ck_text_width(k, t, TICK_PX, 0);
        if (tw > w) w = tw;
    }
    return w;
}

/* A plot's frame, the data range it shows, and how far inside the frame that range is drawn. */
typedef struct plot { double x, y, w, h, inset, x0, x1; axis ya; } plot;
static double px_of(const plot *p, double v) {
    return p->x + p->inset + (v - p->x0) / (p->x1 - p->x0) * (p->w - 2 * p->inset);
}
static double py_of(const plot *p, double v) {
    return p->y + p->h - p->inset - (v - p->ya.lo) / (p->ya.hi - p->ya.lo) * (p->h - 2 * p->inset);
}

static void draw_y_axis(m2_ck *k, const plot *p) {
    char t[64];
    for (double v = p->ya.lo; v <= p->ya.hi + p->ya.step * 0.5; v += p->ya.step) {
        double y = py_of(p, v);
        m2_ck_line(k, p->x, y, p->x + p->w, y, GRID, 1);
        m2_ck_line(k, p->x - 4, y, p->x, y, INK_SOFT, 1);
        fmt_tick(v, &p->ya, t, sizeof t);
        m2_ck_text(k, p->x - 7, y + TICK_PX * 0.35, t, &(m2_ck_style){.size = TICK_PX, .rgb = INK_SOFT, .anchor = M2_CK_END});
    }
}

/* Integer steps on x: the spacing grows until the labels have room. */
static double x_tick_step(m2_ck *k, const plot *p) {
    char t[64];
    snprintf(t, sizeof t, "%.0f", fabs(p->x0) > fabs(p->x1) ? p->x0 : p->x1);
    double label_w = m2_ck_text_width(k, t, TICK_PX, 0) + 14;
    for (double n = TICKS_WANTED; n >= 1; n--) {
        double s = nice_step(p->x0, p->x1, n);
        if (s < 1) s = 1;
        if (s / (p->x1 - p->x0) * p->w >= label_w) return s;
    }
    return p->x1 - p->x0;
}

static void draw_x_axis(m2_ck *k, const plot *p) {
    double s = x_tick_step(k, p);
    char t[64];
    for (double v = ceil(p->x0 / s - 1e-9) * s; v <= p->x1 + s * 1e-9; v += s) {
        double x = px_of(p, v);
        m2_ck_line(k, x, p->y + p->h, x, p->y + p->h + 4, INK_SOFT, 1);
        snprintf(t, sizeof t, "%.0f", v + 0.0);   /* + 0.0: ceil(-1e-9) is -0, written "-0" */
        m2_ck_text(k, x, p->y + p->h + 6 + TICK_PX, t, &(m2_ck_style){.size = TICK_PX, .rgb = INK_SOFT, .anchor = M2_CK_MIDDLE});
    }
}

/* Lays out legend entries left to right in rows no wider than max_w; with draw, draws them with
 * the first row's baseline at y. Returns the number of rows. */
static int legend_rows(m2_ck *k, const char *const *names, const int *colors, int n, double x, double y,
                       double max_w, int draw) {
    int rows = n ? 1 : 0;
    double cx = 0;
    for (int i = 0; i < n; i++) {
        double w = SWATCH + 6 + m2_ck_text_width(k, names[i], LEGEND_PX, 0);
        if (w > max_w) w = max_w;
        if (cx > 0 && cx + w > max_w) { rows++; cx = 0; }
        if (draw) {
            double ry = y + (rows - 1) * LINE_H;
            m2_ck_fill_rect(k, x + cx, ry - SWATCH + 1, SWATCH, SWATCH, m2_ck_color(colors[i]));
            m2_ck_text(k, x + cx + SWATCH + 6, ry, names[i],
                       &(m2_ck_style){.size = LEGEND_PX, .rgb = INK, .max_w = max_w - SWATCH - 6});
        }
        cx += w + 18;
    }
    return rows;
}

/* Wraps a note at its ", " separators into lines no wider than max_w (at most max_lines; the
 * last one ends in an ellipsis when cut); with draw, draws them from baseline y. Returns lines. */
static int note_lines(m2_ck *k, const char *note, double x, double y, double max_w, int max_lines, int draw) {
    int lines = 0;
    const char *p = note;
    char line[1024];
    while (*p && lines < max_lines) {
        size_t take = 0, best = 0;
        for (;;) {
            const char *sep = strstr(p + take, ", ");
            size_t end = sep ? (size_t)(sep - p) + 1 : strlen(p);
            if (end >= sizeof line) end = sizeof line - 1;
            memcpy(line, p, end);
            line[end] = 0;
            if (best && m2_ck_text_width(k, line, NOTE_PX, 0) > max_w) break;
            best = end;
            if (!sep || end == sizeof line - 1) break;
            take = end + 1;
        }
        memcpy(line, p, best);
        line[best] = 0;
        /* the last line allowed says that more was left out; a single overlong item is cut */
        if (lines == max_lines - 1 && p[best] && best + 5 < sizeof line) strcat(line, " \xe2\x80\xa6");
        if (draw) m2_ck_text(k, x, y + lines * LINE_H, line, &(m2_ck_style){.size = NOTE_PX, .rgb = INK_SOFT, .max_w = max_w});
        lines++;
        p += best;
        while (*p == ' ') p++;
    }
    return lines;
}

/* ---- learning curves ---------------------------------------------------------------------- */

typedef struct curve_panel {
    const char *key;
    const m2_series *of[64];   /* per source; NULL when that source has no such key */
} curve_panel;

static int finite_points(const m2_series *s) {
    int n = 0;
    for (int i = 0; s && i < s->n; i++) n += isfinite(s->value[i]) != 0;
    return n;
}

static void append_key(const char ***keys, int *n, int *cap, const char *key, int *oom) {
    for (int i = 0; i < *n; i++) if (!strcmp((*keys)[i], key)) return;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 32;
        const char **q = realloc(*keys, (size_t)c * sizeof *q);
        if (!q) { *oom = 1; return; }
        *keys = q;
        *cap = c;
    }
    (*keys)[(*n)++] = key;
}

static void draw_x_values(m2_ck *k, const plot *p, const axis *xa);

/* A grid panel's title, frame and axes (top left at ox, oy) for data over [x0, x1] x [y0, y1], x_label
 * under the x axis; xa NULL: whole-number x ticks (steps), else x over xa with its ticks. Returns the
 * plot to draw the data in. */
static plot grid_panel_frame(m2_ck *k, const char *title, const char *x_label, double ox, double oy, double x0,
                             double x1, double y0, double y1, const axis *xa) {
    m2_ck_text(k, ox + CURVE_PANEL_W / 2, oy + 16, title,
               &(m2_ck_style){.size = m2_ck_fit_size(k, title, PANEL_TITLE_PX, MIN_TEXT_PX, CURVE_PANEL_W - 24, 1),
                              .bold = 1, .rgb = INK, .anchor = M2_CK_MIDDLE, .max_w = CURVE_PANEL_W - 24});
    if (xa) {
        x0 = xa->lo;
        x1 = xa->hi;
    }
    if (x1 <= x0) x1 = x0 + 1;
    plot p = {.x0 = x0, .x1 = x1, .ya = value_axis(y0, y1), .inset = CURVE_INSET};
    double left = widest_tick(k, &p.ya) + 14;
    p.x = ox + left;
    p.y = oy + 30;
    p.w = CURVE_PANEL_W - left - 20;
    p.h = CURVE_PANEL_H - 30 - 44;
    m2_ck_stroke_rect(k, p.x, p.y, p.w, p.h, FRAME, 1);
    draw_y_axis(k, &p);
    if (xa) draw_x_values(k, &p, xa);
    else draw_x_axis(k, &p);
    if (x_label)
        m2_ck_text(k, p.x + p.w / 2, p.y + p.h + 10 + 2 * TICK_PX + 6, x_label,
                   &(m2_ck_style){.size = TICK_PX, .rgb = INK_SOFT, .anchor = M2_CK_MIDDLE, .max_w = p.w});
    return p;
}

static void draw_curve_panel(m2_ck *k, const curve_panel *cp, int n_src, double ox, double oy) {
    int have = 0;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    for (int s = 0; s < n_src; s++) {
        const m2_series *se = cp->of[s];
        for (int i = 0; se && i < se->n; i++) {
            double v = se->value[i], x = (double)se->step[i];
            if (!isfinite(v)) continue;
            if (!have) { x0 = x1 = x; y0 = y1 = v; have = 1; }
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (v < y0) y0 = v;
            if (v > y1) y1 = v;
        }
    }
    plot p = grid_panel_frame(k, cp->key, "step", ox, oy, x0, x1, y0, y1, NULL);
    cairo_save(k->cr);
    cairo_rectangle(k->cr, p.x - CURVE_DOT_R, p.y - CURVE_DOT_R, p.w + 2 * CURVE_DOT_R, p.h + 2 * CURVE_DOT_R);
    cairo_clip(k->cr);
    for (int s = 0; s < n_src; s++) {
        const m2_series *se = cp->of[s];
        if (!se) continue;
        uint32_t rgb = m2_ck_color(s);
        /* Runs that share stages log identical values: each line is narrower than the one drawn
         * before it, so lines that coincide show every colour side by side instead of only the last. */
        double step = n_src > 1 && CURVE_LINE_STEP * (n_src - 1) > CURVE_LINE_EXTRA ? CURVE_LINE_EXTRA / (n_src - 1) : CURVE_LINE_STEP;
        cairo_set_line_width(k->cr, CURVE_LINE_W + step * (n_src - 1 - s));
        int run = 0;   /* points in the current unbroken run */
        for (int i = 0; i <= se->n; i++) {
            int ok = i < se->n && isfinite(se->value[i]);
            if (ok) {
                double x = px_of(&p, (double)se->step[i]), y = py_of(&p, se->value[i]);
                if (run == 0) cairo_move_to(k->cr, x, y);
                else cairo_line_to(k->cr, x, y);
                run++;
                continue;
            }
            if (run > 1) {
                m2_ck_set_rgb(k, rgb);
                cairo_stroke(k->cr);
            } else if (run == 1) {
                cairo_new_path(k->cr);
                int j = i - 1;
                m2_ck_dot(k, px_of(&p, (double)se->step[j]), py_of(&p, se->value[j]), CURVE_DOT_R, rgb);
            }
            run = 0;
        }
    }
    cairo_restore(k->cr);
}

static void describe_curve_panel(m2_ck *k, const curve_panel *cp, const m2_curve_source *src, int n_src) {
    m2_ck_desc(k, "Panel %s:", cp->key);
    for (int s = 0; s < n_src; s++) {
        const m2_series *se = cp->of[s];
        int first = -1, last = -1;
        for (int i = 0; se && i < se->n; i++)
            if (isfinite(se->value[i])) { if (first < 0) first = i; last = i; }
        if (first < 0) continue;
        m2_ck_desc(k, " %s%s%d points, step %lld: %.4g to step %lld: %.4g;", src[s].name ? src[s].name : "",
                   src[s].name ? " " : "", finite_points(se), (long long)se->step[first], se->value[first],
                   (long long)se->step[last], se->value[last]);
    }
    m2_ck_desc(k, "\n");
}

/* A chart of panels in a grid of up to CURVE_COLS columns under a title and one legend, with a
 * note below: measured (k on a scratch surface; *w_out, *h_out set) or drawn (w_out NULL), the same
 * layout either way. draw_panel(k, i, ox, oy, ud) draws panel i with its top left at (ox, oy);
 * `empty` is written in place of the panels when there are none. */
typedef void (*grid_panel_fn)(m2_ck *k, int i, double ox, double oy, void *ud);

static void draw_grid(m2_ck *k, int n_panels, grid_panel_fn draw_panel, void *ud, const char *const *names,
                      const int *colors, int n_names, const char *title, const char *empty, const char *note,
                      double *w_out, double *h_out) {
    int cols = n_panels < CURVE_COLS ? (n_panels ? n_panels : 1) : CURVE_COLS;
    int rows = n_panels ? (n_panels + cols - 1) / cols : 1;
    double W = cols * CURVE_PANEL_W + 2 * MARGIN, y = MARGIN;
    int draw = w_out == NULL;
    if (title) {
        if (draw)
            m2_ck_text(k, W / 2, y + TITLE_PX, title,
                       &(m2_ck_style){.size = m2_ck_fit_size(k, title, TITLE_PX, 10, W - 2 * MARGIN, 1), .bold = 1,
                                      .rgb = INK, .anchor = M2_CK_MIDDLE, .max_w = W - 2 * MARGIN});
        y += TITLE_PX + 12;
    }
    if (n_names) y += legend_rows(k, names, colors, n_names, MARGIN, y + LEGEND_PX, W - 2 * MARGIN, draw) * LINE_H + 6;
    if (n_panels == 0 && draw)
        m2_ck_text(k, W / 2, y + CURVE_PANEL_H / 2, empty,
                   &(m2_ck_style){.size = PANEL_TITLE_PX, .rgb = INK_SOFT, .anchor = M2_CK_MIDDLE});
    for (int i = 0; draw && i < n_panels; i++)
        draw_panel(k, i, MARGIN + (i % cols) * CURVE_PANEL_W, y + (i / cols) * CURVE_PANEL_H, ud);
    y += rows * CURVE_PANEL_H;
    if (note && *note) y += note_lines(k, note, MARGIN, y + NOTE_PX, W - 2 * MARGIN, 4, draw) * LINE_H;
    if (!draw) {
        *w_out = W;
        *h_out = y + MARGIN;
    }
}

typedef struct curves_ud { const curve_panel *panels; int n_src; } curves_ud;

static void curve_panel_at(m2_ck *k, int i, double ox, double oy, void *ud) {
    const curves_ud *c = ud;
    draw_curve_panel(k, &c->panels[i], c->n_src, ox, oy);
}

/* Draws the chart: measure (k on a scratch surface) or draw (k the picture) the same layout. */
static void draw_curves(m2_ck *k, const curve_panel *panels, int n_panels, const m2_curve_source *src, int n_src,
                        const char *title, const char *note, double *w_out, double *h_out) {
    const char *names[64];
    int colors[64], nn = 0;
    for (int s = 0; s < n_src; s++)
        if (src[s].name) { names[nn] = src[s].name; colors[nn++] = s; }
    curves_ud ud = {.panels = panels, .n_src = n_src};
    draw_grid(k, n_panels, curve_panel_at, &ud, names, colors, nn, title, "no metric has two or more points yet", note,
              w_out, h_out);
}

int m2_chart_curves(const m2_curve_source *src, int n_src, const char *const *keys, int n_keys, const char *title,
                    const char *out_path, m2_err *err) {
    if (n_src > 64) return m2_errorf(err, M2_EINVAL, "%s: more than 64 curve sources", out_path);
    const char **cand = NULL;
    int n_cand = 0, cap = 0, oom = 0;
    if (keys) {
        for (int i = 0; i < n_keys; i++) append_key(&cand, &n_cand, &cap, keys[i], &oom);
    } else {
        for (int s = 0; s < n_src; s++)
            for (int i = 0; src[s].set && i < src[s].set->n; i++) append_key(&cand, &n_cand, &cap, src[s].set->s[i].key, &oom);
    }
    curve_panel *panels = calloc((size_t)(n_cand ? n_cand : 1), sizeof *panels);
    if (oom || !panels) { free(cand); free(panels); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    /* The note names what is not drawn, so a reader does not look for it in vain. */
    size_t note_cap = 64;
    for (int i = 0; i < n_cand; i++) note_cap += strlen(cand[i]) + 2;
    char *single = calloc(note_cap, 1), *over = calloc(note_cap, 1), *note = calloc(2 * note_cap + 128, 1);
    if (!single || !over || !note) {
        free(cand); free(panels); free(single); free(over); free(note);
        return m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    int n = 0, n_single = 0, n_over = 0;
    for (int i = 0; i < n_cand; i++) {
        curve_panel cp = {.key = cand[i]};
        int best = 0, logged = 0;
        for (int s = 0; s < n_src; s++) {
            cp.of[s] = src[s].set ? m2_series_find(src[s].set, cand[i]) : NULL;
            int f = finite_points(cp.of[s]);
            if (f > best) best = f;
            logged |= cp.of[s] != NULL;
        }
        if (best >= 2 && n < CURVE_MAX_PANELS) panels[n++] = cp;
        else if (best >= 2) snprintf(over + strlen(over), note_cap - strlen(over), "%s%s", n_over++ ? ", " : "", cand[i]);
        else if (logged) snprintf(single + strlen(single), note_cap - strlen(single), "%s%s", n_single++ ? ", " : "", cand[i]);
    }
    if (n_single)
        snprintf(note, 2 * note_cap + 128, "Not drawn, one point each: %s.%s", single, n_over ? " " : "");
    if (n_over)
        snprintf(note + strlen(note), 2 * note_cap + 128 - strlen(note), "Not drawn, past %d panels: %s.", CURVE_MAX_PANELS, over);
    m2_ck k;
    double W, H;
    int rc = m2_ck_open_measure(&k, err);
    if (rc == 0) {
        draw_curves(&k, panels, n, src, n_src, title, note, &W, &H);
        m2_ck_close(&k);
        rc = m2_ck_open(&k, out_path, W, H, err);
    }
    if (rc == 0) {
        draw_curves(&k, panels, n, src, n_src, title, note, NULL, NULL);
        m2_ck_desc(&k, "Learning curves (value against step), %d panel%s.\n", n, n == 1 ? "" : "s");
        for (int s = 0; s < n_src; s++)
            if (src[s].name) m2_ck_desc(&k, "Line %d: %s.\n", s + 1, src[s].name);
        for (int i = 0; i < n; i++) describe_curve_panel(&k, &panels[i], src, n_src);
        if (*note) m2_ck_desc(&k, "%s\n", note);
        rc = m2_ck_write(&k, out_path, title, err);
    }
    free(cand);
    free(panels);
    free(single);
    free(over);
    free(note);
    return rc == 0 ? n : -1;
}

static const char *last_component(const char *path, char *buf, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    snprintf(buf, cap, "%.*s", (int)(n - b), path + b);
    return buf;
}

int m2_chart_runs_curves(const char *const *run_dirs, const char *const *names, int n_runs, const char *const *keys,
                         int n_keys, const char *title, const char *out_path, m2_err *err) {
    if (n_runs > 64) return m2_errorf(err, M2_EINVAL, "%s: more than 64 runs in one chart", out_path);
    m2_series_set sets[64];
    char base[64][128];
    m2_curve_source src[64];
    int n = 0, rc = 0;
    for (int r = 0; r < n_runs; r++) {
        char mp[1400];
        snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dirs[r]);
        FILE *f = fopen(mp, "rb");
        if (!f) continue;   /* a folder with no metrics (e.g. a reference policy's) has no curves */
        fclose(f);
        memset(&sets[n], 0, sizeof sets[n]);
        if (m2_metrics_load(mp, &sets[n], err) != 0) { rc = -1; break; }
        src[n] = (m2_curve_source){.name = names ? names[r] : last_component(run_dirs[r], base[n], sizeof base[n]),
                                   .set = &sets[n]};
        n++;
    }
    if (rc == 0) rc = m2_chart_curves(src, n, keys, n_keys, title, out_path, err);
    for (int i = 0; i < n; i++) m2_series_free(&sets[i]);
    return rc;
}

int m2_chart_run_curves(const char *run_dir, m2_err *err) {
    char mp[1200], out[1200], name[128], title[300];
    snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dir);
    m2_series_set set = {0};
    if (m2_metrics_load(mp, &set, err) != 0) return -1;
    snprintf(title, sizeof title, "%s: learning curves", last_component(run_dir, name, sizeof name));
    const m2_curve_source src = {.set = &set};
    static const char *const formats[] = {"svg", "png"};
    int rc = 0;
    for (int f = 0; rc == 0 && f < 2; f++) {
        snprintf(out, sizeof out, "%s/plots/curves.%s", run_dir, formats[f]);
        rc = m2_chart_curves(&src, 1, NULL, 0, title, out, err) < 0 ? -1 : 0;
    }
    m2_series_free(&set);
    return rc;
}

/* ---- bar charts --------------------------------------------------------------------------- */

static int index_of(const char *const *names, int n, const char *s) {
    for (int i = 0; i < n; i++) if (!strcmp(names[i], s)) return i;
    return -1;
}

typedef struct bar_layout {
    const char **groups, **series;
    int ng, ns;
    double bar_w;        /* width of one bar */
    double gw;           /* width of one group */
    double label_w;      /* the widest group label */
    int turn_groups;     /* group labels at 45 degrees */
    double group_h;      /* room under the axis for the group labels */
    double legend_w;
} bar_layout;

/* The value written on a bar, without trailing zeros ("0.250" is "0.25", "1.000" is "1"), so
 * that it fits over the bar more often. */
static void value_label(double v, int decimals, char *buf, size_t cap) {
    snprintf(buf, cap, "%.*f", decimals < 0 ? 0 : decimals > 6 ? 6 : decimals, v);
    if (!strchr(buf, '.')) return;
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0') buf[--n] = 0;
    if (n > 0 && buf[n - 1] == '.') buf[--n] = 0;
    if (!strcmp(buf, "-0")) snprintf(buf, cap, "0");
}

/* ---- box plots ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-quantile of sorted s[0..n-1], interpolated linearly between order statistics. */
static double quantile(const double *s, int n, double p) {
    double h = (n - 1) * p;
    int i = (int)floor(h);
    return i >= n - 1 ? s[n - 1] : s[i] + (h - i) * (s[i + 1] - s[i]);
}

void m2_box_of(double *v, int n, m2_box *b) {
    *b = (m2_box){.sorted = v, .n = n > 0 ? n : 0};
    if (n < 1) return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    b->q1 = quantile(v, n, 0.25);
    b->median = quantile(v, n, 0.5);
    b->q3 = quantile(v, n, 0.75);
    double reach = BOX_WHISKER_IQR * (b->q3 - b->q1);
    b->lo = b->q1;
    b->hi = b->q3;
    for (int i = 0; i < n; i++) if (v[i] >= b->q1 - reach) { if (v[i] < b->lo) b->lo = v[i]; break; }
    for (int i = n - 1; i >= 0; i--) if (v[i] <= b->q3 + reach) { if (v[i] > b->hi) b->hi = v[i]; break; }
}

/* A box plot in the slot [x, x + w): the box from q1 to q3 in the series' colour, outlined, the
 * median across it, whiskers with caps to lo and hi, and each value beyond them as a dot. */
static void draw_box(m2_ck *k, const plot *p, const m2_box *b, double x, double w, uint32_t rgb) {
    double yt = py_of(p, b->q3), yb = py_of(p, b->q1), mx = x + w / 2, cw = w / 4;
    double yh = py_of(p, b->hi), yl = py_of(p, b->lo), ym = py_of(p, b->median);
    if (yb - yt < 1.5) { yt = (yt + yb) / 2 - 0.75; yb = yt + 1.5; }
    m2_ck_line(k, mx, yh, mx, yt, INK, 1);
    m2_ck_line(k, mx, yb, mx, yl, INK, 1);
    m2_ck_line(k, mx - cw, yh, mx + cw, yh, INK, 1);
    m2_ck_line(k, mx - cw, yl, mx + cw, yl, INK, 1);
    m2_ck_fill_rect(k, x, yt, w, yb - yt, rgb);
    m2_ck_stroke_rect(k, x, yt, w, yb - yt, INK, 1);
    m2_ck_line(k, x, ym, x + w, ym, INK, BOX_MEDIAN_W);
    for (int i = 0; i < b->n; i++)
        if (b->sorted[i] < b->lo || b->sorted[i] > b->hi) m2_ck_dot(k, mx, py_of(p, b->sorted[i]), BOX_DOT_R, INK);
}

/* ---- bars ---- */

/* A bar is drawn when its value is a number, a box when it holds values. */
static int bar_drawn(const m2_bar *b) { return b->box ? b->box->n > 0 : isfinite(b->value); }
/* Bars carry their value written over them; boxes do not. */
static int bar_labelled(const m2_bar *b) { return !b->box && isfinite(b->value); }

/* The half-width of a bar's error bar; 0 when it has none. */
static double bar_err(const m2_bar *b) { return isfinite(b->err) && b->err > 0 ? b->err : 0; }

/* The y axis of a panel: from 0 (or the lowest value) to y_max (or the highest value). */
static axis panel_axis(const m2_bar_panel *P) {
    double lo = 0, hi = P->y_max > 0 ? P->y_max : 0;
    for (int i = 0; i < P->n; i++) {
        const m2_bar *b = &P->bars[i];
        if (!bar_drawn(b)) continue;
        double top = b->box ? b->box->sorted[b->box->n - 1] : b->value + bar_err(b);
        double bottom = b->box ? b->box->sorted[0] : b->value - bar_err(b);
        if (top > hi) hi = top;
        if (bottom < lo) lo = bottom;
    }
    if (hi <= lo) hi = lo + 1;
    /* room under the lowest negative bar for its value */
    if (lo < 0) lo -= (hi - lo) * (VALUE_PX + 6) / BAR_PLOT_H;
    return value_axis(lo, hi);
}

/* Draws (or, with draw 0, only measures) one panel whose top is y; returns its height. */
static double bar_panel(m2_ck *k, const bar_layout *L, const m2_bar_panel *P, double x, double y, int draw) {
    plot p = {.ya = panel_axis(P)};
    /* The values over the bars: shrunk to the bar's slot, or turned upright when too small. */
    double slot = L->bar_w + BAR_GAP - 1, vsize = VALUE_PX, vmax = 0;
    char t[64];
    for (int i = 0; i < P->n; i++) {
        if (!bar_labelled(&P->bars[i])) continue;
        value_label(P->bars[i].value, P->decimals, t, sizeof t);
        double s = m2_ck_fit_size(k, t, VALUE_PX, MIN_TEXT_PX, slot, 0);
        if (s < vsize) vsize = s;
    }
    int turn = 0;
    for (int i = 0; i < P->n; i++) {
        if (!bar_labelled(&P->bars[i])) continue;
        value_label(P->bars[i].value, P->decimals, t, sizeof t);
        double w = m2_ck_text_width(k, t, vsize, 0);
        if (w > slot) turn = 1;
        if (w > vmax) vmax = w;
    }
    if (turn) {
        vsize = VALUE_PX;
        vmax = 0;
        for (int i = 0; i < P->n; i++) {
            if (!bar_labelled(&P->bars[i])) continue;
            value_label(P->bars[i].value, P->decimals, t, sizeof t);
            double w = m2_ck_text_width(k, t, vsize, 0);
            if (w > vmax) vmax = w;
        }
    }
    double head = (turn ? vmax : vsize) + 8;
    double left = widest_tick(k, &p.ya) + 14;
    p.x = x + left;
    p.y = y + PANEL_TITLE_PX + 10 + head;
    p.w = L->gw * (L->ng ? L->ng : 1);
    p.h = BAR_PLOT_H;
    p.x0 = 0;
    p.x1 = 1;
    double height = (p.y - y) + p.h + L->group_h;
    if (!draw) return height;
    m2_ck_text(k, p.x, y + PANEL_TITLE_PX, P->title ? P->title : "",
               &(m2_ck_style){.size = PANEL_TITLE_PX, .bold = 1, .rgb = INK, .max_w = p.w});
    m2_ck_stroke_rect(k, p.x, p.y, p.w, p.h, FRAME, 1);
    draw_y_axis(k, &p);
    double base = py_of(&p, 0 > p.ya.lo ? 0 : p.ya.lo);
    double bars_w = L->ns * L->bar_w + (L->ns - 1) * BAR_GAP;
    for (int g = 0; g < L->ng; g++) {
        double gx = p.x + g * L->gw + (L->gw - bars_w) / 2, cx = p.x + g * L->gw + L->gw / 2;
        if (g > 0) m2_ck_line(k, p.x + g * L->gw, p.y + p.h, p.x + g * L->gw, p.y + p.h + 5, FRAME, 1);
        if (L->turn_groups)
            m2_ck_text(k, cx + TICK_PX * 0.3, p.y + p.h + 10, L->groups[g],
                       &(m2_ck_style){.size = TICK_PX + 0.5, .rgb = INK, .anchor = M2_CK_END, .angle = 45});
        else
            m2_ck_text(k, cx, p.y + p.h + 6 + TICK_PX + 1, L->groups[g],
                       &(m2_ck_style){.size = TICK_PX + 0.5, .rgb = INK, .anchor = M2_CK_MIDDLE});
        for (int i = 0; i < P->n; i++) {
            const m2_bar *b = &P->bars[i];
            if (strcmp(b->group, L->groups[g]) || !bar_drawn(b)) continue;
            int s = index_of(L->series, L->ns, b->series);
            if (b->box) {
                draw_box(k, &p, b->box, gx + s * (L->bar_w + BAR_GAP), L->bar_w, m2_ck_color(s));
                continue;
            }
            double bx = gx + s * (L->bar_w + BAR_GAP), top = py_of(&p, b->value);
            double y0 = top < base ? top : base, h = fabs(base - top);
            /* a zero still shows its colour, so the reader sees which series it is */
            if (h < 1.5) { h = 1.5; y0 = base - (b->value < 0 ? 0 : 1.5); }
            m2_ck_fill_rect(k, bx, y0, L->bar_w, h, m2_ck_color(s));
            double e = bar_err(b);
            if (e > 0) {   /* the whisker, value - e to value + e, with caps a third of the bar wide */
                double mx = bx + L->bar_w / 2, yt = py_of(&p, b->value + e), yb = py_of(&p, b->value - e), cw = L->bar_w / 6;
                m2_ck_line(k, mx, yt, mx, yb, INK, 1);
                m2_ck_line(k, mx - cw, yt, mx + cw, yt, INK, 1);
                m2_ck_line(k, mx - cw, yb, mx + cw, yb, INK, 1);
                if (b->value >= 0 && yt < y0) y0 = yt;   /* the label goes above the whisker */
                if (b->value < 0 && yb > y0 + h) h = yb - y0;
            }
            value_label(b->value, P->decimals, t, sizeof t);
            double ly = b->value < 0 ? y0 + h + 3 : y0 - 3;
            if (turn)
                m2_ck_text(k, bx + L->bar_w / 2 + vsize * 0.35, ly, t,
                           &(m2_ck_style){.size = vsize, .rgb = INK_SOFT, .anchor = b->value < 0 ? M2_CK_END : M2_CK_START, .angle = 90});
            else
                m2_ck_text(k, bx + L->bar_w / 2, b->value < 0 ? ly + vsize : ly, t,
                           &(m2_ck_style){.size = vsize, .rgb = INK_SOFT, .anchor = M2_CK_MIDDLE});
        }
    }
    m2_ck_line(k, p.x, base, p.x + p.w, base, INK_SOFT, 1);
    return height;
}

static void draw_bars(m2_ck *k, const bar_layout *L, const m2_bar_panel *panels, int n_panels, const char *title,
                      double *w_out, double *h_out) {
    int draw = w_out == NULL;
    /* the widest y-tick column decides where every panel's plot starts, so the groups line up */
    double ticks_w = 0;
    for (int i = 0; i < n_panels; i++) {
        axis a = panel_axis(&panels[i]);
        double w = widest_tick(k, &a);
        if (w > ticks_w) ticks_w = w;
    }
    double x0 = MARGIN, plot_x = x0 + ticks_w + 14;
    /* a turned label reaches left of its group by its width x cos 45: the first one must not leave the picture */
    double reach = L->turn_groups ? L->label_w * M_SQRT1_2 - L->gw / 2 : 0;
    if (reach > plot_x - MARGIN) {
        x0 += reach - (plot_x - MARGIN);
        plot_x = x0 + ticks_w + 14;
    }
    double plot_right = plot_x + L->gw * (L->ng ? L->ng : 1);
    double W = plot_right + 24 + L->legend_w + MARGIN, y = MARGIN;
    if (title) {
        /* centred over the plots, as wide as fits on both sides of that centre */
        double cx = (plot_x + plot_right) / 2, room = 2 * fmin(cx - MARGIN, W - MARGIN - cx);
        if (draw)
            m2_ck_text(k, cx, y + TITLE_PX, title,
                       &(m2_ck_style){.size = m2_ck_fit_size(k, title, TITLE_PX, 10, room, 1), .bold = 1,
                                      .rgb = INK, .anchor = M2_CK_MIDDLE, .max_w = room});
        y += TITLE_PX + 14;
    }
    double legend_top = y;
    for (int i = 0; i < n_panels; i++) {
        /* each panel's own tick column is narrower or equal: pad it to the shared one */
        axis a = panel_axis(&panels[i]);
        double pad = ticks_w - widest_tick(k, &a);
        y += bar_panel(k, L, &panels[i], x0 + pad, y, draw) + 12;
    }
    double lx = plot_right + 24, ly = legend_top + PANEL_TITLE_PX + 10 + LEGEND_PX;
    for (int s = 0; draw && s < L->ns; s++) {
        m2_ck_fill_rect(k, lx, ly + s * LINE_H - SWATCH + 1, SWATCH, SWATCH, m2_ck_color(s));
        m2_ck_text(k, lx + SWATCH + 6, ly + s * LINE_H, L->series[s], &(m2_ck_style){.size = LEGEND_PX, .rgb = INK});
    }
    double legend_bottom = ly + L->ns * LINE_H;
    if (!draw) {
        *w_out = W;
        *h_out = (y > legend_bottom ? y : legend_bottom) + MARGIN;
    }
}

/* A box in words, to 4 significant digits: " series median M (quartiles Q1 to Q3, whiskers LO to HI,
 * N values; beyond the whiskers: a, b);" */
static void describe_box(m2_ck *k, const m2_bar *b) {
    const m2_box *x = b->box;
    m2_ck_desc(k, " %s median %.4g (quartiles %.4g to %.4g, whiskers %.4g to %.4g, %d values", b->series, x->median,
               x->q1, x->q3, x->lo, x->hi, x->n);
    int beyond = 0;
    for (int i = 0; i < x->n; i++)
        if (x->sorted[i] < x->lo || x->sorted[i] > x->hi)
            m2_ck_desc(k, "%s%.4g", beyond++ ? ", " : "; beyond the whiskers: ", x->sorted[i]);
    m2_ck_desc(k, ");");
}

int m2_chart_bars(const m2_bar_panel *panels, int n_panels, const char *title, const char *out_path, m2_err *err) {
    int total = 0;
    for (int i = 0; i < n_panels; i++) total += panels[i].n;
    bar_layout L = {.groups = malloc((size_t)(total ? total : 1) * sizeof *L.groups),
                    .series = malloc((size_t)(total ? total : 1) * sizeof *L.series)};
    if (!L.groups || !L.series) { free(L.groups); free(L.series); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    for (int i = 0; i < n_panels; i++)
        for (int j = 0; j < panels[i].n; j++) {
            const m2_bar *b = &panels[i].bars[j];
            if (index_of(L.groups, L.ng, b->group) < 0) L.groups[L.ng++] = b->group;
            if (index_of(L.series, L.ns, b->series) < 0) L.series[L.ns++] = b->series;
        }
    m2_ck k;
    int rc = m2_ck_open_measure(&k, err);
    double W = 0, H = 0;
    if (rc == 0) {
        /* bars as wide as their widest value, so values stay level and full size, unless the
         * chart would get too wide (then bar_panel shrinks or turns them) */
        int ns = L.ns ? L.ns : 1;
        double value_w = 0;
        char t[64];
        for (int i = 0; i < n_panels; i++)
            for (int j = 0; j < panels[i].n; j++) {
                if (!bar_labelled(&panels[i].bars[j])) continue;
                value_label(panels[i].bars[j].value, panels[i].decimals, t, sizeof t);
                double w = m2_ck_text_width(&k, t, VALUE_PX, 0) + 2;
                if (w > value_w) value_w = w;
            }
        L.bar_w = BAR_W;
        double wide = value_w - BAR_GAP + 1;
        if (wide > BAR_W && (L.ng ? L.ng : 1) * (ns * (wide + BAR_GAP) + GROUP_PAD) <= BAR_MAX_PLOT_W) L.bar_w = wide;
        double bars_w = ns * L.bar_w + (ns - 1) * BAR_GAP, label_w = 0;
        for (int g = 0; g < L.ng; g++) {
            double w = m2_ck_text_width(&k, L.groups[g], TICK_PX + 0.5, 0);
            if (w > label_w) label_w = w;
        }
        L.label_w = label_w;
        L.gw = bars_w + GROUP_PAD;
        if (label_w + 12 > L.gw) {
            /* wider groups while the chart stays readable on a screen; past that, turn the labels */
            if ((label_w + 12) * L.ng <= BAR_MAX_PLOT_W) L.gw = label_w + 12;
            else L.turn_groups = 1;
        }
        /* a panel title wider than the plots widens the groups (up to the width limit), so it is not cut */
        double title_w = 0;
        for (int i = 0; i < n_panels; i++)
            if (panels[i].title) title_w = fmax(title_w, m2_ck_text_width(&k, panels[i].title, PANEL_TITLE_PX, 1));
        int ng = L.ng ? L.ng : 1;
        if (!L.turn_groups && L.gw * ng < title_w) L.gw = fmin(title_w, BAR_MAX_PLOT_W) / ng;
        L.group_h = L.turn_groups ? label_w * M_SQRT1_2 + TICK_PX + 16 : TICK_PX + 14;
        for (int s = 0; s < L.ns; s++) {
            double w = SWATCH + 6 + m2_ck_text_width(&k, L.series[s], LEGEND_PX, 0);
            if (w > L.legend_w) L.legend_w = w;
        }
        draw_bars(&k, &L, panels, n_panels, title, &W, &H);
        m2_ck_close(&k);
        rc = m2_ck_open(&k, out_path, W, H, err);
    }
    if (rc == 0) {
        draw_bars(&k, &L, panels, n_panels, title, NULL, NULL);
        m2_ck_desc(&k, "Bar chart, %d panel%s; groups on the x axis, one bar per series.\n", n_panels, n_panels == 1 ? "" : "s");
        m2_ck_desc(&k, "Series:");
        for (int s = 0; s < L.ns; s++) m2_ck_desc(&k, "%s %s", s ? "," : "", L.series[s]);
        m2_ck_desc(&k, ".\n");
        for (int i = 0; i < n_panels; i++) {
            m2_ck_desc(&k, "Panel %s:\n", panels[i].title ? panels[i].title : "");
            for (int g = 0; g < L.ng; g++) {
                m2_ck_desc(&k, "  %s:", L.groups[g]);
                for (int j = 0; j < panels[i].n; j++) {
                    const m2_bar *b = &panels[i].bars[j];
                    if (strcmp(b->group, L.groups[g]) || !bar_drawn(b)) continue;
                    if (b->box) { describe_box(&k, b); continue; }
                    char t[64], e[64] = "";
                    value_label(b->value, panels[i].decimals, t, sizeof t);
                    if (bar_err(b) > 0) {
                        memcpy(e, " +- ", 5);
                        value_label(bar_err(b), panels[i].decimals, e + 4, sizeof e - 4);
                    }
                    m2_ck_desc(&k, " %s %s%s;", b->series, t, e);
                }
                m2_ck_desc(&k, "\n");
            }
        }
        rc = m2_ck_write(&k, out_path, title, err);
    }
    free(L.groups);
    free(L.series);
    return rc;
}

/* ---- x-y panels --------------------------------------------------------------------------- */

#define XY_NAMES_MAX 64

/* The series' names in first-seen order over every panel (the legend and the colours). */
static int xy_names(const m2_xy_panel *panels, int n_panels, const char **names) {
    int n = 0;
    for (int i = 0; i < n_panels; i++)
        for (int j = 0; j < panels[i].n_series; j++) {
            const char *s = panels[i].series[j].name ? panels[i].series[j].name : "";
            if (index_of(names, n, s) >= 0) continue;
            if (n == XY_NAMES_MAX) return -1;
            names[n++] = s;
        }
    return n;
}

static void grow_range(double v, int *have, double *lo, double *hi) {
    if (!isfinite(v)) return;
    if (!*have) { *lo = *hi = v; *have = 1; }
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
}

static void draw_x_values(m2_ck *k, const plot *p, const axis *xa) {
    char t[64];
    for (double v = xa->lo; v <= xa->hi + xa->step * 0.5; v += xa->step) {
        double x = px_of(p, v);
        m2_ck_line(k, x, p->y, x, p->y + p->h, GRID, 1);
        m2_ck_line(k, x, p->y + p->h, x, p->y + p->h + 4, INK_SOFT, 1);
        fmt_tick(v, xa, t, sizeof t);
        m2_ck_text(k, x, p->y + p->h + 6 + TICK_PX, t, &(m2_ck_style){.size = TICK_PX, .rgb = INK_SOFT, .anchor = M2_CK_MIDDLE});
    }
}

static const double XY_DASH[2] = {6, 4};   /* pixels on, off */

static void dashed_line(m2_ck *k, double x0, double y0, double x1, double y1, uint32_t rgb, double w) {
    cairo_save(k->cr);
    cairo_set_dash(k->cr, XY_DASH, 2, 0);
    m2_ck_line(k, x0, y0, x1, y1, rgb, w);
    cairo_restore(k->cr);
}

static void draw_xy_panel(m2_ck *k, const m2_xy_panel *P, const char *const *names, int n_names, double ox, double oy) {
    int hx = 0, hy = 0;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    for (int j = 0; j < P->n_series; j++) {
        const m2_xy_series *s = &P->series[j];
        for (int i = 0; i < s->n; i++) {
            if (!isfinite(s->x[i]) || !isfinite(s->y[i])) continue;
            double e = s->err && isfinite(s->err[i]) ? fabs(s->err[i]) : 0;
            grow_range(s->x[i], &hx, &x0, &x1);
            grow_range(s->y[i] - e, &hy, &y0, &y1);
            grow_range(s->y[i] + e, &hy, &y0, &y1);
        }
    }
    grow_range(P->vline, &hx, &x0, &x1);
    grow_range(P->hline, &hy, &y0, &y1);
    if (P->y_max > P->y_min) {   /* the given range, widened to every point and bar */
        grow_range(P->y_min, &hy, &y0, &y1);
        grow_range(P->y_max, &hy, &y0, &y1);
    }
    if (P->diagonal && hx && hy) {   /* both axes cover the union, so y = x is the panel's diagonal */
        double lo = fmin(x0, y0), hi = fmax(x1, y1);
        x0 = y0 = lo;
        x1 = y1 = hi;
    }
    axis xa = value_axis(x0, x1);
    plot p = grid_panel_frame(k, P->title ? P->title : "", P->x_label, ox, oy, x0, x1, y0, y1, &xa);
    cairo_save(k->cr);
    cairo_rectangle(k->cr, p.x - CURVE_DOT_R, p.y - CURVE_DOT_R, p.w + 2 * CURVE_DOT_R, p.h + 2 * CURVE_DOT_R);
    cairo_clip(k->cr);
    if (isfinite(P->hline)) m2_ck_line(k, p.x, py_of(&p, P->hline), p.x + p.w, py_of(&p, P->hline), FRAME, 1.2);
    if (P->diagonal) dashed_line(k, px_of(&p, xa.lo), py_of(&p, xa.lo), px_of(&p, xa.hi), py_of(&p, xa.hi), FRAME, 1.2);
    if (isfinite(P->vline)) {
        double x = px_of(&p, P->vline);
        dashed_line(k, x, p.y, x, p.y + p.h, INK_SOFT, 1.4);
        if (P->vline_label) {   /* beside the line, on the side with room */
            int right = x < p.x + p.w / 2;
            m2_ck_text(k, right ? x + 4 : x - 4, p.y + TICK_PX + 4, P->vline_label,
                       &(m2_ck_style){.size = TICK_PX, .rgb = INK_SOFT, .anchor = right ? M2_CK_START : M2_CK_END});
        }
    }
    for (int j = 0; j < P->n_series; j++) {
        const m2_xy_series *s = &P->series[j];
        uint32_t rgb = m2_ck_color(index_of(names, n_names, s->name ? s->name : ""));
        for (int i = 0; s->err && i < s->n; i++) {
            if (!isfinite(s->x[i]) || !isfinite(s->y[i]) || !isfinite(s->err[i]) || s->err[i] <= 0) continue;
            double x = px_of(&p, s->x[i]);
            m2_ck_line(k, x, py_of(&p, s->y[i] - s->err[i]), x, py_of(&p, s->y[i] + s->err[i]), rgb, 1);
            m2_ck_line(k, x - 3, py_of(&p, s->y[i] - s->err[i]), x + 3, py_of(&p, s->y[i] - s->err[i]), rgb, 1);
            m2_ck_line(k, x - 3, py_of(&p, s->y[i] + s->err[i]), x + 3, py_of(&p, s->y[i] + s->err[i]), rgb, 1);
        }
        if (s->dots) {
            for (int i = 0; i < s->n; i++)
                if (isfinite(s->x[i]) && isfinite(s->y[i])) m2_ck_dot(k, px_of(&p, s->x[i]), py_of(&p, s->y[i]), CURVE_DOT_R, rgb);
            continue;
        }
        cairo_save(k->cr);
        if (s->dashed) cairo_set_dash(k->cr, XY_DASH, 2, 0);
        cairo_set_line_width(k->cr, CURVE_LINE_W);
        m2_ck_set_rgb(k, rgb);
        int run = 0;
        for (int i = 0; i <= s->n; i++) {   /* a non-finite point breaks the line */
            if (i < s->n && isfinite(s->x[i]) && isfinite(s->y[i])) {
                double x = px_of(&p, s->x[i]), y = py_of(&p, s->y[i]);
                if (run++ == 0) cairo_move_to(k->cr, x, y);
                else cairo_line_to(k->cr, x, y);
                continue;
            }
            if (run > 1) cairo_stroke(k->cr);
            else cairo_new_path(k->cr);
            run = 0;
        }
        cairo_restore(k->cr);
        if (s->err)   /* a mean with its bar: a dot marks it */
            for (int i = 0; i < s->n; i++)
                if (isfinite(s->x[i]) && isfinite(s->y[i])) m2_ck_dot(k, px_of(&p, s->x[i]), py_of(&p, s->y[i]), CURVE_DOT_R, rgb);
    }
    cairo_restore(k->cr);
}

typedef struct xy_ud { const m2_xy_panel *panels; const char *const *names; int n_names; } xy_ud;

static void xy_panel_at(m2_ck *k, int i, double ox, double oy, void *ud) {
    const xy_ud *u = ud;
    draw_xy_panel(k, &u->panels[i], u->names, u->n_names, ox, oy);
}

int m2_chart_xy(const m2_xy_panel *panels, int n_panels, const char *title, const char *out_path, m2_err *err) {
    const char *names[XY_NAMES_MAX];
    int colors[XY_NAMES_MAX];
    int n_names = xy_names(panels, n_panels, names);
    if (n_names < 0) return m2_errorf(err, M2_EINVAL, "%s: more than %d series", out_path, XY_NAMES_MAX);
    for (int i = 0; i < n_names; i++) colors[i] = i;
    xy_ud ud = {.panels = panels, .names = names, .n_names = n_names};
    m2_ck k;
    double W, H;
    int rc = m2_ck_open_measure(&k, err);
    if (rc == 0) {
        draw_grid(&k, n_panels, xy_panel_at, &ud, names, colors, n_names, title, "nothing to draw", NULL, &W, &H);
        m2_ck_close(&k);
        rc = m2_ck_open(&k, out_path, W, H, err);
    }
    if (rc == 0) {
        draw_grid(&k, n_panels, xy_panel_at, &ud, names, colors, n_names, title, "nothing to draw", NULL, NULL, NULL);
        m2_ck_desc(&k, "x-y chart, %d panel%s.\n", n_panels, n_panels == 1 ? "" : "s");
        for (int i = 0; i < n_panels; i++) {
            const m2_xy_panel *P = &panels[i];
            m2_ck_desc(&k, "Panel %s (x: %s)%s", P->title ? P->title : "", P->x_label ? P->x_label : "", P->diagonal ? ", line y = x" : "");
            if (isfinite(P->vline)) m2_ck_desc(&k, ", line x = %.4g%s%s", P->vline, P->vline_label ? " " : "", P->vline_label ? P->vline_label : "");
            if (isfinite(P->hline)) m2_ck_desc(&k, ", line y = %.4g", P->hline);
            m2_ck_desc(&k, ":\n");
            for (int j = 0; j < P->n_series; j++) {
                const m2_xy_series *s = &P->series[j];
                m2_ck_desc(&k, "  %s%s (%d points%s):", s->name ? s->name : "", s->dashed ? ", dashed" : "", s->n, s->dots ? ", dots" : "");
                for (int q = 0; q < s->n && q < 64; q++) {
                    m2_ck_desc(&k, " (%.4g, %.4g", s->x[q], s->y[q]);
                    if (s->err && isfinite(s->err[q]) && s->err[q] > 0) m2_ck_desc(&k, " +- %.4g", s->err[q]);
                    m2_ck_desc(&k, ")");
                }
                m2_ck_desc(&k, "%s\n", s->n > 64 ? " ..." : "");
            }
        }
        rc = m2_ck_write(&k, out_path, title, err);
    }
    return rc;
}
