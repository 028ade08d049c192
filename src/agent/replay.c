#include "agent/replay.h"
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"

int m2_replay_init(m2_replay *r, int capacity, float keep_fail, uint64_t seed, m2_err *err) {
    memset(r, 0, sizeof *r);
    if (capacity <= 0 || capacity > (1 << 24))
        return m2_errorf(err, M2_ECONFIG, "replay: capacity %d out of range [1, 2^24]", capacity);
    if (!(keep_fail >= 0.f && keep_fail <= 1.f))
        return m2_errorf(err, M2_ECONFIG, "replay: keep_fail %g not in [0, 1]", keep_fail);
    r->items = calloc((size_t)capacity, sizeof *r->items);
    if (!r->items) return m2_errorf(err, M2_ENOMEM, "replay: out of memory for %d items", capacity);
    r->cap = capacity;
    r->keep_fail = keep_fail;
    m2_rng_seed(&r->rng, seed);
    return 0;
}

static void clear_items(m2_replay *r) {
    for (int i = 0; i < r->n; i++) m2_traj_free(&r->items[(r->head + i) % r->cap].seg);
    r->n = 0;
    r->head = 0;
}

void m2_replay_free(m2_replay *r) {
    if (!r || !r->items) return;
    clear_items(r);
    free(r->items);
    memset(r, 0, sizeof *r);
}

int m2_replay_size(const m2_replay *r) { return r->n; }

int m2_replay_online_count(const m2_replay *r) {
    int k = 0;
    for (int i = 0; i < r->n; i++) k += m2_replay_at(r, i)->online != 0;
    return k;
}

const m2_replay_item *m2_replay_at(const m2_replay *r, int i) {
    if (i < 0 || i >= r->n) return NULL;
    return &r->items[(r->head + i) % r->cap];
}

float m2_traj_return(const m2_traj *t) {
    double s = 0;
    for (int i = 0; i < t->n_actions; i++) s += t->rewards ? t->rewards[i] : 0;
    return (float)s;
}

int m2_replay_add(m2_replay *r, const m2_traj *seg, int online, int success, m2_err *err) {
    m2_traj copy;
    if (m2_traj_copy(&copy, seg, err)) return -1;
    int slot;
    if (r->n == r->cap) {   /* FIFO: evict the oldest */
        slot = r->head;
        m2_traj_free(&r->items[slot].seg);
        r->head = (r->head + 1) % r->cap;
        r->evicted++;
    } else {
        slot = (r->head + r->n) % r->cap;
        r->n++;
    }
    r->items[slot].seg = copy;
    r->items[slot].online = online;
    r->items[slot].success = success;
    return 0;
}

int m2_replay_seed_offline(m2_replay *r, const m2_traj *segs, const int *success, int n, int max_items,
                           m2_err *err) {
    if (n <= 0 || max_items <= 0) return 0;
    uint32_t *order = malloc((size_t)n * sizeof *order);
    if (!order) return m2_errorf(err, M2_ENOMEM, "replay: out of memory seeding %d segments", n);
    for (int i = 0; i < n; i++) order[i] = (uint32_t)i;
    m2_rng_shuffle_u32(&r->rng, order, (uint32_t)n);
    int added = 0;
    for (int i = 0; i < n && added < max_items; i++) {
        int k = (int)order[i];
        if (!success[k]) continue;
        if (m2_replay_add(r, &segs[k], 0, 1, err)) { free(order); return -1; }
        added++;
    }
    free(order);
    return added;
}

int m2_replay_push(m2_replay *r, const m2_traj *seg, int success, m2_err *err) {
    r->pushed++;
    if (!success) {
        /* draw only for failures, so the stream does not depend on how many successes came */
        if (!(m2_rng_uniform(&r->rng) < r->keep_fail)) { r->dropped_fail++; return 0; }
    }
    return m2_replay_add(r, seg, 1, success, err) ? -1 : 1;
}

