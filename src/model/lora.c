#include "model/lora.h"
#include "core/arena.h"
#include "kernels/matmul.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *target_names[M2_LORA_N_TARGETS] = {"q", "k", "v", "o", "gate", "up", "down"};

static m2_tensor *target_tensor(m2_layer *ly, int t) {
    switch (t) {
    case 0: return ly->wq; case 1: return ly->wk; case 2: return ly->wv; case 3: return ly->wo;
    case 4: return ly->wg; case 5: return ly->wu; default: return ly->wd;
    }
}

int m2_lora_parse_targets(const char *s, unsigned *out) {
    unsigned bits = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
        if (!strcmp(tok, "all") || !strcmp(tok, "all-linear")) { bits |= M2_LORA_ALL; continue; }
        char name[32];
        snprintf(name, sizeof name, "%s", tok);
        size_t n = strlen(name);
        if (n > 5 && !strcmp(name + n - 5, "_proj")) name[n - 5] = 0;
        int found = -1;
        for (int i = 0; i < M2_LORA_N_TARGETS; i++)
            if (!strcmp(name, target_names[i])) found = i;
        if (found < 0) return -1;
        bits |= 1u << found;
    }
    *out = bits;
    return bits ? 0 : -1;
}

void m2_adapter_free_internal(m2_adapter *a) {
    if (!a) return;
    m2_params_free(&a->params);
    free(a->pairs);
    free(a);
}

m2_adapter *m2_adapter_find(m2_model *m, const char *name) {
    for (int i = 0; i < m->n_adapters; i++)
        if (!strcmp(m->adapters[i]->cfg.name, name)) return m->adapters[i];
    return NULL;
}

m2_adapter *m2_adapter_add(m2_model *m, const m2_lora_config *cfg, uint64_t seed, m2_err *err) {
    if (!cfg->name[0]) { m2_errorf(err, M2_EINVAL, "lora: adapter needs a name"); return NULL; }
    if (m2_adapter_find(m, cfg->name)) { m2_errorf(err, M2_EINVAL, "lora '%s': name already used", cfg->name); return NULL; }
    if (cfg->rank <= 0 || cfg->rank > 4096) { m2_errorf(err, M2_ECONFIG, "lora '%s': field 'rank' must be in 1..4096 (got %d)", cfg->name, cfg->rank); return NULL; }
    if (!(cfg->dropout >= 0 && cfg->dropout < 1)) { m2_errorf(err, M2_ECONFIG, "lora '%s': field 'dropout' must be in [0,1)", cfg->name); return NULL; }
    if (!(cfg->targets & M2_LORA_ALL)) { m2_errorf(err, M2_ECONFIG, "lora '%s': field 'targets' is empty", cfg->name); return NULL; }
    m2_adapter *a = calloc(1, sizeof *a);
    m2_adapter **list = realloc(m->adapters, sizeof *list * (m->n_adapters + 1));
    if (!a || !list) { free(a); if (list) m->adapters = list; m2_errorf(err, M2_ENOMEM, "lora: out of memory"); return NULL; }
    m->adapters = list;
    a->cfg = *cfg;
    a->cfg.targets &= M2_LORA_ALL;
    a->scale = (cfg->alpha > 0 ? cfg->alpha : cfg->rank) / (float)cfg->rank;
    int L = m->cfg.n_layers, r = cfg->rank;
    a->pairs = calloc((size_t)L * M2_LORA_N_TARGETS, sizeof *a->pairs);
    if (!a->pairs) { free(a); m2_errorf(err, M2_ENOMEM, "lora: out of memory"); return NULL; }
    size_t n = 0;
    for (int l = 0; l < L; l++)
        for (int t = 0; t < M2_LORA_N_TARGETS; t++)
            if (a->cfg.targets & (1u << t)) {
                m2_tensor *w = target_tensor(&m->layers[l], t);
                n += (size_t)r * w->cols + (size_t)w->rows * r;
            }
    if (m2_params_init(&a->params, n, 1, err)) { free(a->pairs); free(a); return NULL; }
    m2_rng rng;
    m2_rng_seed(&rng, seed);
    size_t off = 0;
    for (int l = 0; l < L; l++)
        for (int t = 0; t < M2_LORA_N_TARGETS; t++) {
            if (!(a->cfg.targets & (1u << t))) continue;
            m2_lora_pair *p = &a->pairs[l * M2_LORA_N_TARGETS + t];
            m2_tensor *w = target_tensor(&m->layers[l], t);
            p->base = w; p->in = w->cols; p->out = w->rows;
            p->A = a->params.w + off; p->dA = a->params.g + off; off += (size_t)r * p->in;
            p->B = a->params.w + off; p->dB = a->params.g + off; off += (size_t)p->out * r;
            float bound = 1.0f / sqrtf((float)p->in);
            for (size_t i = 0; i < (size_t)r * p->in; i++) p->A[i] = bound * (2.0f * m2_rng_uniform(&rng) - 1.0f);
        }
    a->n_layers = L;
    a->index = m->n_adapters;
    m->adapters[m->n_adapters++] = a;
    return a;
}

int m2_adapter_set_trainable(m2_adapter *a, int on, m2_err *err) {
    m2_params *p = &a->params;
    if (!on) {
        free(p->g); free(p->m); free(p->v);
        p->g = p->m = p->v = NULL;
        p->trainable = 0;
    } else if (!p->g) {
        p->g = m2_malloc_aligned((p->n ? p->n : 1) * sizeof(float));
        if (!p->g) return m2_errorf(err, M2_ENOMEM, "lora '%s': out of memory for gradients", a->cfg.name);
        memset(p->g, 0, p->n * sizeof(float));
        p->trainable = 1;
    }
    /* re-point the per-pair gradient views */
    for (int l = 0; l < a->n_layers; l++)
        for (int t = 0; t < M2_LORA_N_TARGETS; t++) {
            m2_lora_pair *q = &a->pairs[l * M2_LORA_N_TARGETS + t];
            if (!q->A) continue;
            q->dA = p->g ? p->g + (q->A - p->w) : NULL;
            q->dB = p->g ? p->g + (q->B - p->w) : NULL;
        }
    return 0;
}

