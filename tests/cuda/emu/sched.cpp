/* The emulator's kernel launches (tests only). A block runs at a time; each of its CUDA threads
 * is a user-level fiber that runs until it reaches a barrier, a warp shuffle or its end. Then:
 *   - a warp shuffle completes when every live lane of that warp has arrived (at one place);
 *   - __syncthreads releases when every live thread of the block has arrived (at one place);
 *   - when nothing can run and nothing can be released, the waiting threads and their places
 *     are reported as a deadlock (also when threads wait at different places).
 * Every load and store of the kernels' code reaches access() through the compiler's thread
 * sanitizer instrumentation (the __tsan_* entry points below; the rewritten sources are built
 * with -fsanitize=thread, and no sanitizer runtime is linked): an access outside the thread's
 * stack, the block's shared memory and the live device allocations is reported, and each
 * shared word remembers its last writer and reader per barrier epoch, so that two threads
 * touching it between the same two barriers (one of them writing) are reported with both
 * places. A watchdog ends a launch that runs past a bound. */
#include "emu.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

namespace emu {

namespace {

/* The CUDA thread a fiber runs: its indices, and its block's launch shape. */
struct thread_view {
    uint3 tid, bid;
    dim3 bdim, gdim;
};

enum { MAX_THREADS = 1024, WARP = 32, STACK = 128 << 10, DEFAULT_SMEM = 48 << 10, MAX_SMEM = 163 << 10 };
enum state { RUN, AT_BARRIER, AT_SHUFFLE, DONE };
/* Warp-wide instructions besides the shuffles (SHFL_IDX, SHFL_XOR) that wait as a shuffle does. */
enum { MMA = 2, LDMATRIX = 3 };

/* A place in the kernels' sources, and the return address of the call that reached it. */
struct site {
    const char *file;
    int line;
    const void *pc;
};

/* An asynchronous copy (cp.async) on its way to shared memory: read at its start, written at
 * the wait that completes its group. */
struct copy {
    char *dst;
    unsigned char data[16];
    int bytes, group;
    const void *pc;
};

/* One CUDA thread. */
struct fiber {
    void *sp;        /* saved stack pointer while switched out */
    char *stack;     /* its stack (STACK bytes above a guard page) */
    thread_view view;
    int linear;      /* threadIdx flattened, x fastest */
    state st;
    site at;         /* where it waits */
    unsigned mask;   /* a shuffle's operands and result */
    int kind, lane_arg, width;
    uint64_t value, result;
    const void *ops[4];        /* a tensor-core instruction's operands (on the fiber's stack) */
    std::vector<copy> copies;  /* cp.async copies not yet landed */
    int committed;             /* cp.async groups committed */
#if EMU_ASAN
    void *fake;
#endif
};

/* The last writer and reader of a 2-byte shared word (bf16 elements written by different threads
 * do not race), each with the epoch (barrier interval) of
 * the access and its place. reader == MANY: several threads read it in that epoch. */
struct word {
    int32_t writer, reader;
    uint32_t wepoch, repoch;
    const void *wpc, *rpc;
};
enum { MANY = -2 };

/* A __shared__ array of a kernel (made static by the rewrite), filled afresh per block. */
struct region {
    char *base;
    size_t bytes;
    uint64_t block;
    std::vector<word> shadow;
};

/* The launch that runs on this thread. */
struct launch_state {
    const char *name, *file;
    int line;
    dim3 grid, block;
    size_t smem;
    void (*thunk)(void *);
    void *ctx;
    uint3 bid;
    int n;                     /* threads per block */
    std::vector<fiber> fibers; /* per block, reused */
};

thread_local launch_state *L;      /* the running launch */
thread_local fiber *cur;           /* the running fiber (nullptr in the scheduler) */
thread_local void *sched_sp;       /* the scheduler's saved stack pointer */
thread_local char *host_lo, *host_hi; /* the launching thread's stack */
thread_local std::vector<char *> stacks;
thread_local std::vector<char> dyn; /* dynamic shared memory */
thread_local std::vector<word> dyn_shadow;
thread_local std::vector<region> statics;
thread_local uint32_t epoch;        /* barrier intervals, over all blocks and launches */
thread_local uint64_t block_serial; /* blocks run, over all launches */
thread_local const alloc *hit;      /* the allocation of the last device access */
#if EMU_ASAN
thread_local const void *host_stack_bottom;
thread_local size_t host_stack_size;
#endif

std::mutex attr_lock;
std::map<const void *, int> smem_limit; /* cudaFuncAttributeMaxDynamicSharedMemorySize */

/* The watchdog's view of the running launch (any thread's). */
std::atomic<long> watch_start{0};
std::atomic<const char *> watch_name{nullptr};

/* ---- Fibers ------------------------------------------------------------------------------ */

#if defined(__x86_64__)
/* Saves the callee-saved registers on the current stack, stores its pointer in *save, switches
 * to the stack to and restores its registers (System V x86-64). */
extern "C" void or1_emu_switch(void **save, void *to);
asm(R"(
    .text
    .globl or1_emu_switch
    .type or1_emu_switch, @function
or1_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size or1_emu_switch, .-or1_emu_switch
)");
#else
#error "the CUDA emulator's fibers are written for x86-64"
#endif

void fiber_main();

/* Stack i (made on first use): STACK bytes above a PROT_NONE guard page, so an overflow faults. */
char *stack_of(int i) {
    while ((int)stacks.size() <= i) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        char *m = (char *)mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                               -1, 0);
        if (m == MAP_FAILED) fatal("cannot map a fiber stack");
        mprotect(m, page, PROT_NONE);
        stacks.push_back(m + page);
    }
    return stacks[i];
}

