/* core/config: YAML configs, dotted overrides, every error kind (naming file:line / "command line"
 * and the key), base: includes, and the resolved-config round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "pipe/pipe.h"
#include "tmpdir.h"

static char tmpdir[64];

static void write_text(const char *name, const char *text, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "cfg");
}

static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static const m2_cfg_schema *S(void) { return m2_run_config_schema(); }

static void defaults_match_reference(void **state) {
    m2_run_config c;
    m2_err err = {0};
    assert_int_equal(m2_cfg_defaults(S(), &c, &err), 0);
    assert_int_equal(c.method, M2_METHOD_MULTI2);
    assert_true(c.sys2_offline_actor_lr == 1e-4);
    assert_true(c.sys2_offline_critic_lr == 1e-5);
    assert_true(c.sys2_offline_beta == 10);
    assert_true(c.sys2_offline_w_max == 20);
    assert_true(c.sys2_offline_lambda == 7);
    assert_true(c.sys2_online_eta == 0.02);
    assert_int_equal(c.sys2_online_buffer_capacity, 2000);
    assert_int_equal(c.eval_step_limit, 50);
    assert_string_equal(c.lora_sys2_targets, "v");
    assert_string_equal(c.eval_splits, "id,ood");
    assert_string_equal(c.run_stages, "");
    assert_int_equal(c.run_tensorboard, 1);
    assert_int_equal(c.sys2_offline_head_grad_to_adapter, 0);
}

static void yaml_nested_dotted_and_overrides(void **state) {
    char path[256];
    write_text("a.yaml",
               "method: no_kl\n"
               "run:\n  seed: 7\n  name: exp1\n"
               "sys2:\n  offline:\n    beta: 3.5\n    anchor: relu-weight\n"
               "  online.eta: 0.5\n"
               "lora.sys1.targets: [q, v, gate]\n"
               "eval:\n  splits:\n    - ood\n"
               "run.tensorboard: off\n"
               "env: {name: alfworld, data: \"/tmp/x y\"}\n",
               path, sizeof path);
    m2_run_config c;
    m2_err err = {0};
    char *over[] = {"sys2.offline.beta=3", "seed_dummy"};
    /* A bad override names the command line. */
    assert_int_equal(m2_run_config_load(&c, path, 2, over, &err), -1);
    assert_non_null(strstr(err.msg, "command line"));
    assert_non_null(strstr(err.msg, "key=value"));
    char *over2[] = {"sys2.offline.beta=3", "run.seed=9", "lora.sys2.targets=q,k"};
    assert_int_equal(m2_run_config_load(&c, path, 3, over2, &err), 0);
    assert_int_equal(c.method, M2_METHOD_NO_KL);
    assert_int_equal(c.run_seed, 9);
    assert_string_equal(c.run_name, "exp1");
    assert_true(c.sys2_offline_beta == 3.0);
    assert_int_equal(c.sys2_offline_anchor, M2_OFFLINE_ANCHOR_RELU_WEIGHT);
    assert_true(c.sys2_online_eta == 0.5);
    assert_string_equal(c.lora_sys1_targets, "q,v,gate");
    assert_string_equal(c.lora_sys2_targets, "q,k");
    assert_string_equal(c.eval_splits, "ood");
    assert_int_equal(c.run_tensorboard, 0);
    assert_string_equal(c.env_name, "alfworld");
    assert_string_equal(c.env_data, "/tmp/x y");
    assert_true(m2_cfg_list_has(c.lora_sys1_targets, "gate"));
    assert_int_equal(m2_cfg_list_count(c.lora_sys1_targets), 3);
}

/* Each bad config must fail with a message containing every listed fragment. */
typedef struct { const char *yaml; const char *frags[4]; } bad_case;

