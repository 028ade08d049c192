/* multi2 logits: the last-position logits of a prompt under a model (and optional adapter). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 logits --model FILE --prompt TEXT [--adapter PATH] [--tokenizer PATH]\n"
        "                     [--json] [--top N] [--threads N]\n"
        "\n"
        "Runs the prompt through the model and prints the logits at its last position.\n"
        "  --model FILE      a .gguf file, an HF folder (config.json + safetensors) or a .safetensors\n"
        "  --adapter PATH    a PEFT folder (adapter_config.json + adapter_model.safetensors) or a LoRA GGUF\n"
        "  --tokenizer PATH  override the model's own tokenizer (GGUF metadata / tokenizer.json)\n"
        "  --prompt TEXT     encoded with the model's tokenizer; BOS only if the tokenizer asks for it\n"
        "  --json            print {\"tokens\": [ids], \"last_logits\": [one float per vocabulary entry]}\n"
        "  --top N           without --json: show the N largest logits (default 10)\n");
}

int cmd_logits(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *tokenizer = NULL, *prompt = NULL;
    int json = 0;
    long top = 10, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--model") || !strcmp(a, "--adapter") || !strcmp(a, "--tokenizer") || !strcmp(a, "--prompt") ||
            !strcmp(a, "--top") || !strcmp(a, "--threads")) {
            if (i + 1 >= argc) { fprintf(stderr, "multi2 logits: %s needs a value\n", a); return 2; }
            const char *v = argv[++i];
            if (!strcmp(a, "--model")) model = v;
            else if (!strcmp(a, "--adapter")) adapter = v;
            else if (!strcmp(a, "--tokenizer")) tokenizer = v;
            else if (!strcmp(a, "--prompt")) prompt = v;
            else {
                char *end;
                errno = 0;
                long n = strtol(v, &end, 10);
                if (errno || *end || end == v || n < 0 || n > 1000000) { fprintf(stderr, "multi2 logits: %s: '%s' is not a count\n", a, v); return 2; }
                if (!strcmp(a, "--top")) top = n; else threads = n;
            }
            continue;
        }
        fprintf(stderr, "multi2 logits: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!model || !prompt) { fprintf(stderr, "multi2 logits: --model and --prompt are required\n"); usage(stderr); return 2; }

    m2_err err = {0};
    m2_bundle b;
    m2_model_opts o = {.dtype = M2_DTYPE_AUTO, .threads = (int)threads};
    if (m2_bundle_open(&b, model, adapter, tokenizer, &o, 1, &err)) { fprintf(stderr, "multi2 logits: %s\n", err.msg); return 1; }
    m2_tokens toks = {0};
    if (m2_bundle_encode(&b, prompt, &toks, &err)) {
        fprintf(stderr, "multi2 logits: prompt: %s\n", err.msg);
        m2_bundle_close(&b);
        return 1;
    }
    int rc = 1;
    m2_ctx *c = NULL;
    if (toks.n == 0) { fprintf(stderr, "multi2 logits: the prompt encodes to no tokens\n"); goto done; }
    if ((long)toks.n > b.model->cfg.max_seq_len) {
        fprintf(stderr, "multi2 logits: the prompt has %zu tokens, the model's context is %d\n", toks.n, b.model->cfg.max_seq_len);
        goto done;
    }
    if (!(c = m2_ctx_create(b.model, (int)toks.n, 0, &err))) { fprintf(stderr, "multi2 logits: %s\n", err.msg); goto done; }
    int len = (int)toks.n;
    m2_batch batch = {1, &len, toks.ids};
    if (m2_forward(c, &batch, b.adapter, 0, &err)) { fprintf(stderr, "multi2 logits: %s\n", err.msg); goto done; }
    int V = b.model->cfg.vocab_size;
    const float *last = m2_ctx_logits(c) + (size_t)(toks.n - 1) * V;
    if (json) {
        /* %.9g prints every f32 exactly (it round-trips) */
        fputs("{\"tokens\": [", stdout);
        for (size_t i = 0; i < toks.n; i++) printf("%s%d", i ? ", " : "", (int)toks.ids[i]);
        fputs("], \"last_logits\": [", stdout);
        for (int v = 0; v < V; v++) printf("%s%.9g", v ? ", " : "", last[v]);
        fputs("]}\n", stdout);
    } else {
        printf("tokens (%zu):", toks.n);
        for (size_t i = 0; i < toks.n; i++) printf(" %d", (int)toks.ids[i]);
        printf("\nvocabulary %d; top %ld logits:\n", V, top < V ? top : (long)V);
        int *idx = malloc(sizeof(int) * (size_t)V);
        if (!idx) goto done;
        for (int v = 0; v < V; v++) idx[v] = v;
        for (long k = 0; k < top && k < V; k++) {   /* partial selection sort: top is small */
            int best = (int)k;
            for (int v = (int)k + 1; v < V; v++) if (last[idx[v]] > last[idx[best]]) best = v;
            int t = idx[k]; idx[k] = idx[best]; idx[best] = t;
            size_t pl = 0;
            const char *piece = b.tok ? m2_tokenizer_piece(b.tok, idx[k], &pl) : NULL;
            printf("  %8d  %12.6f  %.*s\n", idx[k], last[idx[k]], piece ? (int)pl : 0, piece ? piece : "");
        }
        free(idx);
    }
    rc = 0;
done:
    m2_ctx_free(c);
    m2_tokens_free(&toks);
    m2_bundle_close(&b);
    return rc;
}
