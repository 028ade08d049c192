/* Internal to the pipeline: what every stage loads (environment, tokenizer, base, adapters, heads),
 * the dataset files, and checkpoint helpers. */
#ifndef M2_PIPE_WORLD_H
#define M2_PIPE_WORLD_H
#include <stdio.h>
#include "agent/agent.h"
#include "algo/algo.h"
#include "algo/train.h"
#include "core/core.h"
#include "pipe/plan.h"
#include "pipe/stage.h"
#include "data/data.h"
#include "data/seqset.h"
#include "io/bundle.h"
#include "model/model.h"

typedef struct pw_world {
    const m2_run_config *cfg;
    char run_dir[1100];
    m2_bundle b;          /* base model + tokenizer */
    m2_model *m;          /* = b.model */
    m2_tok_iface tok;
    m2_env *env;
} pw_world;

/* Every random stream of a run, each derived from run.seed and its own purpose, so no two streams
 * share a seed. The numbers are part of a run's bits: a new purpose takes a new number. */
typedef enum pw_seed_purpose {
    PW_SEED_PRETRAIN_INIT = 1,          /* the tiny base's random weights */
    PW_SEED_PRETRAIN_DROPOUT = 2,
    PW_SEED_PRETRAIN_BATCHES = 3,
    PW_SEED_MEDIUM_NOISE = 11,          /* which expert actions the medium data replaces */
    PW_SEED_DATA_EPISODES = 12,         /* + episode number: the environment seed of a data episode */
    PW_SEED_CORPUS_WORLDS = 13,         /* + world number: the varied worlds of the pre-training corpus */
    PW_SEED_SFT_SPLIT = 20,             /* train / held-out split of an SFT set */
    PW_SEED_SYS1_DROPOUT = 21,
    PW_SEED_SYS2_WARMUP_DROPOUT = 22,
    PW_SEED_SYS1_BATCHES = 23,
    PW_SEED_SYS2_WARMUP_BATCHES = 24,
    PW_SEED_OFFLINE_DROPOUT = 30,
    PW_SEED_OFFLINE_ANCHOR = 31,        /* the anchor term's sampled actions */
    PW_SEED_OFFLINE_BATCHES = 32,
    PW_SEED_REPLAY = 40,                /* the replay buffer's keep/sample draws */
    PW_SEED_ONLINE_DROPOUT = 41,
    PW_SEED_ONLINE_SYS1_SAMPLING = 42,
    PW_SEED_ONLINE_SYS2_SAMPLING = 43,
    PW_SEED_ONLINE_EPISODES = 44,       /* which training episodes the rollouts play */
    PW_SEED_EVAL_SYS1_SAMPLING = 50,
    PW_SEED_EVAL_SYS2_SAMPLING = 51,
    PW_SEED_EVAL_REFERENCE = 52,        /* the random reference policy's draws (m2_pipe_eval_reference) */
    PW_SEED_ADAPTER_SYS1 = 219,         /* a new adapter's random A factor, one purpose per adapter */
    PW_SEED_ADAPTER_SYS2 = 220,
    PW_SEED_ADAPTER_SHARED = 221,
    PW_SEED_HEAD_Q = 201,
    PW_SEED_HEAD_V = 202,
    /* TeamTR (method teamtr) */
    PW_SEED_TEAM_TASKS = 60,            /* generated questions of the task family */
    PW_SEED_TEAM_ORDER = 61,            /* the team's seeded random speaking orders */
    PW_SEED_TEAM_ROLLOUTS = 62,         /* training rollouts' sampling */
    PW_SEED_TEAM_EVAL = 63,             /* measured-gain rollouts' sampling */
    PW_SEED_TEAM_SIGMA = 64,            /* + stage: the update order sigma */
    PW_SEED_TEAM_CURSOR = 65,           /* the permutation of the training questions the stages walk */
    PW_SEED_ADAPTER_AGENT0 = 300,       /* + k: agent k's adapter (up to M2_TEAM_MAX) */
} pw_seed_purpose;

/* The seed of one purpose derived from run.seed. */
uint64_t pw_seed(const m2_run_config *cfg, pw_seed_purpose purpose);
/* The adapter a role TRAINS ("sys1", "sys2", or "shared" for shared_adapter). */
/* System 2's optional context parts from the config keys prompt.low.* (data/prompts.h): what the
 * data stage writes and the online and eval loops build, from one conversion. */
m2_low_parts pw_low_parts(const m2_run_config *cfg);
const char *pw_adapter_name(const m2_run_config *cfg, m2_role role);
int pw_is_flat(const m2_run_config *cfg);

/* Newest run/artifacts/<stage>/<file> among the plan's stages before `before_stage` (NULL: all). */
int pw_find_artifact(const m2_run_config *cfg, const char *run_dir, const char *before_stage,
                     const char *file, char *out, size_t cap);

/* Dataset folder: data.path, or run/artifacts/data. Layout: expert/{high,low}.jsonl,
 * medium/{high,low}.jsonl, flat.jsonl (whole episodes for the flat baseline), DONE. */
