/* GGUF block types (kernels/quant.c, kernels/qdot.c, io/model_load.c):
 * - every block type's dequantisation against an independent numpy reference
 *   (tests/ref/make_quant_fixtures.py -> tests/fixtures/quant_blocks.bin), the blocks written into
 *   a GGUF by the project's writer and read back through the reader;
 * - the quantised products against the f32 product of the dequantised weights, within the bound
 *   the activation rounding implies (qdot.h), and every SIMD path bit-equal to the portable one;
 * - mixed-type files as llama-quantize writes them (Q4_0 with a Q6_K output / tied embedding, a
 *   Q4_K_M-like mix) load with each matrix kept as stored, mapped from the file;
 * - a split GGUF (llama-gguf-split's layout) loads from its first part to the same model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
#include "tmpdir.h"

static char tmpdir[64];
static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "qnt"); }
static int teardown(void **state) { return m2_remove_tree(tmpdir) == 0 ? 0 : -1; }

static const m2_dtype block_types[] = {M2_DT_Q4_0, M2_DT_Q4_1, M2_DT_Q5_0, M2_DT_Q5_1, M2_DT_Q8_0, M2_DT_Q2_K,
                                       M2_DT_Q3_K, M2_DT_Q4_K, M2_DT_Q5_K, M2_DT_Q6_K, M2_DT_IQ4_NL};
enum { N_BLOCK_TYPES = sizeof block_types / sizeof block_types[0] };

/* The layouts the io layer knows (ggml's type table) and the kernels' agree for every type. */
static void layouts_agree(void **st) {
    for (int i = 0; i < N_BLOCK_TYPES; i++) {
        const m2_dtype_info *d = m2_dtype_info_of(block_types[i]);
        int be, bb;
        assert_true(m2_ggml_type_info(d->ggml_id, &be, &bb, NULL));
        assert_int_equal(be, d->block);
        assert_int_equal(bb, d->bytes);
        assert_true(m2_ggml_readable(d->ggml_id));
        m2_dtype back;
        assert_int_equal(m2_dtype_from_ggml_id(d->ggml_id, &back), 0);
        assert_int_equal(back, block_types[i]);
    }
    /* ggml's sizes (ggml-common.h static asserts) */
    assert_int_equal(m2_dtype_bytes(M2_DT_Q2_K, 256), 84);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q3_K, 256), 110);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q4_K, 256), 144);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q5_K, 256), 176);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q6_K, 256), 210);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q5_1, 32), 24);
    assert_int_equal(m2_dtype_bytes(M2_DT_Q4_K, 255), 0);
    m2_dtype d;
    assert_int_equal(m2_dtype_parse("IQ4_NL", &d), 0);
    assert_int_equal(d, M2_DT_IQ4_NL);
}

static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Every type of the fixture: a GGUF with the blocks as a [block, n / block] tensor, written by the
 * project's writer, read back, converted to f32, equal to numpy's values (within 2 ulp-ish: the
 * compiler may fuse a multiply-add numpy does in two roundings). */
static void dequant_reference(void **st) {
    char path[300];
    snprintf(path, sizeof path, "%s/tests/fixtures/quant_blocks.bin", M2_SOURCE_DIR);
    char *buf;
    size_t len;
    m2_err err = {0};
    if (m2_read_file(path, &buf, &len, &err)) fail_msg("%s", err.msg);
    const unsigned char *p = (const unsigned char *)buf;
    assert_memory_equal(p, "M2QB", 4);
    uint32_t n_types = rd32(p + 8);
    assert_int_equal(n_types, N_BLOCK_TYPES);
    size_t off = 12;
    int seen[M2_DT_COUNT] = {0};
    for (uint32_t k = 0; k < n_types; k++) {
        uint32_t gid = rd32(p + off), nv = rd32(p + off + 4), nb = rd32(p + off + 8);
        const unsigned char *raw = p + off + 12;
        float *want = malloc(nv * sizeof(float)), *got = malloc(nv * sizeof(float));
        memcpy(want, raw + nb, nv * sizeof(float));
        off += 12 + nb + (size_t)nv * 4;
        m2_dtype dt;
        assert_int_equal(m2_dtype_from_ggml_id(gid, &dt), 0);
        seen[dt] = 1;
        int blk = m2_dtype_info_of(dt)->block;
        m2_gguf_writer *w = m2_gguf_writer_new();
        int64_t ne[2] = {blk, nv / blk};
        if (m2_gguf_add_tensor(w, "blocks", gid, 2, ne, raw, nb, &err)) fail_msg("%s", err.msg);
        char gp[300];
        snprintf(gp, sizeof gp, "%s/%s.gguf", tmpdir, m2_dtype_name(dt));
        if (m2_gguf_writer_write(w, gp, &err)) fail_msg("%s", err.msg);
        m2_gguf_writer_free(w);
        m2_gguf *g = m2_gguf_open(gp, &err);
        if (!g) fail_msg("%s", err.msg);
        const m2_gguf_tensor *t = m2_gguf_find_tensor(g, "blocks");
        assert_non_null(t);
        assert_int_equal(t->type, gid);
        assert_int_equal(t->n_bytes, nb);
        if (m2_gguf_tensor_to_f32(g, t, got, &err)) fail_msg("%s", err.msg);
        for (uint32_t i = 0; i < nv; i++)
            if (!(fabsf(got[i] - want[i]) <= 2.5e-7f * fabsf(want[i]) + 1e-9f))
                fail_msg("%s value %u: got %.9g, numpy %.9g", m2_dtype_name(dt), i, got[i], want[i]);
        /* the kernels' entry point gives the same values */
        m2_dequantize(dt, t->data, want, nv);
        assert_memory_equal(want, got, nv * sizeof(float));
        m2_gguf_close(g);
        free(want); free(got);
    }
    for (int i = 0; i < N_BLOCK_TYPES; i++) assert_true(seen[block_types[i]]);
    free(buf);
}

