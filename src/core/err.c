#include "core/err.h"
#include <stdio.h>
#include <string.h>

int m2_errorf(m2_err *err, int code, const char *fmt, ...) {
    if (!err) return -1;
    err->code = code ? code : M2_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int m2_err_prefix(m2_err *err, const char *fmt, ...) {
    if (!err) return -1;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Keep as much of both as fits; a long prefix may cut the tail of the message. */
    size_t hl = strnlen(head, sizeof head - 1);
    memcpy(err->msg, head, hl);
    size_t ol = strnlen(old, sizeof err->msg - 1 - hl);
    memcpy(err->msg + hl, old, ol);
    err->msg[hl + ol] = 0;
    if (!err->code) err->code = M2_EINVAL;
    return -1;
}

void m2_err_clear(m2_err *err) {
    if (!err) return;
    err->code = 0;
    err->msg[0] = 0;
}
