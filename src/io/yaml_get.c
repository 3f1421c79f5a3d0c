/* Typed access to the configuration tree and the check against a schema of known keys. */
#include "yaml_internal.h"
#include "or1/core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails naming where the node was written and its key path. */
#define NODE_FAIL(n, fmt, ...) or1_fail("%s: key \"%s\": " fmt, (n)->where, (n)->path, __VA_ARGS__)

/* A plain scalar in YAML 1.2 core integer form (decimal, or 0x hex); sets *out. */
static bool scalar_int(const or1_yaml_node *n, int64_t *out) {
    if (n->kind != CFG_SCALAR || !n->plain) return false;
    const char *s = n->value;
    char *end;
    errno = 0;
    long long v;
    if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) && s[2]) v = strtoll(s + 2, &end, 16);
    else {
        const char *d = s + (*s == '-' || *s == '+');
        if (*d < '0' || *d > '9') return false;
        v = strtoll(s, &end, 10);
    }
    if (*end || errno) return false;
    *out = v;
    return true;
}

/* A plain scalar in YAML 1.2 core float (or integer) form, finite; sets *out. */
static bool scalar_double(const or1_yaml_node *n, double *out) {
    if (n->kind != CFG_SCALAR || !n->plain) return false;
    const char *s = n->value, *d = s + (*s == '-' || *s == '+');
    if (!((*d >= '0' && *d <= '9') || (*d == '.' && d[1] >= '0' && d[1] <= '9'))) return false;
    for (const char *p = d; *p; p++)
        if (!strchr("0123456789.eE+-", *p)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* A plain true/True/TRUE/false/False/FALSE; sets *out. */
static bool scalar_bool(const or1_yaml_node *n, bool *out) {
    if (n->kind != CFG_SCALAR || !n->plain) return false;
    const char *v = n->value;
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) return *out = true;
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) return !(*out = false);
    return false;
}

/* A short rendering of a node for messages. */
static const char *shown(const or1_yaml_node *n) {
    return n->kind == CFG_MAP ? "a mapping" : n->kind == CFG_SEQ ? "a list" : n->value;
}

