/* What the emulator's own files share (tests only): the device-memory registry, reports, the
 * sticky "last error" of the runtime API and the settings read from the environment. */
#ifndef OR1_EMU_H
#define OR1_EMU_H

#include "cuda_runtime.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace emu {

/* One cudaMalloc'ed block. */
struct alloc {
    uintptr_t base;
    size_t bytes;
};

/* The live allocation holding [p, p + bytes) (an empty range may sit at the end), or nullptr. */
const alloc *find(const void *p, size_t bytes);
/* The live allocation holding p itself, or nullptr. */
const alloc *owner(const void *p);
/* The live allocation that starts at or below p, the nearest such, or nullptr (for reports). */
const alloc *below(const void *p);

/* Prints "or1 CUDA emulator: <message>" and what is running, then aborts: for misuse a GPU
 * would not report as an error (races, out-of-bounds accesses, deadlocks, host pointers). */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a note about a refused call that returns a CUDA error. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vnote(const char *fmt, va_list ap);
/* Where a program address is ("file:line (function)"), for reports; into buf. */
const char *describe_pc(const void *pc, char *buf, size_t cap);

/* Records err as the runtime's last error; returns it. */
cudaError_t set_error(cudaError_t err);

/* Settings (environment): OR1_EMU_ORDER=reverse runs threads and blocks in reverse order between
 * sync points; OR1_EMU_RACECHECK=0 turns the shared-memory race check off; OR1_EMU_WATCHDOG is
 * the seconds one launch may run (default 300); OR1_EMU_GPUS the devices shown (default 2). */
struct settings {
    bool reverse, racecheck;
    int watchdog_s, gpus;
};
const settings &config();

/* Counts a library call (cuBLAS) as a kernel of that name for the cost model's counters: the
 * bytes it must read and write once each, and its tensor-core and CUDA-core FLOPs. */
void count_call(const char *name, uint64_t read, uint64_t written, uint64_t tc_flops, uint64_t flops);

/* Whether a stream handle is the default one (nullptr) or one that was created and not destroyed. */
bool valid_stream(cudaStream_t s);

} // namespace emu

#endif
