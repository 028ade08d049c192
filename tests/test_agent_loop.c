/* agent/: the action parser, the replay buffer, and the System 1 / System 2 control loop on a tiny
 * fake environment written here (implementing env.h) with an oracle-backed System 2 and a
 * segmenter-backed System 1: call counts, token accounting, step limit, JSONL output, eval
 * aggregation, segments for the replay buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"
#include "data/episodes.h"
#include "core/fsutil.h"
#include "pipe/report.h"
#include "tmpdir.h"

/* ---------------- the fake environment: collect two apples, then eat one ----------------
 * obs "a<N>" (N apples held); "take apple" -> N+1; "eat apple" with N >= 2 -> "yum", reward 1,
 * done, won; with N < 2 -> "Nothing happens." (valid command); anything else -> "Nothing happens."
 * and valid 0. Task text "T". Oracle: take until 2, then eat. Segmenter: runs of equal actions,
 * "take apple" -> "collect apples", "eat apple" -> "eat". describe: difficulty easy/hard by index. */
typedef struct apples { m2_env base; int n; char obs[64]; } apples;

static int ap_create(m2_env **out, const char *data_path, m2_err *err) {
    apples *a = calloc(1, sizeof *a);
    if (!a) return m2_errorf(err, M2_ENOMEM, "apples: oom");
    extern const m2_env_class apples_class;
    a->base.cls = &apples_class;
    *out = &a->base;
    return 0;
}
static void ap_destroy(m2_env *e) { free(e); }
static int ap_num_episodes(m2_env *e, const char *task, m2_split s, m2_err *err) { return 4; }
static int ap_reset(m2_env *e, const char *task, m2_split s, int index, uint64_t seed, m2_step_result *r, m2_err *err) {
    apples *a = (apples *)e;
    if (index < 0 || index >= 4) return m2_errorf(err, M2_EINVAL, "apples: index %d out of range", index);
    a->n = 0;
    strcpy(a->obs, "a0");
    *r = (m2_step_result){a->obs, 0, 0, 0, 0, 1};
    return 0;
}
static const char *ap_task(const m2_env *e) { return "T"; }
static int ap_step(m2_env *e, const char *action, m2_step_result *r) {
    apples *a = (apples *)e;
    *r = (m2_step_result){a->obs, 0, 0, 0, 0, 1};
    if (!strcmp(action, "take apple")) {
        a->n++;
        snprintf(a->obs, sizeof a->obs, "a%d", a->n);
    } else if (!strcmp(action, "eat apple") && a->n >= 2) {
        strcpy(a->obs, "yum");
        r->reward = 1; r->done = 1; r->won = 1; r->score = 1;
    } else {
        strcpy(a->obs, "Nothing happens.");
        r->valid = !strcmp(action, "eat apple");
    }
    r->observation = a->obs;
    return 0;
}
static int ap_oracle(m2_env *e, char *buf, size_t cap, m2_err *err) {
    snprintf(buf, cap, "%s", ((apples *)e)->n < 2 ? "take apple" : "eat apple");
    return 0;
}
static int ap_segment(const m2_env *e, const char *const *actions, const char *const *obs, int n, m2_subgoal *out, int cap) {
    int k = 0;
    for (int i = 0; i < n && k < cap; i++) {
        if (i > 0 && !strcmp(actions[i], actions[i - 1])) { out[k - 1].last = i; continue; }
        snprintf(out[k].text, sizeof out[k].text, "%s", !strcmp(actions[i], "take apple") ? "collect apples" : "eat");
        out[k].first = out[k].last = i;
        k++;
    }
    return k;
}
/* Predicates: "collect apples" holds with 2 apples held, "eat" once eaten. */
static int ap_subgoal_done(m2_env *e, const char *sg) {
    apples *a = (apples *)e;
    if (!strcmp(sg, "collect apples")) return a->n >= 2;
    if (!strcmp(sg, "eat")) return !strcmp(a->obs, "yum");
    return 0;
}
static char *ap_describe(m2_env *e, const char *task, m2_split s, int index, m2_err *err) {
    char *d = malloc(64);
    snprintf(d, 64, "{\"difficulty\":\"%s\"}", index % 2 ? "hard" : "easy");
    return d;
}
const m2_env_class apples_class = {
    .name = "apples", .create = ap_create, .destroy = ap_destroy, .num_episodes = ap_num_episodes,
    .reset = ap_reset, .task_text = ap_task, .step = ap_step, .oracle_next = ap_oracle,
    .segment = ap_segment, .describe = ap_describe, .subgoal_done = ap_subgoal_done,
};

