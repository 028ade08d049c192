/* multi2 demo: the whole pipeline on the embedded defaults (DESIGN.md §8), for TextCraft and
 * ALFWorld: per environment the Multi² run (tiny base pre-trained from scratch on expert text,
 * System 1 SFT, System 2 warm-up / offline IQL / online AWAC+KL, evaluation), then the baselines on
 * the same pre-trained base and data, then the oracle and random reference policies; ends with the
 * results table (method x env x split: success, score, tokens per episode) in DIR/results.md and
 * DIR/results.json (the report stage's writer and format), learning curves and a results chart
 * under DIR/plots/. DIR is the demo's own: DIR/demo.json marks it (pipe/runfiles.h), and a DIR
 * holding a training run or anything else is refused. Re-running continues unfinished runs
 * (--resume semantics) and reuses finished ones. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/cli.h"
#include "core/core.h"
#include "data/traj.h"
#include "pipe/pipe.h"
#include "pipe/runfiles.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: multi2 demo [--config FILE.yaml] [--out DIR] [--envs textcraft,alfworld,scienceworld]\n"
            "                   [--methods multi2,flat | LIST | all] [--episodes N] [--threads N] [--jobs N]\n"
            "                   [key=value ...]\n"
            "\n"
            "Runs the whole Multi2 pipeline on the embedded defaults (or on FILE.yaml, e.g. configs/small.yaml)\n"
            "for each environment: pre-trains a tiny base from scratch on expert text, trains each method,\n"
            "evaluates pass@1 on the id and ood splits, adds the oracle and random reference policies, and\n"
            "writes DIR/results.md, DIR/results.json and DIR/plots/. The first method's run computes every\n"
            "stage; each later method takes from it the first stages it would compute identically\n"
            "(run.reuse_from / run.reuse_stages: the base and data always, System 1 SFT, System 2 warm-up and\n"
            "offline RL where the method runs them as multi2 does) and computes the rest.\n"
            "key=value overrides any training config key for every run (multi2 train --help-config);\n"
            "METHOD:key=value for that method's runs alone (e.g. flat:eval.action_modes=[generate,score]).\n"
            "Default DIR: runs/demo; default methods multi2 and flat (the demo's 15-minute budget). Methods:\n"
            "multi2 flat shared_adapter sft_only offline_only rl_only role_swap no_anchor no_kl (all: every\n"
            "one, multi2 first). Re-running continues unfinished runs\n"
            "and reuses finished ones. DIR must be new, empty or a demo folder (DIR/demo.json marks one):\n"
            "a training run's folder or any other is refused. A finished run kept as its records alone\n"
            "(RUN/records_only.txt: scripts/keep_records.sh, its weights left out) is read as finished and lends\n"
            "no stages: the first method whose run is not such one computes them for the later ones.\n"
            "--jobs N: up to N runs side by side, each in a process of its own with --threads threads, its\n"
            "output in DIR/ENV/METHOD.log: the first method's run, and each later method as soon as that run\n"
            "has finished the stages the method takes from it (flat: the base and data), in method order\n"
            "(default 1: one after the other, output here). The runs and the results are the same bits either way.\n");
}

/* The demo config: configs/demo.yaml, embedded at build time (cmake/embed_text.cmake) so the demo
 * runs from anywhere and the file is the one copy of its values. */
#include "cli/demo_yaml.h"

static const char all_methods[] = "multi2,flat,shared_adapter,sft_only,offline_only,rl_only,role_swap,no_anchor,no_kl";

/* The embedded demo config, or the file --config names, then the overrides. */
static int load_cfg(m2_run_config *cfg, const char *file, char **over, int n_over, m2_err *err) {
    const m2_cfg_schema *s = m2_run_config_schema();
    if (m2_cfg_defaults(s, cfg, err)) return -1;
    if (file ? m2_cfg_apply_file(s, cfg, file, err)
             : m2_cfg_apply_yaml(s, cfg, m2_pipe_demo_yaml, strlen(m2_pipe_demo_yaml), "demo", err))
        return -1;
    for (int i = 0; i < n_over; i++) if (m2_cfg_override(s, cfg, over[i], err)) return -1;
    return m2_run_config_check(cfg, err);
}

