/* safetensors reader (mmap, validated) and writer (single file or shards + index). */
#define _GNU_SOURCE   /* qsort_r */
#include "io/safetensors.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "io/afile.h"

typedef struct { const char *name; int size; uint32_t ggml; } st_dtype;
static const st_dtype dtypes[] = {
    {"F32", 4, M2_GGML_F32}, {"F16", 2, M2_GGML_F16}, {"BF16", 2, M2_GGML_BF16},
    {"F64", 8, UINT32_MAX}, {"I64", 8, UINT32_MAX}, {"I32", 4, UINT32_MAX}, {"I16", 2, UINT32_MAX},
    {"I8", 1, UINT32_MAX}, {"U64", 8, UINT32_MAX}, {"U32", 4, UINT32_MAX}, {"U16", 2, UINT32_MAX},
    {"U8", 1, UINT32_MAX}, {"BOOL", 1, UINT32_MAX}, {"F8_E4M3", 1, UINT32_MAX},
    {"F8_E5M2", 1, UINT32_MAX},
};

static const st_dtype *find_dtype(const char *s) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtypes[i].name, s)) return &dtypes[i];
    return NULL;
}

static const char *ggml_to_st(uint32_t t) {
    return t == M2_GGML_F32 ? "F32" : t == M2_GGML_F16 ? "F16" : t == M2_GGML_BF16 ? "BF16" : NULL;
}

