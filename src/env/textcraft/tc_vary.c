/* Procedurally varied TextCraft worlds (env.h `vary`): the env's own recipe files with every word of
 * every item and tag id replaced by a made-up word through a seeded bijection ("oak_planks" ->
 * "vemo_kardis", "oak_log" -> "vemo_tulin": shared words stay shared, so names keep their
 * structure). The recipes, counts, tags, ADaPT's loading rules and the goal lists are those of the
 * original world, only the names differ, so an agent that plays many such worlds has to read the
 * crafting commands instead of recalling recipes by name (issue #15: pre-training corpora that
 * teach reading rather than memorising).
 *
 * Why the result is the same world under other names: the renamed files keep their file names (so
 * their load order), their member order and every value but the renamed strings, so the loader
 * interns the names in the same order and every index (name, recipe, line, goal) means the same
 * thing in both worlds (checked below: the same counts, and each renamed id is the rename of the
 * original's). The word "block" is kept, because ADaPT's `_block` rule reads it; the split of a
 * goal (a hash of its id) is taken from the ORIGINAL world, so a varied world's train goals are
 * the original's train goals and no OOD goal item is ever played in one. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env/textcraft/tc.h"

/* a made-up word: 1 or 2 syllables of onset + vowel (+ coda), about as short as the words it replaces */
static const char *const ONSETS[] = {"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "gr", "st", "tr"};
static const char *const VOWELS[] = {"a", "e", "i", "o", "u"};
static const char *const CODAS[] = {"", "", "", "n", "r", "l", "s", "k", "m"};
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
/* the word ADaPT's `_block` rule reads: kept as it is */
#define TC_KEPT_WORD "block"
#define TC_WORD_MAX 64

/* word -> word map (open addressing over the original words) */
typedef struct word_map {
    char **from, **to;
    int n, cap;    /* cap: a power of two, at least twice n */
} word_map;

static uint64_t word_hash(const char *s, size_t n) { return m2_tc_fnv1a(s, n); }

static int map_find(const word_map *m, const char *w, size_t n) {
    if (!m->cap) return -1;
    for (uint64_t j = word_hash(w, n) & (uint64_t)(m->cap - 1);; j = (j + 1) & (uint64_t)(m->cap - 1)) {
        if (!m->from[j]) return -(int)j - 2;   /* the empty slot where w would go */
        if (strlen(m->from[j]) == n && !memcmp(m->from[j], w, n)) return (int)j;
    }
}

static int map_grow(word_map *m) {
    int nc = m->cap ? m->cap * 2 : 256;
    char **f = calloc((size_t)nc, sizeof *f), **t = calloc((size_t)nc, sizeof *t);
    if (!f || !t) { free(f); free(t); return -1; }
    word_map g = {f, t, 0, nc};
    for (int i = 0; i < m->cap; i++)
        if (m->from[i]) {
            int s = map_find(&g, m->from[i], strlen(m->from[i]));
            g.from[-s - 2] = m->from[i];
            g.to[-s - 2] = m->to[i];
            g.n++;
        }
    free(m->from);
    free(m->to);
    *m = g;
    return 0;
}

static void map_free(word_map *m) {
    for (int i = 0; i < m->cap; i++) { free(m->from[i]); free(m->to[i]); }
    free(m->from);
    free(m->to);
    memset(m, 0, sizeof *m);
}

/* adds w (if new) with target `to` (may be NULL for "not assigned yet"); returns its slot or -1 */
static int map_add(word_map *m, const char *w, size_t n) {
    if (2 * (m->n + 1) > m->cap && map_grow(m)) return -1;
    int s = map_find(m, w, n);
    if (s >= 0) return s;
    int j = -s - 2;
    m->from[j] = strndup(w, n);
    if (!m->from[j]) return -1;
    m->n++;
    return j;
}

typedef struct rename_ctx {
    word_map words;    /* every original word; to[] filled on first use */
    word_map made;     /* every made-up word handed out (from = the word), to avoid repeats */
    m2_rng rng;
    m2_err *err;
} rename_ctx;

static int make_word(rename_ctx *c, char *out) {
    for (int tries = 0; tries < 100000; tries++) {
        int syl = 1 + (int)m2_rng_below(&c->rng, 2), n = 0;
        out[0] = 0;
        for (int s = 0; s < syl; s++) {
            n += snprintf(out + n, (size_t)(TC_WORD_MAX - n), "%s%s%s", ONSETS[m2_rng_below(&c->rng, N_OF(ONSETS))],
                          VOWELS[m2_rng_below(&c->rng, N_OF(VOWELS))],
                          s == syl - 1 ? CODAS[m2_rng_below(&c->rng, N_OF(CODAS))] : "");
        }
        size_t l = strlen(out);
        /* not an original word, not handed out before */
        if (map_find(&c->words, out, l) >= 0 || map_find(&c->made, out, l) >= 0) continue;
        if (map_add(&c->made, out, l) < 0) return m2_errorf(c->err, M2_ENOMEM, "textcraft: out of memory");
        return 0;
    }
    return m2_errorf(c->err, M2_EINVAL, "textcraft: ran out of made-up words");
}

/* the id part after the namespace: "minecraft:oak_planks" -> "oak_planks" */
static const char *id_body(const char *id) {
    const char *c = strrchr(id, ':');
    return c ? c + 1 : id;
}

/* pass 1 (collect = 1): register every word of id; pass 2: write the renamed id into *out. */
static int rename_id(rename_ctx *c, const char *id, int collect, char **out) {
    const char *body = id_body(id);
    size_t ns = (size_t)(body - id), len = strlen(id), cap = len * 8 + 64;
    char *r = NULL;
    size_t o = 0;
    if (!collect) {
        r = malloc(cap);
        if (!r) return m2_errorf(c->err, M2_ENOMEM, "textcraft: out of memory");
        memcpy(r, id, ns);
        o = ns;
    }
    for (const char *p = body; *p;) {
        const char *q = p;
        while (*q && *q != '_') q++;
        size_t wl = (size_t)(q - p);
        int keep = wl == 0 || (wl == strlen(TC_KEPT_WORD) && !memcmp(p, TC_KEPT_WORD, wl));
        if (collect) {
            if (!keep && map_add(&c->words, p, wl) < 0) return m2_errorf(c->err, M2_ENOMEM, "textcraft: out of memory");
        } else {
            const char *w = p;
            size_t l = wl;
            char made[TC_WORD_MAX];
            if (!keep) {
                int s = map_find(&c->words, p, wl);
                if (s < 0) { free(r); return m2_errorf(c->err, M2_EINVAL, "textcraft: word missed by the first pass"); }
                if (!c->words.to[s]) {
                    if (make_word(c, made)) { free(r); return -1; }
                    c->words.to[s] = strdup(made);
                    if (!c->words.to[s]) { free(r); return m2_errorf(c->err, M2_ENOMEM, "textcraft: out of memory"); }
                }
                w = c->words.to[s];
                l = strlen(w);
            }
            if (o + l + 2 > cap) { free(r); return m2_errorf(c->err, M2_EINVAL, "textcraft: renamed id too long"); }
            memcpy(r + o, w, l);
            o += l;
        }
        p = q;
        if (*p == '_') {
            if (!collect) r[o++] = '_';
            p++;
        }
    }
    if (!collect) { r[o] = 0; *out = r; }
    return 0;
}

/* Renames the string values of the members the loader reads as names: "item", "tag", "group" and
 * a string "result"; "type" and the pattern keys are left alone. */
static int rename_json(rename_ctx *c, cJSON *node, int collect) {
    cJSON *ch;
    cJSON_ArrayForEach(ch, node) {
        const char *k = ch->string;
        int is_name = k && (!strcmp(k, "item") || !strcmp(k, "tag") || !strcmp(k, "group") || !strcmp(k, "result"));
        if (is_name && cJSON_IsString(ch)) {
            char *r = NULL;
            if (rename_id(c, ch->valuestring, collect, &r)) return -1;
            if (!collect) {
                int ok = cJSON_SetValuestring(ch, r) != NULL;
                free(r);
                if (!ok) return m2_errorf(c->err, M2_ENOMEM, "textcraft: out of memory");
            }
        } else if ((cJSON_IsObject(ch) || cJSON_IsArray(ch)) && rename_json(c, ch, collect)) {
            return -1;
        }
    }
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const m2_tc_src *)a)->name, ((const m2_tc_src *)b)->name);
}

