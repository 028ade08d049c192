/* Model loading and saving: GGUF and HF safetensors folders <-> the engine's m2_model. */
#include "io/model_load.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"
#include "io/safetensors.h"

/* ---- names ---- */

typedef struct { const char *gguf, *hf; } name_pair;
static const name_pair layer_names[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};
static const name_pair global_names[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};
#define N_LAYER_NAMES (int)(sizeof layer_names / sizeof layer_names[0])

/* "prefix<N>.<rest>" -> N and rest; N without sign or leading zeros (so names map 1:1). */
static int split_layer(const char *s, const char *prefix, int *layer, const char **rest) {
    size_t pl = strlen(prefix);
    if (strncmp(s, prefix, pl)) return -1;
    s += pl;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] != '.')) return -1;
    long n = 0;
    while (*s >= '0' && *s <= '9') {
        n = n * 10 + (*s++ - '0');
        if (n > 1000000) return -1;
    }
    if (*s != '.') return -1;
    *layer = (int)n;
    *rest = s + 1;
    return 0;
}

static int map_name(const char *in, char *out, int cap, int to_hf) {
    for (size_t i = 0; i < sizeof global_names / sizeof global_names[0]; i++)
        if (!strcmp(in, to_hf ? global_names[i].gguf : global_names[i].hf)) {
            int n = snprintf(out, (size_t)cap, "%s", to_hf ? global_names[i].hf : global_names[i].gguf);
            return n < cap ? 0 : -1;
        }
    int layer;
    const char *rest;
    if (split_layer(in, to_hf ? "blk." : "model.layers.", &layer, &rest)) return -1;
    for (int i = 0; i < N_LAYER_NAMES; i++)
        if (!strcmp(rest, to_hf ? layer_names[i].gguf : layer_names[i].hf)) {
            int n = to_hf ? snprintf(out, (size_t)cap, "model.layers.%d.%s", layer, layer_names[i].hf)
                          : snprintf(out, (size_t)cap, "blk.%d.%s", layer, layer_names[i].gguf);
            return n < cap ? 0 : -1;
        }
    return -1;
}

int m2_tensor_name_to_hf(const char *g, char *out, int cap) { return map_name(g, out, cap, 1); }
int m2_tensor_name_from_hf(const char *h, char *out, int cap) { return map_name(h, out, cap, 0); }

void m2_rope_permute_rows(const void *src, void *dst, int n_head, int head_dim, size_t row_bytes, int to_gguf) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    int half = head_dim / 2;
    for (int h = 0; h < n_head; h++)
        for (int i = 0; i < half; i++)
            for (int j = 0; j < 2; j++) {
                size_t hf_row = (size_t)h * head_dim + (size_t)j * half + i;   /* rotate_half order */
                size_t gg_row = (size_t)h * head_dim + 2 * (size_t)i + j;      /* adjacent pairs */
                if (to_gguf) memcpy(d + gg_row * row_bytes, s + hf_row * row_bytes, row_bytes);
                else memcpy(d + hf_row * row_bytes, s + gg_row * row_bytes, row_bytes);
            }
}

/* ---- configs and dtypes ---- */

int m2_dtype_from_ggml(uint32_t g, m2_dtype *out) { return m2_dtype_from_ggml_id(g, out); }

uint32_t m2_dtype_to_ggml(m2_dtype t) {
    const m2_dtype_info *d = m2_dtype_info_of(t);
    return d ? d->ggml_id : UINT32_MAX;
}

int m2_hf_to_model_config(const m2_hf_config *h, m2_model_config *c, m2_err *err) {
    memset(c, 0, sizeof *c);
    c->family = h->family == M2_HF_QWEN2 ? M2_FAMILY_QWEN2 : h->family == M2_HF_MISTRAL ? M2_FAMILY_MISTRAL : M2_FAMILY_LLAMA;
    c->vocab_size = h->vocab_size;
    c->dim = h->hidden_size;
    c->n_layers = h->num_layers;
    c->n_heads = h->num_heads;
    c->n_kv_heads = h->num_kv_heads;
    c->head_dim = h->head_dim;
    c->ffn_dim = h->intermediate_size;
    c->max_seq_len = h->max_pos > (1 << 20) ? (1 << 20) : h->max_pos;
    c->norm_eps = (float)h->rms_norm_eps;
    c->rope_theta = (float)h->rope_theta;
    c->rope_layout = M2_ROPE_HALF;
    if (h->rope_llama3) {
        c->rope_scaling.type = 1;
        c->rope_scaling.factor = (float)h->rope_factor;
        c->rope_scaling.low_freq_factor = (float)h->rope_low_freq_factor;
        c->rope_scaling.high_freq_factor = (float)h->rope_high_freq_factor;
        c->rope_scaling.original_max_pos = h->rope_original_max_pos;
    }
    c->qkv_bias = h->qkv_bias;
    c->tied_embeddings = h->tie_word_embeddings;
    c->bos_token = h->bos_token_id;
    c->eos_token = h->eos_token_id;
    return m2_config_validate(c, err);
}

