#include "agent/team.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "io/tokenizer.h"

/* Stream numbers of the seeded random orders (one per protocol: the chain's permutations and the
 * router's draws never share a stream). */
enum { TEAM_STREAM_CHAIN_ORDER = 0xc4a1, TEAM_STREAM_ROUTER = 0x4077 };

int m2_team_schedule(const m2_team *t, uint64_t sample, int *speakers) {
    if (t->n < 1 || t->n > M2_TEAM_MAX) return -1;
    m2_rng r;
    if (t->protocol == M2_TEAM_CHAIN) {
        if (t->order == M2_TEAM_RANDOM) {
            uint32_t p[M2_TEAM_MAX];
            for (int k = 0; k < t->n; k++) p[k] = (uint32_t)k;
            m2_rng_seed_stream(&r, t->order_seed ^ (sample * 0x9E3779B97F4A7C15ull), TEAM_STREAM_CHAIN_ORDER);
            m2_rng_shuffle_u32(&r, p, (uint32_t)t->n);
            for (int k = 0; k < t->n; k++) speakers[k] = (int)p[k];
        } else {
            for (int k = 0; k < t->n; k++) speakers[k] = (int)((sample + (uint64_t)k) % (uint64_t)t->n);
        }
        return t->n;
    }
    if (t->protocol != M2_TEAM_ROUTER || t->turns < 1 || t->turns > M2_TEAM_MAX_TURNS) return -1;
    if (t->order == M2_TEAM_RANDOM)
        m2_rng_seed_stream(&r, t->order_seed ^ (sample * 0x9E3779B97F4A7C15ull), TEAM_STREAM_ROUTER);
    for (int j = 0; j < t->turns; j++)
        speakers[j] = t->order == M2_TEAM_RANDOM ? (int)m2_rng_below(&r, (uint32_t)t->n) : j % t->n;
    return t->turns;
}

void m2_team_sample_free(m2_team_sample *s) {
    for (int j = 0; j < M2_TEAM_MAX_TURNS; j++) { free(s->msg[j]); s->msg[j] = NULL; }
}

int m2_team_context(const char *question, const m2_team_sample *s, int turn, m2_traj *tr, m2_err *err) {
    m2_traj_init(tr);
    char buf[64];
    size_t ql = strlen(question);
    char *p = malloc(ql + 16);
    if (!p) return m2_errorf(err, M2_ENOMEM, "team: out of memory");
    snprintf(p, ql + 16, "Question: %s\n", question);
    int rc = m2_traj_set_prompt(tr, p, err);
    free(p);
    for (int j = 0; j <= turn && j < s->n_turns && !rc; j++) {
        if (j == s->n_turns - 1) snprintf(buf, sizeof buf, "Agent %d, final answer:", s->speaker[j] + 1);
        else snprintf(buf, sizeof buf, "Agent %d:", s->speaker[j] + 1);
        rc = m2_traj_push_state(tr, buf, err);
        if (rc || j == turn) break;
        const char *m = s->msg[j] ? s->msg[j] : "";
        size_t ml = strlen(m);
        char *a = malloc(ml + 2);
        if (!a) { rc = m2_errorf(err, M2_ENOMEM, "team: out of memory"); break; }
        a[0] = ' ';
        memcpy(a + 1, m, ml + 1);
        rc = m2_traj_push_action(tr, a, 0.f, 0.f, err);
        free(a);
    }
    if (rc) m2_traj_free(tr);
    return rc;
}

/* Detokenizer hook for the newline stop string. */
static int token_text(void *ud, int32_t token, char *buf, int cap) {
    const m2_tok_iface *t = ud;
    int n = t->decode(t->ctx, &token, 1, buf, cap, NULL);
    return n < 0 ? 0 : (n < cap ? n : cap - 1);
}

/* The message text of a generation: decoded, cut at the first newline, EOS dropped, the leading
 * space the context format puts before every message removed. malloc'd. */
