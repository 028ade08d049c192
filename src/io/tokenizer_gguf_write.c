/* Writes a tokenizer as GGUF tokenizer.ggml.* metadata (what m2_tokenizer_from_gguf and llama.cpp
 * read), so a model converted from an HF folder keeps its tokenizer inside the GGUF. */
#include <stdlib.h>
#include <string.h>
#include "io/gguf.h"
#include "io/tokenizer_impl.h"
#include "io/model_load.h"

int m2_tokenizer_write_gguf(const m2_tokenizer *t, m2_gguf_writer *w, m2_err *err) {
    int spm = t->model == M2_TOKENIZER_SPM;
    if (!spm && t->pretok == M2_PRETOK_REGEX)
        return m2_errorf(err, M2_EUNSUPPORTED, "%s: a custom pre-tokenizer regex has no GGUF tokenizer.ggml.pre name", t->name);
    int rc = m2_gguf_set_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
    if (!spm) rc |= m2_gguf_set_str(w, "tokenizer.ggml.pre", m2_pretok_name(t->pretok));
    int32_t n = t->n_tokens;
    const char **toks = malloc(sizeof(char *) * ((size_t)n + 1));
    int32_t *types = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!toks || !types) { free(toks); free(types); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    for (int32_t i = 0; i < n; i++) {
        toks[i] = t->text + t->off[i];
        types[i] = t->types[i] ? t->types[i] : M2_TOKEN_NORMAL;
    }
    rc |= m2_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
    rc |= m2_gguf_set_arr(w, "tokenizer.ggml.token_type", M2_GGUF_I32, types, (uint64_t)n);
    if (spm || t->scores) rc |= m2_gguf_set_arr(w, "tokenizer.ggml.scores", M2_GGUF_F32, t->scores, (uint64_t)n);
    free(toks);
    free(types);
    if (!spm && t->n_merges > 0) {
        char **m = calloc((size_t)t->n_merges, sizeof(char *));
        if (!m) return m2_errorf(err, M2_ENOMEM, "out of memory");
        for (int32_t i = 0; i < t->n_merges && !rc; i++) {
            const char *l = t->text + t->off[t->merge_l[i]], *r = t->text + t->off[t->merge_r[i]];
            size_t ll = t->len[t->merge_l[i]], rl = t->len[t->merge_r[i]];
            if (!(m[i] = malloc(ll + rl + 2))) { rc = -1; break; }
            memcpy(m[i], l, ll);
            m[i][ll] = ' ';
            memcpy(m[i] + ll + 1, r, rl);
            m[i][ll + rl + 1] = 0;
        }
        if (!rc) rc |= m2_gguf_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)m, (uint64_t)t->n_merges);
        for (int32_t i = 0; i < t->n_merges; i++) free(m[i]);
        free(m);
    }
    if (spm) rc |= m2_gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", t->space_prefix != M2_SPACE_PREFIX_NONE);
    if (t->bos_id >= 0) rc |= m2_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)t->bos_id);
    if (t->eos_id >= 0) rc |= m2_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)t->eos_id);
    if (t->pad_id >= 0) rc |= m2_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)t->pad_id);
    if (t->unk_id >= 0) rc |= m2_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)t->unk_id);
    rc |= m2_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", t->add_bos != 0);
    rc |= m2_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", t->add_eos != 0);
    return rc ? m2_errorf(err, M2_ENOMEM, "out of memory writing tokenizer metadata") : 0;
}
