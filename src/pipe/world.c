/* The pipeline's shared state per stage: environment, tokenizer, base model, adapters and heads,
 * loaded from a run folder's artifacts (or the configured backbone), plus the dataset files. */
#include "pipe/world.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "data/prompts.h"
#include "data/episodes.h"
#include "data/hier.h"
#include "io/io.h"

uint64_t pw_seed(const m2_run_config *cfg, pw_seed_purpose purpose) {
    return (uint64_t)cfg->run_seed * 0x9E3779B97F4A7C15ull + purpose * 0xD1B54A32D192ED03ull + purpose;
}

m2_low_parts pw_low_parts(const m2_run_config *cfg) {
    return (m2_low_parts){.task_info = cfg->prompt_low_task_info, .commands = (m2_prompt_commands)cfg->prompt_low_commands};
}

const char *pw_adapter_name(const m2_run_config *cfg, m2_role role) {
    if (m2_method_of(cfg)->shared_adapter) return "shared";
    return role == M2_ROLE_SYS1 ? "sys1" : "sys2";
}

int pw_is_flat(const m2_run_config *cfg) { return m2_method_of(cfg)->flat; }

static int stage_index(const char *const *plan, int n, const char *name) {
    for (int i = 0; i < n; i++) if (!strcmp(plan[i], name)) return i;
    return n;
}

int pw_find_artifact(const m2_run_config *cfg, const char *run_dir, const char *before_stage,
                     const char *file, char *out, size_t cap) {
    const char *plan[16];
    int n = m2_run_stage_plan(cfg, plan, 16);
    int upto = before_stage ? stage_index(plan, n, before_stage) : n;
    for (int i = upto - 1; i >= 0; i--) {
        snprintf(out, cap, "%s/artifacts/%s/%s", run_dir, plan[i], file);
        if (m2_path_exists(out)) return 1;
    }
    out[0] = 0;
    return 0;
}

void pw_data_dir(const m2_run_config *cfg, const char *run_dir, char *out, size_t cap) {
    if (cfg->data_path[0]) snprintf(out, cap, "%s", cfg->data_path);
    else snprintf(out, cap, "%s/artifacts/data", run_dir);
}

/* ---------------------------------------------------------------- data */

/* One record file of data.path: must exist (unless optional) and parse as high or low records. */
static int check_records(const char *dir, const char *file, int optional, m2_err *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!m2_path_exists(path)) {
        if (optional) return 0;
        return m2_errorf(err, M2_ENOTFOUND, "data.path: %s: missing (the folder needs expert/high.jsonl and "
                         "expert/low.jsonl: multi2 data --variant expert --out %s/expert)", path, dir);
    }
    int rc, n = 0;
    if (strstr(file, "high")) {
        m2_high_record *r = NULL;
        rc = m2_high_records_read(path, &r, &n, err);
        if (!rc) m2_high_records_free(r, n);
    } else {
        m2_low_record *r = NULL;
        rc = m2_low_records_read(path, &r, &n, err);
        if (!rc) m2_low_records_free(r, n);
    }
    if (rc) return m2_err_prefix(err, "data.path: ");
    if (n == 0 && !optional) return m2_errorf(err, M2_EFORMAT, "data.path: %s: no records", path);
    return 0;
}

int pw_data_check(const m2_run_config *cfg, m2_err *err) {
    const char *dir = cfg->data_path;
    if (!dir[0]) return 0;
    struct stat st;
    if (stat(dir, &st) != 0) return m2_errorf(err, M2_ENOTFOUND, "data.path: %s: no such folder", dir);
    if (!S_ISDIR(st.st_mode))
        return m2_errorf(err, M2_EINVAL, "data.path: %s: not a folder (expected expert/{high,low}.jsonl inside)", dir);
    static const struct { const char *file; int optional; } files[] = {
        {"expert/high.jsonl", 0}, {"expert/low.jsonl", 0}, {"medium/high.jsonl", 1}, {"medium/low.jsonl", 1},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (check_records(dir, files[i].file, files[i].optional, err)) return -1;
    /* the flat baseline trains on whole episodes only */
    return check_records(dir, "flat.jsonl", !pw_is_flat(cfg), err);
}

static FILE *open_tmp(const char *path, char *tmp, size_t cap) {
    snprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid());
    return fopen(tmp, "w");
}

