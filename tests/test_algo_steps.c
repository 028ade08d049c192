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

/* ---------------- each step against a computation by hand ----------------
 * Three packed segments with different rewards and dones: a terminal action followed by a state
 * (its TD target must ignore that state), a terminal one without a next state, and a segment whose
 * last action is not terminal (it bootstraps from the final state). Heads with random non-zero
 * weights and targets that differ from them; two different adapters. Positions are derived here
 * from the texts (not from the segment table), head values and gradients by hand through the
 * documented MLP layout, token log-probs and KL rows in double from the logits, then the targets,
 * advantages, weights and losses. Adapter gradients come from the engine's backward of dlogits
 * written here. Any sign, direction or position error in the steps' glue changes a compared number. */

enum { HMAX = 8 };
typedef struct hseg {
    const char *prompt;
    int n;                    /* actions */
    const char *s[3], *a[2];  /* states s_0..s_n (s_n only with final_state) and actions */
    float r[2], d[2];
    int final_state;
} hseg;
static const hseg HSEG[3] = {
    {"P", 2, {"ab", "cd", "e"}, {"x", "yz"}, {0.f, 1.f}, {0.f, 1.f}, 1},
    {"Q", 1, {"fg"}, {"hij"}, {0.5f}, {1.f}, 0},
    {"RS", 2, {"k", "mno", "pq"}, {"l", "rs"}, {-0.3f, 0.2f}, {0.f, 0.f}, 1},
};

typedef struct hfix {
    m2_model *m;
    m2_tok_iface tok;
    m2_packed p[3];
    m2_packed_batch pb;
    m2_ctx *c, *c2;
    /* the layout by hand (flat positions over the batch) */
    int A, N;
    int qpos[HMAX], vpos[HMAX], nvpos[HMAX];   /* Q at the action's EOS, V at the state's last token */
    int first[HMAX], ntok[HMAX], seq[HMAX];    /* action tokens (EOS included) and their segment */
    float r[HMAX], d[HMAX];
    int seq_off[3];
} hfix;

static void hand_layout(hfix *f) {
    int off = 0, A = 0;
    for (int k = 0; k < 3; k++) {
        const hseg *g = &HSEG[k];
        f->seq_off[k] = off;
        int p = off + (int)strlen(g->prompt), first_action = A;
        for (int t = 0; t < g->n; t++, A++) {
            f->vpos[A] = p + (int)strlen(g->s[t]) - 1;
            p += (int)strlen(g->s[t]);
            f->first[A] = p;
            f->ntok[A] = (int)strlen(g->a[t]) + 1;
            f->qpos[A] = p + (int)strlen(g->a[t]);
            p += f->ntok[A];
            f->r[A] = g->r[t];
            f->d[A] = g->d[t];
            f->seq[A] = k;
        }
        int last_state = g->final_state ? p + (int)strlen(g->s[g->n]) - 1 : -1;
        if (g->final_state) p += (int)strlen(g->s[g->n]);
        for (int t = 0; t < g->n; t++) {
            int i = first_action + t;
            f->nvpos[i] = t + 1 < g->n ? f->vpos[i + 1] : last_state;
        }
        off = p;
    }
    f->A = A;
    f->N = off;
}

static int setup_hand(void **state) {
    hfix *f = calloc(1, sizeof *f);
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    f->m = m2_model_create(&cfg, &o, &err);
    assert_non_null(f->m);
    m2_model_init_random(f->m, 17, 0.2f);
    m2_byte_tok_iface(&f->tok, M2_BOS_NONE);
    for (int k = 0; k < 3; k++) {
        const hseg *g = &HSEG[k];
        m2_traj t;
        m2_traj_init(&t);
        m2_traj_set_prompt(&t, g->prompt, &err);
        for (int i = 0; i < g->n; i++) {
            m2_traj_push_state(&t, g->s[i], &err);
            m2_traj_push_action(&t, g->a[i], g->r[i], g->d[i], &err);
        }
        if (g->final_state) m2_traj_push_state(&t, g->s[g->n], &err);
        assert_int_equal(m2_pack_traj(&f->tok, &t, 0, &f->p[k], &err), 0);
        m2_traj_free(&t);
    }
    assert_int_equal(m2_packed_batch_build(f->p, 3, &f->pb, &err), 0);
    hand_layout(f);
    assert_int_equal(f->pb.N, f->N);
    assert_int_equal(f->pb.n_actions, f->A);
    for (int i = 0; i < f->A; i++) assert_int_equal(f->pb.tokens[f->qpos[i]], f->tok.eos_id);
    f->c = m2_ctx_create(f->m, 64, 1, &err);
    f->c2 = m2_ctx_create(f->m, 64, 0, &err);
    assert_non_null(f->c);
    assert_non_null(f->c2);
    *state = f;
    return 0;
}

