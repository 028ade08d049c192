/* libFuzzer: safetensors header parsing, validation and tensor conversion. */
#include <stdint.h>
#include <stdlib.h>
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_safetensors *st = m2_st_open_memory(data, size, "fuzz.safetensors", &err);
    if (!st) return 0;
    m2_st_meta(st, "format");
    for (size_t i = 0; i < st->n_tensors; i++) {
        const m2_st_tensor *t = &st->tensors[i];
        m2_st_find(st, t->name);
        if (t->n_elems > (1u << 16)) continue;
        float *buf = malloc(t->n_elems * sizeof(float) + 1);
        if (buf) m2_st_tensor_to_f32(st, t, buf, &err);
        free(buf);
    }
    m2_st_close(st);
    return 0;
}
