#include "core/pool.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long an idle thread (a worker between jobs, the caller waiting for the last chunk) spins
 * before it sleeps on a condition variable: 200 us, or M2_POOL_SPIN_US (0 = sleep at once, the
 * old behaviour; for machines shared with other busy processes). A train step issues hundreds of
 * jobs back to back; waking a sleeping thread costs tens of microseconds to milliseconds on a
 * virtual machine (the idle vCPU halts), paid at every job. */
#define SPIN_NS_DEFAULT 200000L

struct m2_pool {
    int n;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    atomic_int quit;
    /* the current job: chunk i of [0, total) is fixed by (total, nchunks, i); whichever thread
     * claims a chunk first runs it, so a worker descheduled on a busy machine does not stall the
     * job, and the bits do not depend on which thread ran which chunk. Fields change under mu;
     * gen (bumped per job) and finished are also read without it by spinning threads. */
    m2_pool_fn fn;
    void *ctx;
    long total, nchunks, next;
    atomic_long gen, finished;
    int caller_sleeps;
    long spin_ns;
};

typedef struct { m2_pool *p; int tid; } worker_arg;

static void chunk(long n, int parts, int i, long *b, long *e) {
    long q = n / parts, r = n % parts;
    *b = i * q + (i < r ? i : r);
    *e = *b + q + (i < r);
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* One wait step of a spinning thread: a few pause instructions first, then sched_yield, so that
 * on a machine shared with other busy processes the core goes to them, while on an idle one the
 * yield returns at once and the vCPU never halts. */
static void spin_step(int i) {
    if (i < 256) CPU_RELAX();
    else sched_yield();
}

/* spins until *v != old or quit (returns 1) or spin_ns pass (returns 0) */
static int spin_while_eq(atomic_long *v, long old, atomic_int *quit, long spin_ns) {
    long t0 = now_ns();
    for (int i = 1;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) != old) return 1;
        if (atomic_load_explicit(quit, memory_order_relaxed)) return 1;
        if ((i & 15) == 1 && now_ns() - t0 > spin_ns) return 0;
        spin_step(i);
    }
}

static void *worker(void *arg) {
    worker_arg *wa = arg;
    m2_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    long seen = 0;
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->quit)) {
        if (p->next >= p->nchunks) {
            seen = atomic_load(&p->gen);
            pthread_mutex_unlock(&p->mu);
            int moved = p->spin_ns > 0 && spin_while_eq(&p->gen, seen, &p->quit, p->spin_ns);
            pthread_mutex_lock(&p->mu);
            if (!moved && !atomic_load(&p->quit) && atomic_load(&p->gen) == seen) pthread_cond_wait(&p->go, &p->mu);
            continue;
        }
        long ci = p->next++, b, e;
        m2_pool_fn fn = p->fn; void *ctx = p->ctx;
        chunk(p->total, (int)p->nchunks, (int)ci, &b, &e);
        pthread_mutex_unlock(&p->mu);
        if (b < e) fn(ctx, b, e, tid);
        pthread_mutex_lock(&p->mu);
        if (atomic_fetch_add(&p->finished, 1) + 1 == p->nchunks && p->caller_sleeps)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int m2_cpu_count(void) {
    const char *env = getenv("M2_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

m2_pool *m2_pool_create(int nthreads, m2_err *err) {
    m2_pool *p = calloc(1, sizeof *p);
    if (!p) { m2_errorf(err, M2_ENOMEM, "out of memory creating thread pool"); return NULL; }
    p->n = nthreads > 0 ? nthreads : m2_cpu_count();
    const char *spin = getenv("M2_POOL_SPIN_US");
    p->spin_ns = spin && *spin ? atol(spin) * 1000L : SPIN_NS_DEFAULT;
    if (p->spin_ns < 0) p->spin_ns = 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->finished, 0);
    p->th = calloc((size_t)p->n, sizeof *p->th);
    if (!p->th) { free(p); m2_errorf(err, M2_ENOMEM, "out of memory creating thread pool"); return NULL; }
    for (int i = 1; i < p->n; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa || pthread_create(&p->th[i], NULL, worker, (wa->p = p, wa->tid = i, wa)) != 0) {
            free(wa);
            p->n = i;   /* keep the threads that started */
            break;
        }
    }
    return p;
}

void m2_pool_destroy(m2_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
}

int m2_pool_threads(const m2_pool *p) { return p ? p->n : 1; }

void m2_pool_for(m2_pool *p, long n, m2_pool_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!p || p->n == 1) { fn(ctx, 0, n, 0); return; }
    pthread_mutex_lock(&p->mu);
    p->fn = fn; p->ctx = ctx; p->total = n;
    p->nchunks = p->n; p->next = 0;
    atomic_store(&p->finished, 0);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->go);
    while (p->next < p->nchunks) {   /* the caller claims chunks too (chunk 0 first, normally) */
        long ci = p->next++, b, e;
        chunk(n, (int)p->nchunks, (int)ci, &b, &e);
        pthread_mutex_unlock(&p->mu);
        if (b < e) fn(ctx, b, e, 0);
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->finished, 1);
    }
    long nch = p->nchunks;
    if (atomic_load(&p->finished) < nch) {   /* a worker still runs its chunk: spin, then sleep */
        pthread_mutex_unlock(&p->mu);
        long t0 = now_ns();
        for (int i = 1; atomic_load_explicit(&p->finished, memory_order_acquire) < nch; i++) {
            if ((i & 15) == 1 && now_ns() - t0 > p->spin_ns) break;
            spin_step(i);
        }
        pthread_mutex_lock(&p->mu);
        p->caller_sleeps = 1;
        while (atomic_load(&p->finished) < nch) pthread_cond_wait(&p->done, &p->mu);
        p->caller_sleeps = 0;
    }
    pthread_mutex_unlock(&p->mu);
}
