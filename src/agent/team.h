/* Teams (DESIGN.md §6, issue #16): n agents sharing ONE text context. Each agent is its own
 * (model, adapter, tokenizer): the agents of a run share one base with an adapter each, but an
 * agent may point at its own base file and tokenizer (a team can mix models; one agent can be
 * swapped without retraining the others), because the context is text that each agent encodes
 * with its own tokenizer.
 *
 * Protocols:
 *   chain   every agent speaks once per sample; order: round robin with a per-sample offset
 *           (sample s: agents s mod n, s+1 mod n, ...) or a seeded random permutation per sample;
 *   router  T turns; a fixed router picks the active agent each turn: round robin (turn t: agent
 *           t mod n) or a seeded random draw per turn.
 * The last message is the team's answer.
 *
 * The shared context (the one home of the team's text, for rollouts, training and pre-training):
 *   prompt  "Question: <question>\n"
 *   turn j  state "Agent <k+1>:" (the last turn: "Agent <k+1>, final answer:"), then the message
 *           " <text>" followed by EOS (data/pack.h's layout: [prompt][s_0][a_0 EOS][s_1][a_1 EOS]..)
 * so the agent of turn j sees the question and every earlier message, labelled with its speaker.
 * A message is one line: generation stops at EOS or the first newline. */
#ifndef M2_AGENT_TEAM_H
#define M2_AGENT_TEAM_H
#include <stdint.h>
#include "data/pack.h"
#include "data/qa.h"
#include "model/model.h"

#define M2_TEAM_MAX 16          /* agents */
#define M2_TEAM_MAX_TURNS 32    /* turns of one sample */

typedef enum m2_team_protocol { M2_TEAM_CHAIN = 0, M2_TEAM_ROUTER = 1 } m2_team_protocol;
typedef enum m2_team_order { M2_TEAM_ROUND_ROBIN = 0, M2_TEAM_RANDOM = 1 } m2_team_order;

typedef struct m2_team_agent {
    m2_model *model;            /* its base */
    m2_adapter *adapter;        /* its LoRA on that base; NULL = the base alone */
    const m2_tok_iface *tok;    /* its tokenizer (encode, decode, eos) */
} m2_team_agent;

typedef struct m2_team {
    int n;                      /* agents, 1..M2_TEAM_MAX */
    m2_team_agent agent[M2_TEAM_MAX];
    int protocol;               /* m2_team_protocol */
    int order;                  /* m2_team_order */
    int turns;                  /* router: T (1..M2_TEAM_MAX_TURNS); the chain uses n */
    uint64_t order_seed;        /* the seeded random orders */
} m2_team;

/* The speakers of sample `sample`'s turns (a deterministic function of the team and the sample
 * id); returns the number of turns, or -1 for a team that is not well formed. */
int m2_team_schedule(const m2_team *t, uint64_t sample, int *speakers);

/* One sample: a question played by the team. */
typedef struct m2_team_sample {
    int task;                   /* index of the question in its set */
    uint64_t id;                /* sample id: the schedule and the sampling streams derive from it */
    int n_turns;
    int speaker[M2_TEAM_MAX_TURNS];
    char *msg[M2_TEAM_MAX_TURNS];   /* malloc'd, without the newline */
    float reward;               /* 1 when the checker accepts the last message */
} m2_team_sample;

void m2_team_sample_free(m2_team_sample *s);

/* The context the speaker of turn `turn` sees (turn < n_turns: prompt, the earlier turns and its
 * own state; turn == n_turns: the whole transcript, every message an action). *tr initialised. */
int m2_team_context(const char *question, const m2_team_sample *s, int turn, m2_traj *tr, m2_err *err);

typedef struct m2_team_gen {
    m2_sampler sampler;         /* temperature <= 0: greedy */
    int max_new_tokens;         /* per message */
    uint64_t seed;              /* turn j of the call samples from streams derived from (seed, j) */
} m2_team_gen;

