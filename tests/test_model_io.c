/* io/model_load: GGUF <-> HF names, the RoPE row permutation, and random Llama- and Qwen2-shaped
 * models written as HF safetensors (single, sharded) and GGUF (f32, f16, bf16, q8_0, q4_0) and
 * read back: tensors bit-exact where the format is lossless, within the format's rounding
 * otherwise; the llama q/k rows in a GGUF are in llama.cpp's permuted order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
#include "tmpdir.h"

static char tmpdir[64];
static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "mio"); }
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static void names(void **state) {
    char a[128], b[128];
    const char *g[] = {"token_embd.weight", "output_norm.weight", "output.weight", "blk.0.attn_norm.weight",
                       "blk.12.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight", "blk.3.attn_output.weight",
                       "blk.7.attn_q.bias", "blk.7.attn_k.bias", "blk.7.attn_v.bias", "blk.1.ffn_norm.weight",
                       "blk.1.ffn_gate.weight", "blk.1.ffn_up.weight", "blk.100.ffn_down.weight"};
    const char *h[] = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.0.input_layernorm.weight",
                       "model.layers.12.self_attn.q_proj.weight", "model.layers.3.self_attn.k_proj.weight",
                       "model.layers.3.self_attn.v_proj.weight", "model.layers.3.self_attn.o_proj.weight",
                       "model.layers.7.self_attn.q_proj.bias", "model.layers.7.self_attn.k_proj.bias",
                       "model.layers.7.self_attn.v_proj.bias", "model.layers.1.post_attention_layernorm.weight",
                       "model.layers.1.mlp.gate_proj.weight", "model.layers.1.mlp.up_proj.weight",
                       "model.layers.100.mlp.down_proj.weight"};
    for (int i = 0; i < 15; i++) {
        assert_int_equal(m2_tensor_name_to_hf(g[i], a, sizeof a), 0);
        assert_string_equal(a, h[i]);
        assert_int_equal(m2_tensor_name_from_hf(h[i], b, sizeof b), 0);
        assert_string_equal(b, g[i]);
    }
    const char *bad[] = {"blk.x.attn_q.weight", "blk.01.attn_q.weight", "blk.-1.attn_q.weight", "blk.1.attn_z.weight",
                         "blk.1attn_q.weight", "model.layers.1.self_attn.q_proj", "", "blk.99999999999.attn_q.weight"};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(m2_tensor_name_to_hf(bad[i], a, sizeof a), -1);
        assert_int_equal(m2_tensor_name_from_hf(bad[i], a, sizeof a), -1);
    }
    assert_int_equal(m2_tensor_name_to_hf("blk.1.attn_q.weight", a, 10), -1);   /* too small */
}

static void rope_permutation(void **state) {
    /* 2 heads of dim 4: HF rows (h, j*2 + i) -> GGUF rows (h, 2i + j) */
    float src[8], dst[8], back[8];
    for (int i = 0; i < 8; i++) src[i] = (float)i;
    m2_rope_permute_rows(src, dst, 2, 4, sizeof(float), 1);
    float want[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    assert_memory_equal(dst, want, sizeof want);
    m2_rope_permute_rows(dst, back, 2, 4, sizeof(float), 0);
    assert_memory_equal(back, src, sizeof src);
    /* matches numpy-style reshape(n_head, 2, hd/2, in).swapaxes(1, 2) for a bigger case */
    enum { NH = 3, HD = 8, IN = 5 };
    float w[NH * HD * IN], p[NH * HD * IN], q[NH * HD * IN];
    for (int i = 0; i < NH * HD * IN; i++) w[i] = (float)i;
    m2_rope_permute_rows(w, p, NH, HD, IN * sizeof(float), 1);
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < HD / 2; i++)
            for (int j = 0; j < 2; j++)
                for (int c = 0; c < IN; c++)
                    assert_true(p[((h * HD) + i * 2 + j) * IN + c] == w[((h * HD) + j * (HD / 2) + i) * IN + c]);
    m2_rope_permute_rows(p, q, NH, HD, IN * sizeof(float), 0);
    assert_memory_equal(q, w, sizeof w);
}

