/* libFuzzer: GGUF tokenizer metadata (tokenizer.ggml.*) -> tokenizer. Bad files fail with a
 * message; a tokenizer that loads must encode and decode a fixed text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "io/gguf.h"
#include "io/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_gguf *g = m2_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) return 0;
    m2_tokenizer *t = m2_tokenizer_from_gguf(g, &err);
    m2_gguf_close(g);
    if (!t) {
        if (!err.msg[0]) __builtin_trap();
        return 0;
    }
    static const char text[] = "Hello world <s> 12345 caf\xC3\xA9 \xF0\x9F\x98\x80\n";
    m2_tokens ids = {0};
    if (m2_tokenizer_encode(t, text, sizeof text - 1, M2_ENC_ADD_SPECIAL, &ids, &err) == 0) {
        char *out = NULL;
        if (m2_tokenizer_decode(t, ids.ids, ids.n, 0, &out, NULL, &err) != 0) __builtin_trap();
        free(out);
    }
    m2_tokens_free(&ids);
    m2_tokenizer_free(t);
    return 0;
}
