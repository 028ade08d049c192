/* model/: the decoder-only transformer (Llama / Mistral / Qwen2 families and the project's own tiny
 * models): configs, base weights in any storage dtype, named LoRA adapters, scalar critic heads,
 * training forward/backward over packed batches, KV-cache generation, AdamW and schedules.
 *
 * Typical training step (see docs/engine.md):
 *   m2_model *m = m2_model_create(&cfg, &opts, &err);       fill with m2_model_set_tensor or
 *   m2_adapter *a = m2_adapter_add(m, &lcfg, seed, &err);    m2_model_init_random
 *   m2_ctx *c = m2_ctx_create(m, max_tokens, 1, &err);          keep_acts = 1 for training
 *   m2_forward(c, &batch, a, 1, &err);                       logits, hidden kept in c
 *   m2_ctx_logprobs(c, targets, logp);  ... loss ... m2_ctx_logprobs_backward(c, targets, dlogp);
 *   m2_backward(c, &err);                                    grads += into a->params.g
 *   m2_clip_grads(groups, n, 1.0f); m2_adamw_step(&a->params, &opt, lr, &err); m2_params_zero_grad(..)
 */
#ifndef M2_MODEL_H
#define M2_MODEL_H
#include "model/config.h"
#include "model/params.h"
#include "model/weights.h"
#include "model/lora.h"
#include "model/heads.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/optim.h"
#include "model/memplan.h"
#endif
