#include "model/weights.h"
#include "model/lora.h"
#include "model/heads.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void m2_adapter_free_internal(m2_adapter *a);   /* lora.c */
void m2_head_free_internal(m2_head *h);         /* heads.c */

m2_wref m2_tensor_wref(const m2_tensor *t) {
    m2_wref r = {t->dtype, t->data, t->rows, t->cols};
    return r;
}

static m2_tensor *add_tensor(m2_model *m, const char *name, int layer, int kind, int rows, int cols,
                             int ndim) {
    m2_tensor *t = &m->tensors[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->layer = layer; t->kind = kind; t->rows = rows; t->cols = cols; t->ndim = ndim;
    return t;
}

m2_model *m2_model_create(const m2_model_config *cfg, const m2_model_opts *opts, m2_err *err) {
    return m2_model_create_from(cfg, opts, NULL, NULL, err);
}

void m2_model_set_owner(m2_model *m, void *owner, void (*owner_free)(void *owner)) {
    m->owner = owner;
    m->owner_free = owner_free;
}

m2_model *m2_model_create_from(const m2_model_config *cfg_in, const m2_model_opts *opts, m2_tensor_src_fn fn,
                               void *ud, m2_err *err) {
    m2_model_config cfg = *cfg_in;
    if (m2_config_validate(&cfg, err)) return NULL;
    m2_model_opts o = {M2_DT_F32, 0, 0};
    if (opts) o = *opts;
    const m2_dtype_info *di = m2_dtype_info_of(o.dtype);
    if (!di) { m2_errorf(err, M2_EINVAL, "model: unknown storage dtype %d", (int)o.dtype); return NULL; }
    if (!fn && !di->quantize) {
        m2_errorf(err, M2_EUNSUPPORTED, "model: %s storage can only come from a file (no encoder from f32)", di->name);
        return NULL;
    }
    if (o.train_base && (o.dtype != M2_DT_F32 || fn)) {
        m2_errorf(err, M2_EINVAL, "model: train_base needs dtype f32 (got %s)", m2_dtype_name(o.dtype));
        return NULL;
    }
    if (!fn && di->block > 1 && (cfg.dim % di->block || cfg.ffn_dim % di->block || (cfg.n_heads * cfg.head_dim) % di->block)) {
        m2_errorf(err, M2_ESHAPE, "model: %s storage needs dim, ffn_dim and n_heads*head_dim multiples of %d", di->name, di->block);
        return NULL;
    }
    m2_model *m = calloc(1, sizeof *m);
    if (!m) { m2_errorf(err, M2_ENOMEM, "model: out of memory"); return NULL; }
    m->cfg = cfg; m->opts = o;
    int L = cfg.n_layers, H = cfg.dim, F = cfg.ffn_dim;
    int qd = cfg.n_heads * cfg.head_dim, kd = cfg.n_kv_heads * cfg.head_dim;
    m->tensors = calloc((size_t)3 + (size_t)L * 12, sizeof(m2_tensor));
    m->layers = calloc((size_t)L, sizeof(m2_layer));
    m->rope_freq = calloc((size_t)cfg.head_dim / 2, sizeof(float));
    if (!m->tensors || !m->layers || !m->rope_freq) goto oom;
    char nm[64];
    m->tok_embd = add_tensor(m, "token_embd.weight", -1, M2_T_EMBD, cfg.vocab_size, H, 2);
    for (int l = 0; l < L; l++) {
        m2_layer *ly = &m->layers[l];
#define T(field, suffix, kind, r, c, nd) \
        snprintf(nm, sizeof nm, "blk.%d." suffix, l); ly->field = add_tensor(m, nm, l, kind, r, c, nd)
        T(attn_norm, "attn_norm.weight", M2_T_ATTN_NORM, 1, H, 1);
        T(wq, "attn_q.weight", M2_T_Q, qd, H, 2);
        T(wk, "attn_k.weight", M2_T_K, kd, H, 2);
        T(wv, "attn_v.weight", M2_T_V, kd, H, 2);
        if (cfg.qkv_bias) {
            T(bq, "attn_q.bias", M2_T_QB, 1, qd, 1);
            T(bk, "attn_k.bias", M2_T_KB, 1, kd, 1);
            T(bv, "attn_v.bias", M2_T_VB, 1, kd, 1);
        }
        T(wo, "attn_output.weight", M2_T_O, H, qd, 2);
        T(ffn_norm, "ffn_norm.weight", M2_T_FFN_NORM, 1, H, 1);
        T(wg, "ffn_gate.weight", M2_T_GATE, F, H, 2);
        T(wu, "ffn_up.weight", M2_T_UP, F, H, 2);
        T(wd, "ffn_down.weight", M2_T_DOWN, H, F, 2);
#undef T
    }
    m->out_norm = add_tensor(m, "output_norm.weight", -1, M2_T_OUT_NORM, 1, H, 1);
    m->output = cfg.tied_embeddings ? m->tok_embd
                                    : add_tensor(m, "output.weight", -1, M2_T_OUTPUT, cfg.vocab_size, H, 2);
    /* storage: mapped tensors stay where they are, f32 tensors go into the base params arena,
     * others into qstore */
    size_t nf = 0, qb = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        m2_tensor_src src = {t->ndim == 2 ? o.dtype : M2_DT_F32, NULL};
        if (fn && t->ndim == 2 && fn(ud, t, &src, err)) { m2_model_free(m); return NULL; }
        const m2_dtype_info *ti = m2_dtype_info_of(src.dtype);
        if (!ti || t->cols % ti->block) {
            m2_errorf(err, M2_ESHAPE, "model: tensor '%s': %d columns are not a whole number of %s blocks", t->name,
                      t->cols, ti ? ti->name : "?");
            m2_model_free(m);
            return NULL;
        }
        t->dtype = src.dtype;
        size_t n = (size_t)t->rows * t->cols;
        if (src.data) {
            t->data = (void *)src.data;
            t->mapped = 1;
            m->mapped_bytes += m2_dtype_bytes(t->dtype, n);
        } else if (t->dtype == M2_DT_F32) nf += (n + 15) & ~(size_t)15;
        else qb += (m2_dtype_bytes(t->dtype, n) + 63) & ~(size_t)63;
    }
    if (m2_params_init(&m->base, nf, o.train_base, err)) { free(m->tensors); free(m->layers); free(m->rope_freq); free(m); return NULL; }
    if (qb) {
        m->qstore = m2_malloc_aligned(qb);
        if (!m->qstore) goto oom;
        memset(m->qstore, 0, qb);
        m->qstore_bytes = qb;
    }
    nf = 0; qb = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        size_t n = (size_t)t->rows * t->cols;
        if (t->mapped) continue;
        if (t->dtype == M2_DT_F32) {
            t->data = m->base.w + nf;
            if (m->base.g) t->grad = m->base.g + nf;
            nf += (n + 15) & ~(size_t)15;
        } else {
            t->data = m->qstore + qb;
            qb += (m2_dtype_bytes(t->dtype, n) + 63) & ~(size_t)63;
        }
    }
    /* norms start at 1 so an unfilled model is well defined */
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        if (t->kind == M2_T_ATTN_NORM || t->kind == M2_T_FFN_NORM || t->kind == M2_T_OUT_NORM)
            for (int j = 0; j < t->cols; j++) ((float *)t->data)[j] = 1.0f;
    }
    m2_rope_freqs(m->rope_freq, cfg.head_dim, cfg.rope_theta, &cfg.rope_scaling);
    {
        int np = cfg.max_seq_len < 32768 ? cfg.max_seq_len : 32768;
        float *tc = malloc(sizeof(float) * (size_t)np * cfg.head_dim);   /* cos | sin */
        if (!tc) goto oom;
        m2_rope_table_fill(tc, tc + (size_t)np * (cfg.head_dim / 2), np, m->rope_freq, cfg.head_dim);
        m->rope_tab.cos = tc;
        m->rope_tab.sin = tc + (size_t)np * (cfg.head_dim / 2);
        m->rope_tab.n_pos = np;
    }
    m->pool = m2_pool_create(o.threads, err);
    if (!m->pool) { m2_model_free(m); return NULL; }
    m2_blas_single_thread();   /* the pool splits every GEMM; BLAS threads would spin against it */
    return m;
