/* The Multi² pipeline (issue #5): the stage functions behind `multi2 train`'s stage table, the
 * evaluation of a run folder (`multi2 eval --run`), and the demo driver (`multi2 demo`).
 *
 * Stages (in plan order; pipe/stage.h decides which run and resumes them):
 *   pretrain      (model.base = tiny only) expert + medium data, a byte-level BPE tokenizer trained on
 *                 their text, a tiny Llama-shaped base pre-trained on ALL weights with the LM loss on
 *                 packed transcripts -> artifacts/pretrain/{base.gguf, tokenizer.json}
 *   data          the hierarchical JSONL datasets (artifacts/data/, or data.path when given)
 *   sys1_sft      System 1 SFT on the high records, held-out split, early stopping
 *   sys2_warmup   System 2 warm-up SFT on the low records ("action; True|False")
 *   sys2_offline  System 2 offline IQL critic (heads q, v + targets) and anchored actor, on expert +
 *                 medium low records
 *   sys2_online   hierarchical rollouts with System 1 frozen, replay seeded with offline successes,
 *                 AWAC + exact KL to the frozen offline adapter ("sys2_off")
 *   eval          pass@1 per split (greedy), eval/<split>.jsonl one record per episode
 *   report        (pipe/report.h) results table and chart
 * Every stage leaves its adapters/heads under artifacts/<stage>/ (PEFT folders adapter_<name>/,
 * heads.safetensors); a later stage loads the newest copy from the stages before it. Long stages
 * checkpoint every run.ckpt_every global steps: adapter/base weights, AdamW moments and steps, heads
 * and targets, data cursors, RNG states (dropout, sampling, policy call counters) and the replay
 * buffer, so --resume continues bit for bit.
 *
 * Methods (config `method`): adapters per role
 *   multi2, no_anchor, no_kl, sft_only, offline_only, rl_only: sys1 -> "sys1", sys2 -> "sys2"
 *   (no_anchor trains with sys2.offline.lambda = 0, no_kl with sys2.online.eta = 0, whatever the keys say)
 *   shared_adapter: both roles train and use ONE adapter "shared"
 *   role_swap: trained as multi2; at inference the planner runs the "sys2" weights and the executor
 *              the "sys1" weights
 *   flat: no System 1; System 2 trained on whole-episode "flat" records (task as its sub-goal)
 *
 * run.stop_at_step=N makes a stage stop (error code M2_ESTOPPED) right after global step N, with a
 * checkpoint written there whether or not N is a run.ckpt_every step (a crash after a checkpoint;
 * tests resume from it). */
#ifndef M2_PIPE_H
#define M2_PIPE_H
#include <stdio.h>
#include "agent/eval.h"
#include "core/core.h"
#include "pipe/plan.h"
#include "pipe/report.h"
#include "pipe/run_config.h"
#include "pipe/stage.h"

