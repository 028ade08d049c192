/* core/chart: charts drawn with cairo. The PNGs are decoded again (cairo) and their pixels checked
 * where a line or a bar must be; the SVGs are checked for well-formed XML (a strict little checker
 * here), the same size as the PNG, and their words and numbers (<title>, <desc>). Also: a
 * single-point metric is left out of the curves, the results chart has a score panel, long labels
 * make room for themselves, hostile labels are escaped, and the same input gives the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cairo.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "core/chart.h"
#include "pipe/report.h"
#include "tmpdir.h"

static char tmpdir[64];

/* The first two series colours (core/chart_kit.c's palette). */
#define COLOR0 0x1f77b4u
#define COLOR1 0xff7f0eu
#define INK_RGB 0x1a1a1au   /* chart.c's INK: axes, frames, whiskers */
/* Antialiased line pixels are blends with the white background; this close counts as the colour. */
#define LINE_TOL 48

static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "chart"); }
static int teardown(void **state) { return m2_remove_tree(tmpdir) == 0 ? 0 : -1; }

/* ---- helpers -------------------------------------------------------------------------------- */

/* Checks an entity reference at s ("&amp;" etc.); returns its length or 0. */
static int entity_len(const char *s) {
    static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++) if (!strncmp(s, ents[i], strlen(ents[i]))) return (int)strlen(ents[i]);
    return 0;
}

/* A strict XML well-formedness check: balanced tags, quoted attributes, escaped text, exactly one
 * root element. */
static int xml_well_formed(const char *s, char *why, size_t cap) {
    char stack[64][32];
    int depth = 0, roots = 0;
    const char *p = s;
    while (*p) {
        if (*p != '<') {
            if (*p == '&') {
                int n = entity_len(p);
                if (!n) { snprintf(why, cap, "raw & at offset %ld", (long)(p - s)); return 0; }
                p += n;
                continue;
            }
            if (*p == '>') { snprintf(why, cap, "raw > in text"); return 0; }
            if (depth == 0 && !isspace((unsigned char)*p)) { snprintf(why, cap, "text outside the root"); return 0; }
            p++;
            continue;
        }
        if (!strncmp(p, "<?", 2)) {
            const char *e = strstr(p, "?>");
            if (!e) { snprintf(why, cap, "unterminated <?"); return 0; }
            p = e + 2;
            continue;
        }
        int closing = p[1] == '/';
        p += closing ? 2 : 1;
        char name[32];
        int k = 0;
        while (isalnum((unsigned char)*p) || *p == '-' || *p == ':') { if (k < 31) name[k++] = *p; p++; }
        name[k] = 0;
        if (!k) { snprintf(why, cap, "empty tag name"); return 0; }
        if (closing) {
            if (*p != '>') { snprintf(why, cap, "bad closing tag %s", name); return 0; }
            if (!depth || strcmp(stack[depth - 1], name)) { snprintf(why, cap, "mismatched </%s>", name); return 0; }
            depth--;
            p++;
            continue;
        }
        for (;;) {
            while (isspace((unsigned char)*p)) p++;
            if (*p == '>' || !strncmp(p, "/>", 2)) break;
            int an = 0;
            while (isalnum((unsigned char)*p) || *p == '-' || *p == ':') { p++; an++; }
            if (!an || *p != '=' || p[1] != '"') { snprintf(why, cap, "bad attribute in <%s>", name); return 0; }
            p += 2;
            while (*p && *p != '"') {
                if (*p == '<') { snprintf(why, cap, "< in attribute"); return 0; }
                if (*p == '&') { int n = entity_len(p); if (!n) { snprintf(why, cap, "raw & in attribute"); return 0; } p += n; continue; }
                p++;
            }
            if (*p != '"') { snprintf(why, cap, "unterminated attribute"); return 0; }
            p++;
        }
        if (depth == 0) roots++;
        if (*p == '/') { p += 2; continue; }
        if (depth == 64) { snprintf(why, cap, "too deep"); return 0; }
        snprintf(stack[depth++], 32, "%s", name);
        p++;
    }
    if (depth) { snprintf(why, cap, "unclosed <%s>", stack[depth - 1]); return 0; }
    if (roots != 1) { snprintf(why, cap, "%d root elements", roots); return 0; }
    return 1;
}

static char *read_all(const char *path, size_t *len) {
    char *out[1] = {NULL};   /* an array, not &local: gcc 12 then sees no pointer to a dead local */
    m2_err err = {0};
    if (m2_read_file(path, out, len, &err) != 0) fail_msg("%s", err.msg);
    return out[0];
}

/* A well-formed SVG; returns its text and its declared size in pixels. */
static char *read_svg(const char *path, int *w, int *h) {
    char *svg = read_all(path, NULL), why[128] = "";
    if (!xml_well_formed(svg, why, sizeof why)) fail_msg("%s: %s", path, why);
    const char *root = strstr(svg, "<svg"), *wa = root ? strstr(root, "width=\"") : NULL, *ha = root ? strstr(root, "height=\"") : NULL;
    if (!wa || !ha || sscanf(wa, "width=\"%dpx\"", w) != 1 || sscanf(ha, "height=\"%dpx\"", h) != 1)
        fail_msg("%s: no width/height in px on the root element", path);
    return svg;
}

typedef struct image { cairo_surface_t *s; int w, h, stride; const unsigned char *px; } image;

