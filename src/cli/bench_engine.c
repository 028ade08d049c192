/* multi2 bench engine: the DESIGN.md §9 shapes — vocab 2048, d 256, 4 layers, 8 heads, 4 KV heads,
 * FFN 768, batch 8 x T 256, LoRA r=16 on q and v over a frozen f32 base, AdamW — timed as a full
 * train step (forward + backward + AdamW), with the linear-layer GEMMs' rate compared to raw
 * OpenBLAS sgemm measured in the same run, plus KV-cache generation. Prints one JSON object with
 * --json (bench/engine_torch.py runs the same shapes in PyTorch and prints the ratio). */
#include <cblas.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/core.h"
#include "model/model.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Raw sgemm rate on the step's dominant shape: [B*T, d] x [d, ffn]. */
/* One sgemm of the step's FFN shape at the bench's thread count (split over the model's pool as
 * the engine splits GEMMs), fastest of reps: the rate the step's GEMMs are compared with. */
static double sgemm_gflops(m2_pool *pool, int M, int K, int Nn, int reps) {
    float *a = malloc((size_t)M * K * 4), *b = malloc((size_t)Nn * K * 4), *c = malloc((size_t)M * Nn * 4);
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)Nn * K; i++) b[i] = (float)(i % 5) * 0.1f;
    m2_sgemm(pool, 0, 1, M, Nn, K, 1, a, K, b, K, 0, c, Nn);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = m2_now_s();
        m2_sgemm(pool, 0, 1, M, Nn, K, 1, a, K, b, K, 0, c, Nn);
        double t = m2_now_s() - t0;
        if (t < best) best = t;
    }
    free(a); free(b); free(c);
    return 2.0 * M * K * Nn / best / 1e9;
}

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 bench engine [--json] [--threads N] [--steps N] [--batch B] [--seq T]\n"
               "                           [--gen-tokens N] [--dtype f32|f16|bf16|q8_0] [--logit-chunk ROWS]\n"
               "                           [--recompute] [--print-blas-core]\n"
               "Times a LoRA train step (r=16 on q,v, frozen base, AdamW) and KV-cache generation on\n"
               "the DESIGN.md section 9 shapes (vocab 2048, d 256, 4 layers, 8/4 heads, ffn 768).\n"
               "--logit-chunk ROWS: the train step without stored logits (m2_ctx_create_chunked).\n"
               "--recompute: the train step on a ctx that recomputes each layer's activations in the\n"
               "backward (M2_ACTS_RECOMPUTE) instead of keeping them.\n");
}

