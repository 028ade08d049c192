#include "algo/train.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void m2_train_state_init(m2_train_state *s) {
    memset(s, 0, sizeof *s);
    s->best_val = INFINITY;
}

/* The one optimiser update of a parameter group (m2_opt_opts), for every loop: clip, the schedule's
 * rate at the loop's 0-based step, AdamW. *gnorm (may be NULL) receives the norm before clipping,
 * *lr_out (may be NULL) the rate. */
static int group_update(m2_params *p, const m2_opt_opts *o, int64_t step, float *gnorm, float *lr_out,
                        m2_err *err) {
    m2_params *g[1] = {p};
    float norm = 0.f;
    if (o->grad_clip > 0) norm = m2_clip_grads(g, 1, o->grad_clip);
    else if (gnorm) norm = m2_grad_norm(g, 1);
    if (gnorm) *gnorm = norm;
    m2_lr_schedule sched = {.lr = o->lr, .min_lr = o->min_lr, .warmup = o->warmup, .total = o->total,
                            .decay = o->decay};
    float lr = m2_lr_at(&sched, (long)step);
    if (lr_out) *lr_out = lr;
    m2_adamw a = {.beta1 = o->beta1 > 0 ? o->beta1 : M2_ADAMW_BETA1,
                  .beta2 = o->beta2 > 0 ? o->beta2 : M2_ADAMW_BETA2,
                  .eps = o->eps > 0 ? o->eps : M2_ADAMW_EPS,
                  .weight_decay = o->weight_decay};
    return m2_adamw_step(p, &a, lr, err);
}

static int log_n(const m2_train_hooks *h, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    return (h && h->log) ? h->log(h->ud, step, names, v, n, err) : 0;
}

static int after(const m2_train_hooks *h, int64_t step, m2_err *err) {
    return (h && h->after_step) ? h->after_step(h->ud, step, err) : 0;
}

/* ---- data parallel (dist/dist.h; the rule in train.h at m2_train_hooks.dist) ---- */

static m2_dist *dist_of(const m2_train_hooks *h) { return h ? h->dist : NULL; }

static int call_epoch_end(const m2_train_hooks *h, int64_t epochs_done, int64_t step, m2_err *err) {
    return h && h->epoch_end ? h->epoch_end(h->ud, epochs_done, step, err) : 0;
}

/* the most per-step numbers one reduction carries */
#define DP_MAX_STATS 16

int m2_dp_reduce(m2_dist *d, m2_params *const *g, int k, double n_local, double *means, int n_means,
                 double *sums, int n_sums, double *n_total, m2_err *err) {
    if (n_total) *n_total = n_local;
    if (m2_dist_alone(d)) return 0;
    if (n_means + n_sums + 1 > DP_MAX_STATS + 1) return m2_errorf(err, M2_EINVAL, "data parallel: too many step statistics");
    double st[DP_MAX_STATS + 1];
    st[0] = n_local;
    for (int i = 0; i < n_means; i++) st[1 + i] = means[i] * n_local;
    for (int i = 0; i < n_sums; i++) st[1 + n_means + i] = sums[i];
    if (m2_dist_sum_f64(d, st, (size_t)(1 + n_means + n_sums), err)) return -1;
    double N = st[0];
    for (int i = 0; i < n_means; i++) means[i] = N > 0 ? st[1 + i] / N : 0;
    for (int i = 0; i < n_sums; i++) sums[i] = st[1 + n_means + i];
    if (n_total) *n_total = N;
    float share = N > 0 ? (float)(n_local / N) : 0.f;
    size_t tot = 0;
    int with = 0;
    for (int j = 0; j < k; j++) if (g[j]->g) { tot += g[j]->n; with++; }
    if (with == 0) return 0;   /* numbers only (k = 0) */
    if (with == 1) {   /* one arena: reduce it in place */
        for (int j = 0; j < k; j++) if (g[j]->g) {
            for (size_t i = 0; i < g[j]->n; i++) g[j]->g[i] *= share;
            return m2_dist_sum_f32(d, g[j]->g, g[j]->n, err);
        }
    }
    float *pk = malloc((tot ? tot : 1) * sizeof *pk);
    if (!pk) return m2_errorf(err, M2_ENOMEM, "data parallel: out of memory for %zu gradients", tot);
    size_t off = 0;
    for (int j = 0; j < k; j++) if (g[j]->g) {
        for (size_t i = 0; i < g[j]->n; i++) pk[off + i] = g[j]->g[i] * share;
        off += g[j]->n;
    }
    int rc = m2_dist_sum_f32(d, pk, tot, err);
    off = 0;
    for (int j = 0; !rc && j < k; j++) if (g[j]->g) {
        memcpy(g[j]->g, pk + off, g[j]->n * sizeof *pk);
        off += g[j]->n;
    }
    free(pk);
    return rc;
}

