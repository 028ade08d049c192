/* core/stage + `multi2 train`: the stage runner with fake stages (metrics, checkpoints, RNG) —
 * a run SIGKILLed mid-stage and resumed ends with byte-identical metrics.jsonl to one left alone —
 * and the CLI's exit codes, messages, dry run, --print-config, --help-config and report stage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/core.h"
#include "pipe/pipe.h"
#include "pipe/runfiles.h"
#include "io/io.h"
#include "model/model.h"
#include "tmpdir.h"

static char tmpdir[64];
static int kill_at_step = -1;   /* the fake stage SIGKILLs its own process at this step */

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "train");
}

static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

/* A stage that behaves like a trainer: an RNG-driven random walk logged every step, checkpointed
 * every run.ckpt_every steps with the RNG state and the accumulator. */
static int walk_stage(m2_stage_ctx *ctx, m2_err *err, int64_t steps, uint64_t stream) {
    m2_rng rng;
    double acc[2] = {0, 0};
    int64_t first = ctx->step;
    if (ctx->resume) {
        int64_t sh[1] = {2};
        if (m2_ckpt_get_rng(ctx->resume, "walk", &rng, err) != 0) return -1;
        if (m2_ckpt_read(ctx->resume, "acc", M2_CKPT_F64, acc, 1, sh, err) != 0) return -1;
        cJSON *f = cJSON_GetObjectItem(ctx->resume->state, "first");
        if (!cJSON_IsNumber(f)) return m2_errorf(err, M2_EFORMAT, "no 'first' in state");
        first = (int64_t)f->valuedouble;
    } else {
        m2_rng_seed_stream(&rng, (uint64_t)ctx->cfg->run_seed, stream);
    }
    ctx->total = first + steps;
    /* Artifacts of earlier stages are there. */
    if (stream == 2) {
        char p[1400];
        snprintf(p, sizeof p, "%s/../data/result.txt", ctx->artifacts);
        if (!m2_path_exists(p)) return m2_errorf(err, M2_ENOTFOUND, "%s missing", p);
    }
    while (ctx->step < first + steps) {
        ctx->step++;
        acc[0] += m2_rng_normal(&rng);
        acc[1] = acc[1] * 0.9 + m2_rng_uniform(&rng);
        m2_scalar s[] = {{stream == 1 ? "walk1/pos" : "walk2/pos", acc[0]}, {"walk/avg", acc[1]}};
        if (m2_stage_log(ctx, s, 2, err) != 0) return -1;
        if (ctx->cfg->run_ckpt_every && ctx->step % ctx->cfg->run_ckpt_every == 0) {
            m2_ckpt *c = m2_ckpt_new(0, "");
            int64_t sh[1] = {2};
            m2_ckpt_add(c, "acc", M2_CKPT_F64, acc, 1, sh, err);
            m2_ckpt_set_rng(c, "walk", &rng, err);
            cJSON_AddNumberToObject(c->state, "first", (double)first);
            int rc = m2_stage_save(ctx, c, err);
            m2_ckpt_free(c);
            if (rc) return -1;
        }
        if (ctx->step == kill_at_step) raise(SIGKILL);
    }
    char p[1400];
    snprintf(p, sizeof p, "%s/result.txt", ctx->artifacts);
    return m2_write_file_atomic(p, "ok\n", 3, err);
}

static int walk1(m2_stage_ctx *ctx, m2_err *err) { return walk_stage(ctx, err, 20, 1); }
static int walk2(m2_stage_ctx *ctx, m2_err *err) { return walk_stage(ctx, err, 15, 2); }

/* The fake plan uses the real stage names, mapped to the walks. */
static const m2_stage table[] = {
    {.name = "data", .fn = walk1, .help = "walk one"},
    {.name = "sys2_offline", .fn = walk2, .help = "walk two"},
};

static void load_cfg(m2_run_config *cfg, const char *name) {
    char out[128], name_kv[128], out_kv[160];
    snprintf(out, sizeof out, "%s/runs", tmpdir);
    snprintf(name_kv, sizeof name_kv, "run.name=%s", name);
    snprintf(out_kv, sizeof out_kv, "run.out_dir=%s", out);
    char *over[] = {"run.stages=[data, sys2_offline]", "run.ckpt_every=4", "run.keep_last=2", "run.log_every=5",
                    name_kv, out_kv, "run.seed=11"};
    m2_err err = {0};
    if (m2_run_config_load(cfg, NULL, 7, over, &err) != 0) fail_msg("%s", err.msg);
}

static char *slurp(const char *dir, const char *file) {
    char p[1100], *t[1] = {NULL};   /* an array, not &local: gcc 12 then sees no pointer to a dead local */
    snprintf(p, sizeof p, "%s/%s", dir, file);
    m2_err err = {0};
    if (m2_read_file(p, t, NULL, &err) != 0) fail_msg("%s", err.msg);
    return t[0];
}

