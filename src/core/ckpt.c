#include "core/ckpt.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "core/tblog.h"

#define TENSORS_FILE "tensors.safetensors"
#define MANIFEST_FILE "manifest.json"
#define MAX_HEADER (64u << 20)

static const char *dt_names[] = {"F32", "F64", "I32", "I64", "U8"};
static const size_t dt_sizes[] = {4, 8, 4, 8, 1};

const char *m2_ckpt_dtype_name(m2_ckpt_dtype dt) { return (unsigned)dt < 5 ? dt_names[dt] : "?"; }
size_t m2_ckpt_dtype_size(m2_ckpt_dtype dt) { return (unsigned)dt < 5 ? dt_sizes[dt] : 0; }

static int dtype_parse(const char *s) {
    for (int i = 0; i < 5; i++) if (!strcmp(s, dt_names[i])) return i;
    return -1;
}

/* ---------------------------------------------------------------- building */

m2_ckpt *m2_ckpt_new(int64_t step, const char *stage) {
    m2_ckpt *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->step = step;
    snprintf(c->stage, sizeof c->stage, "%s", stage ? stage : "");
    c->rng = cJSON_CreateObject();
    c->state = cJSON_CreateObject();
    if (!c->rng || !c->state) { m2_ckpt_free(c); return NULL; }
    return c;
}

void m2_ckpt_free(m2_ckpt *c) {
    if (!c) return;
    for (int i = 0; i < c->n_arrays; i++) {
        free(c->arrays[i].name);
        if (c->arrays[i].owned) free(c->arrays[i].data);
    }
    free(c->arrays);
    cJSON_Delete(c->rng);
    cJSON_Delete(c->state);
    free(c);
}

const m2_ckpt_array *m2_ckpt_find(const m2_ckpt *c, const char *name) {
    for (int i = 0; i < c->n_arrays; i++) if (!strcmp(c->arrays[i].name, name)) return &c->arrays[i];
    return NULL;
}

/* Byte size of a shape, or -1 on overflow / negative dims. */
static int shape_bytes(m2_ckpt_dtype dt, int ndim, const int64_t *shape, size_t *out) {
    size_t n = m2_ckpt_dtype_size(dt);
    if (!n || ndim < 0 || ndim > M2_CKPT_MAX_DIMS) return -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] && n > SIZE_MAX / (size_t)shape[i]) return -1;
        n *= (size_t)shape[i];
    }
    *out = n;
    return 0;
}

static int add_array(m2_ckpt *c, const char *name, m2_ckpt_dtype dt, const void *data, int ndim,
                     const int64_t *shape, int copy, m2_err *err) {
    if (!name || !*name || strlen(name) > 400 || strchr(name, '"') || strchr(name, '\\'))
        return m2_errorf(err, M2_EINVAL, "checkpoint: bad array name '%s'", name ? name : "(null)");
    if (!strcmp(name, "__metadata__")) return m2_errorf(err, M2_EINVAL, "checkpoint: reserved array name '%s'", name);
    if (m2_ckpt_find(c, name)) return m2_errorf(err, M2_EINVAL, "checkpoint: array '%s' added twice", name);
    size_t nbytes;
    if (shape_bytes(dt, ndim, shape, &nbytes) != 0)
        return m2_errorf(err, M2_EINVAL, "checkpoint: array '%s': bad dtype or shape", name);
    if (nbytes && !data) return m2_errorf(err, M2_EINVAL, "checkpoint: array '%s': NULL data", name);
    if (c->n_arrays == c->cap_arrays) {
        int cap = c->cap_arrays ? 2 * c->cap_arrays : 16;
        m2_ckpt_array *a = realloc(c->arrays, (size_t)cap * sizeof *a);
        if (!a) return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
        c->arrays = a;
        c->cap_arrays = cap;
    }
    m2_ckpt_array *a = &c->arrays[c->n_arrays];
    memset(a, 0, sizeof *a);
    a->name = strdup(name);
    if (!a->name) return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
    a->dtype = dt;
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++) a->shape[i] = shape[i];
    a->nbytes = nbytes;
    if (copy) {
        a->data = malloc(nbytes ? nbytes : 1);
        if (!a->data) { free(a->name); return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory (%zu bytes)", nbytes); }
        if (nbytes) memcpy(a->data, data, nbytes);
        a->owned = 1;
    } else {
        a->data = (void *)data;
    }
    c->n_arrays++;
    return 0;
}

