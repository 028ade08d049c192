/* GGUF v3 reader (validating, mmap'd) and writer. Every count and length read from the file is
 * bounded by the bytes left before it is used, so a corrupt file fails with a message, never
 * with a huge allocation or an out-of-bounds read. */
#define _GNU_SOURCE   /* qsort_r */
#include "io/gguf.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/afile.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_MAX_ARRAY_DEPTH 8

static const char *type_names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
                                   "string", "array", "u64", "i64", "f64"};

const char *m2_gguf_type_name(m2_gguf_type t) {
    return (unsigned)t < sizeof type_names / sizeof type_names[0] ? type_names[t] : "?";
}

/* Size of a scalar value type in the file; 0 for string/array/unknown. */
static size_t scalar_size(uint32_t t) {
    switch (t) {
    case M2_GGUF_U8: case M2_GGUF_I8: case M2_GGUF_BOOL: return 1;
    case M2_GGUF_U16: case M2_GGUF_I16: return 2;
    case M2_GGUF_U32: case M2_GGUF_I32: case M2_GGUF_F32: return 4;
    case M2_GGUF_U64: case M2_GGUF_I64: case M2_GGUF_F64: return 8;
    default: return 0;
    }
}

/* ---- reader --------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t size, pos;
    const char *path;
    m2_err *err;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->pos; }

static int need(cursor *c, uint64_t n, const char *what) {
    if (n > left(c))
        return m2_errorf(c->err, M2_EFORMAT, "%s: truncated: %s needs %" PRIu64 " bytes at offset %zu, file has %" PRIu64 " left",
                         c->path, what, n, c->pos, left(c));
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    const uint8_t *p = c->p + c->pos;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = x << 8 | c->p[c->pos + i];
    *v = x;
    c->pos += 8;
    return 0;
}

/* A string: u64 length + bytes. Returns a malloc'd NUL-terminated copy. */
static int rd_str(cursor *c, char **out, uint64_t *len, const char *what) {
    uint64_t n;
    if (rd_u64(c, &n, what)) return -1;
    if (n > left(c))
        return m2_errorf(c->err, M2_EFORMAT, "%s: %s: string length %" PRIu64 " exceeds the %" PRIu64 " bytes left in the file",
                         c->path, what, n, left(c));
    char *s = malloc(n + 1);
    if (!s) return m2_errorf(c->err, M2_ENOMEM, "%s: %s: out of memory", c->path, what);
    memcpy(s, c->p + c->pos, n);
    s[n] = 0;
    c->pos += n;
    *out = s;
    if (len) *len = n;
    return 0;
}

/* Reads a scalar of type t at the cursor into kv->v (widened). */
static int rd_scalar(cursor *c, uint32_t t, m2_gguf_kv *kv) {
    size_t sz = scalar_size(t);
    if (need(c, sz, kv->key)) return -1;
    const uint8_t *p = c->p + c->pos;
    uint64_t x = 0;
    for (int i = (int)sz - 1; i >= 0; i--) x = x << 8 | p[i];
    switch (t) {
    case M2_GGUF_U8: case M2_GGUF_U16: case M2_GGUF_U32: case M2_GGUF_U64: kv->v.u64 = x; break;
    case M2_GGUF_I8: kv->v.i64 = (int8_t)x; break;
    case M2_GGUF_I16: kv->v.i64 = (int16_t)x; break;
    case M2_GGUF_I32: kv->v.i64 = (int32_t)x; break;
    case M2_GGUF_I64: kv->v.i64 = (int64_t)x; break;
    case M2_GGUF_F32: { uint32_t u = (uint32_t)x; memcpy(&kv->v.f32, &u, 4); break; }
    case M2_GGUF_F64: memcpy(&kv->v.f64, &x, 8); break;
    case M2_GGUF_BOOL:
        if (x > 1) return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': bool value %u is neither 0 nor 1", c->path, kv->key, (unsigned)x);
        kv->v.b = x != 0;
        break;
    }
    c->pos += sz;
    return 0;
}

/* Skips a (possibly nested) array body of elem type t and n elements, validating bounds. */
static int skip_array(cursor *c, uint32_t t, uint64_t n, int depth, const char *key) {
    if (depth > GGUF_MAX_ARRAY_DEPTH)
        return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': arrays nested deeper than %d", c->path, key, GGUF_MAX_ARRAY_DEPTH);
    size_t sz = scalar_size(t);
    if (sz) {
        if (n > left(c) / sz)
            return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': array of %" PRIu64 " %s exceeds the file", c->path, key, n, m2_gguf_type_name(t));
        c->pos += n * sz;
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (t == M2_GGUF_STRING) {
            uint64_t len;
            if (rd_u64(c, &len, key)) return -1;
            if (len > left(c)) return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': string %" PRIu64 " length %" PRIu64 " exceeds the file", c->path, key, i, len);
            c->pos += len;
        } else if (t == M2_GGUF_ARRAY) {
            uint32_t et; uint64_t en;
            if (rd_u32(c, &et, key) || rd_u64(c, &en, key)) return -1;
            if (skip_array(c, et, en, depth + 1, key)) return -1;
        } else {
            return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': unknown array element type %u", c->path, key, t);
        }
    }
    return 0;
}

