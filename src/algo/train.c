#include "algo/train.h"
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
        if (m2_batch_iter_next(&it, set, &pb, &epoch_end, err)) goto out;
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
    m2_step_stats ss;
    if (m2_lm_step(l->c, l->a, pb, 1, &ss, err)) return -1;
    float gn, lr;
    if (group_update(p, &l->o->opt, step, &gn, &lr, err)) return -1;
    l->loss = ss.loss;
    l->lr = lr;
    l->gnorm = gn;
    l->tokens = pb->N;
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
    m2_step_stats ss;
    if (m2_sft_step(l->c, l->a, pb, l->o->reduce, 1, &ss, err)) return -1;
    if (group_update(&l->a->params, &l->o->opt, step, NULL, NULL, err)) return -1;
    l->loss = ss.loss;
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
                                 "q_mean", "v_mean", "adv_mean", "w_mean", "clip_frac"};
    double v[11] = {s->loss, s->loss_q, s->loss_v, s->loss_actor, s->loss_anchor, s->kl,
                    s->q_mean, s->v_mean, s->adv_mean, s->w_mean, s->clip_frac};
    char buf[11][96];
    const char *names[11];
    int n = 0;
    for (int i = 0; i < 11; i++) {
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
    if (m2_offline_step(l->m, l->c, l->a, l->q, l->v, pb, &o->step, l->rng, &l->ss, err)) return -1;
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

/* One update on a batch sampled from the buffer; segments the packer rejects are skipped. */
static int online_update(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                         m2_head *q, m2_head *v, m2_replay *buf, const m2_tok_iface *tok,
                         const m2_online_opts *o, int64_t step, m2_step_stats *ss, int *did, m2_err *err) {
    *did = 0;
    int k = o->batch;
    int *idx = malloc((size_t)k * sizeof *idx);
    m2_packed *ps = calloc((size_t)k, sizeof *ps);
    int np = 0, rc = -1;
    if (!idx || !ps) { m2_errorf(err, M2_ENOMEM, "online: out of memory"); goto out; }
    if (m2_replay_sample(buf, k, idx, err) < 0) goto out;
    for (int i = 0; i < k; i++) {
        m2_err e2 = {0};
        if (m2_pack_traj(tok, &m2_replay_at(buf, idx[i])->seg, o->max_tokens, &ps[np], &e2)) {
            if (e2.code == M2_ESHAPE) continue;
            if (err) *err = e2;
            goto out;
        }
        np++;
    }
    if (np == 0) { rc = 0; goto out; }
    m2_packed_batch pb;
    if (m2_packed_batch_build(ps, np, &pb, err)) goto out;
    zero_grads(on, q, v);
    int r = m2_online_step(m, c_on, c_off, on, off, q, v, &pb, &o->step, ss, err);
    m2_packed_batch_free(&pb);
    if (r || update(on, q, v, o->step.train_actor, o->step.train_critic, &o->actor, &o->critic, o->polyak, step, err))
        goto out;
    *did = 1;
    rc = 0;
out:
    for (int i = 0; i < np; i++) m2_packed_free(&ps[i]);
    free(ps);
    free(idx);
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
    if (st->step == 0 && st->epoch == 0 && st->pos == 0) st->pos = -1;   /* fresh: collect first */
    while (st->epoch < o->epochs) {
        if (st->pos < 0) {   /* collection of this epoch */
            /* the next positions of the episode order (data/episodes.h), which walks the task
             * types in turn: uniform draws over the split would follow its type sizes */
            for (int i = 0; i < o->episodes_per_epoch; i++)
                ids[i] = (int)(((int64_t)st->epoch * o->episodes_per_epoch + i) % n_ep);
            m2_collect_stats cs = {0};
            if (m2_collect_online(env, o->task, o->split, ids, o->episodes_per_epoch, o->seed, sys1, sys2, lc,
                                  buf, NULL, &cs, err)) goto out;
            st->pos = 0;
            static const char *names[] = {"sys2_online/success_rate", "sys2_online/return", "sys2_online/steps",
                                          "sys2_online/segments_kept", "sys2_online/buffer"};
            double den = cs.episodes ? cs.episodes : 1;
            double vals[5] = {cs.successes / den, cs.ret / den, cs.steps / den, cs.kept, m2_replay_size(buf)};
            if (log_n(h, st->step, names, vals, 5, err)) goto out;
        }
        while (st->pos < o->updates_per_epoch) {
            m2_step_stats ss;
            int did;
            if (m2_replay_size(buf) == 0) { st->pos = o->updates_per_epoch; break; }
            if (online_update(m, c_on, c_off, on, off, q, v, buf, tok, o, st->step, &ss, &did, err)) goto out;
            st->pos++;
            if (!did) continue;
            st->step++;
            if (log_step(h, "sys2_online", st->step, &ss, 1, err) || after(h, st->step, err)) goto out;
        }
        st->epoch++;
        st->pos = -1;
    }
    rc = 0;
out:
    free(ids);
    return rc;
}