void m2_model_config_to_hf(const m2_model_config *c, m2_hf_config *h) {
    memset(h, 0, sizeof *h);
    h->family = c->family == M2_FAMILY_QWEN2 ? M2_HF_QWEN2 : c->family == M2_FAMILY_MISTRAL ? M2_HF_MISTRAL : M2_HF_LLAMA;
    h->vocab_size = c->vocab_size;
    h->hidden_size = c->dim;
    h->intermediate_size = c->ffn_dim;
    h->num_layers = c->n_layers;
    h->num_heads = c->n_heads;
    h->num_kv_heads = c->n_kv_heads;
    h->head_dim = c->head_dim > 0 ? c->head_dim : c->dim / c->n_heads;
    h->max_pos = c->max_seq_len;
    h->rms_norm_eps = c->norm_eps;
    h->rope_theta = c->rope_theta;
    if (c->rope_scaling.type == 1) {
        h->rope_llama3 = 1;
        h->rope_factor = c->rope_scaling.factor;
        h->rope_low_freq_factor = c->rope_scaling.low_freq_factor;
        h->rope_high_freq_factor = c->rope_scaling.high_freq_factor;
        h->rope_original_max_pos = c->rope_scaling.original_max_pos;
    }
    h->tie_word_embeddings = c->tied_embeddings;
    h->qkv_bias = c->qkv_bias;
    h->bos_token_id = c->bos_token;
    h->eos_token_id = c->eos_token;
}

/* Heads of the projection a tensor belongs to when its rows must be permuted (llama GGUF q/k):
 * 0 when no permutation applies. */
static int permute_heads(const m2_model *m, const m2_tensor *t) {
    if (t->kind == M2_T_Q || t->kind == M2_T_QB) return m->cfg.n_heads;
    if (t->kind == M2_T_K || t->kind == M2_T_KB) return m->cfg.n_kv_heads;
    return 0;
}

/* Fills engine tensor t from file data of ggml type gtype (rows x cols as t), permuting rows from
 * GGUF-llama order when heads > 0. data may be unaligned. */
static int fill_tensor(m2_model *m, m2_tensor *t, uint32_t gtype, const void *data, int heads,
                       const char *file, const char *fname, m2_err *err) {
    size_t n = (size_t)t->rows * t->cols;
    m2_dtype dt;
    int rows = t->ndim == 2 ? t->rows : t->cols;       /* a bias is one row of cols values */
    size_t per_row = t->ndim == 2 ? (size_t)t->cols : 1;
    int rc = 0;
    /* Direct hand-over when the engine stores the source type, or converts from it without
     * rounding to blocks; conversions INTO Q8_0 are done here with the NaN/inf-safe quantiser
     * (a corrupt file may hold non-finite values) and handed over as Q8_0 blocks. */
    int direct = !m2_dtype_from_ggml(gtype, &dt);
    if (direct) {
        uint64_t nb;
        m2_ggml_nbytes(gtype, n, &nb);
        if (!heads && ((uintptr_t)data % 4) == 0)
            rc = m2_model_set_tensor(m, t->name, dt, data, n, err);
        else {
            unsigned char *buf = malloc(nb ? nb : 1);
            if (!buf) return m2_errorf(err, M2_ENOMEM, "%s: tensor '%s': out of memory", file, fname);
            if (heads) {
                uint64_t rb;
                m2_ggml_nbytes(gtype, per_row, &rb);
                m2_rope_permute_rows(data, buf, heads, rows / heads, rb, 0);
            } else memcpy(buf, data, nb);
            rc = m2_model_set_tensor(m, t->name, dt, buf, n, err);
            free(buf);
        }
    } else {
        float *f = malloc(2 * n * sizeof(float) + 1);
        if (!f) return m2_errorf(err, M2_ENOMEM, "%s: tensor '%s': out of memory", file, fname);
        rc = m2_ggml_dequantize(gtype, data, f, n, err);
        if (!rc && heads) {
            m2_rope_permute_rows(f, f + n, heads, rows / heads, per_row * sizeof(float), 0);
            memcpy(f, f + n, n * sizeof(float));
        }
        if (!rc && t->dtype == M2_DT_Q8_0) {
            uint64_t qb;
            void *q = m2_ggml_nbytes(M2_GGML_Q8_0, n, &qb) ? NULL : malloc(qb ? qb : 1);
            if (!q) rc = m2_errorf(err, M2_ESHAPE, "cannot hold %zu values as q8_0", n);
            else {
                rc = m2_ggml_quantize(M2_GGML_Q8_0, f, q, n, err);
                if (!rc) rc = m2_model_set_tensor(m, t->name, M2_DT_Q8_0, q, n, err);
                free(q);
            }
        } else if (!rc) rc = m2_model_set_tensor(m, t->name, M2_DT_F32, f, n, err);
        free(f);
    }
    if (rc) return m2_err_prefix(err, "%s: tensor '%s': ", file, fname);
    return 0;
}

