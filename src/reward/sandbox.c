/* One untrusted program in one isolated process tree.
 *
 * The parent prepares everything that needs memory, then clones a child into new mount, pid,
 * network, ipc and uts namespaces (plus a user namespace when not root). The child builds a
 * private root on a size-limited tmpfs (read-only /usr and the two /etc entries the dynamic
 * linker needs, three device files, a writable /work), pivots into it, drops to a per-run uid or
 * drops its capabilities, sets rlimits, installs the seccomp filter and executes the program.
 * Being pid 1 of its namespace, its death takes every descendant with it. The parent collects
 * stdout, stderr and the harness channel (fd 3) under caps and enforces the wall clock.
 * Between clone and exec the child uses only system calls: the parent is multithreaded. */
#include "or1/core.h"
#include "or1/io.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ERR_TAIL = 4096, PATH_MAX_SB = 1024, CHILD_STACK = 256 << 10 };

/* Everything the child needs, prepared by the parent so the child never allocates. */
typedef struct {
    const or1_sandbox_spec *spec;
    or1_isolation iso;
    uid_t uid;             /* the run's uid (root modes) */
    uid_t outer_uid;       /* our uid, for the user-namespace map */
    gid_t outer_gid;
    const char *dir;       /* working directory: "/work" inside the namespace or a host temp dir */
    char tmpfs_opts[64];
    char uid_map[64], gid_map[64];
    int out_w, err_w, chan_w, status_w;
    const or1_cgroup *cg; /* groups the child joins first, or NULL */
    const struct sock_fprog *filter;
} child_ctx;

/* The environment of every program: fixed, so runs are reproducible and leak nothing. */
static char *const child_env[] = {
    "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=/work", "TMPDIR=/work",
    "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8",
    "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", NULL,
};

/* Defaults sized for competitive-programming tests under Python. */
or1_sandbox_limits or1_sandbox_limits_defaults(void) {
    or1_sandbox_limits l = {
        .cpu_s = 6.0, .wall_s = 10.0, .memory_bytes = (size_t)1 << 30, .max_procs = 64,
        .file_bytes = (size_t)16 << 20, .max_files = 64, .output_bytes = (size_t)16 << 20,
    };
    return l;
}

/* Reports a failed setup step through the status pipe and exits; the parent turns the step and
 * errno into an error message. */
static _Noreturn void child_die(const child_ctx *c, int step) {
    int msg[2] = {step, errno};
    if (write(c->status_w, msg, sizeof msg) < 0) {}
    _exit(127);
}

/* dst = a + b, bounded; the child cannot use snprintf safely. */
static void cat2(char *dst, const char *a, const char *b) {
    size_t i = 0;
    for (; *a && i < PATH_MAX_SB - 1; a++) dst[i++] = *a;
    for (; *b && i < PATH_MAX_SB - 1; b++) dst[i++] = *b;
    dst[i] = '\0';
}

/* Writes a whole buffer to a new file (mode 0644). */
static int write_all_file(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return close(fd);
}

/* Binds a host path read-only into the new root, keeping the flags the host mount has (a user
 * namespace may not clear them). Missing optional sources are skipped. */
static int bind_ro(const char *src, const char *dst, int is_file, int optional) {
    struct stat st;
    if (stat(src, &st) != 0) return optional ? 0 : -1;
    if (is_file) {
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return -1;
        close(fd);
    } else if (mkdir(dst, 0755) != 0 && errno != EEXIST) {
        return -1;
    }
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0) return -1;
    struct statvfs sv;
    unsigned long keep = 0;
    if (statvfs(dst, &sv) == 0)
        keep = sv.f_flag & (ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME);
    return mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | keep,
                 NULL);
}

