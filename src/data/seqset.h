/* A training set of packed sequences (one per high/low record or online segment), a deterministic
 * train/validation split, and an epoch batch iterator whose whole state is (epoch, position):
 * the order of epoch e is a shuffle drawn from stream (seed, e), so a checkpoint only needs those
 * two numbers to continue with exactly the same batches. */
#ifndef M2_DATA_SEQSET_H
#define M2_DATA_SEQSET_H
#include <stdint.h>
#include "data/pack.h"
#include "data/records_read.h"

typedef struct m2_seqset {
    m2_packed *seq;
    int n, cap;
    int n_dropped;      /* sequences rejected as too long (pack truncation rule) */
} m2_seqset;

void m2_seqset_init(m2_seqset *s);
void m2_seqset_free(m2_seqset *s);
/* Packs and appends; a sequence rejected by the truncation rule is counted in n_dropped. */
int m2_seqset_add(m2_seqset *s, const m2_tok_iface *tok, const m2_traj *t, int max_tokens, m2_err *err);
/* Every record with its data/prompts.h context (low states get "Obs: " when missing). */
int m2_seqset_add_high(m2_seqset *s, const m2_tok_iface *tok, const m2_high_record *r, int n,
                       int max_tokens, m2_err *err);
int m2_seqset_add_low(m2_seqset *s, const m2_tok_iface *tok, const m2_low_record *r, int n,
                      int max_tokens, m2_err *err);

/* Deterministic split of [0, n): a shuffle by seed, the first round(val_frac * n) indices (at least
 * one when val_frac > 0 and n >= 2, never all) are validation. Arrays malloc'd. */
int m2_seqset_split(int n, double val_frac, uint64_t seed, int **train, int *n_train, int **val,
                    int *n_val, m2_err *err);

typedef struct m2_batch_iter {
    const int *idx;     /* the sequences iterated (e.g. the train split), borrowed */
    int n, batch;
    uint64_t seed;
    int64_t epoch;      /* state */
    int pos;            /* state: next position in the epoch's order */
    int *order;         /* [n] order of the current epoch (derived from seed, epoch) */
} m2_batch_iter;

int m2_batch_iter_init(m2_batch_iter *it, const int *idx, int n, int batch, uint64_t seed, m2_err *err);
/* Moves to (epoch, pos), e.g. from a checkpoint. */
int m2_batch_iter_seek(m2_batch_iter *it, int64_t epoch, int pos, m2_err *err);
void m2_batch_iter_free(m2_batch_iter *it);
/* Next batch of up to `batch` sequences (the epoch's last one may be smaller); *epoch_done = 1 when
 * it ended an epoch (the iterator then starts the next one). */
int m2_batch_iter_next(m2_batch_iter *it, const m2_seqset *s, m2_packed_batch *out, int *epoch_done,
                       m2_err *err);
/* The size of the batch the next call returns (moving to the next epoch first when the current one
 * ended). */
int m2_batch_iter_peek(m2_batch_iter *it);
/* Like m2_batch_iter_next, but packs only the batch's sequences [lo, lo + n) (a data-parallel rank's
 * share, dist/dist.h), keyed lo .. lo + n - 1, with act_base / act_total placing its actions in the
 * whole batch's (data/pack.h); n = 0 gives a batch without sequences (only act_base and act_total
 * set). The iterator moves past the whole batch. */
int m2_batch_iter_next_range(m2_batch_iter *it, const m2_seqset *s, int lo, int n, m2_packed_batch *out,
                             int *epoch_done, m2_err *err);

#endif
