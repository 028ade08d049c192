#include "dist/dist.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef M2_HAVE_MPI
#include <mpi.h>
#endif

void m2_dist_single(m2_dist *d) {
    *d = (m2_dist){.rank = 0, .world = 1, .piece = M2_DIST_PIECE, .fail_rank = -1};
}

int m2_dist_alone(const m2_dist *d) { return !d || d->world <= 1; }

void m2_dist_shard(int64_t n, int rank, int world, int64_t *first, int64_t *count) {
    if (world < 1) world = 1;
    int64_t a = n * rank / world, b = n * (rank + 1) / world;
    *first = a;
    *count = b - a;
}

/* M2_DIST_FAIL=R:N */
static int parse_fail(m2_dist *d, m2_err *err) {
    const char *s = getenv("M2_DIST_FAIL");
    if (!s || !*s) return 0;
    int r;
    long n;
    char tail;
    if (sscanf(s, "%d:%ld%c", &r, &n, &tail) != 2 || r < 0 || n < 1)
        return m2_errorf(err, M2_ECONFIG, "M2_DIST_FAIL='%s': expected RANK:N (rank >= 0, N >= 1)", s);
    d->fail_rank = r;
    d->fail_at = n;
    return 0;
}

/* Counts a collective; the injected failure of M2_DIST_FAIL happens here. */
static int enter(m2_dist *d, const char *what, m2_err *err) {
    d->calls++;
    if (d->rank == d->fail_rank && d->calls == d->fail_at)
        return m2_errorf(err, M2_EIO, "%s: injected failure at collective %ld (M2_DIST_FAIL)", what, d->calls);
    return 0;
}

/* Launchers put their rank into the environment before exec: OpenMPI's mpirun (OMPI_COMM_WORLD_*),
 * PMIx (srun --mpi=pmix, OpenMPI 4's own), PMI-1/2 (srun --mpi=pmi2, MPICH's hydra). */
static int launched(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

#ifdef M2_HAVE_MPI

static int mpi_fail(int rc, const char *what, m2_err *err) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", rc);
    return m2_errorf(err, M2_EIO, "%s: %s", what, msg);
}

int m2_dist_init(m2_dist *d, int *argc, char ***argv, m2_err *err) {
    m2_dist_single(d);
    if (parse_fail(d, err)) return -1;
    if (!launched()) return 0;
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return m2_errorf(err, M2_EIO, "MPI_Init failed (code %d)", rc);
    d->mpi = 1;
    /* errors come back as return codes (turned into m2_err), not as a job abort inside MPI */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->world);
    return 0;
}

void m2_dist_finalize(m2_dist *d) {
    if (d && d->mpi) {
        MPI_Finalize();
        d->mpi = 0;
    }
}

