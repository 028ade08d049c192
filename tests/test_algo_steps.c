/* algo/steps: the glue between packed batches, the engine and the losses, on a tiny Llama-shaped
 * model over the byte tokenizer. Finite differences of the whole step (positions, targets, heads,
 * exact KL through m2_ctx_kl, the sampled anchor), plus a few SFT steps that must lower the loss. */
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
#include "data/data.h"
#include "model/model.h"

typedef struct fixture {
    m2_model *m;
    m2_tok_iface tok;
    m2_packed p[2];
    m2_packed_batch pb;
    m2_ctx *c, *c2;
} fixture;

static void randomize(m2_params *p, float scale, uint64_t seed) {
    m2_rng r;
    m2_rng_seed(&r, seed);
    for (size_t i = 0; i < p->n; i++) p->w[i] = scale * (2 * m2_rng_uniform(&r) - 1);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;   /* the byte tokenizer */
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    f->m = m2_model_create(&cfg, &o, &err);
    assert_non_null(f->m);
    m2_model_init_random(f->m, 7, 0.2f);
    m2_byte_tok_iface(&f->tok, M2_BOS_NONE);
    m2_traj t1, t2;
    m2_traj_init(&t1);
    m2_traj_set_prompt(&t1, "P", &err);
    m2_traj_push_state(&t1, "ab", &err);
    m2_traj_push_action(&t1, "x", 0.f, 0.f, &err);
    m2_traj_push_state(&t1, "cd", &err);
    m2_traj_push_action(&t1, "yz", 1.f, 1.f, &err);
    m2_traj_push_state(&t1, "e", &err);
    m2_traj_init(&t2);
    m2_traj_set_prompt(&t2, "Q", &err);
    m2_traj_push_state(&t2, "fg", &err);
    m2_traj_push_action(&t2, "hij", 0.5f, 1.f, &err);
    assert_int_equal(m2_pack_traj(&f->tok, &t1, 0, &f->p[0], &err), 0);
    assert_int_equal(m2_pack_traj(&f->tok, &t2, 0, &f->p[1], &err), 0);
    m2_traj_free(&t1);
    m2_traj_free(&t2);
    assert_int_equal(m2_packed_batch_build(f->p, 2, &f->pb, &err), 0);
    f->c = m2_ctx_create(f->m, 64, 1, &err);
    f->c2 = m2_ctx_create(f->m, 64, 0, &err);
    assert_non_null(f->c);
    assert_non_null(f->c2);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    m2_ctx_free(f->c);
    m2_ctx_free(f->c2);
    m2_packed_batch_free(&f->pb);
    m2_packed_free(&f->p[0]);
    m2_packed_free(&f->p[1]);
    m2_model_free(f->m);
    free(f);
    return 0;
}

static int fd_ok(double fd, double g) { return fabs(fd - g) / (fabs(fd) + fabs(g) + 2e-2) < 3e-2; }

static m2_adapter *adapter(fixture *f, const char *name, uint64_t seed) {
    m2_err err = {0};
    m2_lora_config lc = {.name = "", .rank = 2, .alpha = 4.0f, .targets = M2_LORA_Q | M2_LORA_V};
    snprintf(lc.name, sizeof lc.name, "%s", name);
    m2_adapter *a = m2_adapter_add(f->m, &lc, seed, &err);
    assert_non_null(a);
    randomize(&a->params, 0.3f, seed + 100);
    return a;
}

/* Heads that output a constant b2 whatever the hidden state, so A is constant under parameter
 * perturbations (the actor's stop-grad on A then equals the finite difference). */
static m2_head *const_head(fixture *f, const char *name, float b2) {
    m2_err err = {0};
    m2_head *h = m2_head_add(f->m, name, 3, &err);
    assert_non_null(h);
    memset(h->params.w, 0, h->params.n * sizeof(float));
    h->params.w[h->params.n - 1] = b2;
    m2_head_polyak(h, 1.f);
    h->grad_to_body = 0;
    return h;
}

