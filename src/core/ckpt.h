/* Checkpoints: a folder of named arrays (one safetensors file) plus a JSON manifest with the step,
 * the stage, RNG states and free-form JSON state (data/env cursors, replay-buffer metadata, ...).
 *
 *   ckpt/step_N/tensors.safetensors   every array (F32, F64, I32, I64, U8), in add order
 *   ckpt/step_N/manifest.json         {"format":"multi2-checkpoint","version":1,"step":N,"stage":..,
 *                                      "arrays":[{name,dtype,shape,crc32c}],"rng":{name:[4 hex words]},
 *                                      "files":[{path,bytes,crc32c}],"state":{...}}
 *   ckpt/step_N/<extra files>         written by writer hooks (e.g. a PEFT adapter folder)
 *   ckpt/latest                       "step_N\n", replaced atomically
 *
 * Save is crash-safe: everything goes to ckpt/step_N.tmp.PID/, every file and folder is fsync'd,
 * the folder is renamed to step_N, the parent fsync'd, and only then `latest` is replaced (write,
 * fsync, rename). A crash at any point leaves the previous checkpoint and `latest` intact; stale
 * temp folders are removed by the next save. Loading checks names, dtypes, shapes, sizes and a
 * CRC-32C of every array and extra file, with errors naming the folder, the array and the reason. */
#ifndef M2_CKPT_H
#define M2_CKPT_H
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "core/err.h"
#include "core/rng.h"

typedef enum m2_ckpt_dtype { M2_CKPT_F32, M2_CKPT_F64, M2_CKPT_I32, M2_CKPT_I64, M2_CKPT_U8 } m2_ckpt_dtype;
#define M2_CKPT_MAX_DIMS 8

typedef struct m2_ckpt_array {
    char *name;
    m2_ckpt_dtype dtype;
    int ndim;
    int64_t shape[M2_CKPT_MAX_DIMS];
    size_t nbytes;
    void *data;       /* borrowed when added with m2_ckpt_add, owned when copied or loaded */
    int owned;
    uint32_t crc;     /* CRC-32C of the bytes (set on load) */
} m2_ckpt_array;

/* Writes extra files into the checkpoint's temporary folder `dir` before it is sealed. */
typedef int (*m2_ckpt_writer_fn)(void *ctx, const char *dir, m2_err *err);

typedef struct m2_ckpt {
    int64_t step;
    char stage[64];
    m2_ckpt_array *arrays;
    int n_arrays, cap_arrays;
    cJSON *rng;              /* {name: ["hex","hex","hex","hex"]} */
    cJSON *state;            /* free-form object; owned */
    m2_ckpt_writer_fn writers[8];
    void *writer_ctx[8];
    int n_writers;
    char dir[4096];          /* where it was loaded from / saved to */
} m2_ckpt;

m2_ckpt *m2_ckpt_new(int64_t step, const char *stage);
void m2_ckpt_free(m2_ckpt *c);

/* Adds an array by reference: `data` must stay valid until m2_ckpt_save returns. Names are unique. */
int m2_ckpt_add(m2_ckpt *c, const char *name, m2_ckpt_dtype dt, const void *data, int ndim, const int64_t *shape,
                m2_err *err);
/* Same, but copies the data now. */
int m2_ckpt_add_copy(m2_ckpt *c, const char *name, m2_ckpt_dtype dt, const void *data, int ndim,
                     const int64_t *shape, m2_err *err);
int m2_ckpt_set_rng(m2_ckpt *c, const char *name, const m2_rng *r, m2_err *err);
/* The free-form state object (never NULL for a valid checkpoint); add members with cJSON. */
cJSON *m2_ckpt_state(m2_ckpt *c);
int m2_ckpt_add_writer(m2_ckpt *c, m2_ckpt_writer_fn fn, void *ctx, m2_err *err);

/* Writes ckpt_root/step_<step>/ (replacing one of that step if present), updates ckpt_root/latest
 * and keeps the newest keep_last step folders (keep_last <= 0: keep all). The final folder path is
 * copied to out_dir when non-NULL. */
int m2_ckpt_save(m2_ckpt *c, const char *ckpt_root, int keep_last, char *out_dir, size_t out_cap, m2_err *err);

/* Loads a step folder, validating everything (see above). */
int m2_ckpt_load(const char *step_dir, m2_ckpt **out, m2_err *err);
/* The folder `latest` names, or M2_ENOTFOUND when there is no checkpoint yet. */
int m2_ckpt_latest_dir(const char *ckpt_root, char *out, size_t cap, m2_err *err);
int m2_ckpt_load_latest(const char *ckpt_root, m2_ckpt **out, m2_err *err);
/* Removes all but the newest keep_last step folders (never the one `latest` names) and stale
 * temporary folders of dead processes. */
int m2_ckpt_prune(const char *ckpt_root, int keep_last, m2_err *err);

const m2_ckpt_array *m2_ckpt_find(const m2_ckpt *c, const char *name);
/* Copies array `name` into dst after checking dtype and shape; errors name the checkpoint, the
 * array and what differs. */
int m2_ckpt_read(const m2_ckpt *c, const char *name, m2_ckpt_dtype dt, void *dst, int ndim, const int64_t *shape,
                 m2_err *err);
int m2_ckpt_get_rng(const m2_ckpt *c, const char *name, m2_rng *r, m2_err *err);

const char *m2_ckpt_dtype_name(m2_ckpt_dtype dt);   /* "F32", ... */
size_t m2_ckpt_dtype_size(m2_ckpt_dtype dt);

#endif
