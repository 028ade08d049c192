#include "pipe/probe.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algo/steps.h"
#include "core/fsutil.h"
#include "model/generate.h"

/* Greedy generations run this many probe states at once: one KV cache of PROBE_GEN_BATCH x (state +
 * action) positions, small even for a 7B base. */
enum { PROBE_GEN_BATCH = 8 };

struct pw_probe {
    pw_world *w;
    m2_adapter *start;         /* frozen copy of the adapter as the stage began */
    int n;
    const m2_packed **seq;     /* [n] into the caller's set (it outlives the probe) */
};
typedef struct pw_probe probe_impl;

int pw_probe_begin(pw_world *w, const m2_seqset *set, int n_states, const m2_adapter *a, pw_probe **out,
                   m2_err *err) {
    *out = NULL;
    probe_impl *p = calloc(1, sizeof *p);
    if (!p) return m2_errorf(err, M2_ENOMEM, "probe: out of memory");
    p->w = w;
    int cap = n_states < set->n ? n_states : set->n;
    p->seq = calloc(cap > 0 ? (size_t)cap : 1, sizeof *p->seq);
    if (!p->seq) { free(p); return m2_errorf(err, M2_ENOMEM, "probe: out of memory"); }
    /* evenly spaced over the set (its order is the data's: expert then medium, episode order), so
     * the probe sees every task type and both data variants */
    for (int i = 0; i < cap; i++) {
        const m2_packed *s = &set->seq[(int64_t)i * set->n / cap];
        if (s->n_actions > 0 && s->act_begin[0] > 0) p->seq[p->n++] = s;
    }
    m2_lora_config lc = a->cfg;
    snprintf(lc.name, sizeof lc.name, "%.40s_probe_start", a->cfg.name);
    if (!(p->start = m2_adapter_add(w->m, &lc, 1, err)) || m2_adapter_copy_weights(p->start, a, err)) {
        pw_probe_free(p);
        return -1;
    }
    p->start->params.trainable = 0;
    *out = p;
    return 0;
}

void pw_probe_free(pw_probe *pp) {
    probe_impl *p = pp;
    if (!p) return;
    if (p->start) m2_adapter_remove(p->w->m, p->start, NULL);
    free(p->seq);
    free(p);
}

/* Greedy actions of states [i0, i0 + k) under adapter a. */
static int greedy(probe_impl *p, m2_adapter *a, int i0, int k, int max_new, m2_gen_result *out, m2_err *err) {
    const int32_t *prompts[PROBE_GEN_BATCH];
    int plen[PROBE_GEN_BATCH];
    for (int j = 0; j < k; j++) {
        prompts[j] = p->seq[i0 + j]->ids;
        plen[j] = p->seq[i0 + j]->act_begin[0];
    }
    int32_t eos = p->w->tok.eos_id;
    m2_gen_config g = {.max_new_tokens = max_new, .sampler = {.temperature = 0.f}, .stop_tokens = &eos,
                       .n_stop_tokens = 1};
    return m2_generate(p->w->m, a, k, prompts, plen, &g, out, err);
}

/* 1 when the generation is state s's data action: the same tokens up to and with its EOS. */
static int on_data(const m2_packed *s, const m2_gen_result *g) {
    int b = s->act_begin[0], n = s->act_end[0] - b;
    return g->n == n && !memcmp(g->tokens, s->ids + b, (size_t)n * sizeof(int32_t));
}