int m2_replay_sample(m2_replay *r, int k, int *idx, m2_err *err) {
    if (r->n == 0) return m2_errorf(err, M2_EINVAL, "replay: sampling from an empty buffer");
    if (k <= 0) return 0;
    if (k > r->n) {   /* more than we hold: with replacement */
        for (int i = 0; i < k; i++) idx[i] = (int)m2_rng_below(&r->rng, (uint32_t)r->n);
        return k;
    }
    /* without replacement: partial Fisher-Yates over a scratch permutation, O(k) draws */
    int *perm = malloc((size_t)r->n * sizeof *perm);
    if (!perm) return m2_errorf(err, M2_ENOMEM, "replay: out of memory sampling");
    for (int i = 0; i < r->n; i++) perm[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)m2_rng_below(&r->rng, (uint32_t)(r->n - i));
        int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        idx[i] = perm[i];
    }
    free(perm);
    return k;
}

/* ---- serialisation ---- */

static cJSON *strings_json(char **v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *floats_json(const float *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v ? v[i] : 0));
    return a;
}

char *m2_replay_to_json(const m2_replay *r, m2_err *err) {
    cJSON *o = cJSON_CreateObject();
    if (!o) { m2_errorf(err, M2_ENOMEM, "replay: out of memory"); return NULL; }
    cJSON_AddNumberToObject(o, "capacity", r->cap);
    cJSON_AddNumberToObject(o, "keep_fail", r->keep_fail);
    cJSON_AddNumberToObject(o, "pushed", (double)r->pushed);
    cJSON_AddNumberToObject(o, "dropped_fail", (double)r->dropped_fail);
    cJSON_AddNumberToObject(o, "evicted", (double)r->evicted);
    cJSON *rng = cJSON_AddArrayToObject(o, "rng");
    for (int i = 0; i < 4; i++) {   /* hex strings: JSON numbers cannot hold 64 bits */
        char hx[24];
        snprintf(hx, sizeof hx, "%016" PRIx64, r->rng.s[i]);
        cJSON_AddItemToArray(rng, cJSON_CreateString(hx));
    }
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    for (int i = 0; i < r->n; i++) {
        const m2_replay_item *it = m2_replay_at(r, i);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "online", it->online);
        cJSON_AddBoolToObject(j, "success", it->success);
        cJSON_AddStringToObject(j, "prompt", it->seg.prompt ? it->seg.prompt : "");
        cJSON_AddItemToObject(j, "states", strings_json(it->seg.states, it->seg.n_states));
        cJSON_AddItemToObject(j, "actions", strings_json(it->seg.actions, it->seg.n_actions));
        cJSON_AddItemToObject(j, "rewards", floats_json(it->seg.rewards, it->seg.n_actions));
        cJSON_AddItemToObject(j, "dones", floats_json(it->seg.dones, it->seg.n_actions));
        cJSON_AddItemToArray(items, j);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) m2_errorf(err, M2_ENOMEM, "replay: out of memory printing JSON");
    return s;
}

static int item_from_json(const cJSON *j, m2_traj *t, int *online, int *success, int idx, m2_err *err) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "states");
    const cJSON *ac = cJSON_GetObjectItemCaseSensitive(j, "actions");
    const cJSON *rw = cJSON_GetObjectItemCaseSensitive(j, "rewards");
    const cJSON *dn = cJSON_GetObjectItemCaseSensitive(j, "dones");
    if (!cJSON_IsString(p) || !cJSON_IsArray(st) || !cJSON_IsArray(ac) || !cJSON_IsArray(rw) || !cJSON_IsArray(dn))
        return m2_errorf(err, M2_EFORMAT, "replay: items[%d] lacks prompt/states/actions/rewards/dones", idx);
    int na = cJSON_GetArraySize(ac), ns = cJSON_GetArraySize(st);
    if (cJSON_GetArraySize(rw) != na || cJSON_GetArraySize(dn) != na || (ns != na && ns != na + 1))
        return m2_errorf(err, M2_EFORMAT, "replay: items[%d] has inconsistent lengths", idx);
    m2_traj_init(t);
    if (m2_traj_set_prompt(t, p->valuestring, err)) return -1;
    for (int k = 0; k < ns; k++) {
        const cJSON *s = cJSON_GetArrayItem(st, k);
        if (!cJSON_IsString(s)) { m2_traj_free(t); return m2_errorf(err, M2_EFORMAT, "replay: items[%d].states[%d] is not a string", idx, k); }
        if (m2_traj_push_state(t, s->valuestring, err)) { m2_traj_free(t); return -1; }
        if (k < na) {
            const cJSON *a = cJSON_GetArrayItem(ac, k), *r = cJSON_GetArrayItem(rw, k), *d = cJSON_GetArrayItem(dn, k);
            if (!cJSON_IsString(a) || !cJSON_IsNumber(r) || !cJSON_IsNumber(d)) {
                m2_traj_free(t);
                return m2_errorf(err, M2_EFORMAT, "replay: items[%d] step %d has a bad action/reward/done", idx, k);
            }
            if (m2_traj_push_action(t, a->valuestring, (float)r->valuedouble, (float)d->valuedouble, err)) { m2_traj_free(t); return -1; }
        }
    }
    *online = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "online"));
    *success = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "success"));
    return 0;
}

