#include "core/stage.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/chart.h"
#include "core/fsutil.h"
#include "core/progress.h"
#include "core/timer.h"

void m2_run_dir_for(const m2_run_config *cfg, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", cfg->run_out_dir, cfg->run_name);
}

int m2_stage_save(m2_stage_ctx *ctx, m2_ckpt *c, m2_err *err) {
    c->step = ctx->step;
    snprintf(c->stage, sizeof c->stage, "%s", ctx->name);
    char dir[4096];
    if (m2_ckpt_save(c, ctx->run->ckpt_dir, (int)ctx->cfg->run_keep_last, dir, sizeof dir, err) != 0) return -1;
    return 0;
}

int m2_stage_log(m2_stage_ctx *ctx, const m2_scalar *s, int n, m2_err *err) {
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
    cJSON_ArrayForEach(d, done) {
        if (!cJSON_IsString(d) || p->n_done == 16) continue;
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

/* ---------------------------------------------------------------- the runner */

static const m2_stage *find_stage(const m2_stage *table, int n, const char *name) {
    for (int i = 0; i < n; i++) if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

int m2_train_run(const m2_run_config *cfg, const m2_stage *table, int n_table, const char *run_dir, int resume,
                 FILE *out, m2_err *err) {
    const char *plan[16];
    int n = m2_run_stage_plan(cfg, plan, 16);
    if (n == 0) return m2_errorf(err, M2_ECONFIG, "run.stages: no stage to run");
    for (int i = 0; i < n; i++) {
        const m2_stage *st = find_stage(table, n_table, plan[i]);
        if (!st || !st->fn)
            return m2_errorf(err, M2_EUNSUPPORTED, "stage %s not implemented yet (plan of method %s: run.stages "
                             "selects a subset)", plan[i], cfg->method);
    }
    progress_file prog;
    int start = 0;
    int64_t step = 0;
    m2_ckpt *ck = NULL;
    if (resume) {
        if (!m2_path_exists(run_dir)) return m2_errorf(err, M2_ENOTFOUND, "%s: no such run folder", run_dir);
        if (read_progress(run_dir, &prog, err) != 0) return -1;
        while (start < n && is_done(&prog, plan[start])) start++;
        step = prog.step;
        if (start == n) {
            if (out) fprintf(out, "%s: every stage is done already (%s)\n", run_dir, "stages.json");
            return 0;
        }
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
        if (out)
            fprintf(out, "resuming %s at stage %s, step %" PRId64 "%s\n", run_dir, plan[start], step,
                    ck ? " (from its checkpoint)" : " (stage start)");
    } else {
        memset(&prog, 0, sizeof prog);
    }
    m2_run run;
    if (m2_run_open(&run, run_dir, cfg->run_tensorboard, resume ? step : -1, err) != 0) { m2_ckpt_free(ck); return -1; }
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    int rc = m2_cfg_save(m2_run_config_schema(), cfg, path, err);
    if (rc == 0 && !resume) rc = write_progress(run_dir, &prog, err);
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
        snprintf(ctx.artifacts, sizeof ctx.artifacts, "%s/artifacts/%s", run_dir, plan[i]);
        if (m2_mkdir_p(ctx.artifacts, err) != 0) { rc = -1; break; }
        if (out) fprintf(out, "== stage %d/%d: %s%s%s\n", i + 1, n, plan[i], st->help ? " — " : "", st->help ? st->help : "");
        double t0 = m2_now_s();
        ctx.last_log_time = t0;
        rc = st->fn(&ctx, err);
        if (rc != 0) { m2_err_prefix(err, "stage %s: ", plan[i]); break; }
        step = ctx.step;
        if (prog.n_done < 16) snprintf(prog.done[prog.n_done++], 32, "%s", plan[i]);
        prog.step = step;
        rc = write_progress(run_dir, &prog, err);
        if (out) fprintf(out, "== stage %s done in %.1f s (step %" PRId64 ")\n", plan[i], m2_now_s() - t0, step);
    }
    m2_ckpt_free(ck);
    m2_run_close(&run);
    if (rc == 0 && cfg->run_plots) rc = m2_chart_run_curves(run_dir, err);
    return rc;
}
