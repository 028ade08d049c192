/* Tokenizer speed: tokenizer.json / GGUF load time, encode and decode throughput, BPE training time.
 * Reads ../shared/data (or $M2_SHARED_DATA); skips what is absent. Prints one line per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "io/io.h"

static const char *data_dir(void) {
    const char *d = m2_shared_data_dir();
    return d ? d : "../shared/data";
}

/* ~size bytes of the llama.cpp vector strings, repeated (mixed scripts, digits, whitespace). */
static char *vector_text(size_t size, size_t *len) {
    char p[1024], *inp = NULL;
    size_t il = 0;
    m2_err err = {0};
    snprintf(p, sizeof p, "%s/tokenizers/vectors/ggml-vocab-qwen2.gguf.inp", data_dir());
    if (m2_read_file(p, &inp, &il, &err)) return NULL;
    char *out = malloc(size + il + 1);
    size_t n = 0;
    while (n < size) { memcpy(out + n, inp, il); n += il; }
    out[n] = 0;
    free(inp);
    *len = n;
    return out;
}

/* Pseudo-English from syllables: a training corpus with a Zipf-ish word distribution. */
static char *synthetic_corpus(size_t size, size_t *len) {
    static const char *syl[] = {"the", "an", "cr", "aft", "ing", "pl", "ank", "st", "ick", "oak", "log", "ta", "ble",
                                "kit", "chen", "fri", "dge", "app", "le", "wa", "ter", "mea", "sure", "tem", "per"};
    m2_rng r;
    m2_rng_seed(&r, 1234);
    char *out = malloc(size + 64);
    size_t n = 0;
    while (n < size) {
        int k = 1 + (int)m2_rng_below(&r, 3);
        for (int i = 0; i < k; i++) {
            float u = m2_rng_uniform(&r);
            const char *s = syl[(int)(25 * u * u)];   /* skewed: a few syllables dominate */
            size_t l = strlen(s);
            memcpy(out + n, s, l); n += l;
        }
        if (m2_rng_below(&r, 20) == 0) out[n++] = (char)('0' + m2_rng_below(&r, 10));
        out[n++] = m2_rng_below(&r, 12) == 0 ? '\n' : ' ';
    }
    out[n] = 0;
    *len = n;
    return out;
}

static void bench_one(const char *rel, const char *text, size_t len) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", data_dir(), rel);
    if (!m2_path_exists(p)) { printf("%-44s skipped (not found)\n", rel); return; }
    m2_err err = {0};
    double best = 1e9;
    m2_tokenizer *t = NULL;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = m2_now_s();
        m2_tokenizer *x = m2_tokenizer_load(p, &err);
        double dt = m2_now_s() - t0;
        if (!x) { printf("%s: %s\n", rel, err.msg); return; }
        if (dt < best) best = dt;
        if (t) m2_tokenizer_free(t);
        t = x;
    }
    m2_tokens ids = {0};
    double t0 = m2_now_s();
    if (m2_tokenizer_encode(t, text, len, 0, &ids, &err)) { printf("%s: %s\n", rel, err.msg); m2_tokenizer_free(t); return; }
    double enc = m2_now_s() - t0;
    char *out = NULL;
    size_t ol = 0;
    t0 = m2_now_s();
    m2_tokenizer_decode(t, ids.ids, ids.n, 0, &out, &ol, &err);
    double dec = m2_now_s() - t0;
    printf("%-44s load %6.3f s  encode %6.2f MB/s (%.2f bytes/token)  decode %7.1f MB/s  round trip %s\n", rel, best,
           len / enc / 1e6, (double)len / (double)(ids.n ? ids.n : 1), len / (dec > 0 ? dec : 1e-9) / 1e6,
           ol == len && !memcmp(out, text, len) ? "exact" : "DIFFERS");
    free(out);
    m2_tokens_free(&ids);
    m2_tokenizer_free(t);
}

int main(void) {
    size_t len = 0;
    char *text = vector_text(2u << 20, &len);
    if (text) {
        printf("encode text: %zu bytes of the llama.cpp vector strings, repeated\n", len);
        bench_one("tokenizers/qwen2/tokenizer.json", text, len);
        bench_one("tokenizers/llama3/tokenizer.json", text, len);
        bench_one("tokenizers/llama2/tokenizer.json", text, len);   /* Mistral-7B's, despite the folder */
        bench_one("tokenizers/vectors/ggml-vocab-gpt-2.gguf", text, len);
        bench_one("tokenizers/vectors/ggml-vocab-llama-spm.gguf", text, len);
        free(text);
    } else {
        printf("reference data not found under %s: load/encode figures skipped\n", data_dir());
    }
    size_t cl = 0;
    char *corpus = synthetic_corpus(4u << 20, &cl);
    m2_bpe_train_opts o = {0};
    o.vocab_size = 8192;
    m2_err err = {0};
    double t0 = m2_now_s();
    m2_tokenizer *t = m2_bpe_train(corpus, cl, &o, &err);
    double dt = m2_now_s() - t0;
    if (!t) printf("bpe train: %s\n", err.msg);
    else printf("bpe train: %zu bytes -> %d tokens (%d merges) in %.2f s (%.1f MB/s)\n", cl,
                m2_tokenizer_n_tokens(t), m2_tokenizer_n_merges(t), dt, cl / dt / 1e6);
    m2_tokenizer_free(t);
    free(corpus);
    return 0;
}
