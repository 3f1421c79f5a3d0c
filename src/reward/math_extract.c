/* Math verifier: finding the final answer in a response. One forward pass with a stack of
 * open braces finds the last \boxed{...} / \fbox{...} whose braces balance, so 100 KB of
 * hostile braces cost linear time; failing that, a trailing "answer is X" / "Answer: X". */
#include "math_internal.h"

#include "or1/core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* True if s[i..] starts a \boxed or \fbox command; *brace gets the index of its '{'. */
static bool boxed_at(const char *s, size_t n, size_t i, size_t *brace) {
    size_t k;
    if (i + 6 <= n && memcmp(s + i, "\\boxed", 6) == 0) k = i + 6;
    else if (i + 5 <= n && memcmp(s + i, "\\fbox", 5) == 0) k = i + 5;
    else return false;
    while (k < n && (s[k] == ' ' || s[k] == '\n')) k++;
    if (k >= n || s[k] != '{') return false;
    *brace = k;
    return true;
}

/* The content span of the last balanced \boxed{...} in s[0..n); false if there is none. */
static bool last_boxed(const char *s, size_t n, size_t *start, size_t *len) {
    size_t cap = 64, depth = 0;
    size_t *stack = or1_malloc(cap * sizeof *stack);
    bool *is_box = or1_malloc(cap * sizeof *is_box);
    bool found = false;
    size_t next_box = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\') {
            size_t b;
            if (boxed_at(s, n, i, &b)) next_box = b;
            else if (i + 1 < n && (s[i + 1] == '{' || s[i + 1] == '}' || s[i + 1] == '\\')) i++;
            continue;
        }
        if (ch == '{') {
            if (depth == cap) {
                cap *= 2;
                stack = or1_realloc(stack, cap * sizeof *stack);
                is_box = or1_realloc(is_box, cap * sizeof *is_box);
            }
            stack[depth] = i;
            is_box[depth++] = i == next_box;
        } else if (ch == '}' && depth > 0) {
            depth--;
            if (is_box[depth] && (!found || stack[depth] + 1 > *start)) {
                *start = stack[depth] + 1;
                *len = i - stack[depth] - 1;
                found = true;
            }
        }
    }
    free(stack);
    free(is_box);
    return found;
}

/* Case-insensitive search for the last occurrence of needle in s[0..n). */
static bool last_ci(const char *s, size_t n, const char *needle, size_t *at) {
    size_t k = strlen(needle);
    if (k > n) return false;
    for (size_t i = n - k + 1; i-- > 0;)
        if (strncasecmp(s + i, needle, k) == 0) {
            *at = i;
            return true;
        }
    return false;
}

/* The answer after "answer is" / "answer:": a $...$ or \(...\) span if one starts
 * there, else the rest of the line up to a sentence end. */
static bool answer_phrase(const char *s, size_t n, size_t *start, size_t *len) {
    size_t a1 = 0, a2 = 0, at;
    bool f1 = last_ci(s, n, "answer is", &a1), f2 = last_ci(s, n, "answer:", &a2);
    if (!f1 && !f2) return false;
    at = f1 && (!f2 || a1 > a2) ? a1 + 9 : a2 + 7;
    while (at < n && (s[at] == ' ' || s[at] == ':' || s[at] == '*' || s[at] == '\t')) at++;
    size_t e = at;
    if (at + 1 < n && s[at] == '$') {
        size_t open = s[at + 1] == '$' ? 2 : 1;
        const char *close = open == 2 ? "$$" : "$";
        const char *q = memmem(s + at + open, n - at - open, close, open);
        if (!q) return false;
        *start = at + open;
        *len = (size_t)(q - s) - *start;
        return *len > 0;
    }
    if (at + 1 < n && s[at] == '\\' && (s[at + 1] == '(' || s[at + 1] == '[')) {
        const char *q = memmem(s + at + 2, n - at - 2, s[at + 1] == '(' ? "\\)" : "\\]", 2);
        if (!q) return false;
        *start = at + 2;
        *len = (size_t)(q - s) - *start;
        return *len > 0;
    }
    while (e < n && s[e] != '\n' && !(s[e] == '.' && (e + 1 == n || isspace((unsigned char)s[e + 1])))) e++;
    while (e > at && (isspace((unsigned char)s[e - 1]) || s[e - 1] == '*')) e--;
    *start = at;
    *len = e - at;
    return *len > 0;
}

/* The span of the final answer in the response s[0..n) (see or1_math_extract). */
bool mv_extract_span(const char *s, size_t n, size_t *start, size_t *len) {
    size_t from = 0, to = n;
    const char *think = memmem(s, n, "</think>", 8);
    if (think) {
        from = (size_t)(think - s) + 8;
        const char *second = memmem(s + from, n - from, "</think>", 8);
        if (second) to = (size_t)(second - s);
    }
    if (last_boxed(s + from, to - from, start, len) || answer_phrase(s + from, to - from, start, len)) {
        *start += from;
        return true;
    }
    return false;
}
