/* Loading models into the engine and saving them, from either ecosystem:
 *   GGUF (llama / qwen2 architectures; Mistral files are llama): tensors by GGUF name
 *   HF folder: config.json + model.safetensors or model.safetensors.index.json shards
 * The engine's canonical names are GGUF's; m2_tensor_name_to_hf / _from_hf map them.
 *
 * RoPE row order: HF Llama/Mistral q/k rows pair (i, i + d/2) ("rotate_half"); llama.cpp's
 * converter permutes those rows so GGUF llama pairs (2i, 2i+1). Qwen2 is never permuted. The
 * loader always brings q/k weights into the HF order and sets cfg.rope_layout = M2_ROPE_HALF,
 * so PEFT adapters (HF order) apply unchanged whatever file the base came from; the GGUF
 * writers permute q/k (and LoRA B of q/k) back for llama. */
#ifndef M2_IO_MODEL_LOAD_H
#define M2_IO_MODEL_LOAD_H
#include <stdint.h>
#include "core/err.h"
#include "io/gguf.h"
#include "io/hf_config.h"
#include "model/model.h"

struct m2_tokenizer;

/* GGUF <-> HF tensor names ("blk.3.attn_q.weight" <-> "model.layers.3.self_attn.q_proj.weight").
 * 0 on success, -1 when the name is not a transformer tensor. */
int m2_tensor_name_to_hf(const char *gguf_name, char *out, int cap);
int m2_tensor_name_from_hf(const char *hf_name, char *out, int cap);

/* Permutes the rows of a q or k projection (rows = n_head * head_dim, each row_bytes long) between
 * HF order and GGUF-llama order: to_gguf = 1 applies llama.cpp's convert permutation
 * (reshape(n_head, 2, hd/2, .).swapaxes(1, 2)), 0 its inverse. src and dst must not overlap. */
void m2_rope_permute_rows(const void *src, void *dst, int n_head, int head_dim, size_t row_bytes,
                          int to_gguf);

/* Config conversions between the file view and the engine's. */
int m2_hf_to_model_config(const m2_hf_config *h, m2_model_config *c, m2_err *err);
void m2_model_config_to_hf(const m2_model_config *c, m2_hf_config *h);

/* opts->dtype value that means "as stored in the file" (the default when opts is NULL). */
#define M2_DTYPE_AUTO ((m2_dtype)-1)

/* Loads a model: a .gguf file, an HF folder, a .safetensors file (config.json beside it) or a
 * model.safetensors.index.json. opts NULL = storage dtype chosen from the file (F32/F16/BF16/
 * Q8_0 kept as stored; Q4_0 is dequantised to f32), frozen, machine threads. hf_out (may be
 * NULL) receives the file's config. */
m2_model *m2_model_load(const char *path, const m2_model_opts *opts, m2_hf_config *hf_out,
                        m2_err *err);
/* The same from a GGUF already open (e.g. one held in memory); g must outlive nothing: tensors
 * are copied into the model. Every tensor is checked against the metadata before allocating. */
m2_model *m2_model_from_gguf(const m2_gguf *g, const m2_model_opts *opts, m2_hf_config *hf_out,
                             m2_err *err);
/* The engine config of a model file or folder (the same paths as m2_model_load) without loading
 * any tensor: GGUF metadata, or the HF folder's config.json. */
int m2_model_config_read(const char *path, m2_model_config *c, m2_err *err);
/* True when path names a GGUF file (by its magic). */
int m2_is_gguf(const char *path);

/* Writes the base model as GGUF: matrices in `type` (M2_GGML_F32, F16, BF16, Q8_0, Q4_0; rows
 * not a multiple of 32 fall back to F32 for the block types), norms and biases F32. Storage that
 * already has the requested type is copied bit-exactly. meta_src (may be NULL): its tokenizer.*
 * keys are copied (e.g. from the GGUF the model came from). */
int m2_model_save_gguf(m2_model *m, const char *path, uint32_t type, const m2_gguf *meta_src,
                       m2_err *err);
/* Same, with the tokenizer's metadata written from tok (when meta_src is NULL; tok may be NULL). */
int m2_model_save_gguf_tok(m2_model *m, const char *path, uint32_t type, const m2_gguf *meta_src,
                           const struct m2_tokenizer *tok, m2_err *err);
/* Writes an HF folder: config.json + model.safetensors (shard_bytes > 0: shards + index) in
 * `type` (F32, F16, BF16). tokenizer_dir (may be NULL): tokenizer files copied from there. */
int m2_model_save_hf(m2_model *m, const char *dir, uint32_t type, uint64_t shard_bytes,
                     const char *tokenizer_dir, m2_err *err);

/* Writes tokenizer.ggml.* metadata for a tokenizer (vocab, types, scores, merges, pre-tokenizer,
 * special ids, add_bos/add_eos), e.g. when an HF model is saved as GGUF. */
int m2_tokenizer_write_gguf(const struct m2_tokenizer *t, m2_gguf_writer *w, m2_err *err);

/* Engine dtype <-> ggml type (-1 / UINT32_MAX when there is none). */
int m2_dtype_from_ggml(uint32_t ggml_type, m2_dtype *out);
uint32_t m2_dtype_to_ggml(m2_dtype t);

#endif
