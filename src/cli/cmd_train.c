/* multi2 train CONFIG.yaml [key=value ...]: validates the config, creates the run folder
 * (run.out_dir/run.name), saves the resolved config, prints the plan and memory plan, and runs the
 * stages of the method's plan through the stage table below. --resume RUN_DIR continues a run
 * from its ckpt/latest. The pipeline plugs its stage functions into `stage_table`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
#include "pipe/inputs.h"
#include "pipe/pipe.h"
#include "pipe/runfiles.h"
#include "pipe/runfiles.h"

/* The stage runners, in plan order (the pipeline, src/pipe/). */
#define stage_table m2_pipe_stages
#define N_STAGES m2_pipe_n_stages

static void usage(FILE *f) {
    fprintf(f,
            "usage: multi2 train CONFIG.yaml [key=value ...] [options]\n"
            "       multi2 train --resume RUN_DIR [key=value ...]\n"
            "\n"
            "Runs a training config: the method's stages (pretrain, data, sys1_sft, sys2_warmup,\n"
            "sys2_offline, sys2_online, eval, report) in the run folder run.out_dir/run.name, which\n"
            "receives config.yaml, metrics.jsonl, a TensorBoard event file, ckpt/, eval/ and plots/.\n"
            "key=value overrides any config key, e.g. sys2.offline.beta=3 run.seed=7 lora.sys2.targets=[q,v].\n"
            "\n"
            "options:\n"
            "  --resume RUN_DIR   continue RUN_DIR from ckpt/latest with its own config.yaml; overrides may\n"
            "                     only change keys that steer (run.log_every, run.progress, run.ckpt_every, ...)\n"
            "  --branch NEW_DIR   with --resume: a new run in NEW_DIR with RUN_DIR's config + the overrides,\n"
            "                     reusing the stages RUN_DIR finished that the overrides leave unchanged\n"
            "  --dry-run          validate, print the stage plan and the memory plan; write nothing\n"
            "  --print-config     print the resolved config (YAML) and exit\n"
            "  --help-config      print every config key: type, default, range or choices, meaning\n"
            "  -h, --help         this help\n");
}

/* The memory plan printed before the run, from the config and the base's own config (read from
 * its file without loading a tensor; for "tiny" from model.tiny.*): base weights in model.dtype,
 * both roles' LoRA factors, heads, the engine's exact training ctx (m2_ctx_bytes_for_config with
 * model.recompute and model.logit_chunk), the rollouts' KV caches and the replay buffer. Each
 * training stage prints the engine's own plan again once its model exists. */
