/* Teams (agent/team.h) and their verifiable tasks (data/qa.h): turn schedules of the chain and
 * router protocols, golden transcripts of what each agent sees, masks of an agent's tokens, team
 * rollouts on a tiny model, the task families, the JSONL loader and answer extraction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/team.h"
#include "data/qa.h"
#include "tmpdir.h"

/* The byte tokenizer's ids as text, EOS written <EOS>. */
static void ids_text(const int32_t *ids, int n, char *out, size_t cap) {
    size_t k = 0;
    for (int i = 0; i < n && k + 6 < cap; i++) {
        if (ids[i] == 256) { memcpy(out + k, "<EOS>", 5); k += 5; }
        else out[k++] = (char)ids[i];
    }
    out[k] = 0;
}

static void schedules(void **state) {
    (void)state;
    m2_team t = {.n = 3, .protocol = M2_TEAM_CHAIN, .order = M2_TEAM_ROUND_ROBIN};
    int sp[M2_TEAM_MAX_TURNS];
    assert_int_equal(m2_team_schedule(&t, 4, sp), 3);   /* offset 4 mod 3 = 1 */
    assert_int_equal(sp[0], 1);
    assert_int_equal(sp[1], 2);
    assert_int_equal(sp[2], 0);
    assert_int_equal(m2_team_schedule(&t, 0, sp), 3);
    assert_int_equal(sp[0], 0);
    /* seeded random chain: a permutation, the same for the same sample, different across samples */
    t.order = M2_TEAM_RANDOM;
    t.order_seed = 5;
    t.n = 8;
    int a[M2_TEAM_MAX_TURNS], b[M2_TEAM_MAX_TURNS], differ = 0;
    for (uint64_t s = 0; s < 6; s++) {
        assert_int_equal(m2_team_schedule(&t, s, a), 8);
        assert_int_equal(m2_team_schedule(&t, s, b), 8);
        int seen[8] = {0};
        for (int k = 0; k < 8; k++) { assert_int_equal(a[k], b[k]); seen[a[k]]++; }
        for (int k = 0; k < 8; k++) assert_int_equal(seen[k], 1);
        int c[M2_TEAM_MAX_TURNS];
        m2_team_schedule(&t, s + 1, c);
        for (int k = 0; k < 8; k++) differ += c[k] != a[k];
    }
    assert_true(differ > 0);
    /* router: T turns; round robin is fixed (no per-sample offset), random draws stay in range */
    m2_team r = {.n = 2, .protocol = M2_TEAM_ROUTER, .order = M2_TEAM_ROUND_ROBIN, .turns = 5};
    assert_int_equal(m2_team_schedule(&r, 7, sp), 5);
    const int want[5] = {0, 1, 0, 1, 0};
    for (int j = 0; j < 5; j++) assert_int_equal(sp[j], want[j]);
    r.order = M2_TEAM_RANDOM;
    r.n = 3;
    r.turns = 12;
    int hits[3] = {0};
    assert_int_equal(m2_team_schedule(&r, 1, sp), 12);
    for (int j = 0; j < 12; j++) { assert_true(sp[j] >= 0 && sp[j] < 3); hits[sp[j]]++; }
    assert_true(hits[0] + hits[1] + hits[2] == 12);
    /* malformed teams */
    r.turns = 0;
    assert_int_equal(m2_team_schedule(&r, 0, sp), -1);
    m2_team z = {.n = 0};
    assert_int_equal(m2_team_schedule(&z, 0, sp), -1);
}

