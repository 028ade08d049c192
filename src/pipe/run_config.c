#include "pipe/run_config.h"
#include <stddef.h>
#include <string.h>

#define M2_CFG_ROW(T, name, key, def, lo, hi, choices, help) \
    {key, M2_CFG_##T, offsetof(m2_run_config, name), def, lo, hi, choices, help},

static const m2_cfg_field run_fields[] = {
    M2_RUN_CONFIG_KEYS(M2_CFG_ROW)
};

static const m2_cfg_schema run_schema = {
    run_fields, (int)(sizeof run_fields / sizeof run_fields[0]), sizeof(m2_run_config)
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

int m2_run_stage_plan(const m2_run_config *cfg, const char **stages, int cap) {
    static const char *all[] = {"pretrain", "data", "sys1_sft", "sys2_warmup", "sys2_offline", "sys2_online",
                                "eval", "report"};
    int n = 0;
    if (*cfg->run_stages) {
        char item[64];
        for (int i = 0; m2_cfg_list_item(cfg->run_stages, i, item, sizeof item) && n < cap; i++)
            for (int k = 0; k < 8; k++)
                if (!strcmp(all[k], item)) stages[n++] = all[k];
        return n;
    }
    const char *m = cfg->method;
    int tiny = !strcmp(cfg->model_base, "tiny");
    for (int k = 0; k < 8 && n < cap; k++) {
        const char *st = all[k];
        if (!strcmp(st, "pretrain") && !tiny) continue;
        /* flat: one policy acting on whole tasks, no planner to fine-tune. */
        if (!strcmp(st, "sys1_sft") && !strcmp(m, "flat")) continue;
        /* sft_only: System 2 stops after its warm-up SFT. */
        if ((!strcmp(st, "sys2_offline") || !strcmp(st, "sys2_online")) && !strcmp(m, "sft_only")) continue;
        /* offline_only: System 2 stops after offline RL (the "offline" point of online vs offline). */
        if (!strcmp(st, "sys2_online") && !strcmp(m, "offline_only")) continue;
        /* rl_only: System 2 starts RL from the base, without the warm-up SFT. */
        if (!strcmp(st, "sys2_warmup") && !strcmp(m, "rl_only")) continue;
        stages[n++] = st;
    }
    return n;
}

double m2_run_offline_lambda(const m2_run_config *cfg) {
    return !strcmp(cfg->method, "no_anchor") ? 0.0 : cfg->sys2_offline_lambda;
}

double m2_run_online_eta(const m2_run_config *cfg) {
    return !strcmp(cfg->method, "no_kl") ? 0.0 : cfg->sys2_online_eta;
}

/* ---------------------------------------------------------------- stage reuse */

static const char *const plan_order[] = {"pretrain", "data", "sys1_sft", "sys2_warmup", "sys2_offline",
                                          "sys2_online", "eval", "report"};

static int order_of(const char *stage) {
    for (int i = 0; i < 8; i++) if (!strcmp(plan_order[i], stage)) return i;
    return 8;
}

/* The first stage (index in plan_order) that reads a key: everything a later stage alone reads may
 * differ between two runs that share the stages before it. Unknown prefixes count as read by the
 * first stage (conservative). run.* keys other than the seed only steer the run (folder, threads,
 * logging) and never its numbers; method is judged by the role table below. */
static int first_reader(const char *key) {
    static const struct { const char *prefix; const char *stage; } map[] = {
        {"lora.sys1.", "sys1_sft"}, {"sys1.", "sys1_sft"},
        {"lora.sys2.", "sys2_warmup"}, {"sys2.warmup.", "sys2_warmup"},
        {"heads.", "sys2_offline"}, {"sys2.offline.", "sys2_offline"},
        {"sys2.online.", "sys2_online"}, {"eval.", "eval"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strncmp(key, map[i].prefix, strlen(map[i].prefix))) return order_of(map[i].stage);
    return 0;
}

/* What a method does in a stage, as a label: two methods with the same label run the stage the same
 * way (given the same earlier stages and config). */
static const char *stage_role(const char *stage, const char *m) {
    int o = order_of(stage);
    if (o <= 1) return "common";                                   /* pretrain, data */
    if (!strcmp(m, "shared_adapter")) return "shared";
    if (!strcmp(m, "flat")) return "flat";
    if (!strcmp(stage, "sys2_offline") && !strcmp(m, "no_anchor")) return "no_anchor";
    if (!strcmp(stage, "sys2_online") && !strcmp(m, "no_kl")) return "no_kl";
    if (o >= 6) return m;                                          /* eval, report: each method its own */
    return "sys";
}

/* Keys that never change a number of the run: run.* but the seed, and model.recompute (the same
 * gradients bit for bit: tests/test_pipe_train.c recompute_changes_nothing). */
static int is_run_key(const char *key) {
    return (!strncmp(key, "run.", 4) && strcmp(key, "run.seed")) || !strcmp(key, "model.recompute");
}

int m2_run_reusable_prefix(const m2_run_config *src_cfg, const m2_run_config *cfg, const char **stages, int cap,
                           char *why, size_t why_cap) {
    const char *a[16], *b[16];
    int na = m2_run_stage_plan(src_cfg, a, 16), nb = m2_run_stage_plan(cfg, b, 16), n = 0;
    const m2_cfg_schema *s = m2_run_config_schema();
    if (why && why_cap) why[0] = 0;
    /* the first stage whose keys differ bounds the prefix */
    int first_diff = 8;
    const char *diff_key = NULL;
    for (int i = 0; i < s->n_fields; i++) {
        const m2_cfg_field *f = &s->fields[i];
        if (!strcmp(f->key, "method") || is_run_key(f->key)) continue;
        char va[M2_CFG_STR_MAX + 64], vb[M2_CFG_STR_MAX + 64];
        m2_cfg_format_value(f, src_cfg, va, sizeof va);
        m2_cfg_format_value(f, cfg, vb, sizeof vb);
        int r = first_reader(f->key);
        if (strcmp(va, vb) && r < first_diff) { first_diff = r; diff_key = f->key; }
    }
    while (n < na && n < nb && n < cap && !strcmp(a[n], b[n])) {
        if (order_of(b[n]) >= first_diff) {
            if (why) snprintf(why, why_cap, "%s: the two configs differ in %s", b[n], diff_key);
            break;
        }
        if (strcmp(stage_role(b[n], src_cfg->method), stage_role(b[n], cfg->method))) {
            if (why) snprintf(why, why_cap, "%s: method %s runs it differently from %s", b[n], cfg->method, src_cfg->method);
            break;
        }
        stages[n] = b[n];
        n++;
    }
    if (why && !why[0] && n < nb) {
        if (n < na) snprintf(why, why_cap, "%s: the plans differ here (%s vs %s)", b[n], a[n], b[n]);
        else snprintf(why, why_cap, "%s: not in the plan of %s", b[n], src_cfg->method);
    }
    return n;
}
