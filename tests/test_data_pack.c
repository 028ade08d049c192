/* data/: packing a trajectory into one sequence with a segment table, truncation, batches, and
 * the JSONL record readers. Uses the byte tokenizer, so every position can be counted by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/expert.h"
#include "agent/loop.h"
#include "data/data.h"
#include "data/prompts.h"
#include "env/textcraft/textcraft.h"
#include <cjson/cJSON.h>
#include "tmpdir.h"

/* prompt "P:", s_1 "s1", a_1 "a", s_2 "s22", a_2 "bb" (terminal, r = 1), s_3 "s3". */
static void make_traj(m2_traj *t, int with_final) {
    m2_err err = {0};
    m2_traj_init(t);
    assert_int_equal(m2_traj_set_prompt(t, "P:", &err), 0);
    assert_int_equal(m2_traj_push_state(t, "s1", &err), 0);
    assert_int_equal(m2_traj_push_action(t, "a", 0.f, 0.f, &err), 0);
    assert_int_equal(m2_traj_push_state(t, "s22", &err), 0);
    assert_int_equal(m2_traj_push_action(t, "bb", 1.f, 1.f, &err), 0);
    if (with_final) assert_int_equal(m2_traj_push_state(t, "s3", &err), 0);
}

static void pack_layout(void **state) {
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_traj t;
    make_traj(&t, 1);
    m2_packed p;
    m2_err err = {0};
    assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
    /* P : s 1 a EOS s 2 2 b b EOS s 3
     * 0 1 2 3 4 5   6 7 8 9 10 11 12 13 */
    assert_int_equal(p.n_tok, 14);
    const int32_t want[14] = {'P', ':', 's', '1', 'a', 256, 's', '2', '2', 'b', 'b', 256, 's', '3'};
    for (int i = 0; i < 14; i++) assert_int_equal(p.ids[i], want[i]);
    assert_int_equal(p.n_segs, 6);
    const int kinds[6] = {M2_SEG_PROMPT, M2_SEG_STATE, M2_SEG_ACTION, M2_SEG_STATE, M2_SEG_ACTION, M2_SEG_STATE};
    const int begins[6] = {0, 2, 4, 6, 9, 12}, ends[6] = {2, 4, 6, 9, 12, 14};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p.segs[i].kind, kinds[i]);
        assert_int_equal(p.segs[i].begin, begins[i]);
        assert_int_equal(p.segs[i].end, ends[i]);
    }
    assert_int_equal(p.n_actions, 2);
    assert_int_equal(p.act_end[0] - 1, 5);        /* Q(s_1,a_1) at its EOS */
    assert_int_equal(p.act_end[1] - 1, 11);
    assert_int_equal(p.state_last[0], 3);         /* V(s_1) at the state's last token, '1' */
    assert_int_equal(p.state_last[1], 8);
    assert_int_equal(p.next_state_last[0], 8);    /* V(s_2) bootstraps a_1 */
    assert_int_equal(p.next_state_last[1], 13);   /* s_3 present */
    assert_true(p.has_final_state);
    assert_true(p.reward[1] == 1.f && p.done[1] == 1.f);
    assert_true(p.q_mask[0] == 1.f && p.q_mask[1] == 1.f);
    m2_packed_free(&p);

    /* BOS once at the start shifts everything by one; no BOS inside */
    m2_byte_tok_iface(&tok, M2_BOS_SEQUENCE);
    assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
    assert_int_equal(p.n_tok, 15);
    assert_int_equal(p.ids[0], 257);
    int nbos = 0;
    for (int i = 0; i < p.n_tok; i++) nbos += p.ids[i] == 257;
    assert_int_equal(nbos, 1);
    assert_int_equal(p.state_last[0], 4);
    assert_int_equal(p.act_end[1] - 1, 12);
    m2_packed_free(&p);

    /* data.state_sep: every state ends with an EOS; V is read there, actions follow it */
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    tok.state_sep = 1;
    assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
    /* P : s 1 E a E s 2 2 E b b E s 3 E */
    const int32_t want_sep[17] = {'P', ':', 's', '1', 256, 'a', 256, 's', '2', '2', 256, 'b', 'b', 256, 's', '3', 256};
    assert_int_equal(p.n_tok, 17);
    for (int i = 0; i < 17; i++) assert_int_equal(p.ids[i], want_sep[i]);
    assert_int_equal(p.state_last[0], 4);
    assert_int_equal(p.act_begin[0], 5);
    assert_int_equal(p.act_end[1] - 1, 13);
    assert_int_equal(p.next_state_last[0], 10);
    assert_int_equal(p.next_state_last[1], 16);
    m2_packed_free(&p);
    /* the generation context ends with the separator, as the training sequence does before an action */
    int32_t *ids;
    int n;
    m2_traj c;
    make_traj(&c, 1);
    assert_int_equal(m2_pack_context(&tok, &c, 0, &ids, &n, &err), 0);
    assert_int_equal(n, 17);
    for (int i = 0; i < 17; i++) assert_int_equal(ids[i], want_sep[i]);
    free(ids);
    m2_traj_free(&c);
    m2_traj_free(&t);
}

