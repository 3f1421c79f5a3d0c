/* Private: the YAML configuration tree shared by src/io/yaml.c and yaml_get.c. */
#ifndef OR1_IO_YAML_INTERNAL_H
#define OR1_IO_YAML_INTERNAL_H

#include "or1/io_yaml.h"

typedef enum { CFG_MAP, CFG_SEQ, CFG_SCALAR } cfg_kind;

struct or1_yaml_node {
    cfg_kind kind;
    char *value;         /* scalar text */
    bool plain;          /* scalar written unquoted (so typed by the core schema) */
    char *key;           /* key under the parent mapping (NULL for list items, root) */
    char *path;          /* full path: "a.b", "stages[1].steps"; "" for the root */
    char *where;         /* "file.yaml:12" or "--set a.b=c" */
    or1_yaml_node **kids; /* mapping values (with their keys) or list items */
    size_t n_kids;
};

struct or1_yaml {
    char *file;
    or1_yaml_node *root;
};

/* True if a plain scalar spells null (or is empty): the key then counts as absent. */
bool io_yaml_is_null(const or1_yaml_node *n);

#endif
