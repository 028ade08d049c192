/* io/peft: PEFT adapter folders (names, shapes, config keys as PEFT writes them), llama.cpp LoRA
 * GGUFs (ne, metadata, permuted q/k lora_b for llama), critic heads; all reload bit-exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
#include "json_file.h"
#include "tmpdir.h"

static char tmpdir[64];
static int setup(void **state) { return m2t_tmpdir(tmpdir, sizeof tmpdir, "peft"); }
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static m2_model *make_model(int qwen) {
    m2_model_config c = {0};
    m2_err err = {0};
    assert_int_equal(m2_config_preset(qwen ? "test-qwen2" : "test-llama", &c, &err), 0);
    m2_model *m = m2_model_create(&c, NULL, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, 5, 0.5f);
    return m;
}

static m2_adapter *random_adapter(m2_model *m, const char *name, unsigned targets, int rank, uint64_t seed) {
    m2_lora_config lc = {0};
    snprintf(lc.name, sizeof lc.name, "%s", name);
    lc.rank = rank; lc.alpha = 2.f * rank; lc.dropout = 0.05f; lc.targets = targets;
    m2_err err = {0};
    m2_adapter *a = m2_adapter_add(m, &lc, seed, &err);
    if (!a) fail_msg("%s", err.msg);
    m2_rng r;
    m2_rng_seed(&r, seed);
    for (size_t i = 0; i < a->params.n; i++) a->params.w[i] = m2_rng_normal(&r);   /* B != 0 too */
    return a;
}

static void same_adapter(const m2_adapter *a, const m2_adapter *b) {
    assert_int_equal(a->cfg.rank, b->cfg.rank);
    assert_true(a->cfg.alpha == b->cfg.alpha);
    assert_int_equal(a->cfg.targets, b->cfg.targets);
    assert_int_equal(a->params.n, b->params.n);
    int n = m2_adapter_tensor_count(a);
    assert_int_equal(n, m2_adapter_tensor_count(b));
    for (int i = 0; i < n; i++) {
        char na[128], nb[128];
        int ra, ca, rb, cb;
        float *da, *db;
        m2_adapter_tensor_info(a, i, na, sizeof na, &ra, &ca, &da);
        m2_adapter_tensor_info(b, i, nb, sizeof nb, &rb, &cb, &db);
        assert_string_equal(na, nb);
        assert_int_equal(ra, rb);
        assert_int_equal(ca, cb);
        if (memcmp(da, db, sizeof(float) * ra * ca)) fail_msg("%s differs", na);
    }
}