/* The step statistics one reduction averages (the fields log_step reports). The spreads travel
 * as second moments (std^2 + mean^2), whose action-weighted mean over the ranks is the global
 * batch's, so the global spread is exact, not a mean of per-rank spreads. */
#define DP_STEP_STATS 13
static void stats_out(const m2_step_stats *s, double *v) {
    const float f[DP_STEP_STATS - 2] = {s->loss, s->loss_q, s->loss_v, s->loss_actor, s->loss_anchor, s->kl,
                                        s->q_mean, s->v_mean, s->adv_mean, s->w_mean, s->clip_frac};
    for (int i = 0; i < DP_STEP_STATS - 2; i++) v[i] = f[i];
    v[DP_STEP_STATS - 2] = (double)s->adv_std * s->adv_std + (double)s->adv_mean * s->adv_mean;
    v[DP_STEP_STATS - 1] = (double)s->w_std * s->w_std + (double)s->w_mean * s->w_mean;
}
static void stats_in(m2_step_stats *s, const double *v) {
    float *f[DP_STEP_STATS - 2] = {&s->loss, &s->loss_q, &s->loss_v, &s->loss_actor, &s->loss_anchor, &s->kl,
                                   &s->q_mean, &s->v_mean, &s->adv_mean, &s->w_mean, &s->clip_frac};
    for (int i = 0; i < DP_STEP_STATS - 2; i++) *f[i] = (float)v[i];
    double va = v[DP_STEP_STATS - 2] - v[8] * v[8], vw = v[DP_STEP_STATS - 1] - v[9] * v[9];
    s->adv_std = (float)(va > 0 ? sqrt(va) : 0);
    s->w_std = (float)(vw > 0 ? sqrt(vw) : 0);
}

/* The global mean of every statistic of a System 2 step (ss) and the global gradient of the
 * adapter and both heads. */
static int dp_step_stats(m2_dist *d, m2_adapter *a, m2_head *q, m2_head *v, m2_step_stats *ss, double *n_total,
                         m2_err *err) {
    if (m2_dist_alone(d)) { if (n_total) *n_total = ss->n_actions; return 0; }
    m2_params *g[3] = {&a->params, &q->params, &v->params};
    double st[DP_STEP_STATS];
    stats_out(ss, st);
    if (m2_dp_reduce(d, g, 3, ss->n_actions, st, DP_STEP_STATS, NULL, 0, n_total, err)) return -1;
    stats_in(ss, st);
    return 0;
}

/* m2_batch_sum over the ranks (steps.h) */
static int dp_sum(void *ud, double *v, int n, m2_err *err) { return m2_dist_sum_f64(ud, v, (size_t)n, err); }

/* Epochs completed by the cursor. */
static int64_t epochs_done(const m2_train_state *st, int n) { return st->epoch + (st->pos >= n ? 1 : 0); }

/* ---- the one loop over a set's batches (pre-training, SFT, offline RL) ----
 * Per batch the stage's step zeroes its groups' grads, accumulates the batch's gradient into them
 * and updates each group with group_update at the step's index; then the cursor moves, the stage's
 * done() logs (and validates), and the after_step hook checkpoints with the state advanced. */
