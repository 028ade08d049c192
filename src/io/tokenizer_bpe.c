/* Byte-level BPE: PCRE2 pre-tokenizer regexes, the GPT-2 byte<->unicode mapping, and the ranked
 * merge loop shared with SPM (a binary heap of candidate pairs, so a word of n symbols costs
 * O(n log n) instead of rescanning all pairs after every merge). */
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer_impl.h"

/* The pre-tokenizer patterns, as in the HF tokenizer.json files and llama.cpp's llama-vocab.cpp. */
static const char RE_GPT2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char RE_LLAMA3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char *m2_pretok_regex(m2_pretok kind) {
    switch (kind) {
    case M2_PRETOK_GPT2: return RE_GPT2;
    case M2_PRETOK_LLAMA3: return RE_LLAMA3;
    case M2_PRETOK_QWEN2: return RE_QWEN2;
    default: return NULL;
    }
}

const char *m2_pretok_name(m2_pretok kind) {
    switch (kind) {
    case M2_PRETOK_NONE: return "none";
    case M2_PRETOK_GPT2: return "gpt-2";
    case M2_PRETOK_LLAMA3: return "llama-bpe";
    case M2_PRETOK_QWEN2: return "qwen2";
    case M2_PRETOK_REGEX: return "regex";
    }
    return "?";
}

int m2_pretok_parse(const char *name, m2_pretok *kind) {
    static const struct { const char *name; m2_pretok kind; } names[] = {
        {"gpt-2", M2_PRETOK_GPT2}, {"gpt2", M2_PRETOK_GPT2}, {"default", M2_PRETOK_GPT2},
        {"llama-bpe", M2_PRETOK_LLAMA3}, {"llama3", M2_PRETOK_LLAMA3}, {"llama-v3", M2_PRETOK_LLAMA3},
        {"qwen2", M2_PRETOK_QWEN2}, {"none", M2_PRETOK_NONE},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) { *kind = names[i].kind; return 0; }
    return -1;
}

