/* A bump allocator over one contiguous, 64-byte aligned block. Parameters, gradients and optimiser
 * moments each live in one arena, so AdamW, clipping, all-reduce and checkpointing are single loops
 * over one flat float array. */
#ifndef M2_ARENA_H
#define M2_ARENA_H
#include <stddef.h>
#include "core/err.h"

typedef struct m2_arena {
    unsigned char *base;
    size_t cap, used;
} m2_arena;

int m2_arena_init(m2_arena *a, size_t cap_bytes, m2_err *err);   /* zero-filled */
void *m2_arena_alloc(m2_arena *a, size_t bytes);                 /* NULL when full; 64-byte aligned */
float *m2_arena_floats(m2_arena *a, size_t n);
void m2_arena_reset(m2_arena *a);
void m2_arena_free(m2_arena *a);

/* malloc/calloc that return NULL on overflow of n*size. */
void *m2_calloc(size_t n, size_t size);
void *m2_malloc_aligned(size_t bytes);   /* 64-byte aligned; free with free() */

#endif
