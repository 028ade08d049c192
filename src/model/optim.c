#include "model/optim.h"
#include <math.h>

int m2_adamw_step(m2_params *p, const m2_adamw *o, float lr, m2_err *err) {
    if (!p->trainable || !p->g) return m2_errorf(err, M2_EINVAL, "adamw: parameter group is not trainable");
    if (m2_params_alloc_moments(p, err)) return -1;
    p->step++;
    float b1 = o->beta1, b2 = o->beta2;
    float c1 = 1.0f - powf(b1, (float)p->step), c2 = 1.0f - powf(b2, (float)p->step);
    float decay = 1.0f - lr * o->weight_decay;
    for (size_t i = 0; i < p->n; i++) {
        float g = p->g[i];
        float m = p->m[i] = b1 * p->m[i] + (1.0f - b1) * g;
        float v = p->v[i] = b2 * p->v[i] + (1.0f - b2) * g * g;
        float w = p->w[i] * decay;
        p->w[i] = w - lr * (m / c1) / (sqrtf(v / c2) + o->eps);
    }
    return 0;
}

float m2_grad_norm(m2_params *const *groups, int n) {
    double s = 0;
    for (int k = 0; k < n; k++) {
        const m2_params *p = groups[k];
        if (!p || !p->g) continue;
        for (size_t i = 0; i < p->n; i++) s += (double)p->g[i] * p->g[i];
    }
    return (float)sqrt(s);
}

float m2_clip_grads(m2_params *const *groups, int n, float max_norm) {
    float norm = m2_grad_norm(groups, n);
    if (max_norm > 0 && norm > max_norm) {
        float s = max_norm / (norm + 1e-6f);
        for (int k = 0; k < n; k++)
            if (groups[k] && groups[k]->g) m2_params_scale_grad(groups[k], s);
    }
    return norm;
}

float m2_lr_at(const m2_lr_schedule *s, long step) {
    if (s->warmup > 0 && step < s->warmup) return s->lr * (float)(step + 1) / (float)s->warmup;
    if (s->decay == M2_DECAY_CONSTANT || s->total <= s->warmup) return s->lr;
    double t = (double)(step - s->warmup) / (double)(s->total - s->warmup);
    if (t > 1) t = 1;
    if (t < 0) t = 0;
    double f = s->decay == M2_DECAY_COSINE ? 0.5 * (1.0 + cos(M_PI * t)) : 1.0 - t;
    return (float)(s->min_lr + (s->lr - s->min_lr) * f);
}