static void peft_folder(void **state) {
    for (int qwen = 0; qwen < 2; qwen++) {
        m2_model *m = make_model(qwen);
        m2_adapter *a = random_adapter(m, "sys2", M2_LORA_Q | M2_LORA_V | M2_LORA_DOWN, 4, 9);
        char dir[160], p[300];
        snprintf(dir, sizeof dir, "%s/peft-%d", tmpdir, qwen);
        m2_err err = {0};
        assert_int_equal(m2_peft_save(m, a, dir, "Qwen/Qwen2.5-3B", &err), 0);
        /* the config has PEFT's keys and values */
        cJSON *j = m2t_read_json(dir, "adapter_config.json");
        assert_string_equal(cJSON_GetObjectItem(j, "peft_type")->valuestring, "LORA");
        assert_string_equal(cJSON_GetObjectItem(j, "task_type")->valuestring, "CAUSAL_LM");
        assert_string_equal(cJSON_GetObjectItem(j, "bias")->valuestring, "none");
        assert_string_equal(cJSON_GetObjectItem(j, "base_model_name_or_path")->valuestring, "Qwen/Qwen2.5-3B");
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "fan_in_fan_out")));
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "use_dora")));
        assert_int_equal(cJSON_GetObjectItem(j, "r")->valueint, 4);
        assert_int_equal(cJSON_GetObjectItem(j, "lora_alpha")->valueint, 8);
        assert_true(fabs(cJSON_GetObjectItem(j, "lora_dropout")->valuedouble - 0.05) < 1e-6);
        cJSON *tm = cJSON_GetObjectItem(j, "target_modules");
        assert_int_equal(cJSON_GetArraySize(tm), 3);
        assert_string_equal(cJSON_GetArrayItem(tm, 0)->valuestring, "q_proj");
        assert_string_equal(cJSON_GetArrayItem(tm, 1)->valuestring, "v_proj");
        assert_string_equal(cJSON_GetArrayItem(tm, 2)->valuestring, "down_proj");
        cJSON_Delete(j);
        /* tensor names and shapes as PEFT writes them */
        snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
        m2_safetensors *st = m2_st_open(p, &err);
        assert_non_null(st);
        assert_int_equal(st->n_tensors, 2 * 3 * m->cfg.n_layers);
        int H = m->cfg.dim, qd = m->cfg.n_heads * m->cfg.head_dim, kd = m->cfg.n_kv_heads * m->cfg.head_dim;
        const m2_st_tensor *t = m2_st_find(st, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
        assert_non_null(t);
        assert_string_equal(t->dtype, "F32");
        assert_int_equal(t->shape[0], 4); assert_int_equal(t->shape[1], H);
        t = m2_st_find(st, "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight");
        assert_non_null(t);
        assert_int_equal(t->shape[0], kd); assert_int_equal(t->shape[1], 4);
        t = m2_st_find(st, "base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight");
        assert_int_equal(t->shape[0], qd);
        t = m2_st_find(st, "base_model.model.model.layers.1.mlp.down_proj.lora_A.weight");
        assert_int_equal(t->shape[0], 4); assert_int_equal(t->shape[1], m->cfg.ffn_dim);
        m2_st_close(st);
        /* reload: identical factors */
        m2_adapter *b = m2_adapter_load(m, dir, "reloaded", &err);
        if (!b) fail_msg("%s", err.msg);
        assert_string_equal(b->cfg.name, "reloaded");
        same_adapter(a, b);
        /* a base of another shape refuses it */
        m2_model *other = make_model(!qwen);
        other->cfg.n_layers = other->cfg.n_layers;
        m2_adapter *c = m2_peft_load(other, dir, NULL, &err);
        if (m->cfg.dim != other->cfg.dim || m->cfg.n_heads * m->cfg.head_dim != other->cfg.n_heads * other->cfg.head_dim ||
            m->cfg.n_kv_heads != other->cfg.n_kv_heads || m->cfg.ffn_dim != other->cfg.ffn_dim) {
            assert_null(c);
            assert_non_null(strstr(err.msg, dir));
        }
        m2_model_free(other);

        /* llama.cpp LoRA GGUF */
        snprintf(p, sizeof p, "%s/lora-%d.gguf", tmpdir, qwen);
        assert_int_equal(m2_lora_gguf_save(m, a, p, &err), 0);
        m2_gguf *g = m2_gguf_open(p, &err);
        assert_non_null(g);
        assert_string_equal(m2_gguf_get_str(g, "general.type", &err), "adapter");
        assert_string_equal(m2_gguf_get_str(g, "adapter.type", &err), "lora");
        assert_string_equal(m2_gguf_get_str(g, "general.architecture", &err), qwen ? "qwen2" : "llama");
        assert_true(m2_gguf_f32_or(g, "adapter.lora.alpha", 0) == 8.f);
        const m2_gguf_tensor *ga = m2_gguf_find_tensor(g, "blk.0.attn_q.weight.lora_a");
        const m2_gguf_tensor *gb = m2_gguf_find_tensor(g, "blk.0.attn_q.weight.lora_b");
        assert_non_null(ga); assert_non_null(gb);
        assert_int_equal(ga->ne[0], H); assert_int_equal(ga->ne[1], 4);     /* model ne[0] == a ne[0] */
        assert_int_equal(gb->ne[0], 4); assert_int_equal(gb->ne[1], qd);    /* a ne[1] == b ne[0] */
        int rows, cols;
        float *B = m2_adapter_tensor(a, "blk.0.attn_q.weight.lora_b", &rows, &cols);
        float *perm = malloc(sizeof(float) * rows * cols);
        if (qwen) memcpy(perm, B, sizeof(float) * rows * cols);
        else m2_rope_permute_rows(B, perm, m->cfg.n_heads, m->cfg.head_dim, sizeof(float) * cols, 1);
        assert_memory_equal(gb->data, perm, sizeof(float) * rows * cols);
        free(perm);
        m2_gguf_close(g);
        b = m2_adapter_load(m, p, NULL, &err);
        if (!b) fail_msg("%s", err.msg);
        assert_string_equal(b->cfg.name, qwen ? "lora-1" : "lora-0");
        same_adapter(a, b);
        m2_model_free(m);
    }
}

