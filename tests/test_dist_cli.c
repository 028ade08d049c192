/* The binary ($M2_BIN) under `mpirun -np 2` (docs/dist.md), on the small config of
 * tests/test_pipe_train.c. Skipped when the build has no MPI or mpirun is missing.
 *  - train, 2 ranks vs 1 process, with what is drawn on: LoRA dropout, the sampled anchor (3 states
 *    a global batch), sampled online rollouts (temperature 0.7, failures kept) and sampled
 *    evaluation (temperature 0.8): the same evaluation records, totals, results and stage table
 *    byte for byte, the same metric names at the same steps, every value within LOSS_TOL;
 *  - a rank made to fail (M2_DIST_FAIL) ends the job with a non-zero status and a message naming
 *    the rank and the reason, its last checkpoint intact; a 2-rank resume ends with the
 *    uninterrupted 2-rank run's files byte for byte; a 1-process resume of the same cut, and a
 *    2-rank resume of a 1-process run stopped mid-stage, say what changes and end with the same
 *    records and results, every metric within LOSS_TOL;
 *  - eval --run (greedy and sampled), eval --policy on 2 ranks write what one process writes,
 *    byte for byte, and a 2-rank demo's run ends with the 1-process run's records and results;
 *    other commands refuse several ranks;
 *  - TeamTR (method teamtr, every variant, and teamtr_hier): a 2-rank run's rollouts are one
 *    process's (the metrics the rollouts alone decide are equal, eval.json equal but for the
 *    certificates, which agree within LOSS_TOL, every other metric too), its greedy evaluation
 *    records byte-identical, `eval --run` of a team run the same at 1 and 2 ranks; a stopped 2-rank
 *    run resumes at 2 ranks byte for byte, a cut one at 1 rank and a stopped 1-process run at 2
 *    ranks say what changes and end with the same rollouts. */
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
#include <sys/wait.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "tiny_run.h"
#include "tmpdir.h"

/* relative (to max(1, |value|)); measured differences < 1e-6 (2 partial gradient sums vs one GEMM's
 * rows) */
#define LOSS_TOL 1e-4

static const char *yaml =
    "method: multi2\n"
    "run: {seed: 3, ckpt_every: 3, keep_last: 2, log_every: 1000, threads: 1, tensorboard: false, progress: off, plots: false}\n"
    "env: {name: textcraft}\n"
    "data: {expert_episodes: 8, max_seq_len: 1024}\n"
    "model:\n"
    "  base: tiny\n"
    "  max_seq_len: 1024\n"
    "  tiny: {vocab: 320, dim: 16, layers: 1, heads: 2, kv_heads: 1, ffn: 32}\n"
    "pretrain: {steps: 8, lr: 3e-3, warmup: 2, batch: 4, seq_len: 512}\n"
    "lora:\n"
    "  sys1: {rank: 2, alpha: 4, targets: [q, v]}\n"
    "  sys2: {rank: 2, alpha: 4, targets: [q, v]}\n"
    "sys1:\n"
    "  sft: {lr: 1e-3, epochs: 1, batch: 4, eval_every: 1, patience: 2}\n"
    "sys2:\n"
    "  warmup: {lr: 1e-3, epochs: 1, batch: 8}\n"
    "  offline: {epochs: 1, max_steps: 4, batch: 4, anchor_states: 1}\n"
    "  online: {epochs: 3, episodes_per_epoch: 3, updates_per_epoch: 2, batch: 2, buffer_capacity: 40, seed_offline: 10}\n"
    "eval: {episodes: 3, splits: [id, ood], max_new_tokens: 8, step_limit: 6}\n";

static char root[256], cfg_path[300], team_path[300];
static const char *bin;

/* runs a shell command line; its exit status */
static int sh(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#define MPIRUN "mpirun --allow-run-as-root --oversubscribe -np 2"

static char *slurp(const char *run, const char *file) {
    char p[800];
    snprintf(p, sizeof p, "%s/%s/%s", root, run, file);
    char *s = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &s, NULL, &err)) fail_msg("%s", err.msg);
    return s;
}

