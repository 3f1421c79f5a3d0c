/* Data-parallel collectives: MPI when the build has it, a single rank otherwise. */
#include "or1/dist.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "or1/core.h"

/* What the watchdog sees: when the collective in progress began (monotonic seconds, 0 when
 * none) and its name, the step and phase the trainer named, this rank, and the limit. */
static struct {
    _Atomic double since, limit;
    _Atomic long step;
    const char *_Atomic op;
    const char *_Atomic phase;
    int rank, size;
} watch = {.phase = "start"};

/* See dist.h. */
void or1_dist_phase(long step, const char *phase) {
    watch.step = step;
    watch.phase = phase;
}

/* Start of rank r's shard: n/size each, the first n%size ranks one more. */
static size_t shard_start(size_t n, size_t r, size_t size) { return n / size * r + (r < n % size ? r : n % size); }

/* Contiguous shards in rank order, sizes within one of each other. */
void or1_dist_shard(const or1_dist *d, size_t n, size_t *lo, size_t *hi) {
    *lo = shard_start(n, (size_t)d->rank, (size_t)d->size);
    *hi = shard_start(n, (size_t)d->rank + 1, (size_t)d->size);
}

/* All ranks' shard starts, then n. */
size_t *or1_dist_shard_starts(const or1_dist *d, size_t n) {
    size_t *s = or1_malloc(((size_t)d->size + 1) * sizeof *s);
    for (int r = 0; r <= d->size; r++) s[r] = shard_start(n, (size_t)r, (size_t)d->size);
    return s;
}

#ifdef OR1_MPI
#include <limits.h>
#include <mpi.h>

/* The communicators of split dists: slot 0 stands for the world's, so a zeroed or1_dist (comm
 * 0) is the whole job. */
static MPI_Comm comms[8];
static int n_comms = 1;

/* The MPI communicator of d. */
static MPI_Comm comm_of(const or1_dist *d) { return d->comm == 0 ? MPI_COMM_WORLD : comms[d->comm]; }
#define COMM(d) comm_of(d)

/* Seconds on the monotonic clock. */
static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The watchdog thread: a few looks per limit; a collective older than the limit ends the process
 * at once (_exit: MPI_Abort itself may wait on the dead link), and mpirun then ends the job. */
static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        double limit = watch.limit, period = limit / 8 < 0.05 ? 0.05 : limit / 8 > 1 ? 1 : limit / 8;
        usleep((useconds_t)(period * 1e6));
        double since = watch.since;
        if (limit > 0 && since > 0 && mono() - since > limit) {
            fprintf(stderr, "or1: rank %d of %d: step %ld, %s: %s has waited %.0f s for the other ranks (dist.timeout_s "
                            "%g): a rank died or its link is down; ending this rank\n", watch.rank, watch.size,
                    (long)watch.step, (const char *)watch.phase, (const char *)watch.op, mono() - since, limit);
            fflush(stderr);
            _exit(3);
        }
    }
    return NULL;
}

/* See dist.h: the thread starts with the first positive limit of a run of several ranks. */
void or1_dist_set_timeout(const or1_dist *d, double timeout_s) {
    static bool started;
    watch.rank = d->rank, watch.size = d->size;
    watch.limit = timeout_s;
    pthread_t t;
    if (!started && timeout_s > 0 && d->size > 1 && pthread_create(&t, NULL, watchdog, NULL) == 0) {
        pthread_detach(t);
        started = true;
    }
}

/* Marks the start of a collective (op names it) for the watchdog. */
static void watch_begin(const char *op) {
    watch.op = op;
    watch.since = mono();
}

/* Marks its end. */
static void watch_end(void) { watch.since = 0; }

