#include "data/pack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte tokenizer ---- */

static int byte_encode(void *ctx, const char *text, int32_t *out, int cap, m2_err *err) {
    (void)ctx; (void)err;
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++, n++)
        if (n < cap) out[n] = *p;
    return n;
}

static int byte_decode(void *ctx, const int32_t *ids, int n, char *out, int cap, m2_err *err) {
    (void)ctx;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > 258) return m2_errorf(err, M2_EINVAL, "byte tokenizer: id %d out of range", ids[i]);
        if (ids[i] >= 256) continue;   /* specials decode to nothing */
        if (k + 1 < cap) out[k] = (char)ids[i];
        k++;
    }
    if (cap > 0) out[k < cap ? k : cap - 1] = 0;
    return k;
}

void m2_byte_tok_iface(m2_tok_iface *t, int bos_policy) {
    memset(t, 0, sizeof *t);
    t->encode = byte_encode;
    t->decode = byte_decode;
    t->eos_id = 256;
    t->bos_id = 257;
    t->pad_id = 258;
    t->bos = bos_policy;
    t->n_vocab = 259;
}

/* ---- trajectories ---- */

void m2_traj_init(m2_traj *t) { memset(t, 0, sizeof *t); }

void m2_traj_free(m2_traj *t) {
    if (!t) return;
    free(t->prompt);
    for (int i = 0; i < t->n_states; i++) free(t->states[i]);
    for (int i = 0; i < t->n_actions; i++) free(t->actions[i]);
    free(t->states); free(t->actions); free(t->rewards); free(t->dones);
    memset(t, 0, sizeof *t);
}

static char *dupstr(const char *s) {
    size_t n = strlen(s ? s : "");
    char *d = malloc(n + 1);
    if (d) memcpy(d, s ? s : "", n + 1);
    return d;
}

int m2_traj_set_prompt(m2_traj *t, const char *prompt, m2_err *err) {
    char *d = dupstr(prompt);
    if (!d) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for the prompt");
    free(t->prompt);
    t->prompt = d;
    return 0;
}

int m2_traj_push_state(m2_traj *t, const char *text, m2_err *err) {
    if (t->n_states > t->n_actions)
        return m2_errorf(err, M2_EINVAL, "trajectory: state %d pushed before action %d", t->n_states, t->n_actions);
    if (t->n_states == t->cap_states) {
        int cap = t->cap_states ? 2 * t->cap_states : 8;
        char **s = realloc(t->states, (size_t)cap * sizeof *s);
        if (!s) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for states");
        t->states = s;
        t->cap_states = cap;
    }
    char *d = dupstr(text);
    if (!d) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for a state");
    t->states[t->n_states++] = d;
    return 0;
}

int m2_traj_push_action(m2_traj *t, const char *text, float reward, float done, m2_err *err) {
    if (t->n_actions >= t->n_states)
        return m2_errorf(err, M2_EINVAL, "trajectory: action %d pushed without its state", t->n_actions);
    if (t->n_actions == t->cap_actions) {
        int cap = t->cap_actions ? 2 * t->cap_actions : 8;
        char **a = realloc(t->actions, (size_t)cap * sizeof *a);
        if (!a) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for actions");
        t->actions = a;
        float *r = realloc(t->rewards, (size_t)cap * sizeof *r);
        if (!r) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for rewards");
        t->rewards = r;
        float *d = realloc(t->dones, (size_t)cap * sizeof *d);
        if (!d) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for dones");
        t->dones = d;
        t->cap_actions = cap;
    }
    char *d = dupstr(text);
    if (!d) return m2_errorf(err, M2_ENOMEM, "trajectory: out of memory for an action");
    t->actions[t->n_actions] = d;
    t->rewards[t->n_actions] = reward;
    t->dones[t->n_actions] = done;
    t->n_actions++;
    return 0;
}

int m2_traj_copy(m2_traj *dst, const m2_traj *src, m2_err *err) {
    m2_traj_init(dst);
    if (m2_traj_set_prompt(dst, src->prompt, err)) goto fail;
    for (int t = 0; t < src->n_states || t < src->n_actions; t++) {
        if (t < src->n_states && m2_traj_push_state(dst, src->states[t], err)) goto fail;
        if (t < src->n_actions &&
            m2_traj_push_action(dst, src->actions[t], src->rewards ? src->rewards[t] : 0,
                                src->dones ? src->dones[t] : 0, err)) goto fail;
    }
    return 0;
fail:
    m2_traj_free(dst);
    return -1;
}