/* ---------------- parser ---------------- */

static void parser_cases(void **state) {
    char a[64];
    int f;
    assert_int_equal(m2_parse_action("take apple; True", a, sizeof a, &f), 1);
    assert_string_equal(a, "take apple"); assert_int_equal(f, 1);
    assert_int_equal(m2_parse_action("go to desk 1 ;false", a, sizeof a, &f), 1);
    assert_string_equal(a, "go to desk 1"); assert_int_equal(f, 0);
    assert_int_equal(m2_parse_action("craft 1 stick using 2 planks; TRUE extra", a, sizeof a, &f), 1);
    assert_string_equal(a, "craft 1 stick using 2 planks"); assert_int_equal(f, 1);
    /* lazy group: the FIRST "; true|false" wins */
    assert_int_equal(m2_parse_action("a; b; true", a, sizeof a, &f), 1);
    assert_string_equal(a, "a; b");   /* "; b" is not a flag, so the match ends at "; true" */
    assert_int_equal(m2_parse_action("x; false; true", a, sizeof a, &f), 1);
    assert_string_equal(a, "x"); assert_int_equal(f, 0);
    /* '.' does not cross a newline: the match starts on the line that has the flag */
    assert_int_equal(m2_parse_action("thinking...\nopen fridge 1; False", a, sizeof a, &f), 1);
    assert_string_equal(a, "open fridge 1");
    /* \s does cross a newline between the action and the ';' */
    assert_int_equal(m2_parse_action("look\n; true", a, sizeof a, &f), 1);
    assert_string_equal(a, "look");
    /* fallbacks */
    assert_int_equal(m2_parse_action("take apple", a, sizeof a, &f), 0);
    assert_string_equal(a, "None"); assert_int_equal(f, 0);
    assert_int_equal(m2_parse_action("take; maybe", a, sizeof a, &f), 0);
    assert_int_equal(m2_parse_action("", a, sizeof a, &f), 0);
    assert_int_equal(m2_parse_action(NULL, a, sizeof a, &f), 0);
    /* cut to the buffer */
    char small[5];
    assert_int_equal(m2_parse_action("inventory; true", small, sizeof small, &f), 1);
    assert_string_equal(small, "inve");
    /* sub-goals: first non-empty line, trimmed */
    m2_parse_subgoal("\n  get 2 logs  \ncraft planks", a, sizeof a);
    assert_string_equal(a, "get 2 logs");
}

/* ---------------- control loop ---------------- */

static m2_loop_cfg short_cfg(void) {
    m2_loop_cfg c;
    m2_loop_cfg_default(&c);
    c.high_prompt = "H";
    c.low_prompt = "L";
    return c;
}

