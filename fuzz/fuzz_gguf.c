/* libFuzzer: GGUF parsing, metadata getters, architecture config and tensor conversion. */
#include <stdint.h>
#include <stdlib.h>
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) return 0;
    m2_hf_config c;
    m2_hf_config_from_gguf(g, &c, &err);
    uint32_t u;
    float f;
    m2_gguf_get_u32(g, "general.alignment", &u, &err);
    m2_gguf_get_f32(g, "llama.rope.freq_base", &f, &err);
    m2_gguf_get_str(g, "tokenizer.ggml.model", &err);
    m2_gguf_get_arr(g, "tokenizer.ggml.tokens", M2_GGUF_STRING, &err);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *t = &g->tensors[i];
        if (t->n_elems > (1u << 16)) continue;
        float *buf = malloc(t->n_elems * sizeof(float));
        if (buf) m2_gguf_tensor_to_f32(g, t, buf, &err);
        free(buf);
    }
    /* re-encode every KV with the writer (exercises copy paths) */
    m2_gguf_writer *w = m2_gguf_writer_new();
    for (uint64_t i = 0; i < g->n_kv; i++) m2_gguf_set_kv(w, &g->kv[i]);
    m2_gguf_writer_free(w);
    m2_gguf_close(g);
    return 0;
}
