#include "algo/losses.h"
#include <math.h>

#define MASK(m, i) ((m) ? (double)(m)[i] : 1.0)

double m2_mask_count(const float *mask, int n) {
    if (!mask) return n > 0 ? n : 0;
    double c = 0;
    for (int i = 0; i < n; i++) c += mask[i];
    return c;
}

double m2_spread(double sum, double sum_sq, double n) {
    if (n <= 0) return 0;
    double mean = sum / n, var = sum_sq / n - mean * mean;
    return var > 0 ? sqrt(var) : 0;   /* rounding can make a constant set's variance slightly negative */
}

/* ---- NLL ---- */

float m2_nll_forward(const float *logp, const float *mask, int n) {
    double N = m2_mask_count(mask, n), s = 0;
    if (N <= 0) return 0.f;
    for (int i = 0; i < n; i++) s += MASK(mask, i) * logp[i];
    return (float)(-s / N);
}

void m2_nll_backward(const float *mask, int n, float *dlogp) {
    double N = m2_mask_count(mask, n);
    if (N <= 0) return;
    for (int i = 0; i < n; i++) dlogp[i] += (float)(-MASK(mask, i) / N);
}

/* ---- IQL ---- */

static double expectile_weight(double u, float tau) { return u < 0 ? 1.0 - tau : tau; }

float m2_iql_value_forward(const float *qbar, const float *v, const float *mask, int n, float tau) {
    double N = m2_mask_count(mask, n), s = 0;
    if (N <= 0) return 0.f;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        double u = (double)qbar[i] - v[i];
        s += MASK(mask, i) * expectile_weight(u, tau) * u * u;
    }
    return (float)(s / N);
}

void m2_iql_value_backward(const float *qbar, const float *v, const float *mask, int n, float tau,
                           float *dv) {
    double N = m2_mask_count(mask, n);
    if (N <= 0) return;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        double u = (double)qbar[i] - v[i];
        dv[i] += (float)(-2.0 * MASK(mask, i) * expectile_weight(u, tau) * u / N);
    }
}

void m2_td_targets(const float *r, const float *done, const float *v_next, int n, float gamma,
                   float *y) {
    for (int i = 0; i < n; i++) {
        double d = done ? done[i] : 0.0;
        double vn = (v_next && d < 1.0) ? v_next[i] : 0.0;
        y[i] = (float)(r[i] + gamma * (1.0 - d) * vn);
    }
}

float m2_iql_q_forward(const float *q, const float *y, const float *mask, int n) {
    double N = m2_mask_count(mask, n), s = 0;
    if (N <= 0) return 0.f;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        double e = (double)y[i] - q[i];
        s += MASK(mask, i) * e * e;
    }
    return (float)(s / N);
}

void m2_iql_q_backward(const float *q, const float *y, const float *mask, int n, float *dq) {
    double N = m2_mask_count(mask, n);
    if (N <= 0) return;
    for (int i = 0; i < n; i++)
        if (MASK(mask, i) != 0) dq[i] += (float)(-2.0 * MASK(mask, i) * ((double)y[i] - q[i]) / N);
}

void m2_advantages(const float *qbar, const float *v, int n, float *adv) {
    for (int i = 0; i < n; i++) adv[i] = qbar[i] - v[i];
}

/* ---- offline actor ---- */

/* min(exp(x), w_max) computed as exp(min(x, log w_max)) so it never overflows. */
static float clipped_exp(double x, float w_max, int *clipped) {
    double lm = log((double)w_max);
    *clipped = x >= lm;
    return (float)exp(x < lm ? x : lm);
}

float m2_anchor_forward(const float *adv_s, const float *logp_s, const float *mask_s, int m,
                        float lambda) {
    double M = m2_mask_count(mask_s, m), s = 0;
    if (M <= 0) return 0.f;
    for (int j = 0; j < m; j++)
        if (MASK(mask_s, j) != 0 && isfinite(adv_s[j])) s += MASK(mask_s, j) * adv_s[j] * logp_s[j];
    return (float)(-lambda * s / M);
}

void m2_anchor_backward(const float *adv_s, const float *mask_s, int m, float lambda,
                        float *dlogp_s) {
    double M = m2_mask_count(mask_s, m);
    if (M <= 0) return;
    for (int j = 0; j < m; j++)
        if (MASK(mask_s, j) != 0 && isfinite(adv_s[j]))
            dlogp_s[j] += (float)(-lambda * MASK(mask_s, j) * adv_s[j] / M);
}

/* Unnormalised dataset weight: min(exp(beta A), w_max), plus lambda relu(A) in the released variant;
 * *clipped set when min(., w_max) is active. */
static double actor_raw(const m2_actor_cfg *cfg, double a, int *clipped) {
    *clipped = 0;
    if (!isfinite(a)) return 0;
    double w = clipped_exp(cfg->beta * a, cfg->w_max, clipped);
    if (cfg->released) w += cfg->lambda * (a > 0 ? a : 0);
    return isfinite(w) ? w : 0;
}

/* Divisor of the weights: their mean over the valid entries (released variant, or normalize),
 * else 1. */
int m2_actor_normalizes(const m2_actor_cfg *cfg) { return cfg->released || cfg->normalize; }