/* Offsets of the f16 scale fields of each block type (random bytes elsewhere are valid quants). */
static void f16_fields(m2_dtype t, int off[2]) {
    off[0] = 0; off[1] = -1;
    switch (t) {
    case M2_DT_Q4_1: case M2_DT_Q5_1: case M2_DT_Q4_K: case M2_DT_Q5_K: off[1] = 2; break;
    case M2_DT_Q2_K: off[0] = 80; off[1] = 82; break;
    case M2_DT_Q3_K: off[0] = 108; break;
    case M2_DT_Q6_K: off[0] = 208; break;
    default: break;
    }
}

/* n values of random blocks of type t: random quant bytes, scales in +-[lo, 2 lo]. */
static void *rand_blocks(m2_dtype t, size_t n, float lo, m2_rng *r) {
    const m2_dtype_info *d = m2_dtype_info_of(t);
    size_t nb = n / (size_t)d->block, bytes = nb * (size_t)d->bytes;
    unsigned char *b = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) b[i] = (unsigned char)(m2_rng_u64(r) >> 24);
    int off[2];
    f16_fields(t, off);
    for (size_t k = 0; k < nb; k++)
        for (int f = 0; f < 2; f++) {
            if (off[f] < 0) continue;
            float v = lo * (1.0f + (float)m2_rng_uniform_d(r)) * (m2_rng_u64(r) & 1 ? -1.f : 1.f);
            uint16_t h = m2_f32_to_f16(v);
            memcpy(b + k * (size_t)d->bytes + off[f], &h, 2);
        }
    return b;
}

static float *rand_floats(size_t n, m2_rng *r) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)m2_rng_normal(r);
    return x;
}

/* Each type: m2_qmatmul (N = 3 rows, with bias) against the f32 product of the dequantised
 * weights. Bound per output: sum_i |w_i| d(i) / 2 (activation rounding, d = the block's
 * max|x| / 127) + 1e-5 sum_i |w_i x_i| (f32 sums). */
static void qdot_vs_f32(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 7);
    enum { OC = 40, C = 512, N = 3 };
    m2_pool *pool = m2_pool_create(2, NULL);
    for (int k = 0; k < N_BLOCK_TYPES; k++) {
        m2_dtype t = block_types[k];
        void *wq = rand_blocks(t, (size_t)OC * C, 0.01f, &r);
        float *wf = malloc(sizeof(float) * OC * C), *x = rand_floats((size_t)N * C, &r), bias[OC], out[N * OC];
        for (int o = 0; o < OC; o++) bias[o] = 0.1f * (float)o;
        m2_dequantize(t, wq, wf, (size_t)OC * C);
        m2_wref w = {t, wq, OC, C};
        void *scr = malloc(m2_qmatmul_scratch_bytes(w, N));
        m2_qmatmul(out, OC, x, w, bias, N, 0, scr, M2_QDOT_AUTO, pool);
        int blk = m2_dtype_info_of(t)->block;
        double worst = 0;
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) {
                double ref = bias[o], bound = 0, mag = 0;
                for (int b0 = 0; b0 < C; b0 += blk) {
                    float amax = 0;
                    for (int i = b0; i < b0 + blk; i++) amax = fmaxf(amax, fabsf(x[n * C + i]));
                    for (int i = b0; i < b0 + blk; i++) {
                        double wv = wf[(size_t)o * C + i];
                        ref += wv * x[n * C + i];
                        bound += fabs(wv) * amax / 127.0 / 2.0;
                        mag += fabs(wv * x[n * C + i]);
                    }
                }
                double e = fabs(out[n * OC + o] - ref), lim = bound + 1e-5 * mag + 1e-6;
                if (e > lim) fail_msg("%s: row %d col %d: %.6g vs f32 %.6g (error %.3g > bound %.3g)", m2_dtype_name(t), n, o,
                                      out[n * OC + o], ref, e, lim);
                if (e / lim > worst) worst = e / lim;
            }
        /* accumulate mode adds to what is there */
        float out2[N * OC];
        for (int i = 0; i < N * OC; i++) out2[i] = 1.0f;
        m2_qmatmul(out2, OC, x, w, bias, N, 1, scr, M2_QDOT_AUTO, pool);
        for (int i = 0; i < N * OC; i++) assert_true(out2[i] == 1.0f + out[i]);
        printf("  %-6s product within %.0f%% of its bound (path %s)\n", m2_dtype_name(t), 100 * worst, m2_qdot_path_name(m2_qdot_best()));
        free(wq); free(wf); free(x); free(scr);
    }
    m2_pool_destroy(pool);
}

/* m2_qmatmul_many (q, k, v in one call) gives each item m2_qmatmul's bits: items of both
 * activation formats (Q4_0, Q6_K, Q4_K), with and without bias, accumulating or not, 2 threads. */
