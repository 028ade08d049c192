/* tokenizer.json (the HF `tokenizers` serialisation) -> m2_tokenizer_spec, and back for byte-level BPE.
 * Supported: model BPE; byte-level (ByteLevel pre-tokenizer/decoder, optional Split regex) or
 * SentencePiece-style (Prepend/Replace ▁ normalizers or a Metaspace pre-tokenizer, byte_fallback);
 * added_tokens; TemplateProcessing BOS/EOS. Anything else fails with the field it cannot handle. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"
#include "io/tokenizer_impl.h"

#define MAX_ID (1 << 24)
static const char SPACE_MARK[] = "\xE2\x96\x81";

static const cJSON *jget(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}
static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = jget(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
static int jbool(const cJSON *o, const char *key, int def) {
    const cJSON *v = jget(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}
static int jtype_is(const cJSON *o, const char *type) {
    const char *s = jstr(o, "type");
    return s && !strcmp(s, type);
}
/* An integer id in [0, MAX_ID), else -1. */
static int32_t jid(const cJSON *v) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d < MAX_ID) || d != (double)(int32_t)d) return -1;
    return (int32_t)d;
}

typedef struct {
    const char *name;
    int bytelevel, spm;                 /* evidence for each model kind */
    const char *regex;
    int use_regex_default, add_prefix_space;
    m2_space_prefix space_prefix;
    int spm_split;
} shape;

/* The pre-tokenizer tree: ByteLevel, Split(regex, Isolated), Metaspace, Sequence of these. */
static int walk_pretok(const cJSON *p, shape *sh, const char *path, m2_err *err) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *ty = jstr(p, "type");
    if (!ty) return m2_errorf(err, M2_EFORMAT, "%s: %s: missing \"type\"", sh->name, path);
    if (!strcmp(ty, "Sequence")) {
        const cJSON *list = jget(p, "pretokenizers");
        if (!cJSON_IsArray(list)) return m2_errorf(err, M2_EFORMAT, "%s: %s.pretokenizers: not an array", sh->name, path);
        const cJSON *e;
        cJSON_ArrayForEach(e, list) if (walk_pretok(e, sh, path, err)) return -1;
        return 0;
    }
    if (!strcmp(ty, "ByteLevel")) {
        sh->bytelevel = 1;
        if (jbool(p, "use_regex", 1)) sh->use_regex_default = 1;
        if (jbool(p, "add_prefix_space", 0)) sh->add_prefix_space = 1;
        return 0;
    }
    if (!strcmp(ty, "Split")) {
        const char *re = jstr(jget(p, "pattern"), "Regex");
        if (!re) return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: Split needs pattern.Regex (string patterns are not supported)", sh->name, path);
        const char *beh = jstr(p, "behavior");
        if (beh && strcmp(beh, "Isolated"))
            return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: Split behavior \"%s\" is not supported (only Isolated)", sh->name, path, beh);
        if (jbool(p, "invert", 0)) return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: Split invert=true is not supported", sh->name, path);
        if (sh->regex) return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: more than one Split regex is not supported", sh->name, path);
        sh->regex = re;
        return 0;
    }
    if (!strcmp(ty, "Metaspace")) {
        sh->spm = 1;
        const char *rep = jstr(p, "replacement");
        if (rep && strcmp(rep, SPACE_MARK))
            return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: Metaspace replacement must be U+2581", sh->name, path);
        const char *scheme = jstr(p, "prepend_scheme");
        if (scheme) {
            if (!strcmp(scheme, "always")) sh->space_prefix = M2_SPACE_PREFIX_META_ALWAYS;
            else if (!strcmp(scheme, "first")) sh->space_prefix = M2_SPACE_PREFIX_META_FIRST;
            else if (!strcmp(scheme, "never")) sh->space_prefix = M2_SPACE_PREFIX_NONE;
            else return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: Metaspace prepend_scheme \"%s\" unknown", sh->name, path, scheme);
        } else {
            sh->space_prefix = jbool(p, "add_prefix_space", 1) ? M2_SPACE_PREFIX_META_ALWAYS : M2_SPACE_PREFIX_NONE;
        }
        sh->spm_split = jbool(p, "split", 1);
        return 0;
    }
    return m2_errorf(err, M2_EUNSUPPORTED, "%s: %s: pre-tokenizer type \"%s\" is not supported", sh->name, path, ty);
}

