#include "pipe/team_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"
#include "pipe/pipe.h"

m2_teamtr_cfg pw_team_loop_cfg(const m2_run_config *cfg) {
    int v = cfg->teamtr_variant;
    m2_teamtr_cfg c = {
        .mode = v == M2_TEAMTR_VARIANT_STALE ? M2_TT_STALE
              : v == M2_TEAMTR_VARIANT_STALE_HAPPO ? M2_TT_STALE_HAPPO
              : v == M2_TEAMTR_VARIANT_JOINT ? M2_TT_JOINT : M2_TT_FRESH,
        .group = (int)cfg->teamtr_group,
        .epochs = (int)cfg->teamtr_epochs,
        .lr = (float)cfg->teamtr_lr,
        .weight_decay = (float)cfg->teamtr_weight_decay,
        .grad_clip = (float)cfg->optim_grad_clip,
        .beta1 = (float)cfg->optim_beta1,
        .beta2 = (float)cfg->optim_beta2,
        .eps = (float)cfg->optim_eps,
        .clip = (float)cfg->teamtr_clip,
        .kl_init = (float)cfg->teamtr_kl_init,
        .delta = v == M2_TEAMTR_VARIANT_NO_TR ? INFINITY : cfg->teamtr_delta,
        .backtrack = (int)cfg->teamtr_backtrack,
        .a_max = (float)cfg->teamtr_a_max,
        .adv_eps = 1e-6f,   /* GRPO's epsilon in (R - mean) / (std + eps) */
        .max_tokens = (int)cfg->model_max_seq_len,
        .max_batch_tokens = (int)cfg->teamtr_max_batch_tokens,
        .gen = {.sampler = {.temperature = (float)cfg->teamtr_temperature, .top_p = (float)cfg->teamtr_top_p},
                .max_new_tokens = (int)cfg->teamtr_max_new_tokens, .seed = pw_seed(cfg, PW_SEED_TEAM_ROLLOUTS)},
    };
    return c;
}

/* The measured-gain rollouts: the same test tasks and sampling streams at every stage (common
 * random numbers: the difference between two stages is the team's, not the draw's). */
static int measure(pw_team_run *r, double *J, double *per_task, m2_err *err) {
    const m2_run_config *cfg = r->cfg;
    m2_team_gen g = r->loop.gen;
    g.seed = pw_seed(cfg, PW_SEED_TEAM_EVAL);
    return m2_teamtr_success(&r->test, r->tt.dist, r->n_test, (int)cfg->teamtr_eval_samples, &g, J, per_task, err);
}

static const char *agent_name(const pw_team_run *r, int k, char *buf, size_t cap) {
    if (r->agent_name[k]) return r->agent_name[k];
    snprintf(buf, cap, "agent%d", k + 1);
    return buf;
}

static int tt_fill(pw_team_run *r, m2_ckpt *c, m2_err *err) {
    char name[32];
    for (int k = 0; k < r->tt.n; k++) {
        snprintf(name, sizeof name, "agent%d", k + 1);
        if (pw_ck_add_params(c, name, &r->tt.adapter[k]->params, err)) return -1;
    }
    int64_t ns = r->stages, nt = r->n_test, two = 2;
    double js[2] = {r->J, r->J0};
    if (m2_ckpt_add_copy(c, "teamtr.cert", M2_CKPT_F64, r->cert, 1, &ns, err) ||
        m2_ckpt_add_copy(c, "teamtr.gain", M2_CKPT_F64, r->gain, 1, &ns, err) ||
        m2_ckpt_add_copy(c, "teamtr.J", M2_CKPT_F64, js, 1, &two, err) ||
        m2_ckpt_add_copy(c, "teamtr.task_J", M2_CKPT_F64, r->task_J, 1, &nt, err) ||
        m2_ckpt_add_copy(c, "teamtr.task_J0", M2_CKPT_F64, r->task_J0, 1, &nt, err))
        return -1;
    cJSON *s = m2_ckpt_state(c);
    cJSON_AddNumberToObject(s, "stages_done", r->done);
    cJSON_AddNumberToObject(s, "base_step", (double)r->base);
    cJSON_AddNumberToObject(s, "updates", (double)r->updates);
    cJSON_AddNumberToObject(s, "outside", (double)r->outside);
    return 0;
}

