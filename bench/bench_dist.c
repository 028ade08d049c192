/* bench_dist: data parallelism on this machine (docs/dist.md), run under `mpirun -np 2`:
 *   1. all-reduce of a gradient arena: m2_dist_sum_f32 (deterministic: reduce-scatter, sums in rank
 *      order, all-gather) against MPI_Allreduce(MPI_SUM) on the same buffer, for the bench model's
 *      LoRA arena and for the arena of a Llama-3.1-8B LoRA r16 on all 7 targets (41.9 M floats);
 *   2. training-step throughput: pre-training steps of the "tiny" preset (d 256, 4 layers) on a
 *      global batch of `batch` sequences of `seq` tokens: rank 0 alone (the 1-process reference,
 *      rank 1 idle) against both ranks (half the batch each), as a ratio of tokens/s;
 *   3. rollout throughput: online collection of `episodes` TextCraft episodes with sampling model
 *      policies (System 1 and 2 on the tiny model), rank 0 alone against both ranks sharding them;
 *   4. a weak-scaling projection for the 8B LoRA arena at 25 and 100 Gbit/s from the measured step
 *      compute scaled by parameter count, and a ring all-reduce's 2 (N-1)/N bytes per rank.
 *   OPENBLAS_NUM_THREADS=1 mpirun -np 2 bench_dist [steps=4] [batch=8] [seq=256] [episodes=6]
 * (one BLAS thread a rank: OpenBLAS reads the variable when it loads, before main). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "algo/algo.h"
#include "core/core.h"
#include "data/data.h"
#include "dist/dist.h"
#include "model/model.h"
#ifdef M2_HAVE_MPI
#include <mpi.h>
#endif

/* Llama-3.1-8B: d 4096, 32 layers, 8 KV heads of 128, FFN 14336; LoRA r 16 on q k v o gate up down */
#define L8B_LAYERS 32
#define L8B_DIM 4096
#define L8B_KV 1024
#define L8B_FFN 14336
#define L8B_PARAMS 8.03e9
#define LORA_R 16

static size_t lora8b_floats(void) {
    size_t q = LORA_R * (L8B_DIM + L8B_DIM), kv = LORA_R * (L8B_DIM + L8B_KV), mlp = LORA_R * (L8B_DIM + L8B_FFN);
    return (size_t)L8B_LAYERS * (2 * q + 2 * kv + 3 * mlp);
}

static double best_of(double *t, int n) {
    double b = t[0];
    for (int i = 1; i < n; i++) b = fmin(b, t[i]);
    return b;
}

/* seconds of one all-reduce of n floats (best of `rounds`): ours and MPI's own */
static void time_allreduce(m2_dist *d, size_t n, int rounds, double *ours, double *mpi) {
    m2_err err = {0};
    float *x = malloc(n * sizeof *x);
    double t1[8], t2[8];
    for (size_t i = 0; i < n; i++) x[i] = 1e-3f * (float)(i % 1000);
    for (int r = 0; r < rounds; r++) {
        m2_dist_barrier(d, &err);
        double t = m2_now_s();
        m2_dist_sum_f32(d, x, n, &err);
        t1[r] = m2_now_s() - t;
#ifdef M2_HAVE_MPI
        m2_dist_barrier(d, &err);
        t = m2_now_s();
        for (size_t off = 0; off < n; off += M2_DIST_PIECE) {
            int k = (int)(n - off < M2_DIST_PIECE ? n - off : M2_DIST_PIECE);
            MPI_Allreduce(MPI_IN_PLACE, x + off, k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        t2[r] = m2_now_s() - t;
#else
        t2[r] = t1[r];
#endif
        for (size_t i = 0; i < n; i++) x[i] *= 0.25f;   /* keep the values bounded */
    }
    *ours = best_of(t1, rounds);
    *mpi = best_of(t2, rounds);
    free(x);
}

/* synthetic byte-level sequences of `seq` tokens */
static void make_set(m2_seqset *s, const m2_tok_iface *tok, int n, int seq) {
    m2_err err = {0};
    m2_seqset_init(s);
    char *text = malloc((size_t)seq + 1);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < seq - 8; i++) text[i] = (char)('a' + (i * 7 + k * 13) % 26);
        text[seq - 8] = 0;
        m2_traj t;
        m2_traj_init(&t);
        m2_traj_set_prompt(&t, text, &err);
        m2_traj_push_state(&t, "s", &err);
        m2_traj_push_action(&t, "a", 1.f, 1.f, &err);
        m2_seqset_add(s, tok, &t, 0, &err);
        m2_traj_free(&t);
    }
    free(text);
}

