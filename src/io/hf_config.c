/* HF config.json and GGUF architecture metadata <-> m2_hf_config. */
#include "io/hf_config.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

#define MAX_DIM (1 << 24)   /* bound on every size field: sane, and products stay in 64 bits */

static const char *model_types[] = {"llama", "mistral", "qwen2"};
static const char *classes[] = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};

const char *m2_hf_family_model_type(m2_hf_family f) { return (unsigned)f < 3 ? model_types[f] : "?"; }
const char *m2_hf_family_class(m2_hf_family f) { return (unsigned)f < 3 ? classes[f] : "?"; }
const char *m2_hf_family_gguf_arch(m2_hf_family f) { return f == M2_HF_QWEN2 ? "qwen2" : "llama"; }

int m2_hf_config_validate(const m2_hf_config *c, const char *file, m2_err *err) {
    struct { const char *name; int v; } ints[] = {
        {"vocab_size", c->vocab_size}, {"hidden_size", c->hidden_size},
        {"intermediate_size", c->intermediate_size}, {"num_hidden_layers", c->num_layers},
        {"num_attention_heads", c->num_heads}, {"num_key_value_heads", c->num_kv_heads},
        {"head_dim", c->head_dim}, {"max_position_embeddings", c->max_pos}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].v <= 0 || ints[i].v > MAX_DIM)
            return m2_errorf(err, M2_ECONFIG, "%s: %s = %d (must be 1..%d)", file, ints[i].name, ints[i].v, MAX_DIM);
    if (c->num_heads % c->num_kv_heads)
        return m2_errorf(err, M2_ECONFIG, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", file, c->num_heads, c->num_kv_heads);
    if (c->head_dim % 2) return m2_errorf(err, M2_ECONFIG, "%s: head_dim %d is odd (RoPE rotates pairs)", file, c->head_dim);
    if ((long long)c->head_dim * c->num_heads > MAX_DIM) return m2_errorf(err, M2_ECONFIG, "%s: head_dim * num_attention_heads too large", file);
    if (!(c->rms_norm_eps > 0 && c->rms_norm_eps < 1)) return m2_errorf(err, M2_ECONFIG, "%s: rms_norm_eps %g (must be in (0, 1))", file, c->rms_norm_eps);
    if (!(c->rope_theta > 0 && c->rope_theta < 1e12)) return m2_errorf(err, M2_ECONFIG, "%s: rope_theta %g (must be positive)", file, c->rope_theta);
    if (c->rope_llama3) {
        if (!(c->rope_factor >= 1 && c->rope_factor < 1e6)) return m2_errorf(err, M2_ECONFIG, "%s: rope_scaling.factor %g (must be >= 1)", file, c->rope_factor);
        if (!(c->rope_low_freq_factor > 0 && c->rope_high_freq_factor > c->rope_low_freq_factor && c->rope_high_freq_factor < 1e6))
            return m2_errorf(err, M2_ECONFIG, "%s: rope_scaling low_freq_factor %g / high_freq_factor %g (need 0 < low < high)", file,
                             c->rope_low_freq_factor, c->rope_high_freq_factor);
        if (c->rope_original_max_pos <= 0 || c->rope_original_max_pos > MAX_DIM)
            return m2_errorf(err, M2_ECONFIG, "%s: rope_scaling.original_max_position_embeddings %d", file, c->rope_original_max_pos);
    }
    return 0;
}

/* Field readers: -1 with a message naming the field when present but wrong. */
static int get_int(const cJSON *root, const char *key, int required, int def, int *out, const char *file, m2_err *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) {
        if (required) return m2_errorf(err, M2_ECONFIG, "%s: missing \"%s\"", file, key);
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(j) || floor(j->valuedouble) != j->valuedouble || fabs(j->valuedouble) > 2147483647.0)
        return m2_errorf(err, M2_ECONFIG, "%s: \"%s\" is not an integer", file, key);
    *out = (int)j->valuedouble;
    return 0;
}

static int get_num(const cJSON *root, const char *key, double def, double *out, const char *file, m2_err *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) { *out = def; return 0; }
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble)) return m2_errorf(err, M2_ECONFIG, "%s: \"%s\" is not a number", file, key);
    *out = j->valuedouble;
    return 0;
}

static int get_bool(const cJSON *root, const char *key, int def, int *out, const char *file, m2_err *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) { *out = def; return 0; }
    if (!cJSON_IsBool(j)) return m2_errorf(err, M2_ECONFIG, "%s: \"%s\" is not true/false", file, key);
    *out = cJSON_IsTrue(j);
    return 0;
}

