#include "core/tblog.h"
#include <errno.h>
#include <pthread.h>
#ifdef __SSE4_2__
#include <nmmintrin.h>
#endif
#include <string.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "core/strbuf.h"

/* ---------------------------------------------------------------- CRC-32C */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t m2_crc32c_extend(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc = ~crc;
#ifdef __SSE4_2__
    /* The CPU's CRC32 instruction computes exactly CRC-32C. */
    uint64_t c64 = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8; n -= 8;
    }
    crc = (uint32_t)c64;
    while (n > 0) { crc = _mm_crc32_u8(crc, *p++); n--; }
    return ~crc;
#endif
    pthread_once(&crc_once, crc_init);
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t m2_crc32c(const void *data, size_t n) { return m2_crc32c_extend(0, data, n); }

uint32_t m2_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/* ---------------------------------------------------------------- protobuf encoding */

static void pb_varint(m2_strbuf *b, uint64_t v) {
    unsigned char t[10];
    int n = 0;
    do { t[n] = (unsigned char)(v & 0x7F); v >>= 7; if (v) t[n] |= 0x80; n++; } while (v);
    m2_strbuf_append(b, t, (size_t)n);
}

static void pb_le(m2_strbuf *b, uint64_t v, int bytes) {
    unsigned char t[8];
    for (int i = 0; i < bytes; i++) t[i] = (unsigned char)(v >> (8 * i));
    m2_strbuf_append(b, t, (size_t)bytes);
}

static void pb_bytes(m2_strbuf *b, int field, const void *s, size_t n) {
    pb_varint(b, ((uint64_t)field << 3) | 2);
    pb_varint(b, n);
    m2_strbuf_append(b, s, n);
}

static double now_wall(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Event header fields shared by every record. */
static void pb_event_head(m2_strbuf *b, double wall_time, int64_t step) {
    uint64_t bits;
    memcpy(&bits, &wall_time, 8);
    pb_varint(b, (1 << 3) | 1);
    pb_le(b, bits, 8);
    pb_varint(b, (2 << 3) | 0);
    pb_varint(b, (uint64_t)step);
}

static int write_record(m2_tb_writer *w, const unsigned char *data, size_t n, m2_err *err) {
    unsigned char head[12], tail[4];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)n >> (8 * i));
    uint32_t hc = m2_crc32c_mask(m2_crc32c(head, 8));
    uint32_t dc = m2_crc32c_mask(m2_crc32c(data, n));
    for (int i = 0; i < 4; i++) { head[8 + i] = (unsigned char)(hc >> (8 * i)); tail[i] = (unsigned char)(dc >> (8 * i)); }
    if (fwrite(head, 1, 12, w->f) != 12 || fwrite(data, 1, n, w->f) != n || fwrite(tail, 1, 4, w->f) != 4 ||
        fflush(w->f) != 0)
        return m2_errorf(err, M2_EIO, "%s: write failed: %s", w->path, strerror(errno));
    return 0;
}

int m2_tb_is_event_file(const char *name) { return strncmp(name, "events.out.tfevents.", 20) == 0; }

int m2_tb_open(m2_tb_writer *w, const char *dir, m2_err *err) {
    memset(w, 0, sizeof *w);
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *h = host; *h; h++) if (*h == '/') *h = '_';
    long t = (long)time(NULL);
    for (int k = 0; k < 1000; k++) {
        if (k == 0) snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%ld.%s", dir, t, host);
        else snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%ld.%s.%d", dir, t, host, k);
        if (!m2_path_exists(w->path)) break;
    }
    w->f = fopen(w->path, "wb");
    if (!w->f) return m2_errorf(err, M2_EIO, "%s: cannot create: %s", w->path, strerror(errno));
    m2_strbuf b = {0};
    pb_event_head(&b, now_wall(), 0);
    pb_bytes(&b, 3, "brain.Event:2", 13);
    int rc = b.oom ? m2_errorf(err, M2_ENOMEM, "out of memory") : write_record(w, (const unsigned char *)b.p, b.len, err);
    m2_strbuf_free(&b);
    if (rc != 0) { fclose(w->f); w->f = NULL; }
    return rc;
}

