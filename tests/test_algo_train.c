/* algo/train: the stage loops on a tiny model — SFT with validation and early stopping, offline RL
 * resumed from a mid-run snapshot bit for bit, online refinement with collection + replay + AWAC/KL.
 * (Resuming through a checkpoint folder is the pipeline's, tested in test_pipe_train.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "offline_opts.h"
#include "agent/agent.h"
#include "algo/algo.h"
#include "data/data.h"
#include "model/model.h"

static m2_model *tiny_model(void) {
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = 256;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_non_null(m);
    m2_model_init_random(m, 3, 0.2f);
    return m;
}

/* 12 two-step segments: sub-goal g{k%3}; actions depend on it, the last one flags done (r = 1). */
static void make_set(m2_seqset *s, const m2_tok_iface *tok, m2_traj *keep, int *success) {
    m2_err err = {0};
    m2_seqset_init(s);
    for (int k = 0; k < 12; k++) {
        m2_traj t;
        char buf[64];
        m2_traj_init(&t);
        snprintf(buf, sizeof buf, "L Subtask: g%d", k % 3);
        m2_traj_set_prompt(&t, buf, &err);
        m2_traj_push_state(&t, "Obs: s", &err);
        snprintf(buf, sizeof buf, "a%d; False", k % 3);
        m2_traj_push_action(&t, buf, 0.f, 0.f, &err);
        m2_traj_push_state(&t, "Obs: t", &err);
        snprintf(buf, sizeof buf, "b%d; True", k % 3);
        m2_traj_push_action(&t, buf, 1.f, 1.f, &err);
        m2_traj_push_state(&t, "Obs: u", &err);
        assert_int_equal(m2_seqset_add(s, tok, &t, 0, &err), 0);
        if (keep) { keep[k] = t; success[k] = 1; } else m2_traj_free(&t);
    }
}

typedef struct logbook { int calls; double last_loss, first_loss; double last_kl; int saw_kl; } logbook;
static int log_fn(void *ud, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    logbook *b = ud;
    b->calls++;
    for (int i = 0; i < n; i++) {
        if (strstr(names[i], "/loss") && !strstr(names[i], "val")) {
            if (b->calls == 1 || b->first_loss == 0) b->first_loss = v[i];
            b->last_loss = v[i];
        }
        if (strstr(names[i], "/kl")) { b->last_kl = v[i]; b->saw_kl = 1; assert_true(isfinite(v[i])); }
        assert_true(isfinite(v[i]));
    }
    return 0;
}

static void sft_trains_and_stops(void **state) {
    m2_err err = {0};
    m2_model *m = tiny_model();
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int *tr, *va, nt, nv;
    assert_int_equal(m2_seqset_split(set.n, 0.2, 5, &tr, &nt, &va, &nv, &err), 0);
    assert_int_equal(nv, 2);   /* round(0.2 * 12) */
    assert_int_equal(nt, 10);
    m2_lora_config lc = {.name = "sys2", .rank = 4, .alpha = 8.f, .targets = M2_LORA_ALL};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
    m2_ctx *c = m2_ctx_create(m, 512, 1, &err), *cv = m2_ctx_create(m, 512, 0, &err);
    float *best = malloc(a->params.n * sizeof(float));
    m2_sft_opts o = {.opt = {.lr = 1e-2f, .grad_clip = 1.f}, .reduce = M2_REDUCE_MEAN, .batch = 4, .epochs = 5,
                     .eval_every = 0, .patience = 0, .seed = 9, .prefix = "sys2_warmup"};
    m2_train_state st;
    m2_train_state_init(&st);
    logbook lb = {0};
    m2_train_hooks h = {.ud = &lb, .log = log_fn};
    assert_int_equal(m2_train_sft(c, cv, a, &set, tr, nt, va, nv, &o, &st, best, &h, &err), 0);
    assert_int_equal(st.step, 15);        /* 5 epochs x ceil(10 / 4) batches */
    assert_true(isfinite(st.best_val));
    assert_true(lb.last_loss < 0.5 * lb.first_loss);
    /* early stopping: with lr 0 the validation loss never improves after the first validation, so
     * patience 2 stops after the third epoch */
    m2_train_state_init(&st);
    o.opt.lr = 0.f;
    o.patience = 2;
    o.epochs = 50;
    assert_int_equal(m2_train_sft(c, cv, a, &set, tr, nt, va, nv, &o, &st, best, &h, &err), 0);
    assert_true(st.stopped);
    assert_int_equal(st.step, 9);
    assert_int_equal(st.bad_evals, 2);
    assert_memory_equal(best, a->params.w, a->params.n * sizeof(float));
    free(best);
    free(tr);
    free(va);
    m2_ctx_free(c);
    m2_ctx_free(cv);
    m2_seqset_free(&set);
    m2_model_free(m);
}

