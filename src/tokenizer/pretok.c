/* Normalization (through utf8proc) and pre-tokenization (regex splits through PCRE2) of
 * the text between added tokens, then BPE of each pre-token. */
#include "tok.h"

#include "or1/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* True if no byte of s[0, n) is outside ASCII. */
static bool all_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

/* Lower-cases valid UTF-8 into a new buffer (Unicode simple case mapping). */
static char *lowercase(const char *s, size_t n, size_t *out_len) {
    char *o = or1_malloc(n * 4 / 3 + 8), *w = o;
    size_t cap = n * 4 / 3 + 8;
    for (size_t i = 0; i < n;) {
        int32_t c;
        i += (size_t)tok_utf8_next((const unsigned char *)s + i, &c);
        if ((size_t)(w - o) + 4 > cap) {
            size_t at = (size_t)(w - o);
            cap *= 2;
            o = or1_realloc(o, cap);
            w = o + at;
        }
        w += tok_utf8_put(w, utf8proc_tolower(c));
    }
    *out_len = (size_t)(w - o);
    return o;
}

/* True if NFC certainly leaves code point cp (at or above U+0300) alone whatever
 * surrounds it: a starter (combining class 0) without a canonical decomposition that is
 * never the second half of a composition (utf8proc marks those with comb_index 0x8000 and
 * up), nor a Hangul vowel or trailing jamo (composed algorithmically). */
static bool nfc_inert(int32_t cp) {
    if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    bool canonical = p->decomp_type == 0 && p->decomp_seqindex != UINT16_MAX;
    bool second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
    return p->combining_class == 0 && !canonical && !second;
}

/* True if text is certainly unchanged by NFC: below U+0300 no character decomposes or
 * combines with what precedes it, and above it every character must be inert. Saves the
 * full normalization on most text. */
static bool nfc_stable(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int32_t cp;
        i += (size_t)tok_utf8_next((const unsigned char *)s + i, &cp);
        if (cp >= 0x300 && !nfc_inert(cp)) return false;
    }
    return true;
}

/* Code points, as ranges, that Hugging Face's normalizers leave alone where utf8proc's tables
 * (Unicode 15.0) would reorder, compose or decompose them: tokenizers normalizes with tables
 * older than Unicode 10.0 (the unicode-normalization-alignments crate), in which these are
 * unassigned, so starters that combine with nothing. They are the combining marks of Unicode 10.0
 * to 15.0 and U+11938 with its parts U+11935 and U+11930 (Unicode 13.0): every code point on which
 * the two libraries' NFC differ, alone, decomposed, or beside marks of classes 1, 220 and 230. */
