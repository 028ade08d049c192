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
    snprintf(err->msg, sizeof err->msg, "%s%s", head, old);
    if (!err->code) err->code = M2_EINVAL;
    return -1;
}

void m2_err_clear(m2_err *err) {
    if (!err) return;
    err->code = 0;
    err->msg[0] = 0;
}
