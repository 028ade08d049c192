#include "algo/steps.h"
#include "algo/teamtr.h"
#include "agent/choose.h"
#include "kernels/loss.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

m2_batch m2_packed_batch_view(const m2_packed_batch *pb) {
    return (m2_batch){.n_seq = pb->n_seq, .seq_len = pb->seq_len, .tokens = pb->tokens};
}

/* The dropout of a training step's forwards over pb: the step's one seed drawn from c's RNG, the
 * sequences keyed by their place in the global batch (steps.h). */
static m2_dropout_keys step_dropout(m2_ctx *c, const m2_packed_batch *pb) {
    return (m2_dropout_keys){.seed = m2_rng_u64(m2_ctx_rng(c)), .seq_key = pb->seq_key};
}

/* A step's forward over pb: training (with drop) or scoring (drop NULL). */
static int step_forward(m2_ctx *c, const m2_packed_batch *pb, m2_adapter *a, const m2_dropout_keys *drop,
                        m2_err *err) {
    m2_batch b = m2_packed_batch_view(pb);
    return drop ? m2_forward_keyed(c, &b, a, drop, err) : m2_forward(c, &b, a, 0, err);
}

/* Scratch buffers of one step, freed together (more than any step allocates). */
#define SCRATCH_MAX 24
typedef struct scratch { void *p[SCRATCH_MAX]; int n; } scratch;
static void *s_alloc(scratch *s, size_t n, size_t sz) {
    if (s->n >= SCRATCH_MAX) return NULL;
    void *q = calloc(n ? n : 1, sz);
    if (q) s->p[s->n++] = q;
    return q;
}
static void s_free(scratch *s) { for (int i = 0; i < s->n; i++) free(s->p[i]); s->n = 0; }

/* targets restricted to action rows: the rows whose next token belongs to an action */
static void action_targets(const m2_packed_batch *pb, int32_t *t) {
    for (int i = 0; i < pb->N; i++) t[i] = pb->tok_action[i] >= 0 ? pb->targets[i] : -1;
}

int m2_lm_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, int backward, m2_step_stats *st,
               m2_err *err) {
    m2_dropout_keys drop = backward ? step_dropout(c, pb) : (m2_dropout_keys){0};
    if (st) memset(st, 0, sizeof *st);
    if (pb->n_seq == 0) return 0;   /* a data-parallel rank's empty part: the draw above, nothing else */
    if (step_forward(c, pb, a, backward ? &drop : NULL, err)) return -1;
    scratch s = {0};
    float *logp = s_alloc(&s, (size_t)pb->N, sizeof(float));
    float *dlogp = s_alloc(&s, (size_t)pb->N, sizeof(float));
    float *mask = s_alloc(&s, (size_t)pb->N, sizeof(float));
    if (!logp || !dlogp || !mask) { s_free(&s); return m2_errorf(err, M2_ENOMEM, "lm step: out of memory"); }
    m2_ctx_logprobs(c, pb->targets, logp);
    for (int i = 0; i < pb->N; i++) mask[i] = pb->targets[i] >= 0;
    float loss = m2_nll_forward(logp, mask, pb->N);
    int rc = 0;
    if (backward) {
        m2_nll_backward(mask, pb->N, dlogp);
        m2_ctx_logprobs_backward(c, pb->targets, dlogp);
        rc = m2_backward(c, err);
    }
    if (st) {
        st->loss = loss;
        st->n_tokens = (int)m2_mask_count(mask, pb->N);
    }
    s_free(&s);
    return rc;
}

