/* Private to src/io/tokenizer*.c: the tokenizer object, its hash maps and the shared helpers. */
#ifndef M2_TOKENIZER_IMPL_H
#define M2_TOKENIZER_IMPL_H
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include "io/tokenizer.h"

/* Open-addressing map from token text to id; slots hold ids (-1 empty), keys live in the token table. */
typedef struct { int32_t *slots; uint32_t mask; } m2_strmap;
/* Open-addressing map from an id pair (left<<32 | right) to the merge's rank and result id. */
typedef struct { uint64_t key; int32_t rank, result; } m2_pairslot;
typedef struct { m2_pairslot *slots; uint32_t mask; } m2_pairmap;
#define M2_PAIR_EMPTY UINT64_MAX

struct m2_tokenizer {
    m2_tokenizer_model model;
    m2_pretok pretok;
    int32_t n_tokens;
    char *text;            /* all token texts, NUL-separated */
    uint32_t *off, *len;   /* [n_tokens] into text */
    float *scores;         /* [n_tokens] */
    int8_t *types;         /* [n_tokens] M2_TOKEN_* */
    char *piece;           /* decoded bytes of every token */
    uint32_t *poff, *plen; /* [n_tokens] into piece */
    m2_strmap vocab;
    int32_t n_merges;
    int32_t *merge_l, *merge_r;  /* [n_merges] ids, for saving */
    m2_pairmap merges;
    int32_t byte_tok[256]; /* byte -> its token (byte-level char or <0xNN>), -1 none */
    int32_t *specials;     /* ids split out of the text before pre-tokenisation, longest first */
    int n_specials;
    uint8_t special_first[256]; /* 1 when some special token starts with this byte */
    uint8_t barrier[128];  /* SPM: ASCII chars no multi-character token contains; merges never
                              cross them, so a fragment is cut there into independent words */
    int32_t bos_id, eos_id, pad_id, unk_id;
    int add_bos, add_eos, byte_fallback, ignore_merges, add_prefix_space, spm_split;
    m2_space_prefix space_prefix;
    char *regex;           /* pre-tokenizer pattern (NULL for SPM) */
    pcre2_code *re;
    char name[256];
};

uint64_t m2_tok_hash(const char *s, size_t n);
int32_t m2_strmap_get(const m2_tokenizer *t, const char *s, size_t n);
const m2_pairslot *m2_pairmap_get(const m2_pairmap *m, int32_t l, int32_t r);

/* GPT-2's byte <-> unicode mapping: byte b is the code point m2_byte_cp[b]. */
void m2_byte_level_table(uint32_t cp[256]);
/* UTF-8 encode cp into out (<= 4 bytes); returns the length. */
int m2_utf8_put(uint32_t cp, char *out);
/* Length of the UTF-8 sequence starting with byte c (1 for stray bytes). */
static inline int m2_utf8_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Compiles a pre-tokenizer pattern with PCRE2_UTF|PCRE2_UCP (JIT when available). */
pcre2_code *m2_regex_compile(const char *pattern, const char *name, m2_err *err);
/* Calls fn(ctx, start, len) for every piece (matches and the gaps between them) of text. */
typedef int (*m2_piece_fn)(void *ctx, const char *s, size_t len, m2_err *err);
int m2_regex_split(const pcre2_code *re, const char *text, size_t len, m2_piece_fn fn, void *ctx, m2_err *err);

/* Scratch space for the merge loop (one per encode call). */
typedef struct { int32_t id, prev, next; uint32_t start, len; } m2_sym;
typedef struct { double pri; int32_t left, right, result; uint32_t size; } m2_cand;
typedef struct {
    m2_sym *syms; size_t nsyms, csyms;
    m2_cand *heap; size_t nheap, cheap;
    char *buf; size_t nbuf, cbuf;
} m2_scratch;
void m2_scratch_free(m2_scratch *s);
int m2_scratch_syms(m2_scratch *s, size_t n, m2_err *err);
int m2_scratch_buf(m2_scratch *s, size_t n, m2_err *err);

/* Encodes one fragment (text between special tokens). */
int m2_bpe_encode_fragment(const m2_tokenizer *t, const char *s, size_t n, m2_scratch *sc, m2_tokens *out, m2_err *err);
int m2_spm_encode_fragment(const m2_tokenizer *t, const char *s, size_t n, int prefix, m2_scratch *sc, m2_tokens *out, m2_err *err);
/* Runs the ranked merges over sc->syms[0..nsyms), whose start/len index into str. */
int m2_merge_symbols(const m2_tokenizer *t, m2_scratch *sc, const char *str);

#endif
