/* io/gguf + io/dtype: conversions, writer -> reader round trips of every metadata type and tensor
 * dtype, llama.cpp's vocab-only GGUFs, and corrupt files (truncation at every byte, bad magic,
 * version, counts, lengths, types, shapes, offsets) failing cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "io/io.h"
#include "tmpdir.h"

static char tmpdir[64];

static int setup(void **state) {
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "gguf");
}
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static void f16_bf16_conversions(void **state) {
    /* every finite half converts to f32 and back exactly */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00) continue;
        assert_int_equal(m2_ggml_f32_to_f16(m2_ggml_f16_to_f32((uint16_t)h)), h);
    }
    assert_true(m2_ggml_f16_to_f32(0x3c00) == 1.0f);
    assert_true(m2_ggml_f16_to_f32(0xc000) == -2.0f);
    assert_int_equal(m2_ggml_f32_to_f16(65536.f), 0x7c00);          /* overflow -> inf */
    assert_int_equal(m2_ggml_f32_to_f16(1.0f + 1.0f / 4096), 0x3c00);  /* tie rounds to even */
    assert_true(isnan(m2_ggml_f16_to_f32(m2_ggml_f32_to_f16(NAN))));
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80) continue;
        assert_int_equal(m2_ggml_f32_to_bf16(m2_ggml_bf16_to_f32((uint16_t)h)), h);
    }
    assert_int_equal(m2_ggml_f32_to_bf16(1.00390625f), 0x3f80);     /* 1 + 2^-8: tie to even */
}

static void quantize_roundtrip(void **state) {
    m2_rng r;
    m2_rng_seed(&r, 1);
    enum { N = 32 * 64 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = m2_rng_normal(&r) * (1 + i / 256);
    uint8_t q[N * 2];
    m2_err err = {0};
    uint32_t types[] = {M2_GGML_Q8_0, M2_GGML_Q4_0};
    float tol[] = {0.6f / 127, 1.01f / 8};   /* Q8_0: half a step (+ f16 scale rounding); Q4_0: the clamped +8 side */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(m2_ggml_quantize(types[k], x, q, N, &err), 0);
        assert_int_equal(m2_ggml_dequantize(types[k], q, y, N, &err), 0);
        for (int b = 0; b < N / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            for (int j = 0; j < 32; j++) assert_true(fabsf(x[b * 32 + j] - y[b * 32 + j]) <= amax * tol[k] + 1e-6f);
        }
        /* quantising the dequantised values again gives the same blocks */
        uint8_t q2[N * 2];
        assert_int_equal(m2_ggml_quantize(types[k], y, q2, N, &err), 0);
        uint64_t nb;
        m2_ggml_nbytes(types[k], N, &nb);
        assert_memory_equal(q, q2, nb);
    }
    assert_int_equal(m2_ggml_quantize(M2_GGML_Q8_0, x, q, 31, &err), -1);
    float bad[32] = {INFINITY, NAN};
    assert_int_equal(m2_ggml_quantize(M2_GGML_Q4_0, bad, q, 32, &err), 0);   /* defined, no UB */
    assert_int_equal(m2_ggml_quantize(M2_GGML_Q8_0, bad, q, 32, &err), 0);
}

