/* The sandbox's policy: which isolation the host permits, the seccomp filter, and per-run uids. */
#include "or1/core.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Namespaces every isolated run gets (plus CLONE_NEWUSER when not root). */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

/* Syscalls no test program needs and that reach beyond its own process tree. */
static const char *const denied[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "swapon", "swapoff", "reboot", "sethostname", "setdomainname",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "bpf",
    "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "acct", "quotactl", "syslog", "fanotify_init",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "vhangup", "mount_setattr",
    "fsopen", "fsmount", "fspick", "move_mount", "open_tree", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "mknod", "mknodat", "lookup_dcookie",
    /* Leaving the process group would let a descendant outlive the run without a pid namespace. */
    "setsid", "setpgid",
};

/* Adds the rules to ctx; any libseccomp failure is reported. `ns`: the run has its own pid
 * namespace, where kill(-1) reaches only the run (the harness uses it to clean up). */
static int add_rules(scmp_filter_ctx ctx, bool ns) {
    int rc = 0;
    for (size_t i = 0; i < sizeof denied / sizeof denied[0] && rc == 0; i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr != __NR_SCMP_ERROR) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    /* No sockets of any family: there is nothing to talk to. */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 0);
    /* clone3 passes its flags in memory a filter cannot read: make libc fall back to clone. */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    static const unsigned long ns_flags[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID, CLONE_NEWNET,
                                       CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
    for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
    /* kill(-1, sig) would reach every process of the user where no pid namespace exists. */
    if (rc == 0 && !ns)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu));
    return rc;
}

static struct sock_fprog filters[2];
static int filter_ok;
static char filter_err[256];
static pthread_once_t filter_once = PTHREAD_ONCE_INIT;

/* Builds one filter with libseccomp and exports its BPF through a memory file. */
static int build_filter(struct sock_fprog *filter, bool ns) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        snprintf(filter_err, sizeof filter_err, "seccomp_init failed");
        return -1;
    }
    int rc = add_rules(ctx, ns);
    int fd = rc == 0 ? memfd_create("or1-seccomp", MFD_CLOEXEC) : -1;
    if (rc == 0 && fd >= 0) rc = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    off_t size = fd >= 0 && rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 || size > 65536) {
        snprintf(filter_err, sizeof filter_err, "building the seccomp filter failed (rc %d)", rc);
        if (fd >= 0) close(fd);
        return -1;
    }
    struct sock_filter *prog = or1_malloc((size_t)size);
    ssize_t got = pread(fd, prog, (size_t)size, 0);
    close(fd);
    if (got != size) {
        free(prog);
        snprintf(filter_err, sizeof filter_err, "reading the seccomp filter back failed");
        return -1;
    }
    filter->len = (unsigned short)((size_t)size / sizeof(struct sock_filter));
    filter->filter = prog;
    return 0;
}

/* Builds both variants once. */
static void build_filters(void) {
    filter_ok = build_filter(&filters[0], false) == 0 && build_filter(&filters[1], true) == 0;
}

/* The shared filter for runs with (ns) or without a pid namespace, built on first use. */
const struct sock_fprog *or1_sandbox_seccomp(bool ns) {
    pthread_once(&filter_once, build_filters);
    if (!filter_ok) {
        or1_fail("sandbox: %s", filter_err);
        return NULL;
    }
    return &filters[ns ? 1 : 0];
}

/* Writes a short string to a /proc file; 0 on success. Only system calls: safe between clone
 * and exec. */
int or1_sandbox_write_proc(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Child of the probe: can it map ids (if asked) and mount a tmpfs in its namespaces? */
static int probe_child(int userns, const char *uid_map, const char *gid_map) {
    if (userns && (or1_sandbox_write_proc("/proc/self/setgroups", "deny") != 0 ||
                   or1_sandbox_write_proc("/proc/self/uid_map", uid_map) != 0 ||
                   or1_sandbox_write_proc("/proc/self/gid_map", gid_map) != 0))
        return 1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 2;
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) return 3;
    return 0;
}

/* Tries a namespaced child the way a run would create one; true if it works end to end. */
static int probe(int userns) {
    char uid_map[64], gid_map[64];
    snprintf(uid_map, sizeof uid_map, "0 %u 1", (unsigned)getuid());
    snprintf(gid_map, sizeof gid_map, "0 %u 1", (unsigned)getgid());
    long flags = NS_FLAGS | (userns ? CLONE_NEWUSER : 0) | SIGCHLD;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0L);
    if (pid < 0) return 0;
    if (pid == 0) _exit(probe_child(userns, uid_map, gid_map));
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static or1_isolation isolation;
static pthread_once_t isolation_once = PTHREAD_ONCE_INIT;

/* Picks the strongest isolation that works here; OR1_SANDBOX_ISOLATION may ask for a weaker one. */
static void detect_isolation(void) {
    const char *want = getenv("OR1_SANDBOX_ISOLATION");
    int allow_root = !want || strcmp(want, "root") == 0;
    int allow_userns = allow_root || strcmp(want, "userns") == 0;
    if (allow_root && geteuid() == 0 && probe(0)) isolation = OR1_ISOLATION_ROOT;
    else if (allow_userns && probe(1)) isolation = OR1_ISOLATION_USERNS;
    else isolation = OR1_ISOLATION_RLIMITS;
}

/* The isolation mode runs use, probed once. */
or1_isolation or1_sandbox_isolation(void) {
    pthread_once(&isolation_once, detect_isolation);
    return isolation;
}

/* Human-readable mode name (for logs, the CLI and the benchmark). */
const char *or1_isolation_name(or1_isolation iso) {
    switch (iso) {
    case OR1_ISOLATION_ROOT: return "namespaces+uid";
    case OR1_ISOLATION_USERNS: return "user-namespace";
    case OR1_ISOLATION_RLIMITS: return "rlimits-only";
    }
    return "?";
}

enum { UID_SLOTS = 1024 };
static unsigned char uid_used[UID_SLOTS];
static pthread_mutex_t uid_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per-run uids live in a block derived from our pid, so that RLIMIT_NPROC (counted per uid)
 * belongs to one run alone and a fork bomb cannot starve its neighbours. */
static uid_t uid_base(void) { return (uid_t)(0x40000000u + ((unsigned)getpid() & 0xffffu) * UID_SLOTS); }

/* Takes a free slot (0 if all are taken, which a caller treats as a sandbox failure). Slots go
 * round-robin, so a uid whose killed processes the kernel is still tearing down is not handed to
 * the next run at once. */
uid_t or1_sandbox_uid_acquire(void) {
    static unsigned next;
    pthread_mutex_lock(&uid_lock);
    uid_t uid = 0;
    for (unsigned k = 0; k < UID_SLOTS; k++) {
        unsigned i = (next + k) % UID_SLOTS;
        if (!uid_used[i]) {
            uid_used[i] = 1;
            uid = uid_base() + i;
            next = i + 1;
            break;
        }
    }
    pthread_mutex_unlock(&uid_lock);
    return uid;
}

/* Returns a slot taken by or1_sandbox_uid_acquire. */
void or1_sandbox_uid_release(uid_t uid) {
    uid_t base = uid_base();
    if (uid < base || uid >= base + UID_SLOTS) return;
    pthread_mutex_lock(&uid_lock);
    uid_used[uid - base] = 0;
    pthread_mutex_unlock(&uid_lock);
}
