/* The Jinja interpreter's private types, shared by its four files:
 *   jinja_lex.c    source -> tokens (whitespace control as transformers configures Jinja)
 *   jinja_parse.c  tokens -> syntax tree
 *   jinja_value.c  the arena, values, str()/repr()/json.dumps() printing, comparisons
 *   jinja_eval.c   the tree evaluated over JSON variables, with filters, tests and methods
 * Every allocation of one render lives in one arena freed at the end; an error records its
 * message and longjmps to or1_jinja_render, which frees the arena: no path leaks, and no
 * function between has to unwind by hand (Lua's error handling, for the same reason). */
#ifndef OR1_TOKENIZER_JINJA_H
#define OR1_TOKENIZER_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    JX_MAX_SOURCE = 4 << 20,    /* template source bytes */
    JX_MAX_OUTPUT = 64 << 20,   /* rendered bytes */
    JX_MAX_ARENA = 256 << 20,   /* all memory of one render */
    JX_MAX_DEPTH = 400,         /* nesting of the syntax tree, and of evaluation with macro calls */
    JX_MAX_RANGE = 100000,      /* range() items (Jinja's sandbox limit) */
};
#define JX_MAX_STEPS 20000000L /* evaluation steps of one render */

typedef struct jx_block jx_block;

/* One render's state: the arena, the error exit, the budgets. */
typedef struct {
    jx_block *blocks;
    size_t used; /* bytes taken from the arena */
    jmp_buf fail;
    char err[512];
    int err_line, err_col;
    long steps;
    int depth;
    int line, col; /* the node being evaluated: the place of errors raised below it without one */
    const char *src;
} jx_ctx;

/* Records an error at line:col (0: the node being evaluated, if any) and leaves the render. */
_Noreturn void jx_fail(jx_ctx *c, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Zeroed arena memory, freed with the render. */
void *jx_alloc(jx_ctx *c, size_t n);
/* Frees the arena. */
void jx_arena_free(jx_ctx *c);
/* An arena copy of s[0, n) with a NUL after it. */
char *jx_strndup(jx_ctx *c, const char *s, size_t n);

/* ---- values ---- */

typedef enum {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS, JV_FUNC, JV_METHOD, JV_MACRO,
} jv_kind;

typedef struct jx_list jx_list;
typedef struct jx_dict jx_dict;
typedef struct jx_method jx_method;
typedef struct jx_macro jx_macro;

/* A value: scalars inline, containers by pointer (immutable once built, but a namespace's dict). */
typedef struct {
    jv_kind kind;
    bool tuple; /* a list that Python would hold as a tuple (prints as (a, b)) */
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t n;
        } str;
        jx_list *list;
        jx_dict *dict;
        jx_method *method;
        jx_macro *macro;
        int func;
        const char *undef; /* what was undefined, for the error on use */
    } u;
} jv;

struct jx_list {
    size_t n, cap;
    jv *v;
};

struct jx_dict {
    size_t n, cap;
    jv *k, *v;
};

/* A bound method: self.name, called later. */
struct jx_method {
    jv self;
    const char *name;
};

typedef struct jx_node jx_node;
typedef struct jx_frame jx_frame;

/* A macro and the scope it was defined in. */
struct jx_macro {
    const jx_node *def;
    jx_frame *frame;
};

/* A growing arena string. */
typedef struct {
    char *s;
    size_t n, cap;
} jx_buf;

/* True for Python's ints, bool included (True + 1 == 2). */
static inline bool jv_is_int(jv v) { return v.kind == JV_INT || v.kind == JV_BOOL; }
/* The integer of an int or bool. */
static inline int64_t jv_int_of(jv v) { return v.kind == JV_BOOL ? v.u.b : v.u.i; }

jv jv_undef(const char *what);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(const char *s, size_t n);
jv jv_cstr(const char *s);
jv jv_list(jx_ctx *c, size_t cap);
jv jv_dict(jx_ctx *c, size_t cap);
void jx_list_push(jx_ctx *c, jx_list *l, jv v);
/* Sets key to v (replacing an equal key, else appending: insertion order kept). */
void jx_dict_set(jx_ctx *c, jx_dict *d, jv key, jv v);
/* The value under key, or NULL. */
jv *jx_dict_get(const jx_dict *d, jv key);
/* The value under a string key, or NULL. */
jv *jx_dict_gets(const jx_dict *d, const char *key);

void jx_buf_add(jx_ctx *c, jx_buf *b, const char *s, size_t n);
void jx_buf_adds(jx_ctx *c, jx_buf *b, const char *s);
/* Python str(v) appended (repr for containers, True/None, '' for undefined). */
void jx_str_of(jx_ctx *c, jx_buf *b, jv v);
/* Python repr(v) appended. */
void jx_repr(jx_ctx *c, jx_buf *b, jv v);
/* str(v) as a string value. */
jv jx_to_str(jx_ctx *c, jv v);
/* json.dumps(v, ensure_ascii, indent (<0: none), separators, sort_keys) appended; line:col for errors. */
typedef struct {
    bool ensure_ascii, sort_keys;
    int indent;
    const char *item_sep, *key_sep;
} jx_json_opts;
void jx_json(jx_ctx *c, jx_buf *b, jv v, const jx_json_opts *o, int depth, int line, int col);
/* Python float repr ("1.0", "1e+20") into buf (32 bytes). */
void jx_float_repr(double f, char *buf);
/* Python's name of v's type. */
const char *jx_type_name(jv v);
/* Python truthiness (undefined: false). */
bool jx_truthy(jv v);
/* Python ==. */
bool jx_eq(jv a, jv b);
/* Python ordering: <0, 0, >0; types that do not order fail at line:col. */
int jx_cmp(jx_ctx *c, jv a, jv b, int line, int col);
/* The value of a cJSON tree (integral numbers within int64 become ints). */
struct cJSON;
jv jx_from_json(jx_ctx *c, const struct cJSON *j, int depth);

