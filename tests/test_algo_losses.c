/* algo/: every loss against hand-computed values (arithmetic in the comments) and every backward
 * against central finite differences, including the anchor term through a softmax policy and the
 * exact per-token KL (the engine's kernels/loss.h, which the steps reach through m2_ctx_logprobs
 * and m2_ctx_kl). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algo/algo.h"
#include "core/rng.h"
#include "kernels/loss.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static void fill_normal(m2_rng *r, float *x, int n, float scale) {
    for (int i = 0; i < n; i++) x[i] = scale * m2_rng_normal(r);
}

/* Central-difference check of an analytic gradient g of f at x (n entries). */
typedef double (*scalar_fn)(void *ctx, const float *x);
static void check_grad(scalar_fn f, void *ctx, float *x, const float *g, int n, double h, double tol) {
    for (int i = 0; i < n; i++) {
        float keep = x[i];
        x[i] = keep + (float)h;
        double fp = f(ctx, x);
        x[i] = keep - (float)h;
        double fm = f(ctx, x);
        x[i] = keep;
        double fd = (fp - fm) / (2 * h);
        double scale = fabs(fd) > 1 ? fabs(fd) : 1;
        if (fabs(fd - g[i]) > tol * scale) {
            fprintf(stderr, "grad[%d]: analytic %.6g vs finite difference %.6g\n", i, g[i], fd);
            fail();
        }
    }
}

/* ---------------- hand-computed values ---------------- */

static void nll_hand(void **state) {
    float logp[3] = {-1, -2, -3}, mask[3] = {1, 1, 0}, d[3] = {0};
    /* L = -(-1 + -2) / 2 = 1.5 ; dL/dlogp = -mask / 2 */
    NEAR(m2_nll_forward(logp, mask, 3), 1.5, 1e-6);
    m2_nll_backward(mask, 3, d);
    NEAR(d[0], -0.5, 1e-7); NEAR(d[1], -0.5, 1e-7); NEAR(d[2], 0, 0);
    /* no valid entries: loss 0, gradient untouched */
    float zero[3] = {0, 0, 0}, d2[3] = {0};
    NEAR(m2_nll_forward(logp, zero, 3), 0, 0);
    m2_nll_backward(zero, 3, d2);
    NEAR(d2[0] + d2[1] + d2[2], 0, 0);
}

static void action_reduce_hand(void **state) {
    float tl[5] = {-1, -2, -3, -4, -5}, al[2];
    int32_t ta[5] = {-1, 0, 0, 1, -1}, cnt[2];
    /* sum: a0 = -2 + -3 = -5, a1 = -4 */
    m2_action_logp_forward(tl, ta, 5, 2, M2_REDUCE_SUM, al, cnt);
    NEAR(al[0], -5, 1e-7); NEAR(al[1], -4, 1e-7);
    assert_int_equal(cnt[0], 2); assert_int_equal(cnt[1], 1);
    /* mean: a0 = -5 / 2 = -2.5, a1 = -4 / 1 */
    m2_action_logp_forward(tl, ta, 5, 2, M2_REDUCE_MEAN, al, cnt);
    NEAR(al[0], -2.5, 1e-7); NEAR(al[1], -4, 1e-7);
    /* backward, mean, upstream (1, 2): tokens of a0 get 1/2 each, a1's token 2 */
    float da[2] = {1, 2}, dt[5] = {0};
    m2_action_logp_backward(da, ta, 5, cnt, M2_REDUCE_MEAN, dt);
    NEAR(dt[0], 0, 0); NEAR(dt[1], 0.5, 1e-7); NEAR(dt[2], 0.5, 1e-7); NEAR(dt[3], 2, 1e-7); NEAR(dt[4], 0, 0);
}

/* The kernels on n rows of V logits (no pool): token log-probs, their gradient, the exact KL. */
static void gather(const float *z, const int32_t *t, int n, int V, float *lp) { m2_logprob_forward(lp, NULL, z, t, n, V, NULL); }
static void gather_bwd(const float *z, const int32_t *t, int n, int V, const float *dlp, float *dz) {
    m2_logprob_backward(dz, dlp, z, NULL, t, n, V, NULL);
}
static double kl1(const float *zp, const float *zq, int V) {
    float k;
    m2_kl_forward(&k, zp, zq, 1, V, NULL);
    return k;
}
static void kl1_bwd(const float *zp, const float *zq, int V, float dkl, float *dzp) {
    m2_kl_backward(dzp, NULL, &dkl, zp, zq, 1, V, NULL);
}

