/* or1 io_yaml: YAML configuration files (libyaml) as a tree, `--set a.b.c=value` overrides,
 * typed getters and a schema of known keys (generic: the trainer's schema is in or1/train.h).
 *
 * Every error names the file (or the --set override) and line, and the key's dotted path
 * ("train.lr", "stages[1].steps"). YAML scalars are typed when read, by YAML 1.2 core-schema
 * rules: plain true/false are booleans, plain numbers are numbers, plain null, ~ or an empty
 * value mean "absent" (the default applies); quoted scalars are always strings; tags are
 * ignored. Anchors, aliases, duplicate keys and several documents per file are refused. */
#ifndef OR1_IO_YAML_H
#define OR1_IO_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct or1_yaml or1_yaml;
typedef struct or1_yaml_node or1_yaml_node;

/* Loads a YAML file (at most 1 MiB); the top level must be a mapping. NULL on error. */
or1_yaml *or1_yaml_load(const char *path);
/* Parses YAML text; `name` stands for the file in messages. NULL on error. */
or1_yaml *or1_yaml_parse(const char *text, size_t len, const char *name);
void or1_yaml_free(or1_yaml *c);
/* The file the tree was loaded from (as given). */
const char *or1_yaml_file(const or1_yaml *c);

/* Applies one override "a.b.c=value": the value is parsed as YAML (a scalar, or a flow
 * list/map such as [a, b]); missing maps on the way are created; a numeric component
 * indexes a list ("stages.1.steps=10"). Errors name the override. */
int or1_yaml_set(or1_yaml *c, const char *assignment);

/* The root mapping. */
const or1_yaml_node *or1_yaml_root(const or1_yaml *c);
/* The node at a dotted path below base (numeric components index lists), or NULL when
 * absent or null. */
const or1_yaml_node *or1_yaml_get(const or1_yaml_node *base, const char *path);
/* The full path of a node ("stages[1].steps") and where it was written ("file.yaml:12" or
 * "--set a.b=c"), for messages. */
const char *or1_yaml_node_path(const or1_yaml_node *n);
const char *or1_yaml_node_where(const or1_yaml_node *n);

/* Typed getters: absent (or null) -> *out = def; wrong type or out of range -> -1 with an
 * error naming the file, line and key path. Strings point into the tree (or are def). */
int or1_yaml_int(const or1_yaml_node *base, const char *path, int64_t lo, int64_t hi, int64_t def,
                int64_t *out);
int or1_yaml_double(const or1_yaml_node *base, const char *path, double lo, double hi, double def,
                   double *out);
int or1_yaml_bool(const or1_yaml_node *base, const char *path, bool def, bool *out);
int or1_yaml_string(const or1_yaml_node *base, const char *path, const char *def, const char **out);
/* A list of scalars as new strings (free each and the array); absent -> empty. A single
 * scalar is not a list: it is an error. */
int or1_yaml_strings(const or1_yaml_node *base, const char *path, char ***out, size_t *n);
/* A list of finite numbers (new array); absent -> empty. */
int or1_yaml_doubles(const or1_yaml_node *base, const char *path, double **out, size_t *n);
/* A list of mappings: *items (new array of pointers into the tree); absent -> empty. */
int or1_yaml_maps(const or1_yaml_node *base, const char *path, const or1_yaml_node ***items, size_t *n);

/* ---- Schema ------------------------------------------------------------------------------ */

typedef enum {
    OR1_YAML_INT,
    OR1_YAML_DOUBLE,
    OR1_YAML_BOOL,
    OR1_YAML_STRING,
    OR1_YAML_PATH,    /* a string naming a file or folder; relative paths are taken from
                        the working directory (run from the repository root) */
    OR1_YAML_STRINGS, /* list of scalars */
    OR1_YAML_PATHS,   /* list of paths */
    OR1_YAML_DOUBLES, /* list of numbers */
    OR1_YAML_MAPS,    /* list of mappings; its items' keys are listed as "<path>[].<key>" */
} or1_yaml_type;

/* One known key. def is the default as YAML text ("" for none, i.e. empty/absent). */
typedef struct {
    const char *path;
    or1_yaml_type type;
    const char *def;
    double lo, hi; /* range of INT and DOUBLE values (and of DOUBLES items) */
    const char *help;
    const char *choices; /* a STRING key's values, "a | b | c", for the help (NULL: free text) */
    long field;          /* where the value lands in the struct its loader fills; -1: by hand */
} or1_yaml_key;

/* Checks every key of the tree against the schema before any work: an unknown key (with
 * the closest known one suggested), a value of the wrong type or out of range is an error
 * naming the file, line and key path. Mappings whose path is a prefix of known keys are
 * walked; lists of mappings are checked item by item. */
int or1_yaml_check(const or1_yaml *c, const or1_yaml_key *schema, size_t n);

#endif
