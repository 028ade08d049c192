#include "model/memplan.h"
#include "model/forward.h"
#include "model/heads.h"
#include "model/lora.h"

m2_model_mem m2_memory_plan(const m2_model *m, int train_tokens, int train_acts, int logit_chunk_rows, int kv_seqs,
                            int kv_len) {
    m2_model_mem p = {0};
    p.weights = m->base.n * sizeof(float) + m->qstore_bytes + m->mapped_bytes;
    if (m->opts.train_base) p.base_train = 3 * m->base.n * sizeof(float);
    for (int i = 0; i < m->n_adapters; i++) {
        size_t n = m->adapters[i]->params.n * sizeof(float);
        p.adapters += n;
        if (m->adapters[i]->params.trainable) p.adapter_train += 3 * n;
    }
    for (int i = 0; i < m->n_heads; i++) p.heads += 5 * m->heads[i]->params.n * sizeof(float);
    if (train_tokens > 0) {
        p.activations = m2_ctx_bytes_for_chunked((m2_model *)m, train_tokens,
                                                 train_acts == M2_ACTS_RECOMPUTE ? M2_ACTS_RECOMPUTE : M2_ACTS_KEEP,
                                                 logit_chunk_rows);
        p.grad_shadows = m2_ctx_shadow_bytes_for((m2_model *)m);
    }
    if (kv_seqs > 0 && kv_len > 0)
        p.kv_cache = 2 * (size_t)m->cfg.n_layers * kv_seqs * kv_len * m->cfg.n_kv_heads * m->cfg.head_dim * sizeof(float);
    p.total = p.weights + p.base_train + p.adapters + p.adapter_train + p.heads + p.activations + p.grad_shadows +
              p.kv_cache;
    return p;
}

static void line(FILE *f, const char *what, size_t b) {
    fprintf(f, "  %-34s %10.2f MiB\n", what, b / 1048576.0);
}

void m2_model_mem_print(FILE *f, const m2_model_mem *p) {
    fprintf(f, "memory plan:\n");
    line(f, "base weights", p->weights);
    if (p->base_train) line(f, "base grads + AdamW moments", p->base_train);
    line(f, "LoRA adapters", p->adapters);
    line(f, "LoRA grads + AdamW moments", p->adapter_train);
    line(f, "heads (+targets, grads, moments)", p->heads);
    line(f, "activations (training ctx)", p->activations);
    if (p->grad_shadows) line(f, "grad shadows (row-parallel threads)", p->grad_shadows);
    line(f, "KV cache", p->kv_cache);
    line(f, "total", p->total);
}

void m2_model_mem_to_plan(const m2_model_mem *p, m2_memplan *out) {
    const struct { const char *name; size_t b; } rows[] = {
        {"base weights", p->weights},           {"base grads + AdamW moments", p->base_train},
        {"LoRA adapters", p->adapters},          {"LoRA grads + AdamW moments", p->adapter_train},
        {"heads (+targets, grads, moments)", p->heads}, {"activations (training ctx)", p->activations},
        {"grad shadows (row-parallel threads)", p->grad_shadows},
        {"KV cache", p->kv_cache},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].b) m2_memplan_add(out, rows[i].name, (double)rows[i].b);
}