static void loop_expert_episode(void **state) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_expert_plan plan;
    assert_int_equal(m2_expert_plan_build(&apples_class, NULL, NULL, M2_SPLIT_ID, 0, 7, 50, &tok, &plan, &err), 0);
    assert_int_equal(plan.n_actions, 3);
    assert_int_equal(plan.n_sub, 2);
    m2_policy s1 = m2_expert_sys1_policy(&plan), s2 = m2_expert_sys2_policy(&plan);
    m2_env *env = NULL;
    assert_int_equal(ap_create(&env, NULL, &err), 0);
    m2_loop_cfg cfg = short_cfg();
    m2_episode ep;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, 0, 7, &s1, &s2, &cfg, &ep, &err), 0);
    assert_true(ep.success);
    assert_int_equal(ep.steps, 3);
    assert_int_equal(ep.sys1_calls, 2);   /* at the start and after "take apple; True" */
    assert_int_equal(ep.sys2_calls, 3);
    assert_int_equal(ep.invalid, 0);
    assert_int_equal(ep.n_sub, 2);
    assert_string_equal(ep.sub[0].text, "collect apples");
    assert_string_equal(ep.sub[1].state, "Group action: ['take apple', 'take apple']. Current observation: a2");
    /* Token accounting with the byte tokenizer (1 token per byte, EOS after each action):
     * System 1 call 1: "H T" (3) + "Group action: []. Current observation: a0" (41)          = 44
     *          gen "collect apples" (14) + EOS                                              = 15
     * System 2 call 1: "L Subtask: collect apples" (25) + "Obs: a0" (7)                     = 32
     *          gen "take apple; False" (17) + EOS                                           = 18
     * System 2 call 2: 32 + "take apple; False" EOS (18) + "Obs: a1" (7)                    = 57
     *          gen "take apple; True" (16) + EOS                                            = 17
     * System 1 call 2: 44 + "collect apples" EOS (15)
     *          + "Group action: ['take apple', 'take apple']. Current observation: a2" (67) = 126
     *          gen "eat" + EOS                                                              = 4
     * System 2 call 3: "L Subtask: eat" (14) + "Obs: a2" (7)                                = 21
     *          gen "eat apple; True" (15) + EOS                                             = 16
     * sys1: prompt 44 + 126 = 170, gen 15 + 4 = 19; sys2: prompt 32 + 57 + 21 = 110, gen 18 + 17 + 16 = 51 */
    assert_int_equal(ep.sys1_prompt_tok, 170);
    assert_int_equal(ep.sys1_gen_tok, 19);
    assert_int_equal(ep.sys2_prompt_tok, 110);
    assert_int_equal(ep.sys2_gen_tok, 51);

    /* JSONL record */
    ep.task_type = strdup("easy");
    char *line = m2_episode_to_json(&ep);
    assert_non_null(line);
    assert_null(strchr(line, '\n'));
    cJSON *o = cJSON_Parse(line);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "env")->valuestring, "apples");
    assert_string_equal(cJSON_GetObjectItem(o, "split")->valuestring, "id");
    assert_int_equal(cJSON_GetObjectItem(o, "index")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(o, "seed")->valueint, 7);
    assert_int_equal(cJSON_GetObjectItem(o, "steps")->valueint, 3);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "success")));
    assert_int_equal(cJSON_GetObjectItem(o, "score")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(o, "tokens_total")->valueint, 170 + 19 + 110 + 51);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "tokens"), "total"));   /* members sum to it */
    cJSON *tr = cJSON_GetObjectItem(o, "transcript");
    assert_int_equal(cJSON_GetArraySize(tr), 2);
    cJSON *st1 = cJSON_GetObjectItem(cJSON_GetArrayItem(tr, 0), "steps");
    assert_int_equal(cJSON_GetArraySize(st1), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(st1, 1), "raw")->valuestring, "take apple; True");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(st1, 1), "obs")->valuestring, "a2");
    cJSON_Delete(o);
    free(line);

    /* System 2 segments for the replay buffer */
    m2_traj *segs;
    int ns;
    assert_int_equal(m2_episode_segments(&ep, &cfg, &segs, &ns, &err), 0);
    assert_int_equal(ns, 2);
    assert_string_equal(segs[0].prompt, "L Subtask: collect apples");
    assert_int_equal(segs[0].n_actions, 2);
    assert_int_equal(segs[0].n_states, 3);   /* o_0, o_1, o_2 */
    assert_string_equal(segs[0].states[2], "Obs: a2");
    assert_string_equal(segs[1].actions[0], "eat apple; True");
    /* System 2's one reward: 1 on the last step of a sub-goal flagged done while it holds; every
     * segment ends terminal */
    assert_true(segs[1].rewards[0] == 1.f && segs[1].dones[0] == 1.f);
    assert_true(segs[0].rewards[0] == 0.f && segs[0].dones[0] == 0.f);
    assert_true(segs[0].rewards[1] == 1.f && segs[0].dones[1] == 1.f);
    assert_true(m2_traj_return(&segs[1]) == 1.f && m2_traj_return(&segs[0]) == 1.f);
    assert_true(ep.sub[0].success && ep.sub[1].success);
    /* they pack */
    m2_packed p;
    assert_int_equal(m2_pack_traj(&tok, &segs[0], 0, &p, &err), 0);
    assert_int_equal(p.n_actions, 2);
    assert_true(p.has_final_state);
    m2_packed_free(&p);
    for (int i = 0; i < ns; i++) m2_traj_free(&segs[i]);
    free(segs);
    m2_episode_free(&ep);
    m2_expert_plan_free(&plan);
    ap_destroy(env);
}

