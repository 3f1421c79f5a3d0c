/* The rollout's batch-invariant matmul (or1_matmul_rows) and its bf16 twin (or1_matmul_rows_bf16)
 * against OpenBLAS sgemm on the same shapes, in the same process: decode rows x the Qwen-shaped
 * model's projections and head. */
#include "or1/core.h"
#include "or1/kernels.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *name;
    int in, out;
} shape;

/* CPU seconds used by this process (all its threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per call of or1_matmul_rows (which = 0), sgemm (1) or or1_matmul_rows_bf16 over wb (2),
 * best of a 1 s loop; with cpu set, CPU-seconds of all threads divided by the thread count, which
 * time spent descheduled on a shared machine does not inflate. */
static double per_call(int which, int cpu, float *y, const float *x, const float *w, const or1_bf16 *wb, int B,
                       int in, int out) {
    double best = 1e30, t_end = or1_now() + 1.0;
    int reps = 0;
    do {
        double t0 = cpu ? cpu_now() : or1_now();
        if (which == 0)
            or1_matmul_rows(y, x, w, NULL, B, in, out);
        else if (which == 2)
            or1_matmul_rows_bf16(y, x, wb, NULL, B, in, out);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
        double dt = cpu ? (cpu_now() - t0) / or1_threads() : or1_now() - t0;
        best = dt < best ? dt : best;
        reps++;
    } while (or1_now() < t_end || reps < 3);
    return best;
}

/* One JSON line per (rows, shape): GFLOP/s of the kernels and their ratios to sgemm, by wall clock
 * and by CPU time (the `_cpu` figures: GFLOP per CPU-second times the thread count).
 * usage: bench_matmul [rows ...] [shape ...] (default 64 128 256, every shape) */
int main(int argc, char **argv) {
    static const shape shapes[] = {{"qkv", 896, 1152}, {"o", 896, 896},      {"gate_up", 896, 9728},
                                   {"down", 4864, 896}, {"head", 896, 151936}};
    int rows[16], n_rows = 0;
    const char *only[16];
    int n_only = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] >= '0' && argv[i][0] <= '9' && n_rows < 16) rows[n_rows++] = atoi(argv[i]);
        else if (n_only < 16) only[n_only++] = argv[i];
    }
    if (!n_rows) rows[0] = 64, rows[1] = 128, rows[2] = 256, n_rows = 3;
    for (int r = 0; r < n_rows; r++) {
        int B = rows[r];
        if (B < 1 || B > 4096) {
            fprintf(stderr, "bench_matmul: rows must be in [1, 4096]\n");
            return 2;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const shape *sh = &shapes[s];
            int wanted = !n_only;
            for (int i = 0; i < n_only; i++) wanted |= strcmp(only[i], sh->name) == 0;
            if (!wanted) continue;
            float *x = or1_alloc_floats((size_t)B * sh->in), *w = or1_alloc_floats((size_t)sh->out * sh->in);
            float *y = or1_alloc_floats((size_t)B * sh->out);
            for (size_t i = 0; i < (size_t)B * sh->in; i++) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
            for (size_t i = 0; i < (size_t)sh->out * sh->in; i++) w[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
            or1_bf16 *wb = or1_malloc((size_t)sh->out * sh->in * sizeof *wb);
            or1_bf16_from_f32(wb, w, (size_t)sh->out * sh->in);
            double flop = 2.0 * B * sh->in * (double)sh->out;
            double t[2][3]; /* [wall, cpu][rows, sgemm, rows_bf16] */
            for (int cpu = 0; cpu < 2; cpu++)
                for (int k = 0; k < 3; k++) t[cpu][k] = per_call(k, cpu, y, x, w, wb, B, sh->in, sh->out);
            printf("{\"rows\":%d,\"shape\":\"%s\",\"in\":%d,\"out\":%d,\"rows_gflops\":%.1f,\"sgemm_gflops\":%.1f,"
                   "\"ratio\":%.2f,\"bf16_gflops\":%.1f,\"bf16_ratio\":%.2f,\"rows_gflops_cpu\":%.1f,"
                   "\"sgemm_gflops_cpu\":%.1f,\"ratio_cpu\":%.2f,\"bf16_ratio_cpu\":%.2f,\"threads\":%d}\n",
                   B, sh->name, sh->in, sh->out, flop / t[0][0] / 1e9, flop / t[0][1] / 1e9, t[0][1] / t[0][0],
                   flop / t[0][2] / 1e9, t[0][1] / t[0][2], flop / t[1][0] / 1e9, flop / t[1][1] / 1e9,
                   t[1][1] / t[1][0], t[1][1] / t[1][2], or1_threads());
            fflush(stdout);
            free(x);
            free(w);
            free(wb);
            free(y);
        }
    }
    return 0;
}