/* Normalizers: NFC (not applied; see docs), Prepend ▁ and Replace ' ' -> ▁ (SentencePiece). */
static int walk_norm(const cJSON *p, shape *sh, m2_err *err) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *ty = jstr(p, "type");
    if (!ty) return m2_errorf(err, M2_EFORMAT, "%s: normalizer: missing \"type\"", sh->name);
    if (!strcmp(ty, "Sequence")) {
        const cJSON *list = jget(p, "normalizers"), *e;
        if (!cJSON_IsArray(list)) return m2_errorf(err, M2_EFORMAT, "%s: normalizer.normalizers: not an array", sh->name);
        cJSON_ArrayForEach(e, list) if (walk_norm(e, sh, err)) return -1;
        return 0;
    }
    if (!strcmp(ty, "NFC")) return 0;
    if (!strcmp(ty, "Prepend")) {
        const char *s = jstr(p, "prepend");
        if (!s || strcmp(s, SPACE_MARK)) return m2_errorf(err, M2_EUNSUPPORTED, "%s: normalizer: Prepend of anything but U+2581 is not supported", sh->name);
        sh->spm = 1;
        sh->space_prefix = M2_SPACE_PREFIX_ALWAYS;
        return 0;
    }
    if (!strcmp(ty, "Replace")) {
        const char *from = jstr(jget(p, "pattern"), "String"), *to = jstr(p, "content");
        if (!from || !to || strcmp(from, " ") || strcmp(to, SPACE_MARK))
            return m2_errorf(err, M2_EUNSUPPORTED, "%s: normalizer: only Replace ' ' -> U+2581 is supported", sh->name);
        sh->spm = 1;
        return 0;
    }
    return m2_errorf(err, M2_EUNSUPPORTED, "%s: normalizer type \"%s\" is not supported", sh->name, ty);
}

/* bos/eos/pad names in tokenizer_config.json: a string, {"content": ...} or null. */
static int cfg_token(const cJSON *cfg, const char *key, const char **out) {
    const cJSON *v = jget(cfg, key);
    if (!v) return 0;
    if (cJSON_IsNull(v)) { *out = NULL; return 1; }
    if (cJSON_IsString(v)) { *out = v->valuestring; return 1; }
    const char *c = jstr(v, "content");
    if (c) { *out = c; return 1; }
    return 0;
}

static int32_t find_first(const m2_tokenizer *t, const char *const *names) {
    for (int i = 0; names[i]; i++) {
        int32_t id = m2_tokenizer_find(t, names[i], strlen(names[i]));
        if (id >= 0) return id;
    }
    return -1;
}