/* Every rank's shard size and offset as MPI counts (new arrays); aborts if one is too large. */
static void shard_counts(const or1_dist *d, size_t n, int **counts, int **displs) {
    *counts = or1_malloc((size_t)d->size * sizeof **counts);
    *displs = or1_malloc((size_t)d->size * sizeof **displs);
    size_t *s = or1_dist_shard_starts(d, n);
    for (int r = 0; r < d->size; r++) {
        if (s[r + 1] > INT_MAX) or1_dist_abort(d, "dist: a shard reaches past 2^31 floats (more ranks needed)");
        (*counts)[r] = (int)(s[r + 1] - s[r]), (*displs)[r] = (int)s[r];
    }
    free(s);
}

/* MPI_Reduce_scatter(SUM) with the shard sizes as the receive counts. */
void or1_dist_reduce_scatter_f32(const or1_dist *d, const float *buf, float *shard, size_t n) {
    int *counts, *displs;
    shard_counts(d, n, &counts, &displs);
    if (d->size > 1) {
        watch_begin("reduce-scatter");
        MPI_Reduce_scatter(buf, shard, counts, MPI_FLOAT, MPI_SUM, COMM(d));
        watch_end();
    } else {
        memcpy(shard, buf, n * sizeof *buf);
    }
    free(counts);
    free(displs);
}

/* MPI_Allgatherv in place. */
void or1_dist_allgather_f32(const or1_dist *d, float *buf, size_t n) {
    if (d->size <= 1) return;
    int *counts, *displs;
    shard_counts(d, n, &counts, &displs);
    watch_begin("all-gather");
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_FLOAT, COMM(d));
    watch_end();
    free(counts);
    free(displs);
}

/* MPI_Bcast from rank 0. */
void or1_dist_bcast_bytes(const or1_dist *d, void *buf, size_t len) {
    if (d->size <= 1) return;
    watch_begin("broadcast");
    MPI_Bcast(buf, (int)len, MPI_BYTE, 0, COMM(d));
    watch_end();
}

/* MPI_Gatherv of the shards to rank 0. */
void or1_dist_gather_f32(const or1_dist *d, const float *shard, float *all, size_t n) {
    int *counts, *displs;
    shard_counts(d, n, &counts, &displs);
    if (d->size > 1) {
        watch_begin("gather");
        MPI_Gatherv(shard, counts[d->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0, COMM(d));
        watch_end();
    } else {
        memcpy(all, shard, n * sizeof *shard);
    }
    free(counts);
    free(displs);
}

/* MPI_Init when launched by mpirun (OMPI/PMI environment); errors abort every rank. */
void or1_dist_init(int *argc, char ***argv, or1_dist *d) {
    *d = (or1_dist){.rank = 0, .size = 1};
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) return;
    MPI_Init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
}

/* MPI_Finalize if MPI was started. */
void or1_dist_finalize(void) {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Finalize();
}

/* MPI_Allreduce(op) in place, in chunks that fit an int count. */
static void allreduce(const or1_dist *d, void *buf, size_t n, MPI_Datatype t, size_t elem, MPI_Op op) {
    if (d->size <= 1) return;
    watch_begin("all-reduce");
    for (size_t off = 0; off < n; off += (size_t)1 << 30) {
        size_t m = n - off < ((size_t)1 << 30) ? n - off : ((size_t)1 << 30);
        MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * elem, (int)m, t, op, COMM(d));
    }
    watch_end();
}

void or1_dist_sum_f32(const or1_dist *d, float *buf, size_t n) { allreduce(d, buf, n, MPI_FLOAT, sizeof(float), MPI_SUM); }
void or1_dist_sum_f64(const or1_dist *d, double *buf, size_t n) { allreduce(d, buf, n, MPI_DOUBLE, sizeof(double), MPI_SUM); }
void or1_dist_max_f64(const or1_dist *d, double *buf, size_t n) { allreduce(d, buf, n, MPI_DOUBLE, sizeof(double), MPI_MAX); }