typedef struct batch_fn {
    void *ud;
    int (*step)(void *ud, const m2_packed_batch *pb, int64_t step, m2_err *err);
    int (*done)(void *ud, int64_t step, int epoch_end, m2_err *err);
} batch_fn;

/* Runs until `epochs` epochs are done, st->step reaches max_steps (<= 0: no cap) or early stopping
 * set st->stopped. The batches continue from the cursor (st->epoch, st->pos). */
static int batch_loop(const m2_seqset *set, const int *idx, int n, int batch, uint64_t seed, int64_t epochs,
                      int64_t max_steps, m2_train_state *st, const batch_fn *f, const m2_train_hooks *h,
                      m2_err *err) {
    m2_batch_iter it;
    if (m2_batch_iter_init(&it, idx, n, batch, seed, err)) return -1;
    if (m2_batch_iter_seek(&it, st->epoch, st->pos, err)) { m2_batch_iter_free(&it); return -1; }
    int rc = -1;
    while (!st->stopped && epochs_done(st, n) < epochs && (max_steps <= 0 || st->step < max_steps)) {
        m2_packed_batch pb;
        int epoch_end = 0;
        int64_t lo, cnt;   /* this rank's block of the global batch (all of it alone) */
        m2_dist *d = dist_of(h);
        m2_dist_shard(m2_batch_iter_peek(&it), d ? d->rank : 0, d ? d->world : 1, &lo, &cnt);
        if (m2_batch_iter_next_range(&it, set, (int)lo, (int)cnt, &pb, &epoch_end, err)) goto out;
        int r = f->step(f->ud, &pb, st->step, err);
        m2_packed_batch_free(&pb);
        if (r) goto out;
        st->step++;
        st->epoch = it.epoch;
        st->pos = it.pos;
        if (f->done(f->ud, st->step, epoch_end, err) || after(h, st->step, err)) goto out;
    }
    rc = 0;
out:
    m2_batch_iter_free(&it);
    return rc;
}

/* ---- Stage 0 LM ---- */

typedef struct lm_loop {
    m2_model *m;
    m2_ctx *c;
    m2_adapter *a;
    const m2_lm_opts *o;
    const m2_train_hooks *h;
    double loss, lr, gnorm, tokens;   /* of the last step, for the log */
} lm_loop;

static m2_params *lm_group(const lm_loop *l) { return l->a ? &l->a->params : &l->m->base; }

static int lm_step_fn(void *ud, const m2_packed_batch *pb, int64_t step, m2_err *err) {
    lm_loop *l = ud;
    m2_params *p = lm_group(l);
    m2_params_zero_grad(p);
    m2_step_stats ss = {0};
    if (m2_lm_step(l->c, l->a, pb, 1, &ss, err)) return -1;   /* a rank's block may be empty */
    double mean[1] = {ss.loss}, sum[1] = {pb->N};
    m2_dist *d = dist_of(l->h);
    if (m2_dp_reduce(d, &p, 1, ss.n_tokens, mean, 1, sum, 1, NULL, err)) return -1;
    float gn, lr;
    if (group_update(p, &l->o->opt, step, &gn, &lr, err)) return -1;
    l->loss = mean[0];
    l->lr = lr;
    l->gnorm = gn;
    l->tokens = sum[0];
    return 0;
}

static int lm_done(void *ud, int64_t step, int epoch_end, m2_err *err) {
    (void)epoch_end;
    lm_loop *l = ud;
    const char *pre = l->o->prefix ? l->o->prefix : "lm";
    static const char *keys[] = {"loss", "lr", "grad_norm", "tokens"};
    char buf[4][96];
    const char *names[4];
    for (int i = 0; i < 4; i++) {
        snprintf(buf[i], sizeof buf[i], "%s/%s", pre, keys[i]);
        names[i] = buf[i];
    }
    double v[4] = {l->loss, l->lr, l->gnorm, l->tokens};
    return log_n(l->h, step, names, v, 4, err);
}