static int close_rename(FILE *f, const char *tmp, const char *path, m2_err *err) {
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) { unlink(tmp); return m2_errorf(err, M2_EIO, "%s: write failed", path); }
    return 0;
}

/* A flat record (low-record fields) for the flat baseline: the task is the sub-goal, every step of
 * the episode is one action; the flag is True only on the last step of a won episode. */
static cJSON *flat_record(const m2_env_traj *t, const char *variant, const m2_hier_opts *ho) {
    cJSON *l = cJSON_CreateObject();
    if (!l) return NULL;
    cJSON_AddStringToObject(l, "env", t->env_name);
    cJSON_AddNumberToObject(l, "index", t->index);
    cJSON_AddStringToObject(l, "variant", variant);
    if (ho->task_type) cJSON_AddStringToObject(l, "task_type", ho->task_type);
    cJSON_AddStringToObject(l, "goal", t->task_text);
    /* the flat loop's context (agent/loop.c, flat = 1): the task is the one sub-goal */
    m2_low_episode le = {.env_name = t->env_name, .first_obs = t->first_obs, .parts = ho->parts};
    char *ctx = NULL, *s = NULL;
    if (m2_prompt_low_start(&le, t->task_text, t->first_obs, &ctx, &s)) { cJSON_Delete(l); return NULL; }
    cJSON_AddStringToObject(l, "subtask", ctx);
    free(ctx);
    cJSON *o = cJSON_AddArrayToObject(l, "obs"), *a = cJSON_AddArrayToObject(l, "action");
    cJSON *r = cJSON_AddArrayToObject(l, "reward"), *d = cJSON_AddArrayToObject(l, "done");
    cJSON_AddItemToArray(o, cJSON_CreateString(s));
    free(s);
    for (int i = 0; i < t->n; i++) {
        int last = i == t->n - 1;
        char *ac = m2_prompt_low_action(t->steps[i].action, last && t->won);
        cJSON_AddItemToArray(a, cJSON_CreateString(ac ? ac : ""));
        free(ac);
        s = m2_prompt_low_obs(t->steps[i].observation);
        cJSON_AddItemToArray(o, cJSON_CreateString(s ? s : ""));
        free(s);
        cJSON_AddItemToArray(r, cJSON_CreateNumber(last && t->won ? 1 : 0));
        cJSON_AddItemToArray(d, cJSON_CreateBool(t->steps[i].done));
    }
    return l;
}

int pw_data_episode(m2_env *env, const m2_run_config *cfg, const m2_episode_order *order, int medium, long pos,
                    m2_env_traj *t, int *kept, m2_err *err) {
    const m2_episode_ref *ep = m2_episode_order_at(order, pos);
    /* the noise stream is keyed by the reset index, which repeats across task families: the
     * position keeps two families' episodes from drawing the same noise */
    m2_rollout_opts ro = {.policy = medium ? M2_POLICY_MEDIUM : M2_POLICY_ORACLE,
                          .max_steps = (int)cfg->eval_step_limit, .noise = (float)cfg->data_medium_noise,
                          .policy_seed = pw_seed(cfg, PW_SEED_MEDIUM_NOISE) + (uint64_t)pos,
                          /* sub-goal by sub-goal, each judged by the environment: the expert
                           * pursues each until it holds; the medium executor has the agent's
                           * budget and fails the sub-goals it cannot finish within it */
                          .hierarchical = 1, .subgoal_budget = medium ? (int)cfg->sys2_subgoal_budget : 0};
    *kept = 0;
    if (m2_rollout(env, ep->task, M2_SPLIT_TRAIN, ep->index, pw_seed(cfg, PW_SEED_DATA_EPISODES) + (uint64_t)pos, &ro,
                   t, err)) {
        m2_env_traj_free(t);
        return -1;
    }
    *kept = !(t->n == 0 || (!medium && !t->won));
    return 0;
}

