#include "algo/tokens.h"
#include "kernels/loss.h"
#include <math.h>
#include <string.h>

int m2_reduce_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "sum")) return M2_REDUCE_SUM;
    if (!strcmp(s, "mean")) return M2_REDUCE_MEAN;
    return -1;
}

const char *m2_reduce_name(m2_reduce r) { return r == M2_REDUCE_MEAN ? "mean" : "sum"; }

/* logsumexp in double: max-shifted so no term overflows. */
static double row_lse(const float *z, int V) {
    float m = -INFINITY;
    for (int v = 0; v < V; v++) if (z[v] > m) m = z[v];
    if (!isfinite(m)) return m;
    double s = 0;
    for (int v = 0; v < V; v++) s += exp((double)z[v] - m);
    return m + log(s);
}

double m2_log_softmax_row(const float *z, int V, float *out) {
    double lse = row_lse(z, V);
    if (out) for (int v = 0; v < V; v++) out[v] = (float)((double)z[v] - lse);
    return lse;
}

/* The token-level kernels are the engine's (kernels/loss.h): one implementation of log-softmax
 * gather and exact KL in the project. These wrappers add the row mask and the one-row form. */

void m2_logp_gather_forward(const float *z, const int32_t *target, const float *mask, int n, int V,
                            float *logp) {
    for (int i = 0; i < n; i++) {
        int32_t t = target[i];
        if ((mask && mask[i] == 0.f) || t < 0 || t >= V) { logp[i] = 0.f; continue; }
        m2_logprob_forward(&logp[i], NULL, z + (size_t)i * V, &t, 1, V, NULL);
    }
}

void m2_logp_gather_backward(const float *z, const int32_t *target, const float *mask, int n, int V,
                             const float *dlogp, float *dz) {
    for (int i = 0; i < n; i++) {
        int32_t t = target[i];
        if ((mask && mask[i] == 0.f) || t < 0 || t >= V) continue;
        m2_logprob_backward(dz + (size_t)i * V, &dlogp[i], z + (size_t)i * V, NULL, &t, 1, V, NULL);
    }
}

double m2_kl_row_forward(const float *z_p, const float *z_q, int V) {
    float kl;
    m2_kl_forward(&kl, z_p, z_q, 1, V, NULL);
    return kl > 0 ? kl : 0;   /* exact KL is >= 0; clamp rounding noise */
}

void m2_kl_row_backward(const float *z_p, const float *z_q, int V, float dkl, float *dz_p) {
    m2_kl_backward(dz_p, NULL, &dkl, z_p, z_q, 1, V, NULL);
}

void m2_action_logp_forward(const float *tok_logp, const int32_t *tok_action, int n_tok, int n_act,
                            m2_reduce red, float *act_logp, int32_t *n_act_tok) {
    for (int a = 0; a < n_act; a++) { act_logp[a] = 0.f; n_act_tok[a] = 0; }
    for (int i = 0; i < n_tok; i++) {
        int a = tok_action[i];
        if (a < 0 || a >= n_act) continue;
        act_logp[a] += tok_logp[i];
        n_act_tok[a]++;
    }
    if (red == M2_REDUCE_MEAN)
        for (int a = 0; a < n_act; a++) if (n_act_tok[a] > 0) act_logp[a] /= (float)n_act_tok[a];
}

void m2_action_logp_backward(const float *dact_logp, const int32_t *tok_action, int n_tok,
                             const int32_t *n_act_tok, m2_reduce red, float *dtok_logp) {
    for (int i = 0; i < n_tok; i++) {
        int a = tok_action[i];
        if (a < 0) continue;
        float g = dact_logp[a];
        if (red == M2_REDUCE_MEAN) g = n_act_tok[a] > 0 ? g / (float)n_act_tok[a] : 0.f;
        dtok_logp[i] += g;
    }
}