static void same_file(const char *a, const char *b, const char *file) {
    char *x = slurp(a, file), *y = slurp(b, file);
    if (strcmp(x, y)) fail_msg("%s differs between %s and %s", file, a, b);
    free(x);
    free(y);
}

static int have_mpi(void) {
#ifndef M2_HAVE_MPI
    return 0;
#else
    return sh("command -v mpirun >/dev/null 2>&1") == 0;
#endif
}

static int setup(void **state) {
    bin = getenv("M2_BIN");
    if (!bin || m2t_tmpdir(root, sizeof root, "dist")) return -1;
    snprintf(cfg_path, sizeof cfg_path, "%s/cfg.yaml", root);
    FILE *f = fopen(cfg_path, "w");
    if (!f) return -1;
    fputs(yaml, f);
    fclose(f);
    snprintf(team_path, sizeof team_path, "%s/team.yaml", root);
    if (!(f = fopen(team_path, "w"))) return -1;
    fputs(M2T_TINY_TEAM_YAML, f);
    fclose(f);
    return 0;
}

static int teardown(void **state) {
    m2_remove_tree(root);
    return 0;
}

/* TeamTR's metrics that the rollouts alone decide (their rewards, counts, the measured success):
 * equal at any world size, not merely close */
static int rollout_metric(const char *key) {
    static const char *const ends[] = {"/reward", "/tokens", "/eval_success", "/measured_gain", "/rollouts", "/cum_gain"};
    size_t n = strlen(key);
    if (strncmp(key, "teamtr/", 7)) return 0;
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++)
        if (n >= strlen(ends[i]) && !strcmp(key + n - strlen(ends[i]), ends[i])) return 1;
    return 0;
}

/* 1 process and 2 ranks: metrics line by line (same steps and names, values within LOSS_TOL; a
 * TeamTR rollout metric equal) */
static void metrics_close(const char *a, const char *b) {
    char *x = slurp(a, "metrics.jsonl"), *y = slurp(b, "metrics.jsonl");
    char *sx, *sy;
    char *lx = strtok_r(x, "\n", &sx), *ly = strtok_r(y, "\n", &sy);
    int lines = 0;
    while (lx && ly) {
        cJSON *jx = cJSON_Parse(lx), *jy = cJSON_Parse(ly);
        assert_non_null(jx);
        assert_non_null(jy);
        assert_int_equal(cJSON_GetObjectItem(jx, "step")->valueint, cJSON_GetObjectItem(jy, "step")->valueint);
        const cJSON *dx = cJSON_GetObjectItem(jx, "data"), *dy = cJSON_GetObjectItem(jy, "data"), *e;
        assert_int_equal(cJSON_GetArraySize(dx), cJSON_GetArraySize(dy));
        cJSON_ArrayForEach(e, dx) {
            const cJSON *o = cJSON_GetObjectItem(dy, e->string);
            if (!o) fail_msg("line %d: %s missing at 2 ranks", lines + 1, e->string);
            double u = e->valuedouble, v = o->valuedouble;
            if (rollout_metric(e->string) && u != v)
                fail_msg("line %d: %s = %.17g (1 process) vs %.17g (2 ranks): other rollouts", lines + 1, e->string, u, v);
            if (!(fabs(u - v) <= LOSS_TOL * fmax(1.0, fabs(u))))
                fail_msg("line %d: %s = %.9g (1 process) vs %.9g (2 ranks)", lines + 1, e->string, u, v);
        }
        cJSON_Delete(jx);
        cJSON_Delete(jy);
        lines++;
        lx = strtok_r(NULL, "\n", &sx);
        ly = strtok_r(NULL, "\n", &sy);
    }
    assert_null(lx);
    assert_null(ly);
    assert_true(lines > 10);
    free(x);
    free(y);
}

