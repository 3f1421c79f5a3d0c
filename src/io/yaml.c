/* YAML configuration files as a tree (libyaml's event parser), and --set overrides. */
#include "yaml_internal.h"
#include "or1/core.h"
#include "or1/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum {
    CFG_MAX_BYTES = 1 << 20, /* a config is small: refuse anything larger */
    CFG_MAX_DEPTH = 32,
    CFG_MAX_KIDS = 100000,
};

/* Frees a node and everything below it. */
static void node_free(or1_yaml_node *n) {
    if (!n) return;
    for (size_t i = 0; i < n->n_kids; i++) node_free(n->kids[i]);
    free(n->kids);
    free(n->value);
    free(n->key);
    free(n->path);
    free(n->where);
    free(n);
}

/* A new empty node of the given kind. */
static or1_yaml_node *node_new(cfg_kind kind, const char *where) {
    or1_yaml_node *n = or1_calloc(1, sizeof *n);
    n->kind = kind;
    n->where = or1_strdup(where);
    n->path = or1_strdup("");
    return n;
}

/* Appends a child, doubling the array when its count reaches a power of two, so a
   mapping of 10^5 keys costs linear copying (the allocation is never shrunk). */
static void node_add(or1_yaml_node *parent, or1_yaml_node *kid) {
    size_t n = parent->n_kids;
    if (n == 0 || (n & (n - 1)) == 0)
        parent->kids = or1_realloc(parent->kids, (n ? 2 * n : 1) * sizeof *parent->kids);
    parent->kids[parent->n_kids++] = kid;
}

/* Sets the paths of a subtree from its parent's path: "a.b" under maps, "a[i]" in lists. */
static void set_paths(or1_yaml_node *n, const char *parent, const char *key, long index) {
    free(n->path);
    size_t len = strlen(parent) + (key ? strlen(key) : 24) + 4;
    n->path = or1_malloc(len);
    if (key) snprintf(n->path, len, "%s%s%s", parent, *parent ? "." : "", key);
    else if (index >= 0) snprintf(n->path, len, "%s[%ld]", parent, index);
    else snprintf(n->path, len, "%s", parent);
    for (size_t i = 0; i < n->n_kids; i++)
        set_paths(n->kids[i], n->path, n->kind == CFG_MAP ? n->kids[i]->key : NULL,
                  n->kind == CFG_MAP ? -1 : (long)i);
}

/* The parse state: libyaml's parser and where messages point. */
typedef struct {
    yaml_parser_t p;
    const char *name;
    bool from_override;
} reader;

/* "name:line" of an event ("--set ..." alone for an override, which is one line). */
static void mark(const reader *r, const yaml_event_t *e, char *buf, size_t cap) {
    if (r->from_override) snprintf(buf, cap, "%s", r->name);
    else snprintf(buf, cap, "%s:%zu", r->name, (size_t)e->start_mark.line + 1);
}

/* The next event, or -1 with libyaml's complaint and its line. */
static int next_event(reader *r, yaml_event_t *e) {
    if (yaml_parser_parse(&r->p, e)) return 0;
    const char *what = r->p.problem ? r->p.problem : "parse error";
    if (r->from_override) return or1_fail("%s: YAML: %s", r->name, what);
    return or1_fail("%s:%zu: YAML: %s", r->name, (size_t)r->p.problem_mark.line + 1, what);
}

static or1_yaml_node *read_node(reader *r, yaml_event_t *e, int depth);

/* A mapping entry's key and position, sorted to find duplicates. */
typedef struct {
    const char *key;
    size_t at;
} keyed;

/* qsort order of keyed entries: by key, then by position in the document. */
static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* -1 naming the first entry of mapping n (in document order) whose key an earlier entry
 * already has; 0 if the keys are distinct. Sorted, not compared pairwise: a config of 60,000
 * keys is refused in milliseconds. */