int m2_ckpt_add(m2_ckpt *c, const char *name, m2_ckpt_dtype dt, const void *data, int ndim, const int64_t *shape,
                m2_err *err) {
    return add_array(c, name, dt, data, ndim, shape, 0, err);
}

int m2_ckpt_add_copy(m2_ckpt *c, const char *name, m2_ckpt_dtype dt, const void *data, int ndim,
                     const int64_t *shape, m2_err *err) {
    return add_array(c, name, dt, data, ndim, shape, 1, err);
}

int m2_ckpt_set_rng(m2_ckpt *c, const char *name, const m2_rng *r, m2_err *err) {
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory");
    for (int i = 0; i < 4; i++) {
        char hex[32];
        snprintf(hex, sizeof hex, "%016" PRIx64, r->s[i]);
        cJSON_AddItemToArray(arr, cJSON_CreateString(hex));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(c->rng, name);
    cJSON_AddItemToObject(c->rng, name, arr);
    return 0;
}

int m2_ckpt_get_rng(const m2_ckpt *c, const char *name, m2_rng *r, m2_err *err) {
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->rng, name);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 4)
        return m2_errorf(err, M2_ENOTFOUND, "checkpoint %s: no RNG state '%s'", c->dir, name);
    for (int i = 0; i < 4; i++) {
        cJSON *w = cJSON_GetArrayItem(arr, i);
        char *end;
        if (!cJSON_IsString(w) || strlen(w->valuestring) != 16)
            return m2_errorf(err, M2_EFORMAT, "checkpoint %s: RNG state '%s': bad word %d", c->dir, name, i);
        r->s[i] = strtoull(w->valuestring, &end, 16);
        if (*end) return m2_errorf(err, M2_EFORMAT, "checkpoint %s: RNG state '%s': bad word %d", c->dir, name, i);
    }
    return 0;
}

cJSON *m2_ckpt_state(m2_ckpt *c) { return c->state; }

int m2_ckpt_add_writer(m2_ckpt *c, m2_ckpt_writer_fn fn, void *ctx, m2_err *err) {
    if (c->n_writers == 8) return m2_errorf(err, M2_EINVAL, "checkpoint: too many writer hooks");
    c->writers[c->n_writers] = fn;
    c->writer_ctx[c->n_writers++] = ctx;
    return 0;
}

/* ---------------------------------------------------------------- file helpers */

static int write_all(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fsync_path(const char *path, int dir) {
    int fd = open(path, dir ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* CRC-32C of a whole file, streaming. */
static int file_crc(const char *path, uint32_t *crc, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char buf[1 << 16];
    uint32_t c = 0;
    uint64_t n = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) { c = m2_crc32c_extend(c, buf, got); n += got; }
    int bad = ferror(f);
    fclose(f);
    if (bad) return -1;
    *crc = c;
    *size = n;
    return 0;
}

/* Records every regular file under dir/rel (except the manifest and the tensors file) in `files`,
 * fsyncing files and folders on the way. */
static int seal_tree(const char *root, const char *rel, cJSON *files, m2_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot list: %s", path, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub_rel[4096], sub[8300];
        snprintf(sub_rel, sizeof sub_rel, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(sub, sizeof sub, "%s/%s", root, sub_rel);
        struct stat st;
        if (lstat(sub, &st) != 0) { rc = m2_errorf(err, M2_EIO, "%s: %s", sub, strerror(errno)); break; }
        if (S_ISDIR(st.st_mode)) { rc = seal_tree(root, sub_rel, files, err); continue; }
        if (!S_ISREG(st.st_mode)) { rc = m2_errorf(err, M2_EIO, "%s: not a regular file", sub); break; }
        if (fsync_path(sub, 0) != 0) { rc = m2_errorf(err, M2_EIO, "%s: fsync failed: %s", sub, strerror(errno)); break; }
        if (!*rel && (!strcmp(e->d_name, MANIFEST_FILE) || !strcmp(e->d_name, TENSORS_FILE))) continue;
        uint32_t crc;
        uint64_t size;
        if (file_crc(sub, &crc, &size) != 0) { rc = m2_errorf(err, M2_EIO, "%s: cannot read back", sub); break; }
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "path", sub_rel);
        cJSON_AddNumberToObject(f, "bytes", (double)size);
        cJSON_AddNumberToObject(f, "crc32c", crc);
        cJSON_AddItemToArray(files, f);
    }
    closedir(d);
    if (rc == 0 && fsync_path(path, 1) != 0) rc = m2_errorf(err, M2_EIO, "%s: fsync failed: %s", path, strerror(errno));
    return rc;
}

/* ---------------------------------------------------------------- safetensors */

static cJSON *shape_json(const m2_ckpt_array *a) {
    cJSON *s = cJSON_CreateArray();
    for (int i = 0; i < a->ndim; i++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)a->shape[i]));
    return s;
}