/* bos/eos: an integer, a list of integers (first one), or null. */
static int get_token(const cJSON *root, const char *key, int *out, const char *file, m2_err *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = -1;
    if (!j || cJSON_IsNull(j)) return 0;
    if (cJSON_IsArray(j)) j = j->child;
    if (!j) return 0;
    if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > 2147483647.0 || floor(j->valuedouble) != j->valuedouble)
        return m2_errorf(err, M2_ECONFIG, "%s: \"%s\" is not a token id", file, key);
    *out = (int)j->valuedouble;
    return 0;
}

int m2_hf_config_parse(const char *json, size_t len, const char *file, m2_hf_config *c, m2_err *err) {
    memset(c, 0, sizeof *c);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return m2_errorf(err, M2_ECONFIG, "%s: not valid JSON", file);
    int rc = 0;
    if (!cJSON_IsObject(root)) { rc = m2_errorf(err, M2_ECONFIG, "%s: not a JSON object", file); goto done; }
    int fam = -1;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsArray(arch) && cJSON_IsString(arch->child)) {
        for (int i = 0; i < 3; i++) if (!strcmp(arch->child->valuestring, classes[i])) fam = i;
        if (fam < 0) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: architecture \"%.64s\" is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)", file, arch->child->valuestring); goto done; }
    } else if (cJSON_IsString(mt)) {
        for (int i = 0; i < 3; i++) if (!strcmp(mt->valuestring, model_types[i])) fam = i;
        if (fam < 0) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: model_type \"%.64s\" is not supported (llama, mistral, qwen2)", file, mt->valuestring); goto done; }
    } else {
        rc = m2_errorf(err, M2_ECONFIG, "%s: neither \"architectures\" nor \"model_type\" says what model this is", file);
        goto done;
    }
    c->family = (m2_hf_family)fam;
    if ((rc = get_int(root, "vocab_size", 1, 0, &c->vocab_size, file, err))) goto done;
    if ((rc = get_int(root, "hidden_size", 1, 0, &c->hidden_size, file, err))) goto done;
    if ((rc = get_int(root, "intermediate_size", 1, 0, &c->intermediate_size, file, err))) goto done;
    if ((rc = get_int(root, "num_hidden_layers", 1, 0, &c->num_layers, file, err))) goto done;
    if ((rc = get_int(root, "num_attention_heads", 1, 0, &c->num_heads, file, err))) goto done;
    if ((rc = get_int(root, "num_key_value_heads", 0, c->num_heads, &c->num_kv_heads, file, err))) goto done;
    if (c->num_heads <= 0) { rc = m2_errorf(err, M2_ECONFIG, "%s: num_attention_heads = %d (must be positive)", file, c->num_heads); goto done; }
    if ((rc = get_int(root, "head_dim", 0, c->hidden_size / c->num_heads, &c->head_dim, file, err))) goto done;
    if (!cJSON_GetObjectItemCaseSensitive(root, "head_dim") && c->hidden_size % c->num_heads) {
        rc = m2_errorf(err, M2_ECONFIG, "%s: hidden_size %d is not a multiple of num_attention_heads %d", file, c->hidden_size, c->num_heads);
        goto done;
    }
    if ((rc = get_int(root, "max_position_embeddings", 0, 2048, &c->max_pos, file, err))) goto done;
    if ((rc = get_num(root, "rms_norm_eps", 1e-6, &c->rms_norm_eps, file, err))) goto done;
    if ((rc = get_num(root, "rope_theta", 10000.0, &c->rope_theta, file, err))) goto done;
    if ((rc = get_bool(root, "tie_word_embeddings", 0, &c->tie_word_embeddings, file, err))) goto done;
    if ((rc = get_token(root, "bos_token_id", &c->bos_token_id, file, err))) goto done;
    if ((rc = get_token(root, "eos_token_id", &c->eos_token_id, file, err))) goto done;
    c->qkv_bias = c->family == M2_HF_QWEN2;
    int flag = 0;
    if ((rc = get_bool(root, "attention_bias", 0, &flag, file, err))) goto done;
    if (flag) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: \"attention_bias\": true is not supported", file); goto done; }
    if ((rc = get_bool(root, "mlp_bias", 0, &flag, file, err))) goto done;
    if (flag) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: \"mlp_bias\": true is not supported", file); goto done; }
    if ((rc = get_bool(root, "use_sliding_window", 0, &flag, file, err))) goto done;
    if (flag) { rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: \"use_sliding_window\": true is not supported", file); goto done; }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && !cJSON_IsNull(act) && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu"))) {
        rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: hidden_act must be \"silu\"", file);
        goto done;
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (cJSON_IsString(dt)) snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", dt->valuestring);
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (rs && !cJSON_IsNull(rs)) {
        if (!cJSON_IsObject(rs)) { rc = m2_errorf(err, M2_ECONFIG, "%s: \"rope_scaling\" is not an object", file); goto done; }
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
        if (!ty) ty = cJSON_GetObjectItemCaseSensitive(rs, "type");
        if (!cJSON_IsString(ty)) { rc = m2_errorf(err, M2_ECONFIG, "%s: rope_scaling has no \"rope_type\"", file); goto done; }
        if (!strcmp(ty->valuestring, "llama3")) {
            c->rope_llama3 = 1;
            if ((rc = get_num(rs, "factor", 8.0, &c->rope_factor, file, err))) goto done;
            if ((rc = get_num(rs, "low_freq_factor", 1.0, &c->rope_low_freq_factor, file, err))) goto done;
            if ((rc = get_num(rs, "high_freq_factor", 4.0, &c->rope_high_freq_factor, file, err))) goto done;
            if ((rc = get_int(rs, "original_max_position_embeddings", 0, 8192, &c->rope_original_max_pos, file, err))) goto done;
        } else if (strcmp(ty->valuestring, "default")) {
            rc = m2_errorf(err, M2_EUNSUPPORTED, "%s: rope_scaling type \"%.32s\" is not supported (llama3 only)", file, ty->valuestring);
            goto done;
        }
    }
    rc = m2_hf_config_validate(c, file, err);