/* ---- stage-0 pre-training through the one loop ---- */

typedef struct lmbook { int n; double lr[16], gnorm[16], tokens[16], loss[16]; } lmbook;
static int lm_log(void *ud, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    lmbook *b = ud;
    assert_true(step >= 1 && step <= 16);
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "pretrain/lr")) b->lr[step - 1] = v[i];
        else if (!strcmp(names[i], "pretrain/grad_norm")) b->gnorm[step - 1] = v[i];
        else if (!strcmp(names[i], "pretrain/tokens")) b->tokens[step - 1] = v[i];
        else if (!strcmp(names[i], "pretrain/loss")) b->loss[step - 1] = v[i];
        else fail_msg("unexpected metric %s", names[i]);
    }
    b->n++;
    return 0;
}

static m2_model *tiny_base(void) {
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = 256;
    m2_model_opts o = {.dtype = M2_DT_F32, .train_base = 1, .threads = 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_non_null(m);
    m2_model_init_random(m, 3, 0.2f);
    return m;
}

/* m2_train_lm logs the schedule's rate at each 0-based step (warm-up, then cosine to min_lr), the
 * pre-clip gradient norm and the batch's tokens; a run stopped after 3 steps and continued from its
 * state ends with the straight run's base weights and moments bit for bit. */
static void lm_schedule_and_resume(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int idx[12];
    for (int i = 0; i < 12; i++) idx[i] = i;
    enum { STEPS = 7 };
    m2_lm_opts o = {.opt = {.lr = 1e-3f, .weight_decay = 0.1f, .grad_clip = 0.5f, .decay = M2_DECAY_COSINE,
                            .warmup = 2, .min_lr = 1e-4f, .total = STEPS},
                    .batch = 5, .steps = STEPS, .seed = 3, .prefix = "pretrain"};
    m2_lr_schedule sched = {.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 2, .total = STEPS, .decay = M2_DECAY_COSINE};
    m2_model *A = tiny_base(), *B = tiny_base();
    m2_ctx *ca = m2_ctx_create(A, 512, 1, &err), *cb = m2_ctx_create(B, 512, 1, &err);
    lmbook la = {0}, lb = {0};
    m2_train_hooks ha = {.ud = &la, .log = lm_log}, hb = {.ud = &lb, .log = lm_log};
    m2_train_state sa, sb;
    m2_train_state_init(&sa);
    m2_train_state_init(&sb);
    assert_int_equal(m2_train_lm(A, ca, NULL, &set, idx, 12, &o, &sa, &ha, &err), 0);
    assert_int_equal(sa.step, STEPS);
    assert_int_equal(la.n, STEPS);
    for (int k = 0; k < STEPS; k++) {
        assert_true(la.lr[k] == m2_lr_at(&sched, k));
        assert_true(la.gnorm[k] > 0.5);       /* clipped: the norm logged is the one before */
        assert_true(la.tokens[k] > 0);
    }
    assert_true(la.lr[1] > la.lr[0] && la.lr[STEPS - 1] < la.lr[2]);   /* warm-up, then decay */
    assert_int_equal(sa.epoch, 2);        /* 7 batches of 5 over 12 sequences: 3 per epoch */
    /* B: 3 steps, then continued from its state (the same objects: weights, moments, cursor) */
    o.steps = 3;
    assert_int_equal(m2_train_lm(B, cb, NULL, &set, idx, 12, &o, &sb, &hb, &err), 0);
    assert_int_equal(sb.step, 3);
    o.steps = STEPS;
    assert_int_equal(m2_train_lm(B, cb, NULL, &set, idx, 12, &o, &sb, &hb, &err), 0);
    assert_int_equal(sb.step, STEPS);
    assert_memory_equal(A->base.w, B->base.w, A->base.n * sizeof(float));
    assert_memory_equal(A->base.m, B->base.m, A->base.n * sizeof(float));
    assert_memory_equal(la.loss, lb.loss, sizeof la.loss);
    /* steps = 0 trains nothing */
    m2_train_state s0;
    m2_train_state_init(&s0);
    o.steps = 0;
    assert_int_equal(m2_train_lm(B, cb, NULL, &set, idx, 12, &o, &s0, &hb, &err), 0);
    assert_int_equal(s0.step, 0);
    m2_ctx_free(ca);
    m2_ctx_free(cb);
    m2_model_free(A);
    m2_model_free(B);
    m2_seqset_free(&set);
}

/* ---- resume ---- */

typedef struct snap { m2_params p[3]; float *target[2]; m2_train_state st; m2_rng rng; } snap;

static void params_copy(m2_params *dst, const m2_params *src) {
    m2_err err = {0};
    assert_int_equal(m2_params_init(dst, src->n, 1, &err), 0);
    memcpy(dst->w, src->w, src->n * sizeof(float));
    if (src->m) {
        assert_int_equal(m2_params_alloc_moments(dst, &err), 0);
        memcpy(dst->m, src->m, src->n * sizeof(float));
        memcpy(dst->v, src->v, src->n * sizeof(float));
    }
    dst->step = src->step;
}

static void params_restore(m2_params *dst, const m2_params *src) {
    m2_err err = {0};
    memcpy(dst->w, src->w, src->n * sizeof(float));
    if (src->m) {
        assert_int_equal(m2_params_alloc_moments(dst, &err), 0);
        memcpy(dst->m, src->m, src->n * sizeof(float));
        memcpy(dst->v, src->v, src->n * sizeof(float));
    }
    dst->step = src->step;
}

typedef struct offline_run { m2_model *m; m2_adapter *a; m2_head *q, *v; m2_ctx *c; } offline_run;

static offline_run offline_setup(void) {
    m2_err err = {0};
    offline_run r;
    r.m = tiny_model();
    m2_lora_config lc = {.name = "sys2", .rank = 2, .alpha = 4.f, .targets = M2_LORA_Q | M2_LORA_V};
    r.a = m2_adapter_add(r.m, &lc, 1, &err);
    r.q = m2_head_add(r.m, "q", 2, &err);
    r.v = m2_head_add(r.m, "v", 3, &err);
    r.q->grad_to_body = r.v->grad_to_body = 0;
    r.c = m2_ctx_create(r.m, 512, 1, &err);
    assert_non_null(r.c);
    return r;
}

static void offline_free(offline_run *r) {
    m2_ctx_free(r->c);
    m2_model_free(r->m);
}

/* batch 4, one anchor sample on one state a step */
static m2_offline_opts offline_opts(int64_t max_steps) { return m2t_offline_opts(4, 1, 1, 100, max_steps); }

static void offline_resume_bit_exact(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int idx[12];
    for (int i = 0; i < 12; i++) idx[i] = i;
    /* A: 7 steps straight (crosses an epoch boundary at step 3) */
    offline_run A = offline_setup();
    m2_offline_opts o = offline_opts(7);
    m2_train_state st;
    m2_train_state_init(&st);
    m2_rng rng;
    m2_rng_seed(&rng, 77);
    logbook lb = {0};
    m2_train_hooks h = {.ud = &lb, .log = log_fn};
    assert_int_equal(m2_train_offline(A.m, A.c, A.a, A.q, A.v, &set, idx, 12, &o, &st, &rng, &h, &err), 0);
    assert_int_equal(st.step, 7);
    /* B: 4 steps, then a snapshot of everything a checkpoint holds */
    offline_run B = offline_setup();
    o.max_steps = 4;
    m2_train_state sb;
    m2_train_state_init(&sb);
    m2_rng rb;
    m2_rng_seed(&rb, 77);
    assert_int_equal(m2_train_offline(B.m, B.c, B.a, B.q, B.v, &set, idx, 12, &o, &sb, &rb, &h, &err), 0);
    snap s;
    params_copy(&s.p[0], &B.a->params);
    params_copy(&s.p[1], &B.q->params);
    params_copy(&s.p[2], &B.v->params);
    s.target[0] = malloc(B.q->params.n * sizeof(float));
    s.target[1] = malloc(B.v->params.n * sizeof(float));
    memcpy(s.target[0], B.q->target, B.q->params.n * sizeof(float));
    memcpy(s.target[1], B.v->target, B.v->params.n * sizeof(float));
    s.st = sb;
    s.rng = rb;
    offline_free(&B);
    /* C: a fresh process restores the snapshot and runs to 7 */
    offline_run C = offline_setup();
    params_restore(&C.a->params, &s.p[0]);
    params_restore(&C.q->params, &s.p[1]);
    params_restore(&C.v->params, &s.p[2]);
    memcpy(C.q->target, s.target[0], C.q->params.n * sizeof(float));
    memcpy(C.v->target, s.target[1], C.v->params.n * sizeof(float));
    m2_train_state sc = s.st;
    m2_rng rc = s.rng;
    o.max_steps = 7;
    assert_int_equal(m2_train_offline(C.m, C.c, C.a, C.q, C.v, &set, idx, 12, &o, &sc, &rc, &h, &err), 0);
    assert_int_equal(sc.step, 7);
    assert_memory_equal(C.a->params.w, A.a->params.w, A.a->params.n * sizeof(float));
    assert_memory_equal(C.q->params.w, A.q->params.w, A.q->params.n * sizeof(float));
    assert_memory_equal(C.v->target, A.v->target, A.v->params.n * sizeof(float));
    assert_memory_equal(C.a->params.m, A.a->params.m, A.a->params.n * sizeof(float));
    assert_true(sc.epoch == st.epoch && sc.pos == st.pos);
    for (int i = 0; i < 3; i++) m2_params_free(&s.p[i]);
    free(s.target[0]);
    free(s.target[1]);
    offline_free(&A);
    offline_free(&C);
    m2_seqset_free(&set);
}

/* ---- online on a tiny fake env: "press" until the counter reaches 2 ---- */
typedef struct press { m2_env base; int n; char obs[32]; } press;
extern const m2_env_class press_class;
static int pr_create(m2_env **out, const char *d, m2_err *err) {
    press *p = calloc(1, sizeof *p);
    p->base.cls = &press_class;
    *out = &p->base;
    return 0;
}
static void pr_destroy(m2_env *e) { free(e); }
static int pr_num(m2_env *e, const char *t, m2_split s, m2_err *err) { return 3; }
static int pr_resets[16], pr_n_resets;   /* the episode indices the online collection played */
static int pr_reset(m2_env *e, const char *t, m2_split s, int i, uint64_t seed, m2_step_result *r, m2_err *err) {
    press *p = (press *)e;
    if (pr_n_resets < 16) pr_resets[pr_n_resets++] = i;
    p->n = 0;
    strcpy(p->obs, "c0");
    *r = (m2_step_result){p->obs, 0, 0, 0, 0, 1};
    return 0;
}
static const char *pr_task(const m2_env *e) { return "P"; }
static int pr_step(m2_env *e, const char *a, m2_step_result *r) {
    press *p = (press *)e;
    int ok = !strcmp(a, "press");
    if (ok) p->n++;
    snprintf(p->obs, sizeof p->obs, "c%d", p->n);
    *r = (m2_step_result){p->obs, p->n >= 2 ? 1.f : 0.f, p->n >= 2, (float)(p->n >= 2), p->n >= 2, ok};
    return 0;
}
const m2_env_class press_class = {.name = "press", .create = pr_create, .destroy = pr_destroy,
    .num_episodes = pr_num, .reset = pr_reset, .task_text = pr_task, .step = pr_step};

static int planner(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    *out = strdup("press twice");
    *np = 1; *ng = 1;
    return 0;
}

static void online_loop_runs(void **state) {
    m2_err err = {0};
    m2_model *m = tiny_model();
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_lora_config lc = {.name = "on", .rank = 2, .alpha = 4.f, .targets = M2_LORA_Q | M2_LORA_V}, lo = {.name = "off", .rank = 2, .alpha = 4.f, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *on = m2_adapter_add(m, &lc, 1, &err), *off = m2_adapter_add(m, &lo, 1, &err);
    m2_rng r;
    m2_rng_seed(&r, 2);
    for (size_t i = 0; i < on->params.n; i++) on->params.w[i] = off->params.w[i] = 0.3f * m2_rng_normal(&r);
    float *off_before = malloc(off->params.n * sizeof(float));
    memcpy(off_before, off->params.w, off->params.n * sizeof(float));
    m2_head *q = m2_head_add(m, "q", 2, &err), *v = m2_head_add(m, "v", 3, &err);
    m2_ctx *con = m2_ctx_create(m, 512, 1, &err), *coff = m2_ctx_create(m, 512, 0, &err);
    /* buffer seeded with the synthetic successes */
    m2_seqset set;
    m2_traj segs[12];
    int succ[12];
    make_set(&set, &tok, segs, succ);
    m2_replay buf;
    assert_int_equal(m2_replay_init(&buf, 64, 0.5f, 5, &err), 0);
    assert_int_equal(m2_replay_seed_offline(&buf, segs, succ, 12, 6, &err), 6);
    m2_env *env;
    pr_create(&env, NULL, &err);
    m2_model_policy mp = {.model = m, .sys1 = NULL, .sys2 = on, .tok = &tok, .sampler = {1.f, 0, 0.f}, .max_new_tokens = 8, .seed = 11};
    m2_policy s1 = {.generate = planner}, s2 = m2_model_policy_as(&mp);
    m2_loop_cfg lc2;
    m2_loop_cfg_default(&lc2);
    lc2.high_prompt = "H";
    lc2.low_prompt = "L";
    lc2.step_limit = 4;
    lc2.subgoal_budget = 2;
    m2_online_opts o = {0};
    o.step = (m2_online_cfg){.critic = {.gamma = 0.99f, .expectile = 0.7f}, .alpha = 1.f, .w_max = 20.f, .eta = 0.05f,
                             .reduce = M2_REDUCE_SUM, .train_critic = 1, .train_actor = 1};
    o.actor = (m2_opt_opts){.lr = 1e-3f, .grad_clip = 1.f};
    o.critic = o.actor;
    o.polyak = 0.2f;
    o.epochs = 2;
    o.episodes_per_epoch = 2;
    o.updates_per_epoch = 3;
    o.batch = 2;
    o.max_tokens = 200;
    o.split = M2_SPLIT_TRAIN;
    o.seed = 8;
    m2_train_state st;
    m2_train_state_init(&st);
    logbook lb = {0};
    m2_train_hooks h = {.ud = &lb, .log = log_fn};
    pr_n_resets = 0;
    if (m2_train_online(m, con, coff, on, off, q, v, env, &s1, &s2, &lc2, &buf, &tok, &o, &st, &h, &err))
        fprintf(stderr, "%s\n", err.msg);
    /* epoch e plays positions 2e, 2e + 1 of the episode order (one type here: index order, 3 episodes) */
    assert_int_equal(pr_n_resets, 4);
    const int want_resets[4] = {0, 1, 2, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(pr_resets[i], want_resets[i]);
    assert_int_equal(st.step, 6);
    assert_int_equal(st.epoch, 2);
    assert_true(lb.saw_kl);
    assert_true(buf.pushed >= 4 && buf.pushed <= 16);   /* 4 episodes, 1..4 sub-goal segments each */
    assert_memory_equal(off_before, off->params.w, off->params.n * sizeof(float));   /* frozen */
    free(off_before);
    for (int i = 0; i < 12; i++) m2_traj_free(&segs[i]);
    m2_seqset_free(&set);
    m2_replay_free(&buf);
    pr_destroy(env);
    m2_ctx_free(con);
    m2_ctx_free(coff);
    m2_model_policy_free(&mp);
    m2_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sft_trains_and_stops),
        cmocka_unit_test(lm_schedule_and_resume),
        cmocka_unit_test(offline_resume_bit_exact),
        cmocka_unit_test(online_loop_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