static void sft_step_fd(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_adapter *a = adapter(f, "sft", 1);
    for (int red = 0; red < 2; red++) {
        m2_params_zero_grad(&a->params);
        m2_step_stats st;
        assert_int_equal(m2_sft_step(f->c, a, &f->pb, (m2_reduce)red, 1, &st, &err), 0);
        assert_int_equal(st.n_actions, 3);
        assert_int_equal(st.n_tokens, 2 + 3 + 4);   /* x EOS, y z EOS, h i j EOS */
        float *g = malloc(a->params.n * sizeof(float));
        memcpy(g, a->params.g, a->params.n * sizeof(float));
        for (int k = 0; k < 8; k++) {
            size_t i = (k * 7919 + 13) % a->params.n;
            float save = a->params.w[i], eps = 1e-2f;
            double l[2];
            for (int s = 0; s < 2; s++) {
                a->params.w[i] = save + (s ? -eps : eps);
                assert_int_equal(m2_sft_step(f->c, a, &f->pb, (m2_reduce)red, 0, &st, &err), 0);
                l[s] = st.loss;
            }
            a->params.w[i] = save;
            double fd = (l[0] - l[1]) / (2 * eps);
            if (!fd_ok(fd, g[i])) fprintf(stderr, "sft[%zu] analytic %g fd %g\n", i, g[i], fd);
            assert_true(fd_ok(fd, g[i]));
        }
        free(g);
    }
}

static void sft_steps_lower_loss(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_lora_config lc = {.name = "learn", .rank = 4, .alpha = 8.0f, .targets = M2_LORA_ALL};
    m2_adapter *a = m2_adapter_add(f->m, &lc, 5, &err);
    m2_adamw opt = {.beta1 = M2_ADAMW_BETA1, .beta2 = M2_ADAMW_BETA2, .eps = M2_ADAMW_EPS};
    m2_step_stats st;
    float first = 0, last = 0;
    for (int it = 0; it < 30; it++) {
        m2_params_zero_grad(&a->params);
        assert_int_equal(m2_sft_step(f->c, a, &f->pb, M2_REDUCE_MEAN, 1, &st, &err), 0);
        if (it == 0) first = st.loss;
        last = st.loss;
        assert_int_equal(m2_adamw_step(&a->params, &opt, 1e-2f, &err), 0);
    }
    assert_true(last < 0.5f * first);
}

/* Offline step, critic part: d loss_q / d q-head params and d loss_v / d v-head params. */
static void offline_critic_fd(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_adapter *a = adapter(f, "crit", 2);
    m2_head *q = m2_head_add(f->m, "q", 11, &err), *v = m2_head_add(f->m, "v", 12, &err);
    randomize(&q->params, 0.3f, 21);
    randomize(&v->params, 0.3f, 22);
    m2_head_polyak(q, 1.f);
    m2_head_polyak(v, 1.f);
    for (size_t i = 0; i < q->params.n; i++) q->target[i] += 0.05f;   /* Qbar != Q */
    m2_offline_cfg cfg = {0};
    cfg.critic = (m2_critic_cfg){.gamma = 0.9f, .expectile = 0.7f};
    cfg.actor = (m2_actor_cfg){.beta = 1.f, .w_max = 20.f};
    cfg.reduce = M2_REDUCE_MEAN;
    cfg.train_critic = 1;
    m2_rng rng;
    m2_rng_seed(&rng, 1);
    m2_step_stats st;
                { int rc_ = m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err); if (rc_) fprintf(stderr, "%s\n", err.msg); assert_int_equal(rc_, 0); }
    assert_true(st.loss_q > 0 && st.loss_v > 0);
    float *gq = malloc(q->params.n * sizeof(float)), *gv = malloc(v->params.n * sizeof(float));
    memcpy(gq, q->params.g, q->params.n * sizeof(float));
    memcpy(gv, v->params.g, v->params.n * sizeof(float));
    cfg.train_critic = 0;
    for (int which = 0; which < 2; which++) {
        m2_head *h = which ? v : q;
        float *g = which ? gv : gq;
        for (int k = 0; k < 8; k++) {
            size_t i = (k * 104729 + 5) % h->params.n;
            if (k == 7) i = h->params.n - 1;   /* the output bias */
            float save = h->params.w[i], eps = 1e-2f;
            double l[2];
            for (int s = 0; s < 2; s++) {
                h->params.w[i] = save + (s ? -eps : eps);
                assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
                l[s] = which ? st.loss_v : st.loss_q;
            }
            h->params.w[i] = save;
            double fd = (l[0] - l[1]) / (2 * eps);
            if (!fd_ok(fd, g[i])) fprintf(stderr, "%s[%zu] analytic %g fd %g\n", h->name, i, g[i], fd);
            assert_true(fd_ok(fd, g[i]));
        }
    }
    /* grad_to_body off: the critic never reaches the adapter */
    q->grad_to_body = v->grad_to_body = 0;
    m2_params_zero_grad(&a->params);
    cfg.train_critic = 1;
    assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
    double s = 0;
    for (size_t i = 0; i < a->params.n; i++) s += fabs(a->params.g[i]);
    assert_true(s == 0.0);
    /* switch on: it does */
    q->grad_to_body = v->grad_to_body = 1;
    assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
    s = 0;
    for (size_t i = 0; i < a->params.n; i++) s += fabs(a->params.g[i]);
    assert_true(s > 0.0);
    free(gq);
    free(gv);
}

