/* dist/ and data-parallel training, run by CTest under `mpirun -np 2` (tests/CMakeLists: the
 * mpi_*.c programs). Every rank runs every test; each compares the 2-rank result with a 1-process
 * reference it computes itself (hooks.dist = NULL), and the ranks check they hold the same bits.
 *  - collectives: deterministic sums (bits of x_0 + x_1 in rank order) cut into small pieces,
 *    broadcast, variable-size gather, the sharding rule, the ordered map (items made on their
 *    ranks, taken in item order everywhere);
 *  - pre-training, SFT and offline RL (LoRA dropout on; offline with the sampled anchor): 2 ranks
 *    with a global batch of 2B (B per rank) follow the loss trajectory of 1 process with batch 2B
 *    within LOSS_TOL (relative), the weights stay within WEIGHT_TOL, and the RNG streams end as one
 *    process's;
 *  - online (dropout on, System 1 sampling): the episodes sharded over 2 ranks fill exactly the
 *    buffer one process fills (the same JSON), and the updates on it follow the 1-process losses
 *    within LOSS_TOL. */
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
#include "dist/dist.h"
#include "model/model.h"

/* The stated tolerance: 2 ranks sum two partial gradients where one process sums all rows in its
 * GEMMs, so the float results differ by rounding only (measured: < 1e-6 relative). AdamW divides
 * each weight's step by its own gradient scale, so a weight whose gradient is near Adam's eps turns
 * a rounding difference into a visible part of one step: all weights are within WEIGHT_TOL_MAX
 * (3 % of the largest learning rate here) and all but 1 in 1000 within WEIGHT_TOL (measured: 1 of
 * 32,096 pre-trained base weights at 1.6e-5 on an AVX-512 machine, none over 1e-6 otherwise). */
#define LOSS_TOL 1e-5
#define WEIGHT_TOL 1e-5
#define WEIGHT_TOL_MAX 1e-4
/* LoRA dropout in the tests below: the 2 ranks must draw the masks one process draws */
#define DROPOUT 0.1f

static m2_dist D;

/* every rank holds the same n bytes as rank 0 */
static void assert_same_on_ranks(const void *p, size_t n) {
    m2_err err = {0};
    char *mine = malloc(n ? n : 1);
    memcpy(mine, p, n);
    assert_int_equal(m2_dist_bcast(&D, mine, n, 0, &err), 0);
    assert_memory_equal(mine, p, n);
    free(mine);
}

/* the ordered map's items: item i is i copies of 'a' + i (item 4 empty), taken in order */
typedef struct map_log { int made; char seen[200]; } map_log;
static int map_make(void *ud, int64_t i, m2_strbuf *out, m2_err *err) {
    map_log *l = ud;
    l->made++;
    for (int k = 0; i != 4 && k <= i; k++) m2_strbuf_putc(out, (char)('a' + i));
    return 0;
}
static int map_take(void *ud, int64_t i, const char *item, size_t len, m2_err *err) {
    map_log *l = ud;
    assert_int_equal(strlen(item), len);
    snprintf(l->seen + strlen(l->seen), sizeof l->seen - strlen(l->seen), "%d:%s|", (int)i, item);
    return 0;
}