/* The override's key=value and, for a METHOD:key=value override (a method's runs alone), the
 * method's name in scope (else ""); config keys hold no ':', so one before the '=' names a method. */
static const char *override_scope(const char *o, char *scope, size_t cap) {
    const char *colon = strchr(o, ':'), *eq = strchr(o, '=');
    scope[0] = 0;
    if (!colon || !eq || colon > eq) return o;
    snprintf(scope, cap, "%.*s", (int)(colon - o), o);
    return colon + 1;
}

/* The overrides that apply to method's runs, in command-line order, into sel; how many. */
static int method_overrides(char **over, int n_over, const char *method, char **sel) {
    int n = 0;
    for (int i = 0; i < n_over; i++) {
        char scope[64];
        const char *kv = override_scope(over[i], scope, sizeof scope);
        if (!scope[0] || !strcmp(scope, method)) sel[n++] = (char *)kv;
    }
    return n;
}

/* cfg for the reference rows of env: the config with the overrides that name no method (sel: room
 * for n_over + 1 of them). */
static int reference_cfg(m2_run_config *cfg, const char *file, char **over, int n_over, const char *env, char **sel,
                         m2_err *err) {
    char o_env[96];
    snprintf(o_env, sizeof o_env, "env.name=%s", env);
    int n = method_overrides(over, n_over, "", sel);
    sel[n++] = o_env;
    return load_cfg(cfg, file, sel, n, err);
}

/* An existing run folder is continued only if it was made with the same config (up to run.*
 * settings that do not change numbers); else the error says which key differs. */
static int same_config(const char *run_dir, const m2_run_config *cfg, m2_err *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    m2_run_config *saved = malloc(sizeof *saved);
    if (!saved) { m2_errorf(err, M2_ENOMEM, "out of memory"); return 0; }
    int ok = 0;
    if (m2_run_config_load(saved, path, 0, NULL, err) == 0) {
        const char *a[16], *st[16];
        char why[256];
        int n = m2_run_stage_plan(cfg, a, 16);
        ok = m2_run_reusable_prefix(saved, cfg, st, 16, why, sizeof why) >= n - 2;   /* eval, report: per method */
        if (!ok)
            m2_errorf(err, M2_ECONFIG, "%s holds a run made with another config (%s); delete it or use another --out",
                      run_dir, why);
    }
    free(saved);
    return ok;
}

static int add_rows(m2_result_row **all, int *n_all, const char *dir, const char *method, m2_err *err) {
    m2_result_row *r;
    int n;
    if (m2_report_collect(dir, method, &r, &n, err)) return -1;
    m2_result_row *na = realloc(*all, (size_t)(*n_all + n + 1) * sizeof *na);
    if (!na) { free(r); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    memcpy(na + *n_all, r, (size_t)n * sizeof *r);
    *all = na;
    *n_all += n;
    free(r);
    return 0;
}

/* A trained run of the demo: its folder and the names of its rows. */
typedef struct demo_run {
    char dir[1200], method[64], env[64];
} demo_run;

/* Runs drawn in one environment's learning curves ("all" is 9 methods). */
#define DEMO_CURVE_RUNS 32

/* DIR/plots/curves_ENV.png and .svg: the main losses of every method's run, one line per method. */
static int write_curves(const char *out, const char *env, const char *const *runs, int n, m2_err *err) {
    static const char *keys[] = {"pretrain/loss", "sys1/loss", "sys1/val_loss", "sys2_warmup/loss", "sys2/q_loss",
                                 "sys2/actor_loss", "sys2_online/actor_loss", "sys2_online/kl", "sys2_online/success_rate"};
    char title[160], path[1300];
    snprintf(title, sizeof title, "%s: learning curves by method", env);
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/plots/curves_%s.%s", out, env, f ? "svg" : "png");
        if (m2_chart_runs_curves(runs, NULL, n, keys, 9, title, path, err) < 0) return -1;
        if (f == 0) printf("learning curves: %s\n", path);
    }
    return 0;
}