static void logp_gather_hand(void **state) {
    /* z = (0, ln 2, ln 3) -> softmax = (1, 2, 3) / 6 ; target 2: log(3/6) = -ln 2 = -0.693147 */
    float z[3] = {0.f, (float)log(2.0), (float)log(3.0)}, lp, dz[3] = {0};
    int32_t t = 2;
    gather(z, &t, 1, 3, &lp);
    NEAR(lp, -0.693147, 1e-6);
    /* d logp / dz = onehot - p = (-1/6, -1/3, 1 - 1/2) */
    float one = 1.f;
    gather_bwd(z, &t, 1, 3, &one, dz);
    NEAR(dz[0], -1.0 / 6, 1e-6); NEAR(dz[1], -1.0 / 3, 1e-6); NEAR(dz[2], 0.5, 1e-6);
    /* stability: huge logits do not overflow (f32 kernel) */
    float zb[3] = {1000.f, 1000.f + (float)log(2.0), -1000.f};
    int32_t t0 = 0;
    gather(zb, &t0, 1, 3, &lp);
    NEAR(lp, -log(3.0), 1e-4);   /* p = (1, 2, 0) / 3 */
}

static void kl_row_hand(void **state) {
    /* p = softmax(0, ln 3) = (1/4, 3/4), q = softmax(0, 0) = (1/2, 1/2)
     * KL = 1/4 ln(1/2) + 3/4 ln(3/2) = -0.173287 + 0.304099 = 0.130812 */
    float zp[2] = {0.f, (float)log(3.0)}, zq[2] = {0.f, 0.f}, dz[2] = {0};
    NEAR(kl1(zp, zq, 2), 0.130812, 1e-6);
    /* dKL/dz_j = p_j (ln p_j - ln q_j - KL):
     *   j=0: 0.25 (ln 0.5 - 0.130812) = 0.25 (-0.823959) = -0.205990
     *   j=1: 0.75 (ln 1.5 - 0.130812) = 0.75 ( 0.274653) =  0.205990 */
    kl1_bwd(zp, zq, 2, 1.f, dz);
    NEAR(dz[0], -0.205990, 1e-6); NEAR(dz[1], 0.205990, 1e-6);
    /* KL of a distribution with itself is 0, also with extreme logits */
    float ze[3] = {-1e4f, 0.f, 1e4f};
    NEAR(kl1(ze, ze, 3), 0, 1e-9);
    /* shift invariance: adding a constant to z_q changes nothing */
    float zq2[2] = {50.f, 50.f};
    NEAR(kl1(zp, zq2, 2), 0.130812, 2e-5);   /* f32 kernel: ulp(50) ~ 4e-6 */
}

static void iql_value_hand(void **state) {
    /* tau = 0.7; u = qbar - v = (0.5, -1, 0); weights (0.7, 0.3, 0.7)
     * L_V = (0.7*0.25 + 0.3*1 + 0) / 3 = 0.475 / 3 = 0.158333
     * dL/dv = -2 w u / 3 = (-0.233333, +0.2, 0) */
    float qbar[3] = {1, 0, 2}, v[3] = {0.5f, 1, 2}, dv[3] = {0};
    NEAR(m2_iql_value_forward(qbar, v, NULL, 3, 0.7f), 0.158333, 1e-6);
    m2_iql_value_backward(qbar, v, NULL, 3, 0.7f, dv);
    NEAR(dv[0], -0.233333, 1e-6); NEAR(dv[1], 0.2, 1e-6); NEAR(dv[2], 0, 1e-7);
    /* the mask removes an entry and changes the mean's denominator: only u = 0.5 -> 0.175 / 1 */
    float mask[3] = {1, 0, 0};
    NEAR(m2_iql_value_forward(qbar, v, mask, 3, 0.7f), 0.175, 1e-6);
}

static void iql_q_hand(void **state) {
    /* gamma 0.9: y = r + 0.9 (1 - d) v_next = (0 + 0.9*0.5, 0 + 0.9*0.8, 1 [terminal: v_next ignored])
     *          = (0.45, 0.72, 1) */
    float r[3] = {0, 0, 1}, d[3] = {0, 0, 1}, vn[3] = {0.5f, 0.8f, 123.f}, y[3];
    m2_td_targets(r, d, vn, 3, 0.9f, y);
    NEAR(y[0], 0.45, 1e-6); NEAR(y[1], 0.72, 1e-6); NEAR(y[2], 1.0, 1e-7);
    /* q = (0.5, 0.7, 0.8): L_Q = ((-0.05)^2 + 0.02^2 + 0.2^2) / 3 = 0.0429 / 3 = 0.0143
     * dL/dq = -2 (y - q) / 3 = (0.033333, -0.013333, -0.133333) */
    float q[3] = {0.5f, 0.7f, 0.8f}, dq[3] = {0};
    NEAR(m2_iql_q_forward(q, y, NULL, 3), 0.0143, 1e-6);
    m2_iql_q_backward(q, y, NULL, 3, dq);
    NEAR(dq[0], 0.033333, 1e-6); NEAR(dq[1], -0.013333, 1e-6); NEAR(dq[2], -0.133333, 1e-6);
    /* advantages A = qbar - v */
    float a[2], qb[2] = {1, 2}, vv[2] = {0.25f, 3};
    m2_advantages(qb, vv, 2, a);
    NEAR(a[0], 0.75, 1e-7); NEAR(a[1], -1, 1e-7);
}

