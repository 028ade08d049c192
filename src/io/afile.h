/* Streaming atomic file writes for large outputs (models): write to path.tmp.PID, fsync, rename
 * over path, fsync the directory. A file that is aborted or fails leaves nothing behind. */
#ifndef M2_IO_AFILE_H
#define M2_IO_AFILE_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef struct m2_afile m2_afile;

m2_afile *m2_afile_open(const char *path, m2_err *err);
int m2_afile_write(m2_afile *f, const void *data, size_t n, m2_err *err);
int m2_afile_zeros(m2_afile *f, size_t n, m2_err *err);
uint64_t m2_afile_tell(const m2_afile *f);
/* Flush, fsync, rename; frees f either way. */
int m2_afile_commit(m2_afile *f, m2_err *err);
void m2_afile_abort(m2_afile *f);

#endif