void pw_data_counts(const m2_run_config *cfg, int *expert, int *medium) {
    int E = (int)cfg->data_expert_episodes;
    *expert = E;
    *medium = cfg->data_medium_episodes >= 0 ? (int)cfg->data_medium_episodes : (E / 2 > 0 ? E / 2 : 1);
}

cJSON *pw_flat_record(const m2_run_config *cfg, const m2_env_traj *t, const char *variant, const char *task_type) {
    m2_hier_opts ho = {.parts = pw_low_parts(cfg), .task_type = task_type};
    return flat_record(t, variant, &ho);
}

/* Positions first .. first+count-1 of the train split's episode order (data/episodes.h: evenly
 * across task types; wrapping around when the split has fewer episodes), position k with episode
 * seed data-episodes + k and its own medium-noise stream. */
static int gen_variant(m2_env *env, const m2_run_config *cfg, const m2_episode_order *order, const char *dir,
                       const char *variant, int first, int count, FILE *flat, const char *flat_path, int *written,
                       int *segs, int *segs_ok,
                       m2_err *err) {
    char sub[1200], ph[1300], pl[1300], th[1400], tl[1400];
    snprintf(sub, sizeof sub, "%s/%s", dir, variant);
    if (m2_mkdir_p(sub, err)) return -1;
    snprintf(ph, sizeof ph, "%s/high.jsonl", sub);
    snprintf(pl, sizeof pl, "%s/low.jsonl", sub);
    FILE *fh = open_tmp(ph, th, sizeof th), *fl = open_tmp(pl, tl, sizeof tl);
    if (!fh || !fl) {
        if (fh) fclose(fh);
        if (fl) fclose(fl);
        return m2_errorf(err, M2_EIO, "%s: cannot create", sub);
    }
    int medium = !strcmp(variant, "medium"), rc = 0;
    *written = *segs = *segs_ok = 0;
    for (int k = 0; rc == 0 && k < count; k++) {
        long pos = (long)first + k;
        const m2_episode_ref *ep = m2_episode_order_at(order, pos);
        m2_env_traj t;
        int kept;
        if (pw_data_episode(env, cfg, order, medium, pos, &t, &kept, err)) { rc = -1; break; }
        if (!kept) { m2_env_traj_free(&t); continue; }
        cJSON *h = NULL, *ls = NULL;
        m2_hier_opts ho = {.parts = pw_low_parts(cfg), .task_type = ep->type};
        if (m2_hier_records(env, &t, variant, &ho, &h, &ls, err)) rc = -1;
        if (!rc) rc = m2_hier_write_line(fh, h, ph, err);
        const cJSON *l;
        cJSON_ArrayForEach(l, ls) if (!rc) rc = m2_hier_write_line(fl, l, pl, err);
        cJSON *fr = rc ? NULL : flat_record(&t, variant, &ho);
        if (!rc && !fr) rc = m2_errorf(err, M2_ENOMEM, "data: out of memory");
        if (!rc) rc = m2_hier_write_line(flat, fr, flat_path, err);
        cJSON_Delete(fr);
        cJSON_Delete(h);
        cJSON_Delete(ls);
        if (!rc) {
            (*written)++;
            *segs += t.n_subgoals;
            for (int g = 0; g < t.n_subgoals; g++) *segs_ok += t.subgoals[g].success;
        }
        m2_env_traj_free(&t);
    }
    int r1 = close_rename(fh, th, ph, err), r2 = close_rename(fl, tl, pl, err);
    return rc ? rc : (r1 ? r1 : r2);
}