/* The renamed copies of src[0..n) (same names; texts malloc'd into *texts). Files that are not
 * JSON are copied as they are (the loader then reports them as it would in the original). */
static int rename_sources(const m2_tc_src *src, int n, uint64_t seed, m2_tc_src **out, char ***texts, m2_err *err) {
    m2_tc_src *sorted = malloc((size_t)n * sizeof *sorted);
    m2_tc_src *res = calloc((size_t)n, sizeof *res);
    char **tx = calloc((size_t)n, sizeof *tx);
    cJSON **roots = calloc((size_t)n, sizeof *roots);
    rename_ctx c = {.err = err};
    int rc = 0;
    if (!sorted || !res || !tx || !roots) { rc = m2_errorf(err, M2_ENOMEM, "textcraft: out of memory"); goto done; }
    /* words are handed out in sorted file order, whatever order the files were given in */
    memcpy(sorted, src, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_name);
    m2_rng_seed_stream(&c.rng, seed, 0x7c7661727900ull /* "tcvary" */);
    for (int i = 0; i < n && !rc; i++) {
        roots[i] = cJSON_ParseWithLength(sorted[i].text, sorted[i].len);
        if (roots[i]) rc = rename_json(&c, roots[i], 1);
    }
    for (int i = 0; i < n && !rc; i++) {
        res[i].name = sorted[i].name;
        if (roots[i]) {
            rc = rename_json(&c, roots[i], 0);
            tx[i] = rc ? NULL : cJSON_PrintUnformatted(roots[i]);
        } else {
            tx[i] = strndup(sorted[i].text, sorted[i].len);
        }
        if (!rc && !tx[i]) rc = m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
        res[i].text = tx[i];
        res[i].len = tx[i] ? strlen(tx[i]) : 0;
    }
done:
    for (int i = 0; roots && i < n; i++) cJSON_Delete(roots[i]);
    free(roots);
    free(sorted);
    map_free(&c.words);
    map_free(&c.made);
    if (rc) {
        for (int i = 0; tx && i < n; i++) free(tx[i]);
        free(tx);
        free(res);
        return -1;
    }
    *out = res;
    *texts = tx;
    return 0;
}