/* Offline actor with the sampled-action anchor, d(actor + anchor)/d adapter, A constant. The same
 * RNG state gives the same sampled actions in every evaluation. */
static void offline_actor_anchor_fd(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_adapter *a = adapter(f, "act", 3);
    m2_head *q = const_head(f, "qc", 0.7f), *v = const_head(f, "vc", 0.2f);   /* A = 0.5 */
    m2_offline_cfg cfg = {0};
    cfg.critic = (m2_critic_cfg){.gamma = 0.9f, .expectile = 0.7f};
    cfg.actor = (m2_actor_cfg){.beta = 1.f, .w_max = 20.f, .lambda = 0.8f, .normalize = 1};
    cfg.reduce = M2_REDUCE_MEAN;
    cfg.train_actor = 1;
    cfg.n_anchor = 2;
    cfg.max_action_tokens = 4;
    cfg.sampler = (m2_sampler){.temperature = 0.f};   /* greedy a^: a 1e-2 perturbation cannot flip a sampled token */
    cfg.anchor_samples = 2;
    cfg.eos_id = f->tok.eos_id;
    m2_rng rng;
    m2_step_stats st;
    m2_params_zero_grad(&a->params);
    m2_rng_seed(&rng, 9);
    assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
    assert_int_equal(st.n_anchor, 4);   /* 2 states x 2 samples */
    assert_true(fabsf(st.adv_mean - 0.5f) < 1e-5f);
    assert_true(st.loss_anchor != 0.f);
    float *g = malloc(a->params.n * sizeof(float));
    memcpy(g, a->params.g, a->params.n * sizeof(float));
    /* The loss is piecewise smooth in the parameters: a perturbation may flip a generated token. A
     * coordinate whose two one-sided differences disagree (a jump) is skipped; most must check. */
    int checked = 0;
    for (int k = 0; k < 12; k++) {
        size_t i = (k * 7919 + 3) % a->params.n;
        float save = a->params.w[i], eps = 2e-3f;
        double l[3];
        for (int s = 0; s < 3; s++) {
            a->params.w[i] = save + (s == 0 ? eps : s == 1 ? -eps : 0.f);
            m2_rng_seed(&rng, 9);
            assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
            l[s] = st.loss_actor + st.loss_anchor;
        }
        a->params.w[i] = save;
        double fd = (l[0] - l[1]) / (2 * eps), right = (l[0] - l[2]) / eps, left = (l[2] - l[1]) / eps;
        if (fabs(right - left) > 0.5 * (fabs(right) + fabs(left)) + 0.5) continue;   /* a jump */
        checked++;
        if (!fd_ok(fd, g[i])) fprintf(stderr, "anchor[%zu] analytic %g fd %g\n", i, g[i], fd);
        assert_true(fd_ok(fd, g[i]));
    }
    assert_true(checked >= 8);
    free(g);
}

/* Online step: AWAC + eta * exact KL(pi_on || pi_off), d loss / d online adapter, A constant. */
static void online_awac_kl_fd(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_adapter *on = adapter(f, "on", 4), *off = adapter(f, "off", 5);
    m2_head *q = const_head(f, "qo", 0.3f), *v = const_head(f, "vo", 0.1f);
    m2_online_cfg cfg = {0};
    cfg.critic = (m2_critic_cfg){.gamma = 0.9f, .expectile = 0.7f};
    cfg.alpha = 1.f;
    cfg.w_max = 20.f;
    cfg.eta = 0.5f;
    cfg.reduce = M2_REDUCE_SUM;
    cfg.train_actor = 1;
    m2_step_stats st;
    m2_params_zero_grad(&on->params);
    assert_int_equal(m2_online_step(f->m, f->c, f->c2, on, off, q, v, &f->pb, &cfg, &st, &err), 0);
    assert_true(st.kl > 0.f);
    /* off's params get no gradient (frozen reference) */
    if (off->params.g) {
        double s = 0;
        for (size_t i = 0; i < off->params.n; i++) s += fabs(off->params.g[i]);
        assert_true(s == 0.0);
    }
    float *g = malloc(on->params.n * sizeof(float));
    memcpy(g, on->params.g, on->params.n * sizeof(float));
    cfg.train_actor = 0;
    for (int k = 0; k < 8; k++) {
        size_t i = (k * 7919 + 1) % on->params.n;
        float save = on->params.w[i], eps = 1e-2f;
        double l[2];
        for (int s = 0; s < 2; s++) {
            on->params.w[i] = save + (s ? -eps : eps);
            assert_int_equal(m2_online_step(f->m, f->c, f->c2, on, off, q, v, &f->pb, &cfg, &st, &err), 0);
            l[s] = st.loss_actor;
        }
        on->params.w[i] = save;
        double fd = (l[0] - l[1]) / (2 * eps);
        if (!fd_ok(fd, g[i])) fprintf(stderr, "online[%zu] analytic %g fd %g\n", i, g[i], fd);
        assert_true(fd_ok(fd, g[i]));
    }
    /* identical adapters: KL 0 */
    assert_int_equal(m2_adapter_copy_weights(off, on, &err), 0);
    assert_int_equal(m2_online_step(f->m, f->c, f->c2, on, off, q, v, &f->pb, &cfg, &st, &err), 0);
    assert_true(fabsf(st.kl) < 1e-5f);
    free(g);
}