static int write_safetensors(const m2_ckpt *c, const char *path, m2_err *err) {
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "multi2");
    uint64_t off = 0;
    for (int i = 0; i < c->n_arrays; i++) {
        const m2_ckpt_array *a = &c->arrays[i];
        cJSON *t = cJSON_AddObjectToObject(h, a->name);
        cJSON_AddStringToObject(t, "dtype", m2_ckpt_dtype_name(a->dtype));
        cJSON_AddItemToObject(t, "shape", shape_json(a));
        cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + a->nbytes)));
        off += a->nbytes;
    }
    char *js = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (!js) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    size_t jl = strlen(js), padded = (jl + 7) & ~(size_t)7;
    unsigned char head[8];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { cJSON_free(js); return m2_errorf(err, M2_EIO, "%s: cannot create: %s", path, strerror(errno)); }
    int rc = write_all(fd, head, 8) || write_all(fd, js, jl) || write_all(fd, "        ", padded - jl);
    cJSON_free(js);
    for (int i = 0; !rc && i < c->n_arrays; i++)
        if (c->arrays[i].nbytes) rc = write_all(fd, c->arrays[i].data, c->arrays[i].nbytes);
    if (rc) { int e = errno; close(fd); return m2_errorf(err, M2_EIO, "%s: write failed: %s", path, strerror(e)); }
    if (fsync(fd) != 0) { int e = errno; close(fd); return m2_errorf(err, M2_EIO, "%s: fsync failed: %s", path, strerror(e)); }
    if (close(fd) != 0) return m2_errorf(err, M2_EIO, "%s: close failed: %s", path, strerror(errno));
    return 0;
}

static int get_int64(const cJSON *n, int64_t *out) {
    if (!cJSON_IsNumber(n)) return -1;
    double d = n->valuedouble;
    if (d < 0 || d > 9007199254740992.0 || d != (double)(int64_t)d) return -1;
    *out = (int64_t)d;
    return 0;
}

