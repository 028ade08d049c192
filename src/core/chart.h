/* Charts as image files, drawn with cairo: learning curves (metric series against the step, one
 * line per source), grouped bar charts (or box plots) in stacked panels, and x-y panels (lines,
 * means with error bars, scatters, reference lines). The file's extension chooses PNG or
 * SVG; both come from the same drawing. Text is real type (DejaVu Sans through fontconfig),
 * measured so that labels do not overlap. In the SVG the text is drawn as glyph outlines (it looks
 * the same everywhere); its words and numbers are also in the SVG's <title> and <desc>. The same
 * input gives the same bytes. Files are written atomically, their folder created. */
#ifndef M2_CHART_H
#define M2_CHART_H
#include "core/err.h"
#include "core/run.h"

/* One set of series drawn in its own colour, named in the legend (name NULL: no legend entry). */
typedef struct m2_curve_source {
    const char *name;
    const m2_series_set *set;
} m2_curve_source;

/* One panel per key (keys NULL: every key of any source, in first-seen order), a line per source
 * that logged the key. A key is left out when no source has two finite points of it: one point is
 * no curve (a final evaluation belongs in a results chart). NaN points break a line; a point
 * alone between breaks is drawn as a dot. Returns the number of panels drawn, or -1. */
int m2_chart_curves(const m2_curve_source *src, int n_src, const char *const *keys, int n_keys, const char *title,
                    const char *out_path, m2_err *err);

/* run_dir/plots/curves.svg and curves.png from run_dir/metrics.jsonl. Returns 0 or -1. */
int m2_chart_run_curves(const char *run_dir, m2_err *err);

/* m2_chart_curves over several run folders' metrics.jsonl, e.g. one run per method; each line is
 * named by names[i] (names NULL: the folder's last component). A folder without metrics.jsonl is
 * left out. Returns the number of panels drawn, or -1. */
int m2_chart_runs_curves(const char *const *run_dirs, const char *const *names, int n_runs, const char *const *keys,
                         int n_keys, const char *title, const char *out_path, m2_err *err);

/* A box plot's marks (Tukey's): the quartiles interpolated linearly between order statistics
 * (q = v[(n-1) p], as numpy's default), whiskers at the most extreme values within 1.5 IQR of the
 * box, and every value beyond them drawn on its own (an outlier). */
typedef struct m2_box {
    const double *sorted;           /* the n values, ascending */
    int n;
    double lo, q1, median, q3, hi;  /* whisker ends, quartiles, median */
} m2_box;

/* Sorts v[0..n-1] in place and fills b from it (b->sorted = v); n >= 1. */
void m2_box_of(double *v, int n, m2_box *b);

/* One bar: `group` on the x axis (e.g. "textcraft/id"), `series` its colour (e.g. the method). */
typedef struct m2_bar {
    const char *group;
    const char *series;
    double value;         /* NaN: no bar */
    double err;           /* > 0: an error bar value +- err (e.g. the standard error over seeds); else none */
    const m2_box *box;    /* non-NULL: a box plot of box->n values instead of a bar (value and err unused;
                           * box->n 0: nothing drawn) */
} m2_bar;

/* One panel of a bar chart. */
typedef struct m2_bar_panel {
    const char *title;    /* above the panel, e.g. "success rate (%)" */
    const m2_bar *bars;
    int n;
    double y_max;         /* top of the y axis (> 0), or 0: from the data */
    int decimals;         /* of the value written on each bar */
} m2_bar_panel;

/* Panels stacked top to bottom; they share the groups and the series' colours (both in
 * first-seen order over all panels) and one legend. Returns 0 or -1. */
int m2_chart_bars(const m2_bar_panel *panels, int n_panels, const char *title, const char *out_path, m2_err *err);

/* One series of an x-y panel. Series of the same name share a colour and one legend entry (e.g. a
 * variant's measured gain solid and its bound dashed). */
typedef struct m2_xy_series {
    const char *name;     /* legend entry and colour key */
    const double *x, *y;  /* n points; a non-finite one is no point and breaks the line */
    const double *err;    /* NULL, or per point a vertical bar y +- err (e.g. a standard error) */
    int n;
    int dots;             /* 1: points only (a scatter); 0: a line through them */
    int dashed;           /* a dashed line */
} m2_xy_series;

/* One x-y panel: real-valued axes from the data (and the reference lines), optional reference lines. */
typedef struct m2_xy_panel {
    const char *title;    /* above the panel */
    const char *x_label;  /* under the x axis */
    const m2_xy_series *series;
    int n_series;
    double vline;         /* NaN: none; else a dashed grey line x = vline (e.g. the trust region delta) */
    const char *vline_label;
    double hline;         /* NaN: none; else a grey line y = hline (e.g. 0) */
    int diagonal;         /* 1: the dashed line y = x over the panel */
    double y_min, y_max;  /* the y axis covers [y_min, y_max] and every point and bar;
                           * y_max <= y_min (as zero-initialised): the data alone */
} m2_xy_panel;

/* Panels in a grid of up to three columns, one legend of the series' names in first-seen order.
 * Returns 0 or -1. */
int m2_chart_xy(const m2_xy_panel *panels, int n_panels, const char *title, const char *out_path, m2_err *err);

#endif
