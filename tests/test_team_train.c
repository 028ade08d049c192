/* The TeamTR stage loop (algo/team_train.h) on a tiny random model: the trust region's line search
 * and roll-back keep D^ <= delta, stale runs reuse the stage's first rollouts while TeamTR re-samples
 * after every agent's update (counted), JOINT with no trust region equals STALE, HAPPO's factor
 * changes the later agents' updates, and the rank-correlation / violation-rate summaries. */
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
#include "algo/team_train.h"

typedef struct fx {
    m2_model *m;
    m2_tok_iface tok;
    m2_team team;
    m2_teamtr tt;
    m2_qa_set qs;
    m2_team_qa qa;
} fx;

/* A shaped reward with signal for a random model: 1 when the last message's first byte is even. */
static float even_first_byte(void *ud, const m2_qa *q, const m2_team_sample *s) {
    (void)ud;
    (void)q;
    const char *m = s->msg[s->n_turns - 1];
    return m && m[0] && ((unsigned char)m[0] % 2 == 0) ? 1.f : 0.f;
}

static int setup_n(void **state, int n) {
    fx *f = calloc(1, sizeof *f);
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = 256;   /* a three-agent transcript of the byte tokenizer */
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    f->m = m2_model_create(&cfg, &o, &err);
    assert_non_null(f->m);
    m2_model_init_random(f->m, 5, 0.2f);
    m2_byte_tok_iface(&f->tok, M2_BOS_NONE);
    f->team = (m2_team){.n = n, .protocol = M2_TEAM_CHAIN, .order = M2_TEAM_ROUND_ROBIN};
    for (int k = 0; k < n; k++) {
        m2_lora_config lc = {.rank = 4, .alpha = 8, .targets = M2_LORA_Q | M2_LORA_V};
        snprintf(lc.name, sizeof lc.name, "agent%d", k);
        m2_adapter *a = m2_adapter_add(f->m, &lc, 20 + (uint64_t)k, &err);
        snprintf(lc.name, sizeof lc.name, "agent%d_old", k);
        m2_adapter *b = m2_adapter_add(f->m, &lc, 40 + (uint64_t)k, &err);
        assert_non_null(a);
        assert_non_null(b);
        m2_adapter_set_trainable(b, 0, &err);
        f->team.agent[k] = (m2_team_agent){.model = f->m, .adapter = a, .tok = &f->tok};
        f->tt.old[k] = b;
    }
    m2_teamtr_set_team(&f->tt, &f->team);
    assert_int_equal(m2_qa_arith(1, M2_QA_SPLIT_TRAIN, 4, 200, 2, 2, &f->qs, &err), 0);
    f->qa = (m2_team_qa){.team = &f->team, .qs = &f->qs, .reward = even_first_byte};
    f->tt.src = m2_team_qa_source(&f->qa);
    *state = f;
    return 0;
}
static int setup2(void **state) { return setup_n(state, 2); }
static int setup3(void **state) { return setup_n(state, 3); }

static int teardown(void **state) {
    fx *f = *state;
    m2_teamtr_free(&f->tt);
    m2_team_qa_free(&f->qa);
    m2_qa_set_free(&f->qs);
    m2_model_free(f->m);
    free(f);
    return 0;
}

static m2_teamtr_cfg base_cfg(void) {
    return (m2_teamtr_cfg){.mode = M2_TT_FRESH, .group = 4, .epochs = 3, .lr = 1e-2f, .grad_clip = 1.f,
                           .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .clip = 0.2f, .delta = 0.01,
                           .backtrack = 6, .a_max = 5.f, .adv_eps = 1e-6f,
                           .gen = {.sampler = {.temperature = 1.f}, .max_new_tokens = 4, .seed = 3}};
}

static const int tasks[4] = {0, 1, 2, 3};

