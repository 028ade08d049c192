/* System 2's score mode (sys2.action_mode: score, agent/choose.h): the engine's candidate scoring
 * (m2_kv_score) against a plain training forward of each candidate, the pick rule (argmax; draws
 * follow the softmax), the model policy's choice against independently computed scores, the loop's
 * candidates (every admissible action with both flags, nothing else) and its flag rule, and the
 * offline anchor's candidates (pipe/anchor_cands.h: replayed states whose admissible sets hold the
 * expert's own actions). */
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
#include "model/model.h"
#include "pipe/anchor_cands.h"
#include "tmpdir.h"

static m2_model *tiny_model(int ctx) {
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

static m2_adapter *random_adapter(m2_model *m, const char *name, uint64_t seed) {
    m2_err err = {0};
    m2_lora_config lc = {"", 2, 4.f, 0.f, M2_LORA_Q | M2_LORA_V};
    snprintf(lc.name, sizeof lc.name, "%s", name);
    m2_adapter *a = m2_adapter_add(m, &lc, seed, &err);
    assert_non_null(a);
    m2_rng r;
    m2_rng_seed(&r, seed + 7);
    for (size_t i = 0; i < a->params.n; i++) a->params.w[i] = 0.5f * m2_rng_normal(&r);
    return a;
}

/* log p(cand | prompt) by a training-mode-free forward of prompt + cand: sum or mean of its rows */
static float forward_score(m2_model *m, m2_adapter *a, const int32_t *prompt, int P, const int32_t *cand, int L,
                           int mean) {
    m2_err err = {0};
    int n = P + L;
    int32_t *seq = malloc((size_t)n * sizeof *seq), *tg = malloc((size_t)n * sizeof *tg);
    float *lp = malloc((size_t)n * sizeof *lp);
    memcpy(seq, prompt, (size_t)P * sizeof *seq);
    memcpy(seq + P, cand, (size_t)L * sizeof *seq);
    for (int i = 0; i < n; i++) tg[i] = i >= P - 1 && i < n - 1 ? seq[i + 1] : -1;
    m2_ctx *c = m2_ctx_create(m, n, 0, &err);
    assert_non_null(c);
    m2_batch b = {.n_seq = 1, .seq_len = &n, .tokens = seq};
    assert_int_equal(m2_forward(c, &b, a, 0, &err), 0);
    m2_ctx_logprobs(c, tg, lp);
    double s = 0;
    for (int i = P - 1; i < n - 1; i++) s += lp[i];
    m2_ctx_free(c);
    free(seq); free(tg); free(lp);
    return (float)(mean ? s / L : s);
}

/* 20 candidates (more than one batched pass holds) of 1..6 tokens after a 30-token prompt: every
 * score equals the plain forward's, for sum and mean, with a cold cache and with a reused prefix;
 * the cache then holds the prompt but its last token */
static void kv_score_equals_forward(void **st) {
    (void)st;
    m2_model *m = tiny_model(128);
    m2_adapter *a = random_adapter(m, "s", 5);
    m2_err err = {0};
    m2_rng r;
    m2_rng_seed(&r, 11);
    enum { P = 30, NC = 20 };
    int32_t prompt[P], cbuf[NC][6];
    const int32_t *cands[NC];
    int lens[NC];
    for (int i = 0; i < P; i++) prompt[i] = 32 + (int32_t)m2_rng_below(&r, 90);
    for (int c = 0; c < NC; c++) {
        lens[c] = 1 + c % 6;
        for (int j = 0; j < lens[c]; j++) cbuf[c][j] = 32 + (int32_t)m2_rng_below(&r, 90);
        cands[c] = cbuf[c];
    }
    m2_kv_cache *kv = m2_kv_create(m, 1, 64, &err);
    assert_non_null(kv);
    float got[NC];
    for (int mean = 0; mean < 2; mean++) {
        for (int reuse = 0; reuse < 2; reuse++) {
            if (reuse) {   /* a shorter prompt first: the second call reuses its 11 cached positions */
                float tmp[NC];
                assert_int_equal(m2_kv_score(m, a, kv, prompt, 12, 0, NC, cands, lens, mean, tmp, &err), 0);
                assert_int_equal(kv->len[0], 11);
            } else {
                kv->len[0] = 0;
            }
            assert_int_equal(m2_kv_score(m, a, kv, prompt, P, reuse ? 11 : 0, NC, cands, lens, mean, got, &err), 0);
            assert_int_equal(kv->len[0], P - 1);
            for (int c = 0; c < NC; c++) {
                float want = forward_score(m, a, prompt, P, cands[c], lens[c], mean);
                assert_float_equal(got[c], want, 1e-4);
            }
        }
    }
    /* the adapter is used: the base scores differently */
    float base[NC];
    kv->len[0] = 0;
    assert_int_equal(m2_kv_score(m, NULL, kv, prompt, P, 0, NC, cands, lens, 0, base, &err), 0);
    int differ = 0;
    for (int c = 0; c < NC; c++) differ += fabsf(base[c] - forward_score(m, a, prompt, P, cands[c], lens[c], 0)) > 1e-3f;
    assert_true(differ > NC / 2);
    /* bad input: an empty candidate, a candidate past the context */
    int bad = 0;
    assert_int_equal(m2_kv_score(m, a, kv, prompt, P, 0, 1, cands, &bad, 0, got, &err), -1);
    int toolong = 200;
    assert_int_equal(m2_kv_score(m, a, kv, prompt, P, 0, 1, cands, &toolong, 0, got, &err), -1);
    m2_kv_free(kv);
    m2_model_free(m);
}

/* The pick: argmax at temperature 0 (first on ties), draws whose frequencies follow
 * softmax(score / T), the same draws for shifted scores */
static void choose_follows_the_softmax(void **st) {
    (void)st;
    const float s[4] = {-1.f, 0.f, -0.5f, -3.f};
    const float ties[3] = {2.f, 5.f, 5.f};
    m2_rng r;
    m2_rng_seed(&r, 1);
    assert_int_equal(m2_choose_scored(s, 4, 0.f, &r), 1);
    assert_int_equal(m2_choose_scored(ties, 3, 0.f, &r), 1);
    const float temps[2] = {1.f, 0.5f};
    enum { DRAWS = 40000 };
    for (int k = 0; k < 2; k++) {
        double z = 0, p[4];
        for (int i = 0; i < 4; i++) z += exp(s[i] / temps[k]);
        for (int i = 0; i < 4; i++) p[i] = exp(s[i] / temps[k]) / z;
        int cnt[4] = {0};
        m2_rng_seed(&r, 7);
        for (int d = 0; d < DRAWS; d++) cnt[m2_choose_scored(s, 4, temps[k], &r)]++;
        for (int i = 0; i < 4; i++) assert_float_equal((double)cnt[i] / DRAWS, p[i], 0.01);
    }
    float sh[4];
    for (int i = 0; i < 4; i++) sh[i] = s[i] - 40.f;
    m2_rng a, b;
    m2_rng_seed(&a, 9);
    m2_rng_seed(&b, 9);
    for (int d = 0; d < 100; d++) assert_int_equal(m2_choose_scored(s, 4, 1.f, &a), m2_choose_scored(sh, 4, 1.f, &b));
}

static void candidates_have_both_flags(void **st) {
    (void)st;
    const char *acts[2] = {"get 1 oak log", "inventory"};
    char **c;
    m2_err err = {0};
    assert_int_equal(m2_action_candidates(acts, 2, &c, &err), 0);
    assert_string_equal(c[0], "get 1 oak log; False");
    assert_string_equal(c[1], "get 1 oak log; True");
    assert_string_equal(c[2], "inventory; False");
    assert_string_equal(c[3], "inventory; True");
    m2_candidates_free(c, 4);
}

/* The model policy's choice is the argmax of the candidates' log-probs after the packed context
 * (tokens + EOS, computed here by plain forwards); sampled choices are reproducible per seed and
 * follow those log-probs' softmax. */
static void policy_choice_is_the_scored_argmax(void **st) {
    (void)st;
    m2_model *m = tiny_model(256);
    m2_adapter *a = random_adapter(m, "sys2", 3);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_err err = {0};
    m2_traj ctx;
    m2_traj_init(&ctx);
    assert_int_equal(m2_traj_set_prompt(&ctx, "Act. Subtask: craft 1 stick", &err), 0);
    assert_int_equal(m2_traj_push_state(&ctx, "Obs: you have 2 planks", &err), 0);
    const char *acts[3] = {"craft 4 stick using 2 planks", "get 1 planks", "inventory"};
    char **cands;
    assert_int_equal(m2_action_candidates(acts, 3, &cands, &err), 0);
    /* independent scores: pack, encode + EOS, plain forward (sum) */
    int32_t *ids;
    int n;
    assert_int_equal(m2_pack_context(&tok, &ctx, 0, &ids, &n, &err), 0);
    float want[6];
    int best = 0;
    for (int i = 0; i < 6; i++) {
        int k = tok.encode(tok.ctx, cands[i], NULL, 0, &err);
        int32_t *c = malloc((size_t)(k + 1) * sizeof *c);
        tok.encode(tok.ctx, cands[i], c, k, &err);
        c[k] = tok.eos_id;
        want[i] = forward_score(m, a, ids, n, c, k + 1, 0);
        if (want[i] > want[best]) best = i;
        free(c);
    }
    m2_model_policy mp = {.model = m, .sys1 = a, .sys2 = a, .tok = &tok, .sampler = {0.f, 0, 0.f}, .max_new_tokens = 16,
                          .seed = 4};
    m2_policy p = m2_model_policy_as(&mp);
    int pick, np, ng;
    assert_non_null(p.choose);
    assert_int_equal(p.choose(p.ctx, M2_ROLE_SYS2, &ctx, (const char *const *)cands, 6, &pick, &np, &ng, &err), 0);
    assert_int_equal(pick, best);
    assert_int_equal(np, n);
    int total = 0;
    for (int i = 0; i < 6; i++) total += (int)strlen(cands[i]) + 1;
    assert_int_equal(ng, total);   /* every candidate's tokens were scored */
    /* sampled at T = 2 (scores of this random model are far apart): frequencies follow the softmax */
    mp.sampler.temperature = 2.f;
    double z = 0, pr[6];
    for (int i = 0; i < 6; i++) z += exp((want[i] - want[best]) / 2.0);
    for (int i = 0; i < 6; i++) pr[i] = exp((want[i] - want[best]) / 2.0) / z;
    enum { DRAWS = 600 };
    int cnt[6] = {0};
    for (int d = 0; d < DRAWS; d++) {
        assert_int_equal(p.choose(p.ctx, M2_ROLE_SYS2, &ctx, (const char *const *)cands, 6, &pick, &np, &ng, &err), 0);
        cnt[pick]++;
    }
    for (int i = 0; i < 6; i++) assert_float_equal((double)cnt[i] / DRAWS, pr[i], 0.07);
    /* the same seed and call counter: the same draw */
    long calls = mp.calls;
    int p1, p2;
    mp.calls = 17;
    p.choose(p.ctx, M2_ROLE_SYS2, &ctx, (const char *const *)cands, 6, &p1, &np, &ng, &err);
    mp.calls = 17;
    p.choose(p.ctx, M2_ROLE_SYS2, &ctx, (const char *const *)cands, 6, &p2, &np, &ng, &err);
    assert_int_equal(p1, p2);
    (void)calls;
    m2_model_policy_free(&mp);
    m2_candidates_free(cands, 6);
    free(ids);
    m2_traj_free(&ctx);
    m2_model_free(m);
}

/* ---- the loop in score mode, with scripted policies ---- */

typedef struct scripted {
    m2_env *env;
    m2_rng rng;
    int calls, bad_sets;
    int flag_every;      /* > 0: pick the True candidate every flag_every-th call, else False */
    m2_policy inner;     /* a model policy to check (its choose), or none */
} scripted;

/* Checks the candidates against the environment's admissible actions in the current state (both
 * flags, in order, nothing else), then picks one. */
static int scripted_choose(void *ctx, m2_role role, const m2_traj *c, const char *const *cands, int n, int *pick,
                           int *np, int *ng, m2_err *err) {
    scripted *s = ctx;
    assert_int_equal(role, M2_ROLE_SYS2);
    const char *const *acts;
    int na;
    assert_int_equal(s->env->cls->admissible(s->env, &acts, &na), 0);
    if (n != 2 * na) s->bad_sets++;
    for (int i = 0; i < na && n == 2 * na; i++) {
        char f[1100], t[1100];
        snprintf(f, sizeof f, "%s; False", acts[i]);
        snprintf(t, sizeof t, "%s; True", acts[i]);
        if (strcmp(cands[2 * i], f) || strcmp(cands[2 * i + 1], t)) s->bad_sets++;
    }
    s->calls++;
    if (s->inner.choose) return s->inner.choose(s->inner.ctx, role, c, cands, n, pick, np, ng, err);
    int k = (int)m2_rng_below(&s->rng, (uint32_t)(n / 2));
    *pick = 2 * k + (s->flag_every > 0 && s->calls % s->flag_every == 0);
    *np = 1;
    *ng = 1;
    return 0;
}

/* System 1: always the same sub-goal */
static int planner(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    (void)ctx; (void)role; (void)c; (void)err;
    *out = strdup("craft 1 stick");
    *np = *ng = 1;
    return 0;
}

static int no_generate(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    (void)ctx; (void)role; (void)c; (void)out; (void)np; (void)ng;
    return m2_errorf(err, M2_EINVAL, "score mode must not generate");
}

static int is_admissible_now(const char *const *acts, int n, const char *a) {
    for (int i = 0; i < n; i++) if (!strcmp(acts[i], a)) return 1;
    return 0;
}

static void loop_chooses_among_admissible_actions(void **st) {
    (void)st;
    m2_env *env;
    m2_err err = {0};
    const char *envs[2] = {"textcraft", "alfworld"};
    for (int e = 0; e < 2; e++) {
        assert_int_equal(m2_env_create(envs[e], NULL, &env, &err), 0);
        scripted s = {.env = env, .flag_every = 3};
        m2_rng_seed(&s.rng, 5);
        m2_policy p1 = {.generate = planner}, p2 = {.ctx = &s, .generate = no_generate, .choose = scripted_choose};
        m2_loop_cfg cfg;
        m2_loop_cfg_default(&cfg);
        cfg.step_limit = 30;
        cfg.subgoal_budget = 5;
        cfg.action_mode = M2_ACTION_MODE_SCORE;
        m2_episode ep;
        assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 1, 3, &p1, &p2, &cfg, &ep, &err), 0);
        assert_int_equal(s.bad_sets, 0);
        assert_int_equal(s.calls, ep.steps);
        assert_true(ep.steps > 0);
        /* replay: every action was admissible where it was taken; its text is a training target */
        m2_step_result sr;
        assert_int_equal(env->cls->reset(env, NULL, M2_SPLIT_TRAIN, 1, 3, &sr, &err), 0);
        for (int k = 0; k < ep.steps; k++) {
            const m2_step_rec *r = &ep.step[k];
            const char *const *acts;
            int na;
            env->cls->admissible(env, &acts, &na);
            assert_true(is_admissible_now(acts, na, r->action));
            assert_int_equal(r->parsed, 1);
            assert_int_equal(r->flag, (k + 1) % 3 == 0);   /* the flag is the chosen candidate's */
            char *want = m2_prompt_low_action(r->action, r->flag);
            assert_string_equal(r->raw, want);
            free(want);
            env->cls->step(env, r->action, &sr);
        }
        /* the flag ends the sub-goal: System 1 is asked again after every True (or the budget) */
        for (int g = 0; g < ep.n_sub; g++)
            if (g < ep.n_sub - 1) assert_true(ep.sub[g].flagged || ep.sub[g].n == cfg.subgoal_budget);
        for (int g = 0; g < ep.n_sub; g++)
            if (ep.sub[g].flagged) assert_int_equal(ep.step[ep.sub[g].first + ep.sub[g].n - 1].flag, 1);
        m2_episode_free(&ep);
        /* a policy that cannot score is refused in score mode */
        m2_policy gen_only = {.generate = planner};
        assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 1, 3, &p1, &gen_only, &cfg, &ep, &err), -1);
        assert_non_null(strstr(err.msg, "score"));
        m2_env_destroy(env);
    }
}