static int refuse_duplicates(const or1_yaml_node *n) {
    if (n->n_kids < 2) return 0;
    keyed *k = or1_malloc(n->n_kids * sizeof *k);
    for (size_t i = 0; i < n->n_kids; i++) k[i] = (keyed){n->kids[i]->key, i};
    qsort(k, n->n_kids, sizeof *k, by_key);
    size_t dup = n->n_kids;
    for (size_t i = 1; i < n->n_kids; i++)
        if (!strcmp(k[i].key, k[i - 1].key) && k[i].at < dup) dup = k[i].at;
    free(k);
    if (dup == n->n_kids) return 0;
    return or1_fail("%s: duplicate key \"%.200s\"", n->kids[dup]->where, n->kids[dup]->key);
}

/* Reads a collection's entries up to its end event: mapping values keyed by scalar keys
 * (duplicates refused), or list items. */
static int read_children(reader *r, or1_yaml_node *n, int depth) {
    yaml_event_type_t end = n->kind == CFG_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    for (;;) {
        yaml_event_t e;
        if (next_event(r, &e) != 0) return -1;
        if (e.type == end) {
            yaml_event_delete(&e);
            return n->kind == CFG_MAP ? refuse_duplicates(n) : 0;
        }
        char where[512];
        mark(r, &e, where, sizeof where);
        if (n->n_kids >= CFG_MAX_KIDS) {
            yaml_event_delete(&e);
            return or1_fail("%s: more than %d entries in one collection", where, CFG_MAX_KIDS);
        }
        char *key = NULL;
        if (n->kind == CFG_MAP) {
            if (e.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&e);
                return or1_fail("%s: a mapping key must be a plain string", where);
            }
            key = or1_strdup((const char *)e.data.scalar.value);
            yaml_event_delete(&e);
            if (next_event(r, &e) != 0) {
                free(key);
                return -1;
            }
        }
        or1_yaml_node *kid = read_node(r, &e, depth + 1);
        yaml_event_delete(&e);
        if (!kid) {
            free(key);
            return -1;
        }
        kid->key = key;
        if (key) { /* a value is located at its key's line */
            free(kid->where);
            kid->where = or1_strdup(where);
        }
        node_add(n, kid);
    }
}

/* Builds the node that starts with event e (scalar, list or mapping). */
static or1_yaml_node *read_node(reader *r, yaml_event_t *e, int depth) {
    char where[512];
    mark(r, e, where, sizeof where);
    if (depth > CFG_MAX_DEPTH) {
        or1_fail("%s: nested deeper than %d levels", where, CFG_MAX_DEPTH);
        return NULL;
    }
    if (e->type == YAML_ALIAS_EVENT) {
        or1_fail("%s: YAML aliases (*name) are not supported in a config", where);
        return NULL;
    }
    if (e->type == YAML_SCALAR_EVENT) {
        if (e->data.scalar.anchor) {
            or1_fail("%s: YAML anchors (&name) are not supported in a config", where);
            return NULL;
        }
        or1_yaml_node *n = node_new(CFG_SCALAR, where);
        n->value = or1_malloc(e->data.scalar.length + 1);
        memcpy(n->value, e->data.scalar.value, e->data.scalar.length);
        n->value[e->data.scalar.length] = '\0';
        if (strlen(n->value) != e->data.scalar.length) {
            or1_fail("%s: a NUL character inside a value", where);
            node_free(n);
            return NULL;
        }
        n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return n;
    }
    bool map = e->type == YAML_MAPPING_START_EVENT;
    if (!map && e->type != YAML_SEQUENCE_START_EVENT) {
        or1_fail("%s: unexpected YAML event", where);
        return NULL;
    }
    const yaml_char_t *anchor = map ? e->data.mapping_start.anchor : e->data.sequence_start.anchor;
    if (anchor) {
        or1_fail("%s: YAML anchors (&name) are not supported in a config", where);
        return NULL;
    }
    or1_yaml_node *n = node_new(map ? CFG_MAP : CFG_SEQ, where);
    if (read_children(r, n, depth) != 0) {
        node_free(n);
        return NULL;
    }
    return n;
}

/* Parses one YAML document into a tree; an empty document gives NULL without error
 * (*empty set). */