/* A JSON number that is a non-negative integer <= 2^53. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double d = j->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || floor(d) != d) return -1;
    *out = (uint64_t)d;
    return 0;
}

void m2_st_close(m2_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (size_t i = 0; i < st->n_meta; i++) { free(st->meta_keys[i]); free(st->meta_vals[i]); }
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map) munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    free(st->files); free(st->tensors); free(st->meta_keys); free(st->meta_vals); free(st->sorted);
    free(st->path);
    free(st);
}

typedef struct { uint64_t begin, end; size_t idx; } span;
static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Parses the header of file fi (already mapped) and appends its tensors to st. */
static int parse_file(m2_safetensors *st, int fi, int want_meta, m2_err *err) {
    m2_st_file *f = &st->files[fi];
    const char *p = f->path;
    if (f->size < 8) return m2_errorf(err, M2_EFORMAT, "%s: truncated: %zu bytes, the header length alone needs 8", p, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->base[i];
    if (n > M2_ST_MAX_HEADER) return m2_errorf(err, M2_EFORMAT, "%s: header length %" PRIu64 " exceeds the format's limit of %u bytes", p, n, M2_ST_MAX_HEADER);
    if (n > f->size - 8) return m2_errorf(err, M2_EFORMAT, "%s: truncated: header length %" PRIu64 " but only %zu bytes follow", p, n, f->size - 8);
    if (n < 2) return m2_errorf(err, M2_EFORMAT, "%s: header of %" PRIu64 " bytes cannot be a JSON object", p, n);
    f->data_start = 8 + n;
    uint64_t data_size = f->size - f->data_start;
    const char *json = (const char *)f->base + 8, *end = NULL;
    if (json[0] != '{') return m2_errorf(err, M2_EFORMAT, "%s: header does not start with '{'", p);
    cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)n, &end, 0);
    if (!root) {
        size_t at = cJSON_GetErrorPtr() ? (size_t)(cJSON_GetErrorPtr() - json) : 0;
        return m2_errorf(err, M2_EFORMAT, "%s: header is not valid JSON (near byte %zu)", p, at);
    }
    for (const char *q = end; q && q < json + n; q++)
        if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t' && *q != 0) {
            cJSON_Delete(root);
            return m2_errorf(err, M2_EFORMAT, "%s: trailing bytes after the JSON header", p);
        }
    if (!cJSON_IsObject(root)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: header is not a JSON object", p); }
    size_t count = 0;
    for (cJSON *e = root->child; e; e = e->next) count++;
    m2_st_tensor *nt = realloc(st->tensors, (st->n_tensors + count + 1) * sizeof *nt);
    span *spans = malloc((count + 1) * sizeof *spans);
    if (!nt || !spans) { free(spans); if (nt) st->tensors = nt; cJSON_Delete(root); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", p); }
    st->tensors = nt;
    size_t ns = 0;
    int rc = 0;
    for (cJSON *e = root->child; e && !rc; e = e->next) {
        const char *name = e->string ? e->string : "";
        if (!strcmp(name, "__metadata__")) {
            if (!cJSON_IsObject(e)) { rc = m2_errorf(err, M2_EFORMAT, "%s: __metadata__ is not an object", p); break; }
            if (!want_meta) continue;
            size_t k = 0;
            for (cJSON *m = e->child; m; m = m->next) k++;
            st->meta_keys = calloc(k + 1, sizeof(char *));
            st->meta_vals = calloc(k + 1, sizeof(char *));
            if (!st->meta_keys || !st->meta_vals) { rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", p); break; }
            for (cJSON *m = e->child; m; m = m->next) {
                if (!cJSON_IsString(m)) { rc = m2_errorf(err, M2_EFORMAT, "%s: __metadata__ value of '%s' is not a string", p, m->string ? m->string : ""); break; }
                st->meta_keys[st->n_meta] = strdup(m->string ? m->string : "");
                st->meta_vals[st->n_meta] = strdup(m->valuestring);
                st->n_meta++;
                if (!st->meta_keys[st->n_meta - 1] || !st->meta_vals[st->n_meta - 1]) { rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", p); break; }
            }
            continue;
        }
        if (!name[0]) { rc = m2_errorf(err, M2_EFORMAT, "%s: a tensor has an empty name", p); break; }
        if (!cJSON_IsObject(e)) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': entry is not an object", p, name); break; }
        const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (!cJSON_IsString(jd)) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': missing or non-string \"dtype\"", p, name); break; }
        const st_dtype *dt = find_dtype(jd->valuestring);
        if (!dt) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s': unknown dtype \"%.32s\"", p, name, jd->valuestring); break; }
        if (!cJSON_IsArray(js)) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': missing or non-array \"shape\"", p, name); break; }
        if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': \"data_offsets\" must be [begin, end]", p, name); break; }
        m2_st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        int nd = cJSON_GetArraySize(js);
        if (nd > M2_ST_MAX_DIMS) { rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': %d dimensions (at most %d)", p, name, nd, M2_ST_MAX_DIMS); break; }
        uint64_t ne = 1;
        int d = 0;
        for (const cJSON *x = js->child; x; x = x->next, d++) {
            uint64_t v;
            if (json_uint(x, &v) || v > (uint64_t)INT64_MAX) { rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': shape[%d] is not a non-negative integer", p, name, d); break; }
            if (__builtin_mul_overflow(ne, v, &ne)) { rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': element count overflows", p, name); break; }
            t->shape[d] = (int64_t)v;
        }
        if (rc) break;
        uint64_t b, en, nb;
        if (json_uint(jo->child, &b) || json_uint(jo->child->next, &en)) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data_offsets are not non-negative integers", p, name); break; }
        if (__builtin_mul_overflow(ne, (uint64_t)dt->size, &nb)) { rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': byte size overflows", p, name); break; }
        if (en < b || en > data_size) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] outside the %" PRIu64 "-byte data buffer (truncated file?)", p, name, b, en, data_size); break; }
        if (en - b != nb) { rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s': %" PRIu64 " bytes at data_offsets but shape and %s need %" PRIu64, p, name, en - b, dt->name, nb); break; }
        t->name = strdup(name);
        if (!t->name) { rc = m2_errorf(err, M2_ENOMEM, "%s: out of memory", p); break; }
        t->dtype = dt->name;
        t->ggml_type = dt->ggml;
        t->elem_size = dt->size;
        t->n_dims = nd;
        t->n_elems = ne;
        t->n_bytes = nb;
        t->data = f->base + f->data_start + b;
        t->file = fi;
        spans[ns++] = (span){b, en, st->n_tensors};
        st->n_tensors++;
    }
    cJSON_Delete(root);
    if (!rc) {
        /* The buffer must be covered exactly: no holes, no overlaps (the format's rule). */
        qsort(spans, ns, sizeof *spans, cmp_span);
        uint64_t at = 0;
        for (size_t i = 0; i < ns && !rc; i++) {
            if (spans[i].begin != at)
                rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data_offsets begin at %" PRIu64 ", expected %" PRIu64 " (overlap or hole)",
                               p, st->tensors[spans[i].idx].name, spans[i].begin, at);
            at = spans[i].end;
        }
        if (!rc && at != data_size)
            rc = m2_errorf(err, M2_EFORMAT, "%s: tensors cover %" PRIu64 " of the %" PRIu64 " data bytes", p, at, data_size);
    }
    free(spans);
    return rc;
}

static int cmp_name_r(const void *a, const void *b, void *ctx) {
    const m2_safetensors *st = ctx;
    return strcmp(st->tensors[*(const uint32_t *)a].name, st->tensors[*(const uint32_t *)b].name);
}

static int build_index(m2_safetensors *st, m2_err *err) {
    st->sorted = malloc((st->n_tensors + 1) * sizeof(uint32_t));
    if (!st->sorted) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", st->path);
    for (size_t i = 0; i < st->n_tensors; i++) st->sorted[i] = (uint32_t)i;
    qsort_r(st->sorted, st->n_tensors, sizeof(uint32_t), cmp_name_r, st);
    for (size_t i = 1; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[st->sorted[i]].name, st->tensors[st->sorted[i - 1]].name))
            return m2_errorf(err, M2_EFORMAT, "%s: duplicate tensor '%s'", st->path, st->tensors[st->sorted[i]].name);
    return 0;
}

static m2_safetensors *new_st(const char *path, int n_files, m2_err *err) {
    m2_safetensors *st = calloc(1, sizeof *st);
    if (st) {
        st->path = strdup(path);
        st->files = calloc((size_t)n_files, sizeof *st->files);
        st->tensors = malloc(sizeof *st->tensors);
    }
    if (!st || !st->path || !st->files || !st->tensors) {
        m2_st_close(st);
        m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    return st;
}

m2_safetensors *m2_st_open_memory(const void *buf, size_t len, const char *name, m2_err *err) {
    if (!name) name = "<memory>";
    m2_safetensors *st = new_st(name, 1, err);
    if (!st) return NULL;
    st->n_files = 1;
    st->files[0].path = strdup(name);
    st->files[0].base = buf;
    st->files[0].size = len;
    if (!st->files[0].path) { m2_errorf(err, M2_ENOMEM, "out of memory"); m2_st_close(st); return NULL; }
    if (parse_file(st, 0, 1, err) || build_index(st, err)) { m2_st_close(st); return NULL; }
    return st;
}

static int map_file(m2_st_file *f, m2_err *err) {
    int fd = open(f->path, O_RDONLY);
    if (fd < 0) return m2_errorf(err, M2_EIO, "%s: cannot open: %s", f->path, strerror(errno));
    struct stat s;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) { close(fd); return m2_errorf(err, M2_EIO, "%s: not a regular file", f->path); }
    f->size = (size_t)s.st_size;
    if (f->size == 0) { close(fd); f->base = (const uint8_t *)""; return 0; }
    void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return m2_errorf(err, M2_EIO, "%s: mmap failed: %s", f->path, strerror(errno));
    f->map = m;
    f->base = m;
    return 0;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static m2_safetensors *open_index(const char *path, m2_err *err) {
    char *text;
    size_t len;
    if (m2_read_file(path, &text, &len, err)) return NULL;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) { m2_errorf(err, M2_EFORMAT, "%s: not valid JSON", path); return NULL; }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) { cJSON_Delete(root); m2_errorf(err, M2_EFORMAT, "%s: missing object \"weight_map\"", path); return NULL; }
    /* distinct shard files, in order of first mention */
    int cap = 0, nf = 0;
    for (const cJSON *e = wm->child; e; e = e->next) cap++;
    char **files = calloc((size_t)cap + 1, sizeof(char *));
    int rc = files ? 0 : m2_errorf(err, M2_ENOMEM, "out of memory");
    for (const cJSON *e = wm->child; e && !rc; e = e->next) {
        if (!cJSON_IsString(e)) { rc = m2_errorf(err, M2_EFORMAT, "%s: weight_map['%s'] is not a string", path, e->string ? e->string : ""); break; }
        const char *fn = e->valuestring;
        if (!fn[0] || strchr(fn, '/') || !strcmp(fn, "..") || !strcmp(fn, ".")) { rc = m2_errorf(err, M2_EFORMAT, "%s: weight_map['%s'] names a bad shard file '%s'", path, e->string, fn); break; }
        int seen = 0;
        for (int i = 0; i < nf; i++) if (!strcmp(files[i], fn)) seen = 1;
        if (!seen) files[nf++] = (char *)fn;
    }
    m2_safetensors *st = NULL;
    if (!rc) st = new_st(path, nf ? nf : 1, err);
    if (!st) rc = -1;
    char *dir = NULL;
    if (!rc) {
        dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash) *slash = 0; else if (dir) strcpy(dir, ".");
        if (!dir) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    for (int i = 0; i < nf && !rc; i++) {
        size_t pl = strlen(dir) + strlen(files[i]) + 2;
        st->files[i].path = malloc(pl);
        if (!st->files[i].path) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
        snprintf(st->files[i].path, pl, "%s/%s", dir, files[i]);
        st->n_files = i + 1;
        rc = map_file(&st->files[i], err);
        if (!rc) rc = parse_file(st, i, i == 0, err);
    }
    if (!rc) rc = build_index(st, err);
    /* every weight_map entry must be in the shard it names */
    for (const cJSON *e = wm->child; e && !rc; e = e->next) {
        const m2_st_tensor *t = m2_st_find(st, e->string);
        if (!t) rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s' of the weight_map is in no shard", path, e->string);
        else if (!ends_with(st->files[t->file].path, e->valuestring) ||
                 st->files[t->file].path[strlen(st->files[t->file].path) - strlen(e->valuestring) - 1] != '/')
            rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s' is in %s, the weight_map says %s", path, e->string, st->files[t->file].path, e->valuestring);
    }
    free(dir);
    free(files);
    cJSON_Delete(root);
    if (rc) { m2_st_close(st); return NULL; }
    return st;
}

m2_safetensors *m2_st_open(const char *path, m2_err *err) {
    struct stat s;
    if (stat(path, &s) != 0) { m2_errorf(err, M2_EIO, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    if (S_ISDIR(s.st_mode)) {
        static const char *cands[] = {"model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors"};
        char buf[4096];
        for (int i = 0; i < 3; i++) {
            snprintf(buf, sizeof buf, "%s/%s", path, cands[i]);
            if (m2_path_exists(buf)) return m2_st_open(buf, err);
        }
        m2_errorf(err, M2_ENOTFOUND, "%s: folder has no model.safetensors, model.safetensors.index.json or adapter_model.safetensors", path);
        return NULL;
    }
    if (ends_with(path, ".json")) return open_index(path, err);
    m2_safetensors *st = new_st(path, 1, err);
    if (!st) return NULL;
    st->n_files = 1;
    st->files[0].path = strdup(path);
    if (!st->files[0].path) { m2_errorf(err, M2_ENOMEM, "out of memory"); m2_st_close(st); return NULL; }
    if (map_file(&st->files[0], err) || parse_file(st, 0, 1, err) || build_index(st, err)) { m2_st_close(st); return NULL; }
    return st;
}

const m2_st_tensor *m2_st_find(const m2_safetensors *st, const char *name) {
    size_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(st->tensors[st->sorted[mid]].name, name);
        if (c == 0) return &st->tensors[st->sorted[mid]];
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

const char *m2_st_meta(const m2_safetensors *st, const char *key) {
    for (size_t i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_vals[i];
    return NULL;
}

int m2_st_tensor_to_f32(const m2_safetensors *st, const m2_st_tensor *t, float *dst, m2_err *err) {
    if (t->ggml_type == UINT32_MAX)
        return m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s': dtype %s cannot be converted to f32 (F32, F16, BF16 only)", st->path, t->name, t->dtype);
    return m2_ggml_dequantize(t->ggml_type, t->data, dst, t->n_elems, err);
}

/* ---- writer ---- */

typedef struct {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t shape[M2_ST_MAX_DIMS];
    const void *data;
    void *owned;
    uint64_t nbytes;
} wt;

struct m2_st_writer {
    wt *t;
    size_t n, cap;
    char **mk, **mv;
    size_t nm;
};

m2_st_writer *m2_st_writer_new(void) { return calloc(1, sizeof(m2_st_writer)); }

void m2_st_writer_free(m2_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) { free(w->t[i].name); free(w->t[i].owned); }
    for (size_t i = 0; i < w->nm; i++) { free(w->mk[i]); free(w->mv[i]); }
    free(w->t); free(w->mk); free(w->mv); free(w);
}

int m2_st_set_meta(m2_st_writer *w, const char *key, const char *value) {
    for (size_t i = 0; i < w->nm; i++)
        if (!strcmp(w->mk[i], key)) { char *v = strdup(value); if (!v) return -1; free(w->mv[i]); w->mv[i] = v; return 0; }
    char **k = realloc(w->mk, (w->nm + 1) * sizeof(char *));
    if (!k) return -1;
    w->mk = k;
    char **v = realloc(w->mv, (w->nm + 1) * sizeof(char *));
    if (!v) return -1;
    w->mv = v;
    w->mk[w->nm] = strdup(key);
    w->mv[w->nm] = strdup(value);
    if (!w->mk[w->nm] || !w->mv[w->nm]) { free(w->mk[w->nm]); free(w->mv[w->nm]); return -1; }
    w->nm++;
    return 0;
}

int m2_st_add(m2_st_writer *w, const char *name, uint32_t type, int n_dims, const int64_t *shape,
              const void *data, uint64_t nbytes, m2_err *err) {
    if (!ggml_to_st(type)) return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': safetensors output supports F32, F16, BF16, not %s", name, m2_ggml_type_name(type));
    if (!name[0] || !strcmp(name, "__metadata__")) return m2_errorf(err, M2_EINVAL, "bad tensor name '%s'", name);
    if (n_dims < 0 || n_dims > M2_ST_MAX_DIMS) return m2_errorf(err, M2_ESHAPE, "tensor '%s': %d dims", name, n_dims);
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name)) return m2_errorf(err, M2_EINVAL, "tensor '%s' added twice", name);
    uint64_t ne = 1, want;
    for (int d = 0; d < n_dims; d++)
        if (shape[d] < 0 || __builtin_mul_overflow(ne, (uint64_t)shape[d], &ne)) return m2_errorf(err, M2_ESHAPE, "tensor '%s': bad shape[%d]", name, d);
    if (m2_ggml_nbytes(type, ne, &want) || want != nbytes)
        return m2_errorf(err, M2_ESHAPE, "tensor '%s': %" PRIu64 " bytes given for %" PRIu64 " %s values", name, nbytes, ne, ggml_to_st(type));
    if (w->n == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 64;
        wt *n = realloc(w->t, nc * sizeof *n);
        if (!n) return m2_errorf(err, M2_ENOMEM, "out of memory");
        w->t = n;
        w->cap = nc;
    }
    wt *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return m2_errorf(err, M2_ENOMEM, "out of memory");
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++) t->shape[d] = shape[d];
    t->data = data;
    t->nbytes = nbytes;
    w->n++;
    return 0;
}

int m2_st_add_f32(m2_st_writer *w, const char *name, uint32_t type, int n_dims,
                  const int64_t *shape, const float *data, m2_err *err) {
    uint64_t ne = 1, nb;
    for (int d = 0; d < n_dims && d < M2_ST_MAX_DIMS; d++)
        if (shape[d] < 0 || __builtin_mul_overflow(ne, (uint64_t)shape[d], &ne)) return m2_errorf(err, M2_ESHAPE, "tensor '%s': bad shape[%d]", name, d);
    if (!ggml_to_st(type) || m2_ggml_nbytes(type, ne, &nb)) return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': cannot write %s to safetensors", name, m2_ggml_type_name(type));
    void *buf = malloc(nb ? nb : 1);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "tensor '%s': out of memory", name);
    if (m2_ggml_quantize(type, data, buf, ne, err) || m2_st_add(w, name, type, n_dims, shape, buf, nb, err)) { free(buf); return -1; }
    w->t[w->n - 1].owned = buf;
    return 0;
}

/* JSON string with escapes into a growable buffer. */
typedef struct { char *p; size_t n, cap; int oom; } sbuf;
static void sput(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sputs(sbuf *b, const char *s) { sput(b, s, strlen(s)); }
static void sputq(sbuf *b, const char *s) {
    sput(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char e[8];
        if (*c == '"' || *c == '\\') { e[0] = '\\'; e[1] = (char)*c; sput(b, e, 2); }
        else if (*c < 0x20) { snprintf(e, sizeof e, "\\u%04x", *c); sput(b, e, 6); }
        else sput(b, (const char *)c, 1);
    }
    sput(b, "\"", 1);
}

/* Writes tensors [lo, hi) of w to path. */
static int write_range(m2_st_writer *w, size_t lo, size_t hi, const char *path, m2_err *err) {
    sbuf b = {0};
    sputs(&b, "{");
    int first = 1;
    if (w->nm) {
        sputs(&b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->nm; i++) {
            if (i) sputs(&b, ",");
            sputq(&b, w->mk[i]); sputs(&b, ":"); sputq(&b, w->mv[i]);
        }
        sputs(&b, "}");
        first = 0;
    }
    uint64_t off = 0;
    for (size_t i = lo; i < hi; i++) {
        wt *t = &w->t[i];
        char num[64];
        if (!first) sputs(&b, ",");
        first = 0;
        sputq(&b, t->name);
        sputs(&b, ":{\"dtype\":\"");
        sputs(&b, ggml_to_st(t->type));
        sputs(&b, "\",\"shape\":[");
        for (int d = 0; d < t->n_dims; d++) {
            snprintf(num, sizeof num, "%s%" PRId64, d ? "," : "", t->shape[d]);
            sputs(&b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + t->nbytes);
        sputs(&b, num);
        off += t->nbytes;
    }
    sputs(&b, "}");
    while (!b.oom && (b.n % 8)) sputs(&b, " ");   /* data starts 8-byte aligned */
    if (b.oom) { free(b.p); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); }
    uint64_t hl = b.n;
    m2_afile *f = m2_afile_open(path, err);
    if (!f) { free(b.p); return -1; }
    int rc = m2_afile_write(f, &hl, 8, err);
    if (!rc) rc = m2_afile_write(f, b.p, b.n, err);
    free(b.p);
    for (size_t i = lo; i < hi && !rc; i++) rc = m2_afile_write(f, w->t[i].data, w->t[i].nbytes, err);
    if (rc) { m2_afile_abort(f); return -1; }
    return m2_afile_commit(f, err);
}

int m2_st_write(m2_st_writer *w, const char *path, m2_err *err) { return write_range(w, 0, w->n, path, err); }

int m2_st_write_sharded(m2_st_writer *w, const char *dir, uint64_t max_shard_bytes, m2_err *err) {
    if (m2_mkdir_p(dir, err)) return -1;
    /* shard boundaries in insertion order */
    size_t *start = malloc((w->n + 2) * sizeof(size_t));
    if (!start) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int ns = 0;
    uint64_t cur = 0, total = 0;
    start[0] = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (i > start[ns] && cur + w->t[i].nbytes > max_shard_bytes) { start[++ns] = i; cur = 0; }
        cur += w->t[i].nbytes;
        total += w->t[i].nbytes;
    }
    start[++ns] = w->n;
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "metadata"),
          *wm = cJSON_AddObjectToObject(root, "weight_map");
    cJSON_AddNumberToObject(meta, "total_size", (double)total);
    int rc = 0;
    char path[4096], fn[64];
    for (int s = 0; s < ns && !rc; s++) {
        snprintf(fn, sizeof fn, "model-%05d-of-%05d.safetensors", s + 1, ns);
        snprintf(path, sizeof path, "%s/%s", dir, fn);
        rc = write_range(w, start[s], start[s + 1], path, err);
        for (size_t i = start[s]; i < start[s + 1] && !rc; i++) cJSON_AddStringToObject(wm, w->t[i].name, fn);
    }
    free(start);
    if (!rc) {
        char *text = cJSON_Print(root);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        rc = text ? m2_write_file_atomic(path, text, strlen(text), err) : m2_errorf(err, M2_ENOMEM, "out of memory");
        free(text);
    }
    cJSON_Delete(root);
    return rc;
}
