#include "pipe/anchor_cands.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct ac_episode {
    char *task;          /* task family of the reset (NULL: the whole split) */
    int index;
    uint64_t seed;
    char **actions;      /* the environment actions, in order */
    int n;
} ac_episode;

typedef struct ac_entry {
    uint64_t key;        /* FNV-1a of the prefix tokens */
    int plen, ep, step;  /* the state before action `step` of episode ep */
} ac_entry;

struct pw_anchor_cands {
    pw_world *w;
    ac_episode *eps;
    int n_eps, cap_eps;
    ac_entry *e;
    int n, cap;
    /* the last lookup's candidates */
    int32_t **cand;
    int *len, n_cand;
};

static uint64_t prefix_key(const int32_t *t, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)t[i];
        for (int b = 0; b < 4; b++) { h ^= (v >> (8 * b)) & 0xffu; h *= 1099511628211ull; }
    }
    return h;
}

static void clear_cands(pw_anchor_cands *ac) {
    for (int i = 0; i < ac->n_cand; i++) free(ac->cand[i]);
    free(ac->cand);
    free(ac->len);
    ac->cand = NULL;
    ac->len = NULL;
    ac->n_cand = 0;
}

void pw_anchor_cands_free(pw_anchor_cands *ac) {
    if (!ac) return;
    for (int i = 0; i < ac->n_eps; i++) {
        free(ac->eps[i].task);
        for (int k = 0; k < ac->eps[i].n; k++) free(ac->eps[i].actions[k]);
        free(ac->eps[i].actions);
    }
    free(ac->eps);
    free(ac->e);
    clear_cands(ac);
    free(ac);
}

int pw_anchor_cands_size(const pw_anchor_cands *ac) { return ac ? ac->n : 0; }

static int by_key(const void *a, const void *b) {
    const ac_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->plen != y->plen) return x->plen - y->plen;
    if (x->ep != y->ep) return x->ep - y->ep;   /* the first episode with this state wins a lookup */
    return x->step - y->step;
}

static int add_episode(pw_anchor_cands *ac, const m2_env_traj *t, m2_err *err) {
    if (ac->n_eps == ac->cap_eps) {
        int c = ac->cap_eps ? 2 * ac->cap_eps : 64;
        ac_episode *v = realloc(ac->eps, (size_t)c * sizeof *v);
        if (!v) return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
        ac->eps = v;
        ac->cap_eps = c;
    }
    ac_episode *e = &ac->eps[ac->n_eps];
    memset(e, 0, sizeof *e);
    ac->n_eps++;
    e->index = t->index;
    e->seed = t->seed;
    if ((t->task && !(e->task = strdup(t->task))) || !(e->actions = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof *e->actions)))
        return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
    for (int i = 0; i < t->n; i++) {
        if (!(e->actions[i] = strdup(t->steps[i].action))) return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
        e->n = i + 1;
    }
    return 0;
}

