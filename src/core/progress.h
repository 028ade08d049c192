/* Console output of long work: a progress bar per phase (a live bar on a terminal, plain periodic
 * lines otherwise, so logs stay readable), one summary line per step in the `key value | ...`
 * form users grep, and the memory plan printed before step 1. */
#ifndef M2_PROGRESS_H
#define M2_PROGRESS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/run.h"

typedef enum m2_progress_mode { M2_PROGRESS_OFF = 0, M2_PROGRESS_BAR = 1, M2_PROGRESS_LINES = 2 } m2_progress_mode;

typedef struct m2_progress {
    FILE *f;
    char label[64];
    int64_t total, done;
    double t0, last_print;
    int64_t last_line_done;
    m2_progress_mode mode;
    /* the last line printed (lines mode): m2_progress_end does not print the same state again */
    int64_t drawn_done;
    char drawn_extra[128];
} m2_progress;

/* mode: "auto" (bar on a terminal, lines otherwise), "on" (bar), "off"; NULL = auto. The
 * environment variable M2_PROGRESS (auto|on|off) overrides it. total <= 0: unknown. */
m2_progress_mode m2_progress_resolve(FILE *f, const char *mode);
void m2_progress_begin(m2_progress *p, FILE *f, const char *label, int64_t total, const char *mode);
/* Cheap to call every item: redraws at most 10 times a second (bar) or prints a line every 10%
 * or 30 s (lines). `extra` is appended (e.g. "loss 1.23"); may be NULL. */
void m2_progress_update(m2_progress *p, int64_t done, const char *extra);
/* Final state: the bar's last redraw and a newline, or (lines) a last line unless the previous
 * one already showed this count and extra. */
void m2_progress_end(m2_progress *p, const char *extra);
/* The text of the bar/line for a state, for tests: "label  42/100 [=====>    ]  42%  3.1 it/s  eta 18s  extra". */
int m2_progress_format(char *buf, size_t cap, const char *label, int64_t done, int64_t total, double elapsed_s,
                       int bar_width, const char *extra);

/* "step 12/400 | sys2_offline | actor_loss 0.1234 | critic_loss 1.5e-03 | 812 ms | 3.4k tok/s"
 * tok_per_s <= 0 and step_ms <= 0 are omitted; total <= 0 prints just the step. */
int m2_format_summary(char *buf, size_t cap, const char *stage, int64_t step, int64_t total, const m2_scalar *s,
                      int n, double step_ms, double tok_per_s);
void m2_print_summary(FILE *f, const char *stage, int64_t step, int64_t total, const m2_scalar *s, int n,
                      double step_ms, double tok_per_s);

/* "1.50 GiB", "12.0 MiB", "512 B" */
void m2_format_bytes(double bytes, char *buf, size_t cap);

/* A named table of byte counts: what lives in memory during a run. */
#define M2_MEMPLAN_MAX 64
typedef struct m2_memplan {
    int n;
    struct { char name[96]; double bytes; } rows[M2_MEMPLAN_MAX];
} m2_memplan;
void m2_memplan_add(m2_memplan *m, const char *name, double bytes);
double m2_memplan_total(const m2_memplan *m);
void m2_memplan_print(const m2_memplan *m, FILE *f);

#endif
