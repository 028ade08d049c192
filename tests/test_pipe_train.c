/* The whole pipeline on a very small config: every stage of `multi2 train` end to end, a run stopped
 * after mid-stage checkpoints (pre-training and a later RL stage) and resumed gives byte-identical
 * metrics and evaluation records to an uninterrupted run; `multi2 eval --run` reproduces the eval
 * stage; the baselines/ablations run on the pre-trained base (flat, shared adapter, role swap, only
 * SFT, only RL). Under ASan, or with M2_TEST_PIPE_SIZE=small, everything is smaller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#include "core/core.h"
#include "pipe/pipe.h"
#include "pipe/runfiles.h"
#include <sys/stat.h>
#include "data/episodes.h"
#include "tiny_run.h"
#include "tmpdir.h"
#include "file_tree.h"
#include "run_schema.h"
#include "io/safetensors.h"
#include "env/textcraft/textcraft.h"

static char root[256];

static const char *yaml =
    "method: multi2\n" M2T_TINY_PIPELINE_YAML
    "  online: {epochs: 2, episodes_per_epoch: 1, updates_per_epoch: 2, batch: 2, buffer_capacity: 40, seed_offline: 10}\n"
    "eval: {episodes: 2, splits: [id, ood], max_new_tokens: 8, step_limit: 6}\n";

/* Smaller under ASan (about 4x slower) or when asked. */
static int small(void) {
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#else
    const char *s = getenv("M2_TEST_PIPE_SIZE");
    return s && !strcmp(s, "small");
#endif
}

/* The test config as run `name` in the folder `out` (NULL: root) with overrides over[n]. */
static void load_in(m2_run_config *cfg, const char *out, const char *name, int n, const char **over) {
    m2_err err = {0};
    const m2_cfg_schema *s = m2_run_config_schema();
    assert_int_equal(m2_cfg_defaults(s, cfg, &err), 0);
    assert_int_equal(m2_cfg_apply_yaml(s, cfg, yaml, strlen(yaml), "test", &err), 0);
    char o1[300 + sizeof root], o2[300];
    snprintf(o1, sizeof o1, "run.out_dir=%s", out ? out : root);
    snprintf(o2, sizeof o2, "run.name=%s", name);
    assert_int_equal(m2_cfg_override(s, cfg, o1, &err), 0);
    assert_int_equal(m2_cfg_override(s, cfg, o2, &err), 0);
    if (small()) {
        assert_int_equal(m2_cfg_override(s, cfg, "pretrain.steps=4", &err), 0);
        assert_int_equal(m2_cfg_override(s, cfg, "eval.episodes=1", &err), 0);
        assert_int_equal(m2_cfg_override(s, cfg, "sys2.offline.max_steps=3", &err), 0);
    }
    for (int i = 0; i < n; i++) {
        if (m2_cfg_override(s, cfg, over[i], &err)) fail_msg("%s: %s", over[i], err.msg);
    }
    assert_int_equal(m2_run_config_check(cfg, &err), 0);
}

static void load(m2_run_config *cfg, const char *name, int n, const char **over) { load_in(cfg, NULL, name, n, over); }

static int run(const m2_run_config *cfg, int resume, m2_err *err) { return m2t_train(cfg, resume, err); }

static char *slurp(const char *run_name, const char *file) {
    char p[1600];
    snprintf(p, sizeof p, "%s/%s/%s", root, run_name, file);
    char *s[1] = {NULL};   /* an array, not &local: gcc 12 then sees no pointer to a dead local */
    m2_err err = {0};
    if (m2_read_file(p, s, NULL, &err)) fail_msg("%s", err.msg);
    return s[0];
}

/* First multiple of `every` among the steps that logged `key` (not the last such step). */
static long stop_step(const char *metrics, const char *key, int every) {
    long first = -1, last = -1;
    const char *p = metrics;
    while ((p = strstr(p, "{\"step\":"))) {
        long st = strtol(p + 8, NULL, 10);
        const char *e = strchr(p, '\n');
        if (!e) break;
        const char *k = strstr(p, key);
        if (k && k < e) {
            if (first < 0) first = st;
            last = st;
        }
        p = e;
    }
    for (long s = first; s >= 0 && s < last; s++) if (s % every == 0) return s;
    return -1;
}

/* ---------------------------------------------------------------- comparing two run folders */

/* TensorBoard scalars as text, one "step tag value-bits" line each: everything but wall_time. */
typedef struct tb_text { char *buf; size_t n, cap; } tb_text;
static int tb_line(void *ctx, double wall_time, int64_t step, const char *tag, float value) {
    (void)wall_time;
    tb_text *t = ctx;
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    char line[300];
    int k = snprintf(line, sizeof line, "%lld %s %08x\n", (long long)step, tag, bits);
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = (t->cap + (size_t)k + 1) * 2;
        t->buf = realloc(t->buf, t->cap);
    }
    memcpy(t->buf + t->n, line, (size_t)k + 1);
    t->n += (size_t)k;
    return 0;
}

static char *tb_scalars(const char *top, const char *rel) {
    char p[2500];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    tb_text t = {0};
    m2_err err = {0};
    int n_events = 0;
    if (m2_tb_read(p, tb_line, &t, &n_events, NULL, 0, &err)) fail_msg("%s", err.msg);
    assert_true(n_events > 1);
    return t.buf ? t.buf : strdup("");
}

/* A checkpoint manifest without its "created" time. */
static char *manifest_sans_time(const char *top, const char *rel) {
    char *s = m2t_read_at(top, rel, NULL);
    cJSON *o = cJSON_Parse(s);
    free(s);
    assert_non_null(o);
    assert_non_null(cJSON_GetObjectItem(o, "created"));
    cJSON_DeleteItemFromObjectCaseSensitive(o, "created");
    char *r = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return r;
}

