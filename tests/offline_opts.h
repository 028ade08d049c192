/* The offline RL options the training tests use (tests/test_algo_train.c, tests/mpi_dist.c): IQL
 * critic, normalised AWR actor with the sampled anchor (lambda 0.5, actions generated at temperature
 * 1 up to 6 tokens, the byte tokenizer's EOS 256), AdamW at 1e-3 on actor and critic, Polyak 0.2,
 * batch order seed 4. */
#ifndef M2_TEST_OFFLINE_OPTS_H
#define M2_TEST_OFFLINE_OPTS_H
#include "algo/algo.h"

static inline m2_offline_opts m2t_offline_opts(int batch, int n_anchor, int anchor_samples, int epochs,
                                               int64_t max_steps) {
    m2_offline_opts o = {0};
    o.step.critic = (m2_critic_cfg){.gamma = 0.99f, .expectile = 0.7f};
    o.step.actor = (m2_actor_cfg){.beta = 3.f, .w_max = 20.f, .lambda = 0.5f, .normalize = 1};
    o.step.reduce = M2_REDUCE_MEAN;
    o.step.train_actor = o.step.train_critic = 1;
    o.step.n_anchor = n_anchor;
    o.step.anchor_samples = anchor_samples;
    o.step.max_action_tokens = 6;
    o.step.sampler = (m2_sampler){.temperature = 1.f};
    o.step.eos_id = 256;
    o.actor = (m2_opt_opts){.lr = 1e-3f, .weight_decay = 0.01f, .grad_clip = 1.f};
    o.critic = o.actor;
    o.polyak = 0.2f;
    o.batch = batch;
    o.epochs = epochs;
    o.max_steps = max_steps;
    o.seed = 4;
    return o;
}

#endif
