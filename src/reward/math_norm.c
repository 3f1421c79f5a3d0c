/* Math verifier, step one: rewrites an answer's LaTeX into a canonical spelling, so that
 * the parser and the string comparison see \dfrac as \frac, no \left/\right, no spacing
 * commands, no $ or \% signs, no degree marks and no trailing units or full stop. */
#include "math_internal.h"

#include "or1/core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Output buffer in the arena with a hard capacity (3x the input plus slack suffices). */
typedef struct {
    char *p;
    size_t n, cap;
} mv_buf;

/* Appends n bytes (silently clipped at the capacity, which the sizing never reaches). */
static void put(mv_buf *b, const char *s, size_t n) {
    if (b->n + n >= b->cap) n = b->cap - 1 - b->n;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* Appends a NUL-terminated string. */
static void puts_(mv_buf *b, const char *s) { put(b, s, strlen(s)); }

/* Appends the comma an "and"/"or" stands for, unless one is already there ("1, 8, and 49"). */
static void put_separator(mv_buf *b) {
    size_t i = b->n;
    while (i > 0 && isspace((unsigned char)b->p[i - 1])) i--;
    if (i == 0 || b->p[i - 1] != ',') puts_(b, ",");
}

/* True if the output so far ends (spaces aside) in a value a unit can follow: a digit, a
 * closing brace or parenthesis. */
static bool after_value(const mv_buf *b) {
    size_t i = b->n;
    while (i > 0 && isspace((unsigned char)b->p[i - 1])) i--;
    return i > 0 && (isdigit((unsigned char)b->p[i - 1]) || b->p[i - 1] == '}' || b->p[i - 1] == ')');
}

/* Commands dropped outright (sizing and spacing); the bool says "eat a following '.'". */
static const struct {
    const char *name;
    bool eat_dot;
} DROPPED[] = {
    {"left", true},      {"right", true},      {"big", true},     {"Big", true},
    {"bigl", true},      {"bigr", true},       {"Bigl", true},    {"Bigr", true},
    {"bigg", true},      {"Bigg", true},       {"biggl", true},   {"biggr", true},
    {"Biggl", true},     {"Biggr", true},      {"displaystyle", false},
    {"textstyle", false}, {"scriptstyle", false}, {"limits", false}, {"nolimits", false},
    {"quad", false},     {"qquad", false},     {"mathstrut", false}, {"degree", false},
    {"circ", false},     {"hfill", false},     {"phantom", false},
};

/* Commands whose braced argument is text (units, words, answer choices). */
static const char *const TEXTLIKE[] = {
    "text", "textbf", "textit", "textrm", "textsf", "texttt", "textnormal", "mathrm",
    "mathbf", "mathit", "mathsf", "mathtt", "mbox", "hbox", "emph", "operatorname",
};

/* Words taken for units when they end an answer after a number. */
static const char *const UNITS[] = {
    "cm", "mm", "km", "m", "meter", "meters", "metre", "metres", "inch", "inches", "feet",
    "foot", "ft", "yard", "yards", "mile", "miles", "unit", "units", "sq", "square", "cubic",
    "degree", "degrees", "deg", "cent", "cents", "dollar", "dollars", "second", "seconds",
    "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "year", "years",
    "percent", "pct", "percentage", "point", "points", "kg", "grams", "liters", "litres",
    "mph", "kmh", "people", "students", "ways", "times", "steps", "handshakes", "games",
};

/* Length of the command name at s (letters; else one character). */
static size_t cmd_len(const char *s, size_t n) {
    size_t k = 0;
    while (k < n && isalpha((unsigned char)s[k])) k++;
    return k ? k : (n ? 1 : 0);
}

/* True if s[0..n) is exactly word (ASCII case-insensitive). */
static bool word_is(const char *s, size_t n, const char *word) {
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* Index just past the balanced {...} group starting at s[i] == '{', or 0 if unbalanced. */
static size_t group_end(const char *s, size_t n, size_t i, int max_depth) {
    int d = 0;
    for (size_t k = i; k < n; k++) {
        if (s[k] == '\\' && k + 1 < n) {
            k++;
            continue;
        }
        if (s[k] == '{' && ++d > max_depth) return 0;
        if (s[k] == '}' && --d == 0) return k + 1;
    }
    return 0;
}

/* Skips a "^2", "^3" or "^{2}" exponent that follows a dropped unit. */
static size_t skip_unit_power(const char *s, size_t n, size_t i) {
    size_t k = i;
    while (k < n && s[k] == ' ') k++;
    if (k < n && s[k] == '^') {
        k++;
        if (k < n && isdigit((unsigned char)s[k])) return k + 1;
        if (k + 2 < n && s[k] == '{' && isdigit((unsigned char)s[k + 1]) && s[k + 2] == '}') return k + 3;
    }
    return i;
}

/* True if the trimmed text is a word list (letters, spaces, dots, hyphens) with >= 2 letters. */
static bool is_wordy(const char *s, size_t n) {
    size_t letters = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (isalpha(ch)) letters++;
        else if (ch != ' ' && ch != '.' && ch != '-' && ch != '/') return false;
    }
    return letters >= 2;
}

static void norm_into(mv_ctx *c, mv_buf *b, const char *s, size_t n, int depth);

/* Handles \text{...}-like arguments: "and"/"or" become commas, units after a value are
 * dropped (with a following ^2), anything else is kept as plain text. Returns the index
 * after the argument. */
static size_t text_arg(mv_ctx *c, mv_buf *b, const char *s, size_t n, size_t i, bool operatorname,
                       int depth) {
    size_t k = i;
    while (k < n && s[k] == ' ') k++;
    if (k >= n || s[k] != '{') return i;
    size_t e = group_end(s, n, k, c->lim->max_depth);
    if (!e) return i;
    const char *t = s + k + 1;
    size_t tn = e - k - 2;
    bool lead_space = tn > 0 && (t[0] == ' ' || t[0] == '~' || (t[0] == '\\' && tn > 1 && t[1] == ' '));
    while (tn && (*t == ' ' || *t == '~')) t++, tn--;
    while (tn && (t[tn - 1] == ' ' || t[tn - 1] == '~')) tn--;
    if (tn == 0) return e;
    if (tn && t[0] == ',') { /* "\text{, and }" */
        t++, tn--;
        while (tn && *t == ' ') t++, tn--;
        put_separator(b);
    }
    if (tn == 0 || word_is(t, tn, "and") || word_is(t, tn, "or")) {
        put_separator(b);
        return e;
    }
    if (!operatorname && after_value(b) && (is_wordy(t, tn) || (lead_space && isalpha((unsigned char)t[0]))))
        return skip_unit_power(s, n, e);
    puts_(b, " ");
    if (operatorname) puts_(b, "\\");
    norm_into(c, b, t, tn, depth + 1);
    puts_(b, " ");
    return e;
}

/* A UTF-8 symbol and its LaTeX spelling ("" drops it). */
static const struct {
    const char *utf8, *latex;
} UNICODE[] = {
    {"\xe2\x88\x92", "-"},       {"\xe2\x80\x93", "-"},      {"\xc3\x97", "*"},
    {"\xc2\xb7", "*"},           {"\xe2\x8b\x85", "*"},      {"\xc3\xb7", "/"},
    {"\xe2\x88\x9a", "\\sqrt "}, {"\xcf\x80", "\\pi "},      {"\xe2\x88\x9e", "\\infty "},
    {"\xc2\xb0", ""},            {"\xe2\x89\xa4", "\\le "},  {"\xe2\x89\xa5", "\\ge "},
    {"\xe2\x89\xa0", "\\ne "},   {"\xe2\x88\xaa", "\\cup "}, {"\xc2\xb1", "\\pm "},
    {"\xc2\xb2", "^2"},          {"\xc2\xb3", "^3"},         {"\xe2\x82\xac", ""},
    {"\xc2\xa0", " "},
};

/* Commands that answers copied from escaped strings write with a doubled backslash
 * ("\\\\frac", "\\\\left"); a row break of a matrix is never followed by one of them. */
static const char *const DOUBLED[] = {"left", "right", "frac", "dfrac", "tfrac", "le", "leq", "ge", "geq",
                                      "sqrt", "boxed", "cdot", "times", "pi", "infty", "cup"};

/* True if s[i..] is a doubled backslash followed by a command of DOUBLED. */
static bool doubled_command(const char *s, size_t n, size_t i) {
    if (i + 2 >= n || s[i + 1] != '\\') return false;
    size_t k = cmd_len(s + i + 2, n - i - 2);
    for (size_t d = 0; d < sizeof DOUBLED / sizeof DOUBLED[0]; d++)
        if (word_is(s + i + 2, k, DOUBLED[d])) return true;
    return false;
}

/* Length of a "{,}" or "{, }" thousands separator at s[i], or 0. */
static size_t brace_comma(const char *s, size_t n, size_t i) {
    size_t k = i + 1;
    if (s[i] != '{') return 0;
    while (k < n && s[k] == ' ') k++;
    if (k >= n || s[k] != ',') return 0;
    k++;
    while (k < n && s[k] == ' ') k++;
    return k < n && s[k] == '}' ? k + 1 - i : 0;
}

/* Rewrites one backslash command at s[i] == '\\'; returns the index after it. */
static size_t norm_command(mv_ctx *c, mv_buf *b, const char *s, size_t n, size_t i, int depth) {
    if (doubled_command(s, n, i)) i++;
    const char *name = s + i + 1;
    size_t k = cmd_len(name, n - i - 1);
    if (k > 4 && !strncmp(name, "quad", 4)) k = 4; /* "\quadx_2": a space, then x_2 */
    if (k > 5 && !strncmp(name, "qquad", 5)) k = 5;
    size_t next = i + 1 + k;
    if (k == 1 && !isalpha((unsigned char)name[0])) {
        char ch = name[0];
        if (ch == '!') {
            if (b->n && b->p[b->n - 1] == ',')
                while (next < n && s[next] == ' ') next++;
            return next;
        }
        if (ch == ',' || ch == ';' || ch == ':' || ch == ' ') {
            puts_(b, " ");
            return next;
        }
        if (ch == '$' || ch == '%') return next;
        put(b, s + i, 2);
        return next;
    }
    for (size_t d = 0; d < sizeof DROPPED / sizeof DROPPED[0]; d++)
        if (strlen(DROPPED[d].name) == k && strncmp(name, DROPPED[d].name, k) == 0) {
            if (DROPPED[d].eat_dot && next < n && s[next] == '.') next++;
            puts_(b, " ");
            return next;
        }
    if ((k == 5 && (!strncmp(name, "dfrac", 5) || !strncmp(name, "tfrac", 5) || !strncmp(name, "cfrac", 5)))) {
        puts_(b, "\\frac");
        return next;
    }
    if (k == 6 && (!strncmp(name, "dbinom", 6) || !strncmp(name, "tbinom", 6))) {
        puts_(b, "\\binom");
        return next;
    }
    if ((k == 5 && !strncmp(name, "boxed", 5)) || (k == 4 && !strncmp(name, "fbox", 4))) {
        size_t g = next;
        while (g < n && s[g] == ' ') g++;
        size_t e = g < n && s[g] == '{' ? group_end(s, n, g, c->lim->max_depth) : 0;
        if (!e) return next;
        norm_into(c, b, s + g + 1, e - g - 2, depth + 1);
        return e;
    }
    for (size_t t = 0; t < sizeof TEXTLIKE / sizeof TEXTLIKE[0]; t++)
        if (strlen(TEXTLIKE[t]) == k && strncmp(name, TEXTLIKE[t], k) == 0) {
            size_t e = text_arg(c, b, s, n, next, t + 1 == sizeof TEXTLIKE / sizeof TEXTLIKE[0], depth);
            if (e != next) return e;
            return next;
        }
    put(b, s + i, k + 1);
    return next;
}

/* True if the degree mark "\circ" or "{\circ}" follows s[i] == '^'; sets *end past it. */
static bool degree_mark(const char *s, size_t n, size_t i, size_t *end) {
    size_t k = i + 1;
    while (k < n && s[k] == ' ') k++;
    bool brace = k < n && s[k] == '{';
    if (brace) {
        k++;
        while (k < n && s[k] == ' ') k++;
    }
    if (k + 5 > n || strncmp(s + k, "\\circ", 5) != 0 || (k + 5 < n && isalpha((unsigned char)s[k + 5])))
        return false;
    k += 5;
    if (brace) {
        while (k < n && s[k] == ' ') k++;
        if (k >= n || s[k] != '}') return false;
        k++;
    }
    *end = k;
    return true;
}

/* The main rewriting pass over s[0..n) into b. */
static void norm_into(mv_ctx *c, mv_buf *b, const char *s, size_t n, int depth) {
    if (depth > c->lim->max_depth) {
        c->bounded = true;
        return;
    }
    size_t i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        size_t end;
        if (ch == '\\' && i + 1 < n) {
            i = norm_command(c, b, s, n, i, depth);
        } else if (ch == '$' || ch == '%') {
            i++;
        } else if (ch == '~' || ch == '\t' || ch == '\n' || ch == '\r') {
            puts_(b, " ");
            i++;
        } else if (ch == '^' && degree_mark(s, n, i, &end)) {
            i = end;
        } else if (ch == '{' && (end = brace_comma(s, n, i)) > 0) {
            puts_(b, ",");
            i += end;
        } else if (isalpha(ch)) {
            size_t k = i;
            while (k < n && isalpha((unsigned char)s[k])) k++;
            if (word_is(s + i, k - i, "and") || word_is(s + i, k - i, "or")) put_separator(b);
            else put(b, s + i, k - i);
            i = k;
        } else if (ch >= 0x80) {
            size_t u = 0;
            for (; u < sizeof UNICODE / sizeof UNICODE[0]; u++) {
                size_t ul = strlen(UNICODE[u].utf8);
                if (i + ul <= n && memcmp(s + i, UNICODE[u].utf8, ul) == 0) {
                    puts_(b, UNICODE[u].latex);
                    i += ul;
                    break;
                }
            }
            if (u == sizeof UNICODE / sizeof UNICODE[0]) put(b, s + i, 1), i++;
        } else {
            put(b, s + i, 1);
            i++;
        }
    }
}

