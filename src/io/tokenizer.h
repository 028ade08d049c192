/* Tokenizers: byte-level BPE (GPT-2, Llama-3, Qwen2) and SentencePiece-style BPE (Llama-2, Mistral),
 * built from loader-agnostic arrays so that tokenizer.json and GGUF metadata fill the same spec.
 *
 * A tokenizer is immutable once built: encode/decode may run on many threads at once. */
#ifndef M2_TOKENIZER_H
#define M2_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef struct m2_tokenizer m2_tokenizer;

typedef enum {
    M2_TOKENIZER_BPE = 1,   /* byte-level BPE, ranked merges (GGUF "gpt2", HF ByteLevel) */
    M2_TOKENIZER_SPM = 2,   /* SentencePiece-style BPE: ▁ space marker, byte fallback (GGUF "llama") */
} m2_tokenizer_model;

/* Pre-tokenizer: the regex that cuts text into words before BPE (byte-level BPE only). */
typedef enum {
    M2_PRETOK_NONE = 0,     /* the whole fragment is one word (SPM) */
    M2_PRETOK_GPT2,         /* 's|'t|... ?\p{L}+| ?\p{N}+|...        (GGUF pre "gpt-2", "default") */
    M2_PRETOK_LLAMA3,       /* like QWEN2 but digits in groups of 1-3 (GGUF pre "llama-bpe") */
    M2_PRETOK_QWEN2,        /* case-insensitive contractions, single digits (GGUF pre "qwen2") */
    M2_PRETOK_REGEX,        /* any other PCRE2 pattern (spec.pretok_regex) */
} m2_pretok;

/* Token types, numbered as GGUF tokenizer.ggml.token_type. */
enum {
    M2_TOKEN_NORMAL = 1, M2_TOKEN_UNKNOWN = 2, M2_TOKEN_CONTROL = 3,
    M2_TOKEN_USER_DEFINED = 4, M2_TOKEN_UNUSED = 5, M2_TOKEN_BYTE = 6,
};

/* How SPM prepends the ▁ dummy prefix to each text fragment (the text between special tokens). */
typedef enum {
    M2_SPACE_PREFIX_NONE = 0,
    M2_SPACE_PREFIX_ALWAYS = 1,      /* every fragment, unconditionally (llama.cpp, HF Prepend normalizer) */
    M2_SPACE_PREFIX_META_ALWAYS = 2, /* HF Metaspace "always": every fragment not starting with a space */
    M2_SPACE_PREFIX_META_FIRST = 3,  /* HF Metaspace "first": only a fragment at offset 0, same rule */
} m2_space_prefix;

/* Everything a tokenizer is built from. Arrays are borrowed: create() copies what it keeps. */
typedef struct m2_tokenizer_spec {
    m2_tokenizer_model model;
    int32_t n_tokens;
    const char *const *tokens;     /* [n_tokens] NUL-terminated vocab text (byte-level chars or ▁ form);
                                      NULL or "" = unused id */
    const float *scores;           /* [n_tokens] or NULL; SPM without merges ranks by score */
    const int32_t *token_types;    /* [n_tokens] M2_TOKEN_*, or NULL (all normal) */
    int32_t n_merges;
    const char *const *merges;     /* [2*n_merges] left, right of each merge; rank = index */
    m2_pretok pretok;
    const char *pretok_regex;      /* pattern when pretok == M2_PRETOK_REGEX */
    int32_t bos_id, eos_id, pad_id, unk_id;   /* -1 = none */
    int add_bos, add_eos;          /* what M2_ENC_ADD_SPECIAL adds */
    m2_space_prefix space_prefix;  /* SPM only */
    int spm_split;                 /* SPM: cut words before each ▁ (HF Metaspace split=true) */
    int byte_fallback;             /* SPM: characters not in the vocab become <0xNN> tokens */
    int ignore_merges;             /* BPE: a word that is already a token is emitted whole (Llama-3) */
    int add_prefix_space;          /* BPE: prepend ' ' to text that does not start with one */
    const char *name;              /* for error messages, e.g. the file name; may be NULL */
} m2_tokenizer_spec;

/* A growable list of token ids; encode appends to it. Zero-initialise, free with m2_tokens_free. */
typedef struct m2_tokens { int32_t *ids; size_t n, cap; } m2_tokens;
int m2_tokens_push(m2_tokens *t, int32_t id, m2_err *err);
void m2_tokens_free(m2_tokens *t);

m2_tokenizer *m2_tokenizer_create(const m2_tokenizer_spec *spec, m2_err *err);
void m2_tokenizer_free(m2_tokenizer *tok);

/* tokenizer.json (HF `tokenizers` format). load_json also reads tokenizer_config.json beside the
 * file when present (bos/eos/pad tokens, add_bos_token, add_eos_token). */
m2_tokenizer *m2_tokenizer_load_json(const char *path, m2_err *err);
m2_tokenizer *m2_tokenizer_from_json(const char *json, size_t len, const char *name, m2_err *err);
/* Writes a byte-level BPE tokenizer as tokenizer.json (model BPE, vocab, merges, ByteLevel). */
int m2_tokenizer_save_json(const m2_tokenizer *tok, const char *path, m2_err *err);
char *m2_tokenizer_to_json(const m2_tokenizer *tok, size_t *len, m2_err *err);
/* Writes tokenizer_config.json (path: its full name) with the special tokens tokenizer.json cannot
 * hold (bos/eos/pad/unk that tok has), so load_json of a tokenizer.json beside it gives back tok's
 * special ids. */
int m2_tokenizer_save_config_json(const m2_tokenizer *tok, const char *path, m2_err *err);