/* Decodes the PNG with cairo (fails the test when it does not decode). */
static image load_png(const char *path) {
    image im = {.s = cairo_image_surface_create_from_png(path)};
    if (cairo_surface_status(im.s) != CAIRO_STATUS_SUCCESS)
        fail_msg("%s: %s", path, cairo_status_to_string(cairo_surface_status(im.s)));
    cairo_surface_flush(im.s);
    im.w = cairo_image_surface_get_width(im.s);
    im.h = cairo_image_surface_get_height(im.s);
    im.stride = cairo_image_surface_get_stride(im.s);
    im.px = cairo_image_surface_get_data(im.s);
    return im;
}

static uint32_t pixel(const image *im, int x, int y) {
    uint32_t v;
    memcpy(&v, im->px + (size_t)y * im->stride + (size_t)x * 4, 4);
    return v & 0xffffff;
}

static int near(uint32_t a, uint32_t b, int tol) {
    for (int sh = 0; sh <= 16; sh += 8) if (abs((int)(a >> sh & 0xff) - (int)(b >> sh & 0xff)) > tol) return 0;
    return 1;
}

/* Pixels of colour rgb (within tol) in the rows [y0, y1); with cx/cy, their mean position. */
static long count_color(const image *im, uint32_t rgb, int tol, int y0, int y1, double *cx, double *cy) {
    long n = 0;
    double sx = 0, sy = 0;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < im->w; x++)
            if (near(pixel(im, x, y), rgb, tol)) { n++; sx += x; sy += y; }
    if (cx) *cx = n ? sx / n : -1;
    if (cy) *cy = n ? sy / n : -1;
    return n;
}

/* Mean y of the colour's pixels whose x lies in [x0, x1). */
static double mean_y_in_columns(const image *im, uint32_t rgb, int tol, int x0, int x1) {
    double s = 0;
    long n = 0;
    for (int y = 0; y < im->h; y++)
        for (int x = x0; x < x1; x++)
            if (near(pixel(im, x, y), rgb, tol)) { s += y; n++; }
    return n ? s / n : -1;
}

static void x_extent(const image *im, uint32_t rgb, int tol, int *x0, int *x1) {
    *x0 = im->w;
    *x1 = -1;
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            if (near(pixel(im, x, y), rgb, tol)) { if (x < *x0) *x0 = x; if (x > *x1) *x1 = x; }
}

/* An in-memory series (the tests' sets are static, never freed). */
#define MAXP 64
typedef struct test_series { char key[64]; int64_t step[MAXP]; double value[MAXP]; } test_series;

static m2_series as_series(test_series *t, int n) {
    return (m2_series){.key = t->key, .n = n, .cap = n, .step = t->step, .value = t->value};
}

static void path_in_tmp(char *p, size_t cap, const char *name) { snprintf(p, cap, "%s/%s", tmpdir, name); }

/* ---- learning curves ------------------------------------------------------------------------ */

static void curves_png_has_the_line_where_the_data_is(void **state) {
    /* "loss" rises from 0 to 1: its line must run from low on the left to high on the right */
    static test_series rise = {.key = "loss"}, once = {.key = "eval/success"};
    for (int i = 0; i < 40; i++) { rise.step[i] = i + 1; rise.value[i] = i / 39.0; }
    once.step[0] = 40;
    once.value[0] = 0.5;
    m2_series ss[] = {as_series(&rise, 40), as_series(&once, 1)};
    m2_series_set set = {.s = ss, .n = 2, .cap = 2};
    m2_curve_source src = {.set = &set};
    m2_err err = {0};
    char png[256], svg[256];
    path_in_tmp(png, sizeof png, "rise.png");
    path_in_tmp(svg, sizeof svg, "rise.svg");
    assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, "rising", png, &err), 1);
    assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, "rising", svg, &err), 1);
    image im = load_png(png);
    int sw, sh;
    char *text = read_svg(svg, &sw, &sh);
    assert_int_equal(im.w, sw);   /* one drawing, two formats: the same size */
    assert_int_equal(im.h, sh);
    assert_true(im.w >= 300 && im.h >= 200);
    int x0, x1;
    x_extent(&im, COLOR0, LINE_TOL, &x0, &x1);
    assert_true(x1 - x0 > 200);   /* the line spans the panel */
    int q = (x1 - x0) / 4;
    double left = mean_y_in_columns(&im, COLOR0, LINE_TOL, x0, x0 + q);
    double right = mean_y_in_columns(&im, COLOR0, LINE_TOL, x1 - q, x1 + 1);
    assert_true(left > 0 && right > 0);
    assert_true(left - right > 80);   /* y grows downwards: the left end is much lower */
    /* the SVG names what it shows: one panel, and the single-point metric as not drawn */
    assert_non_null(strstr(text, "<title>rising</title>"));
    assert_non_null(strstr(text, "Panel loss: 40 points, step 1: 0 to step 40: 1;"));
    assert_null(strstr(text, "Panel eval/success"));
    assert_non_null(strstr(text, "Not drawn, one point each: eval/success."));
    free(text);
    cairo_surface_destroy(im.s);
}

