/* Packing (DESIGN.md §5): a whole trajectory is ONE token sequence
 *     [prompt][s_1][a_1 EOS][s_2][a_2 EOS] ... [s_T][a_T EOS][s_{T+1}]
 * built segment by segment (each text encoded separately, as the released code does), with a
 * segment table recording where every prompt/state/action lies. No string search: positions come
 * from the table. One forward over the sequence then gives
 *   - every action's log-prob: rows p with tok_action[p] = a predict token p+1 of action a
 *     (targets are next tokens; the EOS is part of the action and is predicted too),
 *   - Q(s_t, a_t) at the action's EOS (the model is causal: h there has seen s_<=t and a_t),
 *   - V(s_t) at the LAST token of state s_t (not at the action end — see docs/algorithms.md).
 *
 * State separator (tok->state_sep, config data.state_sep): every state segment ends with an EOS,
 * so the boundary where an action starts is a token instead of something the model must infer
 * from the text; off by default (the released code has none).
 *
 * BOS: at most once, at the start of the sequence (M2_BOS_SEQUENCE). The released code's BOS at the
 * start of EVERY segment (an artefact of calling the HF tokenizer per segment) is not copied.
 *
 * Truncation rule (max_tokens > 0): keep the prompt and the longest prefix of whole transitions
 * (s_t, a_t EOS) that fits, then s_{k+1} if it also fits. The last kept action's Q target needs
 * V(s_{k+1}) unless it is terminal; when neither holds its q_mask is 0 (its log-prob is still used).
 * A sequence whose prompt + s_1 + a_1 alone exceeds max_tokens is rejected (M2_ESHAPE) so the
 * caller can skip it and count it, as the released warm-up drops over-long sequences. */
#ifndef M2_DATA_PACK_H
#define M2_DATA_PACK_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* ---- tokenizer access ---- */
enum { M2_BOS_NONE = 0, M2_BOS_SEQUENCE = 1 };

typedef struct m2_tok_iface {
    void *ctx;
    /* Writes the ids of text (no special tokens) into out[0..cap) and returns how many the text
     * needs (may exceed cap: call again with a bigger buffer), or -1 with err set. */
    int (*encode)(void *ctx, const char *text, int32_t *out, int cap, m2_err *err);
    /* Writes the text of ids[0..n) (NUL-terminated, cut to cap) and returns its full length, or -1.
     * May be NULL for packing-only uses; model policies need it. */
    int (*decode)(void *ctx, const int32_t *ids, int n, char *out, int cap, m2_err *err);
    int32_t eos_id;   /* appended after every action */
    int32_t bos_id;   /* prepended once when bos == M2_BOS_SEQUENCE */
    int32_t pad_id;   /* right padding in m2_packed_batch_padded */
    int bos;          /* M2_BOS_NONE or M2_BOS_SEQUENCE */
    int state_sep;    /* 1: every state segment ends with eos_id (a marked state -> action boundary) */
    int32_t n_vocab;
} m2_tok_iface;

/* A trivial tokenizer for tests and tools: byte b -> id b; EOS 256, BOS 257, PAD 258; 259 ids. */
void m2_byte_tok_iface(m2_tok_iface *t, int bos_policy);

/* ---- trajectories (owned text) ----
 * states[n_states] with n_states = n_actions (no final state) or n_actions + 1 (s_{T+1} present);
 * rewards/dones[n_actions] (0 when never set). */
typedef struct m2_traj {
    char *prompt;
    char **states;
    char **actions;
    float *rewards, *dones;
    int n_states, n_actions;
    int cap_states, cap_actions;
} m2_traj;

void m2_traj_init(m2_traj *t);
void m2_traj_free(m2_traj *t);
int m2_traj_set_prompt(m2_traj *t, const char *prompt, m2_err *err);
int m2_traj_push_state(m2_traj *t, const char *text, m2_err *err);
int m2_traj_push_action(m2_traj *t, const char *text, float reward, float done, m2_err *err);
int m2_traj_copy(m2_traj *dst, const m2_traj *src, m2_err *err);   /* dst uninitialised */
/* Plain-text rendering (segments joined by '\n', actions followed by "<EOS>"), for transcripts and
 * scripted policies. malloc'd; NULL on allocation failure. */
char *m2_traj_render(const m2_traj *t);

