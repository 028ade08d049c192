#include "data/seqset.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"

void m2_seqset_init(m2_seqset *s) { memset(s, 0, sizeof *s); }

void m2_seqset_free(m2_seqset *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) m2_packed_free(&s->seq[i]);
    free(s->seq);
    memset(s, 0, sizeof *s);
}

int m2_seqset_add(m2_seqset *s, const m2_tok_iface *tok, const m2_traj *t, int max_tokens, m2_err *err) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        m2_packed *v = realloc(s->seq, (size_t)cap * sizeof *v);
        if (!v) return m2_errorf(err, M2_ENOMEM, "seqset: out of memory for %d sequences", cap);
        s->seq = v;
        s->cap = cap;
    }
    m2_err e2 = {0};
    if (m2_pack_traj(tok, t, max_tokens, &s->seq[s->n], &e2)) {
        if (e2.code == M2_ESHAPE) { s->n_dropped++; return 0; }   /* too long: skipped and counted */
        if (err) *err = e2;
        return -1;
    }
    s->n++;
    return 0;
}

int m2_seqset_add_high(m2_seqset *s, const m2_tok_iface *tok, const m2_high_record *r, int n,
                       int max_tokens, m2_err *err) {
    for (int i = 0; i < n; i++) {
        m2_traj t;
        if (m2_high_record_traj(&r[i], NULL, &t, err)) return m2_err_prefix(err, "high record %d: ", i);
        int rc = m2_seqset_add(s, tok, &t, max_tokens, err);
        m2_traj_free(&t);
        if (rc) return m2_err_prefix(err, "high record %d: ", i);
    }
    return 0;
}

int m2_seqset_add_low(m2_seqset *s, const m2_tok_iface *tok, const m2_low_record *r, int n,
                      int max_tokens, m2_err *err) {
    for (int i = 0; i < n; i++) {
        m2_traj t;
        if (m2_low_record_traj(&r[i], NULL, "Obs: ", &t, err)) return m2_err_prefix(err, "low record %d: ", i);
        int rc = m2_seqset_add(s, tok, &t, max_tokens, err);
        m2_traj_free(&t);
        if (rc) return m2_err_prefix(err, "low record %d: ", i);
    }
    return 0;
}

int m2_seqset_split(int n, double val_frac, uint64_t seed, int **train, int *n_train, int **val,
                    int *n_val, m2_err *err) {
    *train = *val = NULL;
    *n_train = *n_val = 0;
    if (n < 0 || !(val_frac >= 0 && val_frac < 1)) return m2_errorf(err, M2_ECONFIG, "split: val_frac %g not in [0, 1)", val_frac);
    int nv = (int)lround(val_frac * n);
    if (val_frac > 0 && n >= 2 && nv == 0) nv = 1;
    if (nv >= n) nv = n > 0 ? n - 1 : 0;
    uint32_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    int *t = malloc((size_t)(n - nv > 0 ? n - nv : 1) * sizeof *t), *v = malloc((size_t)(nv ? nv : 1) * sizeof *v);
    if (!perm || !t || !v) { free(perm); free(t); free(v); return m2_errorf(err, M2_ENOMEM, "split: out of memory"); }
    for (int i = 0; i < n; i++) perm[i] = (uint32_t)i;
    m2_rng r;
    m2_rng_seed(&r, seed);
    m2_rng_shuffle_u32(&r, perm, (uint32_t)n);
    for (int i = 0; i < nv; i++) v[i] = (int)perm[i];
    for (int i = nv; i < n; i++) t[i - nv] = (int)perm[i];
    free(perm);
    *train = t; *n_train = n - nv;
    *val = v; *n_val = nv;
    return 0;
}

static void epoch_order(m2_batch_iter *it) {
    for (int i = 0; i < it->n; i++) it->order[i] = it->idx[i];
    m2_rng r;
    m2_rng_seed_stream(&r, it->seed, (uint64_t)it->epoch);
    for (int i = it->n - 1; i > 0; i--) {   /* Fisher-Yates */
        int j = (int)m2_rng_below(&r, (uint32_t)(i + 1));
        int x = it->order[i]; it->order[i] = it->order[j]; it->order[j] = x;
    }
}

int m2_batch_iter_init(m2_batch_iter *it, const int *idx, int n, int batch, uint64_t seed, m2_err *err) {
    memset(it, 0, sizeof *it);
    if (n <= 0) return m2_errorf(err, M2_EINVAL, "batches: no training sequences");
    if (batch <= 0) return m2_errorf(err, M2_ECONFIG, "batches: batch size %d must be > 0", batch);
    it->order = malloc((size_t)n * sizeof *it->order);
    if (!it->order) return m2_errorf(err, M2_ENOMEM, "batches: out of memory");
    it->idx = idx;
    it->n = n;
    it->batch = batch;
    it->seed = seed;
    epoch_order(it);
    return 0;
}

int m2_batch_iter_seek(m2_batch_iter *it, int64_t epoch, int pos, m2_err *err) {
    if (epoch < 0 || pos < 0 || pos > it->n) return m2_errorf(err, M2_EFORMAT, "batches: bad cursor (epoch %lld, position %d of %d)", (long long)epoch, pos, it->n);
    it->epoch = epoch;
    it->pos = pos;
    epoch_order(it);
    return 0;
}

void m2_batch_iter_free(m2_batch_iter *it) {
    if (!it) return;
    free(it->order);
    memset(it, 0, sizeof *it);
}

int m2_batch_iter_peek(m2_batch_iter *it) {
    if (it->pos >= it->n) { it->epoch++; it->pos = 0; epoch_order(it); }
    return it->n - it->pos < it->batch ? it->n - it->pos : it->batch;
}

int m2_batch_iter_next_range(m2_batch_iter *it, const m2_seqset *s, int lo, int n, m2_packed_batch *out,
                             int *epoch_done, m2_err *err) {
    int k = m2_batch_iter_peek(it);
    if (lo < 0 || n < 0 || lo + n > k)
        return m2_errorf(err, M2_EINVAL, "batches: part [%d, %d) outside the batch of %d", lo, lo + n, k);
    memset(out, 0, sizeof *out);
    int act_base = 0, act_total = 0;   /* the part's actions within the whole batch's */
    for (int i = 0; i < k; i++) {
        int j = it->order[it->pos + i];
        if (j < 0 || j >= s->n) return m2_errorf(err, M2_EINVAL, "batches: sequence %d out of range", j);
        if (i < lo) act_base += s->seq[j].n_actions;
        act_total += s->seq[j].n_actions;
    }
    if (n > 0) {
        m2_packed *tmp = malloc((size_t)n * sizeof *tmp);
        if (!tmp) return m2_errorf(err, M2_ENOMEM, "batches: out of memory");
        for (int i = 0; i < n; i++) tmp[i] = s->seq[it->order[it->pos + lo + i]];   /* shallow: build copies what it needs */
        int rc = m2_packed_batch_build(tmp, n, out, err);
        free(tmp);
        if (rc) return -1;
        for (int i = 0; i < n; i++) out->seq_key[i] = lo + i;
    }
    out->act_base = act_base;
    out->act_total = act_total;
    it->pos += k;
    if (epoch_done) *epoch_done = it->pos >= it->n;
    return 0;
}

int m2_batch_iter_next(m2_batch_iter *it, const m2_seqset *s, m2_packed_batch *out, int *epoch_done,
                       m2_err *err) {
    return m2_batch_iter_next_range(it, s, 0, m2_batch_iter_peek(it), out, epoch_done, err);
}
