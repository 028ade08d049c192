/* The tokenizer object: vocab and merge hash maps, special-token splitting, encode/decode. */
#define _GNU_SOURCE   /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer_impl.h"

/* ---------- small helpers ---------- */

int m2_tokens_push(m2_tokens *t, int32_t id, m2_err *err) {
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        int32_t *p = realloc(t->ids, nc * sizeof *p);
        if (!p) return m2_errorf(err, M2_ENOMEM, "tokenizer: out of memory (%zu ids)", nc);
        t->ids = p; t->cap = nc;
    }
    t->ids[t->n++] = id;
    return 0;
}

void m2_tokens_free(m2_tokens *t) {
    if (!t) return;
    free(t->ids);
    t->ids = NULL; t->n = t->cap = 0;
}

uint64_t m2_tok_hash(const char *s, size_t n) {
    /* FNV-1a, then a murmur finaliser so the low bits (the slot index) mix well. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

static uint64_t pair_hash(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33;
    return k;
}

static uint32_t table_size(size_t n) {
    uint32_t s = 16;
    while (s < 2 * n + 1) s <<= 1;
    return s;
}

int32_t m2_strmap_get(const m2_tokenizer *t, const char *s, size_t n) {
    if (!t->vocab.slots || n == 0) return -1;
    uint32_t i = (uint32_t)m2_tok_hash(s, n) & t->vocab.mask;
    for (;;) {
        int32_t id = t->vocab.slots[i];
        if (id < 0) return -1;
        if (t->len[id] == n && memcmp(t->text + t->off[id], s, n) == 0) return id;
        i = (i + 1) & t->vocab.mask;
    }
}

/* Inserts id under its own text; keeps the first id when two ids share a text. */
static void strmap_put(m2_tokenizer *t, int32_t id) {
    const char *s = t->text + t->off[id];
    size_t n = t->len[id];
    uint32_t i = (uint32_t)m2_tok_hash(s, n) & t->vocab.mask;
    for (;;) {
        int32_t o = t->vocab.slots[i];
        if (o < 0) { t->vocab.slots[i] = id; return; }
        if (t->len[o] == n && memcmp(t->text + t->off[o], s, n) == 0) return;
        i = (i + 1) & t->vocab.mask;
    }
}

const m2_pairslot *m2_pairmap_get(const m2_pairmap *m, int32_t l, int32_t r) {
    if (!m->slots) return NULL;
    uint64_t k = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    uint32_t i = (uint32_t)pair_hash(k) & m->mask;
    for (;;) {
        const m2_pairslot *s = &m->slots[i];
        if (s->key == M2_PAIR_EMPTY) return NULL;
        if (s->key == k) return s;
        i = (i + 1) & m->mask;
    }
}

/* Returns 1 when inserted, 0 when the pair was already there (the lower rank wins). */
static int pairmap_put(m2_pairmap *m, int32_t l, int32_t r, int32_t rank, int32_t result) {
    uint64_t k = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    uint32_t i = (uint32_t)pair_hash(k) & m->mask;
    for (;;) {
        m2_pairslot *s = &m->slots[i];
        if (s->key == M2_PAIR_EMPTY) { s->key = k; s->rank = rank; s->result = result; return 1; }
        if (s->key == k) return 0;
        i = (i + 1) & m->mask;
    }
}

void m2_byte_level_table(uint32_t cp[256]) {
    uint32_t n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cp[b] = printable ? (uint32_t)b : 256 + n++;
    }
}

int m2_utf8_put(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); return 2; }
    if (cp < 0x10000) { o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F); return 3; }
    o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F); o[2] = 0x80 | ((cp >> 6) & 0x3F);
    o[3] = 0x80 | (cp & 0x3F);
    return 4;
}

int m2_utf8_check(const char *str, size_t len, size_t *bad) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        int n; uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; min = 0x10000; }
        else goto fail;
        if (i + n > len) goto fail;
        for (int k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) goto fail;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto fail;
        i += n;
    }
    return 0;