static void run_to_completion(const char *name, int kill_step, int resume, char *dir, size_t cap) {
    m2_run_config cfg;
    load_cfg(&cfg, name);
    m2_run_dir_for(&cfg, dir, cap);
    FILE *devnull = fopen("/dev/null", "w");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kill_at_step = kill_step;
        m2_err err = {0};
        int rc = m2_train_run(&cfg, table, 2, dir, resume, devnull, &err);
        if (rc) fprintf(stderr, "child: %s\n", err.msg);
        _exit(rc ? 3 : 0);
    }
    int status;
    waitpid(pid, &status, 0);
    fclose(devnull);
    if (kill_step > 0) assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void killed_and_resumed_equals_uninterrupted(void **state) {
    char ref[512], dir[512];
    run_to_completion("ref", -1, 0, ref, sizeof ref);
    char *want = slurp(ref, "metrics.jsonl");
    /* 35 steps in all, one line each. */
    int lines = 0;
    for (char *q = want; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 35);

    /* Killed in stage 1 between checkpoints (step 10; last checkpoint 8), resumed. */
    run_to_completion("a", 10, 0, dir, sizeof dir);
    char *partial = slurp(dir, "metrics.jsonl");
    assert_non_null(strstr(partial, "\"step\":10,"));
    free(partial);
    run_to_completion("a", -1, 1, dir, sizeof dir);
    char *got = slurp(dir, "metrics.jsonl");
    assert_string_equal(got, want);
    free(got);

    /* Killed in stage 2 (global step 27 = its 7th step; last checkpoint 24), resumed twice:
     * the second resume finds everything done. */
    run_to_completion("b", 27, 0, dir, sizeof dir);
    run_to_completion("b", -1, 1, dir, sizeof dir);
    got = slurp(dir, "metrics.jsonl");
    assert_string_equal(got, want);
    free(got);
    run_to_completion("b", -1, 1, dir, sizeof dir);
    char *st = slurp(dir, "stages.json");
    assert_non_null(strstr(st, "\"sys2_offline\""));
    assert_non_null(strstr(st, "35"));
    free(st);

    /* Killed in stage 2 before its first checkpoint (step 22): stage 2 restarts at step 20. */
    run_to_completion("c", 22, 0, dir, sizeof dir);
    run_to_completion("c", -1, 1, dir, sizeof dir);
    got = slurp(dir, "metrics.jsonl");
    assert_string_equal(got, want);
    free(got);

    /* The run folder has everything DESIGN.md §8 names. */
    const char *must[] = {"config.yaml", "metrics.jsonl", "ckpt/latest", "plots/curves.svg", "stages.json",
                          "artifacts/data/result.txt"};
    for (int i = 0; i < 6; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, must[i]);
        if (!m2_path_exists(p)) fail_msg("missing %s", p);
    }
    free(want);
}

/* Sets the "made_by" of the checkpoint state in run dir's latest checkpoint (NULL: removes it), as
 * another binary (or an older one, which recorded none) would have written it. */
static void set_ckpt_made_by(const char *dir, const char *made_by) {
    char *latest = slurp(dir, "ckpt/latest"), rel[700];
    latest[strcspn(latest, "\n")] = 0;
    snprintf(rel, sizeof rel, "ckpt/%s/manifest.json", latest);
    free(latest);
    char *txt = slurp(dir, rel);
    cJSON *m = cJSON_Parse(txt), *st = cJSON_GetObjectItemCaseSensitive(m, "state");
    free(txt);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(st, "made_by"));   /* this binary wrote one */
    cJSON_DeleteItemFromObjectCaseSensitive(st, "made_by");
    if (made_by) cJSON_AddStringToObject(st, "made_by", made_by);
    char *out = cJSON_Print(m), p[1200];
    cJSON_Delete(m);
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    m2_err err = {0};
    assert_int_equal(m2_write_file_atomic(p, out, strlen(out), &err), 0);
    cJSON_free(out);
}

/* The made_by of each finished stage of dir, in order, joined by " | ". */
static void made_by(const char *dir, char *out, size_t cap) {
    m2_stage_made_by mb[4];
    m2_err err = {0};
    int n = m2_run_made_by(dir, mb, 4, &err);
    assert_true(n >= 0);
    *out = 0;
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s=%s", i ? " | " : "", mb[i].stage, mb[i].build);
}

/* stages.json records which binary made each stage: this one for a run it ran whole; the binaries
 * in order for a stage resumed from another one's checkpoint; "an older binary" for a checkpoint
 * that records none; a reused stage keeps its source's record. */