/* ---- one packed sequence ---- */
typedef enum m2_seg_kind { M2_SEG_PROMPT = 0, M2_SEG_STATE = 1, M2_SEG_ACTION = 2 } m2_seg_kind;

typedef struct m2_segment {
    int kind;          /* m2_seg_kind */
    int step;          /* t of s_t / a_t (0-based); -1 for the prompt */
    int begin, end;    /* token range [begin, end); an action's range ends with its EOS */
} m2_segment;

typedef struct m2_packed {
    int32_t *ids;
    int n_tok;
    m2_segment *segs;
    int n_segs;
    int n_actions;         /* kept actions (after truncation) */
    int n_actions_src;     /* actions in the trajectory */
    int has_final_state;   /* s_{k+1} kept after the last kept action */
    /* per kept action t: */
    int *act_begin, *act_end;   /* [n_actions] token range, end - 1 = the EOS (Q position) */
    int *state_last;            /* [n_actions] last token of s_t (V position) */
    int *next_state_last;       /* [n_actions] last token of s_{t+1}, or -1 */
    float *reward, *done;       /* [n_actions] */
    float *q_mask;              /* [n_actions] 1 when the TD target is defined */
} m2_packed;

int m2_pack_traj(const m2_tok_iface *tok, const m2_traj *tr, int max_tokens, m2_packed *out,
                 m2_err *err);

/* A generation context (prompt, states and actions so far; any shape, e.g. n_states = n_actions+1)
 * as token ids, laid out exactly like m2_pack_traj. When it needs more than max_tokens (> 0), the
 * prompt is kept and the OLDEST (state, action) pairs are dropped until it fits; if the prompt and
 * the newest state alone do not fit, the error says so. *ids malloc'd. */
int m2_pack_context(const m2_tok_iface *tok, const m2_traj *ctx, int max_tokens, int32_t **ids,
                    int *n, m2_err *err);
void m2_packed_free(m2_packed *p);

/* ---- batches ----
 * Sequences are concatenated without padding (the engine's layout: tokens[N], seq_len[n_seq],
 * each sequence attends only to itself). Every position below is a FLAT index into tokens[N]. */
typedef struct m2_packed_batch {
    int n_seq, N;
    int32_t *tokens;      /* [N] */
    int *seq_len;         /* [n_seq] */
    int *seq_off;         /* [n_seq] first flat index of each sequence */
    int32_t *targets;     /* [N] next token inside the sequence, -1 at its last token */
    int32_t *tok_action;  /* [N] global action index whose token row p predicts, else -1 */
    float *tok_mask;      /* [N] 1 where tok_action >= 0 */
    int n_actions;        /* over the batch */
    int *act_seq, *act_step, *act_ntok;           /* [n_actions] */
    int *q_pos, *v_pos, *next_v_pos;              /* [n_actions] flat; next_v_pos -1 = none */
    float *reward, *done, *q_mask;                /* [n_actions] */
    /* Where the batch sits in a data-parallel step's global batch (dist/dist.h): seq_key[s] is
     * sequence s's index there (its LoRA dropout key: model/forward.h m2_batch), its actions are
     * the global batch's [act_base, act_base + n_actions) of act_total. A whole batch:
     * seq_key[s] = s, act_base 0, act_total n_actions (m2_packed_batch_build). */
    int32_t *seq_key;                             /* [n_seq] */
    int act_base, act_total;
} m2_packed_batch;

int m2_packed_batch_build(const m2_packed *seqs, int n_seq, m2_packed_batch *out, m2_err *err);
void m2_packed_batch_free(m2_packed_batch *b);
/* Sequences [s0, s1) of b as a batch of their own (copied; flat positions and action indices
 * renumbered from 0; seq_key, act_base and act_total still place them in b's global batch): a
 * part of a batch too large for one forward, scored or trained part by part. */
int m2_packed_batch_part(const m2_packed_batch *b, int s0, int s1, m2_packed_batch *out, m2_err *err);
/* Right-padded view for consumers that want [n_seq, T] rows: ids[n_seq*T] (pad_id after each
 * sequence), T = longest sequence. *ids is malloc'd. flat index b*T + p <-> seq_off[b] + p. */
int m2_packed_batch_padded(const m2_packed_batch *b, int32_t pad_id, int32_t **ids, int *T,
                           m2_err *err);

#endif
