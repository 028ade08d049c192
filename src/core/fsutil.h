/* Small file helpers used by every reader and writer. */
#ifndef M2_FSUTIL_H
#define M2_FSUTIL_H
#include <stddef.h>
#include "core/err.h"

/* Reads a whole file; *out is NUL-terminated (not counted in *len). Caller frees. */
int m2_read_file(const char *path, char **out, size_t *len, m2_err *err);
/* Writes atomically: path.tmp.PID, fsync, rename over path, fsync the directory. */
int m2_write_file_atomic(const char *path, const void *data, size_t len, m2_err *err);
int m2_mkdir_p(const char *path, m2_err *err);
int m2_path_exists(const char *path);
/* Removes path and, for a folder, everything below it (links are removed, not followed).
 * 0 when it is gone (or was never there), -1 when something could not be removed. */
int m2_remove_tree(const char *path);
/* Directory of the reference data: $M2_SHARED_DATA, else NULL. */
const char *m2_shared_data_dir(void);

#endif