int m2_replay_from_json(m2_replay *r, const char *json, m2_err *err) {
    cJSON *o = cJSON_Parse(json);
    if (!o) return m2_errorf(err, M2_EFORMAT, "replay: not valid JSON");
    int rc = -1;
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "capacity");
    const cJSON *kf = cJSON_GetObjectItemCaseSensitive(o, "keep_fail");
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(o, "rng");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items");
    if (!cJSON_IsNumber(cap) || !cJSON_IsNumber(kf) || !cJSON_IsArray(rng) || cJSON_GetArraySize(rng) != 4 ||
        !cJSON_IsArray(items)) {
        m2_errorf(err, M2_EFORMAT, "replay: missing or bad capacity/keep_fail/rng/items");
        goto done;
    }
    m2_rng st;
    for (int i = 0; i < 4; i++) {
        const cJSON *h = cJSON_GetArrayItem(rng, i);
        char *end = NULL;
        if (!cJSON_IsString(h)) { m2_errorf(err, M2_EFORMAT, "replay: rng[%d] is not a hex string", i); goto done; }
        st.s[i] = strtoull(h->valuestring, &end, 16);
        if (!end || *end) { m2_errorf(err, M2_EFORMAT, "replay: rng[%d] is not a hex string", i); goto done; }
    }
    int n = cJSON_GetArraySize(items);
    if (n > cap->valueint) { m2_errorf(err, M2_EFORMAT, "replay: %d items exceed capacity %d", n, cap->valueint); goto done; }
    m2_replay fresh;
    if (m2_replay_init(&fresh, cap->valueint, (float)kf->valuedouble, 0, err)) goto done;
    fresh.rng = st;
    const cJSON *c;
    fresh.pushed = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "pushed"));
    fresh.dropped_fail = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "dropped_fail"));
    fresh.evicted = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "evicted"));
    if (fresh.pushed < 0 || fresh.dropped_fail < 0 || fresh.evicted < 0) fresh.pushed = fresh.dropped_fail = fresh.evicted = 0;
    int idx = 0;
    cJSON_ArrayForEach(c, items) {
        m2_traj t;
        int online = 0, success = 0;
        if (item_from_json(c, &t, &online, &success, idx, err)) { m2_replay_free(&fresh); goto done; }
        int slot = fresh.n++;
        fresh.items[slot].seg = t;
        fresh.items[slot].online = online;
        fresh.items[slot].success = success;
        idx++;
    }
    m2_replay_free(r);
    *r = fresh;
    rc = 0;
done:
    cJSON_Delete(o);
    return rc;
}

int m2_replay_save(const m2_replay *r, const char *path, m2_err *err) {
    char *s = m2_replay_to_json(r, err);
    if (!s) return -1;
    int rc = m2_write_file_atomic(path, s, strlen(s), err);
    free(s);
    return rc;
}

int m2_replay_load(m2_replay *r, const char *path, m2_err *err) {
    char *s;
    size_t len;
    if (m2_read_file(path, &s, &len, err)) return -1;
    int rc = m2_replay_from_json(r, s, err);
    free(s);
    if (rc) m2_err_prefix(err, "%s: ", path);
    return rc;
}
