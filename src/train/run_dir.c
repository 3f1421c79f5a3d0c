/* The run folder: which checkpoint a resume means, whether a new run may use the folder, the
 * `latest` link, how many checkpoints stay and the removal of one. Nothing here deletes a run the user did not
 * ask to replace. */
#include "or1/core.h"
#include "or1/io.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* True if path is a folder. */
static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The first of the files a resume reads that dir lacks, or NULL when it has them all. */
static const char *missing_file(const char *dir) {
    static const char *const need[] = {"model.safetensors", "optimizer.safetensors", "trainer_state.json"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        char *p = or1_path_join(dir, need[i]);
        bool ok = or1_is_file(p);
        free(p);
        if (!ok) return need[i];
    }
    return NULL;
}

/* True if dir holds the three files a resume reads (a checkpoint written to the end). */
static bool complete_checkpoint(const char *dir) { return missing_file(dir) == NULL; }

/* True if dir looks like a checkpoint at all (it has a model config), complete or not. */
static bool looks_like_checkpoint(const char *dir) {
    char *p = or1_path_join(dir, "config.json");
    bool yes = or1_is_file(p);
    free(p);
    return yes;
}

/* The step of a folder named step-NNNNNN, or -1 for any other name (".tmp" included). */
static long step_of(const char *name) {
    if (strncmp(name, "step-", 5) != 0 || !name[5]) return -1;
    char *end;
    long s = strtol(name + 5, &end, 10);
    return *end || s < 0 ? -1 : s;
}

/* The step folders of root/checkpoints, ascending (complete ones only when complete). */
static long *list_steps(const char *root, bool complete, size_t *n) {
    char *dir = or1_path_join(root, "checkpoints");
    DIR *d = opendir(dir);
    long *steps = NULL;
    size_t cap = 0;
    *n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long s = step_of(e->d_name);
        char *p = s >= 0 ? or1_path_join(dir, e->d_name) : NULL;
        if (p && is_dir(p) && (!complete || complete_checkpoint(p))) {
            if (*n == cap) cap = cap ? 2 * cap : 16, steps = or1_realloc(steps, cap * sizeof *steps);
            steps[(*n)++] = s;
        }
        free(p);
    }
    if (d) closedir(d);
    free(dir);
    for (size_t i = 1; i < *n; i++) /* insertion sort: a run keeps few checkpoints */
        for (size_t j = i; j > 0 && steps[j] < steps[j - 1]; j--) {
            long x = steps[j];
            steps[j] = steps[j - 1], steps[j - 1] = x;
        }
    return steps;
}

/* root/checkpoints/step-NNNNNN as a new string. */
static char *step_dir(const char *root, long step) {
    char name[32];
    snprintf(name, sizeof name, "checkpoints/step-%06ld", step);
    return or1_path_join(root, name);
}

/* True if dir is a complete checkpoint whose files match its checksums.json (one written before
 * checksums were recorded passes on completeness alone); otherwise why not, in why. */
static bool intact(const char *dir, char *why, size_t size) {
    const char *lack = missing_file(dir);
    if (lack) snprintf(why, size, "%s: lacks %s", dir, lack);
    else if (or1_checksums_check(dir, NULL) < 0) snprintf(why, size, "%s", or1_error());
    else return true;
    return false;
}

/* The newest intact checkpoint of a run folder, or NULL when it has none; the newer ones passed
 * over are counted in *passed and, when talk, named with the reason. */
static char *newest_intact(const char *root, bool talk, size_t *passed) {
    size_t n;
    long *steps = list_steps(root, false, &n);
    char *dir = NULL, why[1024];
    *passed = 0;
    for (size_t i = n; i-- > 0 && !dir;) {
        char *d = step_dir(root, steps[i]);
        if (intact(d, why, sizeof why)) {
            dir = d;
            continue;
        }
        if (talk) fprintf(stderr, "train: passing over a damaged checkpoint: %s\n", why);
        ++*passed;
        free(d);
    }
    free(steps);
    return dir;
}

/* The checkpoint a run folder resumes from (NULL for a folder without checkpoints); fails when
 * it has checkpoints and none is intact, rather than starting the run over. */
static int run_folder_checkpoint(const char *root, const char *flag, bool talk, char **dir) {
    size_t passed;
    *dir = newest_intact(root, talk, &passed);
    if (passed && !*dir)
        return or1_fail("--resume %s: none of the %zu checkpoints in %s/checkpoints is intact (each named above); "
                        "restore one, or start over with --overwrite", flag, passed, root);
    if (passed && talk)
        fprintf(stderr, "train: --resume %s: the newest intact checkpoint is %s\n", flag, *dir);
    return 0;
}

/* A `latest` written as a text file by older versions: the checkpoint it names. */
static char *latest_file_target(const char *path) {
    char *text;
    size_t len;
    if (or1_read_file(path, 256, &text, &len)) return NULL;
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) text[--len] = '\0';
    char *base = or1_strdup(path), *slash = strrchr(base, '/');
    if (slash) *slash = '\0';
    char *dir = or1_path_join(slash ? base : ".", text);
    free(base), free(text);
    return dir;
}

