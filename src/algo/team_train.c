#include "algo/team_train.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "algo/steps.h"
#include "algo/teamtr.h"
#include "algo/train.h"
#include "model/optim.h"

/* Training and scoring ctxs of one model, grown when a batch part needs more tokens. */
struct m2_teamtr_ctx {
    m2_model *m;
    m2_ctx *train, *a, *b;
    int cap;
};

void m2_teamtr_set_team(m2_teamtr *tt, const m2_team *t) {
    tt->n = t->n;
    for (int k = 0; k < t->n && k < M2_TEAM_MAX; k++) {
        tt->model[k] = t->agent[k].model;
        tt->adapter[k] = t->agent[k].adapter;
    }
}

void m2_teamtr_free(m2_teamtr *tt) {
    for (int k = 0; k < M2_TEAM_MAX; k++) {
        struct m2_teamtr_ctx *c = tt->ctx[k];
        if (!c) continue;
        m2_ctx_free(c->train);
        m2_ctx_free(c->a);
        m2_ctx_free(c->b);
        free(c);
        tt->ctx[k] = NULL;
    }
}

/* The ctxs of model m with room for N tokens; grown by doubling (fewer re-creations) but not past
 * limit (> 0: the update's token budget) unless N itself is larger. */
static struct m2_teamtr_ctx *ctx_for(m2_teamtr *tt, m2_model *m, int N, int limit, m2_err *err) {
    int k = 0;
    while (k < M2_TEAM_MAX && tt->ctx[k] && tt->ctx[k]->m != m) k++;
    if (k == M2_TEAM_MAX) { m2_errorf(err, M2_EINVAL, "teamtr: more than %d models", M2_TEAM_MAX); return NULL; }
    if (!tt->ctx[k] && !(tt->ctx[k] = calloc(1, sizeof *tt->ctx[k]))) {
        m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
        return NULL;
    }
    struct m2_teamtr_ctx *c = tt->ctx[k];
    c->m = m;
    if (c->cap >= N && c->train) return c;
    int cap = N > 2 * c->cap ? N : 2 * c->cap;
    if (limit > 0 && cap > limit) cap = N > limit ? N : limit;
    m2_ctx_free(c->train);
    m2_ctx_free(c->a);
    m2_ctx_free(c->b);
    c->train = m2_ctx_create(m, cap, M2_ACTS_KEEP, err);
    c->a = c->train ? m2_ctx_create(m, cap, M2_ACTS_NONE, err) : NULL;
    c->b = c->a ? m2_ctx_create(m, cap, M2_ACTS_NONE, err) : NULL;
    c->cap = c->b ? cap : 0;
    return c->b ? c : NULL;
}

/* One agent's update in progress (its batch and the arrays over its rows). Under MPI pb holds this
 * rank's part of the update batch: the agent's tokens of the samples this rank played. */
typedef struct agent_job {
    int agent;
    m2_adapter *a, *old;
    struct m2_teamtr_ctx *c;  /* NULL while this rank holds no token of the agent */
    m2_dist *dist;
    m2_packed_batch pb;
    /* pb in n_part parts of whole sequences of at most cfg->max_batch_tokens tokens, trained and
     * scored one at a time so the ctxs hold a part, not the batch (one part: pb itself, part NULL).
     * Part p is pb's rows [row[p], row[p] + its N), with part_tok[p] of this agent's token states;
     * the arrays below stay over pb's rows, each part writing its own rows of them. */
    int n_part;
    m2_packed_batch *part;
    int *row, *part_tok;
    int *seq_sample;          /* packed sequence -> sample (its index in the whole batch) */
    float *adv, *logp_old, *logp_ref, *logp_new;
    float *kl;                /* the rows' KL(pi_old || pi_new), D^'s terms */
    float *w0;                /* the last iterate inside the region */
    int n_tok;                /* the agent's token states over every rank: whether it is updated at all */
    int n_mine;               /* ... of which in pb (alone: n_tok) */
} agent_job;

static void job_free(agent_job *j) {
    for (int p = 0; j->part && p < j->n_part; p++) m2_packed_batch_free(&j->part[p]);
    free(j->part);
    free(j->row);
    free(j->part_tok);
    free(j->kl);
    m2_packed_batch_free(&j->pb);
    free(j->seq_sample);
    free(j->adv);
    free(j->logp_old);
    free(j->logp_ref);
    free(j->logp_new);
    free(j->w0);
    memset(j, 0, sizeof *j);
}

