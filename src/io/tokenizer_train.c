/* Byte-level BPE training. Words (pre-tokenizer pieces) are counted once; pair counts are kept
 * incrementally with, per pair, the list of words it occurs in, so a merge only touches the words
 * that contain it. A lazy max-heap picks the next pair: highest count, ties by smaller (left, right)
 * ids, which makes training deterministic. */
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer_impl.h"

/* ---------- words ---------- */

typedef struct {
    char *bytes; size_t nbytes, cbytes;          /* word texts, back to back */
    size_t *off; uint32_t *len; int64_t *count;  /* [nwords] */
    size_t nwords, cwords;
    uint32_t *slots; uint32_t mask;              /* hash of word text -> index+1 (0 empty) */
} wordset;

static int wordset_grow_slots(wordset *w) {
    uint32_t ns = w->mask ? 2 * (w->mask + 1) : 1024;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < w->nwords; i++) {
        uint32_t h = (uint32_t)m2_tok_hash(w->bytes + w->off[i], w->len[i]) & (ns - 1);
        while (s[h]) h = (h + 1) & (ns - 1);
        s[h] = (uint32_t)i + 1;
    }
    free(w->slots);
    w->slots = s;
    w->mask = ns - 1;
    return 0;
}

static int word_add(void *ctx, const char *s, size_t n, m2_err *err) {
    wordset *w = ctx;
    if (n > 0xFFFFFF) return m2_errorf(err, M2_EINVAL, "bpe train: a pre-tokenizer piece of %zu bytes is too long", n);
    if (2 * (w->nwords + 1) > w->mask && wordset_grow_slots(w)) return m2_errorf(err, M2_ENOMEM, "bpe train: out of memory");
    uint32_t h = (uint32_t)m2_tok_hash(s, n) & w->mask;
    while (w->slots[h]) {
        size_t i = w->slots[h] - 1;
        if (w->len[i] == n && !memcmp(w->bytes + w->off[i], s, n)) { w->count[i]++; return 0; }
        h = (h + 1) & w->mask;
    }
    if (w->nwords == w->cwords) {
        size_t nc = w->cwords ? 2 * w->cwords : 4096;
        size_t *o = realloc(w->off, nc * sizeof *o);
        if (o) w->off = o;
        uint32_t *l = realloc(w->len, nc * sizeof *l);
        if (l) w->len = l;
        int64_t *c = realloc(w->count, nc * sizeof *c);
        if (c) w->count = c;
        if (!o || !l || !c) return m2_errorf(err, M2_ENOMEM, "bpe train: out of memory");
        w->cwords = nc;
    }
    if (w->nbytes + n > w->cbytes) {
        size_t nc = (w->nbytes + n) * 2 + 4096;
        char *b = realloc(w->bytes, nc);
        if (!b) return m2_errorf(err, M2_ENOMEM, "bpe train: out of memory");
        w->bytes = b; w->cbytes = nc;
    }
    memcpy(w->bytes + w->nbytes, s, n);
    w->off[w->nwords] = w->nbytes;
    w->len[w->nwords] = (uint32_t)n;
    w->count[w->nwords] = 1;
    w->nbytes += n;
    w->slots[h] = (uint32_t)++w->nwords;
    return 0;
}

/* ---------- pair statistics ---------- */

typedef struct { uint64_t key; int64_t count; uint32_t *where; uint32_t nwhere, cwhere; } pairstat;
typedef struct { pairstat *p; size_t n; uint32_t mask; } pairtab;   /* open addressing, key EMPTY = free */
typedef struct { int64_t count; uint64_t key; } heapent;
typedef struct { heapent *h; size_t n, cap; } maxheap;

static uint64_t mix64(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33;
    return k;
}

static int pairtab_grow(pairtab *t) {
    uint32_t ns = t->mask ? 2 * (t->mask + 1) : 1 << 16;
    pairstat *np = malloc((size_t)ns * sizeof *np);
    if (!np) return -1;
    for (uint32_t i = 0; i < ns; i++) { np[i].key = M2_PAIR_EMPTY; np[i].where = NULL; }
    for (uint32_t i = 0; t->p && i <= t->mask; i++) {
        if (t->p[i].key == M2_PAIR_EMPTY) continue;
        uint32_t h = (uint32_t)mix64(t->p[i].key) & (ns - 1);
        while (np[h].key != M2_PAIR_EMPTY) h = (h + 1) & (ns - 1);
        np[h] = t->p[i];
    }
    free(t->p);
    t->p = np;
    t->mask = ns - 1;
    return 0;
}