/* Makes f start at fiber_main on its stack: the frame or1_emu_switch pops (six registers, then
 * the return address), aligned so that fiber_main starts as if called. */
void fiber_init(fiber *f) {
    uintptr_t top = ((uintptr_t)f->stack + STACK) & ~(uintptr_t)15;
    void **sp = (void **)(top - 16);
    sp[0] = (void *)&fiber_main;
    sp -= 6;
    memset(sp, 0, 6 * sizeof *sp);
    f->sp = sp;
#if EMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(f->stack, STACK);
    f->fake = nullptr;
#endif
}

/* Scheduler -> fiber f, until it waits or ends. */
void resume(fiber *f) {
    cur = f;
#if EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f->stack, STACK);
    or1_emu_switch(&sched_sp, f->sp);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    or1_emu_switch(&sched_sp, f->sp);
#endif
    cur = nullptr;
}

/* Fiber -> scheduler (for good when the fiber has ended). */
void yield(fiber *f) {
#if EMU_ASAN
    __sanitizer_start_switch_fiber(f->st == DONE ? nullptr : &f->fake, host_stack_bottom, host_stack_size);
    or1_emu_switch(&f->sp, sched_sp);
    __sanitizer_finish_switch_fiber(f->fake, nullptr, nullptr);
#else
    or1_emu_switch(&f->sp, sched_sp);
#endif
}

/* A fiber's life: the kernel once, then back to the scheduler, never to return. */
void fiber_main() {
    fiber *f = cur;
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &host_stack_bottom, &host_stack_size);
#endif
    L->thunk(L->ctx);
    f->st = DONE;
    yield(f);
    __builtin_trap();
}

/* ---- Reports ----------------------------------------------------------------------------- */

/* "(x,y,z)" of a thread and its warp and lane. */
const char *who(const fiber *f, char *buf, size_t cap) {
    snprintf(buf, cap, "thread (%u,%u,%u) [warp %d lane %d]", f->view.tid.x, f->view.tid.y, f->view.tid.z,
             f->linear / WARP, f->linear % WARP);
    return buf;
}

/* "kernel k (launched at file:line) block (x,y,z)". */
void print_context() {
    if (!L) return;
    fprintf(stderr, "  in kernel %s (launched at %s:%d), grid (%u,%u,%u) x block (%u,%u,%u), block (%u,%u,%u)\n", L->name,
            L->file, L->line, L->grid.x, L->grid.y, L->grid.z, L->block.x, L->block.y, L->block.z, L->bid.x, L->bid.y,
            L->bid.z);
}

const char *what_waits(const fiber *f) {
    return f->st == AT_BARRIER ? "__syncthreads" : f->kind == MMA ? "mma.sync" : f->kind == LDMATRIX ? "ldmatrix" : "a warp shuffle";
}

/* Whether a and b wait the same way at the same place. */
bool same_wait(const fiber *a, const fiber *b) {
    return a->st == b->st && a->at.file == b->at.file && a->at.line == b->at.line;
}

/* Reports every waiting thread and its place, grouped by place (the threads of a group as
 * ranges of flattened thread indices), then aborts. */
[[noreturn]] void deadlock(const char *why) {
    fprintf(stderr, "or1 CUDA emulator: %s\n", why);
    print_context();
    std::vector<bool> told((size_t)L->n);
    for (int i = 0; i < L->n; i++) {
        const fiber *g = &L->fibers[i];
        if (g->st == DONE || told[i]) continue;
        char pc[512], w[96];
        fprintf(stderr, "  at %s, %s:%d [%s], the first %s: threads", what_waits(g), g->at.file, g->at.line,
                describe_pc(g->at.pc, pc, sizeof pc), who(g, w, sizeof w));
        for (int j = i; j < L->n;) {
            if (told[j] || L->fibers[j].st == DONE || !same_wait(&L->fibers[j], g)) {
                j++;
                continue;
            }
            int k = j;
            while (k + 1 < L->n && !told[k + 1] && L->fibers[k + 1].st != DONE && same_wait(&L->fibers[k + 1], g)) k++;
            for (int t = j; t <= k; t++) told[t] = true;
            fprintf(stderr, k > j ? " %d-%d" : " %d", j, k);
            j = k + 1;
        }
        fputc('\n', stderr);
    }
    abort();
}

