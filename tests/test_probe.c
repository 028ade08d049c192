/* The RL-stage diagnostics (pipe/probe.h) and their report table (pipe/report.h): an unchanged
 * adapter changes no greedy action and has KL exactly 0; a moved one is seen; the record round-trips
 * and a damaged one is named; the report's table carries the probe's and the metrics' figures and
 * names the stages that changed nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "core/rng.h"
#include "data/records_read.h"
#include "model/generate.h"
#include "model/model.h"
#include "pipe/probe.h"
#include "pipe/report.h"
#include "tmpdir.h"

typedef struct fixture {
    char dir[256];
    m2_run_config *cfg;
    pw_world w;
    m2_seqset set;
    m2_adapter *a;
} fixture;

/* A random byte-token model and the low-level records of a few TextCraft data episodes. */
static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    m2_err err = {0};
    assert_int_equal(m2t_tmpdir(f->dir, sizeof f->dir, "probe"), 0);
    f->cfg = malloc(sizeof *f->cfg);
    char *ov[3] = {"env.name=textcraft", "data.expert_episodes=4", "data.medium_episodes=2"};
    assert_int_equal(m2_run_config_load(f->cfg, NULL, 3, ov, &err), 0);
    assert_int_equal(pw_data_ensure(f->cfg, f->dir, NULL, &err), 0);
    f->w.cfg = f->cfg;
    m2_byte_tok_iface(&f->w.tok, M2_BOS_NONE);
    m2_model_config mc;
    assert_int_equal(m2_config_preset("test-llama", &mc, &err), 0);
    mc.vocab_size = 259;
    mc.max_seq_len = 4096;
    m2_model_opts mo = {M2_DT_F32, 0, 1};
    assert_non_null(f->w.m = m2_model_create(&mc, &mo, &err));
    m2_model_init_random(f->w.m, 3, 0.3f);
    m2_seqset_init(&f->set);
    char path[400];
    snprintf(path, sizeof path, "%s/artifacts/data/expert/low.jsonl", f->dir);
    m2_low_record *r;
    int nr;
    assert_int_equal(m2_low_records_read(path, &r, &nr, &err), 0);
    assert_int_equal(m2_seqset_add_low(&f->set, &f->w.tok, r, nr, 4000, &err), 0);
    m2_low_records_free(r, nr);
    assert_true(f->set.n >= 8);
    m2_lora_config lc = {"sys2", 2, 4.f, 0.f, M2_LORA_Q | M2_LORA_V};
    assert_non_null(f->a = m2_adapter_add(f->w.m, &lc, 5, &err));
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    m2_seqset_free(&f->set);
    m2_model_free(f->w.m);
    m2_remove_tree(f->dir);
    free(f->cfg);
    free(f);
    return 0;
}

static void unchanged_adapter_changes_nothing(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    pw_probe *p;
    assert_int_equal(pw_probe_begin(&f->w, &f->set, 6, f->a, &p, &err), 0);
    pw_probe_result r;
    assert_int_equal(pw_probe_end(p, f->a, 6, &r, &err), 0);
    assert_int_equal(r.n_states, 6);
    assert_int_equal(r.changed, 0);
    assert_true(r.kl == 0.0);
    assert_true(r.kl_tokens > 0);
    pw_probe_free(p);
    assert_null(m2_adapter_find(f->w.m, "sys2_probe_start"));   /* the start copy leaves with the probe */
}

static void moved_adapter_is_seen(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    pw_probe *p;
    assert_int_equal(pw_probe_begin(&f->w, &f->set, 6, f->a, &p, &err), 0);
    /* the stage "trains": every factor moves (B leaves 0, so the adapter now acts) */
    m2_rng rng;
    m2_rng_seed(&rng, 11);
    for (size_t i = 0; i < f->a->params.n; i++) f->a->params.w[i] += 2.f * m2_rng_normal(&rng);
    pw_probe_result r;
    assert_int_equal(pw_probe_end(p, f->a, 6, &r, &err), 0);
    assert_true(r.kl > 1e-3);
    assert_true(r.changed > 0 && r.changed <= r.n_states);
    pw_probe_free(p);
}

/* On the data's action: the probe states whose action span is rewritten to the start adapter's own
 * greedy action (generated as the probe does: greedy, at most 6 tokens, EOS included) count at the
 * start, and at the end while the adapter is unchanged; the random model's greedy actions match none
 * of the others. Once the adapter moves, the end's count follows its own greedy actions. */
static void on_data_counts_the_data_action(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    enum { MAX_NEW = 6, REWRITTEN = 3 };
    pw_probe *p;
    assert_int_equal(pw_probe_begin(&f->w, &f->set, f->set.n, f->a, &p, &err), 0);   /* every state: seq[i] */
    int32_t eos = f->w.tok.eos_id;
    for (int i = 0; i < REWRITTEN; i++) {
        m2_packed *s = &f->set.seq[i];
        const int32_t *prompt = s->ids;
        int plen = s->act_begin[0];
        m2_gen_config g = {.max_new_tokens = MAX_NEW, .sampler = {.temperature = 0.f}, .stop_tokens = &eos, .n_stop_tokens = 1};
        m2_gen_result gr = {0};
        assert_int_equal(m2_generate(f->w.m, f->a, 1, &prompt, &plen, &g, &gr, &err), 0);
        assert_true(gr.n > 0 && s->act_begin[0] + gr.n <= s->n_tok);
        memcpy(s->ids + s->act_begin[0], gr.tokens, (size_t)gr.n * sizeof(int32_t));
        s->act_end[0] = s->act_begin[0] + gr.n;
        m2_gen_result_free(&gr);
    }
    pw_probe_result r;
    assert_int_equal(pw_probe_end(p, f->a, MAX_NEW, &r, &err), 0);
    assert_int_equal(r.start_on_data, REWRITTEN);
    assert_int_equal(r.end_on_data, REWRITTEN);
    pw_probe_free(p);
}