int m2_train_lm(m2_model *m, m2_ctx *c, m2_adapter *a, const m2_seqset *set, const int *idx, int n,
                const m2_lm_opts *o, m2_train_state *st, const m2_train_hooks *h, m2_err *err) {
    if (o->steps <= 0) return 0;   /* batch_loop reads max_steps <= 0 as "no cap" */
    lm_loop l = {.m = m, .c = c, .a = a, .o = o, .h = h};
    batch_fn f = {.ud = &l, .step = lm_step_fn, .done = lm_done};
    return batch_loop(set, idx, n, o->batch, o->seed, INT64_MAX, o->steps, st, &f, h, err);
}

/* ---- SFT ---- */

int m2_eval_nll(m2_ctx *c, m2_adapter *a, const m2_seqset *set, const int *idx, int n, int batch,
                m2_reduce red, double *loss, m2_err *err) {
    double s = 0;
    long na = 0;
    for (int b = 0; b < n; b += batch) {
        int k = n - b < batch ? n - b : batch;
        m2_packed *tmp = malloc((size_t)k * sizeof *tmp);
        if (!tmp) return m2_errorf(err, M2_ENOMEM, "eval: out of memory");
        for (int i = 0; i < k; i++) tmp[i] = set->seq[idx[b + i]];
        m2_packed_batch pb;
        int rc = m2_packed_batch_build(tmp, k, &pb, err);
        free(tmp);
        if (rc) return -1;
        m2_step_stats st;
        rc = m2_sft_step(c, a, &pb, red, 0, &st, err);
        if (!rc) { s += (double)st.loss * st.n_actions; na += st.n_actions; }
        m2_packed_batch_free(&pb);
        if (rc) return -1;
    }
    *loss = na ? s / na : 0;
    return 0;
}

static int validate(m2_ctx *cval, m2_adapter *a, const m2_seqset *set, const int *val, int n_val,
                    const m2_sft_opts *o, m2_train_state *st, float *best_w, const m2_train_hooks *h,
                    m2_err *err) {
    double vl;
    if (m2_eval_nll(cval, a, set, val, n_val, o->batch, o->reduce, &vl, err)) return -1;
    double need = fmax(o->min_delta, o->min_rel_improve * (isfinite(st->best_val) ? fabs(st->best_val) : 0));
    if (!isfinite(st->best_val) || st->best_val - vl > need) {
        st->best_val = vl;
        st->bad_evals = 0;
        if (best_w) memcpy(best_w, a->params.w, a->params.n * sizeof(float));
    } else {
        st->bad_evals++;
        if (o->patience > 0 && st->bad_evals >= o->patience) {
            st->stopped = 1;
            if (best_w) memcpy(a->params.w, best_w, a->params.n * sizeof(float));
        }
    }
    char n1[96], n2[96];
    snprintf(n1, sizeof n1, "%s/val_loss", o->prefix ? o->prefix : "sft");
    snprintf(n2, sizeof n2, "%s/best_val_loss", o->prefix ? o->prefix : "sft");
    const char *names[2] = {n1, n2};
    double v[2] = {vl, st->best_val};
    return log_n(h, st->step, names, v, 2, err);
}

typedef struct sft_loop {
    m2_ctx *c, *cval;
    m2_adapter *a;
    const m2_seqset *set;
    const int *val;
    int n_val;
    const m2_sft_opts *o;
    m2_train_state *st;
    float *best_w;
    const m2_train_hooks *h;
    char loss_name[96];
    double loss;   /* of the last step */
} sft_loop;

static int sft_step_fn(void *ud, const m2_packed_batch *pb, int64_t step, m2_err *err) {
    sft_loop *l = ud;
    m2_params_zero_grad(&l->a->params);
    m2_step_stats ss = {0};
    if (m2_sft_step(l->c, l->a, pb, l->o->reduce, 1, &ss, err)) return -1;   /* a rank's block may be empty */
    double mean[1] = {ss.loss};
    m2_params *g[1] = {&l->a->params};
    m2_dist *d = dist_of(l->h);
    if (m2_dp_reduce(d, g, 1, ss.n_actions, mean, 1, NULL, 0, NULL, err)) return -1;
    if (group_update(&l->a->params, &l->o->opt, step, NULL, NULL, err)) return -1;
    l->loss = mean[0];
    return 0;
}

