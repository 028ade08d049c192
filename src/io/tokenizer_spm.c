/* SentencePiece-style BPE (Llama-2, Mistral): spaces become ▁, an optional ▁ dummy prefix, symbols
 * are UTF-8 characters merged by rank (tokenizer.json merges) or by the score of the merged piece
 * (GGUF scores), and characters outside the vocab fall back to <0xNN> byte tokens. */
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer_impl.h"

static const char SPACE_MARK[3] = {(char)0xE2, (char)0x96, (char)0x81};   /* U+2581 ▁ */

static int push_unk(const m2_tokenizer *t, m2_tokens *out, m2_err *err) {
    if (t->unk_id < 0) return 0;
    if (out->n > 0 && out->ids[out->n - 1] == t->unk_id) return 0;   /* consecutive unknowns fuse */
    return m2_tokens_push(out, t->unk_id, err);
}

/* One word str[0..n) (▁-escaped) -> ids. */
static int spm_word(const m2_tokenizer *t, m2_scratch *sc, const char *str, size_t n, m2_tokens *out, m2_err *err) {
    size_t nch = 0;
    for (size_t i = 0; i < n; i += m2_utf8_len((unsigned char)str[i])) nch++;
    if (m2_scratch_syms(sc, nch, err)) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; k++) {
        size_t cl = m2_utf8_len((unsigned char)str[i]);
        if (i + cl > n) cl = n - i;
        m2_sym *y = &sc->syms[k];
        y->start = (uint32_t)i;
        y->len = (uint32_t)cl;
        y->prev = (int32_t)k - 1;
        y->next = k + 1 < nch ? (int32_t)k + 1 : -1;
        y->id = m2_strmap_get(t, str + i, cl);
        if (y->id >= 0 && t->types[y->id] != M2_TOKEN_NORMAL && t->types[y->id] != M2_TOKEN_USER_DEFINED) y->id = -1;
        i += cl;
    }
    m2_merge_symbols(t, sc, str);
    for (int32_t i = 0; i >= 0; i = sc->syms[i].next) {
        const m2_sym *y = &sc->syms[i];
        if (y->id >= 0) {
            if (m2_tokens_push(out, y->id, err)) return -1;
            continue;
        }
        for (uint32_t b = 0; b < y->len; b++) {
            int32_t id = t->byte_fallback ? t->byte_tok[(unsigned char)str[y->start + b]] : -1;
            if (id >= 0) { if (m2_tokens_push(out, id, err)) return -1; }
            else { if (push_unk(t, out, err)) return -1; if (!t->byte_fallback) break; }
        }
    }
    return 0;
}

int m2_spm_encode_fragment(const m2_tokenizer *t, const char *s, size_t n, int prefix, m2_scratch *sc,
                           m2_tokens *out, m2_err *err) {
    /* escape: optional ▁ prefix, every ' ' -> ▁ */
    size_t cap = 3 * n + 3;
    char *buf = malloc(cap);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory (%zu bytes)", cap);
    size_t w = 0;
    if (prefix) { memcpy(buf, SPACE_MARK, 3); w = 3; }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') { memcpy(buf + w, SPACE_MARK, 3); w += 3; }
        else buf[w++] = s[i];
    }
    int rc = 0;
    if (t->spm_split) {
        /* HF Metaspace split: each word starts at a ▁ (the mark goes with what follows it) */
        size_t start = 0;
        for (size_t i = 1; i + 3 <= w && !rc; i++)
            if (!memcmp(buf + i, SPACE_MARK, 3)) { rc = spm_word(t, sc, buf + start, i - start, out, err); start = i; }
        if (!rc && w > start) rc = spm_word(t, sc, buf + start, w - start, out, err);
    } else {
        /* cut at barrier characters: no token spans them, so this gives the same ids, and keeps the
           merge heap small on long texts */
        size_t start = 0;
        for (size_t i = 0; i < w && !rc; i++) {
            unsigned char c = (unsigned char)buf[i];
            if (c >= 128 || !t->barrier[c]) continue;
            if (i > start) rc = spm_word(t, sc, buf + start, i - start, out, err);
            if (!rc) rc = spm_word(t, sc, buf + i, 1, out, err);
            start = i + 1;
        }
        if (!rc && w > start) rc = spm_word(t, sc, buf + start, w - start, out, err);
    }
    free(buf);
    return rc;
}