static void stages_record_their_binary(void **state) {
    char dir[512], got[2048], want[2048];
    const char *me = m2_build_id();
    assert_non_null(strstr(me, "multi2 "));
    run_to_completion("mb_whole", -1, 0, dir, sizeof dir);
    made_by(dir, got, sizeof got);
    snprintf(want, sizeof want, "data=%s | sys2_offline=%s", me, me);
    assert_string_equal(got, want);

    /* killed in stage 2 after its checkpoint at step 24, which another binary wrote */
    const char *other = "multi2 0.0.9 (commit 0123456789ab)";
    run_to_completion("mb_other", 27, 0, dir, sizeof dir);
    set_ckpt_made_by(dir, other);
    run_to_completion("mb_other", -1, 1, dir, sizeof dir);
    made_by(dir, got, sizeof got);
    snprintf(want, sizeof want, "data=%s | sys2_offline=%s then %s", me, other, me);
    assert_string_equal(got, want);

    /* killed again after a checkpoint this binary wrote on top of that: the chain is not repeated */
    run_to_completion("mb_chain", 27, 0, dir, sizeof dir);
    set_ckpt_made_by(dir, other);
    run_to_completion("mb_chain", 31, 1, dir, sizeof dir);   /* its checkpoint at 28 */
    run_to_completion("mb_chain", -1, 1, dir, sizeof dir);
    made_by(dir, got, sizeof got);
    assert_string_equal(got, want);

    /* a checkpoint of a binary from before the record */
    run_to_completion("mb_old", 27, 0, dir, sizeof dir);
    set_ckpt_made_by(dir, NULL);
    run_to_completion("mb_old", -1, 1, dir, sizeof dir);
    made_by(dir, got, sizeof got);
    snprintf(want, sizeof want, "data=%s | sys2_offline=an older binary then %s", me, me);
    assert_string_equal(got, want);

    /* a stage reused from mb_other keeps mb_other's record of it: change that record, then reuse */
    char src[512];
    snprintf(src, sizeof src, "%s/runs/mb_other", tmpdir);
    char *st = slurp(src, "stages.json");
    cJSON *j = cJSON_Parse(st);
    free(st);
    cJSON *mbo = cJSON_GetObjectItemCaseSensitive(j, "made_by");
    cJSON_ReplaceItemInObjectCaseSensitive(mbo, "data", cJSON_CreateString(other));
    char *txt = cJSON_Print(j), p[700];
    cJSON_Delete(j);
    snprintf(p, sizeof p, "%s/stages.json", src);
    m2_err err = {0};
    assert_int_equal(m2_write_file_atomic(p, txt, strlen(txt), &err), 0);
    cJSON_free(txt);
    m2_run_config cfg;
    load_cfg(&cfg, "mb_reuse");
    char over[700];
    snprintf(over, sizeof over, "run.reuse_from=%s", src);
    assert_int_equal(m2_cfg_override(m2_run_config_schema(), &cfg, over, &err), 0);
    assert_int_equal(m2_cfg_override(m2_run_config_schema(), &cfg, "run.reuse_stages=[data]", &err), 0);
    m2_run_dir_for(&cfg, dir, sizeof dir);
    FILE *devnull = fopen("/dev/null", "w");
    if (m2_train_run(&cfg, table, 2, dir, 0, devnull, &err) != 0) fail_msg("%s", err.msg);
    fclose(devnull);
    made_by(dir, got, sizeof got);
    snprintf(want, sizeof want, "data=%s | sys2_offline=%s", other, me);
    assert_string_equal(got, want);
}

static void not_implemented_stage_fails_up_front(void **state) {
    m2_run_config cfg;
    load_cfg(&cfg, "ni");
    m2_cfg_override(m2_run_config_schema(), &cfg, "run.stages=[data, eval]", NULL);
    char dir[512];
    m2_run_dir_for(&cfg, dir, sizeof dir);
    m2_err err = {0};
    assert_int_equal(m2_train_run(&cfg, table, 2, dir, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "stage eval not implemented yet"));
    assert_false(m2_path_exists(dir));
}

/* ---------------------------------------------------------------- the CLI */