static int sft_done(void *ud, int64_t step, int epoch_end, m2_err *err) {
    sft_loop *l = ud;
    const char *names[1] = {l->loss_name};
    double v[1] = {l->loss};
    if (log_n(l->h, step, names, v, 1, err)) return -1;
    int do_eval = l->n_val > 0 && (epoch_end || (l->o->eval_every > 0 && step % l->o->eval_every == 0));
    return do_eval ? validate(l->cval ? l->cval : l->c, l->a, l->set, l->val, l->n_val, l->o, l->st, l->best_w, l->h, err) : 0;
}

int m2_train_sft(m2_ctx *c, m2_ctx *cval, m2_adapter *a, const m2_seqset *set, const int *train,
                 int n_train, const int *val, int n_val, const m2_sft_opts *o, m2_train_state *st,
                 float *best_w, const m2_train_hooks *h, m2_err *err) {
    sft_loop l = {.c = c, .cval = cval, .a = a, .set = set, .val = val, .n_val = n_val, .o = o, .st = st,
                  .best_w = best_w, .h = h};
    snprintf(l.loss_name, sizeof l.loss_name, "%s/loss", o->prefix ? o->prefix : "sft");
    batch_fn f = {.ud = &l, .step = sft_step_fn, .done = sft_done};
    return batch_loop(set, train, n_train, o->batch, o->seed, o->epochs, o->max_steps, st, &f, h, err);
}

/* ---- offline ---- */

static void zero_grads(m2_adapter *a, m2_head *q, m2_head *v) {
    m2_params_zero_grad(&a->params);
    m2_params_zero_grad(&q->params);
    m2_params_zero_grad(&v->params);
}

static int update(m2_adapter *a, m2_head *q, m2_head *v, int train_actor, int train_critic,
                  const m2_opt_opts *ao, const m2_opt_opts *co, float polyak, int64_t step, m2_err *err) {
    if (train_actor && group_update(&a->params, ao, step, NULL, NULL, err)) return -1;
    if (train_critic) {
        if (group_update(&q->params, co, step, NULL, NULL, err) || group_update(&v->params, co, step, NULL, NULL, err))
            return -1;
        m2_head_polyak(q, polyak);
        m2_head_polyak(v, polyak);
    }
    return 0;
}

static int log_step(const m2_train_hooks *h, const char *prefix, int64_t step, const m2_step_stats *s,
                    int online, m2_err *err) {
    static const char *keys[] = {"loss", "q_loss", "v_loss", "actor_loss", "anchor_loss", "kl",
                                 "q_mean", "v_mean", "adv_mean", "w_mean", "clip_frac", "adv_std", "w_std"};
    enum { N_KEYS = sizeof keys / sizeof keys[0] };
    double v[N_KEYS] = {s->loss, s->loss_q, s->loss_v, s->loss_actor, s->loss_anchor, s->kl,
                        s->q_mean, s->v_mean, s->adv_mean, s->w_mean, s->clip_frac, s->adv_std, s->w_std};
    char buf[N_KEYS][96];
    const char *names[N_KEYS];
    int n = 0;
    for (int i = 0; i < N_KEYS; i++) {
        if (online && i == 4) continue;          /* no anchor online */
        if (!online && i == 5) continue;         /* no KL offline */
        snprintf(buf[n], sizeof buf[n], "%s/%s", prefix, keys[i]);
        names[n] = buf[n];
        v[n] = v[i];
        n++;
    }
    return log_n(h, step, names, v, n, err);
}

typedef struct offline_loop {
    m2_model *m;
    m2_ctx *c;
    m2_adapter *a;
    m2_head *q, *v;
    const m2_offline_opts *o;
    m2_rng *rng;
    const m2_train_hooks *h;
    m2_step_stats ss;   /* of the last step */
} offline_loop;