/* TeamTR PPO-clip step: d loss / d adapter against finite differences, with some rows clipped (their
 * ratio far outside 1 +- eps) and a k3 reference; D^ = 0 before any change. */
static void ppo_step_fd(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_adapter *a = adapter(f, "agent", 6), *ref = adapter(f, "ref", 7);
    int N = f->pb.N;
    float *old = calloc(N, sizeof(float)), *lref = calloc(N, sizeof(float)), *adv = calloc(N, sizeof(float));
    assert_int_equal(m2_score_logprobs(f->c2, a, &f->pb, old, &err), 0);
    assert_int_equal(m2_score_logprobs(f->c2, ref, &f->pb, lref, &err), 0);
    m2_ppo_cfg cfg = {.eps_clip = 0.2f, .kl_coef = 0.1f};
    m2_step_stats st;
    assert_int_equal(m2_ppo_step(f->c, a, &f->pb, adv, old, lref, &cfg, 0, &st, &err), 0);
    assert_true(fabsf(st.kl) < 1e-5f);   /* nothing changed yet */
    for (int i = 0; i < N; i++) {
        if (f->pb.tok_action[i] < 0) continue;
        adv[i] = (i % 4 == 1 || i % 3 == 0) ? -0.8f : 1.1f;   /* rows i%4==1: A<0, ratio 0.61 -> clipped */
        old[i] += (i % 4 == 1) ? 0.5f : 0.05f * (float)((i % 5) - 2);   /* ratio e^-0.5 or near 1 */
    }
    m2_params_zero_grad(&a->params);
    assert_int_equal(m2_ppo_step(f->c, a, &f->pb, adv, old, lref, &cfg, 1, &st, &err), 0);
    assert_true(st.clip_frac > 0.f && st.clip_frac < 1.f);
    float *g = malloc(a->params.n * sizeof(float));
    memcpy(g, a->params.g, a->params.n * sizeof(float));
    for (int k = 0; k < 8; k++) {
        size_t i = (k * 7919 + 5) % a->params.n;
        float save = a->params.w[i], eps = 1e-2f;
        double l[2];
        for (int s = 0; s < 2; s++) {
            a->params.w[i] = save + (s ? -eps : eps);
            assert_int_equal(m2_ppo_step(f->c, a, &f->pb, adv, old, lref, &cfg, 0, &st, &err), 0);
            l[s] = st.loss;
        }
        a->params.w[i] = save;
        double fd = (l[0] - l[1]) / (2 * eps);
        if (!fd_ok(fd, g[i])) fprintf(stderr, "ppo[%zu] analytic %g fd %g\n", i, g[i], fd);
        assert_true(fd_ok(fd, g[i]));
    }
    free(g); free(old); free(lref); free(adv);
}

static void lm_step_runs(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_step_stats st;
    assert_int_equal(m2_lm_step(f->c2, NULL, &f->pb, 0, &st, &err), 0);
    assert_int_equal(st.n_tokens, f->pb.N - 2);   /* every row but each sequence's last */
    /* a uniform-ish random model: loss near log(259) = 5.56 */
    assert_true(st.loss > 4.f && st.loss < 7.f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sft_step_fd, setup, teardown),
        cmocka_unit_test_setup_teardown(sft_steps_lower_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(offline_critic_fd, setup, teardown),
        cmocka_unit_test_setup_teardown(offline_actor_anchor_fd, setup, teardown),
        cmocka_unit_test_setup_teardown(online_awac_kl_fd, setup, teardown),
        cmocka_unit_test_setup_teardown(lm_step_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(ppo_step_fd, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