static const m2_packed_batch *job_part(const agent_job *j, int p) { return j->part ? &j->part[p] : &j->pb; }

/* Cuts j->pb into parts of whole sequences, in order, each of at most budget tokens (0: no limit)
 * unless one sequence alone is longer; *max_n receives the largest part's tokens. */
static int job_split(agent_job *j, int budget, int *max_n, m2_err *err) {
    const m2_packed_batch *b = &j->pb;
    int *first = malloc((size_t)(b->n_seq + 1) * sizeof *first);   /* part p: sequences [first[p], first[p+1]) */
    if (!first) return m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    int n = 0, cur = 0;
    *max_n = 0;
    for (int s = 0; s < b->n_seq; s++) {
        if (s == 0 || (budget > 0 && cur + b->seq_len[s] > budget)) { first[n++] = s; cur = 0; }
        cur += b->seq_len[s];
        if (cur > *max_n) *max_n = cur;
    }
    first[n] = b->n_seq;
    j->n_part = n;
    j->row = calloc((size_t)(n ? n : 1), sizeof *j->row);
    j->part_tok = calloc((size_t)(n ? n : 1), sizeof *j->part_tok);
    if (n > 1) j->part = calloc((size_t)n, sizeof *j->part);
    int rc = !j->row || !j->part_tok || (n > 1 && !j->part) ? m2_errorf(err, M2_ENOMEM, "teamtr: out of memory") : 0;
    for (int p = 0; p < n && !rc; p++) {
        if (n > 1 && (rc = m2_packed_batch_part(b, first[p], first[p + 1], &j->part[p], err))) break;
        j->row[p] = b->seq_off[first[p]];
        const m2_packed_batch *q = job_part(j, p);
        for (int r = 0; r < q->N; r++) j->part_tok[p] += q->tok_action[r] >= 0;
    }
    free(first);
    return rc;
}

/* Log-probs of adapter a at the action rows of j->pb into logp[N], part by part (scoring ctx). */
static int job_score(agent_job *j, m2_adapter *a, float *logp, m2_err *err) {
    for (int p = 0; p < j->n_part; p++)
        if (j->part_tok[p] > 0 && m2_score_logprobs(j->c->a, a, job_part(j, p), logp + j->row[p], err)) return -1;
    return 0;
}

/* Packs agent k's tokens of the source's kept batch, its advantages (adv_seq[sample], times
 * exp(logfac[sample]) when logfac != NULL), the snapshot and the old / reference log-probs. */