char *m2_traj_render(const m2_traj *t) {
    size_t n = strlen(t->prompt ? t->prompt : "") + 2;
    for (int i = 0; i < t->n_states; i++) n += strlen(t->states[i]) + 1;
    for (int i = 0; i < t->n_actions; i++) n += strlen(t->actions[i]) + 7;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "%s", t->prompt ? t->prompt : "");
    for (int i = 0; i < t->n_states || i < t->n_actions; i++) {
        if (i < t->n_states) p += sprintf(p, "\n%s", t->states[i]);
        if (i < t->n_actions) p += sprintf(p, "\n%s<EOS>", t->actions[i]);
    }
    return s;
}

/* ---- packing ---- */

typedef struct idbuf { int32_t *v; int n, cap; } idbuf;

static int idbuf_reserve(idbuf *b, int extra, m2_err *err) {
    if (extra < 0 || b->n > (1 << 30) - extra)
        return m2_errorf(err, M2_EINVAL, "pack: sequence longer than 2^30 tokens");
    if (b->n + extra <= b->cap) return 0;
    int cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    int32_t *v = realloc(b->v, (size_t)cap * sizeof *v);
    if (!v) return m2_errorf(err, M2_ENOMEM, "pack: out of memory for %d tokens", cap);
    b->v = v;
    b->cap = cap;
    return 0;
}

/* Appends the ids of text; returns the count or -1. */
static int encode_append(const m2_tok_iface *tok, const char *text, idbuf *b, m2_err *err) {
    int need = tok->encode(tok->ctx, text ? text : "", b->v ? b->v + b->n : NULL,
                           b->v ? b->cap - b->n : 0, err);
    if (need < 0) return -1;
    if (b->n + need > b->cap) {
        if (idbuf_reserve(b, need, err)) return -1;
        int again = tok->encode(tok->ctx, text ? text : "", b->v + b->n, b->cap - b->n, err);
        if (again != need) return m2_errorf(err, M2_EINVAL, "pack: tokenizer returned %d then %d ids for one text", need, again);
    }
    b->n += need;
    return need;
}

static int idbuf_push(idbuf *b, int32_t id, m2_err *err) {
    if (idbuf_reserve(b, 1, err)) return -1;
    b->v[b->n++] = id;
    return 0;
}

void m2_packed_free(m2_packed *p) {
    if (!p) return;
    free(p->ids); free(p->segs);
    free(p->act_begin); free(p->act_end); free(p->state_last); free(p->next_state_last);
    free(p->reward); free(p->done); free(p->q_mask);
    memset(p, 0, sizeof *p);
}

