/* GGUF v3 (ggml docs/gguf.md): reader over an mmap'd file (or a memory buffer) and writer.
 * Little-endian. Header: magic "GGUF", u32 version, u64 tensor_count, u64 kv_count; KVs (string
 * key, u32 type, value); tensor infos (name, u32 n_dims, u64 ne[n_dims] with ne[0] the fastest
 * dimension, u32 ggml type, u64 offset); the data section at the next multiple of
 * general.alignment (default 32). A PyTorch Linear.weight (out, in) is ne = [in, out]. */
#ifndef M2_IO_GGUF_H
#define M2_IO_GGUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "io/ggml_type.h"

typedef enum m2_gguf_type {
    M2_GGUF_U8 = 0, M2_GGUF_I8 = 1, M2_GGUF_U16 = 2, M2_GGUF_I16 = 3, M2_GGUF_U32 = 4,
    M2_GGUF_I32 = 5, M2_GGUF_F32 = 6, M2_GGUF_BOOL = 7, M2_GGUF_STRING = 8, M2_GGUF_ARRAY = 9,
    M2_GGUF_U64 = 10, M2_GGUF_I64 = 11, M2_GGUF_F64 = 12,
} m2_gguf_type;

#define M2_GGUF_DEFAULT_ALIGNMENT 32
#define M2_GGUF_MAX_DIMS 4
#define M2_GGUF_MAX_NAME 64       /* tensor names: at most 64 bytes (ggml's limit) */

/* One metadata entry. Scalars in the union; strings NUL-terminated (len excludes the NUL; a
 * string may hold NUL bytes, so use len). Arrays: arr_type + n; numeric arrays as a host-aligned
 * copy in `arr` (e.g. (const float *)kv->arr for F32, (const int32_t *) for I32, bool as uint8);
 * string arrays in strs[n] / str_lens[n]; nested arrays are validated and skipped (n only). */
typedef struct m2_gguf_kv {
    char *key;
    m2_gguf_type type;
    union { uint64_t u64; int64_t i64; double f64; float f32; bool b; } v;  /* integers widen */
    char *str;
    uint64_t str_len;
    m2_gguf_type arr_type;
    uint64_t n;
    void *arr;
    char **strs;
    uint64_t *str_lens;
} m2_gguf_kv;

typedef struct m2_gguf_tensor {
    char *name;
    int n_dims;
    int64_t ne[M2_GGUF_MAX_DIMS];   /* ne[0] fastest; unused dims are 1 */
    uint32_t type;                  /* ggml type id (m2_ggml_type for the supported ones) */
    uint64_t offset;                /* relative to the data section */
    uint64_t n_elems, n_bytes;
    const void *data;               /* inside the mapping; aligned to the file's alignment */
} m2_gguf_tensor;

typedef struct m2_gguf {
    char *path;                     /* the file (or the name given for a memory buffer) */
    uint32_t version;
    uint64_t n_kv, n_tensors;
    m2_gguf_kv *kv;
    m2_gguf_tensor *tensors;        /* in file order */
    uint32_t alignment;
    uint64_t data_offset;           /* file offset of the data section */
    const uint8_t *base;            /* the whole file */
    size_t size;
    /* private */
    void *map;
    size_t map_len;
    uint32_t *kv_sorted, *tensor_sorted;   /* indices sorted by name, for lookups */
    struct m2_gguf **parts;         /* split files: parts 2..N, whose mappings tensors point into */
    uint32_t n_parts;
} m2_gguf;

/* Opens and validates a GGUF file (mmap'd read-only; tensors point into the mapping). Errors name
 * the file, the field or tensor, and the reason. */
m2_gguf *m2_gguf_open(const char *path, m2_err *err);
/* Split GGUF files (llama-gguf-split): PREFIX-00001-of-0000N.gguf holds every metadata key and
 * split.count (u16, N), split.no (u16, 0-based part index) and split.tensors.count (i32, all
 * parts' tensors); each part holds its own tensors with offsets into its own data section. */
#define M2_GGUF_SPLIT_COUNT "split.count"
#define M2_GGUF_SPLIT_NO "split.no"
#define M2_GGUF_SPLIT_TENSORS "split.tensors.count"

/* Opens a GGUF file, or all parts of a split file given its first part (the other names follow
 * from split.count, as llama.cpp's split_path: PREFIX-%05d-of-%05d.gguf): one m2_gguf with the
 * first part's metadata and every part's tensors. The mapping is copy-on-write (tensor memory
 * may be written, e.g. by a LoRA merge, without touching the file). Errors name the part. */
