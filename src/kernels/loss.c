#include "kernels/loss.h"
#include <math.h>

static float row_lse(const float *x, int V) {
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    float s = 0;
    for (int i = 0; i < V; i++) s += expf(x[i] - mx);
    return mx + logf(s);
}

void m2_logprob_forward(float *logp, float *lse, const float *logits, const int32_t *targets,
                        int N, int V) {
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        if (targets[n] < 0) { logp[n] = 0; if (lse) lse[n] = 0; continue; }
        float l = row_lse(x, V);
        if (lse) lse[n] = l;
        logp[n] = x[targets[n]] - l;
    }
}

void m2_logprob_backward(float *dlogits, const float *dlogp, const float *logits, const float *lse,
                         const int32_t *targets, int N, int V) {
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0 || dlogp[n] == 0.0f) continue;
        const float *x = logits + (size_t)n * V;
        float *d = dlogits + (size_t)n * V, g = dlogp[n];
        float l = lse ? lse[n] : row_lse(x, V);
        for (int i = 0; i < V; i++) d[i] -= g * expf(x[i] - l);
        d[targets[n]] += g;
    }
}

void m2_softmax_forward(float *probs, const float *logits, int N, int V, float temperature) {
    float it = 1.0f / temperature;
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        float mx = -INFINITY;
        for (int i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
        float s = 0;
        for (int i = 0; i < V; i++) { p[i] = expf((x[i] - mx) * it); s += p[i]; }
        float is = 1.0f / s;
        for (int i = 0; i < V; i++) p[i] *= is;
    }
}

void m2_kl_forward(float *kl, const float *lp, const float *lq, int N, int V) {
    for (int n = 0; n < N; n++) {
        const float *a = lp + (size_t)n * V, *b = lq + (size_t)n * V;
        float la = row_lse(a, V), lb = row_lse(b, V);
        double s = 0;
        for (int i = 0; i < V; i++) {
            float lpa = a[i] - la, lqb = b[i] - lb;
            s += expf(lpa) * (lpa - lqb);
        }
        kl[n] = (float)s;
    }
}

void m2_kl_backward(float *dlp, float *dlq, const float *dkl, const float *lp, const float *lq,
                    int N, int V) {
    for (int n = 0; n < N; n++) {
        float g = dkl[n];
        if (g == 0.0f) continue;
        const float *a = lp + (size_t)n * V, *b = lq + (size_t)n * V;
        float la = row_lse(a, V), lb = row_lse(b, V);
        double kl = 0;
        for (int i = 0; i < V; i++) {
            float lpa = a[i] - la, lqb = b[i] - lb;
            kl += expf(lpa) * (lpa - lqb);
        }
        for (int i = 0; i < V; i++) {
            float lpa = a[i] - la, lqb = b[i] - lb, p = expf(lpa), q = expf(lqb);
            if (dlp) dlp[(size_t)n * V + i] += g * p * (lpa - lqb - (float)kl);
            if (dlq) dlq[(size_t)n * V + i] += g * (q - p);
        }
    }
}

float m2_span_logprob(const float *logp, int start, int len, int mean) {
    if (len <= 0) return 0.0f;
    double s = 0;
    for (int i = 0; i < len; i++) s += logp[start + i];
    return (float)(mean ? s / len : s);
}

void m2_span_logprob_backward(float *dlogp, float dspan, int start, int len, int mean) {
    if (len <= 0) return;
    float g = mean ? dspan / len : dspan;
    for (int i = 0; i < len; i++) dlogp[start + i] += g;
}
