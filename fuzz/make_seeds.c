/* Writes a small seed corpus for the fuzz targets: OUTDIR/{gguf,safetensors,hf_config,peft_config}/.
 * Files are made by the project's own writers (tiny random models, an adapter, every GGUF
 * metadata type) so the fuzzers start from valid structure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static void die(const m2_err *e) { fprintf(stderr, "make_seeds: %s\n", e->msg); exit(1); }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: make_seeds OUTDIR\n"); return 2; }
    const char *out = argv[1];
    char p[4096];
    m2_err err = {0};
    const char *subs[] = {"gguf", "safetensors", "hf_config", "peft_config"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", out, subs[i]);
        if (m2_mkdir_p(p, &err)) die(&err);
    }
    /* every metadata type, every tensor dtype */
    m2_gguf_writer *w = m2_gguf_writer_new();
    m2_gguf_set_str(w, "general.architecture", "llama");
    m2_gguf_set_u32(w, "general.alignment", 32);
    m2_gguf_set_i32(w, "k.i32", -3);
    m2_gguf_set_u64(w, "k.u64", 7);
    m2_gguf_set_f32(w, "k.f32", 0.5f);
    m2_gguf_set_bool(w, "k.bool", 1);
    const char *strs[] = {"a", "b c", "<s>"};
    m2_gguf_set_arr_str(w, "tokenizer.ggml.tokens", strs, 3);
    float sc[3] = {0, -1, -2};
    m2_gguf_set_arr(w, "tokenizer.ggml.scores", M2_GGUF_F32, sc, 3);
    int16_t i16[2] = {1, -1};
    m2_gguf_set_arr(w, "k.i16", M2_GGUF_I16, i16, 2);
    float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i / 9 - 3;
    int64_t ne[2] = {32, 2};
    uint32_t types[] = {M2_GGML_F32, M2_GGML_F16, M2_GGML_BF16, M2_GGML_Q8_0, M2_GGML_Q4_0};
    const char *names[] = {"t.f32", "t.f16", "t.bf16", "t.q8_0", "t.q4_0"};
    for (int i = 0; i < 5; i++)
        if (m2_gguf_add_tensor_f32(w, names[i], types[i], 2, ne, data, &err)) die(&err);
    snprintf(p, sizeof p, "%s/gguf/types.gguf", out);
    if (m2_gguf_writer_write(w, p, &err)) die(&err);
    m2_gguf_writer_free(w);

    /* tiny models of both families, in GGUF and HF form, plus adapters */
    for (int qwen = 0; qwen < 2; qwen++) {
        m2_model_config c = {0};
        c.family = qwen ? M2_FAMILY_QWEN2 : M2_FAMILY_LLAMA;
        c.vocab_size = 8; c.dim = 32; c.n_layers = 1; c.n_heads = 2; c.n_kv_heads = 1; c.ffn_dim = 32;
        c.max_seq_len = 16; c.norm_eps = 1e-5f; c.rope_theta = 10000; c.rope_layout = M2_ROPE_HALF;
        c.qkv_bias = qwen; c.tied_embeddings = qwen;
        if (!qwen) c.rope_scaling = (m2_rope_scaling){1, 8, 1, 4, 8};
        m2_model *m = m2_model_create(&c, NULL, &err);
        if (!m) die(&err);
        m2_model_init_random(m, 1, 0.5f);
        snprintf(p, sizeof p, "%s/gguf/%s-q8_0.gguf", out, qwen ? "qwen2" : "llama");
        if (m2_model_save_gguf(m, p, M2_GGML_Q8_0, NULL, &err)) die(&err);
        snprintf(p, sizeof p, "%s/%s-hf", out, qwen ? "qwen2" : "llama");
        if (m2_model_save_hf(m, p, M2_GGML_F16, 0, NULL, &err)) die(&err);
        char src[4200];
        snprintf(src, sizeof src, "%s/model.safetensors", p);
        char dst[4200];
        snprintf(dst, sizeof dst, "%s/safetensors/%s.safetensors", out, qwen ? "qwen2" : "llama");
        if (rename(src, dst)) { perror("rename"); return 1; }
        snprintf(src, sizeof src, "%s/config.json", p);
        snprintf(dst, sizeof dst, "%s/hf_config/%s.json", out, qwen ? "qwen2" : "llama");
        if (rename(src, dst)) { perror("rename"); return 1; }
        rmdir(p);
        m2_lora_config lc = {"seed", 2, 4.f, 0.f, M2_LORA_Q | M2_LORA_V};
        m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
        if (!a) die(&err);
        snprintf(p, sizeof p, "%s/gguf/%s-lora.gguf", out, qwen ? "qwen2" : "llama");
        if (m2_lora_gguf_save(m, a, p, &err)) die(&err);
        char *js = m2_peft_config_json(&a->cfg, "base/model");
        snprintf(p, sizeof p, "%s/peft_config/%s.json", out, qwen ? "qwen2" : "llama");
        if (m2_write_file_atomic(p, js, strlen(js), &err)) die(&err);
        free(js);
        m2_model_free(m);
    }
    printf("seed corpus written under %s\n", out);
    return 0;
}