/* ---- Counters ------------------------------------------------------------------------------ */

/* What a kernel did over all its launches, for the cost model (OR1_EMU_COUNTERS names a file
 * that gets one JSON line per kernel at exit): global bytes the threads read and wrote (each
 * load and store as issued, so a value read by two blocks counts twice), tensor-core
 * instructions, shared-memory wavefronts of ldmatrix (8 rows a wavefront when their 16-byte
 * pieces fall in distinct bank groups, more when they collide), and the CUDA-core FLOPs the
 * kernels declare (emu::count_flops). */
struct counts {
    uint64_t launches, blocks, threads, read, written, mma, ldmatrix, wavefronts, ideal_wavefronts, cp_bytes, flops;
    uint64_t dram_read, dram_written; /* distinct 32-byte sectors per launch, summed over launches */
    uint64_t tc_flops;                /* tensor-core FLOPs: 4,096 an mma, and library calls' */
};

/* The 32-byte sectors of global memory the running launch has read and written (with counters
 * on): what it must move through DRAM at least, each sector once however often it is read. */
thread_local std::unordered_set<uintptr_t> sectors_read, sectors_written;
bool counting = getenv("OR1_EMU_COUNTERS") && *getenv("OR1_EMU_COUNTERS");

std::mutex count_lock;
std::map<std::string, counts> *all_counts;
thread_local counts *K; /* the running launch's */

/* Writes the counters as JSON lines to OR1_EMU_COUNTERS (appended: several programs may run). */
void dump_counts() {
    const char *path = getenv("OR1_EMU_COUNTERS");
    if (!path || !*path || !all_counts) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    for (auto &[name, c] : *all_counts)
        fprintf(f,
                "{\"kernel\": \"%s\", \"launches\": %llu, \"blocks\": %llu, \"threads\": %llu, \"read\": %llu, "
                "\"written\": %llu, \"mma\": %llu, \"ldmatrix\": %llu, \"wavefronts\": %llu, "
                "\"ideal_wavefronts\": %llu, \"cp_bytes\": %llu, \"flops\": %llu, \"dram_read\": %llu, "
                "\"dram_written\": %llu, \"tc_flops\": %llu}\n",
                name.c_str(), (unsigned long long)c.launches, (unsigned long long)c.blocks,
                (unsigned long long)c.threads, (unsigned long long)c.read, (unsigned long long)c.written,
                (unsigned long long)c.mma, (unsigned long long)c.ldmatrix, (unsigned long long)c.wavefronts,
                (unsigned long long)c.ideal_wavefronts, (unsigned long long)c.cp_bytes, (unsigned long long)c.flops,
                (unsigned long long)c.dram_read, (unsigned long long)c.dram_written, (unsigned long long)c.tc_flops);
    fclose(f);
}

/* The counters of kernel name (made on first use). */
counts *counts_of(const char *name) {
    std::lock_guard<std::mutex> lk(count_lock);
    if (!all_counts) {
        all_counts = new std::map<std::string, counts>();
        atexit(dump_counts);
    }
    return &(*all_counts)[name];
}

/* A read of n bytes of shared memory at p by thread by (a warp-wide instruction's lane),
 * checked as that thread's own read would be; false if p is not in shared memory. */
bool shared_read_by(fiber *by, const void *p, size_t n, const void *pc);

/* ---- Scheduling ---------------------------------------------------------------------------- */

/* bf16 bits as a float (exact). */
float bf(uint32_t bits16) {
    uint32_t u = bits16 << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element (r, c) of a 16 x 16 A fragment spread over a warp's registers (the PTX layout). */
float frag_a(fiber *lanes, int r, int c) {
    int g = r % 8, t = c % 8 / 2, reg = (r >= 8) + 2 * (c >= 8);
    uint32_t v = static_cast<const uint32_t *>(lanes[g * 4 + t].ops[1])[reg];
    return bf(c % 2 ? v >> 16 : v & 0xffffu);
}

/* Element (k, n) of a 16 x 8 B fragment. */
float frag_b(fiber *lanes, int k, int n) {
    int t = k % 8 / 2, reg = k >= 8;
    uint32_t v = static_cast<const uint32_t *>(lanes[n * 4 + t].ops[2])[reg];
    return bf(k % 2 ? v >> 16 : v & 0xffffu);
}

/* Completes a warp's mma.m16n8k16: every element of D is C's plus the 16 exact products, summed
 * in double in order of k, rounded once to fp32 (the emulator's model of the tensor core, whose
 * internal rounding NVIDIA does not specify). All 32 lanes must take part. */
void complete_mma(fiber *lanes) {
    float d[32][4];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            int lane = (r % 8) * 4 + n / 2, i = (r >= 8) * 2 + n % 2;
            double acc = static_cast<const float *>(lanes[lane].ops[3])[i];
            for (int k = 0; k < 16; k++) acc += (double)frag_a(lanes, r, k) * frag_b(lanes, k, n);
            d[lane][i] = (float)acc;
        }
    for (int l = 0; l < WARP; l++) memcpy(const_cast<void *>(lanes[l].ops[0]), d[l], sizeof d[l]);
    K->mma++;
    K->tc_flops += 2 * 16 * 8 * 16;
}