static int tt_restore(pw_team_run *r, const m2_ckpt *c, m2_err *err) {
    char name[32];
    for (int k = 0; k < r->tt.n; k++) {
        snprintf(name, sizeof name, "agent%d", k + 1);
        if (pw_ck_read_params(c, name, &r->tt.adapter[k]->params, err)) return -1;
    }
    int64_t ns = r->stages, nt = r->n_test, two = 2;
    double js[2];
    if (m2_ckpt_read(c, "teamtr.cert", M2_CKPT_F64, r->cert, 1, &ns, err) ||
        m2_ckpt_read(c, "teamtr.gain", M2_CKPT_F64, r->gain, 1, &ns, err) ||
        m2_ckpt_read(c, "teamtr.J", M2_CKPT_F64, js, 1, &two, err) ||
        m2_ckpt_read(c, "teamtr.task_J", M2_CKPT_F64, r->task_J, 1, &nt, err) ||
        m2_ckpt_read(c, "teamtr.task_J0", M2_CKPT_F64, r->task_J0, 1, &nt, err))
        return -1;
    r->J = js[0];
    r->J0 = js[1];
    const cJSON *s = ((m2_ckpt *)c)->state;
    static const char *keys[4] = {"stages_done", "base_step", "updates", "outside"};
    double v[4];
    for (int i = 0; i < 4; i++) {
        const cJSON *x = s ? cJSON_GetObjectItemCaseSensitive(s, keys[i]) : NULL;
        if (!cJSON_IsNumber(x)) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: teamtr state has no \"%s\"", c->dir, keys[i]);
        v[i] = x->valuedouble;
    }
    r->done = (int)v[0];
    r->base = (int64_t)v[1];
    r->updates = (long)v[2];
    r->outside = (long)v[3];
    if (r->done < 0 || r->done > r->stages)
        return m2_errorf(err, M2_EFORMAT, "checkpoint %s: %d stages done of %d", c->dir, r->done, r->stages);
    return 0;
}

/* Per-update metrics of one agent. */
static int log_update(m2_stage_ctx *ctx, const pw_team_run *r, const m2_teamtr_update *u, m2_err *err) {
    static const char *const keys[10] = {"surrogate_gain", "kl", "kl_raw", "out_of_region", "backtracks",
                                         "rolled_back", "reward", "loss", "clip_frac", "tokens"};
    const double v[10] = {u->L, u->D, u->D_raw, u->out_of_region, u->backtracks, u->rolled_back,
                          u->reward_mean, u->loss, u->clip_frac, u->n_tokens};
    char names[10][80], buf[32];
    const char *who = agent_name(r, u->agent, buf, sizeof buf);
    m2_scalar s[10];
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof names[i], "teamtr/%s/%s", who, keys[i]);
        s[i] = (m2_scalar){names[i], v[i]};
    }
    return m2_stage_log(ctx, s, 10, err);
}

/* The agents of stage s in their update order: r->update[], permuted per stage when
 * teamtr.update_order is random. */
static void stage_sigma(const pw_team_run *r, int s, int *sigma) {
    int n = r->n_update;
    uint32_t p[M2_TEAM_MAX];
    for (int k = 0; k < n; k++) p[k] = (uint32_t)k;
    if (r->cfg->teamtr_update_order == M2_TEAMTR_SIGMA_RANDOM) {
        m2_rng sr;
        m2_rng_seed_stream(&sr, pw_seed(r->cfg, PW_SEED_TEAM_SIGMA), (uint64_t)s);
        m2_rng_shuffle_u32(&sr, p, (uint32_t)n);
    }
    for (int k = 0; k < n; k++) sigma[k] = r->update[p[k]];
}