static int run_cli(const char *args, char *out, size_t cap) {
    const char *bin = getenv("M2_BIN");
    if (!bin) return -100;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cd %s && %s train %s 2>&1", tmpdir, bin, args);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void cli_train(void **state) {
    if (!getenv("M2_BIN")) skip();
    static char out[1 << 16];
    char cfg[256];
    snprintf(cfg, sizeof cfg, "%s/configs/demo.yaml", M2_SOURCE_DIR);
    char args[1024];
    assert_int_equal(run_cli("", out, sizeof out), 2);
    assert_int_equal(run_cli("--bogus", out, sizeof out), 2);
    assert_int_equal(run_cli("--help", out, sizeof out), 0);
    assert_non_null(strstr(out, "--resume RUN_DIR"));
    assert_int_equal(run_cli("--help-config", out, sizeof out), 0);
    assert_non_null(strstr(out, "sys2.online.keep_fail"));
    snprintf(args, sizeof args, "%s --dry-run", cfg);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "memory plan"));
    assert_non_null(strstr(out, "base weights (f32, "));
    assert_non_null(strstr(out, "training ctx (8 x 768 tokens)"));
    assert_non_null(strstr(out, "runs/demo"));
    {   /* a real base: the plan from its own config (GGUF metadata, no tensor loaded) */
        m2_model_config mc;
        m2_err e = {0};
        assert_int_equal(m2_config_preset("test-qwen2", &mc, &e), 0);
        mc.vocab_size = 300;   /* room for a byte-level tokenizer: the run checks the base has one */
        static const char text[] = "craft a stick from planks; get 2 oak logs; craft planks";
        m2_bpe_train_opts bo = {.vocab_size = 280};
        m2_tokenizer *tk = m2_bpe_train(text, strlen(text), &bo, &e);
        assert_non_null(tk);
        char tokjson[300];
        snprintf(tokjson, sizeof tokjson, "%s/tok.json", tmpdir);
        assert_int_equal(m2_tokenizer_save_json(tk, tokjson, &e), 0);
        m2_model_opts o = {M2_DT_F32, 0, 1};
        m2_model *qm = m2_model_create(&mc, &o, &e);
        assert_non_null(qm);
        m2_model_init_random(qm, 1, 0.02f);
        char gg[300], bare[300], want[96];
        snprintf(gg, sizeof gg, "%s/q.gguf", tmpdir);
        snprintf(bare, sizeof bare, "%s/bare.gguf", tmpdir);
        assert_int_equal(m2_model_save_gguf_tok(qm, gg, 0, NULL, tk, &e), 0);
        assert_int_equal(m2_model_save_gguf(qm, bare, 0, NULL, &e), 0);   /* no tokenizer inside */
        m2_model_free(qm);
        m2_tokenizer_free(tk);
        snprintf(args, sizeof args, "%s model.base=%s model.dtype=q8_0 --dry-run", cfg, gg);
        assert_int_equal(run_cli(args, out, sizeof out), 0);
        snprintf(want, sizeof want, "base weights (q8_0, %.2fM params)", m2_config_n_params(&mc) / 1e6);
        assert_non_null(strstr(out, want));
        assert_non_null(strstr(out, "config and input files are valid"));
        /* every input file the config names is checked before anything runs: exit 1, the key, the
         * file and the reason; the plan is not printed as if the run could go */
        struct { const char *over; const char *key, *why; } bad[] = {
            {"model.base=%s/none.gguf", "model.base: ", "no such file"},
            {"model.base=%s/trunc.gguf", "model.base: ", "trunc.gguf"},
            {"model.base=%s/bare.gguf", "model.base: ", "set model.tokenizer"},
            {"model.tokenizer=%s/none.json", "model.tokenizer: ", "none.json: no such file"},
            {"data.path=%s/nodata", "data.path: ", "no such folder"},
            {"data.path=%s/emptydata", "data.path: ", "expert/high.jsonl: missing"},
            {"data.path=%s/baddata", "data.path: ", "baddata/expert/high.jsonl"},
            {"env.data=%s/nowhere", "env.data: ", "nowhere"},
            {"run.reuse_from=%s/nowhere run.reuse_stages=[pretrain]", "run.reuse_from: ", "is not a run folder"},
        };
        /* a truncated base: the first 40 % of a good one */
        char *gtxt = NULL;
        size_t glen = 0;
        assert_int_equal(m2_read_file(gg, &gtxt, &glen, &e), 0);
        char p2[400];
        snprintf(p2, sizeof p2, "%s/trunc.gguf", tmpdir);
        assert_int_equal(m2_write_file_atomic(p2, gtxt, glen * 2 / 5, &e), 0);
        free(gtxt);
        snprintf(p2, sizeof p2, "%s/emptydata", tmpdir);
        assert_int_equal(m2_mkdir_p(p2, &e), 0);
        snprintf(p2, sizeof p2, "%s/baddata/expert", tmpdir);
        assert_int_equal(m2_mkdir_p(p2, &e), 0);
        snprintf(p2, sizeof p2, "%s/baddata/expert/high.jsonl", tmpdir);
        assert_int_equal(m2_write_file_atomic(p2, "{\"env\": 3\n", 11, &e), 0);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char ov[400];
            snprintf(ov, sizeof ov, bad[i].over, tmpdir);
            for (int dry = 1; dry >= 0; dry--) {
                snprintf(args, sizeof args, "%s run.out_dir=%s/bad %s%s", cfg, tmpdir, ov, dry ? " --dry-run" : "");
                int rc = run_cli(args, out, sizeof out);
                if (rc != 1 || !strstr(out, bad[i].key) || !strstr(out, bad[i].why))
                    fail_msg("%s: exit %d, expected 1 with '%s' and '%s':\n%s", args, rc, bad[i].key, bad[i].why, out);
                assert_null(strstr(out, "memory plan"));
                assert_null(strstr(out, "== stage"));
                snprintf(p2, sizeof p2, "%s/bad", tmpdir);
                assert_false(m2_path_exists(p2));   /* nothing written, real run or not */
            }
        }
    }
    char nowrite[256];
    snprintf(nowrite, sizeof nowrite, "%s/runs/demo", tmpdir);
    assert_false(m2_path_exists(nowrite));   /* a dry run writes nothing */
    snprintf(args, sizeof args, "%s sys2.offline.betta=3", cfg);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "command line: unknown key 'sys2.offline.betta' (did you mean 'sys2.offline.beta'?)"));
    snprintf(args, sizeof args, "%s --print-config sys2.offline.beta=3 method=no_kl", cfg);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "    beta: 3.0\n"));
    assert_non_null(strstr(out, "method: no_kl\n"));
    /* Every stage of the plan is implemented (src/pipe/): the dry run lists none as missing. */
    snprintf(args, sizeof args, "%s --dry-run", cfg);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_null(strstr(out, "not implemented yet"));
    /* The report stage alone works end to end: folder, resolved config, results, plots. */
    snprintf(args, sizeof args, "%s run.stages=[report] run.name=rep run.out_dir=%s/cli", cfg, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    char dir[256], p[512];
    snprintf(dir, sizeof dir, "%s/cli/rep", tmpdir);
    const char *must[] = {"config.yaml", "metrics.jsonl", "results.md", "results.json", "plots/results.svg",
                          "plots/curves.svg", "stages.json"};
    for (int i = 0; i < 7; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, must[i]);
        if (!m2_path_exists(p)) fail_msg("missing %s", p);
    }
    /* The saved config reproduces the run's config. */
    m2_run_config a, b;
    m2_err err = {0};
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    assert_int_equal(m2_run_config_load(&a, p, 0, NULL, &err), 0);
    char outkv[256];
    snprintf(outkv, sizeof outkv, "run.out_dir=%s/cli", tmpdir);
    char *ov[] = {"run.stages=[report]", "run.name=rep", outkv};
    assert_int_equal(m2_run_config_load(&b, cfg, 3, ov, &err), 0);
    char *ya = m2_cfg_to_yaml(m2_run_config_schema(), &a), *yb = m2_cfg_to_yaml(m2_run_config_schema(), &b);
    assert_string_equal(ya, yb);
    free(ya); free(yb);
    /* A second fresh run into the same folder is refused; --resume finds it done. */
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "--resume"));
    snprintf(args, sizeof args, "--resume %s", dir);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "every stage is done"));
    snprintf(args, sizeof args, "--resume %s run.name=other", dir);
    assert_int_equal(run_cli(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "--resume %s/nowhere", tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    /* Stage reuse: a source that is no run, and stages without a source, are refused, nothing written. */
    snprintf(args, sizeof args, "%s run.name=re run.out_dir=%s/cli run.reuse_from=%s/nowhere run.reuse_stages=[pretrain]",
             cfg, tmpdir, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "run.reuse_from:"));
    assert_non_null(strstr(out, "is not a run folder"));
    snprintf(args, sizeof args, "%s run.name=re run.out_dir=%s/cli run.reuse_stages=[pretrain]", cfg, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "run.reuse_stages: set, but run.reuse_from names no run"));
    snprintf(p, sizeof p, "%s/cli/re/metrics.jsonl", tmpdir);
    assert_false(m2_path_exists(p));
    /* a run whose plan does not start with the stage (it ran only [report]) cannot be its source */
    snprintf(args, sizeof args, "%s run.name=re run.out_dir=%s/cli run.reuse_from=%s run.reuse_stages=[pretrain]",
             cfg, tmpdir, dir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "run.reuse_stages: pretrain"));
}