static int teardown_hand(void **state) {
    hfix *f = *state;
    m2_ctx_free(f->c);
    m2_ctx_free(f->c2);
    m2_packed_batch_free(&f->pb);
    for (int k = 0; k < 3; k++) m2_packed_free(&f->p[k]);
    m2_model_free(f->m);
    free(f);
    return 0;
}

static m2_adapter *hand_adapter(hfix *f, const char *name, uint64_t seed) {
    m2_err err = {0};
    m2_lora_config lc = {.rank = 2, .alpha = 4.0f, .targets = M2_LORA_Q | M2_LORA_V};
    snprintf(lc.name, sizeof lc.name, "%s", name);
    m2_adapter *a = m2_adapter_add(f->m, &lc, seed, &err);
    assert_non_null(a);
    randomize(&a->params, 0.3f, seed + 100);
    return a;
}

/* A head with random weights whose target differs from it in every weight. */
static m2_head *hand_head(hfix *f, const char *name, uint64_t seed) {
    m2_err err = {0};
    m2_head *h = m2_head_add(f->m, name, seed, &err);
    assert_non_null(h);
    randomize(&h->params, 0.4f, seed + 1);
    m2_rng r;
    m2_rng_seed(&r, seed + 2);
    for (size_t i = 0; i < h->params.n; i++) h->target[i] = h->params.w[i] + 0.2f * (2 * m2_rng_uniform(&r) - 1);
    h->grad_to_body = 0;
    return h;
}

/* The head MLP by hand (model/heads.h layout: W1 [F,H], b1 [F], w2 [F], b2), on weights w. */
static double head_val(const m2_head *h, const float *w, const float *x) {
    const float *W1 = w, *b1 = w + (size_t)h->F * h->H, *w2 = b1 + h->F, *b2 = w2 + h->F;
    double y = b2[0];
    for (int j = 0; j < h->F; j++) {
        double z = b1[j];
        for (int i = 0; i < h->H; i++) z += (double)W1[(size_t)j * h->H + i] * x[i];
        if (z > 0) y += w2[j] * z;
    }
    return y;
}

/* g += dout * d head(x) / d (online weights) */
static void head_grad(const m2_head *h, const float *x, double dout, double *g) {
    const float *w = h->params.w, *b1 = w + (size_t)h->F * h->H, *w2 = b1 + h->F;
    double *gW1 = g, *gb1 = g + (size_t)h->F * h->H, *gw2 = gb1 + h->F, *gb2 = gw2 + h->F;
    gb2[0] += dout;
    for (int j = 0; j < h->F; j++) {
        double z = b1[j];
        for (int i = 0; i < h->H; i++) z += (double)w[(size_t)j * h->H + i] * x[i];
        if (z <= 0) continue;
        gw2[j] += dout * z;
        gb1[j] += dout * w2[j];
        for (int i = 0; i < h->H; i++) gW1[(size_t)j * h->H + i] += dout * w2[j] * x[i];
    }
}

static double row_lse(const float *z, int V) {
    double m = z[0], s = 0;
    for (int v = 1; v < V; v++) if (z[v] > m) m = z[v];
    for (int v = 0; v < V; v++) s += exp(z[v] - m);
    return m + log(s);
}
static double row_logp(const float *z, int V, int t) { return z[t] - row_lse(z, V); }
/* KL(softmax(zp) || softmax(zq)) */
static double row_kl(const float *zp, const float *zq, int V) {
    double lp = row_lse(zp, V), lq = row_lse(zq, V), k = 0;
    for (int v = 0; v < V; v++) k += exp(zp[v] - lp) * ((zp[v] - lp) - (zq[v] - lq));
    return k;
}
/* dz += coef * d logp(t) / dz */
static void row_dlogp(const float *z, int V, int t, double coef, float *dz) {
    double l = row_lse(z, V);
    for (int v = 0; v < V; v++) dz[v] += (float)(coef * ((v == t) - exp(z[v] - l)));
}
/* dz += coef * d KL(softmax(zp) || softmax(zq)) / dzp */
static void row_dkl(const float *zp, const float *zq, int V, double coef, float *dz) {
    double lp = row_lse(zp, V), lq = row_lse(zq, V), k = row_kl(zp, zq, V);
    for (int v = 0; v < V; v++) {
        double p = exp(zp[v] - lp);
        dz[v] += (float)(coef * p * ((zp[v] - lp) - (zq[v] - lq) - k));
    }
}