int m2_pack_traj(const m2_tok_iface *tok, const m2_traj *tr, int max_tokens, m2_packed *out,
                 m2_err *err) {
    memset(out, 0, sizeof *out);
    int T = tr->n_actions;
    if (tr->n_states != T && tr->n_states != T + 1)
        return m2_errorf(err, M2_EINVAL, "pack: %d states for %d actions (need %d or %d)", tr->n_states, T, T, T + 1);
    if (T == 0) return m2_errorf(err, M2_EINVAL, "pack: trajectory without actions");
    int nseg_max = 1 + tr->n_states + T;
    idbuf b = {0};
    out->segs = calloc((size_t)nseg_max, sizeof *out->segs);
    out->act_begin = calloc((size_t)T, sizeof(int));
    out->act_end = calloc((size_t)T, sizeof(int));
    out->state_last = calloc((size_t)T, sizeof(int));
    out->next_state_last = calloc((size_t)T, sizeof(int));
    out->reward = calloc((size_t)T, sizeof(float));
    out->done = calloc((size_t)T, sizeof(float));
    out->q_mask = calloc((size_t)T, sizeof(float));
    if (!out->segs || !out->act_begin || !out->act_end || !out->state_last || !out->next_state_last ||
        !out->reward || !out->done || !out->q_mask) {
        m2_errorf(err, M2_ENOMEM, "pack: out of memory for %d actions", T);
        goto fail;
    }
    out->n_actions_src = T;
    /* prompt (with the BOS, if any) */
    if (tok->bos == M2_BOS_SEQUENCE && idbuf_push(&b, tok->bos_id, err)) goto fail;
    if (encode_append(tok, tr->prompt, &b, err) < 0) goto fail;
    if (b.n > 0) out->segs[out->n_segs++] = (m2_segment){M2_SEG_PROMPT, -1, 0, b.n};
    int limit = max_tokens > 0 ? max_tokens : (1 << 30);
    for (int t = 0; t < tr->n_states; t++) {
        int mark = b.n, seg_mark = out->n_segs;
        int s0 = b.n;
        int ns = encode_append(tok, tr->states[t], &b, err);
        if (ns < 0) goto fail;
        if (tok->state_sep) {
            if (idbuf_push(&b, tok->eos_id, err)) goto fail;
            ns++;
        }
        if (ns == 0) {
            m2_errorf(err, M2_EINVAL, "pack: state %d encodes to no tokens (V needs its last token)", t);
            goto fail;
        }
        if (t == T) {   /* the final state s_{T+1}: optional, kept only when it fits */
            if (b.n > limit) { b.n = mark; break; }
            out->segs[out->n_segs++] = (m2_segment){M2_SEG_STATE, t, s0, b.n};
            out->has_final_state = 1;
            out->next_state_last[t - 1] = b.n - 1;
            break;
        }
        if (b.n > limit) {   /* s_t does not fit: previous action loses its next state */
            b.n = mark;
            break;
        }
        out->segs[out->n_segs++] = (m2_segment){M2_SEG_STATE, t, s0, b.n};
        int a0 = b.n;
        if (encode_append(tok, tr->actions[t], &b, err) < 0 || idbuf_push(&b, tok->eos_id, err)) goto fail;
        if (b.n > limit) {   /* a_t does not fit: s_t stays as the bootstrap state of a_{t-1} */
            b.n = s0 + ns;
            out->has_final_state = 1;
            if (t > 0) out->next_state_last[t - 1] = s0 + ns - 1;
            else { b.n = mark; out->n_segs = seg_mark; out->has_final_state = 0; }
            break;
        }
        out->segs[out->n_segs++] = (m2_segment){M2_SEG_ACTION, t, a0, b.n};
        if (a0 == 0) {   /* impossible: the state is non-empty; kept as a guard for the target row */
            m2_errorf(err, M2_EINVAL, "pack: action %d starts the sequence", t);
            goto fail;
        }
        out->act_begin[t] = a0;
        out->act_end[t] = b.n;
        out->state_last[t] = a0 - 1;
        out->next_state_last[t] = -1;
        if (t > 0) out->next_state_last[t - 1] = s0 + ns - 1;
        out->reward[t] = tr->rewards ? tr->rewards[t] : 0.f;
        out->done[t] = tr->dones ? tr->dones[t] : 0.f;
        out->n_actions = t + 1;
    }
    if (out->n_actions == 0) {
        m2_errorf(err, M2_ESHAPE, "pack: prompt + first state + first action need more than %d tokens", max_tokens);
        goto fail;
    }
    for (int t = 0; t < out->n_actions; t++)
        out->q_mask[t] = (out->done[t] >= 1.f || out->next_state_last[t] >= 0) ? 1.f : 0.f;
    out->ids = b.v;
    out->n_tok = b.n;
    return 0;
fail:
    free(b.v);
    m2_packed_free(out);
    return -1;
}

int m2_pack_context(const m2_tok_iface *tok, const m2_traj *ctx, int max_tokens, int32_t **ids,
                    int *n, m2_err *err) {
    *ids = NULL;
    *n = 0;
    int nseg = ctx->n_states + ctx->n_actions;
    idbuf b = {0};
    int *seg_start = malloc((size_t)(nseg + 1) * sizeof *seg_start);
    if (!seg_start) return m2_errorf(err, M2_ENOMEM, "pack: out of memory");
    if (tok->bos == M2_BOS_SEQUENCE && idbuf_push(&b, tok->bos_id, err)) goto fail;
    if (encode_append(tok, ctx->prompt, &b, err) < 0) goto fail;
    int prompt_end = b.n, k = 0;
    /* segments in order s_0 a_0 s_1 a_1 ... ; seg_start[k] = first token of segment k */
    for (int t = 0; t < ctx->n_states || t < ctx->n_actions; t++) {
        if (t < ctx->n_states) {
            seg_start[k++] = b.n;
            if (encode_append(tok, ctx->states[t], &b, err) < 0) goto fail;
            if (tok->state_sep && idbuf_push(&b, tok->eos_id, err)) goto fail;
        }
        if (t < ctx->n_actions) {
            seg_start[k++] = b.n;
            if (encode_append(tok, ctx->actions[t], &b, err) < 0 || idbuf_push(&b, tok->eos_id, err)) goto fail;
        }
    }
    seg_start[k] = b.n;
    if (max_tokens > 0 && b.n > max_tokens) {
        /* drop whole (state, action) pairs from the oldest until the rest fits after the prompt */
        int drop = 0;
        while (drop + 2 < k && prompt_end + (b.n - seg_start[drop]) > max_tokens) drop += 2;
        if (prompt_end + (b.n - seg_start[drop]) > max_tokens) {
            m2_errorf(err, M2_EINVAL, "pack: prompt and current state need %d tokens, more than %d",
                      prompt_end + (b.n - seg_start[drop]), max_tokens);
            goto fail;
        }
        memmove(b.v + prompt_end, b.v + seg_start[drop], (size_t)(b.n - seg_start[drop]) * sizeof(int32_t));
        b.n = prompt_end + (b.n - seg_start[drop]);
    }
    free(seg_start);
    *ids = b.v;
    *n = b.n;
    return 0;
fail:
    free(seg_start);
    free(b.v);
    return -1;
}