/* Under MPI the episodes are split across the ranks and rank 0 writes the records. */
static int reference_rows(const m2_run_config *cfg, const char *env, const char *policy, const char *dir,
                          int episodes, m2_dist *dist, m2_err *err) {
    int writer = m2_dist_alone(dist) || dist->rank == 0;
    char p[1400];
    snprintf(p, sizeof p, "%s/eval", dir);
    if (writer && m2_mkdir_p(p, err)) return -1;
    const char *splits[2] = {"id", "ood"};
    for (int s = 0; s < 2; s++) {
        snprintf(p, sizeof p, "%s/eval/%s.jsonl", dir, splits[s]);
        FILE *f = writer ? fopen(p, "w") : NULL;
        if (writer && !f) return m2_errorf(err, M2_EIO, "%s: cannot create", p);
        double succ;
        int rc = m2_pipe_eval_reference(cfg, env, policy, splits[s], episodes, f, &succ, dist, err);
        if (f && fclose(f) && !rc) rc = m2_errorf(err, M2_EIO, "%s: write failed", p);
        if (rc) return -1;
        printf("%s %s/%s: success %.1f%%\n", policy, env, splits[s], 100 * succ);
    }
    m2_reference_marker rm = {.policy = policy, .env = env, .episodes = episodes, .step_limit = cfg->eval_step_limit,
                              .eval_seed = cfg->eval_seed, .run_seed = cfg->run_seed};
    return writer ? m2_reference_marker_write(dir, &rm, err) : 0;
}

/* What rank 0 decided about a method's run (every rank then passes the same config and folder to
 * m2_train_run_dist): continue it, or take the first run's stages. */
typedef struct run_decision {
    int32_t resume, ok, records_only;   /* records_only: a finished run kept without weights */
    char reuse_from[1300], reuse_stages[256];
    char msg[sizeof ((m2_err *)0)->msg];
} run_decision;

/* rank 0's decision for run_dir (the others read it by broadcast: the folder may be changing under
 * them as rank 0 starts the run): continue an existing run made with the same config, or start one
 * that takes the first method's reusable stages (first_cfg NULL for the first method). */
static void decide_run(const char *run_dir, const m2_run_config *cfg, const m2_run_config *first_cfg,
                       run_decision *dc) {
    memset(dc, 0, sizeof *dc);
    m2_err err = {0};
    dc->resume = m2_dir_kind_of(run_dir) == M2_DIR_RUN;
    dc->records_only = dc->resume && m2_run_records_only(run_dir);
    dc->ok = 1;
    if (dc->resume && !same_config(run_dir, cfg, &err)) {
        dc->ok = 0;
        snprintf(dc->msg, sizeof dc->msg, "%s", err.msg);
        return;
    }
    if (dc->resume || !first_cfg) return;
    /* later methods take the first run's stages they would compute identically */
    const char *st[16];
    int ns = m2_run_reusable_prefix(first_cfg, cfg, st, 16, NULL, 0);
    char from[1300];
    m2_run_dir_for(first_cfg, from, sizeof from);
    int k2 = 0;   /* a first run made by an older multi2 records no end steps: compute instead */
    while (k2 < ns && m2_run_stage_reusable(from, st[k2])) k2++;
    for (int i = 0; i < k2; i++)
        snprintf(dc->reuse_stages + strlen(dc->reuse_stages), sizeof dc->reuse_stages - strlen(dc->reuse_stages), "%s%s",
                 i ? "," : "", st[i]);
    if (k2 > 0) snprintf(dc->reuse_from, sizeof dc->reuse_from, "%s", from);
}

/* What the demo gathers from its finished runs, in method order: the results rows, the trained
 * runs (for the RL-stage table), one environment's runs for its learning curves, and what was
 * computed or kept. */
typedef struct demo_tally {
    m2_result_row *rows;
    demo_run *trained;
    int n_rows, n_trained, n_runs, computed, kept;
    char curve_dir[DEMO_CURVE_RUNS][1200];
    const char *curve_runs[DEMO_CURVE_RUNS];
    int n_curves;
} demo_tally;

/* A finished run's rows and place in the tallies; before / taken: the stages it found done or
 * reused when it started. */