static void near_rel(const char *what, double got, double want, double tol) {
    if (fabs(got - want) > tol * (fabs(want) + 1e-3)) {
        fprintf(stderr, "%s: step %.9g, by hand %.9g\n", what, got, want);
        fail();
    }
}
/* max |got - want| <= tol * max |want| (and want is not all zero) */
static void grads_close(const char *what, const float *got, const double *want, size_t n, double tol) {
    double mw = 0, md = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(want[i]) > mw) mw = fabs(want[i]);
        if (fabs(got[i] - want[i]) > md) { md = fabs(got[i] - want[i]); at = i; }
    }
    if (!(mw > 0) || md > tol * mw) {
        fprintf(stderr, "%s: max |step - hand| %.3g at %zu (step %.6g, hand %.6g), max |hand| %.3g\n", what, md, at,
                got[at], want[at], mw);
        fail();
    }
}

/* Values of one forward of the batch, by hand: hidden at the layout's positions through the heads,
 * token log-probs of every action. */
typedef struct hvals {
    double q[HMAX], qbar[HMAX], v[HMAX], vnext[HMAX];   /* vnext 0 where there is no next state */
    double logp_sum[HMAX];                               /* sum of the action's token log-probs */
    float *hidden, *logits;                              /* copies [N,H], [N,V] */
} hvals;

static void hand_values(hfix *f, m2_adapter *a, m2_head *q, m2_head *v, hvals *hv) {
    m2_err err = {0};
    m2_batch b = m2_packed_batch_view(&f->pb);
    assert_int_equal(m2_forward(f->c2, &b, a, 0, &err), 0);
    int H = f->m->cfg.dim, V = f->m->cfg.vocab_size;
    hv->hidden = malloc((size_t)f->N * H * sizeof(float));
    hv->logits = malloc((size_t)f->N * V * sizeof(float));
    memcpy(hv->hidden, m2_ctx_hidden(f->c2), (size_t)f->N * H * sizeof(float));
    memcpy(hv->logits, m2_ctx_logits(f->c2), (size_t)f->N * V * sizeof(float));
    for (int i = 0; i < f->A; i++) {
        if (q) {
            hv->q[i] = head_val(q, q->params.w, hv->hidden + (size_t)f->qpos[i] * H);
            hv->qbar[i] = head_val(q, q->target, hv->hidden + (size_t)f->qpos[i] * H);
        }
        if (v) {
            hv->v[i] = head_val(v, v->params.w, hv->hidden + (size_t)f->vpos[i] * H);
            hv->vnext[i] = f->nvpos[i] >= 0 ? head_val(v, v->params.w, hv->hidden + (size_t)f->nvpos[i] * H) : 0;
        }
        double s = 0;   /* rows first-1 .. first+ntok-2 predict the action's tokens */
        for (int u = 0; u < f->ntok[i]; u++) {
            int row = f->first[i] - 1 + u;
            s += row_logp(hv->logits + (size_t)row * V, V, f->pb.tokens[row + 1]);
        }
        hv->logp_sum[i] = s;
    }
}
static void hvals_free(hvals *hv) { free(hv->hidden); free(hv->logits); }

/* The IQL critic by hand: L_Q, L_V, A = Qbar - V, and the heads' gradients (V(s') constant). */
typedef struct hcritic { double lq, lv, adv[HMAX], q_mean, v_mean; double *gq, *gv; } hcritic;
static void hand_critic(hfix *f, const hvals *hv, m2_head *q, m2_head *v, float gamma, float tau, hcritic *hc) {
    int A = f->A, H = f->m->cfg.dim;
    hc->gq = calloc(q->params.n, sizeof(double));
    hc->gv = calloc(v->params.n, sizeof(double));
    hc->lq = hc->lv = hc->q_mean = hc->v_mean = 0;
    for (int i = 0; i < A; i++) {
        double y = f->r[i] + gamma * (1.0 - f->d[i]) * hv->vnext[i];
        double e = y - hv->q[i];
        hc->lq += e * e / A;
        head_grad(q, hv->hidden + (size_t)f->qpos[i] * H, -2.0 * e / A, hc->gq);
        double u = hv->qbar[i] - hv->v[i], wt = u < 0 ? 1.0 - tau : tau;
        hc->lv += wt * u * u / A;
        head_grad(v, hv->hidden + (size_t)f->vpos[i] * H, -2.0 * wt * u / A, hc->gv);
        hc->adv[i] = u;
        hc->q_mean += hv->q[i] / A;
        hc->v_mean += hv->v[i] / A;
    }
}
static void hcritic_free(hcritic *hc) { free(hc->gq); free(hc->gv); }

static void check_critic(const hfix *f, const m2_step_stats *st, const hcritic *hc, const m2_head *q,
                         const m2_head *v) {
    near_rel("loss_q", st->loss_q, hc->lq, 1e-4);
    near_rel("loss_v", st->loss_v, hc->lv, 1e-4);
    near_rel("q_mean", st->q_mean, hc->q_mean, 1e-4);
    near_rel("v_mean", st->v_mean, hc->v_mean, 1e-4);
    grads_close("q head grad", q->params.g, hc->gq, q->params.n, 1e-3);
    grads_close("v head grad", v->params.g, hc->gv, v->params.n, 1e-3);
}

