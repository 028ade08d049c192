#include "core/config.h"
#include "core/fsutil.h"
#include "core/strbuf.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---------------------------------------------------------------- small string helpers */

static void *field_ptr(const m2_cfg_field *f, void *cfg) { return (char *)cfg + f->offset; }
static const void *field_cptr(const m2_cfg_field *f, const void *cfg) { return (const char *)cfg + f->offset; }

static const char *type_name(m2_cfg_type t) {
    switch (t) {
    case M2_CFG_INT: return "int";
    case M2_CFG_FLOAT: return "float";
    case M2_CFG_BOOL: return "bool";
    case M2_CFG_STR: return "string";
    case M2_CFG_ENUM: return "enum";
    case M2_CFG_LIST: return "list";
    }
    return "?";
}

/* Copies s[0..n) trimmed of ASCII white space into buf (NUL-terminated, truncated to cap-1). */
static void trim_copy(char *buf, size_t cap, const char *s, size_t n) {
    while (n > 0 && isspace((unsigned char)*s)) { s++; n--; }
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
}

/* Strips one pair of matching quotes ('x' or "x") in place. */
static void unquote(char *s) {
    size_t n = strlen(s);
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
        memmove(s, s + 1, n - 2);
        s[n - 2] = 0;
    }
}

/* Strict UTF-8 check (no overlongs, no surrogates, <= U+10FFFF). */
static int utf8_valid(const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s;
        if (c < 0x80) { s++; continue; }
        int n; unsigned cp;
        if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return 0;
        for (int i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return 0;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        s += n + 1;
    }
    return 1;
}

/* The position of `item` among the '|'-separated `choices`, or -1. */
static int choice_index(const char *choices, const char *item) {
    size_t il = strlen(item);
    const char *p = choices;
    for (int i = 0; *p; i++) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == il && !memcmp(p, item, n)) return i;
        if (!e) break;
        p = e + 1;
    }
    return -1;
}
static int choice_ok(const char *choices, const char *item) { return choice_index(choices, item) >= 0; }

/* Choice i of `choices` copied into buf ("" past the end); returns buf. */
static const char *choice_at(const char *choices, int i, char *buf, size_t cap) {
    const char *p = choices;
    buf[0] = 0;
    for (int k = 0; p && *p; k++) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (k == i) { snprintf(buf, cap, "%.*s", (int)n, p); break; }
        p = e ? e + 1 : NULL;
    }
    return buf;
}

/* Levenshtein distance, exact up to SUGGEST_MAX_DIST; beyond that only a lower bound (no caller
 * suggests anything that far). The length difference bounds it from below, so a long garbage key
 * costs nothing instead of a full table per schema key (the YAML fuzzer spent most of its time
 * here). */
#define SUGGEST_MAX_DIST 4
static size_t edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > 200 || nb > 200) return (size_t)-1;
    size_t gap = na > nb ? na - nb : nb - na;
    if (gap > SUGGEST_MAX_DIST) return gap;
    size_t row[201];
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

static int close_enough(size_t d, size_t len) { return d <= 2 || (d <= SUGGEST_MAX_DIST && d * 3 <= len); }

/* The choice closest to `item`, copied into buf; NULL if none is close. */
static const char *suggest_choice(const char *choices, const char *item, char *buf, size_t cap) {
    size_t best = (size_t)-1;
    const char *p = choices;
    buf[0] = 0;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char c[128];
        if (n < sizeof c) {
            memcpy(c, p, n); c[n] = 0;
            size_t d = edit_distance(c, item);
            if (d < best) { best = d; snprintf(buf, cap, "%s", c); }
        }
        if (!e) break;
        p = e + 1;
    }
    return best != (size_t)-1 && close_enough(best, strlen(item)) ? buf : NULL;
}

/* ---------------------------------------------------------------- schema lookup */

const m2_cfg_field *m2_cfg_find(const m2_cfg_schema *s, const char *key) {
    for (int i = 0; i < s->n_fields; i++)
        if (!strcmp(s->fields[i].key, key)) return &s->fields[i];
    return NULL;
}

