/* multi2 merge: folds a LoRA adapter into its base model and writes the merged model (GGUF or an
 * HF safetensors folder). Without --adapter it converts between the formats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 merge --base MODEL [--adapter PATH] --out PATH [--format gguf|hf]\n"
        "                    [--dtype f32|f16|bf16|q8_0|q4_0|q4_k|q6_k] [--shard-mb N]\n"
        "\n"
        "Folds the adapter into the base weights (W += alpha/r * B A, in f32) and writes a real merged\n"
        "model; without --adapter the base is just converted.\n"
        "  --base MODEL     a .gguf file or an HF folder (config.json + safetensors)\n"
        "  --adapter PATH   a PEFT folder or a llama.cpp LoRA GGUF\n"
        "  --out PATH       a .gguf file, or a folder for --format hf (default: gguf when PATH ends in\n"
        "                   .gguf, else hf)\n"
        "  --dtype T        matrices in T (default: as the base stores them; hf: f32, f16 or bf16)\n"
        "  --shard-mb N     hf: split the weights into shards of N MiB with an index\n"
        "The tokenizer goes along: GGUF metadata, tokenizer.json, or converted between the two.\n");
}

/* The type the base file stores its matrices in (F32 when unknown). */
static uint32_t base_matrix_type(const char *path) {
    m2_err err = {0};
    uint32_t t = M2_GGML_F32;
    if (m2_is_gguf(path)) {
        m2_gguf *g = m2_gguf_open(path, &err);
        const m2_gguf_tensor *q = g ? m2_gguf_find_tensor(g, "blk.0.attn_q.weight") : NULL;
        if (q && m2_ggml_supported(q->type)) t = q->type;
        m2_gguf_close(g);
    } else {
        m2_safetensors *st = m2_st_open(path, &err);
        const m2_st_tensor *q = st ? m2_st_find(st, "model.layers.0.self_attn.q_proj.weight") : NULL;
        if (q && q->ggml_type != UINT32_MAX) t = q->ggml_type;
        m2_st_close(st);
    }
    return t;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int cmd_merge(int argc, char **argv) {
    const char *base = NULL, *adapter = NULL, *out = NULL, *format = NULL, *dtype = NULL;
    long shard_mb = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        const char **slot = !strcmp(a, "--base") ? &base : !strcmp(a, "--adapter") ? &adapter : !strcmp(a, "--out") ? &out :
                            !strcmp(a, "--format") ? &format : !strcmp(a, "--dtype") ? &dtype : NULL;
        int is_shard = !strcmp(a, "--shard-mb");
        if (!slot && !is_shard) { fprintf(stderr, "multi2 merge: unknown option '%s'\n", a); usage(stderr); return 2; }
        if (i + 1 >= argc) { fprintf(stderr, "multi2 merge: %s needs a value\n", a); return 2; }
        const char *v = argv[++i];
        if (slot) { *slot = v; continue; }
        char *end;
        errno = 0;
        shard_mb = strtol(v, &end, 10);
        if (errno || *end || end == v || shard_mb <= 0 || shard_mb > (1L << 30)) { fprintf(stderr, "multi2 merge: --shard-mb: '%s' is not a positive size\n", v); return 2; }
    }
    if (!base || !out) { fprintf(stderr, "multi2 merge: --base and --out are required\n"); usage(stderr); return 2; }
    int gguf_out;
    if (!format) gguf_out = ends_with(out, ".gguf");
    else if (!strcmp(format, "gguf")) gguf_out = 1;
    else if (!strcmp(format, "hf") || !strcmp(format, "safetensors")) gguf_out = 0;
    else { fprintf(stderr, "multi2 merge: --format: '%s' is not gguf or hf\n", format); return 2; }
    uint32_t type;
    if (dtype) {
        m2_ggml_type t;
        if (m2_ggml_type_parse(dtype, &t)) { fprintf(stderr, "multi2 merge: --dtype: '%s' is not f32, f16, bf16, q8_0, q4_0, q4_k or q6_k\n", dtype); return 2; }
        type = t;
        if (!gguf_out && type != M2_GGML_F32 && type != M2_GGML_F16 && type != M2_GGML_BF16) {
            fprintf(stderr, "multi2 merge: --dtype %s: safetensors output is f32, f16 or bf16\n", dtype);
            return 2;
        }
    } else {
        if (!m2_path_exists(base)) { fprintf(stderr, "multi2 merge: %s: no such file or folder\n", base); return 1; }
        type = base_matrix_type(base);
        if (!gguf_out && type != M2_GGML_F16 && type != M2_GGML_BF16) type = M2_GGML_F32;
    }
    if (shard_mb && gguf_out) { fprintf(stderr, "multi2 merge: --shard-mb applies to hf output only\n"); return 2; }

    m2_err err = {0};
    m2_bundle b;
    m2_model_opts o = {.dtype = M2_DT_F32};   /* merge in f32, round once when writing */
    if (m2_bundle_open(&b, base, adapter, NULL, &o, 0, &err)) { fprintf(stderr, "multi2 merge: %s\n", err.msg); return 1; }
    int rc = 1;
    m2_gguf *src = NULL;
    if (b.adapter && m2_adapter_merge(b.model, b.adapter, &err)) { fprintf(stderr, "multi2 merge: %s\n", err.msg); goto done; }
    if (gguf_out) {
        if (m2_is_gguf(base) && !(src = m2_gguf_open(base, &err))) { fprintf(stderr, "multi2 merge: %s\n", err.msg); goto done; }
        if (m2_model_save_gguf_tok(b.model, out, type, src, src ? NULL : b.tok, &err)) { fprintf(stderr, "multi2 merge: %s\n", err.msg); goto done; }
    } else {
        char tdir[4096];
        m2_bundle_tokenizer_path(base, tdir, sizeof tdir);
        struct stat s;
        int tdir_ok = stat(tdir, &s) == 0 && S_ISDIR(s.st_mode);
        if (m2_model_save_hf(b.model, out, type, (uint64_t)shard_mb << 20, tdir_ok ? tdir : NULL, &err)) {
            fprintf(stderr, "multi2 merge: %s\n", err.msg);
            goto done;
        }
        if (!tdir_ok && b.tok && m2_tokenizer_model_kind(b.tok) == M2_TOKENIZER_BPE) {
            char tp[4200];
            snprintf(tp, sizeof tp, "%s/tokenizer.json", out);
            if (m2_tokenizer_save_json(b.tok, tp, &err)) { fprintf(stderr, "multi2 merge: %s\n", err.msg); goto done; }
        }
    }
    fprintf(stderr, "multi2 merge: wrote %s (%s%s, %s%s)\n", out, gguf_out ? "GGUF" : "HF safetensors",
            shard_mb ? ", sharded" : "", m2_ggml_type_name(type), b.adapter ? ", adapter merged" : "");
    rc = 0;
done:
    m2_gguf_close(src);
    m2_bundle_close(&b);
    return rc;
}