static double *adapter_grad_copy(const m2_adapter *a) {
    double *g = malloc(a->params.n * sizeof(double));
    for (size_t i = 0; i < a->params.n; i++) g[i] = a->params.g[i];
    return g;
}

/* Score mode's anchor candidates: three per state, told apart by the prefix length (the states of
 * the hand batch have distinct prefixes); counts its calls. */
typedef struct hcands { int32_t c[3][3]; int len[3]; const int32_t *p[3]; int calls; } hcands;
static void hcands_fill(hcands *h, int plen, int32_t eos) {
    for (int i = 0; i < 3; i++) {
        h->len[i] = 2;   /* one letter + EOS: close log-probs, so the draw matters */
        for (int j = 0; j < h->len[i] - 1; j++) h->c[i][j] = 'a' + (plen * 3 + i * 5 + j) % 26;
        h->c[i][h->len[i] - 1] = eos;
        h->p[i] = h->c[i];
    }
}
static int32_t hcands_eos;
static int hand_cands(void *ud, const int32_t *prefix, int plen, const int32_t *const **cand, const int **len, int *n,
                      m2_err *err) {
    (void)prefix; (void)err;
    hcands *h = ud;
    hcands_fill(h, plen, hcands_eos);
    h->calls++;
    *cand = h->p;
    *len = h->len;
    *n = 3;
    return 0;
}

/* Offline step (IQL critic, AWR actor with normalised clipped weights, sampled anchor, mean
 * reduction) against the hand computation; score_mode: a^ is the candidate drawn at temperature 1
 * from the softmax of the candidates' summed log-probs (sys2.action_mode: score). */