int pw_data_ensure(const m2_run_config *cfg, const char *run_dir, FILE *out, m2_err *err) {
    char dir[1100], done[1200];
    pw_data_dir(cfg, run_dir, dir, sizeof dir);
    snprintf(done, sizeof done, "%s/expert/high.jsonl", dir);
    if (cfg->data_path[0]) {
        if (!m2_path_exists(done))
            return m2_errorf(err, M2_ENOTFOUND, "data.path: %s has no expert/high.jsonl (write it with multi2 data "
                             "--variant expert --out %s/expert)", dir, dir);
        return 0;
    }
    snprintf(done, sizeof done, "%s/DONE", dir);
    if (m2_path_exists(done)) return 0;
    if (m2_mkdir_p(dir, err)) return -1;
    m2_env *env;
    if (m2_env_create(cfg->env_name, cfg->env_data[0] ? cfg->env_data : NULL, &env, err)) return -1;
    char fp[1300], ft[1400];
    snprintf(fp, sizeof fp, "%s/flat.jsonl", dir);
    FILE *flat = open_tmp(fp, ft, sizeof ft);
    int rc = flat ? 0 : m2_errorf(err, M2_EIO, "%s: cannot create", fp);
    int n_exp = 0, n_med = 0, s_exp = 0, ok_exp = 0, s_med = 0, ok_med = 0;
    int E, M;
    pw_data_counts(cfg, &E, &M);
    m2_episode_order order = {0};
    if (!rc) rc = m2_episode_order_build(env, cfg->env_task[0] ? cfg->env_task : NULL, M2_SPLIT_TRAIN, &order, err);
    /* expert episodes take the first E positions, medium ones the next M */
    if (!rc) rc = gen_variant(env, cfg, &order, dir, "expert", 0, E, flat, fp, &n_exp, &s_exp, &ok_exp, err);
    if (!rc && M > 0) rc = gen_variant(env, cfg, &order, dir, "medium", E, M, flat, fp, &n_med, &s_med, &ok_med, err);
    m2_episode_order_free(&order);
    if (flat) {
        int r = close_rename(flat, ft, fp, err);
        if (!rc) rc = r;
    }
    m2_env_destroy(env);
    if (!rc && n_exp == 0) rc = m2_errorf(err, M2_EINVAL, "data: the expert solved none of %d episodes", E);
    if (!rc) rc = m2_write_file_atomic(done, "ok\n", 3, err);
    if (!rc && out)
        fprintf(out, "data: %d expert + %d medium episodes in %s; successful sub-goal segments: expert %d/%d (%.1f %%), "
                "medium %d/%d (%.1f %%)\n", n_exp, n_med, dir, ok_exp, s_exp, s_exp ? 100.0 * ok_exp / s_exp : 0.0, ok_med,
                s_med, s_med ? 100.0 * ok_med / s_med : 0.0);
    return rc;
}

/* ---------------------------------------------------------------- the pre-training corpus */

/* World k of the corpus: 0 the environment's own, 1..W varied (each drawn from its own seed). */
static void corpus_world_dir(const char *dir, int k, char *out, size_t cap) { snprintf(out, cap, "%s/world%d", dir, k); }

static int corpus_world_count(const m2_run_config *cfg, const m2_env *env) {
    return cfg->pretrain_corpus_worlds > 0 && env->cls->vary ? (int)cfg->pretrain_corpus_worlds : 0;
}