#define ENV "OPENBLAS_NUM_THREADS=1"
/* everything drawn on: failed online segments kept (the sampled rollouts reach the updates), 3
 * anchor states a global batch (on both ranks' parts), sampled evaluation */
#define DRAWN "sys2.online.keep_fail=1 sys2.offline.anchor_states=3 eval.temperature=0.8"

/* train, 2 ranks vs 1 process, everything drawn on. Run "one2" is the later tests' 2-rank
 * reference, "one" their 1-process one. */
static void two_ranks_match_one(void **state) {
    if (!have_mpi()) { skip(); return; }
    assert_int_equal(sh(ENV " %s train %s run.out_dir=%s run.name=one " DRAWN " >%s/one.log 2>&1", bin, cfg_path, root,
                        root), 0);
    assert_int_equal(sh(ENV " " MPIRUN " %s train %s run.out_dir=%s run.name=one2 " DRAWN " >%s/one2.log 2>&1", bin,
                        cfg_path, root, root), 0);
    same_file("one", "one2", "eval/id.jsonl");
    same_file("one", "one2", "eval/ood.jsonl");
    same_file("one", "one2", "artifacts/eval/eval_summary.json");
    same_file("one", "one2", "results.json");
    same_file("one", "one2", "stages.json");
    metrics_close("one", "one2");
    /* the rollouts' segments reached the buffer, the anchor was sampled */
    char *m = slurp("one", "metrics.jsonl");
    assert_null(strstr(m, "\"sys2_online/buffer_online_frac\":0,"));
    assert_non_null(strstr(m, "\"sys2/anchor_loss\""));
    free(m);
}

/* the latest checkpoint's name ("step_N") of a run */
static void latest_is(const char *run, const char *step) {
    char *latest = slurp(run, "ckpt/latest");
    if (!strstr(latest, step)) fail_msg("%s: latest checkpoint %s, expected %s", run, latest, step);
    free(latest);
}

/* The run cut by rank 1's failure in the online stage: its 3rd collection's gather (collective 56
 * of this run) fails after the checkpoint of step 18. */
static void cut_run(const char *name) {
    assert_int_equal(sh("M2_DIST_FAIL=1:56 " ENV " " MPIRUN " %s train %s run.out_dir=%s run.name=%s " DRAWN
                        " >%s/%s.log 2>%s/%s.err", bin, cfg_path, root, name, root, name, root, name), 1);
    char err_file[64];
    snprintf(err_file, sizeof err_file, "%s.err", name);
    char *e = slurp("", err_file);
    if (!strstr(e, "rank 1 of 2") || !strstr(e, "stage sys2_online") || !strstr(e, "injected failure at collective 56"))
        fail_msg("the failure message names no rank, stage or reason: %s", e);
    free(e);
    latest_is(name, "step_18");
}

/* the files a resumed run must end with as the run that never stopped */
static const char *const run_files[] = {"eval/id.jsonl", "eval/ood.jsonl", "results.json", "stages.json",
                                        "artifacts/sys2_online/adapter_sys2/adapter_config.json"};

/* the reference, two_ranks_match_one's uninterrupted 2-rank run */
static void need_reference(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/one2/results.json", root);
    if (!m2_path_exists(p)) fail_msg("no reference run %s (two_ranks_match_one failed?)", p);
}

