/* Math verifier: finding the final answer in a response, in the order Math-Verify tries its
 * patterns: "final answer is X. I hope", the last \boxed{} (with the boxes chained to it by
 * "and", "or" or a comma), "final answer ... is X", an "answer" anchor (several languages),
 * the last LaTeX math span (with the last fraction or number up to its end as the candidate
 * to read if it does not parse), and last the last number. Every step is one linear pass (the
 * brace scan keeps a stack; anchors are searched from the end), so 1 MB of hostile text costs
 * linear time and no step recurses. The strict rule (reward.strict_box) reads the last box alone. */
#include "math_internal.h"

#include "or1/core.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A box found by the brace scan: the span of its content and of the whole command. */
typedef struct {
    size_t cmd, start, len, end;
} box;

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

/* Keeps the last MV_MAX_PARTS outermost boxes in ring (in order); a box that encloses
 * earlier ones replaces them. */
static void keep_box(box *ring, int *nr, box b) {
    while (*nr > 0 && ring[*nr - 1].start > b.start) (*nr)--;
    if (*nr == MV_MAX_PARTS) {
        memmove(ring, ring + 1, (MV_MAX_PARTS - 1) * sizeof *ring);
        (*nr)--;
    }
    ring[(*nr)++] = b;
}

/* The last MV_MAX_PARTS balanced, outermost \boxed{...} of s[0..n) in order; their count. */
static int last_boxes(const char *s, size_t n, box *ring) {
    size_t cap = 64, depth = 0, next_box = (size_t)-1, next_cmd = 0;
    size_t *stack = or1_malloc(cap * sizeof *stack), *cmd = or1_malloc(cap * sizeof *cmd);
    int nr = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\') {
            size_t b;
            if (boxed_at(s, n, i, &b)) next_box = b, next_cmd = i;
            else if (i + 1 < n && (s[i + 1] == '{' || s[i + 1] == '}')) i++;
            continue;
        }
        if (ch == '{') {
            if (depth == cap) {
                cap *= 2;
                stack = or1_realloc(stack, cap * sizeof *stack);
                cmd = or1_realloc(cmd, cap * sizeof *cmd);
            }
            stack[depth] = i;
            cmd[depth++] = i == next_box ? next_cmd : (size_t)-1;
        } else if (ch == '}' && depth > 0) {
            depth--;
            if (cmd[depth] != (size_t)-1)
                keep_box(ring, &nr, (box){cmd[depth], stack[depth] + 1, i - stack[depth] - 1, i + 1});
        }
    }
    free(stack);
    free(cmd);
    return nr;
}

/* True if s[i..] starts with word (ASCII case-insensitive). */
static bool word_at(const char *s, size_t n, size_t i, const char *word) {
    size_t k = strlen(word);
    return i + k <= n && strncasecmp(s + i, word, k) == 0;
}

/* True if the text between two boxes joins them into one answer: nothing but spacing
 * inside one math span, or a connector ("and", "or", ",") outside the math spans, with at
 * most one other word and a short label ("y_2 =") inside the next span. inside tells whether
 * s[a] is inside a math span, so that delimiters are counted from the right state. */
static bool boxes_joined(const char *s, size_t a, size_t b, bool inside) {
    size_t words = 0, connectors = 0, other = 0, delims = 0;
    bool last_connector = false;
    for (size_t i = a; i < b;) {
        unsigned char ch = (unsigned char)s[i];
        if (isspace(ch) || ch == '.' || ch == '~') {
            i++;
        } else if (ch == '$' || (ch == '\\' && i + 1 < b && strchr("()[]", s[i + 1]))) {
            delims++;
            i += ch == '$' ? 1 : 2;
        } else if (ch == '\\' && i + 1 < b) {
            size_t k = i + 1;
            while (k < b && isalpha((unsigned char)s[k])) k++;
            i = k > i + 1 ? k : i + 2; /* spacing and \text are neutral; the word inside counts */
            if (i < b && s[i] == '{') i++;
        } else if (ch == ',' || word_at(s, b, i, "and") || word_at(s, b, i, "or")) {
            connectors++, last_connector = true;
            i += ch == ',' ? 1 : (word_at(s, b, i, "and") ? 3 : 2);
        } else if (isalnum(ch) || ch >= 0x80) {
            while (i < b && (isalnum((unsigned char)s[i]) || (unsigned char)s[i] >= 0x80 || s[i] == '_')) i++;
            bool outside = (delims + inside) % 2 == 0;
            words++;
            if (outside && last_connector) return false;
            if (outside || !last_connector) other++;
        } else {
            i++;
        }
        if (b - a > 80) return false;
    }
    if (connectors == 0) return delims == 0 && words == 0;
    return other <= 1 && words <= 3;
}