static void memory_plan(const m2_run_config *c, m2_memplan *m) {
    m2_model_config mc;
    m2_err err = {0};
    int have = !strcmp(c->model_base, "tiny")
                   ? !m2_config_tiny(&mc, (int)c->model_tiny_vocab, (int)c->model_tiny_dim, (int)c->model_tiny_layers,
                                     (int)c->model_tiny_heads, (int)c->model_tiny_kv_heads, (int)c->model_tiny_ffn,
                                     (int)c->model_max_seq_len, &err)
                   : !m2_model_config_read(c->model_base, &mc, &err);
    if (!have) {   /* the run itself will report the problem; the plan says what it could not read */
        char row[96];
        snprintf(row, sizeof row, "base model (config unreadable: %.60s)", err.msg);
        m2_memplan_add(m, row, 0);
        return;
    }
    double C = mc.dim, L = mc.n_layers, F = mc.ffn_dim;
    double QD = (double)mc.n_heads * mc.head_dim, KD = (double)mc.n_kv_heads * mc.head_dim;
    m2_dtype dt = M2_DT_F32;
    m2_dtype_parse(m2_base_dtype_names[c->model_dtype], &dt);
    char row[96];
    snprintf(row, sizeof row, "base weights (%s, %.2fM params)", m2_dtype_name(dt), m2_config_n_params(&mc) / 1e6);
    m2_memplan_add(m, row, (double)m2_dtype_bytes(dt, (size_t)m2_config_n_params(&mc)));
    const char *roles[2] = {c->lora_sys1_targets, c->lora_sys2_targets};
    const int64_t ranks[2] = {c->lora_sys1_rank, c->lora_sys2_rank};
    double lora = 0;
    for (int r = 0; r < 2; r++) {
        char t[32];
        for (int i = 0; m2_cfg_list_item(roles[r], i, t, sizeof t); i++) {
            double in = C, out = C;
            if (!strcmp(t, "q")) out = QD;
            if (!strcmp(t, "k") || !strcmp(t, "v")) out = KD;
            if (!strcmp(t, "o")) in = QD;
            if (!strcmp(t, "gate") || !strcmp(t, "up")) out = F;
            if (!strcmp(t, "down")) in = F;
            lora += L * (double)ranks[r] * (in + out);
        }
    }
    m2_memplan_add(m, "LoRA adapters (2 roles)", lora * 4);
    m2_memplan_add(m, "LoRA grads + AdamW moments", lora * 4 * 3);
    double hh = c->heads_hidden ? (double)c->heads_hidden : C;
    m2_memplan_add(m, "critic heads q, v (+ targets, grads, moments)", (C * hh + hh * 2 + 1) * 2 * 5 * 4);
    int T = (int)(c->data_max_seq_len < c->model_max_seq_len ? c->data_max_seq_len : c->model_max_seq_len);
    int64_t B = c->sys2_offline_batch;
    const int64_t batches[] = {c->sys1_sft_batch, c->sys2_warmup_batch, c->sys2_online_batch};
    for (int i = 0; i < 3; i++) if (batches[i] > B) B = batches[i];
    int acts = c->model_recompute ? M2_ACTS_RECOMPUTE : M2_ACTS_KEEP;
    snprintf(row, sizeof row, "training ctx (%lld x %d tokens%s%s)", (long long)B, T,
             c->model_recompute ? ", recomputed per layer" : "", c->model_logit_chunk > 0 ? ", chunked logits" : "");
    m2_memplan_add(m, row, (double)m2_ctx_bytes_for_config(&mc, c->run_threads > 0 ? (int)c->run_threads : m2_cpu_count(),
                                                           (int)(B * T), acts, (int)c->model_logit_chunk));
    if (c->method == M2_METHOD_TEAMTR || c->method == M2_METHOD_TEAMTR_HIER) {
        /* an agent update's ctxs (algo/team_train.c): one with activations, two scoring ones, sized
         * to a part of teamtr.max_batch_tokens tokens (the question team's whole batch when smaller;
         * the update always keeps every layer's activations) */
        int64_t n = c->teamtr_max_batch_tokens, whole = c->teamtr_tasks_per_stage * c->teamtr_group * c->model_max_seq_len;
        if (c->method == M2_METHOD_TEAMTR && whole < n) n = whole;
        int th = c->run_threads > 0 ? (int)c->run_threads : m2_cpu_count();
        snprintf(row, sizeof row, "TeamTR update ctxs (3, %lld tokens)", (long long)n);
        m2_memplan_add(m, row, (double)m2_ctx_bytes_for_config(&mc, th, (int)n, M2_ACTS_KEEP, (int)c->model_logit_chunk) +
                                   2.0 * (double)m2_ctx_bytes_for_config(&mc, th, (int)n, M2_ACTS_NONE, (int)c->model_logit_chunk));
    }
    double kv_len = T + (double)c->eval_max_new_tokens;
    m2_memplan_add(m, "rollout KV caches (one per role)", 2 * 2 * L * kv_len * KD * 4);
    m2_memplan_add(m, "replay buffer (segments, approx. 4 KiB each)", (double)c->sys2_online_buffer_capacity * 4096);
}