/* v's trees mean what base's mean, index for index (see the top of the file). */
static int same_structure(const tc_worlds *base, const tc_worlds *v, m2_err *err) {
    if (base->n != v->n) return m2_errorf(err, M2_EINVAL, "textcraft: a varied world has %d cycle worlds, the original %d", v->n, base->n);
    for (int w = 0; w < base->n; w++) {
        const m2_tc_tree *a = &base->w[w], *b = &v->w[w];
        if (a->n_names != b->n_names || a->n_recipes != b->n_recipes || a->n_lines != b->n_lines || a->goals.n != b->goals.n)
            return m2_errorf(err, M2_EINVAL, "textcraft: a varied world differs from the original in structure (world %d)", w);
        for (int i = 0; i < a->goals.n; i++)
            if (a->goals.a[i] != b->goals.a[i]) return m2_errorf(err, M2_EINVAL, "textcraft: a varied world orders its goals differently");
    }
    for (int i = 0; i < base->w[0].n_names; i++)
        if (base->world_of[i] != v->world_of[i]) return m2_errorf(err, M2_EINVAL, "textcraft: a varied world plays a goal in another cycle world");
    return 0;
}

int m2_tc_vary(m2_tc_env *e, uint64_t seed, m2_err *err) {
    if (e->varied) { tc_worlds_free(&e->worlds); e->varied = 0; }
    e->worlds = e->base_worlds;
    int rc = 0;
    if (seed) {
        m2_tc_src *src = NULL;
        char **texts = NULL;
        tc_worlds v;
        if (rename_sources(e->src, e->n_src, seed, &src, &texts, err)) return -1;
        rc = tc_worlds_build(&v, src, e->n_src, err);
        for (int i = 0; i < e->n_src; i++) free(texts[i]);
        free(texts);
        free(src);
        if (rc) return -1;
        if (same_structure(&e->base_worlds, &v, err)) { tc_worlds_free(&v); return -1; }
        /* the original's splits: a varied world's train goals are the original's train goals */
        m2_tc_tree *t0 = &v.w[0];
        for (int s = 0; s < 3 && !rc; s++) {
            const m2_tc_ivec *from = &e->base_worlds.w[0].split_goals[s];
            t0->split_goals[s].n = 0;
            for (int i = 0; i < from->n && !rc; i++)
                if (m2_tc_ivec_push(&t0->split_goals[s], from->a[i])) rc = m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
            t0->stats.split_goals[s] = from->n;
        }
        if (rc) { tc_worlds_free(&v); return -1; }
        e->worlds = v;
        e->varied = 1;
    }
    /* recipe trees are cached per goal index; they mean the same recipes in every world, but a
     * fresh world starts from a clean state */
    for (int i = 0; i < e->t.n_names; i++) m2_tc_ivec_free(&e->tree_cache[i]);
    for (int i = 0; i < e->block_lines.n; i++) e->line_listed[e->block_lines.a[i]] = 0;
    e->block_lines.n = 0;
    for (int i = 0; i < e->inv_order.n; i++) { e->inv[e->inv_order.a[i]] = 0; e->inv_has[e->inv_order.a[i]] = 0; }
    e->inv_order.n = 0;
    e->t = e->worlds.w[0];
    e->goal = -1;
    e->vary_seed = seed;
    return rc;
}