int m2_sft_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, m2_reduce red, int backward,
                m2_step_stats *st, m2_err *err) {
    m2_dropout_keys drop = backward ? step_dropout(c, pb) : (m2_dropout_keys){0};
    if (st) memset(st, 0, sizeof *st);
    if (pb->n_seq == 0) return 0;   /* a data-parallel rank's empty part: the draw above, nothing else */
    if (pb->n_actions <= 0) return m2_errorf(err, M2_EINVAL, "sft step: batch without actions");
    if (step_forward(c, pb, a, backward ? &drop : NULL, err)) return -1;
    scratch s = {0};
    int N = pb->N, A = pb->n_actions;
    int32_t *tg = s_alloc(&s, (size_t)N, sizeof(int32_t));
    float *tl = s_alloc(&s, (size_t)N, sizeof(float)), *dtl = s_alloc(&s, (size_t)N, sizeof(float));
    float *al = s_alloc(&s, (size_t)A, sizeof(float)), *dal = s_alloc(&s, (size_t)A, sizeof(float));
    int32_t *cnt = s_alloc(&s, (size_t)A, sizeof(int32_t));
    if (!tg || !tl || !dtl || !al || !dal || !cnt) { s_free(&s); return m2_errorf(err, M2_ENOMEM, "sft step: out of memory"); }
    action_targets(pb, tg);
    m2_ctx_logprobs(c, tg, tl);
    m2_action_logp_forward(tl, pb->tok_action, N, A, red, al, cnt);
    float loss = m2_nll_forward(al, NULL, A);
    int rc = 0;
    if (backward) {
        m2_nll_backward(NULL, A, dal);
        m2_action_logp_backward(dal, pb->tok_action, N, cnt, red, dtl);
        m2_ctx_logprobs_backward(c, tg, dtl);
        rc = m2_backward(c, err);
    }
    if (st) {
        st->loss = st->loss_actor = loss;
        st->n_actions = A;
        st->n_tokens = (int)m2_mask_count(pb->tok_mask, N);
    }
    s_free(&s);
    return rc;
}

/* ---- the IQL critic on the current forward ----
 * Reads Q (online, cached for backward) and Qbar (target) at q_pos, V (online, cached) at v_pos and
 * next_v_pos in ONE head call (the head caches one forward); adds the heads' gradients (and, per
 * each head's grad_to_body, d hidden) when train; returns A = Qbar - V and V(s) in adv / v_out. */
static int critic_pass(m2_ctx *c, m2_head *q, m2_head *v, const m2_packed_batch *pb,
                       const m2_critic_cfg *cfg, int train, float *adv, float *v_out,
                       m2_step_stats *st, m2_err *err) {
    int A = pb->n_actions, rc = -1;
    scratch s = {0};
    float *qv = s_alloc(&s, (size_t)A, sizeof(float)), *qbar = s_alloc(&s, (size_t)A, sizeof(float));
    int *vpos = s_alloc(&s, (size_t)2 * A, sizeof(int));
    int *slot = s_alloc(&s, (size_t)A, sizeof(int));
    float *vall = s_alloc(&s, (size_t)2 * A, sizeof(float)), *dv = s_alloc(&s, (size_t)2 * A, sizeof(float));
    float *vnext = s_alloc(&s, (size_t)A, sizeof(float)), *y = s_alloc(&s, (size_t)A, sizeof(float));
    float *dq = s_alloc(&s, (size_t)A, sizeof(float));
    if (!qv || !qbar || !vpos || !slot || !vall || !dv || !vnext || !y || !dq) {
        m2_errorf(err, M2_ENOMEM, "critic: out of memory");
        goto out;
    }
    const float *hidden = m2_ctx_hidden(c);
    int K = A;
    for (int i = 0; i < A; i++) vpos[i] = pb->v_pos[i];
    for (int i = 0; i < A; i++) {
        slot[i] = -1;
        if (pb->next_v_pos[i] >= 0) { slot[i] = K; vpos[K++] = pb->next_v_pos[i]; }
    }
    /* target first: a target forward clears the head's backward cache */
    if (m2_head_forward(q, hidden, pb->q_pos, A, 1, qbar, err) ||
        m2_head_forward(q, hidden, pb->q_pos, A, 0, qv, err) ||
        m2_head_forward(v, hidden, vpos, K, 0, vall, err)) goto out;
    for (int i = 0; i < A; i++) vnext[i] = slot[i] >= 0 ? vall[slot[i]] : 0.f;
    m2_td_targets(pb->reward, pb->done, vnext, A, cfg->gamma, y);   /* V(s') constant */
    float lq = m2_iql_q_forward(qv, y, pb->q_mask, A);
    float lv = m2_iql_value_forward(qbar, vall, NULL, A, cfg->expectile);
    m2_advantages(qbar, vall, A, adv);
    if (v_out) memcpy(v_out, vall, (size_t)A * sizeof(float));
    if (train) {
        m2_iql_q_backward(qv, y, pb->q_mask, A, dq);
        m2_iql_value_backward(qbar, vall, NULL, A, cfg->expectile, dv);   /* dv[A..K) stay 0 */
        float *dh = m2_ctx_dhidden(c);
        if (m2_head_backward(q, dq, pb->q_pos, A, dh, err) || m2_head_backward(v, dv, vpos, K, dh, err)) goto out;
    }
    if (st) {
        double sq = 0, sv = 0;
        for (int i = 0; i < A; i++) { sq += qv[i]; sv += vall[i]; }
        st->loss_q = lq;
        st->loss_v = lv;
        st->q_mean = (float)(sq / A);
        st->v_mean = (float)(sv / A);
    }
    rc = 0;
out:
    s_free(&s);
    return rc;
}

