#include "core/fsutil.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libgen.h>
#include <dirent.h>

int m2_read_file(const char *path, char **out, size_t *len, m2_err *err) {
    *out = NULL;
    if (len) *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return m2_errorf(err, M2_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return m2_errorf(err, M2_EIO, "%s: cannot seek", path); }
    long n = ftell(f);
    if (n < 0) { fclose(f); return m2_errorf(err, M2_EIO, "%s: cannot tell size (not a regular file?)", path); }
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (!buf) { fclose(f); return m2_errorf(err, M2_ENOMEM, "%s: out of memory (%ld bytes)", path, n); }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) { free(buf); return m2_errorf(err, M2_EIO, "%s: short read", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = (size_t)n;
    return 0;
}

int m2_write_file_atomic(const char *path, const void *data, size_t len, m2_err *err) {
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp) return m2_errorf(err, M2_ENOMEM, "out of memory");
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { int e = errno; free(tmp); return m2_errorf(err, M2_EIO, "%s: cannot create: %s", path, strerror(e)); }
    const unsigned char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno; close(fd); unlink(tmp); free(tmp);
            return m2_errorf(err, M2_EIO, "%s: write failed: %s", path, strerror(e));
        }
        p += w; left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno; unlink(tmp); free(tmp);
        return m2_errorf(err, M2_EIO, "%s: fsync failed: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno; unlink(tmp); free(tmp);
        return m2_errorf(err, M2_EIO, "%s: rename failed: %s", path, strerror(e));
    }
    free(tmp);
    char *dcopy = strdup(path);
    if (dcopy) {
        int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) { fsync(dfd); close(dfd); }
        free(dcopy);
    }
    return 0;
}

int m2_mkdir_p(const char *path, m2_err *err) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return m2_errorf(err, M2_EINVAL, "%s: bad directory path", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return m2_errorf(err, M2_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return m2_errorf(err, M2_EIO, "%s: not a directory", path);
    return 0;
}

int m2_path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

const char *m2_shared_data_dir(void) {
    const char *d = getenv("M2_SHARED_DATA");
    return (d && *d) ? d : NULL;
}

/* lstat, so a link is removed, never followed */
int m2_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) { rc = -1; continue; }
        if (m2_remove_tree(sub) != 0) rc = -1;
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
    return rc;
}