static char *message_of(const m2_tok_iface *tok, const m2_gen_result *r, m2_err *err) {
    int n = r->n;
    if (n > 0 && r->tokens[n - 1] == tok->eos_id) n--;
    int cap = 8 * n + 16;
    char *s = malloc((size_t)cap);
    if (!s) { m2_errorf(err, M2_ENOMEM, "team: out of memory"); return NULL; }
    int len = n > 0 ? tok->decode(tok->ctx, r->tokens, n, s, cap, err) : 0;
    if (len < 0) { free(s); return NULL; }
    s[len < cap ? len : cap - 1] = 0;
    char *nl = strchr(s, '\n');
    if (nl) *nl = 0;
    /* invalid UTF-8 from a byte-level model would not survive re-encoding: '?' instead */
    size_t off = 0, bad, sl = strlen(s);
    while (off < sl && m2_utf8_check(s + off, sl - off, &bad) != 0) {
        s[off + bad] = '?';
        off += bad + 1;
    }
    char *b = s;
    while (*b == ' ') b++;
    if (b != s) memmove(s, b, strlen(b) + 1);
    return s;
}

int m2_team_play(const m2_team *t, const m2_qa_set *qs, m2_team_sample *s, int n, const m2_team_gen *g, m2_err *err) {
    return m2_team_play_block(t, qs, s, n, 0, n, g, err);
}

int m2_team_play_block(const m2_team *t, const m2_qa_set *qs, m2_team_sample *s, int n, int first, int count,
                       const m2_team_gen *g, m2_err *err) {
    if (first < 0 || count < 0 || first + count > n)
        return m2_errorf(err, M2_EINVAL, "team: block [%d, %d) of a batch of %d", first, first + count, n);
    int max_turns = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].task < 0 || s[i].task >= qs->n) return m2_errorf(err, M2_EINVAL, "team: sample %d has task %d of %d", i, s[i].task, qs->n);
        memset(s[i].msg, 0, sizeof s[i].msg);
        s[i].reward = 0;
        s[i].n_turns = m2_team_schedule(t, s[i].id, s[i].speaker);
        if (s[i].n_turns < 0) return m2_errorf(err, M2_EINVAL, "team: %d agents, protocol %d, %d turns is no team", t->n, t->protocol, t->turns);
        if (s[i].n_turns > max_turns) max_turns = s[i].n_turns;
    }
    int32_t **prompts = calloc((size_t)(n ? n : 1), sizeof *prompts);
    int *plen = calloc((size_t)(n ? n : 1), sizeof *plen), *who = calloc((size_t)(n ? n : 1), sizeof *who);
    uint64_t *stream = calloc((size_t)(n ? n : 1), sizeof *stream);
    m2_gen_result *res = calloc((size_t)(n ? n : 1), sizeof *res);
    int rc = 0;
    if (!prompts || !plen || !who || !stream || !res) rc = m2_errorf(err, M2_ENOMEM, "team: out of memory");
    static const char *const newline[1] = {"\n"};
    for (int j = 0; j < max_turns && !rc; j++) {
        for (int k = 0; k < t->n && !rc; k++) {
            const m2_team_agent *ag = &t->agent[k];
            int m = 0;
            uint64_t row = 0;   /* the sample's row in this turn's batch of agent k over the WHOLE batch */
            for (int i = 0; i < n && !rc; i++) {
                if (j >= s[i].n_turns || s[i].speaker[j] != k) continue;
                if (i < first || i >= first + count) { row++; continue; }
                stream[m] = row++;
                m2_traj tr;
                if ((rc = m2_team_context(qs->q[s[i].task].question, &s[i], j, &tr, err))) break;
                int max_ctx = ag->model->cfg.max_seq_len - g->max_new_tokens;
                rc = m2_pack_context(ag->tok, &tr, max_ctx, &prompts[m], &plen[m], err);
                m2_traj_free(&tr);
                if (!rc) who[m++] = i;
            }
            if (rc || m == 0) { for (int i = 0; i < m; i++) { free(prompts[i]); prompts[i] = NULL; } continue; }
            m2_gen_config gc = {.max_new_tokens = g->max_new_tokens, .sampler = g->sampler,
                                .seed = g->seed * 0x9E3779B97F4A7C15ull + (uint64_t)j * M2_TEAM_MAX + (uint64_t)k,
                                .stop_tokens = &ag->tok->eos_id, .n_stop_tokens = 1, .stop_strings = newline,
                                .n_stop_strings = 1, .token_text = token_text, .ud = (void *)ag->tok,
                                .streams = stream};
            rc = m2_generate(ag->model, ag->adapter, m, (const int32_t *const *)prompts, plen, &gc, res, err);
            for (int i = 0; i < m; i++) {
                free(prompts[i]);
                prompts[i] = NULL;
                if (!rc && !(s[who[i]].msg[j] = message_of(ag->tok, &res[i], err))) rc = -1;
                m2_gen_result_free(&res[i]);   /* zeroes it: safe after a failed call too */
            }
        }
    }
    for (int i = first; i < first + count && !rc; i++)
        s[i].reward = s[i].n_turns > 0 && m2_qa_check(&qs->q[s[i].task], s[i].msg[s[i].n_turns - 1]) ? 1.f : 0.f;
    if (rc) for (int i = 0; i < n; i++) m2_team_sample_free(&s[i]);
    free(prompts);
    free(plen);
    free(who);
    free(stream);
    free(res);
    return rc;
}