int pw_corpus_ensure(const m2_run_config *cfg, const char *dir, FILE *out, m2_err *err) {
    if (cfg->pretrain_corpus_episodes <= 0) return 0;
    char done[1200];
    snprintf(done, sizeof done, "%s/DONE", dir);
    if (m2_path_exists(done)) return 0;
    if (m2_mkdir_p(dir, err)) return -1;
    m2_env *env;
    if (m2_env_create(cfg->env_name, cfg->env_data[0] ? cfg->env_data : NULL, &env, err)) return -1;
    int W = corpus_world_count(cfg, env), worlds = W ? W : 1, E, M, rc = 0;
    if (cfg->pretrain_corpus_worlds > 0 && !W && out)
        fprintf(out, "pretrain: %s has no varied worlds: pretrain.corpus_worlds ignored, the corpus plays its own world\n",
                cfg->env_name);
    pw_data_counts(cfg, &E, &M);
    m2_episode_order order = {0};
    rc = m2_episode_order_build(env, cfg->env_task[0] ? cfg->env_task : NULL, M2_SPLIT_TRAIN, &order, err);
    /* positions after the data stage's (E + M of them), so every corpus episode is a new one; world k
     * takes its share of them, its medium episodes (half as many, as in the data stage) after them */
    long K = cfg->pretrain_corpus_episodes, first = (long)E + M;
    int n_exp = 0, n_med = 0;
    for (int w = 0; w < worlds && !rc; w++) {
        int k = W ? w + 1 : 0;
        int count = (int)(K / worlds + (w < K % worlds));
        int med = count / 2;
        char wd[1300], fp[1400], ft[1500];
        corpus_world_dir(dir, k, wd, sizeof wd);
        if (W) rc = env->cls->vary(env, pw_seed(cfg, PW_SEED_CORPUS_WORLDS) + (uint64_t)k, err);
        if (!rc) rc = m2_mkdir_p(wd, err);
        if (rc) break;
        snprintf(fp, sizeof fp, "%s/flat.jsonl", wd);
        FILE *flat = open_tmp(fp, ft, sizeof ft);
        if (!flat) { rc = m2_errorf(err, M2_EIO, "%s: cannot create", fp); break; }
        int ne = 0, nm = 0, s, ok;
        rc = gen_variant(env, cfg, &order, wd, "expert", (int)first, count, flat, fp, &ne, &s, &ok, err);
        first += count;
        if (!rc && med > 0) rc = gen_variant(env, cfg, &order, wd, "medium", (int)first, med, flat, fp, &nm, &s, &ok, err);
        first += med;
        int r = close_rename(flat, ft, fp, err);
        if (!rc) rc = r;
        n_exp += ne;
        n_med += nm;
    }
    m2_episode_order_free(&order);
    m2_env_destroy(env);
    if (!rc) rc = m2_write_file_atomic(done, "ok\n", 3, err);
    if (!rc && out)
        fprintf(out, "pretrain: corpus of %d expert + %d medium episodes in %d %s world%s -> %s\n", n_exp, n_med, worlds,
                W ? "varied" : "original", worlds == 1 ? "" : "s", dir);
    return rc;
}

int pw_corpus_folders(const m2_run_config *cfg, const char *run_dir, const char *corpus_dir, char (*out)[1300], int cap) {
    int n = 0;
    char d[1100];
    pw_data_dir(cfg, run_dir, d, sizeof d);
    if (n < cap) snprintf(out[n++], 1300, "%s", d);
    for (int k = 0; corpus_dir && n < cap; k++) {
        char wd[1300];
        corpus_world_dir(corpus_dir, k, wd, sizeof wd);
        if (m2_path_exists(wd)) snprintf(out[n++], 1300, "%s", wd);
        else if (k > 0) break;   /* world0 is absent when the corpus is all varied worlds */
    }
    return n;
}

/* ---------------------------------------------------------------- sets */

int pw_load_set(const m2_run_config *cfg, const char *run_dir, const m2_tok_iface *tok, const char *kind,
                int with_medium, int max_tokens, m2_seqset *set, m2_traj **trajs, int **success, int *n_traj,
                m2_err *err) {
    char dir[1100];
    pw_data_dir(cfg, run_dir, dir, sizeof dir);
    return pw_load_set_in(dir, tok, kind, with_medium, max_tokens, set, trajs, success, n_traj, err);
}

