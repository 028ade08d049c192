#include "core/strbuf.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First allocation: big enough for most observations and records, so steady use never grows. */
enum { STRBUF_MIN_CAP = 256 };

int m2_strbuf_reserve(m2_strbuf *b, size_t extra) {
    if (b->oom) return -1;
    if (extra > SIZE_MAX - 1 - b->len) { b->oom = 1; return -1; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : STRBUF_MIN_CAP;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) { cap = need; break; }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    if (!b->p) p[0] = 0;   /* a fresh buffer is already the empty string */
    b->p = p;
    b->cap = cap;
    return 0;
}

int m2_strbuf_append(m2_strbuf *b, const void *data, size_t n) {
    if (m2_strbuf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int m2_strbuf_puts(m2_strbuf *b, const char *s) { return m2_strbuf_append(b, s, strlen(s)); }

int m2_strbuf_putc(m2_strbuf *b, char c) { return m2_strbuf_append(b, &c, 1); }

int m2_strbuf_put_int(m2_strbuf *b, long long v) {
    char tmp[24];   /* 19 digits of 2^63, a sign, room to spare */
    size_t i = sizeof tmp;
    /* the magnitude in unsigned arithmetic, so LLONG_MIN does not overflow */
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do { tmp[--i] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[--i] = '-';
    return m2_strbuf_append(b, tmp + i, sizeof tmp - i);
}

int m2_strbuf_vappendf(m2_strbuf *b, const char *fmt, va_list ap) {
    if (b->oom) return -1;
    /* Format straight into the spare room; only a text longer than it is formatted twice. */
    va_list again;
    va_copy(again, ap);
    size_t room = b->p ? b->cap - b->len : 0;
    int k = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
    if (k < 0) { va_end(again); if (b->p) b->p[b->len] = 0; return -1; }
    if ((size_t)k >= room) {
        if (m2_strbuf_reserve(b, (size_t)k)) { va_end(again); if (b->p) b->p[b->len] = 0; return -1; }
        vsnprintf(b->p + b->len, (size_t)k + 1, fmt, again);
    }
    va_end(again);
    b->len += (size_t)k;
    return 0;
}

int m2_strbuf_appendf(m2_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = m2_strbuf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *m2_strbuf_str(const m2_strbuf *b) { return b->p ? b->p : ""; }

void m2_strbuf_reset(m2_strbuf *b) {
    b->len = 0;
    b->oom = 0;
    if (b->p) b->p[0] = 0;
}

char *m2_strbuf_take(m2_strbuf *b) {
    if (b->oom) { m2_strbuf_free(b); return NULL; }
    char *p = b->p ? b->p : calloc(1, 1);
    *b = (m2_strbuf){0};
    return p;
}

void m2_strbuf_free(m2_strbuf *b) {
    free(b->p);
    *b = (m2_strbuf){0};
}