/* A System 2 that never finishes anything: "dance; False" (parsed, unknown to the env). */
static int dancer(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    int *calls = ctx;
    (*calls)++;
    *out = strdup(role == M2_ROLE_SYS1 ? "plan something" : "dance; False");
    *np = 1; *ng = 1;
    return 0;
}
static int babbler(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    *out = strdup("I think I should eat");   /* no "; true|false" */
    *np = 2; *ng = 3;
    return 0;
}
static int failing(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    return m2_errorf(err, M2_EIO, "model exploded");
}

static void loop_step_limit_and_budget(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    ap_create(&env, NULL, &err);
    int c1 = 0, c2 = 0;
    m2_policy s1 = {.ctx = &c1, .generate = dancer}, s2 = {.ctx = &c2, .generate = dancer};
    m2_loop_cfg cfg = short_cfg();
    cfg.step_limit = 10;
    cfg.subgoal_budget = 4;
    m2_episode ep;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 1, 0, &s1, &s2, &cfg, &ep, &err), 0);
    /* 10 steps cut into sub-goals of 4, 4, 2 -> System 1 called 3 times */
    assert_int_equal(ep.steps, 10);
    assert_true(ep.hit_limit);
    assert_int_equal(c1, 3);
    assert_int_equal(c2, 10);
    assert_int_equal(ep.sys1_calls, 3);
    assert_int_equal(ep.invalid, 10);     /* parsed but unknown to the env */
    assert_int_equal(ep.parse_fail, 0);
    assert_false(ep.success);
    assert_int_equal(ep.sys1_prompt_tok, 3);
    assert_int_equal(ep.sys2_gen_tok, 10);
    m2_episode_free(&ep);

    /* no budget: one sub-goal for the whole episode */
    cfg.subgoal_budget = 0;
    c1 = c2 = 0;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 1, 0, &s1, &s2, &cfg, &ep, &err), 0);
    assert_int_equal(c1, 1);
    assert_int_equal(ep.steps, 10);
    m2_episode_free(&ep);

    /* unparsable outputs: ("None", False) is sent, counted invalid and as a parse failure */
    m2_policy sb = {.generate = babbler};
    cfg.subgoal_budget = 3;
    cfg.step_limit = 5;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, &s1, &sb, &cfg, &ep, &err), 0);
    assert_int_equal(ep.steps, 5);
    assert_int_equal(ep.parse_fail, 5);
    assert_int_equal(ep.invalid, 5);
    assert_string_equal(ep.step[0].action, "None");
    assert_int_equal(ep.sys2_prompt_tok, 10);
    assert_int_equal(ep.sys2_gen_tok, 15);
    m2_episode_free(&ep);

    /* flat baseline: no System 1 at all, flags ignored */
    m2_err_clear(&err);
    cfg.flat = 1;
    cfg.step_limit = 6;
    c2 = 0;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, NULL, &s2, &cfg, &ep, &err), 0);
    assert_int_equal(ep.sys1_calls, 0);
    assert_int_equal(ep.n_sub, 1);
    assert_string_equal(ep.sub[0].text, "T");
    assert_int_equal(ep.steps, 6);
    m2_episode_free(&ep);

    /* errors: a failing policy stops the episode with its message; a bad index is reported */
    cfg.flat = 0;
    m2_policy sf = {.generate = failing};
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, &s1, &sf, &cfg, &ep, &err), -1);
    assert_non_null(strstr(err.msg, "model exploded"));
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, &sf, &s2, &cfg, &ep, &err), -1);   /* System 1 fails */
    assert_non_null(strstr(err.msg, "System 1"));
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 9, 0, &s1, &s2, &cfg, &ep, &err), -1);
    assert_non_null(strstr(err.msg, "index 9"));
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, NULL, &s2, &cfg, &ep, &err), -1);
    ap_destroy(env);
}

