/* Charts as image files, with no dependency: learning curves (metrics.jsonl series against the
 * step) and a grouped bar chart of the results table (method x env/split). Drawn once into a small
 * display list, then written as SVG (hand-written) or PNG (libpng, with a built-in bitmap font),
 * chosen by the file extension. */
#ifndef M2_CHART_H
#define M2_CHART_H
#include "core/err.h"
#include "core/run.h"

/* One panel per key (keys NULL: every series in the set), in a grid. NaN points break the line. */
int m2_chart_curves(const m2_series_set *set, const char *const *keys, int n_keys, const char *title,
                    const char *out_path, m2_err *err);

/* One bar of the results chart: `group` on the x axis (e.g. "textcraft/id"), `series` the colour
 * (e.g. the method), `value` its height (e.g. success rate). */
typedef struct m2_bar {
    const char *group;
    const char *series;
    double value;
} m2_bar;
int m2_chart_bars(const m2_bar *bars, int n, const char *title, const char *y_label, const char *out_path,
                  m2_err *err);

/* run_dir/plots/curves.svg (and .png when PNG support is built) from run_dir/metrics.jsonl. */
int m2_chart_run_curves(const char *run_dir, m2_err *err);

/* 1 if this build writes PNG files. */
int m2_chart_png_supported(void);

#endif