static void offline_by_hand(void **state, int score_mode) {
    hfix *f = *state;
    m2_err err = {0};
    enum { MAXT = 4, MAX_SAMPLES = 6 };
    const int SAMPLES = score_mode ? MAX_SAMPLES : 2;   /* score mode: enough draws that one is not the argmax */
    m2_adapter *a = hand_adapter(f, "act", 31);
    m2_head *q = hand_head(f, "q", 41), *v = hand_head(f, "v", 51);
    m2_offline_cfg cfg = {.critic = {.gamma = 0.9f, .expectile = 0.7f},
                          .actor = {.beta = 4.f, .w_max = 2.5f, .lambda = 0.8f, .normalize = 1},
                          .reduce = M2_REDUCE_MEAN, .train_critic = 1, .train_actor = 1,
                          .n_anchor = 0, .anchor_samples = SAMPLES, .max_action_tokens = MAXT,
                          .sampler = {.temperature = 0.f}, .eos_id = f->tok.eos_id};
    hcands hcs = {0};
    hcands_eos = f->tok.eos_id;
    if (score_mode) { cfg.cands = hand_cands; cfg.cands_ud = &hcs; }
    m2_rng hrng;   /* the step's draws (algo/steps.h): one anchor key; sample j draws from its stream 1 + j */
    m2_rng_seed(&hrng, 5);
    uint64_t akey = m2_rng_u64(&hrng);
    int A = f->A, V = f->m->cfg.vocab_size, H = f->m->cfg.dim;
    hvals hv;
    hand_values(f, a, q, v, &hv);
    hcritic hc;
    hand_critic(f, &hv, q, v, cfg.critic.gamma, cfg.critic.expectile, &hc);
    /* the data term: w = min(exp(beta A), w_max) / mean, L = -mean w logp (logp = token mean) */
    double raw[HMAX], wsum = 0, l_data = 0, w[HMAX];
    int nclip = 0, npos = 0, nneg = 0;
    for (int i = 0; i < A; i++) {
        raw[i] = fmin(exp(cfg.actor.beta * hc.adv[i]), cfg.actor.w_max);
        nclip += exp(cfg.actor.beta * hc.adv[i]) >= cfg.actor.w_max;
        npos += hc.adv[i] > 0;
        nneg += hc.adv[i] < 0;
        wsum += raw[i];
    }
    for (int i = 0; i < A; i++) {
        w[i] = raw[i] / (wsum / A);
        l_data += -w[i] * (hv.logp_sum[i] / f->ntok[i]) / A;
    }
    /* the test means something only if both expectile branches and both weight branches occur */
    assert_true(npos > 0 && nneg > 0);
    assert_true(nclip > 0 && nclip < A);
    /* the anchor: a^ = greedy continuation of each state's prefix (cut at MAXT and closed with EOS) */
    int M = A * SAMPLES;
    double l_anchor = 0;
    int32_t *aseq[HMAX * MAX_SAMPLES];
    int alen[HMAX * MAX_SAMPLES], aplen[HMAX * MAX_SAMPLES];
    double aadv[HMAX * MAX_SAMPLES];
    int n_not_argmax = 0;
    for (int j = 0; j < M; j++) {
        int k = j % A;
        int plen = f->vpos[k] - f->seq_off[f->seq[k]] + 1;
        const int32_t *prompt = f->pb.tokens + f->seq_off[f->seq[k]];
        m2_gen_config g = {.max_new_tokens = MAXT, .sampler = cfg.sampler, .stop_tokens = &cfg.eos_id, .n_stop_tokens = 1};
        m2_gen_result res = {0};
        if (score_mode) {
            /* every candidate's summed log-prob by a plain forward of prefix + candidate, then the draw */
            hcands h;
            hcands_fill(&h, plen, f->tok.eos_id);
            float sc[3];
            for (int i = 0; i < 3; i++) {
                int L = plen + h.len[i];
                int32_t *sq = malloc((size_t)L * sizeof *sq);
                memcpy(sq, prompt, (size_t)plen * sizeof *sq);
                memcpy(sq + plen, h.c[i], (size_t)h.len[i] * sizeof *sq);
                m2_batch cb = {.n_seq = 1, .seq_len = &L, .tokens = sq};
                assert_int_equal(m2_forward(f->c2, &cb, a, 0, &err), 0);
                const float *z = m2_ctx_logits(f->c2);
                double lp = 0;
                for (int row = plen - 1; row < L - 1; row++) lp += row_logp(z + (size_t)row * V, V, sq[row + 1]);
                sc[i] = (float)lp;
                free(sq);
            }
            m2_rng sr;   /* one uniform of the sample's stream */
            m2_rng_seed_stream(&sr, akey, 1 + (uint64_t)j);
            int pick = m2_choose_scored(sc, 3, 1.f, &sr);
            n_not_argmax += pick != m2_choose_scored(sc, 3, 0.f, NULL);
            res.tokens = malloc((size_t)h.len[pick] * sizeof *res.tokens);
            memcpy(res.tokens, h.c[pick], (size_t)h.len[pick] * sizeof *res.tokens);
            res.n = h.len[pick];
        } else {
            assert_int_equal(m2_generate(f->m, a, 1, &prompt, &plen, &g, &res, &err), 0);
        }
        int eos = res.n > 0 && res.tokens[res.n - 1] == cfg.eos_id, L = plen + res.n + !eos;
        aseq[j] = malloc((size_t)L * sizeof(int32_t));
        memcpy(aseq[j], prompt, (size_t)plen * sizeof(int32_t));
        memcpy(aseq[j] + plen, res.tokens, (size_t)res.n * sizeof(int32_t));
        if (!eos) aseq[j][L - 1] = cfg.eos_id;
        alen[j] = L;
        aplen[j] = plen;
        m2_gen_result_free(&res);
        m2_batch b = {.n_seq = 1, .seq_len = &alen[j], .tokens = aseq[j]};
        assert_int_equal(m2_forward(f->c2, &b, a, 0, &err), 0);
        const float *z = m2_ctx_logits(f->c2);
        double lp = 0;
        for (int row = plen - 1; row < L - 1; row++) lp += row_logp(z + (size_t)row * V, V, aseq[j][row + 1]);
        lp /= L - plen;
        double qbar_s = head_val(q, q->target, m2_ctx_hidden(f->c2) + (size_t)(L - 1) * H);
        aadv[j] = qbar_s - hv.v[k];   /* A^ = Qbar(s, a^) - V(s) */
        l_anchor += -cfg.actor.lambda * aadv[j] * lp / M;
    }
    /* adapter gradient by hand: the data term's dlogits on the batch, then each anchor's */
    m2_params_zero_grad(&a->params);
    m2_batch b = m2_packed_batch_view(&f->pb);
    assert_int_equal(m2_forward(f->c, &b, a, 1, &err), 0);
    float *dz = m2_ctx_dlogits(f->c);
    for (int i = 0; i < A; i++)
        for (int u = 0; u < f->ntok[i]; u++) {
            int row = f->first[i] - 1 + u;
            row_dlogp(hv.logits + (size_t)row * V, V, f->pb.tokens[row + 1], -w[i] / A / f->ntok[i], dz + (size_t)row * V);
        }
    assert_int_equal(m2_backward(f->c, &err), 0);
    for (int j = 0; j < M; j++) {
        m2_batch ab = {.n_seq = 1, .seq_len = &alen[j], .tokens = aseq[j]};
        assert_int_equal(m2_forward(f->c, &ab, a, 1, &err), 0);
        const float *z = m2_ctx_logits(f->c);
        float *dza = m2_ctx_dlogits(f->c);
        int n_act = alen[j] - aplen[j];
        for (int row = aplen[j] - 1; row < alen[j] - 1; row++)
            row_dlogp(z + (size_t)row * V, V, aseq[j][row + 1], -cfg.actor.lambda * aadv[j] / M / n_act, dza + (size_t)row * V);
        assert_int_equal(m2_backward(f->c, &err), 0);
    }
    double *ga = adapter_grad_copy(a);
    /* the step */
    m2_params_zero_grad(&a->params);
    m2_params_zero_grad(&q->params);
    m2_params_zero_grad(&v->params);
    m2_rng rng;
    m2_rng_seed(&rng, 5);
    m2_step_stats st;
    assert_int_equal(m2_offline_step(f->m, f->c, a, q, v, &f->pb, &cfg, &rng, &st, &err), 0);
    check_critic(f, &st, &hc, q, v);
    double am = 0;
    for (int i = 0; i < A; i++) am += hc.adv[i] / A;
    near_rel("adv_mean", st.adv_mean, am, 1e-4);
    near_rel("w_mean", st.w_mean, 1.0, 1e-5);
    double as2 = 0, ws = 0, ws2 = 0;   /* the spreads (population std) of the advantages and weights */
    for (int i = 0; i < A; i++) { as2 += hc.adv[i] * hc.adv[i] / A; ws += w[i] / A; ws2 += (double)w[i] * w[i] / A; }
    near_rel("adv_std", st.adv_std, sqrt(as2 - am * am), 1e-3);
    near_rel("w_std", st.w_std, sqrt(ws2 - ws * ws), 1e-3);
    near_rel("clip_frac", st.clip_frac, (double)nclip / A, 1e-6);
    near_rel("loss_actor", st.loss_actor, l_data, 1e-4);
    near_rel("loss_anchor", st.loss_anchor, l_anchor, 1e-4);
    near_rel("loss", st.loss, hc.lq + hc.lv + l_data + l_anchor, 1e-4);
    assert_int_equal(st.n_anchor, M);
    if (score_mode) {
        assert_int_equal(hcs.calls, M);
        assert_true(n_not_argmax > 0);   /* the draws are samples, not the greedy choice */
    }
    grads_close("adapter grad (actor + anchor)", a->params.g, ga, a->params.n, 1e-3);
    free(ga);
    for (int j = 0; j < M; j++) free(aseq[j]);
    hcritic_free(&hc);
    hvals_free(&hv);
}
static void offline_step_by_hand(void **state) { offline_by_hand(state, 0); }
static void offline_step_score_mode_by_hand(void **state) { offline_by_hand(state, 1); }