static void curves_leave_out_single_point_metrics(void **state) {
    static test_series a = {.key = "a"}, b = {.key = "b"}, c = {.key = "c"};
    for (int i = 0; i < 10; i++) { a.step[i] = i; a.value[i] = i; }
    b.step[0] = 3;
    b.value[0] = 1;
    /* two finite points around a NaN: still a metric with a curve */
    c.step[0] = 1; c.value[0] = 1;
    c.step[1] = 2; c.value[1] = NAN;
    c.step[2] = 3; c.value[2] = 2;
    /* one finite point among NaNs: a single point */
    static test_series d = {.key = "d"};
    d.step[0] = 1; d.value[0] = NAN;
    d.step[1] = 2; d.value[1] = 5;
    m2_series ss[] = {as_series(&a, 10), as_series(&b, 1), as_series(&c, 3), as_series(&d, 2)};
    m2_series_set set = {.s = ss, .n = 4, .cap = 4};
    m2_curve_source src = {.set = &set};
    m2_err err = {0};
    char p[256], q[256];
    path_in_tmp(p, sizeof p, "single_all.png");
    assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, "t", p, &err), 2);
    /* asking for b by name does not draw it either; the picture is the one of {a, c} */
    const char *keys[] = {"a", "b", "c", "d", "never-logged"};
    path_in_tmp(q, sizeof q, "single_keys.png");
    assert_int_equal(m2_chart_curves(&src, 1, keys, 5, "t", q, &err), 2);
    const char *ac[] = {"a", "c"};
    char r[256];
    path_in_tmp(r, sizeof r, "single_ac.png");
    assert_int_equal(m2_chart_curves(&src, 1, ac, 2, "t", r, &err), 2);
    image i1 = load_png(p), i2 = load_png(r);
    assert_int_equal(i1.w, i2.w);   /* two panels side by side, not three or four */
    cairo_surface_destroy(i1.s);
    cairo_surface_destroy(i2.s);
    /* every metric a single point: a picture that says so, no panels */
    static test_series e = {.key = "e"};
    e.step[0] = 1;
    e.value[0] = 1;
    m2_series se[] = {as_series(&e, 1)};
    m2_series_set one = {.s = se, .n = 1, .cap = 1};
    m2_curve_source so = {.set = &one};
    path_in_tmp(p, sizeof p, "single_none.svg");
    assert_int_equal(m2_chart_curves(&so, 1, NULL, 0, "t", p, &err), 0);
    int w, h;
    char *svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "0 panels"));
    free(svg);
}

static void curves_break_at_nan_and_show_lone_points(void **state) {
    /* 0.5 everywhere except NaN at steps 20..29: the horizontal line has a gap */
    static test_series g = {.key = "gap"};
    for (int i = 0; i < 50; i++) { g.step[i] = i; g.value[i] = i >= 20 && i < 30 ? NAN : 0.5; }
    g.value[49] = 1;   /* so that 0.5 is not the constant-axis case */
    m2_series ss[] = {as_series(&g, 50)};
    m2_series_set set = {.s = ss, .n = 1, .cap = 1};
    m2_curve_source src = {.set = &set};
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "gap.png");
    assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, NULL, p, &err), 1);
    image im = load_png(p);
    /* the row with the most line pixels: count its separate runs of them */
    int best_y = 0;
    long best = 0;
    for (int y = 0; y < im.h; y++) {
        long n = 0;
        for (int x = 0; x < im.w; x++) n += near(pixel(&im, x, y), COLOR0, LINE_TOL);
        if (n > best) { best = n; best_y = y; }
    }
    int runs = 0, in = 0;
    for (int x = 0; x < im.w; x++) {
        int c = near(pixel(&im, x, best_y), COLOR0, LINE_TOL);
        if (c && !in) runs++;
        in = c;
    }
    assert_int_equal(runs, 2);
    cairo_surface_destroy(im.s);
    /* a lone finite point between NaNs is drawn (as a dot), not dropped */
    static test_series lone = {.key = "lone"};
    lone.step[0] = 0; lone.value[0] = 0;
    lone.step[1] = 1; lone.value[1] = 0;
    lone.step[2] = 2; lone.value[2] = NAN;
    lone.step[3] = 5; lone.value[3] = 1;
    lone.step[4] = 6; lone.value[4] = NAN;
    ss[0] = as_series(&lone, 5);
    assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, NULL, p, &err), 1);
    im = load_png(p);
    int x0, x1;
    x_extent(&im, COLOR0, LINE_TOL, &x0, &x1);
    double right = mean_y_in_columns(&im, COLOR0, LINE_TOL, x1 - 3, x1 + 1);
    double left = mean_y_in_columns(&im, COLOR0, LINE_TOL, x0, x0 + 3);
    assert_true(right > 0 && left - right > 80);   /* the dot at value 1 is high on the right */
    cairo_surface_destroy(im.s);
}

static void curves_of_several_sources(void **state) {
    static test_series up = {.key = "loss"}, down = {.key = "loss"}, other = {.key = "only_in_b"};
    for (int i = 0; i < 20; i++) {
        up.step[i] = down.step[i] = other.step[i] = i;
        up.value[i] = i;
        down.value[i] = 19 - i;
        other.value[i] = i % 3;
    }
    m2_series sa[] = {as_series(&up, 20)}, sb[] = {as_series(&down, 20), as_series(&other, 20)};
    m2_series_set A = {.s = sa, .n = 1, .cap = 1}, B = {.s = sb, .n = 2, .cap = 2};
    m2_curve_source src[] = {{.name = "alpha", .set = &A}, {.name = "beta<&>", .set = &B}};
    m2_err err = {0};
    char p[256], s[256];
    path_in_tmp(p, sizeof p, "two.png");
    path_in_tmp(s, sizeof s, "two.svg");
    const char *keys[] = {"loss"};
    assert_int_equal(m2_chart_curves(src, 2, keys, 1, "two runs", p, &err), 1);
    assert_int_equal(m2_chart_curves(src, 2, NULL, 0, "two runs", s, &err), 2);
    image im = load_png(p);
    /* both colours, and each line goes its own way */
    int a0, a1, b0, b1;
    x_extent(&im, COLOR0, LINE_TOL, &a0, &a1);
    x_extent(&im, COLOR1, LINE_TOL, &b0, &b1);
    assert_true(a1 - a0 > 200 && b1 - b0 > 200);
    double a_left = mean_y_in_columns(&im, COLOR0, LINE_TOL, a0 + 20, a0 + 60);
    double a_right = mean_y_in_columns(&im, COLOR0, LINE_TOL, a1 - 40, a1);
    double b_left = mean_y_in_columns(&im, COLOR1, LINE_TOL, b0 + 20, b0 + 60);
    double b_right = mean_y_in_columns(&im, COLOR1, LINE_TOL, b1 - 40, b1);
    assert_true(a_left > a_right + 50);   /* alpha rises */
    assert_true(b_right > b_left + 50);   /* beta falls */
    cairo_surface_destroy(im.s);
    int w, h;
    char *svg = read_svg(s, &w, &h);
    assert_non_null(strstr(svg, "Line 1: alpha."));
    assert_non_null(strstr(svg, "Line 2: beta&lt;&amp;&gt;."));
    assert_non_null(strstr(svg, "Panel only_in_b: beta&lt;&amp;&gt; 20 points"));
    free(svg);
}