static void offline_actor_hand(void **state) {
    /* beta 1, w_max 2, lambda 0.5
     * dataset: A = (0, ln 3, -ln 2) -> exp(A) = (1, 3, 0.5) -> w = (1, 2 [clipped], 0.5)
     *   logp = (-1, -2, -0.5): L_data = -(1*-1 + 2*-2 + 0.5*-0.5) / 3 = 5.25 / 3 = 1.75
     * sampled: A^ = (1, -2), logp^ = (-0.3, -1.2):
     *   L_anchor = -0.5 (1*-0.3 + -2*-1.2) / 2 = -0.5 * 2.1 / 2 = -0.525
     * L = 1.75 - 0.525 = 1.225 */
    m2_actor_cfg cfg = {.beta = 1, .w_max = 2, .lambda = 0.5f, .released = 0};
    float adv[3] = {0, (float)log(3.0), (float)-log(2.0)}, logp[3] = {-1, -2, -0.5f};
    float adv_s[2] = {1, -2}, logp_s[2] = {-0.3f, -1.2f};
    m2_actor_stats st;
    NEAR(m2_offline_actor_forward(&cfg, adv, logp, NULL, 3, adv_s, logp_s, NULL, 2, &st), 1.225, 1e-6);
    NEAR(st.loss_data, 1.75, 1e-6); NEAR(st.loss_anchor, -0.525, 1e-6);
    NEAR(st.clip_frac, 1.0 / 3, 1e-6); NEAR(st.w_max_seen, 2, 1e-6);
    /* gradients: dataset -w / 3 = (-1/3, -2/3, -1/6); anchor -lambda A^ / 2 = (-0.25, +0.5) */
    float d[3] = {0}, ds[2] = {0};
    m2_offline_actor_backward(&cfg, adv, NULL, 3, adv_s, NULL, 2, d, ds);
    NEAR(d[0], -1.0 / 3, 1e-6); NEAR(d[1], -2.0 / 3, 1e-6); NEAR(d[2], -1.0 / 6, 1e-6);
    NEAR(ds[0], -0.25, 1e-6); NEAR(ds[1], 0.5, 1e-6);
    /* normalize: w / mean(w) = (1, 2, 0.5) / (3.5/3 = 1.166667) = (0.857143, 1.714286, 0.428571)
     * L_data = 1.75 / 1.166667 = 1.5 ; dL/dlogp = -w/3 = (-0.285714, -0.571429, -0.142857) */
    cfg.normalize = 1;
    NEAR(m2_offline_actor_forward(&cfg, adv, logp, NULL, 3, adv_s, logp_s, NULL, 2, &st), 1.5 - 0.525, 1e-6);
    memset(d, 0, sizeof d);
    m2_offline_actor_backward(&cfg, adv, NULL, 3, adv_s, NULL, 2, d, NULL);
    NEAR(d[0], -0.285714, 1e-6); NEAR(d[1], -0.571429, 1e-6); NEAR(d[2], -0.142857, 1e-6);
    /* a padded entry (A = 5, its raw weight would be 2) counts neither in the mean nor in the loss:
     * the same numbers, and no gradient to it */
    float adv4[4] = {0, (float)log(3.0), (float)-log(2.0), 5}, logp4[4] = {-1, -2, -0.5f, -7}, mask4[4] = {1, 1, 1, 0};
    float d4[4] = {0};
    NEAR(m2_offline_actor_forward(&cfg, adv4, logp4, mask4, 4, NULL, NULL, NULL, 0, NULL), 1.5, 1e-6);
    m2_offline_actor_backward(&cfg, adv4, mask4, 4, NULL, NULL, 0, d4, NULL);
    NEAR(d4[0], -0.285714, 1e-6); NEAR(d4[1], -0.571429, 1e-6); NEAR(d4[2], -0.142857, 1e-6); NEAR(d4[3], 0, 0);
    cfg.normalize = 0;
    /* lambda = 0 is vanilla IQL/AWR: the anchor vanishes */
    cfg.lambda = 0;
    NEAR(m2_offline_actor_forward(&cfg, adv, logp, NULL, 3, adv_s, logp_s, NULL, 2, NULL), 1.75, 1e-6);
}