/* MPI_Gather of the lengths, then MPI_Gatherv of the bytes to rank 0. */
void or1_dist_gather_bytes(const or1_dist *d, const char *mine, size_t len, char **all, size_t *all_len) {
    *all = NULL, *all_len = 0;
    if (d->size <= 1) {
        *all = or1_malloc(len + 1);
        memcpy(*all, mine, len);
        *all_len = len;
        return;
    }
    int n = (int)len, *lens = d->rank == 0 ? or1_calloc((size_t)d->size, sizeof *lens) : NULL;
    int *offs = d->rank == 0 ? or1_calloc((size_t)d->size, sizeof *offs) : NULL;
    watch_begin("gather");
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, COMM(d));
    if (d->rank == 0) {
        for (int r = 0; r < d->size; r++) offs[r] = (int)*all_len, *all_len += (size_t)lens[r];
        *all = or1_malloc(*all_len + 1);
    }
    MPI_Gatherv(mine, n, MPI_CHAR, *all, lens, offs, MPI_CHAR, 0, COMM(d));
    watch_end();
    free(lens);
    free(offs);
}

/* MPI_Comm_split of d's communicator by color, ranked as in d. */
int or1_dist_split(const or1_dist *d, int color, or1_dist *out) {
    if (n_comms == (int)(sizeof comms / sizeof *comms)) return or1_fail("dist: too many split communicators");
    MPI_Comm c;
    MPI_Comm_split(comm_of(d), color, d->rank, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_ARE_FATAL);
    comms[n_comms] = c;
    *out = (or1_dist){.comm = n_comms++};
    MPI_Comm_rank(c, &out->rank);
    MPI_Comm_size(c, &out->size);
    return 0;
}

/* A message goes as its length (8 bytes) and then pieces of at most P2P_PIECE bytes, each
 * within an int count; the same tag keeps them in order (MPI's non-overtaking rule). */
enum { P2P_PIECE = 1 << 30 };

/* A send in flight: its requests and the length header they read. */
struct or1_dist_send {
    MPI_Request *req;
    int n;
    uint64_t len;
};

/* MPI_Isend of the header and the pieces. */
or1_dist_send *or1_dist_isend(const or1_dist *d, int to, int tag, const void *buf, size_t len) {
    size_t pieces = (len + P2P_PIECE - 1) / P2P_PIECE;
    or1_dist_send *s = or1_malloc(sizeof *s);
    s->len = len, s->n = (int)pieces + 1;
    s->req = or1_malloc((size_t)s->n * sizeof *s->req);
    MPI_Isend(&s->len, 1, MPI_UINT64_T, to, tag, comm_of(d), &s->req[0]);
    for (size_t i = 0; i < pieces; i++) {
        size_t off = i * P2P_PIECE, m = len - off < P2P_PIECE ? len - off : P2P_PIECE;
        MPI_Isend((const char *)buf + off, (int)m, MPI_BYTE, to, tag, comm_of(d), &s->req[i + 1]);
    }
    return s;
}

/* MPI_Waitall under the watchdog, then frees the handle. */
void or1_dist_send_wait(or1_dist_send *s) {
    if (!s) return;
    watch_begin("send");
    MPI_Waitall(s->n, s->req, MPI_STATUSES_IGNORE);
    watch_end();
    free(s->req);
    free(s);
}

/* The header, then the pieces into buf (or a new buffer when buf is NULL). */
static void *recv_message(const or1_dist *d, int from, int tag, void *buf, size_t want, size_t *len) {
    uint64_t n;
    watch_begin("receive");
    MPI_Recv(&n, 1, MPI_UINT64_T, from, tag, comm_of(d), MPI_STATUS_IGNORE);
    if (buf && n != want) {
        char msg[160];
        snprintf(msg, sizeof msg, "dist: a message of %llu bytes from rank %d where %zu were expected",
                 (unsigned long long)n, from, want);
        or1_dist_abort(d, msg);
    }
    char *out = buf ? buf : or1_malloc((size_t)n + 1);
    for (size_t off = 0; off < n; off += P2P_PIECE) {
        size_t m = n - off < P2P_PIECE ? n - off : P2P_PIECE;
        MPI_Recv(out + off, (int)m, MPI_BYTE, from, tag, comm_of(d), MPI_STATUS_IGNORE);
    }
    watch_end();
    if (len) *len = (size_t)n;
    return out;
}

