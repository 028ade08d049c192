/* Prompt-sized products over stored blocks (prefill): out[N, ldo] (+)= x[N, C] W^T (+ bias) for a
 * block-type W and many rows of x, in integers. Each activation row is rounded to 8 bits per 32
 * values (as the row products of qdot.h: d = max|x| / 127, rint), each weight row is read from
 * its blocks once per call into signed bytes with one float scale (and min) per sub-block of 32
 * values (16 for Q2_K, Q3_K, Q6_K), and every output is
 *   acc = 0; for each sub-block s in order:
 *       acc = fma(dw_s da_b(s), S_s, acc)              S_s = sum over s of w a (exact integer)
 *       acc = fma(wm_s, da_b(s) sum_s a, acc)          (types with mins; wm = m or -dmin mn)
 * the same float steps in the AVX-512 VNNI kernel (16 activation rows per 512-bit register, 8
 * weight rows at a time) and in the portable reference, so the two give the same bits; threads
 * split the weight rows (each output computed alone: the bits do not depend on the thread count).
 * Error against the f32 product of the dequantised weights: the activation rounding only, the
 * bound of qdot.h with blocks of 32. CPUs without AVX-512 VNNI keep the dequantised tiles
 * (matmul.h: exact f32), which is what m2_qgemm_fast() says. */
#ifndef M2_QGEMM_H
#define M2_QGEMM_H
#include "kernels/qdot.h"

/* Fewest activation rows for which m2_qgemm beats the row products of qdot.h (measured with
 * bench/bench_qgemm.c: from 4 rows on for every type, 2-7x at 8 rows). */
#define M2_QGEMM_MIN_ROWS 4

/* True when this CPU runs the integer kernel (AVX-512 VNNI); the portable path is a reference. */
int m2_qgemm_fast(void);
/* Scratch bytes m2_qgemm needs for N rows of x against w with a pool of nthreads threads. */
size_t m2_qgemm_scratch_bytes(m2_wref w, int N, int nthreads);
/* path: M2_QDOT_AVX512 (the kernel; AUTO picks it where the CPU has it), M2_QDOT_PORTABLE (the
 * reference, slow). acc: add to out instead of overwriting it. */
void m2_qgemm(float *out, int ldo, const float *x, m2_wref w, const float *bias, int N, int acc,
              void *scratch, m2_qdot_path path, m2_pool *pool);

#endif