void m2_dist_abort(m2_dist *d, const char *reason) {
    if (m2_dist_alone(d) || !d->mpi) return;
    fprintf(stderr, "multi2: rank %d of %d failed: %s\n", d->rank, d->world, reason);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Deterministic sum of one piece of n elements of size es (MPI type t): each rank owns the block
 * m2_dist_shard gives it, receives every rank's copy of that block (Alltoallv), adds them in rank
 * order, and the sums are gathered back to everyone (Allgatherv). */
static int sum_piece(m2_dist *d, void *x, size_t n, size_t es, MPI_Datatype t, int is_f64, void *scratch,
                     int *cnt, int *dsp, int *rcnt, int *rdsp, m2_err *err) {
    int W = d->world;
    for (int r = 0; r < W; r++) {
        int64_t a, k;
        m2_dist_shard((int64_t)n, r, W, &a, &k);
        cnt[r] = (int)k;
        dsp[r] = (int)a;
    }
    int mine = cnt[d->rank];
    for (int r = 0; r < W; r++) { rcnt[r] = mine; rdsp[r] = r * mine; }
    int rc = MPI_Alltoallv(x, cnt, dsp, t, scratch, rcnt, rdsp, t, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "all-reduce (reduce-scatter)", err);
    char *own = (char *)x + (size_t)dsp[d->rank] * es;
    if (is_f64) {
        double *o = (double *)own, *s = scratch;
        for (int i = 0; i < mine; i++) {
            double acc = s[i];
            for (int r = 1; r < W; r++) acc += s[(size_t)r * mine + i];
            o[i] = acc;
        }
    } else {
        float *o = (float *)own, *s = scratch;
        for (int i = 0; i < mine; i++) {
            float acc = s[i];
            for (int r = 1; r < W; r++) acc += s[(size_t)r * mine + i];
            o[i] = acc;
        }
    }
    rc = MPI_Allgatherv(MPI_IN_PLACE, 0, t, x, cnt, dsp, t, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "all-reduce (all-gather)", err);
}

static int sum_any(m2_dist *d, void *x, size_t n, size_t es, MPI_Datatype t, int is_f64, m2_err *err) {
    if (enter(d, "all-reduce", err)) return -1;
    if (m2_dist_alone(d) || n == 0) return 0;
    size_t piece = d->piece ? d->piece : M2_DIST_PIECE;
    size_t first = n < piece ? n : piece;
    int W = d->world;
    void *scratch = malloc((first / W + 1) * W * es);
    int *ints = malloc((size_t)4 * W * sizeof *ints);
    int rc = 0;
    if (!scratch || !ints) rc = m2_errorf(err, M2_ENOMEM, "all-reduce: out of memory (%zu elements)", first);
    for (size_t off = 0; !rc && off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        rc = sum_piece(d, (char *)x + off * es, k, es, t, is_f64, scratch, ints, ints + W, ints + 2 * W, ints + 3 * W, err);
    }
    free(scratch);
    free(ints);
    return rc;
}

int m2_dist_sum_f32(m2_dist *d, float *x, size_t n, m2_err *err) {
    return d ? sum_any(d, x, n, sizeof *x, MPI_FLOAT, 0, err) : 0;
}

int m2_dist_sum_f64(m2_dist *d, double *x, size_t n, m2_err *err) {
    return d ? sum_any(d, x, n, sizeof *x, MPI_DOUBLE, 1, err) : 0;
}

int m2_dist_sum_i64(m2_dist *d, int64_t *x, size_t n, m2_err *err) {
    if (!d) return 0;
    if (enter(d, "integer all-reduce", err)) return -1;
    if (m2_dist_alone(d)) return 0;
    size_t piece = d->piece ? d->piece : M2_DIST_PIECE;
    for (size_t off = 0; off < n; off += piece) {
        int k = (int)(n - off < piece ? n - off : piece);
        int rc = MPI_Allreduce(MPI_IN_PLACE, x + off, k, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "integer all-reduce", err);
    }
    return 0;
}

static int bcast_raw(m2_dist *d, void *buf, size_t n, int root, m2_err *err) {
    size_t piece = d->piece ? d->piece : M2_DIST_PIECE;
    for (size_t off = 0; off < n; off += piece) {
        int k = (int)(n - off < piece ? n - off : piece);
        int rc = MPI_Bcast((char *)buf + off, k, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "broadcast", err);
    }
    return 0;
}

int m2_dist_bcast(m2_dist *d, void *buf, size_t n, int root, m2_err *err) {
    if (!d) return 0;
    if (enter(d, "broadcast", err)) return -1;
    if (m2_dist_alone(d)) return 0;
    if (root < 0 || root >= d->world) return m2_errorf(err, M2_EINVAL, "broadcast: root %d outside 0..%d", root, d->world - 1);
    return bcast_raw(d, buf, n, root, err);
}

int m2_dist_barrier(m2_dist *d, m2_err *err) {
    if (!d) return 0;
    if (enter(d, "barrier", err)) return -1;
    if (m2_dist_alone(d)) return 0;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "barrier", err);
}

/* lengths first (exact integers), then each rank's bytes from it, in rank order */
static int allgather_mpi(m2_dist *d, const void *mine, size_t n, char **all, size_t *lens, m2_err *err) {
    int W = d->world;
    int64_t *l = calloc((size_t)W, sizeof *l);
    if (!l) return m2_errorf(err, M2_ENOMEM, "gather: out of memory");
    l[d->rank] = (int64_t)n;
    int rc = MPI_Allreduce(MPI_IN_PLACE, l, W, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { free(l); return mpi_fail(rc, "gather (lengths)", err); }
    size_t total = 0;
    for (int r = 0; r < W; r++) { lens[r] = (size_t)l[r]; total += lens[r]; }
    free(l);
    char *buf = malloc(total + 1);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "gather: out of memory (%zu bytes)", total);
    size_t off = 0;
    for (int r = 0; r < W; r++) {
        if (r == d->rank && n) memcpy(buf + off, mine, n);
        if (bcast_raw(d, buf + off, lens[r], r, err)) { free(buf); return -1; }
        off += lens[r];
    }
    buf[total] = 0;
    *all = buf;
    return 0;
}

#else   /* built without MPI: one process */

int m2_dist_init(m2_dist *d, int *argc, char ***argv, m2_err *err) {
    (void)argc;
    (void)argv;
    m2_dist_single(d);
    /* N copies of a one-process build would each run the whole job into the same folder */
    const char *n = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("PMI_SIZE");
    if (launched() && n && atoi(n) > 1)
        return m2_errorf(err, M2_EUNSUPPORTED, "started as one of %s ranks, but this build has no MPI (-DM2_MPI=OFF or "
                         "OpenMPI not found): run it without mpirun, or rebuild with libopenmpi-dev", n);
    return parse_fail(d, err);
}