static int rd_array(cursor *c, m2_gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    if (rd_u32(c, &et, kv->key) || rd_u64(c, &n, kv->key)) return -1;
    kv->arr_type = (m2_gguf_type)et;
    kv->n = n;
    size_t sz = scalar_size(et);
    if (sz) {
        if (n > left(c) / sz)
            return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': array of %" PRIu64 " %s exceeds the %" PRIu64 " bytes left",
                             c->path, kv->key, n, m2_gguf_type_name(et), left(c));
        kv->arr = malloc(n * sz + 1);
        if (!kv->arr) return m2_errorf(c->err, M2_ENOMEM, "%s: key '%s': out of memory", c->path, kv->key);
        memcpy(kv->arr, c->p + c->pos, n * sz);   /* the file is little-endian, like the host */
        if (et == M2_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (((uint8_t *)kv->arr)[i] > 1)
                    return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': bool element %" PRIu64 " is neither 0 nor 1", c->path, kv->key, i);
        c->pos += n * sz;
        return 0;
    }
    if (et == M2_GGUF_STRING) {
        /* First pass: validate and total the lengths (each string costs >= 8 bytes, so n is
         * bounded by the file), then copy everything into one block. */
        if (n > left(c) / 8)
            return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': %" PRIu64 " strings cannot fit in the %" PRIu64 " bytes left",
                             c->path, kv->key, n, left(c));
        size_t start = c->pos;
        uint64_t total = 0;
        if (skip_array(c, et, n, 0, kv->key)) return -1;
        total = (c->pos - start) - 8 * n + n;   /* string bytes + one NUL each */
        kv->strs = malloc((n ? n : 1) * sizeof(char *));
        kv->str_lens = malloc((n ? n : 1) * sizeof(uint64_t));
        char *blob = malloc(total + 1);
        if (!kv->strs || !kv->str_lens || !blob) { free(blob); return m2_errorf(c->err, M2_ENOMEM, "%s: key '%s': out of memory", c->path, kv->key); }
        kv->arr = blob;   /* owns the characters */
        cursor r = *c;
        r.pos = start;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t len = 0;
            rd_u64(&r, &len, kv->key);
            memcpy(blob, r.p + r.pos, len);
            blob[len] = 0;
            kv->strs[i] = blob;
            kv->str_lens[i] = len;
            blob += len + 1;
            r.pos += len;
        }
        return 0;
    }
    if (et == M2_GGUF_ARRAY) return skip_array(c, et, n, 0, kv->key);
    return m2_errorf(c->err, M2_EFORMAT, "%s: key '%s': unknown array element type %u", c->path, kv->key, et);
}

/* Sorted indices over names, for lookups and to reject duplicates. */
static int cmp_kv_r(const void *a, const void *b, void *ctx) {
    const m2_gguf *g = ctx;
    return strcmp(g->kv[*(const uint32_t *)a].key, g->kv[*(const uint32_t *)b].key);
}
static int cmp_tensor_r(const void *a, const void *b, void *ctx) {
    const m2_gguf *g = ctx;
    return strcmp(g->tensors[*(const uint32_t *)a].name, g->tensors[*(const uint32_t *)b].name);
}

static void free_kv(m2_gguf_kv *kv) {
    free(kv->key); free(kv->str); free(kv->arr); free(kv->strs); free(kv->str_lens);
}

void m2_gguf_close(m2_gguf *g) {
    if (!g) return;
    for (uint64_t i = 0; i < g->n_kv; i++) free_kv(&g->kv[i]);
    for (uint64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv); free(g->tensors); free(g->kv_sorted); free(g->tensor_sorted); free(g->path);
    if (g->map) munmap(g->map, g->map_len);
    for (uint32_t i = 0; i < g->n_parts; i++) m2_gguf_close(g->parts[i]);
    free(g->parts);
    free(g);
}