/* Is `path` a section, i.e. a strict dotted prefix of some key? */
static int is_section(const m2_cfg_schema *s, const char *path) {
    size_t n = strlen(path);
    for (int i = 0; i < s->n_fields; i++)
        if (!strncmp(s->fields[i].key, path, n) && s->fields[i].key[n] == '.') return 1;
    return 0;
}

static int count_dots(const char *s) { int n = 0; for (; *s; s++) n += *s == '.'; return n; }

/* Compares `key` against every schema key cut to the same depth, so a misspelled section
 * ("sys2.ofline") is matched against sections and a misspelled leaf against leaves. */
static const char *suggest_at_depth(const m2_cfg_schema *s, const char *key, char *buf, size_t cap) {
    int depth = count_dots(key);
    size_t best = (size_t)-1;
    buf[0] = 0;
    for (int i = 0; i < s->n_fields; i++) {
        char cand[256];
        snprintf(cand, sizeof cand, "%s", s->fields[i].key);
        char *p = cand;
        for (int d = 0; d <= depth && p; d++) {
            p = strchr(p, '.');
            if (p && d == depth) *p = 0;
            else if (p) p++;
        }
        if (count_dots(cand) != depth) continue;
        size_t d = edit_distance(cand, key);
        if (d < best) { best = d; snprintf(buf, cap, "%s", cand); }
    }
    if (best == (size_t)-1 || best == 0 || !close_enough(best, strlen(key))) return NULL;
    return buf;
}

const char *m2_cfg_suggest(const m2_cfg_schema *s, const char *key) {
    size_t best = (size_t)-1;
    const char *out = NULL;
    for (int i = 0; i < s->n_fields; i++) {
        size_t d = edit_distance(s->fields[i].key, key);
        if (d < best) { best = d; out = s->fields[i].key; }
    }
    if (!out || !close_enough(best, strlen(key))) return NULL;
    return out;
}

/* Error for a key that is not in the schema. */
static int unknown_key(const m2_cfg_schema *s, const char *key, const char *source, m2_err *err) {
    char sug[256];
    const char *hint = suggest_at_depth(s, key, sug, sizeof sug);
    if (!hint) hint = m2_cfg_suggest(s, key);
    if (hint)
        return m2_errorf(err, M2_ECONFIG, "%s: unknown key '%s' (did you mean '%s'?)", source, key, hint);
    return m2_errorf(err, M2_ECONFIG, "%s: unknown key '%s' (multi2 train --help-config lists the keys)",
                     source, key);
}

/* ---------------------------------------------------------------- value parsing */

static int parse_bool(const char *v, int *out) {
    static const char *t[] = {"true", "yes", "on", "1"}, *f[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, t[i])) { *out = 1; return 0; }
        if (!strcasecmp(v, f[i])) { *out = 0; return 0; }
    }
    return -1;
}

/* Shortest %g text that reads back to d (for messages). */
static const char *shortest(double d, char *buf, size_t cap) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    return buf;
}

static int range_error(const m2_cfg_field *f, const char *source, const char *got, m2_err *err) {
    char lo[32], hi[32];
    shortest(f->min, lo, sizeof lo);
    shortest(f->max, hi, sizeof hi);
    if (f->max >= 1e300)
        return m2_errorf(err, M2_ECONFIG, "%s: %s: must be >= %s, got %s", source, f->key, lo, got);
    return m2_errorf(err, M2_ECONFIG, "%s: %s: must be in [%s, %s], got %s", source, f->key, lo, hi, got);
}

