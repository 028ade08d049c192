#include "algo/tokens.h"
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

void m2_logp_gather_forward(const float *z, const int32_t *target, const float *mask, int n, int V,
                            float *logp) {
    for (int i = 0; i < n; i++) {
        if ((mask && mask[i] == 0.f) || target[i] < 0 || target[i] >= V) { logp[i] = 0.f; continue; }
        const float *row = z + (size_t)i * V;
        logp[i] = (float)((double)row[target[i]] - row_lse(row, V));
    }
}

void m2_logp_gather_backward(const float *z, const int32_t *target, const float *mask, int n, int V,
                             const float *dlogp, float *dz) {
    for (int i = 0; i < n; i++) {
        if ((mask && mask[i] == 0.f) || target[i] < 0 || target[i] >= V || dlogp[i] == 0.f) continue;
        const float *row = z + (size_t)i * V;
        float *drow = dz + (size_t)i * V;
        double lse = row_lse(row, V);
        for (int v = 0; v < V; v++) drow[v] -= dlogp[i] * (float)exp((double)row[v] - lse);
        drow[target[i]] += dlogp[i];
    }
}

double m2_kl_row_forward(const float *z_p, const float *z_q, int V) {
    double lp = row_lse(z_p, V), lq = row_lse(z_q, V), kl = 0;
    for (int v = 0; v < V; v++) {
        double a = (double)z_p[v] - lp, b = (double)z_q[v] - lq;
        double p = exp(a);
        if (p > 0) kl += p * (a - b);
    }
    return kl > 0 ? kl : 0;   /* exact KL is >= 0; clamp rounding noise */
}

void m2_kl_row_backward(const float *z_p, const float *z_q, int V, float dkl, float *dz_p) {
    if (dkl == 0.f) return;
    double lp = row_lse(z_p, V), lq = row_lse(z_q, V), kl = 0;
    for (int v = 0; v < V; v++) {
        double a = (double)z_p[v] - lp, b = (double)z_q[v] - lq;
        double p = exp(a);
        if (p > 0) kl += p * (a - b);
    }
    for (int v = 0; v < V; v++) {
        double a = (double)z_p[v] - lp, b = (double)z_q[v] - lq;
        double p = exp(a);
        dz_p[v] += dkl * (float)(p * (a - b - kl));
    }
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