static void pack_truncation(void **state) {
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_traj t;
    make_traj(&t, 1);
    m2_packed p;
    m2_err err = {0};
    /* limit 10: P: s1 a EOS (6) + s22 (9) fits, bb EOS (12) does not -> a_2 dropped, s_2 kept as
     * the bootstrap state of a_1: q_mask 1 */
    assert_int_equal(m2_pack_traj(&tok, &t, 10, &p, &err), 0);
    assert_int_equal(p.n_tok, 9);
    assert_int_equal(p.n_actions, 1);
    assert_int_equal(p.n_actions_src, 2);
    assert_int_equal(p.next_state_last[0], 8);
    assert_true(p.has_final_state);
    assert_true(p.q_mask[0] == 1.f);
    m2_packed_free(&p);
    /* limit 7: s22 does not fit -> a_1 has no next state and is not terminal: q_mask 0 */
    assert_int_equal(m2_pack_traj(&tok, &t, 7, &p, &err), 0);
    assert_int_equal(p.n_tok, 6);
    assert_int_equal(p.n_actions, 1);
    assert_int_equal(p.next_state_last[0], -1);
    assert_true(p.q_mask[0] == 0.f);
    m2_packed_free(&p);
    /* limit 13: everything but s_3; a_2 is terminal so its target (r) is defined */
    assert_int_equal(m2_pack_traj(&tok, &t, 13, &p, &err), 0);
    assert_int_equal(p.n_actions, 2);
    assert_false(p.has_final_state);
    assert_int_equal(p.next_state_last[1], -1);
    assert_true(p.q_mask[1] == 1.f);
    m2_packed_free(&p);
    /* limit 5: the first transition alone needs 6 -> rejected */
    assert_int_equal(m2_pack_traj(&tok, &t, 5, &p, &err), -1);
    assert_non_null(strstr(err.msg, "5 tokens"));
    m2_traj_free(&t);
    /* bad shapes */
    m2_traj bad;
    m2_traj_init(&bad);
    assert_int_equal(m2_pack_traj(&tok, &bad, 0, &p, &err), -1);
    assert_int_equal(m2_traj_push_action(&bad, "x", 0, 0, &err), -1);   /* action before state */
    m2_traj_free(&bad);
}

