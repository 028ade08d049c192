#include "core/arena.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int m2_arena_init(m2_arena *a, size_t cap, m2_err *err) {
    a->used = 0;
    a->cap = (cap + 63) & ~(size_t)63;
    a->base = a->cap ? m2_malloc_aligned(a->cap) : NULL;
    if (a->cap && !a->base) return m2_errorf(err, M2_ENOMEM, "out of memory allocating %zu bytes", cap);
    if (a->base) memset(a->base, 0, a->cap);
    return 0;
}

void *m2_arena_alloc(m2_arena *a, size_t bytes) {
    size_t need = (bytes + 63) & ~(size_t)63;
    if (need < bytes || a->used + need > a->cap) return NULL;
    void *p = a->base + a->used;
    a->used += need;
    return p;
}

float *m2_arena_floats(m2_arena *a, size_t n) {
    if (n > SIZE_MAX / sizeof(float)) return NULL;
    return m2_arena_alloc(a, n * sizeof(float));
}

void m2_arena_reset(m2_arena *a) {
    if (a->base) memset(a->base, 0, a->used);
    a->used = 0;
}

void m2_arena_free(m2_arena *a) {
    free(a->base);
    a->base = NULL;
    a->cap = a->used = 0;
}

void *m2_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *m2_malloc_aligned(size_t bytes) {
    void *p = NULL;
    size_t b = (bytes + 63) & ~(size_t)63;
    if (b < bytes) return NULL;
    if (posix_memalign(&p, 64, b ? b : 64) != 0) return NULL;
    return p;
}