/* ---- batches ---- */

void m2_packed_batch_free(m2_packed_batch *b) {
    if (!b) return;
    free(b->tokens); free(b->seq_len); free(b->seq_off); free(b->seq_key); free(b->targets); free(b->tok_action);
    free(b->tok_mask); free(b->act_seq); free(b->act_step); free(b->act_ntok);
    free(b->q_pos); free(b->v_pos); free(b->next_v_pos);
    free(b->reward); free(b->done); free(b->q_mask);
    memset(b, 0, sizeof *b);
}

/* The arrays of a batch of n_seq sequences, N tokens and A actions (out zeroed first). */
static int batch_alloc(m2_packed_batch *out, int n_seq, long N, long A, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (N > (1L << 30)) return m2_errorf(err, M2_EINVAL, "batch: %ld tokens is too many", N);
    out->n_seq = n_seq;
    out->N = (int)N;
    out->n_actions = (int)A;
    size_t n = (size_t)(N ? N : 1), a = (size_t)(A ? A : 1);
    out->tokens = malloc(n * sizeof(int32_t));
    out->targets = malloc(n * sizeof(int32_t));
    out->tok_action = malloc(n * sizeof(int32_t));
    out->tok_mask = calloc(n, sizeof(float));
    out->seq_len = malloc((size_t)n_seq * sizeof(int));
    out->seq_off = malloc((size_t)n_seq * sizeof(int));
    out->seq_key = malloc((size_t)n_seq * sizeof(int32_t));
    out->act_seq = malloc(a * sizeof(int));
    out->act_step = malloc(a * sizeof(int));
    out->act_ntok = malloc(a * sizeof(int));
    out->q_pos = malloc(a * sizeof(int));
    out->v_pos = malloc(a * sizeof(int));
    out->next_v_pos = malloc(a * sizeof(int));
    out->reward = malloc(a * sizeof(float));
    out->done = malloc(a * sizeof(float));
    out->q_mask = malloc(a * sizeof(float));
    if (!out->tokens || !out->targets || !out->tok_action || !out->tok_mask || !out->seq_len ||
        !out->seq_off || !out->seq_key || !out->act_seq || !out->act_step || !out->act_ntok || !out->q_pos ||
        !out->v_pos || !out->next_v_pos || !out->reward || !out->done || !out->q_mask) {
        m2_packed_batch_free(out);
        return m2_errorf(err, M2_ENOMEM, "batch: out of memory for %ld tokens", N);
    }
    return 0;
}

