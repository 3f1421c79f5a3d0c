/* cuBLAS as a plain reference (tests only): column-major C = alpha op(A) op(B) + beta C with
 * cuBLAS's argument checks (transposes, sizes, leading dimensions), every operand inside one
 * live device allocation, bf16 operands read as their 16 bits widened (the caller rounded them
 * to nearest even), products summed in double, and C not read when beta is 0 (as cuBLAS). */
#include "cublas_v2.h"

#include "emu.h"

#include <stdlib.h>
#include <string.h>

struct cublasContext {
    cudaStream_t stream;
};

namespace {

/* Element (r, c) of a column-major operand of type t. */
inline double element(const void *p, cudaDataType_t t, size_t r, size_t c, int ld) {
    size_t i = r + c * (size_t)ld;
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Aborts unless a rows x cols operand with leading dimension ld lies in one device allocation. */
void operand(const char *call, const char *name, const void *p, size_t elem, int rows, int cols, int ld) {
    if (!rows || !cols) return;
    size_t span = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * elem;
    if (!emu::find(p, span))
        emu::fatal("%s: %s (%d x %d, leading dimension %d: %zu bytes from %p) is not inside one live device "
                   "allocation",
                   call, name, rows, cols, ld, span, p);
}

/* The GEMM both entry points share, after their checks. */
cublasStatus_t gemm(const char *call, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, float alpha, const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt,
                    int ldb, float beta, float *C, int ldc) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) || m < 0 || n < 0 ||
        k < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    if (lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!m || !n) return CUBLAS_STATUS_SUCCESS;
    size_t ae = at == CUDA_R_32F ? 4 : 2, be = bt == CUDA_R_32F ? 4 : 2;
    if (k && alpha != 0) {
        operand(call, "A", A, ae, ar, ac, lda);
        operand(call, "B", B, be, br, bc, ldb);
    }
    operand(call, "C", C, 4, m, n, ldc);
    uint64_t flops = 2ull * (uint64_t)m * n * k, read = (uint64_t)ar * ac * ae + (uint64_t)br * bc * be;
    emu::count_call(call, read + (beta != 0 ? 4ull * m * n : 0), 4ull * m * n, at == CUDA_R_32F ? 0 : flops,
                    at == CUDA_R_32F ? flops : 0);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            if (alpha != 0)
                for (int l = 0; l < k; l++) {
                    double a = ta == CUBLAS_OP_N ? element(A, at, i, l, lda) : element(A, at, l, i, lda);
                    double b = tb == CUBLAS_OP_N ? element(B, bt, l, j, ldb) : element(B, bt, j, l, ldb);
                    s += a * b;
                }
            float *c = &C[i + (size_t)j * ldc];
            *c = (float)(alpha * s + (beta != 0 ? (double)beta * *c : 0.0));
        }
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    *handle = (cublasHandle_t)calloc(1, sizeof(cublasContext));
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!emu::valid_stream(stream)) return CUBLAS_STATUS_INVALID_VALUE;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    return mode == CUBLAS_DEFAULT_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

const char *cublasGetStatusString(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc) {
    return gemm("cublasSgemm", handle, ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C, ldc);
}

/* Only what src/cuda asks for: bf16 or fp32 A and B, an fp32 C, fp32 compute. */
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType_t Atype, int lda, const void *B,
                            cudaDataType_t Btype, int ldb, const void *beta, void *C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    bool types = (Atype == CUDA_R_16BF || Atype == CUDA_R_32F) && Btype == Atype && Ctype == CUDA_R_32F;
    if (!types || compute != CUBLAS_COMPUTE_32F || algo != CUBLAS_GEMM_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm("cublasGemmEx", handle, ta, tb, m, n, k, *(const float *)alpha, A, Atype, lda, B, Btype, ldb,
                *(const float *)beta, (float *)C, ldc);
}