/* Online step (IQL critic, AWAC weights normalised over the batch, exact KL(pi_on || pi_off)) for
 * both reductions against the hand computation. */
static void online_step_by_hand(void **state) {
    hfix *f = *state;
    m2_err err = {0};
    m2_adapter *on = hand_adapter(f, "on", 61), *off = hand_adapter(f, "off", 71);
    m2_head *q = hand_head(f, "q", 81), *v = hand_head(f, "v", 91);
    q->target[q->params.n - 1] += 2.2f;   /* Qbar's output bias: advantages of both signs, some weights clipped */
    int A = f->A, V = f->m->cfg.vocab_size;
    for (int red = 0; red < 2; red++) {
        m2_online_cfg cfg = {.critic = {.gamma = 0.9f, .expectile = 0.7f}, .alpha = 0.25f, .w_max = 2.f, .eta = 0.5f,
                             .reduce = (m2_reduce)red, .train_critic = 1, .train_actor = 1};
        hvals hv, hoff;
        hand_values(f, off, NULL, NULL, &hoff);
        hand_values(f, on, q, v, &hv);
        hcritic hc;
        hand_critic(f, &hv, q, v, cfg.critic.gamma, cfg.critic.expectile, &hc);
        /* w = min(exp(A / alpha), w_max) / mean; L = -mean w logp + eta mean KL */
        double raw[HMAX], wsum = 0, w[HMAX], kl[HMAX], loss = 0, klm = 0;
        int nclip = 0;
        for (int i = 0; i < A; i++) {
            raw[i] = fmin(exp(hc.adv[i] / cfg.alpha), cfg.w_max);
            nclip += exp(hc.adv[i] / cfg.alpha) >= cfg.w_max;
            wsum += raw[i];
        }
        int npos = 0, nneg = 0;
        for (int i = 0; i < A; i++) { npos += hc.adv[i] > 0; nneg += hc.adv[i] < 0; }
        assert_true(npos > 0 && nneg > 0);
        assert_true(nclip > 0 && nclip < A);
        double div = red == M2_REDUCE_MEAN;
        for (int i = 0; i < A; i++) {
            w[i] = raw[i] / (wsum / A);
            kl[i] = 0;
            for (int u = 0; u < f->ntok[i]; u++) {
                int row = f->first[i] - 1 + u;
                kl[i] += row_kl(hv.logits + (size_t)row * V, hoff.logits + (size_t)row * V, V);
            }
            double n = div ? f->ntok[i] : 1;
            loss += (-w[i] * hv.logp_sum[i] / n + cfg.eta * kl[i] / n) / A;
            klm += kl[i] / n / A;
        }
        /* adapter gradient by hand */
        m2_params_zero_grad(&on->params);
        m2_batch b = m2_packed_batch_view(&f->pb);
        assert_int_equal(m2_forward(f->c, &b, on, 1, &err), 0);
        float *dz = m2_ctx_dlogits(f->c);
        for (int i = 0; i < A; i++) {
            double n = div ? f->ntok[i] : 1;
            for (int u = 0; u < f->ntok[i]; u++) {
                int row = f->first[i] - 1 + u;
                const float *zo = hv.logits + (size_t)row * V, *zf = hoff.logits + (size_t)row * V;
                row_dlogp(zo, V, f->pb.tokens[row + 1], -w[i] / A / n, dz + (size_t)row * V);
                row_dkl(zo, zf, V, cfg.eta / A / n, dz + (size_t)row * V);
            }
        }
        assert_int_equal(m2_backward(f->c, &err), 0);
        double *ga = adapter_grad_copy(on);
        /* the step */
        m2_params_zero_grad(&on->params);
        m2_params_zero_grad(&q->params);
        m2_params_zero_grad(&v->params);
        m2_step_stats st;
        assert_int_equal(m2_online_step(f->m, f->c, f->c2, on, off, q, v, &f->pb, &cfg, &st, &err), 0);
        check_critic(f, &st, &hc, q, v);
        double am = 0;
        for (int i = 0; i < A; i++) am += hc.adv[i] / A;
        near_rel("adv_mean", st.adv_mean, am, 1e-4);
        double as2 = 0, ws = 0, ws2 = 0;
        for (int i = 0; i < A; i++) { as2 += hc.adv[i] * hc.adv[i] / A; ws += w[i] / A; ws2 += (double)w[i] * w[i] / A; }
        near_rel("adv_std", st.adv_std, sqrt(as2 - am * am), 1e-3);
        near_rel("w_std", st.w_std, sqrt(ws2 - ws * ws), 1e-3);
        near_rel("w_mean", st.w_mean, 1.0, 1e-5);
        near_rel("loss_actor", st.loss_actor, loss, 1e-4);
        near_rel("loss", st.loss, hc.lq + hc.lv + loss, 1e-4);
        grads_close("adapter grad (AWAC + KL)", on->params.g, ga, on->params.n, 1e-3);
        free(ga);
        hcritic_free(&hc);
        hvals_free(&hv);
        hvals_free(&hoff);
    }
}