static void run_folders_curves(void **state) {
    char dir[2][128];
    m2_err err = {0};
    for (int r = 0; r < 2; r++) {
        snprintf(dir[r], sizeof dir[r], "%s/runs/%s", tmpdir, r ? "second" : "first");
        m2_run run;
        assert_int_equal(m2_run_open(&run, dir[r], 0, -1, &err), 0);
        for (int step = 1; step <= 30; step++) {
            m2_scalar s[] = {{"train/loss", exp(-step / (10.0 + r))}, {"eval/id/success", 0.5}};
            assert_int_equal(m2_run_log(&run, step, s, step == 30 ? 2 : 1, &err), 0);
        }
        m2_run_close(&run);
    }
    assert_int_equal(m2_chart_run_curves(dir[0], &err), 0);
    char p[256];
    int w, h;
    snprintf(p, sizeof p, "%s/plots/curves.svg", dir[0]);
    char *svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "<title>first: learning curves</title>"));
    assert_non_null(strstr(svg, "Panel train/loss: 30 points"));
    assert_non_null(strstr(svg, "Not drawn, one point each: eval/id/success."));
    free(svg);
    snprintf(p, sizeof p, "%s/plots/curves.png", dir[0]);
    image im = load_png(p);
    assert_int_equal(im.w, w);
    assert_int_equal(im.h, h);
    cairo_surface_destroy(im.s);
    /* several folders: named by their last component; one with no metrics is left out */
    char none[128];
    snprintf(none, sizeof none, "%s/runs/empty", tmpdir);
    assert_int_equal(m2_mkdir_p(none, &err), 0);
    const char *dirs[] = {dir[0], none, dir[1]};
    snprintf(p, sizeof p, "%s/cmp/curves.svg", tmpdir);   /* the folder is made */
    assert_int_equal(m2_chart_runs_curves(dirs, NULL, 3, NULL, 0, "compare", p, &err), 1);
    svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "Line 1: first."));
    assert_non_null(strstr(svg, "Line 2: second."));
    assert_null(strstr(svg, "empty"));
    free(svg);
}

/* ---- bar charts ----------------------------------------------------------------------------- */

static void bars_in_two_panels_have_their_heights(void **state) {
    /* top panel: A 100, B 50; bottom panel: A 0.25, B 1 (axes 0..100 and 0..1) */
    const m2_bar top[] = {{.group = "g", .series = "A", .value = 100}, {.group = "g", .series = "B", .value = 50}},
                 bottom[] = {{.group = "g", .series = "A", .value = 0.25}, {.group = "g", .series = "B", .value = 1}};
    const m2_bar_panel panels[] = {{.title = "success", .bars = top, .n = 2, .y_max = 100},
                                   {.title = "score", .bars = bottom, .n = 2, .y_max = 1, .decimals = 2}};
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "bars.png");
    assert_int_equal(m2_chart_bars(panels, 2, "two panels", p, &err), 0);
    image im = load_png(p);
    /* exact colours: bars are filled rectangles; the legend's swatches add a little to the top */
    double ax, ay, bx, by;
    long a_top = count_color(&im, COLOR0, 0, 0, im.h / 2, &ax, &ay), b_top = count_color(&im, COLOR1, 0, 0, im.h / 2, &bx, &by);
    long a_bot = count_color(&im, COLOR0, 0, im.h / 2, im.h, NULL, NULL), b_bot = count_color(&im, COLOR1, 0, im.h / 2, im.h, NULL, NULL);
    assert_true(a_top > 1000 && b_bot > 1000);
    double r_top = (double)a_top / b_top, r_bot = (double)b_bot / a_bot;
    if (fabs(r_top - 2) > 0.2 || fabs(r_bot - 4) > 0.4) fail_msg("bar areas: top A/B %.2f (want 2), bottom B/A %.2f (want 4)", r_top, r_bot);
    cairo_surface_destroy(im.s);
}

/* A bar with err > 0 gets a whisker from value - err to value + err: 50 +- 20 on the 0..100 axis of
 * a 200 px plot is an 80 px vertical line through the bar's middle (its value label moves above it);
 * so about 80-100 rows of the bar's central columns differ from the same bar drawn without one. */