/* Removes a trailing unit word (after a value and a space); true if one was removed. */
static bool strip_unit(char *s, size_t *n) {
    size_t e = *n, k = e;
    while (k > 0 && isalpha((unsigned char)s[k - 1])) k--;
    if (k == e || k == 0 || s[k - 1] != ' ') return false;
    size_t j = k - 1;
    while (j > 0 && s[j - 1] == ' ') j--;
    if (j == 0) return false;
    char prev = s[j - 1];
    if (!isdigit((unsigned char)prev) && prev != '}' && prev != ')') return false;
    for (size_t u = 0; u < sizeof UNITS / sizeof UNITS[0]; u++)
        if (word_is(s + k, e - k, UNITS[u])) {
            *n = j;
            s[j] = '\0';
            return true;
        }
    return false;
}

/* Trims spaces, display delimiters, trailing punctuation and trailing units. */
static void trim(char *s, size_t *n) {
    for (int round = 0; round < 8; round++) {
        size_t before = *n;
        size_t a = 0;
        while (a < *n && isspace((unsigned char)s[a])) a++;
        if (a + 1 < *n && s[a] == '\\' && (s[a + 1] == '[' || s[a + 1] == '(')) a += 2;
        memmove(s, s + a, *n - a);
        *n -= a;
        while (*n && (isspace((unsigned char)s[*n - 1]) || s[*n - 1] == '.' || s[*n - 1] == ',' ||
                      s[*n - 1] == ';' || s[*n - 1] == ':'))
            (*n)--;
        if (*n >= 2 && s[*n - 2] == '\\' && (s[*n - 1] == ']' || s[*n - 1] == ')')) *n -= 2;
        s[*n] = '\0';
        strip_unit(s, n);
        if (*n == before) break;
    }
}

