/* agent/model_policy: the control loop driven by a (tiny, random) model with one adapter per role:
 * contexts are packed like training sequences, token counts match what was packed and generated,
 * greedy episodes are reproducible, sampled episodes do not depend on the episodes played before them,
 * and role swap / shared adapters are just adapter choices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "model/model.h"

typedef struct recorder {
    m2_policy inner;
    const m2_tok_iface *tok;
    int max_ctx;
    long prompt_tok, gen_tok;
    int calls[3];
} recorder;

/* Checks each call's prompt count against an independent packing of the same context. */
static int rec_generate(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    recorder *r = ctx;
    if (r->inner.generate(r->inner.ctx, role, c, out, np, ng, err)) return -1;
    int32_t *ids;
    int n;
    assert_int_equal(m2_pack_context(r->tok, c, r->max_ctx, &ids, &n, err), 0);
    assert_int_equal(*np, n);
    free(ids);
    assert_true(*ng >= 1 && *ng <= 12);
    r->prompt_tok += *np;
    r->gen_tok += *ng;
    r->calls[role]++;
    return 0;
}

static m2_model *tiny_model_ctx(int ctx) {
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    cfg.max_seq_len = ctx;
    m2_model_opts o = {M2_DT_F32, 0, 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_non_null(m);
    m2_model_init_random(m, 3, 0.3f);
    return m;
}

/* Adapters "sys1" and "sys2" (rank 2 on q, v) with random weights large enough to matter. */
static void two_adapters(m2_model *m, m2_adapter **a1, m2_adapter **a2) {
    m2_err err = {0};
    m2_lora_config l1 = {"sys1", 2, 4.f, 0.f, M2_LORA_Q | M2_LORA_V}, l2 = {"sys2", 2, 4.f, 0.f, M2_LORA_Q | M2_LORA_V};
    *a1 = m2_adapter_add(m, &l1, 1, &err);
    *a2 = m2_adapter_add(m, &l2, 2, &err);
    assert_non_null(*a1);
    assert_non_null(*a2);
    m2_rng r;
    m2_rng_seed(&r, 4);
    for (size_t i = 0; i < (*a1)->params.n; i++) (*a1)->params.w[i] = 0.5f * m2_rng_normal(&r);
    for (size_t i = 0; i < (*a2)->params.n; i++) (*a2)->params.w[i] = 0.5f * m2_rng_normal(&r);
}

/* The agent tests' world: a byte-tokenizer model with a `ctx`-token window and two random adapters,
 * TextCraft, the byte tokenizer. */
static m2_model *policy_world(int ctx, m2_adapter **a1, m2_adapter **a2, m2_env **env, m2_tok_iface *tok) {
    m2_err err = {0};
    m2_model *m = tiny_model_ctx(ctx);
    two_adapters(m, a1, a2);
    *env = NULL;
    assert_int_equal(m2_env_create("textcraft", NULL, env, &err), 0);
    m2_byte_tok_iface(tok, M2_BOS_NONE);
    return m;
}

static char *run_json(m2_env *env, m2_model *m, m2_adapter *a1, m2_adapter *a2, const m2_tok_iface *tok,
                      recorder *r1, recorder *r2, m2_episode *keep) {
    m2_err err = {0};
    m2_model_policy mp = {.model = m, .sys1 = a1, .sys2 = a2, .tok = tok, .sampler = {0.f, 0, 0.f}, .max_new_tokens = 12, .seed = 5};
    *r1 = (recorder){m2_model_policy_as(&mp), tok, m->cfg.max_seq_len - 12, 0, 0, {0}};
    *r2 = *r1;
    m2_policy s1 = {.ctx = r1, .generate = rec_generate}, s2 = {.ctx = r2, .generate = rec_generate};
    m2_loop_cfg cfg;
    m2_loop_cfg_default(&cfg);
    cfg.step_limit = 6;
    cfg.subgoal_budget = 2;
    m2_episode ep;
    if (m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 1, &s1, &s2, &cfg, &ep, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        fail();
    }
    char *js = m2_episode_to_json(&ep);
    *keep = ep;
    m2_model_policy_free(&mp);
    return js;
}

static void model_policy_loop(void **state) {
    m2_adapter *a1, *a2;
    m2_env *env;
    m2_tok_iface tok;
    m2_model *m = policy_world(2048, &a1, &a2, &env, &tok);
    recorder r1, r2, q1, q2;
    m2_episode e1, e2;
    char *j1 = run_json(env, m, a1, a2, &tok, &r1, &r2, &e1);
    /* the loop's totals are exactly what the policy reported and what packing gives */
    assert_int_equal(e1.steps, 6);
    assert_int_equal(e1.sys1_calls, 3);   /* budget 2 -> System 1 every 2 steps at most */
    assert_int_equal(r1.calls[M2_ROLE_SYS1], e1.sys1_calls);
    assert_int_equal(r2.calls[M2_ROLE_SYS2], 6);
    assert_int_equal(e1.sys1_prompt_tok, r1.prompt_tok);
    assert_int_equal(e1.sys1_gen_tok, r1.gen_tok);
    assert_int_equal(e1.sys2_prompt_tok, r2.prompt_tok);
    assert_int_equal(e1.sys2_gen_tok, r2.gen_tok);
    /* greedy: the same episode again, byte for byte */
    char *j2 = run_json(env, m, a1, a2, &tok, &q1, &q2, &e2);
    assert_string_equal(j1, j2);
    free(j2);
    m2_episode_free(&e2);
    /* role swap gives a different System 2 (other adapter) */
    j2 = run_json(env, m, a2, a1, &tok, &q1, &q2, &e2);
    assert_string_not_equal(j1, j2);
    free(j2);
    m2_episode_free(&e2);
    free(j1);
    m2_episode_free(&e1);
    m2_env_destroy(env);
    m2_model_free(m);
}

/* A policy that starts every call from an empty cache: the full prefill of each context. */
static int fresh_generate(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    m2_model_policy *mp = ctx;
    m2_model_policy_reset(mp);
    return m2_model_policy_as(mp).generate(mp, role, c, out, np, ng, err);
}

/* The policy's per-role KV caches: within an episode each call prefills only what its context adds
 * to the previous one; the episode is the one a full prefill of every context gives (also in a
 * 720-token model, where System 1's context does not fit and System 2 acts on empty sub-goals); a
 * reset (every episode start) empties them. */
static void policy_cache_reuses_prefixes(void **state) {
  for (int ctx = 2048; ctx >= 720; ctx -= 1328) {
    m2_err err = {0};
    m2_adapter *a1, *a2;
    m2_env *env;
    m2_tok_iface tok;
    m2_model *m = policy_world(ctx, &a1, &a2, &env, &tok);
    m2_loop_cfg cfg;
    m2_loop_cfg_default(&cfg);
    cfg.step_limit = 8;
    cfg.subgoal_budget = 3;
    m2_model_policy mp = {.model = m, .sys1 = a1, .sys2 = a2, .tok = &tok, .max_new_tokens = 12, .seed = 5};
    m2_model_policy mq = mp;
    m2_policy p = m2_model_policy_as(&mp), q = {.ctx = &mq, .generate = fresh_generate};
    m2_episode e1, e2;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 1, &p, &p, &cfg, &e1, &err), 0);
    if (ctx == 2048) {
        assert_true(m2_model_policy_cached(&mp, M2_ROLE_SYS1) > 0);
        assert_true(m2_model_policy_cached(&mp, M2_ROLE_SYS2) > 0);
    }
    assert_true(e1.sys2_gen_tok > 0);
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 1, &q, &q, &cfg, &e2, &err), 0);
    char *j1 = m2_episode_to_json(&e1), *j2 = m2_episode_to_json(&e2);
    assert_string_equal(j1, j2);
    free(j1); free(j2);
    m2_episode_free(&e1); m2_episode_free(&e2);
    p.reset(p.ctx, 0);
    assert_int_equal(m2_model_policy_cached(&mp, M2_ROLE_SYS1), 0);
    assert_int_equal(m2_model_policy_cached(&mp, M2_ROLE_SYS2), 0);
    m2_model_policy_free(&mp);
    m2_model_policy_free(&mq);
    m2_env_destroy(env);
    m2_model_free(m);
  }
}

