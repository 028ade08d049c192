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

/* ---------------------------------------------------------------- PNG */

#ifdef M2_HAVE_PNG
#include <math.h>
#include <png.h>

/* 5x7 bitmap glyphs for ASCII 32..126, drawn for this project: one byte per row, bit 4 = left. */
static const unsigned char font5x7[95][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* ' ' */
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04}, /* '!' */
    {0x0a, 0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00}, /* '"' */
    {0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a}, /* '#' */
    {0x04, 0x0f, 0x14, 0x0e, 0x05, 0x1e, 0x04}, /* '$' */
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}, /* '%' */
    {0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d}, /* '&' */
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}, /* "'" */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, /* '(' */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, /* ')' */
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00}, /* 0x2a */
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}, /* '+' */
    {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}, /* ',' */
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}, /* '-' */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, /* '.' */
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, /* 0x2f */
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, /* '0' */
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* '1' */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, /* '2' */
    {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e}, /* '3' */
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, /* '4' */
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}, /* '5' */
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, /* '6' */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, /* '7' */
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, /* '8' */
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}, /* '9' */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}, /* ':' */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x04, 0x08}, /* ';' */
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}, /* '<' */
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}, /* '=' */
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}, /* '>' */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, /* '?' */
    {0x0e, 0x11, 0x01, 0x0d, 0x15, 0x15, 0x0e}, /* '@' */
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* 'A' */
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, /* 'B' */
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}, /* 'C' */
    {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}, /* 'D' */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}, /* 'E' */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, /* 'F' */
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}, /* 'G' */
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* 'H' */
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* 'I' */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, /* 'J' */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, /* 'K' */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, /* 'L' */
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}, /* 'M' */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, /* 'N' */
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* 'O' */
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, /* 'P' */
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}, /* 'Q' */
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, /* 'R' */
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}, /* 'S' */
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* 'T' */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* 'U' */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* 'V' */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}, /* 'W' */
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}, /* 'X' */
    {0x11, 0x11, 0x11, 0x0a, 0x04, 0x04, 0x04}, /* 'Y' */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, /* 'Z' */
    {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e}, /* '[' */
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00}, /* 0x5c */
    {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e}, /* ']' */
    {0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00}, /* '^' */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}, /* '_' */
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00}, /* '`' */
    {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f}, /* 'a' */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e}, /* 'b' */
    {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e}, /* 'c' */
    {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f}, /* 'd' */
    {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e}, /* 'e' */
    {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08}, /* 'f' */
    {0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e}, /* 'g' */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}, /* 'h' */
    {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e}, /* 'i' */
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c}, /* 'j' */
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}, /* 'k' */
    {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* 'l' */
    {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11}, /* 'm' */
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}, /* 'n' */
    {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e}, /* 'o' */
    {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10}, /* 'p' */
    {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01}, /* 'q' */
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}, /* 'r' */
    {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e}, /* 's' */
    {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06}, /* 't' */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d}, /* 'u' */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* 'v' */
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a}, /* 'w' */
    {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}, /* 'x' */
    {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e}, /* 'y' */
    {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f}, /* 'z' */
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02}, /* '{' */
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* '|' */
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08}, /* '}' */
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00}, /* '~' */
};

typedef struct raster { int w, h; unsigned char *px; } raster;

static void blend(raster *r, int x, int y, uint32_t rgb, double a) {
    if (x < 0 || y < 0 || x >= r->w || y >= r->h || a <= 0) return;
    if (a > 1) a = 1;
    unsigned char *p = r->px + ((size_t)y * (size_t)r->w + (size_t)x) * 3;
    const int c[3] = {(int)(rgb >> 16) & 255, (int)(rgb >> 8) & 255, (int)rgb & 255};
    for (int k = 0; k < 3; k++) p[k] = (unsigned char)lround(p[k] * (1 - a) + c[k] * a);
}

static void fill_rect(raster *r, double x0, double y0, double x1, double y1, uint32_t rgb) {
    int a = (int)lround(x0), b = (int)lround(x1), t = (int)lround(y0), u = (int)lround(y1);
    if (b == a) b = a + 1;
    if (u == t) u = t + 1;
    for (int y = t; y < u; y++)
        for (int x = a; x < b; x++) blend(r, x, y, rgb, 1);
}