static void batch_positions(void **state) {
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_traj t1, t2;
    make_traj(&t1, 1);
    m2_err err = {0};
    m2_traj_init(&t2);
    m2_traj_set_prompt(&t2, "Q", &err);
    m2_traj_push_state(&t2, "x", &err);
    m2_traj_push_action(&t2, "yz", 0.5f, 1.f, &err);
    m2_packed p[2];
    assert_int_equal(m2_pack_traj(&tok, &t1, 0, &p[0], &err), 0);
    assert_int_equal(m2_pack_traj(&tok, &t2, 0, &p[1], &err), 0);
    /* seq 2: Q x y z EOS -> 5 tokens at flat 14..18 */
    m2_packed_batch b;
    assert_int_equal(m2_packed_batch_build(p, 2, &b, &err), 0);
    assert_int_equal(b.N, 19);
    assert_int_equal(b.n_actions, 3);
    assert_int_equal(b.seq_off[1], 14);
    /* targets: next token inside each sequence, -1 at each sequence end */
    assert_int_equal(b.targets[0], ':');
    assert_int_equal(b.targets[13], -1);
    assert_int_equal(b.targets[14], 'x');
    assert_int_equal(b.targets[18], -1);
    /* action rows: rows 3,4 predict 'a', EOS (action 0); rows 8,9,10 predict b,b,EOS (action 1);
     * rows 15,16,17 predict y,z,EOS (action 2) */
    const int32_t ta[19] = {-1, -1, -1, 0, 0, -1, -1, -1, 1, 1, 1, -1, -1, -1, -1, 2, 2, 2, -1};
    for (int i = 0; i < 19; i++) {
        assert_int_equal(b.tok_action[i], ta[i]);
        assert_true(b.tok_mask[i] == (ta[i] >= 0 ? 1.f : 0.f));
    }
    assert_int_equal(b.targets[10], 256);
    assert_int_equal(b.q_pos[2], 18);
    assert_int_equal(b.v_pos[2], 15);
    assert_int_equal(b.next_v_pos[2], -1);
    assert_int_equal(b.next_v_pos[0], 8);
    assert_int_equal(b.act_ntok[1], 3);
    assert_true(b.reward[2] == 0.5f && b.done[2] == 1.f);
    /* right-padded view */
    int32_t *ids;
    int T;
    assert_int_equal(m2_packed_batch_padded(&b, tok.pad_id, &ids, &T, &err), 0);
    assert_int_equal(T, 14);
    assert_int_equal(ids[14 + 0], 'Q');
    assert_int_equal(ids[14 + 4], 256);
    assert_int_equal(ids[14 + 5], 258);
    assert_int_equal(ids[14 + 13], 258);
    free(ids);
    /* a part (TeamTR's update in parts): sequence 1 alone is the batch built from it, renumbered
     * from 0, still placed in b (its key 1, its action 2 of 3); sequence 0 alone keeps actions 0, 1 */
    m2_packed_batch q, one;
    assert_int_equal(m2_packed_batch_part(&b, 1, 2, &q, &err), 0);
    assert_int_equal(m2_packed_batch_build(&p[1], 1, &one, &err), 0);
    assert_int_equal(q.N, 5);
    assert_int_equal(q.n_seq, 1);
    assert_int_equal(q.n_actions, 1);
    assert_memory_equal(q.tokens, one.tokens, 5 * sizeof(int32_t));
    assert_memory_equal(q.targets, one.targets, 5 * sizeof(int32_t));
    assert_memory_equal(q.tok_action, one.tok_action, 5 * sizeof(int32_t));
    assert_memory_equal(q.tok_mask, one.tok_mask, 5 * sizeof(float));
    assert_int_equal(q.seq_off[0], 0);
    assert_int_equal(q.act_seq[0], 0);
    assert_int_equal(q.q_pos[0], one.q_pos[0]);
    assert_int_equal(q.v_pos[0], one.v_pos[0]);
    assert_int_equal(q.next_v_pos[0], -1);
    assert_true(q.reward[0] == 0.5f && q.done[0] == 1.f);
    assert_int_equal(q.seq_key[0], 1);
    assert_int_equal(q.act_base, 2);
    assert_int_equal(q.act_total, 3);
    m2_packed_batch_free(&q);
    m2_packed_batch_free(&one);
    assert_int_equal(m2_packed_batch_part(&b, 0, 1, &q, &err), 0);
    assert_int_equal(q.N, 14);
    assert_int_equal(q.n_actions, 2);
    assert_memory_equal(q.tok_action, b.tok_action, 14 * sizeof(int32_t));
    assert_int_equal(q.next_v_pos[0], 8);
    assert_int_equal(q.act_base, 0);
    m2_packed_batch_free(&q);
    assert_int_equal(m2_packed_batch_part(&b, 1, 1, &q, &err), -1);   /* empty */
    assert_int_equal(m2_packed_batch_part(&b, 1, 3, &q, &err), -1);   /* past the end */
    m2_packed_batch_free(&b);
    m2_packed_free(&p[0]);
    m2_packed_free(&p[1]);
    m2_traj_free(&t1);
    m2_traj_free(&t2);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void records_roundtrip(void **state) {
    char dir[64];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "records"), 0);
    char hp[256], lp[256];
    snprintf(hp, sizeof hp, "%s/high.jsonl", dir);
    snprintf(lp, sizeof lp, "%s/low.jsonl", dir);
    write_text(hp,
        "{\"task\":\"craft a stick\",\"states\":[\"Group action: []. Current observation: o0\","
        "\"Group action: [get 1 log]. Current observation: o1\"],\"subgoals\":[\"get log\",\"craft stick\"],"
        "\"reward\":[0,1],\"score\":[0,1],\"done\":[false,true]}\n"
        "\n"
        "{\"task_description\":\"P t\",\"obs\":[\"x\"],\"subtask\":[\"g\"],\"done\":[1]}\n");
    write_text(lp,
        "{\"goal\":\"get log\",\"obs\":[\"o0\",\"Obs: o1\"],\"actions\":[\"get 1 log; True\"],"
        "\"reward\":[1],\"score\":[1],\"done\":[true]}\n");
    m2_err err = {0};
    m2_high_record *h;
    m2_low_record *l;
    int nh, nl;
    assert_int_equal(m2_high_records_read(hp, &h, &nh, &err), 0);
    assert_int_equal(nh, 2);
    assert_string_equal(h[0].task, "craft a stick");
    assert_int_equal(h[0].n_subgoals, 2);
    assert_true(h[0].done[1] == 1.f && h[0].reward[1] == 1.f);
    assert_null(h[1].task);                  /* only the released context field */
    assert_string_equal(h[1].context, "P t");
    assert_true(h[1].reward[0] == 0.f);      /* absent -> 0 */
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), 0);
    assert_int_equal(nl, 1);
    /* to trajectories and packed: low states get "Obs: " unless they already have it */
    m2_traj t;
    assert_int_equal(m2_low_record_traj(&l[0], "LOW Subtask: get log", "Obs: ", &t, &err), 0);
    assert_string_equal(t.states[0], "Obs: o0");
    assert_string_equal(t.states[1], "Obs: o1");
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_packed p;
    assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
    assert_int_equal(p.n_actions, 1);
    assert_true(p.has_final_state && p.done[0] == 1.f);
    m2_packed_free(&p);
    m2_traj_free(&t);
    assert_int_equal(m2_high_record_traj(&h[0], "HIGH craft a stick", &t, &err), 0);
    assert_int_equal(t.n_actions, 2);
    assert_int_equal(t.n_states, 2);
    m2_traj_free(&t);
    /* prompt NULL: the record's own context, else the one data/prompts.h builds */
    assert_int_equal(m2_high_record_traj(&h[1], NULL, &t, &err), 0);
    assert_string_equal(t.prompt, "P t");
    m2_traj_free(&t);
    assert_int_equal(m2_high_record_traj(&h[0], NULL, &t, &err), 0);
    char *want = m2_prompt_high_context("craft a stick");
    assert_string_equal(t.prompt, want);
    free(want);
    m2_traj_free(&t);
    m2_high_records_free(h, nh);
    m2_low_records_free(l, nl);

    /* errors name file, line and field */
    write_text(hp, "{\"task\":\"t\",\"states\":[\"a\"],\"subgoals\":[\"g\"]}\n{\"task\":\"t\",\"states\":[\"a\",\"b\",\"c\"],\"subgoals\":[\"g\"]}\n");
    assert_int_equal(m2_high_records_read(hp, &h, &nh, &err), -1);
    assert_non_null(strstr(err.msg, "high.jsonl:2"));
    assert_non_null(strstr(err.msg, "states"));
    write_text(lp, "{\"subgoal\":\"g\",\"obs\":[\"o\"],\"actions\":[3]}\n");
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), -1);
    assert_non_null(strstr(err.msg, "actions"));
    write_text(lp, "{\"obs\":[\"o\"],\"actions\":[\"a; true\"]}\n");
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), -1);
    assert_non_null(strstr(err.msg, "goal"));
    write_text(lp, "{\"subgoal\":\"g\",\"obs\":[\"o\"],\"actions\":[\"a; true\"],\"reward\":[1,2]}\n");
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), -1);
    assert_non_null(strstr(err.msg, "reward"));
    write_text(lp, "{\"subgoal\":\"g\",\"obs\":[\"o\"");   /* truncated */
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), -1);
    assert_non_null(strstr(err.msg, "low.jsonl:1"));
    unlink(hp);
    unlink(lp);
    rmdir(dir);
}

