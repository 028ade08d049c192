#include "agent/model_policy.h"
#include <stdlib.h>
#include <string.h>

/* A byte-level model may emit a partial UTF-8 sequence; the text goes back into contexts that are
 * encoded again, so invalid bytes become '?'. */
static void utf8_sanitize(char *s, size_t len) {
    size_t off = 0, bad;
    while (off < len && m2_utf8_check(s + off, len - off, &bad) != 0) {
        s[off + bad] = '?';
        off += bad + 1;
    }
}

/* Detokenizer hook for the newline stop string: the text of one token. */
static int token_text(void *ud, int32_t token, char *buf, int cap) {
    const m2_tok_iface *t = ud;
    int n = t->decode(t->ctx, &token, 1, buf, cap, NULL);
    return n < 0 ? 0 : (n < cap ? n : cap - 1);
}

/* One role's cache: the tokens in kv (sequence 0) and the adapter they were computed with. */
struct m2_policy_kv {
    m2_kv_cache *kv;
    int32_t *ids;
    int n, cap;
    const m2_adapter *a;
};

void m2_model_policy_reset(m2_model_policy *mp) {
    for (int r = 0; r < 2; r++)
        if (mp->kv[r]) { mp->kv[r]->n = 0; if (mp->kv[r]->kv) mp->kv[r]->kv->len[0] = 0; }
}

void m2_model_policy_free(m2_model_policy *mp) {
    for (int r = 0; r < 2; r++) {
        if (!mp->kv[r]) continue;
        m2_kv_free(mp->kv[r]->kv);
        free(mp->kv[r]->ids);
        free(mp->kv[r]);
        mp->kv[r] = NULL;
    }
}

int m2_model_policy_cached(const m2_model_policy *mp, m2_role role) {
    const struct m2_policy_kv *c = mp->kv[role == M2_ROLE_SYS1 ? 0 : 1];
    return c ? c->n : 0;
}

/* An episode begins: its stream, its calls counted from 0, nothing cached. */
static void reset_hook(void *ctx, uint64_t stream) {
    m2_model_policy *mp = ctx;
    m2_model_policy_reset(mp);
    mp->stream = stream;
    mp->calls = 0;
}

/* The seed of the next call (generation or choice): call k of the episode draws from (seed, stream, k). */
static uint64_t call_seed(m2_model_policy *mp) { return m2_hash64(mp->seed ^ mp->stream) + (uint64_t)mp->calls++; }

/* The role's cache, able to hold `need` positions (allocated on first use, grown by doubling); its
 * content is dropped when it was computed with another adapter or had to grow. */
static struct m2_policy_kv *role_cache(m2_model_policy *mp, m2_role role, int need, m2_err *err) {
    m2_adapter *a = role == M2_ROLE_SYS1 ? mp->sys1 : mp->sys2;
    int r = role == M2_ROLE_SYS1 ? 0 : 1;
    if (!mp->kv[r] && !(mp->kv[r] = calloc(1, sizeof *mp->kv[r]))) {
        m2_errorf(err, M2_ENOMEM, "model policy: out of memory");
        return NULL;
    }
    struct m2_policy_kv *c = mp->kv[r];
    if (c->a != a) c->n = 0;   /* another adapter: nothing cached applies */
    if (need > mp->model->cfg.max_seq_len) need = mp->model->cfg.max_seq_len;
    if (!c->kv || c->kv->max_len < need) {
        int cap = c->kv && 2 * c->kv->max_len > need ? 2 * c->kv->max_len : need;
        m2_kv_free(c->kv);
        c->n = 0;
        if (!(c->kv = m2_kv_create(mp->model, 1, cap, err))) return NULL;
    }
    c->a = a;
    return c;
}

/* Generates from ids[n] with the role's adapter on the role's cache, reusing the longest prefix the
 * cache holds (the previous context of this role and what was generated from it); the cache then
 * holds this context and its output. */
static int cached_generate(m2_model_policy *mp, m2_role role, const int32_t *ids, int n, const m2_gen_config *g,
                           m2_gen_result *res, m2_err *err) {
    m2_adapter *a = role == M2_ROLE_SYS1 ? mp->sys1 : mp->sys2;
    /* as m2_generate: generation stops at the context (role_cache caps the positions there) */
    struct m2_policy_kv *c = role_cache(mp, role, n + g->max_new_tokens + 1, err);
    if (!c) return -1;
    int keep = 0;
    while (keep < c->n && keep < n && c->ids[keep] == ids[keep]) keep++;
    if (m2_generate_cached(mp->model, a, c->kv, ids, n, keep, g, res, err)) { c->n = 0; return -1; }
    int held = c->kv->len[0];   /* the prompt and all generated tokens but the last */
    if (held > c->cap) {
        int32_t *t = realloc(c->ids, (size_t)held * 2 * sizeof *t);
        if (!t) { c->n = 0; m2_gen_result_free(res); return m2_errorf(err, M2_ENOMEM, "model policy: out of memory"); }
        c->ids = t;
        c->cap = held * 2;
    }
    memcpy(c->ids, ids, (size_t)n * sizeof *ids);
    if (held > n) memcpy(c->ids + n, res->tokens, (size_t)(held - n) * sizeof *ids);
    c->n = held;
    return 0;
}

