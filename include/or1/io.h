/* or1 io: whole-file reads, atomic writes, JSONL streams and checked JSON field access.
 * Every error message names the file (and line or key) it concerns. */
#ifndef OR1_IO_H
#define OR1_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cJSON cJSON;

/* Reads a whole file into a NUL-terminated buffer; fails if it exceeds max_bytes. */
int or1_read_file(const char *path, size_t max_bytes, char **data, size_t *len);
/* Creates a directory and its parents (like mkdir -p). */
int or1_mkdir_p(const char *path);
/* True if path names an existing regular file. */
bool or1_is_file(const char *path);
/* Joins dir and name with one '/', into a new string. */
char *or1_path_join(const char *dir, const char *name);

/* A file written under a temporary name and renamed into place on commit, so a
 * reader never sees a half-written file and a crash leaves the old one intact. */
typedef struct {
    FILE *f;
    char *path;
    char *tmp;
} or1_atomic_file;

int or1_atomic_open(or1_atomic_file *a, const char *path); /* makes missing parent folders */
/* Flushes, fsyncs, renames into place and fsyncs the directory. */
int or1_atomic_commit(or1_atomic_file *a);
/* Discards the temporary file (safe after a failed commit or before any). */
void or1_atomic_abort(or1_atomic_file *a);
/* Writes a buffer to path atomically. */
int or1_write_file_atomic(const char *path, const void *data, size_t len);
/* Copies a file atomically (used to carry config/tokenizer files beside checkpoints). */
int or1_copy_file_atomic(const char *src, const char *dst);

/* Checkpoint integrity (checksums.json: each file's size and XXH3-128 hash). Records every
 * file of dir and of its subfolders (written last, before the folder is renamed into place). */
int or1_checksums_write(const char *dir);
/* Checks the recorded files that wanted accepts (all when NULL) against dir's copies: 1 when
 * every one matches, 0 when dir has no checksums.json (a checkpoint of an older or1, or a
 * Hugging Face model folder), -1 naming the first missing, cut short or damaged file. */
int or1_checksums_check(const char *dir, bool (*wanted)(const char *name));

/* The size of a "path:line" place in messages. */
enum { OR1_WHERE_MAX = 600 };

/* JSONL input: one JSON value per non-blank line. */
typedef struct {
    FILE *f;
    char *path;
    size_t line;
    char *buf;
    size_t cap;
    bool owns;
    char where[OR1_WHERE_MAX]; /* "path:line" of the row last read, for callers' error messages */
} or1_jsonl_reader;

int or1_jsonl_open(or1_jsonl_reader *r, const char *path);
/* Reads the next row: 1 and *out set (caller frees with cJSON_Delete), 0 at end of
 * input, -1 on a parse error naming path:line. */
int or1_jsonl_next(or1_jsonl_reader *r, cJSON **out);
/* Reads the next non-blank line into r->buf without parsing it: 1 with *len its length and
 * r->where set, 0 at end of input, -1 on a read error. */
int or1_jsonl_next_line(or1_jsonl_reader *r, size_t *len);
void or1_jsonl_close(or1_jsonl_reader *r);

/* Rewrites a JSONL file row by row into out (atomically; out may equal in): edit returns 1 to
 * keep the (possibly changed) row, 0 to drop it, -1 to fail. */
int or1_jsonl_rewrite(const char *in, const char *out, int (*edit)(cJSON *row, void *ctx), void *ctx);

/* Parses JSON text; on error names `where` and the byte offset of the fault. Text holding a
 * NUL byte or a \u0000 escape in a string is refused (cJSON's C strings would end there,
 * silently truncating the value). */
cJSON *or1_json_parse(const char *text, size_t len, const char *where);

/* The offset of the first NUL byte, or of the first \u0000 escape inside a string, in JSON
 * text; -1 when there is none. */
long or1_json_nul_at(const char *text, size_t len);

/* Checked field access. `where` (e.g. "config.json" or "batch.jsonl:3") prefixes errors.
 * The *_opt variants leave *out unchanged when the key is absent or null. */
int or1_json_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 const char *where);
int or1_json_int_opt(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                     const char *where);
int or1_json_num(const cJSON *obj, const char *key, double *out, const char *where);
int or1_json_num_opt(const cJSON *obj, const char *key, double *out, const char *where);
int or1_json_bool_opt(const cJSON *obj, const char *key, bool *out, const char *where);
/* Returns the string value of key, or NULL with an error. */
const char *or1_json_str(const cJSON *obj, const char *key, const char *where);
/* An array of integers in [lo, hi] into a new int32 array. */
int or1_json_int_array(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int32_t **out,
                       size_t *n, const char *where);
/* An array of finite numbers into a new float array. */
int or1_json_float_array(const cJSON *obj, const char *key, float **out, size_t *n,
                         const char *where);

/* Writes a float array as a JSON array with enough digits to round-trip. Every value must be
 * finite (JSON has no NaN or infinity): callers check with or1_first_nonfinite first. */
void or1_json_write_floats(FILE *f, const float *x, size_t n);
/* The index of the first value of x[0, n) that JSON cannot hold (NaN, an infinity), or n. */
size_t or1_first_nonfinite(const float *x, size_t n);
/* Writes an int32 array as a JSON array. */
void or1_json_write_ints(FILE *f, const int32_t *x, size_t n);
/* Writes a byte array (a mask) as a JSON array of numbers. */
void or1_json_write_u8s(FILE *f, const uint8_t *x, size_t n);
/* Writes a JSON string literal with escapes. */
void or1_json_write_string(FILE *f, const char *s);
/* The same for n bytes that may hold a NUL (written as \u0000, as decoded text can hold one). */
void or1_json_write_string_n(FILE *f, const char *s, size_t n);

#endif
