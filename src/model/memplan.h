/* Memory plan: bytes for base weights, adapters (+grads, moments), heads, activations and the KV
 * cache, printed before training. */
#ifndef M2_MODEL_MEMPLAN_H
#define M2_MODEL_MEMPLAN_H
#include <stdio.h>
#include "model/weights.h"

typedef struct m2_model_mem {
    size_t weights;      /* base storage (any dtype) */
    size_t base_train;   /* base grads + moments when the base is trained */
    size_t adapters;     /* LoRA factors */
    size_t adapter_train;/* their grads + AdamW moments */
    size_t heads;        /* heads + targets + grads + moments */
    size_t activations;  /* training ctx for train_tokens */
    size_t grad_shadows; /* row-parallel backward: per-thread weight-gradient copies */
    size_t kv_cache;     /* kv_seqs * kv_len */
    size_t total;
} m2_model_mem;

/* Adapters and heads counted from those already added to m. train_acts, logit_chunk_rows: those
 * of the training ctx (M2_ACTS_KEEP or M2_ACTS_RECOMPUTE; 0 rows = logits stored whole). */
m2_model_mem m2_memory_plan(const m2_model *m, int train_tokens, int train_acts, int logit_chunk_rows, int kv_seqs,
                            int kv_len);
void m2_model_mem_print(FILE *f, const m2_model_mem *p);
/* Adds the non-zero rows to a run's memory-plan table (core/progress.h). */
void m2_model_mem_to_plan(const m2_model_mem *p, m2_memplan *out);

#endif
