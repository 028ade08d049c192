/* Expert-backed policies: an expert plan (the env's oracle rolled out on a PRIVATE env instance,
 * then cut into sub-goals by the env's segmenter) served by
 *   - a System 1 policy that returns the plan's sub-goals in order (the segmenter-backed planner),
 *   - a System 2 policy that returns the plan's actions in order, flagging "True" on the last action
 *     of each sub-goal ("action; True|False" format).
 * They reproduce what the hierarchical data contains, run the control loop without a model (tests,
 * `multi2 eval` of the oracle upper bound), and report token counts through a tokenizer interface. */
#ifndef M2_AGENT_EXPERT_H
#define M2_AGENT_EXPERT_H
#include "agent/loop.h"
#include "data/pack.h"
#include "env/env.h"

typedef struct m2_expert_plan {
    char **actions;
    int n_actions;
    m2_subgoal *sub;
    int n_sub;
    int next_sub, next_action;   /* cursors advanced by the policies */
    const m2_tok_iface *tok;     /* token accounting; NULL = report 0 */
} m2_expert_plan;

/* Rolls out cls's oracle for (task, split, index, seed) for at most max_steps steps, then segments. */
int m2_expert_plan_build(const m2_env_class *cls, const char *data_path, const char *task,
                         m2_split split, int index, uint64_t seed, int max_steps,
                         const m2_tok_iface *tok, m2_expert_plan *plan, m2_err *err);
void m2_expert_plan_free(m2_expert_plan *plan);

/* Policies reading the plan (ctx = plan). After the plan is exhausted they repeat its last item. */
m2_policy m2_expert_sys1_policy(m2_expert_plan *plan);
m2_policy m2_expert_sys2_policy(m2_expert_plan *plan);

#endif
