/* Ranks and collectives for data parallelism across processes (DESIGN.md §1: dist → core). One
 * m2_dist per process, made by m2_dist_init and handed down explicitly (no global state of ours;
 * MPI's own is below it). Built without MPI, or started without a launcher (mpirun, srun), it is
 * rank 0 of 1 and every collective is a no-op that leaves its buffers as they are, so such a run
 * computes exactly what it did before this layer existed.
 *
 * Reductions are deterministic: element i of a float/double sum is x_0[i] + x_1[i] + ... + x_{W-1}[i]
 * added in rank order by one rank (the owner of i's block: a reduce-scatter of contiguous blocks,
 * then an all-gather of the sums), so every rank gets the same bits and a run repeats bit for bit at
 * a given world size. Relation to one process: at W = 1 the sum is the input itself; at W > 1 the
 * terms are the ranks' partial sums, which a single process would have added in a different
 * order, so the results agree with a 1-process run to rounding, not to the bit (docs/dist.md).
 *
 * Messages are cut into pieces of at most M2_DIST_PIECE elements (bytes for the byte calls), far
 * below MPI's int count limit. MPI errors come back as m2_err (the communicator returns errors
 * instead of aborting); only m2_dist_abort ends processes, and only the CLI calls it.
 *
 * Test hook: the environment variable M2_DIST_FAIL=R:N makes rank R's N-th collective (1-based)
 * fail with an error, as a crashed or failing rank would (docs/dist.md). */
#ifndef M2_DIST_H
#define M2_DIST_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/strbuf.h"

/* Elements (floats, doubles, bytes) per MPI call: 2^26 stays far below INT_MAX however the
 * datatypes are counted, and keeps the reduction's scratch buffer at one piece. */
#define M2_DIST_PIECE ((size_t)1 << 26)

typedef struct m2_dist {
    int rank, world;
    int mpi;            /* 1: this process initialised MPI (finalise it) */
    size_t piece;       /* elements per MPI call (M2_DIST_PIECE; tests lower it to exercise cutting) */
    int fail_rank;      /* M2_DIST_FAIL's rank (-1: no injected failure) */
    long fail_at;       /* ... and the collective that fails there */
    long calls;         /* collectives this rank has entered */
} m2_dist;

/* Rank 0 of 1 without MPI (a library user that never calls m2_dist_init can use this). */
void m2_dist_single(m2_dist *d);
/* Initialises MPI when the process was started by a launcher (OpenMPI's mpirun, PMI/PMIx under
 * srun or MPICH), else behaves like m2_dist_single. A malformed M2_DIST_FAIL is an error. */
int m2_dist_init(m2_dist *d, int *argc, char ***argv, m2_err *err);
void m2_dist_finalize(m2_dist *d);
/* 1 when d is NULL or has one rank: callers skip their sharding glue then. */
int m2_dist_alone(const m2_dist *d);

/* The one sharding rule: of n items (a batch's sequences, an evaluation's episodes) rank r takes
 * the contiguous block [n*r/W, n*(r+1)/W), so concatenating the blocks in rank order is the
 * original order. */
void m2_dist_shard(int64_t n, int rank, int world, int64_t *first, int64_t *count);

/* Deterministic sums in place (see above). */
int m2_dist_sum_f32(m2_dist *d, float *x, size_t n, m2_err *err);
int m2_dist_sum_f64(m2_dist *d, double *x, size_t n, m2_err *err);
/* Exact integer sums (order-free). */
int m2_dist_sum_i64(m2_dist *d, int64_t *x, size_t n, m2_err *err);
/* root's n bytes to every rank. */
int m2_dist_bcast(m2_dist *d, void *buf, size_t n, int root, m2_err *err);
/* Every rank's byte buffer to every rank, concatenated in rank order: *all (malloc'd, NUL-ended
 * after the last byte for text), lens[world] (caller's array) each rank's length. */
int m2_dist_allgather(m2_dist *d, const void *mine, size_t n, char **all, size_t *lens, m2_err *err);
int m2_dist_barrier(m2_dist *d, m2_err *err);

/* An ordered job of n items (the episodes of an evaluation) over the ranks: rank r calls make(ud, i,
 * out) for each item i of its block (m2_dist_shard), which appends item i's bytes to out; one
 * gather brings every item's bytes to every rank, and take(ud, i, bytes, len) is called for each
 * item in item order on every rank (a writer checks the rank itself; the bytes are followed by a
 * NUL). So what take sees is what one process sees. Alone: make then take, item by item (nothing
 * held back, no collective). */
typedef int (*m2_dist_make_fn)(void *ud, int64_t i, m2_strbuf *out, m2_err *err);
typedef int (*m2_dist_take_fn)(void *ud, int64_t i, const char *item, size_t len, m2_err *err);
int m2_dist_map_ordered(m2_dist *d, int64_t n, m2_dist_make_fn make, m2_dist_take_fn take, void *ud, m2_err *err);

/* The job's end after an error on this rank: prints "multi2: rank R of W failed: <reason>" to
 * stderr and aborts every rank (MPI_Abort, exit status 1). Returns only when d is alone (the
 * caller then exits as it always did). For the CLI, never the library. */
void m2_dist_abort(m2_dist *d, const char *reason);

#endif