/* The text a call writes to a temporary file: fn plays episodes and writes their records. */
static char *records_of(int (*fn)(void *ud, FILE *f), void *ud) {
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fn(ud, f), 0);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

typedef struct play {
    m2_env *env;
    const m2_policy *p1, *p2;
    const m2_loop_cfg *cfg;
    int first, n;       /* evaluation: positions first .. first+n-1 of the ID order */
    const int *pos;     /* collection (pos != NULL): these positions of the train order */
} play;

static int play_eval(void *ud, FILE *f) {
    play *p = ud;
    m2_err err = {0};
    int rc = m2_eval_run(p->env, NULL, M2_SPLIT_ID, p->first, p->n, 40, p->p1, p->p2, p->cfg, f, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int play_collect(void *ud, FILE *f) {
    play *p = ud;
    m2_err err = {0};
    m2_replay buf;
    assert_int_equal(m2_replay_init(&buf, 256, 1.f, 1, &err), 0);
    int rc = m2_collect_online(p->env, NULL, M2_SPLIT_TRAIN, p->pos, p->n, 40, p->p1, p->p2, p->cfg, &buf, f, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    m2_replay_free(&buf);
    return rc;
}

static const char *last_line(const char *s) {
    size_t n = strlen(s);
    assert_true(n > 1 && s[n - 1] == '\n');
    const char *p = s + n - 1;
    while (p > s && p[-1] != '\n') p--;
    return p;
}

/* Each episode samples from its own stream (agent/loop.h m2_episode_stream), so a sampled episode
 * played alone is the one the same policies play after other episodes (evaluation and online
 * collection alike): its samples depend neither on the process that plays it (docs/dist.md) nor
 * on what it played before. Another collection round or another policy seed samples another
 * episode, so the samples are real. */
static void episode_samples_do_not_depend_on_order(void **state) {
    m2_adapter *a1, *a2;
    m2_env *env;
    m2_tok_iface tok;
    m2_model *m = policy_world(2048, &a1, &a2, &env, &tok);
    m2_loop_cfg cfg;
    m2_loop_cfg_default(&cfg);
    cfg.step_limit = 3;
    cfg.subgoal_budget = 2;
    m2_sampler smp = {1.f, 0, 0.f};
    m2_model_policy mp1 = {.model = m, .sys1 = a1, .sys2 = a1, .tok = &tok, .sampler = smp, .max_new_tokens = 10, .seed = 5};
    m2_model_policy mp2 = {.model = m, .sys1 = a2, .sys2 = a2, .tok = &tok, .sampler = smp, .max_new_tokens = 10, .seed = 6};
    m2_policy p1 = m2_model_policy_as(&mp1), p2 = m2_model_policy_as(&mp2);
    play alone = {.env = env, .p1 = &p1, .p2 = &p2, .cfg = &cfg, .first = 2, .n = 1};
    play after = alone;
    after.first = 0;
    after.n = 3;
    char *a = records_of(play_eval, &alone), *b = records_of(play_eval, &after);
    assert_string_equal(last_line(a), last_line(b));
    assert_string_equal(a, last_line(a));   /* one record */
    /* another round samples another episode (the same task and environment seed) */
    m2_loop_cfg cfg1 = cfg;
    cfg1.round = 1;
    play other = alone;
    other.cfg = &cfg1;
    char *c = records_of(play_eval, &other);
    assert_string_not_equal(a, c);
    /* another System 2 seed too */
    mp2.seed = 7;
    char *d = records_of(play_eval, &alone);
    assert_string_not_equal(a, d);
    mp2.seed = 6;
    /* online collection: position 4 of the train order alone and after position 1 */
    int pos[2] = {1, 4};
    play ca = {.env = env, .p1 = &p1, .p2 = &p2, .cfg = &cfg, .n = 1, .pos = &pos[1]}, cb = ca;
    cb.n = 2;
    cb.pos = pos;
    char *e = records_of(play_collect, &ca), *g = records_of(play_collect, &cb);
    assert_string_equal(last_line(e), last_line(g));
    free(a); free(b); free(c); free(d); free(e); free(g);
    m2_model_policy_free(&mp1);
    m2_model_policy_free(&mp2);
    m2_env_destroy(env);
    m2_model_free(m);
}

static void context_truncation(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_traj c;
    m2_traj_init(&c);
    m2_traj_set_prompt(&c, "PP", &err);
    m2_traj_push_state(&c, "s0", &err);
    m2_traj_push_action(&c, "a0", 0, 0, &err);
    m2_traj_push_state(&c, "s1", &err);
    m2_traj_push_action(&c, "a1", 0, 0, &err);
    m2_traj_push_state(&c, "s2", &err);
    int32_t *ids;
    int n;
    /* full: PP s0 a0 EOS s1 a1 EOS s2 = 2 + 2 + 3 + 2 + 3 + 2 = 14 */
    assert_int_equal(m2_pack_context(&tok, &c, 0, &ids, &n, &err), 0);
    assert_int_equal(n, 14);
    free(ids);
    /* 10: drop (s0, a0) -> PP s1 a1 EOS s2 = 9 */
    assert_int_equal(m2_pack_context(&tok, &c, 10, &ids, &n, &err), 0);
    assert_int_equal(n, 9);
    assert_int_equal(ids[0], 'P');
    assert_int_equal(ids[2], 's');
    assert_int_equal(ids[3], '1');
    free(ids);
    /* 5: PP s2 = 4 */
    assert_int_equal(m2_pack_context(&tok, &c, 5, &ids, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(ids[3], '2');
    free(ids);
    /* 3: not even the prompt and the current state */
    assert_int_equal(m2_pack_context(&tok, &c, 3, &ids, &n, &err), -1);
    assert_non_null(strstr(err.msg, "current state"));
    m2_traj_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_policy_loop),
        cmocka_unit_test(policy_cache_reuses_prefixes),
        cmocka_unit_test(episode_samples_do_not_depend_on_order),
        cmocka_unit_test(context_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
