/* multi2 bench generate: prompt processing and generation speed on any model file, the way
 * llama.cpp's llama-bench measures them (pp: one prefill of N prompt tokens; tg: M tokens decoded
 * one at a time after a one-token prompt), so bench/llama_bench.sh can print the ratios on the
 * same file and thread count. Also the memory the loaded model takes against the file size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 bench generate --model FILE [--prompt-tokens N] [--gen-tokens M] [--threads T]\n"
               "                             [--reps R] [--dtype TYPE] [--json]\n\n"
               "  --model FILE        a GGUF (a split one by its first part) or an HF folder\n"
               "  --prompt-tokens N   prompt processed in one prefill (default 512, llama-bench's pp512)\n"
               "  --gen-tokens M      tokens generated one at a time, greedy (default 128, tg128)\n"
               "  --threads T         threads (default: M2_THREADS or the machine)\n"
               "  --reps R            repetitions; the median counts (default 3)\n"
               "  --dtype TYPE        convert the matrices to TYPE (default: as stored in the file)\n"
               "  --tiles             generate through dequantised tiles (the training path) instead of\n"
               "                      the quantised block products: the reference for their speed-up\n"
               "  --json              one JSON object\n");
}

/* kB field of /proc/self/status (VmRSS, VmHWM); 0 when unreadable */
static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    long v = 0;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') { v = strtol(line + fl + 1, NULL, 10); break; }
    fclose(f);
    return v;
}

/* Bytes of the model file, every part of a split one (PREFIX-00001-of-0000N.gguf). */
static double file_bytes(const char *path) {
    struct stat st;
    if (stat(path, &st)) return 0;
    double total = (double)st.st_size;
    size_t n = strlen(path);
    const char *tail = "-00001-of-00000.gguf";
    size_t tl = strlen(tail);
    int parts;
    if (n > tl && !strncmp(path + n - tl, "-00001-of-", 10) && sscanf(path + n - tl + 10, "%5d.gguf", &parts) == 1) {
        char *p = malloc(n + 32);
        if (!p) return total;
        memcpy(p, path, n + 1);
        for (int i = 2; i <= parts; i++) {
            snprintf(p + n - tl, 32 + tl, "-%05d-of-%05d.gguf", i, parts);
            if (!stat(p, &st)) total += (double)st.st_size;
        }
        free(p);
    }
    return total;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int argmax(const float *x, int n) {
    int a = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[a]) a = i;
    return a;
}