void m2_dist_finalize(m2_dist *d) { (void)d; }
void m2_dist_abort(m2_dist *d, const char *reason) { (void)d; (void)reason; }

int m2_dist_sum_f32(m2_dist *d, float *x, size_t n, m2_err *err) { (void)x; (void)n; return d ? enter(d, "all-reduce", err) : 0; }
int m2_dist_sum_f64(m2_dist *d, double *x, size_t n, m2_err *err) { (void)x; (void)n; return d ? enter(d, "all-reduce", err) : 0; }
int m2_dist_sum_i64(m2_dist *d, int64_t *x, size_t n, m2_err *err) { (void)x; (void)n; return d ? enter(d, "integer all-reduce", err) : 0; }
int m2_dist_bcast(m2_dist *d, void *buf, size_t n, int root, m2_err *err) { (void)buf; (void)n; (void)root; return d ? enter(d, "broadcast", err) : 0; }
int m2_dist_barrier(m2_dist *d, m2_err *err) { return d ? enter(d, "barrier", err) : 0; }

#endif

int m2_dist_allgather(m2_dist *d, const void *mine, size_t n, char **all, size_t *lens, m2_err *err) {
    if (d && enter(d, "gather", err)) return -1;
#ifdef M2_HAVE_MPI
    if (!m2_dist_alone(d)) return allgather_mpi(d, mine, n, all, lens, err);
#endif
    char *buf = malloc(n + 1);
    if (!buf) return m2_errorf(err, M2_ENOMEM, "gather: out of memory (%zu bytes)", n);
    if (n) memcpy(buf, mine, n);
    buf[n] = 0;
    lens[0] = n;
    *all = buf;
    return 0;
}

int m2_dist_map_ordered(m2_dist *d, int64_t n, m2_dist_make_fn make, m2_dist_take_fn take, void *ud, m2_err *err) {
    m2_strbuf b = {0};
    int rc = 0;
    if (m2_dist_alone(d)) {
        for (int64_t i = 0; !rc && i < n; i++) {
            m2_strbuf_reset(&b);
            rc = make(ud, i, &b, err);
            if (!rc && b.oom) rc = m2_errorf(err, M2_ENOMEM, "out of memory for item %lld", (long long)i);
            if (!rc) rc = take(ud, i, m2_strbuf_str(&b), b.len, err);
        }
        m2_strbuf_free(&b);
        return rc;
    }
    /* this rank's items, each as [uint64 length][bytes][NUL], then every rank's in rank order */
    int64_t lo, cnt;
    m2_dist_shard(n, d->rank, d->world, &lo, &cnt);
    m2_strbuf one = {0};
    for (int64_t i = lo; !rc && i < lo + cnt; i++) {
        m2_strbuf_reset(&one);
        rc = make(ud, i, &one, err);
        uint64_t len = one.len;
        if (!rc && (one.oom || m2_strbuf_append(&b, &len, sizeof len) || m2_strbuf_append(&b, m2_strbuf_str(&one), one.len + 1)))
            rc = m2_errorf(err, M2_ENOMEM, "out of memory for item %lld", (long long)i);
    }
    m2_strbuf_free(&one);
    char *all = NULL;
    size_t *lens = rc ? NULL : calloc((size_t)d->world, sizeof *lens);
    if (!rc && !lens) rc = m2_errorf(err, M2_ENOMEM, "gather: out of memory");
    /* a rank that failed above skips the gather: its error ends the job (m2_dist_abort) */
    if (!rc) rc = m2_dist_allgather(d, m2_strbuf_str(&b), b.len, &all, lens, err);
    m2_strbuf_free(&b);
    size_t total = 0, off = 0;
    for (int r = 0; !rc && r < d->world; r++) total += lens[r];
    int64_t i = 0;
    while (!rc && off < total) {
        uint64_t len;
        if (total - off < sizeof len) { rc = m2_errorf(err, M2_EFORMAT, "gather: a rank sent a truncated item"); break; }
        memcpy(&len, all + off, sizeof len);
        off += sizeof len;
        if (len >= total - off || all[off + len] || i >= n) { rc = m2_errorf(err, M2_EFORMAT, "gather: a rank sent a truncated item"); break; }
        rc = take(ud, i++, all + off, (size_t)len, err);
        off += len + 1;
    }
    if (!rc && i != n) rc = m2_errorf(err, M2_EFORMAT, "gather: %lld items of %lld arrived", (long long)i, (long long)n);
    free(all);
    free(lens);
    return rc;
}