static const int32_t reference_unknown[][2] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},     {0xC3C, 0xC3C},
    {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},   {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},
    {0xA82C, 0xA82C},   {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50},
    {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E}, {0x11839, 0x1183A},
    {0x11930, 0x11930}, {0x11935, 0x11935}, {0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943},
    {0x119E0, 0x119E0}, {0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
    {0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1}, {0x1E08F, 0x1E08F},
    {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
};

/* True if cp is in reference_unknown (binary search). */
static bool unknown_to_reference(int32_t cp) {
    size_t lo = 0, hi = sizeof reference_unknown / sizeof reference_unknown[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < reference_unknown[mid][0]) hi = mid;
        else if (cp > reference_unknown[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

/* Appends s[0, n) mapped by utf8proc with options opt; -1 on a library error (which cannot
 * happen on validated UTF-8). */
static int map_into(or1_text *b, const char *s, size_t n, int opt) {
    if (n == 0) return 0;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)opt);
    if (r >= 0) or1_text_add(b, dst, (size_t)r);
    free(dst);
    return r < 0 ? -1 : 0;
}

/* Applies one Unicode normalization form; NULL (text unchanged) when the text is ASCII,
 * or for NFC when it is NFC-stable by nfc_stable. The stretches between code points of
 * reference_unknown are mapped one by one and those code points kept, as tokenizers keeps them;
 * should the library fail, the text stays as it is. */
static char *unicode_form(const char *s, size_t n, tok_norm form, size_t *out_len) {
    if (all_ascii(s, n) || (form == NORM_NFC && nfc_stable(s, n))) return NULL;
    int opt = UTF8PROC_STABLE;
    if (form == NORM_NFC || form == NORM_NFKC) opt |= UTF8PROC_COMPOSE;
    else opt |= UTF8PROC_DECOMPOSE;
    if (form == NORM_NFKC || form == NORM_NFKD) opt |= UTF8PROC_COMPAT;
    or1_text b = {0};
    size_t start = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        int32_t cp;
        int k = tok_utf8_next((const unsigned char *)s + i, &cp);
        if (cp >= 0x7FD && unknown_to_reference(cp)) {
            rc = map_into(&b, s + start, i - start, opt);
            or1_text_add(&b, s + i, (size_t)k);
            start = i + (size_t)k;
        }
        i += (size_t)k;
    }
    if (rc == 0) rc = map_into(&b, s + start, n - start, opt);
    if (rc != 0) {
        free(b.s);
        return NULL;
    }
    *out_len = b.len;
    return b.s;
}

/* Runs the normalizer over valid UTF-8; returns a new buffer, or NULL if the text is
 * unchanged (no normalizer, or a no-op on this text). */
char *tok_normalize(const or1_tokenizer *t, const char *text, size_t len, size_t *out_len) {
    char *cur = NULL;
    size_t cur_len = len;
    for (size_t i = 0; i < t->n_norm; i++) {
        const char *src = cur ? cur : text;
        size_t nl = 0;
        char *next = t->norm[i] == NORM_LOWERCASE ? lowercase(src, cur_len, &nl)
                                                   : unicode_form(src, cur_len, t->norm[i], &nl);
        if (!next) continue;
        free(cur);
        cur = next;
        cur_len = nl;
    }
    *out_len = cur_len;
    return cur;
}

/* A span of the working buffer: one pre-token. */
typedef struct {
    size_t s, e;
} span;

/* Growable list of spans. */
typedef struct {
    span *v;
    size_t n, cap;
} spans;

/* Appends [s, e) unless it is empty. */
static void spans_push(spans *a, size_t s, size_t e) {
    if (s >= e) return;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->v = or1_realloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = (span){s, e};
}

/* Scratch space of one encode call: PCRE2 match state and span lists. */
struct tok_work {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
    spans a, b, segs; /* current pieces, next pieces, (match, gap) segments of a piece */
    bool *seg_match;
    size_t seg_cap;
    char *buf; /* the buffer when ByteLevel added prefix spaces */
    size_t buf_cap;
    struct tok_work *next; /* in the tokenizer's pool */
};

/* Bounds on one regex match: a catastrophic pre-tokenizer pattern (nested quantifiers such
 * as (a+)+$) fails the encode with "match limit exceeded" in well under a second instead of
 * backtracking for ever. Set here, not left to the library's build-time defaults, which a
 * distribution may raise; the real tokenizers' patterns use a few steps per character. */
enum { REGEX_MATCH_LIMIT = 10000000, REGEX_DEPTH_LIMIT = 1000000 };

/* New scratch space; the JIT stack grows to 4 MiB for long pre-tokens. */
static tok_work *work_new(void) {
    tok_work *w = or1_calloc(1, sizeof *w);
    w->md = pcre2_match_data_create(1, NULL);
    w->mc = pcre2_match_context_create(NULL);
    if (w->mc) {
        pcre2_set_match_limit(w->mc, REGEX_MATCH_LIMIT);
        pcre2_set_depth_limit(w->mc, REGEX_DEPTH_LIMIT);
    }
    w->js = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    if (!w->md || !w->mc) {
        fprintf(stderr, "or1: out of memory for the regex engine\n");
        exit(2);
    }
    if (w->js) pcre2_jit_stack_assign(w->mc, NULL, w->js);
    return w;
}

/* Frees one scratch space. */
static void work_free(tok_work *w) {
    pcre2_match_data_free(w->md);
    pcre2_match_context_free(w->mc);
    pcre2_jit_stack_free(w->js);
    free(w->a.v);
    free(w->b.v);
    free(w->segs.v);
    free(w->seg_match);
    free(w->buf);
    free(w);
}

/* Pops a pooled scratch space, or makes one: creating a JIT stack per call would cost
 * more than encoding a short text. */
tok_work *tok_work_get(const or1_tokenizer *t) {
    or1_tokenizer *mt = (or1_tokenizer *)t; /* the pool, like the cache, is shared state */
    pthread_mutex_lock(&mt->work_lock);
    tok_work *w = mt->work_free;
    if (w) mt->work_free = w->next;
    pthread_mutex_unlock(&mt->work_lock);
    return w ? w : work_new();
}

/* Returns a scratch space to the pool. */
void tok_work_put(const or1_tokenizer *t, tok_work *w) {
    or1_tokenizer *mt = (or1_tokenizer *)t;
    pthread_mutex_lock(&mt->work_lock);
    w->next = mt->work_free;
    mt->work_free = w;
    pthread_mutex_unlock(&mt->work_lock);
}

/* Frees the pool. */
void tok_work_free_all(or1_tokenizer *t) {
    while (t->work_free) {
        tok_work *w = t->work_free;
        t->work_free = w->next;
        work_free(w);
    }
}

/* Records one non-empty segment of a piece (a match or a gap). */
static void seg_push(tok_work *w, size_t s, size_t e, bool match) {
    if (w->segs.n == w->seg_cap) {
        w->seg_cap = w->seg_cap ? w->seg_cap * 2 : 64;
        w->seg_match = or1_realloc(w->seg_match, w->seg_cap * sizeof *w->seg_match);
    }
    w->seg_match[w->segs.n] = match;
    spans_push(&w->segs, s, e);
}

/* Cuts text[s, e) into the matches of re and the gaps between them (empty matches are
 * skipped); each segment records whether it matched. */
static int find_segments(tok_work *w, const pcre2_code *re, bool jit, const char *text, size_t s,
                         size_t e) {
    w->segs.n = 0;
    const PCRE2_SPTR subj = (PCRE2_SPTR)(text + s);
    size_t n = e - s, pos = 0, gap = 0;
    while (pos < n) {
        int rc = jit ? pcre2_jit_match(re, subj, n, pos, PCRE2_NO_UTF_CHECK, w->md, w->mc)
                     : pcre2_match(re, subj, n, pos, PCRE2_NO_UTF_CHECK, w->md, w->mc);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return or1_fail("pre-tokenizer regex failed at byte %zu: %s", s + pos, (char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(w->md);
        if (ov[1] == ov[0]) { /* empty match: step over one character */
            pos = ov[0] + 1;
            while (pos < n && (subj[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (ov[0] > gap) seg_push(w, s + gap, s + ov[0], false);
        seg_push(w, s + ov[0], s + ov[1], true);
        pos = gap = ov[1];
    }
    if (gap < n) seg_push(w, s + gap, e, false);
    return 0;
}

/* Turns the segments of one piece into pieces, per the Split behaviour. */
static void apply_behavior(tok_work *w, const tok_step *st, spans *out) {
    size_t first = out->n;
    bool prev = false;
    for (size_t i = 0; i < w->segs.n; i++) {
        span g = w->segs.v[i];
        bool m = w->seg_match[i] != st->invert;
        switch (st->behavior) {
        case SPLIT_REMOVED:
            if (!m) spans_push(out, g.s, g.e);
            break;
        case SPLIT_ISOLATED: spans_push(out, g.s, g.e); break;
        case SPLIT_MERGED_PREV:
            if (m && !prev && out->n > first) out->v[out->n - 1].e = g.e;
            else spans_push(out, g.s, g.e);
            break;
        case SPLIT_MERGED_NEXT:
            if (!m && prev && out->n > first) out->v[out->n - 1].e = g.e;
            else spans_push(out, g.s, g.e);
            break;
        case SPLIT_CONTIGUOUS:
            if (m == prev && i > 0 && out->n > first) out->v[out->n - 1].e = g.e;
            else spans_push(out, g.s, g.e);
            break;
        }
        prev = m;
    }
}

/* ByteLevel's add_prefix_space: copies the pieces into w->buf, each led by a space. */
static const char *prefix_spaces(tok_work *w, const char *text) {
    size_t need = 0;
    for (size_t i = 0; i < w->a.n; i++) need += w->a.v[i].e - w->a.v[i].s + 1;
    if (need > w->buf_cap) {
        w->buf_cap = need;
        w->buf = or1_realloc(w->buf, need);
    }
    char *nb = w->buf;
    size_t at = 0;
    w->b.n = 0;
    for (size_t i = 0; i < w->a.n; i++) {
        span p = w->a.v[i];
        size_t start = at;
        if (text[p.s] != ' ') nb[at++] = ' ';
        memmove(nb + at, text + p.s, p.e - p.s);
        at += p.e - p.s;
        spans_push(&w->b, start, at);
    }
    spans t = w->a;
    w->a = w->b;
    w->b = t;
    return nb;
}

/* Pre-tokenizes one normalized segment with every step in turn, then appends the BPE of
 * each pre-token. */
int tok_encode_segment(const or1_tokenizer *t, tok_work *w, const char *s, size_t len,
                       tok_ids *out) {
    if (len == 0) return 0;
    w->a.n = 0;
    spans_push(&w->a, 0, len);
    const char *text = s;
    for (size_t k = 0; k < t->n_step; k++) {
        const tok_step *st = &t->step[k];
        if (st->kind == STEP_PREFIX_SPACE) { /* at most one such step (checked at load) */
            text = prefix_spaces(w, text);
            continue;
        }
        w->b.n = 0;
        for (size_t i = 0; i < w->a.n; i++) {
            if (find_segments(w, st->re, st->jit, text, w->a.v[i].s, w->a.v[i].e) != 0) return -1;
            apply_behavior(w, st, &w->b);
        }
        spans tmp = w->a;
        w->a = w->b;
        w->b = tmp;
    }
    for (size_t i = 0; i < w->a.n; i++)
        tok_bpe_word(t, text + w->a.v[i].s, w->a.v[i].e - w->a.v[i].s, out);
    return 0;
}