/* Builds the private root on a tmpfs over /tmp (in our mount namespace only) and pivots into it. */
static void child_root(child_ctx *c) {
    if (c->iso == OR1_ISOLATION_USERNS &&
        (or1_sandbox_write_proc("/proc/self/setgroups", "deny") != 0 ||
         or1_sandbox_write_proc("/proc/self/uid_map", c->uid_map) != 0 ||
         or1_sandbox_write_proc("/proc/self/gid_map", c->gid_map) != 0))
        child_die(c, 1);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) child_die(c, 2);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) child_die(c, 3);
    if (bind_ro("/usr", "/tmp/usr", 0, 0) != 0) child_die(c, 4);
    if (mkdir("/tmp/etc", 0755) != 0 || mkdir("/tmp/dev", 0755) != 0) child_die(c, 5);
    if (bind_ro("/etc/alternatives", "/tmp/etc/alternatives", 0, 1) != 0 ||
        bind_ro("/etc/ld.so.cache", "/tmp/etc/ld.so.cache", 1, 1) != 0)
        child_die(c, 6);
    static const char *const devs[] = {"null", "zero", "urandom"};
    for (int i = 0; i < 3; i++) {
        char src[PATH_MAX_SB], dst[PATH_MAX_SB];
        cat2(src, "/dev/", devs[i]);
        cat2(dst, "/tmp/dev/", devs[i]);
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) child_die(c, 7);
        close(fd);
        if (mount(src, dst, NULL, MS_BIND, NULL) != 0) child_die(c, 7);
    }
    static const char *const links[][2] = {
        {"usr/bin", "/tmp/bin"}, {"usr/lib", "/tmp/lib"}, {"usr/lib64", "/tmp/lib64"}};
    for (int i = 0; i < 3; i++)
        if (symlink(links[i][0], links[i][1]) != 0) child_die(c, 8);
    /* The only writable place: its own size-limited tmpfs; the rest of the root turns read-only. */
    if (mkdir("/tmp/work", 0755) != 0 ||
        mount("tmpfs", "/tmp/work", "tmpfs", MS_NOSUID | MS_NODEV, c->tmpfs_opts) != 0)
        child_die(c, 9);
    if (c->iso == OR1_ISOLATION_ROOT && chown("/tmp/work", c->uid, c->uid) != 0) child_die(c, 9);
    if (chdir("/tmp") != 0 || syscall(SYS_pivot_root, ".", ".") != 0) child_die(c, 10);
    if (umount2(".", MNT_DETACH) != 0 || chdir("/work") != 0) child_die(c, 11);
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0) child_die(c, 10);
}

/* Places the spec's files in the working directory and opens stdin. */
static void child_files(child_ctx *c) {
    const or1_sandbox_spec *s = c->spec;
    int in_fd = -1;
    for (size_t i = 0; i < s->n_files; i++) {
        char path[PATH_MAX_SB];
        cat2(path, c->dir, "/");
        cat2(path, path, s->files[i].name);
        if (write_all_file(path, s->files[i].data, s->files[i].len) != 0) child_die(c, 12);
        if (s->stdin_file && strcmp(s->stdin_file, s->files[i].name) == 0)
            in_fd = open(path, O_RDONLY);
    }
    if (in_fd < 0) in_fd = open("/dev/null", O_RDONLY);
    if (in_fd < 0 || dup2(in_fd, 0) < 0) child_die(c, 13);
    if (dup2(c->out_w, 1) < 0 || dup2(c->err_w, 2) < 0 || dup2(c->chan_w, 3) < 0) child_die(c, 13);
    /* The status pipe moves to fd 4 (close-on-exec) so everything above it can be closed. */
    if (dup3(c->status_w, 4, O_CLOEXEC) < 0) child_die(c, 13);
    c->status_w = 4;
    if (syscall(SYS_close_range, 5L, (long)~0u, 0L) != 0)
        for (int fd = 5; fd < 4096; fd++) close(fd);
}

/* Applies the spec's rlimits. RLIMIT_CPU counts whole seconds, so it is rounded up and the parent
 * checks the exact value; the kernel's SIGKILL at the hard limit also reaches a pid 1. */
static void child_limits(child_ctx *c) {
    const or1_sandbox_limits *l = &c->spec->limits;
    rlim_t cpu = (rlim_t)ceil(l->cpu_s);
    struct {
        int res;
        rlim_t v;
    } lim[] = {
        {RLIMIT_CPU, cpu},
        {RLIMIT_AS, (rlim_t)l->memory_bytes},
        {RLIMIT_NPROC, (rlim_t)l->max_procs},
        {RLIMIT_FSIZE, (rlim_t)l->file_bytes},
        {RLIMIT_NOFILE, (rlim_t)l->max_files},
        {RLIMIT_CORE, 0},
        {RLIMIT_MEMLOCK, 0},
        {RLIMIT_MSGQUEUE, 0},
        {RLIMIT_STACK, (rlim_t)(l->memory_bytes / 4)},
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        struct rlimit r = {lim[i].v, lim[i].v};
        if (setrlimit(lim[i].res, &r) != 0) child_die(c, 14);
    }
}

