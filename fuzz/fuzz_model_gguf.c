/* libFuzzer: a whole model from a GGUF (metadata -> config -> tensor checks -> engine model with
 * q/k un-permutation and dtype conversion, every block type kept as stored), then one decode step
 * (the quantised block products read whatever bytes the blocks hold). */
#include <stdint.h>
#include <stdlib.h>
#include "io/io.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) return 0;
    m2_model_opts o = {.dtype = M2_DTYPE_AUTO, .threads = 1};
    m2_model *m = m2_model_from_gguf(g, &o, NULL, &err);
    if (m) {
        m2_kv_cache *kv = m2_kv_create(m, 1, 2, &err);
        float *logits = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
        int32_t tok[2] = {0, m->cfg.vocab_size - 1};
        if (kv && logits && !m2_kv_append(m, NULL, kv, 0, tok, 1, logits, &err))
            m2_kv_append(m, NULL, kv, 0, tok + 1, 1, logits, &err);
        free(logits);
        m2_kv_free(kv);
    }
    m2_model_free(m);
    m2_gguf_close(g);
    return 0;
}