static int set_field(const m2_cfg_field *f, void *cfg, const char *raw, const char *source, m2_err *err) {
    char v[M2_CFG_STR_MAX * 2];
    if (strlen(raw) >= sizeof v)
        return m2_errorf(err, M2_ECONFIG, "%s: %s: value too long (%zu bytes)", source, f->key, strlen(raw));
    trim_copy(v, sizeof v, raw, strlen(raw));
    int ranged = f->min <= f->max;
    switch (f->type) {
    case M2_CFG_INT: {
        unquote(v);
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno) {
            /* Accept integral floats such as 1e3 or 2000.0. */
            errno = 0;
            double d = strtod(v, &end);
            if (!*v || *end || errno || !isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
                return m2_errorf(err, M2_ECONFIG, "%s: %s: expected an integer, got '%s'", source, f->key, v);
            x = (long long)d;
        }
        if (ranged && ((double)x < f->min || (double)x > f->max)) return range_error(f, source, v, err);
        *(int64_t *)field_ptr(f, cfg) = (int64_t)x;
        return 0;
    }
    case M2_CFG_FLOAT: {
        unquote(v);
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (!*v || *end || (errno && fabs(d) > 1.0))
            return m2_errorf(err, M2_ECONFIG, "%s: %s: expected a number, got '%s'", source, f->key, v);
        if (!isfinite(d))
            return m2_errorf(err, M2_ECONFIG, "%s: %s: expected a finite number, got '%s'", source, f->key, v);
        if (ranged && (d < f->min || d > f->max)) return range_error(f, source, v, err);
        *(double *)field_ptr(f, cfg) = d;
        return 0;
    }
    case M2_CFG_BOOL: {
        unquote(v);
        int b;
        if (parse_bool(v, &b) != 0)
            return m2_errorf(err, M2_ECONFIG, "%s: %s: expected true or false, got '%s'", source, f->key, v);
        *(int *)field_ptr(f, cfg) = b;
        return 0;
    }
    case M2_CFG_ENUM: {
        unquote(v);
        int k = choice_index(f->choices, v);
        if (k < 0) {
            char sug[128];
            if (suggest_choice(f->choices, v, sug, sizeof sug))
                return m2_errorf(err, M2_ECONFIG, "%s: %s: '%s' is not one of %s (did you mean '%s'?)", source,
                                 f->key, v, f->choices, sug);
            return m2_errorf(err, M2_ECONFIG, "%s: %s: '%s' is not one of %s", source, f->key, v, f->choices);
        }
        *(int *)field_ptr(f, cfg) = k;
        return 0;
    }
    case M2_CFG_STR: {
        /* Strings keep inner white space; only the command line form may carry quotes. */
        unquote(v);
        if (strlen(v) >= M2_CFG_STR_MAX)
            return m2_errorf(err, M2_ECONFIG, "%s: %s: value too long (%zu bytes, max %d)", source, f->key,
                             strlen(v), M2_CFG_STR_MAX - 1);
        if (!utf8_valid(v))
            return m2_errorf(err, M2_ECONFIG, "%s: %s: value is not valid UTF-8", source, f->key);
        char *dst = field_ptr(f, cfg);
        memset(dst, 0, M2_CFG_STR_MAX);
        memcpy(dst, v, strlen(v));
        return 0;
    }
    case M2_CFG_LIST: {
        size_t n = strlen(v);
        if (n >= 2 && v[0] == '[' && v[n - 1] == ']') { memmove(v, v + 1, n - 2); v[n - 2] = 0; }
        char out[M2_CFG_STR_MAX];
        size_t used = 0;
        out[0] = 0;
        const char *p = v;
        int empty = 1;
        for (const char *q = p; *q; q++) if (!isspace((unsigned char)*q)) empty = 0;
        while (!empty) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char item[M2_CFG_STR_MAX];
            trim_copy(item, sizeof item, p, len);
            unquote(item);
            if (!*item) return m2_errorf(err, M2_ECONFIG, "%s: %s: empty list item", source, f->key);
            if (strchr(item, ',') || !utf8_valid(item))
                return m2_errorf(err, M2_ECONFIG, "%s: %s: bad list item '%s'", source, f->key, item);
            if (f->choices && !choice_ok(f->choices, item)) {
                char sug[128];
                if (suggest_choice(f->choices, item, sug, sizeof sug))
                    return m2_errorf(err, M2_ECONFIG, "%s: %s: item '%s' is not one of %s (did you mean '%s'?)",
                                     source, f->key, item, f->choices, sug);
                return m2_errorf(err, M2_ECONFIG, "%s: %s: item '%s' is not one of %s", source, f->key, item,
                                 f->choices);
            }
            size_t il = strlen(item);
            if (used + il + 2 > sizeof out)
                return m2_errorf(err, M2_ECONFIG, "%s: %s: list too long", source, f->key);
            if (used) out[used++] = ',';
            memcpy(out + used, item, il);
            used += il;
            out[used] = 0;
            if (!e) break;
            p = e + 1;
        }
        char *dst = field_ptr(f, cfg);
        memset(dst, 0, M2_CFG_STR_MAX);
        memcpy(dst, out, used);
        return 0;
    }
    }
    return m2_errorf(err, M2_ECONFIG, "%s: %s: bad field type", source, f->key);
}