static int generate(void *ctx, m2_role role, const m2_traj *context, char **out, int *np, int *ng,
                    m2_err *err) {
    m2_model_policy *mp = ctx;
    *out = NULL;
    *np = *ng = 0;
    if (!mp->tok->decode) return m2_errorf(err, M2_EINVAL, "model policy: the tokenizer interface cannot decode");
    int max_new = mp->max_new_tokens > 0 ? mp->max_new_tokens : 32;
    int max_ctx = mp->max_context > 0 ? mp->max_context : mp->model->cfg.max_seq_len - max_new;
    if (max_ctx <= 0) return m2_errorf(err, M2_ECONFIG, "model policy: max_new_tokens %d leaves no context", max_new);
    int32_t *ids;
    int n;
    m2_err pe = {0};
    if (m2_pack_context(mp->tok, context, max_ctx, &ids, &n, &pe)) {
        /* The prompt and the current state alone exceed the context window: the policy cannot act,
         * which the loop records as an unparsable output (an invalid step), not a crash. */
        if (pe.code != M2_EINVAL) { if (err) *err = pe; return -1; }
        *out = strdup("");
        return *out ? 0 : m2_errorf(err, M2_ENOMEM, "model policy: out of memory");
    }
    if (n == 0) { free(ids); return m2_errorf(err, M2_EINVAL, "model policy: empty context"); }
    m2_gen_config g = {0};
    g.max_new_tokens = max_new;
    g.sampler = mp->sampler;
    g.seed = call_seed(mp);
    g.stop_tokens = &mp->tok->eos_id;
    g.n_stop_tokens = 1;
    static const char *const newline[1] = {"\n"};
    {   /* sub-goals and actions are one line: stop at the first newline */
        g.stop_strings = newline;
        g.n_stop_strings = 1;
        g.token_text = token_text;
        g.ud = (void *)mp->tok;
    }
    m2_gen_result res = {0};
    int rc = cached_generate(mp, role, ids, n, &g, &res, err);
    free(ids);
    if (rc) return -1;
    int keep = res.n;
    if (keep > 0 && res.tokens[keep - 1] == mp->tok->eos_id) keep--;
    int len = mp->tok->decode(mp->tok->ctx, res.tokens, keep, NULL, 0, err);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!text || mp->tok->decode(mp->tok->ctx, res.tokens, keep, text, len + 1, err) < 0) {
        free(text);
        m2_gen_result_free(&res);
        if (len >= 0) return m2_errorf(err, M2_ENOMEM, "model policy: out of memory");
        return -1;
    }
    utf8_sanitize(text, strlen(text));
    *out = text;
    *np = n;
    *ng = res.n;
    m2_gen_result_free(&res);
    return 0;
}

/* Score mode: every candidate's log-prob given the context (its tokens and EOS, as packed for
 * training), then the pick. The cache afterwards holds the context but its last token. */
