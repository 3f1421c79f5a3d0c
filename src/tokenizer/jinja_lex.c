/* The Jinja lexer: template text and the tokens inside {{ }} and {% %}, with whitespace
 * control exactly as transformers configures Jinja: trim_blocks (one newline after %} or #}
 * dropped), lstrip_blocks (spaces and tabs before {% or {# on their own line dropped),
 * "-" on either side of a tag strips all whitespace there, "+" turns trim/lstrip off. */
#include "jinja.h"
#include "tok.h"

#include <stdlib.h>
#include <string.h>

/* The lexer's cursor and token list. */
typedef struct {
    jx_ctx *c;
    const char *s;
    size_t n, pos;
    int line;
    size_t line_start;
    jx_token *t;
    size_t nt, cap;
} lexer;

/* Moves the cursor to p, counting lines. */
static void advance(lexer *L, size_t p) {
    for (; L->pos < p; L->pos++)
        if (L->s[L->pos] == '\n') L->line++, L->line_start = L->pos + 1;
}

/* Appends a token at the cursor's place. */
static jx_token *emit(lexer *L, jt_kind k, const char *s, size_t n) {
    if (L->nt == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jx_token *t = jx_alloc(L->c, cap * sizeof *t);
        if (L->nt) memcpy(t, L->t, L->nt * sizeof *t);
        L->t = t;
        L->cap = cap;
    }
    jx_token *t = &L->t[L->nt++];
    *t = (jx_token){.kind = k, .line = L->line, .col = (int)(L->pos - L->line_start) + 1, .s = s, .n = n};
    return t;
}

/* Length of the Python whitespace run that ends at s[n) going back; 0 if none. */
static size_t rspace(const char *s, size_t n) {
    size_t k = n;
    while (k > 0) {
        size_t b = k - 1, len; /* back to the start of the code point */
        while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80 && k - b < 4) b--;
        if (!jx_space_at(s + b, n - b, &len) || b + len != k) break;
        k = b;
    }
    return n - k;
}

/* Length of the Python whitespace run at s. */
static size_t lspace(const char *s, size_t n) {
    size_t k = 0, len;
    while (k < n && jx_space_at(s + k, n - k, &len)) k += len;
    return k;
}

/* The earliest "{{", "{%" or "{#" at or after pos, or n. */
static size_t next_tag(const char *s, size_t n, size_t pos) {
    for (const char *p = s + pos; (p = memchr(p, '{', n - (size_t)(p - s))) && p + 1 < s + n; p++)
        if (p[1] == '{' || p[1] == '%' || p[1] == '#') return (size_t)(p - s);
    return n;
}

/* Decodes a string literal's body as Python's unicode_escape does (after Jinja's lexer
 * matched it): \n \t \\ \' \" \xhh \uXXXX \UXXXXXXXX, octal; an unknown escape stays as written. */
static const char *unescape(lexer *L, const char *s, size_t n, size_t *out_n) {
    char *o = jx_alloc(L->c, n * 2 + 1), *w = o;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            *w++ = s[i];
            continue;
        }
        char e = s[++i];
        static const char from[] = "nrtabfv\\'\"\n", to[] = "\n\r\t\a\b\f\v\\'\"";
        const char *simple = e ? strchr(from, e) : NULL;
        if (simple) {
            if (e != '\n') *w++ = to[simple - from]; /* backslash-newline: a line continuation */
            continue;
        }
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (e >= '0' && e <= '7') {
            unsigned v = 0;
            int k = 0;
            for (; k < 3 && i < n && s[i] >= '0' && s[i] <= '7'; k++, i++) v = v * 8 + (unsigned)(s[i] - '0');
            i--;
            w += tok_utf8_put(w, (int32_t)v);
            continue;
        }
        if (e == 'N') /* \N{NAME}: no table of Unicode names here */
            jx_fail(L->c, L->line, (int)(L->pos - L->line_start) + 1, "\\N{...} escapes are not supported");
        if (!digits) {
            *w++ = '\\';
            *w++ = e;
            continue;
        }
        unsigned long v = 0;
        for (int k = 0; k < digits; k++) {
            char h = i + 1 + (size_t)k < n ? s[i + 1 + (size_t)k] : 0;
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) jx_fail(L->c, L->line, (int)(L->pos - L->line_start) + 1, "truncated \\%c escape in a string", e);
            v = v * 16 + (unsigned long)d;
        }
        if (v > 0x10FFFF) jx_fail(L->c, L->line, (int)(L->pos - L->line_start) + 1, "illegal Unicode character in a string");
        i += (size_t)digits;
        w += tok_utf8_put(w, (int32_t)v);
    }
    *out_n = (size_t)(w - o);
    return o;
}

