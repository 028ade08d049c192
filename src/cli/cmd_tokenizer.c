/* multi2 tokenizer: train | encode | decode | info. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 tokenizer <train|encode|decode|info> [options]\n"
        "\n"
        "  train   --corpus FILE [--corpus FILE ...] --vocab N --out tokenizer.json\n"
        "          [--pretok qwen2|llama-bpe|gpt-2] [--special TOKEN ...] [--min-frequency N]\n"
        "          byte-level BPE trained on UTF-8 text; the vocab counts 256 byte tokens, the merges\n"
        "          and the specials (default <|endoftext|> <|im_start|> <|im_end|>)\n"
        "  encode  --tokenizer FILE (--text T | --file F) [--json] [--add-special] [--bos] [--eos]\n"
        "          [--no-special]   (FILE: tokenizer.json, a folder holding one, or a .gguf)\n"
        "  decode  --tokenizer FILE --ids 1,2,3 [--skip-special]\n"
        "  info    --tokenizer FILE\n");
}

typedef struct {
    const char *tokenizer, *text, *file, *ids, *out, *pretok;
    const char *corpus[64]; int n_corpus;
    const char *special[256]; int n_special;
    long vocab, min_freq;
    int json, add_special, bos, eos, no_special, skip_special;
} opts;

static int parse_long(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

/* Returns 0 ok, 2 usage error (message printed), 1 help shown. */
static int parse(int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 1; }
        int has = i + 1 < argc;
        #define VAL(name) if (!strcmp(a, name)) { if (!has) { fprintf(stderr, "multi2 tokenizer: %s needs a value\n", a); return 2; } const char *v = argv[++i];
        VAL("--tokenizer") o->tokenizer = v; continue; }
        VAL("--text") o->text = v; continue; }
        VAL("--file") o->file = v; continue; }
        VAL("--ids") o->ids = v; continue; }
        VAL("--out") o->out = v; continue; }
        VAL("--pretok") o->pretok = v; continue; }
        VAL("--corpus")
            if (o->n_corpus == 64) { fprintf(stderr, "multi2 tokenizer: at most 64 --corpus files\n"); return 2; }
            o->corpus[o->n_corpus++] = v; continue; }
        VAL("--special")
            if (o->n_special == 256) { fprintf(stderr, "multi2 tokenizer: at most 256 --special tokens\n"); return 2; }
            o->special[o->n_special++] = v; continue; }
        VAL("--vocab") if (parse_long(v, &o->vocab) || o->vocab <= 0) { fprintf(stderr, "multi2 tokenizer: --vocab: '%s' is not a positive integer\n", v); return 2; } continue; }
        VAL("--min-frequency") if (parse_long(v, &o->min_freq) || o->min_freq <= 0) { fprintf(stderr, "multi2 tokenizer: --min-frequency: '%s' is not a positive integer\n", v); return 2; } continue; }
        #undef VAL
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--add-special")) { o->add_special = 1; continue; }
        if (!strcmp(a, "--bos")) { o->bos = 1; continue; }
        if (!strcmp(a, "--eos")) { o->eos = 1; continue; }
        if (!strcmp(a, "--no-special")) { o->no_special = 1; continue; }
        if (!strcmp(a, "--skip-special")) { o->skip_special = 1; continue; }
        fprintf(stderr, "multi2 tokenizer %s: unknown option '%s'\n", argv[1], a);
        return 2;
    }
    return 0;
}

static m2_tokenizer *load(const opts *o) {
    m2_err err = {0};
    m2_tokenizer *t = m2_tokenizer_load(o->tokenizer, &err);
    if (!t) fprintf(stderr, "multi2 tokenizer: %s\n", err.msg);
    return t;
}