static m2_model *random_model(int qwen, m2_dtype storage, uint64_t seed) {
    m2_model_config c = {0};
    c.family = qwen ? M2_FAMILY_QWEN2 : M2_FAMILY_LLAMA;
    c.vocab_size = 96; c.dim = 64; c.n_layers = 2; c.n_heads = 4; c.n_kv_heads = 2;
    c.ffn_dim = 128; c.max_seq_len = 128; c.norm_eps = 1e-5f;
    c.rope_theta = qwen ? 1e6f : 500000.f;
    c.rope_layout = M2_ROPE_HALF;
    c.qkv_bias = qwen; c.tied_embeddings = qwen;
    c.bos_token = -1; c.eos_token = 2;
    if (!qwen) c.rope_scaling = (m2_rope_scaling){1, 8.f, 1.f, 4.f, 64};
    m2_model_opts o = {.dtype = storage, .threads = 1};
    m2_err err = {0};
    m2_model *m = m2_model_create(&c, &o, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, seed, 0.5f);
    /* non-trivial norms and biases */
    m2_rng r;
    m2_rng_seed(&r, seed + 1);
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        if (t->ndim == 1)
            for (int k = 0; k < t->cols; k++) ((float *)t->data)[k] = 1.f + 0.1f * m2_rng_normal(&r);
    }
    return m;
}

/* |a - b| <= tol * max|a| per tensor, or bit-exact when tol == 0 */
static void compare_models(m2_model *a, m2_model *b, float tol) {
    assert_int_equal(a->n_tensors, b->n_tensors);
    assert_int_equal(a->cfg.n_layers, b->cfg.n_layers);
    assert_int_equal(a->cfg.tied_embeddings, b->cfg.tied_embeddings);
    assert_int_equal(a->cfg.qkv_bias, b->cfg.qkv_bias);
    assert_int_equal(b->cfg.rope_layout, M2_ROPE_HALF);
    assert_int_equal(a->cfg.rope_scaling.type, b->cfg.rope_scaling.type);
    m2_err err = {0};
    for (int i = 0; i < a->n_tensors; i++) {
        m2_tensor *t = &a->tensors[i];
        size_t n = (size_t)t->rows * t->cols;
        float *x = malloc(n * 4), *y = malloc(n * 4);
        assert_int_equal(m2_model_get_tensor_f32(a, t->name, x, &err), 0);
        if (m2_model_get_tensor_f32(b, t->name, y, &err)) fail_msg("%s", err.msg);
        if (tol == 0 || t->ndim == 1) {
            if (memcmp(x, y, n * 4)) fail_msg("tensor %s differs", t->name);
        } else {
            float mx = 0;
            for (size_t k = 0; k < n; k++) mx = fmaxf(mx, fabsf(x[k]));
            for (size_t k = 0; k < n; k++)
                if (fabsf(x[k] - y[k]) > tol * mx) fail_msg("tensor %s[%zu]: %g vs %g", t->name, k, x[k], y[k]);
        }
        free(x); free(y);
    }
}