/* Completes a warp's ldmatrix of n matrices: lane 8i + j gives row j of matrix i (16 bytes in
 * shared memory, 16-byte aligned); each lane gets two bf16 of each matrix. Counts shared-memory
 * wavefronts: the 8 rows of a matrix are served at once when their 16-byte pieces lie in
 * distinct groups of four banks. */
void complete_ldmatrix(fiber *lanes, int n, bool trans) {
    uint16_t m[4][8][8];
    for (int i = 0; i < n; i++) {
        int used[8] = {}, worst = 0;
        for (int j = 0; j < 8; j++) {
            fiber &f = lanes[8 * i + j];
            const void *row = f.ops[1];
            char w[96], pc[512];
            if ((uintptr_t)row % 16)
                fatal("ldmatrix at %s:%d: %s gives row address %p, not 16-byte aligned [%s]", f.at.file, f.at.line,
                      who(&f, w, sizeof w), row, describe_pc(f.at.pc, pc, sizeof pc));
            if (!shared_read_by(&f, row, 16, f.at.pc))
                fatal("ldmatrix at %s:%d: %s gives row address %p, outside the block's shared memory [%s]", f.at.file,
                      f.at.line, who(&f, w, sizeof w), row, describe_pc(f.at.pc, pc, sizeof pc));
            memcpy(m[i][j], row, 16);
            int bank = (int)((uintptr_t)row / 16 % 8);
            worst = ++used[bank] > worst ? used[bank] : worst;
        }
        K->wavefronts += (uint64_t)worst;
        K->ideal_wavefronts++;
    }
    for (int l = 0; l < WARP; l++) {
        uint32_t *r = static_cast<uint32_t *>(const_cast<void *>(lanes[l].ops[0]));
        int a = l / 4, b = 2 * (l % 4);
        for (int i = 0; i < n; i++)
            r[i] = trans ? (uint32_t)m[i][b][a] | (uint32_t)m[i][b + 1][a] << 16
                         : (uint32_t)m[i][a][b] | (uint32_t)m[i][a][b + 1] << 16;
    }
    K->ldmatrix++;
}

/* Completes the shuffles of warps whose live lanes all wait at one; reports lanes that wait at
 * different places or read an exited lane. Returns whether any warp went on. */
bool release_shuffles() {
    bool any = false;
    for (int w0 = 0; w0 < L->n; w0 += WARP) {
        fiber *lanes = &L->fibers[w0];
        int nl = L->n - w0 < WARP ? L->n - w0 : WARP, live = 0, waiting = 0;
        for (int l = 0; l < nl; l++) {
            live += lanes[l].st != DONE;
            waiting += lanes[l].st == AT_SHUFFLE;
        }
        if (!live || waiting != live) continue;
        const fiber *first = nullptr;
        for (int l = 0; l < nl; l++) {
            fiber &f = lanes[l];
            if (f.st == DONE) continue;
            if (!first) first = &f;
            if (f.at.file != first->at.file || f.at.line != first->at.line || f.kind != first->kind ||
                f.width != first->width)
                deadlock("the lanes of a warp wait at different shuffles");
        }
        if (first->kind == MMA || first->kind == LDMATRIX) {
            if (nl != WARP || live != WARP)
                deadlock("a warp-wide tensor-core instruction (mma.sync / ldmatrix) without all 32 lanes");
            if (first->kind == MMA) complete_mma(lanes);
            else complete_ldmatrix(lanes, first->width, first->lane_arg);
            for (int l = 0; l < nl; l++) lanes[l].st = RUN;
            any = true;
            continue;
        }
        for (int l = 0; l < nl; l++) {
            fiber &f = lanes[l];
            if (f.st == DONE) continue;
            int seg = l & ~(f.width - 1);
            int src = f.kind == SHFL_XOR ? l ^ f.lane_arg : seg + (f.lane_arg & (f.width - 1));
            if (src < seg || src >= seg + f.width) src = l; /* xor past the segment: own value */
            if (src >= nl || lanes[src].st == DONE || !(f.mask >> src & 1u) || !(f.mask >> l & 1u)) {
                char w[96], pc[512];
                fprintf(stderr, "or1 CUDA emulator: %s reads lane %d, which %s, at %s:%d [%s]\n", who(&f, w, sizeof w),
                        src, src >= nl || lanes[src].st == DONE ? "has exited or does not exist" : "is not in the mask",
                        f.at.file, f.at.line, describe_pc(f.at.pc, pc, sizeof pc));
                print_context();
                abort();
            }
            f.result = lanes[src].value;
        }
        for (int l = 0; l < nl; l++)
            if (lanes[l].st == AT_SHUFFLE) lanes[l].st = RUN;
        any = true;
    }
    return any;
}