/* The math span opening at s[i] ($, $$, \( or \[): its content in *start and *len, the index
 * past its closing delimiter in *end; false if s[i] opens none or it does not close. Inline
 * spans do not cross a line break. */
static bool math_span_at(const char *s, size_t n, size_t i, size_t *start, size_t *len, size_t *end,
                         size_t *dead) {
    const char *close;
    size_t open, kind;
    bool inline_span;
    if (s[i] == '$' && i + 1 < n && s[i + 1] == '$') close = "$$", open = 2, inline_span = false, kind = 0;
    else if (s[i] == '$') close = "$", open = 1, inline_span = true, kind = 1;
    else if (s[i] == '\\' && i + 1 < n && s[i + 1] == '(') close = "\\)", open = 2, inline_span = true, kind = 2;
    else if (s[i] == '\\' && i + 1 < n && s[i + 1] == '[') close = "\\]", open = 2, inline_span = false, kind = 3;
    else return false;
    if (dead && i >= dead[kind]) return false; /* no closer after an earlier opener: none after this one */
    size_t cl = strlen(close);
    for (size_t k = i + open; k + cl <= n; k++) {
        if (inline_span && s[k] == '\n') return false;
        if (s[k] == '\\' && s[k + 1] == '$') {
            k++;
            continue;
        }
        if (memcmp(s + k, close, cl) == 0) {
            *start = i + open;
            *len = k - *start;
            *end = k + cl;
            return true;
        }
    }
    if (dead) dead[kind] = i;
    return false;
}

/* True if s[a..a+len) holds something other than spacing. */
static bool has_content(const char *s, size_t a, size_t len) {
    for (size_t k = a; k < a + len; k++)
        if (!isspace((unsigned char)s[k])) return true;
    return false;
}

/* The next math span of s[*i..to) (empty ones too): its content in *a, *l and its end in *e;
 * *i moves past it. dead holds the openers known not to close (see math_span_at). False when
 * there is none. A scan of the whole text with these calls is linear. */
static bool next_span(const char *s, size_t to, size_t *i, size_t *dead, size_t *a, size_t *l, size_t *e) {
    while (*i < to) {
        size_t k = *i;
        if (s[k] == '\\' && k + 1 < to && s[k + 1] == '$') {
            *i += 2;
        } else if ((s[k] == '$' || s[k] == '\\') && math_span_at(s, to, k, a, l, e, dead)) {
            *i = *e;
            return true;
        } else {
            (*i)++;
        }
    }
    return false;
}

/* The last non-empty math spans of s[from..to), those chained to the last one by "and",
 * "or" or a comma ("$1$ and $2$"), in order; scanning left to right pairs the delimiters
 * as a reader pairs them. False if there is none. */
static bool last_math_spans(const char *s, size_t from, size_t to, mv_spans *out) {
    size_t ends[MV_MAX_PARTS], dead[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}, i = from, a, l, e;
    int n = 0;
    while (next_span(s, to, &i, dead, &a, &l, &e)) {
        if (!has_content(s, a, l)) continue;
        size_t open = a - (e - a - l); /* the opener is as long as the closer */
        bool chained = n > 0 && open > ends[n - 1] && boxes_joined(s, ends[n - 1], open, false);
        if (!chained) n = 0, out->n = 0;
        if (n == MV_MAX_PARTS) break;
        ends[n++] = e;
        out->start[out->n] = a;
        out->len[out->n++] = l;
    }
    out->number = false;
    return n > 0;
}

/* For each of the nr boxes of ring (in order, offsets in s[0..n)), the opener of the math
 * span that holds it, or SIZE_MAX when none does; one linear pass over the spans. */
static void box_spans(const char *s, size_t n, const box *ring, int nr, size_t *span) {
    size_t dead[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}, i = 0, a, l, e;
    int k = 0;
    for (int j = 0; j < nr; j++) span[j] = SIZE_MAX;
    while (k < nr && next_span(s, n, &i, dead, &a, &l, &e)) {
        while (k < nr && ring[k].cmd < a) k++;
        for (; k < nr && ring[k].end <= a + l; k++) span[k] = a;
    }
}

