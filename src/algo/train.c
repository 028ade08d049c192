#include "algo/train.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void m2_train_state_init(m2_train_state *s) {
    memset(s, 0, sizeof *s);
    s->best_val = INFINITY;
}

static int optim_step(m2_params *p, const m2_opt_opts *o, m2_err *err) {
    if (o->grad_clip > 0) {
        m2_params *g[1] = {p};
        m2_clip_grads(g, 1, o->grad_clip);
    }
    m2_adamw a = {o->beta1 > 0 ? o->beta1 : 0.9f, o->beta2 > 0 ? o->beta2 : 0.999f,
                  o->eps > 0 ? o->eps : 1e-8f, o->weight_decay};
    return m2_adamw_step(p, &a, o->lr, err);
}

static int log_n(const m2_train_hooks *h, int64_t step, const char *const *names, const double *v, int n, m2_err *err) {
    return (h && h->log) ? h->log(h->ud, step, names, v, n, err) : 0;
}

static int after(const m2_train_hooks *h, int64_t step, m2_err *err) {
    return (h && h->after_step) ? h->after_step(h->ud, step, err) : 0;
}

/* Epochs completed by the cursor. */
static int64_t epochs_done(const m2_train_state *st, int n) { return st->epoch + (st->pos >= n ? 1 : 0); }

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

int m2_train_sft(m2_ctx *c, m2_ctx *cval, m2_adapter *a, const m2_seqset *set, const int *train,
                 int n_train, const int *val, int n_val, const m2_sft_opts *o, m2_train_state *st,
                 float *best_w, const m2_train_hooks *h, m2_err *err) {
    m2_batch_iter it;
    if (m2_batch_iter_init(&it, train, n_train, o->batch, o->seed, err)) return -1;
    if (m2_batch_iter_seek(&it, st->epoch, st->pos, err)) { m2_batch_iter_free(&it); return -1; }
    int rc = -1;
    char nl[96];
    snprintf(nl, sizeof nl, "%s/loss", o->prefix ? o->prefix : "sft");
    while (!st->stopped && epochs_done(st, n_train) < o->epochs && (o->max_steps <= 0 || st->step < o->max_steps)) {
        m2_packed_batch pb;
        int epoch_end = 0;
        if (m2_batch_iter_next(&it, set, &pb, &epoch_end, err)) goto out;
        m2_params_zero_grad(&a->params);
        m2_step_stats ss;
        int r = m2_sft_step(c, a, &pb, o->reduce, 1, &ss, err);
        m2_packed_batch_free(&pb);
        if (r || optim_step(&a->params, &o->opt, err)) goto out;
        st->step++;
        st->epoch = it.epoch;
        st->pos = it.pos;
        const char *names[1] = {nl};
        double v[1] = {ss.loss};
        if (log_n(h, st->step, names, v, 1, err)) goto out;
        int do_eval = n_val > 0 && (epoch_end || (o->eval_every > 0 && st->step % o->eval_every == 0));
        if (do_eval && validate(cval ? cval : c, a, set, val, n_val, o, st, best_w, h, err)) goto out;
        if (after(h, st->step, err)) goto out;
    }
    rc = 0;
out:
    m2_batch_iter_free(&it);
    return rc;
}

/* ---- offline ---- */

static void zero_grads(m2_adapter *a, m2_head *q, m2_head *v) {
    m2_params_zero_grad(&a->params);
    m2_params_zero_grad(&q->params);
    m2_params_zero_grad(&v->params);
}

static int update(m2_adapter *a, m2_head *q, m2_head *v, int train_actor, int train_critic,
                  const m2_opt_opts *ao, const m2_opt_opts *co, float polyak, m2_err *err) {
    if (train_actor && optim_step(&a->params, ao, err)) return -1;
    if (train_critic) {
        if (optim_step(&q->params, co, err) || optim_step(&v->params, co, err)) return -1;
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

int m2_train_offline(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, m2_head *v,
                     const m2_seqset *set, const int *idx, int n, const m2_offline_opts *o,
                     m2_train_state *st, m2_rng *rng, const m2_train_hooks *h, m2_err *err) {
    m2_batch_iter it;
    if (m2_batch_iter_init(&it, idx, n, o->batch, o->seed, err)) return -1;
    if (m2_batch_iter_seek(&it, st->epoch, st->pos, err)) { m2_batch_iter_free(&it); return -1; }
    int rc = -1;
    while (epochs_done(st, n) < o->epochs && (o->max_steps <= 0 || st->step < o->max_steps)) {
        m2_packed_batch pb;
        if (m2_batch_iter_next(&it, set, &pb, NULL, err)) goto out;
        zero_grads(a, q, v);
        m2_step_stats ss;
        int r = m2_offline_step(m, c, a, q, v, &pb, &o->step, rng, &ss, err);
        m2_packed_batch_free(&pb);
        if (r || update(a, q, v, o->step.train_actor, o->step.train_critic, &o->actor, &o->critic, o->polyak, err)) goto out;
        st->step++;
        st->epoch = it.epoch;
        st->pos = it.pos;
        if (log_step(h, "sys2", st->step, &ss, 0, err) || after(h, st->step, err)) goto out;
    }
    rc = 0;
out:
    m2_batch_iter_free(&it);
    return rc;
}

/* ---- online ---- */

/* One update on a batch sampled from the buffer; segments the packer rejects are skipped. */
static int online_update(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                         m2_head *q, m2_head *v, m2_replay *buf, const m2_tok_iface *tok,
                         const m2_online_opts *o, m2_step_stats *ss, int *did, m2_err *err) {
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
    if (r || update(on, q, v, o->step.train_actor, o->step.train_critic, &o->actor, &o->critic, o->polyak, err)) goto out;
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
            if (online_update(m, c_on, c_off, on, off, q, v, buf, tok, o, &ss, &did, err)) goto out;
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
