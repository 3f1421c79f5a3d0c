/* Device names to backends: the one place that knows which backends exist. */
#include "or1/core.h"
#include "or1/cuda.h"

#include <stdlib.h>
#include <string.h>

/* "cpu" (or nothing) is the CPU backend, "cuda" GPU 0 in the precision OR1_CUDA_PREC asks. */
or1_backend *or1_backend_open(const char *device) {
    if (!device || !*device || strcmp(device, "cpu") == 0) return or1_backend_cpu();
    if (strcmp(device, "cuda") == 0) {
        const char *p = getenv("OR1_CUDA_PREC");
        return or1_backend_cuda(p && strcmp(p, "fp32") == 0 ? OR1_CUDA_FP32 : OR1_CUDA_BF16);
    }
    or1_fail("unknown device \"%s\" (cpu | cuda)", device);
    return NULL;
}