oom:
    m2_errorf(err, M2_ENOMEM, "model: out of memory");
    m2_model_free(m);
    return NULL;
}

void m2_model_free(m2_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_adapters; i++) m2_adapter_free_internal(m->adapters[i]);
    for (int i = 0; i < m->n_heads; i++) m2_head_free_internal(m->heads[i]);
    free(m->adapters); free(m->heads);
    m2_params_free(&m->base);
    free(m->qstore); free(m->tensors); free(m->layers); free(m->rope_freq);
    free((float *)m->rope_tab.cos);
    m2_pool_destroy(m->pool);
    if (m->owner_free) m->owner_free(m->owner);
    free(m);
}

int m2_model_set_rope_freq_factors(m2_model *m, const float *factors, int n, m2_err *err) {
    int half = m->cfg.head_dim / 2;
    if (n != half) return m2_errorf(err, M2_ESHAPE, "rope_freqs: expected %d factors, got %d", half, n);
    for (int i = 0; i < half; i++)
        if (!(factors[i] > 0)) return m2_errorf(err, M2_EINVAL, "rope_freqs: factor %d is not positive", i);
    m2_rope_freqs(m->rope_freq, m->cfg.head_dim, m->cfg.rope_theta, NULL);
    for (int i = 0; i < half; i++) m->rope_freq[i] /= factors[i];
    m->cfg.rope_scaling.type = 0;
    m2_rope_table_fill((float *)m->rope_tab.cos, (float *)m->rope_tab.sin, m->rope_tab.n_pos, m->rope_freq,
                       m->cfg.head_dim);
    return 0;
}

