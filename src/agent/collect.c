#include "agent/collect.h"
#include <stdlib.h>

int m2_collect_online(m2_env *env, const char *task, m2_split split, const int *indices, int n,
                      uint64_t seed, const m2_policy *sys1, const m2_policy *sys2,
                      const m2_loop_cfg *cfg, m2_replay *buf, FILE *jsonl, m2_collect_stats *st,
                      m2_err *err) {
    for (int e = 0; e < n; e++) {
        int idx = indices[e];
        m2_episode ep;
        if (m2_run_episode(env, task, split, idx, seed + (uint64_t)idx, sys1, sys2, cfg, &ep, err)) return -1;
        m2_traj *segs = NULL;
        int ns = 0, rc = m2_episode_segments(&ep, cfg, &segs, &ns, err);
        for (int k = 0; !rc && k < ns; k++) {
            int kept = m2_replay_push(buf, &segs[k], m2_traj_return(&segs[k]) > 0.f, err);
            if (kept < 0) rc = -1;
            else if (st) st->kept += kept;
        }
        if (!rc && jsonl) {
            char *line = m2_episode_to_json(&ep);
            if (!line || fprintf(jsonl, "%s\n", line) < 0) rc = m2_errorf(err, M2_EIO, "collect: cannot write the episode record");
            free(line);
        }
        if (st) {
            st->episodes++;
            st->successes += ep.success != 0;
            st->steps += ep.steps;
            st->segments += ns;
            st->ret += ep.ret;
        }
        for (int k = 0; k < ns; k++) m2_traj_free(&segs[k]);
        free(segs);
        m2_episode_free(&ep);
        if (rc) return -1;
    }
    return 0;
}