static void released_actor_hand(void **state) {
    /* released variant, beta 1, w_max 2, lambda 0.5, A = (0, ln 3, -ln 2):
     *   raw = lambda relu(A) + min(exp A, 2) = (0 + 1, 0.5*1.098612 + 2, 0 + 0.5)
     *       = (1, 2.549306, 0.5);  mean = 4.049306 / 3 = 1.349769
     *   w = raw / mean = (0.740868, 1.888698, 0.370434)
     *   L = -(0.740868*-1 + 1.888698*-2 + 0.370434*-0.5) / 3 = 4.703482 / 3 = 1.567827
     *   dL/dlogp = -w / 3 = (-0.246956, -0.629566, -0.123478); sampled actions are ignored */
    m2_actor_cfg cfg = {.beta = 1, .w_max = 2, .lambda = 0.5f, .released = 1};
    float adv[3] = {0, (float)log(3.0), (float)-log(2.0)}, logp[3] = {-1, -2, -0.5f};
    float adv_s[1] = {5}, logp_s[1] = {-1};
    m2_actor_stats st;
    NEAR(m2_offline_actor_forward(&cfg, adv, logp, NULL, 3, adv_s, logp_s, NULL, 1, &st), 1.567827, 1e-5);
    NEAR(st.w_max_seen, 1.888698, 1e-5); NEAR(st.w_mean, 1, 1e-6);   /* normalised: mean 1 */
    /* spreads (population std): A (0, 1.098612, -0.693147) -> 0.737699; w -> 0.646346 */
    NEAR(st.adv_std, 0.737699, 1e-5); NEAR(st.w_std, 0.646346, 1e-5);
    NEAR(st.loss_anchor, 0, 0);
    float d[3] = {0}, ds[1] = {0};
    m2_offline_actor_backward(&cfg, adv, NULL, 3, adv_s, NULL, 1, d, ds);
    NEAR(d[0], -0.246956, 1e-5); NEAR(d[1], -0.629566, 1e-5); NEAR(d[2], -0.123478, 1e-5);
    NEAR(ds[0], 0, 0);
    /* NaN advantage -> weight 0 (the released nan -> 0): raw (0, 1), mean 0.5, w = (0, 2);
     * dL/dlogp = -w / 2 = (0, -1) */
    float adv_nan[2] = {NAN, 0}, dn[2] = {0};
    m2_offline_actor_backward(&cfg, adv_nan, NULL, 2, NULL, NULL, 0, dn, NULL);
    NEAR(dn[0], 0, 0);
    NEAR(dn[1], -1, 1e-6);
}

static void awac_hand(void **state) {
    /* alpha 0.5, w_max 3: A/alpha = (0, ln 2, 2) -> exp = (1, 2, 7.389 -> 3) ; mean 2
     *   w = (0.5, 1, 1.5)
     * logp = (-1, -2, -3), KL = (0.1, 0.2, 0.3), eta 0.1:
     *   L = -(0.5*-1 + 1*-2 + 1.5*-3) / 3 + 0.1 (0.6) / 3 = 7/3 + 0.02 = 2.353333
     *   dL/dlogp = -w / 3 = (-1/6, -1/3, -1/2) ; dL/dKL = 0.1 / 3 */
    float adv[3] = {0, 0.5f * (float)log(2.0), 1}, w[3];
    m2_awac_weights(adv, NULL, 3, 0.5f, 3, w);
    NEAR(w[0], 0.5, 1e-6); NEAR(w[1], 1, 1e-6); NEAR(w[2], 1.5, 1e-6);
    float logp[3] = {-1, -2, -3}, kl[3] = {0.1f, 0.2f, 0.3f}, dl[3] = {0}, dk[3] = {0};
    NEAR(m2_awac_forward(w, logp, kl, NULL, 3, 0.1f), 2.353333, 1e-5);
    m2_awac_backward(w, NULL, 3, 0.1f, dl, dk);
    NEAR(dl[0], -1.0 / 6, 1e-6); NEAR(dl[1], -1.0 / 3, 1e-6); NEAR(dl[2], -0.5, 1e-6);
    for (int i = 0; i < 3; i++) NEAR(dk[i], 0.1 / 3, 1e-7);
    /* padding: masked entries neither count in the weight mean nor in the loss */
    float adv4[4] = {0, 0.5f * (float)log(2.0), 1, 40}, mask4[4] = {1, 1, 1, 0}, w4[4];
    m2_awac_weights(adv4, mask4, 4, 0.5f, 3, w4);
    NEAR(w4[0], 0.5, 1e-6); NEAR(w4[2], 1.5, 1e-6);
}

