/* libFuzzer: encode/decode of arbitrary bytes. Byte 0 picks the tokenizer (a byte-level BPE trained
 * here on a fixed text, or a small hand-made SentencePiece vocab with byte fallback) and the encode
 * flags; the rest is the text. Invalid UTF-8 must fail cleanly; valid text must round-trip
 * (SPM: when special tokens are not parsed, since the dummy prefix follows each special). */
#define _GNU_SOURCE   /* memmem */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/tokenizer.h"

static m2_tokenizer *bpe, *spm;

static void init(void) {
    static const char corpus[] =
        "The crafting table needs four planks. Craft the planks from oak logs, then craft sticks. "
        "Go to the kitchen, open the fridge, take the apple. It's 23 degrees; we'll see 1234567.\n"
        "Les caf\xC3\xA9s \xC3\xA0 Paris \xE2\x80\x94 \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80\xF0\x9F\x98\x80\n";
    char big[sizeof corpus * 8];
    for (int i = 0; i < 8; i++) memcpy(big + i * (sizeof corpus - 1), corpus, sizeof corpus - 1);
    m2_err err = {0};
    m2_bpe_train_opts o = {0};
    o.vocab_size = 330;
    bpe = m2_bpe_train(big, 8 * (sizeof corpus - 1), &o, &err);
    if (!bpe) { fprintf(stderr, "%s\n", err.msg); abort(); }
    /* SPM: <unk> <s> </s>, 256 byte tokens, then a few pieces with scores */
    static const char *pieces[] = {"\xE2\x96\x81", "a", "b", "c", "\xE2\x96\x81" "a", "ab", "abc", "\xE2\x96\x81" "ab", "\xC3\xA9", "<|im_end|>"};
    enum { NP = sizeof pieces / sizeof pieces[0] };
    const char *toks[3 + 256 + NP];
    char bytes[256][7];
    float scores[3 + 256 + NP];
    int32_t types[3 + 256 + NP];
    toks[0] = "<unk>"; toks[1] = "<s>"; toks[2] = "</s>";
    types[0] = M2_TOKEN_UNKNOWN; types[1] = types[2] = M2_TOKEN_CONTROL;
    scores[0] = scores[1] = scores[2] = 0;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[3 + b] = bytes[b]; types[3 + b] = M2_TOKEN_BYTE; scores[3 + b] = 0;
    }
    for (int i = 0; i < NP; i++) {
        toks[259 + i] = pieces[i];
        types[259 + i] = i == NP - 1 ? M2_TOKEN_CONTROL : M2_TOKEN_NORMAL;
        scores[259 + i] = -(float)i;
    }
    m2_tokenizer_spec s = {0};
    s.model = M2_TOKENIZER_SPM;
    s.n_tokens = 3 + 256 + NP;
    s.tokens = toks; s.scores = scores; s.token_types = types;
    s.bos_id = 1; s.eos_id = 2; s.pad_id = -1; s.unk_id = 0;
    s.add_bos = 1;
    s.space_prefix = M2_SPACE_PREFIX_ALWAYS;
    s.byte_fallback = 1;
    s.name = "fuzz-spm";
    spm = m2_tokenizer_create(&s, &err);
    if (!spm) { fprintf(stderr, "%s\n", err.msg); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!bpe) init();
    if (size == 0) return 0;
    uint8_t sel = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    m2_tokenizer *t = (sel & 1) ? spm : bpe;
    unsigned flags = ((sel & 2) ? M2_ENC_NO_SPECIAL : 0) | ((sel & 4) ? M2_ENC_ADD_SPECIAL : 0);
    m2_tokens ids = {0};
    m2_err err = {0};
    int valid = m2_utf8_check(text, len, NULL) == 0;
    int rc = m2_tokenizer_encode(t, text, len, flags, &ids, &err);
    if (rc != 0) {
        if (valid || !err.msg[0]) __builtin_trap();   /* only invalid UTF-8 may fail */
        m2_tokens_free(&ids);
        return 0;
    }
    if (!valid) __builtin_trap();
    char *out = NULL;
    size_t olen = 0;
    if (m2_tokenizer_decode(t, ids.ids, ids.n, M2_DEC_SKIP_SPECIAL * ((flags & M2_ENC_ADD_SPECIAL) != 0), &out, &olen, &err))
        __builtin_trap();
    /* SPM cannot tell a typed U+2581 from a space: both decode to ' ' (as in SentencePiece) */
    int must_match = t == bpe ? !(flags & M2_ENC_ADD_SPECIAL)
                              : (flags & M2_ENC_NO_SPECIAL) && !memmem(text, len, "\xE2\x96\x81", 3);
    if (must_match && (olen != len || memcmp(out, text, len))) __builtin_trap();
    free(out);
    m2_tokens_free(&ids);
    return 0;
}