/* Golden transcripts: the exact token sequence each agent of a chain is given. */
static void golden_contexts(void **state) {
    (void)state;
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_team_sample s = {.n_turns = 3, .speaker = {1, 0, 2}};
    s.msg[0] = "7+5=12";
    s.msg[1] = "12-3=9";
    s.msg[2] = "9+8=17";
    const char *q = "Compute 7+5-3+8.";
    const char *golden[4] = {
        "Question: Compute 7+5-3+8.\nAgent 2:",
        "Question: Compute 7+5-3+8.\nAgent 2: 7+5=12<EOS>Agent 1:",
        "Question: Compute 7+5-3+8.\nAgent 2: 7+5=12<EOS>Agent 1: 12-3=9<EOS>Agent 3, final answer:",
        "Question: Compute 7+5-3+8.\nAgent 2: 7+5=12<EOS>Agent 1: 12-3=9<EOS>Agent 3, final answer: 9+8=17<EOS>",
    };
    for (int j = 0; j <= 3; j++) {
        m2_traj tr;
        assert_int_equal(m2_team_context(q, &s, j, &tr, &err), 0);
        int32_t *ids;
        int n;
        assert_int_equal(m2_pack_context(&tok, &tr, 0, &ids, &n, &err), 0);
        char text[512];
        ids_text(ids, n, text, sizeof text);
        assert_string_equal(text, golden[j]);
        free(ids);
        m2_traj_free(&tr);
    }
    /* a router transcript: an agent speaking twice sees its own earlier message too */
    m2_team_sample r = {.n_turns = 3, .speaker = {0, 1, 0}};
    r.msg[0] = "a";
    r.msg[1] = "b";
    m2_traj tr;
    assert_int_equal(m2_team_context("Q?", &r, 2, &tr, &err), 0);
    int32_t *ids;
    int n;
    assert_int_equal(m2_pack_context(&tok, &tr, 0, &ids, &n, &err), 0);
    char text[256];
    ids_text(ids, n, text, sizeof text);
    assert_string_equal(text, "Question: Q?\nAgent 1: a<EOS>Agent 2: b<EOS>Agent 1, final answer:");
    free(ids);
    m2_traj_free(&tr);
}

/* An agent's rows in its training batch are exactly its own messages' tokens (" msg" + EOS). */
static void pack_masks_other_agents(void **state) {
    (void)state;
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_team t = {.n = 3, .protocol = M2_TEAM_CHAIN};
    for (int k = 0; k < 3; k++) t.agent[k].tok = &tok;
    m2_qa_set qs;
    assert_int_equal(m2_qa_arith(1, M2_QA_SPLIT_TRAIN, 2, 200, 3, 3, &qs, &err), 0);
    m2_team_sample s[2] = {{.task = 0, .n_turns = 3, .speaker = {1, 0, 2}}, {.task = 1, .n_turns = 3, .speaker = {2, 1, 0}}};
    const char *msgs[2][3] = {{"xx", "yyyy", "z"}, {"p", "qq", "rrr"}};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) s[i].msg[j] = (char *)msgs[i][j];
    for (int agent = 0; agent < 3; agent++) {
        m2_packed_batch pb;
        assert_int_equal(m2_team_pack(&t, agent, &qs, s, 2, 0, &pb, &err), 0);
        int want = 0, got = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                if (s[i].speaker[j] == agent) want += (int)strlen(msgs[i][j]) + 2;   /* ' ' + text + EOS */
        for (int r = 0; r < pb.N; r++) {
            if (pb.tok_action[r] < 0) { assert_true(pb.tok_mask[r] == 0.f); continue; }
            got++;
            assert_true(pb.tok_mask[r] == 1.f);
            /* the row predicts a token of this agent's message: its target is in that text */
            int a = pb.tok_action[r], i = pb.act_seq[a], j = pb.act_step[a];
            assert_int_equal(s[i].speaker[j], agent);
            int32_t tg = pb.targets[r];
            assert_true(tg == 256 || tg == ' ' || strchr(msgs[i][j], (char)tg));
        }
        assert_int_equal(got, want);
        m2_packed_batch_free(&pb);
    }
    m2_qa_set_free(&qs);
}

/* Rollouts on a tiny random model: every turn has a message, play is deterministic for a seed,
 * the reward is the checker on the last message, and the adapters matter (another adapter on
 * one agent changes that agent's messages). */