void pw_data_dir(const m2_run_config *cfg, const char *run_dir, char *out, size_t cap);
/* data.path set: checks that the folder has the layout above and that its record files parse
 * (expert/{high,low}.jsonl required, medium/ optional, flat.jsonl required for the flat method);
 * errors name data.path, the file and the reason. 0 when data.path is empty. */
int pw_data_check(const m2_run_config *cfg, m2_err *err);
/* The data stage's rollout of position pos of the train split's episode order (expert, or medium =
 * the noisy expert within sys2.subgoal_budget), with its seeds; *kept = 0 for an episode the data
 * stage drops (no step, or an expert episode not won). t is filled either way (free it). */
int pw_data_episode(m2_env *env, const m2_run_config *cfg, const m2_episode_order *order, int medium, long pos,
                    m2_env_traj *t, int *kept, m2_err *err);
/* Expert and medium episode counts of the data stage (positions 0..E-1 and E..E+M-1). */
void pw_data_counts(const m2_run_config *cfg, int *expert, int *medium);
/* The flat.jsonl record the data stage writes for a kept episode (NULL: out of memory). */
cJSON *pw_flat_record(const m2_run_config *cfg, const m2_env_traj *t, const char *variant, const char *task_type);
/* Generates the datasets with the env's expert (and medium = noisy expert) unless present. */
int pw_data_ensure(const m2_run_config *cfg, const char *run_dir, FILE *out, m2_err *err);
/* The pre-training corpus beyond the data stage's episodes (pretrain.corpus_episodes, spread over
 * pretrain.corpus_worlds varied worlds): folders DIR/world<k> (k = 0: the environment's own world;
 * 1..W: varied worlds), each with the data folder's layout, generated unless DIR/DONE exists.
 * Nothing is written when pretrain.corpus_episodes is 0. */
int pw_corpus_ensure(const m2_run_config *cfg, const char *dir, FILE *out, m2_err *err);
/* The folders with the data folder's layout that the pre-training corpus reads: the data folder,
 * then pw_corpus_ensure's world folders under corpus_dir (NULL: none). *n <= cap. */
int pw_corpus_folders(const m2_run_config *cfg, const char *run_dir, const char *corpus_dir, char (*out)[1300], int cap);
/* kind "high" | "low" | "flat"; with_medium adds the medium records; trajs (may be NULL) receives the
 * expert low/flat trajectories with success flags (replay seeds). */
int pw_load_set(const m2_run_config *cfg, const char *run_dir, const m2_tok_iface *tok, const char *kind,
                int with_medium, int max_tokens, m2_seqset *set, m2_traj **trajs, int **success, int *n_traj,
                m2_err *err);
/* The same from a folder with the data folder's layout (pw_corpus_folders). */
int pw_load_set_in(const char *dir, const m2_tok_iface *tok, const char *kind, int with_medium, int max_tokens,
                   m2_seqset *set, m2_traj **trajs, int **success, int *n_traj, m2_err *err);
void pw_trajs_free(m2_traj *t, int *s, int n);

/* TeamTR runs (pipe/stage_teamtr.c): the questions of the run's task family (split M2_QA_SPLIT_*), the
 * pre-training corpus text (every training question played out by the team with its worked solution
 * split between the speakers; malloc'd) and the same transcripts packed for the LM loss. */
int pw_team_tasks(const m2_run_config *cfg, int split, m2_qa_set *qs, m2_err *err);
char *pw_team_corpus(const m2_run_config *cfg, size_t *len, m2_err *err);
int pw_team_pretrain_set(const m2_run_config *cfg, const m2_tok_iface *tok, int seq_len, m2_seqset *set, m2_err *err);

/* need_model = 0: environment only. */
int pw_open(pw_world *w, const m2_run_config *cfg, const char *run_dir, int need_model, m2_err *err);
void pw_close(pw_world *w);
/* Adapter `name`: already in the model, else the newest artifact before `before_stage`, else a new
 * one (create = 1) or an error. */
m2_adapter *pw_adapter(pw_world *w, const char *name, const char *before_stage, int create, m2_err *err);
/* Heads q and v (with targets) from the newest artifact, else new. */
int pw_heads(pw_world *w, const char *before_stage, m2_head **q, m2_head **v, m2_err *err);
int pw_save_adapter(pw_world *w, m2_adapter *a, const char *dir, m2_err *err);
int pw_save_heads(m2_head *q, m2_head *v, const char *dir, m2_err *err);

int pw_ck_add_params(m2_ckpt *c, const char *name, m2_params *p, m2_err *err);
int pw_ck_read_params(const m2_ckpt *c, const char *name, m2_params *p, m2_err *err);
int pw_ck_add_head(m2_ckpt *c, m2_head *h, m2_err *err);
int pw_ck_read_head(const m2_ckpt *c, m2_head *h, m2_err *err);
void pw_state_to_json(cJSON *o, const m2_train_state *s, int64_t base);
int pw_state_from_json(const cJSON *o, m2_train_state *s, int64_t *base, m2_err *err);

#endif
