/* or1 dist: data parallelism over processes. One process per rank; a build without MPI
 * (or a run without mpirun) is a single rank. Reductions are sums over all ranks. */
#ifndef OR1_DIST_H
#define OR1_DIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    int rank, size;
    int comm; /* the communicator: 0 the whole job, else one of or1_dist_split */
} or1_dist;

/* Starts MPI when built with it and launched under mpirun; else rank 0 of 1. */
void or1_dist_init(int *argc, char ***argv, or1_dist *d);
/* Ends MPI (after the last collective). */
void or1_dist_finalize(void);
/* In-place sums over all ranks (every rank gets the result). */
void or1_dist_sum_f32(const or1_dist *d, float *buf, size_t n);
void or1_dist_sum_f64(const or1_dist *d, double *buf, size_t n);
/* In-place maxima over all ranks. */
void or1_dist_max_f64(const or1_dist *d, double *buf, size_t n);
/* This rank's share [*lo, *hi) of n elements split in rank order (sizes differ by at most 1). */
void or1_dist_shard(const or1_dist *d, size_t n, size_t *lo, size_t *hi);
/* Every rank's shard start and then n (size + 1 entries; free the new array). */
size_t *or1_dist_shard_starts(const or1_dist *d, size_t n);
/* Sums buf[n] over the ranks and gives each rank only its own shard of the sums, in shard
 * (hi - lo floats of or1_dist_shard): a reduce-scatter. */
void or1_dist_reduce_scatter_f32(const or1_dist *d, const float *buf, float *shard, size_t n);
/* Fills buf[n] on every rank with every rank's shard (each rank's own is already in place). */
void or1_dist_allgather_f32(const or1_dist *d, float *buf, size_t n);
/* Rank 0's len bytes of buf to every rank. */
void or1_dist_bcast_bytes(const or1_dist *d, void *buf, size_t len);
/* Gathers every rank's shard (hi - lo floats) into all[n] on rank 0 (all may be NULL elsewhere). */
void or1_dist_gather_f32(const or1_dist *d, const float *shard, float *all, size_t n);
/* Concatenates every rank's bytes in rank order on rank 0 (*all: new buffer there, NULL
 * elsewhere; *all_len its size). */
void or1_dist_gather_bytes(const or1_dist *d, const char *mine, size_t len, char **all, size_t *all_len);
/* The watchdog of the collectives: from now on a collective that has not returned within
 * timeout_s seconds (a rank died, or its link is down) ends this rank with a message naming it
 * and the step and phase of or1_dist_phase, instead of waiting for ever; 0 turns it off. */
void or1_dist_set_timeout(const or1_dist *d, double timeout_s);
/* What the ranks are doing, for the watchdog's message: the step (1-based) and a phase name
 * (a string literal). */
void or1_dist_phase(long step, const char *phase);
/* Splits d's ranks by color (a collective on d): *out gets this rank's group, ranked in d's
 * order. */
int or1_dist_split(const or1_dist *d, int color, or1_dist *out);
/* Point to point on d's communicator, for messages of any size: a send in flight (buf must stay
 * as it is until or1_dist_send_wait, which frees the handle; NULL is allowed), and the receive
 * of one message from rank `from` with `tag`, into a new buffer (*len its size; free it) or into
 * buf of exactly len bytes (anything else stops the job). Messages of one tag arrive in order.
 * Receives and waits are under the watchdog of or1_dist_set_timeout. */
typedef struct or1_dist_send or1_dist_send;
or1_dist_send *or1_dist_isend(const or1_dist *d, int to, int tag, const void *buf, size_t len);
void or1_dist_send_wait(or1_dist_send *s);
void *or1_dist_recv(const or1_dist *d, int from, int tag, size_t *len);
void or1_dist_recv_into(const or1_dist *d, int from, int tag, void *buf, size_t len);
/* Stops every rank with a message: a failure on one rank must not hang the others. */
__attribute__((noreturn)) void or1_dist_abort(const or1_dist *d, const char *msg);

#endif