fail:
    if (bad) *bad = i;
    return -1;
}

/* ---------- building ---------- */

void m2_tokenizer_free(m2_tokenizer *t) {
    if (!t) return;
    free(t->text); free(t->off); free(t->len); free(t->scores); free(t->types);
    free(t->piece); free(t->poff); free(t->plen);
    free(t->vocab.slots); free(t->merges.slots); free(t->merge_l); free(t->merge_r);
    free(t->specials); free(t->regex);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

static int parse_byte_token(const char *s, size_t n) {
    /* "<0xNN>" -> NN, else -1 */
    if (n != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static int is_special_type(int ty) {
    return ty == M2_TOKEN_CONTROL || ty == M2_TOKEN_USER_DEFINED || ty == M2_TOKEN_UNKNOWN;
}

/* The decoded bytes of every token: byte-level chars map back to bytes, ▁ to ' ', <0xNN> to NN;
 * special tokens decode to their text. */
static int build_pieces(m2_tokenizer *t, m2_err *err) {
    size_t total = 0;
    for (int32_t i = 0; i < t->n_tokens; i++) total += t->len[i] + 1;
    t->piece = malloc(total + 1);
    t->poff = malloc((size_t)t->n_tokens * sizeof *t->poff + 1);
    t->plen = malloc((size_t)t->n_tokens * sizeof *t->plen + 1);
    if (!t->piece || !t->poff || !t->plen) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", t->name);
    int16_t inv[512];
    for (int i = 0; i < 512; i++) inv[i] = -1;
    uint32_t cp[256];
    m2_byte_level_table(cp);
    for (int b = 0; b < 256; b++) inv[cp[b]] = (int16_t)b;
    size_t at = 0;
    for (int32_t i = 0; i < t->n_tokens; i++) {
        const unsigned char *s = (const unsigned char *)t->text + t->off[i];
        uint32_t n = t->len[i];
        char *o = t->piece + at;
        size_t w = 0;
        int ty = t->types[i];
        if (is_special_type(ty) || ty == M2_TOKEN_UNUSED) {
            memcpy(o, s, n); w = n;
        } else if (t->model == M2_TOKENIZER_SPM) {
            int b = ty == M2_TOKEN_BYTE ? parse_byte_token((const char *)s, n) : -1;
            if (b >= 0) { o[w++] = (char)b; }
            else for (uint32_t k = 0; k < n;) {
                if (k + 3 <= n && s[k] == 0xE2 && s[k + 1] == 0x96 && s[k + 2] == 0x81) { o[w++] = ' '; k += 3; }
                else o[w++] = (char)s[k++];
            }
        } else {
            for (uint32_t k = 0; k < n;) {
                int cl = m2_utf8_len(s[k]);
                if (k + cl > n) cl = (int)(n - k);
                uint32_t c = s[k];
                if (cl == 2) c = ((s[k] & 0x1Fu) << 6) | (s[k + 1] & 0x3Fu);
                if (cl <= 2 && c < 512 && inv[c] >= 0) o[w++] = (char)inv[c];
                else { memcpy(o + w, s + k, cl); w += cl; }
                k += cl;
            }
        }
        t->poff[i] = (uint32_t)at; t->plen[i] = (uint32_t)w;
        at += w;
    }
    return 0;
}

static int cmp_special_len(const void *a, const void *b, void *ctx) {
    const m2_tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

m2_tokenizer *m2_tokenizer_create(const m2_tokenizer_spec *spec, m2_err *err) {
    const char *name = spec->name ? spec->name : "tokenizer";
    if (spec->model != M2_TOKENIZER_BPE && spec->model != M2_TOKENIZER_SPM) {
        m2_errorf(err, M2_EUNSUPPORTED, "%s: unknown tokenizer model %d", name, (int)spec->model);
        return NULL;
    }
    if (spec->n_tokens <= 0 || spec->n_tokens > (1 << 24) || !spec->tokens) {
        m2_errorf(err, M2_EFORMAT, "%s: vocab has %d tokens (need 1..%d)", name, spec->n_tokens, 1 << 24);
        return NULL;
    }
    if (spec->n_merges < 0 || (spec->n_merges > 0 && !spec->merges)) {
        m2_errorf(err, M2_EFORMAT, "%s: bad merge count %d", name, spec->n_merges);
        return NULL;
    }
    m2_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", name); return NULL; }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->model = spec->model;
    t->n_tokens = spec->n_tokens;
    int32_t n = t->n_tokens;

    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += (spec->tokens[i] ? strlen(spec->tokens[i]) : 0) + 1;
    t->text = malloc(total + 1);
    t->off = malloc((size_t)n * sizeof *t->off);
    t->len = malloc((size_t)n * sizeof *t->len);
    t->scores = calloc((size_t)n, sizeof *t->scores);
    t->types = malloc((size_t)n);
    t->vocab.mask = table_size((size_t)n) - 1;
    t->vocab.slots = malloc(((size_t)t->vocab.mask + 1) * sizeof *t->vocab.slots);
    if (!t->text || !t->off || !t->len || !t->scores || !t->types || !t->vocab.slots) {
        m2_errorf(err, M2_ENOMEM, "%s: out of memory for %d tokens", name, n);
        goto fail;
    }
    memset(t->vocab.slots, 0xff, ((size_t)t->vocab.mask + 1) * sizeof *t->vocab.slots);
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *s = spec->tokens[i] ? spec->tokens[i] : "";
        size_t l = strlen(s);
        memcpy(t->text + at, s, l + 1);
        t->off[i] = (uint32_t)at; t->len[i] = (uint32_t)l;
        at += l + 1;
        int ty = spec->token_types ? spec->token_types[i] : M2_TOKEN_NORMAL;
        if (ty < M2_TOKEN_NORMAL || ty > M2_TOKEN_BYTE) ty = M2_TOKEN_NORMAL;
        if (l == 0) ty = M2_TOKEN_UNUSED;
        t->types[i] = (int8_t)ty;
        if (spec->scores) t->scores[i] = spec->scores[i];
    }
    /* Normal tokens first: when a text appears twice, lookups find the normal vocab token. */
    for (int32_t i = 0; i < n; i++) if (t->len[i] && !is_special_type(t->types[i])) strmap_put(t, i);
    for (int32_t i = 0; i < n; i++) if (t->len[i] && is_special_type(t->types[i])) strmap_put(t, i);

    /* byte tokens */
    for (int b = 0; b < 256; b++) t->byte_tok[b] = -1;
    if (t->model == M2_TOKENIZER_BPE) {
        uint32_t cp[256];
        m2_byte_level_table(cp);
        for (int b = 0; b < 256; b++) {
            char u[4];
            int l = m2_utf8_put(cp[b], u);
            t->byte_tok[b] = m2_strmap_get(t, u, (size_t)l);
        }
    } else {
        for (int32_t i = 0; i < n; i++) {
            int b = parse_byte_token(t->text + t->off[i], t->len[i]);
            if (b >= 0 && t->byte_tok[b] < 0) {
                t->byte_tok[b] = i;
                if (t->types[i] == M2_TOKEN_NORMAL) t->types[i] = M2_TOKEN_BYTE;   /* tokenizer.json has no types */
            }
        }
    }

    /* merges: rank = index; the result is the concatenation, which must be a token */
    t->n_merges = spec->n_merges;
    if (spec->n_merges > 0) {
        t->merges.mask = table_size((size_t)spec->n_merges) - 1;
        t->merges.slots = malloc(((size_t)t->merges.mask + 1) * sizeof *t->merges.slots);
        t->merge_l = malloc((size_t)spec->n_merges * sizeof *t->merge_l);
        t->merge_r = malloc((size_t)spec->n_merges * sizeof *t->merge_r);
        char *cat = NULL;
        size_t ccap = 0;
        if (!t->merges.slots || !t->merge_l || !t->merge_r) {
            m2_errorf(err, M2_ENOMEM, "%s: out of memory for %d merges", name, spec->n_merges);
            goto fail;
        }
        for (size_t i = 0; i <= t->merges.mask; i++) t->merges.slots[i].key = M2_PAIR_EMPTY;
        int32_t kept = 0;
        for (int32_t m = 0; m < spec->n_merges; m++) {
            const char *a = spec->merges[2 * m], *b = spec->merges[2 * m + 1];
            if (!a || !b) { free(cat); m2_errorf(err, M2_EFORMAT, "%s: merges[%d] is missing a side", name, m); goto fail; }
            size_t la = strlen(a), lb = strlen(b);
            int32_t l = m2_strmap_get(t, a, la), r = m2_strmap_get(t, b, lb);
            if (la + lb + 1 > ccap) {
                ccap = 2 * (la + lb + 1);
                char *c2 = realloc(cat, ccap);
                if (!c2) { free(cat); m2_errorf(err, M2_ENOMEM, "%s: out of memory", name); goto fail; }
                cat = c2;
            }
            memcpy(cat, a, la); memcpy(cat + la, b, lb);
            int32_t res = m2_strmap_get(t, cat, la + lb);
            if (l < 0 || r < 0 || res < 0) {
                free(cat);
                m2_errorf(err, M2_EFORMAT, "%s: merges[%d] \"%.60s %.60s\": %s is not in the vocab", name, m,
                          a, b, l < 0 ? "left side" : r < 0 ? "right side" : "the merged token");
                goto fail;
            }
            if (pairmap_put(&t->merges, l, r, m, res)) {
                t->merge_l[kept] = l; t->merge_r[kept] = r; kept++;
            }
        }
        t->n_merges = kept;
        free(cat);
    }

    /* special tokens, longest first, split out before pre-tokenisation */
    t->specials = malloc((size_t)n * sizeof *t->specials);
    if (!t->specials) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", name); goto fail; }
    for (int32_t i = 0; i < n; i++)
        if (t->len[i] && is_special_type(t->types[i])) {
            t->specials[t->n_specials++] = i;
            t->special_first[(unsigned char)t->text[t->off[i]]] = 1;
        }
    qsort_r(t->specials, (size_t)t->n_specials, sizeof *t->specials, cmp_special_len, t);

    t->bos_id = spec->bos_id; t->eos_id = spec->eos_id; t->pad_id = spec->pad_id; t->unk_id = spec->unk_id;
    int32_t *ids[4] = {&t->bos_id, &t->eos_id, &t->pad_id, &t->unk_id};
    for (int k = 0; k < 4; k++) if (*ids[k] < -1 || *ids[k] >= n) {
        static const char *names[4] = {"bos", "eos", "pad", "unk"};
        m2_errorf(err, M2_EFORMAT, "%s: %s token id %d out of range [0, %d)", name, names[k], *ids[k], n);
        goto fail;
    }
    t->add_bos = spec->add_bos && t->bos_id >= 0;
    t->add_eos = spec->add_eos && t->eos_id >= 0;
    t->byte_fallback = spec->byte_fallback;
    t->ignore_merges = spec->ignore_merges;
    t->add_prefix_space = spec->add_prefix_space;
    t->space_prefix = spec->space_prefix;
    t->spm_split = spec->spm_split;

    if (t->model == M2_TOKENIZER_BPE) {
        t->pretok = spec->pretok;
        const char *re = spec->pretok == M2_PRETOK_REGEX ? spec->pretok_regex : m2_pretok_regex(spec->pretok);
        if (spec->pretok == M2_PRETOK_REGEX && !re) { m2_errorf(err, M2_EFORMAT, "%s: pre-tokenizer regex missing", name); goto fail; }
        if (re) {
            t->regex = strdup(re);
            if (!t->regex) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", name); goto fail; }
            t->re = m2_regex_compile(re, name, err);
            if (!t->re) goto fail;
        }
    } else {
        t->pretok = M2_PRETOK_NONE;
    }
    if (t->model == M2_TOKENIZER_SPM) {
        memset(t->barrier, 1, sizeof t->barrier);
        for (int32_t i = 0; i < n; i++) {
            if (t->types[i] != M2_TOKEN_NORMAL && t->types[i] != M2_TOKEN_USER_DEFINED) continue;
            const unsigned char *s = (const unsigned char *)t->text + t->off[i];
            if (t->len[i] <= (uint32_t)m2_utf8_len(s[0])) continue;   /* one character */
            for (uint32_t k = 0; k < t->len[i]; k++) if (s[k] < 128) t->barrier[s[k]] = 0;
        }
    }
    if (build_pieces(t, err)) goto fail;
    return t;
fail:
    m2_tokenizer_free(t);
    return NULL;
}

/* ---------- encode ---------- */

/* Finds the special token at s[0..n) start, longest first; -1 if none. */
static int32_t special_at(const m2_tokenizer *t, const char *s, size_t n) {
    for (int k = 0; k < t->n_specials; k++) {
        int32_t id = t->specials[k];
        uint32_t l = t->len[id];
        if (l <= n && memcmp(s, t->text + t->off[id], l) == 0) return id;
    }
    return -1;
}

static int encode_fragment(const m2_tokenizer *t, const char *s, size_t n, int *first, m2_scratch *sc,
                           m2_tokens *out, m2_err *err) {
    int at_start = *first;
    *first = 0;
    if (n == 0) return 0;
    if (t->model == M2_TOKENIZER_SPM) {
        int prefix = 0;
        switch (t->space_prefix) {
        case M2_SPACE_PREFIX_NONE: break;
        case M2_SPACE_PREFIX_ALWAYS: prefix = 1; break;
        case M2_SPACE_PREFIX_META_ALWAYS: prefix = s[0] != ' '; break;
        case M2_SPACE_PREFIX_META_FIRST: prefix = at_start && s[0] != ' '; break;
        }
        return m2_spm_encode_fragment(t, s, n, prefix, sc, out, err);
    }
    return m2_bpe_encode_fragment(t, s, n, sc, out, err);
}

int m2_tokenizer_encode(const m2_tokenizer *t, const char *text, size_t len, unsigned flags,
                        m2_tokens *out, m2_err *err) {
    return m2_tokenizer_encode_masked(t, text, len, flags, NULL, out, err);
}

int m2_tokenizer_encode_masked(const m2_tokenizer *t, const char *text, size_t len, unsigned flags,
                               const uint8_t *plain, m2_tokens *out, m2_err *err) {
    if (!text && len) return m2_errorf(err, M2_EINVAL, "%s: encode: NULL text", t->name);
    size_t bad = 0;
    if (len && m2_utf8_check(text, len, &bad))
        return m2_errorf(err, M2_EINVAL, "%s: encode: input text is not valid UTF-8 (byte offset %zu, byte 0x%02X)",
                         t->name, bad, (unsigned char)text[bad]);
    int want_bos = (flags & M2_ENC_BOS) || ((flags & M2_ENC_ADD_SPECIAL) && t->add_bos);
    int want_eos = (flags & M2_ENC_EOS) || ((flags & M2_ENC_ADD_SPECIAL) && t->add_eos);
    if (want_bos) {
        if (t->bos_id < 0) return m2_errorf(err, M2_EINVAL, "%s: encode: BOS requested but the tokenizer has no BOS token", t->name);
        if (m2_tokens_push(out, t->bos_id, err)) return -1;
    }
    m2_scratch sc = {0};
    int rc = 0, first = 1;
    size_t start = 0, i = 0;
    if (!(flags & M2_ENC_NO_SPECIAL) && t->n_specials > 0) {
        while (i < len) {
            int32_t id = t->special_first[(unsigned char)text[i]] && !(plain && plain[i]) ? special_at(t, text + i, len - i) : -1;
            if (id >= 0 && plain && memchr(plain + i, 1, t->len[id])) id = -1;   /* reaches into plain text */
            if (id < 0) { i++; continue; }
            if (i > start && (rc = encode_fragment(t, text + start, i - start, &first, &sc, out, err))) goto done;
            if ((rc = m2_tokens_push(out, id, err))) goto done;
            first = 0;   /* text after a special token is no longer at offset 0 */
            i += t->len[id];
            start = i;
        }
    }
    if (len > start) rc = encode_fragment(t, text + start, len - start, &first, &sc, out, err);
done:
    m2_scratch_free(&sc);
    if (rc) return rc;
    if (want_eos) {
        if (t->eos_id < 0) return m2_errorf(err, M2_EINVAL, "%s: encode: EOS requested but the tokenizer has no EOS token", t->name);
        if (m2_tokens_push(out, t->eos_id, err)) return -1;
    }
    return 0;
}

/* ---------- decode ---------- */

const char *m2_tokenizer_piece(const m2_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_tokens) { if (len) *len = 0; return NULL; }
    if (len) *len = t->plen[id];
    return t->piece + t->poff[id];
}

int m2_tokenizer_decode(const m2_tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
                        char **out, size_t *len, m2_err *err) {
    *out = NULL;
    if (len) *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_tokens)
            return m2_errorf(err, M2_EINVAL, "%s: decode: token id %d at position %zu out of range [0, %d)",
                             t->name, ids[i], i, t->n_tokens);
        total += t->plen[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "%s: decode: out of memory (%zu bytes)", t->name, total);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        int ty = t->types[ids[i]];
        if ((flags & M2_DEC_SKIP_SPECIAL) && (ty == M2_TOKEN_CONTROL || ty == M2_TOKEN_UNKNOWN || ty == M2_TOKEN_UNUSED))
            continue;
        memcpy(buf + w, t->piece + t->poff[ids[i]], t->plen[ids[i]]);
        w += t->plen[ids[i]];
    }
    /* SPM: the dummy prefix makes the output start with a space; drop it (HF Strip decoder). */
    size_t skip = 0;
    if (t->model == M2_TOKENIZER_SPM && t->space_prefix != M2_SPACE_PREFIX_NONE && !(flags & M2_DEC_KEEP_SPACE) &&
        w > 0 && buf[0] == ' ')
        skip = 1;
    if (skip) memmove(buf, buf + skip, w - skip);
    w -= skip;
    buf[w] = 0;
    *out = buf;
    if (len) *len = w;
    return 0;
}