/* Generation cap of a sampled anchor action when the config gives none. */
#define ANCHOR_MAX_TOKENS_DEFAULT 32

/* Score mode's a^: the candidate of the state drawn from the softmax of the current policy's
 * log-probs at temperature 1 (agent/choose.h), copied into res->tokens; res stays empty when
 * generation applies (no cands callback, or no candidate for this state). */
static int anchor_pick(m2_model *m, m2_adapter *a, const int32_t *prompt, int plen, const m2_offline_cfg *cfg,
                       m2_rng *rng, m2_gen_result *res, m2_err *err) {
    if (!cfg->cands) return 0;
    const int32_t *const *cand;
    const int *len;
    int n;
    if (cfg->cands(cfg->cands_ud, prompt, plen, &cand, &len, &n, err)) return -1;
    if (n <= 0) return 0;
    float *score = malloc((size_t)n * sizeof *score);
    m2_kv_cache *kv = score ? m2_kv_create(m, 1, plen, err) : NULL;
    int rc = -1;
    if (!score) m2_errorf(err, M2_ENOMEM, "anchor: out of memory");
    if (kv && !m2_kv_score(m, a, kv, prompt, plen, 0, n, cand, len, cfg->score_mean, score, err)) {
        int pick = m2_choose_scored(score, n, 1.f, rng);
        if ((res->tokens = malloc((size_t)len[pick] * sizeof *res->tokens))) {
            memcpy(res->tokens, cand[pick], (size_t)len[pick] * sizeof *res->tokens);
            res->n = len[pick];
            rc = 0;
        } else {
            m2_errorf(err, M2_ENOMEM, "anchor: out of memory");
        }
    }
    m2_kv_free(kv);
    free(score);
    return rc;
}

/* The randomness of one anchor sample j of a step (steps.h): its draws come from stream (key, 1 + j)
 * of the step's anchor key (stream 0 picks the states) and its forward's dropout masks from the
 * step's seed with the sequence key -(1 + j), outside the batch's keys (>= 0): a sample is the
 * same whichever rank scores it and however many samples came before it. */
typedef struct anchor_draws {
    uint64_t key;          /* the step's anchor key */
    uint64_t drop_seed;    /* the step's dropout seed */
    int j;                 /* the sample's index in the step's M samples */
} anchor_draws;

/* One anchor sample a^ for action k of the batch, drawn from the current policy: the scored sequence
 * is prefix(s_t) + a^ (ending in EOS); a training forward on c gives log pi(a^|s) (its token
 * log-probs reduced like the dataset actions') and Qbar(s, a^) from the target head at the EOS;
 * A^ = Qbar(s, a^) - V(s) is a constant. The anchor loss is a mean over the step's M samples, so
 * its gradient is taken here one sample at a time: this sample's share is the one-sample anchor loss
 * with coefficient lambda_share (lambda / M, scaled to the part of a data-parallel batch)
 * (m2_anchor_backward), spread over a^'s tokens and backpropagated. */
