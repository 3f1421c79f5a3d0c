/* Texts to encode read from JSONL rows with U+0000 kept: cJSON's strings end at their first
 * NUL, so a \u0000 escape would cut a text short; here it is a character like any other, as
 * Python's json reads it and Hugging Face's tokenizers encodes it. */
#include "tok.h"

#include "or1/core.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Offset of the next \u0000 escape in JSON text s[from, n), or n. A backslash pairs with the
 * character after it, so the "u0000" of "\\u0000" (an escaped backslash, then plain text) is
 * not an escape; from must not fall inside one. A backslash outside a string makes the JSON
 * invalid, which the parser reports. */
static size_t next_nul_escape(const char *s, size_t n, size_t from) {
    for (size_t i = from; i + 1 < n; i++) {
        if (s[i] != '\\') continue;
        if (i + 5 < n && memcmp(s + i + 1, "u0000", 5) == 0) return i;
        i++;
    }
    return n;
}

/* Parses one JSON object and copies its string key into a new NUL-terminated buffer of *len
 * bytes; NULL with an error naming where. */
static char *string_of(const char *line, size_t n, const char *key, const char *where, size_t *len) {
    cJSON *row = or1_json_parse(line, n, where);
    if (!row) return NULL;
    const char *s = or1_json_str(row, key, where);
    char *out = NULL;
    if (s) {
        *len = strlen(s);
        out = or1_malloc(*len + 1);
        memcpy(out, s, *len + 1);
    }
    cJSON_Delete(row);
    return out;
}

/* The string key of one JSON object line, U+0000 kept. The line is parsed with each \u0000
 * escape turned into \u0001 and, when it holds any, once more with them turned into \u0002:
 * only those escapes differ between the two texts and each decodes to one byte, so the two
 * strings differ exactly where the text holds U+0000. The line is changed in place. */
static char *text_of_line(char *line, size_t n, const char *key, const char *where, size_t *len) {
    size_t at = next_nul_escape(line, n, 0);
    if (at == n) return string_of(line, n, key, where, len);
    char *other = or1_malloc(n);
    memcpy(other, line, n);
    for (; at < n; at = next_nul_escape(line, n, at + 6)) {
        line[at + 5] = '1';
        other[at + 5] = '2';
    }
    size_t other_len = 0;
    char *a = string_of(line, n, key, where, len);
    char *b = a ? string_of(other, n, key, where, &other_len) : NULL;
    free(other);
    if (!b) {
        free(a);
        return NULL;
    }
    for (size_t i = 0; i < *len && i < other_len; i++)
        if (a[i] != b[i]) a[i] = '\0';
    free(b);
    return a;
}

/* See tokenizer.h: the reader's next line (or1_jsonl_next_line), then the key's string
 * through text_of_line. */
int or1_tokenizer_read_text(or1_jsonl_reader *r, const char *key, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    size_t n;
    int got = or1_jsonl_next_line(r, &n);
    if (got <= 0) return got;
    *text = text_of_line(r->buf, n, key, r->where, len);
    return *text ? 1 : -1;
}