int pw_load_set_in(const char *dir, const m2_tok_iface *tok, const char *kind, int with_medium, int max_tokens,
                   m2_seqset *set, m2_traj **trajs, int **success, int *n_traj, m2_err *err) {
    char path[1300];
    m2_seqset_init(set);
    if (trajs) { *trajs = NULL; *success = NULL; *n_traj = 0; }
    const char *variants[2] = {"expert", "medium"};
    for (int v = 0; v < (with_medium ? 2 : 1); v++) {
        int is_flat = !strcmp(kind, "flat");
        if (is_flat) snprintf(path, sizeof path, "%s/flat.jsonl", dir);
        else snprintf(path, sizeof path, "%s/%s/%s.jsonl", dir, variants[v], kind);
        if (!m2_path_exists(path)) {
            if (v == 1) continue;   /* medium data is optional */
            return m2_errorf(err, M2_ENOTFOUND, "%s: missing (data stage or data.path)", path);
        }
        if (!strcmp(kind, "high")) {
            m2_high_record *r;
            int n;
            if (m2_high_records_read(path, &r, &n, err)) return -1;
            int rc = m2_seqset_add_high(set, tok, r, n, max_tokens, err);
            m2_high_records_free(r, n);
            if (rc) return -1;
        } else {
            m2_low_record *r;
            int n;
            if (m2_low_records_read(path, &r, &n, err)) return -1;
            int rc = 0;
            /* flat.jsonl holds both variants: keep the expert ones on the first pass only */
            for (int i = 0; !rc && i < n; i++) {
                m2_traj t;
                if (m2_low_record_traj(&r[i], NULL, "Obs: ", &t, err)) { rc = -1; break; }
                if (is_flat && !with_medium) {
                    int ok = 0;
                    for (int s = 0; s < t.n_actions; s++) if (t.rewards[s] > 0) ok = 1;
                    if (!ok) { m2_traj_free(&t); continue; }
                }
                rc = m2_seqset_add(set, tok, &t, max_tokens, err);
                if (!rc && trajs && v == 0) {
                    m2_traj *nt = realloc(*trajs, (size_t)(*n_traj + 1) * sizeof *nt);
                    int *ns = realloc(*success, (size_t)(*n_traj + 1) * sizeof *ns);
                    if (nt) *trajs = nt;
                    if (ns) *success = ns;
                    if (!nt || !ns) { m2_traj_free(&t); rc = m2_errorf(err, M2_ENOMEM, "data: out of memory"); break; }
                    float ret = 0;
                    for (int s = 0; s < t.n_actions; s++) ret += t.rewards[s];
                    (*success)[*n_traj] = ret > 0;
                    (*trajs)[(*n_traj)++] = t;
                } else {
                    m2_traj_free(&t);
                }
            }
            m2_low_records_free(r, n);
            if (rc) return -1;
        }
        if (is_flat) break;
    }
    if (set->n == 0) return m2_errorf(err, M2_EINVAL, "%s data: no sequence fits data.max_seq_len", kind);
    return 0;
}

void pw_trajs_free(m2_traj *t, int *s, int n) {
    for (int i = 0; i < n; i++) m2_traj_free(&t[i]);
    free(t);
    free(s);
}

/* ---------------------------------------------------------------- world */

int pw_open(pw_world *w, const m2_run_config *cfg, const char *run_dir, int need_model, m2_err *err) {
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    snprintf(w->run_dir, sizeof w->run_dir, "%s", run_dir);
    if (m2_env_create(cfg->env_name, cfg->env_data[0] ? cfg->env_data : NULL, &w->env, err)) return -1;
    if (!need_model) return 0;
    char model[1300], tok[1300];
    tok[0] = 0;
    if (!strcmp(cfg->model_base, "tiny")) {
        snprintf(model, sizeof model, "%s/artifacts/pretrain/base.gguf", run_dir);
        snprintf(tok, sizeof tok, "%s/artifacts/pretrain/tokenizer.json", run_dir);
        if (!m2_path_exists(model)) {
            pw_close(w);
            return m2_errorf(err, M2_ENOTFOUND, "%s: missing (the pretrain stage writes it)", model);
        }
    } else {
        snprintf(model, sizeof model, "%s", cfg->model_base);
        if (cfg->model_tokenizer[0]) snprintf(tok, sizeof tok, "%s", cfg->model_tokenizer);
    }
    m2_dtype dt = M2_DT_F32;
    m2_dtype_parse(m2_base_dtype_names[cfg->model_dtype], &dt);   /* kernels/ owns the dtype names */
    m2_model_opts o = {.dtype = dt, .threads = (int)cfg->run_threads};
    if (m2_bundle_open(&w->b, model, NULL, tok[0] ? tok : NULL, &o, 1, err)) {
        pw_close(w);
        return -1;
    }
    w->m = w->b.model;
    if (w->m->cfg.max_seq_len > cfg->model_max_seq_len) w->m->cfg.max_seq_len = (int)cfg->model_max_seq_len;
    m2_tok_iface_from_tokenizer(&w->tok, w->b.tok);
    w->tok.state_sep = cfg->data_state_sep;
    return 0;
}

void pw_close(pw_world *w) {
    if (w->b.model || w->b.tok) m2_bundle_close(&w->b);
    if (w->env) m2_env_destroy(w->env);
    memset(w, 0, sizeof *w);
}