/* Landlock's ABI, spelled out because Debian 12's headers predate network rules and scopes. */
enum {
    LL_CREATE_VERSION = 1,
    LL_RULE_PATH = 1,
    LL_EXEC = 1 << 0, LL_WRITE = 1 << 1, LL_READ = 1 << 2, LL_READ_DIR = 1 << 3,
    LL_TRUNCATE = 1 << 14, LL_IOCTL_DEV = 1 << 15,
    LL_SCOPE_ABSTRACT_UNIX = 1 << 0, LL_SCOPE_SIGNAL = 1 << 1,
};
typedef struct {
    uint64_t fs, net, scoped;
} ll_ruleset;
typedef struct __attribute__((packed)) {
    uint64_t allowed;
    int32_t fd;
} ll_path_rule;

/* Everything ABI `abi` can restrict on the file system. */
static uint64_t ll_fs_rights(long abi) {
    uint64_t all = (1u << 13) - 1; /* v1: execute .. make_sym */
    if (abi >= 2) all |= 1u << 13; /* refer */
    if (abi >= 3) all |= LL_TRUNCATE;
    if (abi >= 5) all |= LL_IOCTL_DEV;
    return all;
}

/* Allows `rights` beneath one path (a missing optional path is skipped). */
static int ll_allow(int ruleset, const char *path, uint64_t rights, uint64_t handled) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        rights &= LL_EXEC | LL_WRITE | LL_READ | LL_TRUNCATE | LL_IOCTL_DEV;
    ll_path_rule rule = {rights & handled, fd};
    long rc = syscall(SYS_landlock_add_rule, (long)ruleset, (long)LL_RULE_PATH, &rule, 0L);
    close(fd);
    return rc == 0 ? 0 : -1;
}

/* Without namespaces, Landlock confines the program instead: read-only /usr and the linker's
 * /etc entries, the three device files, its own directory writable; no TCP; and (ABI 6) no
 * signals or abstract sockets beyond its own domain. Skipped where the kernel lacks Landlock. */
static void child_landlock(child_ctx *c) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0L, (long)LL_CREATE_VERSION);
    if (abi < 1) return;
    ll_ruleset attr = {ll_fs_rights(abi), abi >= 4 ? 3 : 0,
                       abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL : 0};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, (long)size, 0L);
    if (rs < 0) child_die(c, 19);
    uint64_t ro = LL_EXEC | LL_READ | LL_READ_DIR;
    if (ll_allow(rs, "/usr", ro, attr.fs) != 0 || ll_allow(rs, "/etc/alternatives", ro, attr.fs) != 0 ||
        ll_allow(rs, "/etc/ld.so.cache", LL_READ, attr.fs) != 0 ||
        ll_allow(rs, "/dev/null", LL_READ | LL_WRITE | LL_TRUNCATE, attr.fs) != 0 ||
        ll_allow(rs, "/dev/zero", LL_READ, attr.fs) != 0 || ll_allow(rs, "/dev/urandom", LL_READ, attr.fs) != 0 ||
        ll_allow(rs, c->dir, attr.fs, attr.fs) != 0)
        child_die(c, 19);
    if (syscall(SYS_landlock_restrict_self, (long)rs, 0L) != 0) child_die(c, 19);
    close(rs);
}

/* Gives up every privilege: a fresh uid as root, or all capabilities inside a user namespace.
 * Landlock comes first, while the paths it names are still reachable. */