/* A number: integer (with _ separators, 0b/0o/0x) or float; after a "." only an integer
 * (x.0.1 is two lookups, as Jinja's lookbehind has it). */
static void lex_number(lexer *L, bool after_dot) {
    const char *s = L->s;
    size_t p = L->pos, n = L->n;
    int base = 10;
    if (s[p] == '0' && p + 1 < n && strchr("bBoOxX", s[p + 1]) && s[p + 1]) {
        base = strchr("bB", s[p + 1]) ? 2 : strchr("oO", s[p + 1]) ? 8 : 16;
        p += 2;
    }
    char buf[64];
    size_t k = 0;
    bool is_float = false;
    for (; p < n && k < sizeof buf - 2; p++) {
        char ch = s[p];
        bool digit = base == 16 ? strchr("0123456789abcdefABCDEF", ch) && ch : ch >= '0' && ch <= '9';
        if (ch == '_' && p + 1 < n && (s[p + 1] >= '0' && s[p + 1] <= '9')) continue;
        if (digit) buf[k++] = ch;
        else if (base == 10 && !after_dot && ch == '.' && !is_float && p + 1 < n && s[p + 1] >= '0' && s[p + 1] <= '9')
            buf[k++] = ch, is_float = true;
        else if (base == 10 && !after_dot && (ch == 'e' || ch == 'E') && p + 1 < n &&
                 ((s[p + 1] >= '0' && s[p + 1] <= '9') ||
                  ((s[p + 1] == '+' || s[p + 1] == '-') && p + 2 < n && s[p + 2] >= '0' && s[p + 2] <= '9'))) {
            buf[k++] = ch;
            buf[k++] = s[++p];
            is_float = true;
        } else break;
    }
    buf[k] = '\0';
    jx_token *t = emit(L, is_float ? JT_FLOAT : JT_INT, NULL, 0);
    if (is_float) {
        t->f = strtod(buf, NULL);
    } else {
        char *end;
        unsigned long long v = strtoull(buf, &end, base);
        if (v > INT64_MAX || k > 19) jx_fail(L->c, t->line, t->col, "integer literal out of range");
        t->i = (int64_t)v;
    }
    advance(L, p);
}

/* True for the ASCII letters, digits and underscore of Jinja names (locale-independent). */
static bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* One token inside a tag; false at its end marker (which it consumes, with the
 * whitespace control that follows). */
static bool lex_in_tag(lexer *L, const char *end, bool block, bool *strip_after, bool *trim) {
    const char *s = L->s;
    size_t n = L->n;
    while (L->pos < n && strchr(" \t\n\r\f\v", s[L->pos]) && s[L->pos]) advance(L, L->pos + 1);
    if (L->pos >= n) jx_fail(L->c, L->line, (int)(L->pos - L->line_start) + 1, "unexpected end of template: unclosed tag");
    size_t p = L->pos;
    char ch = s[p];
    if ((ch == '-' || (ch == '+' && block)) && p + 2 < n && memcmp(s + p + 1, end, 2) == 0) {
        *strip_after = ch == '-';
        *trim = false;
        advance(L, p + 3);
        return false;
    }
    if (p + 1 < n && memcmp(s + p, end, 2) == 0) {
        *trim = block;
        advance(L, p + 2);
        return false;
    }
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
        size_t q = p;
        while (q < n && name_char(s[q])) q++;
        emit(L, JT_NAME, s + p, q - p);
        advance(L, q);
        return true;
    }
    if (ch >= '0' && ch <= '9') {
        lex_number(L, p > 0 && s[p - 1] == '.');
        return true;
    }
    if (ch == '\'' || ch == '"') {
        size_t q = p + 1;
        while (q < n && s[q] != ch) q += s[q] == '\\' ? 2 : 1;
        if (q >= n) jx_fail(L->c, L->line, (int)(p - L->line_start) + 1, "unterminated string literal");
        size_t len;
        const char *v = unescape(L, s + p + 1, q - p - 1, &len);
        emit(L, JT_STRING, v, len);
        advance(L, q + 1);
        return true;
    }
    static const char *const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                      "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", NULL};
    for (int i = 0; ops[i]; i++) {
        size_t k = strlen(ops[i]);
        if (p + k <= n && memcmp(s + p, ops[i], k) == 0) {
            emit(L, JT_OP, ops[i], k);
            advance(L, p + k);
            return true;
        }
    }
    jx_fail(L->c, L->line, (int)(p - L->line_start) + 1, "unexpected character '%c'", ch);
}