static int offline_step_fn(void *ud, const m2_packed_batch *pb, int64_t step, m2_err *err) {
    offline_loop *l = ud;
    const m2_offline_opts *o = l->o;
    zero_grads(l->a, l->q, l->v);
    memset(&l->ss, 0, sizeof l->ss);
    m2_dist *d = dist_of(l->h);
    m2_offline_cfg sc = o->step;
    if (!m2_dist_alone(d)) sc.global = (m2_batch_sum){.ud = d, .sum = dp_sum};
    if (m2_offline_step(l->m, l->c, l->a, l->q, l->v, pb, &sc, l->rng, &l->ss, err)) return -1;   /* may be empty */
    if (dp_step_stats(d, l->a, l->q, l->v, &l->ss, NULL, err)) return -1;
    return update(l->a, l->q, l->v, o->step.train_actor, o->step.train_critic, &o->actor, &o->critic, o->polyak,
                  step, err);
}

static int offline_done(void *ud, int64_t step, int epoch_end, m2_err *err) {
    (void)epoch_end;
    offline_loop *l = ud;
    return log_step(l->h, "sys2", step, &l->ss, 0, err);
}

int m2_train_offline(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, m2_head *v,
                     const m2_seqset *set, const int *idx, int n, const m2_offline_opts *o,
                     m2_train_state *st, m2_rng *rng, const m2_train_hooks *h, m2_err *err) {
    offline_loop l = {.m = m, .c = c, .a = a, .q = q, .v = v, .o = o, .rng = rng, .h = h};
    batch_fn f = {.ud = &l, .step = offline_step_fn, .done = offline_done};
    return batch_loop(set, idx, n, o->batch, o->seed, o->epochs, o->max_steps, st, &f, h, err);
}

/* ---- online ---- */

/* One update on a batch sampled from the buffer; segments the packer rejects are skipped. Each
 * packed segment is keyed by its position among the k sampled (its dropout masks: data/pack.h), so
 * a rank's block gets the masks one process gives it. An update that does not happen (every
 * segment skipped) leaves the dropout stream as it was. */
static int online_update(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                         m2_head *q, m2_head *v, m2_replay *buf, const m2_tok_iface *tok,
                         const m2_online_opts *o, int64_t step, m2_step_stats *ss, int *did, m2_dist *d,
                         m2_err *err) {
    *did = 0;
    int k = o->batch;
    int *idx = malloc((size_t)k * sizeof *idx), *key = malloc((size_t)k * sizeof *key);
    m2_packed *ps = calloc((size_t)k, sizeof *ps);
    int np = 0, rc = -1;
    m2_packed_batch pb = {0};   /* no sequences until built */
    if (!idx || !key || !ps) { m2_errorf(err, M2_ENOMEM, "online: out of memory"); goto out; }
    if (m2_replay_sample(buf, k, idx, err) < 0) goto out;
    /* every rank holds the same buffer and draws the same k items; each packs its block of them */
    int64_t lo, cnt;
    m2_dist_shard(k, d ? d->rank : 0, d ? d->world : 1, &lo, &cnt);
    for (int i = (int)lo; i < lo + cnt; i++) {
        m2_err e2 = {0};
        if (m2_pack_traj(tok, &m2_replay_at(buf, idx[i])->seg, o->max_tokens, &ps[np], &e2)) {
            if (e2.code == M2_ESHAPE) continue;
            if (err) *err = e2;
            goto out;
        }
        key[np++] = i;
    }
    int alone = m2_dist_alone(d);
    if (alone && np == 0) { rc = 0; goto out; }
    if (np > 0) {
        if (m2_packed_batch_build(ps, np, &pb, err)) goto out;
        for (int s = 0; s < np; s++) pb.seq_key[s] = key[s];
    }
    /* data parallel: a rank whose block the packer emptied still joins the step (weight 0); no rank
     * updates when every block is empty */
    m2_rng drop = *m2_ctx_rng(c_on);
    m2_online_cfg sc = o->step;
    if (!alone) sc.global = (m2_batch_sum){.ud = d, .sum = dp_sum};
    zero_grads(on, q, v);
    if (m2_online_step(m, c_on, c_off, on, off, q, v, &pb, &sc, ss, err)) goto out;
    double n_all = ss->n_actions;
    if (!alone && dp_step_stats(d, on, q, v, ss, &n_all, err)) goto out;
    if (n_all > 0) {
        if (update(on, q, v, o->step.train_actor, o->step.train_critic, &o->actor, &o->critic, o->polyak, step, err))
            goto out;
        *did = 1;
    } else {
        *m2_ctx_rng(c_on) = drop;
    }
    rc = 0;
out:
    m2_packed_batch_free(&pb);
    for (int i = 0; i < np; i++) m2_packed_free(&ps[i]);
    free(ps);
    free(idx);
    free(key);
    return rc;
}