/* config.yaml read back with run.out_dir set to "X". */
static char *config_sans_out_dir(const char *top, const char *rel) {
    char p[2500];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    m2_run_config *c = malloc(sizeof *c);
    m2_err err = {0};
    const char *over[1] = {"run.out_dir=X"};
    if (m2_run_config_load(c, p, 1, (char **)over, &err)) fail_msg("%s", err.msg);
    char *y = m2_cfg_to_yaml(m2_run_config_schema(), c);
    free(c);
    return y;
}

/* Every file of the two run folders, byte for byte. The only differences allowed, each compared
 * without exactly what must differ:
 *  - the TensorBoard event file's NAME (the run's start time and host) and the wall_time of each
 *    event: compared as the sequence of (step, tag, value bits);
 *  - ckpt/step_N/manifest.json "created" (when that checkpoint was saved);
 *  - config.yaml run.out_dir (the two runs cannot share a folder; their run.name is the same, so
 *    chart titles, which name the run, match).
 * Nothing else may differ: weights, optimiser state, data, eval records, metrics, plots (SVG and
 * PNG), results, stages.json. */
static void same_run_trees(const char *a, const char *b) {
    m2t_file_list fa = {0}, fb = {0};
    m2t_list_files(a, "", &fa);
    m2t_list_files(b, "", &fb);
    m2t_file_list_sort(&fa);
    m2t_file_list_sort(&fb);
    assert_int_equal(fa.n, fb.n);
    assert_true(fa.n > 30);
    int events = 0, manifests = 0;
    for (int i = 0; i < fa.n; i++) {
        const char *ra = fa.p[i], *rb = fb.p[i];
        if (m2_tb_is_event_file(ra)) {
            assert_true(m2_tb_is_event_file(rb));
            char *x = tb_scalars(a, ra), *y = tb_scalars(b, rb);
            if (strcmp(x, y)) fail_msg("TensorBoard scalars differ: %s vs %s", ra, rb);
            free(x); free(y);
            events++;
            continue;
        }
        if (strcmp(ra, rb)) fail_msg("the run folders hold different files: %s vs %s", ra, rb);
        const char *base = strrchr(ra, '/');
        char *x, *y;
        size_t lx = 0, ly = 0;
        if (!strcmp(ra, "config.yaml")) {
            x = config_sans_out_dir(a, ra); y = config_sans_out_dir(b, rb);
            lx = strlen(x); ly = strlen(y);
        } else if (!strncmp(ra, "ckpt/", 5) && base && !strcmp(base, "/manifest.json")) {
            x = manifest_sans_time(a, ra); y = manifest_sans_time(b, rb);
            lx = strlen(x); ly = strlen(y);
            manifests++;
        } else {
            x = m2t_read_at(a, ra, &lx); y = m2t_read_at(b, rb, &ly);
        }
        if (lx != ly || memcmp(x, y, lx)) fail_msg("%s differs between the uninterrupted and the resumed run", ra);
        free(x); free(y);
    }
    assert_int_equal(events, 1);
    assert_true(manifests >= 1);
    m2t_file_list_free(&fa);
    m2t_file_list_free(&fb);
}

/* The files a real run writes, in the documented formats (tests/run_schema.h). */
static void run_files_match_schema(const char *dir) {
    char why[2048], p[800];
    int n = 0;
    snprintf(p, sizeof p, "%s/results.json", dir);
    if (m2s_check_json_file(p, &m2s_results, why, sizeof why)) fail_msg("%s", why);
    snprintf(p, sizeof p, "%s/stages.json", dir);
    if (m2s_check_json_file(p, &m2s_stages, why, sizeof why)) fail_msg("%s", why);
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (m2s_check_jsonl_file(p, &m2s_metrics_line, &n, why, sizeof why)) fail_msg("%s", why);
    assert_true(n > 10);
    if (m2s_check_eval_dir(dir, &n, why, sizeof why)) fail_msg("%s", why);
    assert_true(n >= 2);
    for (int k = 0; k < 2; k++) {   /* the RL stages' diagnostics */
        snprintf(p, sizeof p, "%s/artifacts/%s/probe.json", dir, k ? "sys2_online" : "sys2_offline");
        if (m2s_check_json_file(p, &m2s_probe, why, sizeof why)) fail_msg("%s", why);
    }
    snprintf(p, sizeof p, "%s/results.md", dir);
    char *md = NULL;
    m2_err err = {0};
    if (m2_read_file(p, &md, NULL, &err)) fail_msg("%s", err.msg);
    assert_non_null(strstr(md, "## RL stages: what they changed"));
    free(md);
}