static void error_bars_span_value_plus_minus_err(void **state) {
    (void)state;
    m2_err err = {0};
    char p[2][256];
    image im[2];
    for (int k = 0; k < 2; k++) {
        const m2_bar bars[] = {{.group = "g", .series = "A", .value = 50, .err = k ? 20 : 0}};
        const m2_bar_panel panel = {.title = "t", .bars = bars, .n = 1, .y_max = 100};
        path_in_tmp(p[k], sizeof p[k], k ? "err1.png" : "err0.png");
        assert_int_equal(m2_chart_bars(&panel, 1, "e", p[k], &err), 0);
        im[k] = load_png(p[k]);
    }
    assert_int_equal(im[0].w, im[1].w);
    assert_int_equal(im[0].h, im[1].h);
    /* the bar's centre: its colour left of the legend (the legend's swatch has it too) */
    double sx = 0;
    long nb = 0;
    for (int y = 0; y < im[0].h; y++)
        for (int x = 0; x < im[0].w / 2; x++)
            if (near(pixel(&im[0], x, y), COLOR0, 0)) { sx += x; nb++; }
    assert_true(nb > 100);
    int bx = (int)(sx / nb + 0.5), rows = 0;
    for (int y = 0; y < im[0].h; y++) {
        int differs = 0;
        for (int x = bx - 1; x <= bx + 1; x++) differs |= pixel(&im[0], x, y) != pixel(&im[1], x, y);
        rows += differs;
    }
    cairo_surface_destroy(im[0].s);
    cairo_surface_destroy(im[1].s);
    if (rows < 78 || rows > 105) fail_msg("whisker: %d rows of the bar's middle differ (want 80-100)", rows);
}

static void results_chart_has_a_score_panel(void **state) {
    /* ScienceWorld-like: method m never succeeds but scores 0.5; the oracle scores 1 */
    m2_result_row rows[4] = {0};
    const char *split[] = {"id", "ood"};
    for (int i = 0; i < 4; i++) {
        snprintf(rows[i].method, sizeof rows[i].method, "%s", i < 2 ? "m" : "oracle");
        snprintf(rows[i].env, sizeof rows[i].env, "scienceworld");
        snprintf(rows[i].split, sizeof rows[i].split, "%s", split[i % 2]);
        rows[i].episodes = 10;
        rows[i].success = i < 2 ? 0 : 1;
        rows[i].score = i < 2 ? 0.5 : 1;
    }
    char out[256];
    path_in_tmp(out, sizeof out, "report");
    m2_err err = {0};
    assert_int_equal(m2_report_write(rows, 4, out, NULL, &err), 0);
    char p[300];
    snprintf(p, sizeof p, "%s/plots/results.png", out);
    image im = load_png(p);
    /* m's colour: only zero stubs (and its legend swatch) in the success panel, half-height bars
     * in the score panel */
    long m_top = count_color(&im, COLOR0, 0, 0, im.h / 2, NULL, NULL), m_bot = count_color(&im, COLOR0, 0, im.h / 2, im.h, NULL, NULL);
    long o_bot = count_color(&im, COLOR1, 0, im.h / 2, im.h, NULL, NULL);
    if (!(m_top < 300 && m_bot > 2000 && fabs((double)o_bot / m_bot - 2) < 0.2))
        fail_msg("m: %ld pixels in the success panel, %ld in the score panel; oracle %ld", m_top, m_bot, o_bot);
    cairo_surface_destroy(im.s);
    int w, h;
    snprintf(p, sizeof p, "%s/plots/results.svg", out);
    char *svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "Series: m, oracle."));
    assert_non_null(strstr(svg, "Panel success rate (%):\n  scienceworld/id: m 0; oracle 100;"));
    assert_non_null(strstr(svg, "Panel mean score (0 to 1):\n  scienceworld/id: m 0.5; oracle 1;"));
    free(svg);
}

static void long_labels_make_room(void **state) {
    /* one series: groups are narrow, their labels long */
    enum { FEW = 5, MANY = 40 };
    static char names[MANY][64];
    m2_bar bars[MANY], shortb[MANY];
    static char shortn[MANY][8];
    for (int g = 0; g < MANY; g++) {
        snprintf(names[g], sizeof names[g], "environment-with-a-long-name-%02d/ood", g);
        snprintf(shortn[g], sizeof shortn[g], "%d", g);
        bars[g] = (m2_bar){.group = names[g], .series = "only series", .value = g};
        shortb[g] = (m2_bar){.group = shortn[g], .series = "only series", .value = g};
    }
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "labels.png");
    int wl[2], hl[2], ws[2], hs[2];
    for (int c = 0; c < 2; c++) {
        int n = c ? MANY : FEW;
        m2_bar_panel lp = {.title = "long", .bars = bars, .n = n}, sp = {.title = "long", .bars = shortb, .n = n};
        assert_int_equal(m2_chart_bars(&lp, 1, NULL, p, &err), 0);
        image im = load_png(p);
        wl[c] = im.w, hl[c] = im.h;
        cairo_surface_destroy(im.s);
        assert_int_equal(m2_chart_bars(&sp, 1, NULL, p, &err), 0);
        im = load_png(p);
        ws[c] = im.w, hs[c] = im.h;
        cairo_surface_destroy(im.s);
    }
    /* a few long labels: the groups widen to hold them (each label is well over 150 px) */
    if (wl[0] < FEW * 150 || wl[0] < ws[0] + FEW * 100) fail_msg("5 long labels in %d px (short ones: %d px)", wl[0], ws[0]);
    /* too many to widen: they turn, and the chart grows downwards instead */
    if (!(wl[1] < ws[1] + 400 && hl[1] > hs[1] + 80)) fail_msg("40 long labels: %dx%d (short: %dx%d)", wl[1], hl[1], ws[1], hs[1]);
}

/* ---- text, files, determinism ---------------------------------------------------------------- */