static void print_plan(const m2_run_config *cfg, const char *run_dir, FILE *f) {
    const char *plan[16];
    int n = m2_run_stage_plan(cfg, plan, 16);
    fprintf(f, "run folder: %s\nmethod: %s   env: %s   seed: %lld\nstages:", run_dir, m2_method_names[cfg->method], cfg->env_name,
            (long long)cfg->run_seed);
    for (int i = 0; i < n; i++) {
        int have = 0;
        for (int k = 0; k < N_STAGES; k++) if (!strcmp(stage_table[k].name, plan[i]) && stage_table[k].fn) have = 1;
        fprintf(f, " %s%s", plan[i], have ? "" : "(not implemented yet)");
    }
    fprintf(f, "\n");
    m2_memplan m = {0};
    memory_plan(cfg, &m);
    m2_memplan_print(&m, f);
}

/* --resume RUN with overrides: refused when they change what the run computes (pipe/plan.h
 * m2_run_resume_conflict), naming the key, the stage and the way to try it (--branch). */
static int check_resume_overrides(const m2_run_config *cfg, const char *run, char **over, int n_over, m2_err *err) {
    char path[1200], why[512];
    snprintf(path, sizeof path, "%s/config.yaml", run);
    m2_run_config *saved = malloc(sizeof *saved);
    if (!saved) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_run_config_load(saved, path, 0, NULL, err);
    if (rc == 0 && m2_run_resume_conflict(saved, cfg, why, sizeof why)) {
        char list[600] = "";
        for (int i = 0; i < n_over; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " %s", over[i]);
        rc = m2_errorf(err, M2_ECONFIG, "--resume %s: %s; a resumed run keeps the config it was made with. To try the "
                       "change, branch it into a new run that reuses the finished stages the change leaves alone: "
                       "multi2 train --resume %s --branch NEW_DIR%s", run, why, run, list);
    }
    free(saved);
    return rc;
}

/* --resume RUN --branch NEW: cfg (RUN's config + overrides) becomes a fresh run in NEW that takes
 * from RUN the finished stages of its plan that it computes identically (run.reuse_from). */
static int branch_config(m2_run_config *cfg, const char *run, const char *branch, char **over, int n_over, FILE *out,
                         m2_err *err) {
    char dir[1100], name[256];
    snprintf(dir, sizeof dir, "%s", branch);
    size_t l = strlen(dir);
    while (l > 1 && dir[l - 1] == '/') dir[--l] = 0;
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (strlen(base) >= sizeof name)
        return m2_errorf(err, M2_EINVAL, "--branch %s: the folder name is longer than %zu bytes", branch, sizeof name - 1);
    memcpy(name, base, strlen(base) + 1);
    if (slash) {
        if (slash == dir) slash[1] = 0; else *slash = 0;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    if (!name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
        return m2_errorf(err, M2_EINVAL, "--branch %s: expected a new run folder", branch);
    if (m2_run_records_only(run))
        return m2_errorf(err, M2_ECONFIG, "--branch: %s holds a run's records alone (%s: kept without its weights), "
                         "so no stage can be taken from it; start a fresh run from its config.yaml instead", run,
                         M2_RECORDS_ONLY_FILE);
    char path[1200];
    snprintf(path, sizeof path, "%s/config.yaml", run);
    m2_run_config *saved = malloc(sizeof *saved);
    if (!saved) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(saved, path, 0, NULL, err)) { free(saved); return -1; }
    const m2_cfg_schema *s = m2_run_config_schema();
    /* the branch reuses RUN itself, not what RUN reused; RUN's stop step was for RUN (a new one may
     * be given as an override) */
    const char *stop = "0";
    for (int i = 0; i < n_over; i++) if (!strncmp(over[i], "run.stop_at_step=", 17)) stop = over[i] + 17;
    const struct { const char *key, *value; } sets[] = {
        {.key = "run.out_dir", .value = dir}, {.key = "run.name", .value = name},
        {.key = "run.reuse_from", .value = ""}, {.key = "run.reuse_stages", .value = ""},
        {.key = "run.stop_at_step", .value = stop},
    };
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof sets / sizeof sets[0]; i++)
        rc = m2_cfg_set(s, cfg, sets[i].key, sets[i].value, "--branch", err);
    const char *st[16];
    char why[256], list[256] = "";
    int ns = rc ? 0 : m2_run_reusable_prefix(saved, cfg, st, 16, why, sizeof why), k = 0;
    while (k < ns && m2_run_stage_reusable(run, st[k])) k++;   /* only what RUN finished */
    for (int i = 0; i < k; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "", st[i]);
    if (!rc && k > 0)
        rc = m2_cfg_set(s, cfg, "run.reuse_from", run, "--branch", err) ||
             m2_cfg_set(s, cfg, "run.reuse_stages", list, "--branch", err);
    if (!rc && out)
        fprintf(out, "branch of %s: %s%s\n", run, k ? "reusing its finished stages " : "reusing no stage",
                k ? list : "");
    free(saved);
    return rc ? -1 : 0;
}

