#include "agent/team_hier.h"
#include <stdlib.h>
#include <string.h>
#include "agent/model_policy.h"

/* The sampling stream of one role in one episode: distinct per (batch seed, sample id, role). */
static uint64_t role_seed(uint64_t seed, uint64_t id, int role) {
    return (seed * 0x9E3779B97F4A7C15ull + id) * 0xBF58476D1CE4E5B9ull + (uint64_t)role + 1;
}

static void drop(m2_team_hier *h) {
    for (int i = 0; i < h->n; i++) m2_episode_free(&h->ep[i]);
    h->n = 0;
}

void m2_team_hier_free(m2_team_hier *h) {
    drop(h);
    free(h->ep);
    h->ep = NULL;
    h->cap = 0;
}

static int hier_play(void *ud, const int *tasks, int n_tasks, int G, uint64_t id0, int first, int count,
                     const m2_team_gen *g, float *R, m2_err *err) {
    m2_team_hier *h = ud;
    int n = count;   /* the block's episodes, kept at ep[i - first] */
    drop(h);
    if (first < 0 || count < 0 || first + count > n_tasks * G)
        return m2_errorf(err, M2_EINVAL, "team: block [%d, %d) of a batch of %d", first, first + count, n_tasks * G);
    h->first = first;
    if (h->loop.action_mode != M2_ACTION_MODE_GENERATE)
        return m2_errorf(err, M2_ECONFIG, "sys2.action_mode: the hierarchical team trains generated actions (generate), "
                                          "not a choice among candidates");
    if (n > h->cap) {
        m2_episode *ne = realloc(h->ep, (size_t)n * sizeof *ne);
        if (!ne) return m2_errorf(err, M2_ENOMEM, "team: out of memory");
        h->ep = ne;
        h->cap = n;
    }
    m2_model_policy mp1 = {.model = h->model, .sys1 = h->sys1, .sys2 = h->sys1, .tok = h->tok, .sampler = g->sampler,
                           .max_new_tokens = g->max_new_tokens};
    m2_model_policy mp2 = {.model = h->model, .sys1 = h->sys2, .sys2 = h->sys2, .tok = h->tok, .sampler = g->sampler,
                           .max_new_tokens = g->max_new_tokens};
    m2_policy p1 = m2_model_policy_as(&mp1), p2 = m2_model_policy_as(&mp2);
    int rc = 0;
    for (int l = 0; l < n && !rc; l++) {   /* the episode of sample i depends on i alone */
        int i = first + l;
        const m2_episode_ref *ref = m2_episode_order_at(h->order, tasks[i / G]);
        uint64_t id = id0 + (uint64_t)i;
        mp1.seed = role_seed(g->seed, id, M2_TEAM_HIER_PLANNER);
        mp2.seed = role_seed(g->seed, id, M2_TEAM_HIER_EXECUTOR);
        mp1.calls = mp2.calls = 0;
        rc = m2_run_episode(h->env, ref->task, h->split, ref->index, id, &p1, &p2, &h->loop, &h->ep[l], err);
        if (rc) break;
        h->n = l + 1;
        R[i] = h->reward ? h->reward(h->reward_ud, &h->ep[l]) : (float)m2_env_unit_score(h->env->cls->name, h->ep[l].score);
    }
    m2_model_policy_free(&mp1);
    m2_model_policy_free(&mp2);
    if (rc) drop(h);
    return rc;
}

/* Packs tr as one more sequence of sample i into p / map (a trajectory without an action, or one
 * whose first transition alone exceeds max_tokens, is left out). */
static int pack_one(const m2_team_hier *h, const m2_traj *tr, int max_tokens, int i, m2_packed *p, int *map, int *np,
                    m2_err *err) {
    if (tr->n_actions == 0) return 0;
    m2_err pe = {0};
    if (m2_pack_traj(h->tok, tr, max_tokens, &p[*np], &pe)) {
        if (pe.code == M2_ESHAPE) return 0;
        if (err) *err = pe;
        return -1;
    }
    map[(*np)++] = i;
    return 0;
}

static int hier_pack(void *ud, int agent, int max_tokens, m2_packed_batch *pb, int **seq_sample, m2_err *err) {
    m2_team_hier *h = ud;
    memset(pb, 0, sizeof *pb);
    *seq_sample = NULL;
    if (agent != M2_TEAM_HIER_PLANNER && agent != M2_TEAM_HIER_EXECUTOR)
        return m2_errorf(err, M2_EINVAL, "team: agent %d of the two-agent hierarchy", agent);
    int cap = 0;   /* sequences: one an episode for the planner, one a sub-goal for the executor */
    for (int i = 0; i < h->n; i++) cap += agent == M2_TEAM_HIER_PLANNER ? 1 : h->ep[i].n_sub;
    m2_packed *p = calloc((size_t)(cap ? cap : 1), sizeof *p);
    int *map = malloc((size_t)(cap ? cap : 1) * sizeof *map);
    int rc = !p || !map ? m2_errorf(err, M2_ENOMEM, "team: out of memory") : 0, np = 0;
    for (int i = 0; i < h->n && !rc; i++) {
        if (agent == M2_TEAM_HIER_PLANNER) {
            m2_traj tr;
            if ((rc = m2_episode_planner_traj(&h->ep[i], &h->loop, &tr, err))) break;
            rc = pack_one(h, &tr, max_tokens, h->first + i, p, map, &np, err);
            m2_traj_free(&tr);
        } else {
            m2_traj *segs = NULL;
            int ns = 0;
            if ((rc = m2_episode_segments(&h->ep[i], &h->loop, &segs, &ns, err))) break;
            for (int k = 0; k < ns; k++) {
                if (!rc) rc = pack_one(h, &segs[k], max_tokens, h->first + i, p, map, &np, err);
                m2_traj_free(&segs[k]);
            }
            free(segs);
        }
    }
    if (!rc && np > 0) rc = m2_packed_batch_build(p, np, pb, err);   /* none fits: an empty batch, no update */
    for (int k = 0; k < np; k++) m2_packed_free(&p[k]);
    free(p);
    if (rc) {
        free(map);
        return rc;
    }
    *seq_sample = map;
    return 0;
}

m2_team_source m2_team_hier_source(m2_team_hier *h) {
    return (m2_team_source){.ud = h, .play = hier_play, .pack = hier_pack};
}