/* An integer in [lo, hi], or def when absent. */
int or1_yaml_int(const or1_yaml_node *base, const char *path, int64_t lo, int64_t hi, int64_t def,
                int64_t *out) {
    const or1_yaml_node *n = or1_yaml_get(base, path);
    if (!n) {
        *out = def;
        return 0;
    }
    int64_t v;
    if (!scalar_int(n, &v)) return NODE_FAIL(n, "expected an integer, got \"%.80s\"", shown(n));
    if (v < lo || v > hi)
        return NODE_FAIL(n, "%lld is outside [%lld, %lld]", (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

/* A finite number in [lo, hi], or def when absent. */
int or1_yaml_double(const or1_yaml_node *base, const char *path, double lo, double hi, double def,
                   double *out) {
    const or1_yaml_node *n = or1_yaml_get(base, path);
    if (!n) {
        *out = def;
        return 0;
    }
    double v;
    if (!scalar_double(n, &v)) return NODE_FAIL(n, "expected a number, got \"%.80s\"", shown(n));
    if (v < lo || v > hi) return NODE_FAIL(n, "%g is outside [%g, %g]", v, lo, hi);
    *out = v;
    return 0;
}

/* A YAML boolean, or def when absent. */
int or1_yaml_bool(const or1_yaml_node *base, const char *path, bool def, bool *out) {
    const or1_yaml_node *n = or1_yaml_get(base, path);
    if (!n) {
        *out = def;
        return 0;
    }
    if (!scalar_bool(n, out)) return NODE_FAIL(n, "expected true or false, got \"%.80s\"", shown(n));
    return 0;
}

/* Any scalar's text, or def when absent. */
int or1_yaml_string(const or1_yaml_node *base, const char *path, const char *def, const char **out) {
    const or1_yaml_node *n = or1_yaml_get(base, path);
    if (!n) {
        *out = def;
        return 0;
    }
    if (n->kind != CFG_SCALAR) return NODE_FAIL(n, "expected a string, got %s", shown(n));
    *out = n->value;
    return 0;
}

/* The list node at path (NULL and *n = 0 when absent); -1 if it is not a list. */
static int list_at(const or1_yaml_node *base, const char *path, const or1_yaml_node **l) {
    *l = or1_yaml_get(base, path);
    if (*l && (*l)->kind != CFG_SEQ) return NODE_FAIL(*l, "expected a list, got \"%.80s\"", shown(*l));
    return 0;
}

/* A list of non-null scalars, copied. */
int or1_yaml_strings(const or1_yaml_node *base, const char *path, char ***out, size_t *n) {
    const or1_yaml_node *l;
    *out = NULL;
    *n = 0;
    if (list_at(base, path, &l) != 0) return -1;
    if (!l) return 0;
    for (size_t i = 0; i < l->n_kids; i++)
        if (l->kids[i]->kind != CFG_SCALAR || io_yaml_is_null(l->kids[i]))
            return NODE_FAIL(l->kids[i], "expected a string, got %s", io_yaml_is_null(l->kids[i]) ? "null" : shown(l->kids[i]));
    *out = or1_malloc((l->n_kids + 1) * sizeof **out);
    for (size_t i = 0; i < l->n_kids; i++) (*out)[i] = or1_strdup(l->kids[i]->value);
    *n = l->n_kids;
    return 0;
}

/* A list of finite numbers, copied. */
int or1_yaml_doubles(const or1_yaml_node *base, const char *path, double **out, size_t *n) {
    const or1_yaml_node *l;
    *out = NULL;
    *n = 0;
    if (list_at(base, path, &l) != 0) return -1;
    if (!l) return 0;
    double *v = or1_malloc((l->n_kids + 1) * sizeof *v);
    for (size_t i = 0; i < l->n_kids; i++)
        if (!scalar_double(l->kids[i], &v[i])) {
            free(v);
            return NODE_FAIL(l->kids[i], "expected a number, got \"%.80s\"", shown(l->kids[i]));
        }
    *out = v;
    *n = l->n_kids;
    return 0;
}

/* A list of mappings, as pointers into the tree. */
int or1_yaml_maps(const or1_yaml_node *base, const char *path, const or1_yaml_node ***items, size_t *n) {
    const or1_yaml_node *l;
    *items = NULL;
    *n = 0;
    if (list_at(base, path, &l) != 0) return -1;
    if (!l) return 0;
    for (size_t i = 0; i < l->n_kids; i++)
        if (l->kids[i]->kind != CFG_MAP)
            return NODE_FAIL(l->kids[i], "expected a mapping of keys, got \"%.80s\"", shown(l->kids[i]));
    *items = or1_malloc((l->n_kids + 1) * sizeof **items);
    for (size_t i = 0; i < l->n_kids; i++) (*items)[i] = l->kids[i];
    *n = l->n_kids;
    return 0;
}

/* ---- schema check -------------------------------------------------------------------------- */

/* The schema form of a node path: list indices "[3]" become "[]". */
static void schema_form(const char *path, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = path; *p && o + 3 < cap; p++) {
        out[o++] = *p;
        if (*p == '[') {
            while (*p && *p != ']') p++;
            out[o++] = ']';
            if (!*p) break;
        }
    }
    out[o] = '\0';
}

/* The schema entry for a path, or NULL. */
static const or1_yaml_key *find_key(const or1_yaml_key *schema, size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(schema[i].path, path)) return &schema[i];
    return NULL;
}

/* True if path is a proper prefix (at a '.') of some schema key: a mapping of keys. */
static bool is_section(const or1_yaml_key *schema, size_t n, const char *path) {
    size_t len = strlen(path);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(schema[i].path, path, len) && schema[i].path[len] == '.') return true;
    return false;
}

/* An unknown key: names it and the closest known key of the schema, if one is close. */
static int unknown(const or1_yaml_node *n, const char *form, const or1_yaml_key *schema, size_t ns) {
    const char *best = or1_closest_name(form, schema, ns, sizeof *schema);
    if (best) return or1_fail("%s: unknown key \"%s\" (did you mean \"%s\"?)", n->where, n->path, best);
    return or1_fail("%s: unknown key \"%s\"", n->where, n->path);
}