static int job_begin(m2_teamtr *tt, int k, const float *adv_seq, const double *logfac, const m2_teamtr_cfg *cfg,
                     agent_job *j, m2_err *err) {
    memset(j, 0, sizeof *j);
    j->agent = k;
    j->a = tt->adapter[k];
    j->old = tt->old[k];
    j->dist = tt->dist;
    if (!j->a || !j->old) return m2_errorf(err, M2_EINVAL, "teamtr: agent %d has no adapter or snapshot", k + 1);
    if (tt->src.pack(tt->src.ud, k, cfg->max_tokens, &j->pb, &j->seq_sample, err)) return -1;
    int64_t n_tok = 0;
    for (int r = 0; r < j->pb.N; r++) n_tok += j->pb.tok_action[r] >= 0;
    j->n_mine = (int)n_tok;
    if (!m2_dist_alone(j->dist) && m2_dist_sum_i64(j->dist, &n_tok, 1, err)) return -1;
    j->n_tok = (int)n_tok;
    if (j->n_tok == 0) return 0;   /* no token of this agent in the batch (none fitted max_tokens): no update */
    int max_n = 0;
    if (j->n_mine > 0 && job_split(j, cfg->max_batch_tokens, &max_n, err)) return -1;
    if (j->n_mine > 0 && !(j->c = ctx_for(tt, tt->model[k], max_n, cfg->max_batch_tokens, err))) return -1;
    int N = j->pb.N ? j->pb.N : 1;
    j->adv = calloc((size_t)N, sizeof *j->adv);
    j->logp_old = calloc((size_t)N, sizeof *j->logp_old);
    j->logp_new = calloc((size_t)N, sizeof *j->logp_new);
    j->kl = calloc((size_t)N, sizeof *j->kl);
    j->w0 = malloc(j->a->params.n * sizeof *j->w0);
    int with_ref = cfg->kl_init > 0 && tt->init[k];
    if (with_ref) j->logp_ref = calloc((size_t)N, sizeof *j->logp_ref);
    if (!j->adv || !j->logp_old || !j->logp_new || !j->kl || !j->w0 || (with_ref && !j->logp_ref))
        return m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    for (int r = 0; r < j->pb.N; r++) {
        int a = j->pb.tok_action[r];
        if (a < 0) continue;
        int i = j->seq_sample[j->pb.act_seq[a]];
        double lf = logfac ? logfac[i] : 0.0, lim = log(M2_HAPPO_FACTOR_MAX);
        j->adv[r] = adv_seq[i] * (float)exp(lf > lim ? lim : (lf < -lim ? -lim : lf));
    }
    /* a rank without tokens of the agent still steps it (the global gradient) and line-searches */
    if (m2_adapter_copy_weights(j->old, j->a, err)) return -1;
    memcpy(j->w0, j->a->params.w, j->a->params.n * sizeof *j->w0);
    if (j->n_mine == 0) return 0;
    if (job_score(j, j->a, j->logp_old, err)) return -1;
    if (with_ref && job_score(j, tt->init[k], j->logp_ref, err)) return -1;
    return 0;
}

/* One PPO-clip epoch (one optimiser step on the whole batch: under MPI this rank's gradient of its
 * tokens' mean, weighted by its share of the tokens and summed over the ranks, algo/train.h). The
 * rank's gradient is summed over its parts in order, each part's gradient of its own mean weighted
 * by its share of the rank's tokens; the one all-reduce follows the last part. */
static int job_epoch(agent_job *j, const m2_teamtr_cfg *cfg, m2_teamtr_update *u, m2_err *err) {
    if (j->n_tok == 0) return 0;
    m2_params_zero_grad(&j->a->params);
    double means[2] = {0, 0};
    for (int p = 0; p < j->n_part && j->n_mine > 0; p++) {
        if (j->part_tok[p] == 0) continue;
        double w = (double)j->part_tok[p] / j->n_mine;   /* one part: exactly 1, the batch's own step */
        m2_ppo_cfg pc = {.eps_clip = cfg->clip, .kl_coef = cfg->kl_init, .grad_scale = w};
        m2_step_stats st = {0};
        int r = j->row[p];
        if (m2_ppo_step(j->c->train, j->a, job_part(j, p), j->adv + r, j->logp_old + r,
                        j->logp_ref ? j->logp_ref + r : NULL, &pc, 1, &st, err))
            return -1;
        means[0] += w * st.loss;
        means[1] += w * st.clip_frac;
    }
    m2_params *g = &j->a->params;
    if (m2_dp_reduce(j->dist, &g, 1, j->n_mine, means, 2, NULL, 0, NULL, err)) return -1;
    m2_clip_grads(&g, 1, cfg->grad_clip);
    m2_adamw opt = {.beta1 = cfg->beta1, .beta2 = cfg->beta2, .eps = cfg->eps, .weight_decay = cfg->weight_decay};
    if (m2_adamw_step(&j->a->params, &opt, cfg->lr, err)) return -1;
    u->loss = means[0];
    u->clip_frac = means[1];
    return 0;
}

/* A mean over this rank's n_mine token states made the mean over every rank's (alone: as it is). */
static int job_all_mean(agent_job *j, double *v, m2_err *err) {
    return m2_dp_reduce(j->dist, NULL, 0, j->n_mine, v, 1, NULL, 0, NULL, err);
}

/* D^ over every rank's tokens: the same number, so the same region decision, on every rank */
static int job_divergence(agent_job *j, double *D, m2_err *err) {
    *D = 0;
    if (j->n_tok == 0) return 0;
    if (j->n_mine > 0) {
        for (int p = 0; p < j->n_part; p++)
            if (j->part_tok[p] > 0 && m2_token_kl_rows(j->c->a, j->c->b, j->old, j->a, job_part(j, p), j->kl + j->row[p], err))
                return -1;
        *D = m2_token_divergence_mean(j->kl, j->pb.tok_mask, j->pb.N);   /* over the rows in order, as one part */
    }
    return job_all_mean(j, D, err);
}