/* ---------------- evaluation ---------------- */

static void eval_aggregates(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    ap_create(&env, NULL, &err);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_loop_cfg cfg = short_cfg();
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    char dir[64], path[256], edir[256];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "eval"), 0);
    snprintf(edir, sizeof edir, "%s/eval", dir);
    assert_int_equal(m2_mkdir_p(edir, &err), 0);
    snprintf(path, sizeof path, "%s/eval/apples.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    /* 4 ID episodes with the expert (all succeed), then 2 OOD episodes with the dancer (all fail) */
    for (int i = 0; i < 4; i++) {
        m2_expert_plan plan;
        assert_int_equal(m2_expert_plan_build(&apples_class, NULL, NULL, M2_SPLIT_ID, i, 100 + i, 50, &tok, &plan, &err), 0);
        m2_policy s1 = m2_expert_sys1_policy(&plan), s2 = m2_expert_sys2_policy(&plan);
        assert_int_equal(m2_eval_run(env, NULL, M2_SPLIT_ID, i, 1, 100, &s1, &s2, &cfg, f, &agg, &err), 0);
        m2_expert_plan_free(&plan);
    }
    int c = 0;
    m2_policy d = {.ctx = &c, .generate = dancer};
    cfg.step_limit = 5;
    assert_int_equal(m2_eval_run(env, NULL, M2_SPLIT_OOD, 0, 2, 100, &d, &d, &cfg, f, &agg, &err), 0);
    fclose(f);
    const m2_eval_cell *id = m2_eval_agg_find(&agg, "id", "all");
    assert_non_null(id);
    assert_int_equal(id->n, 4);
    assert_int_equal(id->success, 4);
    const m2_eval_cell *hard = m2_eval_agg_find(&agg, "id", "hard");
    assert_non_null(hard);
    assert_int_equal(hard->n, 2);
    char *js = m2_eval_agg_to_json(&agg);
    cJSON *o = cJSON_Parse(js);
    assert_non_null(o);
    cJSON *ida = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "id"), "all");
    assert_true(cJSON_GetObjectItem(ida, "pass@1")->valuedouble == 1.0);
    assert_true(cJSON_GetObjectItem(ida, "sys1_calls")->valuedouble == 2.0);
    /* tokens per episode: the same 3-step episode each time -> 170 + 19 + 110 + 51 = 350 */
    assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(ida, "tokens"), "total")->valuedouble == 350.0);
    cJSON *ooda = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "ood"), "all");
    assert_true(cJSON_GetObjectItem(ooda, "pass@1")->valuedouble == 0.0);
    assert_true(cJSON_GetObjectItem(ooda, "invalid_action_rate")->valuedouble == 1.0);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "ood"), "task_types"), "hard"));
    cJSON_Delete(o);
    free(js);
    /* the JSONL file: one parseable record per episode, with seed = 100 + index */
    char *text;
    size_t len;
    assert_int_equal(m2_read_file(path, &text, &len, &err), 0);
    int lines = 0;
    for (char *p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        cJSON *r = cJSON_Parse(p);
        assert_non_null(r);
        assert_int_equal(cJSON_GetObjectItem(r, "seed")->valueint, 100 + cJSON_GetObjectItem(r, "index")->valueint);
        assert_non_null(cJSON_GetObjectItem(r, "transcript"));
        cJSON_Delete(r);
        lines++;
    }
    assert_int_equal(lines, 6);
    free(text);
    /* the run report (core/report.c) reads these records: ID success 1, tokens 350 per episode */
    m2_result_row *rows;
    int nr;
    assert_int_equal(m2_report_collect(dir, "multi2", &rows, &nr, &err), 0);
    assert_int_equal(nr, 2);
    for (int i = 0; i < nr; i++) {
        if (!strcmp(rows[i].split, "id")) {
            assert_int_equal(rows[i].episodes, 4);
            assert_true(rows[i].success == 1.0);
            assert_true(rows[i].tokens == 350.0);
        }
    }
    free(rows);
    unlink(path);
    rmdir(edir);
    rmdir(dir);
    m2_eval_agg_free(&agg);
    ap_destroy(env);
}

/* ---------------- replay buffer ---------------- */

