/* The model commands end to end (the multi2 binary from $M2_BIN): `logits --json` gives the
 * tokenizer's ids and exactly the in-process logits, for a model as an HF folder and as GGUF
 * (tokenizer embedded), with and without a PEFT adapter; `merge` writes a model whose logits are
 * base + adapter; `generate` matches in-process greedy decoding; a llama-spm GGUF adds BOS as
 * the model asks; usage and file errors exit 2 / 1 with messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cblas.h>
#include <cjson/cJSON.h>
#include "core/core.h"
#include "io/io.h"
#include "model/model.h"
#include "tmpdir.h"

static char tmpdir[64];
static const char *bin;
static int setup(void **state) {
    bin = getenv("M2_BIN");
    return m2t_tmpdir(tmpdir, sizeof tmpdir, "cli");
}
static int teardown(void **state) {
    return m2_remove_tree(tmpdir) == 0 ? 0 : -1;
}

/* Runs a command; returns its exit status, stdout in *out (malloc'd). */
static int run(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int st = pclose(p);
    if (out) *out = buf; else free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *corpus =
    "go to the table. take the apple from the table. put the apple in the fridge. "
    "craft 4 oak planks using 1 oak log. get 2 sticks. inventory: apple, stick, oak planks. "
    "the quick brown fox jumps over the lazy dog. look around. open the drawer. close the drawer.";

static m2_tokenizer *train_tok(void) {
    m2_bpe_train_opts o = {0};
    o.vocab_size = 300;
    m2_err err = {0};
    m2_tokenizer *t = m2_bpe_train(corpus, strlen(corpus), &o, &err);
    if (!t) fail_msg("%s", err.msg);
    return t;
}

static m2_model *make_model(int V, int qwen) {
    m2_model_config c = {0};
    c.family = qwen ? M2_FAMILY_QWEN2 : M2_FAMILY_LLAMA;
    c.vocab_size = V; c.dim = 32; c.n_layers = 2; c.n_heads = 4; c.n_kv_heads = 2; c.ffn_dim = 64;
    c.max_seq_len = 128; c.norm_eps = 1e-6f; c.rope_theta = 1e6f; c.rope_layout = M2_ROPE_HALF;
    c.qkv_bias = qwen; c.tied_embeddings = qwen; c.bos_token = -1; c.eos_token = -1;
    m2_err err = {0};
    m2_model *m = m2_model_create(&c, NULL, &err);
    if (!m) fail_msg("%s", err.msg);
    m2_model_init_random(m, 77, 0.4f);
    return m;
}

static float *inproc_last(m2_model *m, m2_adapter *a, const int32_t *ids, int n) {
    m2_err err = {0};
    m2_ctx *c = m2_ctx_create(m, n, 0, &err);
    m2_batch b = {1, &n, ids};
    assert_int_equal(m2_forward(c, &b, a, 0, &err), 0);
    float *out = malloc(sizeof(float) * m->cfg.vocab_size);
    memcpy(out, m2_ctx_logits(c) + (size_t)(n - 1) * m->cfg.vocab_size, sizeof(float) * m->cfg.vocab_size);
    m2_ctx_free(c);
    return out;
}

/* Checks `logits --json` output against ids and logits; tol 0 = exact. */
static void check_logits_json(const char *json, const int32_t *ids, int n, const float *want, int V, float tol) {
    cJSON *j = cJSON_Parse(json);
    if (!j) fail_msg("not JSON: %.200s", json);
    cJSON *t = cJSON_GetObjectItem(j, "tokens"), *l = cJSON_GetObjectItem(j, "last_logits");
    assert_int_equal(cJSON_GetArraySize(t), n);
    for (int i = 0; i < n; i++) assert_int_equal(cJSON_GetArrayItem(t, i)->valueint, ids[i]);
    assert_int_equal(cJSON_GetArraySize(l), V);
    int i = 0;
    for (cJSON *e = l->child; e; e = e->next, i++) {
        float v = (float)e->valuedouble;
        if (tol == 0 ? v != want[i] : fabsf(v - want[i]) > tol) fail_msg("logit %d: %.9g vs %.9g", i, v, want[i]);
    }
    cJSON_Delete(j);
}

static void logits_merge_generate(void **state) {
    if (!bin) skip();
    m2_err err = {0};
    m2_tokenizer *tok = train_tok();
    int V = m2_tokenizer_n_tokens(tok);
    m2_model *m = make_model(V, 1);
    char hf[200], gg[200], peft[200], merged[200], p[300], cmd[2048];
    snprintf(hf, sizeof hf, "%s/hf", tmpdir);
    snprintf(gg, sizeof gg, "%s/m.gguf", tmpdir);
    snprintf(peft, sizeof peft, "%s/peft", tmpdir);
    snprintf(merged, sizeof merged, "%s/merged.gguf", tmpdir);
    assert_int_equal(m2_model_save_hf(m, hf, M2_GGML_F32, 0, NULL, &err), 0);
    snprintf(p, sizeof p, "%s/tokenizer.json", hf);
    assert_int_equal(m2_tokenizer_save_json(tok, p, &err), 0);
    assert_int_equal(m2_model_save_gguf_tok(m, gg, M2_GGML_F32, NULL, tok, &err), 0);
    m2_lora_config lc = {"a", 4, 8.f, 0.f, M2_LORA_Q | M2_LORA_V | M2_LORA_UP};
    m2_adapter *a = m2_adapter_add(m, &lc, 1, &err);
    m2_rng r;
    m2_rng_seed(&r, 4);
    for (size_t i = 0; i < a->params.n; i++) a->params.w[i] = 0.3f * m2_rng_normal(&r);
    assert_int_equal(m2_peft_save(m, a, peft, hf, &err), 0);

    const char *prompt = "take the apple from the fridge.";
    m2_tokens ids = {0};
    assert_int_equal(m2_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids, &err), 0);
    assert_true(ids.n > 3);
    float *base = inproc_last(m, NULL, ids.ids, (int)ids.n), *with = inproc_last(m, a, ids.ids, (int)ids.n);
    char *out;
    const char *models[] = {hf, gg};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s logits --model %s --prompt '%s' --json", bin, models[k], prompt);
        assert_int_equal(run(cmd, &out), 0);
        check_logits_json(out, ids.ids, (int)ids.n, base, V, 0);
        free(out);
        snprintf(cmd, sizeof cmd, "%s logits --model %s --adapter %s --prompt '%s' --json", bin, models[k], peft, prompt);
        assert_int_equal(run(cmd, &out), 0);
        check_logits_json(out, ids.ids, (int)ids.n, with, V, 0);
        free(out);
    }
    /* merge: into GGUF (tokenizer carried over) and into an HF folder */
    snprintf(cmd, sizeof cmd, "%s merge --base %s --adapter %s --out %s 2>/dev/null", bin, hf, peft, merged);
    assert_int_equal(run(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd, "%s logits --model %s --prompt '%s' --json", bin, merged, prompt);
    assert_int_equal(run(cmd, &out), 0);
    check_logits_json(out, ids.ids, (int)ids.n, with, V, 1e-4f);
    free(out);
    snprintf(p, sizeof p, "%s/merged-hf", tmpdir);
    snprintf(cmd, sizeof cmd, "%s merge --base %s --adapter %s --out %s --format hf --shard-mb 1 2>/dev/null", bin, gg, peft, p);
    assert_int_equal(run(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd, "%s logits --model %s --prompt '%s' --json", bin, p, prompt);
    assert_int_equal(run(cmd, &out), 0);
    check_logits_json(out, ids.ids, (int)ids.n, with, V, 1e-4f);
    free(out);

    /* generate: greedy, same tokens as in-process */
    m2_gen_config g = {0};
    g.max_new_tokens = 12;
    int32_t stops[2];   /* as the CLI: the tokenizer's EOS and <|im_end|> */
    if (m2_tokenizer_eos(tok) >= 0) stops[g.n_stop_tokens++] = m2_tokenizer_eos(tok);
    int32_t im_end = m2_tokenizer_find(tok, "<|im_end|>", 10);
    if (im_end >= 0 && (g.n_stop_tokens == 0 || stops[0] != im_end)) stops[g.n_stop_tokens++] = im_end;
    g.stop_tokens = stops;
    const int32_t *pr[1] = {ids.ids};
    int pl = (int)ids.n;
    m2_gen_result res = {0};
    assert_int_equal(m2_generate(m, a, 1, pr, &pl, &g, &res, &err), 0);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --adapter %s --prompt '%s' --max-tokens 12 --json", bin, gg, peft, prompt);
    assert_int_equal(run(cmd, &out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *gt = cJSON_GetObjectItem(j, "tokens");
    assert_int_equal(cJSON_GetArraySize(gt), res.n);
    for (int i = 0; i < res.n; i++) assert_int_equal(cJSON_GetArrayItem(gt, i)->valueint, res.tokens[i]);
    char *text;
    size_t tl;
    assert_int_equal(m2_tokenizer_decode(tok, res.tokens, (size_t)res.n, M2_DEC_SKIP_SPECIAL, &text, &tl, &err), 0);
    assert_string_equal(cJSON_GetObjectItem(j, "text")->valuestring, text);
    free(text);
    cJSON_Delete(j);
    free(out);
    m2_gen_result_free(&res);

    /* usage and file errors */
    snprintf(cmd, sizeof cmd, "%s logits --prompt x 2>/dev/null", bin);
    assert_int_equal(run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "%s logits --model %s --prompt x --bogus 2>/dev/null", bin, gg);
    assert_int_equal(run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "%s logits --model %s/none.gguf --prompt x 2>&1", bin, tmpdir);
    assert_int_equal(run(cmd, &out), 1);
    assert_non_null(strstr(out, "none.gguf"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt x --temperature -1 2>/dev/null", bin, gg);
    assert_int_equal(run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "%s merge --base %s --out %s/x.gguf --dtype q9 2>/dev/null", bin, gg, tmpdir);
    assert_int_equal(run(cmd, NULL), 2);
    snprintf(p, sizeof p, "%s/trunc.gguf", tmpdir);
    snprintf(cmd, sizeof cmd, "head -c 3000 %s > %s && %s logits --model %s --prompt x 2>&1", gg, p, bin, p);
    assert_int_equal(run(cmd, &out), 1);
    assert_non_null(strstr(out, "trunc.gguf"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s logits --help", bin);
    assert_int_equal(run(cmd, NULL), 0);

    free(base); free(with);
    m2_tokens_free(&ids);
    m2_model_free(m);
    m2_tokenizer_free(tok);
}

/* llama.cpp's llama-spm vocab in a random llama GGUF: BOS is added because the file asks. */
static void spm_gguf_bos(void **state) {
    const char *dir = m2_shared_data_dir();
    if (!bin || !dir) skip();
    char vp[1024], gg[200], cmd[2048];
    snprintf(vp, sizeof vp, "%s/tokenizers/vectors/ggml-vocab-llama-spm.gguf", dir);
    if (!m2_path_exists(vp)) skip();
    m2_err err = {0};
    m2_gguf *voc = m2_gguf_open(vp, &err);
    assert_non_null(voc);
    m2_tokenizer *tok = m2_tokenizer_from_gguf(voc, &err);
    assert_non_null(tok);
    m2_model *m = make_model(m2_tokenizer_n_tokens(tok), 0);
    snprintf(gg, sizeof gg, "%s/spm.gguf", tmpdir);
    assert_int_equal(m2_model_save_gguf(m, gg, M2_GGML_F16, voc, &err), 0);
    m2_gguf_close(voc);
    m2_model *r = m2_model_load(gg, NULL, NULL, &err);
    assert_non_null(r);
    m2_tokens ids = {0};
    assert_int_equal(m2_tokenizer_encode(tok, "Hello world", 11, M2_ENC_BOS, &ids, &err), 0);
    assert_int_equal(ids.ids[0], 1);
    float *want = inproc_last(r, NULL, ids.ids, (int)ids.n);
    char *out;
    snprintf(cmd, sizeof cmd, "%s logits --model %s --prompt 'Hello world' --json", bin, gg);
    assert_int_equal(run(cmd, &out), 0);
    check_logits_json(out, ids.ids, (int)ids.n, want, r->cfg.vocab_size, 0);
    free(out);
    free(want);
    m2_tokens_free(&ids);
    m2_model_free(r);
    m2_model_free(m);
    m2_tokenizer_free(tok);
}

int main(void) {
    /* the CLI must run the same OpenBLAS kernels as this process for the exact comparisons (it
     * would otherwise restart itself with a faster core type: m2_blas_better_coretype) */
    setenv("OPENBLAS_CORETYPE", openblas_get_corename(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(logits_merge_generate),
        cmocka_unit_test(spm_gguf_bos),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