static void child_drop(child_ctx *c) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_die(c, 16);
    if (c->iso == OR1_ISOLATION_RLIMITS) child_landlock(c);
    if (c->iso == OR1_ISOLATION_ROOT || (c->iso == OR1_ISOLATION_RLIMITS && c->uid != 0)) {
        if (syscall(SYS_setgroups, 0L, NULL) != 0 || syscall(SYS_setresgid, (long)c->uid, (long)c->uid, (long)c->uid) != 0 ||
            syscall(SYS_setresuid, (long)c->uid, (long)c->uid, (long)c->uid) != 0)
            child_die(c, 15);
    } else if (c->iso == OR1_ISOLATION_USERNS) {
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED) != 0)
            child_die(c, 15);
        struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof data);
        if (syscall(SYS_capset, &hdr, data) != 0) child_die(c, 15);
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_die(c, 16);
}

/* Joins the run slot's cgroups (writing 0 moves the writer). Best effort: without them the
 * rlimits still bound every process. */
static void child_cgroups(const child_ctx *c) {
    for (int i = 0; c->cg && i < OR1_CGROUP_N; i++) {
        char path[PATH_MAX_SB];
        cat2(path, c->cg->dir[i], "/cgroup.procs");
        or1_sandbox_write_proc(path, "0");
    }
}

/* The child: isolate, limit, filter, exec. Never returns. It shares the parent's memory
 * (CLONE_VM, the parent thread waits until exec), so it touches only its own stack and c. */
static _Noreturn void child_main(child_ctx *c) {
    /* Default dispositions (an ignored signal would stay ignored across exec), then unblock what
     * the parent blocked around clone. Raw system calls: a libc or sanitizer wrapper would
     * update bookkeeping in the memory this child shares with the parent. */
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    for (long sig = 1; sig <= 64; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8L);
    uint64_t none = 0;
    syscall(SYS_rt_sigprocmask, (long)SIG_SETMASK, &none, NULL, 8L);
    child_cgroups(c);
    /* Lift the pipe ends above the standard descriptors so the dup2s below cannot clobber them. */
    int *fds[] = {&c->status_w, &c->out_w, &c->err_w, &c->chan_w};
    for (int i = 0; i < 4; i++) {
        int fd = fcntl(*fds[i], F_DUPFD_CLOEXEC, 10);
        if (fd < 0) child_die(c, 0);
        *fds[i] = fd;
    }
    if (setsid() < 0) child_die(c, 0);
    if (c->iso != OR1_ISOLATION_RLIMITS) child_root(c);
    else if (chdir(c->dir) != 0) child_die(c, 11);
    child_files(c);
    child_limits(c);
    child_drop(c);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, c->filter) != 0) child_die(c, 17);
    execve(c->spec->argv[0], (char *const *)c->spec->argv, child_env);
    child_die(c, 18);
}

/* clone()'s entry point. */
static int child_entry(void *arg) { child_main(arg); }

/* Output collected from one pipe: either the head up to cap (stdout, channel) or the tail. */
typedef struct {
    int fd;
    char *buf;
    size_t len, cap, alloc; /* alloc: bytes allocated for buf (grows geometrically) */
    bool tail;     /* keep the last cap bytes instead of the first */
    bool overflow; /* more than cap bytes arrived */
    int (*on_data)(void *ctx, const char *data, size_t len); /* streams instead of keeping */
    void *ctx;
    bool stop; /* on_data asked to end the run */
} sink;

/* Reads what is available from s->fd; returns false at end of file or error. */
static bool sink_read(sink *s) {
    char tmp[65536];
    ssize_t n = read(s->fd, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;
    size_t k = (size_t)n;
    if (s->on_data) {
        if (!s->stop && s->on_data(s->ctx, tmp, k) != 0) s->stop = true;
        return true;
    }
    if (s->tail) {
        if (k >= s->cap) {
            memcpy(s->buf, tmp + k - s->cap, s->cap);
            s->len = s->cap;
        } else {
            size_t keep = s->len + k > s->cap ? s->cap - k : s->len;
            memmove(s->buf, s->buf + s->len - keep, keep);
            memcpy(s->buf + keep, tmp, k);
            s->len = keep + k;
        }
        return true;
    }
    if (s->len + k > s->cap) {
        s->overflow = true;
        k = s->cap - s->len;
    }
    if (s->len + k + 1 > s->alloc) {
        size_t want = s->alloc ? 2 * s->alloc : 65536;
        while (want < s->len + k + 1) want *= 2;
        s->alloc = want < s->cap + 1 ? want : s->cap + 1;
        s->buf = or1_realloc(s->buf, s->alloc);
    }
    memcpy(s->buf + s->len, tmp, k);
    s->len += k;
    return true;
}

/* Removes a host temp directory tree even if the program took write permission off its dirs. */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (flag == FTW_DP) return rmdir(path) != 0 && errno != ENOENT;
    return unlink(path) != 0 && errno != ENOENT;
}

