#include "pipe/inputs.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"
#include "env/env.h"
#include "io/io.h"
#include "pipe/plan.h"
#include "pipe/world.h"

/* 1 when one of the stages reads key. */
static int read_by(const char *const *stages, int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (m2_stage_reads_key((m2_stage_id)m2_stage_find(stages[i]), key)) return 1;
    return 0;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The base's config and its weight files' headers: what loading it would trip over first. */
static int check_base(const char *base, m2_model_config *mc, m2_err *err) {
    if (m2_model_config_read(base, mc, err)) return m2_err_prefix(err, "model.base: ");
    if (!is_dir(base) && m2_is_gguf(base)) return 0;   /* m2_model_config_read opened and validated the GGUF */
    m2_safetensors *st = m2_st_open(base, err);
    if (!st) return m2_err_prefix(err, "model.base: ");
    m2_st_close(st);
    return 0;
}

static int check_tokenizer(const char *key, const char *path, const m2_model_config *mc, m2_err *err) {
    m2_tokenizer *t = m2_tokenizer_load(path, err);
    if (!t) return m2_err_prefix(err, "%s: ", key);
    int n = m2_tokenizer_n_tokens(t);
    m2_tokenizer_free(t);
    if (mc && n > mc->vocab_size)
        return m2_errorf(err, M2_ECONFIG, "%s: %s has %d tokens, the base's vocabulary only %d", key, path, n,
                         mc->vocab_size);
    return 0;
}

int m2_check_run_inputs(const m2_run_config *cfg, const char *const *stages, int n, int fresh, m2_err *err) {
    int tiny = !strcmp(cfg->model_base, "tiny");
    m2_model_config mc;
    int have_mc = 0;
    if (!tiny && read_by(stages, n, "model.base")) {
        if (check_base(cfg->model_base, &mc, err)) return -1;
        have_mc = 1;
        if (!cfg->model_tokenizer[0]) {
            char tp[4096];
            m2_bundle_tokenizer_path(cfg->model_base, tp, sizeof tp);
            if (check_tokenizer("model.base", tp, &mc, err))
                return m2_err_prefix(err, "no tokenizer with the base (set model.tokenizer): ");
        }
    }
    if (cfg->model_tokenizer[0] && read_by(stages, n, "model.tokenizer") &&
        check_tokenizer("model.tokenizer", cfg->model_tokenizer, have_mc ? &mc : NULL, err))
        return -1;
    if (read_by(stages, n, "data.path") && pw_data_check(cfg, err)) return -1;
    if (cfg->env_data[0] && read_by(stages, n, "env.data")) {
        m2_env *env;
        if (m2_env_create(cfg->env_name, cfg->env_data, &env, err)) return m2_err_prefix(err, "env.data: ");
        m2_env_destroy(env);
    }
    if (fresh && cfg->run_reuse_from[0]) {
        char p[1200];
        snprintf(p, sizeof p, "%s/config.yaml", cfg->run_reuse_from);
        if (!m2_path_exists(p))
            return m2_errorf(err, M2_ENOTFOUND, "run.reuse_from: %s is not a run folder (no config.yaml)",
                             cfg->run_reuse_from);
        m2_run_config *src = malloc(sizeof *src);
        if (!src) return m2_errorf(err, M2_ENOMEM, "out of memory");
        int rc = m2_run_config_load(src, p, 0, NULL, err);
        free(src);
        if (rc) return m2_err_prefix(err, "run.reuse_from: ");
    }
    return 0;
}
