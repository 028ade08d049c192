/* Architecture hyper-parameters as the files state them: HF config.json (LlamaForCausalLM,
 * MistralForCausalLM, Qwen2ForCausalLM) and GGUF `llama.*` / `qwen2.*` metadata (Mistral GGUFs
 * are `llama`). The loader (io/model_load.h) turns this into the engine's m2_model_config. */
#ifndef M2_IO_HF_CONFIG_H
#define M2_IO_HF_CONFIG_H
#include <stddef.h>
#include "core/err.h"
#include "io/gguf.h"

typedef enum m2_hf_family { M2_HF_LLAMA = 0, M2_HF_MISTRAL = 1, M2_HF_QWEN2 = 2 } m2_hf_family;

typedef struct m2_hf_config {
    m2_hf_family family;
    int vocab_size;
    int hidden_size;
    int intermediate_size;
    int num_layers;
    int num_heads;
    int num_kv_heads;
    int head_dim;                   /* hidden_size / num_heads unless the file says otherwise */
    int max_pos;                    /* max_position_embeddings / context_length */
    double rms_norm_eps;
    double rope_theta;
    int rope_llama3;                /* rope_scaling {"rope_type": "llama3", ...} */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_pos;
    int tie_word_embeddings;
    int qkv_bias;                   /* Qwen2 */
    int bos_token_id, eos_token_id; /* -1 when absent */
    char torch_dtype[16];           /* "float32", "bfloat16", ... ("" when absent) */
} m2_hf_config;

/* "llama" / "mistral" / "qwen2" (HF model_type) and the HF class name. */
const char *m2_hf_family_model_type(m2_hf_family f);
const char *m2_hf_family_class(m2_hf_family f);
/* The GGUF general.architecture of a family ("llama" for Llama and Mistral, "qwen2"). */
const char *m2_hf_family_gguf_arch(m2_hf_family f);

/* Checks sizes (positive, heads divide, GQA ratio, finite eps/theta); errors name the field. */
int m2_hf_config_validate(const m2_hf_config *c, const char *file, m2_err *err);
/* Parses config.json text; `file` names it in errors. */
int m2_hf_config_parse(const char *json, size_t len, const char *file, m2_hf_config *out, m2_err *err);
int m2_hf_config_load(const char *path, m2_hf_config *out, m2_err *err);
/* config.json text for c (malloc'd, caller frees), in HF's key names. */
char *m2_hf_config_to_json(const m2_hf_config *c);
int m2_hf_config_save(const m2_hf_config *c, const char *path, m2_err *err);

/* From GGUF metadata (and, for Llama-3.1 rope scaling, the rope_freqs.weight tensor). */
int m2_hf_config_from_gguf(const m2_gguf *g, m2_hf_config *out, m2_err *err);
/* Writes general.architecture and the {arch}.* keys (not the tokenizer). */
int m2_hf_config_to_gguf(const m2_hf_config *c, m2_gguf_writer *w);
/* Llama-3.1 per-frequency divisors (llama.cpp's rope_freqs.weight), out[head_dim/2]. */
void m2_hf_llama3_rope_factors(const m2_hf_config *c, float *out);

#endif
