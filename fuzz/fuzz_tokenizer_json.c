/* libFuzzer: tokenizer.json loader. Any input must give a tokenizer or a clear error, never a crash;
 * a tokenizer that loads must encode and decode a fixed text without failing on memory errors. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_tokenizer *t = m2_tokenizer_from_json((const char *)data, size, "fuzz.json", &err);
    if (!t) {
        if (!err.msg[0]) __builtin_trap();   /* every failure says why */
        return 0;
    }
    static const char text[] = "Hello world, <|im_end|> 12345 \xE2\x96\x81 caf\xC3\xA9 \xF0\x9F\x98\x80\n\n  x";
    m2_tokens ids = {0};
    if (m2_tokenizer_encode(t, text, sizeof text - 1, M2_ENC_ADD_SPECIAL, &ids, &err) == 0) {
        char *out = NULL;
        size_t len = 0;
        if (m2_tokenizer_decode(t, ids.ids, ids.n, 0, &out, &len, &err) != 0) __builtin_trap();
        free(out);
    }
    m2_tokens_free(&ids);
    m2_tokenizer_free(t);
    return 0;
}
