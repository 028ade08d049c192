#define _GNU_SOURCE   /* memmem */
#include "core/chart_kit.h"
#include <cairo-svg.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

/* DejaVu Sans is Debian's default sans face (fonts-dejavu-core, in scripts/setup.sh); fontconfig
 * picks the nearest face where it is missing. */
#define M2_CK_FACE "DejaVu Sans"
/* cairo's image surfaces stop at 32767 pixels a side. */
#define M2_CK_MAX_SIDE 32767.0
/* Longest label drawn, in bytes (longer ones are cut at a character boundary). */
#define M2_CK_TEXT_MAX 1024

/* Twenty colours: ten strong ones for the first series, lighter versions for the next ten. */
static const uint32_t palette[20] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2,
                                     0x7f7f7f, 0xbcbd22, 0x17becf, 0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896,
                                     0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xc7c7c7, 0xdbdb8d, 0x9edae5};

uint32_t m2_ck_color(int i) { return palette[(i < 0 ? -i : i) % 20]; }

void m2_ck_set_rgb(m2_ck *k, uint32_t rgb) {
    cairo_set_source_rgb(k->cr, (rgb >> 16 & 0xff) / 255.0, (rgb >> 8 & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

static void buf_add(m2_ck_buf *b, const void *p, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
}

static cairo_status_t buf_write(void *closure, const unsigned char *data, unsigned int len) {
    m2_ck_buf *b = closure;
    buf_add(b, data, len);
    return b->oom ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

/* Metrics unhinted, so that text measures the same on the image and the SVG surface and the two
 * files lay out identically; grey antialiasing, so PNG text has no colour fringes. */
static void set_font_options(cairo_t *cr) {
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
}

static int cairo_failed(m2_ck *k, const char *what, m2_err *err) {
    cairo_status_t st = k->cr ? cairo_status(k->cr) : CAIRO_STATUS_SUCCESS;
    if (st == CAIRO_STATUS_SUCCESS && k->surface) st = cairo_surface_status(k->surface);
    if (st == CAIRO_STATUS_SUCCESS) return 0;
    return m2_errorf(err, st == CAIRO_STATUS_NO_MEMORY ? M2_ENOMEM : M2_EIO, "%s: cairo: %s", what,
                     cairo_status_to_string(st));
}

void m2_ck_close(m2_ck *k) {
    if (k->cr) cairo_destroy(k->cr);
    if (k->surface) cairo_surface_destroy(k->surface);
    free(k->file.p);
    free(k->desc.p);
    memset(k, 0, sizeof *k);
}

int m2_ck_open_measure(m2_ck *k, m2_err *err) {
    memset(k, 0, sizeof *k);
    k->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    k->cr = cairo_create(k->surface);
    set_font_options(k->cr);
    if (cairo_failed(k, "chart", err)) { m2_ck_close(k); return -1; }
    return 0;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

int m2_ck_open(m2_ck *k, const char *out_path, double width, double height, m2_err *err) {
    memset(k, 0, sizeof *k);
    int svg = ends_with(out_path, ".svg"), png = ends_with(out_path, ".png");
    if (!svg && !png) return m2_errorf(err, M2_EUNSUPPORTED, "%s: charts are written as .svg or .png", out_path);
    width = ceil(width);
    height = ceil(height);
    if (!(width >= 1 && height >= 1 && width <= M2_CK_MAX_SIDE && height <= M2_CK_MAX_SIDE))
        return m2_errorf(err, M2_EINVAL, "%s: a %.0f x %.0f pixel chart is too large to draw", out_path, width, height);
    k->svg = svg;
    k->width = width;
    k->height = height;
    if (svg) {
        k->surface = cairo_svg_surface_create_for_stream(buf_write, &k->file, width, height);
        cairo_svg_surface_set_document_unit(k->surface, CAIRO_SVG_UNIT_PX);
    } else {
        k->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)width, (int)height);
    }
    k->cr = cairo_create(k->surface);
    set_font_options(k->cr);
    cairo_set_line_join(k->cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(k->cr, CAIRO_LINE_CAP_BUTT);
    m2_ck_set_rgb(k, 0xffffff);
    cairo_paint(k->cr);
    if (cairo_failed(k, out_path, err)) { m2_ck_close(k); return -1; }
    return 0;
}

/* cairo names the SVG's drawing group after a counter shared by every surface of the process
 * ("surface7"); renumbering in order of appearance makes the same chart give the same bytes. */
static int renumber_surfaces(m2_ck_buf *in, m2_ck_buf *out) {
    static const char tag[] = "surface";
    long seen[64];
    int n_seen = 0;
    size_t i = 0;
    while (i < in->len) {
        unsigned char *hit = memmem(in->p + i, in->len - i, tag, sizeof tag - 1);
        size_t at = hit ? (size_t)(hit - in->p) : in->len;
        size_t d = at + sizeof tag - 1;
        int quoted = hit && at > 0 && (in->p[at - 1] == '"' || in->p[at - 1] == '#');
        if (!hit || !quoted || d >= in->len || in->p[d] < '0' || in->p[d] > '9') {
            size_t upto = hit ? d : in->len;
            buf_add(out, in->p + i, upto - i);
            i = upto;
            continue;
        }
        long v = 0;
        while (d < in->len && in->p[d] >= '0' && in->p[d] <= '9' && v < 100000000) v = v * 10 + (in->p[d++] - '0');
        int idx = 0;
        while (idx < n_seen && seen[idx] != v) idx++;
        if (idx == n_seen) {
            if (n_seen == 64) return -1;
            seen[n_seen++] = v;
        }
        char num[32];
        int len = snprintf(num, sizeof num, "surface%d", idx + 1);
        buf_add(out, in->p + i, at - i);
        buf_add(out, num, (size_t)len);
        i = d;
    }
    return out->oom ? -1 : 0;
}

/* XML text: &, <, > escaped; bytes XML 1.0 forbids (most control characters) become '?'. */
static void xml_text(m2_ck_buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '&') buf_add(b, "&amp;", 5);
        else if (c == '<') buf_add(b, "&lt;", 4);
        else if (c == '>') buf_add(b, "&gt;", 4);
        else if (c < 0x20 && c != '\n' && c != '\t') buf_add(b, "?", 1);
        else buf_add(b, &s[i], 1);
    }
}

static size_t utf8_clean(const char *s, char *out, size_t cap);

/* The SVG with <title> and <desc> right after the root element's start tag. */
static int svg_with_text(m2_ck *k, const char *title, m2_ck_buf *out) {
    m2_ck_buf tmp = {0};
    if (renumber_surfaces(&k->file, &tmp) != 0) { free(tmp.p); return -1; }
    unsigned char *root = tmp.p ? memmem(tmp.p, tmp.len, "<svg", 4) : NULL;
    unsigned char *gt = root ? memchr(root, '>', tmp.len - (size_t)(root - tmp.p)) : NULL;
    if (!gt) { free(tmp.p); return -1; }
    size_t head = (size_t)(gt - tmp.p) + 1;
    buf_add(out, tmp.p, head);
    char clean[M2_CK_TEXT_MAX * 3];
    if (title) {
        buf_add(out, "\n<title>", 8);
        xml_text(out, clean, utf8_clean(title, clean, sizeof clean));
        buf_add(out, "</title>", 8);
    }
    if (k->desc.len) {
        buf_add(out, "\n<desc>", 7);
        /* the description is cleaned line by line (it is longer than one label) */
        const char *p = (const char *)k->desc.p, *end = p + k->desc.len;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
            char line[M2_CK_TEXT_MAX];
            size_t take = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, p, take);
            line[take] = 0;
            xml_text(out, clean, utf8_clean(line, clean, sizeof clean));
            buf_add(out, "\n", 1);
            p += n + (nl ? 1 : 0);
        }
        buf_add(out, "</desc>", 7);
    }
    buf_add(out, tmp.p + head, tmp.len - head);
    free(tmp.p);
    return out->oom ? -1 : 0;
}

