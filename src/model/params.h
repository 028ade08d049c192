/* A trainable parameter group: values, gradients and AdamW moments, each ONE contiguous float
 * array, so optimiser steps, gradient clipping, MPI all-reduce and checkpointing are single loops
 * over n floats. The base (when trained), each LoRA adapter and each head owns one group.
 * Moments are allocated only when an optimiser first steps the group. */
#ifndef M2_MODEL_PARAMS_H
#define M2_MODEL_PARAMS_H
#include <stddef.h>
#include "core/err.h"

typedef struct m2_params {
    size_t n;
    float *w;       /* [n] values */
    float *g;       /* [n] gradients (accumulated with +=), NULL when not trainable */
    float *m, *v;   /* [n] AdamW moments, NULL until the first step */
    long step;      /* AdamW steps taken (for bias correction); saved in checkpoints */
    int trainable;  /* 0: frozen (grads are never computed into it) */
} m2_params;

/* Allocates w (zeroed) and, when trainable, g. */
int m2_params_init(m2_params *p, size_t n, int trainable, m2_err *err);
void m2_params_free(m2_params *p);
int m2_params_alloc_moments(m2_params *p, m2_err *err);
void m2_params_zero_grad(m2_params *p);
void m2_params_scale_grad(m2_params *p, float s);   /* e.g. 1/accum_steps */

#endif