/* A step far too large for delta: the line search or the roll-back brings D^ back to <= delta. */
static void rollback_keeps_region(void **state) {
    fx *f = *state;
    m2_err err = {0};
    m2_teamtr_cfg cfg = base_cfg();
    cfg.lr = 0.5f;
    cfg.delta = 1e-3;
    cfg.epochs = 1;   /* a roll back returns to the weights before the update */
    const int sigma[2] = {1, 0};
    int outside = 0, rolled = 0;
    for (int stage = 0; stage < 2; stage++) {
        m2_teamtr_stage_stats st;
        cfg.backtrack = stage == 0 ? 0 : 6;   /* stage 0: roll back at once; stage 1: line search first */
        /* snapshot the weights to see a roll back restore them exactly */
        float *w0[2];
        for (int k = 0; k < 2; k++) {
            m2_params *p = &f->team.agent[k].adapter->params;
            w0[k] = malloc(p->n * sizeof(float));
            memcpy(w0[k], p->w, p->n * sizeof(float));
        }
        { int rc_ = m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 100 + (uint64_t)stage, &cfg, &st, &err); if (rc_) fprintf(stderr, "err: %s\n", err.msg); assert_int_equal(rc_, 0); }
        assert_int_equal(st.n, 2);
        for (int j = 0; j < 2; j++) {
            const m2_teamtr_update *u = &st.u[j];
            assert_int_equal(u->agent, sigma[j]);
            assert_true(u->n_tokens > 0);
            assert_true(u->D >= 0);
            assert_true(u->D <= cfg.delta);
            outside += u->out_of_region;
            if (u->out_of_region) assert_true(u->D_raw > cfg.delta);
            if (u->rolled_back) {
                rolled++;
                assert_true(u->D == 0.0);
                m2_params *p = &f->team.agent[u->agent].adapter->params;
                /* back to the weights before the update, bit for bit */
                assert_memory_equal(p->w, w0[u->agent], p->n * sizeof(float));
            }
            if (stage == 0 && u->out_of_region) assert_int_equal(u->rolled_back, 1);
        }
        for (int k = 0; k < 2; k++) free(w0[k]);
    }
    assert_true(outside > 0);
    assert_true(rolled > 0);
}

/* Without a region the same step leaves it (the region above really did the work). */
static void no_region_leaves_it(void **state) {
    fx *f = *state;
    m2_err err = {0};
    m2_teamtr_cfg cfg = base_cfg();
    cfg.lr = 0.5f;
    cfg.delta = INFINITY;
    const int sigma[2] = {0, 1};
    m2_teamtr_stage_stats st;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 100, &cfg, &st, &err), 0);
    double dmax = 0;
    for (int j = 0; j < 2; j++) {
        assert_int_equal(st.u[j].out_of_region, 0);
        assert_int_equal(st.u[j].rolled_back, 0);
        assert_true(st.u[j].D == st.u[j].D_raw);
        if (st.u[j].D > dmax) dmax = st.u[j].D;
    }
    assert_true(dmax > 1e-3);
}

/* Rollout counts: TeamTR plays G x tasks per agent, stale variants and joint once per stage; the
 * rewards each stale update sees are the stage's first ones. */
static void rollout_counts(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int sigma[3] = {2, 0, 1};
    const int modes[4] = {M2_TT_FRESH, M2_TT_STALE, M2_TT_STALE_HAPPO, M2_TT_JOINT};
    for (int mi = 0; mi < 4; mi++) {
        m2_teamtr_cfg cfg = base_cfg();
        cfg.mode = modes[mi];
        m2_teamtr_stage_stats st;
        assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 7, &cfg, &st, &err), 0);
        assert_int_equal(st.n, 3);
        long want = modes[mi] == M2_TT_FRESH ? 3L * 4 * 4 : 4L * 4;
        assert_int_equal(st.rollouts, want);
        if (modes[mi] != M2_TT_FRESH)
            for (int j = 1; j < 3; j++) assert_true(st.u[j].reward_mean == st.u[0].reward_mean);
    }
}

/* TeamTR's later agents train on rollouts of the updated team: with the first agent's update
 * made large, the second agent's rollouts (and so its rewards or tokens) differ from the stage's
 * first batch, while a stale run gives it the first batch itself. */
static void fresh_resamples(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int sigma[3] = {0, 1, 2};
    m2_teamtr_cfg cfg = base_cfg();
    cfg.delta = INFINITY;
    cfg.lr = 0.3f;
    cfg.epochs = 4;
    /* keep the start weights to run both modes from the same team */
    size_t n[3];
    float *w[3];
    for (int k = 0; k < 3; k++) {
        m2_params *p = &f->team.agent[k].adapter->params;
        n[k] = p->n;
        w[k] = malloc(p->n * sizeof(float));
        memcpy(w[k], p->w, p->n * sizeof(float));
    }
    m2_teamtr_stage_stats fr, stl;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 9, &cfg, &fr, &err), 0);
    for (int k = 0; k < 3; k++) {
        memcpy(f->team.agent[k].adapter->params.w, w[k], n[k] * sizeof(float));
        f->team.agent[k].adapter->params.step = 0;
        memset(f->team.agent[k].adapter->params.m, 0, n[k] * sizeof(float));
        memset(f->team.agent[k].adapter->params.v, 0, n[k] * sizeof(float));
    }
    cfg.mode = M2_TT_STALE;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 9, &cfg, &stl, &err), 0);
    /* the first update sees the same rollouts in both (same team, same first batch) */
    assert_true(fr.u[0].reward_mean == stl.u[0].reward_mean);
    assert_true(fr.u[0].L == stl.u[0].L);
    /* later ones do not: fresh rollouts of the changed team */
    int differ = 0;
    for (int j = 1; j < 3; j++) differ += fr.u[j].L != stl.u[j].L || fr.u[j].n_tokens != stl.u[j].n_tokens;
    assert_true(differ > 0);
    for (int k = 0; k < 3; k++) free(w[k]);
}