static void teamtr_hand(void **state) {
    /* group (1, 0, 0, 1): mean 0.5, unbiased var = 4*0.25/3 = 1/3, sd = 0.577350
     *   A = +-0.5 / 0.577350 = +-0.866025 ; clipped at a_max 0.8 -> +-0.8
     * group (1, 1): sd 0 -> A = 0 */
    float R[6] = {1, 0, 0, 1, 1, 1}, A[6];
    m2_group_advantages(R, 1, 4, 1e-6f, 5.f, A);
    NEAR(A[0], 0.866025, 1e-5); NEAR(A[1], -0.866025, 1e-5);
    m2_group_advantages(R, 1, 4, 1e-6f, 0.8f, A);
    NEAR(A[0], 0.8, 1e-7); NEAR(A[2], -0.8, 1e-7);
    m2_group_advantages(R + 4, 1, 2, 1e-6f, 5.f, A);
    NEAR(A[0], 0, 0); NEAR(A[1], 0, 0);

    /* PPO-clip, eps 0.2, four tokens:
     *   rho 1.5, A  1: min(1.5, 1.2)    =  1.2  clipped   grad 0
     *   rho 0.5, A  1: min(0.5, 0.8)    =  0.5  unclipped grad -0.5/4  = -0.125
     *   rho 1.5, A -1: min(-1.5, -1.2)  = -1.5  unclipped grad +1.5/4  =  0.375
     *   rho 1,   A  2: 2                         unclipped grad -2/4    = -0.5
     *   L = -(1.2 + 0.5 - 1.5 + 2) / 4 = -0.55 */
    float lo[4] = {-1, -1, -1, -1};
    float ln[4] = {-1 + (float)log(1.5), -1 + (float)log(0.5), -1 + (float)log(1.5), -1};
    float ad[4] = {1, 1, -1, 2}, g[4] = {0};
    m2_ppo_stats st;
    NEAR(m2_ppo_clip_forward(ln, lo, ad, NULL, NULL, 4, 0.2f, 0, &st), -0.55, 1e-6);
    NEAR(st.clip_frac, 0.25, 1e-7);
    m2_ppo_clip_backward(ln, lo, ad, NULL, NULL, 4, 0.2f, 0, g);
    NEAR(g[0], 0, 1e-7); NEAR(g[1], -0.125, 1e-6); NEAR(g[2], 0.375, 1e-6); NEAR(g[3], -0.5, 1e-6);
    /* k3 to a reference: ref - new = ln 2 -> r = 2 -> k3 = 2 - ln 2 - 1 = 0.306853 */
    float lref[1] = {(float)log(2.0)}, lnew[1] = {0}, lold[1] = {0}, a0[1] = {0};
    NEAR(m2_ppo_clip_forward(lnew, lold, a0, lref, NULL, 1, 0.2f, 1.f, &st), 0.306853, 1e-6);

    /* D^: old (-1, -2, -1), new (-1.5, -1, -1), sequences (0, 0, 1):
     *   ((-1 + 1.5) + (-2 + 1) + 0) / 2 = -0.25 */
    float o3[3] = {-1, -2, -1}, n3[3] = {-1.5f, -1, -1};
    int32_t sq[3] = {0, 0, 1};
    NEAR(m2_token_kl_estimate(o3, n3, sq, NULL, 3, 2), -0.25, 1e-6);
    /* surrogate gain: rho (1.5, 1), A (1, 2): ((1.5-1)*1 + 0*2) / 2 = 0.25 */
    float sn[2] = {(float)log(1.5), 0}, so[2] = {0, 0}, sa[2] = {1, 2};
    NEAR(m2_surrogate_gain(sn, so, sa, NULL, 2), 0.25, 1e-6);
    /* certificate: L (0.1, 0.2), D (0.01, 0.04), c 0.5: 0.3 - 0.5 (0.1 + 0.2) = 0.15 */
    float Ls[2] = {0.1f, 0.2f}, Ds[2] = {0.01f, 0.04f};
    NEAR(m2_stage_certificate(Ls, Ds, 2, 0.5f), 0.15, 1e-6);
}

/* ---------------- finite differences ---------------- */

typedef struct { const float *a, *b, *mask; int n; float p; } vec_ctx;

static double f_value(void *c, const float *v) {
    vec_ctx *x = c;
    return m2_iql_value_forward(x->a, v, x->mask, x->n, x->p);
}
static double f_q(void *c, const float *q) {
    vec_ctx *x = c;
    return m2_iql_q_forward(q, x->a, x->mask, x->n);
}