static pairstat *pair_get(pairtab *t, uint64_t key, int create) {
    if (create && 2 * (t->n + 1) > (size_t)t->mask && pairtab_grow(t)) return NULL;
    uint32_t h = (uint32_t)mix64(key) & t->mask;
    while (t->p[h].key != M2_PAIR_EMPTY) {
        if (t->p[h].key == key) return &t->p[h];
        h = (h + 1) & t->mask;
    }
    if (!create) return NULL;
    pairstat *p = &t->p[h];
    p->key = key; p->count = 0; p->where = NULL; p->nwhere = p->cwhere = 0;
    t->n++;
    return p;
}

static int heap_before(const heapent *a, const heapent *b) {
    return a->count > b->count || (a->count == b->count && a->key < b->key);
}

static int heap_push(maxheap *h, int64_t count, uint64_t key) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? 2 * h->cap : 1 << 16;
        heapent *p = realloc(h->h, nc * sizeof *p);
        if (!p) return -1;
        h->h = p; h->cap = nc;
    }
    heapent e = {count, key};
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_before(&e, &h->h[p])) break;
        h->h[i] = h->h[p];
        i = p;
    }
    h->h[i] = e;
    return 0;
}

static heapent heap_pop(maxheap *h) {
    heapent top = h->h[0], last = h->h[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const heapent *best = &last;
        if (l < h->n && heap_before(&h->h[l], best)) { m = l; best = &h->h[l]; }
        if (r < h->n && heap_before(&h->h[r], best)) m = r;
        if (m == i) break;
        h->h[i] = h->h[m];
        i = m;
    }
    if (h->n > 0) h->h[i] = last;
    return top;
}

typedef struct {
    pairtab pt;
    uint64_t *touched; size_t ntouched, ctouched;
    int oom;
} trainer;