/* Releases the block's barrier when every live thread waits at it (at one place). */
bool release_barrier() {
    const fiber *first = nullptr;
    for (int i = 0; i < L->n; i++) {
        fiber &f = L->fibers[i];
        if (f.st == DONE) continue;
        if (f.st != AT_BARRIER) return false;
        if (!first) first = &f;
        else if (f.at.file != first->at.file || f.at.line != first->at.line)
            deadlock("the threads of a block wait at different __syncthreads");
    }
    if (!first) return false;
    for (int i = 0; i < L->n; i++)
        if (L->fibers[i].st == AT_BARRIER) L->fibers[i].st = RUN;
    epoch++;
    return true;
}

/* Runs one block: every runnable thread in turn (in reverse with OR1_EMU_ORDER=reverse) until it
 * waits or ends, then the shuffles and the barrier that can complete, until all have ended. */
void run_block() {
    block_serial++;
    epoch++;
    if (L->smem) memset(dyn.data(), 0xff, L->smem);
    bool rev = config().reverse;
    for (int i = 0; i < L->n; i++) {
        fiber &f = L->fibers[i];
        f.st = RUN;
        f.copies.clear();
        f.committed = 0;
        f.stack = stack_of(i);
        f.view.bid = L->bid;
        fiber_init(&f);
    }
    for (int live = L->n; live;) {
        for (int k = 0; k < L->n; k++) {
            fiber &f = L->fibers[rev ? L->n - 1 - k : k];
            if (f.st != RUN) continue;
            resume(&f);
            live -= f.st == DONE;
        }
        if (!live) break;
        bool shuffled = release_shuffles();
        if (!release_barrier() && !shuffled) deadlock("deadlock: no thread can go on");
    }
}

/* Seconds on a monotonic clock. */
long now_s() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec;
}

/* Ends the process when a launch runs past the bound (checked once a second). */
void watchdog() {
    for (;;) {
        sleep(1);
        long s = watch_start.load();
        const char *name = watch_name.load();
        if (s && name && now_s() - s > config().watchdog_s) {
            fprintf(stderr, "or1 CUDA emulator: watchdog: kernel %s ran past %d s (OR1_EMU_WATCHDOG)\n", name,
                    config().watchdog_s);
            abort();
        }
    }
}

/* The launching thread's stack bounds (kernels may read their arguments' copies there). */
void host_stack() {
    if (host_lo) return;
    pthread_attr_t a;
    void *lo;
    size_t size;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    host_lo = (char *)lo;
    host_hi = host_lo + size;
}

