/* PEFT adapter folders, llama.cpp LoRA GGUFs and critic-head files. */
#include "io/peft.h"
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"
#include "io/gguf.h"
#include "io/model_load.h"
#include "io/safetensors.h"

/* Target bit i <-> HF module name and GGUF tensor stem (same order as M2_LORA_*). */
static const char *hf_modules[M2_LORA_N_TARGETS] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

static int module_bit(const char *s) {
    for (int i = 0; i < M2_LORA_N_TARGETS; i++)
        if (!strcmp(s, hf_modules[i])) return i;
    return -1;
}

int m2_peft_config_parse(const char *json, size_t len, const char *file, m2_lora_config *c,
                         char *base_model, int base_cap, m2_err *err) {
    memset(c, 0, sizeof *c);
    if (base_model && base_cap > 0) base_model[0] = 0;
    cJSON *r = cJSON_ParseWithLength(json, len);
    if (!r) return m2_errorf(err, M2_ECONFIG, "%s: not valid JSON", file);
    int rc = 0;
    const cJSON *j;
#define FAIL(...) do { rc = m2_errorf(err, M2_ECONFIG, __VA_ARGS__); goto done; } while (0)
#define UNSUP(...) do { rc = m2_errorf(err, M2_EUNSUPPORTED, __VA_ARGS__); goto done; } while (0)
    if (!cJSON_IsObject(r)) FAIL("%s: not a JSON object", file);
    j = cJSON_GetObjectItemCaseSensitive(r, "peft_type");
    if (j && !(cJSON_IsString(j) && !strcmp(j->valuestring, "LORA"))) UNSUP("%s: peft_type must be \"LORA\"", file);
    j = cJSON_GetObjectItemCaseSensitive(r, "r");
    if (!cJSON_IsNumber(j) || j->valuedouble < 1 || j->valuedouble > 65536 || floor(j->valuedouble) != j->valuedouble)
        FAIL("%s: \"r\" must be an integer in 1..65536", file);
    c->rank = (int)j->valuedouble;
    j = cJSON_GetObjectItemCaseSensitive(r, "lora_alpha");
    if (!j || cJSON_IsNull(j)) c->alpha = (float)c->rank;   /* PEFT's default is 8; absent means scale 1 here */
    else if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || fabs(j->valuedouble) > 1e6) FAIL("%s: \"lora_alpha\" is not a number", file);
    else c->alpha = (float)j->valuedouble;
    j = cJSON_GetObjectItemCaseSensitive(r, "lora_dropout");
    if (j && !cJSON_IsNull(j)) {
        if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0 && j->valuedouble < 1)) FAIL("%s: \"lora_dropout\" must be in [0, 1)", file);
        c->dropout = (float)j->valuedouble;
    }
    j = cJSON_GetObjectItemCaseSensitive(r, "use_rslora");
    if (cJSON_IsTrue(j)) c->alpha *= sqrtf((float)c->rank);   /* rsLoRA scale alpha/sqrt(r) = (alpha sqrt r)/r */
    static const char *must_false[] = {"use_dora", "fan_in_fan_out", "lora_bias"};
    for (int i = 0; i < 3; i++) {
        j = cJSON_GetObjectItemCaseSensitive(r, must_false[i]);
        if (j && !cJSON_IsNull(j) && !cJSON_IsFalse(j)) UNSUP("%s: \"%s\" must be false", file, must_false[i]);
    }
    static const char *must_empty[] = {"rank_pattern", "alpha_pattern"};
    for (int i = 0; i < 2; i++) {
        j = cJSON_GetObjectItemCaseSensitive(r, must_empty[i]);
        if (j && !cJSON_IsNull(j) && !(cJSON_IsObject(j) && !j->child)) UNSUP("%s: \"%s\" is not supported (must be empty)", file, must_empty[i]);
    }
    static const char *must_null[] = {"layers_to_transform", "modules_to_save", "layer_replication",
                                      "target_parameters", "trainable_token_indices"};
    for (int i = 0; i < 5; i++) {
        j = cJSON_GetObjectItemCaseSensitive(r, must_null[i]);
        if (j && !cJSON_IsNull(j) && !(cJSON_IsArray(j) && !j->child)) UNSUP("%s: \"%s\" is not supported (must be null)", file, must_null[i]);
    }
    j = cJSON_GetObjectItemCaseSensitive(r, "bias");
    if (j && !(cJSON_IsString(j) && !strcmp(j->valuestring, "none"))) UNSUP("%s: \"bias\" must be \"none\"", file);
    j = cJSON_GetObjectItemCaseSensitive(r, "task_type");
    if (j && !cJSON_IsNull(j) && !(cJSON_IsString(j) && !strcmp(j->valuestring, "CAUSAL_LM"))) UNSUP("%s: \"task_type\" must be \"CAUSAL_LM\"", file);
    j = cJSON_GetObjectItemCaseSensitive(r, "target_modules");
    if (cJSON_IsString(j)) {
        if (!strcmp(j->valuestring, "all-linear")) c->targets = M2_LORA_ALL;
        else if (module_bit(j->valuestring) >= 0) c->targets = 1u << module_bit(j->valuestring);
        else UNSUP("%s: target_modules \"%.64s\" (a regex) is not supported; list module names", file, j->valuestring);
    } else if (cJSON_IsArray(j)) {
        for (const cJSON *e = j->child; e; e = e->next) {
            if (!cJSON_IsString(e)) FAIL("%s: target_modules holds a non-string", file);
            int b = module_bit(e->valuestring);
            if (b < 0) UNSUP("%s: target module \"%.64s\" is not supported (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)", file, e->valuestring);
            c->targets |= 1u << b;
        }
        if (!c->targets) FAIL("%s: target_modules is empty", file);
    } else FAIL("%s: \"target_modules\" must be a list of module names", file);
    j = cJSON_GetObjectItemCaseSensitive(r, "base_model_name_or_path");
    if (base_model && base_cap > 0 && cJSON_IsString(j)) snprintf(base_model, (size_t)base_cap, "%s", j->valuestring);