/* A stage that fails at its second step (before its first checkpoint at step 4). */
static int failing(m2_stage_ctx *ctx, m2_err *err) {
    m2_scalar sc[] = {{"fail/x", 1}};
    for (int i = 0; i < 2; i++) {
        ctx->step++;
        if (m2_stage_log(ctx, sc, 1, err)) return -1;
    }
    return m2_errorf(err, M2_EINVAL, "fails on purpose");
}

/* A fresh run that fails before it has finished a stage or written a checkpoint leaves no folder
 * behind (the same command can run again); one that fails later keeps what it made and says how to
 * continue. */
static void failed_runs_leave_no_block(void **state) {
    const m2_stage fail_first[] = {{.name = "data", .fn = failing}, {.name = "sys2_offline", .fn = walk2}};
    const m2_stage fail_second[] = {{.name = "data", .fn = walk1}, {.name = "sys2_offline", .fn = failing}};
    m2_run_config cfg;
    load_cfg(&cfg, "failing");
    char dir[512];
    m2_run_dir_for(&cfg, dir, sizeof dir);
    m2_err err = {0};
    assert_int_equal(m2_train_run(&cfg, fail_first, 2, dir, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "fails on purpose"));
    assert_non_null(strstr(err.msg, "was removed, so the same command can run again"));
    assert_false(m2_path_exists(dir));
    /* the same folder, an empty one made by hand: emptied again, not removed */
    assert_int_equal(m2_mkdir_p(dir, &err), 0);
    assert_int_equal(m2_train_run(&cfg, fail_first, 2, dir, 0, NULL, &err), -1);
    assert_int_equal(m2_dir_kind_of(dir), M2_DIR_EMPTY);
    /* the first stage finishes (with checkpoints), the second fails: the folder stays, resumable */
    assert_int_equal(m2_train_run(&cfg, fail_second, 2, dir, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "keeps its finished stages and checkpoints"));
    assert_non_null(strstr(err.msg, "--resume"));
    assert_int_equal(m2_dir_kind_of(dir), M2_DIR_RUN);
    memset(&err, 0, sizeof err);
    if (m2_train_run(&cfg, table, 2, dir, 1, NULL, &err)) fail_msg("%s", err.msg);
    char ref[512];
    run_to_completion("ref_for_failing", -1, 0, ref, sizeof ref);
    char *want = slurp(ref, "metrics.jsonl"), *got = slurp(dir, "metrics.jsonl");
    assert_string_equal(got, want);   /* what the failed stage logged is gone */
    free(want);
    free(got);
}

/* Every command's folder is its own: a fresh run refuses a non-empty folder of any kind, and a demo
 * folder is named as one, with where its runs are, by a fresh run and by --resume. */
