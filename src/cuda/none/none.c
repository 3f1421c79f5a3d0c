/* The CUDA backend's entry points in a build without nvcc: no GPU, and a clear refusal. */
#include "or1/core.h"
#include "or1/cuda.h"

/* Nothing to load. */
const char *or1_cuda_load_error(void) { return NULL; }

/* No GPU is usable from this build. */
int or1_cuda_device_count(void) { return 0; }

/* Refuses, saying why. */
or1_backend *or1_backend_cuda(or1_cuda_prec prec) {
    (void)prec;
    or1_fail("cuda: this or1 was built without CUDA (nvcc was not found when it was configured)");
    return NULL;
}