/* See dist.h. */
void *or1_dist_recv(const or1_dist *d, int from, int tag, size_t *len) { return recv_message(d, from, tag, NULL, 0, len); }

/* See dist.h. */
void or1_dist_recv_into(const or1_dist *d, int from, int tag, void *buf, size_t len) {
    recv_message(d, from, tag, buf, len, NULL);
}

/* Prints and takes the whole job down (MPI_Abort reaches every rank). */
__attribute__((noreturn)) void or1_dist_abort(const or1_dist *d, const char *msg) {
    fprintf(stderr, "or1: rank %d of %d: %s\n", d->rank, d->size, msg);
    fflush(stderr);
    if (d->size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}


#else

/* Without MPI: one rank, no collective to watch. */
void or1_dist_set_timeout(const or1_dist *d, double timeout_s) { (void)d, (void)timeout_s; }

/* Without MPI: one rank. */
void or1_dist_init(int *argc, char ***argv, or1_dist *d) {
    (void)argc, (void)argv;
    *d = (or1_dist){.rank = 0, .size = 1};
}

void or1_dist_finalize(void) {}

void or1_dist_sum_f32(const or1_dist *d, float *buf, size_t n) { (void)d, (void)buf, (void)n; }

void or1_dist_sum_f64(const or1_dist *d, double *buf, size_t n) { (void)d, (void)buf, (void)n; }

void or1_dist_max_f64(const or1_dist *d, double *buf, size_t n) { (void)d, (void)buf, (void)n; }

/* One rank: its shard is everything. */
void or1_dist_reduce_scatter_f32(const or1_dist *d, const float *buf, float *shard, size_t n) {
    (void)d;
    memcpy(shard, buf, n * sizeof *buf);
}

void or1_dist_allgather_f32(const or1_dist *d, float *buf, size_t n) { (void)d, (void)buf, (void)n; }

void or1_dist_bcast_bytes(const or1_dist *d, void *buf, size_t len) { (void)d, (void)buf, (void)len; }

void or1_dist_gather_f32(const or1_dist *d, const float *shard, float *all, size_t n) {
    (void)d;
    memcpy(all, shard, n * sizeof *shard);
}

/* One rank: a copy of its own bytes. */
void or1_dist_gather_bytes(const or1_dist *d, const char *mine, size_t len, char **all, size_t *all_len) {
    (void)d;
    *all = or1_malloc(len + 1);
    memcpy(*all, mine, len);
    *all_len = len;
}

/* Without MPI there is one rank: nothing to split off. */
int or1_dist_split(const or1_dist *d, int color, or1_dist *out) {
    (void)color;
    *out = *d;
    return 0;
}

/* Without MPI no other rank exists to talk to. */
or1_dist_send *or1_dist_isend(const or1_dist *d, int to, int tag, const void *buf, size_t len) {
    (void)to, (void)tag, (void)buf, (void)len;
    or1_dist_abort(d, "dist: a message to another rank in a build without MPI");
}

void or1_dist_send_wait(or1_dist_send *s) { (void)s; }

/* Without MPI no other rank exists to talk to. */
void *or1_dist_recv(const or1_dist *d, int from, int tag, size_t *len) {
    (void)from, (void)tag, (void)len;
    or1_dist_abort(d, "dist: a message from another rank in a build without MPI");
}

/* Without MPI no other rank exists to talk to. */
void or1_dist_recv_into(const or1_dist *d, int from, int tag, void *buf, size_t len) {
    (void)buf, (void)len;
    or1_dist_recv(d, from, tag, NULL);
}

/* Prints and exits. */
__attribute__((noreturn)) void or1_dist_abort(const or1_dist *d, const char *msg) {
    (void)d;
    fprintf(stderr, "or1: %s\n", msg);
    exit(1);
}

#endif
