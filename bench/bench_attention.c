/* Attention kernel alone on the DESIGN.md section 9 shape (8 sequences x 256, 8 heads, 4 KV heads,
 * head dim 32): forward and backward, process CPU time per call (robust on a shared machine). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "core/core.h"
#include "kernels/kernels.h"

int main(int argc, char **argv) {
    m2_blas_restart_with_better_core(argv);   /* OpenBLAS's fast kernels, as `multi2` gets them */
    int B = 8, T = 256, H = 8, KVH = 4, D = 32, reps = argc > 1 ? atoi(argv[1]) : 5;
    int QD = H * D, KD = KVH * D;
    size_t N = (size_t)B * T;
    m2_rng r;
    m2_blas_single_thread();   /* as inside the engine (m2_model_create): the pool parallelises, not OpenBLAS */
    m2_rng_seed(&r, 1);
    float *q = malloc(N * QD * 4), *k = malloc(N * KD * 4), *v = malloc(N * KD * 4), *o = malloc(N * QD * 4),
          *lse = malloc(N * H * 4), *dq = calloc(N * QD, 4), *dk = calloc(N * KD, 4), *dv = calloc(N * KD, 4);
    for (size_t i = 0; i < N * QD; i++) q[i] = m2_rng_normal(&r);
    for (size_t i = 0; i < N * KD; i++) { k[i] = m2_rng_normal(&r); v[i] = m2_rng_normal(&r); }
    m2_attn_seq s[8];
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)b * T;
        m2_attn_seq x = {.q = q + off * QD, .k = k + off * KD, .v = v + off * KD, .out = o + off * QD,
                         .lse = lse + off * H, .dout = q + off * QD, .dq = dq + off * QD,
                         .dk = dk + off * KD, .dv = dv + off * KD, .nq = T, .nkv = T};
        s[b] = x;
    }
    double f = 1e9, bw = 1e9;
    for (int i = 0; i < reps; i++) {
        double t0 = m2_process_cpu_s();
        m2_attention_forward(s, B, H, KVH, D, QD, KD, NULL);
        double t1 = m2_process_cpu_s();
        m2_attention_backward(s, B, H, KVH, D, QD, KD, NULL);
        double t2 = m2_process_cpu_s();
        if (t1 - t0 < f) f = t1 - t0;
        if (t2 - t1 < bw) bw = t2 - t1;
    }
    double flop_f = 2.0 * 2 * B * H * (double)T * (T + 1) / 2 * D;   /* QK^T and PV, lower triangle */
    printf("attention forward %.2f ms (%.1f GFLOP/s causal), backward %.2f ms (%.1f GFLOP/s), check %g\n",
           f * 1e3, flop_f / f / 1e9, bw * 1e3, 2.5 * flop_f / bw / 1e9, (double)o[123] + dq[77]);
    return 0;
}