static void failure_and_resume_at_any_size(void **state) {
    if (!have_mpi()) { skip(); return; }
    need_reference();
    /* 2 ranks cut, 2 ranks resume: the same bits */
    cut_run("cut");
    assert_int_equal(sh(ENV " " MPIRUN " %s train --resume %s/cut >%s/r2.log 2>&1", bin, root, root), 0);
    for (size_t i = 0; i < sizeof run_files / sizeof *run_files; i++) same_file("one2", "cut", run_files[i]);
    same_file("one2", "cut", "metrics.jsonl");
    assert_int_equal(sh("cmp -s %s/one2/artifacts/sys2_online/adapter_sys2/adapter_model.safetensors "
                        "%s/cut/artifacts/sys2_online/adapter_sys2/adapter_model.safetensors", root, root), 0);
    /* the last checkpoint holds the replay buffer: the episodes played after the resume */
    assert_int_equal(sh("cmp -s %s/one2/ckpt/step_21/tensors.safetensors %s/cut/ckpt/step_21/tensors.safetensors", root,
                        root), 0);
    /* 2 ranks cut, 1 process resumes: it says what changes, and ends with the same records */
    cut_run("cut1");
    assert_int_equal(sh(ENV " %s train --resume %s/cut1 >%s/r1.log 2>&1", bin, root, root), 0);
    char *log = slurp("", "r1.log");
    if (!strstr(log, "resuming step 18, written by 2 ranks, on 1 rank") || !strstr(log, "to float rounding"))
        fail_msg("no statement of what changes: %s", log);
    free(log);
    for (size_t i = 0; i < sizeof run_files / sizeof *run_files; i++) same_file("one2", "cut1", run_files[i]);
    metrics_close("one2", "cut1");
    /* 1 process stopped mid-stage (the online stage's step 17, a checkpoint every step), 2 ranks resume */
    assert_int_equal(sh(ENV " %s train %s run.out_dir=%s run.name=half " DRAWN " run.ckpt_every=1 run.stop_at_step=17 "
                        ">%s/half.log 2>&1", bin, cfg_path, root, root), 0);
    latest_is("half", "step_17");
    assert_int_equal(sh(ENV " " MPIRUN " %s train --resume %s/half >%s/rh.log 2>&1", bin, root, root), 0);
    log = slurp("", "rh.log");
    if (!strstr(log, "resuming step 17, written by 1 rank, on 2 ranks")) fail_msg("no statement of what changes: %s", log);
    free(log);
    for (size_t i = 0; i < sizeof run_files / sizeof *run_files; i++) same_file("one2", "half", run_files[i]);
    metrics_close("one2", "half");
}

/* one command's output files at 1 process and 2 ranks: the same bytes */
static void same_at_two_ranks(const char *cmd, const char *tag) {
    for (int ranks = 1; ranks <= 2; ranks++)
        assert_int_equal(sh(ENV " %s %s %s --out %s/%s_%d.jsonl >%s/%s_%d.out 2>%s/%s_%d.err", ranks == 2 ? MPIRUN : "",
                            bin, cmd, root, tag, ranks, root, tag, ranks, root, tag, ranks), 0);
    const char *ext[2] = {"jsonl", "out"};
    for (int k = 0; k < 2; k++) {
        char a[80], b[80];
        snprintf(a, sizeof a, "%s_1.%s", tag, ext[k]);
        snprintf(b, sizeof b, "%s_2.%s", tag, ext[k]);
        char *x = slurp("", a), *y = slurp("", b);
        if (strcmp(x, y)) fail_msg("%s: %s differs between 1 process and 2 ranks:\n%s\n%s", cmd, ext[k], x, y);
        assert_true(strlen(x) > 10);
        free(x);
        free(y);
    }
}