/* w = w0 + f (w1 - w0) for the job's adapter; w1 is the iterate before the line search. */
static void job_scale(agent_job *j, const float *w1, double f) {
    if (!j->w0) return;   /* a job without tokens never moved its adapter */
    float *w = j->a->params.w;
    for (size_t i = 0; i < j->a->params.n; i++) w[i] = (float)(j->w0[i] + f * ((double)w1[i] - j->w0[i]));
}

static int job_finish(agent_job *j, m2_teamtr_update *u, m2_err *err) {
    u->agent = j->agent;
    u->n_tokens = j->n_tok;
    if (j->n_tok == 0) return 0;
    if (job_divergence(j, &u->D, err)) return -1;
    u->L = 0;
    if (j->n_mine > 0) {
        if (job_score(j, j->a, j->logp_new, err)) return -1;
        u->L = m2_surrogate_gain(j->logp_new, j->logp_old, j->adv, j->pb.tok_mask, j->pb.N);
    }
    return job_all_mean(j, &u->L, err);
}

/* Per sample: the sum over agent j's tokens of log pi_new - log pi_old (HAPPO's factor); under MPI
 * over the samples this rank played, the only ones whose tokens it trains on. */
static void job_log_ratio(const agent_job *j, double *logfac) {
    for (int r = 0; r < j->pb.N; r++) {
        int a = j->pb.tok_action[r];
        if (a >= 0) logfac[j->seq_sample[j->pb.act_seq[a]]] += (double)j->logp_new[r] - j->logp_old[r];
    }
}

/* Epochs of one agent with its own trust region (FRESH, STALE, STALE_HAPPO). */
static int update_one(agent_job *j, const m2_teamtr_cfg *cfg, m2_teamtr_update *u, m2_err *err) {
    int region = isfinite(cfg->delta);
    float *w1 = malloc(j->a->params.n * sizeof *w1);
    if (!w1) return m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    int rc = 0;
    for (int e = 0; e < cfg->epochs && j->n_tok > 0 && !rc; e++) {
        if ((rc = job_epoch(j, cfg, u, err))) break;
        if (!region) continue;
        double D;
        if ((rc = job_divergence(j, &D, err))) break;
        if (D > u->D_raw) u->D_raw = D;
        if (D <= cfg->delta) { memcpy(j->w0, j->a->params.w, j->a->params.n * sizeof *j->w0); continue; }
        u->out_of_region = 1;
        memcpy(w1, j->a->params.w, j->a->params.n * sizeof *w1);
        int inside = 0;
        double f = 1.0;
        for (int b = 0; b < cfg->backtrack && !inside && !rc; b++) {
            f *= 0.5;
            job_scale(j, w1, f);
            u->backtracks++;
            if ((rc = job_divergence(j, &D, err))) break;
            inside = D <= cfg->delta;
        }
        if (!inside) { job_scale(j, w1, 0.0); u->rolled_back = 1; }
        break;   /* the region's edge: no further epochs */
    }
    if (!region && !rc) rc = job_divergence(j, &u->D_raw, err);
    free(w1);
    return rc ? rc : job_finish(j, u, err);
}

