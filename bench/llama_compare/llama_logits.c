/* The last-token logits of llama.cpp after feeding up to 8 fixed token ids one at a time (its
 * decode path; with "prefill" all in one batch), as raw f32 on stdout:
 * bench/llama_compare/compare.sh builds it against a llama.cpp build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"
int main(int argc, char **argv) {
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64; cp.n_batch = 64; cp.n_threads = 1; cp.n_threads_batch = 1;
    struct llama_context *c = llama_init_from_model(m, cp);
    llama_token toks[8] = {11, 500, 7000, 42, 31000, 9, 123, 4567};
    int nt = atoi(argv[2]);
    int prefill = argc > 3 && !strcmp(argv[3], "prefill");
    for (int i = 0; i < nt; i += prefill ? nt : 1)   /* one token at a time: the decode path */
        if (llama_decode(c, llama_batch_get_one(&toks[i], prefill ? nt : 1))) return 2;
    const float *l = llama_get_logits_ith(c, -1);
    int V = llama_vocab_n_tokens(llama_model_get_vocab(m));
    fwrite(l, sizeof(float), V, stdout);
    return 0;
}
