/* The model object and its base tensors. Canonical tensor names follow GGUF:
 *   token_embd.weight [V,H]   output_norm.weight [H]   output.weight [V,H] (absent when tied)
 *   blk.N.attn_norm.weight [H]  blk.N.attn_q.weight [nh*hd,H]  blk.N.attn_k.weight [nkv*hd,H]
 *   blk.N.attn_v.weight [nkv*hd,H]  blk.N.attn_output.weight [H,nh*hd]
 *   blk.N.attn_q.bias / attn_k.bias / attn_v.bias (qkv_bias only)
 *   blk.N.ffn_norm.weight [H]  blk.N.ffn_gate.weight [F,H]  blk.N.ffn_up.weight [F,H]
 *   blk.N.ffn_down.weight [H,F]
 * Shapes are row-major [rows, cols] = PyTorch Linear.weight (out, in) = GGUF ne reversed.
 * The RoPE layout of q/k rows is the config's rope_layout; the loader sets it to match the file.
 * Matrices (and the embedding) are stored in the model's storage dtype; norms and biases in f32. */
#ifndef M2_MODEL_WEIGHTS_H
#define M2_MODEL_WEIGHTS_H
#include <stdint.h>
#include "core/core.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/params.h"

typedef struct m2_adapter m2_adapter;
typedef struct m2_head m2_head;

typedef struct m2_tensor {
    char name[64];
    int ndim;             /* 1 or 2 */
    int rows, cols;       /* 1-D: rows = 1, cols = length */
    m2_dtype dtype;       /* storage dtype */
    void *data;           /* storage */
    float *grad;          /* into the base grad arena when the base is trainable, else NULL */
    int kind;             /* M2_T_* below: which projection it is (for LoRA targets) */
    int layer;            /* -1 for global tensors */
    int mapped;           /* data lies in a file mapping the model holds (copy-on-write), not in
                             the model's own storage */
} m2_tensor;

enum { M2_T_EMBD, M2_T_OUT_NORM, M2_T_OUTPUT, M2_T_ATTN_NORM, M2_T_Q, M2_T_K, M2_T_V, M2_T_O,
       M2_T_QB, M2_T_KB, M2_T_VB, M2_T_FFN_NORM, M2_T_GATE, M2_T_UP, M2_T_DOWN };

typedef struct m2_layer {
    m2_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *ffn_norm, *wg, *wu, *wd;
} m2_layer;

typedef struct m2_model_opts {
    m2_dtype dtype;        /* storage of matrices: F32 (default), F16, BF16, Q8_0, Q4_0 (the types
                              m2_quantize encodes); a file's other block types come per tensor
                              through m2_model_create_from. For a file loaded as stored: the type
                              of blk.0.attn_q.weight */
    int train_base;        /* 1: every base weight gets gradients (requires dtype F32) */
    int threads;           /* thread pool size; <= 0 = machine (M2_THREADS) */
} m2_model_opts;

typedef struct m2_model {
    m2_model_config cfg;
    m2_model_opts opts;
    m2_tensor *tensors;    /* [n_tensors] in canonical order */
    int n_tensors;
    m2_tensor *tok_embd, *out_norm, *output;   /* output == tok_embd when tied */
    m2_layer *layers;      /* [n_layers] */
    m2_params base;        /* f32 values of f32-stored tensors (+ grads when train_base) */
    unsigned char *qstore; /* storage of non-f32 matrices */
    size_t qstore_bytes;
    size_t mapped_bytes;   /* bytes of the matrices that lie in the owner's file mapping */
    void *owner;           /* what mapped tensors point into (e.g. the open GGUF); freed with the model */
    void (*owner_free)(void *owner);
    int gen_tiles;         /* 1: generation multiplies block-type matrices as dequantised tiles (the
                              training passes' exact f32 path) instead of reading the blocks
                              (qdot.h); 0 after creation. A reference for benchmarks and tests */
    float *rope_freq;      /* [head_dim/2] */
    m2_rope_table rope_tab; /* cos/sin for positions < min(max_seq_len, 32768) */
    m2_adapter **adapters; int n_adapters;
    m2_head **heads; int n_heads;
    m2_pool *pool;         /* owned */
} m2_model;

/* Creates a model with all tensors zero (opts may be NULL = f32, frozen, machine threads). */
m2_model *m2_model_create(const m2_model_config *cfg, const m2_model_opts *opts, m2_err *err);

/* Where a matrix's storage comes from when a model is created for a file: its storage dtype
 * (any m2_dtype; its blocks must divide the row) and, when data is non-NULL, bytes of that dtype
 * used in place: the tensor then points at them (mapped = 1) and nothing is allocated for it. */
typedef struct m2_tensor_src { m2_dtype dtype; const void *data; } m2_tensor_src;
/* Called for every 2-D tensor with src preset to {opts->dtype, NULL}; nonzero fails the creation. */
typedef int (*m2_tensor_src_fn)(void *ud, const m2_tensor *t, m2_tensor_src *src, m2_err *err);
/* m2_model_create with per-matrix storage chosen by fn (NULL = opts->dtype for all). Mapped data
 * must outlive the model: hand its owner over with m2_model_set_owner. */
m2_model *m2_model_create_from(const m2_model_config *cfg, const m2_model_opts *opts, m2_tensor_src_fn fn,
                               void *ud, m2_err *err);
/* The model frees owner with owner_free when it is freed (after its tensors are gone). */
void m2_model_set_owner(m2_model *m, void *owner, void (*owner_free)(void *owner));
void m2_model_free(m2_model *m);   /* also frees adapters and heads */

m2_tensor *m2_model_find(m2_model *m, const char *name);
/* Fills tensor `name` from src holding n_values of type src_dtype (any m2_dtype), converting to
 * the storage dtype. Errors: unknown name, wrong element count, rows not a whole number of
 * blocks, a storage dtype m2_quantize cannot encode from another type. */
int m2_model_set_tensor(m2_model *m, const char *name, m2_dtype src_dtype, const void *src,
                        size_t n_values, m2_err *err);
/* Copies tensor `name` as f32 into dst[rows*cols] (dequantising). */
int m2_model_get_tensor_f32(m2_model *m, const char *name, float *dst, m2_err *err);
/* Random init like GPT-2/Llama pre-training: matrices N(0, std), output-side projections (attn
 * output, ffn down) scaled by 1/sqrt(2 L), norms 1, biases 0. Deterministic for a seed. */
void m2_model_init_random(m2_model *m, uint64_t seed, float std);
/* GGUF Llama-3.1 files may carry `rope_freqs.weight` [head_dim/2] instead of scaling metadata:
 * frequency i becomes theta^(-2i/D) / factors[i] (llama.cpp's convention). Replaces the config's
 * scaling; rebuilds the cos/sin table. */
int m2_model_set_rope_freq_factors(m2_model *m, const float *factors, int n, m2_err *err);
/* The weight view used by kernels. */
m2_wref m2_tensor_wref(const m2_tensor *t);

#endif