/* Why a launch configuration is refused, as sm_80 refuses it, or nullptr. */
const char *refused(const void *kernel, dim3 g, dim3 b, size_t smem, cudaError_t *err) {
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    *err = cudaErrorInvalidConfiguration;
    if (!threads || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > MAX_THREADS)
        return "block dimensions over sm_80's limits (1024 x 1024 x 64, 1024 threads)";
    if (!g.x || !g.y || !g.z || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        return "grid dimensions outside sm_80's limits (2^31-1 x 65535 x 65535)";
    int limit = DEFAULT_SMEM;
    {
        std::lock_guard<std::mutex> lk(attr_lock);
        auto it = smem_limit.find(kernel);
        if (it != smem_limit.end()) limit = it->second;
    }
    *err = cudaErrorInvalidValue;
    if (smem > (size_t)limit) return "dynamic shared memory over the kernel's limit (48 KiB unless raised by cudaFuncSetAttribute)";
    return nullptr;
}

/* ---- Memory accesses --------------------------------------------------------------------- */

/* Reports a shared-memory race on word w and aborts. */
[[noreturn]] void race(const char *where, size_t off, bool write, const void *pc, int other, const void *opc,
                       bool other_wrote) {
    char w1[96], w2[96], p1[512], p2[512];
    const fiber *o = other >= 0 ? &L->fibers[other] : nullptr;
    fprintf(stderr,
            "or1 CUDA emulator: shared-memory race on %s, byte %zu, between two barriers:\n"
            "  %s %s it at %s\n  %s %s it at %s\n",
            where, off, who(cur, w1, sizeof w1), write ? "writes" : "reads", describe_pc(pc, p1, sizeof p1),
            o ? who(o, w2, sizeof w2) : "other threads", other_wrote ? "wrote" : "read", describe_pc(opc, p2, sizeof p2));
    print_context();
    abort();
}

/* The race check of one access of n bytes at byte off of a shared array with shadow s. */
void shared_access(std::vector<word> &s, const char *where, size_t off, size_t n, bool write, const void *pc) {
    if (!config().racecheck) return;
    int t = cur->linear;
    for (size_t i = off / 2; i <= (off + n - 1) / 2; i++) {
        word &w = s[i];
        if (w.wepoch == epoch && w.writer != t) race(where, off, write, pc, w.writer, w.wpc, true);
        if (write) {
            if (w.repoch == epoch && w.reader != t) race(where, off, write, pc, w.reader, w.rpc, false);
            w.writer = t, w.wepoch = epoch, w.wpc = pc;
        } else if (w.repoch != epoch) {
            w.reader = t, w.repoch = epoch, w.rpc = pc;
        } else if (w.reader != t) {
            w.reader = MANY;
        }
    }
}

/* Reports an access outside what a kernel thread may touch and aborts. */
[[noreturn]] void stray(uintptr_t a, size_t n, bool write, const void *pc, const char *why) {
    char w[96], p[512];
    fprintf(stderr, "or1 CUDA emulator: %s %s %zu bytes at %p: %s\n  at %s\n", who(cur, w, sizeof w),
            write ? "writes" : "reads", n, (void *)a, why, describe_pc(pc, p, sizeof p));
    print_context();
    abort();
}

/* Every load and store of kernel code: the fiber's own stack and the launching thread's stack
 * pass; shared memory goes to the race check; the rest must lie inside a live device allocation. */
/* Where n bytes at p lie in the block's shared memory: the array's shadow, its name for reports
 * and the offset. */
struct spot {
    std::vector<word> *shadow;
    const char *where;
    size_t off;
};
enum place { NOT_SHARED, IN_SHARED, PAST_SHARED };

/* The one lookup of shared memory: the dynamic block, then each __shared__ array. PAST_SHARED
 * (with *past saying which) when the bytes start inside one and run past its end. */
place shared_place(const void *p, size_t n, spot *s, const char **past) {
    uintptr_t a = (uintptr_t)p, d = (uintptr_t)dyn.data();
    if (a - d < dyn.size()) {
        *s = spot{&dyn_shadow, "dynamic shared memory", a - d};
        *past = "past the end of the launch's dynamic shared memory";
        return a - d + n > L->smem ? PAST_SHARED : IN_SHARED;
    }
    for (region &r : statics)
        if (a - (uintptr_t)r.base < r.bytes) {
            *s = spot{&r.shadow, "a __shared__ array", a - (uintptr_t)r.base};
            *past = "past the end of a __shared__ array";
            return a - (uintptr_t)r.base + n > r.bytes ? PAST_SHARED : IN_SHARED;
        }
    return NOT_SHARED;
}

/* The spot of a cp.async destination (16 bytes wholly in shared memory), else a report. */
spot copy_target(void *smem, const void *pc) {
    spot s;
    const char *past;
    if (shared_place(smem, 16, &s, &past) != IN_SHARED)
        stray((uintptr_t)smem, 16, true, pc, "cp.async destination outside shared memory");
    return s;
}

inline void access(const void *p, size_t n, bool write, const void *pc) {
    fiber *f = cur;
    if (!f) return; /* host code of the rewritten sources */
    uintptr_t a = (uintptr_t)p;
    if (a - (uintptr_t)f->stack < STACK || (a >= (uintptr_t)host_lo && a < (uintptr_t)host_hi)) return;
    spot s;
    const char *past;
    switch (shared_place(p, n, &s, &past)) {
    case PAST_SHARED: stray(a, n, write, pc, past);
    case IN_SHARED: shared_access(*s.shadow, s.where, s.off, n, write, pc); return;
    case NOT_SHARED: break;
    }
    (write ? K->written : K->read) += n;
    if (counting)
        for (uintptr_t sec = a / 32; sec <= (a + n - 1) / 32; sec++) (write ? sectors_written : sectors_read).insert(sec);
    if (hit && a - hit->base < hit->bytes && n <= hit->bytes - (a - hit->base)) return;
    hit = find(p, n);
    if (hit) return;
    char why[160];
    const alloc *r = below(p);
    if (r && a - r->base < r->bytes + 4096)
        snprintf(why, sizeof why, "%zu bytes past the start of a %zu-byte device allocation (%p)", (size_t)(a - r->base),
                 r->bytes, (void *)r->base);
    else
        snprintf(why, sizeof why, "outside every live device allocation");
    stray(a, n, write, pc, why);
}

bool shared_read_by(fiber *by, const void *p, size_t n, const void *pc) {
    spot s;
    const char *past;
    if (shared_place(p, n, &s, &past) != IN_SHARED) return false;
    fiber *was = cur;
    cur = by;
    shared_access(*s.shadow, s.where, s.off, n, false, pc);
    cur = was;
    return true;
}

/* Lands the copies of the running thread's groups before group `upto` (in issue order), each
 * a write by this thread now. */
void land_copies(int upto) {
    fiber *f = cur;
    size_t keep = 0;
    for (size_t i = 0; i < f->copies.size(); i++) {
        copy &c = f->copies[i];
        if (c.group >= upto) {
            f->copies[keep++] = c;
            continue;
        }
        spot t = copy_target(c.dst, c.pc);
        shared_access(*t.shadow, t.where, t.off, 16, true, c.pc);
        memcpy(c.dst, c.data, 16);
    }
    f->copies.resize(keep);
}

} // namespace

