/* Model hyper-parameters for every supported family, filled by the I/O layer from GGUF metadata or
 * HF config.json, or by m2_config_preset for the project's own tiny models. */
#ifndef M2_MODEL_CONFIG_H
#define M2_MODEL_CONFIG_H
#include "core/err.h"
#include "kernels/ops.h"

typedef enum m2_family { M2_FAMILY_LLAMA = 0, M2_FAMILY_MISTRAL = 1, M2_FAMILY_QWEN2 = 2 } m2_family;

typedef struct m2_model_config {
    m2_family family;
    int vocab_size;
    int dim;              /* hidden size H */
    int n_layers;
    int n_heads;
    int n_kv_heads;       /* GQA: n_heads % n_kv_heads == 0 */
    int head_dim;         /* usually dim / n_heads; 0 = derive */
    int ffn_dim;          /* SwiGLU intermediate size */
    int max_seq_len;      /* context length (positions beyond are an error) */
    float norm_eps;       /* RMSNorm epsilon, e.g. 1e-5 (Llama), 1e-6 (Qwen2) */
    float rope_theta;     /* 10000 Llama-2, 500000 Llama-3, 1e6 Qwen2/Mistral v0.3 */
    m2_rope_layout rope_layout;   /* ADJACENT for GGUF llama/mistral, HALF for HF and Qwen2 */
    m2_rope_scaling rope_scaling; /* Llama-3.1: {1, 8, 1, 4, 8192} */
    int qkv_bias;         /* Qwen2: q/k/v projections have biases */
    int tied_embeddings;  /* output projection = token embedding (no output.weight) */
    int bos_token, eos_token;     /* informational (-1 = none); generation stops use gen config */
} m2_model_config;

/* Fills derived fields (head_dim) and checks every size; errors name the field. */
int m2_config_validate(m2_model_config *c, m2_err *err);
/* Number of base parameters (counting tied embeddings once). */
long long m2_config_n_params(const m2_model_config *c);
/* Presets for the project's own models and tests:
 *   "tiny"        the pipeline's default base (vocab 2048, d 256, 4 layers, 8/4 heads, ffn 768)
 *   "bench"       DESIGN.md §9 bench shape (same as "tiny", max_seq_len 256)
 *   "test-llama"  a very small Llama-shaped model (vocab 64, d 32, 2 layers, 4/2 heads, ffn 48)
 *   "test-qwen2"  a very small Qwen2-shaped model (qkv bias, tied embeddings, HALF rope)
 * vocab_size may be overridden afterwards (e.g. to a trained tokenizer's size). */
int m2_config_preset(const char *name, m2_model_config *c, m2_err *err);
/* The project's own tiny Llama-shaped model of any size (HALF RoPE, theta 10000, eps 1e-5, untied,
 * no biases), validated. */
int m2_config_tiny(m2_model_config *c, int vocab, int dim, int layers, int heads, int kv_heads,
                   int ffn, int max_seq_len, m2_err *err);
/* One-line human summary, e.g. "llama d=256 L=4 H=8/4 ff=768 V=2048 (4.2M params)". */
void m2_config_describe(const m2_model_config *c, char *buf, int cap);

#endif