/* Reads tensors.safetensors: validates its header and loads every array listed in it. */
static int read_safetensors(m2_ckpt *c, const char *path, m2_err *err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return m2_errorf(err, M2_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return m2_errorf(err, M2_EIO, "%s: cannot stat", path); }
    uint64_t fsize = (uint64_t)st.st_size;
    unsigned char head[8];
    if (fsize < 8 || pread(fd, head, 8, 0) != 8) { close(fd); return m2_errorf(err, M2_EFORMAT, "%s: truncated (no header)", path); }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)head[i] << (8 * i);
    if (hlen > MAX_HEADER || hlen > fsize - 8) {
        close(fd);
        return m2_errorf(err, M2_EFORMAT, "%s: header length %" PRIu64 " exceeds the file (%" PRIu64 " bytes)", path, hlen, fsize);
    }
    char *js = malloc(hlen + 1);
    if (!js) { close(fd); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); }
    if (pread(fd, js, hlen, 8) != (ssize_t)hlen) { free(js); close(fd); return m2_errorf(err, M2_EIO, "%s: short read", path); }
    js[hlen] = 0;
    cJSON *h = cJSON_Parse(js);
    free(js);
    if (!cJSON_IsObject(h)) { cJSON_Delete(h); close(fd); return m2_errorf(err, M2_EFORMAT, "%s: header is not a JSON object", path); }
    uint64_t data_start = 8 + hlen, data_len = fsize - data_start;
    int rc = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, h) {
        if (!strcmp(t->string, "__metadata__")) continue;
        const char *name = t->string;
        cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
        cJSON *of = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        int dtype = cJSON_IsString(dt) ? dtype_parse(dt->valuestring) : -1;
        if (dtype < 0) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': missing or unsupported dtype", path, name); break; }
        int ndim = cJSON_IsArray(sh) ? cJSON_GetArraySize(sh) : -1;
        if (ndim < 0 || ndim > M2_CKPT_MAX_DIMS) { rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': bad shape", path, name); break; }
        int64_t shape[M2_CKPT_MAX_DIMS];
        for (int i = 0; i < ndim && rc == 0; i++)
            if (get_int64(cJSON_GetArrayItem(sh, i), &shape[i]))
                rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': bad shape", path, name);
        if (rc) break;
        int64_t b, e;
        if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || get_int64(cJSON_GetArrayItem(of, 0), &b) ||
            get_int64(cJSON_GetArrayItem(of, 1), &e) || e < b) {
            rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': bad data_offsets", path, name);
            break;
        }
        size_t nbytes = 0;
        if (shape_bytes((m2_ckpt_dtype)dtype, ndim, shape, &nbytes) != 0 || (uint64_t)(e - b) != nbytes) {
            rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data_offsets span %" PRId64 " bytes, shape needs %zu",
                           path, name, e - b, nbytes);
            break;
        }
        if ((uint64_t)e > data_len) {
            rc = m2_errorf(err, M2_EFORMAT, "%s: tensor '%s': data runs past the end of the file (truncated?)", path, name);
            break;
        }
        void *buf = malloc(nbytes ? nbytes : 1);
        if (!buf) { rc = m2_errorf(err, M2_ENOMEM, "%s: tensor '%s': out of memory (%zu bytes)", path, name, nbytes); break; }
        size_t got = 0;
        while (got < nbytes) {
            ssize_t r = pread(fd, (char *)buf + got, nbytes - got, (off_t)(data_start + (uint64_t)b + got));
            if (r <= 0) { if (r < 0 && errno == EINTR) continue; break; }
            got += (size_t)r;
        }
        if (got != nbytes) { free(buf); rc = m2_errorf(err, M2_EIO, "%s: tensor '%s': short read", path, name); break; }
        if (add_array(c, name, (m2_ckpt_dtype)dtype, buf, ndim, shape, 0, err) != 0) {
            free(buf);
            rc = m2_err_prefix(err, "%s: ", path);
            break;
        }
        c->arrays[c->n_arrays - 1].owned = 1;
        c->arrays[c->n_arrays - 1].crc = m2_crc32c(buf, nbytes);
    }
    cJSON_Delete(h);
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- save */

static int step_of(const char *name, int64_t *step) {
    if (strncmp(name, "step_", 5) || !name[5]) return 0;
    int64_t v = 0;
    for (const char *p = name + 5; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) return 0;
        v = v * 10 + (*p - '0');
    }
    *step = v;
    return 1;
}