/* ---------- queries ---------- */

int32_t m2_tokenizer_n_tokens(const m2_tokenizer *t) { return t->n_tokens; }
m2_tokenizer_model m2_tokenizer_model_kind(const m2_tokenizer *t) { return t->model; }
m2_pretok m2_tokenizer_pretok(const m2_tokenizer *t) { return t->pretok; }
int32_t m2_tokenizer_bos(const m2_tokenizer *t) { return t->bos_id; }
int32_t m2_tokenizer_eos(const m2_tokenizer *t) { return t->eos_id; }
int32_t m2_tokenizer_pad(const m2_tokenizer *t) { return t->pad_id; }
int32_t m2_tokenizer_unk(const m2_tokenizer *t) { return t->unk_id; }
int m2_tokenizer_add_bos(const m2_tokenizer *t) { return t->add_bos; }
int32_t m2_tokenizer_n_merges(const m2_tokenizer *t) { return t->n_merges; }

int32_t m2_tokenizer_find(const m2_tokenizer *t, const char *s, size_t n) { return m2_strmap_get(t, s, n); }

const char *m2_tokenizer_token_text(const m2_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_tokens) { if (len) *len = 0; return NULL; }
    if (len) *len = t->len[id];
    return t->text + t->off[id];
}

float m2_tokenizer_token_score(const m2_tokenizer *t, int32_t id) {
    return id < 0 || id >= t->n_tokens ? 0.f : t->scores[id];
}

int m2_tokenizer_token_type(const m2_tokenizer *t, int32_t id) {
    return id < 0 || id >= t->n_tokens ? 0 : t->types[id];
}
