/* or1 CUDA backend: the kernels of or1/kernels.h on one GPU behind the backend seam of
 * or1/model.h (or1_backend_cuda), and or1_cuda_register, which makes the device name "cuda"
 * known to or1_backend_open. Matmuls go through cuBLAS: fp32 (no TF32, for testing against the
 * CPU) or bf16 operands with fp32 accumulation and fp32 outputs (OR1_CUDA_BF16). The kernels themselves and
 * the context they run in are declared for the CUDA sources and their tests alone
 * (src/cuda/cuda_kernels.h). */
#ifndef OR1_CUDA_H
#define OR1_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "or1/model.h"

typedef enum { OR1_CUDA_FP32, OR1_CUDA_BF16 } or1_cuda_prec;

/* GPUs the runtime sees; 0 when there is none or no driver (never fails). */
int or1_cuda_device_count(void);
/* Why the CUDA backend's library could not be loaded (src/cuda/load), after the first call
 * above; NULL when it was, or when the backend is built into the program or absent. */
const char *or1_cuda_load_error(void);

/* The backend of or1/model.h on GPU 0 (NULL with or1_fail when there is none, or when this
 * build has no CUDA: nvcc was not found when it was configured). */
or1_backend *or1_backend_cuda(or1_cuda_prec prec);
/* The GPU behind a backend made by or1_backend_cuda: name and memory, for reports. */
const char *or1_backend_cuda_device(or1_backend *be);

/* Registers the device name "cuda" with or1_backend_open (or1/model.h): GPU 0 (the process's
 * GPU under mpirun), bf16 matmuls for precision "auto" unless the environment sets
 * OR1_CUDA_PREC=fp32. The program calls it once before opening backends. */
void or1_cuda_register(void);

#ifdef __cplusplus
}
#endif

#endif