/* ---- training text = inference text: the data writer's System 2 records against the contexts the
 * control loop builds when it plays the same expert episode ---- */

/* System 2 = the expert plan's, keeping the prompt and first state of each sub-goal's first call */
typedef struct seen_ctx { m2_policy inner; char *prompt[128], *state0[128]; int n; } seen_ctx;
static int seen_generate(void *ctx, m2_role role, const m2_traj *c, char **out, int *np, int *ng, m2_err *err) {
    seen_ctx *s = ctx;
    if (c->n_actions == 0 && s->n < 128) {
        s->prompt[s->n] = strdup(c->prompt);
        s->state0[s->n] = strdup(c->states[0]);
        s->n++;
    }
    return s->inner.generate(s->inner.ctx, role, c, out, np, ng, err);
}

typedef struct loop_run {
    m2_episode ep;
    seen_ctx seen;
    m2_traj *segs;   /* m2_episode_segments: what the online stage trains on */
    int n_segs;
} loop_run;

static void loop_run_free(loop_run *r) {
    for (int i = 0; i < r->seen.n; i++) { free(r->seen.prompt[i]); free(r->seen.state0[i]); }
    for (int i = 0; i < r->n_segs; i++) m2_traj_free(&r->segs[i]);
    free(r->segs);
    m2_episode_free(&r->ep);
}