m2_gguf *m2_gguf_open_split(const char *path, m2_err *err);
/* Writes g's metadata and tensors as split parts PREFIX-0000i-of-0000N.gguf of at most
 * max_tensors tensors each, following llama-gguf-split: part 1 has every key of g, every part
 * has the three split.* keys. *n_parts_out (may be NULL) = N. */
int m2_gguf_write_split(const m2_gguf *g, const char *prefix, int max_tensors, int *n_parts_out, m2_err *err);

/* Same over a caller-owned buffer that must outlive the result; `name` is used in messages. */
m2_gguf *m2_gguf_open_memory(const void *buf, size_t len, const char *name, m2_err *err);
void m2_gguf_close(m2_gguf *g);

const m2_gguf_kv *m2_gguf_find(const m2_gguf *g, const char *key);
const m2_gguf_tensor *m2_gguf_find_tensor(const m2_gguf *g, const char *name);

/* Typed getters. Missing key: M2_ENOTFOUND (the default getters return `def` instead).
 * Integers accept any integer type whose value fits; floats accept F32 or F64. */
int m2_gguf_get_u32(const m2_gguf *g, const char *key, uint32_t *out, m2_err *err);
int m2_gguf_get_u64(const m2_gguf *g, const char *key, uint64_t *out, m2_err *err);
int m2_gguf_get_i64(const m2_gguf *g, const char *key, int64_t *out, m2_err *err);
int m2_gguf_get_f32(const m2_gguf *g, const char *key, float *out, m2_err *err);
int m2_gguf_get_bool(const m2_gguf *g, const char *key, bool *out, m2_err *err);
const char *m2_gguf_get_str(const m2_gguf *g, const char *key, m2_err *err);
uint32_t m2_gguf_u32_or(const m2_gguf *g, const char *key, uint32_t def);
float m2_gguf_f32_or(const m2_gguf *g, const char *key, float def);
bool m2_gguf_bool_or(const m2_gguf *g, const char *key, bool def);
/* An array of elem type (M2_GGUF_STRING: use kv->strs). NULL + error when missing or mistyped. */
const m2_gguf_kv *m2_gguf_get_arr(const m2_gguf *g, const char *key, m2_gguf_type elem, m2_err *err);

/* Tensor values as f32 (dst holds t->n_elems floats). */
int m2_gguf_tensor_to_f32(const m2_gguf *g, const m2_gguf_tensor *t, float *dst, m2_err *err);
const char *m2_gguf_type_name(m2_gguf_type t);

/* ---- writer ---------------------------------------------------------------------------------
 * Collects metadata and tensors, then writes the file to path.tmp.PID, fsyncs and renames.
 * Setting a key twice replaces the value. Tensor data passed to add_tensor is referenced, not
 * copied, and must stay valid until write; add_tensor_f32 converts and keeps its own copy. */
typedef struct m2_gguf_writer m2_gguf_writer;

m2_gguf_writer *m2_gguf_writer_new(void);
void m2_gguf_writer_free(m2_gguf_writer *w);
int m2_gguf_set_u32(m2_gguf_writer *w, const char *key, uint32_t v);
int m2_gguf_set_i32(m2_gguf_writer *w, const char *key, int32_t v);
int m2_gguf_set_u64(m2_gguf_writer *w, const char *key, uint64_t v);
int m2_gguf_set_f32(m2_gguf_writer *w, const char *key, float v);
int m2_gguf_set_bool(m2_gguf_writer *w, const char *key, bool v);
int m2_gguf_set_str(m2_gguf_writer *w, const char *key, const char *v);
/* Numeric array (elem a scalar type, data in host layout, n elements). */
int m2_gguf_set_arr(m2_gguf_writer *w, const char *key, m2_gguf_type elem, const void *data, uint64_t n);
int m2_gguf_set_arr_str(m2_gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copies a KV read from another file (e.g. the tokenizer of a base model). Nested arrays are
 * not copied (returns -1). */
int m2_gguf_set_kv(m2_gguf_writer *w, const m2_gguf_kv *kv);
/* ne[0] fastest, like the file. nbytes must match type and shape. */
int m2_gguf_add_tensor(m2_gguf_writer *w, const char *name, uint32_t type, int n_dims,
                       const int64_t *ne, const void *data, uint64_t nbytes, m2_err *err);
int m2_gguf_add_tensor_f32(m2_gguf_writer *w, const char *name, uint32_t type, int n_dims,
                           const int64_t *ne, const float *data, m2_err *err);
int m2_gguf_writer_write(m2_gguf_writer *w, const char *path, m2_err *err);

#endif
