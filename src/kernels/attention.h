/* Causal grouped-query attention for ONE sequence, through sgemm per head.
 * Queries are the LAST nq of nkv positions (nkv >= nq): query i sits at position nkv-nq+i and
 * attends to keys [0, nkv-nq+i]. Training: nq == nkv over a packed sequence; generation: keys and
 * values come from the KV cache. Query head h uses KV head h / (H/KVH).
 * Row strides: ldq for q/dq/out/dout rows (>= H*D), ldkv for k/v/dk/dv rows (>= KVH*D).
 * The probabilities are not stored: the forward keeps the row log-sum-exp and the backward
 * recomputes them (memory O(N*H) instead of O(N*T*H)). */
#ifndef M2_ATTENTION_H
#define M2_ATTENTION_H

/* out[nq, H*D] = softmax(q k^T / sqrt(D) + causal mask) v;  lse[H, nq] row log-sum-exp of the
 * scaled scores (may be NULL when no backward follows). scratch: nq*nkv floats. */
void m2_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          int nq, int nkv, int H, int KVH, int D, int ldq, int ldkv,
                          float *scratch);
/* dq[nq,H*D] += ..., dk[nkv,KVH*D] += ..., dv[nkv,KVH*D] += ...  (lse from the forward).
 * scratch: 2*nq*nkv floats. */
void m2_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *lse,
                           const float *q, const float *k, const float *v, int nq, int nkv, int H,
                           int KVH, int D, int ldq, int ldkv, float *scratch);

#endif