static int make_parent(const char *path, m2_err *err) {
    char *copy = strdup(path);
    if (!copy) return m2_errorf(err, M2_ENOMEM, "out of memory");
    char *dir = dirname(copy);
    int rc = strcmp(dir, ".") && strcmp(dir, "/") ? m2_mkdir_p(dir, err) : 0;
    free(copy);
    return rc;
}

int m2_ck_write(m2_ck *k, const char *out_path, const char *title, m2_err *err) {
    int rc = cairo_failed(k, out_path, err);
    if (rc == 0 && k->desc.oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    m2_ck_buf file = {0};
    if (rc == 0 && k->svg) {
        cairo_destroy(k->cr);
        k->cr = NULL;
        cairo_surface_finish(k->surface);   /* the SVG is complete in k->file only after this */
        rc = cairo_failed(k, out_path, err);
        if (rc == 0 && (k->file.oom || svg_with_text(k, title, &file) != 0))
            rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory writing the SVG", out_path);
    } else if (rc == 0) {
        cairo_surface_flush(k->surface);
        cairo_status_t st = cairo_surface_write_to_png_stream(k->surface, buf_write, &file);
        if (st != CAIRO_STATUS_SUCCESS || file.oom)
            rc = m2_errorf(err, file.oom ? M2_ENOMEM : M2_EIO, "%s: cairo: %s", out_path,
                           file.oom ? "out of memory" : cairo_status_to_string(st));
    }
    if (rc == 0) rc = make_parent(out_path, err);
    if (rc == 0) rc = m2_write_file_atomic(out_path, file.p, file.len, err);
    free(file.p);
    m2_ck_close(k);
    return rc;
}

void m2_ck_desc(m2_ck *k, const char *fmt, ...) {
    if (!k->svg) return;
    char line[M2_CK_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    buf_add(&k->desc, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Length of the well-formed UTF-8 sequence at s (as cairo accepts it: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. */
static int utf8_seq(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++) if ((s[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))) return 0;
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))) return 0;
    return n;
}

/* s as text cairo can draw: invalid bytes and control characters become '?', cut to fit cap at a
 * character boundary. Returns the length written. */
static size_t utf8_clean(const char *s, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = 0;
    while (*p) {
        int len = utf8_seq(p);
        if (len == 0 || (len == 1 && (*p < 0x20 || *p == 0x7f))) {
            if (n + 2 > cap) break;
            out[n++] = '?';
            p++;
            continue;
        }
        if (n + (size_t)len + 1 > cap) break;
        memcpy(out + n, p, (size_t)len);
        n += (size_t)len;
        p += len;
    }
    out[n] = 0;
    return n;
}

static void set_font(m2_ck *k, double size, int bold) {
    cairo_select_font_face(k->cr, M2_CK_FACE, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(k->cr, size);
}

static double clean_width(m2_ck *k, const char *clean) {
    cairo_text_extents_t te;
    cairo_text_extents(k->cr, clean, &te);
    return te.x_advance;
}

double m2_ck_text_width(m2_ck *k, const char *s, double size, int bold) {
    char clean[M2_CK_TEXT_MAX];
    utf8_clean(s, clean, sizeof clean);
    set_font(k, size, bold);
    return clean_width(k, clean);
}

double m2_ck_fit_size(m2_ck *k, const char *s, double size, double min_size, double max_w, int bold) {
    double w = m2_ck_text_width(k, s, size, bold);
    if (w <= max_w || w <= 0) return size;
    double fit = size * max_w / w;   /* text width scales with the size (metrics are unhinted) */
    return fit < min_size ? min_size : fit;
}

void m2_ck_text(m2_ck *k, double x, double y, const char *s, const m2_ck_style *st) {
    char clean[M2_CK_TEXT_MAX];
    size_t n = utf8_clean(s, clean, sizeof clean - 4);
    set_font(k, st->size, st->bold);
    double w = clean_width(k, clean);
    if (st->max_w > 0 && w > st->max_w) {
        /* drop whole characters from the end until the text and an ellipsis fit */
        static const char ell[] = "\xe2\x80\xa6";
        while (n > 0) {
            do n--; while (n > 0 && ((unsigned char)clean[n] & 0xc0) == 0x80);
            memcpy(clean + n, ell, sizeof ell);
            if ((w = clean_width(k, clean)) <= st->max_w) break;
        }
    }
    cairo_save(k->cr);
    cairo_translate(k->cr, x, y);
    if (st->angle != 0) cairo_rotate(k->cr, -st->angle * M_PI / 180);
    cairo_move_to(k->cr, st->anchor == M2_CK_MIDDLE ? -w / 2 : st->anchor == M2_CK_END ? -w : 0, 0);
    m2_ck_set_rgb(k, st->rgb);
    cairo_show_text(k->cr, clean);
    cairo_restore(k->cr);
}

void m2_ck_line(m2_ck *k, double x0, double y0, double x1, double y1, uint32_t rgb, double width) {
    cairo_move_to(k->cr, x0, y0);
    cairo_line_to(k->cr, x1, y1);
    cairo_set_line_width(k->cr, width);
    m2_ck_set_rgb(k, rgb);
    cairo_stroke(k->cr);
}

void m2_ck_fill_rect(m2_ck *k, double x, double y, double w, double h, uint32_t rgb) {
    cairo_rectangle(k->cr, x, y, w, h);
    m2_ck_set_rgb(k, rgb);
    cairo_fill(k->cr);
}

void m2_ck_stroke_rect(m2_ck *k, double x, double y, double w, double h, uint32_t rgb, double width) {
    cairo_rectangle(k->cr, x, y, w, h);
    cairo_set_line_width(k->cr, width);
    m2_ck_set_rgb(k, rgb);
    cairo_stroke(k->cr);
}

void m2_ck_dot(m2_ck *k, double x, double y, double r, uint32_t rgb) {
    cairo_new_sub_path(k->cr);
    cairo_arc(k->cr, x, y, r, 0, 2 * M_PI);
    m2_ck_set_rgb(k, rgb);
    cairo_fill(k->cr);
}