static void yaml_errors_name_file_line_key(void **state) {
    static const bad_case cases[] = {
        {"sys2:\n  offline:\n    betta: 3\n", {"bad.yaml:3", "unknown key 'sys2.offline.betta'", "did you mean 'sys2.offline.beta'"}},
        {"sys2:\n  ofline:\n    beta: 3\n", {"bad.yaml:2", "unknown key 'sys2.ofline'", "did you mean 'sys2.offline'"}},
        /* suggestions up to 4 edits, also when the key is 4 characters longer; a key much longer
         * than every schema key gets none (and costs no distance tables) */
        {"sys2.offline.betaaaa: 3\n", {"bad.yaml:1", "unknown key 'sys2.offline.betaaaa'", "did you mean 'sys2.offline.beta'"}},
        {"sys2.offline.beta_and_a_lot_more_text_than_any_key_has: 3\n", {"bad.yaml:1", "multi2 train --help-config lists the keys"}},
        {"run:\n  seed: abc\n", {"bad.yaml:2", "run.seed", "expected an integer, got 'abc'"}},
        {"run:\n  seed: 1.5\n", {"bad.yaml:2", "run.seed", "expected an integer"}},
        {"sys2.offline.gamma: 1.5\n", {"bad.yaml:1", "sys2.offline.gamma", "must be in [0, 1], got 1.5"}},
        {"sys2.offline.beta: fast\n", {"bad.yaml:1", "sys2.offline.beta", "expected a number, got 'fast'"}},
        {"run.tensorboard: maybe\n", {"bad.yaml:1", "run.tensorboard", "expected true or false"}},
        {"method: multi3\n", {"bad.yaml:1", "method", "not one of", "did you mean 'multi2'"}},
        {"lora.sys1.targets: [q, vv]\n", {"bad.yaml:1", "lora.sys1.targets", "item 'vv'", "did you mean"}},
        {"run.seed: [1, 2]\n", {"bad.yaml:1", "run.seed", "got a list"}},
        {"run.seed:\n  a: 1\n", {"bad.yaml:1", "run.seed", "got a mapping"}},
        {"sys2: 3\n", {"bad.yaml:1", "'sys2' is a section"}},
        {"run:\n  seed: 1\n  seed: 2\n", {"bad.yaml:3", "run.seed", "set twice"}},
        {"run: [\n", {"bad.yaml:", "YAML syntax error"}},
        {"- 1\n- 2\n", {"bad.yaml", "mapping"}},
        {"a: 1\n---\nb: 2\n", {"bad.yaml", "more than one YAML document"}},
        {"sys2.offline.epochs: -1\n", {"bad.yaml:1", "sys2.offline.epochs", "must be >= 0"}},
        {"model.tiny.dim: 250\nmodel.tiny.heads: 8\n", {"model.tiny.dim", "divisible", "model.tiny.heads"}},
        {"totally_unrelated_key: 1\n", {"bad.yaml:1", "unknown key 'totally_unrelated_key'", "--help-config"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        write_text("bad.yaml", cases[i].yaml, path, sizeof path);
        m2_run_config c;
        m2_err err = {0};
        int rc = m2_run_config_load(&c, path, 0, NULL, &err);
        if (rc != -1) fail_msg("case %zu accepted: %s", i, cases[i].yaml);
        for (int k = 0; k < 4 && cases[i].frags[k]; k++)
            if (!strstr(err.msg, cases[i].frags[k]))
                fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].frags[k]);
    }
}

static void override_errors(void **state) {
    m2_run_config c;
    m2_err err = {0};
    char *a[] = {"sys2.offline.beta=abc"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, a, &err), -1);
    assert_non_null(strstr(err.msg, "command line: sys2.offline.beta: expected a number"));
    char *b[] = {"sys2.ofline.beta=3"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, b, &err), -1);
    assert_non_null(strstr(err.msg, "command line: unknown key 'sys2.ofline.beta' (did you mean 'sys2.offline.beta'?)"));
    char *d[] = {"=3"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, d, &err), -1);
    char *e[] = {"sys2.online.alpha=0"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, e, &err), -1);
    assert_non_null(strstr(err.msg, "sys2.online.alpha"));
    char *f[] = {"run.name=a/b"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, f, &err), -1);
    assert_non_null(strstr(err.msg, "run.name"));
    char *g[] = {"sys2.offline.beta=nan"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, g, &err), -1);
    assert_non_null(strstr(err.msg, "finite"));
    char *h[] = {"sys2.offline=3"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, h, &err), -1);
    assert_non_null(strstr(err.msg, "section"));
    /* Quoted and bracketed forms are accepted. */
    char *ok[] = {"run.name=\"quoted\"", "eval.splits=[train, id]", "run.seed=1e3", "run.stages=data,eval"};
    assert_int_equal(m2_run_config_load(&c, NULL, 4, ok, &err), 0);
    assert_string_equal(c.run_name, "quoted");
    assert_string_equal(c.eval_splits, "train,id");
    assert_int_equal(c.run_seed, 1000);
    const char *st[16];
    assert_int_equal(m2_run_stage_plan(&c, st, 16), 2);
    assert_string_equal(st[0], "data");
    assert_string_equal(st[1], "eval");
}