/* Segments one episode may leave in its capture buffer (System 2 sub-goals of one episode). */
#define CAPTURE_SEGMENTS 4096

/* An online collection over the ranks as an ordered job (dist/dist.h m2_dist_map_ordered): make
 * plays position ids[i] into a record {episodes, successes, steps, segments, ret, buffer: its
 * segments as a replay buffer's JSON, all kept}; take pushes every record's segments into this
 * rank's buffer and adds its stats, in episode order on every rank: exactly what m2_collect_online
 * does in one process (the same FIFO, the same failure draws from the buffer's RNG, the same sums). */
typedef struct collect_job {
    m2_env *env;
    const m2_online_opts *o;
    const int *ids;
    const m2_policy *sys1, *sys2;
    const m2_loop_cfg *lc;
    m2_replay *buf;
    m2_collect_stats *cs;
} collect_job;

static int collect_make(void *ud, int64_t i, m2_strbuf *out, m2_err *err) {
    collect_job *j = ud;
    m2_replay cap;
    if (m2_replay_init(&cap, CAPTURE_SEGMENTS, 1.f, 0, err)) return -1;
    m2_collect_stats one = {0};
    int rc = m2_collect_online(j->env, j->o->task, j->o->split, &j->ids[i], 1, j->o->seed, j->sys1, j->sys2, j->lc, &cap,
                               NULL, &one, err);
    if (!rc && cap.evicted) rc = m2_errorf(err, M2_ESHAPE, "online: an episode left more than %d segments", CAPTURE_SEGMENTS);
    char *bj = rc ? NULL : m2_replay_to_json(&cap, err);
    m2_replay_free(&cap);
    if (!bj) return -1;
    cJSON *rec = cJSON_CreateObject(), *bo = cJSON_Parse(bj);
    free(bj);
    char *text = NULL;
    if (rec && bo) {
        cJSON_AddNumberToObject(rec, "episodes", one.episodes);
        cJSON_AddNumberToObject(rec, "successes", one.successes);
        cJSON_AddNumberToObject(rec, "steps", one.steps);
        cJSON_AddNumberToObject(rec, "segments", one.segments);
        cJSON_AddNumberToObject(rec, "ret", one.ret);
        cJSON_AddItemToObject(rec, "buffer", bo);
        bo = NULL;
        text = cJSON_PrintUnformatted(rec);
    }
    cJSON_Delete(rec);
    cJSON_Delete(bo);
    rc = text && !m2_strbuf_puts(out, text) ? 0 : m2_errorf(err, M2_ENOMEM, "online: out of memory");
    free(text);
    return rc;
}

static int collect_take(void *ud, int64_t i, const char *item, size_t len, m2_err *err) {
    collect_job *j = ud;
    cJSON *rec = cJSON_ParseWithLength(item, len);
    char *bj = rec ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(rec, "buffer")) : NULL;
    if (!bj) { cJSON_Delete(rec); return m2_errorf(err, M2_EFORMAT, "online: episode %lld: a bad record", (long long)i); }
    m2_replay tmp;
    int rc = m2_replay_init(&tmp, CAPTURE_SEGMENTS, 1.f, 0, err);
    if (!rc) {
        rc = m2_replay_from_json(&tmp, bj, err);
        for (int k = 0; !rc && k < m2_replay_size(&tmp); k++) {
            const m2_replay_item *it = m2_replay_at(&tmp, k);
            int kept = m2_replay_push(j->buf, &it->seg, it->success, err);
            if (kept < 0) rc = -1;
            else j->cs->kept += kept;
        }
        m2_replay_free(&tmp);
    }
    free(bj);
    if (!rc) {
        j->cs->episodes += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "episodes"));
        j->cs->successes += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "successes"));
        j->cs->steps += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "steps"));
        j->cs->segments += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "segments"));
        j->cs->ret += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "ret"));
    }
    cJSON_Delete(rec);
    return rc;
}