/* Every agent's epochs from the same start, then one joint region over all their tokens. */
static int update_joint(agent_job *jobs, int n, const m2_teamtr_cfg *cfg, m2_teamtr_update *us, m2_err *err) {
    for (int k = 0; k < n; k++)
        for (int e = 0; e < cfg->epochs; e++)
            if (job_epoch(&jobs[k], cfg, &us[k], err)) return -1;
    /* D^ of the team: the token-weighted mean of the agents' D^ (the mean over all token states) */
    double num = 0, den = 0;
    for (int k = 0; k < n; k++) {
        double D;
        if (job_divergence(&jobs[k], &D, err)) return -1;
        num += D * jobs[k].n_tok;
        den += jobs[k].n_tok;
    }
    double Dt = den > 0 ? num / den : 0;
    for (int k = 0; k < n; k++) us[k].D_raw = Dt;
    if (isfinite(cfg->delta) && Dt > cfg->delta) {
        float **w1 = calloc((size_t)n, sizeof *w1);
        if (!w1) return m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
        int rc = 0, inside = 0;
        for (int k = 0; k < n && !rc; k++) {
            us[k].out_of_region = 1;
            if (!(w1[k] = malloc(jobs[k].a->params.n * sizeof(float)))) rc = m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
            else memcpy(w1[k], jobs[k].a->params.w, jobs[k].a->params.n * sizeof(float));
        }
        double f = 1.0;
        for (int b = 0; b < cfg->backtrack && !inside && !rc; b++) {
            f *= 0.5;
            num = 0;
            for (int k = 0; k < n && !rc; k++) {
                double D;
                job_scale(&jobs[k], w1[k], f);
                us[k].backtracks++;
                rc = job_divergence(&jobs[k], &D, err);
                num += D * jobs[k].n_tok;
            }
            inside = !rc && num / den <= cfg->delta;
        }
        for (int k = 0; k < n && !rc && !inside; k++) { job_scale(&jobs[k], w1[k], 0.0); us[k].rolled_back = 1; }
        for (int k = 0; k < n; k++) free(w1[k]);
        free(w1);
        if (rc) return rc;
    }
    for (int k = 0; k < n; k++)
        if (job_finish(&jobs[k], &us[k], err)) return -1;
    return 0;
}

/* Sample ids of the batch played at position j of a stage: distinct across positions and stages. */
static uint64_t batch_id0(uint64_t stage_seed, int j) { return stage_seed * 0x100000001B3ull + (uint64_t)j * 0x10000u; }

int m2_teamtr_play(const m2_team_source *src, m2_dist *d, const int *tasks, int n_tasks, int G, uint64_t id0,
                   const m2_team_gen *g, float *R, m2_err *err) {
    int64_t n = (int64_t)n_tasks * G, lo, cnt;
    m2_dist_shard(n, d ? d->rank : 0, d ? d->world : 1, &lo, &cnt);
    if (src->play(src->ud, tasks, n_tasks, G, id0, (int)lo, (int)cnt, g, R, err)) return -1;
    if (m2_dist_alone(d)) return 0;
    /* every rank's rewards: the blocks concatenated in rank order are the samples in order */
    size_t *lens = malloc((size_t)d->world * sizeof *lens);
    char *all = NULL;
    int rc = lens ? m2_dist_allgather(d, R + lo, (size_t)cnt * sizeof *R, &all, lens, err)
                  : m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    size_t tot = 0;
    for (int r = 0; !rc && r < d->world; r++) tot += lens[r];
    if (!rc && tot != (size_t)n * sizeof *R)
        rc = m2_errorf(err, M2_EINVAL, "teamtr: %zu bytes of rewards gathered for %lld samples", tot, (long long)n);
    if (!rc) memcpy(R, all, tot);
    free(all);
    free(lens);
    return rc;
}

int m2_teamtr_success(const m2_team_source *src, m2_dist *d, int n_tasks, int samples, const m2_team_gen *g,
                      double *mean, double *per_task, m2_err *err) {
    if (samples < 1) samples = 1;
    int total = n_tasks * samples;
    int *tasks = malloc((size_t)(n_tasks > 0 ? n_tasks : 1) * sizeof *tasks);
    float *R = malloc((size_t)(total > 0 ? total : 1) * sizeof *R);
    int rc = !tasks || !R ? m2_errorf(err, M2_ENOMEM, "team: out of memory") : 0;
    for (int i = 0; i < n_tasks && !rc; i++) tasks[i] = i;
    if (!rc && n_tasks > 0) rc = m2_teamtr_play(src, d, tasks, n_tasks, samples, 0, g, R, err);
    double sum = 0;
    for (int t = 0; t < n_tasks && !rc; t++) {
        double st = 0;
        for (int k = 0; k < samples; k++) st += R[t * samples + k];
        sum += st;
        if (per_task) per_task[t] = st / samples;
    }
    *mean = total > 0 && !rc ? sum / total : 0;
    free(tasks);
    free(R);
    return rc;
}

