/* multi2 generate: a completion of a prompt with a model (and optional adapter). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 generate --model FILE --prompt TEXT [--adapter PATH] [--tokenizer PATH]\n"
        "                       [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
        "                       [--stop TEXT]... [--json] [--threads N]\n"
        "\n"
        "Prints the model's completion of the prompt (greedy unless --temperature > 0).\n"
        "  --model FILE      a .gguf file, an HF folder (config.json + safetensors) or a .safetensors\n"
        "  --adapter PATH    a PEFT folder or a LoRA GGUF\n"
        "  --prompt TEXT     encoded with the model's tokenizer; BOS only if the tokenizer asks for it\n"
        "  --max-tokens N    new tokens at most (default 64); stops early at EOS or a --stop string\n"
        "  --json            print {\"prompt_tokens\", \"tokens\", \"text\", \"stop_reason\"}\n");
}

static int token_text(void *ud, int32_t id, char *buf, int cap) {
    size_t len = 0;
    const char *p = m2_tokenizer_piece(ud, id, &len);
    if (!p) return 0;
    if (len > (size_t)cap) len = (size_t)cap;
    memcpy(buf, p, len);
    return (int)len;
}

static int num(const char *opt, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || end == v || !(d >= lo && d <= hi)) {
        fprintf(stderr, "multi2 generate: %s: '%s' must be a number in [%g, %g]\n", opt, v, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *tokenizer = NULL, *prompt = NULL;
    const char *stops[32];
    int n_stops = 0, json = 0;
    double max_tokens = 64, temperature = 0, top_k = 0, top_p = 1, seed = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        static const char *valued[] = {"--model", "--adapter", "--tokenizer", "--prompt", "--max-tokens", "--temperature",
                                       "--top-k", "--top-p", "--seed", "--stop", "--threads"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(a, valued[k]);
        if (!known) { fprintf(stderr, "multi2 generate: unknown option '%s'\n", a); usage(stderr); return 2; }
        if (i + 1 >= argc) { fprintf(stderr, "multi2 generate: %s needs a value\n", a); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--adapter")) adapter = v;
        else if (!strcmp(a, "--tokenizer")) tokenizer = v;
        else if (!strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--stop")) {
            if (n_stops == 32) { fprintf(stderr, "multi2 generate: at most 32 --stop strings\n"); return 2; }
            stops[n_stops++] = v;
        } else if (!strcmp(a, "--max-tokens")) { if (num(a, v, 1, 1 << 20, &max_tokens)) return 2; }
        else if (!strcmp(a, "--temperature")) { if (num(a, v, 0, 100, &temperature)) return 2; }
        else if (!strcmp(a, "--top-k")) { if (num(a, v, 0, 1 << 24, &top_k)) return 2; }
        else if (!strcmp(a, "--top-p")) { if (num(a, v, 0, 1, &top_p)) return 2; }
        else if (!strcmp(a, "--seed")) { if (num(a, v, 0, 9007199254740992.0, &seed)) return 2; }
        else if (!strcmp(a, "--threads")) { if (num(a, v, 0, 4096, &threads)) return 2; }
    }
    if (!model || !prompt) { fprintf(stderr, "multi2 generate: --model and --prompt are required\n"); usage(stderr); return 2; }

    m2_err err = {0};
    m2_bundle b;
    m2_model_opts o = {.dtype = M2_DTYPE_AUTO, .threads = (int)threads};
    if (m2_bundle_open(&b, model, adapter, tokenizer, &o, 1, &err)) { fprintf(stderr, "multi2 generate: %s\n", err.msg); return 1; }
    m2_tokens toks = {0};
    int rc = 1;
    m2_gen_result res = {0};
    int have_res = 0;
    if (m2_bundle_encode(&b, prompt, &toks, &err)) { fprintf(stderr, "multi2 generate: prompt: %s\n", err.msg); goto done; }
    if (toks.n == 0) { fprintf(stderr, "multi2 generate: the prompt encodes to no tokens\n"); goto done; }
    if ((long)toks.n >= b.model->cfg.max_seq_len) {
        fprintf(stderr, "multi2 generate: the prompt has %zu tokens, the model's context is %d\n", toks.n, b.model->cfg.max_seq_len);
        goto done;
    }
    int32_t stop_ids[2];
    int n_stop_ids = 0;
    if (m2_tokenizer_eos(b.tok) >= 0) stop_ids[n_stop_ids++] = m2_tokenizer_eos(b.tok);
    int32_t im_end = m2_tokenizer_find(b.tok, "<|im_end|>", 10);
    if (im_end >= 0 && (n_stop_ids == 0 || im_end != stop_ids[0])) stop_ids[n_stop_ids++] = im_end;
    m2_gen_config g = {0};
    g.max_new_tokens = (int)max_tokens;
    if (g.max_new_tokens > b.model->cfg.max_seq_len - (int)toks.n) g.max_new_tokens = b.model->cfg.max_seq_len - (int)toks.n;
    g.sampler.temperature = (float)temperature;
    g.sampler.top_k = (int)top_k;
    g.sampler.top_p = (float)top_p;
    g.seed = (uint64_t)seed;
    g.stop_tokens = stop_ids;
    g.n_stop_tokens = n_stop_ids;
    g.stop_strings = stops;
    g.n_stop_strings = n_stops;
    g.token_text = token_text;
    g.ud = b.tok;
    const int32_t *prompts[1] = {toks.ids};
    int plen = (int)toks.n;
    if (m2_generate(b.model, b.adapter, 1, prompts, &plen, &g, &res, &err)) { fprintf(stderr, "multi2 generate: %s\n", err.msg); goto done; }
    have_res = 1;
    char *text = NULL;
    size_t tl = 0;
    if (m2_tokenizer_decode(b.tok, res.tokens, (size_t)res.n, M2_DEC_SKIP_SPECIAL, &text, &tl, &err)) {
        fprintf(stderr, "multi2 generate: decoding: %s\n", err.msg);
        goto done;
    }
    static const char *reasons[] = {"none", "max_tokens", "stop_token", "stop_string", "callback", "context"};
    const char *reason = res.stop_reason >= 0 && res.stop_reason <= 5 ? reasons[res.stop_reason] : "?";
    if (json) {
        cJSON *r = cJSON_CreateObject();
        cJSON *pt = cJSON_AddArrayToObject(r, "prompt_tokens"), *gt = cJSON_AddArrayToObject(r, "tokens");
        for (size_t i = 0; i < toks.n; i++) cJSON_AddItemToArray(pt, cJSON_CreateNumber(toks.ids[i]));
        for (int i = 0; i < res.n; i++) cJSON_AddItemToArray(gt, cJSON_CreateNumber(res.tokens[i]));
        cJSON_AddStringToObject(r, "text", text);
        cJSON_AddStringToObject(r, "stop_reason", reason);
        char *s = cJSON_PrintUnformatted(r);
        if (s) puts(s);
        free(s);
        cJSON_Delete(r);
    } else {
        fwrite(text, 1, tl, stdout);
        fputc('\n', stdout);
    }
    free(text);
    rc = 0;
done:
    if (have_res) m2_gen_result_free(&res);
    m2_tokens_free(&toks);
    m2_bundle_close(&b);
    return rc;
}