/* A small file with every metadata type and one tensor per dtype. */
static void write_sample(const char *path, float *src, int n) {
    m2_err err = {0};
    m2_gguf_writer *w = m2_gguf_writer_new();
    assert_non_null(w);
    m2_gguf_set_str(w, "general.architecture", "llama");
    m2_gguf_set_u32(w, "test.u32", 4000000000u);
    m2_gguf_set_i32(w, "test.i32", -5);
    m2_gguf_set_u64(w, "test.u64", 1ull << 40);
    m2_gguf_set_f32(w, "test.f32", 0.25f);
    m2_gguf_set_bool(w, "test.bool", true);
    uint8_t u8s[3] = {1, 2, 255};
    int8_t i8s[2] = {-1, 7};
    uint16_t u16s[2] = {65535, 3};
    int16_t i16s[2] = {-300, 300};
    int32_t i32s[3] = {-1, 0, 1};
    float f32s[2] = {1.5f, -2.5f};
    uint64_t u64s[1] = {~0ull};
    int64_t i64s[1] = {INT64_MIN};
    double f64s[2] = {3.25, -1e300};
    uint8_t bools[2] = {0, 1};
    m2_gguf_set_arr(w, "arr.u8", M2_GGUF_U8, u8s, 3);
    m2_gguf_set_arr(w, "arr.i8", M2_GGUF_I8, i8s, 2);
    m2_gguf_set_arr(w, "arr.u16", M2_GGUF_U16, u16s, 2);
    m2_gguf_set_arr(w, "arr.i16", M2_GGUF_I16, i16s, 2);
    m2_gguf_set_arr(w, "arr.i32", M2_GGUF_I32, i32s, 3);
    m2_gguf_set_arr(w, "arr.f32", M2_GGUF_F32, f32s, 2);
    m2_gguf_set_arr(w, "arr.u64", M2_GGUF_U64, u64s, 1);
    m2_gguf_set_arr(w, "arr.i64", M2_GGUF_I64, i64s, 1);
    m2_gguf_set_arr(w, "arr.f64", M2_GGUF_F64, f64s, 2);
    m2_gguf_set_arr(w, "arr.bool", M2_GGUF_BOOL, bools, 2);
    m2_gguf_set_arr(w, "arr.empty", M2_GGUF_F32, NULL, 0);
    const char *strs[] = {"hello", "", "wörld", "a b"};
    m2_gguf_set_arr_str(w, "arr.str", strs, 4);
    m2_gguf_set_u32(w, "test.replaced", 1);
    m2_gguf_set_u32(w, "test.replaced", 2);
    int64_t ne[2] = {64, n / 64};
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.f32", M2_GGML_F32, 2, ne, src, &err), 0);
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.f16", M2_GGML_F16, 2, ne, src, &err), 0);
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.bf16", M2_GGML_BF16, 2, ne, src, &err), 0);
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.q8_0", M2_GGML_Q8_0, 2, ne, src, &err), 0);
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.q4_0", M2_GGML_Q4_0, 2, ne, src, &err), 0);
    int64_t ne3[3] = {3, 1, 1};
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.small", M2_GGML_F32, 3, ne3, src, &err), 0);
    /* bad additions are refused */
    int64_t bad[2] = {33, 2};
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.bad", M2_GGML_Q8_0, 2, bad, src, &err), -1);
    assert_int_equal(m2_gguf_add_tensor_f32(w, "t.f32", M2_GGML_F32, 2, ne, src, &err), -1);
    assert_int_equal(m2_gguf_writer_write(w, path, &err), 0);
    m2_gguf_writer_free(w);
}