static int parse(m2_gguf *g, m2_err *err) {
    cursor c = {g->base, g->size, 0, g->path, err};
    if (g->size < 4 || memcmp(g->base, GGUF_MAGIC, 4) != 0)
        return m2_errorf(err, M2_EFORMAT, "%s: not a GGUF file (magic is not \"GGUF\")", g->path);
    c.pos = 4;
    if (rd_u32(&c, &g->version, "version")) return -1;
    if (g->version != 2 && g->version != 3)
        return m2_errorf(err, M2_EUNSUPPORTED, "%s: GGUF version %u is not supported (only 2 and 3)", g->path, g->version);
    uint64_t nt, nkv;
    if (rd_u64(&c, &nt, "tensor_count") || rd_u64(&c, &nkv, "metadata_kv_count")) return -1;
    /* A KV takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least 8+4+8+4+8. */
    if (nkv > left(&c) / 13)
        return m2_errorf(err, M2_EFORMAT, "%s: metadata_kv_count %" PRIu64 " cannot fit in a file of %zu bytes", g->path, nkv, g->size);
    if (nt > left(&c) / 32)
        return m2_errorf(err, M2_EFORMAT, "%s: tensor_count %" PRIu64 " cannot fit in a file of %zu bytes", g->path, nt, g->size);
    g->kv = calloc(nkv ? nkv : 1, sizeof *g->kv);
    g->tensors = calloc(nt ? nt : 1, sizeof *g->tensors);
    g->kv_sorted = malloc((nkv ? nkv : 1) * sizeof(uint32_t));
    g->tensor_sorted = malloc((nt ? nt : 1) * sizeof(uint32_t));
    if (!g->kv || !g->tensors || !g->kv_sorted || !g->tensor_sorted) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", g->path);

    for (uint64_t i = 0; i < nkv; i++) {
        m2_gguf_kv *kv = &g->kv[i];
        char what[64];
        snprintf(what, sizeof what, "key of metadata entry %" PRIu64, i);
        if (rd_str(&c, &kv->key, NULL, what)) return -1;
        g->n_kv = i + 1;
        if (!kv->key[0]) return m2_errorf(err, M2_EFORMAT, "%s: metadata entry %" PRIu64 " has an empty key", g->path, i);
        uint32_t t;
        if (rd_u32(&c, &t, kv->key)) return -1;
        kv->type = (m2_gguf_type)t;
        if (t == M2_GGUF_STRING) {
            if (rd_str(&c, &kv->str, &kv->str_len, kv->key)) return -1;
        } else if (t == M2_GGUF_ARRAY) {
            if (rd_array(&c, kv)) return -1;
        } else if (scalar_size(t)) {
            if (rd_scalar(&c, t, kv)) return -1;
        } else {
            return m2_errorf(err, M2_EFORMAT, "%s: key '%s': unknown value type %u", g->path, kv->key, t);
        }
    }
    for (uint64_t i = 0; i < nkv; i++) g->kv_sorted[i] = (uint32_t)i;
    qsort_r(g->kv_sorted, nkv, sizeof(uint32_t), cmp_kv_r, g);
    for (uint64_t i = 1; i < nkv; i++)
        if (!strcmp(g->kv[g->kv_sorted[i]].key, g->kv[g->kv_sorted[i - 1]].key))
            return m2_errorf(err, M2_EFORMAT, "%s: duplicate metadata key '%s'", g->path, g->kv[g->kv_sorted[i]].key);

    g->alignment = M2_GGUF_DEFAULT_ALIGNMENT;
    const m2_gguf_kv *al = m2_gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != M2_GGUF_U32)
            return m2_errorf(err, M2_EFORMAT, "%s: general.alignment has type %s, expected u32", g->path, m2_gguf_type_name(al->type));
        uint64_t a = al->v.u64;
        if (a == 0 || (a & (a - 1)) || a > (1u << 24))
            return m2_errorf(err, M2_EFORMAT, "%s: general.alignment %" PRIu64 " is not a power of two <= 2^24", g->path, a);
        g->alignment = (uint32_t)a;
    }

    for (uint64_t i = 0; i < nt; i++) {
        m2_gguf_tensor *t = &g->tensors[i];
        char what[64];
        snprintf(what, sizeof what, "name of tensor %" PRIu64, i);
        uint64_t nl;
        if (rd_str(&c, &t->name, &nl, what)) return -1;
        g->n_tensors = i + 1;
        if (nl == 0 || nl > M2_GGUF_MAX_NAME || strlen(t->name) != nl)
            return m2_errorf(err, M2_EFORMAT, "%s: tensor %" PRIu64 ": name of %" PRIu64 " bytes (must be 1..%d, no NUL)", g->path, i, nl, M2_GGUF_MAX_NAME);
        uint32_t nd;
        if (rd_u32(&c, &nd, t->name)) return -1;
        if (nd < 1 || nd > M2_GGUF_MAX_DIMS)
            return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': n_dims %u (must be 1..%d)", g->path, t->name, nd, M2_GGUF_MAX_DIMS);
        t->n_dims = (int)nd;
        uint64_t ne_total = 1;
        for (int d = 0; d < M2_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne;
            if (rd_u64(&c, &ne, t->name)) return -1;
            if (ne == 0 || ne > (uint64_t)INT64_MAX)
                return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': dimension %u is %" PRIu64 " (impossible)", g->path, t->name, d, ne);
            if (__builtin_mul_overflow(ne_total, ne, &ne_total) || ne_total > (uint64_t)INT64_MAX)
                return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': element count overflows", g->path, t->name);
            t->ne[d] = (int64_t)ne;
        }
        t->n_elems = ne_total;
        if (rd_u32(&c, &t->type, t->name)) return -1;
        int be, bb;
        const char *tn;
        if (!m2_ggml_type_info(t->type, &be, &bb, &tn))
            return m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s': unknown ggml type %u", g->path, t->name, t->type);
        if (t->ne[0] % be)
            return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %d",
                             g->path, t->name, t->ne[0], tn, be);
        if (m2_ggml_nbytes(t->type, t->n_elems, &t->n_bytes))
            return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': byte size overflows", g->path, t->name);
        if (rd_u64(&c, &t->offset, t->name)) return -1;
        if (t->offset % g->alignment)
            return m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %u",
                             g->path, t->name, t->offset, g->alignment);
    }
    for (uint64_t i = 0; i < nt; i++) g->tensor_sorted[i] = (uint32_t)i;
    qsort_r(g->tensor_sorted, nt, sizeof(uint32_t), cmp_tensor_r, g);
    for (uint64_t i = 1; i < nt; i++)
        if (!strcmp(g->tensors[g->tensor_sorted[i]].name, g->tensors[g->tensor_sorted[i - 1]].name))
            return m2_errorf(err, M2_EFORMAT, "%s: duplicate tensor name '%s'", g->path, g->tensors[g->tensor_sorted[i]].name);

    /* Data section: next multiple of the alignment. A file without tensors may end right here. */
    uint64_t off = c.pos, pad = (g->alignment - off % g->alignment) % g->alignment;
    g->data_offset = off + pad;
    if (nt == 0) {
        if (g->data_offset > g->size) g->data_offset = g->size;
        return 0;
    }
    if (g->data_offset > g->size)
        return m2_errorf(err, M2_EFORMAT, "%s: truncated: data section would start at %" PRIu64 ", file has %zu bytes", g->path, g->data_offset, g->size);
    uint64_t data_size = g->size - g->data_offset;
    for (uint64_t i = 0; i < nt; i++) {
        m2_gguf_tensor *t = &g->tensors[i];
        if (t->offset > data_size || t->n_bytes > data_size - t->offset)
            return m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data [%" PRIu64 ", +%" PRIu64 ") lies beyond the data section of %" PRIu64 " bytes (truncated file?)",
                             g->path, t->name, t->offset, t->n_bytes, data_size);
        t->data = g->base + g->data_offset + t->offset;
    }
    return 0;
}

