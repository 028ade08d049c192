/* Adapters and heads on disk.
 *   PEFT folder: adapter_config.json (peft_type LORA, r, lora_alpha, lora_dropout, target_modules,
 *     base_model_name_or_path, task_type CAUSAL_LM, bias "none", ...) + adapter_model.safetensors
 *     with base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in] and
 *     .lora_B.weight [out, r] (HF row order: loadable by PEFT and vLLM).
 *   llama.cpp LoRA GGUF: general.type "adapter", general.architecture, adapter.type "lora",
 *     adapter.lora.alpha; tensors blk.N.attn_q.weight.lora_a (ne [in, r]) and .lora_b
 *     (ne [r, out]); for llama the q/k lora_b rows are in llama.cpp's permuted RoPE order.
 *   Critic heads: safetensors with <head>.W1 [F,H], .b1 [F], .w2 [F], .b2 [1] and the Polyak
 *     targets as <head>.target.W1 ...; __metadata__ lists the heads. */
#ifndef M2_IO_PEFT_H
#define M2_IO_PEFT_H
#include <stddef.h>
#include "core/err.h"
#include "model/model.h"

/* Parses adapter_config.json text into a LoRA config (name left empty). base_model (may be NULL)
 * receives base_model_name_or_path. Unsupported variants (DoRA, rank/alpha patterns, biases,
 * fan_in_fan_out, layers_to_transform, modules_to_save, regex targets) are errors. */
int m2_peft_config_parse(const char *json, size_t len, const char *file, m2_lora_config *out,
                         char *base_model, int base_cap, m2_err *err);
/* adapter_config.json text for an adapter (malloc'd). */
char *m2_peft_config_json(const m2_lora_config *c, const char *base_model);

int m2_peft_save(const m2_model *m, const m2_adapter *a, const char *dir, const char *base_model,
                 m2_err *err);
/* Loads a PEFT folder as a new adapter `name` (NULL: the folder's base name) of m. */
m2_adapter *m2_peft_load(m2_model *m, const char *dir, const char *name, m2_err *err);

int m2_lora_gguf_save(const m2_model *m, const m2_adapter *a, const char *path, m2_err *err);
m2_adapter *m2_lora_gguf_load(m2_model *m, const char *path, const char *name, m2_err *err);

/* A PEFT folder or a LoRA GGUF, by what the path is. */
m2_adapter *m2_adapter_load(m2_model *m, const char *path, const char *name, m2_err *err);

int m2_heads_save(m2_head *const *heads, int n, const char *path, m2_err *err);
/* Loads every head of the file into m (adding heads that do not exist yet). */
int m2_heads_load(m2_model *m, const char *path, m2_err *err);

#endif