static int tally_run(demo_tally *t, const char *run_dir, const char *env, const char *method, int before, int taken,
                     m2_err *err) {
    int done = m2_run_done_count(run_dir);
    t->n_runs++;
    t->computed += done - before - taken;
    t->kept += before + taken;
    if (add_rows(&t->rows, &t->n_rows, run_dir, method, err)) return -1;
    demo_run *dr = realloc(t->trained, (size_t)(t->n_trained + 1) * sizeof *dr);
    if (!dr) return m2_errorf(err, M2_ENOMEM, "out of memory");
    t->trained = dr;
    snprintf(dr[t->n_trained].dir, sizeof dr[t->n_trained].dir, "%s", run_dir);
    snprintf(dr[t->n_trained].method, sizeof dr[t->n_trained].method, "%s", method);
    snprintf(dr[t->n_trained].env, sizeof dr[t->n_trained].env, "%s", env);
    t->n_trained++;
    if (t->n_curves < DEMO_CURVE_RUNS) {
        snprintf(t->curve_dir[t->n_curves], sizeof t->curve_dir[t->n_curves], "%s", run_dir);
        t->curve_runs[t->n_curves] = t->curve_dir[t->n_curves];
        t->n_curves++;
    }
    return 0;
}

/* A later method's run in a process of its own (--jobs). */
typedef struct demo_child {
    pid_t pid;
    int before, taken, status;
    double t1;
    char run_dir[1200], method[64], log[1300];
} demo_child;

/* Waits for one running child (block = 0: only one that has ended already), keeps its exit status
 * and prints its end: 0, or 1 when none has ended (block = 0), -1 when none is left. */
static int wait_child(demo_child *ch, int n, const char *env, double t0, int block) {
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, block ? 0 : WNOHANG);
        if (pid == 0) return 1;
        if (pid < 0) return -1;
        for (int i = 0; i < n; i++) {
            if (ch[i].pid != pid) continue;
            ch[i].pid = 0;
            ch[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            if (ch[i].status)
                fprintf(stderr, "multi2 demo: %s failed (exit %d): its output is in %s\n", ch[i].run_dir, ch[i].status,
                        ch[i].log);
            else
                printf("=== %s / %s done in %.0f s (total %.0f s)\n", env, ch[i].method, m2_now_s() - ch[i].t1,
                       m2_now_s() - t0);
            return 0;
        }
    }
}

/* Time between two looks at the source run's stages.json while a later method waits for them. */
#define DEMO_POLL_US 200000

/* --jobs: waits, reaping the children that end, until fewer than jobs run and, for a fresh run of
 * cfg, the source run (child src; its folder src_dir) has finished every stage cfg would take from
 * it, or has ended (the run then takes what it finished). A later method so starts as soon as the
 * stages it shares with the source exist (flat needs the base and data alone), not when the
 * source's whole run is done; its bits are the same either way (a stage is taken only finished).
 * Returns -1 when the source failed (the demo stops starting runs). */
static int wait_turn(demo_child *ch, int n_ch, int src, int *running, int jobs, const m2_run_config *first_cfg,
                     const m2_run_config *cfg, const char *run_dir, const char *env, double t0) {
    const char *st[16];
    int ns = m2_dir_kind_of(run_dir) == M2_DIR_RUN ? 0 : m2_run_reusable_prefix(first_cfg, cfg, st, 16, NULL, 0);
    char src_dir[1200];
    m2_run_dir_for(first_cfg, src_dir, sizeof src_dir);
    for (;;) {
        while (*running > 0 && wait_child(ch, n_ch, env, t0, 0) == 0) (*running)--;
        if (ch[src].pid == 0 && ch[src].status) return -1;
        int have = ch[src].pid == 0 ? ns : 0;   /* the source ended: it adds nothing more */
        while (have < ns && m2_run_stage_reusable(src_dir, st[have])) have++;
        if (*running < jobs && have == ns) return 0;
        if (*running == jobs) {
            if (wait_child(ch, n_ch, env, t0, 1) == 0) (*running)--;
        } else {
            usleep(DEMO_POLL_US);
        }
    }
}

/* Runs cfg in a new process, its stdout and stderr appended to c->log (opened here, so that a log
 * that cannot be written is the caller's error); the parent goes on. */