int m2_cfg_set(const m2_cfg_schema *s, void *cfg, const char *key, const char *value, const char *source,
               m2_err *err) {
    const m2_cfg_field *f = m2_cfg_find(s, key);
    if (!f) {
        if (is_section(s, key))
            return m2_errorf(err, M2_ECONFIG, "%s: '%s' is a section, not a value (set one of its keys, e.g. '%s.…')",
                             source, key, key);
        return unknown_key(s, key, source, err);
    }
    return set_field(f, cfg, value, source, err);
}

int m2_cfg_override(const m2_cfg_schema *s, void *cfg, const char *assignment, m2_err *err) {
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return m2_errorf(err, M2_ECONFIG, "command line: expected key=value, got '%s'", assignment);
    char key[256];
    trim_copy(key, sizeof key, assignment, (size_t)(eq - assignment));
    if (!*key) return m2_errorf(err, M2_ECONFIG, "command line: empty key in '%s'", assignment);
    return m2_cfg_set(s, cfg, key, eq + 1, "command line", err);
}

int m2_cfg_defaults(const m2_cfg_schema *s, void *cfg, m2_err *err) {
    memset(cfg, 0, s->struct_size);
    for (int i = 0; i < s->n_fields; i++)
        if (set_field(&s->fields[i], cfg, s->fields[i].def ? s->fields[i].def : "", "schema default", err) != 0)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- YAML input */

#define MAX_BASE_DEPTH 16
#define MAX_YAML_NODES 100000
#define MAX_YAML_DEPTH 32

typedef struct yaml_ctx {
    const m2_cfg_schema *schema;
    void *cfg;
    const char *source;
    unsigned char *seen;     /* per field: set earlier in this file */
    long visited;
    yaml_document_t *doc;
    const char **chain;      /* base: chain, for cycle detection */
    int chain_len;
} yaml_ctx;

static int apply_yaml_chain(const m2_cfg_schema *s, void *cfg, const char *text, size_t len, const char *source,
                            const char **chain, int chain_len, m2_err *err);
static int apply_file_chain(const m2_cfg_schema *s, void *cfg, const char *path, const char **chain,
                            int chain_len, m2_err *err);

static const char *scalar_text(yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int node_error(yaml_ctx *c, yaml_node_t *n, m2_err *err, const char *fmt, const char *a) {
    char where[600];
    snprintf(where, sizeof where, "%s:%lu", c->source, (unsigned long)n->start_mark.line + 1);
    return m2_errorf(err, M2_ECONFIG, fmt, where, a);
}

static int walk(yaml_ctx *c, yaml_node_t *node, const char *prefix, int depth, m2_err *err);

static int apply_leaf(yaml_ctx *c, yaml_node_t *kn, yaml_node_t *vn, const char *path, m2_err *err) {
    char where[600];
    snprintf(where, sizeof where, "%s:%lu", c->source, (unsigned long)kn->start_mark.line + 1);
    const m2_cfg_field *f = m2_cfg_find(c->schema, path);
    if (!f) {
        if (vn->type == YAML_MAPPING_NODE) return -2;   /* a section: recurse */
        if (is_section(c->schema, path))
            return m2_errorf(err, M2_ECONFIG, "%s: '%s' is a section; expected a mapping of its keys, got a %s",
                             where, path, vn->type == YAML_SCALAR_NODE ? "value" : "list");
        return unknown_key(c->schema, path, where, err);
    }
    int idx = (int)(f - c->schema->fields);
    if (c->seen[idx]) return m2_errorf(err, M2_ECONFIG, "%s: %s: set twice in this file", where, path);
    c->seen[idx] = 1;
    if (vn->type == YAML_MAPPING_NODE)
        return m2_errorf(err, M2_ECONFIG, "%s: %s: expected a %s value, got a mapping", where, path,
                         type_name(f->type));
    if (vn->type == YAML_SEQUENCE_NODE) {
        if (f->type != M2_CFG_LIST)
            return m2_errorf(err, M2_ECONFIG, "%s: %s: expected a single %s value, got a list", where, path,
                             type_name(f->type));
        char joined[M2_CFG_STR_MAX * 2];
        size_t used = 0;
        joined[0] = 0;
        for (yaml_node_item_t *it = vn->data.sequence.items.start; it < vn->data.sequence.items.top; it++) {
            yaml_node_t *item = yaml_document_get_node(c->doc, *it);
            if (!item || item->type != YAML_SCALAR_NODE)
                return m2_errorf(err, M2_ECONFIG, "%s: %s: list items must be plain values", where, path);
            const char *t = scalar_text(item);
            if (!*t || strchr(t, ','))
                return m2_errorf(err, M2_ECONFIG, "%s: %s: bad list item '%s'", where, path, t);
            size_t tl = strlen(t);
            if (used + tl + 2 > sizeof joined)
                return m2_errorf(err, M2_ECONFIG, "%s: %s: list too long", where, path);
            if (used) joined[used++] = ',';
            memcpy(joined + used, t, tl);
            used += tl;
            joined[used] = 0;
        }
        return set_field(f, c->cfg, joined, where, err);
    }
    const char *t = scalar_text(vn);
    /* A quoted string keeps its exact text (leading/trailing spaces included) for STR keys. */
    if ((f->type == M2_CFG_STR) && vn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        if (strlen(t) >= M2_CFG_STR_MAX)
            return m2_errorf(err, M2_ECONFIG, "%s: %s: value too long (%zu bytes, max %d)", where, path, strlen(t),
                             M2_CFG_STR_MAX - 1);
        char *dst = field_ptr(f, c->cfg);
        memset(dst, 0, M2_CFG_STR_MAX);
        memcpy(dst, t, strlen(t));
        return 0;
    }
    if (f->type == M2_CFG_STR && vn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(t, "~") || !strcmp(t, "null"))) t = "";
    return set_field(f, c->cfg, t, where, err);
}

static int walk(yaml_ctx *c, yaml_node_t *node, const char *prefix, int depth, m2_err *err) {
    if (++c->visited > MAX_YAML_NODES)
        return node_error(c, node, err, "%s: config too large or too deeply aliased%s", "");
    if (depth > MAX_YAML_DEPTH) return node_error(c, node, err, "%s: nesting too deep%s", "");
    if (node->type != YAML_MAPPING_NODE) {
        if (!prefix) {
            if (node->type == YAML_SCALAR_NODE && !*scalar_text(node)) return 0;   /* empty document */
            return node_error(c, node, err, "%s: expected a mapping of config keys at the top level%s", "");
        }
        return node_error(c, node, err, "%s: expected a mapping under '%s'", prefix);
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
        if (!kn || !vn) return node_error(c, node, err, "%s: broken YAML node%s", "");
        if (kn->type != YAML_SCALAR_NODE) return node_error(c, kn, err, "%s: keys must be plain names%s", "");
        const char *k = scalar_text(kn);
        if (!prefix && !strcmp(k, "base")) continue;   /* handled before the walk */
        if (!*k) return node_error(c, kn, err, "%s: empty key%s", "");
        char path[512];
        if (prefix) snprintf(path, sizeof path, "%s.%s", prefix, k);
        else snprintf(path, sizeof path, "%s", k);
        if (strlen(path) > 250) return node_error(c, kn, err, "%s: key too long: %.200s", path);
        int rc = apply_leaf(c, kn, vn, path, err);
        if (rc == -2) {
            if (!is_section(c->schema, path)) {
                char where[600];
                snprintf(where, sizeof where, "%s:%lu", c->source, (unsigned long)kn->start_mark.line + 1);
                return unknown_key(c->schema, path, where, err);
            }
            rc = walk(c, vn, path, depth + 1, err);
        }
        if (rc != 0) return -1;
    }
    return 0;
}

static void dir_of(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) { snprintf(out, cap, "."); return; }
    size_t n = (size_t)(slash - path);
    if (n == 0) n = 1;
    if (n >= cap) n = cap - 1;
    memcpy(out, path, n);
    out[n] = 0;
}