static void base_include_and_cycles(void **state) {
    char p1[256], p2[256], p3[256];
    write_text("base.yaml", "run.seed: 5\nsys2.offline.beta: 4\nmethod: flat\n", p1, sizeof p1);
    write_text("child.yaml", "base: base.yaml\nsys2.offline.beta: 6\n", p2, sizeof p2);
    m2_run_config c;
    m2_err err = {0};
    assert_int_equal(m2_run_config_load(&c, p2, 0, NULL, &err), 0);
    assert_int_equal(c.run_seed, 5);
    assert_true(c.sys2_offline_beta == 6);
    assert_int_equal(c.method, M2_METHOD_FLAT);
    assert_string_equal(c.run_name, "child");   /* default run name: the config file's name */
    const char *st[16];
    int n = m2_run_stage_plan(&c, st, 16);
    for (int i = 0; i < n; i++) assert_string_not_equal(st[i], "sys1_sft");
    /* An error inside the base file names the base file and the including line. */
    write_text("base.yaml", "run.seed: x\n", p1, sizeof p1);
    assert_int_equal(m2_run_config_load(&c, p2, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "child.yaml:1: base: "));
    assert_non_null(strstr(err.msg, "base.yaml:1: run.seed"));
    /* Cycles and missing files. */
    write_text("cyc1.yaml", "base: cyc2.yaml\n", p1, sizeof p1);
    write_text("cyc2.yaml", "base: cyc1.yaml\n", p3, sizeof p3);
    assert_int_equal(m2_run_config_load(&c, p1, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cycle"));
    write_text("miss.yaml", "base: nowhere.yaml\n", p1, sizeof p1);
    assert_int_equal(m2_run_config_load(&c, p1, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "nowhere.yaml"));
}

static void resolved_config_round_trip(void **state) {
    const m2_cfg_schema *s = S();
    m2_run_config a, b;
    m2_err err = {0};
    char *over[] = {"sys2.offline.beta=0.1", "sys2.online.eta=3.0000000000000004", "run.name=tricky",
                    "env.data=/tmp/a \"b\"\\c\t\xc3\xa9 \xc2\x85 end", "lora.sys1.targets=[q,k,v,o,gate,up,down]",
                    "sys1.sft.lr=1.2345678901234567e-5", "model.tiny.rope_base=500000", "eval.temperature=0"};
    assert_int_equal(m2_run_config_load(&a, NULL, 8, over, &err), 0);
    char *y1 = m2_cfg_to_yaml(s, &a);
    assert_non_null(y1);
    assert_int_equal(m2_cfg_defaults(s, &b, &err), 0);
    if (m2_cfg_apply_yaml(s, &b, y1, strlen(y1), "saved.yaml", &err) != 0) fail_msg("%s\n%s", err.msg, y1);
    char *y2 = m2_cfg_to_yaml(s, &b);
    assert_string_equal(y1, y2);
    /* Field by field: same bits. */
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *f = &s->fields[i];
        size_t sz = f->type == M2_CFG_INT ? 8 : f->type == M2_CFG_FLOAT ? 8 : f->type == M2_CFG_BOOL ? sizeof(int) : M2_CFG_STR_MAX;
        if (memcmp((char *)&a + f->offset, (char *)&b + f->offset, sz)) fail_msg("field %s differs", f->key);
    }
    assert_string_equal(b.env_data, "/tmp/a \"b\"\\c\t\xc3\xa9 \xc2\x85 end");
    /* Saved to disk and loaded as a config file. */
    char path[256];
    snprintf(path, sizeof path, "%s/resolved.yaml", tmpdir);
    assert_int_equal(m2_cfg_save(s, &a, path, &err), 0);
    m2_run_config c;
    assert_int_equal(m2_run_config_load(&c, path, 0, NULL, &err), 0);
    char *y3 = m2_cfg_to_yaml(s, &c);
    assert_string_equal(y1, y3);
    free(y1); free(y2); free(y3);
}

static void schema_print_and_strings(void **state) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    m2_cfg_print_schema(S(), f);
    fclose(f);
    assert_non_null(strstr(buf, "sys2.offline.beta"));
    assert_non_null(strstr(buf, "sampled|relu-weight"));
    free(buf);
    /* Invalid UTF-8 is rejected at the door (it could not be saved as YAML). */
    m2_run_config c;
    m2_err err = {0};
    char *bad[] = {"env.data=\xff\xfe"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, bad, &err), -1);
    assert_non_null(strstr(err.msg, "UTF-8"));
    /* Empty file = all defaults. */
    char path[256];
    write_text("empty.yaml", "# nothing\n", path, sizeof path);
    assert_int_equal(m2_run_config_load(&c, path, 0, NULL, &err), 0);
    assert_string_equal(c.run_name, "empty");
    /* Alias bombs are cut off. */
    write_text("bomb.yaml",
               "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
               "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
               path, sizeof path);
    assert_int_equal(m2_run_config_load(&c, path, 0, NULL, &err), -1);
}

