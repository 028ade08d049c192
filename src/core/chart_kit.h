/* The drawing kit behind core/chart.h: one cairo drawing, written as PNG (an image surface) or SVG
 * (cairo's SVG surface) by the file's extension, so both formats come from the same drawing calls.
 * Text is set in one sans face through fontconfig and measured with cairo before it is placed.
 * Coordinates are pixels, y down; colours 0xRRGGBB. Internal to core/chart.c. */
#ifndef M2_CHART_KIT_H
#define M2_CHART_KIT_H
#include <cairo.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

enum { M2_CK_START = 0, M2_CK_MIDDLE = 1, M2_CK_END = 2 };   /* where (x, y) is on the text's baseline */

typedef struct m2_ck_buf {
    unsigned char *p;
    size_t len, cap;
    int oom;
} m2_ck_buf;

typedef struct m2_ck {
    cairo_surface_t *surface;
    cairo_t *cr;
    int svg;              /* 1: the file is SVG; 0: PNG */
    double width, height;
    m2_ck_buf file;       /* the encoded picture (SVG streams into it while drawing) */
    m2_ck_buf desc;       /* the SVG's text alternative (<desc>): what the picture shows, in words */
} m2_ck;

typedef struct m2_ck_style {
    double size;          /* pixels */
    int bold;
    uint32_t rgb;
    int anchor;           /* M2_CK_START / MIDDLE / END */
    double angle;         /* degrees, counter-clockwise, about (x, y) */
    double max_w;         /* > 0: longer text is cut and ends in an ellipsis */
} m2_ck_style;

/* A context on a 1x1 scratch surface, for measuring text before the picture's size is known. */
int m2_ck_open_measure(m2_ck *k, m2_err *err);
/* The picture for out_path (*.png or *.svg; anything else is M2_EUNSUPPORTED), white. */
int m2_ck_open(m2_ck *k, const char *out_path, double width, double height, m2_err *err);
/* Encodes the picture and writes out_path atomically, creating its folder; an SVG also gets
 * <title> (title) and <desc> (what m2_ck_desc collected). Closes k either way. */
int m2_ck_write(m2_ck *k, const char *out_path, const char *title, m2_err *err);
void m2_ck_close(m2_ck *k);

double m2_ck_text_width(m2_ck *k, const char *s, double size, int bold);
/* The largest size in [min_size, size] at which s is at most max_w wide (min_size if none is). */
double m2_ck_fit_size(m2_ck *k, const char *s, double size, double min_size, double max_w, int bold);
/* Text as UTF-8; invalid bytes and control characters are drawn as '?'. */
void m2_ck_text(m2_ck *k, double x, double y, const char *s, const m2_ck_style *st);
void m2_ck_line(m2_ck *k, double x0, double y0, double x1, double y1, uint32_t rgb, double width);
void m2_ck_fill_rect(m2_ck *k, double x, double y, double w, double h, uint32_t rgb);
void m2_ck_stroke_rect(m2_ck *k, double x, double y, double w, double h, uint32_t rgb, double width);
void m2_ck_dot(m2_ck *k, double x, double y, double r, uint32_t rgb);
/* Appends to the SVG's <desc> (printf format); the PNG ignores it. */
void m2_ck_desc(m2_ck *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The i-th series colour (20 distinct ones, then they repeat). */
uint32_t m2_ck_color(int i);
void m2_ck_set_rgb(m2_ck *k, uint32_t rgb);

#endif
