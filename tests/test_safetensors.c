/* io/safetensors + io/hf_config: round trips (single file, shards + index), metadata, every
 * header defect (truncation at every byte, bad JSON, offsets, dtypes, shapes) failing cleanly,
 * config.json of the three families, GGUF architecture metadata round trip, Llama-3.1 rope. */
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
#include "tmpdir.h"

static char tmpdir[64];
static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "st"); }
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static void fill(float *x, int n, uint64_t seed) {
    m2_rng r;
    m2_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) x[i] = m2_rng_normal(&r);
}

static void roundtrip_single_and_sharded(void **state) {
    enum { A = 6 * 10, B = 7 };
    float a[A], b[B], out[A];
    fill(a, A, 1); fill(b, B, 2);
    m2_err err = {0};
    m2_st_writer *w = m2_st_writer_new();
    m2_st_set_meta(w, "format", "pt");
    m2_st_set_meta(w, "quote\"d", "va\\lue\n");
    int64_t sa[2] = {6, 10}, sb[1] = {7}, sz[2] = {0, 3};
    assert_int_equal(m2_st_add_f32(w, "model.a", M2_GGML_F32, 2, sa, a, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "model.a16", M2_GGML_F16, 2, sa, a, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "model.abf", M2_GGML_BF16, 2, sa, a, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "b \"odd\" name", M2_GGML_F32, 1, sb, b, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "scalar", M2_GGML_F32, 0, NULL, b, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "empty", M2_GGML_F32, 2, sz, b, &err), 0);
    assert_int_equal(m2_st_add_f32(w, "q", M2_GGML_Q8_0, 1, sb, b, &err), -1);   /* not a safetensors dtype */
    assert_int_equal(m2_st_add_f32(w, "model.a", M2_GGML_F32, 1, sb, b, &err), -1);  /* duplicate */
    char path[160], dir[160];
    snprintf(path, sizeof path, "%s/m.safetensors", tmpdir);
    snprintf(dir, sizeof dir, "%s/sharded", tmpdir);
    assert_int_equal(m2_st_write(w, path, &err), 0);
    assert_int_equal(m2_st_write_sharded(w, dir, 300, &err), 0);
    m2_st_writer_free(w);
    for (int k = 0; k < 2; k++) {
        m2_safetensors *st = m2_st_open(k ? dir : path, &err);
        if (!st) fail_msg("%s", err.msg);
        if (k) assert_true(st->n_files >= 2);
        assert_int_equal(st->n_tensors, 6);
        assert_string_equal(m2_st_meta(st, "format"), "pt");
        assert_string_equal(m2_st_meta(st, "quote\"d"), "va\\lue\n");
        const m2_st_tensor *t = m2_st_find(st, "model.a");
        assert_non_null(t);
        assert_string_equal(t->dtype, "F32");
        assert_int_equal(t->n_dims, 2);
        assert_int_equal(t->shape[0], 6);
        assert_int_equal(t->shape[1], 10);
        assert_int_equal(m2_st_tensor_to_f32(st, t, out, &err), 0);
        assert_memory_equal(out, a, sizeof a);
        t = m2_st_find(st, "model.a16");
        assert_string_equal(t->dtype, "F16");
        assert_int_equal(m2_st_tensor_to_f32(st, t, out, &err), 0);
        for (int i = 0; i < A; i++) assert_true(fabsf(out[i] - a[i]) <= 1e-3f * fmaxf(1, fabsf(a[i])));
        t = m2_st_find(st, "model.abf");
        assert_string_equal(t->dtype, "BF16");
        assert_int_equal(m2_st_tensor_to_f32(st, t, out, &err), 0);
        for (int i = 0; i < A; i++) assert_true(fabsf(out[i] - a[i]) <= 8e-3f * fmaxf(1, fabsf(a[i])));
        t = m2_st_find(st, "b \"odd\" name");
        assert_non_null(t);
        assert_int_equal(m2_st_tensor_to_f32(st, t, out, &err), 0);
        assert_memory_equal(out, b, sizeof b);
        t = m2_st_find(st, "scalar");
        assert_int_equal(t->n_dims, 0);
        assert_int_equal(t->n_elems, 1);
        t = m2_st_find(st, "empty");
        assert_int_equal(t->n_elems, 0);
        assert_null(m2_st_find(st, "nope"));
        m2_st_close(st);
    }
    /* folder lookup of a single file */
    char f2[200];
    snprintf(f2, sizeof f2, "%s/single", tmpdir);
    m2_mkdir_p(f2, &err);
    snprintf(path, sizeof path, "%s/single/model.safetensors", tmpdir);
    w = m2_st_writer_new();
    m2_st_add_f32(w, "x", M2_GGML_F32, 1, sb, b, &err);
    assert_int_equal(m2_st_write(w, path, &err), 0);
    m2_st_writer_free(w);
    m2_safetensors *st = m2_st_open(f2, &err);
    assert_non_null(st);
    m2_st_close(st);
    assert_null(m2_st_open(tmpdir, &err));
    assert_non_null(strstr(err.msg, tmpdir));
}