/* Plays samples s[0..n) (task and id set by the caller, the rest filled here) with the team on the
 * questions of qs, turn by turn: at each turn the samples whose speaker is agent k are generated
 * in ONE batch with agent k's model and adapter; then every sample's reward is the exact checker
 * on its last message (m2_qa_check). */
int m2_team_play(const m2_team *t, const m2_qa_set *qs, m2_team_sample *s, int n, const m2_team_gen *g, m2_err *err);
/* The same for the block s[first..first+count) of the batch s[0..n) alone (a rank's part of it,
 * dist/dist.h m2_dist_shard): each of its samples samples from the stream its row has when the
 * whole batch is played (the rows are numbered from the schedules, which depend on the ids alone),
 * so the block's messages and rewards are the whole batch's whatever the other samples are. The
 * samples outside the block get their schedule and no message. m2_team_play is the block [0, n). */
int m2_team_play_block(const m2_team *t, const m2_qa_set *qs, m2_team_sample *s, int n, int first, int count,
                       const m2_team_gen *g, m2_err *err);

/* Packs the transcripts of s[0..n) with agent `agent`'s tokenizer into one batch whose action rows
 * (tok_action >= 0, tok_mask 1) are the tokens of that agent's messages only; the other agents'
 * messages are context. Sequences longer than max_tokens (> 0) are cut (data/pack.h's rule); no
 * sample (n = 0) gives an empty batch (N = 0). seq_of_action (may be NULL) receives nothing; the batch's act_seq maps actions to samples. */
int m2_team_pack(const m2_team *t, int agent, const m2_qa_set *qs, const m2_team_sample *s, int n, int max_tokens,
                 m2_packed_batch *out, m2_err *err);

/* ---------------------------------------------------------------- rollout sources
 * What the TeamTR stage loop (algo/team_train.h) needs of a team, whatever it plays: a batch of
 * samples played by the agents as they are now, and one agent's tokens of that batch. Two kinds:
 * the shared-context team over questions (m2_team_qa, below) and the Multi² hierarchy in an
 * environment (agent/team_hier.h). */
typedef struct m2_team_source {
    void *ud;
    /* Of a batch of n = n_tasks * G samples (sample i plays task tasks[i / G], an index into the
     * source's task set, with id id0 + i), plays the block i in [first, first + count) with the
     * agents' current weights; R[i] its reward in [0, 1] (R has n entries; those outside the block
     * are left alone). Sampling follows g (temperature, tokens per message, the batch's seed), and
     * a sample's draws depend on its place in the whole batch, never on the block: the block
     * [0, n) played by one process and the blocks of several ranks play the same samples. The
     * block is kept for pack until the next play. */
    int (*play)(void *ud, const int *tasks, int n_tasks, int G, uint64_t id0, int first, int count,
                const m2_team_gen *g, float *R, m2_err *err);
    /* Agent k's tokens of the kept block: its outputs are the action rows (tok_action >= 0, mask
     * 1); everything else is context. *seq_sample (malloc'd, pb->n_seq entries) maps each packed
     * sequence to its sample's index in the whole batch (a sample may give several sequences).
     * Sequences longer than max_tokens (> 0) are cut (data/pack.h's rule); a block with nothing of
     * the agent is empty (pb->N == 0). */
    int (*pack)(void *ud, int agent, int max_tokens, m2_packed_batch *pb, int **seq_sample, m2_err *err);
} m2_team_source;

/* The shared-context team over questions as a source: play = m2_team_play, pack = m2_team_pack (one
 * sequence a sample). */
typedef struct m2_team_qa {
    const m2_team *team;
    const m2_qa_set *qs;
    /* The reward of a played sample (NULL: the exact checker on its last message, as m2_team_play
     * sets it); e.g. partial credit, or a shaped reward in tests. */
    float (*reward)(void *ud, const m2_qa *q, const m2_team_sample *s);
    void *reward_ud;
    m2_team_sample *s;          /* the last batch played, its block [first, first + count) kept */
    int n, cap, first, count;
} m2_team_qa;

m2_team_source m2_team_qa_source(m2_team_qa *q);
void m2_team_qa_free(m2_team_qa *q);   /* the kept batch */

#endif