static m2_gguf *open_common(m2_gguf *g, m2_err *err) {
    if (parse(g, err)) { m2_gguf_close(g); return NULL; }
    return g;
}

m2_gguf *m2_gguf_open_memory(const void *buf, size_t len, const char *name, m2_err *err) {
    m2_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(name ? name : "<memory>"))) {
        free(g);
        m2_errorf(err, M2_ENOMEM, "%s: out of memory", name ? name : "<memory>");
        return NULL;
    }
    g->base = buf;
    g->size = len;
    return open_common(g, err);
}

static m2_gguf *open_file(const char *path, int cow, m2_err *err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { m2_errorf(err, M2_EIO, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        m2_errorf(err, M2_EIO, "%s: not a regular file", path);
        return NULL;
    }
    m2_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) { free(g); close(fd); m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); return NULL; }
    g->size = (size_t)st.st_size;
    if (g->size > 0) {
        void *m = mmap(NULL, g->size, cow ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            m2_errorf(err, M2_EIO, "%s: mmap failed: %s", path, strerror(errno));
            m2_gguf_close(g);
            return NULL;
        }
        g->map = m;
        g->map_len = g->size;
        g->base = m;
    } else {
        g->base = (const uint8_t *)"";
    }
    close(fd);
    return open_common(g, err);
}

m2_gguf *m2_gguf_open(const char *path, m2_err *err) { return open_file(path, 0, err); }

/* A split.* key as an unsigned value; -1 when absent or not an integer. */
static int split_key(const m2_gguf *g, const char *key, uint64_t *v) {
    return m2_gguf_get_u64(g, key, v, NULL);
}

m2_gguf *m2_gguf_open_split(const char *path, m2_err *err) {
    m2_gguf *g = open_file(path, 1, err);
    if (!g) return NULL;
    uint64_t count = 0, no = 0, total = 0;
    if (split_key(g, M2_GGUF_SPLIT_COUNT, &count) || count <= 1) return g;
    if (split_key(g, M2_GGUF_SPLIT_NO, &no) || no != 0) {
        m2_errorf(err, M2_EFORMAT, "%s: split.no is %" PRIu64 ", not 0: open the first part (-00001-of-%05" PRIu64 ".gguf)", path, no, count);
        goto fail;
    }
    if (count > 99999) { m2_errorf(err, M2_EFORMAT, "%s: split.count %" PRIu64 " is impossible", path, count); goto fail; }
    /* PREFIX-00001-of-0000N.gguf: the prefix is what precedes the suffix this part must have */
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", 1, (int)count);
    size_t pl = strlen(path), sl = strlen(suffix);
    if (pl < sl || strcmp(path + pl - sl, suffix)) {
        m2_errorf(err, M2_EFORMAT, "%s: a split file (split.count %" PRIu64 ") whose name does not end in %s", path, count, suffix);
        goto fail;
    }
    if (!(g->parts = calloc(count - 1, sizeof *g->parts))) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); goto fail; }
    uint64_t nt = g->n_tensors;
    char *name = malloc(pl + 1);
    if (!name) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); goto fail; }
    for (uint64_t i = 1; i < count; i++) {
        snprintf(name, pl + 1, "%.*s-%05d-of-%05d.gguf", (int)(pl - sl), path, (int)i + 1, (int)count);
        m2_gguf *p = open_file(name, 1, err);
        if (!p) { free(name); goto fail; }
        g->parts[g->n_parts++] = p;
        uint64_t pc = 0, pn = 0;
        if (split_key(p, M2_GGUF_SPLIT_COUNT, &pc) || pc != count || split_key(p, M2_GGUF_SPLIT_NO, &pn) || pn != i) {
            m2_errorf(err, M2_EFORMAT, "%s: split.count / split.no are not %" PRIu64 " / %" PRIu64 " (part of another split?)", name, count, i);
            free(name);
            goto fail;
        }
        nt += p->n_tensors;
    }
    free(name);
    if (!split_key(g, M2_GGUF_SPLIT_TENSORS, &total) && total != nt) {
        m2_errorf(err, M2_EFORMAT, "%s: split.tensors.count is %" PRIu64 ", the %" PRIu64 " parts hold %" PRIu64 " tensors", path, total, count, nt);
        goto fail;
    }
    /* one tensor table over all parts; names copied, data pointing into each part's mapping */
    m2_gguf_tensor *all = realloc(g->tensors, (nt ? nt : 1) * sizeof *all);
    uint32_t *sorted = all ? realloc(g->tensor_sorted, (nt ? nt : 1) * sizeof *sorted) : NULL;
    if (all) g->tensors = all;
    if (sorted) g->tensor_sorted = sorted;
    if (!all || !sorted) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); goto fail; }
    for (uint32_t i = 0; i < g->n_parts; i++)
        for (uint64_t j = 0; j < g->parts[i]->n_tensors; j++) {
            m2_gguf_tensor *t = &g->tensors[g->n_tensors];
            *t = g->parts[i]->tensors[j];
            if (!(t->name = strdup(t->name))) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); goto fail; }
            g->n_tensors++;
        }
    for (uint64_t i = 0; i < nt; i++) g->tensor_sorted[i] = (uint32_t)i;
    qsort_r(g->tensor_sorted, nt, sizeof(uint32_t), cmp_tensor_r, g);
    for (uint64_t i = 1; i < nt; i++)
        if (!strcmp(g->tensors[g->tensor_sorted[i]].name, g->tensors[g->tensor_sorted[i - 1]].name)) {
            m2_errorf(err, M2_EFORMAT, "%s: tensor '%s' appears in two parts", path, g->tensors[g->tensor_sorted[i]].name);
            goto fail;
        }
    return g;
