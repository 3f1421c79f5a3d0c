/* Private pieces shared by the sandbox's source files. */
#ifndef OR1_SANDBOX_INTERNAL_H
#define OR1_SANDBOX_INTERNAL_H

#include "or1/reward_sandbox.h"

#include <linux/filter.h>
#include <sys/types.h>

/* The seccomp program every sandboxed process installs, built once (NULL with an error if
 * libseccomp failed). Built in the parent because the child may not allocate. `ns`: the run
 * has its own pid namespace. */
const struct sock_fprog *or1_sandbox_seccomp(bool ns);

/* Writes a short string to a /proc file (id maps); 0 on success, system calls only. */
int or1_sandbox_write_proc(const char *path, const char *s);

/* A user id no other live run of this process uses (root modes only), and its release. */
uid_t or1_sandbox_uid_acquire(void);
void or1_sandbox_uid_release(uid_t uid);

/* A run slot's cgroup v1 groups (cpu, memory, pids), when the host lets us create them. */
enum { OR1_CGROUP_N = 3, OR1_CGROUP_SLOTS = 1024 };
typedef struct {
    char dir[OR1_CGROUP_N][640];
    long oom_base; /* the OOM kill count when the current run started */
} or1_cgroup;

/* The slot's groups with this run's limits, or NULL (then rlimits alone bound the run). */
or1_cgroup *or1_cgroup_get(unsigned slot, const or1_sandbox_limits *l);
bool or1_cgroup_oom(const or1_cgroup *cg);
void or1_cgroup_put(or1_cgroup *cg);

/* The interpreter every sandboxed Python program runs under (defined in code_verify.c). */
extern const char or1_sandbox_python[];

/* The Python harness that wraps untrusted code (code_driver.py, compiled in). */
extern const char or1_code_driver_py[];

#endif