int m2_adapter_remove(m2_model *m, m2_adapter *a, m2_err *err) {
    if (a->merged) return m2_errorf(err, M2_EINVAL, "lora '%s': unmerge before removing", a->cfg.name);
    int k = -1;
    for (int i = 0; i < m->n_adapters; i++) if (m->adapters[i] == a) k = i;
    if (k < 0) return m2_errorf(err, M2_ENOTFOUND, "lora '%s': not on this model", a->cfg.name);
    for (int i = k; i + 1 < m->n_adapters; i++) { m->adapters[i] = m->adapters[i + 1]; m->adapters[i]->index = i; }
    m->n_adapters--;
    m2_adapter_free_internal(a);
    return 0;
}

int m2_adapter_copy_weights(m2_adapter *dst, const m2_adapter *src, m2_err *err) {
    if (dst->params.n != src->params.n || dst->cfg.rank != src->cfg.rank || dst->cfg.targets != src->cfg.targets)
        return m2_errorf(err, M2_ESHAPE, "lora: cannot copy '%s' into '%s': different rank or targets", src->cfg.name, dst->cfg.name);
    memcpy(dst->params.w, src->params.w, src->params.n * sizeof(float));
    return 0;
}

int m2_adapter_tensor_count(const m2_adapter *a) {
    int n = 0;
    for (int t = 0; t < M2_LORA_N_TARGETS; t++) if (a->cfg.targets & (1u << t)) n++;
    return n * 2 * a->n_layers;
}

int m2_adapter_tensor_info(const m2_adapter *a, int i, char *name, int name_cap, int *rows,
                           int *cols, float **data) {
    int k = 0;
    for (int l = 0; l < a->n_layers; l++)
        for (int t = 0; t < M2_LORA_N_TARGETS; t++) {
            const m2_lora_pair *p = &a->pairs[l * M2_LORA_N_TARGETS + t];
            if (!p->A) continue;
            for (int ab = 0; ab < 2; ab++, k++) {
                if (k != i) continue;
                if (name) snprintf(name, name_cap, "%s.lora_%c", p->base->name, ab ? 'b' : 'a');
                if (rows) *rows = ab ? p->out : a->cfg.rank;
                if (cols) *cols = ab ? a->cfg.rank : p->in;
                if (data) *data = ab ? p->B : p->A;
                return 0;
            }
        }
    return -1;
}

float *m2_adapter_tensor(m2_adapter *a, const char *name, int *rows, int *cols) {
    char nm[96];
    float *d = NULL;
    for (int i = 0; i < m2_adapter_tensor_count(a); i++) {
        m2_adapter_tensor_info(a, i, nm, sizeof nm, rows, cols, &d);
        if (!strcmp(nm, name)) return d;
    }
    return NULL;
}

static int merge_sign(m2_model *m, m2_adapter *a, float sign, m2_err *err) {
    int r = a->cfg.rank;
    /* every target checked first, so a refusal leaves the base untouched */
    for (int s = 0; s < a->n_layers * M2_LORA_N_TARGETS; s++) {
        const m2_tensor *w = a->pairs[s].A ? a->pairs[s].base : NULL;
        if (w && !m2_dtype_info_of(w->dtype)->quantize)
            return m2_errorf(err, M2_EUNSUPPORTED, "lora '%s': base tensor '%s' is stored as %s, which cannot be re-encoded after merging; load the base as f32",
                             a->cfg.name, w->name, m2_dtype_name(w->dtype));
    }
    for (int l = 0; l < a->n_layers; l++)
        for (int t = 0; t < M2_LORA_N_TARGETS; t++) {
            m2_lora_pair *p = &a->pairs[l * M2_LORA_N_TARGETS + t];
            if (!p->A) continue;
            m2_tensor *w = p->base;
            size_t n = (size_t)w->rows * w->cols;
            float *f = w->dtype == M2_DT_F32 ? w->data : malloc(n * sizeof(float));
            if (!f) return m2_errorf(err, M2_ENOMEM, "lora '%s': out of memory merging %s", a->cfg.name, w->name);
            if (w->dtype != M2_DT_F32) m2_dequantize(w->dtype, w->data, f, n);
            /* W[out,in] += sign * scale * B[out,r] A[r,in] */
            m2_sgemm_serial(0, 0, p->out, p->in, r, sign * a->scale, p->B, r, p->A, p->in, 1.0f, f, p->in);
            if (w->dtype != M2_DT_F32) { m2_quantize(w->dtype, f, w->data, n); free(f); }
        }
    return 0;
}

int m2_adapter_merge(m2_model *m, m2_adapter *a, m2_err *err) {
    if (a->merged) return m2_errorf(err, M2_EINVAL, "lora '%s': already merged", a->cfg.name);
    if (merge_sign(m, a, 1.0f, err)) return -1;
    a->merged = 1;
    return 0;
}

int m2_adapter_unmerge(m2_model *m, m2_adapter *a, m2_err *err) {
    if (!a->merged) return m2_errorf(err, M2_EINVAL, "lora '%s': not merged", a->cfg.name);
    if (merge_sign(m, a, -1.0f, err)) return -1;
    a->merged = 0;
    return 0;
}
