/* Model file throughput: a random Llama-shaped model (vocab 32000, d 256, 4 layers; ~16M
 * parameters) saved and loaded as GGUF f32 / q8_0 and as HF safetensors, each load compared with
 * the reference of reading the same file's bytes into memory (page cache, same run): the ratio
 * says how much the parsing, validation, permutation and conversion add over plain I/O.
 * Usage: bench_formats [DIR]   (default /tmp) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static double file_mb(const char *p) {
    struct stat s;
    if (stat(p, &s) != 0) return 0;
    return (double)s.st_size / 1e6;
}

/* best of 3 */
static double time_read(const char *p) {
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        char *buf;
        size_t len;
        m2_err err = {0};
        double t0 = m2_now_s();
        if (m2_read_file(p, &buf, &len, &err)) { fprintf(stderr, "%s\n", err.msg); exit(1); }
        double t = m2_now_s() - t0;
        free(buf);
        if (t < best) best = t;
    }
    return best;
}

static double time_load(const char *p) {
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        m2_err err = {0};
        double t0 = m2_now_s();
        m2_model *m = m2_model_load(p, NULL, NULL, &err);
        double t = m2_now_s() - t0;
        if (!m) { fprintf(stderr, "%s\n", err.msg); exit(1); }
        m2_model_free(m);
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    m2_blas_restart_with_better_core(argv);   /* OpenBLAS's fast kernels, as `multi2` gets them */
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    m2_model_config c = {0};
    c.family = M2_FAMILY_LLAMA;
    c.vocab_size = 32000; c.dim = 256; c.n_layers = 4; c.n_heads = 8; c.n_kv_heads = 4; c.ffn_dim = 768;
    c.max_seq_len = 2048; c.norm_eps = 1e-5f; c.rope_theta = 10000; c.rope_layout = M2_ROPE_HALF;
    m2_model_opts o = {.dtype = M2_DT_F32, .threads = 1};
    m2_err err = {0};
    m2_model *m = m2_model_create(&c, &o, &err);
    if (!m) { fprintf(stderr, "%s\n", err.msg); return 1; }
    m2_model_init_random(m, 1, 0.02f);
    char gf[512], gq[512], hf[512], hfile[600];
    snprintf(gf, sizeof gf, "%s/m2bench-f32.gguf", dir);
    snprintf(gq, sizeof gq, "%s/m2bench-q8_0.gguf", dir);
    snprintf(hf, sizeof hf, "%s/m2bench-hf", dir);
    snprintf(hfile, sizeof hfile, "%s/model.safetensors", hf);
    struct { const char *name, *path, *file; uint32_t type; int gguf; } cases[] = {
        {"gguf f32", gf, gf, M2_GGML_F32, 1}, {"gguf q8_0", gq, gq, M2_GGML_Q8_0, 1}, {"hf f32", hf, hfile, M2_GGML_F32, 0}};
    printf("model: %lld parameters (llama, vocab 32000, d 256, 4 layers)\n", m2_config_n_params(&c));
    printf("%-10s %9s %10s %10s %10s %8s\n", "format", "MB", "save s", "load s", "read s", "load/read");
    for (int k = 0; k < 3; k++) {
        double t0 = m2_now_s();
        int rc = cases[k].gguf ? m2_model_save_gguf(m, cases[k].path, cases[k].type, NULL, &err)
                               : m2_model_save_hf(m, cases[k].path, cases[k].type, 0, NULL, &err);
        double ts = m2_now_s() - t0;
        if (rc) { fprintf(stderr, "%s\n", err.msg); return 1; }
        double tl = time_load(cases[k].path), tr = time_read(cases[k].file);
        printf("%-10s %9.1f %10.3f %10.3f %10.3f %8.2f\n", cases[k].name, file_mb(cases[k].file), ts, tl, tr, tl / tr);
    }
    remove(gf); remove(gq); remove(hfile);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/config.json", hf);
    remove(cfg);
    rmdir(hf);
    m2_model_free(m);
    return 0;
}