int m2_train_online(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                    m2_head *q, m2_head *v, m2_env *env, const m2_policy *sys1, const m2_policy *sys2,
                    const m2_loop_cfg *lc, m2_replay *buf, const m2_tok_iface *tok,
                    const m2_online_opts *o, m2_train_state *st, const m2_train_hooks *h, m2_err *err) {
    int n_ep = env->cls->num_episodes(env, o->task, o->split, err);
    if (n_ep <= 0) return n_ep < 0 ? -1 : m2_errorf(err, M2_EINVAL, "online: no episodes in split %s", m2_split_name(o->split));
    int *ids = malloc((size_t)(o->episodes_per_epoch > 0 ? o->episodes_per_epoch : 1) * sizeof *ids);
    if (!ids) return m2_errorf(err, M2_ENOMEM, "online: out of memory");
    int rc = -1;
    if (st->step == 0 && st->epoch == 0 && st->pos == 0) {   /* fresh: collect first */
        st->pos = -1;
        if (call_epoch_end(h, 0, st->step, err)) goto out;
    }
    while (st->epoch < o->epochs) {
        if (st->pos < 0) {   /* collection of this epoch */
            /* the next positions of the episode order (data/episodes.h), which walks the task
             * types in turn: uniform draws over the split would follow its type sizes */
            for (int i = 0; i < o->episodes_per_epoch; i++)
                ids[i] = (int)(((int64_t)st->epoch * o->episodes_per_epoch + i) % n_ep);
            m2_collect_stats cs = {0};
            m2_loop_cfg round = *lc;   /* the epoch is part of its episodes' sampling streams */
            round.round = (uint64_t)st->epoch;
            if (m2_dist_alone(dist_of(h))
                    ? m2_collect_online(env, o->task, o->split, ids, o->episodes_per_epoch, o->seed, sys1, sys2,
                                        &round, buf, NULL, &cs, err)
                    : m2_dist_map_ordered(dist_of(h), o->episodes_per_epoch, collect_make, collect_take,
                                          &(collect_job){.env = env, .o = o, .ids = ids, .sys1 = sys1, .sys2 = sys2,
                                                         .lc = &round, .buf = buf, .cs = &cs},
                                          err))
                goto out;
            st->pos = 0;
            static const char *names[] = {"sys2_online/success_rate", "sys2_online/return", "sys2_online/steps",
                                          "sys2_online/segments_kept", "sys2_online/buffer",
                                          "sys2_online/buffer_online_frac"};
            double den = cs.episodes ? cs.episodes : 1, size = m2_replay_size(buf);
            double vals[6] = {cs.successes / den, cs.ret / den, cs.steps / den, cs.kept, size,
                              size > 0 ? m2_replay_online_count(buf) / size : 0};
            if (log_n(h, st->step, names, vals, 6, err)) goto out;
        }
        while (st->pos < o->updates_per_epoch) {
            m2_step_stats ss;
            int did;
            if (m2_replay_size(buf) == 0) { st->pos = o->updates_per_epoch; break; }
            if (online_update(m, c_on, c_off, on, off, q, v, buf, tok, o, st->step, &ss, &did, dist_of(h), err)) goto out;
            st->pos++;
            if (!did) continue;
            st->step++;
            if (log_step(h, "sys2_online", st->step, &ss, 1, err) || after(h, st->step, err)) goto out;
        }
        st->epoch++;
        st->pos = -1;
        if (call_epoch_end(h, st->epoch, st->step, err)) goto out;
    }
    rc = 0;
out:
    free(ids);
    return rc;
}