int m2_packed_batch_build(const m2_packed *seqs, int n_seq, m2_packed_batch *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (n_seq <= 0) return m2_errorf(err, M2_EINVAL, "batch: no sequences");
    long N = 0, A = 0;
    for (int s = 0; s < n_seq; s++) { N += seqs[s].n_tok; A += seqs[s].n_actions; }
    if (batch_alloc(out, n_seq, N, A, err)) return -1;
    int off = 0, ga = 0;
    for (int s = 0; s < n_seq; s++) {
        const m2_packed *p = &seqs[s];
        out->seq_len[s] = p->n_tok;
        out->seq_off[s] = off;
        out->seq_key[s] = s;
        memcpy(out->tokens + off, p->ids, (size_t)p->n_tok * sizeof(int32_t));
        for (int i = 0; i < p->n_tok; i++) {
            out->targets[off + i] = i + 1 < p->n_tok ? p->ids[i + 1] : -1;
            out->tok_action[off + i] = -1;
        }
        for (int t = 0; t < p->n_actions; t++, ga++) {
            /* row r predicts token r+1: the action's tokens [begin, end) are predicted by rows
             * [begin-1, end-1) */
            for (int r = p->act_begin[t] - 1; r < p->act_end[t] - 1; r++) {
                out->tok_action[off + r] = ga;
                out->tok_mask[off + r] = 1.f;
            }
            out->act_seq[ga] = s;
            out->act_step[ga] = t;
            out->act_ntok[ga] = p->act_end[t] - p->act_begin[t];
            out->q_pos[ga] = off + p->act_end[t] - 1;
            out->v_pos[ga] = off + p->state_last[t];
            out->next_v_pos[ga] = p->next_state_last[t] >= 0 ? off + p->next_state_last[t] : -1;
            out->reward[ga] = p->reward[t];
            out->done[ga] = p->done[t];
            out->q_mask[ga] = p->q_mask[t];
        }
        off += p->n_tok;
    }
    out->act_total = out->n_actions;
    return 0;
}

int m2_packed_batch_padded(const m2_packed_batch *b, int32_t pad_id, int32_t **ids, int *T,
                           m2_err *err) {
    int Tm = 0;
    for (int s = 0; s < b->n_seq; s++) if (b->seq_len[s] > Tm) Tm = b->seq_len[s];
    int32_t *v = malloc((size_t)b->n_seq * (size_t)(Tm ? Tm : 1) * sizeof *v);
    if (!v) return m2_errorf(err, M2_ENOMEM, "batch: out of memory for %d x %d padded ids", b->n_seq, Tm);
    for (int s = 0; s < b->n_seq; s++)
        for (int p = 0; p < Tm; p++)
            v[(size_t)s * Tm + p] = p < b->seq_len[s] ? b->tokens[b->seq_off[s] + p] : pad_id;
    *ids = v;
    *T = Tm;
    return 0;
}

int m2_packed_batch_part(const m2_packed_batch *b, int s0, int s1, m2_packed_batch *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (s0 < 0 || s1 > b->n_seq || s0 >= s1)
        return m2_errorf(err, M2_EINVAL, "batch: part [%d, %d) of %d sequences", s0, s1, b->n_seq);
    int r0 = b->seq_off[s0], r1 = b->seq_off[s1 - 1] + b->seq_len[s1 - 1];
    /* the part's actions: a contiguous run, as m2_packed_batch_build numbers them in sequence order */
    int a0 = 0, a1;
    while (a0 < b->n_actions && b->act_seq[a0] < s0) a0++;
    for (a1 = a0; a1 < b->n_actions && b->act_seq[a1] < s1; a1++)
        if (b->act_seq[a1] < s0) return m2_errorf(err, M2_EINVAL, "batch: actions not in sequence order");
    if (batch_alloc(out, s1 - s0, r1 - r0, a1 - a0, err)) return -1;
    size_t n = (size_t)(r1 - r0);
    memcpy(out->tokens, b->tokens + r0, n * sizeof(int32_t));
    memcpy(out->targets, b->targets + r0, n * sizeof(int32_t));
    memcpy(out->tok_mask, b->tok_mask + r0, n * sizeof(float));
    for (size_t i = 0; i < n; i++) out->tok_action[i] = b->tok_action[r0 + i] >= 0 ? b->tok_action[r0 + i] - a0 : -1;
    for (int s = s0; s < s1; s++) {
        out->seq_len[s - s0] = b->seq_len[s];
        out->seq_off[s - s0] = b->seq_off[s] - r0;
        out->seq_key[s - s0] = b->seq_key[s];
    }
    for (int a = a0; a < a1; a++) {
        int k = a - a0;
        out->act_seq[k] = b->act_seq[a] - s0;
        out->act_step[k] = b->act_step[a];
        out->act_ntok[k] = b->act_ntok[a];
        out->q_pos[k] = b->q_pos[a] - r0;
        out->v_pos[k] = b->v_pos[a] - r0;
        out->next_v_pos[k] = b->next_v_pos[a] >= 0 ? b->next_v_pos[a] - r0 : -1;
        out->reward[k] = b->reward[a];
        out->done[k] = b->done[a];
        out->q_mask[k] = b->q_mask[a];
    }
    out->act_base = b->act_base + a0;
    out->act_total = b->act_total;
    return 0;
}
