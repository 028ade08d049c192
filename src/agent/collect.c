#include "agent/collect.h"
#include <stdlib.h>
#include <string.h>
#include "data/episodes.h"

int m2_collect_online(m2_env *env, const char *task, m2_split split, const int *indices, int n,
                      uint64_t seed, const m2_policy *sys1, const m2_policy *sys2,
                      const m2_loop_cfg *cfg, m2_replay *buf, FILE *jsonl, m2_collect_stats *st,
                      m2_err *err) {
    m2_episode_order order;
    if (m2_episode_order_build(env, task, split, &order, err)) return -1;
    int rc = 0;
    for (int e = 0; !rc && e < n; e++) {
        const m2_episode_ref *r = m2_episode_order_at(&order, indices[e]);
        m2_episode ep;
        if (m2_run_episode(env, r->task, split, r->index, seed + (uint64_t)indices[e], sys1, sys2, cfg, &ep, err)) {
            rc = -1;
            break;
        }
        if (!(ep.task_type = strdup(r->type))) rc = m2_errorf(err, M2_ENOMEM, "collect: out of memory");
        m2_traj *segs = NULL;
        int ns = 0;
        if (!rc) rc = m2_episode_segments(&ep, cfg, &segs, &ns, err);
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
    }
    m2_episode_order_free(&order);
    return rc;
}
