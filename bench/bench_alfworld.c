/* ALFWorld throughput on one core: the oracle plays train episodes of all six task types.
 *   bench_alfworld [data_path] [seconds]
 * Prints steps/s for three loops: step only (oracle + step), step + admissible list every step (what an
 * agent loop that shows the list pays), and resets/s. Resets are included in the first two figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "env/env.h"

static double run(m2_env *e, double secs, int with_adm, long *out_steps, long *out_eps) {
    m2_err err = {0};
    const m2_env_class *c = e->cls;
    long steps = 0, eps = 0;
    int n_train = c->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err);
    double t0 = m2_now_s(), t = t0;
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
        t = m2_now_s();
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
    printf("alfworld (%s tables) oracle policy, 1 thread:\n", data ? data : "embedded");
    printf("  step only          : %9.0f steps/s  (%ld steps, %ld episodes incl. resets, %.2f s)\n", steps / dt, steps, eps, dt);
    double dt2 = run(e, secs, 1, &steps, &eps);
    printf("  step + admissible  : %9.0f steps/s  (%ld steps, %ld episodes incl. resets, %.2f s)\n", steps / dt2, steps, eps, dt2);
    printf("  resets             : %9.0f episodes/s\n", eps / dt2);
    printf("  target             :     20000 steps/s -> %s\n", steps / dt2 >= 20000 ? "met" : "NOT met");
    m2_env_destroy(e);
    return 0;
}
