#include "pipe/stage.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "core/build_info.h"
#include "core/chart.h"
#include "core/fsutil.h"
#include "core/progress.h"
#include "core/timer.h"
#include "pipe/inputs.h"
#include "pipe/plan.h"
#include "pipe/runfiles.h"

void m2_run_dir_for(const m2_run_config *cfg, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", cfg->run_out_dir, cfg->run_name);
}

int m2_stage_writes(const m2_stage_ctx *ctx) { return ctx->writer || m2_dist_alone(ctx->dist); }

static long count_lines(const char *path);

/* The checkpoint state's count of metrics.jsonl lines logged up to the checkpoint. */
#define CKPT_METRICS_LINES "run_metrics_lines"
/* The checkpoint state's record of the binaries that ran its stage so far (m2_stage_ctx.made_by). */
#define CKPT_MADE_BY "made_by"

int m2_stage_save(m2_stage_ctx *ctx, m2_ckpt *c, m2_err *err) {
    c->step = ctx->step;
    snprintf(c->stage, sizeof c->stage, "%s", ctx->name);
    /* every rank holds rank 0's state (docs/dist.md): rank 0's checkpoint is the job's */
    if (!m2_stage_writes(ctx)) return 0;
    /* a resume keeps exactly the metrics lines logged so far: a line logged at this very step after
     * the checkpoint (the online stage's epoch line) would otherwise be kept and logged again */
    char mp[1300];
    snprintf(mp, sizeof mp, "%s/metrics.jsonl", ctx->run->dir);
    cJSON *state = m2_ckpt_state(c);
    if (!state || !cJSON_AddNumberToObject(state, CKPT_METRICS_LINES, (double)count_lines(mp)) ||
        !cJSON_AddStringToObject(state, CKPT_MADE_BY, ctx->made_by))
        return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
    if (!m2_dist_alone(ctx->dist)) {
        cJSON *st = m2_ckpt_state(c);
        if (!st || !cJSON_AddNumberToObject(st, "world", ctx->dist->world))
            return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
    }
    char dir[4096];
    if (m2_ckpt_save(c, ctx->run->ckpt_dir, (int)ctx->cfg->run_keep_last, dir, sizeof dir, err) != 0) return -1;
    return 0;
}

int m2_stage_log(m2_stage_ctx *ctx, const m2_scalar *s, int n, m2_err *err) {
    if (!m2_stage_writes(ctx)) return 0;   /* rank 0 logs the global numbers */
    if (m2_run_log(ctx->run, ctx->step, s, n, err) != 0) return -1;
    int64_t every = ctx->cfg->run_log_every > 0 ? ctx->cfg->run_log_every : 1;
    if (ctx->step % every == 0 || (ctx->total > 0 && ctx->step == ctx->total)) {
        double now = m2_now_s();
        int64_t steps = ctx->step - ctx->last_log_step;
        double ms = steps > 0 && ctx->last_log_time > 0 ? 1000.0 * (now - ctx->last_log_time) / (double)steps : 0;
        if (ctx->out) m2_print_summary(ctx->out, ctx->name, ctx->step, ctx->total, s, n, ms, 0);
        ctx->last_log_time = now;
        ctx->last_log_step = ctx->step;
    }
    return 0;
}

/* ---------------------------------------------------------------- stages.json */

typedef struct progress_file {
    char done[16][32];
    int64_t end[16];           /* global step at the end of done[i]; -1: not recorded (older runs) */
    long lines[16];            /* metrics.jsonl lines at the end of done[i]; -1: not recorded */
    char made_by[16][M2_MADE_BY_MAX];   /* the binaries that made done[i]; "": not recorded */
    int n_done;
    int64_t step;
} progress_file;

