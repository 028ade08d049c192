/* A model with its own tokenizer and an optional adapter, opened from paths as users give them
 * (what `multi2 logits`, `generate` and `merge` start from). The tokenizer is the model's own:
 * the GGUF's tokenizer.ggml.* metadata, or tokenizer.json beside an HF model. */
#ifndef M2_IO_BUNDLE_H
#define M2_IO_BUNDLE_H
#include "core/err.h"
#include "io/hf_config.h"
#include "io/tokenizer.h"
#include "model/model.h"

typedef struct m2_bundle {
    m2_model *model;
    m2_tokenizer *tok;      /* NULL only when need_tokenizer was 0 and none was found */
    m2_adapter *adapter;    /* the adapter given, or NULL */
    m2_hf_config hf;        /* the model file's config */
} m2_bundle;

/* model: GGUF file or HF folder / safetensors file; adapter (may be NULL): PEFT folder or LoRA
 * GGUF; tokenizer (may be NULL): overrides the model's own. opts NULL = dtype from the file. */
int m2_bundle_open(m2_bundle *b, const char *model, const char *adapter, const char *tokenizer,
                   const m2_model_opts *opts, int need_tokenizer, m2_err *err);
void m2_bundle_close(m2_bundle *b);

/* Where the model's own tokenizer lives: the GGUF itself, or the HF folder. */
void m2_bundle_tokenizer_path(const char *model, char *out, int cap);
/* Encodes a prompt as the model asks: BOS only when the tokenizer says add_bos, never EOS; special
 * token text (e.g. <|im_start|>) is parsed. Checks every id is inside the model's vocabulary. */
int m2_bundle_encode(const m2_bundle *b, const char *text, m2_tokens *out, m2_err *err);

#endif
