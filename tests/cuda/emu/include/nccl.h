/* NCCL as the emulator provides it (tests only): the collectives src/cuda uses, run across the
 * ranks of a real mpirun over MPI on the emulated device memory (which is host memory). */
#ifndef OR1_EMU_NCCL_H
#define OR1_EMU_NCCL_H

#include "cuda_runtime.h"

typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128];
} ncclUniqueId;

enum ncclResult_t {
    ncclSuccess = 0,
    ncclSystemError = 2,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
};
enum ncclDataType_t { ncclChar = 0, ncclFloat = 7 };
enum ncclRedOp_t { ncclSum = 0 };

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char *ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream);

#endif