static void shipped_configs_load(void **state) {
    static const char *names[] = {"demo", "small", "flat", "shared_adapter", "sft_only", "offline_only", "rl_only", "role_swap",
                                  "no_anchor", "no_kl"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/configs/%s.yaml", M2_SOURCE_DIR, names[i]);
        m2_run_config c;
        m2_err err = {0};
        if (m2_run_config_load(&c, path, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
        if (i >= 2) assert_string_equal(m2_method_names[c.method], names[i]);
    }
}

/* docs/runs.md lists every key of the schema (the table is made from `multi2 train --help-config`) */
static void docs_list_every_key(void **st) {
    char path[600], *doc = NULL;
    snprintf(path, sizeof path, "%s/docs/runs.md", M2_SOURCE_DIR);
    m2_err err = {0};
    assert_int_equal(m2_read_file(path, &doc, NULL, &err), 0);
    const m2_cfg_schema *s = m2_run_config_schema();
    for (int i = 0; i < s->n_fields; i++) {
        char row[200];
        snprintf(row, sizeof row, "| `%s` |", s->fields[i].key);
        if (!strstr(doc, row)) fail_msg("docs/runs.md has no row for config key %s", s->fields[i].key);
    }
    free(doc);
}


/* Stage reuse compares exactly the keys each stage declares (pipe/plan.c). */
static int reusable_with(const char *assignment, const char **st) {
    m2_run_config *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    m2_err err = {0};
    char *over[] = {(char *)assignment};
    if (m2_run_config_load(a, NULL, 0, NULL, &err) || m2_run_config_load(b, NULL, 1, over, &err)) fail_msg("%s", err.msg);
    int n = m2_run_reusable_prefix(a, b, st, 16, NULL, 0);
    free(a);
    free(b);
    return n;
}

static void reuse_follows_declared_reads(void **state) {
    const char *st[16];
    /* the bug this table fixed: sys2_offline samples anchor actions with eval.max_new_tokens and
     * sys2_online rolls out with it, so only the stages before sys2_offline may be shared */
    assert_int_equal(reusable_with("eval.max_new_tokens=7", st), 4);
    assert_string_equal(st[3], "sys2_warmup");
    /* the expert data (and the base pre-trained on it) are rolled out with eval.step_limit */
    assert_int_equal(reusable_with("eval.step_limit=9", st), 0);
    /* keys only the evaluation reads */
    assert_int_equal(reusable_with("eval.episodes=3", st), 6);
    assert_int_equal(reusable_with("eval.temperature=0.5", st), 6);
    /* the online stage also reads the offline expectile */
    assert_int_equal(reusable_with("sys2.offline.expectile=0.7", st), 4);
    assert_int_equal(reusable_with("sys2.online.eta=0.5", st), 5);
    assert_int_equal(reusable_with("sys2.warmup.lr=0.5", st), 3);
    assert_int_equal(reusable_with("heads.hidden=8", st), 4);
    /* System 2's action mode: the offline anchor's a^, the online rollouts and the evaluation act
     * with it, so a score-mode run shares only the SFT stages with a generate-mode one */
    assert_int_equal(reusable_with("sys2.action_mode=score", st), 4);
    assert_int_equal(reusable_with("sys2.action_logprob=mean", st), 4);
    const m2_stage_id acting[3] = {M2_STAGE_SYS2_OFFLINE, M2_STAGE_SYS2_ONLINE, M2_STAGE_EVAL};
    for (int k = 0; k < 3; k++) {
        assert_true(m2_stage_reads_key(acting[k], "sys2.action_mode"));
        assert_true(m2_stage_reads_key(acting[k], "sys2.action_logprob"));
    }
    assert_false(m2_stage_reads_key(M2_STAGE_SYS2_WARMUP, "sys2.action_mode"));
    assert_false(m2_stage_reads_key(M2_STAGE_DATA, "sys2.action_mode"));
    /* bits depend on the thread count; folder and logging keys steer only */
    assert_int_equal(reusable_with("run.threads=3", st), 0);   /* the tiny base is pre-trained first */
    assert_int_equal(reusable_with("model.base=x.gguf", st), 0);
    assert_int_equal(reusable_with("run.log_every=3", st), 8);
    assert_int_equal(reusable_with("model.recompute=true", st), 8);
}

/* Every key is either declared by a stage or steers only, and for every key a config differing in it
 * alone shares exactly the stages before the first one of the plan that reads it. */
static void every_key_has_a_reader(void **state) {
    const m2_cfg_schema *s = m2_run_config_schema();
    m2_run_config *base = malloc(sizeof *base), *c = malloc(sizeof *c);
    m2_err err = {0};
    if (m2_run_config_load(base, NULL, 0, NULL, &err)) fail_msg("%s", err.msg);
    const char *plan[16], *st[16];
    int n = m2_run_stage_plan(base, plan, 16);
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *f = &s->fields[i];
        if (!strcmp(f->key, "method")) continue;
        int readers = 0;
        for (int k = 0; k < M2_N_STAGES; k++) readers += m2_stage_reads_key((m2_stage_id)k, f->key);
        if (!readers && !m2_key_steers_only(f->key)) fail_msg("%s: read by no stage of pipe/plan.c", f->key);
        /* a different valid value */
        char val[M2_CFG_STR_MAX + 64], asg[M2_CFG_STR_MAX + 128];
        m2_cfg_format_value(f, base, val, sizeof val);
        switch (f->type) {
        case M2_CFG_INT: snprintf(asg, sizeof asg, "%s=%lld", f->key, (long long)(atoll(val) == f->min ? f->min + 1 : f->min)); break;
        case M2_CFG_FLOAT: snprintf(asg, sizeof asg, "%s=%.17g", f->key, atof(val) == f->min ? (f->min + (f->max < 1e300 ? f->max : f->min + 2)) / 2 : f->min); break;
        case M2_CFG_BOOL: snprintf(asg, sizeof asg, "%s=%s", f->key, strcmp(val, "true") ? "true" : "false"); break;
        case M2_CFG_ENUM: {
            char first[64];
            snprintf(first, sizeof first, "%.*s", (int)strcspn(f->choices, "|"), f->choices);
            const char *second = strchr(f->choices, '|') + 1;
            snprintf(asg, sizeof asg, "%s=%.*s", f->key, strcmp(val, first) ? (int)strlen(first) : (int)strcspn(second, "|"),
                     strcmp(val, first) ? first : second);
            break;
        }
        default: continue;   /* strings and lists: names, paths, stage lists */
        }
        char *over[] = {asg};
        if (m2_run_config_load(c, NULL, 1, over, &err)) continue;   /* a cross-key check refused it */
        int expect = 0;
        while (expect < n && !m2_stage_reads_key((m2_stage_id)m2_stage_find(plan[expect]), f->key)) expect++;
        if (m2_key_steers_only(f->key)) expect = n;
        int got = m2_run_reusable_prefix(base, c, st, 16, NULL, 0);
        if (got != expect) fail_msg("%s: %d stages reusable, expected %d", asg, got, expect);
    }
    free(base);
    free(c);
}

/* ENUM keys are C enum values in list order; saved configs still say their names */
static void enum_keys_are_enums(void **state) {
    m2_run_config c;
    m2_err err = {0};
    char *over[] = {"method=role_swap", "model.dtype=q8_0", "sys2.online.logprob=mean", "run.progress=off",
                    "sys2.action_mode=score"};
    assert_int_equal(m2_run_config_load(&c, NULL, 5, over, &err), 0);
    assert_int_equal(c.sys2_action_mode, M2_ACTION_MODE_SCORE);
    assert_string_equal(m2_action_mode_names[M2_ACTION_MODE_GENERATE], "generate");
    assert_int_equal(c.method, M2_METHOD_ROLE_SWAP);
    assert_int_equal(c.model_dtype, M2_BASE_DTYPE_Q8_0);
    assert_int_equal(c.sys2_online_logprob, M2_LOGPROB_MEAN);
    assert_int_equal(c.run_progress, M2_RUN_PROGRESS_OFF);
    assert_string_equal(m2_method_names[M2_METHOD_NO_KL], "no_kl");
    char *y = m2_cfg_to_yaml(m2_run_config_schema(), &c);
    assert_non_null(strstr(y, "method: role_swap"));
    assert_non_null(strstr(y, "dtype: q8_0"));
    assert_non_null(strstr(y, "action_mode: score"));
    /* the saved text loads back to the same value; the default is generate */
    m2_run_config back;
    assert_int_equal(m2_run_config_load(&back, NULL, 0, NULL, &err), 0);
    assert_int_equal(back.sys2_action_mode, M2_ACTION_MODE_GENERATE);
    assert_int_equal(back.sys2_action_logprob, M2_LOGPROB_SUM);
    assert_int_equal(m2_cfg_apply_yaml(m2_run_config_schema(), &back, y, strlen(y), "saved", &err), 0);
    assert_int_equal(back.sys2_action_mode, M2_ACTION_MODE_SCORE);
    char *bad_mode[] = {"sys2.action_mode=pick"};
    assert_int_equal(m2_run_config_load(&back, NULL, 1, bad_mode, &err), -1);
    assert_non_null(strstr(err.msg, "sys2.action_mode"));
    free(y);
    assert_true(m2_method_of(&c)->role_swap);
    char *bad[] = {"env.name=minecraft"};
    assert_int_equal(m2_run_config_load(&c, NULL, 1, bad, &err), -1);
    assert_non_null(strstr(err.msg, "env.name"));
    assert_non_null(strstr(err.msg, "scienceworld"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_match_reference),
        cmocka_unit_test(yaml_nested_dotted_and_overrides),
        cmocka_unit_test(yaml_errors_name_file_line_key),
        cmocka_unit_test(override_errors),
        cmocka_unit_test(base_include_and_cycles),
        cmocka_unit_test(resolved_config_round_trip),
        cmocka_unit_test(schema_print_and_strings),
        cmocka_unit_test(shipped_configs_load),
        cmocka_unit_test(docs_list_every_key),
        cmocka_unit_test(reuse_follows_declared_reads),
        cmocka_unit_test(every_key_has_a_reader),
        cmocka_unit_test(enum_keys_are_enums),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
