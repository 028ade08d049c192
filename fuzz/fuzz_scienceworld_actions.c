/* libFuzzer target: arbitrary action strings (NUL-separated in the input) on a ScienceWorld
 * episode chosen by the first byte; the env must never crash or leak. Every 8th step also asks for
 * the admissible list, the oracle's action and what the Python API inspects (the goal-progress
 * text, the possible objects; not the action-object combinations: thousands of JSON objects an
 * input made it 30 times slower, and tests/test_scienceworld.c checks them). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "env/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static m2_env *e = NULL;
    m2_err err = {0};
    if (!e && m2_env_create("scienceworld", NULL, &e, &err)) return 0;
    if (size < 1) return 0;
    static const char *const tasks[] = {"find-living-thing", "find-non-living-thing", "find-plant", "find-animal",
        "lifespan-longest-lived", "lifespan-shortest-lived", "lifespan-longest-lived-then-shortest-lived"};
    m2_step_result r;
    int t = data[0] % 7;
    if (e->cls->reset(e, tasks[t], (m2_split)(data[0] / 7 % 3), data[0] % 31, 0, &r, &err)) return 0;
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    size_t i = 0;
    int steps = 0;
    while (i < size - 1 && steps < 64) {
        const char *a = buf + i;
        size_t len = strlen(a);
        e->cls->step(e, a, &r);
        if (steps % 8 == 0) {
            const char *const *adm;
            int n;
            e->cls->admissible(e, &adm, &n);
            char o[256];
            e->cls->oracle_next(e, o, sizeof o, &err);
            free(e->cls->inspect(e, "goal_progress", &err));
            free(e->cls->inspect(e, "possible_objects", &err));
        }
        i += len + 1;
        steps++;
    }
    free(buf);
    return 0;
}
