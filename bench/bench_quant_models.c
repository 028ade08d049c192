/* Writes one random Qwen2-shaped model (seeded; tied embeddings) as GGUF in several storage types,
 * the files `multi2 bench generate` and bench/llama_bench.sh time:
 *   bench_quant_models OUTDIR [f32,q8_0,q4_k,q4_0] [TOKENIZER.gguf]
 * TOKENIZER.gguf (e.g. ../shared/data/tokenizers/vectors/ggml-vocab-gpt-2.gguf): its tokenizer.*
 * keys are copied and the vocabulary takes its size, so llama.cpp can load the files too.
 * Shape: vocab 32000 (or the tokenizer's: gpt-2's 50257), d 512, 8 layers, 8 heads / 2 KV heads
 * (head dim 64), FFN 2048: 46.5 M parameters, 186 MB in f32 (56.3 M, 226 MB with gpt-2's
 * vocabulary). Random weights: speed and memory only, not a language model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_quant_models OUTDIR [types, default f32,q8_0,q4_k,q4_0]\n"); return 2; }
    const char *types = argc > 2 ? argv[2] : "f32,q8_0,q4_k,q4_0";
    m2_err err = {0};
    m2_gguf *tok = NULL;
    if (argc > 3 && !(tok = m2_gguf_open(argv[3], &err))) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const m2_gguf_kv *vocab = tok ? m2_gguf_get_arr(tok, "tokenizer.ggml.tokens", M2_GGUF_STRING, &err) : NULL;
    if (tok && !vocab) { fprintf(stderr, "%s\n", err.msg); m2_gguf_close(tok); return 1; }
    m2_model_config c = {0};
    c.family = M2_FAMILY_QWEN2;
    c.vocab_size = vocab ? (int)vocab->n : 32000; c.dim = 512; c.n_layers = 8; c.n_heads = 8; c.n_kv_heads = 2; c.head_dim = 64;
    c.ffn_dim = 2048; c.max_seq_len = 4096; c.norm_eps = 1e-6f; c.rope_theta = 1e6f;
    c.rope_layout = M2_ROPE_HALF; c.qkv_bias = 1; c.tied_embeddings = 1; c.bos_token = -1; c.eos_token = -1;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_model *m = m2_model_create(&c, &o, &err);
    if (!m) { fprintf(stderr, "%s\n", err.msg); return 1; }
    m2_model_init_random(m, 1, 0.02f);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", types);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        m2_ggml_type gt;
        if (m2_ggml_type_parse(t, &gt)) { fprintf(stderr, "unknown type '%s'\n", t); m2_model_free(m); m2_gguf_close(tok); return 2; }
        char path[4096];
        snprintf(path, sizeof path, "%s/qwen2-bench-%s.gguf", argv[1], t);
        if (m2_model_save_gguf(m, path, gt, tok, &err)) { fprintf(stderr, "%s\n", err.msg); m2_model_free(m); m2_gguf_close(tok); return 1; }
        printf("%s\n", path);
    }
    m2_model_free(m);
    m2_gguf_close(tok);
    return 0;
}
