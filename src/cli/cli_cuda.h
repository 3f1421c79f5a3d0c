/* The model commands' CUDA glue (src/cli/cmd_cuda.c), present only in CUDA builds. */
#ifndef OR1_CLI_CUDA_H
#define OR1_CLI_CUDA_H

/* Named in the model commands' signatures in every build; defined by the CUDA backend. */
struct or1_cuda_model;

#ifdef OR1_CUDA

#include "or1/cuda.h"

/* A bf16 context (fp32 with OR1_CUDA_PREC=fp32) and m uploaded to the GPU; -1 on error. */
int cli_cuda_open(const or1_model *m, or1_cuda **g, or1_cuda_model **dm);
void cli_cuda_close(or1_cuda *g, or1_cuda_model *dm);
/* or1_generate's contract on the GPU (or1_cuda_generate); -1 on error. */
int cli_cuda_generate(const or1_model *m, const or1_request *reqs, int n, const or1_engine_cfg *cfg,
                      or1_completion *out);

#endif
#endif