static void expect_fail(const char *json, const uint8_t *data, size_t dlen, const char *needle) {
    size_t jl = strlen(json);
    uint8_t *buf = malloc(8 + jl + dlen + 1);
    uint64_t n = jl;
    memcpy(buf, &n, 8);
    memcpy(buf + 8, json, jl);
    if (dlen) memcpy(buf + 8 + jl, data, dlen);
    m2_err err = {0};
    m2_safetensors *st = m2_st_open_memory(buf, 8 + jl + dlen, "bad.safetensors", &err);
    if (st) fail_msg("accepted: %s", json);
    assert_non_null(strstr(err.msg, "bad.safetensors"));
    if (needle && !strstr(err.msg, needle)) fail_msg("'%s' lacks '%s'", err.msg, needle);
    free(buf);
}

static void corrupt_files(void **state) {
    uint8_t d[64] = {0};
    m2_err err = {0};
    /* control: valid */
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    uint8_t buf[256];
    uint64_t n = strlen(ok);
    memcpy(buf, &n, 8); memcpy(buf + 8, ok, n); memset(buf + 8 + n, 0, 16);
    m2_safetensors *st = m2_st_open_memory(buf, 8 + n + 16, "ok", &err);
    if (!st) fail_msg("%s", err.msg);
    m2_st_close(st);
    /* truncation at every byte */
    for (size_t k = 0; k < 8 + n + 16; k++) {
        uint8_t *c = malloc(k + 1);
        memcpy(c, buf, k);
        st = m2_st_open_memory(c, k, "bad.safetensors", &err);
        assert_null(st);
        free(c);
    }
    /* byte flips never crash */
    for (size_t k = 0; k < 8 + n + 16; k++) {
        uint8_t *c = malloc(8 + n + 16);
        memcpy(c, buf, 8 + n + 16);
        c[k] ^= 0x55;
        st = m2_st_open_memory(c, 8 + n + 16, "bad.safetensors", &err);
        m2_st_close(st);
        free(c);
    }
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    assert_null(m2_st_open_memory(huge, 16, "bad.safetensors", &err));
    assert_non_null(strstr(err.msg, "header length"));
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}", d, 16, "JSON");
    expect_fail("[1,2]", NULL, 0, "{");
    expect_fail("{\"a\":1}", NULL, 0, "not an object");
    expect_fail("{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, "unknown dtype");
    expect_fail("{\"a\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, "dtype");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", d, 8, "shape");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d, 8, "shape[0]");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", d, 8, "shape[0]");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", d, 8, "overflow");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", d, 4, "dimensions");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", d, 8, "data_offsets");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", d, 8, "outside");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", d, 8, "outside");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", d, 8, "need");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 12, "cover");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", d, 12, "overlap");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, "hole");
    expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, "duplicate");
    expect_fail("{\"__metadata__\":{\"k\":1}}", NULL, 0, "__metadata__");
    expect_fail("{\"__metadata__\":[]}", NULL, 0, "__metadata__");
    expect_fail("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, "empty name");
    expect_fail("{} xx", NULL, 0, "trailing");
    /* a known dtype we cannot convert is listed but refuses conversion */
    const char *i64 = "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    n = strlen(i64);
    memcpy(buf, &n, 8); memcpy(buf + 8, i64, n); memset(buf + 8 + n, 0, 8);
    st = m2_st_open_memory(buf, 8 + n + 8, "i64", &err);
    assert_non_null(st);
    float out[2];
    assert_int_equal(m2_st_tensor_to_f32(st, &st->tensors[0], out, &err), -1);
    assert_non_null(strstr(err.msg, "I64"));
    m2_st_close(st);
}