/* Anti-aliased thick segment: coverage from the distance of each pixel centre to the segment. */
static void segment(raster *r, double x0, double y0, double x1, double y1, uint32_t rgb, double width) {
    double hw = (width < 1 ? 1 : width) / 2;
    int xa = (int)floor(fmin(x0, x1) - hw - 1), xb = (int)ceil(fmax(x0, x1) + hw + 1);
    int ya = (int)floor(fmin(y0, y1) - hw - 1), yb = (int)ceil(fmax(y0, y1) + hw + 1);
    if (xa < 0) xa = 0;
    if (ya < 0) ya = 0;
    if (xb > r->w) xb = r->w;
    if (yb > r->h) yb = r->h;
    double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    for (int y = ya; y < yb; y++)
        for (int x = xa; x < xb; x++) {
            double px = x + 0.5 - x0, py = y + 0.5 - y0;
            double t = len2 > 0 ? (px * dx + py * dy) / len2 : 0;
            if (t < 0) t = 0;
            if (t > 1) t = 1;
            double ex = px - t * dx, ey = py - t * dy;
            double cov = hw + 0.5 - sqrt(ex * ex + ey * ey);
            if (cov > 0) blend(r, x, y, rgb, cov);
        }
}

static void text(raster *r, double x, double y, const char *s, double size, int anchor, uint32_t rgb) {
    int scale = size >= 14 ? 2 : 1, n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) n += (*p & 0xC0) != 0x80;
    double w = n * 6.0 * scale - scale;
    double left = anchor == M2_ANCHOR_MIDDLE ? x - w / 2 : anchor == M2_ANCHOR_END ? x - w : x;
    int ox = (int)lround(left), oy = (int)lround(y) - 7 * scale;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) == 0x80) continue;   /* UTF-8 continuation: the lead byte drew '?' */
        int ch = *p >= 32 && *p < 127 ? *p : '?';
        const unsigned char *g = font5x7[ch - 32];
        int drop = ch == 'g' ? scale : 0;   /* its tail hangs below the baseline */
        for (int row = 0; row < 7; row++)
            for (int col = 0; col < 5; col++)
                if (g[row] & (0x10 >> col))
                    for (int sy = 0; sy < scale; sy++)
                        for (int sx = 0; sx < scale; sx++)
                            blend(r, ox + col * scale + sx, oy + drop + row * scale + sy, rgb, 1);
        ox += 6 * scale;
    }
}

int m2_canvas_png_supported(void) { return 1; }

static int m2_canvas_png_write(const m2_canvas *c, const char *path, m2_err *err) {
    raster r = {c->w, c->h, NULL};
    r.px = malloc((size_t)c->w * (size_t)c->h * 3);
    if (!r.px) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    memset(r.px, 255, (size_t)c->w * (size_t)c->h * 3);
    for (int i = 0; i < c->n; i++) {
        const op *o = &c->ops[i];
        switch (o->kind) {
        case OP_LINE: segment(&r, o->x0, o->y0, o->x1, o->y1, o->rgb, o->width); break;
        case OP_RECT:
            if (o->rgb != M2_NO_COLOR) fill_rect(&r, o->x0, o->y0, o->x1, o->y1, o->rgb);
            if (o->stroke != M2_NO_COLOR && o->stroke != o->rgb) {
                segment(&r, o->x0, o->y0, o->x1, o->y0, o->stroke, 1);
                segment(&r, o->x1, o->y0, o->x1, o->y1, o->stroke, 1);
                segment(&r, o->x1, o->y1, o->x0, o->y1, o->stroke, 1);
                segment(&r, o->x0, o->y1, o->x0, o->y0, o->stroke, 1);
            }
            break;
        case OP_POLY:
            for (int k = 1; k < o->n; k++)
                segment(&r, o->pts[2 * k - 2], o->pts[2 * k - 1], o->pts[2 * k], o->pts[2 * k + 1], o->rgb, o->width);
            break;
        case OP_TEXT: text(&r, o->x0, o->y0, o->text, o->size, o->anchor, o->rgb); break;
        }
    }
    /* Encode into memory, then write atomically like every other output. */
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)c->w;
    img.height = (png_uint_32)c->h;
    img.format = PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    int rc = 0;
    if (!png_image_write_to_memory(&img, NULL, &size, 0, r.px, 0, NULL)) {
        rc = m2_errorf(err, M2_EIO, "%s: PNG encoding failed: %s", path, img.message);
    } else {
        void *buf = malloc(size);
        if (!buf) rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
        else if (!png_image_write_to_memory(&img, buf, &size, 0, r.px, 0, NULL))
            rc = m2_errorf(err, M2_EIO, "%s: PNG encoding failed: %s", path, img.message);
        else
            rc = m2_write_file_atomic(path, buf, size, err);
        free(buf);
    }
    free(r.px);
    return rc;
}
#else
int m2_canvas_png_supported(void) { return 0; }

static int m2_canvas_png_write(const m2_canvas *c, const char *path, m2_err *err) {
    (void)c;
    return m2_errorf(err, M2_EUNSUPPORTED, "%s: this build has no PNG support (libpng); write .svg", path);
}
#endif

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
