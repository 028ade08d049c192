/* The same as llama_logits.c through multi2 (m2_kv_append one token at a time: the row products
 * of the quantised blocks; with "prefill" all tokens in one call: the integer GEMM where the CPU
 * has it), raw f32 logits on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
int main(int argc, char **argv) {
    m2_err err = {0};
    m2_model_opts o = {.dtype = M2_DTYPE_AUTO, .threads = 1};
    m2_model *m = m2_model_load(argv[1], &o, NULL, &err);
    if (!m) { fprintf(stderr, "%s\n", err.msg); return 1; }
    int32_t toks[8] = {11, 500, 7000, 42, 31000, 9, 123, 4567};
    int nt = atoi(argv[2]);
    m2_kv_cache *kv = m2_kv_create(m, 1, 64, &err);
    float *l = malloc(sizeof(float) * m->cfg.vocab_size);
    int prefill = argc > 3 && !strcmp(argv[3], "prefill");
    for (int i = 0; i < nt; i += prefill ? nt : 1)
        if (m2_kv_append(m, NULL, kv, 0, &toks[i], prefill ? nt : 1, l, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    fwrite(l, sizeof(float), m->cfg.vocab_size, stdout);
    return 0;
}