/* A tiny random model in score mode, sampled at T = 1 (rollouts) and greedy (evaluation): its
 * actions are admissible, its greedy episodes reproducible, the flat loop too */
static void model_policy_in_score_mode(void **st) {
    (void)st;
    m2_model *m = tiny_model(4096);   /* byte tokens: TextCraft contexts of a few thousand */
    m2_adapter *a = random_adapter(m, "sys2", 3);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_env *env;
    m2_err err = {0};
    assert_int_equal(m2_env_create("textcraft", NULL, &env, &err), 0);
    char *first = NULL;
    for (int run = 0; run < 3; run++) {
        m2_model_policy mp = {.model = m, .sys1 = a, .sys2 = a, .tok = &tok, .sampler = {run == 2 ? 1.f : 0.f, 0, 0.f},
                              .max_new_tokens = 16, .seed = 8};
        scripted s = {.env = env, .inner = m2_model_policy_as(&mp)};
        m2_policy p1 = {.generate = planner}, p2 = {.ctx = &s, .generate = no_generate, .choose = scripted_choose};
        m2_loop_cfg cfg;
        m2_loop_cfg_default(&cfg);
        cfg.step_limit = 8;
        cfg.subgoal_budget = 3;
        cfg.action_mode = M2_ACTION_MODE_SCORE;
        cfg.flat = run == 1;
        m2_episode ep;
        assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 1, &p1, &p2, &cfg, &ep, &err), 0);
        assert_int_equal(s.bad_sets, 0);
        assert_int_equal(ep.parse_fail, 0);
        m2_step_result sr;
        env->cls->reset(env, NULL, M2_SPLIT_ID, 0, 1, &sr, &err);
        for (int k = 0; k < ep.steps; k++) {
            const char *const *acts;
            int na;
            env->cls->admissible(env, &acts, &na);
            assert_true(is_admissible_now(acts, na, ep.step[k].action));
            env->cls->step(env, ep.step[k].action, &sr);
        }
        assert_true(ep.sys2_gen_tok > 0);
        char *js = m2_episode_to_json(&ep);
        if (run == 0) {
            first = js;
            /* greedy again: the same episode */
            m2_model_policy_reset(&mp);
            m2_episode e2;
            assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 1, &p1, &p2, &cfg, &e2, &err), 0);
            char *j2 = m2_episode_to_json(&e2);
            assert_string_equal(first, j2);
            free(j2);
            m2_episode_free(&e2);
        } else {
            free(js);
        }
        m2_episode_free(&ep);
        m2_model_policy_free(&mp);
    }
    free(first);
    m2_env_destroy(env);
    m2_model_free(m);
}