static int do_train(const opts *o) {
    if (!o->n_corpus || !o->vocab || !o->out) {
        fprintf(stderr, "multi2 tokenizer train: needs --corpus FILE, --vocab N and --out FILE\n");
        return 2;
    }
    m2_pretok pre = M2_PRETOK_QWEN2;
    if (o->pretok && (m2_pretok_parse(o->pretok, &pre) || pre == M2_PRETOK_NONE)) {
        fprintf(stderr, "multi2 tokenizer train: --pretok '%s' unknown (qwen2, llama-bpe, gpt-2)\n", o->pretok);
        return 2;
    }
    m2_err err = {0};
    char *text = NULL;
    size_t len = 0;
    for (int i = 0; i < o->n_corpus; i++) {
        char *buf;
        size_t bl;
        if (m2_read_file(o->corpus[i], &buf, &bl, &err)) { fprintf(stderr, "multi2 tokenizer train: %s\n", err.msg); free(text); return 1; }
        size_t bad;
        if (m2_utf8_check(buf, bl, &bad)) {
            fprintf(stderr, "multi2 tokenizer train: %s: not valid UTF-8 (byte offset %zu)\n", o->corpus[i], bad);
            free(buf); free(text);
            return 1;
        }
        char *t2 = realloc(text, len + bl + 2);
        if (!t2) { fprintf(stderr, "multi2 tokenizer train: out of memory\n"); free(buf); free(text); return 1; }
        text = t2;
        memcpy(text + len, buf, bl);
        len += bl;
        if (i + 1 < o->n_corpus && bl && buf[bl - 1] != '\n') text[len++] = '\n';
        text[len] = 0;
        free(buf);
    }
    m2_bpe_train_opts to = {0};
    to.vocab_size = (int32_t)(o->vocab > (1 << 24) ? (1 << 24) + 1 : o->vocab);
    to.pretok = pre;
    to.min_frequency = o->min_freq;
    if (o->n_special) { to.specials = o->special; to.n_specials = o->n_special; }
    double t0 = m2_now_s();
    m2_tokenizer *t = m2_bpe_train(text, len, &to, &err);
    double secs = m2_now_s() - t0;
    free(text);
    if (!t) { fprintf(stderr, "multi2 tokenizer train: %s\n", err.msg); return 1; }
    if (m2_tokenizer_save_json(t, o->out, &err)) {
        fprintf(stderr, "multi2 tokenizer train: %s\n", err.msg);
        m2_tokenizer_free(t);
        return 1;
    }
    printf("trained %d tokens (%d merges, pre-tokenizer %s) on %zu bytes in %.2f s -> %s\n",
           m2_tokenizer_n_tokens(t), m2_tokenizer_n_merges(t), m2_pretok_name(pre), len, secs, o->out);
    if (m2_tokenizer_n_tokens(t) < o->vocab)
        printf("note: the corpus ran out of pairs seen >= %ld times before reaching --vocab %ld\n", o->min_freq ? o->min_freq : 2, o->vocab);
    m2_tokenizer_free(t);
    return 0;
}

static int do_encode(const opts *o) {
    if (!o->tokenizer || (!o->text == !o->file)) {
        fprintf(stderr, "multi2 tokenizer encode: needs --tokenizer FILE and one of --text T / --file F\n");
        return 2;
    }
    m2_err err = {0};
    char *buf = NULL;
    size_t len;
    if (o->file) {
        if (m2_read_file(o->file, &buf, &len, &err)) { fprintf(stderr, "multi2 tokenizer encode: %s\n", err.msg); return 1; }
    } else {
        len = strlen(o->text);
    }
    m2_tokenizer *t = load(o);
    if (!t) { free(buf); return 1; }
    unsigned flags = (o->add_special ? M2_ENC_ADD_SPECIAL : 0) | (o->bos ? M2_ENC_BOS : 0) |
                     (o->eos ? M2_ENC_EOS : 0) | (o->no_special ? M2_ENC_NO_SPECIAL : 0);
    m2_tokens ids = {0};
    int rc = 0;
    if (m2_tokenizer_encode(t, buf ? buf : o->text, len, flags, &ids, &err)) {
        fprintf(stderr, "multi2 tokenizer encode: %s%s\n", o->file ? "" : "--text: ", err.msg);
        rc = 1;
    } else if (o->json) {
        cJSON *root = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(root, "ids"), *p = cJSON_AddArrayToObject(root, "tokens");
        for (size_t i = 0; i < ids.n; i++) {
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ids.ids[i]));
            cJSON_AddItemToArray(p, cJSON_CreateString(m2_tokenizer_token_text(t, ids.ids[i], NULL)));
        }
        char *s = cJSON_PrintUnformatted(root);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(root);
    } else {
        for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
        printf("\n");
    }
    m2_tokens_free(&ids);
    m2_tokenizer_free(t);
    free(buf);
    return rc;
}