static int apply_yaml_chain(const m2_cfg_schema *s, void *cfg, const char *text, size_t len, const char *source,
                            const char **chain, int chain_len, m2_err *err) {
    if (!source) source = "<string>";
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return m2_errorf(err, M2_ENOMEM, "%s: cannot initialise YAML parser", source);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = m2_errorf(err, M2_ECONFIG, "%s:%lu:%lu: YAML syntax error: %s%s%s", source,
                           (unsigned long)parser.problem_mark.line + 1, (unsigned long)parser.problem_mark.column + 1,
                           parser.problem ? parser.problem : "unknown", parser.context ? " " : "",
                           parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
        /* A second document in one file is ambiguous: reject it. */
        yaml_document_t doc2;
        if (!yaml_parser_load(&parser, &doc2)) {
            rc = m2_errorf(err, M2_ECONFIG, "%s:%lu: YAML syntax error: %s", source,
                           (unsigned long)parser.problem_mark.line + 1, parser.problem ? parser.problem : "unknown");
        } else {
            if (yaml_document_get_root_node(&doc2))
                rc = m2_errorf(err, M2_ECONFIG, "%s: more than one YAML document; a config is one mapping", source);
            yaml_document_delete(&doc2);
        }
    }
    yaml_ctx c = {s, cfg, source, NULL, 0, &doc, chain, chain_len};
    if (rc == 0 && root) {
        c.seen = calloc((size_t)s->n_fields + 1, 1);
        if (!c.seen) rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", source);
    }
    /* base: first, so the file's own keys override it. */
    if (rc == 0 && root && root->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            yaml_node_t *kn = yaml_document_get_node(&doc, p->key);
            yaml_node_t *vn = yaml_document_get_node(&doc, p->value);
            if (!kn || !vn || kn->type != YAML_SCALAR_NODE || strcmp(scalar_text(kn), "base")) continue;
            if (vn->type != YAML_SCALAR_NODE || !*scalar_text(vn)) {
                rc = node_error(&c, kn, err, "%s: base: expected the path of another config file%s", "");
                break;
            }
            const char *b = scalar_text(vn);
            char path[4096], dir[2048];
            if (b[0] == '/' || !strcmp(source, "<string>")) snprintf(path, sizeof path, "%s", b);
            else { dir_of(source, dir, sizeof dir); snprintf(path, sizeof path, "%s/%s", dir, b); }
            if (apply_file_chain(s, cfg, path, chain, chain_len, err) != 0) {
                char where[600];
                snprintf(where, sizeof where, "%s:%lu: base: ", source, (unsigned long)kn->start_mark.line + 1);
                m2_err_prefix(err, "%s", where);
                rc = -1;
            }
            break;
        }
    }
    if (rc == 0 && root) rc = walk(&c, root, NULL, 0, err);
    free(c.seen);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int m2_cfg_apply_yaml(const m2_cfg_schema *s, void *cfg, const char *text, size_t len, const char *source,
                      m2_err *err) {
    return apply_yaml_chain(s, cfg, text, len, source, NULL, 0, err);
}