static int anchor_one(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, const m2_packed_batch *pb,
                      int k, float v_s, const m2_offline_cfg *cfg, float lambda_share, const anchor_draws *dr,
                      float *logp_out, float *adv_out, m2_err *err) {
    int s = pb->act_seq[k];
    int off = pb->seq_off[s];
    int plen = pb->v_pos[k] - off + 1;   /* prefix through the state's last token */
    const int32_t *prompt = pb->tokens + off;
    m2_rng rng;
    m2_rng_seed_stream(&rng, dr->key, 1 + (uint64_t)dr->j);
    m2_gen_result res = {0};
    if (anchor_pick(m, a, prompt, plen, cfg, &rng, &res, err)) return -1;
    if (!res.tokens) {   /* generated: one seed drawn from the sample's stream */
        m2_gen_config g = {.max_new_tokens = cfg->max_action_tokens > 0 ? cfg->max_action_tokens : ANCHOR_MAX_TOKENS_DEFAULT,
                           .sampler = cfg->sampler,
                           .seed = m2_rng_u64(&rng),
                           .stop_tokens = &cfg->eos_id,
                           .n_stop_tokens = 1};
        if (m2_generate(m, a, 1, &prompt, &plen, &g, &res, err)) return -1;
    }
    int n_gen = res.n;
    int ends_eos = n_gen > 0 && res.tokens[n_gen - 1] == cfg->eos_id;
    int L = plen + n_gen + (ends_eos ? 0 : 1);
    int32_t *seq = malloc((size_t)L * sizeof *seq), *tg = malloc((size_t)L * sizeof *tg);
    float *tl = malloc((size_t)L * sizeof *tl), *dtl = calloc((size_t)L, sizeof *dtl);
    int rc = -1;
    if (!seq || !tg || !tl || !dtl) { m2_errorf(err, M2_ENOMEM, "anchor: out of memory"); goto out; }
    memcpy(seq, prompt, (size_t)plen * sizeof *seq);
    memcpy(seq + plen, res.tokens, (size_t)n_gen * sizeof *seq);
    if (!ends_eos) seq[L - 1] = cfg->eos_id;   /* cut at the cap: close the action like the data */
    int32_t key = -1 - dr->j;
    m2_batch b = {.n_seq = 1, .seq_len = &L, .tokens = seq};
    m2_dropout_keys drop = {.seed = dr->drop_seed, .seq_key = &key};
    if (m2_forward_keyed(c, &b, a, &drop, err)) goto out;
    /* rows plen-1 .. L-2 predict the action's tokens */
    int n_act = L - plen, mean = cfg->reduce == M2_REDUCE_MEAN;
    for (int i = 0; i < L; i++) tg[i] = (i >= plen - 1 && i < L - 1) ? seq[i + 1] : -1;
    m2_ctx_logprobs(c, tg, tl);
    float lp = m2_span_logprob(tl, plen - 1, n_act, mean);
    float qbar;
    int qpos = L - 1;
    if (m2_head_forward(q, m2_ctx_hidden(c), &qpos, 1, 1, &qbar, err)) goto out;
    float A_hat = qbar - v_s;                      /* stop-grad */
    float g_lp = 0.f;
    m2_anchor_backward(&A_hat, NULL, 1, lambda_share, &g_lp);
    m2_span_logprob_backward(dtl, g_lp, plen - 1, n_act, mean);
    m2_ctx_logprobs_backward(c, tg, dtl);
    if (m2_backward(c, err)) goto out;
    *logp_out = lp;
    *adv_out = A_hat;
    rc = 0;
out:
    m2_gen_result_free(&res);
    free(seq); free(tg); free(tl); free(dtl);
    return rc;
}

/* The data-parallel glue of a step's actor weights: with cfg->global set, the normalised weights'
 * divisor is the GLOBAL batch's mean (one sum of 2 over the ranks; a rank's empty part adds 0). */
static int actor_global_norm(const m2_offline_cfg *cfg, m2_actor_cfg *actor, const float *adv, int A, m2_err *err) {
    if (!cfg->global.sum || !m2_actor_normalizes(actor)) return 0;
    double sn[2] = {A > 0 ? m2_actor_raw_sum(actor, adv, NULL, A) : 0, A};
    if (cfg->global.sum(cfg->global.ud, sn, 2, err)) return -1;
    actor->given_norm = 1;
    actor->norm = sn[1] > 0 ? sn[0] / sn[1] : 0;
    return 0;
}