/* Checks one value against its schema entry's type and range. */
static int check_value(const or1_yaml_node *n, const or1_yaml_key *k) {
    if (io_yaml_is_null(n)) return 0;
    int64_t i;
    double d;
    bool b;
    switch (k->type) {
    case OR1_YAML_INT:
        if (!scalar_int(n, &i)) return NODE_FAIL(n, "expected an integer, got \"%.80s\"", shown(n));
        if ((double)i < k->lo || (double)i > k->hi)
            return NODE_FAIL(n, "%lld is outside [%.0f, %.0f]", (long long)i, k->lo, k->hi);
        return 0;
    case OR1_YAML_DOUBLE:
        if (!scalar_double(n, &d)) return NODE_FAIL(n, "expected a number, got \"%.80s\"", shown(n));
        if (d < k->lo || d > k->hi) return NODE_FAIL(n, "%g is outside [%g, %g]", d, k->lo, k->hi);
        return 0;
    case OR1_YAML_BOOL:
        if (!scalar_bool(n, &b)) return NODE_FAIL(n, "expected true or false, got \"%.80s\"", shown(n));
        return 0;
    case OR1_YAML_STRING:
    case OR1_YAML_PATH:
        if (n->kind != CFG_SCALAR) return NODE_FAIL(n, "expected a string, got %s", shown(n));
        return 0;
    case OR1_YAML_STRINGS:
    case OR1_YAML_PATHS: {
        char **s;
        size_t m;
        if (or1_yaml_strings(n, "", &s, &m) != 0) return -1;
        for (size_t j = 0; j < m; j++) free(s[j]);
        free(s);
        return 0;
    }
    case OR1_YAML_DOUBLES: {
        double *v;
        size_t m;
        if (or1_yaml_doubles(n, "", &v, &m) != 0) return -1;
        for (size_t j = 0; j < m; j++)
            if (v[j] < k->lo || v[j] > k->hi) {
                double bad = v[j];
                free(v);
                return NODE_FAIL(n->kids[j], "%g is outside [%g, %g]", bad, k->lo, k->hi);
            }
        free(v);
        return 0;
    }
    default: {
        const or1_yaml_node **items;
        size_t m;
        if (or1_yaml_maps(n, "", &items, &m) != 0) return -1;
        free(items);
        return 0;
    }
    }
}

static int check_map(const or1_yaml_node *m, const or1_yaml_key *schema, size_t ns);

/* Checks one mapping entry: a known key's value, a section's keys, or a list of mappings'
 * items; anything else is unknown. */
static int check_entry(const or1_yaml_node *n, const or1_yaml_key *schema, size_t ns) {
    char form[512];
    schema_form(n->path, form, sizeof form);
    const or1_yaml_key *k = find_key(schema, ns, form);
    if (k) {
        if (check_value(n, k) != 0) return -1;
        if (k->type == OR1_YAML_MAPS && n->kind == CFG_SEQ)
            for (size_t i = 0; i < n->n_kids; i++)
                if (check_map(n->kids[i], schema, ns) != 0) return -1;
        return 0;
    }
    if (is_section(schema, ns, form)) {
        if (io_yaml_is_null(n)) return 0;
        if (n->kind != CFG_MAP) return NODE_FAIL(n, "expected a mapping of keys, got \"%.80s\"", shown(n));
        return check_map(n, schema, ns);
    }
    return unknown(n, form, schema, ns);
}

/* Checks every entry of a mapping. */
static int check_map(const or1_yaml_node *m, const or1_yaml_key *schema, size_t ns) {
    for (size_t i = 0; i < m->n_kids; i++)
        if (check_entry(m->kids[i], schema, ns) != 0) return -1;
    return 0;
}

/* Walks the whole tree from the top-level mapping. */
int or1_yaml_check(const or1_yaml *c, const or1_yaml_key *schema, size_t n) {
    return check_map(c->root, schema, n);
}