fail:
    m2_gguf_close(g);
    return NULL;
}

const m2_gguf_kv *m2_gguf_find(const m2_gguf *g, const char *key) {
    size_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(g->kv[g->kv_sorted[mid]].key, key);
        if (c == 0) return &g->kv[g->kv_sorted[mid]];
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

const m2_gguf_tensor *m2_gguf_find_tensor(const m2_gguf *g, const char *name) {
    size_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(g->tensors[g->tensor_sorted[mid]].name, name);
        if (c == 0) return &g->tensors[g->tensor_sorted[mid]];
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

static const m2_gguf_kv *need_kv(const m2_gguf *g, const char *key, m2_err *err) {
    const m2_gguf_kv *kv = m2_gguf_find(g, key);
    if (!kv) m2_errorf(err, M2_ENOTFOUND, "%s: metadata key '%s' is missing", g->path, key);
    return kv;
}

static int is_unsigned(m2_gguf_type t) { return t == M2_GGUF_U8 || t == M2_GGUF_U16 || t == M2_GGUF_U32 || t == M2_GGUF_U64; }
static int is_signed(m2_gguf_type t) { return t == M2_GGUF_I8 || t == M2_GGUF_I16 || t == M2_GGUF_I32 || t == M2_GGUF_I64; }

int m2_gguf_get_i64(const m2_gguf *g, const char *key, int64_t *out, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return -1;
    if (is_signed(kv->type)) { *out = kv->v.i64; return 0; }
    if (is_unsigned(kv->type) && kv->v.u64 <= (uint64_t)INT64_MAX) { *out = (int64_t)kv->v.u64; return 0; }
    return m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' has type %s, expected an integer", g->path, key, m2_gguf_type_name(kv->type));
}

int m2_gguf_get_u64(const m2_gguf *g, const char *key, uint64_t *out, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return -1;
    if (is_unsigned(kv->type)) { *out = kv->v.u64; return 0; }
    if (is_signed(kv->type) && kv->v.i64 >= 0) { *out = (uint64_t)kv->v.i64; return 0; }
    return m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' has type %s, expected a non-negative integer", g->path, key, m2_gguf_type_name(kv->type));
}

int m2_gguf_get_u32(const m2_gguf *g, const char *key, uint32_t *out, m2_err *err) {
    uint64_t v;
    if (m2_gguf_get_u64(g, key, &v, err)) return -1;
    if (v > UINT32_MAX) return m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' = %" PRIu64 " does not fit in 32 bits", g->path, key, v);
    *out = (uint32_t)v;
    return 0;
}

int m2_gguf_get_f32(const m2_gguf *g, const char *key, float *out, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return -1;
    if (kv->type == M2_GGUF_F32) { *out = kv->v.f32; return 0; }
    if (kv->type == M2_GGUF_F64) { *out = (float)kv->v.f64; return 0; }
    return m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' has type %s, expected f32", g->path, key, m2_gguf_type_name(kv->type));
}

int m2_gguf_get_bool(const m2_gguf *g, const char *key, bool *out, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return -1;
    if (kv->type != M2_GGUF_BOOL) return m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' has type %s, expected bool", g->path, key, m2_gguf_type_name(kv->type));
    *out = kv->v.b;
    return 0;
}

const char *m2_gguf_get_str(const m2_gguf *g, const char *key, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return NULL;
    if (kv->type != M2_GGUF_STRING) { m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' has type %s, expected string", g->path, key, m2_gguf_type_name(kv->type)); return NULL; }
    return kv->str;
}

uint32_t m2_gguf_u32_or(const m2_gguf *g, const char *key, uint32_t def) {
    uint32_t v = 0;
    return m2_gguf_get_u32(g, key, &v, NULL) ? def : v;
}
float m2_gguf_f32_or(const m2_gguf *g, const char *key, float def) {
    float v = 0;
    return m2_gguf_get_f32(g, key, &v, NULL) ? def : v;
}
bool m2_gguf_bool_or(const m2_gguf *g, const char *key, bool def) {
    bool v = false;
    return m2_gguf_get_bool(g, key, &v, NULL) ? def : v;
}

const m2_gguf_kv *m2_gguf_get_arr(const m2_gguf *g, const char *key, m2_gguf_type elem, m2_err *err) {
    const m2_gguf_kv *kv = need_kv(g, key, err);
    if (!kv) return NULL;
    if (kv->type != M2_GGUF_ARRAY || kv->arr_type != elem) {
        m2_errorf(err, M2_EFORMAT, "%s: metadata '%s' is %s%s%s, expected array of %s", g->path, key, m2_gguf_type_name(kv->type),
                  kv->type == M2_GGUF_ARRAY ? " of " : "", kv->type == M2_GGUF_ARRAY ? m2_gguf_type_name(kv->arr_type) : "",
                  m2_gguf_type_name(elem));
        return NULL;
    }
    return kv;
}

int m2_gguf_tensor_to_f32(const m2_gguf *g, const m2_gguf_tensor *t, float *dst, m2_err *err) {
    if (m2_ggml_dequantize(t->type, t->data, dst, t->n_elems, err))
        return m2_err_prefix(err, "%s: tensor '%s': ", g->path, t->name);
    return 0;
}

/* ---- writer --------------------------------------------------------------------------------- */

typedef struct {
    char *key;
    m2_gguf_type type;
    uint8_t scalar[8];
    char *str;
    m2_gguf_type arr_type;
    uint64_t n;
    void *arr;          /* numeric array copy */
    char **strs;        /* string array copies */
} wkv;

typedef struct {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[M2_GGUF_MAX_DIMS];
    const void *data;
    void *owned;
    uint64_t n_bytes, offset;
} wtensor;

struct m2_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
};

m2_gguf_writer *m2_gguf_writer_new(void) { return calloc(1, sizeof(m2_gguf_writer)); }

static void free_wkv(wkv *k) {
    free(k->key); free(k->str); free(k->arr);
    if (k->strs) for (uint64_t i = 0; i < k->n; i++) free(k->strs[i]);
    free(k->strs);
}

void m2_gguf_writer_free(m2_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) free_wkv(&w->kv[i]);
    for (size_t i = 0; i < w->n_t; i++) { free(w->t[i].name); free(w->t[i].owned); }
    free(w->kv); free(w->t); free(w);
}

/* The slot for key (existing one cleared, or a new one). */
static wkv *slot(m2_gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            char *k = w->kv[i].key;
            w->kv[i].key = NULL;
            free_wkv(&w->kv[i]);
            memset(&w->kv[i], 0, sizeof w->kv[i]);
            w->kv[i].key = k;
            return &w->kv[i];
        }
    if (w->n_kv == w->cap_kv) {
        size_t nc = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *nk = realloc(w->kv, nc * sizeof *nk);
        if (!nk) return NULL;
        w->kv = nk;
        w->cap_kv = nc;
    }
    wkv *k = &w->kv[w->n_kv];
    memset(k, 0, sizeof *k);
    if (!(k->key = strdup(key))) return NULL;
    w->n_kv++;
    return k;
}