static void fd_iql(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 1);
    enum { N = 9 };
    float qbar[N], v[N], y[N], q[N], mask[N], g[N];
    fill_normal(&r, qbar, N, 1); fill_normal(&r, v, N, 1); fill_normal(&r, y, N, 1); fill_normal(&r, q, N, 1);
    for (int i = 0; i < N; i++) mask[i] = i % 4 != 3;
    vec_ctx c = {qbar, NULL, mask, N, 0.8f};
    memset(g, 0, sizeof g);
    m2_iql_value_backward(qbar, v, mask, N, 0.8f, g);
    check_grad(f_value, &c, v, g, N, 1e-3, 2e-3);
    vec_ctx c2 = {y, NULL, mask, N, 0};
    memset(g, 0, sizeof g);
    m2_iql_q_backward(q, y, mask, N, g);
    check_grad(f_q, &c2, q, g, N, 1e-3, 2e-3);
}

typedef struct { const m2_actor_cfg *cfg; const float *adv, *logp, *mask; int n;
                 const float *adv_s, *logp_s, *mask_s; int m; int wrt_sampled; } actor_ctx;
static double f_actor(void *c, const float *x) {
    actor_ctx *a = c;
    return m2_offline_actor_forward(a->cfg, a->adv, a->wrt_sampled ? a->logp : x, a->mask, a->n,
                                    a->adv_s, a->wrt_sampled ? x : a->logp_s, a->mask_s, a->m, NULL);
}

static void fd_actor(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 2);
    enum { N = 7, M = 5 };
    float adv[N], logp[N], mask[N], adv_s[M], logp_s[M], mask_s[M], g[N], gs[M];
    fill_normal(&r, adv, N, 1); fill_normal(&r, logp, N, 1);
    fill_normal(&r, adv_s, M, 1); fill_normal(&r, logp_s, M, 1);
    for (int i = 0; i < N; i++) mask[i] = i != 2;
    for (int j = 0; j < M; j++) mask_s[j] = j != 4;
    for (int variant = 0; variant < 3; variant++) {   /* sampled, sampled + normalize, released */
        m2_actor_cfg cfg = {.beta = 2, .w_max = 4, .lambda = 0.7f, .released = variant == 2, .normalize = variant == 1};
        memset(g, 0, sizeof g); memset(gs, 0, sizeof gs);
        m2_offline_actor_backward(&cfg, adv, mask, N, adv_s, mask_s, M, g, gs);
        actor_ctx c = {&cfg, adv, logp, mask, N, adv_s, logp_s, mask_s, M, 0};
        check_grad(f_actor, &c, logp, g, N, 1e-3, 2e-3);
        c.wrt_sampled = 1;
        check_grad(f_actor, &c, logp_s, gs, M, 1e-3, 2e-3);
    }
}

/* The anchor term through a real softmax policy: logits of the sampled actions' tokens ->
 * log-softmax gather -> per-action sum -> -lambda mean(A^ log pi(a^)). */
enum { AV = 6, AT = 5, AA = 2 };
typedef struct { const int32_t *tgt, *tok_act; const float *adv_s; float lambda; m2_reduce red; } anchor_ctx;
static double f_anchor_logits(void *c, const float *z) {
    anchor_ctx *a = c;
    float tl[AT], al[AA];
    int32_t cnt[AA];
    gather(z, a->tgt, AT, AV, tl);
    m2_action_logp_forward(tl, a->tok_act, AT, AA, a->red, al, cnt);
    return m2_anchor_forward(a->adv_s, al, NULL, AA, a->lambda);
}

static void fd_anchor_through_logits(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 3);
    float z[AT * AV];
    fill_normal(&r, z, AT * AV, 1.5f);
    int32_t tgt[AT] = {1, 4, 0, 5, 2}, tok_act[AT] = {0, 0, -1, 1, 1};
    float adv_s[AA] = {0.8f, -1.3f};
    for (int red = 0; red < 2; red++) {
        anchor_ctx c = {tgt, tok_act, adv_s, 0.6f, (m2_reduce)red};
        float tl[AT], al[AA], dal[AA] = {0}, dtl[AT] = {0}, dz[AT * AV] = {0};
        int32_t cnt[AA];
        gather(z, tgt, AT, AV, tl);
        m2_action_logp_forward(tl, tok_act, AT, AA, c.red, al, cnt);
        m2_anchor_backward(adv_s, NULL, AA, 0.6f, dal);
        m2_action_logp_backward(dal, tok_act, AT, cnt, c.red, dtl);
        gather_bwd(z, tgt, AT, AV, dtl, dz);
        check_grad(f_anchor_logits, &c, z, dz, AT * AV, 1e-3, 2e-3);
        /* rows that predict no action token get no gradient */
        for (int v = 0; v < AV; v++) NEAR(dz[2 * AV + v], 0, 0);
    }
}

