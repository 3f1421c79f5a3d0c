/* JSONL streams and checked JSON field access on top of cJSON. */
#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Opens a JSONL file ("-" or "/dev/stdin" read standard input). */
int or1_jsonl_open(or1_jsonl_reader *r, const char *path) {
    memset(r, 0, sizeof *r);
    if (strcmp(path, "-") == 0) {
        r->f = stdin;
    } else {
        r->f = fopen(path, "rb");
        if (!r->f) return or1_fail("%s: cannot open: %s", path, strerror(errno));
        r->owns = true;
    }
    r->path = or1_strdup(path);
    return 0;
}

/* True if the line holds only whitespace. */
static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
    return true;
}

/* See io.h: the next non-blank line, its place recorded for messages. */
int or1_jsonl_next_line(or1_jsonl_reader *r, size_t *len) {
    for (;;) {
        errno = 0;
        ssize_t n = getline(&r->buf, &r->cap, r->f);
        if (n < 0) {
            if (ferror(r->f)) return or1_fail("%s:%zu: read error", r->path, r->line + 1);
            return 0;
        }
        r->line++;
        if (blank(r->buf, (size_t)n)) continue;
        snprintf(r->where, sizeof r->where, "%s:%zu", r->path, r->line);
        *len = (size_t)n;
        return 1;
    }
}

/* Next non-blank line parsed as JSON; errors carry path:line. */
int or1_jsonl_next(or1_jsonl_reader *r, cJSON **out) {
    size_t n;
    int got = or1_jsonl_next_line(r, &n);
    if (got <= 0) return got;
    *out = or1_json_parse(r->buf, n, r->where);
    return *out ? 1 : -1;
}

/* Frees the reader (closes the file unless it is stdin). */
void or1_jsonl_close(or1_jsonl_reader *r) {
    if (r->owns && r->f) fclose(r->f);
    free(r->buf);
    free(r->path);
    memset(r, 0, sizeof *r);
}

/* Reads every row of in, lets edit change or drop it, and commits out only if all went well. */
int or1_jsonl_rewrite(const char *in, const char *out, int (*edit)(cJSON *row, void *ctx), void *ctx) {
    or1_jsonl_reader r;
    or1_atomic_file a;
    if (or1_jsonl_open(&r, in)) return -1;
    if (or1_atomic_open(&a, out)) {
        or1_jsonl_close(&r);
        return -1;
    }
    cJSON *row;
    int rc;
    while ((rc = or1_jsonl_next(&r, &row)) == 1) {
        int keep = edit(row, ctx);
        if (keep > 0) {
            char *text = cJSON_PrintUnformatted(row);
            fprintf(a.f, "%s\n", text);
            free(text);
        }
        cJSON_Delete(row);
        if (keep < 0) {
            rc = -1;
            break;
        }
    }
    or1_jsonl_close(&r);
    if (rc < 0) {
        or1_atomic_abort(&a);
        return -1;
    }
    return or1_atomic_commit(&a);
}

/* True if the four bytes at p are the hex digits of U+0000. */
static bool zero_hex4(const char *p) { return p[0] == '0' && p[1] == '0' && p[2] == '0' && p[3] == '0'; }

/* See io.h: walks the text once, tracking whether it is inside a string and skipping each
 * escaped character, so that "\\u0000" (an escaped backslash) is not taken for U+0000. */
long or1_json_nul_at(const char *text, size_t len) {
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\0') return (long)i;
        if (c == '"') in_string = !in_string;
        else if (c == '\\' && in_string && i + 1 < len) {
            if (text[i + 1] == 'u' && i + 5 < len && zero_hex4(text + i + 2)) return (long)i;
            i++;
        }
    }
    return -1;
}

/* Parses text as one JSON value; the error gives the byte offset of the fault. */
cJSON *or1_json_parse(const char *text, size_t len, const char *where) {
    long nul = or1_json_nul_at(text, len);
    if (nul >= 0) {
        or1_fail("%s: %s at byte %ld: or1 keeps strings as C strings and refuses the text rather than "
                 "truncating it", where, text[nul] ? "a \\u0000 escape (U+0000) in a string" : "a NUL byte", nul);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!j) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        or1_fail("%s: invalid JSON near byte %zu", where, off);
        return NULL;
    }
    while (end && (size_t)(end - text) < len && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    if (end && (size_t)(end - text) < len && *end != '\0') {
        cJSON_Delete(j);
        or1_fail("%s: unexpected text after the JSON value at byte %zu", where, (size_t)(end - text));
        return NULL;
    }
    return j;
}