static int read_progress(const char *run_dir, progress_file *p, m2_err *err) {
    memset(p, 0, sizeof *p);
    char path[1300], *txt;
    snprintf(path, sizeof path, "%s/stages.json", run_dir);
    if (!m2_path_exists(path)) return 0;
    if (m2_read_file(path, &txt, NULL, err) != 0) return -1;
    cJSON *j = cJSON_Parse(txt);
    free(txt);
    cJSON *done = cJSON_GetObjectItemCaseSensitive(j, "done");
    cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    if (!cJSON_IsArray(done) || !cJSON_IsNumber(step) || step->valuedouble < 0) {
        cJSON_Delete(j);
        return m2_errorf(err, M2_EFORMAT, "%s: expected {\"done\": [stage names], \"step\": N}", path);
    }
    const cJSON *d;
    const cJSON *ends = cJSON_GetObjectItemCaseSensitive(j, "ends");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(j, "metrics_lines");
    const cJSON *made_by = cJSON_GetObjectItemCaseSensitive(j, "made_by");
    cJSON_ArrayForEach(d, done) {
        if (!cJSON_IsString(d) || p->n_done == 16) continue;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(ends, d->valuestring);
        p->end[p->n_done] = cJSON_IsNumber(e) && e->valuedouble >= 0 ? (int64_t)e->valuedouble : -1;
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(lines, d->valuestring);
        p->lines[p->n_done] = cJSON_IsNumber(l) && l->valuedouble >= 0 ? (long)l->valuedouble : -1;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(made_by, d->valuestring);
        snprintf(p->made_by[p->n_done], M2_MADE_BY_MAX, "%s", cJSON_IsString(b) ? b->valuestring : "");
        snprintf(p->done[p->n_done++], 32, "%s", d->valuestring);
    }
    p->step = (int64_t)step->valuedouble;
    cJSON_Delete(j);
    return 0;
}

static int write_progress(const char *run_dir, const progress_file *p, m2_err *err) {
    cJSON *j = cJSON_CreateObject();
    cJSON *done = cJSON_AddArrayToObject(j, "done");
    for (int i = 0; i < p->n_done; i++) cJSON_AddItemToArray(done, cJSON_CreateString(p->done[i]));
    cJSON_AddNumberToObject(j, "step", (double)p->step);
    cJSON *ends = cJSON_AddObjectToObject(j, "ends");
    for (int i = 0; i < p->n_done; i++)
        if (p->end[i] >= 0) cJSON_AddNumberToObject(ends, p->done[i], (double)p->end[i]);
    cJSON *lines = cJSON_AddObjectToObject(j, "metrics_lines");
    for (int i = 0; i < p->n_done; i++)
        if (p->lines[i] >= 0) cJSON_AddNumberToObject(lines, p->done[i], (double)p->lines[i]);
    cJSON *made_by = cJSON_AddObjectToObject(j, "made_by");
    for (int i = 0; i < p->n_done; i++)
        if (*p->made_by[i]) cJSON_AddStringToObject(made_by, p->done[i], p->made_by[i]);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    if (!s) return m2_errorf(err, M2_ENOMEM, "out of memory");
    char path[1300];
    snprintf(path, sizeof path, "%s/stages.json", run_dir);
    int rc = m2_write_file_atomic(path, s, strlen(s), err);
    cJSON_free(s);
    return rc;
}

static int is_done(const progress_file *p, const char *stage) {
    for (int i = 0; i < p->n_done; i++) if (!strcmp(p->done[i], stage)) return 1;
    return 0;
}

static const char *made_by_of(const progress_file *p, const char *stage) {
    for (int i = 0; i < p->n_done; i++) if (!strcmp(p->done[i], stage)) return p->made_by[i];
    return "";
}

/* The made_by of a stage this binary runs: this binary alone, or after the binaries its checkpoint
 * records (ckpt_made_by) when those end with another one. */
static void stage_made_by(const char *ckpt_made_by, char *out, size_t cap) {
    const char *me = m2_build_id();
    size_t n = ckpt_made_by ? strlen(ckpt_made_by) : 0, k = strlen(me);
    if (n == 0) snprintf(out, cap, "%s", me);
    else if (n >= k && !strcmp(ckpt_made_by + n - k, me)) snprintf(out, cap, "%s", ckpt_made_by);
    else snprintf(out, cap, "%s then %s", ckpt_made_by, me);
}

int m2_run_made_by(const char *run_dir, m2_stage_made_by *out, int cap, m2_err *err) {
    progress_file *p = malloc(sizeof *p);
    if (!p) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int n = -1;
    if (read_progress(run_dir, p, err) == 0) {
        for (n = 0; n < p->n_done && n < cap; n++) {
            snprintf(out[n].stage, sizeof out[n].stage, "%s", p->done[n]);
            snprintf(out[n].build, sizeof out[n].build, "%s", p->made_by[n]);
        }
    }
    free(p);
    return n;
}