int m2_tb_scalars(m2_tb_writer *w, int64_t step, double wall_time, const char *const *tags, const float *values,
                  int n, m2_err *err) {
    if (!w->f) return m2_errorf(err, M2_EIO, "TensorBoard writer is closed");
    m2_strbuf summary = {0}, value = {0}, ev = {0};
    int oom = 0;
    for (int i = 0; i < n && !oom; i++) {
        m2_strbuf_reset(&value);
        pb_bytes(&value, 1, tags[i], strlen(tags[i]));
        uint32_t bits;
        memcpy(&bits, &values[i], 4);
        pb_varint(&value, (2 << 3) | 5);
        pb_le(&value, bits, 4);
        oom = value.oom;   /* kept here: the next reset clears the buffer's own flag */
        pb_bytes(&summary, 1, value.p, value.len);
    }
    pb_event_head(&ev, wall_time > 0 ? wall_time : now_wall(), step);
    pb_bytes(&ev, 5, summary.p, summary.len);
    int rc = (oom || summary.oom || ev.oom) ? m2_errorf(err, M2_ENOMEM, "out of memory")
                                            : write_record(w, (const unsigned char *)ev.p, ev.len, err);
    m2_strbuf_free(&summary); m2_strbuf_free(&value); m2_strbuf_free(&ev);
    return rc;
}

void m2_tb_close(m2_tb_writer *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
}

/* ---------------------------------------------------------------- reading back */

typedef struct pcur { const unsigned char *p, *end; } pcur;