/* Fills out with the last box of s[from..to) and the boxes joined to it: those in the same
 * math span (Math-Verify reads every box of a span) and those chained by "and", "or" or a
 * comma; false if there is no box. */
static bool box_answer(const char *s, size_t from, size_t to, mv_spans *out) {
    box ring[MV_MAX_PARTS];
    size_t span[MV_MAX_PARTS];
    int nr = last_boxes(s + from, to - from, ring), first = nr - 1;
    if (nr == 0) return false;
    box_spans(s + from, to - from, ring, nr, span);
    while (first > 0 && ((span[first] != SIZE_MAX && span[first - 1] == span[first]) ||
                         boxes_joined(s + from, ring[first - 1].end, ring[first].cmd, span[first - 1] != SIZE_MAX)))
        first--;
    out->n = 0;
    for (int k = first; k < nr; k++) {
        out->start[out->n] = from + ring[k].start;
        out->len[out->n++] = ring[k].len;
    }
    out->number = false;
    return true;
}

/* The end of a base subscript ("_8", "_{5}") after the whole number s[i..e), else e: "52_8" is
 * one answer, read whole, never the 52 or the 8 alone. */
static size_t base_end(const char *s, size_t n, size_t i, size_t e) {
    for (size_t k = i; k < e; k++)
        if (!isdigit((unsigned char)s[k])) return e;
    if (e + 1 >= n || s[e] != '_') return e;
    bool brace = s[e + 1] == '{';
    size_t k = e + 1 + brace, d = k;
    while (k < n && isdigit((unsigned char)s[k])) k++;
    if (k == d || (brace && (k >= n || s[k] != '}'))) return e;
    return k + brace;
}

/* True if the digits ending at s[e - 1] are a subscript ("_8", "_{5}"); *sub gets the '_'. */
static bool subscript_digits(const char *s, size_t from, size_t e, size_t *sub) {
    size_t a = e;
    while (a > from && isdigit((unsigned char)s[a - 1])) a--;
    if (a > from && s[a - 1] == '{') a--;
    if (a <= from || s[a - 1] != '_') return false;
    *sub = a - 1;
    return true;
}

/* The end of the number (digits with ',' '.' or ' ' separators, a '/' fraction, a '%')
 * starting at s[i], a digit. */
static size_t number_end(const char *s, size_t n, size_t i) {
    size_t e = i;
    while (e < n) {
        if (isdigit((unsigned char)s[e])) e++;
        else if ((s[e] == ',' || s[e] == '.' || s[e] == '/') && e + 1 < n && isdigit((unsigned char)s[e + 1])) e++;
        else if (s[e] == ' ' && e + 3 < n && isdigit((unsigned char)s[e + 1]) && isdigit((unsigned char)s[e + 2]) &&
                 isdigit((unsigned char)s[e + 3]) && (e + 4 == n || !isdigit((unsigned char)s[e + 4])) && e - i <= 3)
            e++;
        else break;
    }
    if (e < n && s[e] == '%') e++;
    return base_end(s, n, i, e);
}

/* The end of an arithmetic run "n op n op n" (+ - * / ^ and ×) starting with the number
 * s[i..e); e itself when no operator follows. */
static size_t arith_end(const char *s, size_t n, size_t e) {
    for (int terms = 0; terms < 16; terms++) {
        size_t k = e;
        while (k < n && s[k] == ' ') k++;
        size_t op = k < n && strchr("+-*/^", s[k]) && s[k] ? 1 : (k + 2 <= n && !memcmp(s + k, "×", 2) ? 2 : 0);
        if (!op) return e;
        k += op;
        while (k < n && s[k] == ' ') k++;
        if (k >= n || !isdigit((unsigned char)s[k])) return e;
        e = number_end(s, n, k);
    }
    return e;
}

/* The start of the number that ends at or before s[e - 1] (a digit), taking a sign and a
 * leading '.'; false if it is glued to a word ("AZYUK2A"). */