static int start_child(demo_child *c, const m2_run_config *cfg, int resume, m2_err *err) {
    int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return m2_errorf(err, M2_EIO, "%s: cannot open for writing", c->log);
    fflush(NULL);   /* nothing buffered here is written twice */
    pid_t pid = fork();
    if (pid != 0) {
        close(fd);
        if (pid < 0) return m2_errorf(err, M2_EIO, "cannot start a process for %s", c->run_dir);
        c->pid = pid;
        return 0;
    }
    if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(3);
    close(fd);
    m2_err cerr = {0};
    int rc = m2_train_run_dist(cfg, m2_pipe_stages, m2_pipe_n_stages, c->run_dir, resume, stdout, NULL, &cerr);
    if (rc) fprintf(stderr, "multi2 demo: %s: %s\n", c->run_dir, cerr.msg);
    fflush(NULL);
    _exit(rc ? 1 : 0);
}

int cmd_demo(int argc, char **argv) { return cmd_demo_dist(argc, argv, NULL); }

int cmd_demo_dist(int argc, char **argv, m2_dist *dist) {
    setvbuf(stdout, NULL, _IOLBF, 0);   /* summary lines reach a log file as they happen */
    int writer = m2_dist_alone(dist) || dist->rank == 0;   /* rank 0 alone writes (docs/dist.md) */
    const char *out = "runs/demo", *envs = "textcraft,alfworld,scienceworld", *methods = "multi2,flat";
    const char *file = NULL;
    int episodes = 0, threads = 0, jobs = 1;
    char **over = calloc((size_t)argc + 4, sizeof *over), **sel = calloc((size_t)argc + 4, sizeof *sel);
    int n_over = 0;   /* sel: the overrides of one method (method_overrides) and the method */
    if (!over || !sel) { free(over); free(sel); return 1; }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); free(over); free(sel); return 0; }
        else if (!strcmp(a, "--out") && next) { out = next; i++; }
        else if (!strcmp(a, "--config") && next) { file = next; i++; }
        else if (!strcmp(a, "--envs") && next) { envs = next; i++; }
        else if (!strcmp(a, "--methods") && next) { methods = next; i++; }
        else if (!strcmp(a, "--episodes") && next) { episodes = atoi(next); i++; if (episodes <= 0) goto bad; }
        else if (!strcmp(a, "--threads") && next) { threads = atoi(next); i++; if (threads <= 0) goto bad; }
        else if (!strcmp(a, "--jobs") && next) { jobs = atoi(next); i++; if (jobs <= 0) goto bad; }
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else {
            fprintf(stderr, "multi2 demo: unexpected argument '%s'%s\n", a,
                    (!strcmp(a, "--out") || !strcmp(a, "--config") || !strcmp(a, "--envs") || !strcmp(a, "--methods") || !strcmp(a, "--episodes") ||
                     !strcmp(a, "--threads") || !strcmp(a, "--jobs")) ? " (needs a value)" : "");
            usage(stderr);
            free(over);
            free(sel);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "multi2 demo: %s needs a positive integer\n", a);
        free(over);
        free(sel);
        return 2;
    }
    if (!strcmp(methods, "all")) methods = all_methods;
    char ebuf[64], mbuf[64], first[64] = "";
    if (!m2_cfg_list_item(methods, 0, first, sizeof first)) {
        fprintf(stderr, "multi2 demo: --methods is empty\n");
        free(over);
        free(sel);
        return 2;
    }
    m2_run_config *cfg = malloc(sizeof *cfg), *first_cfg = malloc(sizeof *first_cfg);
    m2_err err = {0};
    if (!first_cfg) { free(cfg); cfg = NULL; }
    /* check the overrides and names once before anything runs: a METHOD: override names one of
     * --methods, and each method's config loads */
    for (int i = 0; i < n_over; i++) {
        char scope[64], item[64];
        override_scope(over[i], scope, sizeof scope);
        int found = !scope[0];
        for (int k = 0; !found && m2_cfg_list_item(methods, k, item, sizeof item); k++) found = !strcmp(item, scope);
        if (!found) {
            fprintf(stderr, "multi2 demo: override '%s' names method '%s', which is not among the methods (%s)\n", over[i],
                    scope, methods);
            free(cfg);
            free(first_cfg);
            free(over);
            free(sel);
            return 2;
        }
    }
    for (int k = 0; m2_cfg_list_item(methods, k, mbuf, sizeof mbuf); k++) {
        char mo[96];
        snprintf(mo, sizeof mo, "method=%s", mbuf);
        int n_sel = method_overrides(over, n_over, mbuf, sel);
        sel[n_sel] = mo;
        if (!cfg || load_cfg(cfg, file, sel, n_sel + 1, &err)) {
            int code = cfg ? 2 : 1;
            fprintf(stderr, "multi2 demo: %s\n", cfg ? err.msg : "out of memory");
            free(cfg);
            free(first_cfg);
            free(over);
            free(sel);
            return code;
        }
    }
    for (int e = 0; m2_cfg_list_item(envs, e, ebuf, sizeof ebuf); e++)
        if (!m2_env_find(ebuf)) {
            fprintf(stderr, "multi2 demo: unknown environment '%s'\n", ebuf);
            free(cfg);
            free(first_cfg);
            free(over);
            free(sel);
            return 2;
        }
    /* the folder is the demo's own: a training run or anything else there is left alone */
    char eo[64], to[64];
    int n_marker = n_over;
    const char **marker_over = calloc((size_t)n_over + 3, sizeof *marker_over);
    if (marker_over) for (int i = 0; i < n_over; i++) marker_over[i] = over[i];
    snprintf(eo, sizeof eo, "eval.episodes=%d", episodes);
    snprintf(to, sizeof to, "run.threads=%d", threads);
    if (marker_over && episodes > 0) marker_over[n_marker++] = eo;
    if (marker_over && threads > 0) marker_over[n_marker++] = to;
    m2_demo_marker dm = {.config = file, .envs = envs, .methods = methods, .overrides = marker_over,
                         .n_overrides = n_marker};
    int bad = !marker_over || (writer && (m2_check_demo_dir(out, &err) || m2_demo_marker_write(out, &dm, &err)));
    int32_t verdict = bad;   /* every rank stops when rank 0 refuses the folder */
    if (m2_dist_bcast(dist, &verdict, sizeof verdict, 0, &err)) bad = 1;
    else if (verdict && !bad) bad = 1, snprintf(err.msg, sizeof err.msg, "rank 0 refused %s (its message says why)", out);
    if (bad) {
        fprintf(stderr, "multi2 demo: %s\n", marker_over ? err.msg : "out of memory");
        free(marker_over);
        free(cfg);
        free(first_cfg);
        free(over);
        free(sel);
        return 1;
    }
    free(marker_over);
    if (jobs > 1 && !m2_dist_alone(dist)) {
        if (writer) printf("multi2 demo: --jobs %d ignored under MPI: the ranks run each method together\n", jobs);
        jobs = 1;
    }
    double t0 = m2_now_s();
    demo_tally *tl = calloc(1, sizeof *tl);
    demo_child *ch = calloc((size_t)m2_cfg_list_count(methods) + 1, sizeof *ch);
    int rc = tl && ch ? 0 : 1;
    if (rc) fprintf(stderr, "multi2 demo: out of memory\n");
    else printf("multi2 demo -> %s (environments %s; methods %s; plus oracle and random)\n", out, envs, methods);
    for (int e = 0; rc == 0 && m2_cfg_list_item(envs, e, ebuf, sizeof ebuf); e++) {
        char env_dir[1100];
        snprintf(env_dir, sizeof env_dir, "%s/%s", out, ebuf);
        tl->n_curves = 0;
        int n_ch = 0, running = 0, src_ch = -1;   /* with --jobs: the runs from the source on, each in a process */
        /* the source: the first method whose run computes (or has on disk) the stages the later ones
         * take; runs before it are finished runs kept as records alone (a folder put back from
         * scripts/keep_records.sh), which lend no stages: their weights are gone */
        int src_k = -1;
        for (int k = 0; rc == 0 && m2_cfg_list_item(methods, k, mbuf, sizeof mbuf); k++) {
            char o_method[96], o_env[96], o_out[1200], o_name[96], o_ep[64], o_thr[64];
            int n = method_overrides(over, n_over, mbuf, sel);
            char **ov = calloc((size_t)n_over + 12, sizeof *ov);
            if (!ov) { rc = 1; break; }
            snprintf(o_method, sizeof o_method, "method=%s", mbuf);
            snprintf(o_env, sizeof o_env, "env.name=%s", ebuf);
            snprintf(o_out, sizeof o_out, "run.out_dir=%s", env_dir);
            snprintf(o_name, sizeof o_name, "run.name=%s", mbuf);
            int j = 0;
            ov[j++] = o_method;
            ov[j++] = o_env;
            ov[j++] = o_out;
            ov[j++] = o_name;
            if (episodes > 0) { snprintf(o_ep, sizeof o_ep, "eval.episodes=%d", episodes); ov[j++] = o_ep; }
            if (threads > 0) { snprintf(o_thr, sizeof o_thr, "run.threads=%d", threads); ov[j++] = o_thr; }
            for (int i = 0; i < n; i++) ov[j++] = sel[i];
            if (load_cfg(cfg, file, ov, j, &err)) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                free(ov);
                rc = 1;
                break;
            }
            free(ov);
            char run_dir[1200];
            m2_run_dir_for(cfg, run_dir, sizeof run_dir);
            run_decision dc = {0};
            if (jobs > 1 && src_ch >= 0 &&
                wait_turn(ch, n_ch, src_ch, &running, jobs, first_cfg, cfg, run_dir, ebuf, t0)) {
                rc = 1;   /* the source failed: said when it ended */
                break;
            }
            if (writer) decide_run(run_dir, cfg, src_k < 0 ? NULL : first_cfg, &dc);
            if (m2_dist_bcast(dist, &dc, sizeof dc, 0, &err)) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                rc = 1;
                break;
            }
            int resume = dc.resume;
            if (!dc.ok) {
                fprintf(stderr, "multi2 demo: %s\n", dc.msg);
                rc = 1;
                break;
            }
            if (src_k < 0 && !dc.records_only) {
                src_k = k;
                *first_cfg = *cfg;
            }
            if (dc.reuse_from[0] && (m2_cfg_set(m2_run_config_schema(), cfg, "run.reuse_from", dc.reuse_from, "demo", &err) ||
                                     m2_cfg_set(m2_run_config_schema(), cfg, "run.reuse_stages", dc.reuse_stages, "demo", &err))) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                rc = 1;
                break;
            }
            double t1 = m2_now_s();
            int before = resume && writer ? m2_run_done_count(run_dir) : 0;
            int taken = !resume && *cfg->run_reuse_from ? m2_cfg_list_count(cfg->run_reuse_stages) : 0;
            if (jobs > 1 && src_k >= 0) {
                /* the source and each later method in a process of its own: a later one starts
                 * once a process slot is free and the source has finished the stages it takes
                 * (wait_turn); the later ones are independent of each other */
                if (k == src_k) src_ch = n_ch;
                demo_child *c = &ch[n_ch];
                *c = (demo_child){.before = before, .taken = taken, .t1 = m2_now_s()};   /* not the wait for a slot */
                snprintf(c->run_dir, sizeof c->run_dir, "%s", run_dir);
                snprintf(c->method, sizeof c->method, "%s", mbuf);
                snprintf(c->log, sizeof c->log, "%s/%s.log", env_dir, mbuf);
                printf("\n=== %s / %s -> %s%s (in a process of its own; its output: %s)\n", ebuf, mbuf, run_dir,
                       resume ? " (continuing)" : "", c->log);
                if (m2_mkdir_p(env_dir, &err) || start_child(c, cfg, resume, &err)) {   /* the log's folder */
                    fprintf(stderr, "multi2 demo: %s\n", err.msg);
                    rc = 1;
                    break;
                }
                n_ch++;
                running++;
                continue;
            }
            printf("\n=== %s / %s -> %s%s\n", ebuf, mbuf, run_dir, resume ? " (continuing)" : "");
            fflush(stdout);
            if (m2_train_run_dist(cfg, m2_pipe_stages, m2_pipe_n_stages, run_dir, resume, stdout, dist, &err)) {
                fprintf(stderr, "multi2 demo: %s: %s\n", run_dir, err.msg);
                rc = 1;
                break;
            }
            if (!writer) continue;   /* the rows, the curves' runs and the report are rank 0's */
            printf("=== %s / %s done in %.0f s (total %.0f s)\n", ebuf, mbuf, m2_now_s() - t1, m2_now_s() - t0);
            if (tally_run(tl, run_dir, ebuf, mbuf, before, taken, &err)) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                rc = 1;
            }
        }
        /* the processes end in any order; their rows are taken in method order, as one after the
         * other would have made them */
        while (running > 0 && wait_child(ch, n_ch, ebuf, t0, 1) >= 0) running--;
        for (int i = 0; i < n_ch; i++) if (ch[i].status) rc = 1;   /* said when it ended */
        for (int i = 0; rc == 0 && i < n_ch; i++)
            if (tally_run(tl, ch[i].run_dir, ebuf, ch[i].method, ch[i].before, ch[i].taken, &err)) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                rc = 1;
            }
        if (rc == 0 && writer && cfg->run_plots && write_curves(out, ebuf, tl->curve_runs, tl->n_curves, &err)) {
            fprintf(stderr, "multi2 demo: %s\n", err.msg);
            rc = 1;
        }
        /* the reference policies' config: the file and the overrides every method shares (a
         * METHOD:key override is that method's alone), whichever method ran last */
        if (rc == 0 && reference_cfg(cfg, file, over, n_over, ebuf, sel, &err)) {
            fprintf(stderr, "multi2 demo: %s\n", err.msg);
            rc = 1;
        }
        int ref_eps = episodes > 0 ? episodes : (int)cfg->eval_episodes;
        const char *refs[2] = {m2_policy_name(M2_POLICY_ORACLE), m2_policy_name(M2_POLICY_RANDOM)};
        for (int r = 0; rc == 0 && r < 2; r++) {
            char dir[1300];
            snprintf(dir, sizeof dir, "%s/%s", env_dir, refs[r]);
            if (reference_rows(cfg, ebuf, refs[r], dir, ref_eps, dist, &err) ||
                (writer && add_rows(&tl->rows, &tl->n_rows, dir, refs[r], &err))) {
                fprintf(stderr, "multi2 demo: %s\n", err.msg);
                rc = 1;
            }
        }
    }
    double wall = m2_now_s() - t0;
    if (rc == 0 && writer) {
        /* what this invocation did: a re-run of a finished demo computes nothing, and its wall time
         * says nothing about training */
        char note[1024], what[400];
        if (tl->computed > 0)
            snprintf(what, sizeof what, "Wall time %.0f s: this invocation computed %d stages of %d runs (%d stages "
                     "were reused from a first run or already done).", wall, tl->computed, tl->n_runs, tl->kept);
        else
            snprintf(what, sizeof what, "All %d runs were already finished: this invocation computed no stage (every "
                     "one of the %d stages was reused or already done); it re-read their evaluation records and "
                     "re-ran the reference policies in %.0f s.", tl->n_runs, tl->kept, wall);
        snprintf(note, sizeof note, "pass@1 (%s), step limit %lld (eval.step_limit); %s %s",
                 cfg->eval_temperature > 0 ? "sampled" : "greedy", (long long)cfg->eval_step_limit,
                 strcmp(cfg->model_base, "tiny") ? "base model.base (no pre-training)."
                                                  : "tiny base pre-trained from scratch on expert text in each "
                                                    "environment (no pretrained weights offline).",
                 what);
        m2_report_opts ro = {.title = "multi2 demo: results by method (pass@1)", .note = note};
        m2_report_run *rr = calloc(tl->n_trained ? (size_t)tl->n_trained : 1, sizeof *rr);
        for (int i = 0; rr && i < tl->n_trained; i++)
            rr[i] = (m2_report_run){.dir = tl->trained[i].dir, .method = tl->trained[i].method, .env = tl->trained[i].env};
        char md[1300];
        snprintf(md, sizeof md, "%s/results.md", out);
        if (!rr || m2_report_write(tl->rows, tl->n_rows, out, &ro, &err) || m2_report_append_rl_stages(md, rr, tl->n_trained, &err)) {
            if (!rr) snprintf(err.msg, sizeof err.msg, "out of memory");
            fprintf(stderr, "multi2 demo: %s\n", err.msg);
            rc = 1;
        } else {
            printf("\n");
            m2_report_print(tl->rows, tl->n_rows, stdout);
            printf("\nresults: %s/results.md, %s/results.json, %s/plots/\n%s\n", out, out, out, what);
        }
        free(rr);
    }
    if (tl) free(tl->trained), free(tl->rows);
    free(tl);
    free(ch);
    free(cfg);
    free(first_cfg);
    free(over);
    free(sel);
    return rc;
}