static void qmatmul_many_matches(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 19);
    enum { C = 512, N = 3 };
    m2_dtype ts[3] = {M2_DT_Q4_0, M2_DT_Q6_K, M2_DT_Q4_K};
    int rows[3] = {40, 24, 33};
    m2_pool *pool = m2_pool_create(2, NULL);
    float *x = rand_floats((size_t)N * C, &r), bias[40];
    for (int o = 0; o < 40; o++) bias[o] = 0.01f * (float)o;
    m2_qmm_item it[3];
    void *wq[3];
    float *one[3], *many[3];
    for (int i = 0; i < 3; i++) {
        wq[i] = rand_blocks(ts[i], (size_t)rows[i] * C, 0.01f, &r);
        one[i] = malloc(sizeof(float) * N * rows[i]);
        many[i] = malloc(sizeof(float) * N * rows[i]);
        for (int k = 0; k < N * rows[i]; k++) one[i][k] = many[i][k] = (float)k;
        it[i] = (m2_qmm_item){.out = many[i], .ldo = rows[i], .w = {ts[i], wq[i], rows[i], C}, .bias = i == 1 ? NULL : bias, .acc = i == 2};
    }
    void *scr = malloc(m2_qmatmul_many_scratch_bytes(it, 3, N) + m2_qmatmul_scratch_bytes(it[1].w, N));
    m2_qmatmul_many(it, 3, x, N, scr, M2_QDOT_AUTO, pool);
    for (int i = 0; i < 3; i++) {
        m2_qmatmul(one[i], rows[i], x, it[i].w, it[i].bias, N, it[i].acc, scr, M2_QDOT_AUTO, NULL);
        if (memcmp(one[i], many[i], sizeof(float) * N * rows[i])) fail_msg("item %d (%s): differs from its own m2_qmatmul", i, m2_dtype_name(ts[i]));
        free(wq[i]); free(one[i]); free(many[i]);
    }
    free(scr); free(x);
    m2_pool_destroy(pool);
}

/* Prompt-sized products (qgemm.h), every type: the kernel gives the portable reference's bits
 * (row and activation counts that leave partial tiles: 21 rows, 19 and 40 activation rows), 1 and
 * 2 threads the same bits, and the reference stays within the activation-rounding bound of the f32
 * product of the dequantised weights (blocks of 32); bias and accumulate mode as m2_qmatmul. */
static void qgemm_matches(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 17);
    enum { OC = 21, C = 512, NMAX = 40 };
    int ns[] = {19, NMAX};
    m2_pool *pool = m2_pool_create(2, NULL);
    for (int k = 0; k < N_BLOCK_TYPES; k++) {
        m2_dtype t = block_types[k];
        void *wq = rand_blocks(t, (size_t)OC * C, 0.01f, &r);
        float *wf = malloc(sizeof(float) * OC * C), *x = rand_floats((size_t)NMAX * C, &r), bias[OC];
        for (int o = 0; o < OC; o++) bias[o] = 0.05f * (float)o;
        m2_dequantize(t, wq, wf, (size_t)OC * C);
        m2_wref w = {t, wq, OC, C};
        void *scr = malloc(m2_qgemm_scratch_bytes(w, NMAX, 2));
        float *ref = malloc(sizeof(float) * NMAX * OC), *got = malloc(sizeof(float) * NMAX * OC), *one = malloc(sizeof(float) * NMAX * OC);
        double worst = 0;
        for (int ni = 0; ni < 2; ni++) {
            int N = ns[ni];
            m2_qgemm(ref, OC, x, w, bias, N, 0, scr, M2_QDOT_PORTABLE, pool);
            m2_qgemm(got, OC, x, w, bias, N, 0, scr, M2_QDOT_AUTO, pool);
            m2_qgemm(one, OC, x, w, bias, N, 0, scr, M2_QDOT_AUTO, NULL);
            for (int i = 0; i < N * OC; i++) {
                if (memcmp(&got[i], &ref[i], sizeof(float)))
                    fail_msg("%s N %d out %d: kernel %.9g != portable %.9g", m2_dtype_name(t), N, i, got[i], ref[i]);
                if (memcmp(&one[i], &got[i], sizeof(float))) fail_msg("%s N %d out %d: 1 thread != 2 threads", m2_dtype_name(t), N, i);
            }
            for (int n = 0; n < N; n++)
                for (int o = 0; o < OC; o++) {
                    double f = bias[o], bound = 0, mag = 0;
                    for (int b0 = 0; b0 < C; b0 += 32) {
                        float amax = 0;
                        for (int i = b0; i < b0 + 32; i++) amax = fmaxf(amax, fabsf(x[n * C + i]));
                        for (int i = b0; i < b0 + 32; i++) {
                            double wv = wf[(size_t)o * C + i];
                            f += wv * x[n * C + i];
                            bound += fabs(wv) * amax / 127.0 / 2.0;
                            mag += fabs(wv * x[n * C + i]);
                        }
                    }
                    double e = fabs(ref[n * OC + o] - f), lim = bound + 1e-5 * mag + 1e-6;
                    if (e > lim) fail_msg("%s: row %d col %d: %.6g vs f32 %.6g (error %.3g > bound %.3g)", m2_dtype_name(t), n, o, ref[n * OC + o], f, e, lim);
                    if (e / lim > worst) worst = e / lim;
                }
        }
        for (int i = 0; i < NMAX * OC; i++) one[i] = 1.0f;
        m2_qgemm(one, OC, x, w, bias, NMAX, 1, scr, M2_QDOT_AUTO, pool);
        for (int i = 0; i < NMAX * OC; i++) assert_true(one[i] == 1.0f + got[i]);
        printf("  %-6s within %.0f%% of its bound; kernel %s\n", m2_dtype_name(t), 100 * worst, m2_qgemm_fast() ? "compared bit for bit" : "not on this CPU");
        free(wq); free(wf); free(x); free(scr); free(ref); free(got); free(one);
    }
    m2_pool_destroy(pool);
}