static or1_yaml_node *parse_doc(const char *text, size_t len, const char *name, bool from_override,
                               bool *empty) {
    reader r = {.name = name, .from_override = from_override};
    *empty = false;
    if (!yaml_parser_initialize(&r.p)) {
        or1_fail("%s: cannot start the YAML parser", name);
        return NULL;
    }
    yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
    or1_yaml_node *root = NULL;
    int state = 0; /* 0: before the document, 1: after its root, 2: after its end */
    for (;;) {
        yaml_event_t e;
        if (next_event(&r, &e) != 0) break;
        yaml_event_type_t t = e.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&e);
            if (!root) *empty = true;
            yaml_parser_delete(&r.p);
            return root;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            state = t == YAML_DOCUMENT_END_EVENT ? 2 : state;
        } else if (t == YAML_DOCUMENT_START_EVENT) {
            if (state == 2) {
                char where[512];
                mark(&r, &e, where, sizeof where);
                or1_fail("%s: only one YAML document is allowed in a config", where);
                yaml_event_delete(&e);
                break;
            }
        } else {
            root = read_node(&r, &e, 0);
            state = 1;
            if (!root) {
                yaml_event_delete(&e);
                break;
            }
        }
        yaml_event_delete(&e);
    }
    node_free(root);
    yaml_parser_delete(&r.p);
    return NULL;
}

/* Parses config text; the top level must be a mapping (an empty file is an empty one). */
or1_yaml *or1_yaml_parse(const char *text, size_t len, const char *name) {
    bool empty;
    or1_yaml_node *root = parse_doc(text, len, name, false, &empty);
    if (!root && !empty) return NULL;
    if (!root) {
        char where[512];
        snprintf(where, sizeof where, "%s:1", name);
        root = node_new(CFG_MAP, where);
    }
    if (root->kind != CFG_MAP) {
        or1_fail("%s: the top level of a config must be a mapping of keys", root->where);
        node_free(root);
        return NULL;
    }
    set_paths(root, "", NULL, -1);
    or1_yaml *c = or1_calloc(1, sizeof *c);
    c->file = or1_strdup(name);
    c->root = root;
    return c;
}

/* Reads and parses a config file. */
or1_yaml *or1_yaml_load(const char *path) {
    char *text;
    size_t len;
    if (or1_read_file(path, CFG_MAX_BYTES, &text, &len) != 0) {
        or1_fail_ctx("config");
        return NULL;
    }
    or1_yaml *c = or1_yaml_parse(text, len, path);
    free(text);
    return c;
}

/* Frees the tree. */
void or1_yaml_free(or1_yaml *c) {
    if (!c) return;
    node_free(c->root);
    free(c->file);
    free(c);
}

/* Accessors of the tree and its nodes. */
const char *or1_yaml_file(const or1_yaml *c) { return c->file; }
const or1_yaml_node *or1_yaml_root(const or1_yaml *c) { return c->root; }
const char *or1_yaml_node_path(const or1_yaml_node *n) { return n->path; }
const char *or1_yaml_node_where(const or1_yaml_node *n) { return n->where; }

