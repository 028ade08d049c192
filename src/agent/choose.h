/* System 2's score mode (config sys2.action_mode: score, a deviation from the paper for small
 * models): instead of generating its output, System 2 picks one of the environment's admissible
 * actions by the adapter's log-probability (docs/pipeline.md, "System 2's action mode").
 *
 * The candidates of a state are the admissible actions written as training targets with both flag
 * values (m2_prompt_low_action: "a; False", "a; True"), so the chosen text is exactly a text the
 * losses train on and the sub-goal's done flag is chosen jointly with the action: the pair of
 * highest log-prob (greedy), or a draw from the softmax over all pairs (sampled). */
#ifndef M2_AGENT_CHOOSE_H
#define M2_AGENT_CHOOSE_H
#include "core/err.h"
#include "core/rng.h"

/* System 2's action mode: one X list gives the enum and the config choices. */
#define M2_ACTION_MODE_LIST(X) X(GENERATE, "generate") X(SCORE, "score")   /* config sys2.action_mode */
#define M2_ACTION_MODE_ID_(id, name) M2_ACTION_MODE_##id,
typedef enum m2_action_mode { M2_ACTION_MODE_LIST(M2_ACTION_MODE_ID_) M2_N_ACTION_MODES } m2_action_mode;

/* The 2n candidate outputs of n actions: out[2i] = "a_i; False", out[2i + 1] = "a_i; True"
 * (malloc'd; free with m2_candidates_free). */
int m2_action_candidates(const char *const *actions, int n, char ***out, m2_err *err);
void m2_candidates_free(char **c, int n);

/* One of n scored candidates: temperature <= 0: the argmax (the first on ties); else a draw from
 * softmax(score / temperature) with one uniform of rng. n >= 1. */
int m2_choose_scored(const float *score, int n, float temperature, m2_rng *rng);

#endif
