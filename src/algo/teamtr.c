#include "algo/teamtr.h"
#include "algo/losses.h"
#include "kernels/loss.h"
#include <stdlib.h>
#include <math.h>
#include <stddef.h>

#define MASK(m, i) ((m) ? (double)(m)[i] : 1.0)

void m2_group_advantages(const float *R, int n_groups, int G, float eps, float a_max, float *adv) {
    for (int g = 0; g < n_groups; g++) {
        const float *r = R + (size_t)g * G;
        float *a = adv + (size_t)g * G;
        if (G < 2) { for (int k = 0; k < G; k++) a[k] = 0.f; continue; }
        double mean = 0, var = 0;
        for (int k = 0; k < G; k++) mean += r[k];
        mean /= G;
        for (int k = 0; k < G; k++) var += ((double)r[k] - mean) * ((double)r[k] - mean);
        double sd = sqrt(var / (G - 1));
        for (int k = 0; k < G; k++) {
            double x = ((double)r[k] - mean) / (sd + eps);
            if (x > a_max) x = a_max;
            if (x < -a_max) x = -a_max;
            a[k] = (float)x;
        }
    }
}

/* Returns 1 when the unclipped branch rho*A is the min (the only branch with a gradient). */
static int unclipped_active(double rho, double A, float eps) {
    double rc = rho < 1.0 - eps ? 1.0 - eps : (rho > 1.0 + eps ? 1.0 + eps : rho);
    return rho * A <= rc * A;
}

float m2_ppo_clip_forward(const float *logp_new, const float *logp_old, const float *adv,
                          const float *logp_ref, const float *mask, int n, float eps, float kl_coef,
                          m2_ppo_stats *st) {
    double N = m2_mask_count(mask, n), s = 0, k3s = 0, rs = 0, akl = 0;
    int nclip = 0;
    for (int u = 0; u < n; u++) {
        double m = MASK(mask, u);
        if (m == 0) continue;
        double rho = exp((double)logp_new[u] - logp_old[u]), A = adv[u];
        double rc = rho < 1.0 - eps ? 1.0 - eps : (rho > 1.0 + eps ? 1.0 + eps : rho);
        double t1 = rho * A, t2 = rc * A;
        s += m * (t1 < t2 ? t1 : t2);
        if (!unclipped_active(rho, A, eps)) nclip++;
        rs += rho;
        akl += (double)logp_old[u] - logp_new[u];
        if (logp_ref) {
            double r = exp((double)logp_ref[u] - logp_new[u]);
            k3s += m * (r - log(r) - 1.0);
        }
    }
    if (st) {
        st->clip_frac = N > 0 ? (float)(nclip / N) : 0.f;
        st->ratio_mean = N > 0 ? (float)(rs / N) : 0.f;
        st->kl_ref_mean = N > 0 ? (float)(k3s / N) : 0.f;
        st->approx_kl = N > 0 ? (float)(akl / N) : 0.f;
    }
    if (N <= 0) return 0.f;
    return (float)((-s + (logp_ref ? kl_coef * k3s : 0.0)) / N);
}

void m2_ppo_clip_backward(const float *logp_new, const float *logp_old, const float *adv,
                          const float *logp_ref, const float *mask, int n, float eps, float kl_coef,
                          float *dlogp_new) {
    double N = m2_mask_count(mask, n);
    if (N <= 0) return;
    for (int u = 0; u < n; u++) {
        double m = MASK(mask, u);
        if (m == 0) continue;
        double rho = exp((double)logp_new[u] - logp_old[u]), A = adv[u], g = 0;
        if (unclipped_active(rho, A, eps)) g -= m * rho * A / N;
        if (logp_ref) {
            double r = exp((double)logp_ref[u] - logp_new[u]);
            g += kl_coef * m * (1.0 - r) / N;   /* d/dx (r - log r - 1), r = e^(ref - x) */
        }
        dlogp_new[u] += (float)g;
    }
}

float m2_token_kl_estimate(const float *logp_old, const float *logp_new, const int32_t *tok_seq,
                           const float *mask, int n, int n_seq) {
    if (n_seq <= 0) return 0.f;
    double s = 0;
    for (int u = 0; u < n; u++) {
        if (MASK(mask, u) == 0 || (tok_seq && tok_seq[u] < 0)) continue;
        s += MASK(mask, u) * ((double)logp_old[u] - logp_new[u]);
    }
    return (float)(s / n_seq);
}

float m2_surrogate_gain(const float *logp_new, const float *logp_old, const float *adv,
                        const float *mask, int n) {
    double N = m2_mask_count(mask, n), s = 0;
    if (N <= 0) return 0.f;
    for (int u = 0; u < n; u++) {
        double m = MASK(mask, u);
        if (m == 0) continue;
        s += m * (exp((double)logp_new[u] - logp_old[u]) - 1.0) * adv[u];
    }
    return (float)(s / N);
}

double m2_stage_certificate(const float *L, const float *D, int n_agents, float c) {
    double s = 0;
    for (int i = 0; i < n_agents; i++) s += L[i] - c * sqrt(D[i] > 0 ? D[i] : 0);
    return s;
}

double m2_token_divergence_mean(const float *kl, const float *mask, int n) {
    double s = 0, N = 0;
    for (int u = 0; u < n; u++) {
        double m = MASK(mask, u);
        if (m == 0) continue;
        s += m * (kl[u] > 0 ? kl[u] : 0.0);
        N += m;
    }
    return N > 0 ? s / N : 0.0;
}

double m2_token_divergence_logits(const float *logits_old, const float *logits_new, const float *mask,
                                  int n, int V) {
    if (n <= 0) return 0.0;
    float *kl = malloc((size_t)n * sizeof *kl);
    if (!kl) return NAN;   /* the caller's check of D^ <= delta fails: the update is rolled back */
    m2_kl_forward(kl, logits_old, logits_new, n, V, NULL);
    double d = m2_token_divergence_mean(kl, mask, n);
    free(kl);
    return d;
}

/* Mean ranks (1-based) of x[0..n) into r; O(n^2), n is a run's stage count. */
static void ranks(const double *x, int n, double *r) {
    for (int i = 0; i < n; i++) {
        int less = 0, eq = 0;
        for (int k = 0; k < n; k++) { less += x[k] < x[i]; eq += x[k] == x[i]; }
        r[i] = less + (eq + 1) / 2.0;
    }
}

double m2_rank_correlation(const double *x, const double *y, int n) {
    if (n < 2) return 0.0;
    double *rx = malloc(2 * (size_t)n * sizeof *rx);
    if (!rx) return 0.0;
    double *ry = rx + n, mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    ranks(x, n, rx);
    ranks(y, n, ry);
    for (int i = 0; i < n; i++) { mx += rx[i]; my += ry[i]; }
    mx /= n;
    my /= n;
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0.0;
}

double m2_violation_rate(const double *certificate, const double *gain, int n) {
    int v = 0;
    for (int i = 0; i < n; i++) v += certificate[i] > gain[i];
    return n > 0 ? (double)v / n : 0.0;
}