/* The storage dtype of a whole model converted from a file whose matrices have ggml type gtype:
 * the file's type when it can be encoded from f32 (every matrix of an HF folder comes through
 * f32) and its blocks divide every row, f32 otherwise. */
static int auto_dtype(uint32_t gtype, const m2_model_config *c, m2_dtype *out) {
    m2_dtype dt;
    if (m2_dtype_from_ggml(gtype, &dt) || !m2_dtype_info_of(dt)->quantize) dt = M2_DT_F32;
    int blk = m2_dtype_info_of(dt)->block;
    if (c->dim % blk || c->ffn_dim % blk || (c->n_heads * c->head_dim) % blk) dt = M2_DT_F32;
    *out = dt;
    return 0;
}

/* Per-matrix storage of a GGUF model (m2_tensor_src_fn). as_stored: each matrix keeps its file
 * type (mixed files such as llama-quantize's Q4_0 with a Q6_K output); otherwise opts' dtype.
 * map: a matrix whose storage is its file type, whose rows need no RoPE permutation and whose
 * data is aligned for its type is used in place, inside the file mapping. */
typedef struct { const m2_gguf *g; int as_stored, map, llama; const m2_model *probe; } gguf_src;

static int gguf_tensor_src(void *ud, const m2_tensor *t, m2_tensor_src *src, m2_err *err) {
    const gguf_src *s = ud;
    const m2_gguf_tensor *gt = m2_gguf_find_tensor(s->g, t->name);
    m2_dtype dt;
    if (!gt) return m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", s->g->path, t->name);
    if (m2_dtype_from_ggml(gt->type, &dt))
        return m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s': ggml type %s (%u) is not supported (readable: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K-Q6_K, IQ4_NL)",
                         s->g->path, t->name, m2_ggml_type_name(gt->type), gt->type);
    if (s->as_stored) src->dtype = dt;
    /* llama q/k rows are permuted into a copy; v is copied with them so that q|k|v stay one
     * contiguous matrix (one GEMM, the same bits as a model built in memory) */
    int permuted = s->llama && (t->kind == M2_T_Q || t->kind == M2_T_K || t->kind == M2_T_V);
    int align = dt == M2_DT_F32 ? 4 : 2;
    if (s->map && src->dtype == dt && !permuted && (uintptr_t)gt->data % (uintptr_t)align == 0) src->data = gt->data;
    return 0;
}

static void gguf_close_owner(void *g) { m2_gguf_close(g); }

/* Every base tensor a config implies (the engine's canonical list), so a file can be checked
 * completely BEFORE the model is allocated: a corrupt config cannot ask for more memory than
 * the tensors the file really holds. */
typedef struct { char name[64]; int ndim, rows, cols; } expected_tensor;

