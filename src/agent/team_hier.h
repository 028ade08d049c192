/* The Multi² hierarchy as a two-agent team (DESIGN.md §6, issue #16 item 1c), a rollout source for
 * the TeamTR stage loop (agent/team.h m2_team_source, algo/team_train.h): agent 0 is the planner
 * (System 1), agent 1 the executor (System 2), each an adapter on one base, playing episodes of an
 * environment through THE control loop (agent/loop.h) with the model policy (agent/model_policy.h).
 *
 * A sample is one episode: task t of the source is position t of the split's episode order
 * (data/episodes.h); its reward is the environment's end score on 0..1 (m2_env_unit_score; TextCraft:
 * 1 when won). The team sees the environment's reward only (no sub-goal reward).
 * Agent 0's tokens are its sub-goals in its own contexts (m2_episode_planner_traj: one sequence an
 * episode); agent 1's are its outputs in every sub-goal's segment (m2_episode_segments: one sequence
 * a sub-goal); each agent's tokens are context for nobody else (the two roles never share a context).
 *
 * Randomness: sample id i resets the environment with seed i and samples System 1 from stream
 * (g->seed, i, planner) and System 2 from (g->seed, i, executor) (each model policy restarted per
 * episode), so an episode depends on its id and the weights alone. System 2 generates its action
 * (sys2.action_mode generate): score mode's choice among candidates is not the product of the
 * tokens' probabilities PPO's ratio needs, so it is refused. */
#ifndef M2_AGENT_TEAM_HIER_H
#define M2_AGENT_TEAM_HIER_H
#include "agent/loop.h"
#include "agent/team.h"
#include "data/episodes.h"

enum { M2_TEAM_HIER_PLANNER = 0, M2_TEAM_HIER_EXECUTOR = 1, M2_TEAM_HIER_AGENTS = 2 };

typedef struct m2_team_hier {
    m2_env *env;
    const m2_episode_order *order;   /* the split's episode order: task t = position t */
    m2_split split;
    m2_model *model;
    m2_adapter *sys1, *sys2;         /* the planner's and the executor's adapters */
    const m2_tok_iface *tok;
    m2_loop_cfg loop;                /* step limit, sub-goal budget, prompts (action_mode generate) */
    /* The reward of a played episode (NULL: the environment's end score on 0..1); e.g. a shaped
     * reward in tests. */
    float (*reward)(void *ud, const m2_episode *ep);
    void *reward_ud;
    m2_episode *ep;                  /* the kept block: ep[l] is sample first + l of the batch */
    int n, cap, first;
} m2_team_hier;

m2_team_source m2_team_hier_source(m2_team_hier *h);
void m2_team_hier_free(m2_team_hier *h);   /* the kept batch */

#endif
