/* Per-run control groups (cgroup v1, where the host mounts it writable): one CPU's worth of
 * time for the whole process tree, its total memory, its process count. Rlimits bound each
 * process; only a cgroup bounds a tree, so a fork bomb cannot take every core from the runs
 * beside it. Best effort: without writable cgroups the rlimits alone apply. */
#include "or1/core.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const controllers[OR1_CGROUP_N] = {"cpu", "memory", "pids"};
static const char root[] = "/sys/fs/cgroup";
static bool available;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Usable only as root with all three v1 hierarchies mounted writable. */
static void probe(void) {
    if (geteuid() != 0 || getenv("OR1_SANDBOX_NO_CGROUP")) return;
    for (int i = 0; i < OR1_CGROUP_N; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s/cgroup.procs", root, controllers[i]);
        if (access(path, W_OK) != 0) return;
    }
    available = true;
}

/* Writes a decimal or string value into one control file. */
static int put(const char *dir, const char *file, const char *value) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, value, strlen(value));
    close(fd);
    return n == (ssize_t)strlen(value) ? 0 : -1;
}

/* Our own group in one v1 hierarchy, from /proc/self/cgroup ("" for the root). */
static void own_group(const char *controller, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char *names = strchr(line, ':'), *path = names ? strchr(names + 1, ':') : NULL;
        if (!path) continue;
        *path++ = '\0';
        path[strcspn(path, "\n")] = '\0';
        char *save = NULL;
        for (char *n = strtok_r(names + 1, ",", &save); n; n = strtok_r(NULL, ",", &save))
            if (strcmp(n, controller) == 0 && strcmp(path, "/") != 0) snprintf(out, cap, "%s", path);
    }
    if (f) fclose(f);
}

/* Creates the run's groups (beneath ours, named after our pid and `id`); false if unavailable. */
bool or1_cgroup_create(or1_cgroup *cg, unsigned long id, const or1_sandbox_limits *l) {
    memset(cg, 0, sizeof *cg);
    pthread_once(&probe_once, probe);
    if (!available) return false;
    char value[64];
    for (int i = 0; i < OR1_CGROUP_N; i++) {
        char own[512];
        own_group(controllers[i], own, sizeof own);
        int n = snprintf(cg->dir[i], sizeof cg->dir[i], "%s/%s%s/or1-sandbox-%d-%lu", root, controllers[i],
                         own, (int)getpid(), id);
        if (n < 0 || (size_t)n >= sizeof cg->dir[i]) goto fail;
        if (mkdir(cg->dir[i], 0755) != 0 && errno != EEXIST) goto fail;
    }
    if (put(cg->dir[0], "cpu.cfs_period_us", "100000") != 0 || put(cg->dir[0], "cpu.cfs_quota_us", "100000") != 0)
        goto fail;
    snprintf(value, sizeof value, "%zu", l->memory_bytes);
    if (put(cg->dir[1], "memory.limit_in_bytes", value) != 0) goto fail;
    put(cg->dir[1], "memory.swappiness", "0");
    snprintf(value, sizeof value, "%d", l->max_procs);
    if (put(cg->dir[2], "pids.max", value) != 0) goto fail;
    cg->active = true;
    return true;
fail:
    or1_cgroup_remove(cg);
    return false;
}

/* Moves pid (not yet running untrusted code) into every group. */
int or1_cgroup_attach(const or1_cgroup *cg, pid_t pid) {
    if (!cg->active) return 0;
    char value[32];
    snprintf(value, sizeof value, "%d", (int)pid);
    for (int i = 0; i < OR1_CGROUP_N; i++)
        if (put(cg->dir[i], "cgroup.procs", value) != 0) return -1;
    return 0;
}

/* True if the kernel's OOM killer acted inside the memory group. */
bool or1_cgroup_oom(const or1_cgroup *cg) {
    if (!cg->active) return false;
    char path[768], buf[512];
    snprintf(path, sizeof path, "%s/memory.oom_control", cg->dir[1]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char *k = strstr(buf, "oom_kill ");
    return k && atol(k + strlen("oom_kill ")) > 0;
}

/* Kills whatever is still in the pids group (a descendant that outlived its run) and removes
 * the groups, waiting briefly for the killed to be reaped. */
void or1_cgroup_remove(or1_cgroup *cg) {
    for (int attempt = 0; attempt < 50; attempt++) {
        bool busy = false;
        if (cg->dir[2][0]) {
            char path[768];
            snprintf(path, sizeof path, "%s/cgroup.procs", cg->dir[2]);
            FILE *f = fopen(path, "re");
            int pid;
            while (f && fscanf(f, "%d", &pid) == 1) {
                kill(pid, SIGKILL);
                busy = true;
            }
            if (f) fclose(f);
        }
        for (int i = 0; i < OR1_CGROUP_N; i++)
            if (cg->dir[i][0] && rmdir(cg->dir[i]) != 0 && errno != ENOENT) busy = true;
        if (!busy) break;
        usleep(2000);
    }
    cg->active = false;
}