int bench_engine_main(int argc, char **argv) {
    int json = 0, threads = 0, steps = 5, B = 8, T = 256, gen_tokens = 128, logit_chunk = 0, acts = M2_ACTS_KEEP;
    m2_dtype dtype = M2_DT_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--recompute")) { acts = M2_ACTS_RECOMPUTE; continue; }
        if (!strcmp(a, "--print-blas-core")) {   /* the OPENBLAS_CORETYPE this process runs with */
            const char *ct = getenv("OPENBLAS_CORETYPE");
            printf("%s\n", ct ? ct : "");
            return 0;
        }
        if (i + 1 >= argc) { fprintf(stderr, "bench engine: %s needs a value\n", a); usage(stderr); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--batch")) B = atoi(v);
        else if (!strcmp(a, "--seq")) T = atoi(v);
        else if (!strcmp(a, "--gen-tokens")) gen_tokens = atoi(v);
        else if (!strcmp(a, "--logit-chunk")) logit_chunk = atoi(v);
        else if (!strcmp(a, "--dtype")) {
            if (m2_dtype_parse(v, &dtype)) { fprintf(stderr, "bench engine: unknown --dtype '%s'\n", v); return 2; }
        } else { fprintf(stderr, "bench engine: unknown option %s\n", a); usage(stderr); return 2; }
    }
    if (steps < 1 || B < 1 || T < 2 || T > 4096 || gen_tokens < 1 || logit_chunk < 0) { fprintf(stderr, "bench engine: bad sizes\n"); return 2; }
    if (threads <= 0) threads = m2_cpu_count();
    openblas_set_num_threads(threads);
    m2_err err = {0};
    m2_model_config cfg;
    m2_config_preset("bench", &cfg, &err);
    cfg.max_seq_len = T + gen_tokens + 64;
    m2_model_opts o = {dtype, 0, threads};
    m2_model *m = m2_model_create(&cfg, &o, &err);
    if (!m) { fprintf(stderr, "bench engine: %s\n", err.msg); return 1; }
    m2_model_init_random(m, 1, 0.02f);
    m2_lora_config lc = {"bench", 16, 32.0f, 0.0f, M2_LORA_Q | M2_LORA_V};
    m2_adapter *ad = m2_adapter_add(m, &lc, 2, &err);
    m2_ctx *c = m2_ctx_create_chunked(m, B * T, acts, logit_chunk, &err);
    if (!ad || !c) { fprintf(stderr, "bench engine: %s\n", err.msg); m2_model_free(m); return 1; }
    if (!json) {
        char desc[256];
        m2_config_describe(&m->cfg, desc, sizeof desc);
        printf("model: %s, storage %s; batch %d x %d; LoRA r=16 on q,v; %d threads; OpenBLAS core %s\n", desc, m2_dtype_name(dtype), B, T, threads, openblas_get_corename());
        m2_model_mem mp = m2_memory_plan(m, B * T, acts, logit_chunk, 8, 32 + gen_tokens);
        m2_model_mem_print(stdout, &mp);
    }
    int N = B * T;
    int32_t *tok = malloc(N * 4), *tgt = malloc(N * 4);
    int *lens = malloc(B * sizeof(int));
    float *logp = malloc(N * 4), *dlogp = malloc(N * 4);
    m2_rng rng;
    m2_rng_seed(&rng, 3);
    for (int i = 0; i < N; i++) tok[i] = (int32_t)m2_rng_below(&rng, cfg.vocab_size);
    for (int b = 0; b < B; b++) lens[b] = T;
    m2_batch batch = {B, lens, tok};
    m2_batch_next_targets(&batch, tgt);
    int cnt = 0;
    for (int i = 0; i < N; i++) cnt += tgt[i] >= 0;
    for (int i = 0; i < N; i++) dlogp[i] = tgt[i] >= 0 ? -1.0f / cnt : 0.0f;
    m2_adamw opt = {0.9f, 0.999f, 1e-8f, 0.0f};
    double *tf = malloc(sizeof(double) * (steps + 1)), *tb = malloc(sizeof(double) * (steps + 1)),
           *ta = malloc(sizeof(double) * (steps + 1)), *tt = malloc(sizeof(double) * (steps + 1)),
           *tc = malloc(sizeof(double) * (steps + 1));
    double gemm_s = 0, gemm_flop = 0, loss = 0, ops[2][M2_OP_N] = {{0}};
    for (int s = 0; s <= steps; s++) {   /* step 0 warms up */
        m2_ctx_profile(c, 1);
        double c0 = m2_process_cpu_s();
        double t0 = m2_now_s();
        m2_forward(c, &batch, ad, 1, &err);
        m2_ctx_logprobs(c, tgt, logp);
        double t1 = m2_now_s();
        m2_ctx_logprobs_backward(c, tgt, dlogp);
        m2_backward(c, &err);
        double t2 = m2_now_s();
        m2_params *g[] = {&ad->params};
        m2_clip_grads(g, 1, 1.0f);
        m2_adamw_step(&ad->params, &opt, 1e-3f, &err);
        m2_params_zero_grad(&ad->params);
        double t3 = m2_now_s();
        double c3 = m2_process_cpu_s();
        loss = 0;
        for (int i = 0; i < N; i++) loss -= logp[i] * (tgt[i] >= 0) / cnt;
        if (s > 0) {
            tf[s - 1] = t1 - t0; tb[s - 1] = t2 - t1; ta[s - 1] = t3 - t2; tt[s - 1] = t3 - t0;
            tc[s - 1] = c3 - c0;
            m2_ctx_stats st = m2_ctx_get_stats(c);
            gemm_s += st.gemm_s; gemm_flop += st.gemm_flop;
            for (int d = 0; d < 2; d++)
                for (int op = 0; op < M2_OP_N; op++) ops[d][op] += st.op_s[d][op] / steps;
        }
    }
    /* the fastest step of each kind: on a shared machine interference only adds time */
    double step_min = tt[0], cpu_min = tc[0];
    for (int i = 1; i < steps; i++) { if (tt[i] < step_min) step_min = tt[i]; if (tc[i] < cpu_min) cpu_min = tc[i]; }
    double cpu_step = median(tc, steps);
    double step = median(tt, steps), fwd = median(tf, steps), bwd = median(tb, steps), adam = median(ta, steps);
    double gemm_rate = gemm_flop / gemm_s / 1e9;
    double raw = sgemm_gflops(m->pool, N, cfg.dim, cfg.ffn_dim, 20);
    double gemm_share = gemm_s / steps / step;
    size_t ctx_bytes = m2_ctx_bytes(c);
    m2_ctx_free(c);
    /* generation: 8 prompts of 32 tokens, greedy, gen_tokens new tokens each; then 1 sequence */
    int G = 8, P = 32;
    int32_t *prompts_buf = malloc((size_t)G * P * 4);
    const int32_t **prompts = malloc(G * sizeof *prompts);
    int *plen = malloc(G * sizeof(int));
    for (int i = 0; i < G * P; i++) prompts_buf[i] = (int32_t)m2_rng_below(&rng, cfg.vocab_size);
    for (int i = 0; i < G; i++) { prompts[i] = prompts_buf + i * P; plen[i] = P; }
    m2_gen_result *res = calloc(G, sizeof *res);
    m2_gen_config gc = {.max_new_tokens = gen_tokens, .sampler = {0, 0, 0}, .seed = 1};
    double g0 = m2_now_s(), gc0 = m2_process_cpu_s();
    int rc = m2_generate(m, ad, G, (const int32_t *const *)prompts, plen, &gc, res, &err);
    double gen_s = m2_now_s() - g0, gen_cpu = m2_process_cpu_s() - gc0;
    long gen_n = 0;
    for (int i = 0; i < G; i++) { gen_n += res[i].n; m2_gen_result_free(&res[i]); }
    g0 = m2_now_s();
    if (!rc) rc = m2_generate(m, ad, 1, (const int32_t *const *)prompts, plen, &gc, res, &err);
    double gen1_s = m2_now_s() - g0;
    long gen1_n = res[0].n;
    m2_gen_result_free(&res[0]);
    if (rc) { fprintf(stderr, "bench engine: %s\n", err.msg); m2_model_free(m); return 1; }
    double train_tps = N / step;
    /* the step by kind of op, ms per step (JSON object, or a table) */
    char opj[1024];
    int ol = snprintf(opj, sizeof opj, "{");
    for (int d = 0; d < 2; d++) {
        ol += snprintf(opj + ol, sizeof opj - ol, "%s\"%s\": {", d ? ", " : "", d ? "backward" : "forward");
        for (int op = 0; op < M2_OP_N; op++)
            ol += snprintf(opj + ol, sizeof opj - ol, "%s\"%s\": %.2f", op ? ", " : "", m2_op_name(op), ops[d][op] * 1e3);
        ol += snprintf(opj + ol, sizeof opj - ol, "}");
    }
    snprintf(opj + ol, sizeof opj - ol, "}");
    if (json) {
        printf("{\"train_tokens_per_s\": %.1f, \"train_step_ms\": %.2f, \"train_step_cpu_ms\": %.2f, \"train_step_min_ms\": %.2f, \"train_step_cpu_min_ms\": %.2f, \"forward_ms\": %.2f, \"backward_ms\": %.2f, "
               "\"adamw_ms\": %.3f, \"gemm_gflops_in_step\": %.1f, \"gemm_share_of_step\": %.3f, "
               "\"sgemm_gflops_raw\": %.1f, \"gemm_vs_sgemm\": %.3f, \"gen_tokens_per_s\": %.1f, "
               "\"gen_tokens_per_s_cpu\": %.1f, \"gen_batch\": %d, \"gen_tokens_per_s_single\": %.1f, \"threads\": %d, \"blas_core\": \"%s\", \"loss\": %.4f, "
               "\"logit_chunk\": %d, \"recompute\": %s, \"train_ctx_mib\": %.1f, \"ops_ms\": %s, "
               "\"shape\": {\"vocab\": %d, \"dim\": %d, \"layers\": %d, \"heads\": %d, \"kv_heads\": %d, \"ffn\": %d, "
               "\"batch\": %d, \"seq\": %d, \"lora_rank\": 16, \"lora_targets\": \"q,v\", \"dtype\": \"%s\"}}\n",
               train_tps, step * 1e3, cpu_step * 1e3, step_min * 1e3, cpu_min * 1e3, fwd * 1e3, bwd * 1e3, adam * 1e3, gemm_rate, gemm_share, raw,
               gemm_rate / raw, gen_n / gen_s, gen_n / gen_cpu, G, gen1_n / gen1_s, threads, openblas_get_corename(), loss, logit_chunk,
               acts == M2_ACTS_RECOMPUTE ? "true" : "false",
               ctx_bytes / 1048576.0, opj, cfg.vocab_size, cfg.dim,
               cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.ffn_dim, B, T, m2_dtype_name(dtype));
    } else {
        printf("train step: %.1f ms (forward %.1f, backward %.1f, adamw %.2f) = %.0f tokens/s, loss %.4f; "
               "%.1f ms of process CPU time\n",
               step * 1e3, fwd * 1e3, bwd * 1e3, adam * 1e3, train_tps, loss, cpu_step * 1e3);
        printf("linear GEMMs: %.1f GFLOP/s (%.0f%% of the step) vs raw sgemm %.1f GFLOP/s = %.2f\n", gemm_rate,
               100 * gemm_share, raw, gemm_rate / raw);
        printf("where the step goes, ms per step (row-parallel passes: the mean of the threads' shares):\n"
               "  %-10s %8s %8s %8s %6s\n", "op", "forward", "backward", "total", "share");
        double sum = 0;
        for (int op = 0; op < M2_OP_N; op++) {
            double t = ops[0][op] + ops[1][op];
            sum += t;
            printf("  %-10s %8.1f %8.1f %8.1f %5.1f%%\n", m2_op_name(op), ops[0][op] * 1e3, ops[1][op] * 1e3, t * 1e3,
                   100 * t / step);
        }
        printf("  %-10s %8s %8s %8.1f %5.1f%%\n", "adamw", "", "", adam * 1e3, 100 * adam / step);
        printf("  %-10s %8s %8s %8.1f %5.1f%%  (the rest: pool hand-offs, clipping, timers)\n", "sum", "", "",
               (sum + adam) * 1e3, 100 * (sum + adam) / step);
        printf("generation (KV cache, greedy): %d sequences %.0f tokens/s (%.0f per CPU second); 1 sequence %.0f tokens/s\n",
               G, gen_n / gen_s, gen_n / gen_cpu, gen1_n / gen1_s);
    }
    free(tok); free(tgt); free(lens); free(logp); free(dlogp); free(tf); free(tb); free(ta); free(tt); free(tc);
    free(prompts_buf); free(prompts); free(plen); free(res);
    m2_model_free(m);
    return 0;
}
