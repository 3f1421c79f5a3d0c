/* Checkpoint integrity: checksums.json records the size and XXH3-128 hash of every file a
 * checkpoint folder holds (its reference/ subfolder included), written last, before the folder is
 * renamed into place; a load or resume checks the files it reads against it, so a flipped byte,
 * a truncated shard or a missing file is refused naming the file instead of loading quietly. */
#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CHECKSUMS_NAME "checksums.json"
#define CHECKSUMS_ALGORITHM "XXH3-128"
/* The deepest subfolder a checkpoint has (reference/) and the most files it lists. */
enum { MAX_DEPTH = 1, MAX_FILES = 1 << 16 };

/* A file's size and hash, the hash as 32 lower-case hex digits. */
typedef struct {
    long long bytes;
    char hex[33];
} digest;

/* Streams a file through XXH3-128. */
static int hash_file(const char *path, digest *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return or1_fail("%s: cannot open: %s", path, strerror(errno));
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        close(fd);
        return or1_fail("%s: out of memory for the hash state", path);
    }
    XXH3_128bits_reset(st);
    enum { CHUNK = 1 << 20 };
    char *buf = or1_malloc(CHUNK);
    long long total = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = or1_fail("%s: read error: %s", path, strerror(errno));
        if (n <= 0) break;
        XXH3_128bits_update(st, buf, (size_t)n);
        total += n;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
    for (int i = 0; i < 16; i++) snprintf(out->hex + 2 * i, 3, "%02x", c.digest[i]);
    out->bytes = total;
    XXH3_freeState(st);
    free(buf);
    close(fd);
    return rc;
}

/* Orders file names bytewise, so the record is the same whatever readdir's order. */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Adds the regular files under dir/prefix (names relative to dir) to *names, descending into
 * subfolders up to MAX_DEPTH; hidden entries and checksums.json itself are left out. */
static int list_files(const char *dir, const char *prefix, int depth, char ***names, size_t *n, size_t *cap) {
    char *here = *prefix ? or1_path_join(dir, prefix) : or1_strdup(dir);
    DIR *d = opendir(here);
    int rc = d ? 0 : or1_fail("%s: cannot list: %s", here, strerror(errno));
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.' || (!*prefix && strcmp(e->d_name, CHECKSUMS_NAME) == 0)) continue;
        char *rel = *prefix ? or1_path_join(prefix, e->d_name) : or1_strdup(e->d_name), *full = or1_path_join(dir, rel);
        struct stat st;
        if (lstat(full, &st) != 0) rc = or1_fail("%s: cannot stat: %s", full, strerror(errno));
        else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) rc = list_files(dir, rel, depth + 1, names, n, cap);
        else if (S_ISREG(st.st_mode)) {
            if (*n == *cap) *cap = *cap ? 2 * *cap : 16, *names = or1_realloc(*names, *cap * sizeof **names);
            (*names)[(*n)++] = rel, rel = NULL;
        }
        free(rel), free(full);
    }
    if (d) closedir(d);
    free(here);
    return rc;
}

/* See io.h. */
int or1_checksums_write(const char *dir) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = list_files(dir, "", 0, &names, &n, &cap);
    if (n) qsort(names, n, sizeof *names, by_name);
    cJSON *root = cJSON_CreateObject(), *files = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "algorithm", CHECKSUMS_ALGORITHM);
    cJSON_AddItemToObject(root, "files", files);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *path = or1_path_join(dir, names[i]);
        digest g;
        rc = hash_file(path, &g);
        if (rc == 0) {
            cJSON *f = cJSON_AddObjectToObject(files, names[i]);
            cJSON_AddNumberToObject(f, "bytes", (double)g.bytes);
            cJSON_AddStringToObject(f, "xxh3_128", g.hex);
        }
        free(path);
    }
    char *text = rc == 0 ? cJSON_Print(root) : NULL, *out = or1_path_join(dir, CHECKSUMS_NAME);
    if (rc == 0) rc = or1_write_file_atomic(out, text, strlen(text));
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names), free(text), free(out);
    cJSON_Delete(root);
    return rc;
}