static void make_seg(m2_traj *t, int id, float r) {
    m2_err err = {0};
    char buf[32];
    m2_traj_init(t);
    snprintf(buf, sizeof buf, "L Subtask: g%d", id);
    m2_traj_set_prompt(t, buf, &err);
    m2_traj_push_state(t, "Obs: o", &err);
    m2_traj_push_action(t, "x; True", r, 1.f, &err);
    m2_traj_push_state(t, "Obs: p", &err);
}

static int seg_id(const m2_replay_item *it) { return atoi(it->seg.prompt + strlen("L Subtask: g")); }

static void replay_buffer(void **state) {
    m2_err err = {0};
    m2_replay r;
    assert_int_equal(m2_replay_init(&r, 5, 0.25f, 42, &err), 0);
    /* seed: 6 offline segments, successes are the even ids; at most 2 taken */
    m2_traj off[6];
    int succ[6];
    for (int i = 0; i < 6; i++) { make_seg(&off[i], i, (float)(i % 2 == 0)); succ[i] = i % 2 == 0; }
    assert_int_equal(m2_replay_seed_offline(&r, off, succ, 6, 2, &err), 2);
    assert_int_equal(m2_replay_size(&r), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(seg_id(m2_replay_at(&r, i)) % 2, 0);
        assert_int_equal(m2_replay_at(&r, i)->online, 0);
    }
    /* online pushes: successes always kept; failures kept about a quarter of the time */
    int kept_fail = 0;
    for (int i = 0; i < 400; i++) {
        m2_traj t;
        make_seg(&t, 100 + i, 0.f);
        int k = m2_replay_push(&r, &t, 0, &err);
        assert_true(k == 0 || k == 1);
        kept_fail += k;
        m2_traj_free(&t);
    }
    assert_true(kept_fail > 70 && kept_fail < 130);   /* 400 * 0.25 = 100 */
    assert_int_equal(r.dropped_fail, 400 - kept_fail);
    /* FIFO: capacity 5 -> the oldest went first; the newest 5 remain in push order */
    m2_traj t;
    make_seg(&t, 999, 1.f);
    assert_int_equal(m2_replay_push(&r, &t, 1, &err), 1);
    m2_traj_free(&t);
    assert_int_equal(m2_replay_size(&r), 5);
    assert_int_equal(seg_id(m2_replay_at(&r, 4)), 999);
    for (int i = 0; i + 1 < 5; i++) assert_true(seg_id(m2_replay_at(&r, i)) < seg_id(m2_replay_at(&r, i + 1)));

    /* save -> load gives the same items and the same future samples */
    char path[] = "/tmp/m2_replayXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(m2_replay_save(&r, path, &err), 0);
    m2_replay r2 = {0};
    assert_int_equal(m2_replay_load(&r2, path, &err), 0);
    assert_int_equal(m2_replay_size(&r2), 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(m2_replay_at(&r, i)->seg.prompt, m2_replay_at(&r2, i)->seg.prompt);
        assert_true(m2_replay_at(&r2, i)->seg.rewards[0] == m2_replay_at(&r, i)->seg.rewards[0]);
        assert_int_equal(m2_replay_at(&r2, i)->seg.n_states, 2);
    }
    int a[3], b[3];
    for (int rep = 0; rep < 5; rep++) {
        assert_int_equal(m2_replay_sample(&r, 3, a, &err), 3);
        assert_int_equal(m2_replay_sample(&r2, 3, b, &err), 3);
        for (int i = 0; i < 3; i++) assert_int_equal(a[i], b[i]);
        assert_true(a[0] != a[1] && a[0] != a[2] && a[1] != a[2]);   /* no repeats within a batch */
    }
    /* more than the buffer holds: with replacement, still in range */
    int big[12];
    assert_int_equal(m2_replay_sample(&r, 12, big, &err), 12);
    for (int i = 0; i < 12; i++) assert_true(big[i] >= 0 && big[i] < 5);
    /* corrupt files are refused with a message naming the file */
    FILE *f = fopen(path, "w");
    fputs("{\"capacity\":5,\"keep_fail\":0.1,\"rng\":[\"1\",\"2\"],\"items\":[]}", f);
    fclose(f);
    assert_int_equal(m2_replay_load(&r2, path, &err), -1);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(m2_replay_size(&r2), 5);   /* unchanged on failure */
    unlink(path);
    /* bad configs */
    m2_replay r3;
    assert_int_equal(m2_replay_init(&r3, 0, 0.1f, 1, &err), -1);
    assert_int_equal(m2_replay_init(&r3, 3, 1.5f, 1, &err), -1);
    m2_replay empty;
    m2_replay_init(&empty, 2, 0.f, 1, &err);
    assert_int_equal(m2_replay_sample(&empty, 1, a, &err), -1);
    m2_replay_free(&empty);
    for (int i = 0; i < 6; i++) m2_traj_free(&off[i]);
    m2_replay_free(&r);
    m2_replay_free(&r2);
}