static m2_model *tiny_model(int train_base) {
    m2_err err = {0};
    m2_model_config mc;
    m2_config_preset("tiny", &mc, &err);
    mc.vocab_size = 259;
    mc.max_seq_len = 1024;
    m2_model_opts o = {.dtype = M2_DT_F32, .train_base = train_base, .threads = 1};
    m2_model *m = m2_model_create(&mc, &o, &err);
    if (m) m2_model_init_random(m, 1, 0.02f);
    return m;
}

/* seconds per training step: m2_train_lm over `steps` steps on dist (NULL: alone) */
static double time_train(m2_dist *d, int steps, int batch, int seq, size_t *arena) {
    m2_err err = {0};
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_seqset set;
    make_set(&set, &tok, 4 * batch, seq);
    int *idx = malloc((size_t)set.n * sizeof *idx);
    for (int i = 0; i < set.n; i++) idx[i] = i;
    m2_model *m = tiny_model(0);
    m2_lora_config lc = {.name = "a", .rank = 16, .alpha = 32.f, .targets = M2_LORA_Q | M2_LORA_V};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
    *arena = a->params.n;
    m2_ctx *c = m2_ctx_create(m, batch * seq, 1, &err);
    m2_lm_opts o = {.opt = {.lr = 1e-3f, .grad_clip = 1.f}, .batch = batch, .steps = steps, .seed = 1, .prefix = "b"};
    m2_train_state st;
    m2_train_state_init(&st);
    m2_train_hooks h = {.dist = d};
    double t = m2_now_s();
    if (m2_train_lm(m, c, a, &set, idx, set.n, &o, &st, &h, &err)) fprintf(stderr, "bench_dist: %s\n", err.msg);
    t = (m2_now_s() - t) / steps;
    m2_ctx_free(c);
    m2_model_free(m);
    m2_seqset_free(&set);
    free(idx);
    return t;
}

/* seconds for `episodes` TextCraft rollouts (online collection only) on dist (NULL: alone) */
static double time_rollouts(m2_dist *d, int episodes) {
    m2_err err = {0};
    m2_env *env = NULL;
    if (m2_env_create("textcraft", NULL, &env, &err)) { fprintf(stderr, "bench_dist: %s\n", err.msg); return NAN; }
    m2_tok_iface tok;
    m2_byte_tok_iface(&tok, M2_BOS_NONE);
    m2_model *m = tiny_model(0);
    m2_lora_config lc = {.name = "on", .rank = 16, .alpha = 32.f, .targets = M2_LORA_Q | M2_LORA_V}, lo = lc;
    snprintf(lo.name, sizeof lo.name, "off");
    m2_adapter *on = m2_adapter_add(m, &lc, 1, &err), *off = m2_adapter_add(m, &lo, 2, &err);
    m2_head *q = m2_head_add(m, "q", 3, &err), *v = m2_head_add(m, "v", 4, &err);
    m2_ctx *con = m2_ctx_create(m, 512, 1, &err), *coff = m2_ctx_create(m, 512, 0, &err);
    m2_model_policy mp1 = {.model = m, .sys1 = on, .sys2 = on, .tok = &tok, .sampler = {1.f, 0, 0.f},
                           .max_new_tokens = 16, .seed = 5};
    m2_model_policy mp2 = mp1;
    mp2.seed = 6;
    m2_policy p1 = m2_model_policy_as(&mp1), p2 = m2_model_policy_as(&mp2);
    m2_loop_cfg lcfg;
    m2_loop_cfg_default(&lcfg);
    lcfg.step_limit = 10;
    lcfg.subgoal_budget = 3;
    lcfg.env_name = "textcraft";
    m2_replay buf;
    m2_replay_init(&buf, 4096, 1.f, 1, &err);
    m2_online_opts o = {0};
    o.epochs = 1;
    o.episodes_per_epoch = episodes;
    o.updates_per_epoch = 0;
    o.batch = 2;
    o.max_tokens = 512;
    o.split = M2_SPLIT_TRAIN;
    o.seed = 3;
    m2_train_state st;
    m2_train_state_init(&st);
    m2_train_hooks h = {.dist = d};
    double t = m2_now_s();
    if (m2_train_online(m, con, coff, on, off, q, v, env, &p1, &p2, &lcfg, &buf, &tok, &o, &st, &h, &err))
        fprintf(stderr, "bench_dist: %s\n", err.msg);
    t = m2_now_s() - t;
    m2_replay_free(&buf);
    m2_model_policy_free(&mp1);
    m2_model_policy_free(&mp2);
    m2_ctx_free(con);
    m2_ctx_free(coff);
    m2_model_free(m);
    m2_env_destroy(env);
    return t;
}