static int64_t end_of(const progress_file *p, const char *stage) {
    for (int i = 0; i < p->n_done; i++) if (!strcmp(p->done[i], stage)) return p->end[i];
    return -1;
}

static long lines_of(const progress_file *p, const char *stage) {
    for (int i = 0; i < p->n_done; i++) if (!strcmp(p->done[i], stage)) return p->lines[i];
    return -1;
}

/* Lines (newlines) in a file; 0 when it does not exist. */
static long count_lines(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    long n = 0;
    int ch;
    while ((ch = getc(f)) != EOF) n += ch == '\n';
    fclose(f);
    return n;
}

/* Writes the first n lines of src (all of it if shorter; nothing if src is absent) to dst,
 * atomically. A stage's metrics end at a line, not at a step: the next stage may log at the very
 * step where the previous one ended. */
static int keep_first_lines(const char *src, const char *dst, long n, m2_err *err) {
    char *txt = NULL;
    size_t len = 0;
    if (m2_path_exists(src) && m2_read_file(src, &txt, &len, err) != 0) return -1;
    size_t k = 0;
    for (long seen = 0; k < len && seen < n; k++) seen += txt[k] == '\n';
    int rc = m2_write_file_atomic(dst, txt ? txt : "", k, err);
    free(txt);
    return rc;
}

/* ---------------------------------------------------------------- stage reuse */

int m2_run_stage_reusable(const char *run_dir, const char *stage) {
    progress_file p;
    m2_err err = {0};
    if (m2_run_records_only(run_dir) || read_progress(run_dir, &p, &err) != 0) return 0;
    return end_of(&p, stage) >= 0 && lines_of(&p, stage) >= 0;
}

/* Copies the tree src into dst (created): files are hard-linked when the file system allows it
 * (artifacts are written once and never modified in place), copied otherwise. */
static int copy_tree(const char *src, const char *dst, m2_err *err) {
    if (m2_mkdir_p(dst, err) != 0) return -1;
    DIR *d = opendir(src);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot open folder", src);
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char a[4096], b[4096];
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        struct stat st;
        if (stat(a, &st) != 0) { rc = m2_errorf(err, M2_EIO, "%s: cannot stat", a); break; }
        if (S_ISDIR(st.st_mode)) { rc = copy_tree(a, b, err); continue; }
        if (link(a, b) == 0) continue;
        char *data;
        size_t len;
        if (m2_read_file(a, &data, &len, err) != 0) { rc = -1; break; }
        rc = m2_write_file_atomic(b, data, len, err);
        free(data);
    }
    closedir(d);
    return rc;
}

/* Fresh run with run.reuse_from: takes the listed stages (a checked prefix of the plan) from the
 * source run: their artifacts, their metrics lines, and the global step at the end of the last one,
 * so the stages that follow start exactly where they would have in a run that computed them. */
