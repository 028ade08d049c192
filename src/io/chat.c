/* Chat templates of Qwen2.5 (ChatML), Llama-3.1 and Mistral v0.3, written out by hand from their
 * tokenizer_config.json chat_template (no Jinja engine). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io/chat.h"

/* The rendered text, and per byte whether it came from message content (1) or the template (0). */
typedef struct { char *s; uint8_t *plain; size_t n, cap; int oom, content; } sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        char *p = realloc(b->s, nc);
        if (!p) { b->oom = 1; return; }
        b->s = p;
        uint8_t *q = realloc(b->plain, nc);
        if (!q) { b->oom = 1; return; }
        b->plain = q;
        b->cap = nc;
    }
    memcpy(b->s + b->n, s, n);
    memset(b->plain + b->n, b->content, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }
/* message content: never parsed for special tokens by m2_chat_encode */
static void put_content(sbuf *b, const char *s) { b->content = 1; puts_(b, s); b->content = 0; }

/* Jinja's |trim: strips leading and trailing whitespace. */
static void put_trimmed(sbuf *b, const char *s) {
    size_t n = strlen(s);
    while (n && strchr(" \t\n\r\f\v", s[0])) { s++; n--; }
    while (n && strchr(" \t\n\r\f\v", s[n - 1])) n--;
    b->content = 1;
    put(b, s, n);
    b->content = 0;
}

static int render_chatml(sbuf *b, const m2_chat_msg *m, int n, unsigned flags) {
    if ((flags & M2_CHAT_DEFAULT_SYSTEM) && (n == 0 || strcmp(m[0].role, "system")))
        puts_(b, "<|im_start|>system\n" M2_QWEN25_DEFAULT_SYSTEM "<|im_end|>\n");
    for (int i = 0; i < n; i++) {
        puts_(b, "<|im_start|>"); puts_(b, m[i].role); puts_(b, "\n");
        put_content(b, m[i].content); puts_(b, "<|im_end|>\n");
    }
    if (flags & M2_CHAT_ADD_GENERATION_PROMPT) puts_(b, "<|im_start|>assistant\n");
    return 0;
}

static int render_llama3(sbuf *b, const m2_chat_msg *m, int n, unsigned flags) {
    puts_(b, "<|begin_of_text|>");
    for (int i = 0; i < n; i++) {
        puts_(b, "<|start_header_id|>"); puts_(b, m[i].role); puts_(b, "<|end_header_id|>\n\n");
        put_trimmed(b, m[i].content); puts_(b, "<|eot_id|>");
    }
    if (flags & M2_CHAT_ADD_GENERATION_PROMPT) puts_(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return 0;
}

static int render_mistral(sbuf *b, const m2_chat_msg *m, int n, unsigned flags, m2_err *err) {
    const char *sys = NULL;
    if (n > 0 && !strcmp(m[0].role, "system")) { sys = m[0].content; m++; n--; }
    int last_user = -1;
    for (int i = 0; i < n; i++) {
        int user = !strcmp(m[i].role, "user");
        if (!user && strcmp(m[i].role, "assistant"))
            return m2_errorf(err, M2_EINVAL, "chat (mistral): message %d has role \"%s\"; only system (first), user and assistant are allowed",
                             i + (sys != NULL), m[i].role);
        if (user != (i % 2 == 0))
            return m2_errorf(err, M2_EINVAL, "chat (mistral): after the optional system message, roles must alternate user/assistant (message %d is \"%s\")",
                             i + (sys != NULL), m[i].role);
        if (user) last_user = i;
    }
    (void)flags;   /* the prompt already ends with [/INST]: nothing to add for generation */
    puts_(b, "<s>");
    for (int i = 0; i < n; i++) {
        if (!strcmp(m[i].role, "user")) {
            puts_(b, "[INST] ");
            if (sys && i == last_user) { put_content(b, sys); puts_(b, "\n\n"); }
            put_content(b, m[i].content); puts_(b, "[/INST]");
        } else {
            puts_(b, " "); put_trimmed(b, m[i].content); puts_(b, "</s>");
        }
    }
    return 0;
}

static int render(m2_chat_format fmt, const m2_chat_msg *msgs, int n, unsigned flags, sbuf *b, m2_err *err) {
    memset(b, 0, sizeof *b);
    if (n < 0 || (n > 0 && !msgs)) return m2_errorf(err, M2_EINVAL, "chat: bad message list");
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content || !msgs[i].role[0])
            return m2_errorf(err, M2_EINVAL, "chat: message %d has no role or no content", i);
    puts_(b, "");
    int rc;
    switch (fmt) {
    case M2_CHAT_CHATML: rc = render_chatml(b, msgs, n, flags); break;
    case M2_CHAT_LLAMA3: rc = render_llama3(b, msgs, n, flags); break;
    case M2_CHAT_MISTRAL: rc = render_mistral(b, msgs, n, flags, err); break;
    default: rc = m2_errorf(err, M2_EINVAL, "chat: unknown format %d", (int)fmt);
    }
    if (!rc && b->oom) rc = m2_errorf(err, M2_ENOMEM, "chat: out of memory");
    if (rc) { free(b->s); free(b->plain); memset(b, 0, sizeof *b); }
    return rc;
}