/* Normalises s[0..n) into a new arena string (NULL when the arena is full). */
char *mv_normalize(mv_ctx *c, const char *s, size_t n) {
    size_t cap = 3 * n + 64;
    mv_buf b = {mv_alloc(c, cap), 0, cap};
    if (!b.p) return NULL;
    norm_into(c, &b, s, n, 0);
    trim(b.p, &b.n);
    return b.p;
}

/* The normalised answer without whitespace. */
char *mv_string_key(mv_ctx *c, const char *norm) {
    size_t n = strlen(norm);
    char *k = mv_alloc(c, n + 1);
    if (!k) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)norm[i])) k[j++] = norm[i];
    k[j] = '\0';
    return k;
}

/* Commands Math-Verify reads as \text before it looks for a unit at the end of an answer. */
static const char *const UNIT_TEXT[] = {"text", "mbox", "mathrm", "mathit", "mathbf", "textnormal",
                                        "textbf", "textit", "textrm"};

/* The longest group read as a unit word: longer ones are not units, and the bound keeps the
 * scan of an answer full of unclosed groups linear. */
#define UNIT_GROUP_MAX 256

/* Length of the text-like command "\name{" at s[i] whose group Math-Verify can take for a unit
 * (closed within UNIT_GROUP_MAX bytes; not an empty one, an "and" or "or", nor \mathrm{T},
 * {d} or {th}, which it rewrites first); 0 if none. */