/* `multi2 eval` and `multi2 demo` on 2 ranks write what one process writes */
static void eval_and_demo_on_two_ranks(void **state) {
    if (!have_mpi()) { skip(); return; }
    need_reference();
    char cmd[600];
    /* the trained run "one", sampled (its eval.temperature 0.8), and another seed's episodes */
    snprintf(cmd, sizeof cmd, "eval --run %s/one --split id --json", root);
    same_at_two_ranks(cmd, "sampled");
    snprintf(cmd, sizeof cmd, "eval --run %s/one --split ood --episodes 4 --seed 9", root);
    same_at_two_ranks(cmd, "seed9");
    /* ... and greedy: a copy of it with eval.temperature 0 */
    assert_int_equal(sh("cp -r %s/one %s/greedy && sed -i '/^eval:/,/^[a-z]/ s/^  temperature: 0.8$/  temperature: 0.0/' "
                        "%s/greedy/config.yaml && grep -q '^  temperature: 0.0$' %s/greedy/config.yaml", root, root, root,
                        root), 0);
    snprintf(cmd, sizeof cmd, "eval --run %s/greedy --split id --json", root);
    same_at_two_ranks(cmd, "greedy");
    char *g = slurp("", "greedy_1.jsonl"), *sa = slurp("", "sampled_1.jsonl");
    assert_string_not_equal(g, sa);   /* the sampled evaluation sampled */
    free(g);
    free(sa);
    same_at_two_ranks("eval --env textcraft --policy random --split ood --episodes 7 --seed 5 --json", "random");
    /* the demo on 2 ranks: its run is the 1-process run "one" (the same config), its reference rows
     * and report are there */
    assert_int_equal(sh(ENV " " MPIRUN " %s demo --config %s --out %s/demo --envs textcraft --methods multi2 --episodes 3 "
                        DRAWN " >%s/demo.log 2>&1", bin, cfg_path, root, root), 0);
    for (int k = 0; k < 2; k++) {
        char a[200];
        snprintf(a, sizeof a, "demo/textcraft/multi2/%s", run_files[k]);
        char *x = slurp("one", run_files[k]), *y = slurp("", a);
        if (strcmp(x, y)) fail_msg("demo on 2 ranks: %s differs from the 1-process run's", run_files[k]);
        free(x);
        free(y);
    }
    char *md = slurp("", "demo/results.md"), *orc = slurp("", "demo/textcraft/oracle/eval/id.jsonl");
    assert_non_null(strstr(md, "multi2"));
    assert_non_null(strstr(md, "oracle"));
    int lines = 0;
    for (const char *c = orc; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 3);
    free(md);
    free(orc);
}

/* any other command refuses to run on several ranks, on every rank alike (no hang) */
static void other_commands_refuse_ranks(void **state) {
    if (!have_mpi()) { skip(); return; }
    assert_int_equal(sh(MPIRUN " %s tasks --env textcraft --split id >/dev/null 2>%s/tasks.err", bin, root), 2);
    char *e = slurp("", "tasks.err");
    assert_non_null(strstr(e, "only `multi2 train`, `multi2 eval` and `multi2 demo` run on several ranks"));
    free(e);
}

/* ---------------------------------------------------------------- TeamTR */

#define TEAM_EVAL "artifacts/teamtr/eval.json"

/* A TeamTR eval.json of run a and b: the same but for the per-stage certificates (the agents'
 * L^ and D^, sums over the ranks' tokens), which agree within LOSS_TOL. */
static void same_team_eval(const char *a, const char *b, const char *file) {
    char *x = slurp(a, file), *y = slurp(b, file);
    cJSON *jx = cJSON_Parse(x), *jy = cJSON_Parse(y);
    assert_non_null(jx);
    assert_non_null(jy);
    cJSON *cx = cJSON_DetachItemFromObject(jx, "certificate"), *cy = cJSON_DetachItemFromObject(jy, "certificate");
    assert_non_null(cx);
    assert_int_equal(cJSON_GetArraySize(cx), cJSON_GetArraySize(cy));
    for (int i = 0; i < cJSON_GetArraySize(cx); i++) {
        double u = cJSON_GetArrayItem(cx, i)->valuedouble, v = cJSON_GetArrayItem(cy, i)->valuedouble;
        if (!(fabs(u - v) <= LOSS_TOL * fmax(1.0, fabs(u)))) fail_msg("%s: certificate %d: %.9g vs %.9g", file, i, u, v);
    }
    char *px = cJSON_PrintUnformatted(jx), *py = cJSON_PrintUnformatted(jy);
    if (strcmp(px, py)) fail_msg("%s differs between %s and %s:\n%s\n%s", file, a, b, px, py);
    free(px);
    free(py);
    cJSON_Delete(cx);
    cJSON_Delete(cy);
    cJSON_Delete(jx);
    cJSON_Delete(jy);
    free(x);
    free(y);
}