static int apply_file_chain(const m2_cfg_schema *s, void *cfg, const char *path, const char **chain,
                            int chain_len, m2_err *err) {
    if (chain_len >= MAX_BASE_DEPTH)
        return m2_errorf(err, M2_ECONFIG, "%s: base: chain deeper than %d files", path, MAX_BASE_DEPTH);
    char *real = realpath(path, NULL);
    if (!real) return m2_errorf(err, M2_EIO, "%s: cannot open: %s", path, strerror(errno));
    for (int i = 0; i < chain_len; i++)
        if (!strcmp(chain[i], real)) {
            free(real);
            return m2_errorf(err, M2_ECONFIG, "%s: base: cycle (the file includes itself)", path);
        }
    const char *next[MAX_BASE_DEPTH + 1];
    for (int i = 0; i < chain_len; i++) next[i] = chain[i];
    next[chain_len] = real;
    char *text;
    size_t len;
    int rc = m2_read_file(path, &text, &len, err);
    if (rc == 0) {
        rc = apply_yaml_chain(s, cfg, text, len, path, next, chain_len + 1, err);
        free(text);
    }
    free(real);
    return rc;
}

int m2_cfg_apply_file(const m2_cfg_schema *s, void *cfg, const char *path, m2_err *err) {
    return apply_file_chain(s, cfg, path, NULL, 0, err);
}