static bool number_start(const char *s, size_t from, size_t e, size_t *start) {
    size_t a = e;
    while (a > from && (isdigit((unsigned char)s[a - 1]) ||
                        ((s[a - 1] == ',' || s[a - 1] == '.' || s[a - 1] == '/') && a - 1 > from &&
                         isdigit((unsigned char)s[a - 2]))))
        a--;
    while (a >= from + 2 && s[a - 1] == ' ' && isdigit((unsigned char)s[a - 2]) && e - a == 3) {
        size_t g = a - 1;
        while (g > from && isdigit((unsigned char)s[g - 1]) && a - g < 4) g--;
        if (a - 1 - g > 3 || (g > from && isdigit((unsigned char)s[g - 1]))) break;
        a = g;
    }
    if (a > from && s[a - 1] == '.') a--;
    if (a > from && isalpha((unsigned char)s[a - 1])) return false;
    if (a > from && s[a - 1] == '-') a--;
    *start = a;
    return true;
}

/* The first number in s[from..to) (the value right after an anchor); false if none. */
static bool first_number(const char *s, size_t from, size_t to, size_t *start, size_t *len) {
    for (size_t i = from; i < to; i++)
        if (isdigit((unsigned char)s[i])) {
            size_t e = number_end(s, to, i), a;
            if (!number_start(s, from, i + 1, &a)) {
                i = e;
                continue;
            }
            if (e < to && isalpha((unsigned char)s[e]) && !(e + 1 < to && isalpha((unsigned char)s[e + 1]))) {
                i = e;
                continue;
            }
            *start = a;
            *len = arith_end(s, to, e) - a;
            return true;
        }
    return false;
}

/* True unless the number starting at s[a] opens a brace group ("\\frac{1}{}", "\\sqrt{5}"):
 * Math-Verify's plain-number pattern never reads a number right after "{". */
static bool number_anchored(const char *s, size_t from, size_t a) {
    return a == from || s[a - 1] != '{';
}

/* The last number in s[from..to) not glued to a word; false if none. */
static bool last_number(const char *s, size_t from, size_t to, size_t *start, size_t *len) {
    for (size_t e = to; e > from; e--) {
        if (!isdigit((unsigned char)s[e - 1])) continue;
        size_t a;
        if (subscript_digits(s, from, e, &a)) {
            e = a + 1; /* the number before the '_' is read with its subscript */
            continue;
        }
        if (number_start(s, from, e, &a) && number_anchored(s, from, a) && !(e < to && isalpha((unsigned char)s[e]) && e + 1 < to &&
                                               !isalpha((unsigned char)s[e + 1]) && s[e + 1] != ' ')) {
            size_t b = a;
            while (b < e && !isdigit((unsigned char)s[b])) b++;
            *start = a;
            *len = number_end(s, to, b) - a;
            return true;
        }
        while (e > from + 1 && (isdigit((unsigned char)s[e - 2]) || isalpha((unsigned char)s[e - 2]))) e--;
    }
    return false;
}

/* The end of a plain number "-12", "3.5" or "0,25" written at s[i..to), or 0 if none is there. */
static size_t plain_number_end(const char *s, size_t i, size_t to) {
    if (i < to && s[i] == '-') i++;
    size_t d = i;
    while (i < to && isdigit((unsigned char)s[i])) i++;
    if (i == d) return 0;
    if (i + 1 < to && (s[i] == '.' || s[i] == ',') && isdigit((unsigned char)s[i + 1]))
        for (i++; i < to && isdigit((unsigned char)s[i]); i++) {
        }
    return i;
}

/* The span of the last fraction of s[from..to) that Math-Verify reads outside a math span:
 * "\frac{a}{b}" written exactly so, a and b plain numbers, with a minus sign right before it
 * ("\frac{\pi}{6}", "\dfrac{1}{2}" and "\frac 12" are not read, as its pattern wants); false
 * if none. */
static bool last_fraction(const char *s, size_t from, size_t to, size_t *start, size_t *len) {
    for (size_t i = to; i-- > from;) {
        if (s[i] != '\\' || i + 6 > to || memcmp(s + i + 1, "frac{", 5) != 0) continue;
        size_t k = plain_number_end(s, i + 6, to);
        if (!k || k + 1 >= to || s[k] != '}' || s[k + 1] != '{') continue;
        size_t e = plain_number_end(s, k + 2, to);
        if (!e || e >= to || s[e] != '}') continue;
        *start = i > from && s[i - 1] == '-' ? i - 1 : i;
        *len = e + 1 - *start;
        return true;
    }
    return false;
}