int main(int argc, char **argv) {
    m2_dist d;
    m2_err err = {0};
    if (m2_dist_init(&d, &argc, &argv, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    if (d.world != 2) {
        fprintf(stderr, "bench_dist: run it as `mpirun -np 2 bench_dist` (world size %d)\n", d.world);
        m2_dist_finalize(&d);
        return 1;
    }
    int steps = argc > 1 ? atoi(argv[1]) : 4, batch = argc > 2 ? atoi(argv[2]) : 8;
    int seq = argc > 3 ? atoi(argv[3]) : 256, episodes = argc > 4 ? atoi(argv[4]) : 6;
    int top = d.rank == 0;

    /* 2. and 3. first (the 8B arena's buffers are large): rank 0 alone, then both ranks */
    size_t arena = 0;
    double t1 = 0, t2, r1 = 0, r2;
    if (top) t1 = time_train(NULL, steps, batch, seq, &arena);
    m2_dist_barrier(&d, &err);
    t2 = time_train(&d, steps, batch, seq, &arena);
    if (top) r1 = time_rollouts(NULL, episodes);
    m2_dist_barrier(&d, &err);
    r2 = time_rollouts(&d, episodes);

    double ar_small, ar_small_mpi, ar_8b, ar_8b_mpi;
    time_allreduce(&d, arena, 5, &ar_small, &ar_small_mpi);
    size_t n8 = lora8b_floats();
    time_allreduce(&d, n8, 3, &ar_8b, &ar_8b_mpi);

    if (top) {
        double tok = (double)batch * seq;
        printf("bench_dist: 2 ranks on this machine, OPENBLAS_NUM_THREADS=%s; tiny preset, LoRA r16 on q,v (%zu floats)\n",
               getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "unset", arena);
        printf("train step (global batch %d x %d tokens): 1 rank %.1f ms (%.0f tokens/s), 2 ranks %.1f ms (%.0f tokens/s): "
               "throughput ratio %.2f\n", batch, seq, 1e3 * t1, tok / t1, 1e3 * t2, tok / t2, t1 / t2);
        printf("rollouts (%d TextCraft episodes, sampling model policies): 1 rank %.2f s (%.2f episodes/s), 2 ranks %.2f s "
               "(%.2f episodes/s): throughput ratio %.2f\n", episodes, r1, episodes / r1, r2, episodes / r2, r1 / r2);
        printf("all-reduce, bench arena %.2f MB: deterministic %.3f ms, MPI_Allreduce %.3f ms (ratio %.2f)\n",
               arena * 4e-6, 1e3 * ar_small, 1e3 * ar_small_mpi, ar_small / ar_small_mpi);
        double S = n8 * 4.0;
        printf("all-reduce, Llama-3.1-8B LoRA r16 all targets: %zu floats (%.1f MB): deterministic %.1f ms, "
               "MPI_Allreduce %.1f ms (ratio %.2f), %.2f GB/s of arena per rank (shared memory, one host)\n", n8, S * 1e-6,
               1e3 * ar_8b, 1e3 * ar_8b_mpi, ar_8b / ar_8b_mpi, S / ar_8b * 1e-9);
        /* 4. projection: a rank's 8B step = this machine's measured per-token time scaled by the
         * frozen-base parameter count (forward + backward to the activations: ~4 P FLOP per token,
         * as for the tiny base), on `batch x seq` tokens per rank; the all-reduce moves
         * 2 (N-1)/N * S bytes per rank at the link rate (latency left out) */
        m2_model *m = tiny_model(0);
        double p_tiny = (double)m->base.n;
        m2_model_free(m);
        double tc = t1 / 1.0 * (L8B_PARAMS / p_tiny);
        printf("projection (8B LoRA r16, %d x %d tokens a rank a step): compute %.0f s a step on one core of this "
               "machine (measured tiny step x %.0f parameters ratio)\n", batch, seq, tc, L8B_PARAMS / p_tiny);
        const double gbit[2] = {25, 100};
        const int ns[4] = {2, 8, 32, 128};
        for (int b = 0; b < 2; b++) {
            double B = gbit[b] * 1e9 / 8;
            printf("  %3.0f Gbit/s:", gbit[b]);
            for (int k = 0; k < 4; k++) {
                int N = ns[k];
                double tar = 2.0 * (N - 1) / N * S / B;
                printf("  N=%d all-reduce %.3f s, efficiency %.4f;", N, tar, tc / (tc + tar));
            }
            double tar_inf = 2.0 * S / B;
            printf("  a step must compute >= %.2f s for 90 %% efficiency at any N\n", 9 * tar_inf);
        }
        fflush(stdout);
    }
    m2_dist_finalize(&d);
    return 0;
}