/* ---- The entry points the rewritten sources call -------------------------------------- */

/* A warp-wide tensor-core instruction: the lane waits as at a shuffle, with its operands. */
static void warp_op(const char *file, int line, int kind, const void *o0, const void *o1, const void *o2,
                    const void *o3, int width, int arg, const void *pc) {
    fiber *f = cur;
    if (!f) fatal("a tensor-core instruction outside a kernel (%s:%d)", file, line);
    f->st = AT_SHUFFLE;
    f->at = site{file, line, pc};
    f->kind = kind, f->width = width, f->lane_arg = arg, f->mask = 0xffffffffu;
    f->ops[0] = o0, f->ops[1] = o1, f->ops[2] = o2, f->ops[3] = o3;
    yield(f);
}

void mma_m16n8k16(const char *file, int line, float *d, const uint32_t *a, const uint32_t *b, const float *c) {
    warp_op(file, line, MMA, d, a, b, c, 1, 0, __builtin_return_address(0));
}

void ldmatrix(const char *file, int line, uint32_t *r, int n, bool trans, const void *row) {
    warp_op(file, line, LDMATRIX, r, row, nullptr, nullptr, n, trans, __builtin_return_address(0));
}

void cp_async(const char *file, int line, void *smem, const void *gmem, int bytes, int src_bytes) {
    fiber *f = cur;
    const void *pc = __builtin_return_address(0);
    if (!f) fatal("cp.async outside a kernel (%s:%d)", file, line);
    if (bytes != 16 || (src_bytes != 0 && src_bytes != bytes) || (uintptr_t)smem % 16 || (uintptr_t)gmem % 16)
        fatal("cp.async at %s:%d: %d of %d bytes from %p to %p (16-byte aligned, 0 or 16 read)", file, line,
              src_bytes, bytes, gmem, smem);
    copy_target(smem, pc);
    copy c{(char *)smem, {}, bytes, f->committed, pc};
    if (src_bytes) {
        access(gmem, (size_t)src_bytes, false, pc);
        memcpy(c.data, gmem, (size_t)src_bytes);
        K->cp_bytes += (uint64_t)src_bytes;
    }
    f->copies.push_back(c);
}

void cp_async_commit() {
    if (cur) cur->committed++;
}

void cp_async_wait(const char *file, int line, int n) {
    if (!cur) fatal("cp.async.wait_group outside a kernel (%s:%d)", file, line);
    land_copies(cur->committed - n);
}

void count_call(const char *name, uint64_t read, uint64_t written, uint64_t tc_flops, uint64_t flops) {
    counts *c = counts_of(name);
    c->launches++;
    c->read += read, c->dram_read += read, c->written += written, c->dram_written += written;
    c->tc_flops += tc_flops, c->flops += flops;
}

void count_flops(uint64_t n) {
    if (K) K->flops += n;
}

cudaError_t func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > MAX_SMEM) {
        note("cudaFuncSetAttribute: attribute %d = %d is not supported (sm_80: at most %d bytes)", (int)attr, value,
             (int)MAX_SMEM);
        return set_error(cudaErrorInvalidValue);
    }
    std::lock_guard<std::mutex> lk(attr_lock);
    smem_limit[kernel] = value;
    return cudaSuccess;
}

void launch(const char *name, const char *file, int line, const void *kernel, dim3 grid, dim3 block, size_t smem,
            cudaStream_t stream, void (*thunk)(void *), void *ctx, const void *const *ptrs, int n_ptrs) {
    if (cur) fatal("kernel %s launched from inside a kernel (dynamic parallelism is not emulated)", name);
    cudaError_t err;
    if (const char *why = refused(kernel, grid, block, smem, &err)) {
        note("launch of %s at %s:%d refused: %s", name, file, line, why);
        set_error(err);
        return;
    }
    if (!valid_stream(stream)) {
        note("launch of %s at %s:%d on a stream that does not exist", name, file, line);
        set_error(cudaErrorInvalidResourceHandle);
        return;
    }
    for (int i = 0; i < n_ptrs; i++)
        if (ptrs[i] && !find(ptrs[i], 0))
            fatal("kernel %s (launched at %s:%d): pointer argument %d (%p) is not in a live device allocation", name,
                  file, line, i + 1, ptrs[i]);
    static std::once_flag dog;
    std::call_once(dog, [] { std::thread(watchdog).detach(); });
    host_stack();
    launch_state s;
    s.name = name, s.file = file, s.line = line, s.grid = grid, s.block = block, s.smem = smem;
    s.thunk = thunk, s.ctx = ctx;
    s.n = (int)(block.x * block.y * block.z);
    s.fibers.resize((size_t)s.n);
    for (int i = 0; i < s.n; i++) {
        fiber &f = s.fibers[(size_t)i];
        f.linear = i;
        f.view.tid = uint3{(unsigned)i % block.x, (unsigned)i / block.x % block.y, (unsigned)i / (block.x * block.y)};
        f.view.bdim = block, f.view.gdim = grid;
    }
    if (dyn.size() < smem) dyn.resize(smem), dyn_shadow.assign((smem + 1) / 2, word{-1, -1, 0, 0, nullptr, nullptr});
    L = &s;
    K = counts_of(name);
    K->launches++;
    K->blocks += (uint64_t)grid.x * grid.y * grid.z;
    K->threads += (uint64_t)grid.x * grid.y * grid.z * (uint64_t)s.n;
    watch_name = name;
    watch_start = now_s();
    unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
    for (unsigned long long k = 0; k < nb; k++) {
        unsigned long long b = config().reverse ? nb - 1 - k : k;
        s.bid = uint3{(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / ((unsigned long long)grid.x * grid.y))};
        run_block();
    }
    watch_start = 0;
    K->dram_read += 32 * (uint64_t)sectors_read.size();
    K->dram_written += 32 * (uint64_t)sectors_written.size();
    sectors_read.clear(), sectors_written.clear();
    L = nullptr;
    hit = nullptr;
}