static int reuse_stages(const m2_run_config *cfg, const char *const *plan, int n, const char *run_dir,
                        progress_file *prog, int64_t *step, FILE *out, m2_err *err) {
    const char *src = cfg->run_reuse_from;
    m2_run_config *scfg = malloc(sizeof *scfg);
    if (!scfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", src);
    progress_file sp;
    int rc = 0;
    if (!m2_path_exists(path)) {
        rc = m2_errorf(err, M2_ENOTFOUND, "run.reuse_from: %s is not a run folder (no config.yaml)", src);
    } else if (m2_run_records_only(src)) {
        rc = m2_errorf(err, M2_ECONFIG, "run.reuse_from: %s holds a run's records alone (%s: kept without its "
                       "weights), so no stage can be taken from it", src, M2_RECORDS_ONLY_FILE);
    } else if (m2_run_config_load(scfg, path, 0, NULL, err) != 0 || read_progress(src, &sp, err) != 0) {
        m2_err_prefix(err, "run.reuse_from: ");
        rc = -1;
    }
    const char *ok[16];
    char why[256];
    int n_ok = rc ? 0 : m2_run_reusable_prefix(scfg, cfg, ok, 16, why, sizeof why);
    int want = m2_cfg_list_count(cfg->run_reuse_stages);
    char item[64];
    for (int i = 0; rc == 0 && i < want; i++) {
        m2_cfg_list_item(cfg->run_reuse_stages, i, item, sizeof item);
        if (i >= n || strcmp(item, plan[i]))
            rc = m2_errorf(err, M2_ECONFIG, "run.reuse_stages: %s is not stage %d of this run's plan (reused stages "
                           "must be the plan's first ones, in order)", item, i + 1);
        else if (i >= n_ok)
            rc = m2_errorf(err, M2_ECONFIG, "run.reuse_stages: %s cannot be taken from %s (%s)", item, src, why);
        else if (end_of(&sp, item) < 0)
            rc = m2_errorf(err, M2_ECONFIG, "run.reuse_stages: %s is not finished in %s (or its stages.json "
                           "predates per-stage end steps)", item, src);
    }
    for (int i = 0; rc == 0 && i < want; i++) {
        char a[1400], b[1400];
        snprintf(a, sizeof a, "%s/artifacts/%s", src, plan[i]);
        snprintf(b, sizeof b, "%s/artifacts/%s", run_dir, plan[i]);
        if (m2_path_exists(a)) rc = copy_tree(a, b, err);
        if (rc == 0) {
            *step = end_of(&sp, plan[i]);
            snprintf(prog->done[prog->n_done], 32, "%s", plan[i]);
            prog->lines[prog->n_done] = lines_of(&sp, plan[i]);   /* the copied metrics hold exactly these */
            snprintf(prog->made_by[prog->n_done], M2_MADE_BY_MAX, "%s", made_by_of(&sp, plan[i]));
            prog->end[prog->n_done++] = *step;
            prog->step = *step;
        }
    }
    if (rc == 0 && want > 0) {
        /* the source's metrics up to the end of the last reused stage */
        char src_m[1300], dst_m[1300];
        snprintf(src_m, sizeof src_m, "%s/metrics.jsonl", src);
        snprintf(dst_m, sizeof dst_m, "%s/metrics.jsonl", run_dir);
        long nl = prog->lines[prog->n_done - 1];
        if (nl < 0) nl = prog->lines[prog->n_done - 1] = 0;
        rc = keep_first_lines(src_m, dst_m, nl, err);
        if (rc == 0 && out)
            fprintf(out, "reused %s from %s (step %" PRId64 ")\n", cfg->run_reuse_stages, src, *step);
    }
    free(scfg);
    return rc;
}

/* ---------------------------------------------------------------- the runner */

static const m2_stage *find_stage(const m2_stage *table, int n, const char *name) {
    for (int i = 0; i < n; i++) if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

/* A fresh run failed (not stopped): without durable work of its own (a stage it computed, a
 * checkpoint) the folder it made is removed, so the same command can run again; otherwise the
 * message says how to continue or start over. existed: the (empty) folder was there before. */
static void after_failed_fresh_run(const char *run_dir, int existed, int n_done, int n_reused, m2_err *err) {
    char latest[1300];
    snprintf(latest, sizeof latest, "%s/ckpt/latest", run_dir);
    int has_ckpt = m2_path_exists(latest);
    if (n_done <= n_reused && !has_ckpt) {
        int gone = m2_remove_tree(run_dir) == 0;
        if (gone && existed) m2_mkdir_p(run_dir, NULL);
        if (!err) return;
        size_t l = strlen(err->msg);
        if (gone)
            snprintf(err->msg + l, sizeof err->msg - l,
                     " (nothing was finished or checkpointed: %s was removed, so the same command can run again)",
                     run_dir);
        else
            snprintf(err->msg + l, sizeof err->msg - l,
                     " (%s could not be removed: delete it before running the same command again)", run_dir);
    } else if (err) {
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof err->msg - l,
                 " (%s keeps %s: once the cause is fixed, continue with multi2 train --resume %s; with changed "
                 "config keys, branch it: multi2 train --resume %s --branch NEW_DIR key=value; or delete it to "
                 "start over)", run_dir, has_ckpt ? "its finished stages and checkpoints" : "its finished stages",
                 run_dir, run_dir);
    }
}

int m2_run_done_count(const char *run_dir) {
    progress_file p;
    m2_err err = {0};
    return read_progress(run_dir, &p, &err) == 0 ? p.n_done : 0;
}

/* What rank 0 decided before the stages run (m2_train_run_dist broadcasts the numbers). */
typedef struct run_start {
    progress_file prog;
    int start, reused, fresh, existed, n_reused, resume;
    int64_t step;
    m2_ckpt *ck;
    m2_run run;
} run_start;

/* The writer's start of a run: fresh folder or resume decision, reuse, the run folder opened.
 * Returns 0 to run stages, 1 when every stage is done already, -1 on error. */
static int prepare(const m2_run_config *cfg, const char *const *plan, int n, const char *run_dir, int resume,
                   FILE *out, run_start *rs, m2_err *err) {
    progress_file prog;
    int start = 0, reused = 0, fresh = !resume, existed = 0, n_reused = 0;
    int64_t step = 0;
    m2_ckpt *ck = NULL;
    if (resume) {
        if (m2_check_resume_dir(run_dir, err) != 0) return -1;
        if (read_progress(run_dir, &prog, err) != 0) return -1;
        while (start < n && is_done(&prog, plan[start])) start++;
        step = prog.step;
        if (start == n) {
            if (out) fprintf(out, "%s: every stage is done already (%s)\n", run_dir, "stages.json");
            return 1;
        }
        if (m2_run_records_only(run_dir))
            return m2_errorf(err, M2_ECONFIG, "%s holds a run's records alone (%s: kept without its weights and "
                             "checkpoints), so stage %s cannot run there: start the run afresh in another folder",
                             run_dir, M2_RECORDS_ONLY_FILE, plan[start]);
        /* every input the remaining stages read, before anything is cut back or computed */
        if (m2_check_run_inputs(cfg, plan + start, n - start, 0, err) != 0) return -1;
        char root[1300];
        snprintf(root, sizeof root, "%s/ckpt", run_dir);
        if (m2_ckpt_load_latest(root, &ck, err) != 0) {
            if (err && err->code != M2_ENOTFOUND) return -1;
            ck = NULL;
        }
        if (ck && strcmp(ck->stage, plan[start])) {
            /* The latest checkpoint belongs to a finished stage: start the next one fresh. */
            m2_ckpt_free(ck);
            ck = NULL;
        }
        if (ck) step = ck->step;
        const cJSON *ml = ck ? cJSON_GetObjectItemCaseSensitive(ck->state, CKPT_METRICS_LINES) : NULL;
        if (cJSON_IsNumber(ml)) {   /* older checkpoints lack it: m2_run_open cuts by step alone */
            char mp[1300];
            snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dir);
            if (keep_first_lines(mp, mp, (long)ml->valuedouble, err) != 0) { m2_ckpt_free(ck); return -1; }
        }
        if (!ck && start > 0 && lines_of(&prog, plan[start - 1]) >= 0) {
            /* starting the stage afresh: drop whatever it logged before it was killed */
            char mp[1300];
            snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dir);
            if (keep_first_lines(mp, mp, lines_of(&prog, plan[start - 1]), err) != 0) return -1;
        }
        if (out)
            fprintf(out, "resuming %s at stage %s, step %" PRId64 "%s\n", run_dir, plan[start], step,
                    ck ? " (from its checkpoint)" : " (stage start)");
    } else {
        memset(&prog, 0, sizeof prog);
        if (*cfg->run_reuse_stages && !*cfg->run_reuse_from)
            return m2_errorf(err, M2_ECONFIG, "run.reuse_stages: set, but run.reuse_from names no run");
        if (m2_check_fresh_run_dir(run_dir, err) != 0) return -1;
        n_reused = *cfg->run_reuse_from ? m2_cfg_list_count(cfg->run_reuse_stages) : 0;
        /* reused stages read nothing here: the inputs of the ones this run computes */
        if (m2_check_run_inputs(cfg, plan + (n_reused < n ? n_reused : n), n_reused < n ? n - n_reused : 0, 1,
                                err) != 0)
            return -1;
        existed = m2_path_exists(run_dir);
        if (n_reused > 0) {
            if (reuse_stages(cfg, plan, n, run_dir, &prog, &step, out, err) != 0) {
                after_failed_fresh_run(run_dir, existed, 0, 0, err);
                return -1;
            }
            start = n_reused;
            reused = resume = 1;   /* open the run at the reused step */
        }
    }
    if (m2_run_open(&rs->run, run_dir, cfg->run_tensorboard, resume ? step : -1, err) != 0) {
        m2_ckpt_free(ck);
        if (fresh) after_failed_fresh_run(run_dir, existed, prog.n_done, n_reused, err);
        return -1;
    }
    rs->prog = prog;
    rs->start = start;
    rs->reused = reused;
    rs->fresh = fresh;
    rs->existed = existed;
    rs->n_reused = n_reused;
    rs->resume = resume;
    rs->step = step;
    rs->ck = ck;
    return 0;
}

