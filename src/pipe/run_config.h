/* The config of a Multi² training run: one typed struct and its schema, generated from ONE table
 * (M2_RUN_CONFIG_KEYS) so a new key is a new row. Names and defaults follow the released Multi²
 * configs (reference/algorithms.md §2.6) and DESIGN.md §6; the YAML files under configs/ override them.
 *
 * Row: X(TYPE, c_field, "dotted.key", "default", min, max, choices, "help")
 *   TYPE is INT (int64_t), FLOAT (double), BOOL (int), ENUM (int: the index of the choice), STR/LIST
 *   (char[M2_CFG_STR_MAX]);
 *   min > max means unbounded. */
#ifndef M2_RUN_CONFIG_H
#define M2_RUN_CONFIG_H
#include "core/config.h"
#include "agent/choose.h"   /* the sys2.action_mode choices */
#include "data/prompts.h"   /* the prompt.low.commands choices */

#define M2_INF 1e308               /* "no upper bound" inside a range */
#define M2_LORA_TARGETS "q|k|v|o|gate|up|down"

/* Enum keys. Each is ONE X list X(ID, "name"): the C enum (M2_<KIND>_<ID>, in list order), the
 * config choices ("a|b|c") and the names array come from it, so code compares enum values, never
 * strings. ENUM fields of m2_run_config hold the value's index (core/config.h). */
#define M2_METHOD_LIST(X) \
  X(MULTI2, "multi2") X(FLAT, "flat") X(SHARED_ADAPTER, "shared_adapter") X(SFT_ONLY, "sft_only") \
  X(OFFLINE_ONLY, "offline_only") X(RL_ONLY, "rl_only") X(ROLE_SWAP, "role_swap") X(NO_ANCHOR, "no_anchor") \
  X(NO_KL, "no_kl") X(TEAMTR, "teamtr") X(TEAMTR_HIER, "teamtr_hier")
/* The stages in plan order (pipe/plan.c holds the one stage table: function, help, keys read). */
#define M2_STAGE_LIST(X) \
  X(PRETRAIN, "pretrain") X(DATA, "data") X(SYS1_SFT, "sys1_sft") X(SYS2_WARMUP, "sys2_warmup") \
  X(SYS2_OFFLINE, "sys2_offline") X(SYS2_ONLINE, "sys2_online") X(TEAMTR, "teamtr") X(TEAMTR_HIER, "teamtr_hier") \
  X(EVAL, "eval") X(REPORT, "report")
#define M2_RUN_PROGRESS_LIST(X) X(AUTO, "auto") X(ON, "on") X(OFF, "off")
#define M2_BASE_DTYPE_LIST(X) X(F32, "f32") X(BF16, "bf16") X(F16, "f16") X(Q8_0, "q8_0")
#define M2_OFFLINE_ANCHOR_LIST(X) X(SAMPLED, "sampled") X(RELU_WEIGHT, "relu-weight")
#define M2_LOGPROB_LIST(X) X(MEAN, "mean") X(SUM, "sum")
/* TeamTR (method teamtr): the variant (TeamTR and its baselines), the task family, the team's
 * protocol and turn order, the update order sigma of a stage. */
#define M2_TEAMTR_VARIANT_LIST(X) X(TEAMTR, "teamtr") X(STALE, "stale") X(STALE_HAPPO, "stale_happo") \
  X(JOINT, "joint") X(NO_TR, "no_tr")
#define M2_TEAMTR_TASK_LIST(X) X(ARITHMETIC, "arithmetic") X(CRAFT, "craft") X(JSONL, "jsonl")
#define M2_TEAMTR_PROTOCOL_LIST(X) X(CHAIN, "chain") X(ROUTER, "router")
#define M2_TEAMTR_ORDER_LIST(X) X(ROUND_ROBIN, "round_robin") X(RANDOM, "random")
#define M2_TEAMTR_SIGMA_LIST(X) X(RANDOM, "random") X(FIXED, "fixed")
/* The hierarchical team (method teamtr_hier): System 1 trained with System 2, or frozen. */
#define M2_TEAMTR_HIER_SYS1_LIST(X) X(TRAIN, "train") X(FROZEN, "frozen")