int m2_chat_render(m2_chat_format fmt, const m2_chat_msg *msgs, int n, unsigned flags,
                   char **out, size_t *len, m2_err *err) {
    *out = NULL;
    if (len) *len = 0;
    sbuf b;
    if (render(fmt, msgs, n, flags, &b, err)) return -1;
    free(b.plain);
    *out = b.s;
    if (len) *len = b.n;
    return 0;
}

int m2_chat_encode(const m2_tokenizer *tok, m2_chat_format fmt, const m2_chat_msg *msgs, int n,
                   unsigned flags, m2_tokens *out, m2_err *err) {
    sbuf b;
    if (render(fmt, msgs, n, flags, &b, err)) return -1;
    int rc = m2_tokenizer_encode_masked(tok, b.s, b.n, 0, b.plain, out, err);
    free(b.s);
    free(b.plain);
    return rc;
}

int m2_chat_format_parse(const char *name, m2_chat_format *fmt) {
    static const struct { const char *name; m2_chat_format f; } names[] = {
        {"chatml", M2_CHAT_CHATML}, {"qwen2", M2_CHAT_CHATML}, {"qwen2.5", M2_CHAT_CHATML}, {"qwen", M2_CHAT_CHATML},
        {"llama3", M2_CHAT_LLAMA3}, {"llama-3", M2_CHAT_LLAMA3}, {"llama3.1", M2_CHAT_LLAMA3}, {"llama-3.1", M2_CHAT_LLAMA3},
        {"mistral", M2_CHAT_MISTRAL}, {"mistral-v3", M2_CHAT_MISTRAL}, {"mistral-v0.3", M2_CHAT_MISTRAL},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) { *fmt = names[i].f; return 0; }
    return -1;
}

const char *m2_chat_format_name(m2_chat_format fmt) {
    switch (fmt) {
    case M2_CHAT_CHATML: return "chatml";
    case M2_CHAT_LLAMA3: return "llama3";
    case M2_CHAT_MISTRAL: return "mistral";
    }
    return "?";
}

m2_chat_format m2_chat_format_guess(const m2_tokenizer *tok) {
    if (m2_tokenizer_find(tok, "<|im_start|>", 12) >= 0) return M2_CHAT_CHATML;
    if (m2_tokenizer_find(tok, "<|start_header_id|>", 19) >= 0) return M2_CHAT_LLAMA3;
    if (m2_tokenizer_find(tok, "[INST]", 6) >= 0 || m2_tokenizer_model_kind(tok) == M2_TOKENIZER_SPM) return M2_CHAT_MISTRAL;
    return 0;
}

const char *m2_chat_end_of_turn(m2_chat_format fmt) {
    switch (fmt) {
    case M2_CHAT_CHATML: return "<|im_end|>";
    case M2_CHAT_LLAMA3: return "<|eot_id|>";
    case M2_CHAT_MISTRAL: return "</s>";
    }
    return NULL;
}