static void collectives(void **state) {
    m2_err err = {0};
    assert_int_equal(D.world, 2);
    int64_t a, k;
    m2_dist_shard(5, 0, 2, &a, &k);
    assert_true(a == 0 && k == 2);
    m2_dist_shard(5, 1, 2, &a, &k);
    assert_true(a == 2 && k == 3);
    m2_dist_shard(1, 0, 2, &a, &k);
    assert_true(a == 0 && k == 0);   /* a batch smaller than the world leaves a rank empty */

    size_t saved = D.piece;
    D.piece = 37;   /* many pieces, uneven blocks */
    enum { N = 1001 };
    float *x = malloc(N * sizeof *x), *want = malloc(N * sizeof *want);
    double *y = malloc(N * sizeof *y), *wy = malloc(N * sizeof *wy);
    for (int i = 0; i < N; i++) {
        float acc = 0.f;
        double accd = 0;
        for (int r = 0; r < D.world; r++) {
            float v = 0.1f * (float)(i + 1) * (float)(r + 1) + 1e-3f * (float)r + 1.f / (float)(i + 3);
            acc = r ? acc + v : v;
            accd = r ? accd + (double)v / 3 : (double)v / 3;
            if (r == D.rank) { x[i] = v; y[i] = (double)v / 3; }
        }
        want[i] = acc;
        wy[i] = accd;
    }
    assert_int_equal(m2_dist_sum_f32(&D, x, N, &err), 0);
    assert_memory_equal(x, want, N * sizeof *x);
    assert_int_equal(m2_dist_sum_f64(&D, y, N, &err), 0);
    assert_memory_equal(y, wy, N * sizeof *y);
    int64_t iv[3] = {D.rank, 10, -(int64_t)D.rank * 7};
    assert_int_equal(m2_dist_sum_i64(&D, iv, 3, &err), 0);
    assert_true(iv[0] == 1 && iv[1] == 20 && iv[2] == -7);

    char b[500];
    for (int i = 0; i < 500; i++) b[i] = D.rank == 1 ? (char)(i * 7) : 0;
    assert_int_equal(m2_dist_bcast(&D, b, sizeof b, 1, &err), 0);
    for (int i = 0; i < 500; i++) assert_int_equal(b[i], (char)(i * 7));

    /* rank r sends 40 r + 3 bytes of 'a' + r, then rank 1 sends nothing */
    char mine[200];
    size_t n = (size_t)(40 * D.rank + 3);
    memset(mine, 'a' + D.rank, n);
    char *all;
    size_t lens[2];
    assert_int_equal(m2_dist_allgather(&D, mine, n, &all, lens, &err), 0);
    assert_true(lens[0] == 3 && lens[1] == 43);
    for (size_t i = 0; i < 46; i++) assert_int_equal(all[i], i < 3 ? 'a' : 'b');
    assert_int_equal(all[46], 0);
    free(all);
    assert_int_equal(m2_dist_allgather(&D, "xy", D.rank ? 0 : 2, &all, lens, &err), 0);
    assert_true(lens[0] == 2 && lens[1] == 0 && !strcmp(all, "xy"));
    free(all);
    assert_int_equal(m2_dist_barrier(&D, &err), 0);
    D.piece = saved;
    /* 7 items over 2 ranks (blocks 0..2 and 3..6), item 4 empty */
    map_log ml = {0};
    assert_int_equal(m2_dist_map_ordered(&D, 7, map_make, map_take, &ml, &err), 0);
    assert_int_equal(ml.made, D.rank ? 4 : 3);
    assert_string_equal(ml.seen, "0:a|1:bb|2:ccc|3:dddd|4:|5:ffffff|6:ggggggg|");
    free(x); free(want); free(y); free(wy);
}

/* ---- a tiny model and 12 two-step segments (as tests/test_algo_train.c) ---- */

