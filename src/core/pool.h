/* A fixed pool of worker threads sized to the machine. Work is split into contiguous static
 * ranges that depend only on (n, thread count), so every reduction happens in the same order and
 * the same seed and thread count give the same bits. */
#ifndef M2_POOL_H
#define M2_POOL_H
#include "core/err.h"

typedef struct m2_pool m2_pool;

/* fn(ctx, begin, end, thread_index) is called once per chunk with the chunk's range of [0, n). */
typedef void (*m2_pool_fn)(void *ctx, long begin, long end, int tid);

/* nthreads <= 0: the number of online CPUs (or M2_THREADS from the environment). */
m2_pool *m2_pool_create(int nthreads, m2_err *err);
void m2_pool_destroy(m2_pool *p);
int m2_pool_threads(const m2_pool *p);
/* Runs fn over [0, n) split into m2_pool_threads() static chunks (fixed by n and the thread count).
 * Each chunk runs once, on whichever thread claims it first (the caller claims too), so a worker
 * that is not scheduled does not hold the others up; fn must not depend on tid for its result
 * (tid only names the running thread). p may be NULL (runs serially). Not re-entrant. */
void m2_pool_for(m2_pool *p, long n, m2_pool_fn fn, void *ctx);
int m2_cpu_count(void);

#endif
