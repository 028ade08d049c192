/* TensorBoard event files written without TensorFlow: TFRecord framing
 *   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
 * around hand-encoded `Event` protobufs (wall_time=1 double, step=2 int64, file_version=3 string,
 * summary=5 Summary{ repeated Value value=1 { tag=1 string, simple_value=2 float } }).
 * The first record carries file_version "brain.Event:2", as TensorBoard expects. A reader that
 * checks every CRC is included for tests and for filtering events on resume. */
#ifndef M2_TBLOG_H
#define M2_TBLOG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/err.h"

/* CRC-32C (Castagnoli), and the TFRecord mask ((crc >> 15 | crc << 17) + 0xa282ead8). */
uint32_t m2_crc32c(const void *data, size_t n);
uint32_t m2_crc32c_extend(uint32_t crc, const void *data, size_t n);
uint32_t m2_crc32c_mask(uint32_t crc);

typedef struct m2_tb_writer {
    FILE *f;
    char path[1024];
} m2_tb_writer;

/* Creates dir/events.out.tfevents.<unix time>.<host> (a numeric suffix if that exists) and writes
 * the file_version record. */
int m2_tb_open(m2_tb_writer *w, const char *dir, m2_err *err);
/* One Event at `step` holding n scalar values; wall_time <= 0 means now. Flushed. */
int m2_tb_scalars(m2_tb_writer *w, int64_t step, double wall_time, const char *const *tags, const float *values,
                  int n, m2_err *err);
void m2_tb_close(m2_tb_writer *w);

/* Reads an event file, checking framing and both CRCs of every record. Calls fn once per scalar
 * value (fn may be NULL); *n_events (optional) receives the record count, file_version included.
 * fn returns non-zero to stop early. */
typedef int (*m2_tb_scalar_fn)(void *ctx, double wall_time, int64_t step, const char *tag, float value);
int m2_tb_read(const char *path, m2_tb_scalar_fn fn, void *ctx, int *n_events, char *file_version, size_t fv_cap,
               m2_err *err);

/* True if `name` (a base name) looks like an event file. */
int m2_tb_is_event_file(const char *name);

#endif