/* True if s[from..to), trimmed, is a short bare arithmetic expression ("3+2", "-15"). */
static bool bare_expression(const char *s, size_t from, size_t to, size_t *start, size_t *len) {
    while (from < to && isspace((unsigned char)s[from])) from++;
    while (to > from && isspace((unsigned char)s[to - 1])) to--;
    if (to == from || to - from > 64) return false;
    for (size_t i = from; i < to; i++)
        if (!isdigit((unsigned char)s[i]) && !strchr(" +-*/^().,", s[i])) return false;
    *start = from;
    *len = to - from;
    return true;
}

/* Sets out to one span. */
static bool one_span(mv_spans *out, size_t start, size_t len, bool number) {
    out->n = 1;
    out->start[0] = start;
    out->len[0] = len;
    out->number = number;
    return len > 0;
}

/* The value after an anchor at s[at..to): a math span starting within 50 bytes, else the
 * number after the last '=' within 100 bytes, else the first number within 50 bytes. */
static bool value_after(const char *s, size_t at, size_t to, mv_spans *out) {
    size_t lim50 = at + 50 < to ? at + 50 : to, lim100 = at + 100 < to ? at + 100 : to, a, l, e;
    for (size_t i = at; i < lim50; i++) {
        if (s[i] == '\n' && i > at + 1) break;
        if ((s[i] == '$' || s[i] == '\\') && math_span_at(s, to, i, &a, &l, &e, NULL) && has_content(s, a, l))
            return one_span(out, a, l, false);
    }
    size_t eq = 0;
    for (size_t i = at; i < lim100 && s[i] != '\n'; i++)
        if (s[i] == '=') eq = i + 1;
    if (eq && first_number(s, eq, lim100, &a, &l)) return one_span(out, a, l, true);
    size_t fa, fl;
    bool num = first_number(s, at, lim50, &a, &l);
    if (last_fraction(s, at, lim50, &fa, &fl) && (!num || fa < a)) return one_span(out, fa, fl, false);
    if (num) return one_span(out, a, l, true);
    return false;
}

/* Case-insensitive search for the last occurrence of needle in s[from..to). */
static bool last_ci(const char *s, size_t from, size_t to, const char *needle, size_t *at) {
    size_t k = strlen(needle);
    if (k > to - from) return false;
    for (size_t i = to - k + 1; i-- > from;)
        if (strncasecmp(s + i, needle, k) == 0) {
            *at = i;
            return true;
        }
    return false;
}

/* "final answer is X. I hope": X a math span, else the text up to "I hope" when it starts
 * with a number or a \frac; anything else right after "is" (a word, a quote) does not match,
 * as Math-Verify's pattern wants its value there. */
static bool final_answer_hope(const char *s, size_t from, size_t to, mv_spans *out) {
    size_t at, hope;
    if (!last_ci(s, from, to, "final answer is", &at)) return false;
    at += 15;
    if (!last_ci(s, at, to, "I hope", &hope) || hope - at > 200) return false;
    size_t a = at, e = hope, l, x;
    while (a < e && (isspace((unsigned char)s[a]) || s[a] == ':')) a++;
    if (a < e && (s[a] == '$' || s[a] == '\\') && math_span_at(s, e, a, &x, &l, &at, NULL)) return one_span(out, x, l, false);
    size_t k = a < e && s[a] == '-' ? a + 1 : a;
    if (!(k < e && (isdigit((unsigned char)s[k]) || s[k] == '.' || (k + 5 <= e && !memcmp(s + k, "\\frac", 5)))))
        return false;
    while (e > a && (isspace((unsigned char)s[e - 1]) || s[e - 1] == '.' || s[e - 1] == '"')) e--;
    return one_span(out, a, e - a, false);
}

/* "final answer ... is X" (at most 100 bytes between): the value after "is". */
static bool final_answer_is(const char *s, size_t from, size_t to, mv_spans *out) {
    size_t at, is;
    if (!last_ci(s, from, to, "final answer", &at)) return false;
    size_t lim = at + 12 + 100 < to ? at + 12 + 100 : to;
    for (is = at + 12; is + 3 <= lim; is++)
        if (isspace((unsigned char)s[is]) && word_at(s, to, is + 1, "is") &&
            (is + 3 == to || !isalpha((unsigned char)s[is + 3])))
            return value_after(s, is + 3, to, out);
    return false;
}