static m2_tokenizer *from_json_cfg(const char *json, size_t len, const char *name, const cJSON *cfg, m2_err *err) {
    if (!name) name = "tokenizer.json";
    m2_tokenizer *tok = NULL;
    const char **tokens = NULL, **merges = NULL;
    int32_t *types = NULL;
    char *pool = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        long off = ep && ep >= json && ep <= json + len ? (long)(ep - json) : -1;
        m2_errorf(err, M2_EFORMAT, "%s: not valid JSON (error near byte %ld)", name, off);
        return NULL;
    }
    if (!cJSON_IsObject(root)) { m2_errorf(err, M2_EFORMAT, "%s: top level is not a JSON object", name); goto done; }
    const cJSON *model = jget(root, "model");
    if (!cJSON_IsObject(model)) { m2_errorf(err, M2_EFORMAT, "%s: field \"model\" is missing or not an object", name); goto done; }
    const char *mtype = jstr(model, "type");
    if (mtype && strcmp(mtype, "BPE")) {
        m2_errorf(err, M2_EUNSUPPORTED, "%s: model.type \"%s\" is not supported (only BPE)", name, mtype);
        goto done;
    }
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int k = 0; k < 2; k++) {
        const char *a = jstr(model, affixes[k]);
        if (a && a[0]) {
            m2_errorf(err, M2_EUNSUPPORTED, "%s: model.%s \"%s\" is not supported", name, affixes[k], a);
            goto done;
        }
    }
    const cJSON *vocab = jget(model, "vocab");
    if (!cJSON_IsObject(vocab)) { m2_errorf(err, M2_EFORMAT, "%s: field \"model.vocab\" is missing or not an object", name); goto done; }
    const cJSON *added = jget(root, "added_tokens");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) { m2_errorf(err, M2_EFORMAT, "%s: \"added_tokens\" is not an array", name); goto done; }
    const cJSON *mergelist = jget(model, "merges");
    if (mergelist && !cJSON_IsNull(mergelist) && !cJSON_IsArray(mergelist)) { m2_errorf(err, M2_EFORMAT, "%s: \"model.merges\" is not an array", name); goto done; }

    /* size of the id space */
    int32_t max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = jid(e);
        if (id < 0) { m2_errorf(err, M2_EFORMAT, "%s: model.vocab[\"%.80s\"]: id must be an integer in [0, %d)", name, e->string, MAX_ID); goto done; }
        if (!e->string || !e->string[0]) { m2_errorf(err, M2_EFORMAT, "%s: model.vocab: empty token text (id %d)", name, id); goto done; }
        if (id > max_id) max_id = id;
    }
    int ai = 0;
    cJSON_ArrayForEach(e, added) {
        int32_t id = jid(jget(e, "id"));
        const char *c = jstr(e, "content");
        if (id < 0 || !c || !c[0]) {
            m2_errorf(err, M2_EFORMAT, "%s: added_tokens[%d]: needs an integer \"id\" in [0, %d) and a non-empty \"content\"", name, ai, MAX_ID);
            goto done;
        }
        if (id > max_id) max_id = id;
        ai++;
    }
    if (max_id < 0) { m2_errorf(err, M2_EFORMAT, "%s: model.vocab is empty", name); goto done; }
    int n_entries = cJSON_GetArraySize(vocab) + ai;
    if (max_id > 2 * n_entries + 1024) {   /* a sparse id space would only waste memory */
        m2_errorf(err, M2_EFORMAT, "%s: token ids go up to %d for only %d tokens", name, max_id, n_entries);
        goto done;
    }
    int32_t n = max_id + 1;
    tokens = calloc((size_t)n, sizeof *tokens);
    types = calloc((size_t)n, sizeof *types);
    if (!tokens || !types) { m2_errorf(err, M2_ENOMEM, "%s: out of memory for %d tokens", name, n); goto done; }
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = jid(e);
        if (tokens[id]) { m2_errorf(err, M2_EFORMAT, "%s: model.vocab: id %d used by both \"%.60s\" and \"%.60s\"", name, id, tokens[id], e->string); goto done; }
        tokens[id] = e->string;
        types[id] = M2_TOKEN_NORMAL;
    }
    cJSON_ArrayForEach(e, added) {
        int32_t id = jid(jget(e, "id"));
        tokens[id] = jstr(e, "content");
        types[id] = jbool(e, "special", 1) ? M2_TOKEN_CONTROL : M2_TOKEN_USER_DEFINED;
    }

    /* merges: "left right" strings or [left, right] pairs */
    int32_t nm = mergelist ? cJSON_GetArraySize(mergelist) : 0;
    size_t pool_len = 0;
    cJSON_ArrayForEach(e, mergelist) if (cJSON_IsString(e)) pool_len += strlen(e->valuestring) + 1;
    merges = malloc((size_t)(2 * nm + 1) * sizeof *merges);
    pool = malloc(pool_len + 1);
    if (!merges || !pool) { m2_errorf(err, M2_ENOMEM, "%s: out of memory for %d merges", name, nm); goto done; }
    int32_t mi = 0;
    size_t at = 0;
    cJSON_ArrayForEach(e, mergelist) {
        if (cJSON_IsString(e)) {
            const char *s = e->valuestring;
            const char *sp = s[0] ? strchr(s + 1, ' ') : NULL;   /* a left side may be a lone space only in array form */
            if (!sp || strchr(sp + 1, ' ') || !sp[1]) {
                m2_errorf(err, M2_EFORMAT, "%s: model.merges[%d] \"%.80s\": expected \"left right\"", name, mi, s);
                goto done;
            }
            size_t l = strlen(s);
            memcpy(pool + at, s, l + 1);
            pool[at + (size_t)(sp - s)] = 0;
            merges[2 * mi] = pool + at;
            merges[2 * mi + 1] = pool + at + (size_t)(sp - s) + 1;
            at += l + 1;
        } else if (cJSON_IsArray(e) && e->child && e->child->next && !e->child->next->next &&
                   cJSON_IsString(e->child) && cJSON_IsString(e->child->next)) {
            merges[2 * mi] = e->child->valuestring;
            merges[2 * mi + 1] = e->child->next->valuestring;
        } else {
            m2_errorf(err, M2_EFORMAT, "%s: model.merges[%d]: expected a \"left right\" string or a [left, right] pair", name, mi);
            goto done;
        }
        mi++;
    }

    /* which kind of BPE */
    shape sh = {0};
    sh.name = name;
    if (walk_norm(jget(root, "normalizer"), &sh, err)) goto done;
    if (walk_pretok(jget(root, "pre_tokenizer"), &sh, "pre_tokenizer", err)) goto done;
    const cJSON *dec = jget(root, "decoder");
    if (jtype_is(dec, "ByteLevel")) sh.bytelevel = 1;
    if (jtype_is(dec, "Metaspace")) sh.spm = 1;
    if (jtype_is(dec, "Sequence")) {
        const cJSON *d;
        cJSON_ArrayForEach(d, jget(dec, "decoders")) {
            if (jtype_is(d, "ByteLevel")) sh.bytelevel = 1;
            if (jtype_is(d, "ByteFallback") || jtype_is(d, "Metaspace")) sh.spm = 1;
        }
    }
    int byte_fallback = jbool(model, "byte_fallback", 0);
    if (byte_fallback && !sh.bytelevel) sh.spm = 1;
    if (sh.bytelevel == sh.spm) {
        m2_errorf(err, M2_EUNSUPPORTED, "%s: cannot tell byte-level BPE from SentencePiece BPE (%s)", name,
                  sh.bytelevel ? "both ByteLevel and U+2581 rules are present" : "no ByteLevel pre-tokenizer/decoder and no U+2581 normalizer or Metaspace");
        goto done;
    }

    m2_tokenizer_spec spec = {0};
    spec.name = name;
    spec.model = sh.bytelevel ? M2_TOKENIZER_BPE : M2_TOKENIZER_SPM;
    spec.n_tokens = n;
    spec.tokens = tokens;
    spec.token_types = types;
    spec.n_merges = mi;
    spec.merges = merges;
    spec.bos_id = spec.eos_id = spec.pad_id = spec.unk_id = -1;
    spec.ignore_merges = jbool(model, "ignore_merges", 0);
    spec.byte_fallback = byte_fallback;
    spec.space_prefix = sh.space_prefix;
    spec.spm_split = sh.spm_split;
    spec.add_prefix_space = sh.add_prefix_space;
    if (spec.model == M2_TOKENIZER_BPE) {
        const char *re = sh.regex ? sh.regex : sh.use_regex_default ? m2_pretok_regex(M2_PRETOK_GPT2) : NULL;
        spec.pretok = M2_PRETOK_NONE;
        for (m2_pretok k = M2_PRETOK_GPT2; re && k <= M2_PRETOK_QWEN2; k++)
            if (!strcmp(re, m2_pretok_regex(k))) spec.pretok = k;
        if (re && spec.pretok == M2_PRETOK_NONE) { spec.pretok = M2_PRETOK_REGEX; spec.pretok_regex = re; }
    }
    tok = m2_tokenizer_create(&spec, err);
    if (!tok) goto done;

    /* special ids: unk from the model, BOS/EOS from TemplateProcessing, then tokenizer_config.json */
    const char *unk = jstr(model, "unk_token");
    if (unk) tok->unk_id = m2_tokenizer_find(tok, unk, strlen(unk));
    const cJSON *post = jget(root, "post_processor");
    if (jtype_is(post, "Sequence")) {   /* Llama-3: [ByteLevel, TemplateProcessing] */
        const cJSON *q, *found = NULL;
        cJSON_ArrayForEach(q, jget(post, "processors")) if (jtype_is(q, "TemplateProcessing")) found = q;
        post = found;
    }
    if (jtype_is(post, "TemplateProcessing")) {
        const cJSON *single = jget(post, "single");
        int cnt = cJSON_GetArraySize(single);
        for (int end = 0; end < 2 && cnt > 0; end++) {
            const char *sid = jstr(jget(cJSON_GetArrayItem(single, end ? cnt - 1 : 0), "SpecialToken"), "id");
            int32_t id = sid ? m2_tokenizer_find(tok, sid, strlen(sid)) : -1;
            if (id < 0) continue;
            if (!end) { tok->bos_id = id; tok->add_bos = 1; }
            else { tok->eos_id = id; tok->add_eos = 1; }
        }
    }
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", NULL};
    static const char *const eos_names[] = {"</s>", "<|endoftext|>", "<|end_of_text|>", NULL};
    if (tok->bos_id < 0) tok->bos_id = find_first(tok, bos_names);
    if (tok->eos_id < 0) tok->eos_id = find_first(tok, eos_names);
    if (cfg) {
        int32_t *slots[4] = {&tok->bos_id, &tok->eos_id, &tok->pad_id, &tok->unk_id};
        static const char *keys[4] = {"bos_token", "eos_token", "pad_token", "unk_token"};
        for (int k = 0; k < 4; k++) {
            const char *s = NULL;
            if (!cfg_token(cfg, keys[k], &s)) continue;
            *slots[k] = s ? m2_tokenizer_find(tok, s, strlen(s)) : -1;
        }
        const cJSON *v = jget(cfg, "add_bos_token");
        if (cJSON_IsBool(v)) tok->add_bos = cJSON_IsTrue(v);
        v = jget(cfg, "add_eos_token");
        if (cJSON_IsBool(v)) tok->add_eos = cJSON_IsTrue(v);
    }
    tok->add_bos = tok->add_bos && tok->bos_id >= 0;
    tok->add_eos = tok->add_eos && tok->eos_id >= 0;