/* Plain "", "~", "null", "Null", "NULL" (YAML 1.2 core schema). */
bool io_yaml_is_null(const or1_yaml_node *n) {
    if (n->kind != CFG_SCALAR || !n->plain) return false;
    const char *v = n->value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* Parses a list index component ("0", "12"); -1 if it is not one. */
static long index_of(const char *s, size_t len) {
    if (len == 0 || len > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* The child of n named by one path component (a key, or an index into a list), or NULL. */
static or1_yaml_node *child(const or1_yaml_node *n, const char *comp, size_t len, size_t *slot) {
    if (n->kind == CFG_MAP) {
        for (size_t i = 0; i < n->n_kids; i++)
            if (strlen(n->kids[i]->key) == len && !strncmp(n->kids[i]->key, comp, len)) {
                *slot = i;
                return n->kids[i];
            }
    } else if (n->kind == CFG_SEQ) {
        long k = index_of(comp, len);
        if (k >= 0 && (size_t)k < n->n_kids) {
            *slot = (size_t)k;
            return n->kids[k];
        }
    }
    return NULL;
}

/* Walks a dotted path; absent or null -> NULL. */
const or1_yaml_node *or1_yaml_get(const or1_yaml_node *base, const char *path) {
    const or1_yaml_node *n = base;
    const char *s = path;
    while (n && *s) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s), slot;
        n = child(n, s, len, &slot);
        s += len + (dot ? 1 : 0);
    }
    return n && !io_yaml_is_null(n) ? n : NULL;
}

/* A new NUL-terminated copy of len bytes. */
static char *dup_n(const char *s, size_t len) {
    char *d = or1_malloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* Puts node v into n, replacing the old child k at slot (or appending when k is NULL), and
 * sets the paths of v's subtree. */
static void place(or1_yaml_node *n, or1_yaml_node *k, size_t slot, or1_yaml_node *v) {
    if (k) {
        node_free(k);
        n->kids[slot] = v;
    } else {
        node_add(n, v);
        slot = n->n_kids - 1;
    }
    set_paths(v, n->path, v->key, n->kind == CFG_SEQ ? (long)slot : -1);
}

/* The value of "KEY=VALUE" parsed as YAML (empty: a null scalar) with the key copied into
 * key[401]; NULL on error. */
static or1_yaml_node *parse_assignment(const char *assignment, const char *where, char *key) {
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        or1_fail("%s: expected KEY=VALUE with a dotted key, e.g. train.lr=1e-6", where);
        return NULL;
    }
    size_t klen = (size_t)(eq - assignment);
    if (klen > 400) {
        or1_fail("%s: key longer than 400 characters", where);
        return NULL;
    }
    memcpy(key, assignment, klen);
    key[klen] = '\0';
    bool empty;
    or1_yaml_node *v = parse_doc(eq + 1, strlen(eq + 1), where, true, &empty);
    if (!v && !empty) return NULL;
    if (!v) { /* "key=" sets null: the default applies */
        v = node_new(CFG_SCALAR, where);
        v->value = or1_strdup("");
        v->plain = true;
    }
    free(v->where);
    v->where = or1_strdup(where);
    return v;
}

/* "--set a.b=c": walks the path, creating mappings as needed (a null value may become one),
 * and puts the parsed value at its end, replacing what was there. */
int or1_yaml_set(or1_yaml *c, const char *assignment) {
    char where[600], key[401];
    snprintf(where, sizeof where, "--set %.500s", assignment);
    or1_yaml_node *v = parse_assignment(assignment, where, key);
    if (!v) return -1;
    or1_yaml_node *n = c->root;
    for (char *s = key;;) {
        char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s), slot = 0;
        or1_yaml_node *k = len ? child(n, s, len, &slot) : NULL;
        int rc = 0;
        if (len == 0)
            rc = or1_fail("%s: empty component in key \"%s\"", where, key);
        else if (!k && n->kind == CFG_SEQ)
            rc = or1_fail("%s: \"%.*s\" is not an index of the list %s (0..%zu)", where, (int)len, s,
                          *n->path ? n->path : "(top level)", n->n_kids ? n->n_kids - 1 : 0);
        else if (dot && k && k->kind == CFG_SCALAR && !io_yaml_is_null(k))
            rc = or1_fail("%s: \"%.*s\" is not a mapping or list that can hold \"%s\"", where, (int)(dot - key), key,
                          dot + 1);
        if (rc != 0) {
            node_free(v);
            return -1;
        }
        if (!dot) {
            v->key = n->kind == CFG_MAP ? or1_strdup(s) : NULL;
            place(n, k, slot, v);
            return 0;
        }
        if (!k || k->kind == CFG_SCALAR) {
            or1_yaml_node *m = node_new(CFG_MAP, where);
            m->key = dup_n(s, len);
            place(n, k, slot, m);
            k = m;
        }
        n = k;
        s = dot + 1;
    }
}
