/* NCCL across the ranks of a real mpirun (tests only): a communicator is a duplicate of
 * MPI_COMM_WORLD checked against the rank, size and id each rank passes; the collectives run
 * at once over MPI on the emulated device memory (host memory), in the order they are issued,
 * which every rank of a group issues alike. Each buffer must lie inside one live device
 * allocation. */
#include "nccl.h"

#include "emu.h"

#define OMPI_SKIP_MPICXX 1 /* the C API alone */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ncclComm {
    MPI_Comm comm;
    int rank, size;
};

namespace {

/* Bytes of one element. */
size_t elem_size(ncclDataType_t t) { return t == ncclFloat ? 4 : 1; }

MPI_Datatype mpi_type(ncclDataType_t t) { return t == ncclFloat ? MPI_FLOAT : MPI_BYTE; }

/* Whether the arguments name a usable communicator, a known type and device buffers. */
ncclResult_t check(const char *call, ncclComm_t comm, ncclDataType_t t, const void *send, const void *recv, size_t count) {
    if (!comm) return ncclInvalidArgument;
    if (t != ncclFloat && t != ncclChar) return ncclInvalidArgument;
    size_t bytes = count * elem_size(t);
    if ((send && !emu::find(send, bytes)) || (recv && !emu::find(recv, bytes))) {
        emu::note("%s of %zu bytes: a buffer (%p, %p) is not inside one live device allocation", call, bytes, send, recv);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* MPI counts are ints: one call per chunk of at most 1 GiB elements. */
template <class F> ncclResult_t chunks(size_t count, F f) {
    const size_t step = (size_t)1 << 30;
    for (size_t off = 0; off < count; off += step)
        if (f(off, (int)(count - off < step ? count - off : step)) != MPI_SUCCESS) return ncclSystemError;
    return ncclSuccess;
}

} // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    unsigned long v[3] = {(unsigned long)getpid(), (unsigned long)time(nullptr), (unsigned long)clock()};
    memcpy(id->internal, v, sizeof v);
    return ncclSuccess;
}

/* Every rank of MPI_COMM_WORLD joins; each must bring the same id, its own rank and the size. */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    int init = 0, wr = 0, ws = 0;
    MPI_Initialized(&init);
    if (!init) {
        emu::note("ncclCommInitRank: MPI is not initialised (the emulated NCCL runs over mpirun's ranks)");
        return ncclInvalidUsage;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &ws);
    ncclUniqueId root = id;
    MPI_Bcast(root.internal, sizeof root.internal, MPI_BYTE, 0, MPI_COMM_WORLD);
    int ok = rank == wr && nranks == ws && !memcmp(root.internal, id.internal, sizeof id.internal), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        emu::note("ncclCommInitRank: rank %d of %d (MPI: %d of %d): %s", rank, nranks, wr, ws,
                  ok ? "another rank's id, rank or size differs" : "its rank, size or id differs");
        return ncclInvalidArgument;
    }
    ncclComm_t c = (ncclComm_t)calloc(1, sizeof *c);
    MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    c->rank = rank, c->size = nranks;
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclInvalidArgument;
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Comm_free(&comm->comm);
    free(comm);
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclSystemError: return "unhandled system error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    }
    return "unknown result";
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    ncclResult_t r = check("ncclAllReduce", comm, type, send, recv, count);
    if (r != ncclSuccess || op != ncclSum || !emu::valid_stream(stream)) return r != ncclSuccess ? r : ncclInvalidArgument;
    size_t e = elem_size(type);
    return chunks(count, [&](size_t off, int n) {
        const char *s = (const char *)send + off * e;
        char *d = (char *)recv + off * e;
        return MPI_Allreduce(s == d ? MPI_IN_PLACE : s, d, n, mpi_type(type), MPI_SUM, comm->comm);
    });
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    ncclResult_t r = check("ncclReduce", comm, type, send, comm && comm->rank == root ? recv : nullptr, count);
    if (r != ncclSuccess || op != ncclSum || root < 0 || root >= comm->size || !emu::valid_stream(stream))
        return r != ncclSuccess ? r : ncclInvalidArgument;
    size_t e = elem_size(type);
    bool at_root = comm->rank == root;
    return chunks(count, [&](size_t off, int n) {
        const char *s = (const char *)send + off * e;
        char *d = at_root ? (char *)recv + off * e : nullptr;
        return MPI_Reduce(at_root && s == d ? MPI_IN_PLACE : s, d, n, mpi_type(type), MPI_SUM, root, comm->comm);
    });
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    ncclResult_t r = check("ncclBroadcast", comm, type, comm && comm->rank == root ? send : nullptr, recv, count);
    if (r != ncclSuccess || root < 0 || root >= comm->size || !emu::valid_stream(stream))
        return r != ncclSuccess ? r : ncclInvalidArgument;
    size_t e = elem_size(type);
    if (comm->rank == root && send != recv) memmove(recv, send, count * e);
    return chunks(count, [&](size_t off, int n) { return MPI_Bcast((char *)recv + off * e, n, mpi_type(type), root, comm->comm); });
}
