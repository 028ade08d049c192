#include "model/config.h"
#include <stdio.h>
#include <string.h>

int m2_config_validate(m2_model_config *c, m2_err *err) {
#define NEED(cond, field, ...) \
    if (!(cond)) return m2_errorf(err, M2_ECONFIG, "model config: field '" field "': " __VA_ARGS__)
    NEED(c->vocab_size > 0 && c->vocab_size < (1 << 24), "vocab_size", "must be in 1..16M (got %d)", c->vocab_size);
    NEED(c->dim > 0 && c->dim <= 65536, "dim", "must be in 1..65536 (got %d)", c->dim);
    NEED(c->n_layers > 0 && c->n_layers <= 1024, "n_layers", "must be in 1..1024 (got %d)", c->n_layers);
    NEED(c->n_heads > 0 && c->n_heads <= 1024, "n_heads", "must be in 1..1024 (got %d)", c->n_heads);
    if (c->n_kv_heads <= 0) c->n_kv_heads = c->n_heads;
    NEED(c->n_heads % c->n_kv_heads == 0, "n_kv_heads", "%d does not divide n_heads %d", c->n_kv_heads, c->n_heads);
    if (c->head_dim <= 0) {
        NEED(c->dim % c->n_heads == 0, "head_dim", "absent and dim %d not divisible by n_heads %d", c->dim, c->n_heads);
        c->head_dim = c->dim / c->n_heads;
    }
    NEED(c->head_dim % 2 == 0 && c->head_dim <= 1024, "head_dim", "must be even and <= 1024 (got %d)", c->head_dim);
    NEED(c->ffn_dim > 0 && c->ffn_dim <= 1 << 20, "ffn_dim", "must be in 1..1M (got %d)", c->ffn_dim);
    NEED(c->max_seq_len > 0 && c->max_seq_len <= 1 << 20, "max_seq_len", "must be in 1..1M (got %d)", c->max_seq_len);
    if (c->norm_eps <= 0) c->norm_eps = 1e-5f;
    NEED(c->norm_eps < 1.0f, "norm_eps", "must be in (0, 1) (got %g)", c->norm_eps);
    NEED(c->rope_theta > 1.0f, "rope_theta", "must be > 1 (got %g)", c->rope_theta);
    NEED(c->rope_layout == M2_ROPE_ADJACENT || c->rope_layout == M2_ROPE_HALF, "rope_layout", "unknown layout %d", (int)c->rope_layout);
    if (c->rope_scaling.type == 1) {
        m2_rope_scaling *s = &c->rope_scaling;
        NEED(s->factor > 0 && s->low_freq_factor > 0 && s->high_freq_factor > s->low_freq_factor &&
             s->original_max_pos > 0, "rope_scaling", "llama3 scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_pos > 0");
    } else NEED(c->rope_scaling.type == 0, "rope_scaling.type", "unknown type %d", c->rope_scaling.type);
#undef NEED
    return 0;
}

long long m2_config_n_params(const m2_model_config *c) {
    long long H = c->dim, qd = (long long)c->n_heads * c->head_dim, kd = (long long)c->n_kv_heads * c->head_dim;
    long long per = H * 2 + H * qd * 2 + H * kd * 2 + 3 * H * c->ffn_dim + (c->qkv_bias ? qd + 2 * kd : 0);
    return (long long)c->vocab_size * H * (c->tied_embeddings ? 1 : 2) + H + per * c->n_layers;
}

int m2_config_preset(const char *name, m2_model_config *c, m2_err *err) {
    memset(c, 0, sizeof *c);
    c->bos_token = c->eos_token = -1;
    c->norm_eps = 1e-5f;
    c->rope_theta = 10000.0f;
    if (!strcmp(name, "tiny") || !strcmp(name, "bench")) {
        c->family = M2_FAMILY_LLAMA;
        c->vocab_size = 2048; c->dim = 256; c->n_layers = 4; c->n_heads = 8; c->n_kv_heads = 4;
        c->ffn_dim = 768; c->max_seq_len = !strcmp(name, "bench") ? 256 : 1024;
        c->rope_layout = M2_ROPE_HALF;
    } else if (!strcmp(name, "test-llama")) {
        c->family = M2_FAMILY_LLAMA;
        c->vocab_size = 64; c->dim = 32; c->n_layers = 2; c->n_heads = 4; c->n_kv_heads = 2;
        c->ffn_dim = 48; c->max_seq_len = 64;
        c->rope_layout = M2_ROPE_ADJACENT;
        c->rope_scaling = (m2_rope_scaling){1, 8.0f, 1.0f, 4.0f, 64};
    } else if (!strcmp(name, "test-qwen2")) {
        c->family = M2_FAMILY_QWEN2;
        c->vocab_size = 64; c->dim = 32; c->n_layers = 2; c->n_heads = 4; c->n_kv_heads = 1;
        c->ffn_dim = 40; c->max_seq_len = 64;
        c->norm_eps = 1e-6f; c->rope_theta = 1000000.0f;
        c->rope_layout = M2_ROPE_HALF; c->qkv_bias = 1; c->tied_embeddings = 1;
    } else
        return m2_errorf(err, M2_ECONFIG, "model preset '%s': unknown (tiny, bench, test-llama, test-qwen2)", name);
    return m2_config_validate(c, err);
}

int m2_config_tiny(m2_model_config *c, int vocab, int dim, int layers, int heads, int kv_heads,
                   int ffn, int max_seq_len, m2_err *err) {
    memset(c, 0, sizeof *c);
    c->family = M2_FAMILY_LLAMA;
    c->vocab_size = vocab; c->dim = dim; c->n_layers = layers; c->n_heads = heads;
    c->n_kv_heads = kv_heads; c->ffn_dim = ffn; c->max_seq_len = max_seq_len;
    c->norm_eps = 1e-5f; c->rope_theta = 10000.0f; c->rope_layout = M2_ROPE_HALF;
    c->bos_token = c->eos_token = -1;
    return m2_config_validate(c, err);
}

void m2_config_describe(const m2_model_config *c, char *buf, int cap) {
    static const char *fam[] = {"llama", "mistral", "qwen2"};
    snprintf(buf, cap, "%s d=%d L=%d heads=%d/%d hd=%d ff=%d V=%d ctx=%d%s%s (%.2fM params)",
             fam[c->family < 3 ? c->family : 0], c->dim, c->n_layers, c->n_heads, c->n_kv_heads,
             c->head_dim, c->ffn_dim, c->vocab_size, c->max_seq_len, c->qkv_bias ? " qkv-bias" : "",
             c->tied_embeddings ? " tied" : "", m2_config_n_params(c) / 1e6);
}