static int expected_tensors(const m2_model_config *c, expected_tensor **out, m2_err *err) {
    int L = c->n_layers, H = c->dim, F = c->ffn_dim, V = c->vocab_size;
    int qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim;
    expected_tensor *e = malloc(sizeof *e * (4 + (size_t)L * 12));
    if (!e) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int n = 0;
#define ADD(nd, r, cc, ...) (snprintf(e[n].name, sizeof e[n].name, __VA_ARGS__), e[n].ndim = nd, e[n].rows = r, e[n].cols = cc, n++)
    ADD(2, V, H, "token_embd.weight");
    for (int l = 0; l < L; l++) {
        ADD(1, 1, H, "blk.%d.attn_norm.weight", l);
        ADD(2, qd, H, "blk.%d.attn_q.weight", l);
        ADD(2, kd, H, "blk.%d.attn_k.weight", l);
        ADD(2, kd, H, "blk.%d.attn_v.weight", l);
        if (c->qkv_bias) {
            ADD(1, 1, qd, "blk.%d.attn_q.bias", l);
            ADD(1, 1, kd, "blk.%d.attn_k.bias", l);
            ADD(1, 1, kd, "blk.%d.attn_v.bias", l);
        }
        ADD(2, H, qd, "blk.%d.attn_output.weight", l);
        ADD(1, 1, H, "blk.%d.ffn_norm.weight", l);
        ADD(2, F, H, "blk.%d.ffn_gate.weight", l);
        ADD(2, F, H, "blk.%d.ffn_up.weight", l);
        ADD(2, H, F, "blk.%d.ffn_down.weight", l);
    }
    ADD(1, 1, H, "output_norm.weight");
    if (!c->tied_embeddings) ADD(2, V, H, "output.weight");
#undef ADD
    *out = e;
    return n;
}

/* Checks that g holds every tensor of config c with the right shape. */
static int check_gguf_tensors(const m2_gguf *g, const m2_model_config *c, m2_err *err) {
    expected_tensor *e;
    int n = expected_tensors(c, &e, err), rc = 0;
    if (n < 0) return -1;
    for (int i = 0; i < n && !rc; i++) {
        const m2_gguf_tensor *gt = m2_gguf_find_tensor(g, e[i].name);
        if (!gt) { rc = m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", g->path, e[i].name); break; }
        int ok = e[i].ndim == 2 ? gt->n_dims == 2 && gt->ne[0] == e[i].cols && gt->ne[1] == e[i].rows
                                : gt->n_dims == 1 && gt->ne[0] == e[i].cols;
        if (!ok)
            rc = m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' has ne [%" PRId64 ", %" PRId64 "] (%d dims), the metadata needs [%d, %d]",
                           g->path, e[i].name, gt->ne[0], gt->ne[1], gt->n_dims, e[i].cols, e[i].ndim == 2 ? e[i].rows : 1);
    }
    free(e);
    return rc;
}

static m2_model *from_gguf(const m2_gguf *g, const m2_model_opts *opts, int map, m2_hf_config *hf_out, m2_err *err) {
    m2_hf_config h;
    m2_model_config c;
    if (m2_hf_config_from_gguf(g, &h, err) || m2_hf_to_model_config(&h, &c, err)) {
        if (err && !strstr(err->msg, g->path)) m2_err_prefix(err, "%s: ", g->path);
        return NULL;
    }
    if (check_gguf_tensors(g, &c, err)) return NULL;
    m2_model_opts o = {.dtype = M2_DT_F32};
    if (opts) o = *opts;
    int llama = h.family != M2_HF_QWEN2, as_stored = !opts || opts->dtype == M2_DTYPE_AUTO;
    if (as_stored) {
        o.dtype = M2_DT_F32;
        const m2_gguf_tensor *q = m2_gguf_find_tensor(g, "blk.0.attn_q.weight");
        if (q && m2_dtype_from_ggml(q->type, &o.dtype)) o.dtype = M2_DT_F32;
    }
    /* a trainable base needs every value in its own f32 arena */
    gguf_src src = {g, as_stored && !o.train_base, map && !o.train_base, llama, NULL};
    if (o.train_base && as_stored) o.dtype = M2_DT_F32;
    m2_model *m = m2_model_create_from(&c, &o, o.train_base ? NULL : gguf_tensor_src, &src, err);
    if (!m) { if (err && !strstr(err->msg, g->path)) m2_err_prefix(err, "%s: ", g->path); return NULL; }
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        if (t->mapped) continue;
        const m2_gguf_tensor *gt = m2_gguf_find_tensor(g, t->name);
        if (!gt) { m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", g->path, t->name); goto fail; }
        if (fill_tensor(m, t, gt->type, gt->data, llama ? permute_heads(m, t) : 0, g->path, t->name, err)) goto fail;
    }
    if (hf_out) *hf_out = h;
    return m;
fail:
    m2_model_free(m);
    return NULL;
}