static void resume_is_exact(void **state) {
    (void)state;
    m2_run_config *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    m2_err err = {0};
    /* TensorBoard and plots on: their files are compared too */
    const char *files_on[2] = {"run.tensorboard=true", "run.plots=true"};
    load(a, "straight", 2, files_on);
    if (run(a, 0, &err)) fail_msg("%s", err.msg);
    char *ma = slurp("straight", "metrics.jsonl");
    long s1 = stop_step(ma, "pretrain/loss", 3), s2 = stop_step(ma, "sys2_online/actor_loss", 3);
    if (s2 < 0) s2 = stop_step(ma, "sys2/actor_loss", 3);
    assert_true(s1 > 0);
    assert_true(s2 > s1);
    /* the same run name in another folder, stopped after the checkpoint of step s1 (pre-training),
     * resumed, stopped at s2, resumed */
    char out_b[400];
    snprintf(out_b, sizeof out_b, "%s/resumed", root);
    load_in(b, out_b, "straight", 2, files_on);
    b->run_stop_at_step = s1;
    assert_int_equal(run(b, 0, &err), -1);
    assert_int_equal(err.code, M2_ESTOPPED);
    assert_non_null(strstr(err.msg, "run.stop_at_step"));
    b->run_stop_at_step = s2;
    assert_int_equal(run(b, 1, &err), -1);
    assert_int_equal(err.code, M2_ESTOPPED);
    /* the saved config keeps the stop still ahead (s2) ... */
    char bdir[600], p[700], *y = NULL;
    m2_run_dir_for(b, bdir, sizeof bdir);
    snprintf(p, sizeof p, "%s/config.yaml", bdir);
    assert_int_equal(m2_read_file(p, &y, NULL, &err), 0);
    char want[64];
    snprintf(want, sizeof want, "stop_at_step: %ld\n", s2);
    assert_non_null(strstr(y, want));
    free(y);
    /* ... and the last resume keeps it too, as `multi2 train --resume` reads it from config.yaml: a stop
     * already passed is saved as 0, so config.yaml ends as the uninterrupted run's */
    if (run(b, 1, &err)) fail_msg("%s", err.msg);
    char sdir[600];
    snprintf(sdir, sizeof sdir, "%s/straight", root);
    same_run_trees(sdir, bdir);
    run_files_match_schema(bdir);
    /* a stop between two checkpoint steps (run.ckpt_every 3) writes a checkpoint there: resumed
     * from it, the run ends with the uninterrupted run's metrics and evaluation records */
    char out_c[400], cdir[600];
    snprintf(out_c, sizeof out_c, "%s/stopped_between", root);
    load_in(b, out_c, "straight", 2, files_on);
    b->run_stop_at_step = s1 + 1;
    assert_int_equal(run(b, 0, &err), -1);
    assert_int_equal(err.code, M2_ESTOPPED);
    m2_run_dir_for(b, cdir, sizeof cdir);
    snprintf(p, sizeof p, "%s/ckpt/step_%ld", cdir, s1 + 1);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    if (run(b, 1, &err)) fail_msg("%s", err.msg);
    const char *same[3] = {"metrics.jsonl", "eval/id.jsonl", "eval/ood.jsonl"};
    for (int i = 0; i < 3; i++) {
        size_t nx = 0, ny = 0;
        char *x = m2t_read_at(sdir, same[i], &nx), *z = m2t_read_at(cdir, same[i], &ny);
        if (nx != ny || memcmp(x, z, nx)) fail_msg("%s: the run stopped at step %ld and resumed differs", same[i], s1 + 1);
        free(x);
        free(z);
    }
    const char *files[2] = {"eval/id.jsonl", "eval/ood.jsonl"};
    for (int i = 0; i < 2; i++) {
        char *x = slurp("straight", files[i]);
        assert_true(strlen(x) > 10);
        /* one record per episode, with the transcript and the per-system token counts */
        cJSON *o = cJSON_Parse(x);
        assert_non_null(o);
        assert_non_null(cJSON_GetObjectItem(o, "transcript"));
        assert_non_null(cJSON_GetObjectItem(o, "token_counts"));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "tokens")));
        assert_string_equal(cJSON_GetObjectItem(o, "split")->valuestring, i ? "ood" : "id");
        /* the first episode is position 0 of the episode order (data/episodes.h), named by type */
        m2_env *env;
        if (m2_env_create("textcraft", NULL, &env, &err)) fail_msg("%s", err.msg);
        m2_episode_order ord;
        if (m2_episode_order_build(env, NULL, i ? M2_SPLIT_OOD : M2_SPLIT_ID, &ord, &err)) fail_msg("%s", err.msg);
        const m2_episode_ref *r0 = m2_episode_order_at(&ord, 0);
        assert_string_equal(cJSON_GetObjectItem(o, "task_type")->valuestring, r0->type);
        m2_step_result sr;
        if (env->cls->reset(env, r0->task, i ? M2_SPLIT_OOD : M2_SPLIT_ID, r0->index, (uint64_t)a->eval_seed, &sr, &err))
            fail_msg("%s", err.msg);
        assert_string_equal(cJSON_GetObjectItem(o, "task")->valuestring, env->cls->task_text(env));
        m2_episode_order_free(&ord);
        m2_env_destroy(env);
        cJSON_Delete(o);
        free(x);
    }
    /* multi2 eval --run gives the eval stage's records */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/straight", root);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    if (m2_pipe_eval_run(dir, "ood", 0, 0, -1, -1, 0, f, &agg, NULL, &err)) fail_msg("%s", err.msg);
    fclose(f);
    char *ood = slurp("straight", "eval/ood.jsonl");
    assert_string_equal(buf, ood);
    assert_non_null(m2_eval_agg_find(&agg, "ood", "all"));
    m2_eval_agg_free(&agg);
    free(buf);
    /* --vary: the same episodes in a varied world: the same number of records, other task texts (the
     * goals renamed); the same seed again, the same records */
    char *vb[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        f = open_memstream(&vb[k], &len);
        if (m2_pipe_eval_run(dir, "ood", 0, 0, -1, -1, 11, f, NULL, NULL, &err)) fail_msg("%s", err.msg);
        fclose(f);
    }
    assert_string_equal(vb[0], vb[1]);
    int lines_v = 0, lines_o = 0;
    for (const char *p = vb[0]; *p; p++) lines_v += *p == '\n';
    for (const char *p = ood; *p; p++) lines_o += *p == '\n';
    assert_int_equal(lines_v, lines_o);
    for (const char *p = ood; (p = strstr(p, "\"task\":\"craft ")); p++) {
        char goal[200];
        size_t gl = strcspn(p, "\\");
        snprintf(goal, sizeof goal, "%.*s", (int)(gl < sizeof goal - 1 ? gl : sizeof goal - 1), p);
        if (strstr(vb[0], goal)) fail_msg("a varied evaluation plays an original goal: %s", goal);
    }
    free(vb[0]);
    free(vb[1]);
    free(ood);
    /* results table written by the report stage */
    char *res = slurp("straight", "results.json");
    assert_non_null(strstr(res, "\"multi2\""));
    free(res);
    res = slurp("straight", "results.md");   /* with a row per split and task type */
    assert_non_null(strstr(res, "## Per task type"));
    assert_non_null(strstr(res, "| multi2 | textcraft | id | depth "));
    assert_non_null(strstr(res, "| multi2 | textcraft | ood | depth "));
    free(res);
    free(ma);
    free(a);
    free(b);
}

