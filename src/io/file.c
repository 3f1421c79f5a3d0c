/* Whole-file reads, directory creation and atomic writes. */
#include "or1/core.h"
#include "or1/io.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a file into memory, refusing anything larger than max_bytes. */
int or1_read_file(const char *path, size_t max_bytes, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return or1_fail("%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = or1_malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max_bytes) {
                fclose(f);
                free(buf);
                return or1_fail("%s: larger than the %zu-byte limit", path, max_bytes);
            }
            cap = cap * 2 > max_bytes ? max_bytes : cap * 2;
            buf = or1_realloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return or1_fail("%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    if (len) *len = n;
    return 0;
}

/* True for an existing regular file. */
bool or1_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dir + "/" + name as a new string. */
char *or1_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = or1_malloc(a + b + 2);
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

/* mkdir -p: creates every missing component. */
int or1_mkdir_p(const char *path) {
    char *p = or1_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            return or1_fail("%s: cannot create directory: %s", path, strerror(e));
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        rc = or1_fail("%s: cannot create directory: %s", path, strerror(errno));
    free(p);
    return rc;
}

/* Creates the folders above path that do not exist yet (an output may go to a new folder). */
static int make_parent(const char *path) {
    char *copy = or1_strdup(path);
    char *dir = dirname(copy);
    int rc = strcmp(dir, ".") && strcmp(dir, "/") ? or1_mkdir_p(dir) : 0;
    free(copy);
    return rc ? or1_fail_ctx("%s: cannot create its folder", path) : 0;
}

/* Opens "<path>.tmp.<pid>" for writing; the real path is untouched until commit. */
int or1_atomic_open(or1_atomic_file *a, const char *path) {
    memset(a, 0, sizeof *a);
    if (make_parent(path)) return -1;
    size_t n = strlen(path) + 32;
    a->path = or1_strdup(path);
    a->tmp = or1_malloc(n);
    snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        int e = errno;
        free(a->path);
        free(a->tmp);
        a->path = a->tmp = NULL;
        return or1_fail("%s: cannot create: %s", path, strerror(e));
    }
    return 0;
}

/* fsyncs the directory holding path so the rename itself is durable. */
static void sync_parent_dir(const char *path) {
    char *copy = or1_strdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

/* Makes the written file visible under its real name, or leaves everything as it was. */
int or1_atomic_commit(or1_atomic_file *a) {
    int rc = 0;
    if (fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0)
        rc = or1_fail("%s: write failed: %s", a->path, strerror(errno));
    if (fclose(a->f) != 0 && rc == 0) rc = or1_fail("%s: close failed: %s", a->path, strerror(errno));
    a->f = NULL;
    if (rc == 0 && rename(a->tmp, a->path) != 0)
        rc = or1_fail("%s: rename failed: %s", a->path, strerror(errno));
    if (rc != 0) unlink(a->tmp);
    else sync_parent_dir(a->path);
    free(a->path);
    free(a->tmp);
    a->path = a->tmp = NULL;
    return rc;
}

/* Drops the temporary file. */
void or1_atomic_abort(or1_atomic_file *a) {
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    free(a->path);
    free(a->tmp);
    memset(a, 0, sizeof *a);
}

/* Whole buffer to path, atomically. */
int or1_write_file_atomic(const char *path, const void *data, size_t len) {
    or1_atomic_file a;
    if (or1_atomic_open(&a, path) != 0) return -1;
    if (len && fwrite(data, 1, len, a.f) != len) {
        or1_atomic_abort(&a);
        return or1_fail("%s: short write", path);
    }
    return or1_atomic_commit(&a);
}

/* Copies src to dst atomically (small files: configs, tokenizers). */
int or1_copy_file_atomic(const char *src, const char *dst) {
    char *data;
    size_t len;
    if (or1_read_file(src, (size_t)1 << 31, &data, &len) != 0) return -1;
    int rc = or1_write_file_atomic(dst, data, len);
    free(data);
    return rc;
}