static void roundtrip_family(int qwen) {
    m2_err err = {0};
    m2_model *m = random_model(qwen, M2_DT_F32, qwen ? 11 : 7);
    char path[256];
    /* HF single and sharded: bit-exact in f32 */
    snprintf(path, sizeof path, "%s/%s-hf", tmpdir, qwen ? "qwen" : "llama");
    assert_int_equal(m2_model_save_hf(m, path, M2_GGML_F32, 0, NULL, &err), 0);
    m2_hf_config h;
    m2_model *r = m2_model_load(path, NULL, &h, &err);
    if (!r) fail_msg("%s", err.msg);
    assert_int_equal(h.family, qwen ? M2_HF_QWEN2 : M2_HF_LLAMA);
    assert_int_equal(h.rope_llama3, !qwen);
    compare_models(m, r, 0);
    m2_model_free(r);
    snprintf(path, sizeof path, "%s/%s-hf-sharded", tmpdir, qwen ? "qwen" : "llama");
    assert_int_equal(m2_model_save_hf(m, path, M2_GGML_F32, 40000, NULL, &err), 0);
    r = m2_model_load(path, NULL, NULL, &err);
    if (!r) fail_msg("%s", err.msg);
    compare_models(m, r, 0);
    m2_model_free(r);
    snprintf(path, sizeof path, "%s/%s-hf-bf16", tmpdir, qwen ? "qwen" : "llama");
    assert_int_equal(m2_model_save_hf(m, path, M2_GGML_BF16, 0, NULL, &err), 0);
    r = m2_model_load(path, NULL, NULL, &err);
    if (!r) fail_msg("%s", err.msg);
    assert_int_equal(r->opts.dtype, M2_DT_BF16);
    m2_model_free(r);

    /* GGUF in every type */
    uint32_t types[] = {M2_GGML_F32, M2_GGML_F16, M2_GGML_BF16, M2_GGML_Q8_0, M2_GGML_Q4_0};
    m2_dtype storage[] = {M2_DT_F32, M2_DT_F16, M2_DT_BF16, M2_DT_Q8_0, M2_DT_Q4_0};   /* kept as stored */
    float tol[] = {0, 1e-3f, 8e-3f, 1.f / 127, 1.f / 8};
    for (int k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/%s-%s.gguf", tmpdir, qwen ? "qwen" : "llama", m2_ggml_type_name(types[k]));
        if (m2_model_save_gguf(m, path, types[k], NULL, &err)) fail_msg("%s", err.msg);
        r = m2_model_load(path, NULL, &h, &err);
        if (!r) fail_msg("%s", err.msg);
        assert_int_equal(r->opts.dtype, storage[k]);
        assert_int_equal(h.family, qwen ? M2_HF_QWEN2 : M2_HF_LLAMA);
        compare_models(m, r, tol[k]);
        /* a model loaded from a file saves back to the same bytes in its own type */
        {   /* Q4_0 too: its blocks are kept as stored */
            char p2[300];
            snprintf(p2, sizeof p2, "%s.again", path);
            assert_int_equal(m2_model_save_gguf(r, p2, types[k], NULL, &err), 0);
            char *x, *y;
            size_t lx, ly;
            assert_int_equal(m2_read_file(path, &x, &lx, &err), 0);
            assert_int_equal(m2_read_file(p2, &y, &ly, &err), 0);
            assert_int_equal(lx, ly);
            if (memcmp(x, y, lx)) fail_msg("%s: re-saved file differs", path);
            free(x); free(y);
        }
        m2_model_free(r);
    }

    /* the GGUF holds q/k rows in llama.cpp's order for llama, unpermuted for qwen2 */
    snprintf(path, sizeof path, "%s/%s-F32.gguf", tmpdir, qwen ? "qwen" : "llama");
    m2_gguf *g = m2_gguf_open(path, &err);
    assert_non_null(g);
    assert_string_equal(m2_gguf_get_str(g, "general.architecture", &err), qwen ? "qwen2" : "llama");
    assert_int_equal(m2_gguf_find_tensor(g, "output.weight") == NULL, qwen);
    assert_int_equal(m2_gguf_find_tensor(g, "rope_freqs.weight") != NULL, !qwen);
    const char *qk[] = {"blk.1.attn_q.weight", "blk.1.attn_k.weight"};
    int heads[] = {m->cfg.n_heads, m->cfg.n_kv_heads};
    for (int k = 0; k < 2; k++) {
        const m2_gguf_tensor *t = m2_gguf_find_tensor(g, qk[k]);
        m2_tensor *mt = m2_model_find(m, qk[k]);
        size_t n = (size_t)mt->rows * mt->cols;
        float *want = malloc(n * 4), *perm = malloc(n * 4);
        m2_model_get_tensor_f32(m, qk[k], want, &err);
        if (!qwen) m2_rope_permute_rows(want, perm, heads[k], m->cfg.head_dim, (size_t)mt->cols * 4, 1);
        else memcpy(perm, want, n * 4);
        assert_memory_equal(t->data, perm, n * 4);
        if (!qwen) assert_memory_not_equal(t->data, want, n * 4);
        free(want); free(perm);
    }
    m2_gguf_close(g);

    /* HF -> GGUF -> HF keeps every bit (the permutation round trips) */
    snprintf(path, sizeof path, "%s/%s-hf", tmpdir, qwen ? "qwen" : "llama");
    r = m2_model_load(path, NULL, NULL, &err);
    char p3[300], p4[300];
    snprintf(p3, sizeof p3, "%s/%s-via.gguf", tmpdir, qwen ? "qwen" : "llama");
    snprintf(p4, sizeof p4, "%s/%s-via-hf", tmpdir, qwen ? "qwen" : "llama");
    assert_int_equal(m2_model_save_gguf(r, p3, M2_GGML_F32, NULL, &err), 0);
    m2_model_free(r);
    r = m2_model_load(p3, NULL, NULL, &err);
    assert_int_equal(m2_model_save_hf(r, p4, M2_GGML_F32, 0, NULL, &err), 0);
    m2_model_free(r);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/model.safetensors", path);
    snprintf(b, sizeof b, "%s/model.safetensors", p4);
    char *x, *y;
    size_t lx, ly;
    assert_int_equal(m2_read_file(a, &x, &lx, &err), 0);
    assert_int_equal(m2_read_file(b, &y, &ly, &err), 0);
    assert_int_equal(lx, ly);
    assert_memory_equal(x, y, lx);
    free(x); free(y);
    m2_model_free(m);
}