pcre2_code *m2_regex_compile(const char *pattern, const char *name, m2_err *err) {
    int ec = 0;
    PCRE2_SIZE eo = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        m2_errorf(err, M2_EFORMAT, "%s: pre-tokenizer regex does not compile (offset %zu): %s", name ? name : "tokenizer",
                  (size_t)eo, (const char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* falls back to the interpreter when JIT is absent */
    return re;
}

int m2_regex_split(const pcre2_code *re, const char *text, size_t len, m2_piece_fn fn, void *ctx, m2_err *err) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        pcre2_match_data_free(md); pcre2_match_context_free(mc);
        return m2_errorf(err, M2_ENOMEM, "pre-tokenizer: out of memory");
    }
    /* A hostile pattern from a file must not backtrack forever. */
    pcre2_set_match_limit(mc, 10000000);
    int rc = 0;
    size_t pos = 0, emitted = 0;
    while (pos < len) {
        int m = pcre2_match(re, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK, md, mc);
        if (m == PCRE2_ERROR_NOMATCH) break;
        if (m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(m, msg, sizeof msg);
            rc = m2_errorf(err, M2_EINVAL, "pre-tokenizer: regex match failed at byte %zu: %s", pos, (const char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (e <= s) {   /* empty match: step over one character; it joins the next gap */
            size_t step = s < len ? (size_t)m2_utf8_len((unsigned char)text[s]) : 1;
            pos = s + step;
            continue;
        }
        if (s > emitted && (rc = fn(ctx, text + emitted, s - emitted, err))) break;
        if ((rc = fn(ctx, text + s, e - s, err))) break;
        emitted = pos = e;
    }
    if (!rc && len > emitted) rc = fn(ctx, text + emitted, len - emitted, err);
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    return rc;
}

typedef struct { size_t *starts, *lens; size_t n, cap; const char *base; } split_ctx;

static int collect_piece(void *ctx, const char *s, size_t len, m2_err *err) {
    split_ctx *c = ctx;
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        size_t *a = realloc(c->starts, nc * sizeof *a);
        if (!a) return m2_errorf(err, M2_ENOMEM, "pre-tokenizer: out of memory");
        c->starts = a;
        size_t *b = realloc(c->lens, nc * sizeof *b);
        if (!b) return m2_errorf(err, M2_ENOMEM, "pre-tokenizer: out of memory");
        c->lens = b;
        c->cap = nc;
    }
    c->starts[c->n] = (size_t)(s - c->base);
    c->lens[c->n] = len;
    c->n++;
    return 0;
}

int m2_pretokenize(m2_pretok kind, const char *regex, const char *text, size_t len,
                   size_t **starts, size_t **lens, size_t *n, m2_err *err) {
    *starts = NULL; *lens = NULL; *n = 0;
    size_t bad;
    if (len && m2_utf8_check(text, len, &bad))
        return m2_errorf(err, M2_EINVAL, "pre-tokenizer: input is not valid UTF-8 (byte offset %zu)", bad);
    const char *pat = kind == M2_PRETOK_REGEX ? regex : m2_pretok_regex(kind);
    split_ctx c = {0};
    c.base = text;
    int rc;
    if (!pat) {
        rc = len ? collect_piece(&c, text, len, err) : 0;
    } else {
        pcre2_code *re = m2_regex_compile(pat, "pre-tokenizer", err);
        if (!re) return -1;
        rc = m2_regex_split(re, text, len, collect_piece, &c, err);
        pcre2_code_free(re);
    }
    if (rc) { free(c.starts); free(c.lens); return rc; }
    *starts = c.starts; *lens = c.lens; *n = c.n;
    return 0;
}

/* ---------- scratch ---------- */

void m2_scratch_free(m2_scratch *s) {
    free(s->syms); free(s->heap); free(s->buf);
    memset(s, 0, sizeof *s);
}

int m2_scratch_syms(m2_scratch *s, size_t n, m2_err *err) {
    if (n > s->csyms) {
        size_t nc = n < 64 ? 64 : n * 2;
        m2_sym *p = realloc(s->syms, nc * sizeof *p);
        if (!p) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory (%zu symbols)", n);
        s->syms = p; s->csyms = nc;
    }
    size_t hc = 3 * n + 4;   /* n-1 initial pairs + at most 2 per merge */
    if (hc > s->cheap) {
        m2_cand *h = realloc(s->heap, hc * sizeof *h);
        if (!h) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory (%zu candidates)", hc);
        s->heap = h; s->cheap = hc;
    }
    s->nsyms = n;
    s->nheap = 0;
    return 0;
}

int m2_scratch_buf(m2_scratch *s, size_t n, m2_err *err) {
    if (n > s->cbuf) {
        size_t nc = n < 256 ? 256 : n * 2;
        char *p = realloc(s->buf, nc);
        if (!p) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory (%zu bytes)", n);
        s->buf = p; s->cbuf = nc;
    }
    s->nbuf = n;
    return 0;
}

/* ---------- the merge loop ---------- */

static inline int cand_before(const m2_cand *a, const m2_cand *b) {
    return a->pri < b->pri || (a->pri == b->pri && a->left < b->left);
}

static void heap_push(m2_scratch *sc, m2_cand c) {
    size_t i = sc->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&c, &sc->heap[p])) break;
        sc->heap[i] = sc->heap[p];
        i = p;
    }
    sc->heap[i] = c;
}

static m2_cand heap_pop(m2_scratch *sc) {
    m2_cand top = sc->heap[0], last = sc->heap[--sc->nheap];
    size_t i = 0, n = sc->nheap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const m2_cand *best = &last;
        if (l < n && cand_before(&sc->heap[l], best)) { m = l; best = &sc->heap[l]; }
        if (r < n && cand_before(&sc->heap[r], best)) { m = r; }
        if (m == i) break;
        sc->heap[i] = sc->heap[m];
        i = m;
    }
    if (n > 0) sc->heap[i] = last;
    return top;
}

/* Queues the pair (a, b) when it can merge: by merge rank (when the tokenizer has merges) or by the
 * score of the concatenation (SentencePiece from GGUF scores). */
