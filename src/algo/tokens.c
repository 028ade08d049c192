#include "algo/tokens.h"
#include <string.h>

void m2_action_logp_forward(const float *tok_logp, const int32_t *tok_action, int n_tok, int n_act,
                            m2_reduce red, float *act_logp, int32_t *n_act_tok) {
    for (int a = 0; a < n_act; a++) { act_logp[a] = 0.f; n_act_tok[a] = 0; }
    for (int i = 0; i < n_tok; i++) {
        int a = tok_action[i];
        if (a < 0 || a >= n_act) continue;
        act_logp[a] += tok_logp[i];
        n_act_tok[a]++;
    }
    if (red == M2_REDUCE_MEAN)
        for (int a = 0; a < n_act; a++) if (n_act_tok[a] > 0) act_logp[a] /= (float)n_act_tok[a];
}

void m2_action_logp_backward(const float *dact_logp, const int32_t *tok_action, int n_tok,
                             const int32_t *n_act_tok, m2_reduce red, float *dtok_logp) {
    for (int i = 0; i < n_tok; i++) {
        int a = tok_action[i];
        if (a < 0) continue;
        float g = dact_logp[a];
        if (red == M2_REDUCE_MEAN) g = n_act_tok[a] > 0 ? g / (float)n_act_tok[a] : 0.f;
        dtok_logp[i] += g;
    }
}