static void sharded_index_errors(void **state) {
    m2_err err = {0};
    char dir[160], path[200];
    snprintf(dir, sizeof dir, "%s/idx", tmpdir);
    float x[4] = {1, 2, 3, 4};
    int64_t s[1] = {4};
    m2_st_writer *w = m2_st_writer_new();
    m2_st_add_f32(w, "a", M2_GGML_F32, 1, s, x, &err);
    m2_st_add_f32(w, "b", M2_GGML_F32, 1, s, x, &err);
    assert_int_equal(m2_st_write_sharded(w, dir, 8, &err), 0);
    m2_st_writer_free(w);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    const char *bad[] = {
        "{\"weight_map\":{\"a\":\"model-00002-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\"}}",
        "{\"weight_map\":{\"a\":\"../x.safetensors\"}}",
        "{\"weight_map\":{\"a\":\"missing.safetensors\"}}",
        "{\"weight_map\":{\"zz\":\"model-00001-of-00002.safetensors\"}}",
        "{\"weight_map\":[]}",
        "{\"weight_map\":{\"a\":3}}",
        "not json",
    };
    const char *needle[] = {"weight_map says", "bad shard", "missing.safetensors", "no shard", "weight_map", "not a string", "JSON"};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(m2_write_file_atomic(path, bad[i], strlen(bad[i]), &err), 0);
        m2_safetensors *st = m2_st_open(path, &err);
        if (st) fail_msg("accepted index %s", bad[i]);
        if (!strstr(err.msg, needle[i])) fail_msg("'%s' lacks '%s'", err.msg, needle[i]);
    }
}

static const char *qwen_json =
    "{\"architectures\":[\"Qwen2ForCausalLM\"],\"model_type\":\"qwen2\",\"hidden_size\":2048,"
    "\"intermediate_size\":11008,\"num_hidden_layers\":36,\"num_attention_heads\":16,"
    "\"num_key_value_heads\":2,\"rms_norm_eps\":1e-06,\"rope_theta\":1000000.0,\"vocab_size\":151936,"
    "\"max_position_embeddings\":32768,\"tie_word_embeddings\":true,\"use_sliding_window\":false,"
    "\"sliding_window\":32768,\"hidden_act\":\"silu\",\"bos_token_id\":151643,\"eos_token_id\":151645,"
    "\"rope_scaling\":null,\"torch_dtype\":\"bfloat16\"}";
static const char *llama31_json =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":4096,\"intermediate_size\":14336,"
    "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,\"rms_norm_eps\":1e-05,"
    "\"rope_theta\":500000.0,\"rope_scaling\":{\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
    "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},\"vocab_size\":128256,"
    "\"max_position_embeddings\":131072,\"bos_token_id\":128000,\"eos_token_id\":[128001,128008,128009],"
    "\"tie_word_embeddings\":false,\"attention_bias\":false,\"mlp_bias\":false,\"head_dim\":128}";
static const char *mistral_json =
    "{\"architectures\":[\"MistralForCausalLM\"],\"hidden_size\":4096,\"intermediate_size\":14336,"
    "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,\"rms_norm_eps\":1e-05,"
    "\"rope_theta\":1000000.0,\"vocab_size\":32768,\"max_position_embeddings\":32768,\"sliding_window\":null,"
    "\"head_dim\":null,\"tie_word_embeddings\":false}";

