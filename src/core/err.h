/* Errors returned to the caller: a status code and a human-readable message that names the file,
 * the field and the reason. The library never exits; the CLI prints the message and exits 1. */
#ifndef M2_ERR_H
#define M2_ERR_H
#include <stdarg.h>

typedef struct m2_err {
    int code;          /* 0 = ok; otherwise one of M2_E* */
    char msg[1024];
} m2_err;

enum { M2_OK = 0, M2_EIO = 1, M2_EFORMAT = 2, M2_ESHAPE = 3, M2_ECONFIG = 4, M2_ENOMEM = 5,
       M2_EINVAL = 6, M2_ENOTFOUND = 7, M2_EUNSUPPORTED = 8,
       M2_ESTOPPED = 9 /* stopped where the caller asked (not a failure: the work so far is saved) */ };

/* Sets err (when non-NULL) and returns -1, so callers write `return m2_errorf(err, ...)`. */
int m2_errorf(m2_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message, e.g. with the file name: "model.gguf: " + msg. */
int m2_err_prefix(m2_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void m2_err_clear(m2_err *err);

#endif