static void svg_carries_the_text_escaped(void **state) {
    const m2_bar bars[] = {{.group = "grp<1>", .series = "A&B", .value = 1}, {.group = "grp<1>", .series = "bad\xff" "byte", .value = 2}, {.group = "g2", .series = "A&B", .value = 3}};
    const m2_bar_panel panel = {.title = "\"quoted\" & <tagged>", .bars = bars, .n = 3};
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "hostile.svg");
    assert_int_equal(m2_chart_bars(&panel, 1, "t<i>tle & co", p, &err), 0);
    int w, h;
    char *svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "<title>t&lt;i&gt;tle &amp; co</title>"));
    assert_non_null(strstr(svg, "Series: A&amp;B, bad?byte."));
    assert_non_null(strstr(svg, "grp&lt;1&gt;: A&amp;B 1; bad?byte 2;"));
    assert_null(strchr(svg, '\xff'));
    free(svg);
    path_in_tmp(p, sizeof p, "hostile.png");   /* cairo draws the cleaned text without an error */
    assert_int_equal(m2_chart_bars(&panel, 1, "t<i>tle & co", p, &err), 0);
    image im = load_png(p);
    cairo_surface_destroy(im.s);
}

static void unsupported_extension_and_folders(void **state) {
    const m2_bar bars[] = {{.group = "g", .series = "s", .value = 1}};
    const m2_bar_panel panel = {.bars = bars, .n = 1};
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "chart.gif");
    assert_int_equal(m2_chart_bars(&panel, 1, NULL, p, &err), -1);
    assert_int_equal(err.code, M2_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "chart.gif"));
    assert_false(m2_path_exists(p));
    path_in_tmp(p, sizeof p, "new/deeper/chart.png");
    assert_int_equal(m2_chart_bars(&panel, 1, NULL, p, &err), 0);
    assert_true(m2_path_exists(p));
}

/* ---- box plots ------------------------------------------------------------------------------ */

/* Quartiles by numpy's linear rule: q(p) = s[h] interpolated at h = (n - 1) p; whiskers at the last
 * values within 1.5 IQR of the box; the rest are outliers. */
static void box_stats_by_hand(void **state) {
    (void)state;
    /* sorted 0 10 20 30 40 50 60 70 80 200: h = 2.25, 4.5, 6.75 -> 22.5, 45, 67.5; IQR 45, reach 67.5:
     * whiskers 0 (>= -45) and 80 (<= 135); 200 beyond */
    double v[10] = {200, 80, 70, 60, 50, 40, 30, 20, 10, 0};
    m2_box b;
    m2_box_of(v, 10, &b);
    assert_int_equal(b.n, 10);
    assert_true(b.sorted == v && v[0] == 0 && v[9] == 200);
    assert_true(fabs(b.q1 - 22.5) < 1e-12 && fabs(b.median - 45) < 1e-12 && fabs(b.q3 - 67.5) < 1e-12);
    assert_true(b.lo == 0 && b.hi == 80);
    /* a low outlier: -100 -5 0 1 2 3 4 5 6: q1 0, median 2, q3 4, IQR 4, reach 6: whiskers -5 and 6 */
    double w[9] = {6, 5, 4, 3, 2, 1, 0, -5, -100};
    m2_box_of(w, 9, &b);
    assert_true(b.q1 == 0 && b.median == 2 && b.q3 == 4 && b.lo == -5 && b.hi == 6);
    double one = 7;
    m2_box_of(&one, 1, &b);
    assert_true(b.q1 == 7 && b.median == 7 && b.q3 == 7 && b.lo == 7 && b.hi == 7);
}

/* A dark grey pixel of the marks (INK, antialiased up to half): r, g, b close and below 160. */
static int inky(uint32_t px) {
    int r = px >> 16 & 0xff, g = px >> 8 & 0xff, b = px & 0xff;
    return r < 160 && g < 160 && b < 160 && abs(r - g) < 25 && abs(g - b) < 25;
}

static int inky_near(const image *im, int x, int y) {
    return inky(pixel(im, x - 1, y)) || inky(pixel(im, x, y)) || inky(pixel(im, x + 1, y));
}

/* Values 2 25 40 45 50 55 60 75 98 on a 0..100 axis of 200 px (2 px a unit): box q1 40 to q3 60
 * (40 px), median 50 (20 px below the box's top), whiskers to 25 and 75 (30 px each side; the
 * reach is 1.5 x 20 = 30), 2 and 98 as dots 76 px beyond the box. */