m2_model *m2_model_from_gguf(const m2_gguf *g, const m2_model_opts *opts, m2_hf_config *hf_out, m2_err *err) {
    return from_gguf(g, opts, 0, hf_out, err);
}

/* The file stays mapped (copy-on-write: a LoRA merge writes private pages, never the file) and
 * the model points into it wherever the stored type is the storage type: see gguf_tensor_src. */
static m2_model *load_gguf(const char *path, const m2_model_opts *opts, m2_hf_config *hf_out, m2_err *err) {
    m2_gguf *g = m2_gguf_open_split(path, err);
    if (!g) return NULL;
    m2_model *m = from_gguf(g, opts, 1, hf_out, err);
    if (m && m->mapped_bytes) m2_model_set_owner(m, g, gguf_close_owner);
    else m2_gguf_close(g);
    return m;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int is_dir(const char *p) {
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

/* The folder of a path that names a file ("." when it has no slash). */
static void dir_of(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, cap, ".");
    else snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static m2_model *load_hf(const char *path, const m2_model_opts *opts, m2_hf_config *hf_out, m2_err *err) {
    char dir[4096], cfgp[4200];
    if (is_dir(path)) snprintf(dir, sizeof dir, "%s", path);
    else dir_of(path, dir, sizeof dir);
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    m2_hf_config h;
    m2_model_config c;
    if (m2_hf_config_load(cfgp, &h, err)) return NULL;
    if (m2_hf_to_model_config(&h, &c, err)) { m2_err_prefix(err, "%s: ", cfgp); return NULL; }
    m2_safetensors *st = m2_st_open(path, err);
    if (!st) return NULL;
    m2_model *m = NULL;
    m2_model_opts o = {.dtype = M2_DT_F32};
    if (opts) o = *opts;
    if (!opts || opts->dtype == M2_DTYPE_AUTO) {
        o.dtype = M2_DT_F32;
        const m2_st_tensor *q = m2_st_find(st, "model.layers.0.self_attn.q_proj.weight");
        if (q && q->ggml_type != UINT32_MAX) auto_dtype(q->ggml_type, &c, &o.dtype);
    }
    {   /* every tensor present with its shape before anything is allocated */
        expected_tensor *e;
        int n = expected_tensors(&c, &e, err), bad = n < 0;
        for (int i = 0; i < n && !bad; i++) {
            char hn[128];
            const m2_st_tensor *s = m2_tensor_name_to_hf(e[i].name, hn, sizeof hn) ? NULL : m2_st_find(st, hn);
            if (!s) { m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", st->path, hn); bad = 1; break; }
            int ok = e[i].ndim == 2 ? s->n_dims == 2 && s->shape[0] == e[i].rows && s->shape[1] == e[i].cols
                                    : s->n_dims == 1 && s->shape[0] == e[i].cols;
            if (!ok) {
                m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' has shape [%" PRId64 ", %" PRId64 "] (%d dims), config.json needs [%d, %d]",
                          st->files[s->file].path, hn, s->n_dims > 0 ? s->shape[0] : 0, s->n_dims > 1 ? s->shape[1] : 0, s->n_dims,
                          e[i].ndim == 2 ? e[i].rows : e[i].cols, e[i].ndim == 2 ? e[i].cols : 0);
                bad = 1;
            }
        }
        if (n >= 0) free(e);
        if (bad) goto done;
    }
    if (!(m = m2_model_create(&c, &o, err))) { m2_err_prefix(err, "%s: ", cfgp); goto done; }
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        char hn[128];
        if (m2_tensor_name_to_hf(t->name, hn, sizeof hn)) { m2_errorf(err, M2_EINVAL, "%s: no HF name for '%s'", path, t->name); goto fail; }
        const m2_st_tensor *s = m2_st_find(st, hn);
        if (!s) { m2_errorf(err, M2_ENOTFOUND, "%s: tensor '%s' is missing", st->path, hn); goto fail; }
        const char *file = st->files[s->file].path;
        int ok = t->ndim == 2 ? s->n_dims == 2 && s->shape[0] == t->rows && s->shape[1] == t->cols
                              : s->n_dims == 1 && s->shape[0] == t->cols;
        if (!ok) {
            m2_errorf(err, M2_ESHAPE, "%s: tensor '%s' has shape [%" PRId64 ", %" PRId64 "] (%d dims), config.json needs [%d, %d]",
                      file, hn, s->shape[0], s->n_dims > 1 ? s->shape[1] : 0, s->n_dims, t->ndim == 2 ? t->rows : t->cols, t->ndim == 2 ? t->cols : 0);
            goto fail;
        }
        if (s->ggml_type == UINT32_MAX) { m2_errorf(err, M2_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported (F32, F16, BF16)", file, hn, s->dtype); goto fail; }
        if (fill_tensor(m, t, s->ggml_type, s->data, 0, file, hn, err)) goto fail;
    }
    if (hf_out) *hf_out = h;
    goto done;
fail:
    m2_model_free(m);
    m = NULL;
done:
    m2_st_close(st);
    return m;
}

int m2_is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char b[4] = {0};
    size_t n = fread(b, 1, 4, f);
    fclose(f);
    return n == 4 && !memcmp(b, "GGUF", 4);
}

int m2_model_config_read(const char *path, m2_model_config *c, m2_err *err) {
    m2_hf_config h;
    if (!m2_path_exists(path)) return m2_errorf(err, M2_EIO, "%s: no such file or folder", path);
    if (!is_dir(path) && m2_is_gguf(path)) {
        m2_gguf *g = m2_gguf_open(path, err);
        if (!g) return -1;
        int rc = m2_hf_config_from_gguf(g, &h, err) || m2_hf_to_model_config(&h, c, err) ? -1 : 0;
        if (rc && err && !strstr(err->msg, path)) m2_err_prefix(err, "%s: ", path);
        m2_gguf_close(g);
        return rc;
    }
    if (!is_dir(path) && !ends_with(path, ".safetensors") && !ends_with(path, ".json"))
        return m2_errorf(err, M2_EFORMAT, "%s: neither a GGUF file nor an HF folder / safetensors file", path);
    char dir[4096], cfgp[4200];
    if (is_dir(path)) snprintf(dir, sizeof dir, "%s", path);
    else dir_of(path, dir, sizeof dir);
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    if (m2_hf_config_load(cfgp, &h, err)) return -1;
    if (m2_hf_to_model_config(&h, c, err)) return m2_err_prefix(err, "%s: ", cfgp);
    return 0;
}

m2_model *m2_model_load(const char *path, const m2_model_opts *opts, m2_hf_config *hf_out, m2_err *err) {
    if (!m2_path_exists(path)) { m2_errorf(err, M2_EIO, "%s: no such file or folder", path); return NULL; }
    if (!is_dir(path) && m2_is_gguf(path)) return load_gguf(path, opts, hf_out, err);
    if (is_dir(path) || ends_with(path, ".safetensors") || ends_with(path, ".json")) return load_hf(path, opts, hf_out, err);
    m2_errorf(err, M2_EFORMAT, "%s: neither a GGUF file nor an HF folder / safetensors file", path);
    return NULL;
}

/* ---- saving ---- */

/* f32 copy of tensor t, with q/k rows permuted to GGUF-llama order when heads > 0. */
static float *tensor_f32(m2_model *m, m2_tensor *t, int heads, m2_err *err) {
    size_t n = (size_t)t->rows * t->cols;
    float *f = malloc(2 * n * sizeof(float) + 1);
    if (!f) { m2_errorf(err, M2_ENOMEM, "tensor '%s': out of memory", t->name); return NULL; }
    if (m2_model_get_tensor_f32(m, t->name, f, err)) { free(f); return NULL; }
    if (heads) {
        int rows = t->ndim == 2 ? t->rows : t->cols;
        size_t per_row = t->ndim == 2 ? (size_t)t->cols : 1;
        m2_rope_permute_rows(f, f + n, heads, rows / heads, per_row * sizeof(float), 1);
        memcpy(f, f + n, n * sizeof(float));
    }
    return f;
}

static int file_type_of(uint32_t t) {
    switch (t) {
    case M2_GGML_F16: return 1;
    case M2_GGML_Q4_0: return 2;
    case M2_GGML_Q8_0: return 7;
    case M2_GGML_Q4_K: return 14;   /* llama.cpp's MOSTLY_Q4_K_S: Q4_K matrices */
    case M2_GGML_BF16: return 32;
    default: return 0;
    }
}

int m2_model_save_gguf(m2_model *m, const char *path, uint32_t type, const m2_gguf *meta_src, m2_err *err) {
    return m2_model_save_gguf_tok(m, path, type, meta_src, NULL, err);
}

int m2_model_save_gguf_tok(m2_model *m, const char *path, uint32_t type, const m2_gguf *meta_src,
                           const struct m2_tokenizer *tok, m2_err *err) {
    if (!m2_ggml_supported(type)) return m2_errorf(err, M2_EUNSUPPORTED, "%s: cannot write matrices as %s", path, m2_ggml_type_name(type));
    m2_hf_config h;
    m2_model_config_to_hf(&m->cfg, &h);
    m2_gguf_writer *w = m2_gguf_writer_new();
    if (!w) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_hf_config_to_gguf(&h, w);
    rc |= m2_gguf_set_str(w, "general.name", "multi2");
    rc |= m2_gguf_set_u32(w, "general.file_type", (uint32_t)file_type_of(type));
    int tb;
    m2_ggml_type_info(type, &tb, NULL, NULL);
    if (tb > 1) rc |= m2_gguf_set_u32(w, "general.quantization_version", 2);
    if (meta_src)
        for (uint64_t i = 0; i < meta_src->n_kv && !rc; i++)
            if (!strncmp(meta_src->kv[i].key, "tokenizer.", 10)) rc |= m2_gguf_set_kv(w, &meta_src->kv[i]);
    if (rc) { m2_gguf_writer_free(w); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); }
    if (!meta_src && tok && m2_tokenizer_write_gguf(tok, w, err)) { m2_gguf_writer_free(w); return m2_err_prefix(err, "%s: ", path); }
    void **owned = calloc((size_t)m->n_tensors + 1, sizeof(void *));
    if (!owned) { m2_gguf_writer_free(w); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    int llama = m->cfg.family != M2_FAMILY_QWEN2;
    /* models whose q/k rows are stored adjacent (rope_layout ADJACENT) are already in GGUF order */
    int need_perm = llama && m->cfg.rope_layout == M2_ROPE_HALF;
    for (int i = 0; i < m->n_tensors && !rc; i++) {
        m2_tensor *t = &m->tensors[i];
        int heads = need_perm ? permute_heads(m, t) : 0;
        uint32_t want = t->ndim == 2 ? type : M2_GGML_F32;
        if (t->cols % tb) want = M2_GGML_F32;   /* rows that are not whole blocks */
        int64_t ne[2] = {t->cols, t->rows};
        int nd = t->ndim == 2 ? 2 : 1;
        if (m2_dtype_to_ggml(t->dtype) == want) {
            /* same type: copy the stored bytes (bit-exact), rows permuted when needed */
            uint64_t nb, rb;
            m2_ggml_nbytes(want, (uint64_t)t->rows * t->cols, &nb);
            unsigned char *buf = malloc(nb ? nb : 1);
            if (!buf) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
            owned[i] = buf;
            if (heads) {
                m2_ggml_nbytes(want, t->ndim == 2 ? (uint64_t)t->cols : 1, &rb);
                m2_rope_permute_rows(t->data, buf, heads, (t->ndim == 2 ? t->rows : t->cols) / heads, rb, 1);
            } else memcpy(buf, t->data, nb);
            rc = m2_gguf_add_tensor(w, t->name, want, nd, ne, buf, nb, err);
        } else {
            float *f = tensor_f32(m, t, heads, err);
            if (!f) { rc = -1; break; }
            rc = m2_gguf_add_tensor_f32(w, t->name, want, nd, ne, f, err);
            free(f);
        }
    }
    float *rf = NULL;
    if (!rc && m->cfg.rope_scaling.type == 1 && llama) {
        rf = malloc(sizeof(float) * (size_t)h.head_dim / 2);
        if (!rf) rc = m2_errorf(err, M2_ENOMEM, "out of memory");
        else {
            m2_hf_llama3_rope_factors(&h, rf);
            int64_t ne[1] = {h.head_dim / 2};
            rc = m2_gguf_add_tensor(w, "rope_freqs.weight", M2_GGML_F32, 1, ne, rf, sizeof(float) * (uint64_t)ne[0], err);
        }
    }
    if (!rc) rc = m2_gguf_writer_write(w, path, err);
    else m2_err_prefix(err, "%s: ", path);
    m2_gguf_writer_free(w);
    for (int i = 0; i < m->n_tensors; i++) free(owned[i]);
    free(owned);
    free(rf);
    return rc;
}

static int copy_file(const char *src, const char *dst, m2_err *err) {
    char *buf;
    size_t len;
    if (m2_read_file(src, &buf, &len, err)) return -1;
    int rc = m2_write_file_atomic(dst, buf, len, err);
    free(buf);
    return rc;
}

int m2_model_save_hf(m2_model *m, const char *dir, uint32_t type, uint64_t shard_bytes, const char *tokenizer_dir, m2_err *err) {
    const char *tdn = type == M2_GGML_F32 ? "float32" : type == M2_GGML_F16 ? "float16" : type == M2_GGML_BF16 ? "bfloat16" : NULL;
    if (!tdn) return m2_errorf(err, M2_EUNSUPPORTED, "%s: safetensors models are written as f32, f16 or bf16, not %s", dir, m2_ggml_type_name(type));
    if (m2_mkdir_p(dir, err)) return -1;
    m2_hf_config h;
    m2_model_config_to_hf(&m->cfg, &h);
    snprintf(h.torch_dtype, sizeof h.torch_dtype, "%s", tdn);
    m2_st_writer *w = m2_st_writer_new();
    if (!w) return m2_errorf(err, M2_ENOMEM, "out of memory");
    int rc = m2_st_set_meta(w, "format", "pt");
    /* HF order is the canonical one; a model kept in GGUF order is permuted back */
    int need_perm = m->cfg.family != M2_FAMILY_QWEN2 && m->cfg.rope_layout == M2_ROPE_ADJACENT;
    for (int i = 0; i < m->n_tensors && !rc; i++) {
        m2_tensor *t = &m->tensors[i];
        char hn[128];
        if (m2_tensor_name_to_hf(t->name, hn, sizeof hn)) { rc = m2_errorf(err, M2_EINVAL, "no HF name for '%s'", t->name); break; }
        float *f = tensor_f32(m, t, 0, err);
        if (!f) { rc = -1; break; }
        if (need_perm && permute_heads(m, t)) {
            int heads = permute_heads(m, t), rows = t->ndim == 2 ? t->rows : t->cols;
            size_t n = (size_t)t->rows * t->cols, per_row = t->ndim == 2 ? (size_t)t->cols : 1;
            m2_rope_permute_rows(f, f + n, heads, rows / heads, per_row * sizeof(float), 0);
            memcpy(f, f + n, n * sizeof(float));
        }
        int64_t shape[2] = {t->ndim == 2 ? t->rows : t->cols, t->cols};
        rc = m2_st_add_f32(w, hn, type, t->ndim == 2 ? 2 : 1, shape, f, err);
        free(f);
    }
    char p[4200];
    if (!rc) {
        if (shard_bytes) rc = m2_st_write_sharded(w, dir, shard_bytes, err);
        else {
            snprintf(p, sizeof p, "%s/model.safetensors", dir);
            rc = m2_st_write(w, p, err);
        }
    }
    m2_st_writer_free(w);
    if (!rc) {
        snprintf(p, sizeof p, "%s/config.json", dir);
        rc = m2_hf_config_save(&h, p, err);
    }
    static const char *tok_files[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                      "generation_config.json", "tokenizer.model"};
    if (!rc && tokenizer_dir && strcmp(tokenizer_dir, dir))
        for (size_t i = 0; i < sizeof tok_files / sizeof tok_files[0] && !rc; i++) {
            char src[4200];
            snprintf(src, sizeof src, "%s/%s", tokenizer_dir, tok_files[i]);
            snprintf(p, sizeof p, "%s/%s", dir, tok_files[i]);
            if (m2_path_exists(src)) rc = copy_file(src, p, err);
        }
    return rc;
}