/* G rollouts of each task from the team as it is now (this rank's block kept by the source);
 * every sample's reward into R, advantages into adv. */
static int play_batch(m2_teamtr *tt, const int *tasks, int n_tasks, uint64_t stage_seed, int j, const m2_teamtr_cfg *cfg,
                      float *adv, float *R, m2_teamtr_stage_stats *st, m2_err *err) {
    int G = cfg->group, n = n_tasks * G;
    m2_team_gen g = cfg->gen;
    g.seed = cfg->gen.seed ^ batch_id0(stage_seed, j);
    if (m2_teamtr_play(&tt->src, tt->dist, tasks, n_tasks, G, batch_id0(stage_seed, j), &g, R, err)) return -1;
    st->rollouts += n;
    m2_group_advantages(R, n_tasks, G, cfg->adv_eps, cfg->a_max, adv);
    return 0;
}

static double mean_of(const float *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return n > 0 ? s / n : 0;
}

int m2_teamtr_stage(m2_teamtr *tt, const int *tasks, int n_tasks, const int *sigma, int n_sigma, uint64_t stage_seed,
                    const m2_teamtr_cfg *cfg, m2_teamtr_stage_stats *st, m2_err *err) {
    memset(st, 0, sizeof *st);
    int n_ag = tt->n, G = cfg->group, n = n_tasks * G;
    if (G < 1 || n_tasks < 1) return m2_errorf(err, M2_EINVAL, "teamtr: %d tasks x %d rollouts", n_tasks, G);
    if (n_sigma < 1 || n_sigma > n_ag) return m2_errorf(err, M2_EINVAL, "teamtr: %d agents to update of %d", n_sigma, n_ag);
    for (int j = 0; j < n_sigma; j++)
        if (sigma[j] < 0 || sigma[j] >= n_ag) return m2_errorf(err, M2_EINVAL, "teamtr: order names agent %d of %d", sigma[j], n_ag);
    float *adv = calloc((size_t)n, sizeof *adv), *R = calloc((size_t)n, sizeof *R);
    double *logfac = cfg->mode == M2_TT_STALE_HAPPO ? calloc((size_t)n, sizeof *logfac) : NULL;
    agent_job *jobs = calloc((size_t)n_ag, sizeof *jobs);
    int rc = 0, played = 0;
    if (!adv || !R || !jobs || (cfg->mode == M2_TT_STALE_HAPPO && !logfac)) {
        rc = m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
        goto out;
    }
    if (cfg->mode != M2_TT_FRESH) {   /* the stage's one set of rollouts */
        if ((rc = play_batch(tt, tasks, n_tasks, stage_seed, 0, cfg, adv, R, st, err))) goto out;
        played = 1;
        st->reward_mean = mean_of(R, n);
    }
    if (cfg->mode == M2_TT_JOINT) {
        for (int j = 0; j < n_sigma && !rc; j++) rc = job_begin(tt, sigma[j], adv, NULL, cfg, &jobs[j], err);
        if (!rc) rc = update_joint(jobs, n_sigma, cfg, st->u, err);
        for (int j = 0; j < n_sigma; j++) st->u[j].reward_mean = st->reward_mean;
        st->n = n_sigma;
        goto out;
    }
    for (int j = 0; j < n_sigma && !rc; j++) {
        int k = sigma[j];
        if (cfg->mode == M2_TT_FRESH) {   /* fresh rollouts of the team as it is after the earlier updates */
            if ((rc = play_batch(tt, tasks, n_tasks, stage_seed, j, cfg, adv, R, st, err))) break;
            if (!played) st->reward_mean = mean_of(R, n);
            played = 1;
        }
        m2_teamtr_update *u = &st->u[j];
        memset(u, 0, sizeof *u);
        u->reward_mean = mean_of(R, n);
        if ((rc = job_begin(tt, k, adv, logfac, cfg, &jobs[0], err))) break;
        if ((rc = update_one(&jobs[0], cfg, u, err))) break;
        if (logfac) job_log_ratio(&jobs[0], logfac);
        job_free(&jobs[0]);
        st->n = j + 1;
    }
out:
    for (int k = 0; k < n_ag && jobs; k++) job_free(&jobs[k]);
    free(adv);
    free(R);
    free(logfac);
    free(jobs);
    return rc;
}