m2_tensor *m2_model_find(m2_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

int m2_model_set_tensor(m2_model *m, const char *name, m2_dtype src_dtype, const void *src,
                        size_t n_values, m2_err *err) {
    m2_tensor *t = m2_model_find(m, name);
    if (!t) return m2_errorf(err, M2_ENOTFOUND, "tensor '%s': not part of this model", name);
    size_t n = (size_t)t->rows * t->cols;
    if (n_values != n)
        return m2_errorf(err, M2_ESHAPE, "tensor '%s': expected %d x %d = %zu values, got %zu", name,
                         t->rows, t->cols, n, n_values);
    const m2_dtype_info *si = m2_dtype_info_of(src_dtype);
    if (!si) return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': unsupported source dtype %d", name, (int)src_dtype);
    if (t->cols % si->block)
        return m2_errorf(err, M2_ESHAPE, "tensor '%s': %s rows must be multiples of %d (cols %d)", name, si->name, si->block, t->cols);
    if (src_dtype != t->dtype && t->dtype != M2_DT_F32 && !m2_dtype_info_of(t->dtype)->quantize)
        return m2_errorf(err, M2_EUNSUPPORTED, "tensor '%s': stored as %s, which cannot be encoded from %s", name,
                         m2_dtype_name(t->dtype), si->name);
    if (src_dtype == t->dtype) {
        memcpy(t->data, src, m2_dtype_bytes(t->dtype, n));
        return 0;
    }
    if (t->dtype == M2_DT_F32) { m2_dequantize(src_dtype, src, t->data, n); return 0; }
    /* convert row by row through f32 */
    float *row = malloc((size_t)t->cols * sizeof(float));
    if (!row) return m2_errorf(err, M2_ENOMEM, "tensor '%s': out of memory", name);
    size_t sb = m2_dtype_bytes(src_dtype, t->cols), db = m2_dtype_bytes(t->dtype, t->cols);
    for (int r = 0; r < t->rows; r++) {
        m2_dequantize(src_dtype, (const unsigned char *)src + sb * r, row, t->cols);
        m2_quantize(t->dtype, row, (unsigned char *)t->data + db * r, t->cols);
    }
    free(row);
    return 0;
}

int m2_model_get_tensor_f32(m2_model *m, const char *name, float *dst, m2_err *err) {
    m2_tensor *t = m2_model_find(m, name);
    if (!t) return m2_errorf(err, M2_ENOTFOUND, "tensor '%s': not part of this model", name);
    m2_dequantize(t->dtype, t->data, dst, (size_t)t->rows * t->cols);
    return 0;
}

void m2_model_init_random(m2_model *m, uint64_t seed, float std) {
    m2_rng rng;
    m2_rng_seed(&rng, seed);
    float out_std = std / sqrtf(2.0f * m->cfg.n_layers);
    for (int i = 0; i < m->n_tensors; i++) {
        m2_tensor *t = &m->tensors[i];
        size_t n = (size_t)t->rows * t->cols;
        if (t->ndim == 1) {
            float v = (t->kind == M2_T_QB || t->kind == M2_T_KB || t->kind == M2_T_VB) ? 0.0f : 1.0f;
            for (size_t j = 0; j < n; j++) ((float *)t->data)[j] = v;
            continue;
        }
        float s = (t->kind == M2_T_O || t->kind == M2_T_DOWN) ? out_std : std;
        float *buf = malloc(n * sizeof(float));
        if (!buf) continue;
        for (size_t j = 0; j < n; j++) buf[j] = s * m2_rng_normal(&rng);
        m2_model_set_tensor(m, t->name, M2_DT_F32, buf, n, NULL);
        free(buf);
    }
}