int m2_team_pack(const m2_team *t, int agent, const m2_qa_set *qs, const m2_team_sample *s, int n, int max_tokens,
                 m2_packed_batch *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (agent < 0 || agent >= t->n) return m2_errorf(err, M2_EINVAL, "team: agent %d of %d", agent, t->n);
    m2_packed *p = calloc((size_t)(n ? n : 1), sizeof *p);
    if (!p) return m2_errorf(err, M2_ENOMEM, "team: out of memory");
    int rc = 0, np = 0;
    for (int i = 0; i < n && !rc; i++) {
        m2_traj tr;
        if ((rc = m2_team_context(qs->q[s[i].task].question, &s[i], s[i].n_turns, &tr, err))) break;
        rc = m2_pack_traj(t->agent[agent].tok, &tr, max_tokens, &p[np], err);
        m2_traj_free(&tr);
        if (!rc) np++;
    }
    if (!rc && np > 0) rc = m2_packed_batch_build(p, np, out, err);   /* no sample (an empty block): an empty batch */
    for (int i = 0; i < np; i++) m2_packed_free(&p[i]);
    free(p);
    if (rc) return rc;
    /* only this agent's messages are actions; the others' are context */
    for (int r = 0; r < out->N; r++) {
        int a = out->tok_action[r];
        if (a < 0) continue;
        const m2_team_sample *si = &s[out->act_seq[a]];
        if (si->speaker[out->act_step[a]] != agent) { out->tok_action[r] = -1; out->tok_mask[r] = 0.f; }
    }
    return 0;
}

/* ---------------------------------------------------------------- rollout sources */

static void qa_drop(m2_team_qa *q) {
    for (int i = 0; i < q->n; i++) m2_team_sample_free(&q->s[i]);
    q->n = q->first = q->count = 0;
}

void m2_team_qa_free(m2_team_qa *q) {
    qa_drop(q);
    free(q->s);
    q->s = NULL;
    q->cap = 0;
}

static int qa_play(void *ud, const int *tasks, int n_tasks, int G, uint64_t id0, int first, int count,
                   const m2_team_gen *g, float *R, m2_err *err) {
    m2_team_qa *q = ud;
    int n = n_tasks * G;
    qa_drop(q);
    if (n > q->cap) {
        m2_team_sample *ns = realloc(q->s, (size_t)n * sizeof *ns);
        if (!ns) return m2_errorf(err, M2_ENOMEM, "team: out of memory");
        q->s = ns;
        q->cap = n;
    }
    for (int i = 0; i < n; i++) q->s[i] = (m2_team_sample){.task = tasks[i / G], .id = id0 + (uint64_t)i};
    if (m2_team_play_block(q->team, q->qs, q->s, n, first, count, g, err)) return -1;
    q->n = n;
    q->first = first;
    q->count = count;
    for (int i = first; i < first + count; i++) {
        if (q->reward) q->s[i].reward = q->reward(q->reward_ud, &q->qs->q[q->s[i].task], &q->s[i]);
        R[i] = q->s[i].reward;
    }
    return 0;
}

static int qa_pack(void *ud, int agent, int max_tokens, m2_packed_batch *pb, int **seq_sample, m2_err *err) {
    m2_team_qa *q = ud;
    *seq_sample = NULL;
    if (m2_team_pack(q->team, agent, q->qs, q->s + q->first, q->count, max_tokens, pb, err)) return -1;
    int *map = malloc((size_t)(pb->n_seq > 0 ? pb->n_seq : 1) * sizeof *map);
    if (!map) {
        m2_packed_batch_free(pb);
        return m2_errorf(err, M2_ENOMEM, "team: out of memory");
    }
    for (int i = 0; i < pb->n_seq; i++) map[i] = q->first + i;   /* one sequence a sample */
    *seq_sample = map;
    return 0;
}

m2_team_source m2_team_qa_source(m2_team_qa *q) { return (m2_team_source){.ud = q, .play = qa_play, .pack = qa_pack}; }