static int do_decode(const opts *o) {
    if (!o->tokenizer || !o->ids) {
        fprintf(stderr, "multi2 tokenizer decode: needs --tokenizer FILE and --ids 1,2,3\n");
        return 2;
    }
    m2_tokens ids = {0};
    m2_err err = {0};
    for (const char *s = o->ids; *s;) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < INT32_MIN || v > INT32_MAX || (*end && *end != ',' && *end != ' ')) {
            fprintf(stderr, "multi2 tokenizer decode: --ids: '%s' is not a comma-separated list of integers\n", o->ids);
            m2_tokens_free(&ids);
            return 2;
        }
        m2_tokens_push(&ids, (int32_t)v, &err);
        s = end;
        while (*s == ',' || *s == ' ') s++;
    }
    m2_tokenizer *t = load(o);
    if (!t) { m2_tokens_free(&ids); return 1; }
    char *out = NULL;
    size_t len = 0;
    int rc = 0;
    if (m2_tokenizer_decode(t, ids.ids, ids.n, o->skip_special ? M2_DEC_SKIP_SPECIAL : 0, &out, &len, &err)) {
        fprintf(stderr, "multi2 tokenizer decode: --ids: %s\n", err.msg);
        rc = 1;
    } else {
        fwrite(out, 1, len, stdout);
        printf("\n");
    }
    free(out);
    m2_tokens_free(&ids);
    m2_tokenizer_free(t);
    return rc;
}

static int do_info(const opts *o) {
    if (!o->tokenizer) { fprintf(stderr, "multi2 tokenizer info: needs --tokenizer FILE\n"); return 2; }
    m2_tokenizer *t = load(o);
    if (!t) return 1;
    size_t l;
    printf("model: %s\n", m2_tokenizer_model_kind(t) == M2_TOKENIZER_BPE ? "byte-level BPE" : "SentencePiece BPE");
    printf("pre-tokenizer: %s\n", m2_pretok_name(m2_tokenizer_pretok(t)));
    printf("tokens: %d\nmerges: %d\n", m2_tokenizer_n_tokens(t), m2_tokenizer_n_merges(t));
    const char *names[4] = {"bos", "eos", "pad", "unk"};
    int32_t ids[4] = {m2_tokenizer_bos(t), m2_tokenizer_eos(t), m2_tokenizer_pad(t), m2_tokenizer_unk(t)};
    for (int k = 0; k < 4; k++) {
        const char *s = m2_tokenizer_token_text(t, ids[k], &l);
        if (s) printf("%s: %d %.*s\n", names[k], ids[k], (int)l, s);
        else printf("%s: none\n", names[k]);
    }
    printf("add_bos: %s\n", m2_tokenizer_add_bos(t) ? "yes" : "no");
    m2_chat_format f = m2_chat_format_guess(t);
    printf("chat format: %s\n", f ? m2_chat_format_name(f) : "unknown");
    m2_tokenizer_free(t);
    return 0;
}

int cmd_tokenizer(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (!strcmp(argv[1], "train")) return do_train(&o);
    if (!strcmp(argv[1], "encode")) return do_encode(&o);
    if (!strcmp(argv[1], "decode")) return do_decode(&o);
    if (!strcmp(argv[1], "info")) return do_info(&o);
    fprintf(stderr, "multi2 tokenizer: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
