/* The Multi² hierarchy as a two-agent TeamTR team (agent/team_hier.h) on TextCraft with a tiny
 * random byte-level model: each agent's token set is exactly its own outputs (the planner's
 * sub-goals in its contexts, the executor's actions in the sub-goals' segments), an update of one
 * agent changes that agent's adapter only (planner tokens only train System 1), rollouts are counted
 * (fresh: one batch per agent updated; stale and a frozen planner: one a stage), and episodes depend
 * on their ids and the weights alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "algo/team_train.h"
#include "model/model.h"

typedef struct fx {
    m2_model *m;
    m2_env *env;
    m2_tok_iface tok;
    m2_adapter *a[2], *old[2];
    m2_episode_order order;
    m2_team_hier h;
    m2_teamtr tt;
} fx;

/* A shaped reward with signal for a random model and for both agents: 1 when the first bytes of the
 * planner's first sub-goal and of the executor's first output add up to an even number. */
static float even_first_bytes(void *ud, const m2_episode *ep) {
    (void)ud;
    const char *t = ep->n_sub > 0 && ep->sub[0].text ? ep->sub[0].text : "";
    const char *a = ep->steps > 0 && ep->step[0].raw ? ep->step[0].raw : "";
    return ((unsigned char)t[0] + (unsigned char)a[0]) % 2 == 0 ? 1.f : 0.f;
}

static int setup(void **state) {
    fx *f = calloc(1, sizeof *f);
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = 1536;   /* the planner's first state holds TextCraft's command block (~1 k bytes) */
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    f->m = m2_model_create(&cfg, &o, &err);
    assert_non_null(f->m);
    m2_model_init_random(f->m, 7, 0.3f);
    m2_byte_tok_iface(&f->tok, M2_BOS_NONE);
    static const char *const names[2] = {"sys1", "sys2"};
    for (int k = 0; k < 2; k++) {
        m2_lora_config lc = {.rank = 2, .alpha = 4, .targets = M2_LORA_Q | M2_LORA_V};
        snprintf(lc.name, sizeof lc.name, "%s", names[k]);
        f->a[k] = m2_adapter_add(f->m, &lc, 30 + (uint64_t)k, &err);
        snprintf(lc.name, sizeof lc.name, "%s_old", names[k]);
        f->old[k] = m2_adapter_add(f->m, &lc, 0, &err);
        assert_non_null(f->a[k]);
        assert_non_null(f->old[k]);
        assert_int_equal(m2_adapter_set_trainable(f->old[k], 0, &err), 0);
        /* random B factors too: the adapters change the outputs from the start */
        m2_rng r;
        m2_rng_seed(&r, 50 + (uint64_t)k);
        for (size_t i = 0; i < f->a[k]->params.n; i++) f->a[k]->params.w[i] = 0.3f * m2_rng_normal(&r);
        f->tt.model[k] = f->m;
        f->tt.adapter[k] = f->a[k];
        f->tt.old[k] = f->old[k];
    }
    f->tt.n = 2;
    assert_int_equal(m2_env_create("textcraft", NULL, &f->env, &err), 0);
    assert_int_equal(m2_episode_order_build(f->env, NULL, M2_SPLIT_TRAIN, &f->order, &err), 0);
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = 4;
    lc.subgoal_budget = 2;
    lc.low_parts.task_info = 0;   /* short contexts: the test stays quick under ASan */
    f->h = (m2_team_hier){.env = f->env, .order = &f->order, .split = M2_SPLIT_TRAIN, .model = f->m, .sys1 = f->a[0],
                          .sys2 = f->a[1], .tok = &f->tok, .loop = lc, .reward = even_first_bytes};
    f->tt.src = m2_team_hier_source(&f->h);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    m2_teamtr_free(&f->tt);
    m2_team_hier_free(&f->h);
    m2_episode_order_free(&f->order);
    m2_env_destroy(f->env);
    m2_model_free(f->m);
    free(f);
    return 0;
}

static const m2_team_gen gen = {.sampler = {.temperature = 1.f}, .max_new_tokens = 6, .seed = 11};

/* Appends text's bytes and the EOS to want (the byte tokenizer: one token a byte). */
static int expect_action(int32_t *want, int n, const char *text, int32_t eos) {
    for (const char *p = text; *p; p++) want[n++] = (unsigned char)*p;
    want[n++] = eos;
    return n;
}

/* The action tokens of packed sequence q, in order. */
static int action_tokens(const m2_packed_batch *pb, int q, int32_t *out) {
    int n = 0;
    for (int i = 0; i < pb->seq_len[q]; i++) {
        int r = pb->seq_off[q] + i;
        if (pb->tok_action[r] >= 0) {
            assert_true(pb->tok_mask[r] == 1.f);
            out[n++] = pb->targets[r];   /* row r predicts token r + 1 of the action */
        }
    }
    return n;
}

/* The planner's action tokens are its sub-goals (+ EOS) and nothing else; the executor's are its raw
 * outputs (+ EOS), one sequence a sub-goal; seq_sample maps each sequence to its episode. */