/* a team run of tests/test_team_run.c's config with the k3 term to the initial policy on (its
 * reference log-probs are sharded too): 1 process or 2 ranks, with more overrides; its exit status */
static int team_run(int ranks, const char *name, const char *more) {
    return sh(ENV " %s %s train %s run.out_dir=%s run.name=%s teamtr.kl_init=0.1 %s >%s/%s.log 2>&1",
              ranks == 2 ? MPIRUN : "", bin, team_path, root, name, more, root, name);
}

/* every variant at 2 ranks plays the rollouts one process plays and follows its updates */
static void team_two_ranks_match_one(void **state) {
    if (!have_mpi()) { skip(); return; }
    /* the last: updates in parts (a rank's part of the batch split again, the all-reduce after its last part) */
    static const char *const variants[] = {"teamtr", "stale", "stale_happo", "joint", "no_tr", "teamtr teamtr.max_batch_tokens=64"};
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        char a[64], b[64], over[96];
        snprintf(a, sizeof a, "t1_%s", v == 5 ? "parts" : variants[v]);
        snprintf(b, sizeof b, "t2_%s", v == 5 ? "parts" : variants[v]);
        snprintf(over, sizeof over, "teamtr.variant=%s", variants[v]);
        assert_int_equal(team_run(1, a, over), 0);
        assert_int_equal(team_run(2, b, over), 0);
        same_team_eval(a, b, TEAM_EVAL);
        metrics_close(a, b);
    }
    /* the updates moved the agents (the region was reached: the line search ran on both) */
    char *m = slurp("t2_teamtr", "metrics.jsonl");
    assert_non_null(strstr(m, "\"teamtr/agent1/backtracks\":1"));
    free(m);
    /* eval --run of a team run: its questions split across the ranks, the same records and output */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "eval --run %s/t1_teamtr --json", root);
    same_at_two_ranks(cmd, "team");
    /* ... and the 2-rank run's agents answer as the 1-process run's, question by question */
    assert_int_equal(sh(ENV " %s eval --run %s/t2_teamtr --out %s/team_t2.jsonl >/dev/null 2>&1", bin, root, root), 0);
    char *x = slurp("", "team_1.jsonl"), *y = slurp("", "team_t2.jsonl");
    assert_string_equal(x, y);
    free(x);
    free(y);
}

/* the hierarchy as a team (teamtr_hier) at 2 ranks, its updates in parts of <= 256 tokens: its
 * episodes, evaluation records and results are one process's */