static void play_tiny(void **state) {
    (void)state;
    m2_err err = {0};
    m2_model_config cfg;
    assert_int_equal(m2_config_preset("test-llama", &cfg, &err), 0);
    cfg.vocab_size = 259;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    assert_non_null(m);
    m2_model_init_random(m, 3, 0.2f);
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_team t = {.n = 2, .protocol = M2_TEAM_CHAIN, .order = M2_TEAM_ROUND_ROBIN};
    m2_lora_config lc = {.name = "agent0", .rank = 4, .alpha = 8, .targets = M2_LORA_Q | M2_LORA_V};
    for (int k = 0; k < 2; k++) {
        lc.name[5] = (char)('0' + k);
        t.agent[k] = (m2_team_agent){.model = m, .adapter = m2_adapter_add(m, &lc, 10 + (uint64_t)k, &err), .tok = &tok};
        assert_non_null(t.agent[k].adapter);
    }
    m2_qa_set qs;
    assert_int_equal(m2_qa_arith(2, M2_QA_SPLIT_TRAIN, 3, 200, 2, 2, &qs, &err), 0);
    m2_team_gen g = {.sampler = {.temperature = 1.f}, .max_new_tokens = 6, .seed = 9};
    m2_team_sample a[4], b[4];
    for (int i = 0; i < 4; i++) a[i] = b[i] = (m2_team_sample){.task = i % 3, .id = (uint64_t)i};
    assert_int_equal(m2_team_play(&t, &qs, a, 4, &g, &err), 0);
    assert_int_equal(m2_team_play(&t, &qs, b, 4, &g, &err), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(a[i].n_turns, 2);
        assert_int_equal(a[i].speaker[0], i % 2);
        for (int j = 0; j < 2; j++) {
            assert_non_null(a[i].msg[j]);
            assert_null(strchr(a[i].msg[j], '\n'));
            assert_string_equal(a[i].msg[j], b[i].msg[j]);
        }
        assert_true(a[i].reward == (float)m2_qa_check(&qs.q[a[i].task], a[i].msg[1]));
        m2_team_sample_free(&b[i]);
    }
    /* agent 1 gets a very different adapter: its messages change, agent 0's first turns do not */
    m2_params *p = &t.agent[1].adapter->params;
    for (size_t i = 0; i < p->n; i++) p->w[i] = 0.5f * (float)((i * 2654435761u) % 1000) / 1000.f - 0.25f;
    assert_int_equal(m2_team_play(&t, &qs, b, 4, &g, &err), 0);
    int changed = 0;
    for (int i = 0; i < 4; i++) {
        if (a[i].speaker[0] == 0) assert_string_equal(a[i].msg[0], b[i].msg[0]);
        else changed += strcmp(a[i].msg[0], b[i].msg[0]) != 0;
        m2_team_sample_free(&a[i]);
        m2_team_sample_free(&b[i]);
    }
    assert_true(changed > 0);
    m2_qa_set_free(&qs);
    m2_model_free(m);
}

static void answers(void **state) {
    (void)state;
    double v;
    assert_int_equal(m2_answer_extract("so the total is \\boxed{42}.", &v), 1);
    assert_true(v == 42);
    assert_int_equal(m2_answer_extract("\\boxed{1} then \\boxed{x = 7}", &v), 1);
    assert_true(v == 7);
    assert_int_equal(m2_answer_extract("\\boxed{\\frac{3}{4}}", &v), 1);
    assert_true(v == 0.75);
    assert_int_equal(m2_answer_extract("Natalia sold 48/2 = 24 clips.\n#### 1,234", &v), 1);
    assert_true(v == 1234);
    assert_int_equal(m2_answer_extract("#### -5", &v), 1);
    assert_true(v == -5);
    assert_int_equal(m2_answer_extract("12-3=9", &v), 1);
    assert_true(v == 9);
    assert_int_equal(m2_answer_extract("it is -3", &v), 1);
    assert_true(v == -3);
    assert_int_equal(m2_answer_extract("12-3", &v), 1);
    assert_true(v == 3);
    assert_int_equal(m2_answer_extract("about 2.5 kg", &v), 1);
    assert_true(fabs(v - 2.5) < 1e-12);
    assert_int_equal(m2_answer_extract("no number here", &v), 0);
    assert_int_equal(m2_answer_extract("", &v), 0);
    m2_qa q = {.value = 17};
    assert_int_equal(m2_qa_check(&q, "9+8=17"), 1);
    assert_int_equal(m2_qa_check(&q, "17.0"), 1);
    assert_int_equal(m2_qa_check(&q, "9+8=16"), 0);
    assert_int_equal(m2_qa_check(&q, "17 or 18"), 0);
    assert_int_equal(m2_qa_check(&q, ""), 0);
}