static void box_plot_marks_are_where_the_values_are(void **state) {
    (void)state;
    double v[9] = {98, 2, 25, 40, 45, 50, 55, 60, 75};
    m2_box b;
    m2_box_of(v, 9, &b);
    const m2_bar bars[] = {{.group = "g", .series = "A", .box = &b}};
    const m2_bar_panel panel = {.title = "t", .bars = bars, .n = 1, .y_max = 100};
    m2_err err = {0};
    char p[256];
    path_in_tmp(p, sizeof p, "box.png");
    assert_int_equal(m2_chart_bars(&panel, 1, "box", p, &err), 0);
    image im = load_png(p);
    /* the box's middle column: the middle of those with the most fill (the legend's swatch has 12 rows) */
    int first = -1, last = -1, best = 0;
    for (int x = 1; x < im.w - 1; x++) {
        int n = 0;
        for (int y = 0; y < im.h; y++) n += near(pixel(&im, x, y), COLOR0, 0);
        if (n > best) { best = n; first = last = x; }
        else if (n == best) last = x;
    }
    int bx = (first + last + 1) / 2;
    int top = im.h, bottom = -1;
    for (int y = 0; y < im.h; y++)
        if (near(pixel(&im, bx, y), COLOR0, 0)) { if (y < top) top = y; bottom = y; }
    if (abs(bottom - top - 40) > 3) fail_msg("box: fill rows %d to %d (want about 40 apart)", top, bottom);
    double sy = 0;
    int n = 0;
    for (int y = top; y <= bottom; y++) if (inky(pixel(&im, bx, y))) { sy += y; n++; }
    if (!n || fabs(sy / n - top - 20) > 2.5) fail_msg("median at %.1f px below the box's top (want 20)", n ? sy / n - top : -1.0);
    /* from the box's outline (the row next to the fill, the outline's ink blended with the fill) */
    int up = 1, down = 1;
    while (top - 1 - up > 0 && inky_near(&im, bx, top - 1 - up)) up++;
    while (bottom + 1 + down < im.h - 1 && inky_near(&im, bx, bottom + 1 + down)) down++;
    if (abs(up - 30) > 3 || abs(down - 30) > 3) fail_msg("whiskers %d px up, %d px down (want 30 each)", up, down);
    /* nothing between the whiskers' ends and the outliers, a dot at each outlier */
    assert_false(inky_near(&im, bx, top - 50));
    assert_false(inky_near(&im, bx, bottom + 50));
    assert_true(inky_near(&im, bx, top - 76) || inky_near(&im, bx, top - 77) || inky_near(&im, bx, top - 75));
    assert_true(inky_near(&im, bx, bottom + 76) || inky_near(&im, bx, bottom + 77) || inky_near(&im, bx, bottom + 75));
    cairo_surface_destroy(im.s);
    int w, h;
    path_in_tmp(p, sizeof p, "box.svg");
    assert_int_equal(m2_chart_bars(&panel, 1, "box", p, &err), 0);
    char *svg = read_svg(p, &w, &h);
    assert_non_null(strstr(svg, "g: A median 50 (quartiles 40 to 60, whiskers 25 to 75, 9 values; beyond the whiskers: 2, 98);"));
    free(svg);
}

/* ---- line charts ---------------------------------------------------------------------------- */

/* One line 10, 50 +- 10, 90 at x 0, 1, 2 on a 0..100 axis: it rises left to right, and the middle
 * point's whisker spans 20 units (the plot's 164 px of data height: about 33 px, less the dot). */
static void line_chart_rises_with_its_whisker(void **state) {
    (void)state;
    static const double x[3] = {0, 1, 2}, y[3] = {10, 50, 90}, e1[3] = {0, 10, 0}, e0[3] = {0, 0, 0};
    m2_err err = {0};
    char p[2][256];
    image im[2];
    for (int k = 0; k < 2; k++) {
        const m2_xy_series line = {.name = "A", .x = x, .y = y, .err = k ? e1 : e0, .n = 3};
        const m2_xy_panel panel = {.title = "t", .x_label = "epoch", .series = &line, .n_series = 1, .vline = NAN, .hline = NAN, .y_min = 0, .y_max = 100};
        path_in_tmp(p[k], sizeof p[k], k ? "line1.png" : "line0.png");
        assert_int_equal(m2_chart_xy(&panel, 1, "lines", p[k], &err), 0);
        im[k] = load_png(p[k]);
    }
    assert_int_equal(im[0].w, im[1].w);
    assert_int_equal(im[0].h, im[1].h);
    /* below the legend: the line's x extent, and its height at the two ends */
    int x0 = im[0].w, x1 = -1;
    for (int yy = 80; yy < im[0].h; yy++)
        for (int xx = 0; xx < im[0].w; xx++)
            if (near(pixel(&im[0], xx, yy), COLOR0, LINE_TOL)) { if (xx < x0) x0 = xx; if (xx > x1) x1 = xx; }
    assert_true(x1 - x0 > 200);
    double left = mean_y_in_columns(&im[0], COLOR0, LINE_TOL, x0, x0 + 20), right = mean_y_in_columns(&im[0], COLOR0, LINE_TOL, x1 - 20, x1 + 1);
    if (!(left - right > 100)) fail_msg("the line does not rise: left end y %.1f, right end y %.1f", left, right);
    int mid = (x0 + x1) / 2, rows = 0;
    for (int yy = 0; yy < im[0].h; yy++) {
        int differs = 0;
        for (int xx = mid - 1; xx <= mid + 1; xx++) differs |= pixel(&im[0], xx, yy) != pixel(&im[1], xx, yy);
        rows += differs;
    }
    cairo_surface_destroy(im[0].s);
    cairo_surface_destroy(im[1].s);
    if (rows < 24 || rows > 36) fail_msg("whisker: %d rows of the middle point's columns differ (want 24-36)", rows);
    int w, h;
    path_in_tmp(p[0], sizeof p[0], "line.svg");
    const m2_xy_series line = {.name = "A", .x = x, .y = y, .err = e1, .n = 3};
    const m2_xy_panel panel = {.title = "t", .x_label = "epoch", .series = &line, .n_series = 1, .vline = NAN, .hline = NAN, .y_min = 0, .y_max = 100};
    assert_int_equal(m2_chart_xy(&panel, 1, "lines", p[0], &err), 0);
    char *svg = read_svg(p[0], &w, &h);
    assert_non_null(strstr(svg, "Panel t (x: epoch):\n  A (3 points): (0, 10) (1, 50 +- 10) (2, 90)\n"));
    free(svg);
}

/* The panel's y range: the same line 10 -> 90 on an axis to 100 and on one to 1000 (y_max): on the
 * wider axis it rises about a tenth as far; and a NaN point breaks the line (no ink between the
 * points either side of it). */