static void llama_roundtrips(void **state) { roundtrip_family(0); }
static void qwen2_roundtrips(void **state) { roundtrip_family(1); }

static void load_errors(void **state) {
    m2_err err = {0};
    m2_model *m = random_model(0, M2_DT_F32, 3);
    char path[256], cfg[300];
    snprintf(path, sizeof path, "%s/err-hf", tmpdir);
    assert_int_equal(m2_model_save_hf(m, path, M2_GGML_F32, 0, NULL, &err), 0);
    /* a config that disagrees with the tensors */
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    m2_hf_config h;
    assert_int_equal(m2_hf_config_load(cfg, &h, &err), 0);
    h.intermediate_size = 96;
    assert_int_equal(m2_hf_config_save(&h, cfg, &err), 0);
    assert_null(m2_model_load(path, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "mlp.gate_proj.weight"));
    assert_non_null(strstr(err.msg, "shape"));
    h.intermediate_size = 128;
    h.tie_word_embeddings = 0;
    h.num_layers = 3;
    assert_int_equal(m2_hf_config_save(&h, cfg, &err), 0);
    assert_null(m2_model_load(path, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "model.layers.2."));
    assert_non_null(strstr(err.msg, "missing"));
    /* GGUF with a tensor of the wrong shape */
    snprintf(path, sizeof path, "%s/err.gguf", tmpdir);
    m2_gguf_writer *w = m2_gguf_writer_new();
    m2_hf_config_to_gguf(&h, w);
    float z[64 * 96] = {0};
    int64_t ne[2] = {96, 64};
    m2_gguf_add_tensor_f32(w, "token_embd.weight", M2_GGML_F32, 2, ne, z, &err);
    assert_int_equal(m2_gguf_writer_write(w, path, &err), 0);
    m2_gguf_writer_free(w);
    assert_null(m2_model_load(path, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "token_embd.weight"));
    assert_null(m2_model_load("/nonexistent/model", NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/model"));
    m2_model_free(m);
}

/* A q8_0 model whose embedding is f16 with NaN/inf (a corrupt file): the conversion into q8_0
 * storage stays defined (regression: fuzz_model_gguf found UB in the float->int8 cast). */
static void nonfinite_weights(void **state) {
    m2_err err = {0};
    m2_model *m = random_model(0, M2_DT_F32, 9);
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s/q8.gguf", tmpdir);
    snprintf(p2, sizeof p2, "%s/q8-nan.gguf", tmpdir);
    assert_int_equal(m2_model_save_gguf(m, p1, M2_GGML_Q8_0, NULL, &err), 0);
    m2_gguf *g = m2_gguf_open(p1, &err);
    m2_gguf_writer *w = m2_gguf_writer_new();
    for (uint64_t i = 0; i < g->n_kv; i++) m2_gguf_set_kv(w, &g->kv[i]);
    const m2_gguf_tensor *e = m2_gguf_find_tensor(g, "token_embd.weight");
    size_t n = e->n_elems;
    uint16_t *h = malloc(n * 2);
    for (size_t k = 0; k < n; k++) h[k] = k % 7 == 0 ? 0x7e00 : k % 11 == 0 ? 0x7c00 : 0x3c00;   /* NaN, inf, 1 */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *t = &g->tensors[i];
        if (t == e) assert_int_equal(m2_gguf_add_tensor(w, t->name, M2_GGML_F16, 2, t->ne, h, n * 2, &err), 0);
        else assert_int_equal(m2_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->n_bytes, &err), 0);
    }
    assert_int_equal(m2_gguf_writer_write(w, p2, &err), 0);
    m2_gguf_writer_free(w);
    m2_gguf_close(g);
    free(h);
    m2_model *r = m2_model_load(p2, NULL, NULL, &err);
    if (!r) fail_msg("%s", err.msg);
    assert_int_equal(r->opts.dtype, M2_DT_Q8_0);
    m2_model_free(r);
    m2_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),
        cmocka_unit_test(rope_permutation),
        cmocka_unit_test(llama_roundtrips),
        cmocka_unit_test(qwen2_roundtrips),
        cmocka_unit_test(load_errors),
        cmocka_unit_test(nonfinite_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