/* Pre-order pass: restores owner rwx on every directory so the removal pass can enter it. */
static int chmod_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    if (flag == FTW_D && (st->st_mode & 0700) != 0700) chmod(path, 0700);
    return 0;
}

/* rm -rf for the rlimits-only mode's private directory. */
static void remove_tree(const char *dir) {
    nftw(dir, chmod_entry, 16, FTW_PHYS);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Closes both ends of up to four pipes. */
static void close_pipes(int p[][2], int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2; j++)
            if (p[i][j] >= 0) close(p[i][j]);
}

/* Checks a spec before any process exists. */
static int check_spec(const or1_sandbox_spec *s) {
    if (!s->argv || !s->argv[0] || s->argv[0][0] != '/')
        return or1_fail("sandbox: argv[0] must be an absolute path");
    const or1_sandbox_limits *l = &s->limits;
    if (!(l->cpu_s > 0 && l->cpu_s <= 3600) || !(l->wall_s > 0 && l->wall_s <= 7200) ||
        l->memory_bytes < ((size_t)16 << 20) || l->max_procs < 1 || l->max_files < 8 ||
        l->output_bytes < 1)
        return or1_fail("sandbox: limits out of range (cpu %g s, wall %g s, memory %zu B, procs %d, "
                        "files %d)", l->cpu_s, l->wall_s, l->memory_bytes, l->max_procs, l->max_files);
    for (size_t i = 0; i < s->n_files; i++) {
        const char *n = s->files[i].name;
        if (!n || !*n || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
            strlen(n) > 64)
            return or1_fail("sandbox: bad file name '%s'", n ? n : "(null)");
    }
    return 0;
}

/* Names of the child's setup steps, for error messages. */
static const char *step_name(int step) {
    static const char *const names[] = {
        "session", "id maps", "private mounts", "tmpfs", "bind /usr", "mkdir", "bind /etc",
        "device files", "symlinks", "work dir", "pivot_root", "chdir", "write files", "stdio",
        "rlimits", "drop privileges", "no_new_privs", "seccomp", "exec", "landlock"};
    return step >= 0 && step < (int)(sizeof names / sizeof names[0]) ? names[step] : "?";
}

/* Polls the pipes until the child exits (and its pipes drain), a limit ends it or the spec's
 * cancel descriptor (watched until the run is ending) becomes readable. */
