/* Scalar critic heads: MLP H -> F -> 1 with ReLU on final (normed) hidden states at chosen
 * positions (H the model width, F the head's hidden width, H by default), each with a
 * Polyak-averaged target copy. Parameters in one m2_params group per head: W1 [F,H], b1 [F],
 * w2 [F], b2 [1] (in that order). */
#ifndef M2_MODEL_HEADS_H
#define M2_MODEL_HEADS_H
#include <stdint.h>
#include "model/weights.h"

struct m2_head {
    char name[64];
    int H;                /* input width: the model's hidden size */
    int F;                /* hidden width of the MLP */
    m2_params params;     /* online head */
    float *target;        /* [params.n] Polyak target copy (no grads) */
    int grad_to_body;     /* 1: backward adds d hidden into the ctx so adapter/base get gradients */
    /* forward cache for backward: */
    float *act_in;        /* [cap, H] gathered hidden */
    float *act_h;         /* [cap, H] post-ReLU */
    int cap, k_cached;
    int index;
};

/* Adds a head of hidden width F (<= 0: the model's width H) (init: W1 ~ U(+-1/sqrt(H)),
 * w2 ~ U(+-0.1/sqrt(F)), biases 0; target = copy). m2_head_add: F = H. */
m2_head *m2_head_add_sized(m2_model *m, const char *name, int F, uint64_t seed, m2_err *err);
m2_head *m2_head_add(m2_model *m, const char *name, uint64_t seed, m2_err *err);
m2_head *m2_head_find(m2_model *m, const char *name);

/* out[K] = head(hidden[pos[k], :]) with hidden [N,H] (e.g. m2_ctx_hidden). use_target = 1 uses the
 * Polyak copy and leaves the cache alone (so online forward, target forward, online backward is
 * fine); otherwise the activations are cached for m2_head_backward. */
int m2_head_forward(m2_head *h, const float *hidden, const int *pos, int K, int use_target,
                    float *out, m2_err *err);
/* From dout[K]: head grads += ...; when h->grad_to_body and dhidden != NULL, dhidden[pos[k],:] +=
 * d/d hidden (pass m2_ctx_dhidden). Uses the cache of the last non-target forward. */
int m2_head_backward(m2_head *h, const float *dout, const int *pos, int K, float *dhidden,
                     m2_err *err);
/* target = (1 - tau) target + tau online;  tau = 1 copies. */
void m2_head_polyak(m2_head *h, float tau);

#endif
