/* Online data collection for System 2 refinement (DESIGN.md §6): hierarchical rollouts with the
 * given policies (System 1 frozen), each episode's System 2 sub-goal segments pushed into the replay
 * buffer with success = segment return > 0 (failures kept with the buffer's keep ratio). A segment's
 * return is System 2's one reward (agent/loop.h m2_episode_segments): 1 when it flagged its sub-goal
 * done while the environment's predicate held, else 0 — the sub-goal reward of the offline data, not
 * the released online code's per-step environment reward (docs/pipeline.md). */
#ifndef M2_AGENT_COLLECT_H
#define M2_AGENT_COLLECT_H
#include <stdio.h>
#include "agent/loop.h"
#include "agent/replay.h"

typedef struct m2_collect_stats {
    int episodes, successes, steps;
    int segments, kept;          /* segments produced / kept by the buffer */
    double ret;                  /* sum of episode returns */
} m2_collect_stats;

/* Positions indices[0..n) of the episode order of (task, split) (data/episodes.h: evenly across
 * task types), episode seed = seed + position; transcripts go to jsonl when it is not NULL. stats
 * accumulates (zero it first). */
int m2_collect_online(m2_env *env, const char *task, m2_split split, const int *indices, int n,
                      uint64_t seed, const m2_policy *sys1, const m2_policy *sys2,
                      const m2_loop_cfg *cfg, m2_replay *buf, FILE *jsonl, m2_collect_stats *st,
                      m2_err *err);

#endif