/* Evaluates "Compute a+b-c." left to right. */
static int eval_arith(const char *q) {
    const char *p = q + strlen("Compute ");
    int v = (int)strtol(p, (char **)&p, 10);
    while (*p == '+' || *p == '-') {
        char op = *p++;
        int x = (int)strtol(p, (char **)&p, 10);
        v = op == '+' ? v + x : v - x;
    }
    return v;
}

static void arithmetic_family(void **state) {
    (void)state;
    m2_err err = {0};
    m2_qa_set tr, te, tr2;
    assert_int_equal(m2_qa_arith(7, M2_QA_SPLIT_TRAIN, 200, 200, 2, 4, &tr, &err), 0);
    assert_int_equal(m2_qa_arith(7, M2_QA_SPLIT_TRAIN, 200, 200, 2, 4, &tr2, &err), 0);
    assert_int_equal(m2_qa_arith(7, M2_QA_SPLIT_TEST, 50, 200, 2, 4, &te, &err), 0);
    assert_int_equal(tr.n, 200);
    assert_true(te.n > 40);
    for (int i = 0; i < tr.n; i++) {
        m2_qa *q = &tr.q[i];
        assert_string_equal(q->question, tr2.q[i].question);
        assert_true(q->n_steps >= 2 && q->n_steps <= 4);
        assert_true(q->value == eval_arith(q->question));
        double last;
        assert_int_equal(m2_answer_extract(q->steps[q->n_steps - 1], &last), 1);
        assert_true(last == q->value);
        assert_int_equal(m2_qa_check(q, q->steps[q->n_steps - 1]), 1);
    }
    for (int i = 0; i < te.n; i++)
        for (int k = 0; k < tr.n; k++) assert_string_not_equal(te.q[i].question, tr.q[k].question);
    /* the chain's split of a worked solution */
    m2_qa q = {.answer = "17", .value = 17, .n_steps = 3, .steps = {"7+5=12", "12-3=9", "9+8=17"}};
    char *parts[4];
    assert_int_equal(m2_qa_parts(&q, 2, parts, &err), 0);
    assert_string_equal(parts[0], "7+5=12");
    assert_string_equal(parts[1], "12-3=9, 9+8=17");
    for (int j = 0; j < 2; j++) free(parts[j]);
    assert_int_equal(m2_qa_parts(&q, 4, parts, &err), 0);
    assert_string_equal(parts[2], "9+8=17");
    assert_string_equal(parts[3], "17");
    for (int j = 0; j < 4; j++) free(parts[j]);
    assert_int_equal(m2_qa_parts(&q, 1, parts, &err), 0);
    assert_string_equal(parts[0], "7+5=12, 12-3=9, 9+8=17");
    free(parts[0]);
    m2_qa_set_free(&te);
    assert_int_equal(m2_qa_arith(1, M2_QA_SPLIT_TRAIN, 3, 200, 0, 2, &te, &err), -1);
    /* one operation: fewer distinct questions than 2000 training ones, so no test question is left */
    assert_int_equal(m2_qa_arith(1, M2_QA_SPLIT_TEST, 10, 2000, 1, 1, &te, &err), -1);
    assert_non_null(strstr(err.msg, "no test question"));
    m2_qa_set_free(&tr);
    m2_qa_set_free(&tr2);
}

/* Crafting counts from TextCraft's embedded recipes: every answer recomputed from the question's
 * own recipe text. */