static void output_folders_are_their_own(void **state) {
    m2_run_config cfg;
    load_cfg(&cfg, "taken");
    char dir[512], p[700];
    m2_run_dir_for(&cfg, dir, sizeof dir);
    m2_err err = {0};
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    assert_int_equal(m2_mkdir_p(dir, &err), 0);
    assert_int_equal(m2_write_file_atomic(p, "mine\n", 5, &err), 0);
    assert_int_equal(m2_train_run(&cfg, table, 2, dir, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is not empty"));
    assert_non_null(strstr(err.msg, "run.name"));
    assert_true(m2_path_exists(p));   /* untouched */
    assert_int_equal(m2_train_run(&cfg, table, 2, dir, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is not a run folder"));
    /* a demo folder: its marker and one run below it */
    char demo[512];
    snprintf(demo, sizeof demo, "%s/runs/demo", tmpdir);
    snprintf(p, sizeof p, "%s/textcraft/multi2", demo);
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/textcraft/multi2/config.yaml", demo);
    assert_int_equal(m2_write_file_atomic(p, "method: multi2\n", 15, &err), 0);
    m2_demo_marker dm = {.envs = "textcraft", .methods = "multi2"};
    assert_int_equal(m2_demo_marker_write(demo, &dm, &err), 0);
    assert_int_equal(m2_dir_kind_of(demo), M2_DIR_DEMO);
    load_cfg(&cfg, "demo");
    assert_int_equal(m2_train_run(&cfg, table, 2, demo, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is a multi2 demo folder"));
    assert_non_null(strstr(err.msg, "runs/demo/textcraft/multi2"));
    assert_int_equal(m2_train_run(&cfg, table, 2, demo, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is a multi2 demo folder, not a run"));
    assert_non_null(strstr(err.msg, "multi2 demo --out"));
    /* a demo folder from before demo.json (only results, plots and environment folders) is one too */
    char old_demo[512];
    snprintf(old_demo, sizeof old_demo, "%s/runs/old_demo", tmpdir);
    snprintf(p, sizeof p, "%s/alfworld/flat", old_demo);
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/results.md", old_demo);
    assert_int_equal(m2_write_file_atomic(p, "#\n", 2, &err), 0);
    assert_int_equal(m2_dir_kind_of(old_demo), M2_DIR_DEMO);
    snprintf(p, sizeof p, "%s/notes.txt", old_demo);
    assert_int_equal(m2_write_file_atomic(p, "x\n", 2, &err), 0);
    assert_int_equal(m2_dir_kind_of(old_demo), M2_DIR_OTHER);
    /* multi2 demo --out: a run folder and a foreign folder are refused, a demo folder continued */
    assert_int_equal(m2_check_demo_dir(demo, &err), 0);
    assert_int_equal(m2_check_demo_dir(dir, &err), -1);
    assert_non_null(strstr(err.msg, "no demo.json"));
    snprintf(p, sizeof p, "%s/textcraft/multi2", demo);
    assert_int_equal(m2_check_demo_dir(p, &err), -1);
    assert_non_null(strstr(err.msg, "holds a training run"));
}

/* --resume overrides: only keys that steer, or that no stage of the plan reads, may change. */
static void resume_overrides_are_checked(void **state) {
    m2_run_config saved, cfg;
    m2_err err = {0};
    char cfgp[256], why[512];
    snprintf(cfgp, sizeof cfgp, "%s/configs/demo.yaml", M2_SOURCE_DIR);
    assert_int_equal(m2_run_config_load(&saved, cfgp, 0, NULL, &err), 0);
    struct { const char *over; const char *refused; } cases[] = {
        {"run.log_every=5", NULL},
        {"run.progress=off", NULL},
        {"run.stop_at_step=40", NULL},
        {"model.recompute=true", NULL},   /* the same gradients bit for bit */
        {"sys2.offline.beta=3", "sys2.offline.beta: read by stage sys2_offline"},
        {"run.threads=2", "run.threads: read by stage pretrain"},
        {"eval.episodes=3", "eval.episodes: read by stage eval"},
        {"data.expert_episodes=9", "data.expert_episodes: read by stage pretrain"},
        {"method=flat", "method: changes the run's stage plan"},
        {"method=no_kl", "method: the run is multi2"},
        {"run.stages=[pretrain]", "run.stages: changes the run's stage plan"},
        {"model.base=x.gguf", "model.base: changes the run's stage plan"},
        {"run.reuse_from=x", "run.reuse_from: only a fresh run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *ov[1] = {(char *)cases[i].over};
        assert_int_equal(m2_run_config_load(&cfg, cfgp, 1, ov, &err), 0);
        int c = m2_run_resume_conflict(&saved, &cfg, why, sizeof why);
        if (c != (cases[i].refused != NULL) || (c && !strstr(why, cases[i].refused)))
            fail_msg("%s: conflict %d (%s)", cases[i].over, c, why);
    }
    /* a key no stage of this plan reads changes nothing it computes */
    char *sft[1] = {"method=sft_only"};
    assert_int_equal(m2_run_config_load(&saved, cfgp, 1, sft, &err), 0);
    char *eta[2] = {"method=sft_only", "sys2.online.eta=0"};
    assert_int_equal(m2_run_config_load(&cfg, cfgp, 2, eta, &err), 0);
    assert_int_equal(m2_run_resume_conflict(&saved, &cfg, why, sizeof why), 0);
}

/* The CLI on a tiny real run: --resume refuses a change a stage reads (naming key and stage, and
 * how to branch), --branch makes a new run that reuses the finished stages the change leaves
 * alone; a run that fails in its first stage can be re-run with the same command once fixed. */
static void cli_resume_and_branch(void **state) {
    if (!getenv("M2_BIN")) skip();
    static char out[1 << 16];
    static const char tiny[] =
        "run: {seed: 3, ckpt_every: 3, log_every: 1000, threads: 1, tensorboard: false, progress: off, plots: false}\n"
        "data: {expert_episodes: 4, max_seq_len: 1024}\n"
        "model: {base: tiny, max_seq_len: 1024, tiny: {vocab: 300, dim: 16, layers: 1, heads: 2, kv_heads: 1, ffn: 32}}\n"
        "pretrain: {steps: 2, warmup: 1, batch: 2, seq_len: 1024}\n"   /* deep goals first: long transcripts */
        "lora: {sys1: {rank: 2, alpha: 4, targets: [v]}}\n"
        "sys1: {sft: {epochs: 1, batch: 4, eval_every: 5}}\n";
    char yml[256], args[2048], dir[256], p[600];
    snprintf(yml, sizeof yml, "%s/tiny.yaml", tmpdir);
    m2_err err = {0};
    assert_int_equal(m2_write_file_atomic(yml, tiny, strlen(tiny), &err), 0);
    snprintf(dir, sizeof dir, "%s/cli/tiny", tmpdir);
    snprintf(args, sizeof args, "%s run.out_dir=%s/cli run.stages=[pretrain,data,sys1_sft]", yml, tmpdir);
    if (run_cli(args, out, sizeof out) != 0) fail_msg("%s", out);
    char *cfg_before = slurp(dir, "config.yaml");
    /* a key sys1_sft reads: refused, the run untouched */
    snprintf(args, sizeof args, "--resume %s sys1.sft.lr=0.01", dir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "sys1.sft.lr: read by stage sys1_sft"));
    assert_non_null(strstr(out, "--branch NEW_DIR sys1.sft.lr=0.01"));
    /* the case was model.base=tiny on a run with a file base (a new pre-training); here the
     * reverse (run.stages fixes the plan: the key is refused as one pre-training reads) */
    snprintf(args, sizeof args, "--resume %s model.base=%s/q.gguf", dir, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "model.base: read by stage pretrain"));
    /* a key that only steers is fine (the run is finished: nothing to do) */
    snprintf(args, sizeof args, "--resume %s run.log_every=5", dir);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "every stage is done"));
    char *cfg_after = slurp(dir, "config.yaml");
    assert_string_equal(cfg_before, cfg_after);
    free(cfg_before);
    free(cfg_after);
    /* the branch reuses pre-training and data, computes System 1 SFT with the new rate */
    snprintf(args, sizeof args, "--resume %s --branch %s/cli/tiny_lr sys1.sft.lr=0.01", dir, tmpdir);
    if (run_cli(args, out, sizeof out) != 0) fail_msg("%s", out);
    assert_non_null(strstr(out, "reusing its finished stages pretrain,data"));
    assert_non_null(strstr(out, "== stage 3/3: sys1_sft"));
    assert_null(strstr(out, "== stage 1/3"));
    snprintf(p, sizeof p, "%s/cli/tiny_lr", tmpdir);
    char *bc = slurp(p, "config.yaml");
    assert_non_null(strstr(bc, "lr: 0.01\n"));
    assert_non_null(strstr(bc, "reuse_from: \""));
    free(bc);
    snprintf(args, sizeof args, "--branch %s/cli/x sys1.sft.lr=0.01", tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 2);   /* --branch needs --resume */
    /* a run kept as its records alone lends nothing: the branch is refused, nothing is written */
    char kept_mark[700];
    snprintf(kept_mark, sizeof kept_mark, "%s/%s", p, M2_RECORDS_ONLY_FILE);
    m2_err kerr = {0};
    assert_int_equal(m2_write_file_atomic(kept_mark, "kept\n", 5, &kerr), 0);
    snprintf(args, sizeof args, "--resume %s --branch %s/cli/from_kept sys1.sft.lr=0.02", p, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "records alone"));
    snprintf(kept_mark, sizeof kept_mark, "%s/cli/from_kept", tmpdir);
    assert_false(m2_path_exists(kept_mark));
    /* a fresh run that fails in its first stage (the expert cannot finish in one step) leaves no
     * folder: the fixed command runs in the same place */
    snprintf(args, sizeof args, "%s run.out_dir=%s/cli run.name=fails run.stages=[data] eval.step_limit=1", yml, tmpdir);
    assert_int_equal(run_cli(args, out, sizeof out), 1);
    assert_non_null(strstr(out, "the expert solved none"));
    assert_non_null(strstr(out, "the same command can run again"));
    snprintf(p, sizeof p, "%s/cli/fails", tmpdir);
    assert_false(m2_path_exists(p));
    snprintf(args, sizeof args, "%s run.out_dir=%s/cli run.name=fails run.stages=[data]", yml, tmpdir);
    if (run_cli(args, out, sizeof out) != 0) fail_msg("%s", out);
}

static void report_aggregates_eval_files(void **state) {
    char dir[256], p[512];
    snprintf(dir, sizeof dir, "%s/rep2", tmpdir);
    snprintf(p, sizeof p, "%s/eval", dir);
    m2_err err = {0};
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/eval/id.jsonl", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"env\":\"textcraft\",\"split\":\"id\",\"success\":true,\"score\":1,\"steps\":10,\"tokens\":{\"prompt\":100,\"generated\":20},"
          "\"token_counts\":{\"sys1_prompt\":30,\"sys1_gen\":2,\"sys2_prompt\":80,\"sys2_gen\":8},\"sys1_calls\":3,\"invalid_actions\":2}\n"
          "{\"env\":\"textcraft\",\"split\":\"id\",\"success\":false,\"score\":0,\"steps\":50,\"tokens\":60,"
          "\"token_counts\":{\"sys1_prompt\":10,\"sys1_gen\":0,\"sys2_prompt\":40,\"sys2_gen\":10},\"sys1_calls\":1,\"invalid_actions\":10}\n"
          "{\"env\":\"textcraft\",\"split\":\"ood\",\"success\":1,\"score\":1,\"steps\":4,\"tokens\":10}\n", f);
    fclose(f);
    m2_result_row *rows;
    int n;
    assert_int_equal(m2_report_collect(dir, "multi2", &rows, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].split, "id");
    assert_int_equal(rows[0].episodes, 2);
    assert_true(rows[0].success == 0.5 && rows[0].steps == 30 && rows[0].tokens == 90);
    /* per system: (32 + 10) / 2 and (88 + 50) / 2; System 1 calls (3 + 1) / 2; invalid 12 of 60 steps */
    assert_true(rows[0].sys1_tokens == 21 && rows[0].sys2_tokens == 69 && rows[0].sys1_calls == 2);
    assert_true(fabs(rows[0].invalid_rate - 0.2) < 1e-12);
    assert_true(rows[1].success == 1.0);
    assert_int_equal(m2_report_write(rows, n, dir, NULL, &err), 0);
    free(rows);
    char *md = slurp(dir, "results.md");
    assert_non_null(strstr(md, "| multi2 | textcraft | id | 2 | 50.0 | 0.500 | 30.0 | 90 | 21 / 69 | 2.0 | 20.0 |"));
    assert_null(strstr(md, "Per task type"));   /* no eval stage summary yet */
    free(md);
    /* the per-type table comes from the eval stage's summary (agent/eval.h's aggregate) */
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    m2_episode ep = {.env = "textcraft", .split = "id", .success = 1, .score = 1, .steps = 10, .task_type = "depth 2"};
    assert_int_equal(m2_eval_agg_add(&agg, &ep, &err), 0);
    ep.success = 0, ep.score = 0, ep.task_type = "depth 3";
    assert_int_equal(m2_eval_agg_add(&agg, &ep, &err), 0);
    assert_int_equal(m2_eval_agg_add(&agg, &ep, &err), 0);
    char *js = m2_eval_agg_to_json(&agg);
    snprintf(p, sizeof p, "%s/artifacts/eval", dir);
    assert_int_equal(m2_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/artifacts/eval/eval_summary.json", dir);
    assert_int_equal(m2_write_file_atomic(p, js, strlen(js), &err), 0);
    free(js);
    m2_eval_agg_free(&agg);
    assert_int_equal(m2_report_write_task_types(dir, "multi2", "textcraft", &err), 0);
    md = slurp(dir, "results.md");
    assert_non_null(strstr(md, "| multi2 | textcraft | id | 2 | 50.0 | 0.500 | 30.0 | 90 |"));   /* kept */
    assert_non_null(strstr(md, "## Per task type"));
    assert_non_null(strstr(md, "| multi2 | textcraft | id | depth 2 | 1 | 100.0 | 1.000 |"));
    assert_non_null(strstr(md, "| multi2 | textcraft | id | depth 3 | 2 | 0.0 | 0.000 |"));
    free(md);
    /* evaluated in a second action mode too (eval.action_modes): a row per mode, the plain summary the
     * run's own mode (config.yaml), eval_summary.score.json the other */
    m2_eval_agg_init(&agg);
    ep.task_type = "depth 2";
    assert_int_equal(m2_eval_agg_add(&agg, &ep, &err), 0);
    js = m2_eval_agg_to_json(&agg);
    snprintf(p, sizeof p, "%s/artifacts/eval/eval_summary.score.json", dir);
    assert_int_equal(m2_write_file_atomic(p, js, strlen(js), &err), 0);
    free(js);
    m2_eval_agg_free(&agg);
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    const char *cfg = "method: multi2\nenv: {name: textcraft}\nsys2: {action_mode: generate}\n";
    assert_int_equal(m2_write_file_atomic(p, cfg, strlen(cfg), &err), 0);
    assert_int_equal(m2_report_write_task_types(dir, "multi2", "textcraft", &err), 0);
    md = slurp(dir, "results.md");
    const char *last = strstr(md, "## Per task type\n\n| method | env | split | action mode | task type |");
    assert_non_null(last);
    assert_non_null(strstr(last, "| multi2 | textcraft | id | generate | depth 2 | 1 | 100.0 | 1.000 |"));
    assert_non_null(strstr(last, "| multi2 | textcraft | id | generate | depth 3 | 2 | 0.0 | 0.000 |"));
    assert_non_null(strstr(last, "| multi2 | textcraft | id | score | depth 2 | 1 | 0.0 | 0.000 |"));
    free(md);
    remove(p);
    /* ScienceWorld: a failure (-100) counts 0, scores are divided by 100 (DESIGN.md section 7) */
    snprintf(p, sizeof p, "%s/eval/id.jsonl", dir);
    f = fopen(p, "w");
    fputs("{\"env\":\"scienceworld\",\"split\":\"id\",\"success\":true,\"score\":100,\"steps\":10,\"tokens\":5}\n"
          "{\"env\":\"scienceworld\",\"split\":\"id\",\"success\":false,\"score\":-100,\"steps\":3,\"tokens\":5}\n"
          "{\"env\":\"scienceworld\",\"split\":\"id\",\"success\":false,\"score\":50,\"steps\":50,\"tokens\":5}\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/eval/ood.jsonl", dir);
    remove(p);
    assert_int_equal(m2_report_collect(dir, "multi2", &rows, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_true(fabs(rows[0].score - 0.5) < 1e-12);   /* (1 + 0 + 0.5) / 3 */
    free(rows);
    assert_true(m2_env_unit_score("textcraft", 1.0) == 1.0 && m2_env_unit_score("scienceworld", -100) == 0.0 && m2_env_unit_score("scienceworld", 50) == 0.5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_and_resumed_equals_uninterrupted),
        cmocka_unit_test(stages_record_their_binary),
        cmocka_unit_test(not_implemented_stage_fails_up_front),
        cmocka_unit_test(cli_train),
        cmocka_unit_test(report_aggregates_eval_files),
        cmocka_unit_test(failed_runs_leave_no_block),
        cmocka_unit_test(output_folders_are_their_own),
        cmocka_unit_test(resume_overrides_are_checked),
        cmocka_unit_test(cli_resume_and_branch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