static void writer_reader_roundtrip(void **state) {
    enum { N = 64 * 4 };
    float src[N], out[N];
    m2_rng r;
    m2_rng_seed(&r, 3);
    for (int i = 0; i < N; i++) src[i] = m2_rng_normal(&r);
    char path[128];
    snprintf(path, sizeof path, "%s/sample.gguf", tmpdir);
    write_sample(path, src, N);
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open(path, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->version, 3);
    assert_int_equal(g->alignment, 32);
    assert_int_equal(g->data_offset % 32, 0);
    assert_string_equal(m2_gguf_get_str(g, "general.architecture", &err), "llama");
    uint32_t u32; uint64_t u64; int64_t i64; float f; bool b;
    assert_int_equal(m2_gguf_get_u32(g, "test.u32", &u32, &err), 0);
    assert_int_equal(u32, 4000000000u);
    assert_int_equal(m2_gguf_get_i64(g, "test.i32", &i64, &err), 0);
    assert_int_equal(i64, -5);
    assert_int_equal(m2_gguf_get_u32(g, "test.i32", &u32, &err), -1);   /* negative */
    assert_int_equal(m2_gguf_get_u64(g, "test.u64", &u64, &err), 0);
    assert_true(u64 == 1ull << 40);
    assert_int_equal(m2_gguf_get_u32(g, "test.u64", &u32, &err), -1);   /* too large */
    assert_int_equal(m2_gguf_get_f32(g, "test.f32", &f, &err), 0);
    assert_true(f == 0.25f);
    assert_int_equal(m2_gguf_get_bool(g, "test.bool", &b, &err), 0);
    assert_true(b);
    assert_int_equal(m2_gguf_u32_or(g, "test.replaced", 0), 2);
    assert_int_equal(m2_gguf_u32_or(g, "missing", 77), 77);
    assert_int_equal(m2_gguf_get_u32(g, "missing", &u32, &err), -1);
    assert_int_equal(err.code, M2_ENOTFOUND);
    assert_non_null(strstr(err.msg, "missing"));
    assert_null(m2_gguf_get_str(g, "test.u32", &err));
    const m2_gguf_kv *kv = m2_gguf_get_arr(g, "arr.str", M2_GGUF_STRING, &err);
    assert_non_null(kv);
    assert_int_equal(kv->n, 4);
    assert_string_equal(kv->strs[0], "hello");
    assert_string_equal(kv->strs[1], "");
    assert_string_equal(kv->strs[2], "wörld");
    assert_int_equal(kv->str_lens[2], 6);
    kv = m2_gguf_get_arr(g, "arr.f64", M2_GGUF_F64, &err);
    assert_true(((double *)kv->arr)[1] == -1e300);
    kv = m2_gguf_get_arr(g, "arr.i16", M2_GGUF_I16, &err);
    assert_int_equal(((int16_t *)kv->arr)[0], -300);
    kv = m2_gguf_get_arr(g, "arr.i64", M2_GGUF_I64, &err);
    assert_true(((int64_t *)kv->arr)[0] == INT64_MIN);
    assert_int_equal(m2_gguf_get_arr(g, "arr.empty", M2_GGUF_F32, &err)->n, 0);
    assert_null(m2_gguf_get_arr(g, "arr.f32", M2_GGUF_I32, &err));   /* wrong element type */
    assert_int_equal(g->n_tensors, 6);
    const char *names[] = {"t.f32", "t.f16", "t.bf16", "t.q8_0", "t.q4_0"};
    float tol[] = {0, 1e-3f, 1e-2f, 0.03f, 0.6f};
    for (int k = 0; k < 5; k++) {
        const m2_gguf_tensor *t = m2_gguf_find_tensor(g, names[k]);
        assert_non_null(t);
        assert_int_equal(t->n_dims, 2);
        assert_int_equal(t->ne[0], 64);
        assert_int_equal(t->ne[1], N / 64);
        assert_int_equal(t->n_elems, N);
        assert_int_equal(((const uint8_t *)t->data - g->base) % 32, 0);
        assert_int_equal(m2_gguf_tensor_to_f32(g, t, out, &err), 0);
        for (int i = 0; i < N; i++) assert_true(fabsf(out[i] - src[i]) <= tol[k] * fmaxf(1.f, fabsf(src[i])));
    }
    const m2_gguf_tensor *t = m2_gguf_find_tensor(g, "t.small");
    assert_int_equal(t->n_dims, 3);
    assert_int_equal(t->ne[0], 3);
    assert_null(m2_gguf_find_tensor(g, "t.bad"));

    /* copying every KV and tensor into a new writer reproduces the same file */
    m2_gguf_writer *w = m2_gguf_writer_new();
    for (uint64_t i = 0; i < g->n_kv; i++) assert_int_equal(m2_gguf_set_kv(w, &g->kv[i]), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *ti = &g->tensors[i];
        assert_int_equal(m2_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, ti->data, ti->n_bytes, &err), 0);
    }
    char path2[160];
    snprintf(path2, sizeof path2, "%s/copy.gguf", tmpdir);
    assert_int_equal(m2_gguf_writer_write(w, path2, &err), 0);
    m2_gguf_writer_free(w);
    char *a, *c;
    size_t la, lc;
    assert_int_equal(m2_read_file(path, &a, &la, &err), 0);
    assert_int_equal(m2_read_file(path2, &c, &lc, &err), 0);
    assert_int_equal(la, lc);
    assert_memory_equal(a, c, la);
    free(a); free(c);
    m2_gguf_close(g);
}