#undef FAIL
#undef UNSUP
done:
    cJSON_Delete(r);
    return rc;
}

char *m2_peft_config_json(const m2_lora_config *c, const char *base_model) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddObjectToObject(r, "alpha_pattern");
    cJSON_AddNullToObject(r, "auto_mapping");
    if (base_model) cJSON_AddStringToObject(r, "base_model_name_or_path", base_model);
    else cJSON_AddNullToObject(r, "base_model_name_or_path");
    cJSON_AddStringToObject(r, "bias", "none");
    cJSON_AddBoolToObject(r, "fan_in_fan_out", 0);
    cJSON_AddBoolToObject(r, "inference_mode", 1);
    cJSON_AddBoolToObject(r, "init_lora_weights", 1);
    cJSON_AddNullToObject(r, "layer_replication");
    cJSON_AddNullToObject(r, "layers_pattern");
    cJSON_AddNullToObject(r, "layers_to_transform");
    cJSON_AddObjectToObject(r, "loftq_config");
    cJSON_AddNumberToObject(r, "lora_alpha", c->alpha);
    cJSON_AddNumberToObject(r, "lora_dropout", c->dropout);
    cJSON_AddNullToObject(r, "megatron_config");
    cJSON_AddStringToObject(r, "megatron_core", "megatron.core");
    cJSON_AddNullToObject(r, "modules_to_save");
    cJSON_AddStringToObject(r, "peft_type", "LORA");
    cJSON_AddNumberToObject(r, "r", c->rank);
    cJSON_AddObjectToObject(r, "rank_pattern");
    cJSON_AddNullToObject(r, "revision");
    cJSON *t = cJSON_AddArrayToObject(r, "target_modules");
    for (int i = 0; i < M2_LORA_N_TARGETS; i++)
        if (c->targets & (1u << i)) cJSON_AddItemToArray(t, cJSON_CreateString(hf_modules[i]));
    cJSON_AddStringToObject(r, "task_type", "CAUSAL_LM");
    cJSON_AddBoolToObject(r, "use_dora", 0);
    cJSON_AddBoolToObject(r, "use_rslora", 0);
    char *s = cJSON_Print(r);
    cJSON_Delete(r);
    return s;
}

