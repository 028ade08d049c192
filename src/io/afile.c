#include "io/afile.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct m2_afile {
    FILE *f;
    char *path, *tmp;
    uint64_t pos;
    int failed;
};

m2_afile *m2_afile_open(const char *path, m2_err *err) {
    m2_afile *a = calloc(1, sizeof *a);
    size_t pl = strlen(path) + 32;
    if (a) { a->path = strdup(path); a->tmp = malloc(pl); }
    if (!a || !a->path || !a->tmp) {
        if (a) { free(a->path); free(a->tmp); free(a); }
        m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    snprintf(a->tmp, pl, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        m2_errorf(err, M2_EIO, "%s: cannot create: %s", a->tmp, strerror(errno));
        free(a->path); free(a->tmp); free(a);
        return NULL;
    }
    setvbuf(a->f, NULL, _IOFBF, 1 << 20);
    return a;
}

int m2_afile_write(m2_afile *a, const void *data, size_t n, m2_err *err) {
    if (a->failed) return -1;
    if (n && fwrite(data, 1, n, a->f) != n) {
        a->failed = 1;
        return m2_errorf(err, M2_EIO, "%s: write failed: %s", a->path, strerror(errno));
    }
    a->pos += n;
    return 0;
}

int m2_afile_zeros(m2_afile *a, size_t n, m2_err *err) {
    static const unsigned char z[256];
    while (n) {
        size_t k = n < sizeof z ? n : sizeof z;
        if (m2_afile_write(a, z, k, err)) return -1;
        n -= k;
    }
    return 0;
}

uint64_t m2_afile_tell(const m2_afile *a) { return a->pos; }

void m2_afile_abort(m2_afile *a) {
    if (!a) return;
    if (a->f) fclose(a->f);
    unlink(a->tmp);
    free(a->path); free(a->tmp); free(a);
}

int m2_afile_commit(m2_afile *a, m2_err *err) {
    if (a->failed) { m2_afile_abort(a); return -1; }
    int rc = 0;
    if (fflush(a->f) != 0 || fsync(fileno(a->f)) != 0)
        rc = m2_errorf(err, M2_EIO, "%s: flush/fsync failed: %s", a->path, strerror(errno));
    if (fclose(a->f) != 0 && !rc) rc = m2_errorf(err, M2_EIO, "%s: close failed: %s", a->path, strerror(errno));
    a->f = NULL;
    if (!rc && rename(a->tmp, a->path) != 0)
        rc = m2_errorf(err, M2_EIO, "%s: rename failed: %s", a->path, strerror(errno));
    if (rc) { m2_afile_abort(a); return -1; }
    char *d = strdup(a->path);
    if (d) {
        int fd = open(dirname(d), O_RDONLY | O_DIRECTORY);
        if (fd >= 0) { fsync(fd); close(fd); }
        free(d);
    }
    free(a->path); free(a->tmp); free(a);
    return 0;
}