done:
    cJSON_Delete(root);
    free(tokens); free(types); free(merges); free(pool);
    return tok;
}

m2_tokenizer *m2_tokenizer_from_json(const char *json, size_t len, const char *name, m2_err *err) {
    return from_json_cfg(json, len, name, NULL, err);
}

m2_tokenizer *m2_tokenizer_load_json(const char *path, m2_err *err) {
    char *buf = NULL, *cbuf = NULL;
    size_t len = 0, clen = 0;
    if (m2_read_file(path, &buf, &len, err)) return NULL;
    /* tokenizer_config.json beside it, when present */
    cJSON *cfg = NULL;
    size_t pl = strlen(path);
    char *cpath = malloc(pl + 32);
    if (cpath) {
        memcpy(cpath, path, pl + 1);
        char *slash = strrchr(cpath, '/');
        strcpy(slash ? slash + 1 : cpath, "tokenizer_config.json");
        if (strcmp(cpath, path) && m2_path_exists(cpath)) {
            m2_err e2 = {0};
            if (m2_read_file(cpath, &cbuf, &clen, &e2) == 0) {
                cfg = cJSON_ParseWithLength(cbuf, clen);
                if (!cfg) {
                    m2_errorf(err, M2_EFORMAT, "%s: not valid JSON", cpath);
                    free(cpath); free(cbuf); free(buf);
                    return NULL;
                }
            }
        }
    }
    m2_tokenizer *t = from_json_cfg(buf, len, path, cfg, err);
    cJSON_Delete(cfg);
    free(cpath); free(cbuf); free(buf);
    return t;
}