static void team_hier_two_ranks_match_one(void **state) {
    if (!have_mpi()) { skip(); return; }
    static const char *const over = "method=teamtr_hier teamtr.stages=3 teamtr.tasks_per_stage=3 teamtr.group=2 "
                                    "teamtr.epochs=2 teamtr.lr=0.05 teamtr.weight_decay=0.5 teamtr.eval_tasks=3 "
                                    "teamtr.eval_samples=1 eval.temperature=0.8 teamtr.max_batch_tokens=256";
    assert_int_equal(sh(ENV " %s train %s run.out_dir=%s run.name=h1 %s >%s/h1.log 2>&1", bin, cfg_path, root, over, root), 0);
    assert_int_equal(sh(ENV " " MPIRUN " %s train %s run.out_dir=%s run.name=h2 %s >%s/h2.log 2>&1", bin, cfg_path, root,
                        over, root), 0);
    same_file("h1", "h2", "eval/id.jsonl");
    same_file("h1", "h2", "results.json");
    same_team_eval("h1", "h2", "artifacts/teamtr_hier/eval.json");
    metrics_close("h1", "h2");
    /* stopped after its first TeamTR stage (steps 14, 15) at 2 ranks, resumed at 2: the same bits */
    assert_int_equal(sh(ENV " " MPIRUN " %s train %s run.out_dir=%s run.name=hs %s run.stop_at_step=15 >%s/hs.log 2>&1",
                        bin, cfg_path, root, over, root), 0);
    latest_is("hs", "step_15");
    assert_int_equal(sh(ENV " " MPIRUN " %s train --resume %s/hs >%s/hsr.log 2>&1", bin, root, root), 0);
    static const char *const files[] = {"metrics.jsonl", "eval/id.jsonl", "results.json", "artifacts/teamtr_hier/eval.json",
                                        "artifacts/teamtr_hier/adapter_sys2/adapter_model.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) same_file("h2", "hs", files[i]);
}

/* A stopped 2-rank team run resumes at 2 ranks byte for byte; a cut one at 1 rank, and a stopped
 * 1-process one at 2 ranks, to the same rollouts. Step 64: the checkpoint of the second TeamTR
 * stage (60 pre-training steps, 2 updates a stage). */
static void team_resume_at_any_size(void **state) {
    if (!have_mpi()) { skip(); return; }
    char p[400];
    snprintf(p, sizeof p, "%s/t2_teamtr/" TEAM_EVAL, root);
    if (!m2_path_exists(p)) fail_msg("no reference run %s (team_two_ranks_match_one failed?)", p);
    static const char *const files[] = {"metrics.jsonl", TEAM_EVAL, "stages.json",
                                        "artifacts/teamtr/adapter_agent1/adapter_model.safetensors",
                                        "artifacts/teamtr/adapter_agent2/adapter_model.safetensors"};
    assert_int_equal(team_run(2, "ts", "run.stop_at_step=64"), 0);
    latest_is("ts", "step_64");
    assert_int_equal(sh(ENV " " MPIRUN " %s train --resume %s/ts >%s/tsr.log 2>&1", bin, root, root), 0);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) same_file("t2_teamtr", "ts", files[i]);
    /* rank 1 fails in the third stage (its 175th collective, after the step-64 checkpoint) */
    assert_int_equal(sh("M2_DIST_FAIL=1:175 " ENV " " MPIRUN " %s train %s run.out_dir=%s run.name=tc teamtr.kl_init=0.1 "
                        ">%s/tc.log 2>%s/tc.err", bin, team_path, root, root, root), 1);
    char *e = slurp("", "tc.err");
    if (!strstr(e, "rank 1 of 2") || !strstr(e, "stage teamtr") || !strstr(e, "injected failure at collective 175"))
        fail_msg("the failure message names no rank, stage or reason: %s", e);
    free(e);
    latest_is("tc", "step_64");
    assert_int_equal(sh(ENV " %s train --resume %s/tc >%s/tcr.log 2>&1", bin, root, root), 0);
    char *log = slurp("", "tcr.log");
    if (!strstr(log, "resuming step 64, written by 2 ranks, on 1 rank")) fail_msg("no statement of what changes: %s", log);
    free(log);
    same_team_eval("t2_teamtr", "tc", TEAM_EVAL);
    metrics_close("t2_teamtr", "tc");
    /* 1 process stopped, 2 ranks resume */
    assert_int_equal(team_run(1, "th", "run.stop_at_step=64"), 0);
    latest_is("th", "step_64");
    assert_int_equal(sh(ENV " " MPIRUN " %s train --resume %s/th >%s/thr.log 2>&1", bin, root, root), 0);
    log = slurp("", "thr.log");
    if (!strstr(log, "resuming step 64, written by 1 rank, on 2 ranks")) fail_msg("no statement of what changes: %s", log);
    free(log);
    same_team_eval("t1_teamtr", "th", TEAM_EVAL);
    metrics_close("t1_teamtr", "th");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_match_one),
        cmocka_unit_test(failure_and_resume_at_any_size),
        cmocka_unit_test(eval_and_demo_on_two_ranks),
        cmocka_unit_test(other_commands_refuse_ranks),
        cmocka_unit_test(team_two_ranks_match_one),
        cmocka_unit_test(team_hier_two_ranks_match_one),
        cmocka_unit_test(team_resume_at_any_size),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