static inline uint64_t pkey(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static void pair_add(trainer *tr, int32_t a, int32_t b, int64_t f, uint32_t w, int track) {
    pairstat *p = pair_get(&tr->pt, pkey(a, b), 1);
    if (!p) { tr->oom = 1; return; }
    p->count += f;
    if (f > 0 && (p->nwhere == 0 || p->where[p->nwhere - 1] != w)) {
        if (p->nwhere == p->cwhere) {
            uint32_t nc = p->cwhere ? 2 * p->cwhere : 4;
            uint32_t *q = realloc(p->where, nc * sizeof *q);
            if (!q) { tr->oom = 1; return; }
            p->where = q; p->cwhere = nc;
        }
        p->where[p->nwhere++] = w;
    }
    if (track) {
        if (tr->ntouched == tr->ctouched) {
            size_t nc = tr->ctouched ? 2 * tr->ctouched : 256;
            uint64_t *q = realloc(tr->touched, nc * sizeof *q);
            if (!q) { tr->oom = 1; return; }
            tr->touched = q; tr->ctouched = nc;
        }
        tr->touched[tr->ntouched++] = pkey(a, b);
    }
}

/* ---------- the trainer ---------- */

m2_tokenizer *m2_bpe_train(const char *text, size_t len, const m2_bpe_train_opts *opts, m2_err *err) {
    static const char *const default_specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    const char *const *specials = opts->specials ? opts->specials : default_specials;
    int n_specials = opts->specials ? opts->n_specials : 3;
    m2_pretok pretok = opts->pretok ? opts->pretok : M2_PRETOK_QWEN2;
    int64_t min_freq = opts->min_frequency > 0 ? opts->min_frequency : 2;
    if (n_specials < 0 || opts->vocab_size < 256 + n_specials || opts->vocab_size > (1 << 24)) {
        m2_errorf(err, M2_EINVAL, "bpe train: vocab size %d must hold the 256 byte tokens and %d special tokens (and be < %d)",
                  opts->vocab_size, n_specials < 0 ? 0 : n_specials, 1 << 24);
        return NULL;
    }
    for (int i = 0; i < n_specials; i++)
        if (!specials[i] || !specials[i][0]) { m2_errorf(err, M2_EINVAL, "bpe train: special token %d is empty", i); return NULL; }
    size_t bad;
    if (len && m2_utf8_check(text, len, &bad)) {
        m2_errorf(err, M2_EINVAL, "bpe train: corpus is not valid UTF-8 (byte offset %zu)", bad);
        return NULL;
    }
    const char *pattern = pretok == M2_PRETOK_REGEX ? NULL : m2_pretok_regex(pretok);
    if (!pattern) { m2_errorf(err, M2_EINVAL, "bpe train: pre-tokenizer %d has no built-in regex", (int)pretok); return NULL; }

    m2_tokenizer *tok = NULL;
    wordset ws = {0};
    trainer tr = {0};
    maxheap heap = {0};
    int32_t *sym = NULL;
    size_t *soff = NULL;
    uint32_t *slen = NULL, *stamp = NULL;
    char *vtext = NULL;
    size_t *voff = NULL;
    const char **tokens = NULL, **merges = NULL;
    int32_t *types = NULL, *ml = NULL, *mr = NULL;
    int32_t target = opts->vocab_size - n_specials - 256, nm = 0;

    /* 1. count the words */
    pcre2_code *re = m2_regex_compile(pattern, "bpe train", err);
    if (!re) return NULL;
    int rc = m2_regex_split(re, text, len, word_add, &ws, err);
    pcre2_code_free(re);
    if (rc) goto done;

    /* 2. vocab: the 256 bytes in GPT-2 order (printable ones first) */
    uint32_t cp[256];
    m2_byte_level_table(cp);
    int32_t byte_id[256];
    int32_t nid = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < 256; b++)
            if ((cp[b] == (uint32_t)b) == (pass == 0)) byte_id[b] = nid++;
    size_t vcap = 4096 + (size_t)opts->vocab_size * 8;
    vtext = malloc(vcap);
    voff = malloc(((size_t)opts->vocab_size + 1) * sizeof *voff);
    ml = malloc(((size_t)target + 1) * sizeof *ml);
    mr = malloc(((size_t)target + 1) * sizeof *mr);
    if (!vtext || !voff || !ml || !mr) goto oom;
    size_t vlen = 0;
    {
        int32_t order[256];
        for (int b = 0; b < 256; b++) order[byte_id[b]] = b;
        for (int i = 0; i < 256; i++) {
            voff[i] = vlen;
            vlen += (size_t)m2_utf8_put(cp[order[i]], vtext + vlen);
            vtext[vlen++] = 0;
        }
    }

    /* 3. symbols of every word, initial pair counts */
    size_t total = 0;
    for (size_t w = 0; w < ws.nwords; w++) total += ws.len[w];
    sym = malloc((total + 1) * sizeof *sym);
    soff = malloc((ws.nwords + 1) * sizeof *soff);
    slen = malloc((ws.nwords + 1) * sizeof *slen);
    stamp = calloc(ws.nwords + 1, sizeof *stamp);
    if (!sym || !soff || !slen || !stamp || pairtab_grow(&tr.pt)) goto oom;
    size_t at = 0;
    for (size_t w = 0; w < ws.nwords; w++) {
        soff[w] = at;
        slen[w] = ws.len[w];
        const unsigned char *s = (const unsigned char *)ws.bytes + ws.off[w];
        for (uint32_t i = 0; i < ws.len[w]; i++) sym[at + i] = byte_id[s[i]];
        for (uint32_t i = 0; i + 1 < ws.len[w]; i++) pair_add(&tr, sym[at + i], sym[at + i + 1], ws.count[w], (uint32_t)w, 0);
        at += ws.len[w];
    }
    if (tr.oom) goto oom;
    for (uint32_t i = 0; i <= tr.pt.mask; i++)
        if (tr.pt.p[i].key != M2_PAIR_EMPTY && tr.pt.p[i].count > 0 && heap_push(&heap, tr.pt.p[i].count, tr.pt.p[i].key)) goto oom;

    /* 4. merge until the vocab is full or no pair is frequent enough */
    while (nm < target && heap.n > 0) {
        heapent top = heap_pop(&heap);
        pairstat *p = pair_get(&tr.pt, top.key, 0);
        if (!p || p->count != top.count) {
            if (p && p->count > 0 && heap_push(&heap, p->count, p->key)) goto oom;
            continue;
        }
        if (p->count < min_freq) break;
        int32_t a = (int32_t)(top.key >> 32), b = (int32_t)(uint32_t)top.key, x = nid++;
        ml[nm] = a; mr[nm] = b; nm++;
        size_t la = strlen(vtext + voff[a]), lb = strlen(vtext + voff[b]);
        if (vlen + la + lb + 1 > vcap) {
            vcap = 2 * (vlen + la + lb + 1);
            char *v2 = realloc(vtext, vcap);
            if (!v2) goto oom;
            vtext = v2;
        }
        voff[x] = vlen;
        memcpy(vtext + vlen, vtext + voff[a], la);
        memcpy(vtext + vlen + la, vtext + voff[b], lb);
        vlen += la + lb;
        vtext[vlen++] = 0;

        /* the where-list of (a, b) does not grow during this merge: take it as it is */
        uint32_t *where = p->where, nwhere = p->nwhere;
        p->where = NULL; p->nwhere = p->cwhere = 0;
        tr.ntouched = 0;
        for (uint32_t k = 0; k < nwhere; k++) {
            uint32_t w = where[k];
            if (stamp[w] == (uint32_t)nm) continue;
            stamp[w] = (uint32_t)nm;
            int32_t *s = sym + soff[w];
            uint32_t n = slen[w], o = 0;
            int64_t f = ws.count[w];
            for (uint32_t i = 0; i < n;) {
                if (i + 1 < n && s[i] == a && s[i + 1] == b) {
                    if (o > 0) { pair_add(&tr, s[o - 1], a, -f, w, 0); pair_add(&tr, s[o - 1], x, f, w, 1); }
                    if (i + 2 < n) { pair_add(&tr, b, s[i + 2], -f, w, 0); pair_add(&tr, x, s[i + 2], f, w, 1); }
                    pair_add(&tr, a, b, -f, w, 0);
                    s[o++] = x;
                    i += 2;
                } else {
                    s[o++] = s[i++];
                }
            }
            slen[w] = o;
        }
        free(where);
        if (tr.oom) goto oom;
        for (size_t k = 0; k < tr.ntouched; k++) {
            pairstat *q = pair_get(&tr.pt, tr.touched[k], 0);
            if (q && q->count > 0 && heap_push(&heap, q->count, q->key)) goto oom;
        }
    }

    /* 5. the tokenizer: bytes, merges, specials */
    int32_t n = nid + n_specials;
    tokens = malloc((size_t)n * sizeof *tokens);
    types = malloc((size_t)n * sizeof *types);
    merges = malloc((size_t)(2 * nm + 1) * sizeof *merges);
    if (!tokens || !types || !merges) goto oom;
    for (int32_t i = 0; i < nid; i++) { tokens[i] = vtext + voff[i]; types[i] = M2_TOKEN_NORMAL; }
    for (int i = 0; i < n_specials; i++) { tokens[nid + i] = specials[i]; types[nid + i] = M2_TOKEN_CONTROL; }
    for (int32_t m = 0; m < nm; m++) { merges[2 * m] = vtext + voff[ml[m]]; merges[2 * m + 1] = vtext + voff[mr[m]]; }
    m2_tokenizer_spec spec = {0};
    spec.name = "bpe train";
    spec.model = M2_TOKENIZER_BPE;
    spec.n_tokens = n;
    spec.tokens = tokens;
    spec.token_types = types;
    spec.n_merges = nm;
    spec.merges = merges;
    spec.pretok = pretok;
    spec.bos_id = spec.eos_id = spec.pad_id = spec.unk_id = -1;
    for (int i = 0; i < n_specials; i++)
        if (!strcmp(specials[i], "<|endoftext|>")) spec.eos_id = spec.pad_id = nid + i;
    tok = m2_tokenizer_create(&spec, err);
    goto done;
oom:
    m2_errorf(err, M2_ENOMEM, "bpe train: out of memory");
done:
    for (uint32_t i = 0; tr.pt.p && i <= tr.pt.mask; i++) if (tr.pt.p[i].key != M2_PAIR_EMPTY) free(tr.pt.p[i].where);
    free(tr.pt.p); free(tr.touched); free(heap.h);
    free(ws.bytes); free(ws.off); free(ws.len); free(ws.count); free(ws.slots);
    free(sym); free(soff); free(slen); free(stamp);
    free(vtext); free(voff); free(ml); free(mr);
    free(tokens); free(types); free(merges);
    return tok;
}