typedef struct { const float *zq; int V; } kl_ctx;
static double f_kl(void *c, const float *zp) {
    kl_ctx *k = c;
    return kl1(zp, k->zq, k->V);
}

static void fd_kl_row(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 4);
    enum { V = 11 };
    float zp[V], zq[V], g[V];
    for (int trial = 0; trial < 4; trial++) {
        fill_normal(&r, zp, V, 2.f + trial);
        fill_normal(&r, zq, V, 2.f);
        memset(g, 0, sizeof g);
        kl1_bwd(zp, zq, V, 1.f, g);
        kl_ctx c = {zq, V};
        check_grad(f_kl, &c, zp, g, V, 1e-3, 2e-3);
        double s = 0;
        for (int v = 0; v < V; v++) s += g[v];
        NEAR(s, 0, 1e-5);   /* softmax gradients sum to zero */
        assert_true(kl1(zp, zq, V) >= 0);
    }
}

/* The whole online actor loss through the online logits: per-token gather and exact KL, both
 * reduced per action with the SUM reduction, AWAC weights constant. */
enum { OV = 5, OT = 6, OA = 3 };
typedef struct { const float *zoff, *w, *mask; const int32_t *tgt, *tok_act; float eta; } awac_ctx;
static double f_awac_logits(void *c, const float *z) {
    awac_ctx *a = c;
    float tl[OT], tk[OT], al[OA], ak[OA];
    int32_t cnt[OA];
    gather(z, a->tgt, OT, OV, tl);
    for (int i = 0; i < OT; i++) tk[i] = a->tok_act[i] >= 0 ? (float)kl1(z + i * OV, a->zoff + i * OV, OV) : 0.f;
    m2_action_logp_forward(tl, a->tok_act, OT, OA, M2_REDUCE_SUM, al, cnt);
    m2_action_logp_forward(tk, a->tok_act, OT, OA, M2_REDUCE_SUM, ak, cnt);
    return m2_awac_forward(a->w, al, ak, a->mask, OA, a->eta);
}

static void fd_awac_through_logits(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 5);
    float z[OT * OV], zoff[OT * OV];
    fill_normal(&r, z, OT * OV, 1.f);
    fill_normal(&r, zoff, OT * OV, 1.f);
    int32_t tgt[OT] = {0, 3, 1, 4, 2, 2}, tok_act[OT] = {0, 0, 1, -1, 2, 2};
    float adv[OA] = {0.3f, -0.5f, 1.1f}, mask[OA] = {1, 1, 0}, w[OA];
    m2_awac_weights(adv, mask, OA, 1.f, 20.f, w);
    awac_ctx c = {zoff, w, mask, tgt, tok_act, 0.3f};
    /* analytic: loss -> (dlogp, dkl) per action -> per token -> logits */
    float dal[OA] = {0}, dak[OA] = {0}, dtl[OT] = {0}, dtk[OT] = {0}, dz[OT * OV] = {0}, tl[OT], al[OA];
    int32_t cnt[OA];
    gather(z, tgt, OT, OV, tl);
    m2_action_logp_forward(tl, tok_act, OT, OA, M2_REDUCE_SUM, al, cnt);
    m2_awac_backward(w, mask, OA, 0.3f, dal, dak);
    m2_action_logp_backward(dal, tok_act, OT, cnt, M2_REDUCE_SUM, dtl);
    m2_action_logp_backward(dak, tok_act, OT, cnt, M2_REDUCE_SUM, dtk);
    gather_bwd(z, tgt, OT, OV, dtl, dz);
    for (int i = 0; i < OT; i++) if (tok_act[i] >= 0) kl1_bwd(z + i * OV, zoff + i * OV, OV, dtk[i], dz + i * OV);
    check_grad(f_awac_logits, &c, z, dz, OT * OV, 1e-3, 2e-3);
}

typedef struct { const float *lo, *adv, *ref; int n; } ppo_ctx;
static double f_ppo(void *c, const float *ln) {
    ppo_ctx *p = c;
    return m2_ppo_clip_forward(ln, p->lo, p->adv, p->ref, NULL, p->n, 0.2f, 0.5f, NULL);
}

