#include "core/canvas.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

typedef enum { OP_LINE, OP_RECT, OP_POLY, OP_TEXT } op_kind;

typedef struct op {
    op_kind kind;
    double x0, y0, x1, y1, width, size;
    uint32_t rgb, stroke;
    int anchor, n;
    double *pts;
    char *text;
} op;

struct m2_canvas {
    int w, h;
    op *ops;
    int n, cap, oom;
};

m2_canvas *m2_canvas_new(int width, int height) {
    m2_canvas *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->w = width < 1 ? 1 : width;
    c->h = height < 1 ? 1 : height;
    return c;
}

void m2_canvas_free(m2_canvas *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) { free(c->ops[i].pts); free(c->ops[i].text); }
    free(c->ops);
    free(c);
}

static op *push(m2_canvas *c) {
    if (c->oom) return NULL;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        op *q = realloc(c->ops, (size_t)cap * sizeof *q);
        if (!q) { c->oom = 1; return NULL; }
        c->ops = q;
        c->cap = cap;
    }
    op *o = &c->ops[c->n++];
    memset(o, 0, sizeof *o);
    return o;
}

void m2_canvas_line(m2_canvas *c, double x0, double y0, double x1, double y1, uint32_t rgb, double width) {
    op *o = push(c);
    if (!o) return;
    *o = (op){.kind = OP_LINE, .x0 = x0, .y0 = y0, .x1 = x1, .y1 = y1, .rgb = rgb, .width = width};
}

void m2_canvas_rect(m2_canvas *c, double x, double y, double w, double h, uint32_t fill, uint32_t stroke) {
    op *o = push(c);
    if (!o) return;
    *o = (op){.kind = OP_RECT, .x0 = x, .y0 = y, .x1 = x + w, .y1 = y + h, .rgb = fill, .stroke = stroke, .width = 1};
}

void m2_canvas_polyline(m2_canvas *c, const double *xy, int n, uint32_t rgb, double width) {
    if (n < 2) return;
    op *o = push(c);
    if (!o) return;
    *o = (op){.kind = OP_POLY, .rgb = rgb, .width = width, .n = n};
    o->pts = malloc((size_t)n * 2 * sizeof(double));
    if (!o->pts) { c->n--; c->oom = 1; return; }
    memcpy(o->pts, xy, (size_t)n * 2 * sizeof(double));
}

void m2_canvas_text(m2_canvas *c, double x, double y, const char *text, double size, int anchor, uint32_t rgb) {
    op *o = push(c);
    if (!o) return;
    *o = (op){.kind = OP_TEXT, .x0 = x, .y0 = y, .size = size, .anchor = anchor, .rgb = rgb};
    o->text = strdup(text ? text : "");
    if (!o->text) { c->n--; c->oom = 1; }
}

/* ---------------------------------------------------------------- SVG */

typedef struct sb { char *p; size_t n, cap; int oom; } sb;

static void sb_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)w < b->cap) { b->n += (size_t)w; return; }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->n + (size_t)w) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
}

/* XML text: escapes markup characters, drops control bytes XML 1.0 forbids. */
static void sb_xml(sb *b, const char *s) {
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': sb_printf(b, "&amp;"); break;
        case '<': sb_printf(b, "&lt;"); break;
        case '>': sb_printf(b, "&gt;"); break;
        case '"': sb_printf(b, "&quot;"); break;
        case '\'': sb_printf(b, "&apos;"); break;
        default:
            if (ch < 0x20 && ch != '\t') sb_printf(b, " ");
            else sb_printf(b, "%c", ch);
        }
    }
}

char *m2_canvas_svg(const m2_canvas *c) {
    static const char *anchors[] = {"start", "middle", "end"};
    sb b = {0};
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
                  "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
              c->w, c->h, c->w, c->h, c->w, c->h);
    for (int i = 0; i < c->n; i++) {
        const op *o = &c->ops[i];
        switch (o->kind) {
        case OP_LINE:
            sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#%06x\" stroke-width=\"%.1f\"/>\n",
                      o->x0, o->y0, o->x1, o->y1, o->rgb & 0xffffff, o->width);
            break;
        case OP_RECT:
            sb_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", o->x0, o->y0, o->x1 - o->x0,
                      o->y1 - o->y0);
            if (o->rgb == M2_NO_COLOR) sb_printf(&b, " fill=\"none\"");
            else sb_printf(&b, " fill=\"#%06x\"", o->rgb & 0xffffff);
            if (o->stroke != M2_NO_COLOR) sb_printf(&b, " stroke=\"#%06x\"", o->stroke & 0xffffff);
            sb_printf(&b, "/>\n");
            break;
        case OP_POLY:
            sb_printf(&b, "<polyline fill=\"none\" stroke=\"#%06x\" stroke-width=\"%.1f\" stroke-linejoin=\"round\" points=\"",
                      o->rgb & 0xffffff, o->width);
            for (int k = 0; k < o->n; k++) sb_printf(&b, "%s%.1f,%.1f", k ? " " : "", o->pts[2 * k], o->pts[2 * k + 1]);
            sb_printf(&b, "\"/>\n");
            break;
        case OP_TEXT:
            sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\" fill=\"#%06x\">", o->x0,
                      o->y0, o->size, anchors[o->anchor % 3], o->rgb & 0xffffff);
            sb_xml(&b, o->text);
            sb_printf(&b, "</text>\n");
            break;
        }
    }
    sb_printf(&b, "</svg>\n");
    if (b.oom || c->oom) { free(b.p); return NULL; }
    return b.p;
}

int m2_canvas_png_write(const m2_canvas *c, const char *path, m2_err *err);   /* canvas_png.c */

int m2_canvas_save(const m2_canvas *c, const char *path, m2_err *err) {
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".svg")) {
        char *s = m2_canvas_svg(c);
        if (!s) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
        int rc = m2_write_file_atomic(path, s, strlen(s), err);
        free(s);
        return rc;
    }
    if (n > 4 && !strcmp(path + n - 4, ".png")) {
        if (c->oom) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
        return m2_canvas_png_write(c, path, err);
    }
    return m2_errorf(err, M2_EINVAL, "%s: unknown image type (use .svg or .png)", path);
}
