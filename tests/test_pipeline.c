/* The whole Multi2 pipeline composed in memory on TextCraft's embedded recipes, with a tiny random
 * model and the byte tokenizer: expert data -> stage-0 LM steps -> System 1 SFT -> System 2 warm-up
 * -> offline RL -> online refinement (frozen offline copy, exact KL) -> pass@1 evaluation. A smoke
 * test of how the stages plug together (the stage functions of `multi2 train` follow this order);
 * learning quality is not asserted here, only that every stage runs and reports finite numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "algo/algo.h"
#include "data/data.h"
#include "model/model.h"

typedef struct book { int n; int bad; } book;
static int log_fn(void *ud, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    book *b = ud;
    for (int i = 0; i < n; i++) { b->n++; if (!isfinite(v[i])) { b->bad++; fprintf(stderr, "%s = %g\n", names[i], v[i]); } }
    return 0;
}

static void pipeline_smoke(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    assert_int_equal(m2_env_create("textcraft", NULL, &env, &err), 0);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);

    /* 1. data: expert episodes -> high/low records (what `multi2 data` writes) */
    m2_high_record high[4];
    m2_low_record low[64];
    int nh = 0, nl = 0;
    for (int i = 0; i < 4; i++) {
        m2_env_traj tr;
        m2_rollout_opts ro = {.policy = M2_POLICY_ORACLE, .max_steps = 50};
        assert_int_equal(m2_rollout(env, NULL, M2_SPLIT_TRAIN, i, 0, &ro, &tr, &err), 0);
        cJSON *h, *ls;
        assert_int_equal(m2_hier_records(env, &tr, "expert", NULL, &h, &ls, &err), 0);
        char *s = cJSON_PrintUnformatted(h);
        assert_int_equal(m2_high_record_parse(s, &high[nh++], &err), 0);
        free(s);
        const cJSON *l;
        cJSON_ArrayForEach(l, ls) {
            if (nl == 64) break;
            s = cJSON_PrintUnformatted(l);
            assert_int_equal(m2_low_record_parse(s, &low[nl++], &err), 0);
            free(s);
        }
        cJSON_Delete(h);
        cJSON_Delete(ls);
        m2_env_traj_free(&tr);
    }
    m2_seqset hs, ls;
    m2_seqset_init(&hs);
    m2_seqset_init(&ls);
    assert_int_equal(m2_seqset_add_high(&hs, &tok, high, nh, 2048, &err), 0);
    assert_int_equal(m2_seqset_add_low(&ls, &tok, low, nl, 1024, &err), 0);
    if (!(hs.n >= 1 && ls.n >= 4)) fprintf(stderr, "high %d (dropped %d), low %d (dropped %d) of %d/%d\n", hs.n, hs.n_dropped, ls.n, ls.n_dropped, nh, nl);
    assert_true(hs.n >= 1 && ls.n >= 4);

    /* the model: a tiny Llama over the byte vocabulary, base trainable for stage 0 */
    m2_model_config mc;
    assert_int_equal(m2_config_preset("test-llama", &mc, &err), 0);
    mc.vocab_size = 259;
    mc.max_seq_len = 2048;
    m2_model_opts mo = {M2_DT_F32, 1, 1};
    m2_model *m = m2_model_create(&mc, &mo, &err);
    assert_non_null(m);
    m2_model_init_random(m, 1, 0.2f);
    m2_ctx *c = m2_ctx_create(m, 2048, 1, &err), *c2 = m2_ctx_create(m, 2048, 0, &err);
    assert_non_null(c);
    assert_non_null(c2);
    book bk = {0};
    m2_train_hooks hooks = {.ud = &bk, .log = log_fn};

    /* 2. stage 0: LM steps on the base over the low sequences */
    m2_opt_opts base_opt = {.lr = 3e-3f, .grad_clip = 1.f};
    int shortest = 0;
    for (int s = 1; s < ls.n; s++) if (ls.seq[s].n_tok < ls.seq[shortest].n_tok) shortest = s;
    for (int s = 0; s < 1; s++) {   /* one step: the full-base backward is the slowest thing here */
        m2_packed_batch pb;
        assert_int_equal(m2_packed_batch_build(&ls.seq[shortest], 1, &pb, &err), 0);
        m2_params_zero_grad(&m->base);
        m2_step_stats st;
        assert_int_equal(m2_lm_step(c, NULL, &pb, 1, &st, &err), 0);
        assert_true(isfinite(st.loss));
        m2_adamw aw = {0.9f, 0.999f, 1e-8f, 0.f};
        assert_int_equal(m2_adamw_step(&m->base, &aw, base_opt.lr, &err), 0);
        m2_packed_batch_free(&pb);
    }
    m->base.trainable = 0;   /* frozen from here on: the adapters train */

    /* 3. System 1 SFT with a held-out split; 4. System 2 warm-up — each on its own adapter */
    m2_lora_config l1 = {"sys1", 4, 8.f, 0.f, M2_LORA_Q | M2_LORA_V}, l2 = {"sys2", 4, 8.f, 0.f, M2_LORA_Q | M2_LORA_V};
    m2_adapter *a1 = m2_adapter_add(m, &l1, 11, &err), *a2 = m2_adapter_add(m, &l2, 12, &err);
    int all_h[4] = {0, 1, 2, 3};
    m2_sft_opts so = {.opt = {.lr = 1e-3f, .weight_decay = 0.01f, .grad_clip = 1.f}, .reduce = M2_REDUCE_MEAN, .batch = 1, .epochs = 1,
                      .max_steps = 1, .seed = 1, .prefix = "sys1"};
    m2_train_state st;
    m2_train_state_init(&st);
