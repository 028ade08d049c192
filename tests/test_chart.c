/* core/chart + canvas: learning curves and the results bar chart are well-formed SVG (checked by a
 * small XML parser here), contain what they should, and survive hostile labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "core/chart.h"
#include "core/canvas.h"
#include "tmpdir.h"

static char tmpdir[64];

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "chart");
}

static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

/* Checks an entity reference at s ("&amp;" etc.); returns its length or 0. */
static int entity_len(const char *s) {
    static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++) if (!strncmp(s, ents[i], strlen(ents[i]))) return (int)strlen(ents[i]);
    return 0;
}

/* A strict little XML well-formedness check: balanced tags, quoted attributes, escaped text,
 * exactly one root element. Returns the root's name count of `count_tag` elements via *count. */
static int xml_well_formed(const char *s, const char *count_tag, int *count, char *why, size_t cap) {
    char stack[64][32];
    int depth = 0, roots = 0;
    *count = 0;
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
        if (!strcmp(name, count_tag)) (*count)++;
        /* attributes */
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

static char *read_all(const char *path) {
    char *t;
    m2_err err = {0};
    if (m2_read_file(path, &t, NULL, &err) != 0) fail_msg("%s", err.msg);
    return t;
}

static void curves_from_run(void **state) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/run", tmpdir);
    m2_run r;
    m2_err err = {0};
    assert_int_equal(m2_run_open(&r, dir, 0, -1, &err), 0);
    for (int step = 1; step <= 50; step++) {
        m2_scalar s[] = {{"sys2/actor_loss", exp(-step / 10.0)}, {"eval/success<&>", step % 7 == 0 ? NAN : step / 50.0}};
        assert_int_equal(m2_run_log(&r, step, s, step % 5 ? 1 : 2, &err), 0);
    }
    m2_run_close(&r);
    assert_int_equal(m2_chart_run_curves(dir, &err), 0);
    char p[256];
    snprintf(p, sizeof p, "%s/plots/curves.svg", dir);
    char *svg = read_all(p);
    char why[128] = "";
    int polylines;
    if (!xml_well_formed(svg, "polyline", &polylines, why, sizeof why)) fail_msg("curves.svg: %s", why);
    assert_int_equal(polylines, 3);   /* actor_loss, and success split in two by the NaN at step 35 */
    assert_non_null(strstr(svg, "sys2/actor_loss"));
    assert_non_null(strstr(svg, "eval/success&lt;&amp;&gt;"));
    assert_non_null(strstr(svg, "run: learning curves"));
    free(svg);
    /* Selected keys; a missing key is an error naming it. */
    m2_series_set set;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    assert_int_equal(m2_metrics_load(p, &set, &err), 0);
    const char *keys[] = {"sys2/actor_loss"};
    snprintf(p, sizeof p, "%s/one.svg", tmpdir);
    assert_int_equal(m2_chart_curves(&set, keys, 1, NULL, p, &err), 0);
    const char *bad[] = {"nope"};
    assert_int_equal(m2_chart_curves(&set, bad, 1, NULL, p, &err), -1);
    assert_non_null(strstr(err.msg, "'nope'"));
    snprintf(p, sizeof p, "%s/one.gif", tmpdir);
    assert_int_equal(m2_chart_curves(&set, keys, 1, NULL, p, &err), -1);
    m2_series_free(&set);
    /* Empty metrics still give a valid picture. */
    m2_series_set empty = {0};
    snprintf(p, sizeof p, "%s/empty.svg", tmpdir);
    assert_int_equal(m2_chart_curves(&empty, NULL, 0, "t", p, &err), 0);
    svg = read_all(p);
    assert_true(xml_well_formed(svg, "polyline", &polylines, why, sizeof why));
    free(svg);
}

static void results_bar_chart(void **state) {
    static const char *methods[] = {"multi2", "flat", "no_kl", "sft_only"};
    static const char *groups[] = {"textcraft/id", "textcraft/ood", "alfworld/id", "alfworld/ood"};
    m2_bar bars[16];
    int n = 0;
    for (int g = 0; g < 4; g++)
        for (int m = 0; m < 4; m++) bars[n++] = (m2_bar){groups[g], methods[m], 0.1 * (g + 1) + 0.05 * m};
    m2_err err = {0};
    char p[256];
    snprintf(p, sizeof p, "%s/results.svg", tmpdir);
    assert_int_equal(m2_chart_bars(bars, n, "success rate (pass@1)", "success", p, &err), 0);
    char *svg = read_all(p);
    char why[128] = "";
    int rects;
    if (!xml_well_formed(svg, "rect", &rects, why, sizeof why)) fail_msg("results.svg: %s", why);
    /* background + plot frame + 16 bars + 4 legend swatches */
    assert_int_equal(rects, 1 + 1 + 16 + 4);
    for (int m = 0; m < 4; m++) assert_non_null(strstr(svg, methods[m]));
    assert_non_null(strstr(svg, "alfworld/ood"));
    free(svg);
    /* PNG (when built): signature, IHDR size, and not a blank picture. */
    snprintf(p, sizeof p, "%s/results.png", tmpdir);
    if (!m2_chart_png_supported()) {
        assert_int_equal(m2_chart_bars(bars, n, "t", "y", p, &err), -1);
        return;
    }
    assert_int_equal(m2_chart_bars(bars, n, "success rate (pass@1)", "success", p, &err), 0);
    char *png;
    size_t len;
    assert_int_equal(m2_read_file(p, &png, &len, &err), 0);
    assert_true(len > 1000);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    const unsigned char *u = (const unsigned char *)png;
    uint32_t w = (uint32_t)u[16] << 24 | u[17] << 16 | u[18] << 8 | u[19];
    uint32_t h = (uint32_t)u[20] << 24 | u[21] << 16 | u[22] << 8 | u[23];
    assert_true(w > 400 && h == 380);
    free(png);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(curves_from_run),
        cmocka_unit_test(results_bar_chart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