/* Copies of every agent's weights and AdamW state. */
typedef struct snap { float *w[M2_TEAM_MAX]; size_t n[M2_TEAM_MAX]; } snap;
static void snap_take(fx *f, snap *s) {
    for (int k = 0; k < f->team.n; k++) {
        m2_params *p = &f->team.agent[k].adapter->params;
        s->n[k] = p->n;
        s->w[k] = malloc(p->n * sizeof(float));
        memcpy(s->w[k], p->w, p->n * sizeof(float));
    }
}
static void snap_restore(fx *f, const snap *s) {
    for (int k = 0; k < f->team.n; k++) {
        m2_params *p = &f->team.agent[k].adapter->params;
        memcpy(p->w, s->w[k], s->n[k] * sizeof(float));
        p->step = 0;
        if (p->m) memset(p->m, 0, p->n * sizeof(float));
        if (p->v) memset(p->v, 0, p->n * sizeof(float));
    }
}
static void snap_free(snap *s, int n) { for (int k = 0; k < n; k++) free(s->w[k]); }

/* JOINT without a region is STALE (each agent's loss depends on its own adapter only); HAPPO's
 * factor changes every update after the first. */
static void joint_stale_happo(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int sigma[2] = {0, 1};
    m2_teamtr_cfg cfg = base_cfg();
    cfg.delta = INFINITY;
    cfg.lr = 0.05f;
    snap s0, sj, ss;
    snap_take(f, &s0);
    m2_teamtr_stage_stats st;
    cfg.mode = M2_TT_JOINT;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 3, &cfg, &st, &err), 0);
    snap_take(f, &sj);
    snap_restore(f, &s0);
    cfg.mode = M2_TT_STALE;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 3, &cfg, &st, &err), 0);
    snap_take(f, &ss);
    for (int k = 0; k < 2; k++) assert_memory_equal(sj.w[k], ss.w[k], sj.n[k] * sizeof(float));
    snap_restore(f, &s0);
    cfg.mode = M2_TT_STALE_HAPPO;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 3, &cfg, &st, &err), 0);
    m2_params *p0 = &f->team.agent[0].adapter->params, *p1 = &f->team.agent[1].adapter->params;
    assert_memory_equal(p0->w, ss.w[0], ss.n[0] * sizeof(float));   /* the first agent: no factor yet */
    assert_memory_not_equal(p1->w, ss.w[1], ss.n[1] * sizeof(float));
    snap_free(&s0, 2);
    snap_free(&sj, 2);
    snap_free(&ss, 2);
}

/* An update trained and scored in parts (cfg.max_batch_tokens: ~2 sequences a part, and 1 token:
 * every sequence a part alone, longer than the budget) is the one-part update up to float rounding:
 * the gradient summed over the parts in another order gives the same weights within 1e-6 (measured
 * 3e-8), D^ before and after the line search within 1e-3 relative (measured up to 1.2e-4 over
 * stage seeds 11-13: D^ ~1e-3 is a small difference of log-probs), L^ and the loss within 1e-4
 * (measured 5e-6), and the same line-search path (out of the region, halvings, roll-back).
 * STALE: both agents see the same rollouts whatever the first agent's weights, so the two updates
 * compare. Stage seed 12: the batch's last group has rewards that differ, so its last part carries
 * gradient (with seed 11 it had none, and a loop that dropped the last part went unseen). */