m2_tokenizer *m2_tokenizer_load(const char *path, m2_err *err) {
    struct stat st;
    if (stat(path, &st) != 0) { m2_errorf(err, M2_EIO, "%s: no such file or folder", path); return NULL; }
    if (S_ISDIR(st.st_mode)) {
        size_t pl = strlen(path);
        char *p = malloc(pl + 32);
        if (!p) { m2_errorf(err, M2_ENOMEM, "out of memory"); return NULL; }
        snprintf(p, pl + 32, "%s/tokenizer.json", path);
        m2_tokenizer *t = m2_tokenizer_load_json(p, err);
        free(p);
        return t;
    }
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    if (f) { size_t got = fread(magic, 1, 4, f); (void)got; fclose(f); }
    if (!memcmp(magic, "GGUF", 4)) return m2_tokenizer_load_gguf(path, err);
    return m2_tokenizer_load_json(path, err);
}

/* ---------- writing ---------- */

char *m2_tokenizer_to_json(const m2_tokenizer *t, size_t *len, m2_err *err) {
    if (t->model != M2_TOKENIZER_BPE) {
        m2_errorf(err, M2_EUNSUPPORTED, "%s: only byte-level BPE tokenizers can be written as tokenizer.json", t->name);
        return NULL;
    }
    cJSON *root = cJSON_CreateObject(), *added = NULL, *model = NULL, *vocab = NULL, *merges = NULL;
    if (!root) goto oom;
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int32_t i = 0; i < t->n_tokens; i++) {
        int ty = t->types[i];
        if (ty != M2_TOKEN_CONTROL && ty != M2_TOKEN_USER_DEFINED && ty != M2_TOKEN_UNKNOWN) continue;
        cJSON *a = cJSON_CreateObject();
        if (!a) goto oom;
        cJSON_AddItemToArray(added, a);
        cJSON_AddNumberToObject(a, "id", i);
        cJSON_AddStringToObject(a, "content", t->text + t->off[i]);
        cJSON_AddBoolToObject(a, "single_word", 0);
        cJSON_AddBoolToObject(a, "lstrip", 0);
        cJSON_AddBoolToObject(a, "rstrip", 0);
        cJSON_AddBoolToObject(a, "normalized", 0);
        cJSON_AddBoolToObject(a, "special", ty != M2_TOKEN_USER_DEFINED);
    }
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    if (!pre) goto oom;
    if (t->regex) {
        cJSON_AddStringToObject(pre, "type", "Sequence");
        cJSON *list = cJSON_AddArrayToObject(pre, "pretokenizers");
        cJSON *split = cJSON_CreateObject(), *bl = cJSON_CreateObject();
        if (!list || !split || !bl) { cJSON_Delete(split); cJSON_Delete(bl); goto oom; }
        cJSON_AddItemToArray(list, split);
        cJSON_AddItemToArray(list, bl);
        cJSON_AddStringToObject(split, "type", "Split");
        cJSON *pat = cJSON_AddObjectToObject(split, "pattern");
        if (!pat) goto oom;
        cJSON_AddStringToObject(pat, "Regex", t->regex);
        cJSON_AddStringToObject(split, "behavior", "Isolated");
        cJSON_AddBoolToObject(split, "invert", 0);
        pre = bl;
    }
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddBoolToObject(pre, "add_prefix_space", t->add_prefix_space);
    cJSON_AddBoolToObject(pre, "trim_offsets", 0);
    cJSON_AddBoolToObject(pre, "use_regex", 0);
    const char *names[2] = {"post_processor", "decoder"};
    for (int k = 0; k < 2; k++) {
        cJSON *o = cJSON_AddObjectToObject(root, names[k]);
        if (!o) goto oom;
        cJSON_AddStringToObject(o, "type", "ByteLevel");
        cJSON_AddBoolToObject(o, "add_prefix_space", 0);
        cJSON_AddBoolToObject(o, "trim_offsets", 0);
        cJSON_AddBoolToObject(o, "use_regex", 0);
    }
    model = cJSON_AddObjectToObject(root, "model");
    if (!model) goto oom;
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (t->unk_id >= 0) cJSON_AddStringToObject(model, "unk_token", t->text + t->off[t->unk_id]);
    else cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", 0);
    cJSON_AddBoolToObject(model, "byte_fallback", 0);
    cJSON_AddBoolToObject(model, "ignore_merges", t->ignore_merges);
    vocab = cJSON_AddObjectToObject(model, "vocab");
    if (!vocab) goto oom;
    for (int32_t i = 0; i < t->n_tokens; i++) {
        int ty = t->types[i];
        if (ty != M2_TOKEN_NORMAL && ty != M2_TOKEN_BYTE) continue;
        cJSON *num = cJSON_CreateNumber(i);
        if (!num) goto oom;
        cJSON_AddItemToObject(vocab, t->text + t->off[i], num);
    }
    /* "left right" strings unless a side holds a space, then [left, right] pairs */
    int pairs = 0;
    for (int32_t m = 0; m < t->n_merges && !pairs; m++)
        if (memchr(t->text + t->off[t->merge_l[m]], ' ', t->len[t->merge_l[m]]) ||
            memchr(t->text + t->off[t->merge_r[m]], ' ', t->len[t->merge_r[m]]))
            pairs = 1;
    merges = cJSON_AddArrayToObject(model, "merges");
    if (!merges) goto oom;
    char *line = NULL;
    size_t lcap = 0;
    for (int32_t m = 0; m < t->n_merges; m++) {
        const char *a = t->text + t->off[t->merge_l[m]], *b = t->text + t->off[t->merge_r[m]];
        cJSON *item;
        if (pairs) {
            const char *ab[2] = {a, b};
            item = cJSON_CreateStringArray(ab, 2);
        } else {
            size_t need = strlen(a) + strlen(b) + 2;
            if (need > lcap) {
                lcap = 2 * need;
                char *l2 = realloc(line, lcap);
                if (!l2) { free(line); goto oom; }
                line = l2;
            }
            snprintf(line, lcap, "%s %s", a, b);
            item = cJSON_CreateString(line);
        }
        if (!item) { free(line); goto oom; }
        cJSON_AddItemToArray(merges, item);
    }
    free(line);
    char *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!out) { m2_errorf(err, M2_ENOMEM, "%s: out of memory writing JSON", t->name); return NULL; }
    if (len) *len = strlen(out);
    return out;
