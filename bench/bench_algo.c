/* bench_algo: time of one training step of each Multi2 stage (SFT, offline IQL + actor with and
 * without the sampled anchor, online AWAC + exact KL) and of one greedy System 2 generation, on the
 * "tiny" preset (d 256, 4 layers, the demo's base) over TextCraft expert low-level segments packed
 * with the byte tokenizer (BPE would make them ~3-4x shorter). Prints ms per step and tokens/s.
 *   bench_algo [steps=3] [batch=4] */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "algo/algo.h"
#include "core/core.h"
#include "data/data.h"
#include "model/model.h"

static double now(void) { return m2_now_s(); }

int main(int argc, char **argv) {
    m2_blas_restart_with_better_core(argv);   /* OpenBLAS's fast kernels, as `multi2` gets them */
    int steps = argc > 1 ? atoi(argv[1]) : 3, batch = argc > 2 ? atoi(argv[2]) : 4;
    m2_err err = {0};
    m2_env *env = NULL;
    if (m2_env_create("textcraft", NULL, &env, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    m2_seqset_init(&set);
    for (int i = 0; i < 8 && set.n < 32; i++) {
        m2_env_traj tr;
        m2_rollout_opts ro = {.policy = M2_POLICY_ORACLE, .max_steps = 50};
        cJSON *h, *ls;
        if (m2_rollout(env, NULL, M2_SPLIT_TRAIN, i, 0, &ro, &tr, &err) ||
            m2_hier_records(env, &tr, "expert", NULL, &h, &ls, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        const cJSON *l;
        cJSON_ArrayForEach(l, ls) {
            char *s = cJSON_PrintUnformatted(l);
            m2_low_record r;
            if (!m2_low_record_parse(s, &r, &err)) {
                m2_seqset_add_low(&set, &tok, &r, 1, 1024, &err);
                m2_low_record_free(&r);
            }
            free(s);
        }
        cJSON_Delete(h);
        cJSON_Delete(ls);
        m2_env_traj_free(&tr);
    }
    if (set.n < batch) { fprintf(stderr, "bench_algo: only %d segments\n", set.n); return 1; }
    m2_model_config mc;
    if (m2_config_preset("tiny", &mc, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    mc.vocab_size = 259;
    mc.max_seq_len = 2048;
    m2_model *m = m2_model_create(&mc, NULL, &err);
    if (!m) { fprintf(stderr, "%s\n", err.msg); return 1; }
    m2_model_init_random(m, 1, 0.02f);
    char desc[256];
    m2_config_describe(&m->cfg, desc, sizeof desc);
    m2_lora_config lc = {"sys2", 16, 32.f, 0.f, M2_LORA_Q | M2_LORA_V}, lo = {"off", 16, 32.f, 0.f, M2_LORA_Q | M2_LORA_V};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err), *off = m2_adapter_add(m, &lo, 2, &err);
    m2_head *q = m2_head_add(m, "q", 3, &err), *v = m2_head_add(m, "v", 4, &err);
    q->grad_to_body = v->grad_to_body = 0;
    int max_tok = 0;
    for (int i = 0; i < batch; i++) max_tok += set.seq[i].n_tok;
    m2_ctx *c = m2_ctx_create(m, max_tok + 64, 1, &err), *c2 = m2_ctx_create(m, max_tok + 64, 0, &err);
    m2_packed_batch pb;
    if (!c || !c2 || m2_packed_batch_build(set.seq, batch, &pb, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    printf("bench_algo: %s, LoRA r16 q,v; batch %d segments = %d tokens (%d actions), %d threads\n", desc, batch,
           pb.N, pb.n_actions, m2_pool_threads(m->pool));
    m2_offline_cfg oc = {0};
    oc.critic = (m2_critic_cfg){.gamma = 0.99f, .expectile = 0.7f};
    oc.actor = (m2_actor_cfg){.beta = 10.f, .w_max = 20.f, .lambda = 7.f, .normalize = 1};
    oc.reduce = M2_REDUCE_MEAN;
    oc.train_actor = oc.train_critic = 1;
    oc.max_action_tokens = 16;
    oc.sampler = (m2_sampler){1.f, 0, 0.f};
    oc.eos_id = tok.eos_id;
    m2_online_cfg onc = {.critic = {.gamma = 0.99f, .expectile = 0.7f}, .alpha = 1.f, .w_max = 20.f, .eta = 0.02f,
                         .reduce = M2_REDUCE_SUM, .train_critic = 1, .train_actor = 1};
    m2_rng rng;
    m2_rng_seed(&rng, 1);
    const char *names[] = {"sft", "offline (no anchor)", "offline (+1 sampled anchor)", "online (AWAC + exact KL)"};
    for (int kind = 0; kind < 4; kind++) {
        double t0 = now();
        for (int s = 0; s < steps; s++) {
            m2_step_stats st;
            int rc = 0;
            if (kind == 0) rc = m2_sft_step(c, a, &pb, M2_REDUCE_MEAN, 1, &st, &err);
            else if (kind < 3) { oc.n_anchor = kind == 2 ? 1 : 0; oc.anchor_samples = 1; oc.actor.lambda = kind == 2 ? 7.f : 0.f;
                                 rc = m2_offline_step(m, c, a, q, v, &pb, &oc, &rng, &st, &err); }
            else rc = m2_online_step(m, c, c2, a, off, q, v, &pb, &onc, &st, &err);
            if (rc) { fprintf(stderr, "%s\n", err.msg); return 1; }
        }
        double ms = (now() - t0) * 1e3 / steps;
        printf("  %-30s %8.1f ms/step  %8.0f tokens/s\n", names[kind], ms, pb.N / (ms / 1e3));
    }
    /* one System 2 generation from the first segment's first state */
    m2_model_policy mp = {.model = m, .sys1 = a, .sys2 = a, .tok = &tok, .sampler = {0.f, 0, 0.f}, .max_new_tokens = 16, .seed = 1};
    m2_traj ctx;
    m2_traj_init(&ctx);
    m2_traj_set_prompt(&ctx, "You are a low-level action executor. Subtask: craft a stick", &err);
    m2_traj_push_state(&ctx, "Obs: Crafting commands: craft 4 oak planks using 1 oak log ...", &err);
    m2_policy p = m2_model_policy_as(&mp);
    double t0 = now();
    int np = 0, ng = 0;
    for (int s = 0; s < steps; s++) {
        char *out;
        p.reset(p.ctx, 0);   /* a full prefill each time (the policy would reuse its cache otherwise) */
        if (p.generate(p.ctx, M2_ROLE_SYS2, &ctx, &out, &np, &ng, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        free(out);
    }
    printf("  %-30s %8.1f ms/call  (prompt %d tokens, %d generated)\n", "generate (greedy, 16 max)",
           (now() - t0) * 1e3 / steps, np, ng);
    /* an episode's System 2 turns: the context grows by an action and an observation per turn;
     * the policy's cache prefills only the new tokens, vs a full prefill of every context */
    double tc = 0, tf = 0;
    long toks = 0;
    for (int rep = 0; rep < 2 * steps; rep++) {
        int cached = rep % 2 == 0;   /* interleaved, so load on the machine hits both alike */
        m2_traj ep;
        m2_traj_init(&ep);
        m2_traj_set_prompt(&ep, "You are a low-level action executor. Subtask: craft a stick", &err);
        m2_traj_push_state(&ep, "Obs: Crafting commands: craft 4 oak planks using 1 oak log ...", &err);
        p.reset(p.ctx, 0);
        double t1 = now();
        for (int turn = 0; turn < 8; turn++) {
            char *out;
            if (!cached) p.reset(p.ctx, 0);
            if (p.generate(p.ctx, M2_ROLE_SYS2, &ep, &out, &np, &ng, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            if (cached) toks += np;
            char obs[96];
            snprintf(obs, sizeof obs, "Obs: Got 1 oak log. Inventory: [oak log] (%d) turn %d", turn + 1, turn);
            m2_traj_push_action(&ep, "get 1 oak log", 0.f, 0.f, &err);
            m2_traj_push_state(&ep, obs, &err);
            free(out);
        }
        if (cached) tc += now() - t1; else tf += now() - t1;
        m2_traj_free(&ep);
    }
    printf("  %-30s %8.1f ms/turn cached, %.1f ms/turn full prefill: %.2fx  (8 turns, %ld prompt tokens each)\n",
           "episode turns (System 2)", tc * 1e3 / (8.0 * steps), tf * 1e3 / (8.0 * steps), tf / tc, toks / steps);
    m2_traj_free(&ctx);
    m2_packed_batch_free(&pb);
    m2_ctx_free(c);
    m2_ctx_free(c2);
    m2_model_policy_free(&mp);
    m2_model_free(m);
    m2_seqset_free(&set);
    m2_env_destroy(env);
    return 0;
}