/* "blk.N.attn_q.weight.lora_a" -> PEFT "base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight" */
static int peft_name(const char *engine_name, char *out, int cap) {
    char base[128], hf[160];
    size_t n = strlen(engine_name);
    if (n < 8 || n - 7 >= sizeof base) return -1;
    memcpy(base, engine_name, n - 7);
    base[n - 7] = 0;
    char ab = engine_name[n - 1];
    if (strncmp(engine_name + n - 7, ".lora_", 6) || (ab != 'a' && ab != 'b')) return -1;
    if (m2_tensor_name_to_hf(base, hf, sizeof hf)) return -1;
    size_t hl = strlen(hf);
    if (hl < 7 || strcmp(hf + hl - 7, ".weight")) return -1;
    hf[hl - 7] = 0;
    int w = snprintf(out, (size_t)cap, "base_model.model.%s.lora_%c.weight", hf, ab == 'a' ? 'A' : 'B');
    return w < cap ? 0 : -1;
}

/* The inverse: PEFT name -> engine adapter tensor name. */
static int engine_name_from_peft(const char *p, char *out, int cap) {
    const char *pre = "base_model.model.";
    size_t pl = strlen(pre), n = strlen(p);
    if (strncmp(p, pre, pl) || n < pl + 15) return -1;
    const char *suf = p + n - 14;   /* ".lora_A.weight" */
    if (strcmp(suf, ".lora_A.weight") && strcmp(suf, ".lora_B.weight")) return -1;
    char hf[160], g[128];
    size_t ml = (size_t)(suf - (p + pl));
    if (ml + 8 >= sizeof hf) return -1;
    memcpy(hf, p + pl, ml);
    memcpy(hf + ml, ".weight", 8);
    if (m2_tensor_name_from_hf(hf, g, sizeof g)) return -1;
    int w = snprintf(out, (size_t)cap, "%s.lora_%c", g, suf[6] == 'A' ? 'a' : 'b');
    return w < cap ? 0 : -1;
}

int m2_peft_save(const m2_model *m, const m2_adapter *a, const char *dir, const char *base_model, m2_err *err) {
    (void)m;
    if (m2_mkdir_p(dir, err)) return -1;
    m2_st_writer *w = m2_st_writer_new();
    if (!w) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_st_set_meta(w, "format", "pt");
    int n = m2_adapter_tensor_count(a);
    for (int i = 0; i < n && !rc; i++) {
        char en[128], pn[256];
        int rows, cols;
        float *data;
        m2_adapter_tensor_info(a, i, en, sizeof en, &rows, &cols, &data);
        if (peft_name(en, pn, sizeof pn)) { rc = m2_errorf(err, M2_EINVAL, "%s: no PEFT name for adapter tensor '%s'", dir, en); break; }
        int64_t shape[2] = {rows, cols};
        rc = m2_st_add(w, pn, M2_GGML_F32, 2, shape, data, (uint64_t)rows * cols * sizeof(float), err);
    }
    char p[4200];
    if (!rc) {
        snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
        rc = m2_st_write(w, p, err);
    }
    m2_st_writer_free(w);
    if (!rc) {
        char *js = m2_peft_config_json(&a->cfg, base_model);
        snprintf(p, sizeof p, "%s/adapter_config.json", dir);
        rc = js ? m2_write_file_atomic(p, js, strlen(js), err) : m2_errorf(err, M2_ENOMEM, "out of memory");
        free(js);
    }
    return rc;
}