static void custom_alignment(void **state) {
    float src[64];
    for (int i = 0; i < 64; i++) src[i] = (float)i;
    m2_err err = {0};
    m2_gguf_writer *w = m2_gguf_writer_new();
    m2_gguf_set_u32(w, "general.alignment", 64);
    int64_t ne[1] = {3};
    assert_int_equal(m2_gguf_add_tensor_f32(w, "a", M2_GGML_F32, 1, ne, src, &err), 0);
    ne[0] = 64;
    assert_int_equal(m2_gguf_add_tensor_f32(w, "b", M2_GGML_F32, 1, ne, src, &err), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/al.gguf", tmpdir);
    assert_int_equal(m2_gguf_writer_write(w, path, &err), 0);
    m2_gguf_writer_free(w);
    m2_gguf *g = m2_gguf_open(path, &err);
    assert_non_null(g);
    assert_int_equal(g->alignment, 64);
    assert_int_equal(g->data_offset % 64, 0);
    assert_int_equal(m2_gguf_find_tensor(g, "b")->offset, 64);
    assert_true(((const float *)m2_gguf_find_tensor(g, "b")->data)[5] == 5.f);
    m2_gguf_close(g);
}

/* llama.cpp's vocab-only files (no tensors) parse, with their tokenizer metadata. */
static void vocab_ggufs(void **state) {
    const char *dir = m2_shared_data_dir();
    if (!dir) skip();
    struct { const char *file, *model; uint64_t n_min; } cases[] = {
        {"ggml-vocab-gpt-2.gguf", "gpt2", 50000}, {"ggml-vocab-llama-spm.gguf", "llama", 32000}};
    for (int k = 0; k < 2; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tokenizers/vectors/%s", dir, cases[k].file);
        if (!m2_path_exists(path)) skip();
        m2_err err = {0};
        m2_gguf *g = m2_gguf_open(path, &err);
        if (!g) fail_msg("%s", err.msg);
        assert_int_equal(g->version, 3);
        assert_int_equal(g->n_tensors, 0);
        assert_string_equal(m2_gguf_get_str(g, "tokenizer.ggml.model", &err), cases[k].model);
        const m2_gguf_kv *tok = m2_gguf_get_arr(g, "tokenizer.ggml.tokens", M2_GGUF_STRING, &err);
        assert_non_null(tok);
        assert_true(tok->n >= cases[k].n_min);
        if (k == 0) {
            const m2_gguf_kv *merges = m2_gguf_get_arr(g, "tokenizer.ggml.merges", M2_GGUF_STRING, &err);
            assert_non_null(merges);
            assert_true(merges->n > 40000);
            assert_non_null(strchr(merges->strs[0], ' '));
            assert_string_equal(tok->strs[0], "!");
        } else {
            const m2_gguf_kv *sc = m2_gguf_get_arr(g, "tokenizer.ggml.scores", M2_GGUF_F32, &err);
            const m2_gguf_kv *tt = m2_gguf_get_arr(g, "tokenizer.ggml.token_type", M2_GGUF_I32, &err);
            assert_non_null(sc);
            assert_non_null(tt);
            assert_int_equal(sc->n, tok->n);
            assert_int_equal(tt->n, tok->n);
            assert_string_equal(tok->strs[1], "<s>");
            assert_int_equal(((const int32_t *)tt->arr)[1], 3);   /* control */
            uint32_t bos;
            assert_int_equal(m2_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, &err), 0);
            assert_int_equal(bos, 1);
        }
        m2_gguf_close(g);
    }
}

/* ---- corrupt files ---- */

static void expect_fail(const uint8_t *buf, size_t len, const char *needle) {
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open_memory(buf, len, "bad.gguf", &err);
    if (g) fail_msg("corrupt file accepted (expected '%s')", needle);
    assert_int_not_equal(err.code, 0);
    assert_non_null(strstr(err.msg, "bad.gguf"));
    if (needle && !strstr(err.msg, needle)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void truncation_at_every_byte(void **state) {
    float src[64 * 2];
    for (int i = 0; i < 128; i++) src[i] = (float)i / 7;
    char path[128];
    snprintf(path, sizeof path, "%s/t.gguf", tmpdir);
    m2_err err = {0};
    m2_gguf_writer *w = m2_gguf_writer_new();
    m2_gguf_set_str(w, "general.architecture", "qwen2");
    const char *strs[] = {"a", "bc"};
    m2_gguf_set_arr_str(w, "tok", strs, 2);
    int64_t ne[2] = {64, 2};
    m2_gguf_add_tensor_f32(w, "w", M2_GGML_Q8_0, 2, ne, src, &err);
    m2_gguf_add_tensor_f32(w, "v", M2_GGML_F16, 2, ne, src, &err);
    assert_int_equal(m2_gguf_writer_write(w, path, &err), 0);
    m2_gguf_writer_free(w);
    char *data;
    size_t len;
    assert_int_equal(m2_read_file(path, &data, &len, &err), 0);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n + 1);     /* exact-size copy so ASan sees any overread */
        memcpy(copy, data, n);
        m2_gguf *g = m2_gguf_open_memory(copy, n, "bad.gguf", &err);
        /* the end may be trimmed only inside the final padding */
        if (g) {
            assert_true(n >= len - 32);
            m2_gguf_close(g);
        }
        free(copy);
    }
    m2_gguf *g = m2_gguf_open_memory(data, len, "ok.gguf", &err);
    assert_non_null(g);
    m2_gguf_close(g);
    /* flipping each byte never crashes (many flips are benign: data bytes) */
    for (size_t i = 0; i < len; i++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, data, len);
        copy[i] ^= 0xff;
        g = m2_gguf_open_memory(copy, len, "bad.gguf", &err);
        m2_gguf_close(g);
        free(copy);
    }
    free(data);
}