static m2_model *tiny(int train_base) {
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = 256;
    m2_model_opts o = {.dtype = M2_DT_F32, .train_base = train_base, .threads = 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_non_null(m);
    m2_model_init_random(m, 3, 0.2f);
    return m;
}

static void make_set(m2_seqset *s, const m2_tok_iface *tok, m2_traj *keep, int *success) {
    m2_err err = {0};
    m2_seqset_init(s);
    for (int k = 0; k < 12; k++) {
        m2_traj t;
        char buf[64];
        m2_traj_init(&t);
        snprintf(buf, sizeof buf, "L Subtask: g%d", k % 3);
        m2_traj_set_prompt(&t, buf, &err);
        m2_traj_push_state(&t, k % 2 ? "Obs: s" : "Obs: a longer state", &err);
        snprintf(buf, sizeof buf, "a%d; False", k % 3);
        m2_traj_push_action(&t, buf, 0.f, 0.f, &err);
        m2_traj_push_state(&t, "Obs: t", &err);
        snprintf(buf, sizeof buf, k % 4 ? "b%d; True" : "bb%d; True", k % 3);
        m2_traj_push_action(&t, buf, 1.f, 1.f, &err);
        m2_traj_push_state(&t, "Obs: u", &err);
        assert_int_equal(m2_seqset_add(s, tok, &t, 0, &err), 0);
        if (keep) { keep[k] = t; success[k] = 1; } else m2_traj_free(&t);
    }
}

/* the "/loss" metric of each step */
typedef struct book { int n; double loss[64]; } book;
static int log_loss(void *ud, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    book *b = ud;
    for (int i = 0; i < n; i++) {
        const char *s = strrchr(names[i], '/');
        if (s && !strcmp(s, "/loss") && b->n < 64) b->loss[b->n++] = v[i];
    }
    return 0;
}

static void assert_close_trajectory(const book *one, const book *two) {
    assert_int_equal(one->n, two->n);
    assert_true(one->n > 0);
    for (int i = 0; i < one->n; i++) {
        double tol = LOSS_TOL * fmax(1.0, fabs(one->loss[i]));
        if (!(fabs(one->loss[i] - two->loss[i]) <= tol))
            fail_msg("step %d: 1 process %.9g, 2 ranks %.9g", i + 1, one->loss[i], two->loss[i]);
    }
}

static void assert_close_params(const m2_params *a, const m2_params *b) {
    assert_int_equal(a->n, b->n);
    double worst = 0;
    size_t over = 0;
    for (size_t i = 0; i < a->n; i++) {
        double d = fabs((double)a->w[i] - b->w[i]);
        worst = fmax(worst, d);
        over += d > WEIGHT_TOL;
    }
    if (worst > WEIGHT_TOL_MAX || over > a->n / 1000)
        fail_msg("weights differ by up to %g, %zu of %zu by more than %g", worst, over, a->n, WEIGHT_TOL);
    assert_same_on_ranks(b->w, b->n * sizeof(float));   /* lock-step: the same bits on every rank */
}

static void lm_two_ranks_match_one(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int idx[12];
    for (int i = 0; i < 12; i++) idx[i] = i;
    /* global batch 6: 3 sequences a rank; 5 steps cross an epoch end (12 = 2 batches) */
    m2_lm_opts o = {.opt = {.lr = 3e-3f, .weight_decay = 0.1f, .grad_clip = 0.5f, .decay = M2_DECAY_COSINE,
                            .warmup = 1, .min_lr = 1e-4f, .total = 5},
                    .batch = 6, .steps = 5, .seed = 3, .prefix = "pretrain"};
    m2_model *A = tiny(1), *B = tiny(1);
    m2_ctx *ca = m2_ctx_create(A, 1024, 1, &err), *cb = m2_ctx_create(B, 1024, 1, &err);
    book one = {0}, two = {0};
    m2_train_state sa, sb;
    m2_train_state_init(&sa);
    m2_train_state_init(&sb);
    m2_train_hooks ha = {.ud = &one, .log = log_loss}, hb = {.ud = &two, .log = log_loss, .dist = &D};
    assert_int_equal(m2_train_lm(A, ca, NULL, &set, idx, 12, &o, &sa, &ha, &err), 0);
    assert_int_equal(m2_train_lm(B, cb, NULL, &set, idx, 12, &o, &sb, &hb, &err), 0);
    assert_close_trajectory(&one, &two);
    assert_close_params(&A->base, &B->base);
    assert_true(sa.step == sb.step && sa.epoch == sb.epoch && sa.pos == sb.pos);
    m2_ctx_free(ca); m2_ctx_free(cb);
    m2_model_free(A); m2_model_free(B);
    m2_seqset_free(&set);
}

static void sft_two_ranks_match_one(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int tr[10], va[2] = {10, 11};
    for (int i = 0; i < 10; i++) tr[i] = i;
    /* batch 4 over 10 sequences: the epoch's last batch has 2 (one a rank) */
    m2_sft_opts o = {.opt = {.lr = 1e-2f, .grad_clip = 1.f}, .reduce = M2_REDUCE_MEAN, .batch = 4, .epochs = 2,
                     .eval_every = 2, .patience = 0, .seed = 9, .prefix = "sys1"};
    m2_model *A = tiny(0), *B = tiny(0);
    m2_lora_config lc = {.name = "s", .rank = 2, .alpha = 4.f, .dropout = DROPOUT, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *aa = m2_adapter_add(A, &lc, 1, &err), *ab = m2_adapter_add(B, &lc, 1, &err);
    m2_ctx *ca = m2_ctx_create(A, 512, 1, &err), *cb = m2_ctx_create(B, 512, 1, &err);
    book one = {0}, two = {0};
    m2_train_state sa, sb;
    m2_train_state_init(&sa);
    m2_train_state_init(&sb);
    m2_train_hooks ha = {.ud = &one, .log = log_loss}, hb = {.ud = &two, .log = log_loss, .dist = &D};
    assert_int_equal(m2_train_sft(ca, NULL, aa, &set, tr, 10, va, 2, &o, &sa, NULL, &ha, &err), 0);
    assert_int_equal(m2_train_sft(cb, NULL, ab, &set, tr, 10, va, 2, &o, &sb, NULL, &hb, &err), 0);
    assert_close_trajectory(&one, &two);
    assert_close_params(&aa->params, &ab->params);
    assert_true(fabs(sa.best_val - sb.best_val) <= LOSS_TOL * fmax(1.0, fabs(sa.best_val)));
    m2_ctx_free(ca); m2_ctx_free(cb);
    m2_model_free(A); m2_model_free(B);
    m2_seqset_free(&set);
}

/* offline RL with LoRA dropout and the sampled anchor (3 states of each GLOBAL batch, 2 samples
 * each, sampled at temperature 1): the 2 ranks draw the masks, states and samples one process
 * draws. Global batch 4 (2 sequences a rank, anchor states on both), then 1 (rank 0's part empty:
 * it still draws and sums in lock-step). */
static void offline_two_ranks_match_one(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, NULL, NULL);
    int idx[12];
    for (int i = 0; i < 12; i++) idx[i] = i;
    const int batches[2] = {4, 1};
    for (int b = 0; b < 2; b++) {
        m2_offline_opts o = m2t_offline_opts(batches[b], 3, 2, 2, b ? 5 : 0);
        m2_model *M[2] = {tiny(0), tiny(0)};
        m2_adapter *a[2];
        m2_head *q[2], *v[2];
        m2_ctx *c[2];
        book bk[2] = {{0}, {0}};
        for (int r = 0; r < 2; r++) {
            m2_lora_config lc = {.name = "sys2", .rank = 2, .alpha = 4.f, .dropout = DROPOUT, .targets = M2_LORA_Q | M2_LORA_V};
            a[r] = m2_adapter_add(M[r], &lc, 1, &err);
            q[r] = m2_head_add(M[r], "q", 2, &err);
            v[r] = m2_head_add(M[r], "v", 3, &err);
            q[r]->grad_to_body = v[r]->grad_to_body = 0;
            c[r] = m2_ctx_create(M[r], 512, 1, &err);
            m2_ctx_seed(c[r], 6);
            m2_train_state st;
            m2_train_state_init(&st);
            m2_rng rng;
            m2_rng_seed(&rng, 5);
            m2_train_hooks h = {.ud = &bk[r], .log = log_loss, .dist = r ? &D : NULL};
            assert_int_equal(m2_train_offline(M[r], c[r], a[r], q[r], v[r], &set, idx, 12, &o, &st, &rng, &h, &err), 0);
            /* the streams moved exactly as one process's: the same state on both runs and ranks */
            assert_same_on_ranks(&rng, sizeof rng);
            assert_same_on_ranks(m2_ctx_rng(c[r]), sizeof(m2_rng));
        }
        assert_close_trajectory(&bk[0], &bk[1]);
        assert_close_params(&a[0]->params, &a[1]->params);
        assert_close_params(&q[0]->params, &q[1]->params);
        assert_close_params(&v[0]->params, &v[1]->params);
        for (int r = 0; r < 2; r++) { m2_ctx_free(c[r]); m2_model_free(M[r]); }
    }
    m2_seqset_free(&set);
}

/* ---- online: the "press" env of test_algo_train.c; episode i succeeds after i % 3 + 1 presses ---- */
typedef struct press { m2_env base; int n, need; char obs[32]; } press;
extern const m2_env_class press_class;
static int pr_create(m2_env **out, const char *d, m2_err *err) {
    press *p = calloc(1, sizeof *p);
    p->base.cls = &press_class;
    *out = &p->base;
    return 0;
}
static void pr_destroy(m2_env *e) { free(e); }
static int pr_num(m2_env *e, const char *t, m2_split s, m2_err *err) { return 7; }
static int pr_reset(m2_env *e, const char *t, m2_split s, int i, uint64_t seed, m2_step_result *r, m2_err *err) {
    press *p = (press *)e;
    p->n = 0;
    p->need = i % 3 + 1;
    snprintf(p->obs, sizeof p->obs, "c0 of %d", p->need);
    *r = (m2_step_result){p->obs, 0, 0, 0, 0, 1};
    return 0;
}
static const char *pr_task(const m2_env *e) { return "P"; }
static int pr_step(m2_env *e, const char *a, m2_step_result *r) {
    press *p = (press *)e;
    int ok = !strcmp(a, "press");
    if (ok) p->n++;
    int won = p->n >= p->need;
    snprintf(p->obs, sizeof p->obs, "c%d", p->n);
    *r = (m2_step_result){p->obs, won ? 1.f : 0.f, won, (float)won, won, ok};
    return 0;
}
const m2_env_class press_class = {.name = "press", .create = pr_create, .destroy = pr_destroy,
    .num_episodes = pr_num, .reset = pr_reset, .task_text = pr_task, .step = pr_step};

/* System 2: presses, flags done on every second step of a sub-goal, and says "wait" on the 4th
 * state of an episode (an invalid action) */
static int presser(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    int k = c->n_states;
    *out = strdup(k == 4 ? "wait; False" : (k % 2 ? "press; False" : "press; True"));
    *np = 2; *ng = 3;
    return 0;
}

typedef struct online_rig {
    m2_model *m;
    m2_adapter *on, *off;
    m2_head *q, *v;
    m2_ctx *con, *coff;
    m2_replay buf;
} online_rig;

static void rig_make(online_rig *g, const m2_tok_iface *tok) {
    m2_err err = {0};
    g->m = tiny(0);
    m2_lora_config lc = {.name = "on", .rank = 2, .alpha = 4.f, .dropout = DROPOUT, .targets = M2_LORA_Q | M2_LORA_V}, lo = lc;
    snprintf(lo.name, sizeof lo.name, "off");
    g->on = m2_adapter_add(g->m, &lc, 1, &err);
    g->off = m2_adapter_add(g->m, &lo, 1, &err);
    m2_rng r;
    m2_rng_seed(&r, 2);
    for (size_t i = 0; i < g->on->params.n; i++) g->on->params.w[i] = g->off->params.w[i] = 0.3f * m2_rng_normal(&r);
    g->off->params.trainable = 0;
    g->q = m2_head_add(g->m, "q", 2, &err);
    g->v = m2_head_add(g->m, "v", 3, &err);
    g->con = m2_ctx_create(g->m, 1024, 1, &err);
    g->coff = m2_ctx_create(g->m, 1024, 0, &err);
    assert_non_null(g->coff);
    m2_seqset set;
    m2_traj segs[12];
    int succ[12];
    make_set(&set, tok, segs, succ);
    assert_int_equal(m2_replay_init(&g->buf, 64, 0.5f, 5, &err), 0);
    assert_int_equal(m2_replay_seed_offline(&g->buf, segs, succ, 12, 4, &err), 4);
    for (int i = 0; i < 12; i++) m2_traj_free(&segs[i]);
    m2_seqset_free(&set);
}

static void rig_free(online_rig *g) {
    m2_replay_free(&g->buf);
    m2_ctx_free(g->con);
    m2_ctx_free(g->coff);
    m2_model_free(g->m);
}

static void online_two_ranks_match_one(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_policy s2 = {.generate = presser};
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.high_prompt = "H";
    lc.low_prompt = "L";
    lc.step_limit = 6;
    lc.subgoal_budget = 3;
    m2_online_opts o = {0};
    o.step = (m2_online_cfg){.critic = {.gamma = 0.99f, .expectile = 0.7f}, .alpha = 1.f, .w_max = 20.f, .eta = 0.05f,
                             .reduce = M2_REDUCE_SUM, .train_critic = 1, .train_actor = 1};
    o.actor = (m2_opt_opts){.lr = 1e-3f, .grad_clip = 1.f};
    o.critic = o.actor;
    o.polyak = 0.2f;
    o.epochs = 2;
    o.episodes_per_epoch = 5;   /* 5 episodes over 2 ranks: blocks of 2 and 3 */
    o.updates_per_epoch = 2;
    o.batch = 4;
    o.max_tokens = 200;
    o.split = M2_SPLIT_TRAIN;
    o.seed = 8;
    online_rig g[2];
    book bk[2] = {{0}, {0}};
    char *js[2];
    for (int r = 0; r < 2; r++) {
        rig_make(&g[r], &tok);
        m2_env *env;
        pr_create(&env, NULL, &err);
        m2_train_state st;
        m2_train_state_init(&st);
        m2_train_hooks h = {.ud = &bk[r], .log = log_loss, .dist = r ? &D : NULL};
        /* System 1 samples its sub-goals (temperature 1, each episode from its own stream), which the
         * segments' prompts carry into the buffer */
        m2_model_policy mp = {.model = g[r].m, .sys1 = g[r].off, .tok = &tok, .sampler = {1.f, 0, 0.f},
                              .max_new_tokens = 6, .seed = 11};
        m2_policy s1 = m2_model_policy_as(&mp);
        if (m2_train_online(g[r].m, g[r].con, g[r].coff, g[r].on, g[r].off, g[r].q, g[r].v, env, &s1, &s2, &lc,
                            &g[r].buf, &tok, &o, &st, &h, &err))
            fail_msg("%s", err.msg);
        m2_model_policy_free(&mp);
        pr_destroy(env);
        assert_non_null(js[r] = m2_replay_to_json(&g[r].buf, &err));
        assert_same_on_ranks(m2_ctx_rng(g[r].con), sizeof(m2_rng));
    }
    assert_true(g[0].buf.pushed >= 10);
    assert_string_equal(js[0], js[1]);   /* the same episodes, segments, order and failure draws */
    assert_same_on_ranks(js[1], strlen(js[1]));
    assert_close_trajectory(&bk[0], &bk[1]);
    assert_close_params(&g[0].on->params, &g[1].on->params);
    for (int r = 0; r < 2; r++) { free(js[r]); rig_free(&g[r]); }
}

int main(int argc, char **argv) {
    m2_err err = {0};
    if (m2_dist_init(&D, &argc, &argv, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    if (D.world != 2) {
        fprintf(stderr, "mpi_dist: run under `mpirun -np 2` (world size %d)\n", D.world);
        m2_dist_finalize(&D);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collectives),
        cmocka_unit_test(lm_two_ranks_match_one),
        cmocka_unit_test(sft_two_ranks_match_one),
        cmocka_unit_test(offline_two_ranks_match_one),
        cmocka_unit_test(online_two_ranks_match_one),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    m2_dist_finalize(&D);
    return rc;
}