static void peft_config_errors(void **state) {
    m2_lora_config c;
    m2_err err = {0};
    char base[64];
    const char *ok = "{\"peft_type\":\"LORA\",\"r\":8,\"lora_alpha\":16,\"target_modules\":[\"q_proj\",\"v_proj\"],\"base_model_name_or_path\":\"x/y\",\"use_rslora\":false}";
    assert_int_equal(m2_peft_config_parse(ok, strlen(ok), "a.json", &c, base, sizeof base, &err), 0);
    assert_int_equal(c.rank, 8);
    assert_true(c.alpha == 16.f);
    assert_int_equal(c.targets, M2_LORA_Q | M2_LORA_V);
    assert_string_equal(base, "x/y");
    const char *rs = "{\"r\":4,\"lora_alpha\":8,\"target_modules\":\"all-linear\",\"use_rslora\":true}";
    assert_int_equal(m2_peft_config_parse(rs, strlen(rs), "a.json", &c, NULL, 0, &err), 0);
    assert_int_equal(c.targets, M2_LORA_ALL);
    assert_true(fabsf(c.alpha / c.rank - 8.f / 2.f) < 1e-6f);   /* rsLoRA: alpha / sqrt(r) */
    const char *bad[] = {
        "{", "{\"r\":0,\"target_modules\":[\"q_proj\"]}", "{\"r\":2.5,\"target_modules\":[\"q_proj\"]}",
        "{\"r\":4,\"target_modules\":[\"c_attn\"]}", "{\"r\":4,\"target_modules\":\".*q_proj\"}", "{\"r\":4}",
        "{\"r\":4,\"target_modules\":[\"q_proj\"],\"use_dora\":true}", "{\"r\":4,\"target_modules\":[\"q_proj\"],\"bias\":\"all\"}",
        "{\"r\":4,\"target_modules\":[\"q_proj\"],\"peft_type\":\"IA3\"}", "{\"r\":4,\"target_modules\":[\"q_proj\"],\"rank_pattern\":{\"x\":2}}",
        "{\"r\":4,\"target_modules\":[\"q_proj\"],\"modules_to_save\":[\"lm_head\"]}", "{\"r\":4,\"target_modules\":[\"q_proj\"],\"lora_dropout\":1.5}",
        "{\"r\":4,\"target_modules\":[]}", "{\"r\":4,\"target_modules\":[1]}", "[]",
        "{\"r\":4,\"target_modules\":[\"q_proj\"],\"lora_bias\":true}",
        "{\"r\":4,\"target_modules\":[\"q_proj\"],\"trainable_token_indices\":[1,2]}",
    };
    const char *needle[] = {"JSON", "\"r\"", "\"r\"", "c_attn", "regex", "target_modules", "use_dora", "bias", "peft_type",
                            "rank_pattern", "modules_to_save", "lora_dropout", "empty", "non-string", "object",
                            "lora_bias", "trainable_token_indices"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (m2_peft_config_parse(bad[i], strlen(bad[i]), "bad.json", &c, NULL, 0, &err) == 0) fail_msg("accepted %s", bad[i]);
        if (!strstr(err.msg, "bad.json") || !strstr(err.msg, needle[i])) fail_msg("'%s' lacks '%s'", err.msg, needle[i]);
    }
    /* a folder with extra or missing tensors is refused */
    m2_model *m = make_model(0);
    m2_adapter *a = random_adapter(m, "x", M2_LORA_Q, 2, 1);
    char dir[160], p[300];
    snprintf(dir, sizeof dir, "%s/peft-bad", tmpdir);
    assert_int_equal(m2_peft_save(m, a, dir, NULL, &err), 0);
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    const char *more = "{\"r\":2,\"lora_alpha\":4,\"target_modules\":[\"q_proj\",\"k_proj\"]}";
    assert_int_equal(m2_write_file_atomic(p, more, strlen(more), &err), 0);
    int before = m->n_adapters;
    assert_null(m2_peft_load(m, dir, NULL, &err));
    assert_non_null(strstr(err.msg, "need"));
    assert_int_equal(m->n_adapters, before);   /* the half-loaded adapter was removed */
    const char *rank = "{\"r\":3,\"lora_alpha\":4,\"target_modules\":[\"q_proj\"]}";
    assert_int_equal(m2_write_file_atomic(p, rank, strlen(rank), &err), 0);
    assert_null(m2_peft_load(m, dir, NULL, &err));
    assert_non_null(strstr(err.msg, "lora_A"));
    m2_model_free(m);
}

