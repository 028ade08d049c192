/* AdamW over parameter groups, global-norm gradient clipping, and learning-rate schedules. */
#ifndef M2_MODEL_OPTIM_H
#define M2_MODEL_OPTIM_H
#include "model/params.h"

typedef struct m2_adamw {
    float beta1, beta2, eps, weight_decay;   /* typical 0.9, 0.999, 1e-8, 0.0 */
} m2_adamw;

/* One AdamW step (PyTorch semantics: decoupled decay w -= lr*wd*w, bias-corrected moments).
 * Increments p->step; allocates moments on first use. Returns -1 when p is not trainable. */
int m2_adamw_step(m2_params *p, const m2_adamw *opt, float lr, m2_err *err);

/* sqrt(sum of squared grads) over the groups (double accumulation, fixed order). */
float m2_grad_norm(m2_params *const *groups, int n);
/* If the norm exceeds max_norm (> 0), scales all grads by max_norm / (norm + 1e-6). Returns the
 * pre-clip norm. */
float m2_clip_grads(m2_params *const *groups, int n, float max_norm);

enum { M2_DECAY_CONSTANT = 0, M2_DECAY_COSINE = 1, M2_DECAY_LINEAR = 2 };
typedef struct m2_lr_schedule {
    float lr;         /* peak */
    float min_lr;     /* floor at the end of decay */
    long warmup;      /* linear warm-up steps from lr/warmup to lr */
    long total;       /* total steps (decay over total - warmup) */
    int decay;        /* M2_DECAY_* */
} m2_lr_schedule;
/* Learning rate for 0-based step. */
float m2_lr_at(const m2_lr_schedule *s, long step);

#endif