/* ---------------------------------------------------------------- YAML output */

/* Shortest %g form that reads back to the same double. */
static void format_double(double d, char *buf, size_t cap) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    /* Keep it recognisably a float for other YAML readers. */
    if (!strpbrk(buf, ".eEn")) {
        size_t n = strlen(buf);
        if (n + 2 < cap) { buf[n] = '.'; buf[n + 1] = '0'; buf[n + 2] = 0; }
    }
}

const char *m2_cfg_format_value(const m2_cfg_field *f, const void *cfg, char *buf, size_t cap) {
    const void *p = field_cptr(f, cfg);
    switch (f->type) {
    case M2_CFG_INT: snprintf(buf, cap, "%" PRId64, *(const int64_t *)p); break;
    case M2_CFG_FLOAT: format_double(*(const double *)p, buf, cap); break;
    case M2_CFG_BOOL: snprintf(buf, cap, "%s", *(const int *)p ? "true" : "false"); break;
    case M2_CFG_ENUM: choice_at(f->choices, *(const int *)p, buf, cap); break;
    default: snprintf(buf, cap, "%s", (const char *)p); break;
    }
    return buf;
}

/* A YAML double-quoted scalar; escapes what YAML readers reject in raw form. */
static void sb_quoted(m2_strbuf *b, const char *s) {
    m2_strbuf_append(b, "\"", 1);
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned c = *u;
        char esc[16];
        if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; m2_strbuf_append(b, esc, 2); u++; continue; }
        if (c == '\n') { m2_strbuf_puts(b, "\\n"); u++; continue; }
        if (c == '\t') { m2_strbuf_puts(b, "\\t"); u++; continue; }
        if (c < 0x20 || c == 0x7f) { snprintf(esc, sizeof esc, "\\x%02x", c); m2_strbuf_puts(b, esc); u++; continue; }
        if (c < 0x80) { m2_strbuf_append(b, (const char *)u, 1); u++; continue; }
        int n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        unsigned cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (int i = 1; i < n; i++) cp = (cp << 6) | (u[i] & 0x3F);
        if ((cp >= 0x80 && cp <= 0x9F) || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
            m2_strbuf_puts(b, esc);
        } else {
            m2_strbuf_append(b, (const char *)u, (size_t)n);
        }
        u += n;
    }
    m2_strbuf_append(b, "\"", 1);
}

static int plain_safe(const char *s) {
    if (!*s) return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.' && *p != '/') return 0;
    return 1;
}

static void emit_value(m2_strbuf *b, const m2_cfg_field *f, const void *cfg) {
    char v[M2_CFG_STR_MAX + 64];
    m2_cfg_format_value(f, cfg, v, sizeof v);
    if (f->type == M2_CFG_STR) { sb_quoted(b, v); return; }
    if (f->type == M2_CFG_ENUM) { if (plain_safe(v)) m2_strbuf_puts(b, v); else sb_quoted(b, v); return; }
    if (f->type == M2_CFG_LIST) {
        m2_strbuf_puts(b, "[");
        char item[M2_CFG_STR_MAX];
        for (int i = 0; m2_cfg_list_item(v, i, item, sizeof item); i++) {
            if (i) m2_strbuf_puts(b, ", ");
            if (plain_safe(item)) m2_strbuf_puts(b, item); else sb_quoted(b, item);
        }
        m2_strbuf_puts(b, "]");
        return;
    }
    m2_strbuf_puts(b, v);
}

/* Emits every key under `prefix` (length plen, "" at the top), grouped by their next component in
 * order of first appearance, so a section is written once even if its rows are not contiguous. */
