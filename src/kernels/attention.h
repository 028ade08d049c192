/* Causal grouped-query attention over a set of sequences, parallel over (sequence, KV head) on the
 * thread pool (each work item owns its K/V gradient rows: no races, fixed summation order).
 * For each sequence the queries are the LAST nq of nkv positions (nkv >= nq): query i sits at
 * position nkv-nq+i and attends to keys [0, nkv-nq+i]. Training: nq == nkv over a packed
 * sequence; generation: keys/values come from the KV cache. Query head h uses KV head h/(H/KVH).
 * Row strides: ldq for q/dq rows (>= H*D), ldkv for k/v/dk/dv rows (>= KVH*D), out/dout rows ldo
 * (per sequence, 0 = ldq).
 * The probabilities are never stored: the forward keeps the row log-sum-exp lse[H, nq] and the
 * backward recomputes them (memory O(N*H), not O(N*T*H)). */
#ifndef M2_ATTENTION_H
#define M2_ATTENTION_H
#include "core/pool.h"

typedef struct m2_attn_seq {
    const float *q;    /* [nq, ldq]  (after RoPE) */
    const float *k;    /* [nkv, ldkv] */
    const float *v;    /* [nkv, ldkv] */
    float *out;        /* [nq, ldq]  forward output; backward: read when given (saves a pass) */
    float *lse;        /* [H, nq]    forward: written (may be NULL); backward: read */
    const float *dout; /* [nq, ldq]  backward input */
    float *dq;         /* [nq, ldq]  backward: += (may be NULL) */
    float *dk, *dv;    /* [nkv, ldkv] backward: += (may be NULL) */
    int nq, nkv;
    int ldo;           /* row stride of out/dout; 0 = ldq */
    int set_grads;     /* backward: dq, dk, dv written (=) instead of accumulated (no zeroing pass) */
} m2_attn_seq;

/* out = softmax(q k^T / sqrt(D) + causal mask) v for every sequence. Returns 0, or -1 when a
 * work item could not allocate its scratch (O(block x nkv) floats): its outputs are then not
 * written, and the caller must treat the whole result as invalid (out of memory). */
int m2_attention_forward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                         int ldkv, m2_pool *pool);
/* dq, dk, dv += gradients given dout (uses lse from the forward). Returns 0 or -1 as above. */
int m2_attention_backward(const m2_attn_seq *seqs, int n_seqs, int H, int KVH, int D, int ldq,
                          int ldkv, m2_pool *pool);

#endif