#if defined(__SANITIZE_ADDRESS__)
    so.max_steps = 0;   /* ~2k-token planner sequences take ~13 s of backward under ASan; the same
                           m2_train_sft path runs below for the System 2 warm-up */
    so.epochs = 0;
#endif
    assert_int_equal(m2_train_sft(c, c2, a1, &hs, all_h, hs.n < 4 ? hs.n : 4, NULL, 0, &so, &st, NULL, &hooks, &err), 0);
    so.epochs = 1;
    int *tr, *va, nt, nv;
    assert_int_equal(m2_seqset_split(ls.n, 0.25, 3, &tr, &nt, &va, &nv, &err), 0);
    float *best = malloc(a2->params.n * sizeof(float));
    so.prefix = "sys2_warmup";
    so.batch = 2;
    so.max_steps = 2;
    so.epochs = 1;
    m2_train_state_init(&st);
    assert_int_equal(m2_train_sft(c, c2, a2, &ls, tr, nt, va, nv, &so, &st, best, &hooks, &err), 0);

    /* 5. System 2 offline RL: IQL heads + anchored actor on the warm-up adapter */
    m2_head *q = m2_head_add(m, "q", 21, &err), *v = m2_head_add(m, "v", 22, &err);
    q->grad_to_body = v->grad_to_body = 0;
    m2_offline_opts oo = {0};
    oo.step.critic = (m2_critic_cfg){0.99f, 0.7f};
    oo.step.actor = (m2_actor_cfg){.beta = 10.f, .w_max = 20.f, .lambda = 7.f, .released = 0, .normalize = 1};
    oo.step.reduce = M2_REDUCE_MEAN;
    oo.step.train_actor = oo.step.train_critic = 1;
    oo.step.n_anchor = 1;
    oo.step.anchor_samples = 1;
    oo.step.max_action_tokens = 4;
    oo.step.sampler = (m2_sampler){1.f, 0, 0.f};
    oo.step.eos_id = tok.eos_id;
    oo.actor = (m2_opt_opts){.lr = 1e-4f, .weight_decay = 0.01f, .grad_clip = 1.f};
    oo.critic = (m2_opt_opts){.lr = 1e-4f, .weight_decay = 0.01f, .grad_clip = 1.f};
    oo.polyak = 0.2f;
    oo.batch = 2;
    oo.epochs = 1;
    oo.max_steps = 1;
    oo.seed = 5;
    m2_rng rng;
    m2_rng_seed(&rng, 6);
    m2_train_state_init(&st);
    assert_int_equal(m2_train_offline(m, c, a2, q, v, &ls, tr, nt, &oo, &st, &rng, &hooks, &err), 0);
    assert_int_equal(st.step, 1);

    /* 6. online: frozen copy of the offline adapter as pi_off; buffer seeded with expert successes */
    m2_adapter *off = m2_adapter_add(m, &(m2_lora_config){"sys2_off", 4, 8.f, 0.f, M2_LORA_Q | M2_LORA_V}, 13, &err);
    assert_int_equal(m2_adapter_copy_weights(off, a2, &err), 0);
    m2_replay buf;
    assert_int_equal(m2_replay_init(&buf, 100, 0.1f, 7, &err), 0);
    m2_traj *segs = calloc((size_t)nl, sizeof *segs);
    int *succ = calloc((size_t)nl, sizeof *succ);
    for (int i = 0; i < nl; i++) {
        assert_int_equal(m2_low_record_traj(&low[i], NULL, "Obs: ", &segs[i], &err), 0);
        succ[i] = m2_traj_return(&segs[i]) > 0;
    }
    assert_true(m2_replay_seed_offline(&buf, segs, succ, nl, 50, &err) > 0);
    m2_model_policy p1 = {.model = m, .sys1 = a1, .sys2 = a2, .tok = &tok, .sampler = {0.f, 0, 0.f}, .max_new_tokens = 8, .seed = 1};           /* System 1 greedy, frozen */
    m2_model_policy p2 = {.model = m, .sys1 = a1, .sys2 = a2, .tok = &tok, .sampler = {0.7f, 50, 0.9f}, .max_new_tokens = 8, .seed = 2};        /* System 2 samples */
    m2_policy s1 = m2_model_policy_as(&p1), s2 = m2_model_policy_as(&p2);
    m2_loop_cfg lc;
    m2_loop_cfg_default(&lc);
    lc.step_limit = 2;
    m2_online_opts on = {0};
    on.step = (m2_online_cfg){.critic = {0.99f, 0.7f}, .alpha = 1.f, .w_max = 20.f, .eta = 0.02f, .reduce = M2_REDUCE_SUM, .train_critic = 1, .train_actor = 1};
    on.actor = (m2_opt_opts){.lr = 1e-5f, .weight_decay = 0.01f, .grad_clip = 1.f};
    on.critic = on.actor;
    on.polyak = 0.2f;
    on.epochs = 1;
    on.episodes_per_epoch = 1;
    on.updates_per_epoch = 1;
    on.batch = 1;
    on.max_tokens = 1024;
    on.split = M2_SPLIT_TRAIN;
    on.seed = 9;
    m2_train_state_init(&st);
    if (m2_train_online(m, c, c2, a2, off, q, v, env, &s1, &s2, &lc, &buf, &tok, &on, &st, &hooks, &err))
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st.epoch, 1);

    /* 7. evaluation: greedy pass@1 on ID and OOD, per-episode records, aggregate */
    p2.sampler = (m2_sampler){0.f, 0, 0.f};
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    lc.step_limit = 1;
    assert_int_equal(m2_eval_run(env, NULL, M2_SPLIT_ID, 0, 1, 0, &s1, &s2, &lc, NULL, &agg, &err), 0);