int m2_offline_step(m2_model *m, m2_ctx *c, m2_adapter *a, m2_head *q, m2_head *v,
                    const m2_packed_batch *pb, const m2_offline_cfg *cfg, m2_rng *rng,
                    m2_step_stats *st, m2_err *err) {
    /* the step's draws, whatever its part of the batch holds (steps.h) */
    m2_dropout_keys drop = step_dropout(c, pb);
    anchor_draws dr = {.drop_seed = drop.seed};
    int anchor_on = !cfg->actor.released && cfg->actor.lambda != 0.f && cfg->train_actor;
    if (anchor_on) dr.key = m2_rng_u64(rng);
    if (st) memset(st, 0, sizeof *st);
    if (pb->n_seq == 0) {   /* a data-parallel rank's empty part: the global sum, nothing else */
        m2_actor_cfg actor = cfg->actor;
        return actor_global_norm(cfg, &actor, NULL, 0, err);
    }
    if (pb->n_actions <= 0) return m2_errorf(err, M2_EINVAL, "offline step: batch without actions");
    if (step_forward(c, pb, a, &drop, err)) return -1;
    int N = pb->N, A = pb->n_actions, rc = -1;
    scratch s = {0};
    float *adv = s_alloc(&s, (size_t)A, sizeof(float)), *vs = s_alloc(&s, (size_t)A, sizeof(float));
    int32_t *tg = s_alloc(&s, (size_t)N, sizeof(int32_t));
    float *tl = s_alloc(&s, (size_t)N, sizeof(float)), *dtl = s_alloc(&s, (size_t)N, sizeof(float));
    float *al = s_alloc(&s, (size_t)A, sizeof(float)), *dal = s_alloc(&s, (size_t)A, sizeof(float));
    int32_t *cnt = s_alloc(&s, (size_t)A, sizeof(int32_t));
    if (!adv || !vs || !tg || !tl || !dtl || !al || !dal || !cnt) { m2_errorf(err, M2_ENOMEM, "offline step: out of memory"); goto out; }
    m2_step_stats local;
    memset(&local, 0, sizeof local);
    /* critic (heads; reaches the LoRA only through each head's grad_to_body) */
    if (critic_pass(c, q, v, pb, &cfg->critic, cfg->train_critic, adv, vs, &local, err)) goto out;
    m2_actor_cfg actor = cfg->actor;
    if (actor_global_norm(cfg, &actor, adv, A, err)) goto out;
    /* actor on dataset actions */
    action_targets(pb, tg);
    m2_ctx_logprobs(c, tg, tl);
    m2_action_logp_forward(tl, pb->tok_action, N, A, cfg->reduce, al, cnt);
    if (cfg->train_actor) {
        m2_offline_actor_backward(&actor, adv, NULL, A, NULL, NULL, 0, dal, NULL);   /* the dataset term */
        m2_action_logp_backward(dal, pb->tok_action, N, cnt, cfg->reduce, dtl);
        m2_ctx_logprobs_backward(c, tg, dtl);
    }
    if ((cfg->train_actor || cfg->train_critic) && m2_backward(c, err)) goto out;
    /* the policy-anchored term on sampled actions (not in the released variant): n_states distinct
     * states of the GLOBAL batch (all of them by default), anchor_samples each, picked from stream 0
     * of the step's anchor key; this part scores the samples whose states it holds */
    int At = pb->act_total > A ? pb->act_total : A, M = 0, m_here = 0;
    float *adv_s = NULL, *logp_s = NULL, scale = 1.f;
    if (anchor_on) {
        int n_states = (cfg->n_anchor <= 0 || cfg->n_anchor > At) ? At : cfg->n_anchor;
        M = n_states * (cfg->anchor_samples > 0 ? cfg->anchor_samples : 1);
        int *pick = s_alloc(&s, (size_t)At, sizeof(int));
        adv_s = s_alloc(&s, (size_t)M, sizeof(float));
        logp_s = s_alloc(&s, (size_t)M, sizeof(float));
        if (!pick || !adv_s || !logp_s) { m2_errorf(err, M2_ENOMEM, "offline step: out of memory"); goto out; }
        m2_rng pr;
        m2_rng_seed_stream(&pr, dr.key, 0);
        for (int i = 0; i < At; i++) pick[i] = i;
        for (int i = 0; i < n_states && n_states < At; i++) {
            int j = i + (int)m2_rng_below(&pr, (uint32_t)(At - i));
            int t = pick[i]; pick[i] = pick[j]; pick[j] = t;
        }
        /* a part's gradient is weighted by its share A / At of the batch (algo/train.c): its samples'
         * coefficient lambda / M is scaled by At / A so the ranks' sum is the batch's (1 alone) */
        scale = (float)At / (float)A;
        for (int j = 0; j < M; j++) {
            int k = pick[j % n_states] - pb->act_base;
            if (k < 0 || k >= A) continue;   /* another rank's state */
            dr.j = j;
            if (anchor_one(m, c, a, q, pb, k, vs[k], cfg, cfg->actor.lambda / M * scale, &dr, &logp_s[m_here],
                           &adv_s[m_here], err))
                goto out;
            m_here++;
        }
    }
    /* the whole actor loss (dataset + anchor terms) for the stats; its gradient went in above. The
     * anchor's part is this part's samples' sum over all M, scaled like its gradient. */
    m2_actor_stats ast;
    m2_offline_actor_forward(&actor, adv, al, NULL, A, adv_s, logp_s, NULL, m_here, &ast);
    if (M > 0) ast.loss_anchor = (float)(ast.loss_anchor * ((double)m_here / M) * scale);
    if (st) {
        *st = local;
        st->loss_actor = ast.loss_data;
        st->loss_anchor = ast.loss_anchor;
        st->loss = local.loss_q + local.loss_v + ast.loss_data + ast.loss_anchor;
        st->adv_mean = ast.adv_mean;
        st->w_mean = ast.w_mean;
        st->clip_frac = ast.clip_frac;
        st->adv_std = ast.adv_std;
        st->w_std = ast.w_std;
        st->n_actions = A;
        st->n_tokens = (int)m2_mask_count(pb->tok_mask, N);
        st->n_anchor = M;
    }
    rc = 0;
out:
    s_free(&s);
    return rc;
}