/* Copies (converting, and un-permuting q/k lora_b rows from GGUF order when heads > 0) into
 * adapter tensor `en`, checking its shape. */
static int fill_adapter(m2_adapter *a, const char *en, uint32_t type, const void *data, int64_t rows, int64_t cols,
                        int heads, int head_dim, const char *file, const char *fname, m2_err *err) {
    int r, c;
    float *dst = m2_adapter_tensor(a, en, &r, &c);
    if (!dst) return m2_errorf(err, M2_EFORMAT, "%s: tensor '%s' does not belong to this adapter (wrong base model?)", file, fname);
    if (rows != r || cols != c)
        return m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' is [%" PRId64 ", %" PRId64 "], the base model needs [%d, %d]", file, fname, rows, cols, r, c);
    size_t n = (size_t)r * c;
    float *tmp = malloc(n * sizeof(float) + 1);
    if (!tmp) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_ggml_dequantize(type, data, tmp, n, err);
    if (!rc) {
        if (heads) m2_rope_permute_rows(tmp, dst, heads, head_dim, (size_t)c * sizeof(float), 0);
        else memcpy(dst, tmp, n * sizeof(float));
    }
    free(tmp);
    if (rc) return m2_err_prefix(err, "%s: tensor '%s': ", file, fname);
    return 0;
}

static void base_name(const char *path, char *out, int cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    const char *dot = NULL;
    for (size_t i = b; i < n; i++) if (path[i] == '.') dot = path + i;
    size_t e = dot && dot > path + b ? (size_t)(dot - path) : n;
    snprintf(out, (size_t)cap, "%.*s", (int)(e - b), path + b);
}

m2_adapter *m2_peft_load(m2_model *m, const char *dir, const char *name, m2_err *err) {
    char p[4200], *text;
    size_t len;
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    if (m2_read_file(p, &text, &len, err)) return NULL;
    m2_lora_config c;
    int rc = m2_peft_config_parse(text, len, p, &c, NULL, 0, err);
    free(text);
    if (rc) return NULL;
    if (name) snprintf(c.name, sizeof c.name, "%s", name);
    else base_name(dir, c.name, sizeof c.name);
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    m2_safetensors *st = m2_st_open(p, err);
    if (!st) return NULL;
    m2_adapter *a = m2_adapter_add(m, &c, 0, err);
    if (!a) { m2_err_prefix(err, "%s: ", dir); m2_st_close(st); return NULL; }
    int want = m2_adapter_tensor_count(a);
    rc = 0;
    for (size_t i = 0; i < st->n_tensors && !rc; i++) {
        const m2_st_tensor *t = &st->tensors[i];
        char en[160];
        if (engine_name_from_peft(t->name, en, sizeof en))
            rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s' is not a LoRA factor of a supported module", p, t->name);
        else if (t->n_dims != 2 || t->ggml_type == UINT32_MAX)
            rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' must be a 2-D F32/F16/BF16 matrix", p, t->name);
        else rc = fill_adapter(a, en, t->ggml_type, t->data, t->shape[0], t->shape[1], 0, 0, p, t->name, err);
    }
    if (!rc && (int)st->n_tensors != want)
        rc = m2_errorf(err, M2_EFORMAT, "%s: %zu LoRA tensors, the config's targets over %d layers need %d", p, st->n_tensors, m->cfg.n_layers, want);
    m2_st_close(st);
    if (rc) { m2_adapter_remove(m, a, NULL); return NULL; }
    return a;
}

static int qk_heads(const m2_model *m, const char *engine_name, int is_b) {
    if (!is_b || m->cfg.family == M2_FAMILY_QWEN2) return 0;
    if (strstr(engine_name, ".attn_q.weight.")) return m->cfg.n_heads;
    if (strstr(engine_name, ".attn_k.weight.")) return m->cfg.n_kv_heads;
    return 0;
}