/* Dropout must not leak into a comparison of two policies. Online: pi_off runs in pi_on's dropout
 * mode (the same masks), so while the adapters are equal the KL is exactly 0 and its gradient too,
 * with dropout on: the step's gradient with eta = 0.5 equals the one with eta = 0 bit for bit. */
static void online_kl_zero_equal_adapters_dropout(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_lora_config lc = {.name = "on_d", .rank = 2, .alpha = 4.f, .dropout = 0.3f, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *on = m2_adapter_add(f->m, &lc, 4, &err);
    snprintf(lc.name, sizeof lc.name, "off_d");
    m2_adapter *off = m2_adapter_add(f->m, &lc, 5, &err);
    assert_non_null(on);
    assert_non_null(off);
    randomize(&on->params, 0.3f, 104);
    assert_int_equal(m2_adapter_copy_weights(off, on, &err), 0);
    m2_head *q = const_head(f, "qd", 0.3f), *v = const_head(f, "vd", 0.1f);
    m2_online_cfg cfg = {.critic = {.gamma = 0.9f, .expectile = 0.7f}, .alpha = 1.f, .w_max = 20.f, .eta = 0.5f,
                         .reduce = M2_REDUCE_SUM, .train_actor = 1};
    size_t n = on->params.n;
    float *g[3];
    m2_step_stats st;
    for (int run = 0; run < 3; run++) {   /* eta 0.5, eta 0, eta 0 with other dropout masks */
        cfg.eta = run == 0 ? 0.5f : 0.f;
        m2_ctx_seed(f->c, run == 2 ? 99 : 3);
        m2_params_zero_grad(&on->params);
        assert_int_equal(m2_online_step(f->m, f->c, f->c2, on, off, q, v, &f->pb, &cfg, &st, &err), 0);
        if (run == 0) assert_true(st.kl == 0.f);
        g[run] = malloc(n * sizeof(float));
        memcpy(g[run], on->params.g, n * sizeof(float));
    }
    assert_memory_equal(g[0], g[1], n * sizeof(float));          /* the KL's gradient is exactly 0 */
    assert_true(memcmp(g[1], g[2], n * sizeof(float)) != 0);     /* and dropout was on */
    for (int run = 0; run < 3; run++) free(g[run]);
}

/* TeamTR: the new policy is compared with logp_old (a scoring forward) in the same dropout mode, so
 * before any update the ratio is exactly 1: D^ = 0, L^ = 0, nothing clipped, and with A = 0 and the
 * k3 reference at the old policy the gradient is exactly 0 — with dropout on. */
static void ppo_ratio_one_dropout(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_lora_config lc = {.name = "agent_d", .rank = 2, .alpha = 4.f, .dropout = 0.3f, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *a = m2_adapter_add(f->m, &lc, 6, &err);
    assert_non_null(a);
    randomize(&a->params, 0.3f, 106);
    int N = f->pb.N;
    float *old = calloc(N, sizeof(float)), *adv = calloc(N, sizeof(float));
    assert_int_equal(m2_score_logprobs(f->c2, a, &f->pb, old, &err), 0);
    m2_ppo_cfg cfg = {.eps_clip = 0.2f, .kl_coef = 0.1f};
    m2_ctx_seed(f->c, 4);
    m2_params_zero_grad(&a->params);
    m2_step_stats st;
    assert_int_equal(m2_ppo_step(f->c, a, &f->pb, adv, old, old, &cfg, 1, &st, &err), 0);
    assert_true(st.kl == 0.f);
    assert_true(st.surrogate_gain == 0.f);
    assert_true(st.clip_frac == 0.f);
    for (size_t i = 0; i < a->params.n; i++) assert_true(a->params.g[i] == 0.f);
    free(old);
    free(adv);
}

/* Exact D^ through the engine: 0 for equal adapters; for different adapters the mean over the
 * action rows of KL(old || new) recomputed here from the two forwards' logits in double. */
static void token_divergence_engine(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    m2_lora_config lc = {.name = "old", .rank = 4, .alpha = 8, .dropout = 0.2f, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *a = m2_adapter_add(f->m, &lc, 3, &err);
    snprintf(lc.name, sizeof lc.name, "new");
    m2_adapter *b = m2_adapter_add(f->m, &lc, 4, &err);
    assert_non_null(a);
    assert_non_null(b);
    randomize(&a->params, 0.3f, 11);
    assert_int_equal(m2_adapter_copy_weights(b, a, &err), 0);
    m2_ctx *c3 = m2_ctx_create(f->m, 64, 0, &err);
    assert_non_null(c3);
    double D = -1;
    assert_int_equal(m2_token_divergence(f->c2, c3, a, b, &f->pb, &D, &err), 0);
    assert_true(D == 0.0);
    randomize(&b->params, 0.3f, 12);
    assert_int_equal(m2_token_divergence(f->c2, c3, a, b, &f->pb, &D, &err), 0);
    const float *lo = m2_ctx_logits(f->c2), *ln = m2_ctx_logits(c3);
    int V = f->m->cfg.vocab_size;
    double s = 0;
    int n = 0;
    for (int p = 0; p < f->pb.N; p++) {
        if (f->pb.tok_action[p] < 0) continue;
        double mo = -1e30, mn = -1e30, zo = 0, zn = 0, kl = 0;
        for (int v = 0; v < V; v++) { mo = fmax(mo, lo[(size_t)p * V + v]); mn = fmax(mn, ln[(size_t)p * V + v]); }
        for (int v = 0; v < V; v++) { zo += exp(lo[(size_t)p * V + v] - mo); zn += exp(ln[(size_t)p * V + v] - mn); }
        for (int v = 0; v < V; v++) {
            double lpo = lo[(size_t)p * V + v] - mo - log(zo), lpn = ln[(size_t)p * V + v] - mn - log(zn);
            kl += exp(lpo) * (lpo - lpn);
        }
        s += kl;
        n++;
    }
    assert_true(n > 0);
    assert_true(D > 0);
    assert_true(fabs(D - s / n) < 1e-4 * (s / n) + 1e-6);
    /* the direction: KL(old || new) differs from KL(new || old) here */
    double R = -1;
    assert_int_equal(m2_token_divergence(f->c2, c3, b, a, &f->pb, &R, &err), 0);
    assert_true(fabs(R - D) > 1e-4 * D);
    m2_ctx_free(c3);
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
        cmocka_unit_test_setup_teardown(online_kl_zero_equal_adapters_dropout, setup, teardown),
        cmocka_unit_test_setup_teardown(ppo_ratio_one_dropout, setup, teardown),
        cmocka_unit_test_setup_teardown(token_divergence_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(offline_step_by_hand, setup_hand, teardown_hand),
        cmocka_unit_test_setup_teardown(offline_step_score_mode_by_hand, setup_hand, teardown_hand),
        cmocka_unit_test_setup_teardown(online_step_by_hand, setup_hand, teardown_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