int pw_team_run_stages(m2_stage_ctx *ctx, pw_team_run *r, const char *label, m2_err *err) {
    const m2_run_config *cfg = r->cfg;
    r->stages = (int)cfg->teamtr_stages;
    r->tt.dist = ctx->dist;   /* rollouts and updates over the ranks (algo/team_train.h) */
    int T = (int)cfg->teamtr_tasks_per_stage, rc = -1, nt = r->n_test > 0 ? r->n_test : 1;
    if (r->n_update < 1 || r->n_train < 1 || r->n_test < 1)
        return m2_errorf(err, M2_ECONFIG, "teamtr: %d agents to train, %d train and %d test tasks", r->n_update,
                         r->n_train, r->n_test);
    r->cert = calloc((size_t)r->stages, sizeof *r->cert);
    r->gain = calloc((size_t)r->stages, sizeof *r->gain);
    r->task_J = calloc((size_t)nt, sizeof *r->task_J);
    r->task_J0 = calloc((size_t)nt, sizeof *r->task_J0);
    int *perm = malloc((size_t)r->n_train * sizeof *perm), *tasks = malloc((size_t)T * sizeof *tasks);
    uint32_t *p32 = malloc((size_t)r->n_train * sizeof *p32);
    if (!r->cert || !r->gain || !r->task_J || !r->task_J0 || !perm || !tasks || !p32) {
        m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
        goto out;
    }
    /* the stages walk one permutation of the training tasks */
    m2_rng pr;
    m2_rng_seed(&pr, pw_seed(cfg, PW_SEED_TEAM_CURSOR));
    for (int i = 0; i < r->n_train; i++) p32[i] = (uint32_t)i;
    m2_rng_shuffle_u32(&pr, p32, (uint32_t)r->n_train);
    for (int i = 0; i < r->n_train; i++) perm[i] = (int)p32[i];
    const m2_teamtr_cfg lc = r->loop;
    if (ctx->resume) {
        if (tt_restore(r, ctx->resume, err)) goto out;
    } else {
        r->base = ctx->step;
        if (measure(r, &r->J, r->task_J, err)) goto out;
        r->J0 = r->J;
        memcpy(r->task_J0, r->task_J, (size_t)r->n_test * sizeof *r->task_J0);
    }
    ctx->total = r->base + (int64_t)r->stages * r->n_update;
    if (ctx->out)
        fprintf(ctx->out, "teamtr: %s, %s, %d train / %d test tasks, %d stages of %d tasks x %d rollouts, delta %g; "
                          "success before %.3f\n",
                m2_teamtr_variant_names[cfg->teamtr_variant], label, r->n_train, r->n_test, r->stages, T, lc.group,
                lc.delta, r->J0);
    m2_progress bar;
    m2_progress_begin(&bar, ctx->out, "teamtr", r->stages, m2_run_progress_names[cfg->run_progress]);
    m2_progress_update(&bar, r->done, NULL);
    for (int s = r->done; s < r->stages; s++) {
        for (int i = 0; i < T; i++) tasks[i] = perm[(int)(((int64_t)s * T + i) % r->n_train)];
        int sigma[M2_TEAM_MAX];
        stage_sigma(r, s, sigma);
        m2_teamtr_stage_stats st;
        if (m2_teamtr_stage(&r->tt, tasks, T, sigma, r->n_update, (uint64_t)s + 1, &lc, &st, err)) goto out_bar;
        float L[M2_TEAM_MAX], D[M2_TEAM_MAX];
        for (int j = 0; j < st.n; j++) {
            ctx->step = r->base + (int64_t)s * r->n_update + j + 1;
            if (log_update(ctx, r, &st.u[j], err)) goto out_bar;
            L[j] = (float)st.u[j].L;
            D[j] = (float)st.u[j].D;
            r->updates++;
            r->outside += st.u[j].out_of_region;
        }
        double J;
        if (measure(r, &J, r->task_J, err)) goto out_bar;
        r->cert[s] = m2_stage_certificate(L, D, st.n, (float)cfg->teamtr_cert_c);
        r->gain[s] = J - r->J;
        r->J = J;
        r->done = s + 1;
        double cb = 0, cg = 0;
        for (int i = 0; i <= s; i++) { cb += r->cert[i]; cg += r->gain[i]; }
        const m2_scalar sc[9] = {
            {"teamtr/certificate", r->cert[s]}, {"teamtr/measured_gain", r->gain[s]}, {"teamtr/eval_success", J},
            {"teamtr/rollouts", (double)st.rollouts}, {"teamtr/cum_bound", cb}, {"teamtr/cum_gain", cg},
            {"teamtr/out_of_region_rate", r->updates ? (double)r->outside / r->updates : 0.0},
            {"teamtr/rank_corr", m2_rank_correlation(r->cert, r->gain, r->done)},
            {"teamtr/violation_rate", m2_violation_rate(r->cert, r->gain, r->done)},
        };
        ctx->step = r->base + (int64_t)(s + 1) * r->n_update;
        if (m2_stage_log(ctx, sc, 9, err)) goto out_bar;
        char extra[96];
        snprintf(extra, sizeof extra, "success %.3f  bound %+.3f  gain %+.3f", J, r->cert[s], r->gain[s]);
        m2_progress_update(&bar, r->done, extra);
        m2_ckpt *c = m2_ckpt_new(0, "");
        if (!c) { m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory"); goto out_bar; }
        int sr = tt_fill(r, c, err);
        if (!sr) sr = m2_stage_save(ctx, c, err);
        m2_ckpt_free(c);
        if (sr) goto out_bar;
        /* a TeamTR stage is the unit a run resumes from (its checkpoint is at the stage's end), so a
         * stop step inside a stage stops at the end of that stage */
        int64_t stop = cfg->run_stop_at_step, begun = r->base + (int64_t)s * r->n_update;
        if (stop > begun && stop <= ctx->step) {
            m2_errorf(err, M2_ESTOPPED, "stopped after the checkpoint of step %lld (run.stop_at_step %lld: the end of the "
                      "TeamTR stage holding it)", (long long)ctx->step, (long long)stop);
            goto out_bar;
        }
    }
    m2_progress_end(&bar, NULL);
    ctx->step = r->base + (int64_t)r->stages * r->n_update;
    rc = 0;
    goto out;
out_bar:
    m2_progress_end(&bar, NULL);
out:
    free(perm);
    free(tasks);
    free(p32);
    return rc;
}

cJSON *pw_team_run_summary(const pw_team_run *r) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "variant", m2_teamtr_variant_names[r->cfg->teamtr_variant]);
    cJSON_AddNumberToObject(o, "agents", r->tt.n);
    cJSON *up = cJSON_AddArrayToObject(o, "updated");
    char buf[32];
    for (int j = 0; j < r->n_update; j++) cJSON_AddItemToArray(up, cJSON_CreateString(agent_name(r, r->update[j], buf, sizeof buf)));
    cJSON_AddNumberToObject(o, "success_before", r->J0);
    cJSON_AddNumberToObject(o, "success_after", r->J);
    /* the measured success per difficulty label, in the order the labels first appear */
    if (r->test_label) {
        cJSON *by = cJSON_AddArrayToObject(o, "by_difficulty");
        for (int i = 0; i < r->n_test; i++) {
            int first = 1;
            for (int k = 0; k < i && first; k++) first = strcmp(r->test_label[k], r->test_label[i]) != 0;
            if (!first) continue;
            double b = 0, a = 0;
            int n = 0;
            for (int k = i; k < r->n_test; k++)
                if (!strcmp(r->test_label[k], r->test_label[i])) { b += r->task_J0[k]; a += r->task_J[k]; n++; }
            cJSON *g = cJSON_CreateObject();
            cJSON_AddStringToObject(g, "label", r->test_label[i]);
            cJSON_AddNumberToObject(g, "tasks", n);
            cJSON_AddNumberToObject(g, "success_before", b / n);
            cJSON_AddNumberToObject(g, "success_after", a / n);
            cJSON_AddItemToArray(by, g);
        }
    }
    cJSON *cs = cJSON_AddArrayToObject(o, "certificate"), *gs = cJSON_AddArrayToObject(o, "measured_gain");
    for (int i = 0; i < r->stages; i++) {
        cJSON_AddItemToArray(cs, cJSON_CreateNumber(r->cert[i]));
        cJSON_AddItemToArray(gs, cJSON_CreateNumber(r->gain[i]));
    }
    cJSON_AddNumberToObject(o, "rank_corr", m2_rank_correlation(r->cert, r->gain, r->stages));
    cJSON_AddNumberToObject(o, "violation_rate", m2_violation_rate(r->cert, r->gain, r->stages));
    cJSON_AddNumberToObject(o, "out_of_region_rate", r->updates ? (double)r->outside / r->updates : 0.0);
    return o;
}

int pw_team_write_summary(m2_stage_ctx *ctx, cJSON *o, m2_err *err) {
    if (!m2_stage_writes(ctx)) { cJSON_Delete(o); return 0; }   /* every rank holds the same numbers */
    char *txt = o ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    char path[1400];
    snprintf(path, sizeof path, "%s/eval.json", ctx->artifacts);
    int rc = txt ? m2_write_file_atomic(path, txt, strlen(txt), err) : m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    free(txt);
    return rc;
}

void pw_team_run_free(pw_team_run *r) {
    m2_teamtr_free(&r->tt);
    free(r->cert);
    free(r->gain);
    free(r->task_J);
    free(r->task_J0);
    r->cert = r->gain = r->task_J = r->task_J0 = NULL;
}