done:
    cJSON_Delete(root);
    return rc;
}

int m2_hf_config_load(const char *path, m2_hf_config *out, m2_err *err) {
    char *text;
    size_t len;
    if (m2_read_file(path, &text, &len, err)) return -1;
    int rc = m2_hf_config_parse(text, len, path, out, err);
    free(text);
    return rc;
}

char *m2_hf_config_to_json(const m2_hf_config *c) {
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(m2_hf_family_class(c->family)));
    cJSON_AddStringToObject(r, "model_type", m2_hf_family_model_type(c->family));
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(r, "intermediate_size", c->intermediate_size);
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->num_layers);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->num_heads);
    cJSON_AddNumberToObject(r, "num_key_value_heads", c->num_kv_heads);
    cJSON_AddNumberToObject(r, "head_dim", c->head_dim);
    cJSON_AddNumberToObject(r, "max_position_embeddings", c->max_pos);
    cJSON_AddNumberToObject(r, "rms_norm_eps", c->rms_norm_eps);
    cJSON_AddNumberToObject(r, "rope_theta", c->rope_theta);
    if (c->rope_llama3) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        cJSON_AddNumberToObject(rs, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rs, "low_freq_factor", c->rope_low_freq_factor);
        cJSON_AddNumberToObject(rs, "high_freq_factor", c->rope_high_freq_factor);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->rope_original_max_pos);
    } else {
        cJSON_AddNullToObject(r, "rope_scaling");
    }
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_word_embeddings);
    cJSON_AddStringToObject(r, "hidden_act", "silu");
    if (c->family == M2_HF_LLAMA) {
        cJSON_AddBoolToObject(r, "attention_bias", 0);
        cJSON_AddBoolToObject(r, "mlp_bias", 0);
    }
    if (c->family == M2_HF_QWEN2) cJSON_AddBoolToObject(r, "use_sliding_window", 0);
    if (c->bos_token_id >= 0) cJSON_AddNumberToObject(r, "bos_token_id", c->bos_token_id);
    if (c->eos_token_id >= 0) cJSON_AddNumberToObject(r, "eos_token_id", c->eos_token_id);
    cJSON_AddStringToObject(r, "torch_dtype", c->torch_dtype[0] ? c->torch_dtype : "float32");
    cJSON_AddNumberToObject(r, "initializer_range", 0.02);
    cJSON_AddNumberToObject(r, "attention_dropout", 0.0);
    cJSON_AddBoolToObject(r, "use_cache", 1);
    char *s = cJSON_Print(r);
    cJSON_Delete(r);
    return s;
}

int m2_hf_config_save(const m2_hf_config *c, const char *path, m2_err *err) {
    char *s = m2_hf_config_to_json(c);
    if (!s) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int rc = m2_write_file_atomic(path, s, strlen(s), err);
    free(s);
    return rc;
}