/* Words that introduce an answer, in the languages the cases use. */
static const char *const ANCHORS[] = {"answer", "réponse", "reponse", "答案", "الإجابة", "الجواب", "उत्तर", "respuesta", "antwort"};

/* The value after the last answer anchor; false if there is none or no value follows it. */
static bool anchored_answer(const char *s, size_t from, size_t to, mv_spans *out) {
    size_t best = 0, at;
    bool found = false;
    for (size_t k = 0; k < sizeof ANCHORS / sizeof ANCHORS[0]; k++)
        if (last_ci(s, from, to, ANCHORS[k], &at) && (!found || at > best - strlen(ANCHORS[k]))) {
            best = at + strlen(ANCHORS[k]);
            found = true;
        }
    return found && value_after(s, best, to, out);
}

/* The last fraction or number of s[from..to), whichever ends later; false if neither. */
static bool last_value(const char *s, size_t from, size_t to, mv_spans *out) {
    size_t na = 0, nl = 0, fa = 0, fl = 0;
    bool num = last_number(s, from, to, &na, &nl), frac = last_fraction(s, from, to, &fa, &fl);
    if (frac && (!num || na < fa + fl)) return one_span(out, fa, fl, false);
    return num && one_span(out, na, nl, true);
}

/* The answer of s[from..to) (see the header comment); alt gets the last fraction or number
 * when the answer is the last math span, the candidate Math-Verify tries next when that span
 * does not parse (both end in the same place, so it comes next by end position). */
static bool extract_in(const char *s, size_t from, size_t to, mv_spans *out, mv_spans *alt) {
    size_t a, l;
    if (final_answer_hope(s, from, to, out) || box_answer(s, from, to, out)) return true;
    if (final_answer_is(s, from, to, out) || anchored_answer(s, from, to, out)) return true;
    if (bare_expression(s, from, to, &a, &l)) return one_span(out, a, l, true);
    bool value = last_value(s, from, to, alt);
    if (last_math_spans(s, from, to, out)) {
        size_t end = out->start[out->n - 1] + out->len[out->n - 1] + 1;
        if (!value || alt->start[0] <= end) return true;
    }
    *out = *alt;
    alt->n = 0;
    return value;
}

/* The part of the response s[0..n) that holds the answer, [*from, *to): the text between the
 * first and a second "</think>", all of it without one (Skywork-OR1's split("</think>")[1]). */
static void answer_region(const char *s, size_t n, size_t *from, size_t *to) {
    *from = 0, *to = n;
    const char *think = memmem(s, n, "</think>", 8);
    if (think) {
        *from = (size_t)(think - s) + 8;
        const char *second = memmem(s + *from, n - *from, "</think>", 8);
        if (second) *to = (size_t)(second - s);
    }
}

/* The answer spans of the response s[0..n) (see or1_math_extract), and in alt the next
 * candidate when the answer is a math span (alt->n is 0 when there is none). */
bool mv_extract(const char *s, size_t n, mv_spans *out, mv_spans *alt) {
    size_t from, to;
    answer_region(s, n, &from, &to);
    out->n = 0;
    alt->n = 0;
    return extract_in(s, from, to, out, alt);
}

/* The strict rule (verl's math_dapo.py, strict_box_verify): the content of the last
 * "\boxed{" of the answer region, up to the brace that closes it, braces counted as written;
 * false when there is no such box, when it never closes or when it is empty. Chained or
 * enclosing boxes, \fbox and "\boxed 5" are not read: one box, the last. */
bool mv_extract_last_box(const char *s, size_t n, mv_spans *out) {
    size_t from, to, at = (size_t)-1;
    answer_region(s, n, &from, &to);
    out->n = 0;
    out->number = false;
    for (size_t i = to; i >= from + 7 && at == (size_t)-1; i--)
        if (memcmp(s + i - 7, "\\boxed{", 7) == 0) at = i - 7;
    if (at == (size_t)-1) return false;
    size_t depth = 0;
    for (size_t i = at + 6; i < to; i++) {
        if (s[i] == '{') depth++;
        else if (s[i] == '}' && --depth == 0) return i > at + 7 && one_span(out, at + 7, i - at - 7, false);
    }
    return false;
}
