/* The device name "cuda" for or1_backend_open (src/model/backend_open.c knows the CPU alone). */
#include "or1/core.h"
#include "or1/cuda.h"

#include <stdlib.h>
#include <string.h>

/* GPU 0 in the precision asked, or for -1 ("auto") bf16 unless OR1_CUDA_PREC=fp32. */
static or1_backend *open_cuda(int bf16) {
    if (bf16 < 0) {
        const char *env = getenv("OR1_CUDA_PREC");
        bf16 = !(env && strcmp(env, "fp32") == 0);
    }
    return or1_backend_cuda(bf16 ? OR1_CUDA_BF16 : OR1_CUDA_FP32);
}

/* Adds "cuda" to the registry (it has room: the CUDA backend is the only device registered). */
void or1_cuda_register(void) { (void)or1_backend_register("cuda", open_cuda); }
