#include "pipe/run_config.h"
#include <stddef.h>
#include <string.h>
#include "env/env.h"

#define M2_ENUM_NAME_(id, name) name,
const char *const m2_method_names[M2_N_METHODS] = {M2_METHOD_LIST(M2_ENUM_NAME_)};
const char *const m2_stage_names[M2_N_STAGES] = {M2_STAGE_LIST(M2_ENUM_NAME_)};
const char *const m2_run_progress_names[M2_N_RUN_PROGRESS] = {M2_RUN_PROGRESS_LIST(M2_ENUM_NAME_)};
const char *const m2_base_dtype_names[M2_N_BASE_DTYPES] = {M2_BASE_DTYPE_LIST(M2_ENUM_NAME_)};
const char *const m2_offline_anchor_names[M2_N_OFFLINE_ANCHORS] = {M2_OFFLINE_ANCHOR_LIST(M2_ENUM_NAME_)};
const char *const m2_teamtr_variant_names[M2_N_TEAMTR_VARIANTS] = {M2_TEAMTR_VARIANT_LIST(M2_ENUM_NAME_)};
const char *const m2_action_mode_names[M2_N_ACTION_MODES] = {M2_ACTION_MODE_LIST(M2_ENUM_NAME_)};

#define M2_CFG_ROW(T, field_, key_, def_, lo_, hi_, choices_, help_) \
    {.key = key_, .type = M2_CFG_##T, .offset = offsetof(m2_run_config, field_), .def = def_, .min = lo_, \
     .max = hi_, .choices = choices_, .help = help_},

static const m2_cfg_field run_fields[] = {
    M2_RUN_CONFIG_KEYS(M2_CFG_ROW)
};

static const m2_cfg_schema run_schema = {
    .fields = run_fields, .n_fields = (int)(sizeof run_fields / sizeof run_fields[0]),
    .struct_size = sizeof(m2_run_config),
};

const m2_cfg_schema *m2_run_config_schema(void) { return &run_schema; }

int m2_run_config_check(const m2_run_config *c, m2_err *err) {
    if (!strcmp(c->model_base, "tiny")) {
        if (c->model_tiny_dim % c->model_tiny_heads)
            return m2_errorf(err, M2_ECONFIG, "model.tiny.dim (%lld) must be divisible by model.tiny.heads (%lld)",
                             (long long)c->model_tiny_dim, (long long)c->model_tiny_heads);
        if ((c->model_tiny_dim / c->model_tiny_heads) % 2)
            return m2_errorf(err, M2_ECONFIG, "model.tiny.dim / model.tiny.heads must be even (RoPE rotates pairs)");
        if (c->model_tiny_heads % c->model_tiny_kv_heads)
            return m2_errorf(err, M2_ECONFIG, "model.tiny.heads (%lld) must be divisible by model.tiny.kv_heads (%lld)",
                             (long long)c->model_tiny_heads, (long long)c->model_tiny_kv_heads);
        if (c->pretrain_seq_len > c->model_max_seq_len)
            return m2_errorf(err, M2_ECONFIG, "pretrain.seq_len (%lld) exceeds model.max_seq_len (%lld)",
                             (long long)c->pretrain_seq_len, (long long)c->model_max_seq_len);
    }
    if (!m2_env_find(c->env_name)) {
        char known[256] = "";
        for (int i = 0; i < m2_env_count(); i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", m2_env_at(i)->name);
        return m2_errorf(err, M2_ECONFIG, "env.name: unknown environment '%s' (known: %s)", c->env_name, known);
    }
    if (!*c->model_base) return m2_errorf(err, M2_ECONFIG, "model.base: empty (use \"tiny\" or a model path)");
    if (!*c->run_out_dir) return m2_errorf(err, M2_ECONFIG, "run.out_dir: empty");
    if (strchr(c->run_name, '/') || !strcmp(c->run_name, ".") || !strcmp(c->run_name, ".."))
        return m2_errorf(err, M2_ECONFIG, "run.name: '%s' must be a plain folder name (no '/')", c->run_name);
    if (m2_cfg_list_count(c->lora_sys1_targets) == 0)
        return m2_errorf(err, M2_ECONFIG, "lora.sys1.targets: at least one projection is needed");
    if (m2_cfg_list_count(c->lora_sys2_targets) == 0)
        return m2_errorf(err, M2_ECONFIG, "lora.sys2.targets: at least one projection is needed");
    if (m2_cfg_list_count(c->eval_splits) == 0 && m2_cfg_list_has(c->run_stages, "eval"))
        return m2_errorf(err, M2_ECONFIG, "eval.splits: empty but run.stages includes eval");
    return 0;
}

int m2_run_config_load(m2_run_config *cfg, const char *path, int n_overrides, char *const *overrides, m2_err *err) {
    const m2_cfg_schema *s = m2_run_config_schema();
    if (m2_cfg_defaults(s, cfg, err) != 0) return -1;
    if (path && m2_cfg_apply_file(s, cfg, path, err) != 0) return -1;
    for (int i = 0; i < n_overrides; i++)
        if (m2_cfg_override(s, cfg, overrides[i], err) != 0) return -1;
    if (!*cfg->run_name && path) {
        /* Default run name: the config file's base name without extension. */
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        size_t n = strcspn(b, ".");
        if (n == 0) n = strlen(b);
        if (n >= sizeof cfg->run_name) n = sizeof cfg->run_name - 1;
        memcpy(cfg->run_name, b, n);
        cfg->run_name[n] = 0;
    }
    if (!*cfg->run_name) snprintf(cfg->run_name, sizeof cfg->run_name, "run");
    return m2_run_config_check(cfg, err);
}

