/* Replay buffer of System 2 sub-goal segments for the online phase (DESIGN.md §6):
 *  - FIFO of fixed capacity: when full, a push evicts the oldest item;
 *  - seeded with offline SUCCESSFUL segments (shuffled, up to a count), which live in the same FIFO
 *    and are sampled like online ones (the released ScienceWorld file's never-sampled seed buffer is
 *    not copied);
 *  - failed online segments (return <= 0) are kept with probability keep_fail;
 *  - sampling without replacement inside one batch (with replacement only when the batch is larger
 *    than the buffer), all randomness from the buffer's own m2_rng;
 *  - serialisable (JSON) for checkpoints, including the RNG state, so a resumed run samples the same.
 * Items are m2_traj (prompt = System 2 prompt with the sub-goal, states "Obs: o", actions
 * "a; True|False", env rewards, dones). */
#ifndef M2_AGENT_REPLAY_H
#define M2_AGENT_REPLAY_H
#include <stdint.h>
#include "core/err.h"
#include "core/rng.h"
#include "data/pack.h"

typedef struct m2_replay_item {
    m2_traj seg;
    int online;     /* 0 = offline seed, 1 = collected online */
    int success;
} m2_replay_item;

typedef struct m2_replay {
    m2_replay_item *items;   /* ring of capacity cap */
    int cap, n, head;        /* head = index of the oldest item */
    float keep_fail;
    m2_rng rng;
    long pushed, dropped_fail, evicted;
} m2_replay;

int m2_replay_init(m2_replay *r, int capacity, float keep_fail, uint64_t seed, m2_err *err);
void m2_replay_free(m2_replay *r);
int m2_replay_size(const m2_replay *r);
int m2_replay_online_count(const m2_replay *r);   /* items collected online (the rest: offline seeds) */
/* i-th item, oldest first (0 <= i < size). */
const m2_replay_item *m2_replay_at(const m2_replay *r, int i);

/* Return of a segment: sum of its rewards. */
float m2_traj_return(const m2_traj *t);

/* Seeds with up to max_items of the given segments whose success flag is set, in an order shuffled
 * by the buffer's RNG. Returns the number added, or -1. */
int m2_replay_seed_offline(m2_replay *r, const m2_traj *segs, const int *success, int n, int max_items,
                           m2_err *err);
/* Adds an online segment; failures are kept with probability keep_fail. Returns 1 if kept, 0 if
 * dropped, -1 on error. The segment is copied. */
int m2_replay_push(m2_replay *r, const m2_traj *seg, int success, m2_err *err);
/* Adds unconditionally (used by seeding and loading). */
int m2_replay_add(m2_replay *r, const m2_traj *seg, int online, int success, m2_err *err);
/* k indices in [0, size) (oldest-first numbering) into idx. Returns k, or -1 when empty. */
int m2_replay_sample(m2_replay *r, int k, int *idx, m2_err *err);

/* JSON text of the whole buffer (malloc'd) and back; from_json replaces r's contents. */
char *m2_replay_to_json(const m2_replay *r, m2_err *err);
int m2_replay_from_json(m2_replay *r, const char *json, m2_err *err);
/* Atomic file save (temp name, fsync, rename) and load. */
int m2_replay_save(const m2_replay *r, const char *path, m2_err *err);
int m2_replay_load(m2_replay *r, const char *path, m2_err *err);

#endif
