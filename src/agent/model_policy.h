/* The model behind the control loop: an m2_policy that packs the role's context exactly like the
 * training sequences (m2_pack_context), generates with the ROLE'S NAMED ADAPTER until EOS or the first
 * newline (sub-goals and actions are one line; the loop cuts at the first line anyway) (KV cache,
 * greedy or sampled), and reports prompt and generated token counts.
 * Ablations are adapter choices: shared adapter (same for both roles), role swap (swapped), flat
 * (System 2 only, loop cfg.flat).
 * It also chooses among given candidates (m2_policy.choose, System 2's score mode, agent/choose.h):
 * each candidate is scored as the training sequences score an action (its tokens + EOS after the
 * packed context), with the context prefilled once on the role's KV cache (m2_kv_score), then
 * picked greedily (sampler temperature <= 0) or drawn from the softmax over the candidates at the
 * sampler's temperature (top-k and top-p do not apply) from the call's stream (seed, stream, call). */
#ifndef M2_AGENT_MODEL_POLICY_H
#define M2_AGENT_MODEL_POLICY_H
#include "agent/loop.h"
#include "data/pack.h"
#include "io/tokenizer.h"
#include "model/model.h"

typedef struct m2_model_policy {
    m2_model *model;
    m2_adapter *sys1, *sys2;   /* adapter per role; NULL = the base */
    const m2_tok_iface *tok;   /* encode, decode, eos */
    m2_sampler sampler;        /* temperature <= 0: greedy (evaluation) */
    int max_new_tokens;        /* per generation (e.g. 32 for actions, 48 for sub-goals) */
    int max_context;           /* prompt tokens; <= 0: model max_seq_len - max_new_tokens */
    uint64_t seed;             /* the role's seed (run seed, stage, role) */
    int score_mean;            /* choose (score mode): a candidate's log-prob is the mean (1) or the sum (0)
                                * of its tokens' log-probs, EOS included (config sys2.action_logprob) */
    /* Call k of an episode (generation or choice) samples from a stream of (seed, stream, k): stream
     * is the episode's (m2_episode_stream, set with calls = 0 by m2_policy.reset at its start), so
     * the samples depend on the episode alone, not on the process or the episodes before it. */
    uint64_t stream;
    long calls;
    /* Per role, the KV cache of the last call's context and output (allocated on first use):
     * within an episode each context extends the previous one, so only its new tokens are
     * prefilled (m2_generate_cached). Emptied at every episode start (m2_policy.reset); free with
     * m2_model_policy_free. Zero-initialise (the fields above are the ones to set). */
    struct m2_policy_kv *kv[2];
} m2_model_policy;

m2_policy m2_model_policy_as(m2_model_policy *mp);
void m2_model_policy_reset(m2_model_policy *mp);   /* empties the caches (keeps their memory) */
void m2_model_policy_free(m2_model_policy *mp);    /* frees the caches; the policy stays usable */
int m2_model_policy_cached(const m2_model_policy *mp, m2_role role);   /* tokens the role's cache holds */

/* Tokenizer interface over an io/ tokenizer (no special tokens added inside segments; EOS/BOS/PAD
 * from the tokenizer; BOS once per sequence when the tokenizer adds one). */
void m2_tok_iface_from_tokenizer(m2_tok_iface *t, const m2_tokenizer *tok);

#endif