static void token_sets(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int tasks[2] = {0, 3};
    float R[4];
    assert_int_equal(f->h.n, 0);
    assert_int_equal(f->tt.src.play(f->tt.src.ud, tasks, 2, 2, 100, 0, 4, &gen, R, &err), 0);
    assert_int_equal(f->h.n, 4);
    int32_t *want = malloc(65536 * sizeof *want), *got = malloc(65536 * sizeof *got);
    int planner_subgoals = 0, executor_steps = 0;
    for (int agent = 0; agent < 2; agent++) {
        m2_packed_batch pb;
        int *map = NULL;
        assert_int_equal(f->tt.src.pack(f->tt.src.ud, agent, 0, &pb, &map, &err), 0);
        int q = 0;
        for (int i = 0; i < 4; i++) {
            const m2_episode *ep = &f->h.ep[i];
            assert_true(ep->n_sub >= 1);
            if (agent == M2_TEAM_HIER_PLANNER) {   /* one sequence: every sub-goal of the episode */
                int n = 0;
                for (int s = 0; s < ep->n_sub; s++) n = expect_action(want, n, ep->sub[s].text, f->tok.eos_id);
                assert_int_equal(map[q], i);
                assert_int_equal(action_tokens(&pb, q, got), n);
                assert_memory_equal(got, want, (size_t)n * sizeof *want);
                planner_subgoals += ep->n_sub;
                q++;
            } else {   /* one sequence a sub-goal with steps: its raw outputs */
                for (int s = 0; s < ep->n_sub; s++) {
                    const m2_subgoal_rec *sg = &ep->sub[s];
                    if (sg->n == 0) continue;
                    int n = 0;
                    for (int k = sg->first; k < sg->first + sg->n; k++) n = expect_action(want, n, ep->step[k].raw, f->tok.eos_id);
                    assert_int_equal(map[q], i);
                    assert_int_equal(action_tokens(&pb, q, got), n);
                    assert_memory_equal(got, want, (size_t)n * sizeof *want);
                    executor_steps += sg->n;
                    q++;
                }
            }
        }
        assert_int_equal(pb.n_seq, q);
        assert_int_equal(pb.n_actions, agent == M2_TEAM_HIER_PLANNER ? planner_subgoals : executor_steps);
        free(map);
        m2_packed_batch_free(&pb);
    }
    assert_true(executor_steps > 0);
    free(want);
    free(got);
}

/* An episode depends on its id and the weights alone: the same ids replay the same episodes in
 * another batch; another id plays another one. */
static void episodes_follow_ids(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int t1[1] = {2}, t2[2] = {5, 2};
    float R[4];
    assert_int_equal(f->tt.src.play(f->tt.src.ud, t1, 1, 2, 40, 0, 2, &gen, R, &err), 0);
    char *a = m2_episode_to_json(&f->h.ep[1]);
    assert_int_equal(f->tt.src.play(f->tt.src.ud, t2, 2, 2, 38, 0, 4, &gen, R, &err), 0);
    char *b = m2_episode_to_json(&f->h.ep[3]);   /* id 41, task 2 */
    char *c = m2_episode_to_json(&f->h.ep[2]);   /* id 40, task 2 */
    assert_string_equal(a, b);
    assert_string_not_equal(b, c);
    free(a);
    free(b);
    free(c);
}

static m2_teamtr_cfg loop_cfg(int mode) {
    return (m2_teamtr_cfg){.mode = mode, .group = 4, .epochs = 1, .lr = 0.05f, .grad_clip = 1.f, .beta1 = 0.9f,
                           .beta2 = 0.999f, .eps = 1e-8f, .clip = 0.2f, .delta = INFINITY, .a_max = 5.f,
                           .adv_eps = 1e-6f, .max_tokens = 1536, .gen = gen};
}

static float *copy_w(const m2_adapter *a) {
    float *w = malloc(a->params.n * sizeof *w);
    memcpy(w, a->params.w, a->params.n * sizeof *w);
    return w;
}

/* Updating the planner alone changes sys1 and leaves sys2 bit for bit; the executor alone the
 * reverse; rollouts: fresh plays a batch per agent updated, stale one per stage. */
static void updates_and_counts(void **state) {
    fx *f = *state;
    m2_err err = {0};
    const int tasks[2] = {1, 4};
    for (int who = 0; who < 2; who++) {
        float *w1 = copy_w(f->a[0]), *w2 = copy_w(f->a[1]);
        const int sigma[1] = {who};
        m2_teamtr_cfg cfg = loop_cfg(M2_TT_FRESH);
        m2_teamtr_stage_stats st;
        int rc = m2_teamtr_stage(&f->tt, tasks, 2, sigma, 1, 3 + (uint64_t)who, &cfg, &st, &err);
        if (rc) fail_msg("%s", err.msg);
        assert_int_equal(st.n, 1);
        assert_int_equal(st.u[0].agent, who);
        assert_true(st.u[0].n_tokens > 0);
        assert_int_equal(st.rollouts, 2L * 4);   /* one batch: the one agent updated */
        int moved1 = memcmp(w1, f->a[0]->params.w, f->a[0]->params.n * sizeof *w1) != 0;
        int moved2 = memcmp(w2, f->a[1]->params.w, f->a[1]->params.n * sizeof *w2) != 0;
        assert_int_equal(moved1, who == M2_TEAM_HIER_PLANNER);
        assert_int_equal(moved2, who == M2_TEAM_HIER_EXECUTOR);
        free(w1);
        free(w2);
    }
    const int both[2] = {1, 0};
    m2_teamtr_stage_stats fr, stl;
    m2_teamtr_cfg cfg = loop_cfg(M2_TT_FRESH);
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 2, both, 2, 9, &cfg, &fr, &err), 0);
    assert_int_equal(fr.rollouts, 2L * 2 * 4);   /* fresh: a batch per agent */
    cfg.mode = M2_TT_STALE;
    assert_int_equal(m2_teamtr_stage(&f->tt, tasks, 2, both, 2, 9, &cfg, &stl, &err), 0);
    assert_int_equal(stl.rollouts, 2L * 4);      /* stale: the stage's first batch only */
    assert_true(stl.u[1].reward_mean == stl.u[0].reward_mean);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(token_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(episodes_follow_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(updates_and_counts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