int m2_stage_pretrain(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_data(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_sys1_sft(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_sys2_warmup(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_sys2_offline(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_sys2_online(m2_stage_ctx *ctx, m2_err *err);
int m2_stage_eval(m2_stage_ctx *ctx, m2_err *err);
/* TeamTR (pipe/stage_teamtr.c): the team's stages of agent-by-agent updates, the certificate per stage
 * beside the measured gain, per-agent PEFT folders artifacts/teamtr/adapter_agentK/. */
int m2_stage_teamtr(m2_stage_ctx *ctx, m2_err *err);
/* The Multi² hierarchy as a two-agent TeamTR team (pipe/stage_team_hier.c, method teamtr_hier): the
 * planner (sys1) and executor (sys2) adapters the earlier stages trained, updated agent by agent on
 * fresh episodes of the environment (teamtr.hier.sys1 frozen: the executor alone), saved as
 * artifacts/teamtr_hier/adapter_sys1, adapter_sys2 for the eval stage. */
int m2_stage_teamtr_hier(m2_stage_ctx *ctx, m2_err *err);

/* `multi2 eval --run` of a TeamTR run folder (method teamtr): its agents' adapters
 * (artifacts/teamtr/adapter_agentK) on its base, greedy, on the first n test questions (n <= 0:
 * teamtr.eval_tasks): the chain, each agent alone, and the best of the agents alone per question.
 * One JSONL record per question of the chain (index, question, answer, speakers, messages, success)
 * to jsonl (may be NULL). */
typedef struct m2_team_eval {
    int n_agents, questions;
    double chain, best_of, alone[16];
} m2_team_eval;
int m2_pipe_eval_team_run(const char *run_dir, int n, FILE *jsonl, m2_team_eval *out, m2_err *err);
/* The same with the questions split across the ranks of dist (docs/dist.md), every rank calling it:
 * every rank gets the same numbers, rank 0 alone writes jsonl (the others pass NULL). */
int m2_pipe_eval_team_run_dist(const char *run_dir, int n, FILE *jsonl, m2_team_eval *out, m2_dist *dist, m2_err *err);


/* Evaluates the trained policy of a run folder (its config.yaml and artifacts) on `split` of its
 * environment: episodes 0..n-1 (n <= 0: eval.episodes), greedy, one record per episode to jsonl (may
 * be NULL), aggregated into agg (may be NULL). threads <= 0: the run's run.threads. seed < 0: the
 * run's eval.seed (episode i gets seed + i; another seed draws other episodes of the same tasks).
 * action_mode < 0: the run's sys2.action_mode; else an M2_ACTION_MODE_* to evaluate the same
 * adapters in (a run trained with generated actions can be evaluated choosing, and back). vary != 0:
 * the episodes are played in the environment's varied world drawn from it (env.h vary: TextCraft's
 * renamed items), a test of whether the policy reads its observations or recalls the train world. */
int m2_pipe_eval_run(const char *run_dir, const char *split, int episodes, int threads, int64_t seed,
                     int action_mode, uint64_t vary, FILE *jsonl, m2_eval_agg *agg, FILE *progress, m2_err *err);
/* The same on the ranks of d (docs/dist.md), every rank calling it with the same arguments: the
 * episodes are split across the ranks and gathered in episode order, so agg is one process's on
 * every rank; rank 0 alone writes jsonl (the others may pass NULL); progress counts this rank's
 * episodes. */
int m2_pipe_eval_run_dist(const char *run_dir, const char *split, int episodes, int threads, int64_t seed,
                          int action_mode, uint64_t vary, FILE *jsonl, m2_eval_agg *agg, FILE *progress, m2_dist *d,
                          m2_err *err);

/* A reference policy's episodes (oracle, random: no model) as an ordered job over d's ranks (NULL:
 * one process; dist/dist.h m2_dist_map_ordered): positions 0..n-1 of the episode order of (task,
 * split), episode i rolled out (data/traj.h, ro) with environment seed seed + i (same_seed: seed for
 * every one, as `multi2 eval --policy` has it). take sees every episode in episode order on every
 * rank: its summary (agent/eval.h m2_eval_traj_episode; task_type borrowed) and its eval record
 * (pipe/runfiles.h m2_eval_record_traj, the policy as the method, ro->max_steps as the step limit).
 * n is capped at the split's size; returns the episodes played, or -1. */
typedef int (*m2_pipe_episode_fn)(void *ud, int64_t i, const m2_episode *ep, const char *rec, m2_err *err);
int m2_pipe_reference_episodes(m2_env *env, const char *task, m2_split split, int n, const m2_rollout_opts *ro,
                               const char *policy, uint64_t seed, int same_seed, m2_dist *d, m2_pipe_episode_fn take,
                               void *ud, m2_err *err);

/* Reference policies without a model (oracle, random) beside cfg's learned methods: episodes 0..n-1
 * of (env, split) through data/traj.h rollouts, episode i with environment seed eval.seed + i as the
 * eval stage plays it, at most eval.step_limit steps; the random policy's draws are keyed by run.seed
 * (as a learned method's training is), so that its row varies over the seeds of an experiment and
 * its standard error is measured, not 0. Records like the eval stage's (tokens 0) into jsonl.
 * d (NULL: one process): split across its ranks as m2_pipe_eval_run_dist; rank 0 writes. */
int m2_pipe_eval_reference(const m2_run_config *cfg, const char *env_name, const char *policy, const char *split,
                           int episodes, FILE *jsonl, double *success, m2_dist *d, m2_err *err);

#endif
