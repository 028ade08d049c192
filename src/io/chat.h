/* Chat formats of the three backbones, rendered to the exact text their chat templates produce.
 * The text holds special-token strings (<|im_start|>, <|eot_id|>, [INST], <s>, ...): encode it
 * with special-token parsing on (the default) and without M2_ENC_ADD_SPECIAL. */
#ifndef M2_CHAT_H
#define M2_CHAT_H
#include <stddef.h>
#include "core/err.h"
#include "io/tokenizer.h"

typedef enum {
    M2_CHAT_CHATML = 1,    /* Qwen2.5: <|im_start|>role\n...<|im_end|>\n */
    M2_CHAT_LLAMA3 = 2,    /* Llama-3.1: <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    M2_CHAT_MISTRAL = 3,   /* Mistral v0.3: <s>[INST] user[/INST] assistant</s> */
} m2_chat_format;

typedef struct m2_chat_msg { const char *role, *content; } m2_chat_msg;

enum {
    M2_CHAT_ADD_GENERATION_PROMPT = 1u,  /* end with the opening of an assistant turn */
    M2_CHAT_DEFAULT_SYSTEM = 2u,         /* ChatML: Qwen2.5's default system prompt when none is given */
};
#define M2_QWEN25_DEFAULT_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

/* Renders msgs[0..n) into *out (malloc'd, NUL-terminated, *len bytes). Mistral requires
 * user/assistant alternation after an optional system message, as its template does. */
int m2_chat_render(m2_chat_format fmt, const m2_chat_msg *msgs, int n, unsigned flags,
                   char **out, size_t *len, m2_err *err);
/* Renders, then encodes: special-token text of the template becomes special tokens, while special-
 * token text inside message content stays plain text (a user or an environment cannot inject
 * <|im_end|>); no BOS is added, the text carries it. */
int m2_chat_encode(const m2_tokenizer *tok, m2_chat_format fmt, const m2_chat_msg *msgs, int n,
                   unsigned flags, m2_tokens *out, m2_err *err);

/* "chatml"/"qwen2"/"qwen2.5", "llama3"/"llama-3.1", "mistral"/"mistral-v3" -> format. */
int m2_chat_format_parse(const char *name, m2_chat_format *fmt);
const char *m2_chat_format_name(m2_chat_format fmt);
/* The format a tokenizer's special tokens imply; 0 when none matches. */
m2_chat_format m2_chat_format_guess(const m2_tokenizer *tok);
/* The text of the token that ends an assistant turn ("<|im_end|>", "<|eot_id|>", "</s>"). */
const char *m2_chat_end_of_turn(m2_chat_format fmt);

#endif
