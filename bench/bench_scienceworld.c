/* ScienceWorld steps per second: replays oracle episodes of every implemented task (train split)
 * and reports env steps/s (step + oracle) and resets/s. Usage: bench_scienceworld [episodes] */
#include <stdio.h>
#include <stdlib.h>
#include "core/core.h"
#include "env/env.h"

int main(int argc, char **argv) {
    int episodes = argc > 1 ? atoi(argv[1]) : 700;
    m2_env *e = NULL;
    m2_err err = {0};
    if (m2_env_create("scienceworld", NULL, &e, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    int n = e->cls->num_episodes(e, NULL, M2_SPLIT_TRAIN, &err);
    if (n <= 0) { fprintf(stderr, "%s\n", err.msg); return 1; }
    long steps = 0, oracle_calls = 0;
    double t0 = m2_now_s();
    double t_step = 0, t_reset = 0;
    for (int ep = 0; ep < episodes; ep++) {
        m2_step_result r;
        double a = m2_now_s();
        if (e->cls->reset(e, NULL, M2_SPLIT_TRAIN, ep % n, 0, &r, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        t_reset += m2_now_s() - a;
        char buf[256];
        for (int k = 0; k < 60; k++) {
            if (e->cls->oracle_next(e, buf, sizeof buf, &err)) break;
            oracle_calls++;
            double b = m2_now_s();
            e->cls->step(e, buf, &r);
            e->cls->step(e, "look around", &r);   /* a free action, as agents often do */
            t_step += m2_now_s() - b;
            steps += 2;
            if (r.done) break;
        }
    }
    double total = m2_now_s() - t0;
    printf("scienceworld: %d episodes, %ld steps, %.0f steps/s (step only), %.0f resets/s, %.0f steps/s incl. oracle+reset\n",
           episodes, steps, steps / (t_step > 0 ? t_step : 1e-9), episodes / (t_reset > 0 ? t_reset : 1e-9),
           steps / (total > 0 ? total : 1e-9));
    (void)oracle_calls;
    m2_env_destroy(e);
    return 0;
}