int m2_ckpt_save(m2_ckpt *c, const char *root, int keep_last, char *out_dir, size_t out_cap, m2_err *err) {
    if (c->step < 0) return m2_errorf(err, M2_EINVAL, "checkpoint: negative step");
    if (m2_mkdir_p(root, err) != 0) return -1;
    char tmp[4096], fin[4096], old[4096], path[4200];
    snprintf(tmp, sizeof tmp, "%s/step_%" PRId64 ".tmp.%ld", root, c->step, (long)getpid());
    snprintf(fin, sizeof fin, "%s/step_%" PRId64, root, c->step);
    snprintf(old, sizeof old, "%s/step_%" PRId64 ".old.%ld", root, c->step, (long)getpid());
    m2_remove_tree(tmp);
    if (mkdir(tmp, 0755) != 0) return m2_errorf(err, M2_EIO, "%s: cannot create: %s", tmp, strerror(errno));

    snprintf(path, sizeof path, "%s/%s", tmp, TENSORS_FILE);
    if (write_safetensors(c, path, err) != 0) goto fail;
    for (int i = 0; i < c->n_writers; i++)
        if (c->writers[i](c->writer_ctx[i], tmp, err) != 0) { m2_err_prefix(err, "checkpoint writer: "); goto fail; }

    cJSON *man = cJSON_CreateObject();
    cJSON_AddStringToObject(man, "format", "multi2-checkpoint");
    cJSON_AddNumberToObject(man, "version", 1);
    cJSON_AddNumberToObject(man, "step", (double)c->step);
    cJSON_AddStringToObject(man, "stage", c->stage);
    char when[64];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    cJSON_AddStringToObject(man, "created", when);
    cJSON_AddStringToObject(man, "tensors", TENSORS_FILE);
    cJSON *arrs = cJSON_AddArrayToObject(man, "arrays");
    for (int i = 0; i < c->n_arrays; i++) {
        const m2_ckpt_array *a = &c->arrays[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", a->name);
        cJSON_AddStringToObject(o, "dtype", m2_ckpt_dtype_name(a->dtype));
        cJSON_AddItemToObject(o, "shape", shape_json(a));
        cJSON_AddNumberToObject(o, "crc32c", m2_crc32c(a->data, a->nbytes));
        cJSON_AddItemToArray(arrs, o);
    }
    cJSON_AddItemToObject(man, "rng", cJSON_Duplicate(c->rng, 1));
    cJSON *files = cJSON_AddArrayToObject(man, "files");
    if (seal_tree(tmp, "", files, err) != 0) { cJSON_Delete(man); goto fail; }
    cJSON_AddItemToObject(man, "state", cJSON_Duplicate(c->state, 1));
    char *js = cJSON_Print(man);
    cJSON_Delete(man);
    if (!js) { m2_errorf(err, M2_ENOMEM, "checkpoint: out of memory"); goto fail; }
    snprintf(path, sizeof path, "%s/%s", tmp, MANIFEST_FILE);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int bad = fd < 0 || write_all(fd, js, strlen(js)) || write_all(fd, "\n", 1) || fsync(fd) != 0;
    if (fd >= 0 && close(fd) != 0) bad = 1;
    cJSON_free(js);
    if (bad) { m2_errorf(err, M2_EIO, "%s: write failed: %s", path, strerror(errno)); goto fail; }
    if (fsync_path(tmp, 1) != 0) { m2_errorf(err, M2_EIO, "%s: fsync failed: %s", tmp, strerror(errno)); goto fail; }

    /* Seal: rename into place (moving an older folder of the same step aside first). */
    int replaced = 0;
    if (m2_path_exists(fin)) {
        m2_remove_tree(old);
        if (rename(fin, old) != 0) { m2_errorf(err, M2_EIO, "%s: cannot move aside: %s", fin, strerror(errno)); goto fail; }
        replaced = 1;
    }
    if (rename(tmp, fin) != 0) {
        m2_errorf(err, M2_EIO, "%s: rename to %s failed: %s", tmp, fin, strerror(errno));
        if (replaced) rename(old, fin);
        goto fail;
    }
    if (fsync_path(root, 1) != 0) return m2_errorf(err, M2_EIO, "%s: fsync failed: %s", root, strerror(errno));
    char latest[4200], rel[128];
    snprintf(latest, sizeof latest, "%s/latest", root);
    snprintf(rel, sizeof rel, "step_%" PRId64 "\n", c->step);
    if (m2_write_file_atomic(latest, rel, strlen(rel), err) != 0) return -1;
    if (replaced) m2_remove_tree(old);
    snprintf(c->dir, sizeof c->dir, "%s", fin);
    if (out_dir) snprintf(out_dir, out_cap, "%s", fin);
    return m2_ckpt_prune(root, keep_last, err);
fail:
    m2_remove_tree(tmp);
    return -1;
}

/* ---------------------------------------------------------------- prune */

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* "step_N.tmp.PID" / "step_N.old.PID" / "latest.tmp.PID" of a process that is gone (or of this
 * one, for .tmp): a run killed while writing leaves these behind. */
static int stale_temp(const char *name) {
    const char *t = strstr(name, ".tmp.");
    if (!t) t = strstr(name, ".old.");
    if ((strncmp(name, "step_", 5) && strncmp(name, "latest.", 7)) || !t) return 0;
    long pid = strtol(t + 5, NULL, 10);
    if (pid <= 0) return 0;
    if (pid == (long)getpid()) return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int m2_ckpt_prune(const char *root, int keep_last, m2_err *err) {
    DIR *d = opendir(root);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot list: %s", root, strerror(errno));
    char keep_name[128] = "";
    char latest[4200];
    snprintf(latest, sizeof latest, "%s/latest", root);
    char *lt;
    if (m2_read_file(latest, &lt, NULL, NULL) == 0) {
        snprintf(keep_name, sizeof keep_name, "%.*s", (int)strcspn(lt, "\r\n"), lt);
        free(lt);
    }
    int64_t *steps = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t s;
        if (stale_temp(e->d_name)) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", root, e->d_name);
            m2_remove_tree(p);
            continue;
        }
        if (!step_of(e->d_name, &s)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            int64_t *q = realloc(steps, (size_t)cap * sizeof *q);
            if (!q) { free(steps); closedir(d); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
            steps = q;
        }
        steps[n++] = s;
    }
    closedir(d);
    if (keep_last > 0 && n > keep_last) {
        qsort(steps, (size_t)n, sizeof *steps, cmp_desc);
        for (int i = keep_last; i < n; i++) {
            char name[64], p[4200];
            snprintf(name, sizeof name, "step_%" PRId64, steps[i]);
            if (!strcmp(name, keep_name)) continue;
            snprintf(p, sizeof p, "%s/%s", root, name);
            m2_remove_tree(p);
        }
        fsync_path(root, 1);
    }
    free(steps);
    return 0;
}

/* ---------------------------------------------------------------- load */

int m2_ckpt_latest_dir(const char *root, char *out, size_t cap, m2_err *err) {
    char latest[4200];
    snprintf(latest, sizeof latest, "%s/latest", root);
    if (!m2_path_exists(latest))
        return m2_errorf(err, M2_ENOTFOUND, "%s: no checkpoint yet (no 'latest' file)", root);
    char *txt;
    if (m2_read_file(latest, &txt, NULL, err) != 0) return -1;
    size_t n = strcspn(txt, "\r\n");
    txt[n] = 0;
    int64_t s;
    if (!step_of(txt, &s)) {
        int rc = m2_errorf(err, M2_EFORMAT, "%s: expected 'step_N', got '%.60s'", latest, txt);
        free(txt);
        return rc;
    }
    snprintf(out, cap, "%s/%s", root, txt);
    free(txt);
    return 0;
}

int m2_ckpt_load_latest(const char *root, m2_ckpt **out, m2_err *err) {
    char dir[4200];
    *out = NULL;
    if (m2_ckpt_latest_dir(root, dir, sizeof dir, err) != 0) return -1;
    return m2_ckpt_load(dir, out, err);
}

int m2_ckpt_load(const char *dir, m2_ckpt **out, m2_err *err) {
    *out = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MANIFEST_FILE);
    char *txt;
    if (m2_read_file(path, &txt, NULL, err) != 0) return m2_err_prefix(err, "checkpoint %s: ", dir);
    cJSON *man = cJSON_Parse(txt);
    free(txt);
    if (!cJSON_IsObject(man)) { cJSON_Delete(man); return m2_errorf(err, M2_EFORMAT, "%s: not valid JSON (corrupt checkpoint)", path); }
    int rc = 0;
    m2_ckpt *c = NULL;
    cJSON *fmt = cJSON_GetObjectItemCaseSensitive(man, "format");
    cJSON *ver = cJSON_GetObjectItemCaseSensitive(man, "version");
    cJSON *step = cJSON_GetObjectItemCaseSensitive(man, "step");
    cJSON *stage = cJSON_GetObjectItemCaseSensitive(man, "stage");
    cJSON *arrs = cJSON_GetObjectItemCaseSensitive(man, "arrays");
    cJSON *rng = cJSON_GetObjectItemCaseSensitive(man, "rng");
    cJSON *files = cJSON_GetObjectItemCaseSensitive(man, "files");
    cJSON *state = cJSON_GetObjectItemCaseSensitive(man, "state");
    int64_t stepv = 0;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "multi2-checkpoint")) {
        rc = m2_errorf(err, M2_EFORMAT, "%s: field 'format': not a multi2 checkpoint", path);
    } else if (!cJSON_IsNumber(ver) || ver->valueint != 1) {
        rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: field 'version': unsupported (this build reads version 1)", path);
    } else if (get_int64(step, &stepv)) {
        rc = m2_errorf(err, M2_EFORMAT, "%s: field 'step': missing or not a non-negative integer", path);
    } else if (!cJSON_IsString(stage) || !cJSON_IsArray(arrs) || !cJSON_IsObject(rng) || !cJSON_IsObject(state)) {
        rc = m2_errorf(err, M2_EFORMAT, "%s: fields 'stage', 'arrays', 'rng' and 'state' are required", path);
    }
    if (rc == 0) {
        c = m2_ckpt_new(stepv, stage->valuestring);
        if (!c) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    if (rc == 0) {
        snprintf(c->dir, sizeof c->dir, "%s", dir);
        cJSON_Delete(c->rng);
        cJSON_Delete(c->state);
        c->rng = cJSON_DetachItemViaPointer(man, rng);
        c->state = cJSON_DetachItemViaPointer(man, state);
        snprintf(path, sizeof path, "%s/%s", dir, TENSORS_FILE);
        rc = read_safetensors(c, path, err);
    }
    /* The manifest and the tensors file must agree array by array, bit for bit. */
    if (rc == 0 && cJSON_GetArraySize(arrs) != c->n_arrays)
        rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: manifest lists %d arrays, %s holds %d", dir,
                       cJSON_GetArraySize(arrs), TENSORS_FILE, c->n_arrays);
    const cJSON *a;
    if (rc == 0) cJSON_ArrayForEach(a, arrs) {
        cJSON *nm = cJSON_GetObjectItemCaseSensitive(a, "name");
        cJSON *dt = cJSON_GetObjectItemCaseSensitive(a, "dtype");
        cJSON *sh = cJSON_GetObjectItemCaseSensitive(a, "shape");
        cJSON *crc = cJSON_GetObjectItemCaseSensitive(a, "crc32c");
        if (!cJSON_IsString(nm) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsNumber(crc)) {
            rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: manifest array entry malformed", dir);
            break;
        }
        const m2_ckpt_array *x = m2_ckpt_find(c, nm->valuestring);
        if (!x) { rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: array '%s' is in the manifest but not in %s", dir, nm->valuestring, TENSORS_FILE); break; }
        int same = !strcmp(dt->valuestring, m2_ckpt_dtype_name(x->dtype)) && cJSON_GetArraySize(sh) == x->ndim;
        for (int i = 0; same && i < x->ndim; i++) {
            int64_t v;
            same = !get_int64(cJSON_GetArrayItem(sh, i), &v) && v == x->shape[i];
        }
        if (!same) { rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: array '%s': manifest and %s disagree on dtype/shape", dir, x->name, TENSORS_FILE); break; }
        if ((double)x->crc != crc->valuedouble) {
            rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: array '%s': CRC-32C mismatch (corrupt checkpoint)", dir, x->name);
            break;
        }
    }
    if (rc == 0 && cJSON_IsArray(files)) {
        const cJSON *f;
        cJSON_ArrayForEach(f, files) {
            cJSON *p = cJSON_GetObjectItemCaseSensitive(f, "path");
            cJSON *b = cJSON_GetObjectItemCaseSensitive(f, "bytes");
            cJSON *crc = cJSON_GetObjectItemCaseSensitive(f, "crc32c");
            if (!cJSON_IsString(p) || !cJSON_IsNumber(b) || !cJSON_IsNumber(crc) || strstr(p->valuestring, "..")) {
                rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: manifest file entry malformed", dir);
                break;
            }
            char fp[4200];
            snprintf(fp, sizeof fp, "%s/%s", dir, p->valuestring);
            uint32_t got;
            uint64_t size;
            if (file_crc(fp, &got, &size) != 0) { rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: file '%s' is missing", dir, p->valuestring); break; }
            if ((double)size != b->valuedouble || (double)got != crc->valuedouble) {
                rc = m2_errorf(err, M2_EFORMAT, "checkpoint %s: file '%s': size or CRC-32C mismatch (corrupt checkpoint)", dir, p->valuestring);
                break;
            }
        }
    }
    cJSON_Delete(man);
    if (rc != 0) { m2_ckpt_free(c); return -1; }
    *out = c;
    return 0;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

int m2_ckpt_read(const m2_ckpt *c, const char *name, m2_ckpt_dtype dt, void *dst, int ndim, const int64_t *shape,
                 m2_err *err) {
    const m2_ckpt_array *a = m2_ckpt_find(c, name);
    if (!a) return m2_errorf(err, M2_ENOTFOUND, "checkpoint %s: array '%s' is missing", c->dir, name);
    if (a->dtype != dt)
        return m2_errorf(err, M2_ESHAPE, "checkpoint %s: array '%s' has dtype %s, expected %s", c->dir, name,
                         m2_ckpt_dtype_name(a->dtype), m2_ckpt_dtype_name(dt));
    int same = a->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = a->shape[i] == shape[i];
    if (!same) {
        char got[256], want[256];
        shape_str(got, sizeof got, a->ndim, a->shape);
        shape_str(want, sizeof want, ndim, shape);
        return m2_errorf(err, M2_ESHAPE, "checkpoint %s: array '%s' has shape %s, expected %s", c->dir, name, got, want);
    }
    if (a->nbytes) memcpy(dst, a->data, a->nbytes);
    return 0;
}