int m2_lora_gguf_save(const m2_model *m, const m2_adapter *a, const char *path, m2_err *err) {
    m2_gguf_writer *w = m2_gguf_writer_new();
    if (!w) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_gguf_set_str(w, "general.type", "adapter");
    rc |= m2_gguf_set_str(w, "general.architecture", m->cfg.family == M2_FAMILY_QWEN2 ? "qwen2" : "llama");
    rc |= m2_gguf_set_str(w, "general.name", a->cfg.name);
    rc |= m2_gguf_set_str(w, "adapter.type", "lora");
    rc |= m2_gguf_set_f32(w, "adapter.lora.alpha", a->cfg.alpha);
    rc |= m2_gguf_set_u32(w, "general.file_type", 0);
    if (rc) { m2_gguf_writer_free(w); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    int n = m2_adapter_tensor_count(a);
    float *perm = NULL;
    for (int i = 0; i < n && !rc; i++) {
        char en[128];
        int rows, cols;
        float *data;
        m2_adapter_tensor_info(a, i, en, sizeof en, &rows, &cols, &data);
        int64_t ne[2] = {cols, rows};
        int heads = qk_heads(m, en, en[strlen(en) - 1] == 'b');
        if (heads) {
            free(perm);
            perm = malloc((size_t)rows * cols * sizeof(float));
            if (!perm) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
            m2_rope_permute_rows(data, perm, heads, rows / heads, (size_t)cols * sizeof(float), 1);
            rc = m2_gguf_add_tensor_f32(w, en, M2_GGML_F32, 2, ne, perm, err);   /* keeps its own copy */
        } else rc = m2_gguf_add_tensor(w, en, M2_GGML_F32, 2, ne, data, (uint64_t)rows * cols * sizeof(float), err);
    }
    free(perm);
    if (!rc) rc = m2_gguf_writer_write(w, path, err);
    else m2_err_prefix(err, "%s: ", path);
    m2_gguf_writer_free(w);
    return rc;
}

m2_adapter *m2_lora_gguf_load(m2_model *m, const char *path, const char *name, m2_err *err) {
    m2_gguf *g = m2_gguf_open(path, err);
    if (!g) return NULL;
    m2_adapter *a = NULL;
    const char *s;
    int rc = 0;
    if (!(s = m2_gguf_get_str(g, "general.type", err)) || strcmp(s, "adapter")) {
        if (s) m2_errorf(err, M2_EFORMAT, "%s: general.type is \"%s\", expected \"adapter\"", path, s);
        goto done;
    }
    if (!(s = m2_gguf_get_str(g, "adapter.type", err)) || strcmp(s, "lora")) {
        if (s) m2_errorf(err, M2_EUNSUPPORTED, "%s: adapter.type is \"%s\", expected \"lora\"", path, s);
        goto done;
    }
    const char *want_arch = m->cfg.family == M2_FAMILY_QWEN2 ? "qwen2" : "llama";
    if (!(s = m2_gguf_get_str(g, "general.architecture", err))) goto done;
    if (strcmp(s, want_arch)) { m2_errorf(err, M2_EFORMAT, "%s: adapter for \"%s\", the base model is \"%s\"", path, s, want_arch); goto done; }
    float alpha = m2_gguf_f32_or(g, "adapter.lora.alpha", 0.f);
    m2_lora_config c;
    memset(&c, 0, sizeof c);
    if (name) snprintf(c.name, sizeof c.name, "%s", name);
    else base_name(path, c.name, sizeof c.name);
    /* rank and targets from the tensors */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const m2_gguf_tensor *t = &g->tensors[i];
        size_t n = strlen(t->name);
        int layer = -1;
        char stem[64];
        if (n < 8 || (strcmp(t->name + n - 7, ".lora_a") && strcmp(t->name + n - 7, ".lora_b")) ||
            sscanf(t->name, "blk.%d.%63[a-z_].weight", &layer, stem) != 2) {
            m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s' is not a LoRA factor (blk.N.<proj>.weight.lora_a/b)", path, t->name);
            goto done;
        }
        static const char *stems[M2_LORA_N_TARGETS] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
        int bit = -1;
        for (int k = 0; k < M2_LORA_N_TARGETS; k++) if (!strcmp(stem, stems[k])) bit = k;
        if (bit < 0) { m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s' targets an unsupported module", path, t->name); goto done; }
        c.targets |= 1u << bit;
        if (t->n_dims != 2) { m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' is not 2-D", path, t->name); goto done; }
        int rank = t->name[n - 1] == 'a' ? (int)(t->ne[1] < 65536 ? t->ne[1] : 0) : (int)(t->ne[0] < 65536 ? t->ne[0] : 0);
        if (!c.rank) c.rank = rank;
        if (rank != c.rank || rank <= 0) { m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' has rank %d, others %d (all factors must share one rank)", path, t->name, rank, c.rank); goto done; }
    }
    if (!c.targets) { m2_errorf(err, M2_EFORMAT, "%s: no LoRA tensors", path); goto done; }
    c.alpha = alpha != 0.f ? alpha : (float)c.rank;   /* llama.cpp: alpha 0 means scale 1 */
    if (!(a = m2_adapter_add(m, &c, 0, err))) { m2_err_prefix(err, "%s: ", path); goto done; }
    for (uint64_t i = 0; i < g->n_tensors && !rc; i++) {
        const m2_gguf_tensor *t = &g->tensors[i];
        int heads = qk_heads(m, t->name, t->name[strlen(t->name) - 1] == 'b');
        rc = fill_adapter(a, t->name, t->type, t->data, t->ne[1], t->ne[0], heads, m->cfg.head_dim, path, t->name, err);
    }
    if (!rc && (int)g->n_tensors != m2_adapter_tensor_count(a))
        rc = m2_errorf(err, M2_EFORMAT, "%s: %" PRIu64 " LoRA tensors, %d layers x targets need %d", path, g->n_tensors, m->cfg.n_layers, m2_adapter_tensor_count(a));
    if (rc) { m2_adapter_remove(m, a, NULL); a = NULL; }
done:
    m2_gguf_close(g);
    return a;
}

m2_adapter *m2_adapter_load(m2_model *m, const char *path, const char *name, m2_err *err) {
    struct stat s;
    if (stat(path, &s) != 0) { m2_errorf(err, M2_EIO, "%s: no such adapter file or folder", path); return NULL; }
    if (S_ISDIR(s.st_mode)) return m2_peft_load(m, path, name, err);
    if (m2_is_gguf(path)) return m2_lora_gguf_load(m, path, name, err);
    m2_errorf(err, M2_EFORMAT, "%s: an adapter is a PEFT folder or a LoRA GGUF", path);
    return NULL;
}

/* ---- critic heads ---- */

int m2_heads_save(m2_head *const *heads, int n, const char *path, m2_err *err) {
    m2_st_writer *w = m2_st_writer_new();
    if (!w) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_st_set_meta(w, "format", "multi2-heads");
    char list[4096] = "", key[160], val[32];
    for (int i = 0; i < n && !rc; i++) {
        const m2_head *h = heads[i];
        if (!h->name[0] || strchr(h->name, ',')) { rc = m2_errorf(err, M2_EINVAL, "%s: head name '%s' cannot be saved", path, h->name); break; }
        size_t ll = strlen(list);
        snprintf(list + ll, sizeof list - ll, "%s%s", i ? "," : "", h->name);
        snprintf(key, sizeof key, "%s.grad_to_body", h->name);
        snprintf(val, sizeof val, "%d", h->grad_to_body);
        rc |= m2_st_set_meta(w, key, val);
        int64_t H = h->H, F = h->F;
        for (int tgt = 0; tgt < 2 && !rc; tgt++) {
            const float *base = tgt ? h->target : h->params.w;
            const char *pre = tgt ? ".target" : "";
            struct { const char *n; int nd; int64_t s[2]; size_t off, cnt; } parts[] = {
                {"W1", 2, {F, H}, 0, (size_t)(F * H)},
                {"b1", 1, {F, 0}, (size_t)(F * H), (size_t)F},
                {"w2", 1, {F, 0}, (size_t)(F * H + F), (size_t)F},
                {"b2", 1, {1, 0}, (size_t)(F * H + 2 * F), 1}};
            for (int k = 0; k < 4 && !rc; k++) {
                snprintf(key, sizeof key, "%s%s.%s", h->name, pre, parts[k].n);
                rc = m2_st_add(w, key, M2_GGML_F32, parts[k].nd, parts[k].s, base + parts[k].off, parts[k].cnt * sizeof(float), err);
            }
        }
    }
    if (!rc) rc = m2_st_set_meta(w, "heads", list);
    if (!rc) rc = m2_st_write(w, path, err);
    else m2_err_prefix(err, "%s: ", path);
    m2_st_writer_free(w);
    return rc;
}

int m2_heads_load(m2_model *m, const char *path, m2_err *err) {
    m2_safetensors *st = m2_st_open(path, err);
    if (!st) return -1;
    int rc = 0;
    const char *list = m2_st_meta(st, "heads");
    if (!list) { m2_st_close(st); return m2_errorf(err, M2_EFORMAT, "%s: no \"heads\" entry in __metadata__ (not a heads file)", path); }
    char *copy = strdup(list);
    if (!copy) { m2_st_close(st); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    int H = m->cfg.dim;
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name && !rc; name = strtok_r(NULL, ",", &save)) {
        char key[160];
        /* the head's hidden width F is W1's first dimension; its second must be the model's */
        snprintf(key, sizeof key, "%s.W1", name);
        const m2_st_tensor *w1 = m2_st_find(st, key);
        if (!w1) { rc = m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", path, key); break; }
        if (w1->n_dims != 2 || w1->shape[1] != (int64_t)H || w1->shape[0] < 1 || w1->shape[0] > ((int64_t)1 << 20)) {
            rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' must be [F, %d] (the model's hidden size %d), F in 1..1048576",
                           path, key, H, H);
            break;
        }
        int F = (int)w1->shape[0];
        m2_head *h = m2_head_find(m, name);
        if (h && h->F != F) {
            rc = m2_errorf(err, M2_ESHAPE, "%s: head '%s' has hidden width %d in the file, %d in the model", path, name, F, h->F);
            break;
        }
        if (!h && !(h = m2_head_add_sized(m, name, F, 0, err))) { rc = m2_err_prefix(err, "%s: ", path); break; }
        snprintf(key, sizeof key, "%s.grad_to_body", name);
        const char *g = m2_st_meta(st, key);
        if (g) h->grad_to_body = atoi(g) != 0;
        for (int tgt = 0; tgt < 2 && !rc; tgt++) {
            float *base = tgt ? h->target : h->params.w;
            const char *parts[] = {"W1", "b1", "w2", "b2"};
            size_t off[] = {0, (size_t)F * H, (size_t)F * H + F, (size_t)F * H + 2 * (size_t)F};
            uint64_t cnt[] = {(uint64_t)F * H, (uint64_t)F, (uint64_t)F, 1};
            for (int k = 0; k < 4 && !rc; k++) {
                snprintf(key, sizeof key, "%s%s.%s", name, tgt ? ".target" : "", parts[k]);
                const m2_st_tensor *t = m2_st_find(st, key);
                if (!t) rc = m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", path, key);
                else if (t->n_elems != cnt[k] || (k == 0 && (t->n_dims != 2 || t->shape[0] != (int64_t)F)))
                    rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' has %" PRIu64 " values, the head needs %" PRIu64 " (hidden width %d, model width %d)", path, key, t->n_elems, cnt[k], F, H);
                else rc = m2_st_tensor_to_f32(st, t, base + off[k], err);
            }
        }
    }
    free(copy);
    m2_st_close(st);
    return rc;
}