/* Online collection: expert episodes on the apples env; both sub-goals are flagged done while they
 * hold, so every segment succeeds and is kept (the env's own reward, 0 for collecting, plays no part). */
static void collect_into_replay(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    ap_create(&env, NULL, &err);
    m2_replay buf;
    assert_int_equal(m2_replay_init(&buf, 10, 0.f, 3, &err), 0);
    m2_loop_cfg cfg = short_cfg();
    m2_collect_stats st = {0};
    for (int i = 0; i < 2; i++) {
        m2_expert_plan plan;
        assert_int_equal(m2_expert_plan_build(&apples_class, NULL, NULL, M2_SPLIT_TRAIN, i, 0, 50, NULL, &plan, &err), 0);
        m2_policy s1 = m2_expert_sys1_policy(&plan), s2 = m2_expert_sys2_policy(&plan);
        assert_int_equal(m2_collect_online(env, NULL, M2_SPLIT_TRAIN, &i, 1, 0, &s1, &s2, &cfg, &buf, NULL, &st, &err), 0);
        m2_expert_plan_free(&plan);
    }
    assert_int_equal(st.episodes, 2);
    assert_int_equal(st.successes, 2);
    assert_int_equal(st.segments, 4);
    assert_int_equal(st.kept, 4);
    assert_int_equal(st.steps, 6);
    assert_int_equal(m2_replay_size(&buf), 4);
    assert_string_equal(m2_replay_at(&buf, 1)->seg.actions[0], "eat apple; True");
    assert_int_equal(m2_replay_at(&buf, 0)->online, 1);
    m2_replay_free(&buf);
    ap_destroy(env);
}

/* The real TextCraft (embedded recipes): the expert plan through the control loop succeeds with one
 * System 1 call per segmenter sub-goal, and its System 2 segments read back as records would. */

/* A scripted policy: outputs[i] on call i (the last one repeated). */
typedef struct scripted { const char *const *out; int n, i; } scripted;
static int scripted_gen(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    scripted *s = ctx;
    *out = strdup(s->out[s->i < s->n ? s->i : s->n - 1]);
    s->i++;
    *np = *ng = 0;
    return 0;
}

/* System 2's reward needs both: its done flag AND the environment's predicate. A flag raised too
 * early (one apple of two) fails the sub-goal; one that holds but is never flagged fails when its
 * budget runs out; flagging while it holds succeeds. */
static void subgoal_reward_needs_flag_and_predicate(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    ap_create(&env, NULL, &err);
    static const char *const high[] = {"collect apples"};
    static const char *const low[] = {"take apple; True", "take apple; False", "take apple; False", "take apple; True"};
    scripted h = {high, 1, 0}, l = {low, 4, 0};
    m2_policy s1 = {.ctx = &h, .generate = scripted_gen}, s2 = {.ctx = &l, .generate = scripted_gen};
    m2_loop_cfg cfg = short_cfg();
    cfg.step_limit = 4;
    cfg.subgoal_budget = 2;
    m2_episode ep;
    assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_TRAIN, 0, 0, &s1, &s2, &cfg, &ep, &err), 0);
    assert_int_equal(ep.n_sub, 3);
    assert_false(ep.sub[0].success);   /* flagged with one apple */
    assert_false(ep.sub[1].success);   /* holds after its first step, never flagged: the budget ends it */
    assert_true(ep.sub[2].success);    /* flagged while it holds */
    m2_traj *segs;
    int ns;
    assert_int_equal(m2_episode_segments(&ep, &cfg, &segs, &ns, &err), 0);
    assert_int_equal(ns, 3);
    assert_true(segs[0].rewards[0] == 0.f && segs[0].dones[0] == 1.f);
    assert_int_equal(segs[1].n_actions, 2);
    assert_true(segs[1].rewards[0] == 0.f && segs[1].rewards[1] == 0.f);
    assert_true(segs[1].dones[0] == 0.f && segs[1].dones[1] == 1.f);
    assert_true(segs[2].rewards[0] == 1.f && segs[2].dones[0] == 1.f);
    for (int k = 0; k < ns; k++) m2_traj_free(&segs[k]);
    free(segs);
    m2_episode_free(&ep);
    ap_destroy(env);
}