int m2_online_step(m2_model *m, m2_ctx *c_on, m2_ctx *c_off, m2_adapter *on, m2_adapter *off,
                   m2_head *q, m2_head *v, const m2_packed_batch *pb, const m2_online_cfg *cfg,
                   m2_step_stats *st, m2_err *err) {
    if (c_on == c_off) return m2_errorf(err, M2_EINVAL, "online step: the online and reference forwards need two ctxs");
    if (on == off) return m2_errorf(err, M2_EINVAL, "online step: pi_on and pi_off are the same adapter");
    /* pi_off in pi_on's dropout mode: both forwards use the step's one seed (drawn from c_on's RNG),
     * so both adapters run on the same masks and equal adapters give equal logits (KL exactly 0 and
     * no KL gradient); a scoring pi_off against a dropped-out pi_on made the KL > 0 there. pi_off is
     * frozen: its adapter gets no grads from this training-mode forward. */
    m2_dropout_keys drop = step_dropout(c_on, pb);
    if (st) memset(st, 0, sizeof *st);
    if (pb->n_seq == 0) {   /* a data-parallel rank's empty part: the global sum, nothing else */
        double sn[2] = {0, 0};
        return cfg->global.sum ? cfg->global.sum(cfg->global.ud, sn, 2, err) : 0;
    }
    if (pb->n_actions <= 0) return m2_errorf(err, M2_EINVAL, "online step: batch without actions");
    if (step_forward(c_off, pb, off, &drop, err) || step_forward(c_on, pb, on, &drop, err)) return -1;
    int N = pb->N, A = pb->n_actions, rc = -1;
    scratch s = {0};
    float *adv = s_alloc(&s, (size_t)A, sizeof(float)), *w = s_alloc(&s, (size_t)A, sizeof(float));
    int32_t *tg = s_alloc(&s, (size_t)N, sizeof(int32_t));
    float *tl = s_alloc(&s, (size_t)N, sizeof(float)), *dtl = s_alloc(&s, (size_t)N, sizeof(float));
    float *tk = s_alloc(&s, (size_t)N, sizeof(float)), *wk = s_alloc(&s, (size_t)N, sizeof(float));
    float *al = s_alloc(&s, (size_t)A, sizeof(float)), *ak = s_alloc(&s, (size_t)A, sizeof(float));
    float *dal = s_alloc(&s, (size_t)A, sizeof(float)), *dak = s_alloc(&s, (size_t)A, sizeof(float));
    int32_t *cnt = s_alloc(&s, (size_t)A, sizeof(int32_t));
    if (!adv || !w || !tg || !tl || !dtl || !tk || !wk || !al || !ak || !dal || !dak || !cnt) {
        m2_errorf(err, M2_ENOMEM, "online step: out of memory");
        goto out;
    }
    m2_step_stats local;
    memset(&local, 0, sizeof local);
    if (critic_pass(c_on, q, v, pb, &cfg->critic, cfg->train_critic, adv, NULL, &local, err)) goto out;
    if (cfg->global.sum) {   /* data parallel: normalise by the mean over every rank's block */
        double sn[2] = {m2_awac_raw_weights(adv, NULL, A, cfg->alpha, cfg->w_max, w), A};
        if (cfg->global.sum(cfg->global.ud, sn, 2, err)) goto out;
        m2_awac_normalize(w, A, sn[1] > 0 ? sn[0] / sn[1] : 0);
    } else {
        m2_awac_weights(adv, NULL, A, cfg->alpha, cfg->w_max, w);
    }
    action_targets(pb, tg);
    m2_ctx_logprobs(c_on, tg, tl);
    m2_action_logp_forward(tl, pb->tok_action, N, A, cfg->reduce, al, cnt);
    /* d loss / d logp and d loss / d KL per action, then per action-token row: the KL rows' weights
     * of m2_ctx_kl, which adds the KL gradient into c_on's logits (exact over the vocabulary) */
    if (cfg->train_actor) {
        m2_awac_backward(w, NULL, A, cfg->eta, dal, dak);
        m2_action_logp_backward(dak, pb->tok_action, N, cnt, cfg->reduce, wk);
    }
    m2_ctx_kl(c_on, c_off, wk, tk, cfg->train_actor, 0);
    for (int i = 0; i < N; i++) if (pb->tok_action[i] < 0) tk[i] = 0.f;
    m2_action_logp_forward(tk, pb->tok_action, N, A, cfg->reduce, ak, cnt);
    float loss_actor = m2_awac_forward(w, al, ak, NULL, A, cfg->eta);
    if (cfg->train_actor) {
        m2_action_logp_backward(dal, pb->tok_action, N, cnt, cfg->reduce, dtl);
        m2_ctx_logprobs_backward(c_on, tg, dtl);
    }
    if ((cfg->train_actor || cfg->train_critic) && m2_backward(c_on, err)) goto out;
    if (st) {
        double sk = 0, sa = 0, sa2 = 0, sw = 0, sw2 = 0;
        for (int i = 0; i < A; i++) {
            sk += ak[i];
            sa += adv[i];
            sa2 += (double)adv[i] * adv[i];
            sw += w[i];
            sw2 += (double)w[i] * w[i];
        }
        *st = local;
        st->loss_actor = loss_actor;
        st->kl = (float)(sk / A);
        st->adv_mean = (float)(sa / A);
        st->w_mean = (float)(sw / A);   /* 1 up to rounding: the weights are normalised by their mean */
        st->adv_std = (float)m2_spread(sa, sa2, A);
        st->w_std = (float)m2_spread(sw, sw2, A);
        st->loss = local.loss_q + local.loss_v + loss_actor;
        st->n_actions = A;
        st->n_tokens = (int)m2_mask_count(pb->tok_mask, N);
    }
    rc = 0;
out:
    s_free(&s);
    return rc;
}

