/* The emulated CUDA runtime API (tests only): devices, streams, device memory with its registry,
 * copies and memsets with their direction and extent checks, errors. Streams run nothing
 * asynchronously: every call completes before it returns. */
#include "emu.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <set>

namespace emu {

namespace {

std::mutex lock;                 /* guards the registry and the stream set */
std::map<uintptr_t, alloc> live; /* by base address */
std::set<cudaStream_t> streams;
thread_local cudaError_t last = cudaSuccess;
thread_local int device = 0;

/* An integer setting from the environment, or dflt. */
int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

} // namespace

const settings &config() {
    static const settings s = [] {
        const char *order = getenv("OR1_EMU_ORDER");
        settings c;
        c.reverse = order && strcmp(order, "reverse") == 0;
        c.racecheck = env_int("OR1_EMU_RACECHECK", 1) != 0;
        c.watchdog_s = env_int("OR1_EMU_WATCHDOG", 300);
        c.gpus = env_int("OR1_EMU_GPUS", 2);
        return c;
    }();
    return s;
}

const alloc *below(const void *p) {
    std::lock_guard<std::mutex> g(lock);
    auto it = live.upper_bound((uintptr_t)p);
    return it == live.begin() ? nullptr : &(--it)->second;
}

const alloc *owner(const void *p) {
    const alloc *r = below(p);
    return r && (uintptr_t)p - r->base < r->bytes ? r : nullptr;
}

const alloc *find(const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    const alloc *r = below(p);
    if (!r || a - r->base > r->bytes || bytes > r->bytes - (a - r->base)) return nullptr;
    return r;
}

void vnote(const char *fmt, va_list ap) {
    fputs("or1 CUDA emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(fmt, ap);
    va_end(ap);
}

const char *describe_pc(const void *pc, char *buf, size_t cap) {
    Dl_info info;
    snprintf(buf, cap, "%p", pc);
    if (!pc || !dladdr(pc, &info) || !info.dli_fname) return buf;
    /* addr2line wants an offset in a position-independent file, the address otherwise */
    uintptr_t at = (uintptr_t)pc - 1;
    if (((const Elf64_Ehdr *)info.dli_fbase)->e_type == ET_DYN) at -= (uintptr_t)info.dli_fbase;
    char cmd[1024], fn[256], loc[512];
    snprintf(cmd, sizeof cmd, "addr2line -f -i -C -e '%s' 0x%lx 2>/dev/null", info.dli_fname, (unsigned long)at);
    FILE *f = popen(cmd, "r");
    if (!f) return buf;
    /* pairs of lines, innermost inlined frame first: the function, then file:line */
    size_t used = 0;
    while (used < cap && fgets(fn, sizeof fn, f) && fgets(loc, sizeof loc, f)) {
        fn[strcspn(fn, "\n")] = loc[strcspn(loc, "\n")] = 0;
        const char *slash = strrchr(loc, '/');
        used += (size_t)snprintf(buf + used, cap - used, "%s%s (%s)", used ? ", inlined in " : "",
                                 slash ? slash + 1 : loc, fn);
    }
    pclose(f);
    return buf;
}

cudaError_t set_error(cudaError_t err) {
    if (err != cudaSuccess) last = err;
    return err;
}

bool valid_stream(cudaStream_t s) {
    std::lock_guard<std::mutex> g(lock);
    return !s || streams.count(s);
}

} // namespace emu

using namespace emu;

cudaError_t cudaGetDeviceCount(int *count) {
    *count = config().gpus;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= config().gpus) return set_error(cudaErrorInvalidDevice);
    emu::device = d;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int d) {
    if (d < 0 || d >= config().gpus) return set_error(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "or1 emulated GPU %d (sm_80 limits)", d);
    prop->totalGlobalMem = (size_t)80 << 30;
    prop->major = 8;
    prop->minor = 0;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
    (void)flags;
    *stream = (cudaStream_t)malloc(1);
    std::lock_guard<std::mutex> g(emu::lock);
    emu::streams.insert(*stream);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    std::lock_guard<std::mutex> g(emu::lock);
    if (!stream || !emu::streams.erase(stream)) return set_error(cudaErrorInvalidResourceHandle);
    free(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    return valid_stream(stream) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

/* Fresh device memory is filled with 0xff bytes (NaN as floats and doubles), so a kernel that
 * reads what nothing wrote computes NaN, which the tests see. */
cudaError_t cudaMalloc(void **p, size_t bytes) {
    size_t rounded = (bytes + 255) / 256 * 256;
    void *m = rounded ? aligned_alloc(256, rounded) : nullptr;
    if (!m) {
        *p = nullptr;
        return set_error(cudaErrorMemoryAllocation);
    }
    memset(m, 0xff, rounded);
    std::lock_guard<std::mutex> g(emu::lock);
    emu::live[(uintptr_t)m] = alloc{(uintptr_t)m, bytes};
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> g(emu::lock);
    if (!emu::live.erase((uintptr_t)p)) {
        note("cudaFree(%p): not the start of a live device allocation", p);
        return set_error(cudaErrorInvalidDevicePointer);
    }
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream) {
    if (!valid_stream(stream)) return set_error(cudaErrorInvalidResourceHandle);
    if (!bytes) return cudaSuccess;
    if (!find(p, bytes)) {
        note("cudaMemset of %zu bytes at %p: not inside one live device allocation", bytes, p);
        return set_error(cudaErrorInvalidValue);
    }
    memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, nullptr); }

/* A copy whose kind must match where its ends are: device ends inside one live allocation,
 * host ends outside every one. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    static const char *const names[] = {"HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice"};
    if (!valid_stream(stream)) return set_error(cudaErrorInvalidResourceHandle);
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDeviceToDevice) return set_error(cudaErrorInvalidMemcpyDirection);
    if (!bytes) return cudaSuccess;
    bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const char *bad = nullptr;
    if (dst_dev && !find(dst, bytes)) bad = "the destination is not inside one live device allocation";
    else if (!dst_dev && owner(dst)) bad = "the destination is device memory";
    else if (src_dev && !find(src, bytes)) bad = "the source is not inside one live device allocation";
    else if (!src_dev && owner(src)) bad = "the source is device memory";
    if (bad) {
        note("cudaMemcpy%s of %zu bytes from %p to %p: %s", names[kind], bytes, src, dst, bad);
        return set_error(cudaErrorInvalidValue);
    }
    memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = emu::last;
    emu::last = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    }
    return "unrecognized error code";
}