/* Every SIMD path this CPU has gives the portable path's bits, for every type, also for extreme
 * quants (-128 in Q8_0, all-ones bytes) and rows of several blocks. */
static void simd_equals_portable(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 11);
    enum { C = 1024 };
    m2_qdot_path paths[] = {M2_QDOT_AVX2, M2_QDOT_AVX512};
    int ran = 0;
    for (int k = 0; k < N_BLOCK_TYPES; k++) {
        m2_dtype t = block_types[k];
        for (int rep = 0; rep < 3; rep++) {
            unsigned char *wq = rand_blocks(t, C, 0.02f, &r);
            if (rep == 2) {   /* saturate every quant byte; scales kept */
                size_t bytes = m2_dtype_bytes(t, C);
                int off[2];
                f16_fields(t, off);
                int bb = m2_dtype_info_of(t)->bytes;
                for (size_t i = 0; i < bytes; i++) {
                    int o = (int)(i % (size_t)bb);
                    int is_scale = (o == off[0] || o == off[0] + 1 || (off[1] >= 0 && (o == off[1] || o == off[1] + 1)));
                    if (!is_scale) wq[i] = t == M2_DT_Q8_0 ? 0x80 : 0xff;
                }
            }
            float *x = rand_floats(C, &r);
            if (rep == 2) for (int i = 0; i < C; i++) x[i] = i % 2 ? 3.0f : -3.0f;
            void *qa = malloc(m2_qdot_act_bytes(t, C));
            m2_qdot_quantize_act(t, x, qa, C, M2_QDOT_PORTABLE);
            float ref = m2_qdot_row(t, wq, qa, C, M2_QDOT_PORTABLE);
            for (int p = 0; p < 2; p++) {
                if (!m2_qdot_path_available(paths[p])) continue;
                float got = m2_qdot_row(t, wq, qa, C, paths[p]);
                if (memcmp(&got, &ref, sizeof got))
                    fail_msg("%s rep %d: %s %.9g != portable %.9g", m2_dtype_name(t), rep, m2_qdot_path_name(paths[p]), got, ref);
                ran++;
            }
            free(wq); free(x); free(qa);
        }
    }
    for (int p = 0; p < 2; p++)
        printf("  %s: %s\n", m2_qdot_path_name(paths[p]), m2_qdot_path_available(paths[p]) ? "compared" : "not on this CPU (not run)");
    (void)ran;
}

/* The activation rounding gives the same bytes on every path: random rows, exact ties (x / d =
 * k + 1/2 rounds to even), NaN (-> 0, ignored by the max), infinities, subnormals and zeros. */
static void act_simd_equals_portable(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 13);
    enum { C = 512 };
    m2_qdot_path paths[] = {M2_QDOT_AVX2, M2_QDOT_AVX512};
    m2_dtype ts[] = {M2_DT_Q8_0, M2_DT_Q4_K};
    for (int rep = 0; rep < 5; rep++) {
        float *x = rand_floats(C, &r);
        if (rep == 1)   /* amax 127 -> d = 1: halves are ties */
            for (int i = 0; i < C; i++) x[i] = i % 32 == 0 ? 127.0f : (float)(i % 17) - 8.5f;
        if (rep == 2) { x[3] = NAN; x[40] = -NAN; x[300] = NAN; }
        if (rep == 3) { x[5] = INFINITY; x[290] = -INFINITY; }
        if (rep == 4)
            for (int i = 0; i < C; i++) x[i] = i < 64 ? 0.0f : i < 320 ? 1e-41f * (float)(i % 5) : x[i] * 1e30f;
        for (int k = 0; k < 2; k++) {
            size_t nb = m2_qdot_act_bytes(ts[k], C);
            unsigned char *ref = malloc(nb), *got = malloc(nb);
            m2_qdot_quantize_act(ts[k], x, ref, C, M2_QDOT_PORTABLE);
            if (rep == 1 && k == 0) {   /* block 0: 1 - 8.5 = -7.5 -> -8, 2 - 8.5 = -6.5 -> -6 */
                const signed char *q = (const signed char *)ref + 8;
                assert_int_equal(q[1], -8);
                assert_int_equal(q[2], -6);
            }
            for (int p = 0; p < 2; p++) {
                if (!m2_qdot_path_available(paths[p])) continue;
                memset(got, 0x55, nb);
                m2_qdot_quantize_act(ts[k], x, got, C, paths[p]);
                if (memcmp(got, ref, nb)) fail_msg("%s rep %d: %s activation bytes differ from portable", m2_dtype_name(ts[k]), rep, m2_qdot_path_name(paths[p]));
            }
            free(ref); free(got);
        }
        free(x);
    }
}