static int set_scalar(m2_gguf_writer *w, const char *key, m2_gguf_type t, const void *v) {
    wkv *k = slot(w, key);
    if (!k) return -1;
    k->type = t;
    memcpy(k->scalar, v, scalar_size(t));
    return 0;
}

int m2_gguf_set_u32(m2_gguf_writer *w, const char *key, uint32_t v) { return set_scalar(w, key, M2_GGUF_U32, &v); }
int m2_gguf_set_i32(m2_gguf_writer *w, const char *key, int32_t v) { return set_scalar(w, key, M2_GGUF_I32, &v); }
int m2_gguf_set_u64(m2_gguf_writer *w, const char *key, uint64_t v) { return set_scalar(w, key, M2_GGUF_U64, &v); }
int m2_gguf_set_f32(m2_gguf_writer *w, const char *key, float v) { return set_scalar(w, key, M2_GGUF_F32, &v); }
int m2_gguf_set_bool(m2_gguf_writer *w, const char *key, bool v) { uint8_t b = v; return set_scalar(w, key, M2_GGUF_BOOL, &b); }

int m2_gguf_set_str(m2_gguf_writer *w, const char *key, const char *v) {
    wkv *k = slot(w, key);
    if (!k) return -1;
    k->type = M2_GGUF_STRING;
    return (k->str = strdup(v)) ? 0 : -1;
}

int m2_gguf_set_arr(m2_gguf_writer *w, const char *key, m2_gguf_type elem, const void *data, uint64_t n) {
    size_t sz = scalar_size(elem);
    if (!sz) return -1;
    wkv *k = slot(w, key);
    if (!k) return -1;
    k->type = M2_GGUF_ARRAY;
    k->arr_type = elem;
    k->n = n;
    if (!(k->arr = malloc(n * sz + 1))) return -1;
    if (n) memcpy(k->arr, data, n * sz);
    return 0;
}

static int set_arr_str_len(m2_gguf_writer *w, const char *key, char *const *strs, const uint64_t *lens, uint64_t n) {
    wkv *k = slot(w, key);
    if (!k) return -1;
    k->type = M2_GGUF_ARRAY;
    k->arr_type = M2_GGUF_STRING;
    if (!(k->strs = calloc(n ? n : 1, sizeof(char *)))) return -1;
    k->n = n;
    /* Each copy keeps its length in the 8 bytes before the text (strings may hold NULs). */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        char *s = malloc(8 + len + 1);
        if (!s) return -1;
        memcpy(s, &len, 8);
        memcpy(s + 8, strs[i], len);
        s[8 + len] = 0;
        k->strs[i] = s;
    }
    return 0;
}