static void heads_file(void **state) {
    m2_model *m = make_model(1);
    m2_err err = {0};
    m2_head *q = m2_head_add(m, "q", 3, &err), *v = m2_head_add_sized(m, "v", 7, 4, &err);   /* v: H -> 7 -> 1 */
    assert_non_null(q); assert_non_null(v);
    v->grad_to_body = 1;
    m2_rng r;
    m2_rng_seed(&r, 2);
    for (size_t i = 0; i < q->params.n; i++) q->target[i] = m2_rng_normal(&r);
    for (size_t i = 0; i < v->params.n; i++) v->params.w[i] = m2_rng_normal(&r);
    char p[160];
    snprintf(p, sizeof p, "%s/heads.safetensors", tmpdir);
    m2_head *hs[2] = {q, v};
    assert_int_equal(m2_heads_save(hs, 2, p, &err), 0);
    m2_model *m2 = make_model(1);
    assert_int_equal(m2_heads_load(m2, p, &err), 0);
    m2_head *q2 = m2_head_find(m2, "q"), *v2 = m2_head_find(m2, "v");
    assert_non_null(q2); assert_non_null(v2);
    assert_int_equal(v2->grad_to_body, 1);
    assert_memory_equal(q2->params.w, q->params.w, q->params.n * 4);
    assert_memory_equal(q2->target, q->target, q->params.n * 4);
    assert_int_equal(v2->F, 7);
    assert_int_equal(v2->params.n, v->params.n);
    assert_memory_equal(v2->params.w, v->params.w, v->params.n * 4);
    assert_memory_equal(v2->target, v->target, v->params.n * 4);
    /* a model whose head "v" has another width refuses the file, naming both widths */
    m2_model *m3 = make_model(1);
    assert_non_null(m2_head_add(m3, "v", 5, &err));
    assert_int_equal(m2_heads_load(m3, p, &err), -1);
    assert_non_null(strstr(err.msg, "hidden width 7"));
    m2_model_free(m3);
    m2_model *other = make_model(0);
    if (other->cfg.dim != m->cfg.dim) {
        assert_int_equal(m2_heads_load(other, p, &err), -1);
        assert_non_null(strstr(err.msg, "hidden size"));   /* W1 is [F, H]: H must be the model's */
    }
    m2_model_free(other);
    m2_model_free(m);
    m2_model_free(m2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peft_folder),
        cmocka_unit_test(peft_config_errors),
        cmocka_unit_test(heads_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