static void textcraft_expert_loop(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    if (m2_env_create("textcraft", NULL, &env, &err)) { fprintf(stderr, "%s\n", err.msg); fail(); }
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_loop_cfg cfg;
    m2_loop_cfg_default(&cfg);
    int n = env->cls->num_episodes(env, NULL, M2_SPLIT_ID, &err);
    assert_true(n > 0);
    if (n > 5) n = 5;
    for (int i = 0; i < n; i++) {
        m2_expert_plan plan;
        assert_int_equal(m2_expert_plan_build(env->cls, NULL, NULL, M2_SPLIT_ID, i, 1, 50, &tok, &plan, &err), 0);
        m2_policy s1 = m2_expert_sys1_policy(&plan), s2 = m2_expert_sys2_policy(&plan);
        m2_episode ep;
        assert_int_equal(m2_run_episode(env, NULL, M2_SPLIT_ID, i, 1, &s1, &s2, &cfg, &ep, &err), 0);
        assert_true(ep.success);
        assert_int_equal(ep.steps, plan.n_actions);
        assert_int_equal(ep.sys1_calls, plan.n_sub);
        assert_int_equal(ep.invalid, 0);
        assert_true(ep.sys1_prompt_tok > 0 && ep.sys2_gen_tok > 0);
        m2_traj *segs;
        int ns;
        assert_int_equal(m2_episode_segments(&ep, &cfg, &segs, &ns, &err), 0);
        assert_int_equal(ns, plan.n_sub);
        for (int k = 0; k < ns; k++) {
            m2_packed p;
            assert_int_equal(m2_pack_traj(&tok, &segs[k], 0, &p, &err), 0);
            assert_int_equal(p.n_actions, plan.sub[k].last - plan.sub[k].first + 1);
            m2_packed_free(&p);
            m2_traj_free(&segs[k]);
        }
        free(segs);
        m2_episode_free(&ep);
        m2_expert_plan_free(&plan);
    }
    m2_env_destroy(env);
}

/* Difficulty buckets come from each environment's own description of an episode. */
static void eval_buckets_per_env(void **state) {
    (void)state;
    static const struct { const char *env; m2_split split; const char *bucket; } want[] = {
        {"textcraft", M2_SPLIT_OOD, "depth 3"},               /* ood 0: bookshelf, crafting depth 3 */
        {"alfworld", M2_SPLIT_ID, "pick_and_place_simple"},
        {"scienceworld", M2_SPLIT_ID, "boil"},
    };
    for (int i = 0; i < 3; i++) {
        m2_env *env = NULL;
        m2_err err = {0};
        if (m2_env_create(want[i].env, NULL, &env, &err)) fail_msg("%s: %s", want[i].env, err.msg);
        char *b = m2_episode_type(env, NULL, want[i].split, 0);
        assert_non_null(b);
        assert_string_equal(b, want[i].bucket);
        free(b);
        m2_env_destroy(env);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eval_buckets_per_env),
        cmocka_unit_test(parser_cases),
        cmocka_unit_test(loop_expert_episode),
        cmocka_unit_test(loop_step_limit_and_budget),
        cmocka_unit_test(eval_aggregates),
        cmocka_unit_test(replay_buffer),
        cmocka_unit_test(textcraft_expert_loop),
        cmocka_unit_test(collect_into_replay),
        cmocka_unit_test(subgoal_reward_needs_flag_and_predicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