int m2_score_logprobs(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, float *logp, m2_err *err) {
    m2_batch b = m2_packed_batch_view(pb);
    if (m2_forward(c, &b, a, 0, err)) return -1;
    int32_t *tg = malloc((size_t)(pb->N ? pb->N : 1) * sizeof *tg);
    if (!tg) return m2_errorf(err, M2_ENOMEM, "score: out of memory");
    action_targets(pb, tg);
    m2_ctx_logprobs(c, tg, logp);
    free(tg);
    return 0;
}

int m2_ppo_step(m2_ctx *c, m2_adapter *a, const m2_packed_batch *pb, const float *tok_adv,
                const float *logp_old, const float *logp_ref, const m2_ppo_cfg *cfg, int backward,
                m2_step_stats *st, m2_err *err) {
    m2_batch b = m2_packed_batch_view(pb);
    /* the new policy in logp_old's dropout mode: logp_old comes from a scoring forward
     * (m2_score_logprobs, no dropout), so this one runs without dropout too and the ratio, D^ and
     * L^ compare the policies themselves (ratio exactly 1 before any update) */
    if (m2_forward(c, &b, a, 0, err)) return -1;
    int N = pb->N, rc = -1;
    scratch s = {0};
    int32_t *tg = s_alloc(&s, (size_t)N, sizeof(int32_t)), *tseq = s_alloc(&s, (size_t)N, sizeof(int32_t));
    float *lp = s_alloc(&s, (size_t)N, sizeof(float)), *dlp = s_alloc(&s, (size_t)N, sizeof(float));
    if (!tg || !tseq || !lp || !dlp) { m2_errorf(err, M2_ENOMEM, "ppo step: out of memory"); goto out; }
    action_targets(pb, tg);
    m2_ctx_logprobs(c, tg, lp);
    for (int k = 0; k < pb->n_seq; k++)
        for (int i = 0; i < pb->seq_len[k]; i++) tseq[pb->seq_off[k] + i] = pb->tok_action[pb->seq_off[k] + i] >= 0 ? k : -1;
    m2_ppo_stats ps;
    float loss = m2_ppo_clip_forward(lp, logp_old, tok_adv, logp_ref, pb->tok_mask, N, cfg->eps_clip, cfg->kl_coef, &ps);
    if (backward) {
        m2_ppo_clip_backward(lp, logp_old, tok_adv, logp_ref, pb->tok_mask, N, cfg->eps_clip, cfg->kl_coef, dlp);
        if (cfg->grad_scale > 0 && cfg->grad_scale != 1.0)
            for (int u = 0; u < N; u++) dlp[u] = (float)(dlp[u] * cfg->grad_scale);
        m2_ctx_logprobs_backward(c, tg, dlp);
        if (m2_backward(c, err)) goto out;
    }
    if (st) {
        st->loss = st->loss_actor = loss;
        st->kl = m2_token_kl_estimate(logp_old, lp, tseq, pb->tok_mask, N, pb->n_seq);
        st->surrogate_gain = m2_surrogate_gain(lp, logp_old, tok_adv, pb->tok_mask, N);
        st->clip_frac = ps.clip_frac;
        st->n_tokens = (int)m2_mask_count(pb->tok_mask, N);
        st->n_actions = pb->n_actions;
    }
    rc = 0;
out:
    s_free(&s);
    return rc;
}

int m2_token_kl_rows(m2_ctx *c_old, m2_ctx *c_new, m2_adapter *old, m2_adapter *neu, const m2_packed_batch *pb,
                     float *kl, m2_err *err) {
    if (pb->N <= 0) return 0;
    m2_batch b = m2_packed_batch_view(pb);
    if (m2_forward(c_old, &b, old, 0, err) || m2_forward(c_new, &b, neu, 0, err)) return -1;
    m2_ctx_kl(c_old, c_new, NULL, kl, 0, 0);   /* KL(old || new) at every row */
    return 0;
}

int m2_token_divergence(m2_ctx *c_old, m2_ctx *c_new, m2_adapter *old, m2_adapter *neu,
                        const m2_packed_batch *pb, double *D, m2_err *err) {
    *D = 0;
    if (pb->N <= 0) return 0;
    float *kl = malloc((size_t)pb->N * sizeof *kl);
    if (!kl) return m2_errorf(err, M2_ENOMEM, "token divergence: out of memory");
    int rc = m2_token_kl_rows(c_old, c_new, old, neu, pb, kl, err);
    if (!rc) *D = m2_token_divergence_mean(kl, pb->tok_mask, pb->N);
    free(kl);
    return rc;
}