static void fd_ppo(void **state) {
    enum { N = 8 };
    /* ratios chosen away from the clip kinks 0.8 and 1.2 */
    float lo[N] = {-1, -2, -0.5f, -1.5f, -1, -3, -2, -0.7f};
    float dr[N] = {0.1f, -0.4f, 0.35f, -0.05f, 0.5f, -0.3f, 0.0f, 0.12f};
    float adv[N] = {1, -1, 0.5f, 2, -0.7f, 1.2f, -1.5f, 0.3f}, ln[N], ref[N], g[N] = {0};
    for (int i = 0; i < N; i++) { ln[i] = lo[i] + dr[i]; ref[i] = lo[i] + 0.3f * (i % 3) - 0.2f; }
    m2_ppo_clip_backward(ln, lo, adv, ref, NULL, N, 0.2f, 0.5f, g);
    ppo_ctx c = {lo, adv, ref, N};
    check_grad(f_ppo, &c, ln, g, N, 1e-3, 2e-3);
}

typedef struct { const int32_t *tgt, *tok_act; } nll_ctx;
static double f_nll_logits(void *c, const float *z) {
    nll_ctx *a = c;
    float tl[AT], al[AA];
    int32_t cnt[AA];
    gather(z, a->tgt, AT, AV, tl);
    m2_action_logp_forward(tl, a->tok_act, AT, AA, M2_REDUCE_MEAN, al, cnt);
    return m2_nll_forward(al, NULL, AA);
}

static void fd_sft_through_logits(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 6);
    float z[AT * AV];
    fill_normal(&r, z, AT * AV, 1.f);
    int32_t tgt[AT] = {2, 2, 0, 1, 3}, tok_act[AT] = {-1, 0, 0, 1, 1};
    float tl[AT], al[AA], dal[AA] = {0}, dtl[AT] = {0}, dz[AT * AV] = {0};
    int32_t cnt[AA];
    gather(z, tgt, AT, AV, tl);
    m2_action_logp_forward(tl, tok_act, AT, AA, M2_REDUCE_MEAN, al, cnt);
    m2_nll_backward(NULL, AA, dal);
    m2_action_logp_backward(dal, tok_act, AT, cnt, M2_REDUCE_MEAN, dtl);
    gather_bwd(z, tgt, AT, AV, dtl, dz);
    nll_ctx c = {tgt, tok_act};
    check_grad(f_nll_logits, &c, z, dz, AT * AV, 1e-3, 2e-3);
}

/* D^ = mean over the masked rows of the exact KL(old || new), a two-token vocabulary:
 * row 0: old softmax(0, ln 3) = (1/4, 3/4), new (1/2, 1/2):
 *        KL = 1/4 ln(1/2) + 3/4 ln(3/2) = -0.1732868 + 0.3040988 = 0.1308120
 * row 1: old (1/2, 1/2), new (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 0.3465736 - 0.2027326 = 0.1438410
 * row 2: masked out (a different agent's token). D^ = (0.1308120 + 0.1438410) / 2 = 0.1373265 */
static void token_divergence_hand(void **state) {
    (void)state;
    const float l3 = logf(3.f);
    const float old[6] = {0, l3, 0, 0, 5, -5};
    const float neu[6] = {0, 0, 0, l3, -5, 5};
    const float mask[3] = {1, 1, 0};
    assert_true(fabs(m2_token_divergence_logits(old, neu, mask, 3, 2) - 0.1373265) < 1e-5);
    /* one row at a time */
    assert_true(fabs(m2_token_divergence_logits(old, neu, NULL, 1, 2) - 0.1308120) < 1e-5);
    /* equal logits: exactly 0; rounding below 0 counts 0 */
    assert_true(m2_token_divergence_logits(old, old, mask, 3, 2) == 0.0);
    const float kl[3] = {-1e-9f, 0.5f, 0.25f};
    assert_true(m2_token_divergence_mean(kl, mask, 3) == 0.25);
    assert_true(m2_token_divergence_mean(kl, (const float[3]){0, 0, 0}, 3) == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nll_hand),
        cmocka_unit_test(action_reduce_hand),
        cmocka_unit_test(logp_gather_hand),
        cmocka_unit_test(kl_row_hand),
        cmocka_unit_test(iql_value_hand),
        cmocka_unit_test(iql_q_hand),
        cmocka_unit_test(offline_actor_hand),
        cmocka_unit_test(released_actor_hand),
        cmocka_unit_test(awac_hand),
        cmocka_unit_test(teamtr_hand),
        cmocka_unit_test(token_divergence_hand),
        cmocka_unit_test(fd_iql),
        cmocka_unit_test(fd_actor),
        cmocka_unit_test(fd_anchor_through_logits),
        cmocka_unit_test(fd_kl_row),
        cmocka_unit_test(fd_awac_through_logits),
        cmocka_unit_test(fd_ppo),
        cmocka_unit_test(fd_sft_through_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