/* Q4_K from f32 (a plain min/max fit): every value within its group's half step (plus the f16
 * and 6-bit rounding of the scales: at most one more step), and a constant row exactly 0 error
 * for zeros. */
static void q4_k_encoder(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 5);
    enum { N = 1024 };
    float *x = rand_floats(N, &r), y[N];
    unsigned char q[4 * 144];
    assert_int_equal(m2_quantize(M2_DT_Q4_K, x, q, N), 0);
    m2_dequantize(M2_DT_Q4_K, q, y, N);
    for (int g = 0; g < N / 32; g++) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) { lo = fminf(lo, x[32 * g + l]); hi = fmaxf(hi, x[32 * g + l]); }
        float step = (hi - lo) / 15;
        for (int l = 0; l < 32; l++)
            if (fabsf(x[32 * g + l] - y[32 * g + l]) > 1.5f * step + 1e-6f)
                fail_msg("value %d: %g -> %g (step %g)", 32 * g + l, x[32 * g + l], y[32 * g + l], step);
    }
    float z[256] = {0};
    assert_int_equal(m2_quantize(M2_DT_Q4_K, z, q, 256), 0);
    m2_dequantize(M2_DT_Q4_K, q, y, 256);
    for (int i = 0; i < 256; i++) assert_true(y[i] == 0.0f);
    /* the types without an encoder say so */
    assert_int_equal(m2_quantize(M2_DT_Q5_K, z, q, 256), -1);
    free(x);
}

/* Q6_K from f32 (a symmetric fit per group of 16): every value within 1.5 of its group's step
 * max|x| / 31 (half a step, plus the 8-bit and f16 rounding of the step), zeros exactly 0, and a
 * group of large values beside small ones keeps both within their steps. */
static void q6_k_encoder(void **st) {
    m2_rng r;
    m2_rng_seed(&r, 6);
    enum { N = 1024 };
    float *x = rand_floats(N, &r), y[N];
    for (int i = 0; i < 16; i++) x[i] *= 20.0f;   /* one group 20x the others */
    unsigned char q[4 * 210];
    assert_int_equal(m2_quantize(M2_DT_Q6_K, x, q, N), 0);
    m2_dequantize(M2_DT_Q6_K, q, y, N);
    for (int g = 0; g < N / 16; g++) {
        float amax = 0;
        for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * g + l]));
        float step = amax / 31;
        for (int l = 0; l < 16; l++)
            if (fabsf(x[16 * g + l] - y[16 * g + l]) > 1.5f * step + 1e-6f)
                fail_msg("value %d: %g -> %g (step %g)", 16 * g + l, x[16 * g + l], y[16 * g + l], step);
    }
    float z[256] = {0};
    assert_int_equal(m2_quantize(M2_DT_Q6_K, z, q, 256), 0);
    m2_dequantize(M2_DT_Q6_K, q, y, 256);
    for (int i = 0; i < 256; i++) assert_true(y[i] == 0.0f);
    free(x);
}

/* ---- model files ----------------------------------------------------------------------------- */

enum { T = 10 };
static const int32_t toks[T] = {1, 5, 9, 33, 2, 7, 60, 61, 14, 3};

static m2_model *random_model(int qwen, int dim, int ffn) {
    m2_model_config c = {0};
    c.family = qwen ? M2_FAMILY_QWEN2 : M2_FAMILY_LLAMA;
    c.vocab_size = 96; c.dim = dim; c.n_layers = 2; c.n_heads = 4; c.n_kv_heads = 2;
    c.ffn_dim = ffn; c.max_seq_len = 64; c.norm_eps = 1e-5f;
    c.rope_theta = 10000.f;
    c.rope_layout = M2_ROPE_HALF;
    c.qkv_bias = qwen; c.tied_embeddings = qwen;
    c.bos_token = -1; c.eos_token = -1;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_err err = {0};
    m2_model *m = m2_model_create(&c, &o, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, qwen ? 31 : 32, 0.08f);
    return m;
}

static float *score(m2_model *m) {
    m2_err err = {0};
    m2_ctx *c = m2_ctx_create(m, T, 0, &err);
    if (!c) fail_msg("%s", err.msg);
    int len = T;
    m2_batch b = {1, &len, toks};
    if (m2_forward(c, &b, NULL, 0, &err)) fail_msg("%s", err.msg);
    size_t n = (size_t)T * m->cfg.vocab_size;
    float *out = malloc(n * sizeof(float));
    memcpy(out, m2_ctx_logits(c), n * sizeof(float));
    m2_ctx_free(c);
    return out;
}

/* Logits of the last prompt token through the KV-cache path: prefill T - 1 tokens, then one decode
 * step (the path m2_qmatmul serves). */
static float *decode_logits(m2_model *m) {
    m2_err err = {0};
    m2_kv_cache *kv = m2_kv_create(m, 1, T, &err);
    if (!kv) fail_msg("%s", err.msg);
    float *l = malloc(sizeof(float) * m->cfg.vocab_size);
    if (m2_kv_append(m, NULL, kv, 0, toks, T - 1, NULL, &err) || m2_kv_append(m, NULL, kv, 0, toks + T - 1, 1, l, &err))
        fail_msg("%s", err.msg);
    m2_kv_free(kv);
    return l;
}

/* Writes the f32 model's GGUF again with matrix i in type_of(name) (Q4_0/Q8_0 encoded from the f32
 * values; the other types as random blocks, the file being the reference). */
