/* Data-parallel collectives: MPI when the build has it, a single rank otherwise. */
#include "or1/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "or1/core.h"

#ifdef OR1_MPI
#include <mpi.h>

/* MPI_Init when launched by mpirun (OMPI/PMI environment); errors abort every rank. */
void or1_dist_init(int *argc, char ***argv, or1_dist *d) {
    d->rank = 0, d->size = 1;
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

/* MPI_Allreduce(SUM) in place, in chunks that fit an int count. */
static void allreduce(const or1_dist *d, void *buf, size_t n, MPI_Datatype t, size_t elem) {
    if (d->size <= 1) return;
    for (size_t off = 0; off < n; off += (size_t)1 << 30) {
        size_t m = n - off < ((size_t)1 << 30) ? n - off : ((size_t)1 << 30);
        MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * elem, (int)m, t, MPI_SUM, MPI_COMM_WORLD);
    }
}

void or1_dist_sum_f32(const or1_dist *d, float *buf, size_t n) { allreduce(d, buf, n, MPI_FLOAT, sizeof(float)); }
void or1_dist_sum_f64(const or1_dist *d, double *buf, size_t n) { allreduce(d, buf, n, MPI_DOUBLE, sizeof(double)); }

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
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (d->rank == 0) {
        for (int r = 0; r < d->size; r++) offs[r] = (int)*all_len, *all_len += (size_t)lens[r];
        *all = or1_malloc(*all_len + 1);
    }
    MPI_Gatherv(mine, n, MPI_CHAR, *all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    free(lens);
    free(offs);
}

/* Prints and takes the whole job down (MPI_Abort reaches every rank). */
__attribute__((noreturn)) void or1_dist_abort(const or1_dist *d, const char *msg) {
    fprintf(stderr, "or1: rank %d of %d: %s\n", d->rank, d->size, msg);
    fflush(stderr);
    if (d->size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}


#else

/* Without MPI: one rank. */
void or1_dist_init(int *argc, char ***argv, or1_dist *d) {
    (void)argc, (void)argv;
    d->rank = 0, d->size = 1;
}

void or1_dist_finalize(void) {}

void or1_dist_sum_f32(const or1_dist *d, float *buf, size_t n) { (void)d, (void)buf, (void)n; }

void or1_dist_sum_f64(const or1_dist *d, double *buf, size_t n) { (void)d, (void)buf, (void)n; }

/* One rank: a copy of its own bytes. */
void or1_dist_gather_bytes(const or1_dist *d, const char *mine, size_t len, char **all, size_t *all_len) {
    (void)d;
    *all = or1_malloc(len + 1);
    memcpy(*all, mine, len);
    *all_len = len;
}

/* Prints and exits. */
__attribute__((noreturn)) void or1_dist_abort(const or1_dist *d, const char *msg) {
    (void)d;
    fprintf(stderr, "or1: %s\n", msg);
    exit(1);
}

#endif