#define M2_ENUM_CHOICE_(id, name) "|" name
/* "a|b|c" from a list: the joined "|a|b|c" without its first character (an address constant). */
#define M2_CHOICES(LIST) (&(LIST(M2_ENUM_CHOICE_))[1])
#define M2_METHOD_ID_(id, name) M2_METHOD_##id,
#define M2_STAGE_ID_(id, name) M2_STAGE_##id,
#define M2_RUN_PROGRESS_ID_(id, name) M2_RUN_PROGRESS_##id,
#define M2_BASE_DTYPE_ID_(id, name) M2_BASE_DTYPE_##id,
#define M2_OFFLINE_ANCHOR_ID_(id, name) M2_OFFLINE_ANCHOR_##id,
#define M2_LOGPROB_ID_(id, name) M2_LOGPROB_##id,
#define M2_TEAMTR_VARIANT_ID_(id, name) M2_TEAMTR_VARIANT_##id,
#define M2_TEAMTR_TASK_ID_(id, name) M2_TEAMTR_TASK_##id,
#define M2_TEAMTR_PROTOCOL_ID_(id, name) M2_TEAMTR_PROTOCOL_##id,
#define M2_TEAMTR_ORDER_ID_(id, name) M2_TEAMTR_ORDER_##id,
#define M2_TEAMTR_SIGMA_ID_(id, name) M2_TEAMTR_SIGMA_##id,
#define M2_TEAMTR_HIER_SYS1_ID_(id, name) M2_TEAMTR_HIER_SYS1_##id,
typedef enum m2_method { M2_METHOD_LIST(M2_METHOD_ID_) M2_N_METHODS } m2_method;
typedef enum m2_stage_id { M2_STAGE_LIST(M2_STAGE_ID_) M2_N_STAGES } m2_stage_id;
typedef enum m2_run_progress { M2_RUN_PROGRESS_LIST(M2_RUN_PROGRESS_ID_) M2_N_RUN_PROGRESS } m2_run_progress;
typedef enum m2_base_dtype { M2_BASE_DTYPE_LIST(M2_BASE_DTYPE_ID_) M2_N_BASE_DTYPES } m2_base_dtype;
typedef enum m2_offline_anchor { M2_OFFLINE_ANCHOR_LIST(M2_OFFLINE_ANCHOR_ID_) M2_N_OFFLINE_ANCHORS } m2_offline_anchor;
typedef enum m2_logprob_reduce { M2_LOGPROB_LIST(M2_LOGPROB_ID_) M2_N_LOGPROBS } m2_logprob_reduce;
typedef enum m2_teamtr_variant { M2_TEAMTR_VARIANT_LIST(M2_TEAMTR_VARIANT_ID_) M2_N_TEAMTR_VARIANTS } m2_teamtr_variant;
typedef enum m2_teamtr_task { M2_TEAMTR_TASK_LIST(M2_TEAMTR_TASK_ID_) M2_N_TEAMTR_TASKS } m2_teamtr_task;
typedef enum m2_teamtr_protocol { M2_TEAMTR_PROTOCOL_LIST(M2_TEAMTR_PROTOCOL_ID_) M2_N_TEAMTR_PROTOCOLS } m2_teamtr_protocol;
typedef enum m2_teamtr_order { M2_TEAMTR_ORDER_LIST(M2_TEAMTR_ORDER_ID_) M2_N_TEAMTR_ORDERS } m2_teamtr_order;
typedef enum m2_teamtr_sigma { M2_TEAMTR_SIGMA_LIST(M2_TEAMTR_SIGMA_ID_) M2_N_TEAMTR_SIGMAS } m2_teamtr_sigma;
typedef enum m2_teamtr_hier_sys1 { M2_TEAMTR_HIER_SYS1_LIST(M2_TEAMTR_HIER_SYS1_ID_) M2_N_TEAMTR_HIER_SYS1S } m2_teamtr_hier_sys1;
/* Names by value (pipe/run_config.c). */
extern const char *const m2_method_names[M2_N_METHODS];
extern const char *const m2_stage_names[M2_N_STAGES];
extern const char *const m2_run_progress_names[M2_N_RUN_PROGRESS];
extern const char *const m2_base_dtype_names[M2_N_BASE_DTYPES];
extern const char *const m2_offline_anchor_names[M2_N_OFFLINE_ANCHORS];
extern const char *const m2_teamtr_variant_names[M2_N_TEAMTR_VARIANTS];
extern const char *const m2_action_mode_names[M2_N_ACTION_MODES];