int cmd_train(int argc, char **argv) {
    m2_dist one;
    m2_dist_single(&one);
    return cmd_train_dist(argc, argv, &one);
}

int cmd_train_dist(int argc, char **argv, m2_dist *dist) {
    /* under MPI rank 0 speaks for the job; the others print only their errors (stderr) */
    setvbuf(stdout, NULL, _IOLBF, 0);   /* summary lines reach a log file as they happen */
    const char *config = NULL, *resume = NULL, *branch = NULL;
    int dry = 0, print_cfg = 0, help_cfg = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    if (!over) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); free(over); return 0; }
        else if (!strcmp(a, "--dry-run")) dry = 1;
        else if (!strcmp(a, "--print-config")) print_cfg = 1;
        else if (!strcmp(a, "--help-config")) help_cfg = 1;
        else if (!strcmp(a, "--resume")) {
            if (i + 1 >= argc) { fprintf(stderr, "multi2 train: --resume needs a run folder\n"); free(over); return 2; }
            resume = argv[++i];
        } else if (!strncmp(a, "--resume=", 9)) resume = a + 9;
        else if (!strcmp(a, "--branch")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "multi2 train: --branch needs a new run folder\n");
                free(over);
                return 2;
            }
            branch = argv[++i];
        } else if (!strncmp(a, "--branch=", 9)) branch = a + 9;
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "multi2 train: unknown option '%s'\n", a);
            usage(stderr);
            free(over);
            return 2;
        } else if (strchr(a, '=')) over[n_over++] = argv[i];
        else if (!config) config = a;
        else {
            fprintf(stderr, "multi2 train: unexpected argument '%s' (one config file; overrides are key=value)\n", a);
            free(over);
            return 2;
        }
    }
    if (help_cfg) {
        m2_cfg_print_schema(m2_run_config_schema(), stdout);
        free(over);
        return 0;
    }
    if (resume && config) {
        fprintf(stderr, "multi2 train: give a config file or --resume RUN_DIR, not both\n");
        free(over);
        return 2;
    }
    if (branch && !resume) {
        fprintf(stderr, "multi2 train: --branch NEW_DIR goes with --resume RUN_DIR (the run it branches from)\n");
        free(over);
        return 2;
    }
    for (int i = 0; resume && i < n_over; i++)
        if (!strncmp(over[i], "run.name=", 9) || !strncmp(over[i], "run.out_dir=", 12)) {
            if (branch)
                fprintf(stderr, "multi2 train: --branch %s names the new run's folder; '%s' cannot change it\n", branch,
                        over[i]);
            else
                fprintf(stderr, "multi2 train: --resume continues %s in place; '%s' cannot change there\n", resume,
                        over[i]);
            free(over);
            return 2;
        }
    char resume_cfg[1200];
    m2_err err = {0};
    if (resume) {
        /* a demo folder or a stray folder gets its own message, not "config.yaml: cannot open" */
        if (m2_check_resume_dir(resume, &err) != 0) {
            fprintf(stderr, "multi2 train: %s\n", err.msg);
            free(over);
            return 1;
        }
        snprintf(resume_cfg, sizeof resume_cfg, "%s/config.yaml", resume);
        config = resume_cfg;
    }
    if (!config && !print_cfg) {
        usage(stderr);
        free(over);
        return 2;
    }
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg || m2_run_config_load(cfg, config, n_over, over, &err) != 0) {
        fprintf(stderr, "multi2 train: %s\n", cfg ? err.msg : "out of memory");
        free(cfg);
        free(over);
        return 1;
    }
    int rc = 0;
    char run_dir[1100];
    if (resume && n_over > 0 && !print_cfg) {
        rc = branch ? branch_config(cfg, resume, branch, over, n_over, stdout, &err)
                    : check_resume_overrides(cfg, resume, over, n_over, &err);
        if (rc) {
            fprintf(stderr, "multi2 train: %s\n", err.msg);
            free(over);
            free(cfg);
            return 1;
        }
    } else if (branch && branch_config(cfg, resume, branch, over, n_over, print_cfg ? NULL : stdout, &err)) {
        fprintf(stderr, "multi2 train: %s\n", err.msg);
        free(over);
        free(cfg);
        return 1;
    }
    free(over);
    if (branch) resume = NULL;   /* a fresh run in the new folder */
    if (print_cfg) {
        char *y = m2_cfg_to_yaml(m2_run_config_schema(), cfg);
        if (y) fputs(y, stdout);
        free(y);
        free(cfg);
        return y ? 0 : 1;
    }
    if (resume) snprintf(run_dir, sizeof run_dir, "%s", resume);
    else m2_run_dir_for(cfg, run_dir, sizeof run_dir);
    /* before anything is printed as a plan or computed: the folder, and every input file the stages
     * read (a resumed run checks the inputs of its remaining stages again when it starts) */
    {
        const char *plan[16];
        int n = m2_run_stage_plan(cfg, plan, 16);
        /* the stages this invocation may compute: not those a fresh run reuses; a resumed run's are
         * known once its stages.json is read (m2_train_run), a dry run checks them all */
        int first = !resume && cfg->run_reuse_from[0] ? m2_cfg_list_count(cfg->run_reuse_stages) : 0;
        if (first > n) first = n;
        if (resume && !dry) first = n;
        /* rank 0 alone: the others may find the folder it has just begun */
        if ((!resume && dist->rank == 0 && m2_check_fresh_run_dir(run_dir, &err) != 0) ||
            m2_check_run_inputs(cfg, plan + first, n - first, !resume, &err) != 0) {
            fprintf(stderr, "multi2 train: %s\n", err.msg);
            if (dry) fprintf(stderr, "dry run: the run would fail here; nothing written\n");
            free(cfg);
            return 1;
        }
    }
    print_plan(cfg, run_dir, stdout);
    if (dry) {
        printf("dry run: config and input files are valid; nothing written\n");
        free(cfg);
        return 0;
    }
    if (m2_train_run_dist(cfg, stage_table, N_STAGES, run_dir, resume != NULL, stdout, dist, &err) != 0) {
        if (err.code == M2_ESTOPPED) {
            printf("multi2 train: %s; continue with: multi2 train --resume %s\n", err.msg, run_dir);
        } else if (!m2_dist_alone(dist)) {
            fprintf(stderr, "multi2 train: rank %d of %d: %s\n", dist->rank, dist->world, err.msg);
            rc = 1;
        } else {
            fprintf(stderr, "multi2 train: %s\n", err.msg);
            rc = 1;
        }
    } else {
        printf("run folder: %s\n", run_dir);
    }
    free(cfg);
    return rc;
}