/* A checkpoint named outright must be intact: no fallback to another one. */
static int named_checkpoint(const char *arg, char *dir) {
    if (or1_checksums_check(dir, NULL) < 0) return or1_fail_ctx("--resume %s", arg);
    return 0;
}

/* Removes a folder of the plain files a checkpoint holds. */
static void remove_files(const char *dir) {
    static const char *files[] = {"model.safetensors", "optimizer.safetensors", "config.json", "generation_config.json",
                                  "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                  "trainer_state.json", "config.yaml", "checksums.json", "async_pending.bin"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *p = or1_path_join(dir, files[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

/* Removes a checkpoint folder (an old one of the same step, or one past
 * checkpoint.keep_last), its reset reference included. */
void train_run_remove_checkpoint(const char *dir) {
    char *ref = or1_path_join(dir, CHECKPOINT_REFERENCE_DIR);
    remove_files(ref);
    free(ref);
    remove_files(dir);
}

/* See internal.h. */
int train_run_resume_dir(const or1_train_config *cfg, const char *arg, bool talk, char **dir) {
    *dir = NULL;
    if (!arg) return 0;
    if (strcmp(arg, "auto") == 0) return run_folder_checkpoint(cfg->output_dir, arg, talk, dir);
    if (is_dir(arg) && complete_checkpoint(arg)) {
        *dir = or1_strdup(arg);
        return named_checkpoint(arg, *dir);
    }
    if (is_dir(arg) && looks_like_checkpoint(arg))
        return or1_fail("--resume %s: the checkpoint lacks %s, so it cannot resume exactly", arg, missing_file(arg));
    if (is_dir(arg)) {
        if (run_folder_checkpoint(arg, arg, talk, dir)) return -1;
        if (!*dir)
            return or1_fail("--resume %s: neither a checkpoint (model, optimizer and trainer state) nor a run "
                            "folder with a complete checkpoint", arg);
        return 0;
    }
    if (or1_is_file(arg) && (*dir = latest_file_target(arg))) {
        if (!complete_checkpoint(*dir))
            return or1_fail("--resume %s: names %s, which is not a complete checkpoint", arg, *dir);
        return named_checkpoint(arg, *dir);
    }
    return or1_fail("--resume %s: no such checkpoint or run folder (give a checkpoint, a run folder or auto)", arg);
}

/* Removes root/name (a file or a link) if it is there. */
static void remove_entry(const char *root, const char *name) {
    char *p = or1_path_join(root, name);
    unlink(p);
    free(p);
}

/* See internal.h. */
int train_run_prepare_output(const or1_train_config *cfg, bool resuming, bool overwrite) {
    if (resuming) return 0;
    size_t n;
    long *steps = list_steps(cfg->output_dir, false, &n);
    char *metrics = or1_path_join(cfg->output_dir, "metrics.jsonl");
    bool used = or1_is_file(metrics) || n > 0;
    free(metrics);
    int rc = 0;
    if (used && !overwrite)
        rc = or1_fail("%s holds a run (metrics.jsonl, %zu checkpoints): --resume auto continues it, --overwrite "
                      "replaces it, or set output.dir to a new folder", cfg->output_dir, n);
    else if (used) {
        for (size_t i = 0; i < n; i++) {
            char *d = step_dir(cfg->output_dir, steps[i]);
            train_run_remove_checkpoint(d);
            free(d);
        }
        char *ck = or1_path_join(cfg->output_dir, "checkpoints");
        remove_entry(ck, "latest");
        free(ck);
        remove_entry(cfg->output_dir, "metrics.jsonl");
        fprintf(stderr, "train: --overwrite: removed the run in %s (%zu checkpoints and its metrics)\n",
                cfg->output_dir, n);
    }
    free(steps);
    return rc;
}

/* See internal.h: a relative symbolic link made beside it and renamed over it, so `latest`
 * always names a whole checkpoint and works as a path. */
int train_run_point_latest(const char *ck_root, const char *name) {
    char *link = or1_path_join(ck_root, "latest"), *tmp = or1_path_join(ck_root, ".latest.tmp");
    struct stat st;
    if (lstat(link, &st) == 0 && S_ISDIR(st.st_mode)) train_run_remove_checkpoint(link); /* a copy that followed the link */
    unlink(tmp);
    int rc = 0;
    if (symlink(name, tmp) != 0 || rename(tmp, link) != 0) {
        rc = or1_fail("%s: cannot point at %s: %s", link, name, strerror(errno));
        unlink(tmp);
    }
    free(link), free(tmp);
    return rc;
}

/* See internal.h. */
void train_run_keep_last(const char *root, int keep, long newest) {
    size_t n;
    long *steps = list_steps(root, false, &n);
    for (size_t i = 0; keep > 0 && i + (size_t)keep < n; i++)
        if (steps[i] != newest) {
            char *d = step_dir(root, steps[i]);
            train_run_remove_checkpoint(d);
            free(d);
        }
    free(steps);
}
