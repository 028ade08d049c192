/* A tiny vector canvas: a display list of lines, rectangles, polylines and text, written as SVG or
 * rasterised to PNG (libpng, built-in 5x7 bitmap font). Coordinates are pixels, y down; colours
 * 0xRRGGBB. Used by core/chart.h. */
#ifndef M2_CANVAS_H
#define M2_CANVAS_H
#include <stdint.h>
#include "core/err.h"

enum { M2_ANCHOR_START = 0, M2_ANCHOR_MIDDLE = 1, M2_ANCHOR_END = 2 };
#define M2_NO_COLOR 0xFFFFFFFFu

typedef struct m2_canvas m2_canvas;

m2_canvas *m2_canvas_new(int width, int height);   /* white background */
void m2_canvas_free(m2_canvas *c);
void m2_canvas_line(m2_canvas *c, double x0, double y0, double x1, double y1, uint32_t rgb, double width);
void m2_canvas_rect(m2_canvas *c, double x, double y, double w, double h, uint32_t fill, uint32_t stroke);
void m2_canvas_polyline(m2_canvas *c, const double *xy, int n, uint32_t rgb, double width);
/* (x, y) is the baseline point; size in pixels. */
void m2_canvas_text(m2_canvas *c, double x, double y, const char *text, double size, int anchor, uint32_t rgb);
/* Writes SVG for *.svg, PNG for *.png; anything else is an error. */
int m2_canvas_save(const m2_canvas *c, const char *path, m2_err *err);
char *m2_canvas_svg(const m2_canvas *c);   /* malloc'd SVG text */
int m2_canvas_png_supported(void);

#endif