static void hf_configs(void **state) {
    m2_err err = {0};
    m2_hf_config c;
    assert_int_equal(m2_hf_config_parse(qwen_json, strlen(qwen_json), "q.json", &c, &err), 0);
    assert_int_equal(c.family, M2_HF_QWEN2);
    assert_int_equal(c.hidden_size, 2048);
    assert_int_equal(c.num_kv_heads, 2);
    assert_int_equal(c.head_dim, 128);
    assert_true(c.qkv_bias && c.tie_word_embeddings && !c.rope_llama3);
    assert_true(c.rope_theta == 1e6 && c.rms_norm_eps == 1e-6);
    assert_int_equal(c.eos_token_id, 151645);
    assert_string_equal(c.torch_dtype, "bfloat16");
    assert_int_equal(m2_hf_config_parse(llama31_json, strlen(llama31_json), "l.json", &c, &err), 0);
    assert_int_equal(c.family, M2_HF_LLAMA);
    assert_true(c.rope_llama3 && c.rope_factor == 8 && c.rope_high_freq_factor == 4 && c.rope_original_max_pos == 8192);
    assert_int_equal(c.eos_token_id, 128001);
    assert_false(c.qkv_bias);
    /* written config.json parses back to the same struct */
    strcpy(c.torch_dtype, "float32");
    char *js = m2_hf_config_to_json(&c);
    m2_hf_config c2;
    assert_int_equal(m2_hf_config_parse(js, strlen(js), "out.json", &c2, &err), 0);
    free(js);
    assert_memory_equal(&c, &c2, sizeof c);
    assert_int_equal(m2_hf_config_parse(mistral_json, strlen(mistral_json), "m.json", &c, &err), 0);
    assert_int_equal(c.family, M2_HF_MISTRAL);
    assert_int_equal(c.head_dim, 128);
    /* GGUF metadata round trip (Mistral becomes llama) incl. Llama-3.1 rope factors */
    assert_int_equal(m2_hf_config_parse(llama31_json, strlen(llama31_json), "l.json", &c, &err), 0);
    m2_gguf_writer *w = m2_gguf_writer_new();
    assert_int_equal(m2_hf_config_to_gguf(&c, w), 0);
    float rf[64], emb_dummy[1] = {0};
    (void)emb_dummy;
    m2_hf_llama3_rope_factors(&c, rf);
    assert_true(rf[0] == 1.f && rf[63] == 8.f);
    int64_t ne[1] = {64};
    assert_int_equal(m2_gguf_add_tensor_f32(w, "rope_freqs.weight", M2_GGML_F32, 1, ne, rf, &err), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/arch.gguf", tmpdir);
    assert_int_equal(m2_gguf_writer_write(w, path, &err), 0);
    m2_gguf_writer_free(w);
    m2_gguf *g = m2_gguf_open(path, &err);
    assert_non_null(g);
    assert_int_equal(m2_hf_config_from_gguf(g, &c2, &err), 0);
    m2_gguf_close(g);
    assert_int_equal(c2.family, M2_HF_LLAMA);
    assert_int_equal(c2.num_layers, 32);
    assert_int_equal(c2.num_kv_heads, 8);
    assert_int_equal(c2.head_dim, 128);
    assert_int_equal(c2.vocab_size, 128256);
    assert_true(c2.rope_llama3 && fabs(c2.rope_factor - 8) < 1e-6 && c2.rope_original_max_pos == 8192);
    assert_true(fabs(c2.rms_norm_eps - 1e-5) < 1e-9 && c2.rope_theta == 500000);
    /* bad configs */
    const char *bad[] = {
        "{", "[]", "{\"model_type\":\"gpt2\"}", "{\"architectures\":[\"GPT2LMHeadModel\"]}",
        "{\"model_type\":\"llama\",\"hidden_size\":64}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":3}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,\"num_key_value_heads\":3}",
        "{\"model_type\":\"llama\",\"vocab_size\":-10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":0}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":\"64\",\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,\"rope_scaling\":{\"rope_type\":\"yarn\"}}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,\"rms_norm_eps\":0}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,\"attention_bias\":true}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1e10,\"num_attention_heads\":4}",
        "{\"model_type\":\"llama\",\"vocab_size\":10,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,\"hidden_act\":\"gelu\"}",
    };
    const char *needle[] = {"JSON", "object", "gpt2", "GPT2", "vocab_size", "multiple", "multiple", "vocab_size",
                            "num_attention_heads", "hidden_size", "yarn", "rms_norm_eps", "attention_bias", "num_hidden_layers", "silu"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (m2_hf_config_parse(bad[i], strlen(bad[i]), "bad.json", &c, &err) == 0) fail_msg("accepted %s", bad[i]);
        if (!strstr(err.msg, "bad.json") || !strstr(err.msg, needle[i])) fail_msg("'%s' lacks '%s'", err.msg, needle[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_single_and_sharded),
        cmocka_unit_test(corrupt_files),
        cmocka_unit_test(sharded_index_errors),
        cmocka_unit_test(hf_configs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