/* The baselines/ablations on the straight run's base and data. */
static void methods_run(void **state) {
    (void)state;
    const char *methods[] = {"flat", "shared_adapter", "role_swap", "sft_only", "rl_only", "no_kl"};
    int n = small() ? 2 : 6;
    m2_run_config *c = malloc(sizeof *c);
    char base[600], tok[600], data[600];
    snprintf(base, sizeof base, "model.base=%s/straight/artifacts/pretrain/base.gguf", root);
    snprintf(tok, sizeof tok, "model.tokenizer=%s/straight/artifacts/pretrain/tokenizer.json", root);
    snprintf(data, sizeof data, "data.path=%s/straight/artifacts/data", root);
    for (int i = 0; i < n; i++) {
        char mo[64];
        snprintf(mo, sizeof mo, "method=%s", methods[i]);
        const char *over[5] = {mo, base, tok, data, "sys2.online.epochs=1"};
        load(c, methods[i], 5, over);
        m2_err err = {0};
        if (run(c, 0, &err)) fail_msg("%s: %s", methods[i], err.msg);
        char *ev = slurp(methods[i], "eval/id.jsonl");
        cJSON *o = cJSON_Parse(ev);
        assert_non_null(o);
        int sys1_calls = (int)cJSON_GetObjectItem(o, "sys1_calls")->valuedouble;
        if (!strcmp(methods[i], "flat")) assert_int_equal(sys1_calls, 0);
        else assert_true(sys1_calls >= 1);
        cJSON_Delete(o);
        free(ev);
        char *st = slurp(methods[i], "stages.json");
        if (!strcmp(methods[i], "sft_only")) assert_null(strstr(st, "sys2_offline"));
        if (!strcmp(methods[i], "rl_only")) assert_null(strstr(st, "sys2_warmup"));
        if (!strcmp(methods[i], "flat")) assert_null(strstr(st, "sys1_sft"));
        assert_null(strstr(st, "pretrain"));   /* a given base is not pre-trained again */
        free(st);
        /* the adapters the method trains */
        char p[800];
        snprintf(p, sizeof p, "%s/%s/artifacts/sys2_warmup/adapter_shared", root, methods[i]);
        assert_int_equal(m2_path_exists(p), !strcmp(methods[i], "shared_adapter"));
    }
    free(c);
}

/* A run that takes its first stages from the straight run (run.reuse_from) is byte-identical to
 * one that computes them; stages a method runs differently, or whose keys differ, are refused. */
static void reuse_is_exact(void **state) {
    (void)state;
    const char *methods[] = {"offline_only", "no_kl"};
    m2_run_config *straight = malloc(sizeof *straight), *c = malloc(sizeof *c);
    load(straight, "straight", 0, NULL);
    char from[600];
    snprintf(from, sizeof from, "run.reuse_from=%s/straight", root);
    for (int i = 0; i < (small() ? 1 : 2); i++) {
        char mo[64], name[64];
        snprintf(mo, sizeof mo, "method=%s", methods[i]);
        snprintf(name, sizeof name, "%s_scratch", methods[i]);
        const char *over1[1] = {mo};
        load(c, name, 1, over1);
        m2_err err = {0};
        if (run(c, 0, &err)) fail_msg("%s: %s", name, err.msg);
        /* the prefix the two configs share */
        const char *st[16];
        int ns = m2_run_reusable_prefix(straight, c, st, 16, NULL, 0);
        assert_int_equal(ns, 5);   /* pretrain data sys1_sft sys2_warmup sys2_offline */
        assert_string_equal(st[4], "sys2_offline");
        snprintf(name, sizeof name, "%s_reused", methods[i]);
        const char *over2[3] = {mo, from, "run.reuse_stages=[pretrain,data,sys1_sft,sys2_warmup,sys2_offline]"};
        load(c, name, 3, over2);
        if (run(c, 0, &err)) fail_msg("%s: %s", name, err.msg);
        /* a run made by reuse records every stage as a computed one does, so it can be a source too */
        char rdir[700];
        m2_run_dir_for(c, rdir, sizeof rdir);
        for (int k = 0; k < 5; k++) assert_true(m2_run_stage_reusable(rdir, st[k]));
        const char *files[] = {"eval/id.jsonl", "eval/ood.jsonl", "metrics.jsonl"};
        for (int f = 0; f < 3; f++) {
            char a[64], b[64];
            snprintf(a, sizeof a, "%s_scratch", methods[i]);
            snprintf(b, sizeof b, "%s_reused", methods[i]);
            char *x = slurp(a, files[f]), *y = slurp(b, files[f]);
            if (strcmp(x, y)) fail_msg("%s: %s differs between computed and reused stages", methods[i], files[f]);
            free(x);
            free(y);
        }
    }
    /* no_anchor runs the offline stage with lambda = 0: only up to the warm-up is shared */
    const char *over3[3] = {"method=no_anchor", from, "run.reuse_stages=[pretrain,data,sys1_sft,sys2_warmup,sys2_offline]"};
    load(c, "no_anchor_bad", 3, over3);
    m2_err err = {0};
    assert_int_not_equal(run(c, 0, &err), 0);
    assert_non_null(strstr(err.msg, "run.reuse_stages: sys2_offline"));
    assert_non_null(strstr(err.msg, "no_anchor"));
    /* a key read by System 1 SFT differs: only pre-training and data are shared */
    const char *over4[3] = {"sys1.sft.lr=0.5", from, "run.reuse_stages=[pretrain,data,sys1_sft]"};
    load(c, "lr_bad", 3, over4);
    memset(&err, 0, sizeof err);
    assert_int_not_equal(run(c, 0, &err), 0);
    assert_non_null(strstr(err.msg, "sys1.sft.lr"));
    const char *st[16];
    assert_int_equal(m2_run_reusable_prefix(straight, c, st, 16, NULL, 0), 2);
    /* model.recompute changes no number: every stage the method shares stays reusable */
    const char *over6[1] = {"model.recompute=true"};
    load(c, "recompute_reuse", 1, over6);
    int all = m2_run_reusable_prefix(straight, straight, st, 16, NULL, 0);
    assert_true(all > 2);
    assert_int_equal(m2_run_reusable_prefix(straight, c, st, 16, NULL, 0), all);
    /* reused stages must be the plan's first ones */
    const char *over5[2] = {from, "run.reuse_stages=[data]"};
    load(c, "order_bad", 2, over5);
    memset(&err, 0, sizeof err);
    assert_int_not_equal(run(c, 0, &err), 0);
    assert_non_null(strstr(err.msg, "not stage 1"));
    /* a finished run kept as its records alone (scripts/keep_records.sh: records_only.txt) lends no
     * stage, reads as finished, and refuses to run a stage it has not done */
    const char *mo1[1] = {"method=offline_only"};
    load(c, "offline_only_reused", 1, mo1);
    char rdir[700], mark[800];
    m2_run_dir_for(c, rdir, sizeof rdir);
    snprintf(mark, sizeof mark, "%s/%s", rdir, M2_RECORDS_ONLY_FILE);
    memset(&err, 0, sizeof err);
    assert_int_equal(m2_write_file_atomic(mark, "kept\n", 5, &err), 0);
    assert_true(m2_run_records_only(rdir));
    assert_false(m2_run_stage_reusable(rdir, "pretrain"));
    assert_int_equal(run(c, 1, &err), 0);   /* every stage done: nothing to run */
    char kept_from[800];
    snprintf(kept_from, sizeof kept_from, "run.reuse_from=%s", rdir);
    const char *over7[3] = {"method=offline_only", kept_from, "run.reuse_stages=[pretrain]"};
    load(c, "from_kept", 3, over7);
    assert_int_not_equal(run(c, 0, &err), 0);
    assert_non_null(strstr(err.msg, "records alone"));
    char *sj = slurp("offline_only_reused", "stages.json"), *cut = strstr(sj, ", \"report\"]");
    assert_non_null(cut);
    memmove(cut, cut + 10, strlen(cut + 10) + 1);   /* the report stage not done */
    char sp[800];
    snprintf(sp, sizeof sp, "%s/stages.json", rdir);
    assert_int_equal(m2_write_file_atomic(sp, sj, strlen(sj), &err), 0);
    free(sj);
    load(c, "offline_only_reused", 1, mo1);
    memset(&err, 0, sizeof err);
    assert_int_not_equal(run(c, 1, &err), 0);
    assert_non_null(strstr(err.msg, M2_RECORDS_ONLY_FILE));
    assert_non_null(strstr(err.msg, "stage report"));
    free(straight);
    free(c);
}