typedef m2_dtype (*type_fn)(const char *name);
static void write_mixed(m2_model *m, const char *path, type_fn type_of) {
    char fp[340];
    m2_err err = {0};
    snprintf(fp, sizeof fp, "%s.f32", path);
    if (m2_model_save_gguf(m, fp, M2_GGML_F32, NULL, &err)) fail_msg("%s", err.msg);
    m2_gguf *g = m2_gguf_open(fp, &err);
    if (!g) fail_msg("%s", err.msg);
    m2_gguf_writer *w = m2_gguf_writer_new();
    for (uint64_t i = 0; i < g->n_kv; i++) assert_int_equal(m2_gguf_set_kv(w, &g->kv[i]), 0);
    m2_rng r;
    m2_rng_seed(&r, 3);
    void *keep[64];
    int nk = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *t = &g->tensors[i];
        m2_dtype dt = t->n_dims == 2 ? type_of(t->name) : M2_DT_F32;
        if (dt == M2_DT_F32) {
            if (m2_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->n_bytes, &err)) fail_msg("%s", err.msg);
            continue;
        }
        size_t n = t->n_elems;
        void *q;
        if (m2_dtype_info_of(dt)->quantize) {
            q = malloc(m2_dtype_bytes(dt, n));
            assert_int_equal(m2_quantize(dt, t->data, q, n), 0);
        } else q = rand_blocks(dt, n, 2e-4f, &r);
        keep[nk++] = q;
        if (m2_gguf_add_tensor(w, t->name, m2_dtype_info_of(dt)->ggml_id, 2, t->ne, q, m2_dtype_bytes(dt, n), &err))
            fail_msg("%s", err.msg);
    }
    if (m2_gguf_writer_write(w, path, &err)) fail_msg("%s", err.msg);
    m2_gguf_writer_free(w);
    m2_gguf_close(g);
    for (int i = 0; i < nk; i++) free(keep[i]);
}

/* llama-quantize's default Q4_0: every matrix Q4_0 but output.weight, which is Q6_K (the token
 * embedding too when it is the output, i.e. tied). */
static m2_dtype q4_0_default(const char *name) {
    return !strcmp(name, "output.weight") || !strcmp(name, "token_embd.weight") ? M2_DT_Q6_K : M2_DT_Q4_0;
}
static m2_dtype q4_0_default_untied(const char *name) {
    return !strcmp(name, "output.weight") ? M2_DT_Q6_K : M2_DT_Q4_0;
}
/* a Q4_K_M-like mix: Q6_K for attn_v, ffn_down and the output, Q4_K elsewhere, one Q5_K, one
 * Q3_K, one Q2_K, and the 32-value types on the attention output */
static m2_dtype q4_k_m_like(const char *name) {
    if (strstr(name, "attn_v") || strstr(name, "ffn_down") || !strcmp(name, "output.weight")) return M2_DT_Q6_K;
    if (!strcmp(name, "blk.0.ffn_up.weight")) return M2_DT_Q5_K;
    if (!strcmp(name, "blk.1.ffn_up.weight")) return M2_DT_Q3_K;
    if (!strcmp(name, "blk.1.ffn_gate.weight")) return M2_DT_Q2_K;
    if (!strcmp(name, "blk.0.attn_output.weight")) return M2_DT_Q5_0;
    if (!strcmp(name, "blk.1.attn_output.weight")) return M2_DT_IQ4_NL;
    if (!strcmp(name, "blk.0.attn_q.weight")) return M2_DT_Q4_1;
    if (!strcmp(name, "blk.1.attn_q.weight")) return M2_DT_Q5_1;
    return M2_DT_Q4_K;
}

/* Loads path as stored and as f32: each matrix keeps its file type (checked against type_of),
 * its values equal the f32 load's, scoring passes (dequantised tiles) match the f32 model, and
 * the decode step (quantised products) stays within 3 % of the logit scale. */
static void check_mixed(const char *path, type_fn type_of, int expect_mapped) {
    m2_err err = {0};
    m2_model *q = m2_model_load(path, NULL, NULL, &err);
    if (!q) fail_msg("%s", err.msg);
    m2_model_opts of = {.dtype = M2_DT_F32, .threads = 1};
    m2_model *f = m2_model_load(path, &of, NULL, &err);
    if (!f) fail_msg("%s", err.msg);
    for (int i = 0; i < q->n_tensors; i++) {
        m2_tensor *t = &q->tensors[i];
        if (t->ndim != 2) continue;
        if (t->dtype != type_of(t->name)) fail_msg("%s: stored as %s, file has %s", t->name, m2_dtype_name(t->dtype), m2_dtype_name(type_of(t->name)));
        int permuted = q->cfg.family != M2_FAMILY_QWEN2 && (t->kind == M2_T_Q || t->kind == M2_T_K || t->kind == M2_T_V);
        assert_int_equal(t->mapped, expect_mapped && !permuted);
        size_t n = (size_t)t->rows * t->cols;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        assert_int_equal(m2_model_get_tensor_f32(q, t->name, a, &err), 0);
        assert_int_equal(m2_model_get_tensor_f32(f, t->name, b, &err), 0);
        assert_memory_equal(a, b, n * 4);
        free(a); free(b);
    }
    if (expect_mapped) assert_true(q->mapped_bytes > 0);
    size_t nl = (size_t)T * q->cfg.vocab_size;
    float *sq = score(q), *sf = score(f), scale = 0, d = 0;
    for (size_t i = 0; i < nl; i++) { scale = fmaxf(scale, fabsf(sf[i])); d = fmaxf(d, fabsf(sq[i] - sf[i])); }
    assert_true(scale > 1e-3f);
    assert_true(d <= 1e-4f * scale);
    float *lq = decode_logits(q), *lf = decode_logits(f);
    float dd = 0;
    for (int i = 0; i < q->cfg.vocab_size; i++) dd = fmaxf(dd, fabsf(lq[i] - lf[i]));
    printf("  %s: scoring max |d| %.3g, decode (quantised products) max |d| %.3g, logit scale %.3g, mapped %.1f KiB\n",
           strrchr(path, '/') + 1, d, dd, scale, q->mapped_bytes / 1024.0);
    assert_true(dd <= 0.03f * scale);
    free(sq); free(sf); free(lq); free(lf);
    m2_model_free(q);
    m2_model_free(f);
}