double m2_actor_raw_sum(const m2_actor_cfg *cfg, const float *adv, const float *mask, int n) {
    double s = 0;
    int c;
    for (int i = 0; i < n; i++)
        if (MASK(mask, i) != 0) s += MASK(mask, i) * actor_raw(cfg, adv[i], &c);
    return s;
}

static double actor_norm(const m2_actor_cfg *cfg, const float *adv, const float *mask, int n) {
    if (!m2_actor_normalizes(cfg)) return 1.0;
    if (cfg->given_norm) return cfg->norm;
    double s = m2_actor_raw_sum(cfg, adv, mask, n), N = m2_mask_count(mask, n);
    return N > 0 ? s / N : 0;
}

static double actor_weight(const m2_actor_cfg *cfg, double a, double norm, int *clipped) {
    double w = actor_raw(cfg, a, clipped);
    w = norm > 0 ? w / norm : 0;
    return isfinite(w) ? w : 0;   /* the released code's nan -> 0 */
}

float m2_offline_actor_forward(const m2_actor_cfg *cfg,
                               const float *adv, const float *logp, const float *mask, int n,
                               const float *adv_s, const float *logp_s, const float *mask_s, int m,
                               m2_actor_stats *st) {
    double N = m2_mask_count(mask, n), sd = 0, wsum = 0, wmax = 0, asum = 0, w2 = 0, a2 = 0;
    double norm = actor_norm(cfg, adv, mask, n);
    int nclip = 0;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        int c;
        double w = actor_weight(cfg, adv[i], norm, &c);
        sd += MASK(mask, i) * w * logp[i];
        wsum += w;
        w2 += w * w;
        if (w > wmax) wmax = w;
        asum += adv[i];
        a2 += (double)adv[i] * adv[i];
        nclip += c;
    }
    float loss_data = N > 0 ? (float)(-sd / N) : 0.f;
    float loss_anchor = 0.f;
    double as = 0, M = 0;
    if (!cfg->released && m > 0) {
        loss_anchor = m2_anchor_forward(adv_s, logp_s, mask_s, m, cfg->lambda);
        M = m2_mask_count(mask_s, m);
        for (int j = 0; j < m; j++) if (MASK(mask_s, j) != 0) as += adv_s[j];
    }
    if (st) {
        st->loss_data = loss_data;
        st->loss_anchor = loss_anchor;
        st->w_mean = N > 0 ? (float)(wsum / N) : 0.f;
        st->w_max_seen = (float)wmax;
        st->clip_frac = N > 0 ? (float)(nclip / N) : 0.f;
        st->adv_mean = N > 0 ? (float)(asum / N) : 0.f;
        st->adv_sampled_mean = M > 0 ? (float)(as / M) : 0.f;
        st->adv_std = (float)m2_spread(asum, a2, N);
        st->w_std = (float)m2_spread(wsum, w2, N);
    }
    return loss_data + loss_anchor;
}

void m2_offline_actor_backward(const m2_actor_cfg *cfg,
                               const float *adv, const float *mask, int n,
                               const float *adv_s, const float *mask_s, int m,
                               float *dlogp, float *dlogp_s) {
    double N = m2_mask_count(mask, n);
    if (N > 0) {
        double norm = actor_norm(cfg, adv, mask, n);
        for (int i = 0; i < n; i++) {
            if (MASK(mask, i) == 0) continue;
            int c;
            dlogp[i] += (float)(-MASK(mask, i) * actor_weight(cfg, adv[i], norm, &c) / N);
        }
    }
    if (!cfg->released && m > 0 && dlogp_s)
        m2_anchor_backward(adv_s, mask_s, m, cfg->lambda, dlogp_s);
}

/* ---- online AWAC ---- */

double m2_awac_raw_weights(const float *adv, const float *mask, int n, float alpha, float w_max, float *w) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        int c;
        w[i] = isfinite(adv[i]) ? clipped_exp((double)adv[i] / alpha, w_max, &c) : 0.f;
        if (MASK(mask, i) != 0) s += MASK(mask, i) * w[i];
    }
    return s;
}

void m2_awac_normalize(float *w, int n, double mean) {
    for (int i = 0; i < n; i++) w[i] = mean > 0 ? (float)(w[i] / mean) : 0.f;
}

void m2_awac_weights(const float *adv, const float *mask, int n, float alpha, float w_max, float *w) {
    double N = m2_mask_count(mask, n);
    double s = m2_awac_raw_weights(adv, mask, n, alpha, w_max, w);
    m2_awac_normalize(w, n, N > 0 ? s / N : 0);
}

float m2_awac_forward(const float *w, const float *logp, const float *kl, const float *mask, int n,
                      float eta) {
    double N = m2_mask_count(mask, n), s = 0, k = 0;
    if (N <= 0) return 0.f;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        s += MASK(mask, i) * w[i] * logp[i];
        if (kl) k += MASK(mask, i) * kl[i];
    }
    return (float)((-s + eta * k) / N);
}

void m2_awac_backward(const float *w, const float *mask, int n, float eta, float *dlogp, float *dkl) {
    double N = m2_mask_count(mask, n);
    if (N <= 0) return;
    for (int i = 0; i < n; i++) {
        if (MASK(mask, i) == 0) continue;
        dlogp[i] += (float)(-MASK(mask, i) * w[i] / N);
        if (dkl) dkl[i] += (float)(eta * MASK(mask, i) / N);
    }
}