static void craft_family(void **state) {
    (void)state;
    m2_err err = {0};
    m2_qa_set tr, te;
    assert_int_equal(m2_qa_craft(NULL, 3, M2_QA_SPLIT_TRAIN, 40, &tr, &err), 0);
    assert_int_equal(m2_qa_craft(NULL, 3, M2_QA_SPLIT_TEST, 10, &te, &err), 0);
    assert_true(tr.n >= 20);
    assert_true(te.n >= 5);
    int two = 0;
    for (int i = 0; i < tr.n; i++) {
        const m2_qa *q = &tr.q[i];
        /* "Recipes: craft C1 Y using A1 X[; craft C2 X using B2 Z]. How many W are needed for N Y?" */
        int c1, a1, c2 = 0, b2 = 0, want;
        const char *p = strstr(q->question, "Recipes: craft ");
        assert_non_null(p);
        c1 = atoi(p + 15);
        p = strstr(p, " using ");
        a1 = atoi(p + 7);
        const char *semi = strstr(q->question, "; craft ");
        if (semi) {
            two++;
            c2 = atoi(semi + 8);
            b2 = atoi(strstr(semi, " using ") + 7);
        }
        p = strstr(q->question, " are needed for ");
        want = atoi(p + 16);
        int need = (want + c1 - 1) / c1 * a1;
        if (semi) need = (need + c2 - 1) / c2 * b2;
        assert_true(q->value == need);
        assert_int_equal(q->n_steps, semi ? 2 : 1);
        assert_int_equal(m2_qa_check(q, q->steps[q->n_steps - 1]), 1);
    }
    assert_true(two > 0 && two < tr.n);
    m2_qa_set_free(&tr);
    m2_qa_set_free(&te);
}

static void jsonl_loader(void **state) {
    (void)state;
    char dir[64], path[128];
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "qa"), 0);
    snprintf(path, sizeof path, "%s/qa.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"question\": \"2+2?\", \"answer\": \"It is 4.\\n#### 4\"}\n\n"
          "{\"question\": \"half?\", \"answer\": \"\\\\boxed{\\\\frac{1}{2}}\"}\n"
          "{\"question\": \"n\", \"answer\": 12}\n", f);
    fclose(f);
    m2_err err = {0};
    m2_qa_set s;
    assert_int_equal(m2_qa_load_jsonl(path, &s, &err), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.q[0].question, "2+2?");
    assert_true(s.q[0].value == 4);
    assert_true(s.q[1].value == 0.5);
    assert_true(s.q[2].value == 12);
    assert_int_equal(m2_qa_check(&s.q[0], "so 4"), 1);
    assert_int_equal(s.q[0].n_steps, 0);
    char *parts[2];
    assert_int_equal(m2_qa_parts(&s.q[2], 2, parts, &err), 0);
    assert_string_equal(parts[1], "12");
    free(parts[0]);
    free(parts[1]);
    m2_qa_set_free(&s);
    const char *bad[4] = {"{\"question\": \"a\"}\n", "{\"question\": 3, \"answer\": \"1\"}\n", "not json\n",
                          "{\"question\": \"a\", \"answer\": \"none\"}\n"};
    const char *why[4] = {"\"answer\" missing", "\"question\" missing", "not a JSON object", "holds no number"};
    for (int i = 0; i < 4; i++) {
        f = fopen(path, "w");
        fputs("{\"question\": \"ok\", \"answer\": \"1\"}\n", f);
        fputs(bad[i], f);
        fclose(f);
        m2_err e = {0};
        assert_int_equal(m2_qa_load_jsonl(path, &s, &e), -1);
        assert_non_null(strstr(e.msg, ":2:"));
        assert_non_null(strstr(e.msg, why[i]));
        assert_non_null(strstr(e.msg, path));
    }
    f = fopen(path, "w");
    fclose(f);
    m2_err e = {0};
    assert_int_equal(m2_qa_load_jsonl(path, &s, &e), -1);
    assert_non_null(strstr(e.msg, "no questions"));
    m2_remove_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schedules),
        cmocka_unit_test(golden_contexts),
        cmocka_unit_test(pack_masks_other_agents),
        cmocka_unit_test(play_tiny),
        cmocka_unit_test(answers),
        cmocka_unit_test(arithmetic_family),
        cmocka_unit_test(craft_family),
        cmocka_unit_test(jsonl_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