static void monitor(pid_t pid, int pidfd, sink *sinks, int n_sinks, const or1_sandbox_spec *spec,
                    double t0, or1_run_status *why, bool *limit_hit) {
    const or1_sandbox_limits *l = &spec->limits;
    bool exited = false;
    double drain_until = 0;
    for (;;) {
        struct pollfd pf[5];
        int np = 0, map[5];
        for (int i = 0; i < n_sinks; i++)
            if (sinks[i].fd >= 0) {
                pf[np] = (struct pollfd){sinks[i].fd, POLLIN, 0};
                map[np++] = i;
            }
        if (!exited) pf[np++] = (struct pollfd){pidfd, POLLIN, 0};
        if (!exited && !*limit_hit && spec->cancel_fd > 0)
            pf[np++] = (struct pollfd){spec->cancel_fd, POLLIN, 0};
        if (np == 0) break;
        double now = or1_now();
        double until = exited ? drain_until : t0 + l->wall_s;
        if (now >= until) {
            if (!exited) {
                *why = OR1_RUN_WALL_LIMIT;
                *limit_hit = true;
            }
            break;
        }
        int ms = (int)ceil((until - now) * 1000.0);
        int r = poll(pf, (nfds_t)np, ms > 1000 ? 1000 : ms);
        if (r < 0 && errno != EINTR) break;
        for (int k = 0; k < np && r > 0; k++) {
            if (!pf[k].revents) continue;
            if (spec->cancel_fd > 0 && pf[k].fd == spec->cancel_fd) {
                *why = OR1_RUN_STOPPED;
                *limit_hit = true;
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                continue;
            }
            if (!exited && pf[k].fd == pidfd) {
                exited = true;
                /* Descendants outside a pid namespace may hold the pipes: give them a moment. */
                drain_until = or1_now() + 0.2;
                kill(-pid, SIGKILL);
                continue;
            }
            sink *s = &sinks[map[k]];
            if (!sink_read(s)) {
                close(s->fd);
                s->fd = -1;
            } else if ((s->stop || (s->overflow && map[k] == 0)) && !*limit_hit) {
                *why = s->stop ? OR1_RUN_STOPPED : OR1_RUN_OUTPUT_LIMIT;
                *limit_hit = true;
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
            }
        }
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Runs one program; see sandbox.h. */
int or1_sandbox_run(const or1_sandbox_spec *spec, or1_sandbox_result *res) {
    memset(res, 0, sizeof *res);
    if (check_spec(spec) != 0) return -1;
    or1_isolation iso = or1_sandbox_isolation();
    const struct sock_fprog *filter = or1_sandbox_seccomp(iso != OR1_ISOLATION_RLIMITS);
    if (!filter) return -1;
    child_ctx c = {.spec = spec, .iso = iso, .filter = filter, .outer_uid = getuid(), .outer_gid = getgid()};
    bool root = geteuid() == 0;
    if (root) {
        c.uid = or1_sandbox_uid_acquire();
        if (c.uid == 0) return or1_fail("sandbox: no free run uid (too many concurrent runs)");
    }
    size_t files = 0;
    for (size_t i = 0; i < spec->n_files; i++) files += spec->files[i].len;
    snprintf(c.tmpfs_opts, sizeof c.tmpfs_opts, "size=%zu,mode=0755,nr_inodes=4096",
             files + spec->limits.file_bytes + ((size_t)1 << 20));
    /* A process may map only its own ids into a user namespace it just entered. */
    snprintf(c.uid_map, sizeof c.uid_map, "0 %u 1", (unsigned)c.outer_uid);
    snprintf(c.gid_map, sizeof c.gid_map, "0 %u 1", (unsigned)c.outer_gid);
    char *tmpdir = NULL;
    if (c.iso == OR1_ISOLATION_RLIMITS) {
        const char *base = getenv("TMPDIR");
        tmpdir = or1_path_join(base && *base ? base : "/tmp", "or1-sandbox-XXXXXX");
        if (!mkdtemp(tmpdir) || (root && chown(tmpdir, c.uid, c.uid) != 0)) {
            or1_fail("sandbox: cannot create a private directory %s: %s", tmpdir, strerror(errno));
            free(tmpdir);
            if (root) or1_sandbox_uid_release(c.uid);
            return -1;
        }
        c.dir = tmpdir;
    } else {
        c.dir = "/work";
    }
    int p[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    int rc = -1;
    /* Run slots are the per-run uids, which exist only as root, as do writable cgroups. */
    or1_cgroup *cg = root ? or1_cgroup_get(c.uid % OR1_CGROUP_SLOTS, &spec->limits) : NULL;
    c.cg = cg;
    for (int i = 0; i < 4; i++)
        if (pipe2(p[i], O_CLOEXEC) != 0) {
            or1_fail("sandbox: pipe: %s", strerror(errno));
            goto done;
        }
    c.out_w = p[0][1];
    c.err_w = p[1][1];
    c.chan_w = p[2][1];
    c.status_w = p[3][1];
    long flags = SIGCHLD;
    if (c.iso != OR1_ISOLATION_RLIMITS)
        flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
    if (c.iso == OR1_ISOLATION_USERNS) flags |= CLONE_NEWUSER;
    /* CLONE_VM | CLONE_VFORK, as posix_spawn does: no copy of the (possibly huge) parent's page
     * tables and no copy-on-write faults afterwards; this thread resumes once the child has
     * executed the program or failed. Signals stay blocked until the child has reset them. */
    flags |= CLONE_VM | CLONE_VFORK;
    char *stack = or1_malloc(CHILD_STACK);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    double t0 = or1_now();
    pid_t pid = clone(child_entry, stack + CHILD_STACK, (int)flags, &c);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(stack);
    if (pid < 0) {
        or1_fail("sandbox: clone: %s", strerror(clone_errno));
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        close(p[i][1]);
        p[i][1] = -1;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, (long)pid, 0L);
    sink sinks[3] = {
        {p[0][0], NULL, 0, spec->limits.output_bytes, 0, false, false, NULL, NULL, false},
        {p[1][0], or1_malloc(ERR_TAIL + 1), 0, ERR_TAIL, ERR_TAIL + 1, true, false, NULL, NULL, false},
        {p[2][0], NULL, 0, spec->limits.output_bytes, 0, false, false, spec->on_chan, spec->on_chan_ctx, false},
    };
    for (int i = 0; i < 3; i++) fcntl(sinks[i].fd, F_SETFL, O_NONBLOCK);
    or1_run_status why = OR1_RUN_EXITED;
    bool limit_hit = false;
    if (pidfd >= 0) {
        monitor(pid, pidfd, sinks, 3, spec, t0, &why, &limit_hit);
        close(pidfd);
    } else {
        or1_fail("sandbox: pidfd_open: %s", strerror(errno));
        kill(pid, SIGKILL);
    }
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {}
    res->wall_s = or1_now() - t0;
    for (int i = 0; i < 3; i++) {
        if (sinks[i].fd >= 0) close(sinks[i].fd);
        p[i][0] = -1;
    }
    int msg[2] = {0, 0};
    ssize_t got = read(p[3][0], msg, sizeof msg);
    res->out = sinks[0].buf ? sinks[0].buf : or1_calloc(1, 1);
    res->out_len = sinks[0].len;
    res->out[res->out_len] = '\0';
    res->err = sinks[1].buf;
    res->err_len = sinks[1].len;
    res->err[res->err_len] = '\0';
    res->chan = sinks[2].buf ? sinks[2].buf : or1_calloc(1, 1);
    res->chan_len = sinks[2].len;
    res->chan[res->chan_len] = '\0';
    res->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    if (pidfd < 0) {
        or1_sandbox_result_free(res);
        goto done;
    }
    if (got == (ssize_t)sizeof msg) {
        or1_fail("sandbox: child setup failed at step '%s': %s", step_name(msg[0]), strerror(msg[1]));
        or1_sandbox_result_free(res);
        goto done;
    }
    res->status = why;
    if (!limit_hit) {
        if (WIFEXITED(st)) {
            res->status = OR1_RUN_EXITED;
            res->exit_code = WEXITSTATUS(st);
        } else {
            res->status = OR1_RUN_SIGNALED;
            res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        }
    }
    /* A SIGKILL we did not send comes from RLIMIT_CPU (nothing inside can SIGKILL a pid 1), and
     * the rusage the kernel reports then may read well under the limit it enforced. */
    bool cpu_kill = res->status == OR1_RUN_SIGNALED && (res->signal == SIGKILL || res->signal == SIGXCPU) &&
                    res->cpu_s >= 0.5 * floor(spec->limits.cpu_s);
    if (!limit_hit && (cpu_kill || res->cpu_s >= spec->limits.cpu_s)) res->status = OR1_RUN_CPU_LIMIT;
    if (!limit_hit && cg && or1_cgroup_oom(cg)) res->status = OR1_RUN_MEMORY_LIMIT;
    rc = 0;
done:
    close_pipes(p, 4);
    /* With a pid namespace the kernel has already killed every descendant. */
    if (cg && c.iso == OR1_ISOLATION_RLIMITS) or1_cgroup_put(cg);
    if (tmpdir) {
        remove_tree(tmpdir);
        free(tmpdir);
    }
    if (root) or1_sandbox_uid_release(c.uid);
    return rc;
}

/* Frees the buffers of a result. */
void or1_sandbox_result_free(or1_sandbox_result *res) {
    free(res->out);
    free(res->err);
    free(res->chan);
    memset(res, 0, sizeof *res);
}
