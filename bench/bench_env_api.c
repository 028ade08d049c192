/* The C reference of bench/python_env.py: the stable C API (env/multi2_env.h) on one thread, the
 * same workload the Python and HTTP paths run. Episode k is train episode k (seed 0); its actions
 * are the admissible list at the reset, taken in turn (wrapping); 50 steps or until done; the
 * loop's wall time includes the resets, as the Python loops do.
 *   bench_env_api ENV SECONDS [admissible]
 * "admissible" also asks for the admissible list after every step (what an info dict costs).
 * Prints one JSON object: env, steps, episodes, seconds, steps_per_s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "env/multi2_env.h"

#define EPISODE_STEPS 50
#define ACTIONS_MAX 64

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: bench_env_api ENV SECONDS [admissible]\n"); return 2; }
    double secs = atof(argv[2]);
    int with_adm = argc > 3 && !strcmp(argv[3], "admissible");
    char msg[512];
    m2e_env *e = m2e_create(argv[1], NULL, msg, sizeof msg);
    if (!e) { fprintf(stderr, "bench_env_api: %s\n", msg); return 1; }
    int n = m2e_num_episodes(e, NULL, "train");
    if (n <= 0) { fprintf(stderr, "bench_env_api: %s\n", m2e_error(e)); m2e_free(e); return 1; }
    static char acts[ACTIONS_MAX][512];
    long steps = 0, episodes = 0;
    double t0 = now_s(), t = t0;
    while (t - t0 < secs) {
        m2e_result r;
        if (m2e_reset(e, NULL, "train", (int)(episodes % n), 0, &r)) { fprintf(stderr, "bench_env_api: %s\n", m2e_error(e)); return 1; }
        episodes++;
        const char *const *list;
        int na = 0;
        if (m2e_admissible(e, &list, &na) || na == 0) continue;
        if (na > ACTIONS_MAX) na = ACTIONS_MAX;
        for (int i = 0; i < na; i++) snprintf(acts[i], sizeof acts[i], "%s", list[i]);
        for (int s = 0; s < EPISODE_STEPS && !r.done; s++) {
            m2e_step(e, acts[s % na], &r);
            if (with_adm) {   /* the list is fetched and dropped, as an info dict would hold it */
                const char *const *now_list;
                int now_n;
                m2e_admissible(e, &now_list, &now_n);
            }
            steps++;
        }
        t = now_s();
    }
    printf("{\"env\": \"%s\", \"steps\": %ld, \"episodes\": %ld, \"seconds\": %.3f, \"steps_per_s\": %.1f}\n", argv[1], steps,
           episodes, t - t0, steps / (t - t0));
    m2e_free(e);
    return 0;
}