static size_t unit_text_at(const char *s, size_t n, size_t i) {
    if (s[i] != '\\') return 0;
    for (size_t u = 0; u < sizeof UNIT_TEXT / sizeof UNIT_TEXT[0]; u++) {
        size_t k = strlen(UNIT_TEXT[u]);
        if (i + 1 + k >= n || strncmp(s + i + 1, UNIT_TEXT[u], k) != 0 || s[i + 1 + k] != '{') continue;
        const char *arg = s + i + 2 + k;
        size_t m = 0;
        while (arg + m < s + n && arg[m] != '}' && m < UNIT_GROUP_MAX) m++;
        if (arg + m >= s + n || arg[m] != '}') return 0;
        size_t sp = 0;
        while (sp < m && isspace((unsigned char)arg[sp])) sp++;
        if (sp == m) return 0;
        if (arg[sp] == ',') sp++;
        while (sp < m && isspace((unsigned char)arg[sp])) sp++;
        size_t w = m;
        while (w > sp && isspace((unsigned char)arg[w - 1])) w--;
        if (word_is(arg + sp, w - sp, "and") || word_is(arg + sp, w - sp, "or")) return 0;
        if (u == 2 && ((m == 1 && (*arg == 'T' || *arg == 'd')) || (m == 2 && !strncmp(arg, "th", 2)))) return 0;
        return k + 2;
    }
    return 0;
}