void m2_hf_llama3_rope_factors(const m2_hf_config *c, float *out) {
    int d = c->head_dim;
    double low_wl = c->rope_original_max_pos / c->rope_low_freq_factor;
    double high_wl = c->rope_original_max_pos / c->rope_high_freq_factor;
    for (int i = 0; i < d / 2; i++) {
        double freq = 1.0 / pow(c->rope_theta, (double)(2 * i) / d);
        double wl = 2 * M_PI / freq;
        if (wl < high_wl) out[i] = 1.f;
        else if (wl > low_wl) out[i] = (float)c->rope_factor;
        else {
            double smooth = (c->rope_original_max_pos / wl - c->rope_low_freq_factor) /
                            (c->rope_high_freq_factor - c->rope_low_freq_factor);
            out[i] = (float)(1.0 / ((1 - smooth) / c->rope_factor + smooth));
        }
    }
}

/* u32 metadata `{arch}.{key}` (required or defaulted). */
static int arch_u32(const m2_gguf *g, const char *arch, const char *key, int required, int def, int *out, m2_err *err) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    uint32_t v;
    if (!m2_gguf_find(g, k)) {
        if (required) return m2_errorf(err, M2_ECONFIG, "%s: metadata '%s' is missing", g->path, k);
        *out = def;
        return 0;
    }
    if (m2_gguf_get_u32(g, k, &v, err)) return -1;
    if (v > MAX_DIM) return m2_errorf(err, M2_ECONFIG, "%s: metadata '%s' = %u is too large", g->path, k, v);
    *out = (int)v;
    return 0;
}

static int arch_f(const m2_gguf *g, const char *arch, const char *key, double def, double *out, m2_err *err) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    float v;
    if (!m2_gguf_find(g, k)) { *out = def; return 0; }
    if (m2_gguf_get_f32(g, k, &v, err)) return -1;
    *out = v;
    return 0;
}