/* True if name is a plain relative path inside the checkpoint: no leading '/', no "." or ".."
 * component, no empty component, at most MAX_DEPTH folders deep. */
static bool inside(const char *name) {
    int slashes = 0;
    for (const char *p = name;; p++) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (!end) return slashes <= MAX_DEPTH;
        slashes++;
        p = end;
    }
}

/* True if s is 32 lower-case hex digits. */
static bool is_hex32(const char *s) {
    size_t n = strlen(s);
    return n == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* Checks one recorded file against dir's copy: present, the recorded size, the recorded hash. */
static int check_entry(const char *dir, const cJSON *e, const char *where) {
    if (!inside(e->string))
        return or1_fail("%s: file \"%s\" is not a path inside the checkpoint", where, e->string);
    int64_t bytes;
    if (!cJSON_IsObject(e)) return or1_fail("%s: file \"%s\": expected an object", where, e->string);
    if (or1_json_int(e, "bytes", 0, INT64_MAX, &bytes, where)) return -1;
    const char *want = or1_json_str(e, "xxh3_128", where);
    if (!want) return -1;
    if (!is_hex32(want))
        return or1_fail("%s: file \"%s\": \"xxh3_128\" must be 32 lower-case hex digits", where, e->string);
    char *path = or1_path_join(dir, e->string);
    struct stat st;
    digest g;
    int rc = 0;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        rc = or1_fail("%s: missing, but %s lists it", path, where);
    else if ((long long)st.st_size != bytes)
        rc = or1_fail("%s: %lld bytes where %s records %lld: the file was cut short or replaced", path,
                      (long long)st.st_size, where, (long long)bytes);
    else if (hash_file(path, &g) != 0)
        rc = -1;
    else if (g.bytes != bytes)
        rc = or1_fail("%s: read %lld bytes where %s records %lld: the file changed while it was read", path,
                      g.bytes, where, (long long)bytes);
    else if (strcmp(g.hex, want) != 0)
        rc = or1_fail("%s: its %s hash %s differs from the %s that %s records: the file was damaged or changed "
                      "after the checkpoint was written", path, CHECKSUMS_ALGORITHM, g.hex, want, where);
    free(path);
    return rc;
}

/* See io.h. */
int or1_checksums_check(const char *dir, bool (*wanted)(const char *name)) {
    char *where = or1_path_join(dir, CHECKSUMS_NAME), *text = NULL;
    size_t len;
    if (!or1_is_file(where)) {
        free(where);
        return 0;
    }
    int rc = or1_read_file(where, 64u << 20, &text, &len);
    cJSON *j = rc == 0 ? or1_json_parse(text, len, where) : NULL;
    const char *alg = j ? or1_json_str(j, "algorithm", where) : NULL;
    const cJSON *files = j ? cJSON_GetObjectItemCaseSensitive(j, "files") : NULL;
    rc = alg ? 0 : -1;
    if (rc == 0 && strcmp(alg, CHECKSUMS_ALGORITHM) != 0)
        rc = or1_fail("%s: algorithm \"%s\" is not %s, the one or1 writes", where, alg, CHECKSUMS_ALGORITHM);
    if (rc == 0 && !cJSON_IsObject(files)) rc = or1_fail("%s: \"files\" must be an object", where);
    if (rc == 0 && cJSON_GetArraySize(files) > MAX_FILES)
        rc = or1_fail("%s: more than %d files listed", where, MAX_FILES);
    const cJSON *e;
    if (rc == 0)
        cJSON_ArrayForEach(e, files) {
            if (wanted && !wanted(e->string)) continue;
            if ((rc = check_entry(dir, e, where)) != 0) break;
        }
    cJSON_Delete(j);
    free(text), free(where);
    return rc ? -1 : 1;
}