/* ---- UTF-8 and Python string helpers ---- */

/* Length in bytes of the code point at s[0] (1 for an invalid byte), within n. */
size_t jx_cp_len(const char *s, size_t n);
/* Number of code points. */
size_t jx_cp_count(const char *s, size_t n);
/* Python's str.isspace() for the code point at s; its byte length in *len. */
bool jx_space_at(const char *s, size_t n, size_t *len);

/* ---- lexer ---- */

typedef enum { JT_EOF, JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END, JT_NAME, JT_INT, JT_FLOAT,
               JT_STRING, JT_OP } jt_kind;

typedef struct {
    jt_kind kind;
    int line, col;
    const char *s; /* text, name, op or decoded string */
    size_t n;
    int64_t i;
    double f;
} jx_token;

/* Tokens of a template source (newlines already \n, the final one dropped). */
jx_token *jx_lex(jx_ctx *c, const char *src, size_t len, size_t *n);

/* ---- syntax tree ---- */

typedef enum {
    /* statements */
    JN_TEXT, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_BREAK, JN_CONTINUE,
    /* expressions */
    JN_LIT, JN_NAME, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST, JN_BINOP, JN_NEG, JN_POS, JN_NOT,
    JN_AND, JN_OR, JN_COND, JN_LIST, JN_TUPLE, JN_DICT, JN_COMPARE,
} jn_kind;

/* Binary and comparison operators. */
typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT, OP_EQ, OP_NE, OP_LT, OP_LE,
               OP_GT, OP_GE, OP_IN, OP_NOTIN } jx_op;

/* A list of nodes. */
typedef struct {
    jx_node **v;
    size_t n;
} jx_nodes;

struct jx_node {
    jn_kind kind;
    int line, col;
    jv lit;           /* JN_LIT; JN_TEXT's text */
    const char *name; /* NAME, ATTR, FILTER, TEST, MACRO name; SET target name */
    jx_op op;
    bool negate;      /* TEST: is not */
    jx_node *a, *b, *c; /* operands; FOR: iterable, filter; SET: value, target object (ns.attr) */
    jx_nodes args;    /* CALL/FILTER/TEST args; LIST/TUPLE/DICT items (DICT: k, v, k, v...); COMPARE operands */
    jx_nodes kw;      /* keyword-argument values; MACRO defaults (NULL: none) */
    const char **kwnames; /* keyword names; FOR/SET/MACRO target or parameter names */
    size_t nkwnames;
    jx_op *ops;       /* COMPARE operators */
    jx_nodes body, orelse; /* IF/FOR/SET_BLOCK/MACRO bodies */
};

/* The template's statements. */
jx_nodes jx_parse(jx_ctx *c, const jx_token *t, size_t n);

/* ---- evaluation ---- */

/* An evaluation: the render, where output goes, the template's top scope. */
typedef struct {
    jx_ctx *c;
    jx_buf *out;
    jx_frame *root;
} jx_eval;

/* Arguments of a call, filter or test (positional, then keyword). */
typedef struct {
    const jv *pos;
    size_t npos;
    const char *const *kwn;
    const jv *kw;
    size_t nkw;
    const jx_node *at; /* for error places */
} jx_args;

/* ---- value access, below the evaluator and the library (jinja_access.c) ---- */

/* Argument i, or the keyword argument name, or def; fails when more than max positional
 * arguments were given, or a keyword argument is not one of names (NULL-terminated). */
jv jx_arg(jx_eval *E, const jx_args *a, size_t i, const char *name, jv def);
void jx_args_check(jx_eval *E, const jx_args *a, const char *what, size_t max, const char *const *names);
/* Fails with the message an undefined value carries. */
_Noreturn void jx_undef_fail(jx_eval *E, const jx_node *at, jv v);
/* Python iteration: list items, dict keys, string characters; undefined is empty. */
jx_list *jx_iter(jx_eval *E, const jx_node *at, jv v);
/* x[key] as Jinja looks it up (the item, then the attribute), and x.name (the reverse). */
jv jx_getitem(jx_eval *E, const jx_node *at, jv x, jv key);
jv jx_getattr(jx_eval *E, const jx_node *at, jv x, const char *name);
/* The method of x called name, if x's Python type has one (a dict's "items" wins over a key). */
bool jx_has_method(jv x, const char *name);
/* Index of name in a NULL-terminated list of names, or -1. */
int jx_name_index(const char *const *list, const char *name);

/* ---- the library (jinja_lib.c) ---- */

/* Filter, test, method and global-function calls. */
jv jx_filter(jx_eval *E, const char *name, jv x, const jx_args *a);
bool jx_test(jx_eval *E, const char *name, jv x, const jx_args *a);
jv jx_call_method(jx_eval *E, const jx_method *m, const jx_args *a);
jv jx_call_func(jx_eval *E, int func, const jx_args *a);
/* The global function called name (range, namespace, dict, raise_exception, strftime_now), or -1. */
int jx_func_id(const char *name);
/* Python str.lower() of s as a new string value. */
jv jx_lower(jx_eval *E, jv s);
/* True when name is a filter / test this interpreter knows (checked at parse, as Jinja does). */
bool jx_filter_known(const char *name);
bool jx_test_known(const char *name);

/* ---- the evaluator (jinja_eval.c) ---- */

/* Renders the statements with vars (a dict) into out. */
void jx_render(jx_ctx *c, const jx_nodes *prog, jx_dict *vars, jx_buf *out);

#endif