static int setup(void **state) {
    (void)state;
    return m2t_tmpdir(root, sizeof root, "pipeline");
}

static int teardown(void **state) {
    (void)state;
    return m2_remove_tree(root) == 0 ? 0 : -1;
}

/* Two texts equal except that numbers may differ by a relative 1e-3 (+ 1e-5: a KL of two nearly
 * equal policies is ~1e-6 of pure rounding). */
static int same_up_to_rounding(const char *x, const char *y) {
    while (*x && *y) {
        int nx = (*x >= '0' && *x <= '9') || *x == '-', ny = (*y >= '0' && *y <= '9') || *y == '-';
        if (nx && ny) {
            char *ex, *ey;
            double a = strtod(x, &ex), b = strtod(y, &ey);
            if (fabs(a - b) > 1e-3 * fabs(a) + 1e-5) return 0;
            x = ex; y = ey;
            continue;
        }
        if (*x++ != *y++) return 0;
    }
    return *x == *y;
}

/* model.logit_chunk: training without whole logits gives the run of the stored-logits run
 * "straight" (which resume_is_exact made) up to float rounding: the tiny base is pre-trained, and
 * its output matrix's gradient is summed chunk by chunk instead of in one GEMM */
/* A fresh run named `name` of the test config with overrides over[n]; the test fails if it does. */
static void run_with(const char *name, int n, const char **over) {
    m2_run_config *c = malloc(sizeof *c);
    load(c, name, n, over);
    m2_err err = {0};
    if (run(c, 0, &err)) fail_msg("%s", err.msg);
    free(c);
}


static int count_lines(const char *run_name, const char *file) {
    char *h = slurp(run_name, file);
    int lines = 0;
    for (const char *p = h; *p; p++) lines += *p == '\n';
    free(h);
    return lines;
}

/* pretrain.corpus_episodes / corpus_worlds: the corpus folders hold the episodes asked for, each
 * world its share (medium: half of it), in varied worlds whose goals are none of the environment's
 * own goal names; without worlds (or in an environment without varied worlds) they play the
 * environment's own world; the transcripts reach the pre-training set (its log line counts them). */