int m2_gguf_set_arr_str(m2_gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    return set_arr_str_len(w, key, (char *const *)strs, NULL, n);
}

int m2_gguf_set_kv(m2_gguf_writer *w, const m2_gguf_kv *kv) {
    if (kv->type == M2_GGUF_STRING) {
        wkv *k = slot(w, kv->key);
        if (!k) return -1;
        k->type = M2_GGUF_STRING;
        if (!(k->str = malloc(kv->str_len + 1))) return -1;
        memcpy(k->str, kv->str, kv->str_len + 1);
        k->n = kv->str_len;          /* string length (may contain NULs) */
        return 0;
    }
    if (kv->type == M2_GGUF_ARRAY) {
        if (kv->arr_type == M2_GGUF_STRING) return set_arr_str_len(w, kv->key, kv->strs, kv->str_lens, kv->n);
        if (kv->arr_type == M2_GGUF_ARRAY) return -1;
        return m2_gguf_set_arr(w, kv->key, kv->arr_type, kv->arr, kv->n);
    }
    uint8_t buf[8];
    size_t sz = scalar_size(kv->type);
    switch (kv->type) {
    case M2_GGUF_F32: memcpy(buf, &kv->v.f32, 4); break;
    case M2_GGUF_F64: memcpy(buf, &kv->v.f64, 8); break;
    case M2_GGUF_BOOL: buf[0] = kv->v.b; break;
    default: { uint64_t x = kv->v.u64; memcpy(buf, &x, sz); break; }   /* little-endian truncation */
    }
    return set_scalar(w, kv->key, kv->type, buf);
}

int m2_gguf_add_tensor(m2_gguf_writer *w, const char *name, uint32_t type, int n_dims,
                       const int64_t *ne, const void *data, uint64_t nbytes, m2_err *err) {
    size_t nl = strlen(name);
    if (nl == 0 || nl > M2_GGUF_MAX_NAME) return m2_errorf(err, M2_EINVAL, "tensor '%s': name must be 1..%d bytes", name, M2_GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > M2_GGUF_MAX_DIMS) return m2_errorf(err, M2_ESHAPE, "tensor '%s': n_dims %d", name, n_dims);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return m2_errorf(err, M2_EINVAL, "tensor '%s' added twice", name);
    uint64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] <= 0 || __builtin_mul_overflow(n, (uint64_t)ne[d], &n)) return m2_errorf(err, M2_ESHAPE, "tensor '%s': bad dimension %d", name, d);
    }
    int be;
    if (!m2_ggml_type_info(type, &be, NULL, NULL)) return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': unknown ggml type %u", name, type);
    uint64_t want;
    if (ne[0] % be || m2_ggml_nbytes(type, n, &want))
        return m2_errorf(err, M2_ESHAPE, "tensor '%s': row length %lld is not a multiple of the %s block (%d)", name, (long long)ne[0], m2_ggml_type_name(type), be);
    if (want != nbytes) return m2_errorf(err, M2_ESHAPE, "tensor '%s': %llu bytes given, %s shape needs %llu", name, (unsigned long long)nbytes, m2_ggml_type_name(type), (unsigned long long)want);
    if (w->n_t == w->cap_t) {
        size_t nc = w->cap_t ? 2 * w->cap_t : 64;
        wtensor *nt = realloc(w->t, nc * sizeof *nt);
        if (!nt) return m2_errorf(err, M2_ENOMEM, "out of memory");
        w->t = nt;
        w->cap_t = nc;
    }
    wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < M2_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->data = data;
    t->n_bytes = nbytes;
    w->n_t++;
    return 0;
}

int m2_gguf_add_tensor_f32(m2_gguf_writer *w, const char *name, uint32_t type, int n_dims,
                           const int64_t *ne, const float *data, m2_err *err) {
    uint64_t n = 1, nb;
    for (int d = 0; d < n_dims && d < M2_GGUF_MAX_DIMS; d++) {
        if (ne[d] <= 0 || __builtin_mul_overflow(n, (uint64_t)ne[d], &n)) return m2_errorf(err, M2_ESHAPE, "tensor '%s': bad dimension %d", name, d);
    }
    if (!m2_ggml_supported(type)) return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': cannot write dtype %s", name, m2_ggml_type_name(type));
    if (m2_ggml_nbytes(type, n, &nb)) return m2_errorf(err, M2_ESHAPE, "tensor '%s': %llu values do not fill %s blocks", name, (unsigned long long)n, m2_ggml_type_name(type));
    void *buf = malloc(nb ? nb : 1);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "tensor '%s': out of memory", name);
    if (m2_ggml_quantize(type, data, buf, n, err) || m2_gguf_add_tensor(w, name, type, n_dims, ne, buf, nb, err)) {
        free(buf);
        return m2_err_prefix(err, "tensor '%s': ", name);
    }
    w->t[w->n_t - 1].owned = buf;
    return 0;
}

/* Growable byte buffer for the header. */
typedef struct { uint8_t *p; size_t n, cap; int oom; } buf;
static void put(buf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n) nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s, uint64_t n) { put_u64(b, n); put(b, s, n); }