int pw_probe_end(pw_probe *pp, m2_adapter *a, int max_new_tokens, pw_probe_result *r, m2_err *err) {
    probe_impl *p = pp;
    memset(r, 0, sizeof *r);
    r->n_states = p->n;
    for (int i0 = 0; i0 < p->n; i0 += PROBE_GEN_BATCH) {
        int k = p->n - i0 < PROBE_GEN_BATCH ? p->n - i0 : PROBE_GEN_BATCH;
        m2_gen_result g0[PROBE_GEN_BATCH], g1[PROBE_GEN_BATCH];
        memset(g0, 0, sizeof g0);
        memset(g1, 0, sizeof g1);
        int rc = greedy(p, p->start, i0, k, max_new_tokens, g0, err);
        if (!rc) rc = greedy(p, a, i0, k, max_new_tokens, g1, err);
        for (int j = 0; j < k && !rc; j++) {
            r->changed += g0[j].n != g1[j].n || memcmp(g0[j].tokens, g1[j].tokens, (size_t)g0[j].n * sizeof(int32_t));
            r->start_on_data += on_data(p->seq[i0 + j], &g0[j]);
            r->end_on_data += on_data(p->seq[i0 + j], &g1[j]);
        }
        for (int j = 0; j < k; j++) {
            m2_gen_result_free(&g0[j]);
            m2_gen_result_free(&g1[j]);
        }
        if (rc) return -1;
    }
    /* the divergence, one sequence at a time (scoring contexts of the longest one) */
    int maxlen = 1;
    for (int i = 0; i < p->n; i++) if (p->seq[i]->n_tok > maxlen) maxlen = p->seq[i]->n_tok;
    m2_ctx *c0 = m2_ctx_create(p->w->m, maxlen, 0, err), *c1 = c0 ? m2_ctx_create(p->w->m, maxlen, 0, err) : NULL;
    int rc = c1 ? 0 : -1;
    double sum = 0;
    for (int i = 0; i < p->n && !rc; i++) {
        m2_packed_batch pb;
        if ((rc = m2_packed_batch_build(p->seq[i], 1, &pb, err))) break;
        double D = 0, toks = 0;
        for (int t = 0; t < pb.N; t++) toks += pb.tok_action[t] >= 0;
        if (toks > 0 && !(rc = m2_token_divergence(c0, c1, p->start, a, &pb, &D, err))) {
            sum += D * toks;
            r->kl_tokens += (long)toks;
        }
        m2_packed_batch_free(&pb);
    }
    m2_ctx_free(c0);
    m2_ctx_free(c1);
    r->kl = r->kl_tokens > 0 ? sum / (double)r->kl_tokens : 0;
    return rc;
}

int pw_probe_write(const pw_probe_result *r, const char *dir, m2_err *err) {
    char path[1400];
    snprintf(path, sizeof path, "%s/probe.json", dir);
    cJSON *o = cJSON_CreateObject();
    if (!o) return m2_errorf(err, M2_ENOMEM, "out of memory");
    cJSON_AddNumberToObject(o, "n_states", r->n_states);
    cJSON_AddNumberToObject(o, "changed", r->changed);
    cJSON_AddNumberToObject(o, "changed_frac", r->n_states ? (double)r->changed / r->n_states : 0);
    cJSON_AddNumberToObject(o, "kl", r->kl);
    cJSON_AddNumberToObject(o, "kl_tokens", (double)r->kl_tokens);
    cJSON_AddNumberToObject(o, "start_on_data", r->start_on_data);
    cJSON_AddNumberToObject(o, "end_on_data", r->end_on_data);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    size_t len = s ? strlen(s) : 0;
    char *line = s ? malloc(len + 2) : NULL;
    if (!line) { free(s); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    memcpy(line, s, len);
    line[len] = '\n';
    free(s);
    int rc = m2_write_file_atomic(path, line, len + 1, err);
    free(line);
    return rc;
}

int pw_probe_read(const char *dir, pw_probe_result *r, m2_err *err) {
    char path[1400];
    snprintf(path, sizeof path, "%s/probe.json", dir);
    memset(r, 0, sizeof *r);
    if (!m2_path_exists(path)) return 0;
    char *text = NULL;
    size_t len = 0;
    if (m2_read_file(path, &text, &len, err)) return -1;
    cJSON *o = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "n_states"), *c = cJSON_GetObjectItemCaseSensitive(o, "changed"),
                *k = cJSON_GetObjectItemCaseSensitive(o, "kl"), *t = cJSON_GetObjectItemCaseSensitive(o, "kl_tokens");
    int ok = cJSON_IsNumber(n) && cJSON_IsNumber(c) && cJSON_IsNumber(k) && cJSON_IsNumber(t);
    if (ok) {
        r->n_states = n->valueint;
        r->changed = c->valueint;
        r->kl = k->valuedouble;
        r->kl_tokens = (long)t->valuedouble;
        const cJSON *s0 = cJSON_GetObjectItemCaseSensitive(o, "start_on_data"), *s1 = cJSON_GetObjectItemCaseSensitive(o, "end_on_data");
        r->start_on_data = cJSON_IsNumber(s0) ? s0->valueint : -1;   /* older runs' records lack them */
        r->end_on_data = cJSON_IsNumber(s1) ? s1->valueint : -1;
    }
    cJSON_Delete(o);
    return ok ? 1 : m2_errorf(err, M2_EFORMAT, "%s: not a probe record (n_states, changed, kl, kl_tokens)", path);
}
