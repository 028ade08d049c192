/* ALFWorld throughput on one core: the oracle plays train episodes of all six task types.
 *   bench_alfworld [data_path] [seconds]
 * Prints steps/s for: oracle + step, oracle + step + admissible list every step (what an agent loop that
 * shows the list pays), both including resets; then resets alone and the derived cost of a step.
 * Times are the thread's CPU time (the machine is shared). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/core.h"
#include "env/env.h"

/* Thread CPU seconds: the machine is shared, so wall time would count other jobs. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run(m2_env *e, double secs, int with_adm, long *out_steps, long *out_eps) {
    m2_err err = {0};
    const m2_env_class *c = e->cls;
    long steps = 0, eps = 0;
    int n_train = c->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err);
    double t0 = cpu_s(), t = t0;
    while (t - t0 < secs) {
        for (int rep = 0; rep < 50; rep++) {
            m2_step_result r;
            if (c->reset(e, NULL, M2_SPLIT_TRAIN, (int)(eps % n_train), (uint64_t)eps, &r, &err)) {
                fprintf(stderr, "reset: %s\n", err.msg);
                exit(1);
            }
            eps++;
            for (int k = 0; k < 50 && !r.done; k++) {
                char a[256];
                if (with_adm) {
                    const char *const *adm;
                    int n;
                    c->admissible(e, &adm, &n);
                }
                if (c->oracle_next(e, a, sizeof a, &err)) break;
                c->step(e, a, &r);
                steps++;
            }
        }
        t = cpu_s();
    }
    *out_steps = steps;
    *out_eps = eps;
    return t - t0;
}

int main(int argc, char **argv) {
    const char *data = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    m2_err err = {0};
    m2_env *e = NULL;
    if (m2_env_create("alfworld", data, &e, &err)) {
        fprintf(stderr, "bench_alfworld: %s\n", err.msg);
        return 1;
    }
    long steps, eps;
    double dt = run(e, secs, 0, &steps, &eps);
    long steps_first = steps, eps_first = eps;
    printf("alfworld (%s tables) oracle policy, 1 thread:\n", data ? data : "embedded");
    printf("  oracle + step      : %9.0f steps/s  (%ld steps, %ld episodes incl. resets, %.2f s)\n", steps / dt, steps, eps, dt);
    double dt2 = run(e, secs, 1, &steps, &eps);
    printf("  + admissible list  : %9.0f steps/s  (%ld steps, %ld episodes incl. resets, %.2f s)\n", steps / dt2, steps, eps, dt2);
    /* resets alone, to split the cost */
    m2_err e2 = {0};
    int n_train = e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &e2);
    long nres = 0;
    double t0 = cpu_s(), t1 = t0;
    while (t1 - t0 < secs / 2) {
        for (int k = 0; k < 50; k++, nres++) {
            m2_step_result r;
            e->cls->reset(e, NULL, M2_SPLIT_TRAIN, (int)(nres % n_train), (uint64_t)nres, &r, &e2);
        }
        t1 = cpu_s();
    }
    double reset_us = (t1 - t0) / nres * 1e6;
    printf("  reset alone        : %9.0f episodes/s  (%.0f us each)\n", nres / (t1 - t0), reset_us);
    double step_only_s = dt - (double)eps_first * reset_us * 1e-6;
    printf("  step cost          : %9.2f us/step without resets (%.0f steps/s)\n", step_only_s / steps_first * 1e6,
           steps_first / step_only_s);
    printf("  target             :     20000 steps/s -> %s\n", steps / dt2 >= 20000 ? "met" : "NOT met");
    m2_env_destroy(e);
    return 0;
}