/* The expert episode (task, split, index, seed) through the control loop, one System 2 segment per
 * segmenter sub-goal (no sub-goal budget). */
static void play_expert(m2_env *env, const char *task, m2_split split, int index, uint64_t seed, int task_info,
                        m2_prompt_commands commands, loop_run *r) {
    m2_err err = {0};
    memset(r, 0, sizeof *r);
    m2_expert_plan plan;
    if (m2_expert_plan_build(env->cls, NULL, task, split, index, seed, 50, NULL, &plan, &err)) fail_msg("%s", err.msg);
    m2_policy s1 = m2_expert_sys1_policy(&plan);
    r->seen.inner = m2_expert_sys2_policy(&plan);
    m2_policy s2 = {.ctx = &r->seen, .generate = seen_generate};
    m2_loop_cfg cfg;
    m2_loop_cfg_default(&cfg);
    cfg.subgoal_budget = 0;
    cfg.low_parts = (m2_low_parts){.task_info = task_info, .commands = commands};
    if (m2_run_episode(env, task, split, index, seed, &s1, &s2, &cfg, &r->ep, &err)) fail_msg("%s", err.msg);
    assert_true(r->ep.success);
    assert_int_equal(r->ep.n_sub, plan.n_sub);
    assert_int_equal(m2_episode_segments(&r->ep, &cfg, &r->segs, &r->n_segs, &err), 0);
    m2_expert_plan_free(&plan);
}

/* The writer's low records of the same episode, read back as the training sets read them. */
static m2_low_record *written_lows(m2_env *env, const char *task, m2_split split, int index, uint64_t seed,
                                   int task_info, m2_prompt_commands commands, int *n) {
    m2_err err = {0};
    m2_env_traj tr;
    m2_rollout_opts o = {.policy = M2_POLICY_ORACLE, .max_steps = 50};
    if (m2_rollout(env, task, split, index, seed, &o, &tr, &err)) fail_msg("%s", err.msg);
    cJSON *high, *lows;
    m2_hier_opts ho = {.parts = {.task_info = task_info, .commands = commands}};
    assert_int_equal(m2_hier_records(env, &tr, "expert", &ho, &high, &lows, &err), 0);
    *n = cJSON_GetArraySize(lows);
    m2_low_record *l = calloc((size_t)*n, sizeof *l);
    for (int i = 0; i < *n; i++) {
        char *js = cJSON_PrintUnformatted(cJSON_GetArrayItem(lows, i));
        assert_int_equal(m2_low_record_parse(js, &l[i], &err), 0);
        free(js);
    }
    cJSON_Delete(high);
    cJSON_Delete(lows);
    m2_env_traj_free(&tr);
    return l;
}

/* Sub-goal by sub-goal: the record's packed text (prompt, states, actions) is what the loop's
 * System 2 was given and what its replay segments hold. */
static void assert_same_text(const m2_low_record *l, int nl, const loop_run *r) {
    m2_err err = {0};
    assert_int_equal(nl, r->n_segs);
    assert_int_equal(r->seen.n, nl);
    for (int g = 0; g < nl; g++) {
        m2_traj t;
        assert_int_equal(m2_low_record_traj(&l[g], NULL, "Obs: ", &t, &err), 0);
        assert_string_equal(t.prompt, r->seen.prompt[g]);
        assert_string_equal(t.states[0], r->seen.state0[g]);
        const m2_traj *s = &r->segs[g];
        assert_string_equal(t.prompt, s->prompt);
        assert_int_equal(t.n_states, s->n_states);
        assert_int_equal(t.n_actions, s->n_actions);
        for (int i = 0; i < t.n_states; i++) assert_string_equal(t.states[i], s->states[i]);
        for (int i = 0; i < t.n_actions; i++) assert_string_equal(t.actions[i], s->actions[i]);
        m2_traj_free(&t);
    }
}

