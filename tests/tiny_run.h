/* What the pipeline tests share (include after cmocka.h): the tiny TextCraft pipeline config (every
 * Multi² stage in seconds; a test adds its method, online and eval lines), loading a YAML text with
 * overrides into a run config, and one `multi2 train` run in-process with its console discarded. */
#ifndef M2_TEST_TINY_RUN_H
#define M2_TEST_TINY_RUN_H
#include <stdio.h>
#include <string.h>
#include "pipe/pipe.h"

#define M2T_TINY_PIPELINE_YAML                                                                                      \
    "run: {seed: 3, ckpt_every: 3, keep_last: 2, log_every: 1000, threads: 1, tensorboard: false, progress: off, "   \
    "plots: false}\n"                                                                                                \
    "env: {name: textcraft}\n"                                                                                       \
    "data: {expert_episodes: 8, max_seq_len: 1024}\n"                                                                \
    "model:\n"                                                                                                       \
    "  base: tiny\n"                                                                                                 \
    "  max_seq_len: 1024\n"                                                                                          \
    "  tiny: {vocab: 320, dim: 16, layers: 1, heads: 2, kv_heads: 1, ffn: 32}\n"                                     \
    "pretrain: {steps: 8, lr: 3e-3, warmup: 2, batch: 4, seq_len: 512}\n"                                            \
    "lora:\n"                                                                                                        \
    "  sys1: {rank: 2, alpha: 4, targets: [q, v]}\n"                                                                 \
    "  sys2: {rank: 2, alpha: 4, targets: [q, v]}\n"                                                                 \
    "sys1:\n"                                                                                                        \
    "  sft: {lr: 1e-3, epochs: 1, batch: 4, eval_every: 1, patience: 2}\n"                                           \
    "sys2:\n"                                                                                                        \
    "  warmup: {lr: 1e-3, epochs: 1, batch: 8}\n"                                                                    \
    "  offline: {epochs: 1, max_steps: 4, batch: 4, anchor_states: 1}\n"

/* The tiny TeamTR run (method teamtr): a 2-agent chain on two-operation arithmetic, pre-trained in
 * 60 steps, 4 stages of 4 tasks x 4 rollouts (tests/test_team_run.c, tests/test_dist_cli.c). */
#define M2T_TINY_TEAM_YAML                                                                                          \
    "method: teamtr\n"                                                                                               \
    "run: {seed: 5, keep_last: 2, log_every: 1000, threads: 1, tensorboard: false, progress: off, plots: false}\n"   \
    "model:\n"                                                                                                       \
    "  base: tiny\n"                                                                                                 \
    "  max_seq_len: 192\n"                                                                                           \
    "  tiny: {vocab: 300, dim: 16, layers: 1, heads: 2, kv_heads: 1, ffn: 32}\n"                                     \
    "pretrain: {steps: 60, lr: 1e-2, warmup: 2, batch: 4, seq_len: 128}\n"                                           \
    "teamtr:\n"                                                                                                      \
    "  agents: 2\n"                                                                                                  \
    "  stages: 4\n"                                                                                                  \
    "  tasks_per_stage: 4\n"                                                                                         \
    "  group: 4\n"                                                                                                   \
    "  epochs: 2\n"                                                                                                  \
    "  lr: 0.05\n"                                                                                                   \
    "  max_new_tokens: 6\n"                                                                                          \
    "  eval_tasks: 8\n"                                                                                              \
    "  eval_samples: 2\n"                                                                                            \
    "  lora: {rank: 2, alpha: 4, targets: [q, v]}\n"                                                                 \
    "  task: {train: 200, test: 16, min_ops: 2, max_ops: 2}\n"

/* cfg = defaults, then yaml, then run.out_dir / run.name, then over[0..n); checked. */
static inline void m2t_load_yaml(m2_run_config *cfg, const char *yaml, const char *out_dir, const char *name, int n,
                                 const char **over) {
    m2_err err = {0};
    const m2_cfg_schema *s = m2_run_config_schema();
    assert_int_equal(m2_cfg_defaults(s, cfg, &err), 0);
    if (m2_cfg_apply_yaml(s, cfg, yaml, strlen(yaml), "test", &err)) fail_msg("test yaml: %s", err.msg);
    char o1[400], o2[300];
    snprintf(o1, sizeof o1, "run.out_dir=%s", out_dir);
    snprintf(o2, sizeof o2, "run.name=%s", name);
    assert_int_equal(m2_cfg_override(s, cfg, o1, &err), 0);
    assert_int_equal(m2_cfg_override(s, cfg, o2, &err), 0);
    for (int i = 0; i < n; i++)
        if (m2_cfg_override(s, cfg, over[i], &err)) fail_msg("%s: %s", over[i], err.msg);
    assert_int_equal(m2_run_config_check(cfg, &err), 0);
}

/* `multi2 train` of cfg in its run folder (resume: continue it), console to /dev/null. */
static inline int m2t_train(const m2_run_config *cfg, int resume, m2_err *err) {
    char dir[600];
    m2_run_dir_for(cfg, dir, sizeof dir);
    FILE *devnull = fopen("/dev/null", "w");
    int rc = m2_train_run(cfg, m2_pipe_stages, m2_pipe_n_stages, dir, resume, devnull, err);
    fclose(devnull);
    return rc;
}

#endif