#if !defined(__SANITIZE_ADDRESS__)   /* long TextCraft contexts: one split is enough under ASan */
    assert_int_equal(m2_eval_run(env, NULL, M2_SPLIT_OOD, 0, 1, 0, &s1, &s2, &lc, NULL, &agg, &err), 0);
#endif
    char *js = m2_eval_agg_to_json(&agg);
    cJSON *o = cJSON_Parse(js);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "id"), "all"));
#if !defined(__SANITIZE_ADDRESS__)
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "ood"), "all"));
#endif
    cJSON_Delete(o);
    free(js);
    assert_true(bk.n > 10);
    assert_int_equal(bk.bad, 0);

    m2_eval_agg_free(&agg);
    for (int i = 0; i < nl; i++) m2_traj_free(&segs[i]);
    free(segs);
    free(succ);
    m2_replay_free(&buf);
    free(best);
    free(tr);
    free(va);
    m2_ctx_free(c);
    m2_ctx_free(c2);
    m2_model_policy_free(&p1);
    m2_model_policy_free(&p2);
    m2_model_free(m);
    m2_seqset_free(&hs);
    m2_seqset_free(&ls);
    for (int i = 0; i < nh; i++) m2_high_record_free(&high[i]);
    for (int i = 0; i < nl; i++) m2_low_record_free(&low[i]);
    m2_env_destroy(env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipeline_smoke),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