oom:
    cJSON_Delete(root);
    m2_errorf(err, M2_ENOMEM, "%s: out of memory writing JSON", t->name);
    return NULL;
}

int m2_tokenizer_save_config_json(const m2_tokenizer *t, const char *path, m2_err *err) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    static const char *const keys[4] = {"bos_token", "eos_token", "pad_token", "unk_token"};
    const int32_t ids[4] = {t->bos_id, t->eos_id, t->pad_id, t->unk_id};
    for (int k = 0; k < 4; k++) {
        size_t len = 0;
        const char *txt = ids[k] >= 0 ? m2_tokenizer_token_text(t, ids[k], &len) : NULL;
        if (!txt) continue;   /* absent: the reader keeps what tokenizer.json says */
        char *c = strndup(txt, len);
        if (!c) { cJSON_Delete(o); return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path); }
        cJSON_AddStringToObject(o, keys[k], c);
        free(c);
    }
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    int rc = m2_write_file_atomic(path, s, strlen(s), err);
    cJSON_free(s);
    return rc;
}

int m2_tokenizer_save_json(const m2_tokenizer *t, const char *path, m2_err *err) {
    size_t len = 0;
    char *s = m2_tokenizer_to_json(t, &len, err);
    if (!s) return -1;
    int rc = m2_write_file_atomic(path, s, len, err);
    free(s);
    return rc;
}