/* Little builder for hand-made headers. */
typedef struct { uint8_t b[4096]; size_t n; } hb;
static void h32(hb *h, uint32_t v) { memcpy(h->b + h->n, &v, 4); h->n += 4; }
static void h64(hb *h, uint64_t v) { memcpy(h->b + h->n, &v, 8); h->n += 8; }
static void hstr(hb *h, const char *s) { h64(h, strlen(s)); memcpy(h->b + h->n, s, strlen(s)); h->n += strlen(s); }
static void hhead(hb *h, uint32_t version, uint64_t nt, uint64_t nkv) {
    h->n = 0; memcpy(h->b, "GGUF", 4); h->n = 4; h32(h, version); h64(h, nt); h64(h, nkv);
}
/* header + one tensor info; padded data of `data` bytes follows */
static void htensor(hb *h, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    hstr(h, name); h32(h, nd);
    for (uint32_t i = 0; i < nd; i++) h64(h, ne[i]);
    h32(h, type); h64(h, off);
}
static void hpad(hb *h, size_t data) { while (h->n % 32) h->b[h->n++] = 0; memset(h->b + h->n, 0, data); h->n += data; }

static void corrupt_headers(void **state) {
    hb h;
    hhead(&h, 3, 0, 0);
    expect_fail((const uint8_t *)"GGUX\3\0\0\0", 8, "magic");
    memcpy(h.b, "GGML", 4);
    expect_fail(h.b, h.n, "magic");
    hhead(&h, 1, 0, 0);
    expect_fail(h.b, h.n, "version 1");
    hhead(&h, 4, 0, 0);
    expect_fail(h.b, h.n, "version 4");
    hhead(&h, 3, 0, 1ull << 60);
    expect_fail(h.b, h.n, "metadata_kv_count");
    hhead(&h, 3, ~0ull, 0);
    expect_fail(h.b, h.n, "tensor_count");
    /* oversized key length */
    hhead(&h, 3, 0, 1); h64(&h, ~0ull); h32(&h, 4); h32(&h, 0);
    expect_fail(h.b, h.n, "length");
    /* unknown value type */
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 13); h32(&h, 0);
    expect_fail(h.b, h.n, "unknown value type");
    /* bool that is neither 0 nor 1 */
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 7); h.b[h.n++] = 2;
    expect_fail(h.b, h.n, "bool");
    /* array with a huge count */
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 9); h32(&h, 6); h64(&h, 1ull << 62);
    expect_fail(h.b, h.n, "array");
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 9); h32(&h, 8); h64(&h, 1ull << 62);
    expect_fail(h.b, h.n, "strings");
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 9); h32(&h, 8); h64(&h, 1); h64(&h, 100);
    expect_fail(h.b, h.n, "length");
    /* array of unknown element type */
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 9); h32(&h, 99); h64(&h, 1);
    expect_fail(h.b, h.n, "element type");
    /* deeply nested arrays */
    hhead(&h, 3, 0, 1); hstr(&h, "k"); h32(&h, 9);
    for (int i = 0; i < 20; i++) { h32(&h, 9); h64(&h, 1); }
    h32(&h, 0); h64(&h, 0);
    expect_fail(h.b, h.n, "nested");
    /* duplicate key, empty key */
    hhead(&h, 3, 0, 2); hstr(&h, "k"); h32(&h, 4); h32(&h, 1); hstr(&h, "k"); h32(&h, 4); h32(&h, 2);
    expect_fail(h.b, h.n, "duplicate");
    hhead(&h, 3, 0, 1); hstr(&h, ""); h32(&h, 4); h32(&h, 1);
    expect_fail(h.b, h.n, "empty key");
    /* bad alignment */
    hhead(&h, 3, 0, 1); hstr(&h, "general.alignment"); h32(&h, 4); h32(&h, 24);
    expect_fail(h.b, h.n, "alignment");
    hhead(&h, 3, 0, 1); hstr(&h, "general.alignment"); h32(&h, 4); h32(&h, 0);
    expect_fail(h.b, h.n, "alignment");
    hhead(&h, 3, 0, 1); hstr(&h, "general.alignment"); h32(&h, 5); h32(&h, 32);
    expect_fail(h.b, h.n, "alignment");

    /* tensors: the good case first, then one defect each */
    uint64_t ne[5] = {32, 2, 1, 1, 1};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 0, 0); hpad(&h, 256);
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open_memory(h.b, h.n, "good.gguf", &err);
    if (!g) fail_msg("%s", err.msg);
    m2_gguf_close(g);
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 0, 0); hpad(&h, 255);
    expect_fail(h.b, h.n, "beyond");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 0, 32); hpad(&h, 256);
    expect_fail(h.b, h.n, "beyond");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 0, 16); hpad(&h, 512);
    expect_fail(h.b, h.n, "multiple of the alignment");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 0, ~0ull & ~31ull); hpad(&h, 256);
    expect_fail(h.b, h.n, "beyond");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, ne, 99, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "unknown ggml type 99");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 5, ne, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "n_dims");
    hhead(&h, 3, 1, 0); htensor(&h, "w", 0, ne, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "n_dims");
    uint64_t zero[2] = {32, 0};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, zero, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "dimension 1");
    uint64_t huge[4] = {1ull << 32, 1ull << 32, 1, 1};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, huge, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "overflow");
    uint64_t neg[1] = {~0ull};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 1, neg, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "impossible");
    uint64_t big[2] = {1ull << 40, 1ull << 22};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 2, big, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "overflow");
    uint64_t odd[1] = {33};
    hhead(&h, 3, 1, 0); htensor(&h, "w", 1, odd, 8, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "block size");
    hhead(&h, 3, 2, 0); htensor(&h, "w", 2, ne, 0, 0); htensor(&h, "w", 2, ne, 0, 0); hpad(&h, 512);
    expect_fail(h.b, h.n, "duplicate tensor");
    char longname[80];
    memset(longname, 'x', 79); longname[79] = 0;
    hhead(&h, 3, 1, 0); htensor(&h, longname, 2, ne, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "name");
    hhead(&h, 3, 1, 0); htensor(&h, "", 2, ne, 0, 0); hpad(&h, 256);
    expect_fail(h.b, h.n, "name");
    /* conversion of a type we only know the layout of fails with a message, not a crash */
    uint64_t k256[1] = {256};
    hhead(&h, 3, 1, 0); htensor(&h, "k", 1, k256, 23, 0); hpad(&h, 256);
    g = m2_gguf_open_memory(h.b, h.n, "iq4xs.gguf", &err);
    assert_non_null(g);
    float out[256];
    assert_int_equal(m2_gguf_tensor_to_f32(g, &g->tensors[0], out, &err), -1);
    assert_non_null(strstr(err.msg, "IQ4_XS"));
    m2_gguf_close(g);
    /* missing file, empty file */
    assert_null(m2_gguf_open("/nonexistent/x.gguf", &err));
    assert_non_null(strstr(err.msg, "/nonexistent/x.gguf"));
    expect_fail(h.b, 0, "magic");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_bf16_conversions),
        cmocka_unit_test(quantize_roundtrip),
        cmocka_unit_test(writer_reader_roundtrip),
        cmocka_unit_test(custom_alignment),
        cmocka_unit_test(vocab_ggufs),
        cmocka_unit_test(truncation_at_every_byte),
        cmocka_unit_test(corrupt_headers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