static int choose(void *ctx, m2_role role, const m2_traj *context, const char *const *cands, int n, int *pick,
                  int *np, int *ng, m2_err *err) {
    m2_model_policy *mp = ctx;
    *pick = -1;
    *np = *ng = 0;
    if (n <= 0) return m2_errorf(err, M2_EINVAL, "model policy: no candidates to choose from");
    int32_t **ct = calloc((size_t)n, sizeof *ct);
    int *cl = calloc((size_t)n, sizeof *cl), rc = -1, maxL = 0, total = 0;
    float *score = calloc((size_t)n, sizeof *score);
    int32_t *ids = NULL;
    if (!ct || !cl || !score) { m2_errorf(err, M2_ENOMEM, "model policy: out of memory"); goto out; }
    for (int i = 0; i < n; i++) {
        int k = mp->tok->encode(mp->tok->ctx, cands[i], NULL, 0, err);
        if (k < 0) goto out;
        if (!(ct[i] = malloc((size_t)(k + 1) * sizeof **ct))) { m2_errorf(err, M2_ENOMEM, "model policy: out of memory"); goto out; }
        if (k > 0 && mp->tok->encode(mp->tok->ctx, cands[i], ct[i], k, err) < 0) goto out;
        ct[i][k] = mp->tok->eos_id;   /* an action ends with EOS, as in the packed training sequences */
        cl[i] = k + 1;
        total += cl[i];
        if (cl[i] > maxL) maxL = cl[i];
    }
    int max_new = mp->max_new_tokens > 0 ? mp->max_new_tokens : 32;
    int max_ctx = mp->max_context > 0 ? mp->max_context : mp->model->cfg.max_seq_len - max_new;
    if (max_ctx > mp->model->cfg.max_seq_len - maxL + 1) max_ctx = mp->model->cfg.max_seq_len - maxL + 1;
    if (max_ctx <= 0) { m2_errorf(err, M2_ECONFIG, "model policy: candidates of %d tokens leave no context", maxL); goto out; }
    int len;
    m2_err pe = {0};
    if (m2_pack_context(mp->tok, context, max_ctx, &ids, &len, &pe)) {
        /* as generate: a context that cannot fit is an output the loop records as invalid */
        if (pe.code != M2_EINVAL) { if (err) *err = pe; goto out; }
        rc = 0;
        goto out;
    }
    if (len == 0) { m2_errorf(err, M2_EINVAL, "model policy: empty context"); goto out; }
    struct m2_policy_kv *c = role_cache(mp, role, len, err);
    if (!c) goto out;
    int keep = 0;
    while (keep < c->n && keep < len && c->ids[keep] == ids[keep]) keep++;
    m2_adapter *a = role == M2_ROLE_SYS1 ? mp->sys1 : mp->sys2;
    if (m2_kv_score(mp->model, a, c->kv, ids, len, keep, n, (const int32_t *const *)ct, cl, mp->score_mean, score, err)) {
        c->n = 0;
        goto out;
    }
    int held = c->kv->len[0];   /* the context but its last token */
    if (held > c->cap) {
        int32_t *t = realloc(c->ids, (size_t)held * 2 * sizeof *t);
        if (!t) { c->n = 0; m2_errorf(err, M2_ENOMEM, "model policy: out of memory"); goto out; }
        c->ids = t;
        c->cap = held * 2;
    }
    memcpy(c->ids, ids, (size_t)held * sizeof *ids);
    c->n = held;
    m2_rng rng;
    m2_rng_seed_stream(&rng, call_seed(mp), 0);   /* the stream a generation of this call samples from */
    *pick = m2_choose_scored(score, n, mp->sampler.temperature, &rng);
    *np = len;
    *ng = total;
    rc = 0;
out:
    if (ct) for (int i = 0; i < n; i++) free(ct[i]);
    free(ct);
    free(cl);
    free(score);
    free(ids);
    return rc;
}

m2_policy m2_model_policy_as(m2_model_policy *mp) {
    return (m2_policy){.ctx = mp, .generate = generate, .reset = reset_hook, .choose = choose};
}

/* ---- io/ tokenizer adapter ---- */

static int tk_encode(void *ctx, const char *text, int32_t *out, int cap, m2_err *err) {
    m2_tokens t = {0};
    if (m2_tokenizer_encode(ctx, text, strlen(text), M2_ENC_NO_SPECIAL, &t, err)) { m2_tokens_free(&t); return -1; }
    int n = (int)t.n;
    if (out && n > 0 && cap > 0) memcpy(out, t.ids, (size_t)(n < cap ? n : cap) * sizeof(int32_t));
    m2_tokens_free(&t);
    return n;
}

static int tk_decode(void *ctx, const int32_t *ids, int n, char *out, int cap, m2_err *err) {
    char *s;
    size_t len;
    if (m2_tokenizer_decode(ctx, ids, (size_t)n, M2_DEC_SKIP_SPECIAL, &s, &len, err)) return -1;
    if (out && cap > 0) {
        size_t k = len < (size_t)cap - 1 ? len : (size_t)cap - 1;
        memcpy(out, s, k);
        out[k] = 0;
    }
    free(s);
    return (int)len;
}

void m2_tok_iface_from_tokenizer(m2_tok_iface *t, const m2_tokenizer *tok) {
    memset(t, 0, sizeof *t);
    t->ctx = (void *)tok;
    t->encode = tk_encode;
    t->decode = tk_decode;
    t->eos_id = m2_tokenizer_eos(tok);
    t->bos_id = m2_tokenizer_bos(tok);
    t->pad_id = m2_tokenizer_pad(tok) >= 0 ? m2_tokenizer_pad(tok) : t->eos_id;
    t->bos = (t->bos_id >= 0 && m2_tokenizer_add_bos(tok)) ? M2_BOS_SEQUENCE : M2_BOS_NONE;
    t->n_vocab = m2_tokenizer_n_tokens(tok);
}