static void lora_cfg(const m2_run_config *cfg, const char *name, m2_lora_config *lc) {
    memset(lc, 0, sizeof *lc);
    snprintf(lc->name, sizeof lc->name, "%s", name);
    int s1 = !strcmp(name, "sys1");
    lc->rank = (int)(s1 ? cfg->lora_sys1_rank : cfg->lora_sys2_rank);
    lc->alpha = (float)(s1 ? cfg->lora_sys1_alpha : cfg->lora_sys2_alpha);
    lc->dropout = (float)(s1 ? cfg->lora_sys1_dropout : cfg->lora_sys2_dropout);
    unsigned t = 0;
    if (m2_lora_parse_targets(s1 ? cfg->lora_sys1_targets : cfg->lora_sys2_targets, &t) != 0 || !t) t = M2_LORA_V;
    lc->targets = t;
}

m2_adapter *pw_adapter(pw_world *w, const char *name, const char *before_stage, int create, m2_err *err) {
    m2_adapter *a = m2_adapter_find(w->m, name);
    if (a) return a;
    char file[128], path[1500];
    snprintf(file, sizeof file, "adapter_%s", name);
    if (pw_find_artifact(w->cfg, w->run_dir, before_stage, file, path, sizeof path))
        return m2_peft_load(w->m, path, name, err);
    if (!create) {
        m2_errorf(err, M2_ENOTFOUND, "adapter '%s': no stage of this run has produced it yet", name);
        return NULL;
    }
    m2_lora_config lc;
    lora_cfg(w->cfg, name, &lc);
    /* one purpose per adapter (the old rule 100 + name[0] + strlen(name) gave sys1 and sys2 the same
     * seed, 219: the two roles started from the same random A factor) */
    pw_seed_purpose p = !strcmp(name, "shared") ? PW_SEED_ADAPTER_SHARED
                      : !strcmp(name, "sys1") ? PW_SEED_ADAPTER_SYS1 : PW_SEED_ADAPTER_SYS2;
    return m2_adapter_add(w->m, &lc, pw_seed(w->cfg, p), err);
}

int pw_heads(pw_world *w, const char *before_stage, m2_head **q, m2_head **v, m2_err *err) {
    char path[1500];
    if (pw_find_artifact(w->cfg, w->run_dir, before_stage, "heads.safetensors", path, sizeof path) &&
        m2_heads_load(w->m, path, err))
        return -1;
    *q = m2_head_find(w->m, "q");
    *v = m2_head_find(w->m, "v");
    if (!*q) *q = m2_head_add_sized(w->m, "q", (int)w->cfg->heads_hidden, pw_seed(w->cfg, PW_SEED_HEAD_Q), err);
    if (*q && !*v) *v = m2_head_add_sized(w->m, "v", (int)w->cfg->heads_hidden, pw_seed(w->cfg, PW_SEED_HEAD_V), err);
    if (!*q || !*v) return -1;
    (*q)->grad_to_body = (*v)->grad_to_body = w->cfg->sys2_offline_head_grad_to_adapter ? 1 : 0;
    return 0;
}

int pw_save_adapter(pw_world *w, m2_adapter *a, const char *dir, m2_err *err) {
    char path[1500];
    snprintf(path, sizeof path, "%s/adapter_%s", dir, a->cfg.name);
    return m2_peft_save(w->m, a, path, w->cfg->model_base, err);
}

int pw_save_heads(m2_head *q, m2_head *v, const char *dir, m2_err *err) {
    char path[1500];
    snprintf(path, sizeof path, "%s/heads.safetensors", dir);
    m2_head *h[2] = {q, v};
    return m2_heads_save(h, 2, path, err);
}

/* ---------------------------------------------------------------- checkpoint helpers */