/* What `multi2 data` writes (data/hier.c) reads back and packs: TextCraft oracle episodes. */
static void records_from_writer(void **state) {
    m2_err err = {0};
    m2_env *env = NULL;
    if (m2_env_create("textcraft", NULL, &env, &err)) { fprintf(stderr, "%s\n", err.msg); fail(); }
    char dir[64];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "hier"), 0);
    char hp[256], lp[256];
    snprintf(hp, sizeof hp, "%s/high.jsonl", dir);
    snprintf(lp, sizeof lp, "%s/low.jsonl", dir);
    FILE *fh = fopen(hp, "w"), *fl = fopen(lp, "w");
    int n_low = 0, n_sub_total = 0;
    for (int i = 0; i < 3; i++) {
        m2_env_traj tr;
        m2_rollout_opts o = {.policy = M2_POLICY_ORACLE, .max_steps = 50};
        assert_int_equal(m2_rollout(env, NULL, M2_SPLIT_TRAIN, i, 0, &o, &tr, &err), 0);
        cJSON *high, *lows;
        assert_int_equal(m2_hier_records(env, &tr, "expert", NULL, &high, &lows, &err), 0);
        assert_int_equal(m2_hier_write_line(fh, high, hp, &err), 0);
        const cJSON *l;
        cJSON_ArrayForEach(l, lows) { assert_int_equal(m2_hier_write_line(fl, l, lp, &err), 0); n_low++; }
        n_sub_total += cJSON_GetArraySize(cJSON_GetObjectItem(high, "subtask"));
        cJSON_Delete(high);
        cJSON_Delete(lows);
        m2_env_traj_free(&tr);
    }
    fclose(fh);
    fclose(fl);
    m2_high_record *h;
    m2_low_record *l;
    int nh, nl;
    assert_int_equal(m2_high_records_read(hp, &h, &nh, &err), 0);
    assert_int_equal(m2_low_records_read(lp, &l, &nl, &err), 0);
    assert_int_equal(nh, 3);
    assert_int_equal(nl, n_low);
    assert_int_equal(n_low, n_sub_total);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    for (int i = 0; i < nh; i++) {
        assert_non_null(h[i].task);
        assert_non_null(h[i].context);
        assert_int_equal(h[i].n_states, h[i].n_subgoals + 1);
        m2_traj t;
        assert_int_equal(m2_high_record_traj(&h[i], NULL, &t, &err), 0);
        char *want = m2_prompt_high_context(h[i].task);
        assert_string_equal(t.prompt, want);   /* the writer's context = the loop's context */
        free(want);
        m2_packed p;
        assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
        assert_int_equal(p.n_actions, h[i].n_subgoals);
        assert_true(p.has_final_state);
        m2_packed_free(&p);
        m2_traj_free(&t);
    }
    for (int i = 0; i < nl; i++) {
        m2_traj t;
        assert_int_equal(m2_low_record_traj(&l[i], NULL, "Obs: ", &t, &err), 0);
        assert_non_null(strstr(t.prompt, l[i].subgoal));   /* the loop's own text: below */
        assert_int_equal(t.n_states, t.n_actions + 1);
        m2_packed p;
        assert_int_equal(m2_pack_traj(&tok, &t, 0, &p, &err), 0);
        assert_true(p.done[p.n_actions - 1] == 1.f);   /* intrinsic: done on the sub-goal's last step */
        m2_packed_free(&p);
        m2_traj_free(&t);
    }
    m2_high_records_free(h, nh);
    m2_low_records_free(l, nl);
    unlink(hp);
    unlink(lp);
    rmdir(dir);
    m2_env_destroy(env);

    /* training text = inference text, without the task information and with it (relevant and all
     * TextCraft commands), on TextCraft and on ALFWorld (one episode of each task type) */
    static const char *const envs[2] = {"textcraft", "alfworld"};
    for (int e = 0; e < 2; e++) {
        if (m2_env_create(envs[e], NULL, &env, &err)) fail_msg("%s", err.msg);
        m2_episode_order order;
        assert_int_equal(m2_episode_order_build(env, NULL, M2_SPLIT_TRAIN, &order, &err), 0);
        for (int k = 0; k < 6; k++) {
            const m2_episode_ref *ref = m2_episode_order_at(&order, k);
            for (int v = 0; v < 3; v++) {
                int info = v > 0, n;
                m2_prompt_commands cm = v == 2 ? M2_PROMPT_COMMANDS_ALL : M2_PROMPT_COMMANDS_RELEVANT;
                m2_low_record *w = written_lows(env, ref->task, M2_SPLIT_TRAIN, ref->index, 3, info, cm, &n);
                loop_run r;
                play_expert(env, ref->task, M2_SPLIT_TRAIN, ref->index, 3, info, cm, &r);
                assert_same_text(w, n, &r);
                loop_run_free(&r);
                m2_low_records_free(w, n);
            }
        }
        m2_episode_order_free(&order);
        m2_env_destroy(env);
    }
}