static void try_pair(const m2_tokenizer *t, m2_scratch *sc, const char *str, int32_t a, int32_t b) {
    const m2_sym *A = &sc->syms[a], *B = &sc->syms[b];
    m2_cand c;
    if (t->merges.slots) {
        if (A->id < 0 || B->id < 0) return;
        const m2_pairslot *p = m2_pairmap_get(&t->merges, A->id, B->id);
        if (!p) return;
        c.pri = p->rank;
        c.result = p->result;
    } else {
        int32_t id = m2_strmap_get(t, str + A->start, (size_t)A->len + B->len);
        if (id < 0 || t->types[id] != M2_TOKEN_NORMAL) return;
        c.pri = -(double)t->scores[id];
        c.result = id;
    }
    c.left = a; c.right = b; c.size = A->len + B->len;
    heap_push(sc, c);
}

int m2_merge_symbols(const m2_tokenizer *t, m2_scratch *sc, const char *str) {
    m2_sym *sy = sc->syms;
    int32_t n = (int32_t)sc->nsyms;
    sc->nheap = 0;
    for (int32_t i = 0; i + 1 < n; i++) try_pair(t, sc, str, i, i + 1);
    while (sc->nheap > 0) {
        m2_cand c = heap_pop(sc);
        m2_sym *A = &sy[c.left], *B = &sy[c.right];
        if (A->len == 0 || B->len == 0 || A->next != c.right || A->len + B->len != c.size) continue;  /* stale */
        A->len += B->len;
        A->id = c.result;
        A->next = B->next;
        if (B->next >= 0) sy[B->next].prev = c.left;
        B->len = 0;
        if (A->prev >= 0) try_pair(t, sc, str, A->prev, c.left);
        if (A->next >= 0) try_pair(t, sc, str, c.left, A->next);
    }
    return 0;
}

/* ---------- byte-level BPE ---------- */

typedef struct {
    const m2_tokenizer *t;
    m2_scratch *sc;
    m2_tokens *out;
    char bl[256][2];    /* byte-level UTF-8 of each byte */
    uint8_t bll[256];
} bpe_ctx;

static int bpe_word(void *ctx, const char *s, size_t n, m2_err *err) {
    bpe_ctx *c = ctx;
    const m2_tokenizer *t = c->t;
    m2_scratch *sc = c->sc;
    if (m2_scratch_buf(sc, 2 * n + 1, err) || m2_scratch_syms(sc, n, err)) return -1;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        m2_sym *y = &sc->syms[i];
        y->id = t->byte_tok[b];
        y->prev = (int32_t)i - 1;
        y->next = i + 1 < n ? (int32_t)i + 1 : -1;
        y->start = (uint32_t)w;
        y->len = c->bll[b];
        memcpy(sc->buf + w, c->bl[b], c->bll[b]);
        w += c->bll[b];
    }
    if (t->ignore_merges || n == 1) {
        int32_t id = m2_strmap_get(t, sc->buf, w);
        if (id >= 0 && t->types[id] != M2_TOKEN_CONTROL) return m2_tokens_push(c->out, id, err);
    }
    m2_merge_symbols(t, sc, sc->buf);
    for (int32_t i = 0; i >= 0; i = sc->syms[i].next) {
        int32_t id = sc->syms[i].id;
        if (id < 0) id = t->unk_id;        /* a byte with no token: unk, or dropped */
        if (id >= 0 && m2_tokens_push(c->out, id, err)) return -1;
    }
    return 0;
}

int m2_bpe_encode_fragment(const m2_tokenizer *t, const char *s, size_t n, m2_scratch *sc, m2_tokens *out, m2_err *err) {
    bpe_ctx c;
    c.t = t; c.sc = sc; c.out = out;
    uint32_t cp[256];
    m2_byte_level_table(cp);
    for (int b = 0; b < 256; b++) c.bll[b] = (uint8_t)m2_utf8_put(cp[b], c.bl[b]);
    char *tmp = NULL;
    if (t->add_prefix_space && s[0] != ' ') {
        tmp = malloc(n + 1);
        if (!tmp) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory");
        tmp[0] = ' ';
        memcpy(tmp + 1, s, n);
        s = tmp; n++;
    }
    int rc = t->re ? m2_regex_split(t->re, s, n, bpe_word, &c, err) : bpe_word(&c, s, n, err);
    free(tmp);
    return rc;
}
