#include "core/progress.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/timer.h"

m2_progress_mode m2_progress_resolve(FILE *f, const char *mode) {
    const char *env = getenv("M2_PROGRESS");
    if (env && *env) mode = env;
    if (mode && !strcmp(mode, "off")) return M2_PROGRESS_OFF;
    if (mode && !strcmp(mode, "on")) return M2_PROGRESS_BAR;
    return isatty(fileno(f)) ? M2_PROGRESS_BAR : M2_PROGRESS_LINES;
}

static void fmt_duration(double s, char *buf, size_t cap) {
    if (!isfinite(s) || s < 0) { snprintf(buf, cap, "?"); return; }
    long t = (long)(s + 0.5);
    if (t < 60) snprintf(buf, cap, "%lds", t);
    else if (t < 3600) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

int m2_progress_format(char *buf, size_t cap, const char *label, int64_t done, int64_t total, double elapsed,
                       int bar_width, const char *extra) {
    char rate[32], eta[32], bar[128];
    double r = elapsed > 0 ? (double)done / elapsed : 0;
    if (r >= 1 || r == 0) snprintf(rate, sizeof rate, "%.1f it/s", r);
    else snprintf(rate, sizeof rate, "%.1f s/it", 1 / r);
    bar[0] = 0;
    if (total > 0) {
        if (bar_width > (int)sizeof bar - 3) bar_width = (int)sizeof bar - 3;
        if (bar_width > 0) {
            int fill = (int)((double)bar_width * (double)(done < total ? done : total) / (double)total);
            int k = 0;
            bar[k++] = '[';
            for (int i = 0; i < bar_width; i++) bar[k++] = i < fill ? '=' : (i == fill ? '>' : ' ');
            bar[k++] = ']';
            bar[k] = 0;
        }
        fmt_duration(r > 0 ? (double)(total - done) / r : NAN, eta, sizeof eta);
        return snprintf(buf, cap, "%s %lld/%lld %s %3d%% %s eta %s%s%s", label, (long long)done, (long long)total, bar,
                        (int)(100.0 * (double)done / (double)total), rate, eta, extra && *extra ? " " : "",
                        extra ? extra : "");
    }
    fmt_duration(elapsed, eta, sizeof eta);
    return snprintf(buf, cap, "%s %lld %s %s%s%s", label, (long long)done, rate, eta, extra && *extra ? " " : "",
                    extra ? extra : "");
}

void m2_progress_begin(m2_progress *p, FILE *f, const char *label, int64_t total, const char *mode) {
    memset(p, 0, sizeof *p);
    p->f = f;
    snprintf(p->label, sizeof p->label, "%s", label);
    p->total = total;
    p->t0 = m2_now_s();
    p->last_print = -1;
    p->drawn_done = -1;
    p->mode = m2_progress_resolve(f, mode);
}

static void draw(m2_progress *p, const char *extra, int final) {
    char line[512];
    double el = m2_now_s() - p->t0;
    if (p->mode == M2_PROGRESS_BAR) {
        m2_progress_format(line, sizeof line, p->label, p->done, p->total, el, 30, extra);
        fprintf(p->f, "\r%-100s%s", line, final ? "\n" : "");
    } else {
        m2_progress_format(line, sizeof line, p->label, p->done, p->total, el, 0, extra);
        fprintf(p->f, "%s\n", line);
        p->drawn_done = p->done;
        snprintf(p->drawn_extra, sizeof p->drawn_extra, "%s", extra ? extra : "");
    }
    fflush(p->f);
}

void m2_progress_update(m2_progress *p, int64_t done, const char *extra) {
    p->done = done;
    if (p->mode == M2_PROGRESS_OFF) return;
    double now = m2_now_s();
    if (p->mode == M2_PROGRESS_BAR) {
        if (p->last_print >= 0 && now - p->last_print < 0.1) return;
    } else {
        int64_t tenth = p->total > 0 ? (p->total + 9) / 10 : 0;
        int due = (tenth > 0 && done - p->last_line_done >= tenth) || (p->last_print >= 0 && now - p->last_print >= 30) ||
                  (p->last_print < 0 && p->total <= 0);
        if (!due) return;
        p->last_line_done = done;
    }
    p->last_print = now;
    draw(p, extra, 0);
}

void m2_progress_end(m2_progress *p, const char *extra) {
    if (p->mode == M2_PROGRESS_OFF) return;
    /* a log (lines mode) got the last update's line already when it showed the final count */
    if (p->mode == M2_PROGRESS_LINES && p->drawn_done == p->done && !strcmp(p->drawn_extra, extra ? extra : ""))
        return;
    draw(p, extra, 1);
}

static void fmt_value(double v, char *buf, size_t cap) {
    double a = fabs(v);
    if (!isfinite(v)) snprintf(buf, cap, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    else if (v == floor(v) && a < 1e9) snprintf(buf, cap, "%.0f", v);
    else if (a >= 1e4 || a < 1e-3) snprintf(buf, cap, "%.3e", v);
    else snprintf(buf, cap, "%.4f", v);
}

int m2_format_summary(char *buf, size_t cap, const char *stage, int64_t step, int64_t total, const m2_scalar *s,
                      int n, double step_ms, double tok_per_s) {
    size_t k = 0;
#define PUT(...) do { int w_ = snprintf(buf + k, k < cap ? cap - k : 0, __VA_ARGS__); if (w_ > 0) k += (size_t)w_; } while (0)
    if (cap) buf[0] = 0;
    if (total > 0) PUT("step %lld/%lld", (long long)step, (long long)total);
    else PUT("step %lld", (long long)step);
    if (stage && *stage) PUT(" | %s", stage);
    for (int i = 0; i < n; i++) {
        char v[64];
        fmt_value(s[i].value, v, sizeof v);
        /* Short key: the part after the last '/'; the namespace is the stage. */
        const char *key = strrchr(s[i].key, '/');
        PUT(" | %s %s", key ? key + 1 : s[i].key, v);
    }
    if (step_ms > 0) PUT(" | %.0f ms", step_ms);
    if (tok_per_s > 0) {
        if (tok_per_s >= 1000) PUT(" | %.1fk tok/s", tok_per_s / 1000);
        else PUT(" | %.0f tok/s", tok_per_s);
    }
#undef PUT
    return (int)k;
}

void m2_print_summary(FILE *f, const char *stage, int64_t step, int64_t total, const m2_scalar *s, int n,
                      double step_ms, double tok_per_s) {
    char line[2048];
    m2_format_summary(line, sizeof line, stage, step, total, s, n, step_ms, tok_per_s);
    fprintf(f, "%s\n", line);
    fflush(f);
}

void m2_format_bytes(double b, char *buf, size_t cap) {
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (fabs(b) >= 1024 && i < 4) { b /= 1024; i++; }
    if (i == 0) snprintf(buf, cap, "%.0f B", b);
    else snprintf(buf, cap, "%.2f %s", b, u[i]);
}

void m2_memplan_add(m2_memplan *m, const char *name, double bytes) {
    if (m->n >= M2_MEMPLAN_MAX) return;
    snprintf(m->rows[m->n].name, sizeof m->rows[m->n].name, "%s", name);
    m->rows[m->n].bytes = bytes;
    m->n++;
}

double m2_memplan_total(const m2_memplan *m) {
    double t = 0;
    for (int i = 0; i < m->n; i++) t += m->rows[i].bytes;
    return t;
}

void m2_memplan_print(const m2_memplan *m, FILE *f) {
    int w = 5;
    for (int i = 0; i < m->n; i++) {
        int l = (int)strlen(m->rows[i].name);
        if (l > w) w = l;
    }
    fprintf(f, "memory plan:\n");
    double total = m2_memplan_total(m);
    for (int i = 0; i < m->n; i++) {
        char b[32];
        m2_format_bytes(m->rows[i].bytes, b, sizeof b);
        fprintf(f, "  %-*s %12s %5.1f%%\n", w, m->rows[i].name, b, total > 0 ? 100.0 * m->rows[i].bytes / total : 0.0);
    }
    char b[32];
    m2_format_bytes(total, b, sizeof b);
    fprintf(f, "  %-*s %12s\n", w, "total", b);
}
