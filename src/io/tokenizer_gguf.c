/* GGUF metadata (tokenizer.ggml.*) -> m2_tokenizer_spec. */
#include <stdlib.h>
#include <string.h>
#include "io/gguf.h"
#include "io/tokenizer_impl.h"

/* An optional token id key: -1 when absent; error when present but not a valid id. */
static int opt_id(const m2_gguf *g, const char *key, int32_t n, int32_t *out, m2_err *err) {
    *out = -1;
    if (!m2_gguf_find(g, key)) return 0;
    int64_t v = 0;
    if (m2_gguf_get_i64(g, key, &v, err)) return -1;
    if (v < 0 || v >= n) return m2_errorf(err, M2_EFORMAT, "%s: %s = %lld is out of range [0, %d)", g->path, key, (long long)v, n);
    *out = (int32_t)v;
    return 0;
}

m2_tokenizer *m2_tokenizer_from_gguf(const m2_gguf *g, m2_err *err) {
    const char *name = g->path ? g->path : "gguf";
    const char *model = m2_gguf_get_str(g, "tokenizer.ggml.model", err);
    if (!model) { m2_err_prefix(err, "%s: no tokenizer: ", name); return NULL; }
    m2_tokenizer_spec spec = {0};
    spec.name = name;
    if (!strcmp(model, "llama")) spec.model = M2_TOKENIZER_SPM;
    else if (!strcmp(model, "gpt2")) spec.model = M2_TOKENIZER_BPE;
    else {
        m2_errorf(err, M2_EUNSUPPORTED, "%s: tokenizer.ggml.model \"%s\" is not supported (llama, gpt2)", name, model);
        return NULL;
    }
    const m2_gguf_kv *toks = m2_gguf_get_arr(g, "tokenizer.ggml.tokens", M2_GGUF_STRING, err);
    if (!toks) return NULL;
    if (toks->n == 0 || toks->n > (1u << 24)) {
        m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.tokens has %llu entries (need 1..%d)", name, (unsigned long long)toks->n, 1 << 24);
        return NULL;
    }
    int32_t n = (int32_t)toks->n;
    for (int32_t i = 0; i < n; i++)
        if (strlen(toks->strs[i]) != toks->str_lens[i]) {
            m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.tokens[%d] holds a NUL byte", name, i);
            return NULL;
        }
    const m2_gguf_kv *kv;
    if ((kv = m2_gguf_find(g, "tokenizer.ggml.scores"))) {
        if (!(kv = m2_gguf_get_arr(g, "tokenizer.ggml.scores", M2_GGUF_F32, err))) return NULL;
        if (kv->n != toks->n) { m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.scores has %llu entries, tokens %d", name, (unsigned long long)kv->n, n); return NULL; }
        spec.scores = kv->arr;
    }
    if ((kv = m2_gguf_find(g, "tokenizer.ggml.token_type"))) {
        if (!(kv = m2_gguf_get_arr(g, "tokenizer.ggml.token_type", M2_GGUF_I32, err))) return NULL;
        if (kv->n != toks->n) { m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.token_type has %llu entries, tokens %d", name, (unsigned long long)kv->n, n); return NULL; }
        spec.token_types = kv->arr;
    }
    spec.n_tokens = n;
    spec.tokens = (const char *const *)toks->strs;

    /* merges "left right" -> NUL-separated copies */
    char *pool = NULL;
    const char **merges = NULL;
    m2_tokenizer *t = NULL;
    if (m2_gguf_find(g, "tokenizer.ggml.merges")) {
        const m2_gguf_kv *mk = m2_gguf_get_arr(g, "tokenizer.ggml.merges", M2_GGUF_STRING, err);
        if (!mk) return NULL;
        if (mk->n > (1u << 24)) { m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.merges has too many entries", name); return NULL; }
        size_t total = 0;
        for (uint64_t m = 0; m < mk->n; m++) total += mk->str_lens[m] + 1;
        pool = malloc(total + 1);
        merges = malloc((2 * mk->n + 1) * sizeof *merges);
        if (!pool || !merges) { m2_errorf(err, M2_ENOMEM, "%s: out of memory for merges", name); goto done; }
        size_t at = 0;
        for (uint64_t m = 0; m < mk->n; m++) {
            const char *s = mk->strs[m];
            size_t l = mk->str_lens[m];
            const char *sp = l > 1 ? memchr(s + 1, ' ', l - 1) : NULL;
            if (!sp || strlen(s) != l || sp + 1 == s + l) {
                m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.merges[%llu] \"%.80s\": expected \"left right\"", name, (unsigned long long)m, s);
                goto done;
            }
            memcpy(pool + at, s, l + 1);
            pool[at + (size_t)(sp - s)] = 0;
            merges[2 * m] = pool + at;
            merges[2 * m + 1] = pool + at + (size_t)(sp - s) + 1;
            at += l + 1;
        }
        spec.n_merges = (int32_t)mk->n;
        spec.merges = merges;
    }

    if (spec.model == M2_TOKENIZER_BPE) {
        spec.pretok = M2_PRETOK_GPT2;
        if (m2_gguf_find(g, "tokenizer.ggml.pre")) {
            const char *pre = m2_gguf_get_str(g, "tokenizer.ggml.pre", err);
            if (!pre) goto done;
            if (m2_pretok_parse(pre, &spec.pretok) || spec.pretok == M2_PRETOK_NONE) {
                m2_errorf(err, M2_EUNSUPPORTED, "%s: tokenizer.ggml.pre \"%s\" is not supported (gpt-2, default, llama-bpe, qwen2)", name, pre);
                goto done;
            }
        }
        spec.ignore_merges = spec.pretok == M2_PRETOK_LLAMA3;   /* as llama.cpp does for Llama-3 */
        if (spec.n_merges == 0) { m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)", name); goto done; }
    } else {
        if (!spec.scores && spec.n_merges == 0) {
            m2_errorf(err, M2_EFORMAT, "%s: tokenizer.ggml.scores is missing (needed by a llama tokenizer)", name);
            goto done;
        }
        spec.space_prefix = m2_gguf_bool_or(g, "tokenizer.ggml.add_space_prefix", true) ? M2_SPACE_PREFIX_ALWAYS : M2_SPACE_PREFIX_NONE;
        spec.byte_fallback = 1;
        /* GGUF SPM ranks by score; the merges (rare in llama GGUFs) are not used. */
        spec.n_merges = 0;
        spec.merges = NULL;
    }
    if (opt_id(g, "tokenizer.ggml.bos_token_id", n, &spec.bos_id, err) ||
        opt_id(g, "tokenizer.ggml.eos_token_id", n, &spec.eos_id, err) ||
        opt_id(g, "tokenizer.ggml.padding_token_id", n, &spec.pad_id, err) ||
        opt_id(g, "tokenizer.ggml.unknown_token_id", n, &spec.unk_id, err))
        goto done;
    if (spec.unk_id < 0 && spec.token_types)
        for (int32_t i = 0; i < n && spec.unk_id < 0; i++) if (spec.token_types[i] == M2_TOKEN_UNKNOWN) spec.unk_id = i;
    spec.add_bos = m2_gguf_bool_or(g, "tokenizer.ggml.add_bos_token", spec.model == M2_TOKENIZER_SPM);
    spec.add_eos = m2_gguf_bool_or(g, "tokenizer.ggml.add_eos_token", false);
    t = m2_tokenizer_create(&spec, err);
done:
    free(pool);
    free(merges);
    return t;
}

m2_tokenizer *m2_tokenizer_load_gguf(const char *path, m2_err *err) {
    m2_gguf *g = m2_gguf_open(path, err);
    if (!g) return NULL;
    m2_tokenizer *t = m2_tokenizer_from_gguf(g, err);
    m2_gguf_close(g);
    return t;
}

/* tokenizer -> tokenizer.ggml.* keys, so that a model GGUF we write carries its vocab (llama.cpp
 * reads these). SPM tokenizers that came from tokenizer.json have merges but no scores: the score
 * of a merge's result is minus its rank, which makes llama.cpp's score-ordered merging follow the
 * same order; tokens that no merge produces get a score below every merge. */
int m2_tokenizer_to_gguf(const m2_tokenizer *t, struct m2_gguf_writer *w, m2_err *err) {
    int32_t n = t->n_tokens;
    const char **toks = malloc((size_t)n * sizeof *toks);
    int32_t *types = malloc((size_t)n * sizeof *types);
    float *scores = malloc((size_t)n * sizeof *scores);
    char *pool = NULL;
    const char **merges = NULL;
    int rc = -1;
    if (!toks || !types || !scores) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", t->name); goto done; }
    int has_scores = 0;
    for (int32_t i = 0; i < n; i++) {
        toks[i] = t->text + t->off[i];
        types[i] = t->types[i];
        scores[i] = t->scores[i];
        if (t->scores[i] != 0.f) has_scores = 1;
    }
    if (t->model == M2_TOKENIZER_SPM && !has_scores) {
        const float never = -1e9f;   /* below every -rank */
        for (int32_t i = 0; i < n; i++) scores[i] = t->types[i] == M2_TOKEN_NORMAL ? never : 0.f;
        for (size_t r = 0; t->merges.slots && r <= t->merges.mask; r++) {
            const m2_pairslot *s = &t->merges.slots[r];
            if (s->key != M2_PAIR_EMPTY && -(float)s->rank > scores[s->result]) scores[s->result] = -(float)s->rank;
        }
    }
    int bad = 0;
    bad |= m2_gguf_set_str(w, "tokenizer.ggml.model", t->model == M2_TOKENIZER_SPM ? "llama" : "gpt2");
    if (t->model == M2_TOKENIZER_BPE) {
        if (t->pretok == M2_PRETOK_REGEX || t->pretok == M2_PRETOK_NONE) {
            m2_errorf(err, M2_EUNSUPPORTED, "%s: GGUF has no name for this pre-tokenizer (only gpt-2, llama-bpe, qwen2)", t->name);
            goto done;
        }
        bad |= m2_gguf_set_str(w, "tokenizer.ggml.pre", m2_pretok_name(t->pretok));
    }
    bad |= m2_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
    bad |= m2_gguf_set_arr(w, "tokenizer.ggml.token_type", M2_GGUF_I32, types, (uint64_t)n);
    if (t->model == M2_TOKENIZER_SPM) bad |= m2_gguf_set_arr(w, "tokenizer.ggml.scores", M2_GGUF_F32, scores, (uint64_t)n);
    if (t->n_merges > 0) {
        size_t total = 0;
        for (int32_t m = 0; m < t->n_merges; m++) {
            int32_t l = t->merge_l[m], r = t->merge_r[m];
            if (memchr(t->text + t->off[l], ' ', t->len[l]) || memchr(t->text + t->off[r], ' ', t->len[r])) {
                m2_errorf(err, M2_EUNSUPPORTED, "%s: merge %d has a token with a space, which GGUF's \"left right\" merges cannot hold", t->name, m);
                goto done;
            }
            total += t->len[l] + t->len[r] + 2;
        }
        pool = malloc(total + 1);
        merges = malloc((size_t)t->n_merges * sizeof *merges);
        if (!pool || !merges) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", t->name); goto done; }
        size_t at = 0;
        for (int32_t m = 0; m < t->n_merges; m++) {
            int32_t l = t->merge_l[m], r = t->merge_r[m];
            merges[m] = pool + at;
            memcpy(pool + at, t->text + t->off[l], t->len[l]); at += t->len[l];
            pool[at++] = ' ';
            memcpy(pool + at, t->text + t->off[r], t->len[r]); at += t->len[r];
            pool[at++] = 0;
        }
        bad |= m2_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, (uint64_t)t->n_merges);
    }
    const char *keys[4] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                           "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id"};
    int32_t ids[4] = {t->bos_id, t->eos_id, t->pad_id, t->unk_id};
    for (int k = 0; k < 4; k++) if (ids[k] >= 0) bad |= m2_gguf_set_u32(w, keys[k], (uint32_t)ids[k]);
    bad |= m2_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", t->add_bos != 0);
    bad |= m2_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", t->add_eos != 0);
    if (t->model == M2_TOKENIZER_SPM)
        bad |= m2_gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", t->space_prefix != M2_SPACE_PREFIX_NONE);
    if (bad) { m2_errorf(err, M2_ENOMEM, "%s: out of memory writing GGUF metadata", t->name); goto done; }
    rc = 0;
done:
    free(toks); free(types); free(scores); free(pool); free(merges);
    return rc;
}