static void record_round_trips_and_damage_is_named(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    pw_probe_result w = {.n_states = 32, .changed = 5, .kl = 0.125, .kl_tokens = 640, .start_on_data = 20, .end_on_data = 23}, r;
    assert_int_equal(pw_probe_read(f->dir, &r, &err), 0);   /* absent */
    assert_int_equal(pw_probe_write(&w, f->dir, &err), 0);
    assert_int_equal(pw_probe_read(f->dir, &r, &err), 1);
    assert_int_equal(r.n_states, 32);
    assert_int_equal(r.changed, 5);
    assert_true(r.kl == 0.125);
    assert_int_equal(r.kl_tokens, 640);
    assert_int_equal(r.start_on_data, 20);
    assert_int_equal(r.end_on_data, 23);
    char path[400];
    snprintf(path, sizeof path, "%s/probe.json", f->dir);
    /* an older run's record, without the on-data counts: read, the counts unknown */
    const char *old = "{\"n_states\": 3, \"changed\": 1, \"changed_frac\": 0.33, \"kl\": 0.5, \"kl_tokens\": 9}";
    assert_int_equal(m2_write_file_atomic(path, old, strlen(old), &err), 0);
    assert_int_equal(pw_probe_read(f->dir, &r, &err), 1);
    assert_int_equal(r.start_on_data, -1);
    assert_int_equal(r.end_on_data, -1);
    assert_int_equal(m2_write_file_atomic(path, "{\"n_states\": 3}", 15, &err), 0);
    assert_int_equal(pw_probe_read(f->dir, &r, &err), -1);
    assert_non_null(strstr(err.msg, "probe.json"));
    remove(path);
}

static void report_table_carries_the_figures(void **state) {
    fixture *f = *state;
    m2_err err = {0};
    char run[400], d[500], path[600];
    snprintf(run, sizeof run, "%s/run", f->dir);
    pw_probe_result off = {.n_states = 10, .changed = 0, .kl = 0.0, .kl_tokens = 100, .start_on_data = 9, .end_on_data = 9};
    pw_probe_result on = {.n_states = 10, .changed = 4, .kl = 0.5, .kl_tokens = 100, .start_on_data = 9, .end_on_data = 6};
    snprintf(d, sizeof d, "%s/artifacts/sys2_offline", run);
    assert_int_equal(m2_mkdir_p(d, &err), 0);
    assert_int_equal(pw_probe_write(&off, d, &err), 0);
    snprintf(d, sizeof d, "%s/artifacts/sys2_online", run);
    assert_int_equal(m2_mkdir_p(d, &err), 0);
    assert_int_equal(pw_probe_write(&on, d, &err), 0);
    const char *metrics =
        "{\"step\":1,\"data\":{\"sys2/adv_std\":1,\"sys2/w_std\":0.5}}\n"
        "{\"step\":2,\"data\":{\"sys2/adv_std\":3,\"sys2/w_std\":1.5}}\n"
        "{\"step\":3,\"data\":{\"sys2_online/buffer_online_frac\":0.1}}\n"
        "{\"step\":4,\"data\":{\"sys2_online/adv_std\":0.25,\"sys2_online/w_std\":0.75}}\n"
        "{\"step\":5,\"data\":{\"sys2_online/buffer_online_frac\":0.4}}\n";
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    assert_int_equal(m2_write_file_atomic(path, metrics, strlen(metrics), &err), 0);
    char md[600];
    snprintf(md, sizeof md, "%s/results.md", run);
    assert_int_equal(m2_write_file_atomic(md, "# Results\n", 10, &err), 0);
    m2_report_run rr = {.dir = run, .method = "multi2", .env = "textcraft"};
    assert_int_equal(m2_report_append_rl_stages(md, &rr, 1, &err), 0);
    char *text = NULL;
    assert_int_equal(m2_read_file(md, &text, NULL, &err), 0);
    assert_true(!strncmp(text, "# Results\n", 10));   /* appended, the table before kept */
    assert_non_null(strstr(text, "| multi2 | textcraft | sys2_offline | 10 | 0.0 | 0 | 9 → 9 | 2 | 1 | - |"));
    assert_non_null(strstr(text, "| multi2 | textcraft | sys2_online | 10 | 40.0 | 0.5 | 9 → 6 | 0.25 | 0.75 | 0.40 |"));
    assert_non_null(strstr(text, "Changed no greedy decision on the probe set: multi2 textcraft sys2_offline (its start "
                                 "already took the data's own action at 9 of 10 probe states)."));
    free(text);
    /* a run without RL stages adds nothing */
    snprintf(d, sizeof d, "%s/empty", f->dir);
    assert_int_equal(m2_mkdir_p(d, &err), 0);
    assert_int_equal(m2_write_file_atomic(md, "# Results\n", 10, &err), 0);
    m2_report_run none = {.dir = d, .method = "flat", .env = "alfworld"};
    assert_int_equal(m2_report_append_rl_stages(md, &none, 1, &err), 0);
    assert_int_equal(m2_read_file(md, &text, NULL, &err), 0);
    assert_string_equal(text, "# Results\n");
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unchanged_adapter_changes_nothing),
        cmocka_unit_test(moved_adapter_is_seen),
        cmocka_unit_test(on_data_counts_the_data_action),
        cmocka_unit_test(record_round_trips_and_damage_is_named),
        cmocka_unit_test(report_table_carries_the_figures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