int pw_ck_add_params(m2_ckpt *c, const char *name, m2_params *p, m2_err *err) {
    char k[160];
    int64_t n = (int64_t)p->n, one = 1, step = p->step;
    snprintf(k, sizeof k, "%s.w", name);
    if (m2_ckpt_add(c, k, M2_CKPT_F32, p->w, 1, &n, err)) return -1;
    if (p->m) {
        snprintf(k, sizeof k, "%s.m", name);
        if (m2_ckpt_add(c, k, M2_CKPT_F32, p->m, 1, &n, err)) return -1;
        snprintf(k, sizeof k, "%s.v", name);
        if (m2_ckpt_add(c, k, M2_CKPT_F32, p->v, 1, &n, err)) return -1;
    }
    snprintf(k, sizeof k, "%s.step", name);
    return m2_ckpt_add_copy(c, k, M2_CKPT_I64, &step, 1, &one, err);
}

int pw_ck_read_params(const m2_ckpt *c, const char *name, m2_params *p, m2_err *err) {
    char k[160];
    int64_t n = (int64_t)p->n, one = 1, step = 0;
    snprintf(k, sizeof k, "%s.w", name);
    if (m2_ckpt_read(c, k, M2_CKPT_F32, p->w, 1, &n, err)) return -1;
    snprintf(k, sizeof k, "%s.m", name);
    if (m2_ckpt_find(c, k)) {
        if (m2_params_alloc_moments(p, err)) return -1;
        if (m2_ckpt_read(c, k, M2_CKPT_F32, p->m, 1, &n, err)) return -1;
        snprintf(k, sizeof k, "%s.v", name);
        if (m2_ckpt_read(c, k, M2_CKPT_F32, p->v, 1, &n, err)) return -1;
    }
    snprintf(k, sizeof k, "%s.step", name);
    if (m2_ckpt_read(c, k, M2_CKPT_I64, &step, 1, &one, err)) return -1;
    p->step = (long)step;
    return 0;
}

int pw_ck_add_head(m2_ckpt *c, m2_head *h, m2_err *err) {
    char k[160];
    int64_t n = (int64_t)h->params.n;
    snprintf(k, sizeof k, "head.%s", h->name);
    if (pw_ck_add_params(c, k, &h->params, err)) return -1;
    snprintf(k, sizeof k, "head.%s.target", h->name);
    return m2_ckpt_add(c, k, M2_CKPT_F32, h->target, 1, &n, err);
}

int pw_ck_read_head(const m2_ckpt *c, m2_head *h, m2_err *err) {
    char k[160];
    int64_t n = (int64_t)h->params.n;
    snprintf(k, sizeof k, "head.%s", h->name);
    if (pw_ck_read_params(c, k, &h->params, err)) return -1;
    snprintf(k, sizeof k, "head.%s.target", h->name);
    return m2_ckpt_read(c, k, M2_CKPT_F32, h->target, 1, &n, err);
}

void pw_state_to_json(cJSON *o, const m2_train_state *s, int64_t base) {
    cJSON_AddNumberToObject(o, "base_step", (double)base);
    cJSON_AddNumberToObject(o, "step", (double)s->step);
    cJSON_AddNumberToObject(o, "epoch", (double)s->epoch);
    cJSON_AddNumberToObject(o, "pos", s->pos);
    char b[64];
    snprintf(b, sizeof b, "%.17g", s->best_val);   /* "inf" survives as a string */
    cJSON_AddStringToObject(o, "best_val", b);
    cJSON_AddNumberToObject(o, "bad_evals", s->bad_evals);
    cJSON_AddNumberToObject(o, "stopped", s->stopped);
}

static double num(const cJSON *o, const char *k, double d) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : d;
}

int pw_state_from_json(const cJSON *o, m2_train_state *s, int64_t *base, m2_err *err) {
    m2_train_state_init(s);
    if (!cJSON_IsObject(o) || !cJSON_GetObjectItemCaseSensitive(o, "step"))
        return m2_errorf(err, M2_EFORMAT, "checkpoint state: missing the stage's train state");
    *base = (int64_t)num(o, "base_step", 0);
    s->step = (int64_t)num(o, "step", 0);
    s->epoch = (int64_t)num(o, "epoch", 0);
    s->pos = (int)num(o, "pos", 0);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "best_val");
    if (cJSON_IsString(b)) s->best_val = strtod(b->valuestring, NULL);
    s->bad_evals = (int)num(o, "bad_evals", 0);
    s->stopped = (int)num(o, "stopped", 0);
    return 0;
}