static void xy_panel_y_range_and_breaks(void **state) {
    (void)state;
    static const double x[3] = {0, 1, 2}, y[3] = {10, 50, 90};
    m2_err err = {0};
    char p[256];
    double rise[2];
    for (int k = 0; k < 2; k++) {
        const m2_xy_series line = {.name = "A", .x = x, .y = y, .n = 3};
        const m2_xy_panel panel = {.title = "t", .series = &line, .n_series = 1, .vline = NAN, .hline = NAN,
                                   .y_min = 0, .y_max = k ? 1000 : 100};
        path_in_tmp(p, sizeof p, "range.png");
        assert_int_equal(m2_chart_xy(&panel, 1, "range", p, &err), 0);
        image im = load_png(p);
        int x0 = im.w, x1 = -1;
        for (int yy = 80; yy < im.h; yy++)
            for (int xx = 0; xx < im.w; xx++)
                if (near(pixel(&im, xx, yy), COLOR0, LINE_TOL)) { if (xx < x0) x0 = xx; if (xx > x1) x1 = xx; }
        rise[k] = mean_y_in_columns(&im, COLOR0, LINE_TOL, x0, x0 + 20) - mean_y_in_columns(&im, COLOR0, LINE_TOL, x1 - 20, x1 + 1);
        cairo_surface_destroy(im.s);
    }
    if (!(rise[0] > 100 && rise[1] > 0 && rise[1] < rise[0] / 5))
        fail_msg("rise on an axis to 100: %.1f px, to 1000: %.1f px", rise[0], rise[1]);
    static const double xb[5] = {0, 1, 2, 3, 4}, yb[5] = {10, 30, NAN, 70, 90};
    const m2_xy_series broken = {.name = "A", .x = xb, .y = yb, .n = 5};
    const m2_xy_panel panel = {.title = "t", .series = &broken, .n_series = 1, .vline = NAN, .hline = NAN, .y_min = 0, .y_max = 100};
    path_in_tmp(p, sizeof p, "broken.png");
    assert_int_equal(m2_chart_xy(&panel, 1, "broken", p, &err), 0);
    image im = load_png(p);
    int x0 = im.w, x1 = -1, mid_ink = 0;
    for (int yy = 80; yy < im.h; yy++)
        for (int xx = 0; xx < im.w; xx++)
            if (near(pixel(&im, xx, yy), COLOR0, LINE_TOL)) { if (xx < x0) x0 = xx; if (xx > x1) x1 = xx; }
    assert_true(x1 - x0 > 200);   /* both segments drawn: ink from x = 0 to x = 4 */
    /* nothing between x = 1.5 and x = 2.5 (the middle fifth of the line's extent) */
    for (int yy = 80; yy < im.h; yy++)
        for (int xx = x0 + 3 * (x1 - x0) / 8; xx < x1 - 3 * (x1 - x0) / 8; xx++) mid_ink |= near(pixel(&im, xx, yy), COLOR0, LINE_TOL);
    cairo_surface_destroy(im.s);
    if (mid_ink) fail_msg("a line drawn across the NaN point");
}

static void same_input_same_bytes(void **state) {
    static test_series s = {.key = "loss"};
    for (int i = 0; i < 30; i++) { s.step[i] = i; s.value[i] = sin(i / 4.0); }
    m2_series ss[] = {as_series(&s, 30)};
    m2_series_set set = {.s = ss, .n = 1, .cap = 1};
    m2_curve_source src = {.name = "run", .set = &set};
    const m2_bar bars[] = {{.group = "g1", .series = "a", .value = 10}, {.group = "g1", .series = "b", .value = 20}, {.group = "g2", .series = "a", .value = 30}};
    const m2_bar_panel panels[] = {{.title = "p", .bars = bars, .n = 3}, {.title = "q", .bars = bars, .n = 3, .decimals = 1}};
    const char *ext[] = {"svg", "png"};
    m2_err err = {0};
    for (int e = 0; e < 2; e++)
        for (int kind = 0; kind < 2; kind++) {
            char p[2][256];
            char *bytes[2];
            size_t len[2];
            for (int t = 0; t < 2; t++) {
                snprintf(p[t], sizeof p[t], "%s/det_%d_%d.%s", tmpdir, kind, t, ext[e]);
                if (kind == 0) assert_int_equal(m2_chart_curves(&src, 1, NULL, 0, "same", p[t], &err), 1);
                else assert_int_equal(m2_chart_bars(panels, 2, "same", p[t], &err), 0);
                bytes[t] = read_all(p[t], &len[t]);
            }
            if (len[0] != len[1] || memcmp(bytes[0], bytes[1], len[0]))
                fail_msg("%s %s: two writes of the same chart differ", kind ? "bars" : "curves", ext[e]);
            free(bytes[0]);
            free(bytes[1]);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(curves_png_has_the_line_where_the_data_is),
        cmocka_unit_test(curves_leave_out_single_point_metrics),
        cmocka_unit_test(curves_break_at_nan_and_show_lone_points),
        cmocka_unit_test(curves_of_several_sources),
        cmocka_unit_test(run_folders_curves),
        cmocka_unit_test(bars_in_two_panels_have_their_heights),
        cmocka_unit_test(error_bars_span_value_plus_minus_err),
        cmocka_unit_test(results_chart_has_a_score_panel),
        cmocka_unit_test(long_labels_make_room),
        cmocka_unit_test(svg_carries_the_text_escaped),
        cmocka_unit_test(unsupported_extension_and_folders),
        cmocka_unit_test(box_stats_by_hand),
        cmocka_unit_test(box_plot_marks_are_where_the_values_are),
        cmocka_unit_test(line_chart_rises_with_its_whisker),
        cmocka_unit_test(xy_panel_y_range_and_breaks),
        cmocka_unit_test(same_input_same_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