static void emit_section(m2_strbuf *b, const m2_cfg_schema *s, const void *cfg, const char *prefix, size_t plen,
                         int indent) {
    unsigned char *done = calloc((size_t)s->n_fields, 1);
    if (!done) { b->oom = 1; return; }
    for (int i = 0; i < s->n_fields; i++) {
        const char *k = s->fields[i].key;
        if (done[i] || strncmp(k, prefix, plen) || (plen && k[plen] != '.')) continue;
        const char *rest = plen ? k + plen + 1 : k;
        const char *dot = strchr(rest, '.');
        for (int j = 0; j < indent; j++) m2_strbuf_puts(b, "  ");
        if (!dot) {
            m2_strbuf_puts(b, rest);
            m2_strbuf_puts(b, ": ");
            emit_value(b, &s->fields[i], cfg);
            m2_strbuf_puts(b, "\n");
            done[i] = 1;
            continue;
        }
        size_t clen = (size_t)(dot - rest);
        m2_strbuf_append(b, rest, clen);
        m2_strbuf_puts(b, ":\n");
        char sub[512];
        size_t slen = (size_t)(dot - k);
        if (slen >= sizeof sub) slen = sizeof sub - 1;
        memcpy(sub, k, slen);
        sub[slen] = 0;
        emit_section(b, s, cfg, sub, slen, indent + 1);
        /* Mark the whole subsection as written. */
        for (int j = i; j < s->n_fields; j++)
            if (!strncmp(s->fields[j].key, sub, slen) && s->fields[j].key[slen] == '.') done[j] = 1;
    }
    free(done);
}

char *m2_cfg_to_yaml(const m2_cfg_schema *s, const void *cfg) {
    m2_strbuf b = {0};
    m2_strbuf_puts(&b, "# Resolved multi2 config: every key, defaults included. `multi2 train --help-config` explains them.\n");
    emit_section(&b, s, cfg, "", 0, 0);
    return m2_strbuf_take(&b);   /* NULL when out of memory */
}

int m2_cfg_save(const m2_cfg_schema *s, const void *cfg, const char *path, m2_err *err) {
    char *y = m2_cfg_to_yaml(s, cfg);
    if (!y) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int rc = m2_write_file_atomic(path, y, strlen(y), err);
    free(y);
    return rc;
}

/* ---------------------------------------------------------------- schema printing and lists */

void m2_cfg_print_schema(const m2_cfg_schema *s, FILE *f) {
    int kw = 3;
    for (int i = 0; i < s->n_fields; i++) {
        int n = (int)strlen(s->fields[i].key);
        if (n > kw) kw = n;
    }
    fprintf(f, "%-*s  %-6s  %-14s  %s\n", kw, "key", "type", "default", "range / choices: help");
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *x = &s->fields[i];
        char def[64], range[256];
        snprintf(def, sizeof def, "%s", (x->def && *x->def) ? x->def : "\"\"");
        range[0] = 0;
        if ((x->type == M2_CFG_INT || x->type == M2_CFG_FLOAT) && x->min <= x->max) {
            char lo[32], hi[32];
            shortest(x->min, lo, sizeof lo);
            shortest(x->max, hi, sizeof hi);
            if (x->max >= 1e300) snprintf(range, sizeof range, ">= %s", lo);
            else snprintf(range, sizeof range, "[%s, %s]", lo, hi);
        } else if (x->choices) {
            snprintf(range, sizeof range, "%s", x->choices);
        }
        fprintf(f, "%-*s  %-6s  %-14s  %s%s%s\n", kw, x->key, type_name(x->type), def, range, *range ? ": " : "",
                x->help ? x->help : "");
    }
}

int m2_cfg_list_count(const char *list) {
    if (!list || !*list) return 0;
    int n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    return n;
}

const char *m2_cfg_list_item(const char *list, int i, char *buf, size_t cap) {
    if (!list || !*list || i < 0) return NULL;
    const char *p = list;
    for (int k = 0; k < i; k++) {
        p = strchr(p, ',');
        if (!p) return NULL;
        p++;
    }
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= cap) n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

int m2_cfg_list_has(const char *list, const char *item) {
    char buf[M2_CFG_STR_MAX];
    for (int i = 0; m2_cfg_list_item(list, i, buf, sizeof buf); i++)
        if (!strcmp(buf, item)) return 1;
    return 0;
}