static void mixed_files_load(void **st) {
    char path[300];
    /* rows of 256 (K-quant super-blocks); llama-quantize falls back to other types otherwise */
    m2_model *m = random_model(0, 256, 512);
    snprintf(path, sizeof path, "%s/llama-q4_0.gguf", tmpdir);
    write_mixed(m, path, q4_0_default_untied);
    check_mixed(path, q4_0_default_untied, 1);
    m2_model_free(m);
    m = random_model(1, 256, 512);  /* tied: the embedding is the output, Q6_K */
    snprintf(path, sizeof path, "%s/qwen-q4_0.gguf", tmpdir);
    write_mixed(m, path, q4_0_default);
    check_mixed(path, q4_0_default, 1);
    m2_model_free(m);
    m = random_model(0, 256, 512);
    snprintf(path, sizeof path, "%s/llama-q4_k_m.gguf", tmpdir);
    write_mixed(m, path, q4_k_m_like);
    check_mixed(path, q4_k_m_like, 1);
    m2_model_free(m);
    /* a type the engine cannot read is refused with its name, not loaded as garbage */
}

/* A model written unsplit and as llama-gguf-split parts loads to the same tensors and logits from
 * the first part; a later part, a missing part, or a part of another split fail with the file. */
static void split_files(void **st) {
    m2_err err = {0};
    m2_model *m = random_model(1, 64, 128);
    char path[300], prefix[300], p1[340], p2[340];
    snprintf(path, sizeof path, "%s/whole.gguf", tmpdir);
    if (m2_model_save_gguf(m, path, M2_GGML_Q8_0, NULL, &err)) fail_msg("%s", err.msg);
    m2_gguf *g = m2_gguf_open(path, &err);
    if (!g) fail_msg("%s", err.msg);
    snprintf(prefix, sizeof prefix, "%s/split", tmpdir);
    int parts = 0;
    if (m2_gguf_write_split(g, prefix, 7, &parts, &err)) fail_msg("%s", err.msg);
    assert_int_equal(parts, (int)((g->n_tensors + 6) / 7));
    assert_true(parts >= 3);
    snprintf(p1, sizeof p1, "%s-00001-of-%05d.gguf", prefix, parts);
    snprintf(p2, sizeof p2, "%s-00002-of-%05d.gguf", prefix, parts);
    /* gguf-split's keys: u16 count and index, i32 total */
    m2_gguf *h = m2_gguf_open(p2, &err);
    if (!h) fail_msg("%s", err.msg);
    assert_int_equal(m2_gguf_find(h, "split.count")->type, M2_GGUF_U16);
    assert_int_equal(m2_gguf_find(h, "split.no")->v.u64, 1);
    assert_int_equal(m2_gguf_find(h, "split.tensors.count")->type, M2_GGUF_I32);
    assert_int_equal(h->n_tensors, 7);
    assert_null(m2_gguf_find(h, "general.architecture"));
    m2_gguf_close(h);
    m2_gguf *s = m2_gguf_open_split(p1, &err);
    if (!s) fail_msg("%s", err.msg);
    assert_int_equal(s->n_tensors, g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *a = &g->tensors[i], *b = m2_gguf_find_tensor(s, a->name);
        assert_non_null(b);
        assert_int_equal(a->type, b->type);
        assert_int_equal(a->n_bytes, b->n_bytes);
        assert_memory_equal(a->data, b->data, a->n_bytes);
    }
    m2_gguf_close(s);
    m2_model *a = m2_model_load(path, NULL, NULL, &err), *b = m2_model_load(p1, NULL, NULL, &err);
    if (!a || !b) fail_msg("%s", err.msg);
    for (int i = 0; i < a->n_tensors; i++) {
        assert_int_equal(a->tensors[i].dtype, b->tensors[i].dtype);
        assert_memory_equal(a->tensors[i].data, b->tensors[i].data,
                            m2_dtype_bytes(a->tensors[i].dtype, (size_t)a->tensors[i].rows * a->tensors[i].cols));
    }
    float *la = score(a), *lb = score(b);
    assert_memory_equal(la, lb, sizeof(float) * T * a->cfg.vocab_size);
    free(la); free(lb);
    m2_model_free(a); m2_model_free(b);
    /* a later part */
    assert_null(m2_model_load(p2, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "split.no"));
    /* a missing part: the error names it */
    char p3[340];
    snprintf(p3, sizeof p3, "%s-00003-of-%05d.gguf", prefix, parts);
    assert_int_equal(rename(p3, path), 0);
    assert_null(m2_model_load(p1, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "00003-of"));
    /* a part of another split in its place */
    char q1[340];
    snprintf(prefix, sizeof prefix, "%s/other", tmpdir);
    if (m2_gguf_write_split(g, prefix, 3, &parts, &err)) fail_msg("%s", err.msg);
    snprintf(q1, sizeof q1, "%s-00002-of-%05d.gguf", prefix, parts);
    assert_int_equal(rename(q1, p3), 0);
    assert_null(m2_model_load(p1, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "split.count"));
    m2_gguf_close(g);
    m2_model_free(m);
}