/* Emits text s[a, b) less what the tag at b strips before it ("-", or lstrip_blocks);
 * line_starting: the previous tag ended a line. */
static void emit_text(lexer *L, size_t a, size_t b, char tag, bool line_starting) {
    const char *s = L->s;
    char sign = b + 2 < L->n ? s[b + 2] : 0;
    if (tag && sign == '-') {
        b -= rspace(s + a, b - a);
    } else if (tag && tag != '{' && sign != '+') { /* lstrip_blocks */
        size_t l = b;
        while (l > a && s[l - 1] != '\n') l--;
        if ((l > a || line_starting) && l < b && lspace(s + l, b - l) == b - l) b = l;
    }
    if (b > a) emit(L, JT_TEXT, s + a, b - a);
}

/* A comment from its body to "#}": whether it ends "-#}" (strip what follows) or trims. */
static void lex_comment(lexer *L, size_t tag, size_t body, bool *strip, bool *trim) {
    const char *s = L->s;
    size_t close = body;
    while (close + 1 < L->n && !(s[close] == '#' && s[close + 1] == '}')) close++;
    if (close + 1 >= L->n) jx_fail(L->c, L->line, (int)(tag - L->line_start) + 1, "unclosed comment");
    bool minus = close > body && s[close - 1] == '-', plus = close > body && s[close - 1] == '+';
    *strip = minus;
    *trim = !minus && !plus;
    advance(L, close + 2);
}

/* Text, then each tag and what its whitespace control takes from the text after it. */
jx_token *jx_lex(jx_ctx *c, const char *src, size_t len, size_t *n) {
    lexer L = {.c = c, .s = src, .n = len, .line = 1};
    bool line_starting = true; /* the previous tag ended a line (or this is the start) */
    while (L.pos < len) {
        size_t tag = next_tag(src, len, L.pos);
        char kind = tag < len ? src[tag + 1] : 0;
        emit_text(&L, L.pos, tag, kind, line_starting);
        advance(&L, tag);
        if (tag >= len) break;
        size_t body = tag + 2 + (tag + 2 < len && (src[tag + 2] == '-' || src[tag + 2] == '+'));
        bool strip = false, trim = false;
        if (kind == '#') {
            lex_comment(&L, tag, body, &strip, &trim);
        } else {
            bool block = kind == '%';
            emit(&L, block ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, NULL, 0);
            advance(&L, body);
            while (lex_in_tag(&L, block ? "%}" : "}}", block, &strip, &trim)) {}
            emit(&L, block ? JT_BLOCK_END : JT_VAR_END, NULL, 0);
        }
        if (strip) /* "-%}" takes all the whitespace after it */
            advance(&L, L.pos + lspace(src + L.pos, len - L.pos));
        else if (trim && L.pos < len && src[L.pos] == '\n') /* trim_blocks: one newline */
            advance(&L, L.pos + 1);
        line_starting = src[L.pos - 1] == '\n';
    }
    emit(&L, JT_EOF, NULL, 0);
    *n = L.nt;
    return L.t;
}
