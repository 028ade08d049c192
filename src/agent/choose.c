#include "agent/choose.h"
#include <math.h>
#include <stdlib.h>
#include "data/prompts.h"

void m2_candidates_free(char **c, int n) {
    if (!c) return;
    for (int i = 0; i < n; i++) free(c[i]);
    free(c);
}

int m2_action_candidates(const char *const *actions, int n, char ***out, m2_err *err) {
    *out = NULL;
    char **c = calloc((size_t)(2 * n > 0 ? 2 * n : 1), sizeof *c);
    if (!c) return m2_errorf(err, M2_ENOMEM, "candidates: out of memory");
    for (int i = 0; i < n; i++) {
        c[2 * i] = m2_prompt_low_action(actions[i], 0);
        c[2 * i + 1] = m2_prompt_low_action(actions[i], 1);
        if (!c[2 * i] || !c[2 * i + 1]) {
            m2_candidates_free(c, 2 * n);
            return m2_errorf(err, M2_ENOMEM, "candidates: out of memory");
        }
    }
    *out = c;
    return 0;
}

int m2_choose_scored(const float *score, int n, float temperature, m2_rng *rng) {
    int arg = 0;
    for (int i = 1; i < n; i++) if (score[i] > score[arg]) arg = i;
    if (temperature <= 0 || n <= 1) return arg;
    /* softmax(score / T) relative to the best score: no overflow, the same draw for shifted scores */
    double tot = 0, inv = 1.0 / temperature;
    for (int i = 0; i < n; i++) tot += exp(((double)score[i] - score[arg]) * inv);
    double u = m2_rng_uniform_d(rng) * tot, cum = 0;
    for (int i = 0; i < n; i++) {
        cum += exp(((double)score[i] - score[arg]) * inv);
        if (u < cum) return i;
    }
    return arg;   /* u rounded up to tot: the most likely one */
}