static int rd_varint(pcur *c, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64; s += 7) {
        if (c->p >= c->end) return -1;
        unsigned char b = *c->p++;
        *v |= (uint64_t)(b & 0x7F) << s;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* Skips one field of wire type wt; -1 on a malformed buffer. */
static int rd_skip(pcur *c, int wt) {
    uint64_t v;
    switch (wt) {
    case 0: return rd_varint(c, &v);
    case 1: if (c->end - c->p < 8) return -1; c->p += 8; return 0;
    case 5: if (c->end - c->p < 4) return -1; c->p += 4; return 0;
    case 2: if (rd_varint(c, &v) || v > (uint64_t)(c->end - c->p)) return -1; c->p += v; return 0;
    }
    return -1;
}

static int parse_value(pcur c, char *tag, size_t tag_cap, float *val, int *has_val) {
    tag[0] = 0;
    *has_val = 0;
    while (c.p < c.end) {
        uint64_t key;
        if (rd_varint(&c, &key)) return -1;
        int field = (int)(key >> 3), wt = (int)(key & 7);
        if (field == 1 && wt == 2) {
            uint64_t n;
            if (rd_varint(&c, &n) || n > (uint64_t)(c.end - c.p)) return -1;
            size_t k = n < tag_cap - 1 ? (size_t)n : tag_cap - 1;
            memcpy(tag, c.p, k);
            tag[k] = 0;
            c.p += n;
        } else if (field == 2 && wt == 5) {
            if (c.end - c.p < 4) return -1;
            uint32_t bits = (uint32_t)c.p[0] | (uint32_t)c.p[1] << 8 | (uint32_t)c.p[2] << 16 | (uint32_t)c.p[3] << 24;
            memcpy(val, &bits, 4);
            *has_val = 1;
            c.p += 4;
        } else if (rd_skip(&c, wt)) {
            return -1;
        }
    }
    return 0;
}

static int parse_event(const unsigned char *data, size_t n, m2_tb_scalar_fn fn, void *ctx, char *fv, size_t fv_cap,
                       int *stop) {
    pcur c = {data, data + n};
    double wall = 0;
    int64_t step = 0;
    const unsigned char *sum = NULL;
    size_t sum_n = 0;
    while (c.p < c.end) {
        uint64_t key;
        if (rd_varint(&c, &key)) return -1;
        int field = (int)(key >> 3), wt = (int)(key & 7);
        if (field == 1 && wt == 1) {
            if (c.end - c.p < 8) return -1;
            uint64_t bits = 0;
            for (int i = 0; i < 8; i++) bits |= (uint64_t)c.p[i] << (8 * i);
            memcpy(&wall, &bits, 8);
            c.p += 8;
        } else if (field == 2 && wt == 0) {
            uint64_t v;
            if (rd_varint(&c, &v)) return -1;
            step = (int64_t)v;
        } else if ((field == 3 || field == 5) && wt == 2) {
            uint64_t len;
            if (rd_varint(&c, &len) || len > (uint64_t)(c.end - c.p)) return -1;
            if (field == 3 && fv && fv_cap) {
                size_t k = len < fv_cap - 1 ? (size_t)len : fv_cap - 1;
                memcpy(fv, c.p, k);
                fv[k] = 0;
            }
            if (field == 5) { sum = c.p; sum_n = (size_t)len; }
            c.p += len;
        } else if (rd_skip(&c, wt)) {
            return -1;
        }
    }
    if (!sum) return 0;
    pcur s = {sum, sum + sum_n};
    while (s.p < s.end) {
        uint64_t key;
        if (rd_varint(&s, &key)) return -1;
        int field = (int)(key >> 3), wt = (int)(key & 7);
        if (field == 1 && wt == 2) {
            uint64_t len;
            if (rd_varint(&s, &len) || len > (uint64_t)(s.end - s.p)) return -1;
            pcur v = {s.p, s.p + len};
            char tag[256];
            float val = 0;
            int has;
            if (parse_value(v, tag, sizeof tag, &val, &has)) return -1;
            if (has && fn && !*stop && fn(ctx, wall, step, tag, val)) *stop = 1;
            s.p += len;
        } else if (rd_skip(&s, wt)) {
            return -1;
        }
    }
    return 0;
}

int m2_tb_read(const char *path, m2_tb_scalar_fn fn, void *ctx, int *n_events, char *file_version, size_t fv_cap,
               m2_err *err) {
    if (n_events) *n_events = 0;
    if (file_version && fv_cap) file_version[0] = 0;
    char *buf;
    size_t len;
    if (m2_read_file(path, &buf, &len, err) != 0) return -1;
    const unsigned char *p = (const unsigned char *)buf;
    size_t off = 0;
    int count = 0, stop = 0;
    while (off < len && !stop) {
        if (len - off < 12) { free(buf); return m2_errorf(err, M2_EFORMAT, "%s: record %d: truncated header", path, count); }
        uint64_t n = 0;
        for (int i = 0; i < 8; i++) n |= (uint64_t)p[off + i] << (8 * i);
        uint32_t hc = (uint32_t)p[off + 8] | (uint32_t)p[off + 9] << 8 | (uint32_t)p[off + 10] << 16 | (uint32_t)p[off + 11] << 24;
        if (hc != m2_crc32c_mask(m2_crc32c(p + off, 8))) {
            free(buf);
            return m2_errorf(err, M2_EFORMAT, "%s: record %d: length CRC mismatch", path, count);
        }
        if (n > len - off - 12 || len - off - 12 - n < 4) {
            free(buf);
            return m2_errorf(err, M2_EFORMAT, "%s: record %d: truncated data", path, count);
        }
        const unsigned char *d = p + off + 12;
        uint32_t dc = (uint32_t)d[n] | (uint32_t)d[n + 1] << 8 | (uint32_t)d[n + 2] << 16 | (uint32_t)d[n + 3] << 24;
        if (dc != m2_crc32c_mask(m2_crc32c(d, (size_t)n))) {
            free(buf);
            return m2_errorf(err, M2_EFORMAT, "%s: record %d: data CRC mismatch", path, count);
        }
        if (parse_event(d, (size_t)n, fn, ctx, file_version, fv_cap, &stop) != 0) {
            free(buf);
            return m2_errorf(err, M2_EFORMAT, "%s: record %d: malformed Event protobuf", path, count);
        }
        count++;
        off += 12 + n + 4;
    }
    free(buf);
    if (n_events) *n_events = count;
    return 0;
}
