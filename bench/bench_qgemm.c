/* The quantised products against the dequantised tiles (the exact f32 path: blocks -> f32 tiles ->
 * OpenBLAS sgemm) on one weight matrix, per block type and number of activation rows N:
 *   bench_qgemm [ROWS COLS ROUNDS [N,N,...]]      (default 2048 2048 5 1,4,8,16,17,32,128,512)
 * For each N: m2_qmatmul (the row products) where N <= M2_QDOT_MAX_ROWS, m2_qgemm (the integer
 * GEMM) where its kernel runs on this CPU, and m2_matmul_forward_w (tiles), one thread, timed by
 * CPU time (one thread) in interleaved rounds; prints each one's time and the ratios tiles / it (above 1:
 * faster than the tiles), medians over the rounds. Weights: random bytes with small f16 scales
 * (valid blocks of every type; speed only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "kernels/kernels.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Byte offsets of a block's f16 fields (scale, and min or dmin; -1 when none). */
static void f16_fields(m2_dtype t, int off[2]) {
    off[1] = -1;
    switch (t) {
    case M2_DT_Q2_K: off[0] = 80; off[1] = 82; break;
    case M2_DT_Q3_K: off[0] = 108; break;
    case M2_DT_Q4_K: case M2_DT_Q5_K: off[0] = 0; off[1] = 2; break;
    case M2_DT_Q6_K: off[0] = 208; break;
    case M2_DT_Q4_1: case M2_DT_Q5_1: off[0] = 0; off[1] = 2; break;
    default: off[0] = 0; break;
    }
}

int main(int argc, char **argv) {
    m2_blas_restart_with_better_core(argv);
    int R = argc > 1 ? atoi(argv[1]) : 2048, C = argc > 2 ? atoi(argv[2]) : 2048, rounds = argc > 3 ? atoi(argv[3]) : 5;
    const char *ns_s = argc > 4 ? argv[4] : "1,4,8,16,17,32,128,512";
    if (R <= 0 || C <= 0 || C % 256 || rounds <= 0) { fprintf(stderr, "usage: bench_qgemm [ROWS COLS(multiple of 256) ROUNDS [N,...]]\n"); return 2; }
    m2_blas_single_thread();
    int ns[32], nn = 0, nmax = 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ns_s);
    for (char *t = strtok(buf, ","); t && nn < 32; t = strtok(NULL, ",")) { ns[nn] = atoi(t); if (ns[nn] > nmax) nmax = ns[nn]; nn++; }
    m2_dtype types[] = {M2_DT_Q8_0, M2_DT_Q4_0, M2_DT_Q4_1, M2_DT_Q5_0, M2_DT_Q5_1, M2_DT_IQ4_NL,
                        M2_DT_Q2_K, M2_DT_Q3_K, M2_DT_Q4_K, M2_DT_Q5_K, M2_DT_Q6_K};
    m2_rng rng;
    m2_rng_seed(&rng, 1);
    float *x = malloc(sizeof(float) * (size_t)nmax * C), *out = malloc(sizeof(float) * (size_t)nmax * R);
    float *tiles = malloc(sizeof(float) * (size_t)M2_WTILE_ROWS * C);
    for (size_t i = 0; i < (size_t)nmax * C; i++) x[i] = (float)m2_rng_normal(&rng);
    double *rq = malloc(sizeof(double) * rounds), *rg = malloc(sizeof(double) * rounds), *tt = malloc(sizeof(double) * rounds);
    printf("%d x %d weights, 1 thread, %d rounds; row products %s, integer GEMM %s; OpenBLAS core %s\n", R, C, rounds,
           m2_qdot_path_name(m2_qdot_best()), m2_qgemm_fast() ? "avx512-vnni" : "not on this CPU", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "as detected");
    printf("%-7s %5s %11s %11s %11s %12s %12s\n", "type", "N", "tiles us", "rows us", "gemm us", "tiles/rows", "tiles/gemm");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        m2_dtype t = types[ti];
        size_t bytes = m2_dtype_bytes(t, (size_t)R * C);
        unsigned char *w = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) w[i] = (unsigned char)m2_rng_below(&rng, 256);
        int off[2], bb = m2_dtype_info_of(t)->bytes;
        f16_fields(t, off);
        for (size_t b = 0; b < bytes / bb; b++)
            for (int f = 0; f < 2; f++)
                if (off[f] >= 0) {
                    uint16_t h = m2_f32_to_f16(0.001f * (1.0f + (float)m2_rng_uniform(&rng)));
                    memcpy(w + b * bb + off[f], &h, 2);
                }
        m2_wref wr = {t, w, R, C};
        void *scr = malloc(m2_qgemm_scratch_bytes(wr, nmax, 1) + m2_qmatmul_scratch_bytes(wr, nmax));
        for (int k = 0; k < nn; k++) {
            int N = ns[k], rows = N <= M2_QDOT_MAX_ROWS, gemm = m2_qgemm_fast();
            for (int r = -1; r < rounds; r++) {
                double a = m2_process_cpu_s();
                m2_matmul_forward_w(out, x, wr, NULL, N, 0, tiles, NULL);
                double b = m2_process_cpu_s();
                if (rows) m2_qmatmul(out, R, x, wr, NULL, N, 0, scr, M2_QDOT_AUTO, NULL);
                double c = m2_process_cpu_s();
                if (gemm) m2_qgemm(out, R, x, wr, NULL, N, 0, scr, M2_QDOT_AUTO, NULL);
                double d = m2_process_cpu_s();
                if (r >= 0) { tt[r] = b - a; rq[r] = rows ? (b - a) / (c - b) : 0; rg[r] = gemm ? (b - a) / (d - c) : 0; }
            }
            qsort(tt, rounds, sizeof *tt, cmp_d);
            qsort(rq, rounds, sizeof *rq, cmp_d);
            qsort(rg, rounds, sizeof *rg, cmp_d);
            double tm = tt[rounds / 2], q = rq[rounds / 2], g = rg[rounds / 2];
            printf("%-7s %5d %11.1f %11.1f %11.1f %12.2f %12.2f\n", m2_dtype_name(t), N, 1e6 * tm, rows ? 1e6 * tm / q : 0.0,
                   gemm ? 1e6 * tm / g : 0.0, q, g);
        }
        free(w); free(scr);
    }
    printf("ratios: the tiles' time over each path's (median round); 0: that path does not run for this N / CPU\n");
    free(x); free(out); free(tiles); free(rq); free(rg); free(tt);
    return 0;
}