/* The first line of `text` that starts with `head` (malloc'd), or NULL. */
static char *line_starting(const char *text, const char *head) {
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, head, strlen(head))) return strndup(p, strcspn(p, "\n"));
    return NULL;
}

static char *join(const char *a, const char *b) {
    char *s = malloc(strlen(a) + strlen(b) + 1);
    strcpy(s, a);
    strcat(s, b);
    return s;
}

/* The lines of a prompt's "Crafting commands:" block (NULL-terminated array of malloc'd lines). */
static char **block_lines(const char *prompt, int *n) {
    const char *b = strstr(prompt, "\nCrafting commands:\n");
    char **v = calloc(512, sizeof *v);
    *n = 0;
    for (const char *p = b ? b + 20 : ""; *p && *n < 511; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] ? 1 : 0))
        v[(*n)++] = strndup(p, strcspn(p, "\n"));
    return v;
}

static void free_lines(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* prompt.low.task_info: System 2 sees what its task needs at every sub-goal. TextCraft: after the
 * sub-goal, the crafting commands of its item (relevant: among them the line that crafts the item
 * the sub-goal names, and only listed lines) or every listed line (all); ALFWorld: the room
 * description with the receptacles before the sub-goal's first observation. The first sub-goal,
 * which starts from the observation that holds them, and the key off give the old text. */
static void executor_sees_task_info(void **state) {
    (void)state;
    m2_err err = {0};
    static const char *const envs[2] = {"textcraft", "alfworld"};
    for (int e = 0; e < 2; e++) {
        m2_env *env;
        if (m2_env_create(envs[e], NULL, &env, &err)) fail_msg("%s", err.msg);
        int later = 0, shorter = 0;   /* sub-goals after the first one checked; relevant blocks cut */
        m2_episode_order order;
        assert_int_equal(m2_episode_order_build(env, NULL, M2_SPLIT_ID, &order, &err), 0);
        for (int k = 0; k < 6; k++) {
            const m2_episode_ref *ref = m2_episode_order_at(&order, k);
            for (int v = 0; v < 3; v++) {   /* off, relevant, all */
                loop_run r;
                play_expert(env, ref->task, M2_SPLIT_ID, ref->index, 0, v > 0,
                            v == 2 ? M2_PROMPT_COMMANDS_ALL : M2_PROMPT_COMMANDS_RELEVANT, &r);
                /* the env still holds the episode: its crafting commands, its first observation */
                const char *first = r.ep.first_obs;
                for (int g = 0; g < r.ep.n_sub; g++) {
                    const char *sub = r.ep.sub[g].text, *obs0 = r.ep.sub[g].obs0;
                    char *plain = m2_prompt_low_context(sub, 1), *plain_s = m2_prompt_low_obs(obs0);
                    if (v == 0 || g == 0) {
                        assert_string_equal(r.seen.prompt[g], plain);
                        assert_string_equal(r.seen.state0[g], plain_s);
                    } else if (!strcmp(envs[e], "textcraft")) {
                        assert_string_equal(r.seen.state0[g], plain_s);
                        /* <plain prompt>\nCrafting commands:\n<line>\n...<line>\n */
                        const char *p = r.seen.prompt[g];
                        assert_memory_equal(p, plain, strlen(plain));
                        assert_true(!strncmp(p + strlen(plain), "\nCrafting commands:\n", 20));
                        assert_int_equal(p[strlen(p) - 1], '\n');
                        int nl, nc = m2_tc_command_count(env), crafts_item = 0;
                        char **lines = block_lines(p, &nl);
                        assert_true(nc > 0 && nl > 0);
                        for (int i = 0; i < nl; i++) {   /* only listed lines */
                            int listed = 0;
                            for (int c = 0; c < nc; c++) listed |= !strcmp(lines[i], m2_tc_command(env, c));
                            if (!listed) fail_msg("sub-goal %d (%s): '%s' is not a listed command", g, sub, lines[i]);
                            /* "craft N <item> using ..." for the sub-goal "craft M <item>" */
                            const char *item = strchr(sub + 6, ' ') + 1, *out = strchr(lines[i] + 6, ' ') + 1;
                            crafts_item |= !strncmp(out, item, strlen(item)) && !strncmp(out + strlen(item), " using ", 7);
                        }
                        if (!crafts_item) fail_msg("sub-goal %d (%s): no command that crafts its item", g, sub);
                        if (v == 2) assert_int_equal(nl, nc);   /* all: every listed line */
                        else shorter += nl < nc;
                        free_lines(lines, nl);
                        later++;
                    } else {
                        assert_string_equal(r.seen.prompt[g], plain);
                        char *room = line_starting(first, "You are in the middle of a room");
                        assert_non_null(room);
                        assert_non_null(strstr(room, "you see a "));   /* the receptacle list */
                        char *want = join("Obs: ", room), *want2 = join(want, " "), *want3 = join(want2, obs0);
                        assert_string_equal(r.seen.state0[g], want3);
                        free(room); free(want); free(want2); free(want3);
                        later++;
                    }
                    free(plain);
                    free(plain_s);
                }
                loop_run_free(&r);
            }
        }
        m2_episode_order_free(&order);
        assert_true(later >= 6);
        if (!strcmp(envs[e], "textcraft")) assert_true(shorter > 0);   /* relevant drops lines */
        m2_env_destroy(env);
    }
}

/* The relevant commands on a block written by hand: the sub-goal's item, its listed ingredients'
 * lines recursively, in block order; distractors, unlisted ingredients (tags, fetched items) and
 * the goal line dropped; an unknown item gets the whole block. */
static void relevant_commands_by_hand(void **state) {
    (void)state;
    const char *obs = "Crafting commands:\n"
                      "craft 1 lantern using 8 iron nugget, 1 torch\n"
                      "craft 4 torch using 1 stick, 1 coal\n"
                      "craft 1 anvil using 3 bronze block, 4 iron ingot\n"
                      "craft 4 stick using 2 planks\n"
                      "craft 1 bronze block using 9 bronze ingot\n"
                      "craft 4 oak planks using 1 oak log\n"
                      "craft 1 iron ingot using 9 iron nugget\n"
                      "\nGoal: craft lantern.";
    char *s = m2_prompt_task_info("textcraft", obs, "craft 4 torch", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, "Crafting commands:\ncraft 4 torch using 1 stick, 1 coal\ncraft 4 stick using 2 planks");
    free(s);
    s = m2_prompt_task_info("textcraft", obs, "craft 1 Lantern.", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, "Crafting commands:\ncraft 1 lantern using 8 iron nugget, 1 torch\n"
                           "craft 4 torch using 1 stick, 1 coal\ncraft 4 stick using 2 planks");
    free(s);
    s = m2_prompt_task_info("textcraft", obs, "craft 1 anvil", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, "Crafting commands:\ncraft 1 anvil using 3 bronze block, 4 iron ingot\n"
                           "craft 1 bronze block using 9 bronze ingot\ncraft 1 iron ingot using 9 iron nugget");
    free(s);
    char *all = m2_prompt_task_info("textcraft", obs, NULL, M2_PROMPT_COMMANDS_ALL);
    assert_int_equal(strlen(all), strstr(obs, "\n\nGoal:") - obs);
    assert_memory_equal(all, obs, strlen(all));
    s = m2_prompt_task_info("textcraft", obs, "get 3 copper ingot", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, all);
    free(s);
    s = m2_prompt_task_info("textcraft", obs, "craft 2 moon", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, all);
    free(s);
    free(all);
    s = m2_prompt_task_info("alfworld", "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. "
                            "Looking quickly around you, you see a bed 1, and a desk 1.\n\nYour task is to: put a pen on desk.",
                            "go to desk 1", M2_PROMPT_COMMANDS_RELEVANT);
    assert_string_equal(s, "You are in the middle of a room. Looking quickly around you, you see a bed 1, and a desk 1.");
    free(s);
    assert_null(m2_prompt_task_info("scienceworld", "This room is called the kitchen.", "go to hallway",
                                    M2_PROMPT_COMMANDS_RELEVANT));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pack_layout),
        cmocka_unit_test(pack_truncation),
        cmocka_unit_test(batch_positions),
        cmocka_unit_test(records_roundtrip),
        cmocka_unit_test(records_from_writer),
        cmocka_unit_test(executor_sees_task_info),
        cmocka_unit_test(relevant_commands_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