/* Looks up key; reports a missing key unless optional. */
static const cJSON *field(const cJSON *obj, const char *key, bool optional, const char *where) {
    if (!cJSON_IsObject(obj)) {
        or1_fail("%s: expected a JSON object", where);
        return NULL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if ((!v || cJSON_IsNull(v)) && !optional) or1_fail("%s: missing key \"%s\"", where, key);
    return v;
}

/* Validates an integral number within [lo, hi]. */
static int as_int(const cJSON *v, const char *key, int64_t lo, int64_t hi, int64_t *out,
                  const char *where) {
    if (!cJSON_IsNumber(v))
        return or1_fail("%s: key \"%s\" must be an integer", where, key);
    double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return or1_fail("%s: key \"%s\" = %g is not an integer in [%lld, %lld]", where, key, d,
                        (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

/* Required integer field in [lo, hi]. */
int or1_json_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 const char *where) {
    const cJSON *v = field(obj, key, false, where);
    if (!v || cJSON_IsNull(v)) return -1;
    return as_int(v, key, lo, hi, out, where);
}

/* Optional integer field in [lo, hi]. */
int or1_json_int_opt(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                     const char *where) {
    if (!cJSON_IsObject(obj)) return or1_fail("%s: expected a JSON object", where);
    const cJSON *v = field(obj, key, true, where);
    if (!v || cJSON_IsNull(v)) return 0;
    return as_int(v, key, lo, hi, out, where);
}

/* Validates a finite number. */
static int as_num(const cJSON *v, const char *key, double *out, const char *where) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return or1_fail("%s: key \"%s\" must be a finite number", where, key);
    *out = v->valuedouble;
    return 0;
}

/* Required finite number. */
int or1_json_num(const cJSON *obj, const char *key, double *out, const char *where) {
    const cJSON *v = field(obj, key, false, where);
    if (!v || cJSON_IsNull(v)) return -1;
    return as_num(v, key, out, where);
}

/* Optional finite number. */
int or1_json_num_opt(const cJSON *obj, const char *key, double *out, const char *where) {
    if (!cJSON_IsObject(obj)) return or1_fail("%s: expected a JSON object", where);
    const cJSON *v = field(obj, key, true, where);
    if (!v || cJSON_IsNull(v)) return 0;
    return as_num(v, key, out, where);
}

/* Optional boolean. */
int or1_json_bool_opt(const cJSON *obj, const char *key, bool *out, const char *where) {
    if (!cJSON_IsObject(obj)) return or1_fail("%s: expected a JSON object", where);
    const cJSON *v = field(obj, key, true, where);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return or1_fail("%s: key \"%s\" must be true or false", where, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* Required string. */
const char *or1_json_str(const cJSON *obj, const char *key, const char *where) {
    const cJSON *v = field(obj, key, false, where);
    if (!v || cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsString(v)) {
        or1_fail("%s: key \"%s\" must be a string", where, key);
        return NULL;
    }
    return v->valuestring;
}

/* Required array of integers in [lo, hi]. */
int or1_json_int_array(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int32_t **out,
                       size_t *n, const char *where) {
    const cJSON *v = field(obj, key, false, where);
    if (!v || cJSON_IsNull(v)) return -1;
    if (!cJSON_IsArray(v)) return or1_fail("%s: key \"%s\" must be an array", where, key);
    size_t len = (size_t)cJSON_GetArraySize(v), i = 0;
    int32_t *a = or1_malloc(len * sizeof *a);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        double d = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(d >= (double)lo && d <= (double)hi) || d != floor(d)) {
            free(a);
            return or1_fail("%s: \"%s\"[%zu] is not an integer in [%lld, %lld]", where, key, i,
                            (long long)lo, (long long)hi);
        }
        a[i++] = (int32_t)d;
    }
    *out = a;
    *n = len;
    return 0;
}

/* Required array of finite numbers. */
int or1_json_float_array(const cJSON *obj, const char *key, float **out, size_t *n,
                         const char *where) {
    const cJSON *v = field(obj, key, false, where);
    if (!v || cJSON_IsNull(v)) return -1;
    if (!cJSON_IsArray(v)) return or1_fail("%s: key \"%s\" must be an array", where, key);
    size_t len = (size_t)cJSON_GetArraySize(v), i = 0;
    float *a = or1_malloc(len * sizeof *a);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
            free(a);
            return or1_fail("%s: \"%s\"[%zu] is not a finite number", where, key, i);
        }
        a[i++] = (float)e->valuedouble;
    }
    *out = a;
    *n = len;
    return 0;
}

/* Floats with 9 significant digits (exact fp32 round trip). */
void or1_json_write_floats(FILE *f, const float *x, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ",%.9g" : "%.9g", (double)x[i]);
    fputc(']', f);
}

/* See io.h. */
size_t or1_first_nonfinite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

/* Integers as a JSON array. */
void or1_json_write_ints(FILE *f, const int32_t *x, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ",%d" : "%d", x[i]);
    fputc(']', f);
}

/* Bytes as a JSON array of numbers. */
void or1_json_write_u8s(FILE *f, const uint8_t *x, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ",%u" : "%u", (unsigned)x[i]);
    fputc(']', f);
}

/* A JSON string literal; control characters escaped, UTF-8 passed through. */
void or1_json_write_string(FILE *f, const char *s) { or1_json_write_string_n(f, s, strlen(s)); }

/* n bytes as a JSON string literal: as or1_json_write_string, a NUL byte written as \u0000. */
void or1_json_write_string_n(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s, *end = p + n; p < end; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}