int m2_train_run(const m2_run_config *cfg, const m2_stage *table, int n_table, const char *run_dir, int resume,
                 FILE *out, m2_err *err) {
    return m2_train_run_dist(cfg, table, n_table, run_dir, resume, out, NULL, err);
}

int m2_train_run_dist(const m2_run_config *cfg, const m2_stage *table, int n_table, const char *run_dir,
                      int resume, FILE *out, m2_dist *dist, m2_err *err) {
    const char *plan[16];
    int n = m2_run_stage_plan(cfg, plan, 16);
    if (n == 0) return m2_errorf(err, M2_ECONFIG, "run.stages: no stage to run");
    for (int i = 0; i < n; i++) {
        const m2_stage *st = find_stage(table, n_table, plan[i]);
        if (!st || !st->fn)
            return m2_errorf(err, M2_EUNSUPPORTED, "stage %s not implemented yet (plan of method %s: run.stages "
                             "selects a subset)", plan[i], m2_method_names[cfg->method]);
    }
    int writer = m2_dist_alone(dist) || dist->rank == 0;
    run_start rs;
    memset(&rs, 0, sizeof rs);
    int dec = writer ? prepare(cfg, plan, n, run_dir, resume, out, &rs, err) : 0;
    if (!m2_dist_alone(dist)) {
        /* one decision for every rank: rank 0's (the others hang in the stages' collectives if
         * they took another); the others read the same checkpoint from the shared folder */
        int64_t d[4] = {dec, rs.start, rs.step, rs.ck != NULL};
        m2_err e2 = {0};
        if (m2_dist_bcast(dist, d, sizeof d, 0, &e2)) {
            m2_ckpt_free(rs.ck);
            if (writer && dec == 0) m2_run_close(&rs.run);
            if (err) *err = e2;
            return -1;
        }
        if (!writer) {
            dec = (int)d[0];
            rs.start = (int)d[1];
            rs.step = d[2];
            snprintf(rs.run.dir, sizeof rs.run.dir, "%s", run_dir);
            snprintf(rs.run.ckpt_dir, sizeof rs.run.ckpt_dir, "%s/ckpt", run_dir);
            if (dec == 0 && d[3]) {
                if (m2_ckpt_load_latest(rs.run.ckpt_dir, &rs.ck, err) != 0) return -1;
                if (rs.ck->step != rs.step)
                    dec = m2_errorf(err, M2_EIO, "rank %d: the latest checkpoint of %s is step %lld, rank 0 resumes at %lld "
                                    "(is the run folder on a file system every rank reads?)", dist->rank, run_dir,
                                    (long long)rs.ck->step, (long long)rs.step);
            }
        }
    }
    if (dec != 0) {
        m2_ckpt_free(rs.ck);
        if (writer && dec < 0) return -1;
        if (dec > 0) return 0;
        return err && err->code ? -1 : m2_errorf(err, M2_EIO, "rank 0 could not start the run (its message says why)");
    }
    int world = dist ? dist->world : 1;
    if (rs.ck && out && writer) {   /* checkpoints of older builds hold no world size: one process wrote them */
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(rs.ck->state, "world");
        int ck_world = cJSON_IsNumber(w) ? (int)w->valuedouble : 1;
        /* Everything a checkpoint holds is the global batch's and the same on every rank (the data
         * cursors, the RNG streams, the replay buffer; the masks, anchor samples and episodes are
         * keyed by their global position: docs/dist.md), so a run continues at any world size. */
        if (ck_world != world)
            fprintf(out, "resuming step %lld, written by %d rank%s, on %d rank%s: the batches, dropout masks, anchor "
                    "samples, episodes and replay buffer continue as they would have; each step's gradient is now "
                    "summed over %d part%s instead of %d, so the numbers from here agree with the uninterrupted run "
                    "to float rounding, not bit for bit\n", (long long)rs.ck->step, ck_world, ck_world == 1 ? "" : "s",
                    world, world == 1 ? "" : "s", world, world == 1 ? "" : "s", ck_world);
    }
    progress_file prog = rs.prog;
    int start = rs.start, reused = rs.reused, fresh = rs.fresh, existed = rs.existed, n_reused = rs.n_reused;
    resume = rs.resume;
    int64_t step = rs.step;
    m2_ckpt *ck = rs.ck;
    m2_run run = rs.run;
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    int rc = 0;
    if (!writer) {
        /* rank 0 writes config.yaml and stages.json */
    } else if (cfg->run_stop_at_step > 0 && cfg->run_stop_at_step <= step) {
        /* a stop at a step already passed can never happen again: saved as 0, so the folder says what
         * the rest of the run does (and matches a run that never stopped) */
        m2_run_config *saved = malloc(sizeof *saved);
        if (!saved) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
        else {
            *saved = *cfg;
            saved->run_stop_at_step = 0;
            rc = m2_cfg_save(m2_run_config_schema(), saved, path, err);
            free(saved);
        }
    } else {
        rc = m2_cfg_save(m2_run_config_schema(), cfg, path, err);
    }
    if (rc == 0 && writer && (!resume || reused)) rc = write_progress(run_dir, &prog, err);
    for (int i = start; rc == 0 && i < n; i++) {
        const m2_stage *st = find_stage(table, n_table, plan[i]);
        m2_stage_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        ctx.cfg = cfg;
        ctx.run = &run;
        ctx.name = plan[i];
        ctx.index = i;
        ctx.count = n;
        ctx.step = step;
        ctx.last_log_step = step;
        ctx.out = out;
        ctx.resume = i == start ? ck : NULL;
        const cJSON *ck_made_by = ctx.resume ? cJSON_GetObjectItemCaseSensitive(ctx.resume->state, CKPT_MADE_BY) : NULL;
        /* a checkpoint that records no binary was written before runs recorded them */
        stage_made_by(cJSON_IsString(ck_made_by) ? ck_made_by->valuestring : ctx.resume ? "an older binary" : NULL,
                      ctx.made_by, sizeof ctx.made_by);
        ctx.dist = dist;
        ctx.writer = writer;
        snprintf(ctx.artifacts, sizeof ctx.artifacts, "%s/artifacts/%s", run_dir, plan[i]);
        if (writer && m2_mkdir_p(ctx.artifacts, err) != 0) { rc = -1; break; }
        if (out) fprintf(out, "== stage %d/%d: %s%s%s\n", i + 1, n, plan[i], st->help ? " — " : "", st->help ? st->help : "");
        double t0 = m2_now_s();
        ctx.last_log_time = t0;
        rc = writer || !st->rank0_only ? st->fn(&ctx, err) : 0;
        /* what rank 0 wrote (artifacts, data) is there for every rank's next stage */
        if (rc == 0) rc = m2_dist_barrier(dist, err);
        if (rc != 0) { m2_err_prefix(err, "stage %s: ", plan[i]); break; }
        step = ctx.step;
        if (prog.n_done < 16) {
            char mp[1300];
            snprintf(mp, sizeof mp, "%s/metrics.jsonl", run_dir);
            prog.lines[prog.n_done] = count_lines(mp);
            prog.end[prog.n_done] = step;
            snprintf(prog.made_by[prog.n_done], M2_MADE_BY_MAX, "%s", ctx.made_by);
            snprintf(prog.done[prog.n_done++], 32, "%s", plan[i]);
        }
        prog.step = step;
        if (writer) rc = write_progress(run_dir, &prog, err);
        if (out) fprintf(out, "== stage %s done in %.1f s (step %" PRId64 ")\n", plan[i], m2_now_s() - t0, step);
    }
    m2_ckpt_free(ck);
    if (writer) m2_run_close(&run);
    if (rc == 0 && writer && cfg->run_plots) rc = m2_chart_run_curves(run_dir, err);
    if (rc != 0 && writer && fresh && err && err->code != M2_ESTOPPED)
        after_failed_fresh_run(run_dir, existed, prog.n_done, n_reused, err);
    return rc;
}