#define M2_LORA_KEYS(X, role, ROLE_HELP) \
  X(INT,   lora_##role##_rank,    "lora." #role ".rank",    "16",   1, 4096, NULL, "LoRA rank of the " ROLE_HELP " adapter") \
  X(FLOAT, lora_##role##_alpha,   "lora." #role ".alpha",   "32",   0, M2_INF, NULL, "LoRA alpha (scale = alpha / rank)") \
  X(FLOAT, lora_##role##_dropout, "lora." #role ".dropout", "0.05", 0, 0.99, NULL, "LoRA dropout on the adapter input") \
  X(LIST,  lora_##role##_targets, "lora." #role ".targets", "[v]",  1, 0, M2_LORA_TARGETS, "projections the adapter wraps (released code: v only)")

#define M2_RUN_CONFIG_KEYS(X) \
  X(ENUM,  method,              "method",            "multi2", 1, 0, M2_CHOICES(M2_METHOD_LIST), "method or baseline/ablation to train") \
  /* run */ \
  X(STR,   run_name,            "run.name",          "",     1, 0, NULL, "run folder name under run.out_dir (empty: the config file's name)") \
  X(STR,   run_out_dir,         "run.out_dir",       "runs", 1, 0, NULL, "parent folder of run folders") \
  X(INT,   run_seed,            "run.seed",          "22",   0, M2_INF, NULL, "master seed; every RNG stream derives from it") \
  X(INT,   run_threads,         "run.threads",       "0",    0, 4096, NULL, "worker threads (0: all online CPUs)") \
  X(LIST,  run_stages,          "run.stages",        "[]",   1, 0, M2_CHOICES(M2_STAGE_LIST), "stages to run, in order (empty: the method's plan)") \
  X(INT,   run_ckpt_every,      "run.ckpt_every",    "200",  0, M2_INF, NULL, "checkpoint every N optimiser steps (0: only at stage ends)") \
  X(INT,   run_keep_last,       "run.keep_last",     "3",    1, 100000, NULL, "checkpoints kept (older ones are pruned)") \
  X(INT,   run_stop_at_step,    "run.stop_at_step",  "0",    0, M2_INF, NULL, "stop the run right after this global step, with a checkpoint there (0: never; TeamTR stops at the end of the stage holding it, its checkpoint step); --resume continues it") \
  X(INT,   run_log_every,       "run.log_every",     "10",   1, M2_INF, NULL, "metrics/summary line every N steps") \
  X(BOOL,  run_tensorboard,     "run.tensorboard",   "true", 1, 0, NULL, "also write a TensorBoard event file") \
  X(ENUM,  run_progress,        "run.progress",      "auto", 1, 0, M2_CHOICES(M2_RUN_PROGRESS_LIST), "progress bars (auto: only on a terminal; plain lines otherwise)") \
  X(BOOL,  run_plots,           "run.plots",         "true", 1, 0, NULL, "write learning curves and the results chart (SVG, PNG)") \
  X(STR,   run_reuse_from,      "run.reuse_from",    "",     1, 0, NULL, "finished run folder whose first stages this run reuses (artifacts linked, not recomputed)") \
  X(LIST,  run_reuse_stages,    "run.reuse_stages",  "[]",   1, 0, M2_CHOICES(M2_STAGE_LIST), "stages taken from run.reuse_from: a prefix of both plans, checked to be identical") \
  /* env */ \
  X(STR,   env_name,            "env.name",          "textcraft", 1, 0, NULL, "environment: a name in env/'s registry (textcraft, alfworld, scienceworld)") \
  X(STR,   env_data,            "env.data",          "",     1, 0, NULL, "environment data folder (empty: the embedded default)") \
  X(STR,   env_task,            "env.task",          "",     1, 0, NULL, "task family (empty: every task of the split)") \
  /* data */ \
  X(STR,   data_path,           "data.path",         "",     1, 0, NULL, "hierarchical JSONL folder to train on (empty: generate with the expert oracle)") \
  X(INT,   data_expert_episodes,"data.expert_episodes", "500", 1, M2_INF, NULL, "expert episodes generated on the train split") \
  X(INT,   data_medium_episodes,"data.medium_episodes", "-1", -1, M2_INF, NULL, "medium-quality episodes (the expert with data.medium_noise of its actions replaced) for the offline and online RL data; -1: half of data.expert_episodes (at least 1); 0: none") \
  X(FLOAT, data_medium_noise,   "data.medium_noise", "0.3",  0, 1, NULL, "medium episodes: probability that an expert action is replaced (half the time by a random admissible action, half by the expert action with a wrong number)") \
  X(FLOAT, data_val_frac,       "data.val_frac",     "0.1",  0, 0.5, NULL, "held-out fraction for early stopping") \
  X(INT,   data_max_seq_len,    "data.max_seq_len",  "1000", 16, M2_INF, NULL, "packed sequences longer than this are dropped") \
  X(BOOL,  data_state_sep,      "data.state_sep",    "false", 1, 0, NULL, "end every state segment with EOS, marking where the action starts (released code: no separator)") \
  /* prompt parts (data/prompts.h): the same text in the data, the training sets and inference */ \
  X(BOOL,  prompt_low_task_info, "prompt.low.task_info", "true", 1, 0, NULL, "System 2's context carries the episode's task information at every sub-goal: TextCraft's crafting commands after the sub-goal, ALFWorld's room description before its first observation (released code); false: the plain context") \
  X(ENUM,  prompt_low_commands, "prompt.low.commands", "relevant", 1, 0, M2_CHOICES(M2_PROMPT_COMMANDS_LIST), "TextCraft task information: relevant (the lines crafting the sub-goal's item and, recursively, its listed ingredients, as released; all when it names none) or all (the whole block)") \
  /* model */ \
  X(STR,   model_base,          "model.base",        "tiny", 1, 0, NULL, "\"tiny\" (pre-train the tiny model) or a GGUF file / HF safetensors folder") \
  X(STR,   model_tokenizer,     "model.tokenizer",   "",     1, 0, NULL, "tokenizer file (empty: from the model; tiny: BPE trained on expert text)") \
  X(ENUM,  model_dtype,         "model.dtype",       "f32",  1, 0, M2_CHOICES(M2_BASE_DTYPE_LIST), "storage of the frozen base weights (compute is f32)") \
  X(INT,   model_max_seq_len,   "model.max_seq_len", "2048", 16, M2_INF, NULL, "context length") \
  X(INT,   model_logit_chunk,   "model.logit_chunk", "0",    0, 16777216, NULL, "training: logits computed this many rows at a time, never stored whole (0: stored; > 0 saves 2 x tokens x vocab floats, one more output GEMM per log-prob pass)") \
  X(BOOL,  model_recompute,     "model.recompute",   "false", 1, 0, NULL, "training: keep only the residual stream and recompute each layer's activations in the backward (about 1/layers of the activation memory, ~1/3 more compute, the same gradients)") \
  X(INT,   model_tiny_vocab,    "model.tiny.vocab",  "2048", 260, 1000000, NULL, "tiny model: BPE vocabulary size") \
  X(INT,   model_tiny_dim,      "model.tiny.dim",    "256",  8, 65536, NULL, "tiny model: hidden size") \
  X(INT,   model_tiny_layers,   "model.tiny.layers", "4",    1, 1024, NULL, "tiny model: transformer blocks") \
  X(INT,   model_tiny_heads,    "model.tiny.heads",  "8",    1, 1024, NULL, "tiny model: attention heads") \
  X(INT,   model_tiny_kv_heads, "model.tiny.kv_heads", "4",  1, 1024, NULL, "tiny model: key/value heads (GQA)") \
  X(INT,   model_tiny_ffn,      "model.tiny.ffn",    "768",  8, 1048576, NULL, "tiny model: SwiGLU hidden size") \
  X(FLOAT, model_tiny_rope_base,"model.tiny.rope_base", "10000", 1, M2_INF, NULL, "tiny model: RoPE base") \
  /* pre-training of the tiny base on expert text */ \
  X(INT,   pretrain_steps,      "pretrain.steps",    "2000", 0, M2_INF, NULL, "optimiser steps") \
  X(FLOAT, pretrain_lr,         "pretrain.lr",       "1e-3", 0, 10, NULL, "peak learning rate (cosine decay)") \
  X(INT,   pretrain_warmup,     "pretrain.warmup",   "100",  0, M2_INF, NULL, "linear warm-up steps") \
  X(INT,   pretrain_batch,      "pretrain.batch",    "8",    1, 1000000, NULL, "sequences per step") \
  X(INT,   pretrain_seq_len,    "pretrain.seq_len",  "256",  8, M2_INF, NULL, "tokens per sequence") \
  X(FLOAT, pretrain_weight_decay, "pretrain.weight_decay", "0.1", 0, 10, NULL, "AdamW weight decay") \
  X(INT,   pretrain_corpus_episodes, "pretrain.corpus_episodes", "0", 0, 10000000, NULL, "expert episodes played for the pre-training corpus only (and half as many medium ones), beyond the data stage's: more varied text than the SFT data (0: the corpus is the data stage's transcripts)") \
  X(INT,   pretrain_corpus_worlds, "pretrain.corpus_worlds", "0", 0, 100000, NULL, "the corpus episodes are spread over this many procedurally varied worlds (env.h vary; TextCraft: items renamed), so the base learns to read its observations instead of recalling them; 0, or an environment without varied worlds: the environment's own world") \
  /* LoRA adapters, one per role on the shared frozen base */ \
  M2_LORA_KEYS(X, sys1, "System 1 (planner)") \
  M2_LORA_KEYS(X, sys2, "System 2 (executor)") \
  X(INT,   heads_hidden,        "heads.hidden",      "0",    0, 1048576, NULL, "critic MLP width H->hidden->1 (0: the model's hidden size)") \
  /* optimiser (AdamW, shared by the stages) */ \
  X(FLOAT, optim_beta1,         "optim.beta1",       "0.9",  0, 0.999999, NULL, "AdamW beta1") \
  X(FLOAT, optim_beta2,         "optim.beta2",       "0.999", 0, 0.999999999, NULL, "AdamW beta2") \
  X(FLOAT, optim_eps,           "optim.eps",         "1e-8", 0, 1, NULL, "AdamW epsilon") \
  X(FLOAT, optim_grad_clip,     "optim.grad_clip",   "1.0",  0, M2_INF, NULL, "global gradient-norm clip (0: off)") \
  /* System 1 SFT */ \
  X(FLOAT, sys1_sft_lr,         "sys1.sft.lr",       "1e-4", 0, 10, NULL, "learning rate") \
  X(INT,   sys1_sft_epochs,     "sys1.sft.epochs",   "20",   0, M2_INF, NULL, "epochs over the high-level data") \
  X(INT,   sys1_sft_batch,      "sys1.sft.batch",    "4",    1, 1000000, NULL, "trajectories per step") \
  X(FLOAT, sys1_sft_weight_decay, "sys1.sft.weight_decay", "0.01", 0, 10, NULL, "AdamW weight decay") \
  X(INT,   sys1_sft_eval_every, "sys1.sft.eval_every", "1000", 1, M2_INF, NULL, "validate every N steps (and at each epoch end)") \
  X(INT,   sys1_sft_patience,   "sys1.sft.patience", "5",    0, M2_INF, NULL, "early stop after N validations without improvement (0: never)") \
  X(FLOAT, sys1_sft_min_delta,  "sys1.sft.min_delta", "5e-4", 0, M2_INF, NULL, "improvement: absolute decrease of the validation loss") \
  X(FLOAT, sys1_sft_min_rel_improve, "sys1.sft.min_rel_improve", "1e-3", 0, 1, NULL, "improvement: relative decrease of the validation loss") \
  X(INT,   sys2_subgoal_budget, "sys2.subgoal_budget", "10", 1, M2_INF, NULL, "System 2 steps per sub-goal before System 1 is asked again (rollouts, evaluation); medium data: a sub-goal not done within it fails") \
  X(INT,   sys2_probe_states,   "sys2.probe_states", "32", 0, 100000, NULL, "RL-stage diagnostics: states of the low-level data on which each RL stage's greedy actions and KL from its start are compared (artifacts/<stage>/probe.json, the report's RL-stage table; 0: off)") \
  X(ENUM,  sys2_action_mode,    "sys2.action_mode",  "generate", 1, 0, M2_CHOICES(M2_ACTION_MODE_LIST), "System 2's (and the flat policy's) action in rollouts, evaluation and the offline anchor's sampled actions: generate (the paper) or score (choose among the environment's admissible actions, each with both done flags, by the adapter's log-prob: greedy in evaluation, sampled at the rollout temperature online and at 1 for the anchor; a deviation for small models)") \
  X(ENUM,  sys2_action_logprob, "sys2.action_logprob", "sum", 1, 0, M2_CHOICES(M2_LOGPROB_LIST), "score mode: a candidate's log-prob is the sum (the sequence probability) or the mean of its token log-probs") \
  X(BOOL,  sys1_sft_recovery,   "sys1.sft.recovery", "true", 1, 0, NULL, "also train on the medium episodes' states, each labelled with the sub-goal the expert gives from there (recovery after failed sub-goals; the paper trains on expert records only)") \
  /* System 2 warm-up SFT on "action; True|False" */ \
  X(FLOAT, sys2_warmup_lr,      "sys2.warmup.lr",    "1e-4", 0, 10, NULL, "learning rate") \
  X(INT,   sys2_warmup_epochs,  "sys2.warmup.epochs", "1",   0, M2_INF, NULL, "epochs over the low-level data") \
  X(INT,   sys2_warmup_batch,   "sys2.warmup.batch", "8",    1, 1000000, NULL, "sub-goal segments per step") \
  X(FLOAT, sys2_warmup_weight_decay, "sys2.warmup.weight_decay", "0.01", 0, 10, NULL, "AdamW weight decay") \
  /* System 2 offline RL (IQL critic + advantage-weighted, policy-anchored actor) */ \
  X(FLOAT, sys2_offline_actor_lr,  "sys2.offline.actor_lr",  "1e-4", 0, 10, NULL, "actor (LoRA) learning rate") \
  X(FLOAT, sys2_offline_critic_lr, "sys2.offline.critic_lr", "1e-5", 0, 10, NULL, "critic heads learning rate") \
  X(FLOAT, sys2_offline_gamma,     "sys2.offline.gamma",     "0.99", 0, 1, NULL, "discount") \
  X(FLOAT, sys2_offline_expectile, "sys2.offline.expectile", "0.5",  0, 1, NULL, "IQL expectile tau (0.5 = plain MSE, as released)") \
  X(FLOAT, sys2_offline_polyak,    "sys2.offline.polyak",    "0.2",  0, 1, NULL, "target-head Polyak rate tau") \
  X(FLOAT, sys2_offline_beta,      "sys2.offline.beta",      "10",   0, 1000, NULL, "advantage temperature beta in exp(beta A)") \
  X(FLOAT, sys2_offline_w_max,     "sys2.offline.w_max",     "20",   0, M2_INF, NULL, "clip of the exp(beta A) weight") \
  X(FLOAT, sys2_offline_lambda,    "sys2.offline.lambda",    "7",    0, M2_INF, NULL, "policy-anchor weight lambda (0: vanilla IQL/AWR)") \
  X(ENUM,  sys2_offline_anchor,    "sys2.offline.anchor",    "sampled", 1, 0, M2_CHOICES(M2_OFFLINE_ANCHOR_LIST), "anchor term: on actions sampled from pi, or lambda*relu(A) added to the dataset weight (released code)") \
  X(INT,   sys2_offline_anchor_samples, "sys2.offline.anchor_samples", "1", 1, 64, NULL, "actions sampled per state for the anchor term") \
  X(INT,   sys2_offline_anchor_states, "sys2.offline.anchor_states", "0", 0, M2_INF, NULL, "states per batch that get sampled anchor actions (0: every state)") \
  X(ENUM,  sys2_offline_logprob,   "sys2.offline.logprob",   "mean", 1, 0, M2_CHOICES(M2_LOGPROB_LIST), "action log-prob: mean or sum of its token log-probs") \
  X(BOOL,  sys2_offline_head_grad_to_adapter, "sys2.offline.head_grad_to_adapter", "false", 1, 0, NULL, "let critic-head gradients reach the System 2 LoRA") \
  X(BOOL,  sys2_offline_normalize_weights, "sys2.offline.normalize_weights", "true", 1, 0, NULL, "divide actor weights by their batch mean") \
  X(INT,   sys2_offline_epochs,    "sys2.offline.epochs",    "400",  0, M2_INF, NULL, "epochs over the low-level data") \
  X(INT,   sys2_offline_max_steps, "sys2.offline.max_steps", "0",    0, M2_INF, NULL, "cap on optimiser steps (0: epochs decide)") \
  X(INT,   sys2_offline_batch,     "sys2.offline.batch",     "4",    1, 1000000, NULL, "sub-goal segments per step") \
  X(FLOAT, sys2_offline_weight_decay, "sys2.offline.weight_decay", "0.01", 0, 10, NULL, "AdamW weight decay") \
  /* System 2 online refinement (AWAC + KL to the offline policy) */ \
  X(FLOAT, sys2_online_actor_lr,   "sys2.online.actor_lr",   "1e-5", 0, 10, NULL, "actor (LoRA) learning rate") \
  X(FLOAT, sys2_online_critic_lr,  "sys2.online.critic_lr",  "1e-5", 0, 10, NULL, "critic head learning rate") \
  X(FLOAT, sys2_online_gamma,      "sys2.online.gamma",      "0.99", 0, 1, NULL, "discount") \
  X(FLOAT, sys2_online_polyak,     "sys2.online.polyak",     "0.2",  0, 1, NULL, "target-head Polyak rate tau") \
  X(FLOAT, sys2_online_alpha,      "sys2.online.alpha",      "1.0",  1e-9, M2_INF, NULL, "AWAC temperature alpha in exp(A/alpha)") \
  X(FLOAT, sys2_online_eta,        "sys2.online.eta",        "0.02", 0, M2_INF, NULL, "weight eta of KL(pi_on || pi_off) (0: vanilla AWAC)") \
  X(FLOAT, sys2_online_w_max,      "sys2.online.w_max",      "20",   0, M2_INF, NULL, "clip of the normalised AWAC weight") \
  X(ENUM,  sys2_online_logprob,    "sys2.online.logprob",    "sum",  1, 0, M2_CHOICES(M2_LOGPROB_LIST), "action log-prob: mean or sum of its token log-probs (released online code: sum)") \
  X(INT,   sys2_online_epochs,     "sys2.online.epochs",     "190",  0, M2_INF, NULL, "collect/update epochs") \
  X(INT,   sys2_online_episodes_per_epoch, "sys2.online.episodes_per_epoch", "10", 1, M2_INF, NULL, "environment episodes collected per epoch") \
  X(INT,   sys2_online_updates_per_epoch,  "sys2.online.updates_per_epoch",  "50", 0, M2_INF, NULL, "gradient updates per epoch") \
  X(INT,   sys2_online_batch,      "sys2.online.batch",      "4",    1, 1000000, NULL, "buffer segments per update") \
  X(INT,   sys2_online_buffer_capacity, "sys2.online.buffer_capacity", "2000", 1, M2_INF, NULL, "replay buffer size in sub-goal segments (FIFO)") \
  X(FLOAT, sys2_online_keep_fail,  "sys2.online.keep_fail",  "0.1",  0, 1, NULL, "probability of keeping a failed segment") \
  X(INT,   sys2_online_seed_offline, "sys2.online.seed_offline", "2000", 0, M2_INF, NULL, "successful expert segments seeded into the buffer") \
  X(FLOAT, sys2_online_temperature, "sys2.online.temperature", "0.7", 0, 100, NULL, "rollout sampling temperature") \
  X(FLOAT, sys2_online_top_p,      "sys2.online.top_p",      "0.9",  0, 1, NULL, "rollout nucleus sampling p") \
  X(INT,   sys2_online_top_k,      "sys2.online.top_k",      "50",   0, M2_INF, NULL, "rollout top-k (0: off)") \
  X(FLOAT, sys2_online_weight_decay, "sys2.online.weight_decay", "0.01", 0, 10, NULL, "AdamW weight decay") \
  X(INT,   sys2_online_eval_every, "sys2.online.eval_every", "0", 0, M2_INF, NULL, "learning curves: evaluate greedily before the first epoch and after every N epochs on the eval stage's first sys2.online.eval_episodes ID and OOD episodes, logged as sys2_online/eval_* (0: off)") \
  X(INT,   sys2_online_eval_episodes, "sys2.online.eval_episodes", "10", 1, M2_INF, NULL, "learning curves: episodes per split of each evaluation (positions 0.. of the eval stage's episode order, seed eval.seed + position)") \
  /* TeamTR (method teamtr, issue #16): a team of agents over one shared context, each with its own adapter */ \
  X(ENUM,  teamtr_variant,      "teamtr.variant",    "teamtr", 1, 0, M2_CHOICES(M2_TEAMTR_VARIANT_LIST), "teamtr (fresh rollouts after every agent's update, per-agent trust region), stale (every agent on the stage's first rollouts), stale_happo (stale with the earlier agents' ratio product on the advantage), joint (all agents at once, one team region), no_tr (teamtr with delta = infinity); the single-agent baseline is teamtr.agents=1") \
  X(INT,   teamtr_agents,       "teamtr.agents",     "2",    1, 16, NULL, "agents in the team (1: the single-agent baseline, one model alone on the task)") \
  X(ENUM,  teamtr_protocol,     "teamtr.protocol",   "chain", 1, 0, M2_CHOICES(M2_TEAMTR_PROTOCOL_LIST), "chain (every agent speaks once per sample) or router (teamtr.turns turns, a fixed router picks the speaker)") \
  X(ENUM,  teamtr_order,        "teamtr.order",      "round_robin", 1, 0, M2_CHOICES(M2_TEAMTR_ORDER_LIST), "speaking order: round robin (chain: with a per-sample offset) or seeded random (chain: a permutation per sample; router: a draw per turn)") \
  X(INT,   teamtr_turns,        "teamtr.turns",      "4",    1, 32, NULL, "router: turns per sample (the chain has one per agent)") \
  X(ENUM,  teamtr_update_order, "teamtr.update_order", "random", 1, 0, M2_CHOICES(M2_TEAMTR_SIGMA_LIST), "order sigma of the agents' updates in a stage: a seeded random permutation per stage, or fixed (1..n)") \
  X(INT,   teamtr_stages,       "teamtr.stages",     "20",   1, M2_INF, NULL, "training stages (each updates every agent once)") \
  X(INT,   teamtr_tasks_per_stage, "teamtr.tasks_per_stage", "16", 1, M2_INF, NULL, "training questions per stage (each played teamtr.group times per rollout batch)") \
  X(INT,   teamtr_group,        "teamtr.group",      "4",    2, 1024, NULL, "G: rollouts per question (group-normalised advantages)") \
  X(INT,   teamtr_epochs,       "teamtr.epochs",     "2",    1, 1000, NULL, "PPO-clip epochs per agent update (one step on the whole batch each)") \
  X(FLOAT, teamtr_lr,           "teamtr.lr",         "1e-3", 0, 10, NULL, "agents' learning rate (AdamW)") \
  X(FLOAT, teamtr_weight_decay, "teamtr.weight_decay", "0",  0, 10, NULL, "AdamW weight decay") \
  X(FLOAT, teamtr_clip,         "teamtr.clip",       "0.2",  0, 10, NULL, "PPO ratio clip epsilon") \
  X(FLOAT, teamtr_delta,        "teamtr.delta",      "0.01", 0, M2_INF, NULL, "trust region: the exact token-level KL(pi_old || pi_new) of an update stays <= delta (no_tr: infinity)") \
  X(INT,   teamtr_backtrack,    "teamtr.backtrack",  "5",    0, 64, NULL, "step halvings of an update past delta before it is rolled back to the last iterate inside") \
  X(FLOAT, teamtr_kl_init,      "teamtr.kl_init",    "0",    0, M2_INF, NULL, "k3 penalty to each agent's initial policy (released code: 0.001; 0: off)") \
  X(FLOAT, teamtr_cert_c,       "teamtr.cert_c",     "1",    0, M2_INF, NULL, "c of the stage certificate sum L_i - c sum sqrt(D_i)") \
  X(INT,   teamtr_max_batch_tokens, "teamtr.max_batch_tokens", "65536", 1, M2_INF, NULL, "an agent update's batch is trained and scored in parts of whole sequences of at most this many tokens (a longer sequence is a part alone), the gradient summed over the parts: the update's three ctxs hold a part, not the batch. The default holds a question team's whole batch (64 tasks x G 4 x 256 tokens: one part, as before); teamtr-hier.yaml sets 8192") \
  X(FLOAT, teamtr_a_max,        "teamtr.a_max",      "5",    0, M2_INF, NULL, "clip of the group-normalised advantages") \
  X(FLOAT, teamtr_temperature,  "teamtr.temperature", "1",   0, 100, NULL, "rollout and measured-gain sampling temperature") \
  X(FLOAT, teamtr_top_p,        "teamtr.top_p",      "1",    0, 1, NULL, "rollout nucleus p (1: off)") \
  X(INT,   teamtr_max_new_tokens, "teamtr.max_new_tokens", "32", 1, 4096, NULL, "tokens per message") \
  X(INT,   teamtr_eval_tasks,   "teamtr.eval_tasks", "64",   1, M2_INF, NULL, "test questions of the per-stage measured gain (sampled) and the final greedy evaluation") \
  X(INT,   teamtr_eval_samples, "teamtr.eval_samples", "2",  1, 1024, NULL, "sampled plays per test question for the measured gain") \
  X(INT,   teamtr_lora_rank,    "teamtr.lora.rank",  "8",    1, 4096, NULL, "LoRA rank of every agent's adapter") \
  X(FLOAT, teamtr_lora_alpha,   "teamtr.lora.alpha", "16",   0, M2_INF, NULL, "LoRA alpha of the agents' adapters") \
  X(LIST,  teamtr_lora_targets, "teamtr.lora.targets", "[q, v]", 1, 0, M2_LORA_TARGETS, "projections the agents' adapters wrap") \
  X(ENUM,  teamtr_task_family,  "teamtr.task.family", "arithmetic", 1, 0, M2_CHOICES(M2_TEAMTR_TASK_LIST), "verifiable questions: arithmetic chains, crafting counts from the TextCraft recipes (env.data), or jsonl {question, answer} files") \
  X(INT,   teamtr_task_train,   "teamtr.task.train", "2000", 1, M2_INF, NULL, "generated training questions (arithmetic, craft)") \
  X(INT,   teamtr_task_test,    "teamtr.task.test",  "200",  1, M2_INF, NULL, "generated test questions (arithmetic, craft)") \
  X(INT,   teamtr_task_min_ops, "teamtr.task.min_ops", "2",  1, 16, NULL, "arithmetic: fewest operations per question") \
  X(INT,   teamtr_task_max_ops, "teamtr.task.max_ops", "4",  1, 16, NULL, "arithmetic: most operations per question") \
  X(STR,   teamtr_task_path,    "teamtr.task.path",  "",     1, 0, NULL, "jsonl: the training questions file") \
  X(STR,   teamtr_task_test_path, "teamtr.task.test_path", "", 1, 0, NULL, "jsonl: the test questions file") \
  X(ENUM,  teamtr_hier_sys1,    "teamtr.hier.sys1",  "train", 1, 0, M2_CHOICES(M2_TEAMTR_HIER_SYS1_LIST), "method teamtr_hier: System 1 (the planner) trained under TeamTR with System 2 (train), or frozen (only System 2 trained, as Multi2's online stage)") \
  /* evaluation */ \
  X(INT,   eval_episodes,       "eval.episodes",     "50",   1, M2_INF, NULL, "episodes per split") \
  X(INT,   eval_step_limit,     "eval.step_limit",   "50",   1, M2_INF, NULL, "environment steps per episode (low-level steps)") \
  X(LIST,  eval_splits,         "eval.splits",       "[id, ood]", 1, 0, "train|id|ood", "splits to evaluate") \
  X(FLOAT, eval_temperature,    "eval.temperature",  "0",    0, 100, NULL, "sampling temperature (0: greedy, pass@1)") \
  X(INT,   eval_max_new_tokens, "eval.max_new_tokens", "64", 1, M2_INF, NULL, "tokens generated per sub-goal / action") \
  X(INT,   eval_seed,           "eval.seed",         "0",    0, M2_INF, NULL, "environment seed of evaluation episodes") \
  X(LIST,  eval_action_modes,   "eval.action_modes", "[]",   1, 0, M2_CHOICES(M2_ACTION_MODE_LIST), "System 2's action modes to evaluate in besides sys2.action_mode (whose records are eval/<split>.jsonl); another mode's records go to eval/<split>.<mode>.jsonl and its results rows name it (empty: sys2.action_mode alone)")

#define M2_CFG_CTYPE_INT(n) int64_t n;
#define M2_CFG_CTYPE_FLOAT(n) double n;
#define M2_CFG_CTYPE_BOOL(n) int n;
#define M2_CFG_CTYPE_STR(n) char n[M2_CFG_STR_MAX];
#define M2_CFG_CTYPE_ENUM(n) int n;   /* index into the key's choices: an M2_<KIND>_* value */
#define M2_CFG_CTYPE_LIST(n) char n[M2_CFG_STR_MAX];
#define M2_CFG_DECLARE(T, name, key, def, lo, hi, choices, help) M2_CFG_CTYPE_##T(name)

typedef struct m2_run_config {
    M2_RUN_CONFIG_KEYS(M2_CFG_DECLARE)
} m2_run_config;

const m2_cfg_schema *m2_run_config_schema(void);

/* Defaults, then the YAML file (NULL: none), then each "key=value" override, then the cross-key
 * checks (m2_run_config_check). Errors name the file or "command line" and the key. */
int m2_run_config_load(m2_run_config *cfg, const char *path, int n_overrides, char *const *overrides, m2_err *err);
/* Checks between keys (e.g. heads divisible by kv_heads); errors name the keys. */
int m2_run_config_check(const m2_run_config *cfg, m2_err *err);

#endif