/* True if s[0..n) ends as Math-Verify's unit pattern wants: "}" (so "}{^2}" too) or "}^d". */
static bool ends_unit_group(const char *s, size_t n) {
    if (n >= 1 && s[n - 1] == '}') return true;
    return n >= 3 && s[n - 3] == '}' && s[n - 2] == '^' && isdigit((unsigned char)s[n - 1]);
}

/* True if s[0..n) holds something other than whitespace. */
static bool has_text(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)s[i])) return true;
    return false;
}

/* True if the group of the command at s[i] (cmd bytes up to its '{') is a unit or1 also takes
 * for one (a word list, or a letter after a space: "\text{i}" stays the imaginary unit) and
 * what comes before it, s[0..i), is a value: not blank, not a bare "x =" (a word answer to an
 * assignment, "x = \text{east}", stays that word). */
static bool unit_after_value(const char *s, size_t n, size_t i, size_t cmd) {
    const char *t = s + i + cmd;
    size_t tn = 0;
    while (t + tn < s + n && t[tn] != '}' && tn < UNIT_GROUP_MAX) tn++;
    bool lead = tn > 1 && (t[0] == ' ' || t[0] == '~') && isalpha((unsigned char)t[1]);
    size_t b = i;
    while (b > 0 && isspace((unsigned char)s[b - 1])) b--;
    return (is_wordy(t, tn) || lead) && b > 0 && s[b - 1] != '=';
}

/* Math-Verify's reading of a unit at the end of an extracted answer (its normaliser's unit
 * step, on the answer as written): when the answer ends with a "}" (a "^2" after it allowed),
 * everything from its first \text{...}-like group on is a unit and is cut, provided something
 * comes before it ("p - q\text{ units}" is "p - q"). When nothing is cut, because the answer
 * ends with whitespace ("\[ 15\text{ cm} \]") or nothing comes before its first group
 * ("\text{(C)}\text{ cm}"), Math-Verify reads the last group's word as a symbol multiplying
 * what comes before (15*cm); or1 writes an explicit "\cdot " before that group so that its
 * normaliser keeps the word. text is malloc'd; returns it or its replacement. */
char *mv_answer_units(char *text) {
    size_t n = strlen(text), t = n;
    while (t > 0 && isspace((unsigned char)text[t - 1])) t--;
    if (!ends_unit_group(text, t)) return text;
    size_t first = n, last = n, cmd_first = 0, cmd_last = 0;
    for (size_t i = 0; i < t; i++) {
        size_t k = unit_text_at(text, t, i);
        if (!k) continue;
        if (first == n) first = i, cmd_first = k;
        last = i, cmd_last = k;
    }
    if (first == n) return text;
    if (t == n && has_text(text, first)) {
        if (unit_after_value(text, t, first, cmd_first)) text[first] = '\0';
        return text;
    }
    const char *close = strchr(text + last, '}');
    if (close != text + t - 1 || !unit_after_value(text, t, last, cmd_last)) return text;
    char *out = or1_malloc(n + 8);
    memcpy(out, text, last);
    memcpy(out + last, " \\cdot ", 7);
    memcpy(out + last + 7, text + last, n - last + 1);
    free(text);
    return out;
}
