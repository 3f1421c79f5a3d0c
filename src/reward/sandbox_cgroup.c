/* Per-run control groups (cgroup v1, where the host mounts it writable): one CPU's worth of
 * time for the whole process tree, its total memory, its process count. Rlimits bound each
 * process; only a cgroup bounds a tree, so a fork bomb cannot take every core from the runs
 * beside it. Best effort: without writable cgroups the rlimits alone apply.
 * Creating and removing three groups per run costs more than the run's own start-up, so each
 * run slot (see or1_sandbox_uid_acquire) keeps its groups for the life of the process; they are
 * emptied after every run and removed at exit. */
#include "or1/core.h"
#include "sandbox_internal.h"

#include <dirent.h>
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

static void own_group(const char *controller, char *out, size_t cap);
static void empty_group_dir(const char *dir);

/* Removes groups left by an or1 process that died without its exit handler (killed): the pids
 * group first, killing what still runs in it (a grandchild the parent-death signal never
 * reached), then the others, which are empty once it is. */
static void sweep_stale(void) {
    for (int i = OR1_CGROUP_N - 1; i >= 0; i--) {
        char own[512], parent[768];
        own_group(controllers[i], own, sizeof own);
        snprintf(parent, sizeof parent, "%s/%s%s", root, controllers[i], own);
        DIR *d = opendir(parent);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            int pid;
            unsigned slot;
            if (sscanf(e->d_name, "or1-sandbox-%d-%u", &pid, &slot) != 2 || pid <= 0) continue;
            if (kill(pid, 0) == 0 || errno != ESRCH) continue;
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/%s", parent, e->d_name);
            if (strcmp(controllers[i], "pids") == 0) empty_group_dir(dir);
            rmdir(dir); /* fails, harmlessly, while anything still runs in it */
        }
        if (d) closedir(d);
    }
}

/* Usable only as root with all three v1 hierarchies mounted writable. */
static void probe(void) {
    if (geteuid() != 0 || getenv("OR1_SANDBOX_NO_CGROUP")) return;
    for (int i = 0; i < OR1_CGROUP_N; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s/cgroup.procs", root, controllers[i]);
        if (access(path, W_OK) != 0) return;
    }
    available = true;
    sweep_stale();
}

/* Writes a decimal or string value into one control file. */
static int put(const char *dir, const char *file, const char *value) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return or1_sandbox_write_proc(path, value);
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

/* Slot groups created so far; a slot is used by one run at a time, so no lock is needed
 * beyond the one that creates the table. */
static or1_cgroup *slots[OR1_CGROUP_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* Kills whatever is still in a group's pids controller (a descendant that outlived its run);
 * waits briefly until it is empty. */
static void empty_group_dir(const char *dir) {
    char path[1100];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    for (int attempt = 0; attempt < 50; attempt++) {
        bool busy = false;
        FILE *f = fopen(path, "re");
        int pid;
        while (f && fscanf(f, "%d", &pid) == 1) {
            kill(pid, SIGKILL);
            busy = true;
        }
        if (f) fclose(f);
        if (!busy) return;
        usleep(2000);
    }
}

/* Empties a slot's pids group. */
static void empty_group(const or1_cgroup *cg) { empty_group_dir(cg->dir[2]); }

/* Removes every slot's groups at exit (they must be empty: runs have ended). */
static void remove_all(void) {
    for (int s = 0; s < OR1_CGROUP_SLOTS; s++) {
        if (!slots[s]) continue;
        empty_group(slots[s]);
        for (int i = 0; i < OR1_CGROUP_N; i++) rmdir(slots[s]->dir[i]);
        free(slots[s]);
        slots[s] = NULL;
    }
}

/* Creates a slot's groups beneath ours, named after our pid and the slot. */
static or1_cgroup *create(unsigned slot) {
    or1_cgroup *cg = or1_calloc(1, sizeof *cg);
    for (int i = 0; i < OR1_CGROUP_N; i++) {
        char own[512];
        own_group(controllers[i], own, sizeof own);
        int n = snprintf(cg->dir[i], sizeof cg->dir[i], "%s/%s%s/or1-sandbox-%d-%u", root, controllers[i], own,
                         (int)getpid(), slot);
        if (n < 0 || (size_t)n >= sizeof cg->dir[i] || (mkdir(cg->dir[i], 0755) != 0 && errno != EEXIST)) {
            for (int k = 0; k <= i; k++) rmdir(cg->dir[k]);
            free(cg);
            return NULL;
        }
    }
    if (put(cg->dir[0], "cpu.cfs_period_us", "100000") != 0 || put(cg->dir[0], "cpu.cfs_quota_us", "100000") != 0) {
        for (int i = 0; i < OR1_CGROUP_N; i++) rmdir(cg->dir[i]);
        free(cg);
        return NULL;
    }
    put(cg->dir[1], "memory.swappiness", "0");
    return cg;
}

/* The OOM killer's count in a memory group (0 if unreadable). */
static long oom_kills(const or1_cgroup *cg) {
    char path[768], buf[512];
    snprintf(path, sizeof path, "%s/memory.oom_control", cg->dir[1]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *k = strstr(buf, "oom_kill ");
    return k ? atol(k + strlen("oom_kill ")) : 0;
}

/* The slot's groups set to this run's limits, or NULL where cgroups are unavailable. */
or1_cgroup *or1_cgroup_get(unsigned slot, const or1_sandbox_limits *l) {
    pthread_once(&probe_once, probe);
    if (!available || slot >= OR1_CGROUP_SLOTS) return NULL;
    pthread_mutex_lock(&slots_lock);
    static bool registered;
    if (!slots[slot]) slots[slot] = create(slot);
    if (slots[slot] && !registered) registered = atexit(remove_all) == 0;
    or1_cgroup *cg = slots[slot];
    pthread_mutex_unlock(&slots_lock);
    if (!cg) return NULL;
    char value[64];
    snprintf(value, sizeof value, "%zu", l->memory_bytes);
    if (put(cg->dir[1], "memory.limit_in_bytes", value) != 0) return NULL;
    snprintf(value, sizeof value, "%d", l->max_procs);
    if (put(cg->dir[2], "pids.max", value) != 0) return NULL;
    cg->oom_base = oom_kills(cg);
    return cg;
}

/* True if the kernel's OOM killer acted inside the memory group during this run. */
bool or1_cgroup_oom(const or1_cgroup *cg) { return oom_kills(cg) > cg->oom_base; }

/* Ends a run: nothing it started may stay in the groups. */
void or1_cgroup_put(or1_cgroup *cg) { empty_group(cg); }
