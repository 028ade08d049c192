#include "kernels/loss.h"
#include <math.h>
#include <string.h>
#include "kernels/fastmath.h"

static float row_lse(const float *x, int V) {
    float mx = m2_vmax(x, V);
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= V; i += 16)
        for (int t = 0; t < 16; t++) acc[t] += m2_fast_expf(x[i + t] - mx);
    float s = m2_vsum(acc, 16);
    for (; i < V; i++) s += m2_fast_expf(x[i] - mx);
    return mx + logf(s);
}

typedef struct {
    float *logp, *lse, *dl, *dq, *kl;
    const float *logits, *lq, *dlogp, *dkl, *clse;
    const int32_t *targets;
    int V, set;
} loss_job;

static void lp_fwd(void *vp, long b, long e, int tid) {
    loss_job *j = vp;
    for (long n = b; n < e; n++) {
        const float *x = j->logits + (size_t)n * j->V;
        int t = j->targets[n];
        if (t < 0 && !j->lse) { j->logp[n] = 0; continue; }
        float l = row_lse(x, j->V);
        if (j->lse) j->lse[n] = l;
        j->logp[n] = t < 0 ? 0.0f : x[t] - l;
    }
}

void m2_logprob_forward(float *logp, float *lse, const float *logits, const int32_t *targets,
                        int N, int V, m2_pool *pool) {
    loss_job j = {.logp = logp, .lse = lse, .logits = logits, .targets = targets, .V = V};
    m2_pool_for(pool, N, lp_fwd, &j);
}

static void lp_bwd(void *vp, long b, long e, int tid) {
    loss_job *j = vp;
    int V = j->V;
    for (long n = b; n < e; n++) {
        int t = j->targets[n];
        float *d = j->dl + (size_t)n * V;
        if (t < 0 || j->dlogp[n] == 0.0f) {
            if (j->set) memset(d, 0, sizeof(float) * V);
            continue;
        }
        const float *x = j->logits + (size_t)n * V;
        float g = j->dlogp[n];
        float l = j->clse ? j->clse[n] : row_lse(x, V);
        if (j->set) for (int i = 0; i < V; i++) d[i] = -g * m2_fast_expf(x[i] - l);
        else for (int i = 0; i < V; i++) d[i] -= g * m2_fast_expf(x[i] - l);
        d[t] += g;
    }
}

void m2_logprob_backward(float *dlogits, const float *dlogp, const float *logits, const float *lse,
                         const int32_t *targets, int N, int V, m2_pool *pool) {
    loss_job j = {.dl = dlogits, .dlogp = dlogp, .logits = logits, .clse = lse, .targets = targets, .V = V};
    m2_pool_for(pool, N, lp_bwd, &j);
}

void m2_logprob_backward_set(float *dlogits, const float *dlogp, const float *logits, const float *lse,
                             const int32_t *targets, int N, int V, m2_pool *pool) {
    loss_job j = {.dl = dlogits, .dlogp = dlogp, .logits = logits, .clse = lse, .targets = targets, .V = V,
                  .set = 1};
    m2_pool_for(pool, N, lp_bwd, &j);
}

void m2_softmax_forward(float *probs, const float *logits, int N, int V, float temperature) {
    float it = 1.0f / temperature;
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        float mx = -INFINITY;
        for (int i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
        float s = 0;
        for (int i = 0; i < V; i++) { p[i] = m2_fast_expf((x[i] - mx) * it); s += p[i]; }
        float is = 1.0f / s;
        for (int i = 0; i < V; i++) p[i] *= is;
    }
}

static float row_kl(const float *a, const float *b, int V, float *la_out, float *lb_out) {
    float la = row_lse(a, V), lb = row_lse(b, V);
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= V; i += 16)
        for (int t = 0; t < 16; t++) {
            float lpa = a[i + t] - la, lqb = b[i + t] - lb;
            acc[t] += m2_fast_expf(lpa) * (lpa - lqb);
        }
    float s = m2_vsum(acc, 16);
    for (; i < V; i++) {
        float lpa = a[i] - la, lqb = b[i] - lb;
        s += m2_fast_expf(lpa) * (lpa - lqb);
    }
    *la_out = la; *lb_out = lb;
    return s;
}

static void kl_fwd(void *vp, long b, long e, int tid) {
    loss_job *j = vp;
    float la, lb;
    for (long n = b; n < e; n++)
        j->kl[n] = row_kl(j->logits + (size_t)n * j->V, j->lq + (size_t)n * j->V, j->V, &la, &lb);
}

void m2_kl_forward(float *kl, const float *lp, const float *lq, int N, int V, m2_pool *pool) {
    loss_job j = {.kl = kl, .logits = lp, .lq = lq, .V = V};
    m2_pool_for(pool, N, kl_fwd, &j);
}

static void kl_bwd(void *vp, long b, long e, int tid) {
    loss_job *j = vp;
    int V = j->V;
    for (long n = b; n < e; n++) {
        float g = j->dkl[n];
        if (g == 0.0f) continue;
        const float *a = j->logits + (size_t)n * V, *bq = j->lq + (size_t)n * V;
        float la, lb, kl = row_kl(a, bq, V, &la, &lb);
        float *dp = j->dl ? j->dl + (size_t)n * V : NULL, *dq = j->dq ? j->dq + (size_t)n * V : NULL;
        for (int i = 0; i < V; i++) {
            float lpa = a[i] - la, lqb = bq[i] - lb, p = m2_fast_expf(lpa);
            if (dp) dp[i] += g * p * (lpa - lqb - kl);
            if (dq) dq[i] += g * (m2_fast_expf(lqb) - p);
        }
    }
}

void m2_kl_backward(float *dlp, float *dlq, const float *dkl, const float *lp, const float *lq,
                    int N, int V, m2_pool *pool) {
    loss_job j = {.dl = dlp, .dq = dlq, .dkl = dkl, .logits = lp, .lq = lq, .V = V};
    m2_pool_for(pool, N, kl_bwd, &j);
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