uint3 thread_idx() { return cur->view.tid; }
uint3 block_idx() { return cur->view.bid; }
dim3 block_dim() { return cur->view.bdim; }
dim3 grid_dim() { return cur->view.gdim; }

void syncthreads(const char *file, int line) {
    fiber *f = cur;
    if (!f) fatal("__syncthreads outside a kernel (%s:%d)", file, line);
    f->st = AT_BARRIER;
    f->at = site{file, line, __builtin_return_address(0)};
    yield(f);
}

uint64_t shuffle(const char *file, int line, unsigned mask, uint64_t bits, int kind, int lane_arg, int width) {
    fiber *f = cur;
    if (!f) fatal("warp shuffle outside a kernel (%s:%d)", file, line);
    if (width < 1 || width > WARP || (width & (width - 1))) fatal("shuffle width %d at %s:%d is not a power of two up to 32", width, file, line);
    f->st = AT_SHUFFLE;
    f->at = site{file, line, __builtin_return_address(0)};
    f->mask = mask, f->value = bits, f->kind = kind, f->lane_arg = lane_arg, f->width = width;
    yield(f);
    return f->result;
}

void *dynamic_shared() { return dyn.data(); }

/* The first thread of a block to declare a __shared__ array fills it with NaN bytes. */
void static_shared(void *p, size_t bytes) {
    for (region &r : statics)
        if (r.base == (char *)p) {
            if (r.block != block_serial) memset(p, 0xff, bytes), r.block = block_serial;
            return;
        }
    statics.push_back(region{(char *)p, bytes, block_serial, std::vector<word>((bytes + 1) / 2, word{-1, -1, 0, 0, nullptr, nullptr})});
    memset(p, 0xff, bytes);
}

/* atomicAdd: threads run one at a time, so a checked read-modify-write is atomic. */
template <class T> T add_at(T *p, T v, const void *pc) {
    access(p, sizeof *p, true, pc);
    T old = *p;
    *p = old + v;
    return old;
}

float atomic_add(float *p, float v) { return add_at(p, v, __builtin_return_address(0)); }
double atomic_add(double *p, double v) { return add_at(p, v, __builtin_return_address(0)); }

void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(fmt, ap);
    va_end(ap);
    print_context();
    abort();
}

} // namespace emu

/* Forgets every kernel's counters so far (bench/cuda_counts.c: its setup's launches are not the
 * operation it measures). */
extern "C" void or1_emu_counts_reset(void) {
    std::lock_guard<std::mutex> lk(emu::count_lock);
    if (emu::all_counts) emu::all_counts->clear();
}

/* The thread sanitizer's instrumentation calls, turned into the emulator's access checks. */
#define EMU_HOOK(n)                                                                                                    \
    extern "C" void __tsan_read##n(void *p) { emu::access(p, n, false, __builtin_return_address(0)); }                \
    extern "C" void __tsan_write##n(void *p) { emu::access(p, n, true, __builtin_return_address(0)); }                \
    extern "C" void __tsan_unaligned_read##n(void *p) { emu::access(p, n, false, __builtin_return_address(0)); }      \
    extern "C" void __tsan_unaligned_write##n(void *p) { emu::access(p, n, true, __builtin_return_address(0)); }
EMU_HOOK(1)
EMU_HOOK(2)
EMU_HOOK(4)
EMU_HOOK(8)
EMU_HOOK(16)
extern "C" void __tsan_read_range(void *p, unsigned long n) { if (n) emu::access(p, n, false, __builtin_return_address(0)); }
extern "C" void __tsan_write_range(void *p, unsigned long n) { if (n) emu::access(p, n, true, __builtin_return_address(0)); }
extern "C" void __tsan_init(void) {}
extern "C" void __tsan_func_entry(void *pc) { (void)pc; }
extern "C" void __tsan_func_exit(void) {}