static void pretrain_corpus_keys(void **state) {
    (void)state;
    /* the expert keeps only episodes it wins within eval.step_limit */
    const char *varied[5] = {"pretrain.corpus_episodes=6", "pretrain.corpus_worlds=2", "run.stages=[pretrain]", "pretrain.steps=1",
                             "eval.step_limit=50"};
    run_with("corpus_varied", 5, varied);
    char p[700];
    snprintf(p, sizeof p, "%s/corpus_varied/artifacts/pretrain/corpus/world0", root);
    assert_false(m2_path_exists(p));
    m2_env *env = NULL;
    m2_err err = {0};
    assert_int_equal(m2_env_create("textcraft", NULL, &env, &err), 0);
    int n_goals = env->cls->num_episodes(env, "all", M2_SPLIT_TRAIN, &err);
    for (int w = 1; w <= 2; w++) {
        char f[200];
        snprintf(f, sizeof f, "artifacts/pretrain/corpus/world%d/expert/high.jsonl", w);
        assert_int_equal(count_lines("corpus_varied", f), 3);
        snprintf(f, sizeof f, "artifacts/pretrain/corpus/world%d/medium/high.jsonl", w);
        assert_int_equal(count_lines("corpus_varied", f), 1);
        snprintf(f, sizeof f, "artifacts/pretrain/corpus/world%d/flat.jsonl", w);
        char *flat = slurp("corpus_varied", f);
        for (int i = 0; i < n_goals; i++) {
            m2_step_result r;
            assert_int_equal(env->cls->reset(env, "all", M2_SPLIT_TRAIN, i, 0, &r, &err), 0);
            char goal[300];
            snprintf(goal, sizeof goal, "\"goal\":\"craft %s\\n", m2_tc_goal(env));
            if (strstr(flat, goal)) fail_msg("world %d plays an original goal: %s", w, goal);
        }
        free(flat);
    }
    m2_env_destroy(env);
    const char *own[5] = {"pretrain.corpus_episodes=4", "pretrain.corpus_worlds=0", "run.stages=[pretrain]", "pretrain.steps=1",
                          "eval.step_limit=50"};
    run_with("corpus_own", 5, own);
    assert_int_equal(count_lines("corpus_own", "artifacts/pretrain/corpus/world0/expert/high.jsonl"), 4);
    snprintf(p, sizeof p, "%s/corpus_own/artifacts/pretrain/corpus/world1", root);
    assert_false(m2_path_exists(p));
    const char *aw[6] = {"env.name=alfworld", "pretrain.corpus_episodes=2", "pretrain.corpus_worlds=3", "run.stages=[pretrain]",
                         "pretrain.steps=1", "eval.step_limit=50"};
    run_with("corpus_aw", 6, aw);
    assert_int_equal(count_lines("corpus_aw", "artifacts/pretrain/corpus/world0/expert/high.jsonl"), 2);
}

static void logit_chunks_change_nothing(void **state) {
    (void)state;
    const char *over[1] = {"model.logit_chunk=100"};
    run_with("chunked", 1, over);
    char *x = slurp("straight", "metrics.jsonl"), *y = slurp("chunked", "metrics.jsonl");
    assert_true(strlen(x) > 1000);
    if (!same_up_to_rounding(x, y)) fail_msg("metrics.jsonl differs beyond rounding with model.logit_chunk=100");
    free(x); free(y);
}

/* model.recompute gives the same gradients bit for bit, so the whole run's metrics and evaluation
 * records are byte-identical to the straight run's */
static void recompute_changes_nothing(void **state) {
    (void)state;
    const char *over[1] = {"model.recompute=true"};
    run_with("recomputed", 1, over);
    const char *files[3] = {"metrics.jsonl", "eval/id.jsonl", "eval/ood.jsonl"};
    for (int i = 0; i < 3; i++) {
        char *x = slurp("straight", files[i]), *y = slurp("recomputed", files[i]);
        assert_true(strlen(x) > 10);
        assert_string_equal(x, y);
        free(x); free(y);
    }
}

/* heads.hidden sizes the critic heads: the saved heads are H -> 8 -> 1 (the test model's H is 16) */
static void heads_hidden_is_used(void **state) {
    (void)state;
    const char *over[1] = {"heads.hidden=8"};
    run_with("heads8", 1, over);
    m2_err err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/heads8/artifacts/sys2_offline/heads.safetensors", root);
    m2_safetensors *st = m2_st_open(path, &err);
    if (!st) fail_msg("%s", err.msg);
    const m2_st_tensor *w1 = m2_st_find(st, "q.W1");
    assert_non_null(w1);
    assert_int_equal(w1->n_dims, 2);
    assert_int_equal(w1->shape[0], 8);
    assert_int_equal(w1->shape[1], 16);
    m2_st_close(st);
}

/* data.medium_episodes / data.medium_noise: 0 writes no medium data; 3 episodes at noise 1 write
 * three medium episodes */
static void medium_data_keys(void **state) {
    (void)state;
    const char *none[2] = {"data.medium_episodes=0", "method=sft_only"};
    run_with("nomedium", 2, none);
    char path[600];
    snprintf(path, sizeof path, "%s/nomedium/artifacts/data/medium", root);
    assert_false(m2_path_exists(path));
    const char *three[3] = {"data.medium_episodes=3", "data.medium_noise=1", "method=sft_only"};
    run_with("medium3", 3, three);
    char *h = slurp("medium3", "artifacts/data/medium/high.jsonl");
    int lines = 0;
    for (const char *p = h; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 3);
    free(h);
}

/* Every System 2 output of an eval records file is a candidate of score mode: "action; True|False"
 * exactly (no free text), with the step's flag (hierarchical runs); returns the number of such steps. */
static int steps_are_candidates(const char *jsonl, int flat) {
    int steps = 0, empty = 0;
    for (const char *line = jsonl; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char *one = strndup(line, n);
        cJSON *o = cJSON_Parse(one);
        assert_non_null(o);
        const cJSON *sg, *stp;
        cJSON_ArrayForEach(sg, cJSON_GetObjectItem(o, "transcript")) cJSON_ArrayForEach(stp, cJSON_GetObjectItem(sg, "steps")) {
            const char *raw = cJSON_GetObjectItem(stp, "raw")->valuestring, *act = cJSON_GetObjectItem(stp, "action")->valuestring;
            char t[1200], f[1200];
            snprintf(t, sizeof t, "%s; True", act);
            snprintf(f, sizeof f, "%s; False", act);
            /* "" only where the context alone exceeds the window (an invalid step, as when generating);
             * the flat loop ignores the flag, so its raw output may say True with flag false */
            if (!*raw) { empty++; continue; }
            if (strcmp(raw, t) && strcmp(raw, f)) fail_msg("score mode output \"%s\" is not a candidate of \"%s\"", raw, act);
            if (strcmp(raw, cJSON_IsTrue(cJSON_GetObjectItem(stp, "flag")) ? t : f) && !flat)
                fail_msg("score mode output \"%s\": the flag is not the candidate's", raw);
            steps++;
        }
        cJSON_Delete(o);
        free(one);
        line += n + (end ? 1 : 0);
    }
    assert_true(empty <= steps / 4);
    return steps;
}

