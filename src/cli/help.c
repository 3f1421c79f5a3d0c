/* What `or1 help`, `or1 CMD --help`, `or1 train --help-config` and `or1 --version` print:
 * all of it generated from the tables the parser and the config loader use. */
#include "cli.h"

#include "or1/core.h"
#include "or1/cuda.h"
#include "or1/kernels.h"
#include "or1/io_yaml.h"
#include "or1/train.h"
#include "or1_commit.h"

#include <inttypes.h>
#include <stdio.h>

/* The command list with one line each. */
void cli_usage(FILE *f, const cli_command *const *cmds, size_t n) {
    fprintf(f, "usage: or1 <command> [--flag value ...]\n\ncommands:\n");
    for (size_t i = 0; i < n; i++) fprintf(f, "  %-14s %s\n", cmds[i]->name, cmds[i]->summary);
    fprintf(f, "\n'or1 help <command>' or 'or1 <command> --help' lists a command's flags; 'or1 --version' the "
               "version.\n");
}

/* The placeholder of a flag's value in the help. */
static const char *meta_of(const cli_flag_spec *s) {
    static const char *const by_kind[] = {"TEXT", "PATH", "INT", "NUM", "", "TEXT", ""};
    return s->meta ? s->meta : by_kind[s->kind];
}

/* One flag's first help line: name, value, then type, range, default or required. */
static void flag_line(FILE *f, const cli_flag_spec *s) {
    static const char *const type[] = {"text", "path", "integer", "number", "switch", "text, repeatable",
                                       "switch"};
    char head[512]; /* a choice list may be long: printed whole */
    snprintf(head, sizeof head, "--%s%s%s", s->name, *meta_of(s) ? " " : "", meta_of(s));
    fprintf(f, "  %-30s %s", head, type[s->kind]);
    if (s->kind == CLI_INT && s->ihi == INT64_MAX) fprintf(f, " >= %" PRId64, s->ilo);
    else if (s->kind == CLI_INT) fprintf(f, " in [%" PRId64 ", %" PRId64 "]", s->ilo, s->ihi);
    if (s->kind == CLI_NUMBER) fprintf(f, " in [%g, %g]", s->lo, s->hi);
    if (s->required) fputs(", required", f);
    if (s->def) fprintf(f, ", default %s", s->def);
    fprintf(f, "\n      %s\n", s->help);
}

/* The usage line: the command and its required flags. */
static void usage_line(FILE *f, const cli_command *c) {
    fprintf(f, "usage: or1 %s", c->name);
    for (size_t i = 0; i < c->n_flags; i++)
        if (c->flags[i].required) fprintf(f, " --%s %s", c->flags[i].name, meta_of(&c->flags[i]));
    fputs(" [flags]\n", f);
}

/* One command's help: usage, summary, every flag of its table and the common ones, an
 * example. Returns -1 when a table default is out of its own range. */
int cli_help(FILE *f, const cli_command *c) {
    if (cli_check_defaults(c)) return -1;
    usage_line(f, c);
    fprintf(f, "  %s\n\nflags:\n", c->summary);
    for (size_t i = 0; i < c->n_flags; i++) flag_line(f, &c->flags[i]);
    for (size_t i = 0; i < cli_common_flags_len; i++) flag_line(f, &cli_common_flags[i]);
    fprintf(f, "  %-30s switch\n      this help\n\nexample:\n  %s\n", "--help, -h", c->example);
    return 0;
}

/* The config schema of `or1 train`: key, type, default, range and description of each key. */
void cli_help_config(FILE *f) {
    static const char *const type[] = {"int", "number", "bool", "string", "path", "strings", "paths", "numbers",
                                       "list"};
    fprintf(f, "or1 train config keys (YAML; --set key=value overrides one):\n\n");
    for (size_t i = 0; i < or1_train_schema_len; i++) {
        const or1_yaml_key *k = &or1_train_schema[i];
        fprintf(f, "  %-30s %-7s default %s", k->path, type[k->type], *k->def ? k->def : "(none)");
        if (k->type == OR1_YAML_INT || k->type == OR1_YAML_DOUBLE || k->type == OR1_YAML_DOUBLES)
            fprintf(f, ", in [%g, %g]", k->lo, k->hi);
        fprintf(f, "\n      %s\n", k->help);
        if (k->choices) fprintf(f, "      one of: %s\n", k->choices);
    }
}

/* The version, the commit it was built from and the OpenBLAS kernels it runs. */
void cli_version(FILE *f) {
    fprintf(f, "or1 %s (commit %s)\n", OR1_VERSION, OR1_COMMIT);
    fprintf(f, "blas: OpenBLAS core %s\n", or1_blas_core());
    int gpus = or1_cuda_device_count();
    const char *why = or1_cuda_load_error();
    if (why) fprintf(f, "cuda: unavailable: %s\n", why);
    else fprintf(f, "cuda: %d GPU(s) visible\n", gpus);
    const char *amx;
    if (or1_amx_usable(&amx)) fprintf(f, "amx: usable (the model does not use it yet)\n");
    else fprintf(f, "amx: unavailable: %s\n", amx);
}
