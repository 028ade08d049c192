#include "io/bundle.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "io/model_load.h"
#include "io/peft.h"

void m2_bundle_tokenizer_path(const char *model, char *out, int cap) {
    struct stat s;
    if (stat(model, &s) == 0 && S_ISDIR(s.st_mode)) { snprintf(out, (size_t)cap, "%s", model); return; }
    if (m2_is_gguf(model)) { snprintf(out, (size_t)cap, "%s", model); return; }
    const char *slash = strrchr(model, '/');
    if (!slash) snprintf(out, (size_t)cap, ".");
    else snprintf(out, (size_t)cap, "%.*s", (int)(slash - model), model);
}

void m2_bundle_close(m2_bundle *b) {
    if (!b) return;
    m2_tokenizer_free(b->tok);
    m2_model_free(b->model);   /* frees its adapters */
    memset(b, 0, sizeof *b);
}

int m2_bundle_open(m2_bundle *b, const char *model, const char *adapter, const char *tokenizer,
                   const m2_model_opts *opts, int need_tokenizer, m2_err *err) {
    memset(b, 0, sizeof *b);
    if (!(b->model = m2_model_load(model, opts, &b->hf, err))) return -1;
    char tp[4096];
    if (tokenizer) snprintf(tp, sizeof tp, "%s", tokenizer);
    else m2_bundle_tokenizer_path(model, tp, sizeof tp);
    m2_err terr = {0};
    b->tok = m2_tokenizer_load(tp, &terr);
    if (!b->tok && (need_tokenizer || tokenizer)) {
        *err = terr;
        m2_err_prefix(err, "tokenizer of %s: ", model);
        m2_bundle_close(b);
        return -1;
    }
    if (b->tok && m2_tokenizer_n_tokens(b->tok) > b->model->cfg.vocab_size) {
        /* ids past the embedding would be out of range; a smaller tokenizer is fine (padded vocab) */
        int32_t n = m2_tokenizer_n_tokens(b->tok);
        m2_errorf(err, M2_ECONFIG, "%s: the tokenizer (%s) has %d tokens, the model's vocabulary only %d", model, tp, (int)n, b->model->cfg.vocab_size);
        m2_bundle_close(b);
        return -1;
    }
    if (adapter && !(b->adapter = m2_adapter_load(b->model, adapter, NULL, err))) {
        m2_bundle_close(b);
        return -1;
    }
    return 0;
}

int m2_bundle_encode(const m2_bundle *b, const char *text, m2_tokens *out, m2_err *err) {
    if (!b->tok) return m2_errorf(err, M2_EINVAL, "no tokenizer");
    unsigned flags = m2_tokenizer_add_bos(b->tok) && m2_tokenizer_bos(b->tok) >= 0 ? M2_ENC_BOS : 0;
    if (m2_tokenizer_encode(b->tok, text, strlen(text), flags, out, err)) return -1;
    for (size_t i = 0; i < out->n; i++)
        if (out->ids[i] < 0 || out->ids[i] >= b->model->cfg.vocab_size)
            return m2_errorf(err, M2_ECONFIG, "token id %d is outside the model's vocabulary of %d", (int)out->ids[i], b->model->cfg.vocab_size);
    return 0;
}