/* sys2.action_mode=score through the pipeline: a run reusing the straight run's SFT stages trains
 * offline (anchor a^ among replayed admissible actions), online (rollouts choosing) and evaluates
 * choosing; the straight run evaluated with --action-mode score chooses too */
static void score_mode_runs(void **state) {
    (void)state;
    char from[600];
    snprintf(from, sizeof from, "run.reuse_from=%s/straight", root);
    const char *over[3] = {"sys2.action_mode=score", from, "run.reuse_stages=[pretrain,data,sys1_sft,sys2_warmup]"};
    run_with("scored", 3, over);
    char *ids = slurp("scored", "eval/id.jsonl");
    assert_true(steps_are_candidates(ids, 0) > 0);
    char *gen = slurp("straight", "eval/id.jsonl");
    assert_string_not_equal(ids, gen);
    free(ids);
    /* the same SFT stages, then other anchor actions, rollouts and evaluation: other numbers */
    char *metrics = slurp("scored", "metrics.jsonl"), *m0 = slurp("straight", "metrics.jsonl");
    assert_non_null(strstr(metrics, "sys2/anchor_loss"));
    assert_string_not_equal(metrics, m0);
    free(metrics);
    free(m0);
    /* a generate-mode run evaluated choosing */
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/straight", root);
    snprintf(path, sizeof path, "%s/score_eval.jsonl", root);
    FILE *f = fopen(path, "w");
    m2_err err = {0};
    if (m2_pipe_eval_run(dir, "id", 0, 0, -1, M2_ACTION_MODE_SCORE, 0, f, NULL, NULL, &err)) fail_msg("%s", err.msg);
    fclose(f);
    char *txt = NULL;
    assert_int_equal(m2_read_file(path, &txt, NULL, &err), 0);
    assert_true(steps_are_candidates(txt, 0) > 0);
    assert_string_not_equal(txt, gen);
    free(txt);
    free(gen);
    assert_int_equal(m2_pipe_eval_run(dir, "id", 0, 0, -1, M2_N_ACTION_MODES, 0, NULL, NULL, NULL, &err), -1);
    /* the flat baseline's single policy chooses too (its anchor states replayed from flat.jsonl) */
    const char *flat[4] = {"method=flat", "sys2.action_mode=score", from, "run.reuse_stages=[pretrain,data]"};
    run_with("flat_scored", 4, flat);
    char *fl = slurp("flat_scored", "eval/id.jsonl");
    assert_true(steps_are_candidates(fl, 1) > 0);
    free(fl);
}

/* eval.action_modes=[generate,score]: the eval stage (taking every training stage from the straight
 * run) writes the run's own mode's records exactly as the straight run's eval stage did, the score
 * mode's beside them exactly as `multi2 eval --run --action-mode score` plays them, logs both, and
 * the report gives a row per mode that names it. */
static void both_action_modes_in_one_run(void **state) {
    (void)state;
    char from[600];
    snprintf(from, sizeof from, "run.reuse_from=%s/straight", root);
    const char *over[3] = {from, "run.reuse_stages=[pretrain,data,sys1_sft,sys2_warmup,sys2_offline,sys2_online]",
                           "eval.action_modes=[score,generate,score]"};
    run_with("modes", 3, over);
    const char *split[2] = {"id", "ood"};
    char dir[600], p[700];
    snprintf(dir, sizeof dir, "%s/straight", root);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "eval/%s.jsonl", split[i]);
        char *own = slurp("modes", p), *before = slurp("straight", p);
        assert_string_equal(own, before);
        free(own);
        free(before);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        m2_err err = {0};
        if (m2_pipe_eval_run(dir, split[i], 0, 0, -1, M2_ACTION_MODE_SCORE, 0, f, NULL, NULL, &err)) fail_msg("%s", err.msg);
        fclose(f);
        snprintf(p, sizeof p, "eval/%s.score.jsonl", split[i]);
        char *scored = slurp("modes", p);
        assert_string_equal(scored, buf);
        assert_true(steps_are_candidates(scored, 0) > 0);
        free(scored);
        free(buf);
    }
    snprintf(p, sizeof p, "%s/modes/artifacts/eval/eval_summary.score.json", root);
    assert_true(m2_path_exists(p));
    snprintf(p, sizeof p, "%s/modes/artifacts/eval/eval_summary.generate.json", root);
    assert_false(m2_path_exists(p));   /* the run's own mode is evaluated once */
    char *m = slurp("modes", "metrics.jsonl");
    assert_non_null(strstr(m, "\"eval/id/success\""));
    assert_non_null(strstr(m, "\"eval/ood.score/success\""));
    assert_null(strstr(m, "eval/id.generate"));
    free(m);
    snprintf(p, sizeof p, "%s/modes", root);
    run_files_match_schema(p);
    char *rj = slurp("modes", "results.json");
    cJSON *j = cJSON_Parse(rj);
    free(rj);
    assert_non_null(j);
    int rows = 0, scored = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItem(j, "rows")) {
        const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(o, "action_mode"));
        assert_non_null(mode);
        scored += !strcmp(mode, "score");
        rows++;
    }
    assert_int_equal(rows, 4);
    assert_int_equal(scored, 2);
    cJSON_Delete(j);
    char *md = slurp("modes", "results.md");
    assert_non_null(strstr(md, "| method | env | split | action mode |"));
    assert_non_null(strstr(md, "| multi2 | textcraft | ood | score |"));
    free(md);
    md = slurp("straight", "results.md");   /* one mode: no column */
    assert_null(strstr(md, "action mode"));
    free(md);
}

