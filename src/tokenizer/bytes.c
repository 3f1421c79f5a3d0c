/* Small helpers of the tokenizer: id arrays, hashing, UTF-8, the byte-level alphabet. */
#include "tok.h"

#include "or1/core.h"

#include <string.h>

/* Appends one id, growing geometrically. */
void tok_ids_push(tok_ids *a, int32_t id) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = or1_realloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = id;
}

/* Appends n ids. */
void tok_ids_append(tok_ids *a, const int32_t *v, size_t n) {
    if (a->n + n > a->cap) {
        while (a->n + n > a->cap) a->cap = a->cap ? a->cap * 2 : 64;
        a->v = or1_realloc(a->v, a->cap * sizeof *a->v);
    }
    if (n) memcpy(a->v + a->n, v, n * sizeof *v);
    a->n += n;
}

/* FNV-1a over bytes, finished with a multiply-xorshift so low bits mix well. */
uint64_t tok_hash(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

/* Offset of the first byte that does not start a well-formed UTF-8 sequence (no
 * overlongs, surrogates or code points past U+10FFFF), or len when all is valid. */
size_t tok_utf8_check(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return i;
        if (i + need >= len) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += need + 1;
    }
    return len;
}

/* Decodes the code point at s (the caller validated the text). */
int tok_utf8_next(const unsigned char *s, int32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] < 0xE0) {
        *cp = (int32_t)((s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu));
        return 2;
    }
    if (s[0] < 0xF0) {
        *cp = (int32_t)((s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu));
        return 3;
    }
    *cp = (int32_t)((s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 |
                    (s[3] & 0x3Fu));
    return 4;
}

/* Writes cp as UTF-8; returns the byte count. */
int tok_utf8_put(char *buf, int32_t cp) {
    unsigned char *b = (unsigned char *)buf;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (unsigned char)(0xF0 | cp >> 18);
    b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* True for the bytes the byte-level alphabet writes as themselves (printable Latin-1). */
static bool byte_is_self(int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* The byte-level alphabet (GPT-2): printable Latin-1 bytes stand for themselves, the
 * other 68 bytes (0x00-0x20, 0x7F-0xA0, 0xAD) for U+0100 onwards in byte order.
 * Returns the byte of cp, or -1. */
int tok_byte_of_char(int32_t cp) {
    if (cp < 0 || cp >= 0x100 + 68) return -1;
    if (cp < 0x100) return byte_is_self(cp) ? cp : -1;
    int k = cp - 0x100;
    if (k < 33) return k;
    if (k < 67) return 0x7F + (k - 33);
    return 0xAD;
}
