/* Internal to the pipeline: the offline anchor's candidates in score mode (sys2.action_mode:
 * score). The anchor term samples a^ from the current policy at states of the dataset; in score
 * mode the policy chooses among the environment's admissible actions, which the records do not
 * hold. This table gives them back: it replays the data stage's rollouts (pw_data_episode, the same
 * seeds), packs their records as the offline set packs them, and keys every action's state by its
 * token prefix; a lookup replays the episode in the environment up to that state and returns its
 * admissible actions as candidates (agent/choose.h: both flags, tokens + EOS). A prefix not in the
 * table (records of a data.path folder, which are not replayed) gives no candidates: the anchor
 * then generates a^ as in generate mode. */
#ifndef M2_PIPE_ANCHOR_CANDS_H
#define M2_PIPE_ANCHOR_CANDS_H
#include "pipe/world.h"

typedef struct pw_anchor_cands pw_anchor_cands;

/* kind "low" or "flat" (the offline set's records, expert and medium); max_tokens as the set's. */
int pw_anchor_cands_build(pw_world *w, const char *kind, int max_tokens, pw_anchor_cands **out, m2_err *err);
void pw_anchor_cands_free(pw_anchor_cands *ac);
int pw_anchor_cands_size(const pw_anchor_cands *ac);   /* states in the table */
/* m2_offline_cfg.cands: the candidates of the state whose packed prefix is prefix[plen] (owned by
 * the table, valid until the next lookup); *n = 0 when the prefix is unknown. */
int pw_anchor_cands_lookup(void *ud, const int32_t *prefix, int plen, const int32_t *const **cand, const int **len,
                           int *n, m2_err *err);

#endif