/* ---- the offline anchor's candidates ---- */

/* The data stage's ALFWorld episodes, replayed: every state of the offline set is in the table, and
 * every expert state's candidates hold the expert's own action (ALFWorld's admissible set changes
 * with every move, so a replay one step off would miss it); a prefix not in the data gets none. */
static void anchor_candidates_replay_the_data(void **st) {
    (void)st;
    char dir[256];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "action_mode"), 0);
    m2_run_config *cfg = malloc(sizeof *cfg);
    m2_err err = {0};
    char *ov[4] = {"env.name=alfworld", "data.expert_episodes=4", "data.medium_episodes=2", "data.max_seq_len=100000"};
    assert_int_equal(m2_run_config_load(cfg, NULL, 4, ov, &err), 0);
    assert_int_equal(pw_data_ensure(cfg, dir, NULL, &err), 0);
    pw_world w;
    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    assert_int_equal(m2_env_create("alfworld", NULL, &w.env, &err), 0);
    m2_byte_tok_iface(&w.tok, M2_BOS_NONE);
    pw_anchor_cands *ac;
    assert_int_equal(pw_anchor_cands_build(&w, "low", 100000, &ac, &err), 0);
    /* the offline set's records, packed as the stage packs them */
    char path[400];
    int states = 0, expert_hits = 0, expert_states = 0;
    for (int v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/artifacts/data/%s/low.jsonl", dir, v ? "medium" : "expert");
        m2_low_record *r;
        int nr;
        assert_int_equal(m2_low_records_read(path, &r, &nr, &err), 0);
        for (int i = 0; i < nr; i++) {
            m2_traj t;
            assert_int_equal(m2_low_record_traj(&r[i], NULL, "Obs: ", &t, &err), 0);
            m2_packed p;
            assert_int_equal(m2_pack_traj(&w.tok, &t, 100000, &p, &err), 0);
            for (int k = 0; k < p.n_actions; k++) {
                const int32_t *const *cand;
                const int *len;
                int n;
                assert_int_equal(pw_anchor_cands_lookup(ac, p.ids, p.state_last[k] + 1, &cand, &len, &n, &err), 0);
                assert_true(n > 0);
                states++;
                if (v) continue;
                expert_states++;
                /* the dataset action "a; flag" + EOS among the candidates */
                int L = (int)strlen(t.actions[k]);
                for (int c = 0; c < n; c++) {
                    if (len[c] != L + 1 || cand[c][L] != w.tok.eos_id) continue;
                    int same = 1;
                    for (int j = 0; j < L && same; j++) same = cand[c][j] == (unsigned char)t.actions[k][j];
                    if (same) { expert_hits++; break; }
                }
            }
            m2_packed_free(&p);
            m2_traj_free(&t);
        }
        m2_low_records_free(r, nr);
    }
    assert_true(expert_states > 10);
    assert_int_equal(expert_hits, expert_states);
    assert_int_equal(pw_anchor_cands_size(ac), states);
    const int32_t unknown[3] = {1, 2, 3};
    const int32_t *const *cand;
    const int *len;
    int n = -1;
    assert_int_equal(pw_anchor_cands_lookup(ac, unknown, 3, &cand, &len, &n, &err), 0);
    assert_int_equal(n, 0);
    pw_anchor_cands_free(ac);
    m2_env_destroy(w.env);
    free(cfg);
    m2_remove_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_score_equals_forward),
        cmocka_unit_test(choose_follows_the_softmax),
        cmocka_unit_test(candidates_have_both_flags),
        cmocka_unit_test(policy_choice_is_the_scored_argmax),
        cmocka_unit_test(loop_chooses_among_admissible_actions),
        cmocka_unit_test(model_policy_in_score_mode),
        cmocka_unit_test(anchor_candidates_replay_the_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