/* The first line of metrics that holds key, and the step it was logged at (-1: none). */
static long first_step_of(const char *metrics, const char *key) {
    const char *k = strstr(metrics, key);
    if (!k) return -1;
    const char *line = k;
    while (line > metrics && line[-1] != '\n') line--;
    return strtol(line + 8, NULL, 10);   /* {"step": */
}

/* sys2.online.eval_every=1: the online stage evaluates greedily before its first epoch and after
 * each, logging sys2_online/eval_* at epochs 0, 1, 2; evaluating draws from no training stream, so
 * the trained adapter, heads and every eval record are those of the straight run (which trains the
 * same without evaluating); a run stopped right after the checkpoint of an epoch's last update (the
 * evaluation comes after it) and again mid-epoch, then resumed, equals the uninterrupted one file by
 * file. */
static void online_learning_curves(void **state) {
    (void)state;
    char from[600];
    snprintf(from, sizeof from, "run.reuse_from=%s/straight", root);
    const char *over[7] = {from, "run.reuse_stages=[pretrain,data,sys1_sft,sys2_warmup,sys2_offline]",
                           "sys2.online.eval_every=1", "sys2.online.eval_episodes=2", "run.ckpt_every=1",
                           "run.tensorboard=true", "run.plots=true"};
    run_with("curves", 7, over);
    char *m = slurp("curves", "metrics.jsonl"), *m0 = slurp("straight", "metrics.jsonl");
    int evals = 0;
    for (const char *q = m; (q = strstr(q, "\"sys2_online/eval_epoch\":")); q++) {
        long epoch = strtol(q + strlen("\"sys2_online/eval_epoch\":"), NULL, 10);
        assert_int_equal(epoch, evals);
        evals++;
    }
    assert_int_equal(evals, 3);   /* sys2.online.epochs = 2: before, after 1, after 2 */
    assert_non_null(strstr(m, "\"sys2_online/eval_ood_score\""));
    /* the training's numbers: every line of the straight run's online stage is in this run's */
    const char *q = strstr(m0, "sys2_online/actor_loss");
    assert_non_null(q);
    while (q > m0 && q[-1] != '\n') q--;
    for (const char *line = q; *line && strstr(line, "sys2_online/");) {
        const char *e = strchr(line, '\n');
        char *one = strndup(line, (size_t)(e - line + 1));
        if (strstr(one, "sys2_online/") && !strstr(m, one)) fail_msg("online line not reproduced: %s", one);
        free(one);
        line = e + 1;
    }
    const char *same[] = {"artifacts/sys2_online/adapter_sys2/adapter_model.safetensors", "artifacts/sys2_online/heads.safetensors",
                          "eval/id.jsonl", "eval/ood.jsonl", "artifacts/sys2_online/probe.json"};
    for (int i = 0; i < 5; i++) {
        char a[800], b[800], *x, *y;
        size_t lx, ly;
        snprintf(a, sizeof a, "%s/straight/%s", root, same[i]);
        snprintf(b, sizeof b, "%s/curves/%s", root, same[i]);
        m2_err err = {0};
        if (m2_read_file(a, &x, &lx, &err) || m2_read_file(b, &y, &ly, &err)) fail_msg("%s", err.msg);
        if (lx != ly || memcmp(x, y, lx)) fail_msg("%s differs when the online stage evaluates on the way", same[i]);
        free(x);
        free(y);
    }
    /* stopped after the first epoch's last update (global base + 2), then mid second epoch */
    long base = first_step_of(m, "sys2_online/actor_loss") - 1;
    assert_true(base > 0);
    m2_run_config *b = malloc(sizeof *b);
    char out_b[400];
    snprintf(out_b, sizeof out_b, "%s/resumed", root);
    load_in(b, out_b, "curves", 7, over);
    m2_err err = {0};
    char sdir[600], bdir[600];
    m2_run_dir_for(b, bdir, sizeof bdir);
    for (int k = 0; k < 2; k++) {
        b->run_stop_at_step = base + 2 + k;
        assert_int_equal(run(b, k, &err), -1);
        assert_int_equal(err.code, M2_ESTOPPED);
        if (k == 0) {
            /* a process killed after logging a line at the checkpoint's step, after the checkpoint (the
             * epoch's collection and evaluation lines): resuming drops it, by the checkpoint's line count */
            char mp[700], line[120];
            snprintf(mp, sizeof mp, "%s/metrics.jsonl", bdir);
            FILE *f = fopen(mp, "a");
            assert_non_null(f);
            snprintf(line, sizeof line, "{\"step\":%ld,\"data\":{\"sys2_online/success_rate\":0.5}}\n", base + 2);
            fputs(line, f);
            fclose(f);
        }
    }
    if (run(b, 1, &err)) fail_msg("%s", err.msg);
    snprintf(sdir, sizeof sdir, "%s/curves", root);
    same_run_trees(sdir, bdir);
    free(b);
    free(m);
    free(m0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resume_is_exact),
        cmocka_unit_test(methods_run),
        cmocka_unit_test(reuse_is_exact),
        cmocka_unit_test(score_mode_runs),
        cmocka_unit_test(both_action_modes_in_one_run),
        cmocka_unit_test(online_learning_curves),
        cmocka_unit_test(logit_chunks_change_nothing),
        cmocka_unit_test(recompute_changes_nothing),
        cmocka_unit_test(heads_hidden_is_used),
        cmocka_unit_test(medium_data_keys),
        cmocka_unit_test(pretrain_corpus_keys),
    };
    /* M2_TEST_FILTER=name runs the tests matching it (cmocka's pattern); those that read an earlier
     * test's runs need it too */
    if (getenv("M2_TEST_FILTER")) cmocka_set_test_filter(getenv("M2_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
