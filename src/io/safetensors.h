/* safetensors: u64 little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [begin, end]}, ...,
 *    "__metadata__": {"key": "value"}}
 * then the data buffer (offsets relative to its start; shapes row-major, outermost first).
 * Sharded models: model.safetensors.index.json {"metadata": {...}, "weight_map": {name: file}}.
 * The reader mmaps every file and validates all offsets, shapes and dtypes; the writer writes
 * atomically (temp name, fsync, rename) and can split into shards with an index. */
#ifndef M2_IO_SAFETENSORS_H
#define M2_IO_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "io/ggml_type.h"

#define M2_ST_MAX_DIMS 8
#define M2_ST_MAX_HEADER (100u << 20)     /* the format's limit on the JSON header */

typedef struct m2_st_tensor {
    char *name;
    const char *dtype;          /* "F32", "F16", "BF16", "I64", ... (static string) */
    uint32_t ggml_type;         /* M2_GGML_F32/F16/BF16 when convertible, else UINT32_MAX */
    int elem_size;
    int n_dims;                 /* 0 = scalar */
    int64_t shape[M2_ST_MAX_DIMS];
    uint64_t n_elems, n_bytes;
    const void *data;           /* inside the mapping of its file (may be unaligned) */
    int file;                   /* shard index */
} m2_st_tensor;

typedef struct m2_st_file {
    char *path;
    const uint8_t *base;
    size_t size;
    uint64_t data_start;        /* 8 + N */
    void *map;
} m2_st_file;

typedef struct m2_safetensors {
    char *path;                 /* what was opened (file, index or folder) */
    m2_st_file *files;
    int n_files;
    m2_st_tensor *tensors;      /* file order, shard after shard */
    size_t n_tensors;
    char **meta_keys, **meta_vals;   /* __metadata__ of the (first) file */
    size_t n_meta;
    uint32_t *sorted;           /* private: indices sorted by name */
} m2_safetensors;

/* Opens a .safetensors file, a model.safetensors.index.json, or a folder holding either
 * (model.safetensors, else model.safetensors.index.json, else adapter_model.safetensors). */
m2_safetensors *m2_st_open(const char *path, m2_err *err);
/* Parses one file held in memory (caller keeps buf alive); `name` names it in errors. */
m2_safetensors *m2_st_open_memory(const void *buf, size_t len, const char *name, m2_err *err);
void m2_st_close(m2_safetensors *st);

const m2_st_tensor *m2_st_find(const m2_safetensors *st, const char *name);
const char *m2_st_meta(const m2_safetensors *st, const char *key);   /* NULL when absent */
/* dst[t->n_elems] as f32 (F32, F16, BF16). */
int m2_st_tensor_to_f32(const m2_safetensors *st, const m2_st_tensor *t, float *dst, m2_err *err);

/* ---- writer ---- */
typedef struct m2_st_writer m2_st_writer;
m2_st_writer *m2_st_writer_new(void);
void m2_st_writer_free(m2_st_writer *w);
int m2_st_set_meta(m2_st_writer *w, const char *key, const char *value);
/* type: M2_GGML_F32, F16 or BF16; shape row-major. data referenced until write. */
int m2_st_add(m2_st_writer *w, const char *name, uint32_t type, int n_dims, const int64_t *shape,
              const void *data, uint64_t nbytes, m2_err *err);
/* Converts f32 data to type and keeps the copy. */
int m2_st_add_f32(m2_st_writer *w, const char *name, uint32_t type, int n_dims,
                  const int64_t *shape, const float *data, m2_err *err);
int m2_st_write(m2_st_writer *w, const char *path, m2_err *err);
/* Writes dir/model-0000i-of-0000n.safetensors shards of at most max_shard_bytes of data each
 * (a bigger tensor gets a shard of its own) plus dir/model.safetensors.index.json. One shard is
 * still written as shards + index. */
int m2_st_write_sharded(m2_st_writer *w, const char *dir, uint64_t max_shard_bytes, m2_err *err);

#endif