/* One record (a cJSON low/flat object) of episode ep whose first step is `first`: its packed states. */
static int add_record(pw_anchor_cands *ac, const cJSON *rec, int ep, int first, int max_tokens, int *n_steps,
                      m2_err *err) {
    char *js = cJSON_PrintUnformatted(rec);
    if (!js) return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
    m2_low_record r;
    int rc = m2_low_record_parse(js, &r, err);
    free(js);
    if (rc) return -1;
    *n_steps = r.n_steps;
    m2_traj t;
    if (m2_low_record_traj(&r, NULL, "Obs: ", &t, err)) { m2_low_record_free(&r); return -1; }
    m2_low_record_free(&r);
    m2_packed p;
    m2_err e2 = {0};
    /* packed exactly as pw_load_set -> m2_seqset_add packs the offline set */
    if (m2_pack_traj(&ac->w->tok, &t, max_tokens, &p, &e2)) {
        m2_traj_free(&t);
        if (e2.code == M2_ESHAPE) return 0;   /* dropped from the set as well */
        if (err) *err = e2;
        return -1;
    }
    m2_traj_free(&t);
    for (int a = 0; a < p.n_actions; a++) {
        if (ac->n == ac->cap) {
            int c = ac->cap ? 2 * ac->cap : 1024;
            ac_entry *v = realloc(ac->e, (size_t)c * sizeof *v);
            if (!v) { m2_packed_free(&p); return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory"); }
            ac->e = v;
            ac->cap = c;
        }
        int plen = p.state_last[a] + 1;
        ac->e[ac->n++] = (ac_entry){.key = prefix_key(p.ids, plen), .plen = plen, .ep = ep, .step = first + a};
    }
    m2_packed_free(&p);
    return 0;
}

int pw_anchor_cands_build(pw_world *w, const char *kind, int max_tokens, pw_anchor_cands **out, m2_err *err) {
    *out = NULL;
    pw_anchor_cands *ac = calloc(1, sizeof *ac);
    if (!ac) return m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
    ac->w = w;
    const m2_run_config *cfg = w->cfg;
    if (cfg->data_path[0]) { *out = ac; return 0; }   /* records of a folder: not replayed */
    int flat = !strcmp(kind, "flat"), E, M, rc = 0;
    pw_data_counts(cfg, &E, &M);
    m2_episode_order order = {0};
    if (m2_episode_order_build(w->env, cfg->env_task[0] ? cfg->env_task : NULL, M2_SPLIT_TRAIN, &order, err)) {
        pw_anchor_cands_free(ac);
        return -1;
    }
    for (long pos = 0; rc == 0 && pos < (long)E + M; pos++) {
        int medium = pos >= E, kept;
        const char *variant = medium ? "medium" : "expert";
        const m2_episode_ref *ref = m2_episode_order_at(&order, pos);
        m2_env_traj t;
        if (pw_data_episode(w->env, cfg, &order, medium, pos, &t, &kept, err)) { rc = -1; break; }
        if (!kept) { m2_env_traj_free(&t); continue; }
        int ep = ac->n_eps;
        rc = add_episode(ac, &t, err);
        if (!rc && flat) {
            cJSON *fr = pw_flat_record(cfg, &t, variant, ref->type);
            int ns;
            rc = fr ? add_record(ac, fr, ep, 0, max_tokens, &ns, err) : m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
            cJSON_Delete(fr);
        } else if (!rc) {
            cJSON *h = NULL, *ls = NULL;
            m2_hier_opts ho = {.parts = pw_low_parts(cfg), .task_type = ref->type};
            rc = m2_hier_records(w->env, &t, variant, &ho, &h, &ls, err);
            int first = 0;
            const cJSON *l;
            cJSON_ArrayForEach(l, ls) {
                int ns = 0;
                if (!rc) rc = add_record(ac, l, ep, first, max_tokens, &ns, err);
                first += ns;
            }
            cJSON_Delete(h);
            cJSON_Delete(ls);
        }
        m2_env_traj_free(&t);
    }
    m2_episode_order_free(&order);
    if (rc) { pw_anchor_cands_free(ac); return -1; }
    qsort(ac->e, (size_t)ac->n, sizeof *ac->e, by_key);
    *out = ac;
    return 0;
}

int pw_anchor_cands_lookup(void *ud, const int32_t *prefix, int plen, const int32_t *const **cand, const int **len,
                           int *n, m2_err *err) {
    pw_anchor_cands *ac = ud;
    *cand = NULL;
    *len = NULL;
    *n = 0;
    clear_cands(ac);
    uint64_t key = prefix_key(prefix, plen);
    int lo = 0, hi = ac->n;   /* the first entry with (key, plen) */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ac->e[mid].key < key || (ac->e[mid].key == key && ac->e[mid].plen < plen)) lo = mid + 1;
        else hi = mid;
    }
    if (lo >= ac->n || ac->e[lo].key != key || ac->e[lo].plen != plen) return 0;
    const ac_entry *en = &ac->e[lo];
    const ac_episode *ep = &ac->eps[en->ep];
    m2_env *env = ac->w->env;
    m2_step_result sr;
    if (env->cls->reset(env, ep->task, M2_SPLIT_TRAIN, ep->index, ep->seed, &sr, err))
        return m2_err_prefix(err, "anchor candidates: replay of train episode %d: ", ep->index);
    for (int i = 0; i < en->step && i < ep->n; i++)
        if (env->cls->step(env, ep->actions[i], &sr))
            return m2_errorf(err, M2_EIO, "anchor candidates: replay step \"%s\" failed", ep->actions[i]);
    const char *const *acts = NULL;
    int na = 0;
    if (env->cls->admissible && env->cls->admissible(env, &acts, &na))
        return m2_errorf(err, M2_ENOMEM, "anchor candidates: admissible actions: out of memory");
    if (na <= 0) return 0;
    char **texts;
    if (m2_action_candidates(acts, na, &texts, err)) return -1;
    int nc = 2 * na, rc = 0;
    const m2_tok_iface *tok = &ac->w->tok;
    if (!(ac->cand = calloc((size_t)nc, sizeof *ac->cand)) || !(ac->len = calloc((size_t)nc, sizeof *ac->len)))
        rc = m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory");
    for (int i = 0; !rc && i < nc; i++) {
        int k = tok->encode(tok->ctx, texts[i], NULL, 0, err);
        if (k < 0) { rc = -1; break; }
        if (!(ac->cand[i] = malloc((size_t)(k + 1) * sizeof **ac->cand))) { rc = m2_errorf(err, M2_ENOMEM, "anchor candidates: out of memory"); break; }
        ac->n_cand = i + 1;
        if (k > 0 && tok->encode(tok->ctx, texts[i], ac->cand[i], k, err) < 0) { rc = -1; break; }
        ac->cand[i][k] = tok->eos_id;   /* as the packed actions end */
        ac->len[i] = k + 1;
    }
    m2_candidates_free(texts, nc);
    if (rc) { clear_cands(ac); return -1; }
    *cand = (const int32_t *const *)ac->cand;
    *len = ac->len;
    *n = nc;
    return 0;
}