int m2_hf_config_from_gguf(const m2_gguf *g, m2_hf_config *c, m2_err *err) {
    memset(c, 0, sizeof *c);
    const char *arch = m2_gguf_get_str(g, "general.architecture", err);
    if (!arch) return -1;
    if (!strcmp(arch, "llama")) c->family = M2_HF_LLAMA;
    else if (!strcmp(arch, "qwen2")) c->family = M2_HF_QWEN2;
    else return m2_errorf(err, M2_EUNSUPPORTED, "%s: general.architecture \"%.64s\" is not supported (llama, qwen2)", g->path, arch);
    if (arch_u32(g, arch, "block_count", 1, 0, &c->num_layers, err) ||
        arch_u32(g, arch, "embedding_length", 1, 0, &c->hidden_size, err) ||
        arch_u32(g, arch, "feed_forward_length", 1, 0, &c->intermediate_size, err) ||
        arch_u32(g, arch, "attention.head_count", 1, 0, &c->num_heads, err) ||
        arch_u32(g, arch, "attention.head_count_kv", 0, c->num_heads, &c->num_kv_heads, err) ||
        arch_u32(g, arch, "context_length", 0, 2048, &c->max_pos, err))
        return -1;
    if (c->num_heads <= 0) return m2_errorf(err, M2_ECONFIG, "%s: %s.attention.head_count is 0", g->path, arch);
    if (arch_u32(g, arch, "attention.key_length", 0, c->hidden_size / c->num_heads, &c->head_dim, err) ||
        arch_u32(g, arch, "rope.dimension_count", 0, c->head_dim, &c->head_dim, err))
        return -1;
    if (arch_f(g, arch, "attention.layer_norm_rms_epsilon", 1e-5, &c->rms_norm_eps, err) ||
        arch_f(g, arch, "rope.freq_base", 10000.0, &c->rope_theta, err))
        return -1;
    /* vocab: {arch}.vocab_size, else the tokenizer's token count, else the embedding's rows */
    if (arch_u32(g, arch, "vocab_size", 0, 0, &c->vocab_size, err)) return -1;
    if (!c->vocab_size) {
        const m2_gguf_kv *tok = m2_gguf_find(g, "tokenizer.ggml.tokens");
        const m2_gguf_tensor *emb = m2_gguf_find_tensor(g, "token_embd.weight");
        if (emb && emb->n_dims == 2 && emb->ne[1] <= MAX_DIM) c->vocab_size = (int)emb->ne[1];
        else if (tok && tok->type == M2_GGUF_ARRAY && tok->n <= MAX_DIM) c->vocab_size = (int)tok->n;
    }
    c->tie_word_embeddings = m2_gguf_find_tensor(g, "output.weight") == NULL;
    c->qkv_bias = m2_gguf_find_tensor(g, "blk.0.attn_q.bias") != NULL;
    uint32_t id;
    c->bos_token_id = m2_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &id, NULL) ? -1 : (int)(id > MAX_DIM ? -1 : (int)id);
    c->eos_token_id = m2_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &id, NULL) ? -1 : (int)(id > MAX_DIM ? -1 : (int)id);
    if (m2_hf_config_validate(c, g->path, err)) return -1;
    /* Llama-3.1: llama.cpp stores the scaling as per-frequency divisors in rope_freqs.weight.
     * Recover the llama3 parameters (factor = the largest divisor; low/high/original context
     * from the keys we write, else Meta's 1 / 4 / 8192) and check they reproduce the tensor. */
    const m2_gguf_tensor *rf = m2_gguf_find_tensor(g, "rope_freqs.weight");
    if (rf) {
        if (rf->n_elems != (uint64_t)c->head_dim / 2 || rf->type != M2_GGML_F32)
            return m2_errorf(err, M2_ESHAPE, "%s: rope_freqs.weight must be F32 [%d]", g->path, c->head_dim / 2);
        float *have = malloc(sizeof(float) * (size_t)c->head_dim), *want = have + c->head_dim / 2;
        if (!have) return m2_errorf(err, M2_ENOMEM, "out of memory");
        m2_gguf_tensor_to_f32(g, rf, have, NULL);
        float mx = 0;
        for (int i = 0; i < c->head_dim / 2; i++) mx = fmaxf(mx, have[i]);
        c->rope_llama3 = mx > 1.f;
        c->rope_factor = mx;
        double lf = 1, hf = 4;
        int orig = 8192;
        arch_f(g, arch, "rope.scaling.low_freq_factor", 1.0, &lf, NULL);
        arch_f(g, arch, "rope.scaling.high_freq_factor", 4.0, &hf, NULL);
        arch_u32(g, arch, "rope.scaling.original_context_length", 0, 8192, &orig, NULL);
        c->rope_low_freq_factor = lf;
        c->rope_high_freq_factor = hf;
        c->rope_original_max_pos = orig;
        int ok = 1;
        if (c->rope_llama3 && m2_hf_config_validate(c, g->path, NULL) == 0) {
            m2_hf_llama3_rope_factors(c, want);
            for (int i = 0; i < c->head_dim / 2; i++)
                if (!(fabsf(want[i] - have[i]) <= 1e-4f * fmaxf(1.f, fabsf(want[i])))) ok = 0;
        } else if (c->rope_llama3) ok = 0;
        free(have);
        if (!ok) return m2_errorf(err, M2_EUNSUPPORTED, "%s: rope_freqs.weight does not match Llama-3.1 rope scaling", g->path);
    }
    return 0;
}

int m2_hf_config_to_gguf(const m2_hf_config *c, m2_gguf_writer *w) {
    const char *arch = m2_hf_family_gguf_arch(c->family);
    char k[128];
    int rc = m2_gguf_set_str(w, "general.architecture", arch);
#define U32(key, v) (snprintf(k, sizeof k, "%s." key, arch), rc |= m2_gguf_set_u32(w, k, (uint32_t)(v)))
#define F32(key, v) (snprintf(k, sizeof k, "%s." key, arch), rc |= m2_gguf_set_f32(w, k, (float)(v)))
    U32("vocab_size", c->vocab_size);
    U32("context_length", c->max_pos);
    U32("embedding_length", c->hidden_size);
    U32("block_count", c->num_layers);
    U32("feed_forward_length", c->intermediate_size);
    U32("rope.dimension_count", c->head_dim);
    U32("attention.head_count", c->num_heads);
    U32("attention.head_count_kv", c->num_kv_heads);
    if (c->head_dim * c->num_heads != c->hidden_size) {
        U32("attention.key_length", c->head_dim);
        U32("attention.value_length", c->head_dim);
    }
    F32("attention.layer_norm_rms_epsilon", c->rms_norm_eps);
    F32("rope.freq_base", c->rope_theta);
    if (c->rope_llama3) {   /* the rope_freqs.weight tensor carries it for llama.cpp; these keys make it exact */
        F32("rope.scaling.low_freq_factor", c->rope_low_freq_factor);
        F32("rope.scaling.high_freq_factor", c->rope_high_freq_factor);
        U32("rope.scaling.original_context_length", c->rope_original_max_pos);
    }
#undef U32
#undef F32
    return rc ? -1 : 0;
}