static void parts_equal_one_batch(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int sigma[2] = {0, 1};
    m2_teamtr_cfg cfg = base_cfg();
    cfg.mode = M2_TT_STALE;
    cfg.lr = 0.02f;   /* every update leaves the region and the line search brings it back (D^ ~6e-4, 2 halvings) */
    cfg.delta = 1e-3;
    cfg.epochs = 3;
    const int budget[3] = {0, 100, 1};
    snap s0, s[3];
    m2_teamtr_stage_stats st[3];
    snap_take(f, &s0);
    for (int b = 0; b < 3; b++) {
        snap_restore(f, &s0);
        cfg.max_batch_tokens = budget[b];
        assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 4, sigma, f->team.n, 12, &cfg, &st[b], &err), 0);
        snap_take(f, &s[b]);
    }
    int searched = 0;
    for (int b = 1; b < 3; b++) {
        assert_int_equal(st[b].n, 2);
        for (int j = 0; j < 2; j++) {
            const m2_teamtr_update *u = &st[b].u[j], *u0 = &st[0].u[j];
            assert_int_equal(u->n_tokens, u0->n_tokens);
            assert_int_equal(u->out_of_region, u0->out_of_region);
            assert_int_equal(u->backtracks, u0->backtracks);
            assert_int_equal(u->rolled_back, u0->rolled_back);
            searched += u->backtracks;
            if (getenv("M2T_VERBOSE"))
                fprintf(stderr, "budget %d update %d: D_raw %.9g (%.9g) D %.9g (%.9g) L %.9g (%.9g) halvings %d\n", budget[b],
                        j, u->D_raw, u0->D_raw, u->D, u0->D, u->L, u0->L, u->backtracks);
            assert_true(fabs(u->D_raw - u0->D_raw) <= 1e-3 * u0->D_raw);
            assert_true(fabs(u->D - u0->D) <= 1e-3 * u0->D);
            assert_true(fabs(u->L - u0->L) <= 1e-4 * fabs(u0->L));
            assert_true(fabs(u->loss - u0->loss) <= 1e-4 * fabs(u0->loss) + 1e-9);
        }
        for (int k = 0; k < 2; k++) {
            double dmax = 0;
            for (size_t i = 0; i < s0.n[k]; i++) {
                double d = fabs((double)s[b].w[k][i] - s[0].w[k][i]);
                if (d > dmax) dmax = d;
            }
            if (getenv("M2T_VERBOSE")) fprintf(stderr, "budget %d agent %d: max |dw| %.3g\n", budget[b], k, dmax);
            assert_true(dmax <= 1e-6);
        }
    }
    assert_true(searched > 0);   /* the line search did act, alike in every partition */
    /* the update moved the weights (the comparison above is not of two unchanged adapters) */
    assert_memory_not_equal(s[0].w[0], s0.w[0], s0.n[0] * sizeof(float));
    snap_free(&s0, 2);
    for (int b = 0; b < 3; b++) snap_free(&s[b], 2);
}

/* Spearman by hand: x = (1, 2, 3, 4), y = (10, 30, 20, 40): ranks (1,2,3,4) vs (1,3,2,4),
 * d^2 = 0+1+1+0 = 2, rho = 1 - 6*2/(4*15) = 0.8. Ties: y = (1, 1, 2, 2) -> ranks (1.5,1.5,3.5,3.5),
 * rho = cov/sd = 0.894427. Violations: certificates above the gains. */
static void summaries(void **state) {
    (void)state;
    const double x[4] = {1, 2, 3, 4}, y[4] = {10, 30, 20, 40}, t[4] = {1, 1, 2, 2}, c[4] = {5, 5, 5, 5};
    assert_true(fabs(m2_rank_correlation(x, y, 4) - 0.8) < 1e-12);
    assert_true(fabs(m2_rank_correlation(x, t, 4) - 0.894427191) < 1e-9);
    assert_true(fabs(m2_rank_correlation(y, x, 4) - 0.8) < 1e-12);
    assert_true(m2_rank_correlation(x, c, 4) == 0.0);
    assert_true(m2_rank_correlation(x, y, 1) == 0.0);
    const double cert[4] = {0.1, -0.2, 0.5, 0.0}, gain[4] = {0.0, 0.1, 0.2, 0.0};
    assert_true(m2_violation_rate(cert, gain, 4) == 0.5);
    assert_true(m2_violation_rate(cert, gain, 0) == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(rollback_keeps_region, setup2, teardown),
        cmocka_unit_test_setup_teardown(no_region_leaves_it, setup2, teardown),
        cmocka_unit_test_setup_teardown(rollout_counts, setup3, teardown),
        cmocka_unit_test_setup_teardown(fresh_resamples, setup3, teardown),
        cmocka_unit_test_setup_teardown(joint_stale_happo, setup2, teardown),
        cmocka_unit_test_setup_teardown(parts_equal_one_batch, setup2, teardown),
        cmocka_unit_test(summaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
