/* libFuzzer: a whole model from a GGUF (metadata -> config -> tensor checks -> engine model with
 * q/k un-permutation and dtype conversion), and a LoRA-adapter style metadata check. */
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
    m2_model_free(m);
    m2_gguf_close(g);
    return 0;
}
