/* A growable byte string: append, append formatted, reset, free. The one such buffer of the
 * project (observations, YAML, protobuf records, game files), so out-of-memory is handled once:
 * every append returns 0, or -1 when memory ran out. The failure is also sticky (`oom`), so a
 * caller that appends many pieces may check once at the end; after a failure appends do nothing
 * (the text stays a complete prefix, never a torn write) until reset or free.
 *
 * The bytes are NUL-terminated whenever p is non-NULL, so the text can be used as a C string
 * directly; binary data (NUL bytes inside) is fine, len counts them. A zeroed struct is an empty
 * buffer: `m2_strbuf b = {0};` needs no init call. */
#ifndef M2_STRBUF_H
#define M2_STRBUF_H
#include <stdarg.h>
#include <stddef.h>

typedef struct m2_strbuf {
    char *p;       /* NULL until the first append or reserve */
    size_t len;    /* bytes before the terminating NUL */
    size_t cap;    /* bytes allocated (len + 1 <= cap once p is set) */
    int oom;       /* an allocation failed since the last reset */
} m2_strbuf;

/* Makes room for `extra` more bytes (plus the NUL) without changing the text. */
int m2_strbuf_reserve(m2_strbuf *b, size_t extra);
int m2_strbuf_append(m2_strbuf *b, const void *data, size_t n);
int m2_strbuf_puts(m2_strbuf *b, const char *s);
int m2_strbuf_putc(m2_strbuf *b, char c);
/* Decimal, as printf's %lld writes it, without going through printf (hot in TextCraft's steps). */
int m2_strbuf_put_int(m2_strbuf *b, long long v);
/* printf-style; the whole formatted text is appended, whatever its length. */
int m2_strbuf_appendf(m2_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int m2_strbuf_vappendf(m2_strbuf *b, const char *fmt, va_list ap);

/* The text; "" when nothing was appended (never NULL). */
const char *m2_strbuf_str(const m2_strbuf *b);
/* Empties the text and clears `oom`; keeps the memory for the next use. */
void m2_strbuf_reset(m2_strbuf *b);
/* Hands the text to the caller (free() it) and leaves b empty; NULL when an append had failed
 * (the partial text is freed) or the empty string cannot be allocated. */
char *m2_strbuf_take(m2_strbuf *b);
void m2_strbuf_free(m2_strbuf *b);

#endif
