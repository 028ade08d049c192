/* Named LoRA adapters over one frozen (or trained) base. Each adapter has its own rank, alpha,
 * dropout and target projections; its A/B factors, grads and AdamW moments live in the adapter's
 * own m2_params group (never a copy of the base). Applied as y = W x + (alpha/r) B A drop(x);
 * the base is untouched unless merged explicitly.
 * Adapter tensor names: "<base tensor name>.lora_a" [r, in] and ".lora_b" [out, r]
 * (the same layouts as PEFT lora_A.weight / lora_B.weight and GGUF LoRA files). */
#ifndef M2_MODEL_LORA_H
#define M2_MODEL_LORA_H
#include <stdint.h>
#include "model/weights.h"

enum { M2_LORA_Q = 1 << 0, M2_LORA_K = 1 << 1, M2_LORA_V = 1 << 2, M2_LORA_O = 1 << 3,
       M2_LORA_GATE = 1 << 4, M2_LORA_UP = 1 << 5, M2_LORA_DOWN = 1 << 6, M2_LORA_ALL = 127 };
#define M2_LORA_N_TARGETS 7

typedef struct m2_lora_config {
    char name[64];
    int rank;
    float alpha;      /* scale = alpha / rank */
    float dropout;    /* on the adapter's input during training forwards, 0 = none */
    unsigned targets; /* M2_LORA_* bits */
} m2_lora_config;

/* Per layer and target projection, A [r, in] and B [out, r] point into params.w (grads: .g at the
 * same offsets). NULL when the projection is not targeted. */
typedef struct m2_lora_pair {
    float *A, *B, *dA, *dB;
    int in, out;
    m2_tensor *base;    /* the projection it modifies */
} m2_lora_pair;

struct m2_adapter {
    m2_lora_config cfg;
    float scale;                 /* alpha / rank */
    m2_params params;            /* all A and B factors, contiguous */
    m2_lora_pair *pairs;         /* [n_layers * M2_LORA_N_TARGETS], index layer*7 + target bit index */
    int merged;                  /* 1 while merged into the base */
    int index;                   /* position in model->adapters */
    int n_layers;
};

/* Parses "q,v" / "q_proj,v_proj" / "all" into target bits; -1 on an unknown name. */
int m2_lora_parse_targets(const char *s, unsigned *out);
/* Adds a named adapter (name unique). A ~ PEFT's kaiming-uniform (bound 1/sqrt(in)), B = 0, so a
 * new adapter leaves the base function unchanged. Trainable unless frozen later. */
m2_adapter *m2_adapter_add(m2_model *m, const m2_lora_config *cfg, uint64_t seed, m2_err *err);
m2_adapter *m2_adapter_find(m2_model *m, const char *name);
/* Freezes (on = 0: frees grads and AdamW moments; forwards still apply it, backwards compute no
 * factor gradients) or unfreezes (allocates zeroed grads; moments on the next AdamW step). */
int m2_adapter_set_trainable(m2_adapter *a, int on, m2_err *err);
/* Removes and frees an adapter (must not be merged). */
int m2_adapter_remove(m2_model *m, m2_adapter *a, m2_err *err);
/* Copies factors from src to dst (same config shapes), e.g. to snapshot a reference policy. */
int m2_adapter_copy_weights(m2_adapter *dst, const m2_adapter *src, m2_err *err);

/* Enumeration by name for I/O: count, then (name, rows, cols, f32 pointer into params.w). */
int m2_adapter_tensor_count(const m2_adapter *a);
int m2_adapter_tensor_info(const m2_adapter *a, int i, char *name, int name_cap, int *rows,
                           int *cols, float **data);
float *m2_adapter_tensor(m2_adapter *a, const char *name, int *rows, int *cols);

/* W += scale * B A for every target (merge) or W -= (unmerge). Exact for f32 bases; for
 * f16/bf16/Q8_0 bases the result is re-rounded to the storage type (lossy: unmerge does not
 * restore the bits). While merged, forwards must not name the adapter (an error). */
int m2_adapter_merge(m2_model *m, m2_adapter *a, m2_err *err);
int m2_adapter_unmerge(m2_model *m, m2_adapter *a, m2_err *err);

#endif
