/* --device for `or1 logprobs` and `or1 grad`: the CPU path, or the CUDA backend when this
 * or1 was built with it (nvcc found at configure time; OR1_CUDA defined). */
#include "cli.h"
#include "cli_cuda.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

/* 0 for --device cpu (the default), 1 for cuda; -1 with a message otherwise. */
int cli_device(cli_args *a) {
    const char *d = cli_str(a, "device");
    if (!d || strcmp(d, "cpu") == 0) return 0;
    if (strcmp(d, "cuda") != 0) return or1_fail("%s: --device must be cpu or cuda, not \"%s\"", a->cmd, d);
#ifdef OR1_CUDA
    return 1;
#else
    return or1_fail("%s: --device cuda: this or1 was built without the CUDA backend (nvcc was not found)", a->cmd);
#endif
}

#ifdef OR1_CUDA
/* Context in bf16 unless OR1_CUDA_PREC=fp32, and the model uploaded to the GPU. */
int cli_cuda_open(const or1_model *m, or1_cuda **g, or1_cuda_model **dm) {
    const char *p = getenv("OR1_CUDA_PREC");
    *dm = NULL;
    *g = or1_cuda_new(p && strcmp(p, "fp32") == 0 ? OR1_CUDA_FP32 : OR1_CUDA_BF16);
    if (*g) *dm = or1_cuda_model_new(*g, m);
    if (*dm) return 0;
    or1_cuda_free(*g);
    *g = NULL;
    return or1_fail_ctx("--device cuda");
}

/* Frees the device model, then its context. */
void cli_cuda_close(or1_cuda *g, or1_cuda_model *dm) {
    or1_cuda_model_free(dm);
    or1_cuda_free(g);
}

/* or1_generate on the GPU for `or1 generate --device cuda`. */
int cli_cuda_generate(const or1_model *m, const or1_request *reqs, int n, const or1_engine_cfg *cfg,
                      or1_completion *out) {
    or1_cuda *g;
    or1_cuda_model *dm;
    if (cli_cuda_open(m, &g, &dm)) return -1;
    int rc = or1_cuda_generate(dm, reqs, n, cfg, out);
    cli_cuda_close(g, dm);
    return rc;
}
#endif
