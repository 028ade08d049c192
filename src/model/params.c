#include "model/params.h"
#include <stdlib.h>
#include <string.h>
#include "core/arena.h"

int m2_params_init(m2_params *p, size_t n, int trainable, m2_err *err) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->trainable = trainable;
    size_t bytes = (n ? n : 1) * sizeof(float);
    p->w = m2_malloc_aligned(bytes);
    if (p->w) memset(p->w, 0, bytes);
    if (trainable) {
        p->g = m2_malloc_aligned(bytes);
        if (p->g) memset(p->g, 0, bytes);
    }
    if (!p->w || (trainable && !p->g)) {
        m2_params_free(p);
        return m2_errorf(err, M2_ENOMEM, "out of memory for %zu parameters", n);
    }
    return 0;
}

void m2_params_free(m2_params *p) {
    free(p->w); free(p->g); free(p->m); free(p->v);
    p->w = p->g = p->m = p->v = NULL;
}

int m2_params_alloc_moments(m2_params *p, m2_err *err) {
    if (p->m) return 0;
    size_t bytes = (p->n ? p->n : 1) * sizeof(float);
    p->m = m2_malloc_aligned(bytes);
    p->v = m2_malloc_aligned(bytes);
    if (!p->m || !p->v) {
        free(p->m); free(p->v); p->m = p->v = NULL;
        return m2_errorf(err, M2_ENOMEM, "out of memory for AdamW moments of %zu parameters", p->n);
    }
    memset(p->m, 0, bytes);
    memset(p->v, 0, bytes);
    return 0;
}

void m2_params_zero_grad(m2_params *p) {
    if (p->g) memset(p->g, 0, p->n * sizeof(float));
}

void m2_params_scale_grad(m2_params *p, float s) {
    if (p->g) for (size_t i = 0; i < p->n; i++) p->g[i] *= s;
}