/* GGUF metadata (tokenizer.ggml.*: model, tokens, scores, token_type, merges, pre, *_token_id,
 * add_bos_token, add_eos_token, add_space_prefix). */
struct m2_gguf;
m2_tokenizer *m2_tokenizer_from_gguf(const struct m2_gguf *g, m2_err *err);
m2_tokenizer *m2_tokenizer_load_gguf(const char *path, m2_err *err);
/* Writes the tokenizer as tokenizer.ggml.* keys into a GGUF being written (with a model, so
 * llama.cpp can tokenize). Byte-level BPE needs a named pre-tokenizer (gpt-2/llama-bpe/qwen2). */
struct m2_gguf_writer;
int m2_tokenizer_to_gguf(const m2_tokenizer *tok, struct m2_gguf_writer *w, m2_err *err);
/* A path: a .gguf file (by magic), a tokenizer.json, or a folder holding tokenizer.json. */
m2_tokenizer *m2_tokenizer_load(const char *path, m2_err *err);

/* Encode flags. */
enum {
    M2_ENC_ADD_SPECIAL = 1u,    /* add BOS/EOS as the tokenizer's add_bos/add_eos say */
    M2_ENC_BOS = 2u,            /* always prepend BOS (error if the tokenizer has none) */
    M2_ENC_EOS = 4u,            /* always append EOS */
    M2_ENC_NO_SPECIAL = 8u,     /* do not parse special-token text (e.g. "<|im_end|>") as one token */
};
/* Appends the ids of text[0..len) to out. Text must be valid UTF-8. */
int m2_tokenizer_encode(const m2_tokenizer *tok, const char *text, size_t len, unsigned flags,
                        m2_tokens *out, m2_err *err);

/* Like encode, but special tokens are only matched where plain[i] == 0 for every byte they cover
 * (plain[0..len), 0/1 per byte; NULL = everywhere): untrusted text inside a template stays text. */
int m2_tokenizer_encode_masked(const m2_tokenizer *tok, const char *text, size_t len, unsigned flags,
                               const uint8_t *plain, m2_tokens *out, m2_err *err);

/* Decode flags. */
enum {
    M2_DEC_SKIP_SPECIAL = 1u,   /* drop control tokens (BOS, EOS, <|im_end|>, ...) */
    M2_DEC_KEEP_SPACE = 2u,     /* SPM: keep the leading space the dummy prefix produced */
};
/* *out is malloc'd and NUL-terminated (*len bytes without the NUL). Ids out of range fail. */
int m2_tokenizer_decode(const m2_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags,
                        char **out, size_t *len, m2_err *err);
/* The bytes one token decodes to (for streaming); NULL when id is out of range. */
const char *m2_tokenizer_piece(const m2_tokenizer *tok, int32_t id, size_t *len);

/* Vocabulary queries. */
int32_t m2_tokenizer_n_tokens(const m2_tokenizer *tok);
m2_tokenizer_model m2_tokenizer_model_kind(const m2_tokenizer *tok);
m2_pretok m2_tokenizer_pretok(const m2_tokenizer *tok);
int32_t m2_tokenizer_bos(const m2_tokenizer *tok);    /* -1 = none */
int32_t m2_tokenizer_eos(const m2_tokenizer *tok);
int32_t m2_tokenizer_pad(const m2_tokenizer *tok);
int32_t m2_tokenizer_unk(const m2_tokenizer *tok);
int m2_tokenizer_add_bos(const m2_tokenizer *tok);
/* Token id of an exact vocab text (e.g. "<|im_end|>"), or -1. */
int32_t m2_tokenizer_find(const m2_tokenizer *tok, const char *text, size_t len);
/* The vocab text of id (byte-level / ▁ form) and its M2_TOKEN_* type; NULL/0 out of range. */
const char *m2_tokenizer_token_text(const m2_tokenizer *tok, int32_t id, size_t *len);
int m2_tokenizer_token_type(const m2_tokenizer *tok, int32_t id);
float m2_tokenizer_token_score(const m2_tokenizer *tok, int32_t id);
int32_t m2_tokenizer_n_merges(const m2_tokenizer *tok);

/* Pre-tokenizer on its own: cuts text into words with the regex of kind (M2_PRETOK_REGEX: regex).
 * *starts and *lens are malloc'd, *n words. */
int m2_pretokenize(m2_pretok kind, const char *regex, const char *text, size_t len,
                   size_t **starts, size_t **lens, size_t *n, m2_err *err);
const char *m2_pretok_regex(m2_pretok kind);     /* the PCRE2 pattern of a built-in kind */
const char *m2_pretok_name(m2_pretok kind);      /* "gpt-2", "llama-bpe", "qwen2", "regex", "none" */
int m2_pretok_parse(const char *name, m2_pretok *kind);   /* GGUF tokenizer.ggml.pre names */

/* 0 when s[0..len) is valid UTF-8; otherwise -1 and *bad = offset of the first bad byte. */
int m2_utf8_check(const char *s, size_t len, size_t *bad);

/* BPE training: byte-level BPE on a UTF-8 corpus, deterministic (ties broken by pair ids).
 * Vocab: 256 byte tokens (GPT-2 order), then merges, then the special tokens. */
typedef struct m2_bpe_train_opts {
    int32_t vocab_size;             /* total, including the 256 bytes and the specials */
    const char *const *specials;    /* NULL: <|endoftext|>, <|im_start|>, <|im_end|> */
    int n_specials;
    m2_pretok pretok;               /* 0 (NONE) means QWEN2 */
    int64_t min_frequency;          /* a pair seen fewer times is never merged; <= 0 means 2 */
} m2_bpe_train_opts;
m2_tokenizer *m2_bpe_train(const char *text, size_t len, const m2_bpe_train_opts *opts, m2_err *err);

#endif
