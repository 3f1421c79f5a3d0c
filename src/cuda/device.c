/* Device names to backends: the one place that knows which backends exist. */
#include "or1/core.h"
#include "or1/cuda.h"

#include <stdlib.h>
#include <string.h>

/* Whether a precision name asks for bf16 matmuls: 1 bf16, 0 fp32, dflt for "auto" or nothing,
 * -1 (with or1_fail) for an unknown name. */
static int wants_bf16(const char *precision, int dflt) {
    if (!precision || !*precision || strcmp(precision, "auto") == 0) return dflt;
    if (strcmp(precision, "bf16") == 0) return 1;
    if (strcmp(precision, "fp32") == 0) return 0;
    return or1_fail("unknown precision \"%s\" (auto | fp32 | bf16)", precision);
}

/* "cpu" (or nothing) is the CPU backend, fp32 unless bf16 is asked; "cuda" GPU 0, bf16 unless
 * fp32 is asked (by precision, or for "auto" by OR1_CUDA_PREC=fp32). */
or1_backend *or1_backend_open(const char *device, const char *precision) {
    if (!device || !*device || strcmp(device, "cpu") == 0) {
        int b = wants_bf16(precision, 0);
        return b < 0 ? NULL : or1_backend_cpu_prec(b == 1);
    }
    if (strcmp(device, "cuda") == 0) {
        const char *env = getenv("OR1_CUDA_PREC");
        int b = wants_bf16(precision, !(env && strcmp(env, "fp32") == 0));
        return b < 0 ? NULL : or1_backend_cuda(b ? OR1_CUDA_BF16 : OR1_CUDA_FP32);
    }
    or1_fail("unknown device \"%s\" (cpu | cuda)", device);
    return NULL;
}