int m2_gguf_writer_write(m2_gguf_writer *w, const char *path, m2_err *err) {
    uint32_t align = M2_GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, "general.alignment")) {
            uint32_t a;
            memcpy(&a, w->kv[i].scalar, 4);
            if (w->kv[i].type != M2_GGUF_U32 || a == 0 || (a & (a - 1)))
                return m2_errorf(err, M2_EINVAL, "%s: general.alignment must be a u32 power of two", path);
            align = a;
        }
    buf b = {0};
    put(&b, GGUF_MAGIC, 4);
    put_u32(&b, 3);
    put_u64(&b, w->n_t);
    put_u64(&b, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        wkv *k = &w->kv[i];
        put_str(&b, k->key, strlen(k->key));
        put_u32(&b, k->type);
        if (k->type == M2_GGUF_STRING) put_str(&b, k->str, k->n ? k->n : strlen(k->str));
        else if (k->type == M2_GGUF_ARRAY) {
            put_u32(&b, k->arr_type);
            put_u64(&b, k->n);
            if (k->arr_type == M2_GGUF_STRING)
                for (uint64_t j = 0; j < k->n; j++) { uint64_t len; memcpy(&len, k->strs[j], 8); put_str(&b, k->strs[j] + 8, len); }
            else put(&b, k->arr, k->n * scalar_size(k->arr_type));
        } else put(&b, k->scalar, scalar_size(k->type));
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        put_str(&b, t->name, strlen(t->name));
        put_u32(&b, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(&b, (uint64_t)t->ne[d]);
        put_u32(&b, t->type);
        t->offset = off;
        put_u64(&b, off);
        off += t->n_bytes;
        off += (align - off % align) % align;
    }
    if (b.oom) { free(b.p); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); }
    m2_afile *f = m2_afile_open(path, err);
    if (!f) { free(b.p); return -1; }
    int rc = m2_afile_write(f, b.p, b.n, err);
    free(b.p);
    if (!rc && w->n_t) rc = m2_afile_zeros(f, (align - m2_afile_tell(f) % align) % align, err);
    uint64_t data_start = m2_afile_tell(f);
    for (size_t i = 0; i < w->n_t && !rc; i++) {
        wtensor *t = &w->t[i];
        rc = m2_afile_zeros(f, data_start + t->offset - m2_afile_tell(f), err);
        if (!rc) rc = m2_afile_write(f, t->data, t->n_bytes, err);
    }
    if (!rc && w->n_t) rc = m2_afile_zeros(f, (align - m2_afile_tell(f) % align) % align, err);
    if (rc) { m2_afile_abort(f); return -1; }
    return m2_afile_commit(f, err);
}

int m2_gguf_write_split(const m2_gguf *g, const char *prefix, int max_tensors, int *n_parts_out, m2_err *err) {
    if (max_tensors <= 0) return m2_errorf(err, M2_EINVAL, "%s: max_tensors must be positive", prefix);
    uint64_t n = g->n_tensors, parts = n ? (n + (uint64_t)max_tensors - 1) / (uint64_t)max_tensors : 1;
    if (parts > 99999 || n > INT32_MAX) return m2_errorf(err, M2_EINVAL, "%s: %" PRIu64 " tensors need too many parts", prefix, n);
    size_t cap = strlen(prefix) + 32;
    char *name = malloc(cap);
    if (!name) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = 0;
    for (uint64_t p = 0; p < parts && !rc; p++) {
        m2_gguf_writer *w = m2_gguf_writer_new();
        if (!w) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
        if (p == 0)
            for (uint64_t i = 0; i < g->n_kv && !rc; i++)
                if (strncmp(g->kv[i].key, "split.", 6) && m2_gguf_set_kv(w, &g->kv[i]))
                    rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: metadata '%s' cannot be copied", prefix, g->kv[i].key);
        uint16_t no = (uint16_t)p, cnt = (uint16_t)parts;
        int32_t tot = (int32_t)n;
        /* the key types llama-gguf-split writes: u16, u16, i32 */
        wkv *k;
        if (!rc && (k = slot(w, M2_GGUF_SPLIT_NO))) { k->type = M2_GGUF_U16; memcpy(k->scalar, &no, 2); } else if (!rc) rc = -1;
        if (!rc && (k = slot(w, M2_GGUF_SPLIT_COUNT))) { k->type = M2_GGUF_U16; memcpy(k->scalar, &cnt, 2); } else if (!rc) rc = -1;
        if (!rc && m2_gguf_set_i32(w, M2_GGUF_SPLIT_TENSORS, tot)) rc = -1;
        if (rc && err && !err->msg[0]) m2_errorf(err, M2_ENOMEM, "out of memory");
        for (uint64_t i = p * (uint64_t)max_tensors; i < n && i < (p + 1) * (uint64_t)max_tensors && !rc; i++) {
            const m2_gguf_tensor *t = &g->tensors[i];
            rc = m2_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->n_bytes, err);
        }
        snprintf(name, cap, "%s-%05d-of-%05d.gguf", prefix, (int)p + 1, (int)parts);
        if (!rc) rc = m2_gguf_writer_write(w, name, err);
        m2_gguf_writer_free(w);
    }
    free(name);
    if (!rc && n_parts_out) *n_parts_out = (int)parts;
    return rc;
}