int bench_generate_main(int argc, char **argv) {
    const char *model = NULL, *dtype_s = NULL;
    int json = 0, threads = 0, P = 512, G = 128, reps = 3, tiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--tiles")) { tiles = 1; continue; }
        int *ival = !strcmp(a, "--prompt-tokens") ? &P : !strcmp(a, "--gen-tokens") ? &G : !strcmp(a, "--threads") ? &threads
                    : !strcmp(a, "--reps") ? &reps : NULL;
        const char **sval = !strcmp(a, "--model") ? &model : !strcmp(a, "--dtype") ? &dtype_s : NULL;
        if (!ival && !sval) { fprintf(stderr, "bench generate: unknown option '%s'\n", a); usage(stderr); return 2; }
        if (i + 1 >= argc) { fprintf(stderr, "bench generate: %s needs a value\n", a); return 2; }
        const char *v = argv[++i];
        if (sval) { *sval = v; continue; }
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || end == v || x < (ival == &threads ? 0 : 1) || x > (1 << 20)) {
            fprintf(stderr, "bench generate: %s: '%s' is not a valid count\n", a, v);
            return 2;
        }
        *ival = (int)x;
    }
    if (!model) { fprintf(stderr, "bench generate: --model is required\n"); usage(stderr); return 2; }
    m2_model_opts o = {.dtype = M2_DTYPE_AUTO, .threads = threads};
    if (dtype_s && m2_dtype_parse(dtype_s, &o.dtype)) { fprintf(stderr, "bench generate: unknown --dtype '%s'\n", dtype_s); return 2; }
    m2_err err = {0};
    long rss0 = status_kb("VmRSS");
    double t0 = m2_now_s();
    m2_model *m = m2_model_load(model, &o, NULL, &err);
    if (!m) { fprintf(stderr, "bench generate: %s\n", err.msg); return 1; }
    double load_s = m2_now_s() - t0;
    m->gen_tiles = tiles;
    long rss_load = status_kb("VmRSS");
    int V = m->cfg.vocab_size, nthreads = m2_pool_threads(m->pool);
    if (P + G + 1 > m->cfg.max_seq_len) {
        fprintf(stderr, "bench generate: %d + %d tokens exceed the model's context of %d\n", P, G, m->cfg.max_seq_len);
        m2_model_free(m);
        return 2;
    }
    /* storage types, counted over the matrices */
    int count[M2_DT_COUNT] = {0};
    for (int i = 0; i < m->n_tensors; i++) if (m->tensors[i].ndim == 2) count[m->tensors[i].dtype]++;
    char types[256];
    int tl = 0;
    for (int t = 0; t < M2_DT_COUNT; t++)
        if (count[t]) tl += snprintf(types + tl, sizeof types - tl, "%s\"%s\": %d", tl ? ", " : "", m2_dtype_name((m2_dtype)t), count[t]);
    types[tl] = 0;
    m2_kv_cache *kv = m2_kv_create(m, 1, P + G + 1, &err);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)P);
    float *logits = malloc(sizeof(float) * (size_t)V);
    double *pp = malloc(sizeof(double) * (size_t)reps), *tg = malloc(sizeof(double) * (size_t)reps);
    double *tgc = malloc(sizeof(double) * (size_t)reps), *ppc = malloc(sizeof(double) * (size_t)reps);
    if (!kv || !prompt || !logits || !pp || !tg || !tgc || !ppc) {
        free(tgc); free(ppc);
        fprintf(stderr, "bench generate: %s\n", kv ? "out of memory" : err.msg);
        m2_kv_free(kv); free(prompt); free(logits); free(pp); free(tg); m2_model_free(m);
        return 1;
    }
    m2_rng rng;
    m2_rng_seed(&rng, 1);
    for (int i = 0; i < P; i++) prompt[i] = (int32_t)m2_rng_below(&rng, (uint32_t)V);
    int rc = 0;
    /* one untimed warm-up of each (page faults of a mapped file, first-touch of the cache) */
    for (int r = -1; r < reps && !rc; r++) {
        m2_kv_clear(kv, -1);
        double a = m2_now_s(), ac = m2_process_cpu_s();
        rc = m2_kv_append(m, NULL, kv, 0, prompt, P, logits, &err);
        double b = m2_now_s(), abc = m2_process_cpu_s();
        m2_kv_clear(kv, -1);
        double bc = m2_process_cpu_s();
        int32_t tok = prompt[0];
        for (int k = 0; k < G && !rc; k++) {
            rc = m2_kv_append(m, NULL, kv, 0, &tok, 1, logits, &err);
            tok = (int32_t)argmax(logits, V);
        }
        double c = m2_now_s(), cc = m2_process_cpu_s();
        if (r >= 0) { pp[r] = P / (b - a); tg[r] = G / (c - b); tgc[r] = G / (cc - bc); ppc[r] = P / (abc - ac); }
    }
    if (rc) {
        fprintf(stderr, "bench generate: %s\n", err.msg);
        m2_kv_free(kv); free(prompt); free(logits); free(pp); free(tg); free(tgc); free(ppc); m2_model_free(m);
        return 1;
    }
    qsort(tgc, reps, sizeof *tgc, cmp_d);
    qsort(ppc, reps, sizeof *ppc, cmp_d);
    qsort(pp, reps, sizeof *pp, cmp_d);
    qsort(tg, reps, sizeof *tg, cmp_d);
    double pp_med = pp[reps / 2], tg_med = tg[reps / 2], fb = file_bytes(model);
    long rss_end = status_kb("VmRSS"), hwm = status_kb("VmHWM");
    const char *path = tiles ? "dequantised tiles" : m2_qdot_path_name(m2_qdot_best());
    if (json)
        printf("{\"model\": \"%s\", \"file_mib\": %.1f, \"types\": {%s}, \"threads\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d, "
               "\"reps\": %d, \"prompt_tokens_per_s\": %.1f, \"gen_tokens_per_s\": %.2f, \"prompt_tokens_per_s_min\": %.1f, "
               "\"gen_tokens_per_s_min\": %.2f, \"gen_tokens_per_cpu_s\": %.2f, \"prompt_tokens_per_cpu_s\": %.1f, \"load_s\": %.3f, \"rss_before_load_mib\": %.1f, \"rss_after_load_mib\": %.1f, "
               "\"rss_end_mib\": %.1f, \"peak_rss_mib\": %.1f, \"mapped_mib\": %.1f, \"kv_cache_mib\": %.1f, \"qdot_path\": \"%s\"}\n",
               model, fb / 1048576.0, types, nthreads, P, G, reps, pp_med, tg_med, pp[0], tg[0], tgc[reps / 2], ppc[reps / 2], load_s, rss0 / 1024.0,
               rss_load / 1024.0, rss_end / 1024.0, hwm / 1024.0, m->mapped_bytes / 1048576.0,
               2.0 * m->cfg.n_layers * (P + G + 1) * kv->kv_dim * 4 / 1048576.0, path);
    else {
        printf("model %s (%.1f MiB; matrices: %s), %d threads, products: %s\n", model, fb / 1048576.0, types, nthreads, path);
        printf("prompt  pp%-5d %10.1f tokens/s (median of %d)\n", P, pp_med, reps);
        printf("gen     tg%-5d %10.2f tokens/s (%.2f per CPU second of the process)\n", G, tg_med, tgc[reps / 2]);
        printf("memory: resident %.1f MiB after loading (%.1f MiB mapped from the file), peak %.1f MiB; load %.2f s\n",
               rss_load / 1024.0, m->mapped_bytes / 1048576.0, hwm / 1024.0, load_s);
    }
    m2_kv_free(kv); free(prompt); free(logits); free(pp); free(tg); free(tgc); free(ppc);
    m2_model_free(m);
    return 0;
}