/* The mapping is copy-on-write: writing a mapped tensor (what a LoRA merge does) leaves the file
 * as it was. */
static void mapped_copy_on_write(void **st) {
    m2_err err = {0};
    m2_model *m = random_model(1, 64, 128);
    char path[300];
    snprintf(path, sizeof path, "%s/cow.gguf", tmpdir);
    if (m2_model_save_gguf(m, path, M2_GGML_Q8_0, NULL, &err)) fail_msg("%s", err.msg);
    char *before, *after;
    size_t lb, la;
    assert_int_equal(m2_read_file(path, &before, &lb, &err), 0);
    m2_model *r = m2_model_load(path, NULL, NULL, &err);
    if (!r) fail_msg("%s", err.msg);
    m2_tensor *t = m2_model_find(r, "blk.0.ffn_down.weight");
    assert_true(t->mapped);
    size_t n = (size_t)t->rows * t->cols;
    float *z = calloc(n, sizeof(float));
    assert_int_equal(m2_model_set_tensor(r, t->name, M2_DT_F32, z, n, &err), 0);
    m2_model_free(r);
    assert_int_equal(m2_read_file(path, &after, &la, &err), 0);
    assert_int_equal(la, lb);
    assert_memory_equal(before, after, la);
    free(z); free(before); free(after);
    m2_model_free(m);
}

/* Runs a shell command; exit status, stdout in *out (malloc'd). */
static int run(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int st = pclose(p);
    if (out) *out = buf; else free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `multi2 bench generate` on a Q4_K file and on its split parts: the JSON names the matrix types
 * and rates; usage errors exit 2, a missing file exits 1 naming it. */
static void bench_generate_cli(void **st) {
    const char *bin = getenv("M2_BIN");
    if (!bin) { printf("  M2_BIN unset: skipped\n"); return; }
    m2_err err = {0};
    m2_model *m = random_model(0, 256, 512);
    char path[300], prefix[300], cmd[1200];
    snprintf(path, sizeof path, "%s/bench-q4_k.gguf", tmpdir);
    if (m2_model_save_gguf(m, path, M2_GGML_Q4_K, NULL, &err)) fail_msg("%s", err.msg);
    char *out;
    snprintf(cmd, sizeof cmd, "%s bench generate --model %s --prompt-tokens 8 --gen-tokens 4 --reps 1 --threads 1 --json", bin, path);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"q4_k\": 16"));   /* 2 layers x 7 matrices, embedding, output */
    assert_non_null(strstr(out, "\"gen_tokens_per_s\": "));
    assert_non_null(strstr(out, "\"prompt_tokens_per_s\": "));
    free(out);
    m2_gguf *g = m2_gguf_open(path, &err);
    snprintf(prefix, sizeof prefix, "%s/bench-split", tmpdir);
    int parts;
    if (!g || m2_gguf_write_split(g, prefix, 5, &parts, &err)) fail_msg("%s", err.msg);
    m2_gguf_close(g);
    snprintf(cmd, sizeof cmd, "%s bench generate --model %s-00001-of-%05d.gguf --prompt-tokens 8 --gen-tokens 4 --reps 1 --threads 1 --json --tiles",
             bin, prefix, parts);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"qdot_path\": \"dequantised tiles\""));
    free(out);
    snprintf(cmd, sizeof cmd, "%s bench generate --prompt-tokens 8 2>/dev/null", bin);
    assert_int_equal(run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "%s bench generate --model %s --prompt-tokens 60 --gen-tokens 10 2>/dev/null", bin, path);
    assert_int_equal(run(cmd, NULL), 2);   /* beyond the model's 64 positions */
    snprintf(cmd, sizeof cmd, "%s bench generate --model %s/none.gguf 2>&1", bin, tmpdir);
    assert_int_equal(run(cmd, &out), 1);
    assert_non_null(strstr(out, "none.gguf"));
    free(out);
    m2_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layouts_agree),
        cmocka_unit_test(dequant_reference),
        cmocka_unit_test(qdot_vs_f32),
        cmocka_unit_test(simd_equals_portable),
        cmocka_unit_test(act_simd_equals_portable),
        cmocka_unit_test(qmatmul_many_matches),
        cmocka_unit_test(qgemm_matches),
        cmocka_unit_test(q4_k_encoder),
        cmocka_unit_test(q6_k_encoder),
        cmocka_unit_test(mixed_files_load),
        cmocka_unit_test(split_files),
        cmocka_unit_test(mapped_copy_on_write),
        cmocka_unit_test(bench_generate_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
