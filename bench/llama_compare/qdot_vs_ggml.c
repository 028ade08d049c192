/* The quantised matrix-vector kernels of multi2 (m2_qmatmul, one activation row) against ggml's
 * (the activation row quantised by the type's from_float, then vec_dot per weight row, as ggml's
 * mul_mat does for one token: the from_float of the type's vec_dot_type), on the same blocks (ggml's quantiser writes them; the layouts are the
 * same bytes), one thread, timed by CPU time so that other processes on a shared machine
 * cost neither side. Built and run by bench/llama_compare/kernels.sh against a llama.cpp build:
 *   qdot_vs_ggml [ROWS COLS MATRICES ROUNDS [TYPES]]
 * MATRICES distinct matrices are cycled so that the weights come from memory, not cache (the
 * default 2048 x 2048 x 16 is 64 M values). Each round times both sides back to back, in
 * alternating order; the median round's ratio is printed with the spread, and the largest output
 * difference relative to the largest output (ggml rounds activations the same way, so only float
 * order differs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
#include "core/timer.h"
#include "kernels/qdot.h"


static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const struct { const char *name; m2_dtype m2; enum ggml_type g; } types[] = {
    {"q8_0", M2_DT_Q8_0, GGML_TYPE_Q8_0}, {"q4_0", M2_DT_Q4_0, GGML_TYPE_Q4_0}, {"q4_1", M2_DT_Q4_1, GGML_TYPE_Q4_1},
    {"q5_0", M2_DT_Q5_0, GGML_TYPE_Q5_0}, {"q5_1", M2_DT_Q5_1, GGML_TYPE_Q5_1}, {"iq4_nl", M2_DT_IQ4_NL, GGML_TYPE_IQ4_NL},
    {"q2_k", M2_DT_Q2_K, GGML_TYPE_Q2_K}, {"q3_k", M2_DT_Q3_K, GGML_TYPE_Q3_K}, {"q4_k", M2_DT_Q4_K, GGML_TYPE_Q4_K},
    {"q5_k", M2_DT_Q5_K, GGML_TYPE_Q5_K}, {"q6_k", M2_DT_Q6_K, GGML_TYPE_Q6_K},
};

int main(int argc, char **argv) {
    int R = argc > 1 ? atoi(argv[1]) : 2048, C = argc > 2 ? atoi(argv[2]) : 2048;
    int M = argc > 3 ? atoi(argv[3]) : 16, rounds = argc > 4 ? atoi(argv[4]) : 7;
    const char *only = argc > 5 ? argv[5] : NULL;
    if (R <= 0 || C <= 0 || C % 256 || M <= 0 || rounds <= 0) {
        fprintf(stderr, "usage: qdot_vs_ggml [ROWS COLS(multiple of 256) MATRICES ROUNDS [type,type...]]\n");
        return 2;
    }
    /* ggml_init fills the f16 table the CPU kernels read; ggml_cpu_init the CPU backend's own */
    struct ggml_init_params ip = {.mem_size = 1024, .no_alloc = 1};
    ggml_free(ggml_init(ip));
    ggml_cpu_init();
    float *src = malloc(sizeof(float) * (size_t)R * C), *x = malloc(sizeof(float) * (size_t)C);
    float *o1 = malloc(sizeof(float) * (size_t)R), *o2 = malloc(sizeof(float) * (size_t)R);
    double *ratio = malloc(sizeof(double) * (size_t)rounds);
    srand(1);
    for (size_t i = 0; i < (size_t)R * C; i++) src[i] = ((float)rand() / RAND_MAX - 0.5f) * (1.0f + (float)(i % 7));
    for (int i = 0; i < C; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    printf("%d x %d, %d matrices, %d rounds, multi2 path %s; CPU time per matrix-vector product\n", R, C, M,
           rounds, m2_qdot_path_name(m2_qdot_best()));
    printf("%-7s %10s %10s %12s %8s %8s %12s\n", "type", "ggml us", "multi2 us", "multi2/ggml", "min", "max", "max |diff|");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (only && !strstr(only, types[ti].name)) continue;
        enum ggml_type gt = types[ti].g;
        const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(gt);
        size_t rb = ggml_row_size(gt, C), qb = ggml_row_size(tr->vec_dot_type, C);
        unsigned char *w = malloc(rb * R * (size_t)M), *qx = malloc(qb);
        void *scr = malloc(m2_qmatmul_scratch_bytes((m2_wref){types[ti].m2, w, R, C}, 1));
        ggml_quantize_chunk(gt, src, w, 0, R, C, NULL);
        for (int m = 1; m < M; m++) memcpy(w + rb * R * m, w, rb * R);   /* copies: memory traffic, not content */
        double tg = 0, tm = 0;
        for (int r = -1; r < rounds; r++) {
            double t[2] = {0, 0};
            for (int side = 0; side < 2; side++) {
                int s = (r + side) & 1 ? 1 : 0;   /* alternate which side goes first */
                double a = m2_process_cpu_s();
                for (int m = 0; m < M; m++) {
                    const unsigned char *wm = w + rb * R * m;
                    if (s == 0) {
                        ggml_get_type_traits_cpu(tr->vec_dot_type)->from_float(x, qx, C);
                        for (int o = 0; o < R; o++) tr->vec_dot(C, &o1[o], 0, wm + rb * o, 0, qx, 0, 1);
                    } else {
                        m2_wref wr = {types[ti].m2, wm, R, C};
                        m2_qmatmul(o2, R, x, wr, NULL, 1, 0, scr, M2_QDOT_AUTO, NULL);
                    }
                }
                t[s] = (m2_process_cpu_s() - a) / M;
            }
            if (r >= 0) { ratio[r] = t[0] / t[1]; tg += t[0]; tm += t[1]; }
        }
        double amax = 0, dmax = 0;
        for (int o = 0; o < R; o++) { amax = fmax(amax, fabs(o1[o])); dmax = fmax(dmax, fabs(o1[o] - o2[o])); }
        qsort(ratio, rounds, sizeof *ratio, cmp_d);
        /* ratio[] holds ggml time / multi2 time: multi2's speed relative to ggml's */
        printf("%-7s %10.1f %10.1f %12.3f %8.3f %8.3f %12.3g\n", types[ti].name, 1e6 * tg / rounds, 1e6 * tm / rounds,
               ratio[rounds / 2], ratio[0], ratio[rounds - 1], dmax / (amax > 0 ? amax : 1));
        free(w); free(qx); free(scr);
    }
    printf("multi2/ggml: ggml's time over multi2's (above 1: multi2 faster), median round\n");
    free(src); free(x); free(o1); free(o2); free(ratio);
    return 0;
}
