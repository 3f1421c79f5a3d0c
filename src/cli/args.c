/* Flag parsing shared by all subcommands: one walk over argv against the command's table. */
#include "cli.h"

#include "or1/core.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The flags every command takes, listed after its own in the help. */
const cli_flag_spec cli_common_flags[] = {
    FLAG_INT("threads", NULL, 1, 1024, "worker threads (OpenMP and BLAS); default: all cores"),
};
const size_t cli_common_flags_len = sizeof cli_common_flags / sizeof cli_common_flags[0];

/* Table entry i of the command, counting the common flags after its own. */
static const cli_flag_spec *spec_at(const cli_command *c, size_t i) {
    return i < c->n_flags ? &c->flags[i] : &cli_common_flags[i - c->n_flags];
}

/* Index of the flag called name (the first len bytes) in the command's table, or -1. */
static int spec_index(const cli_command *c, const char *name, size_t len) {
    for (size_t i = 0; i < c->n_flags + cli_common_flags_len; i++) {
        const char *n = spec_at(c, i)->name;
        if (strlen(n) == len && strncmp(n, name, len) == 0) return (int)i;
    }
    return -1;
}

/* True for text that reads as a flag rather than a value: "--x", or "-x" with a letter
 * (a lone "-" names stdin and "-1" is a number). */
static bool looks_like_flag(const char *v) {
    return v[0] == '-' && (v[1] == '-' || isalpha((unsigned char)v[1]));
}

/* An unknown flag: names it and, when one is close, the flag that was probably meant. */
static int unknown_flag(const cli_command *c, const char *arg, size_t len) {
    char word[128];
    snprintf(word, sizeof word, "%.*s", (int)(len < 100 ? len : 100), arg);
    const char *best = or1_closest_name(word, c->flags, c->n_flags, sizeof *c->flags);
    if (!best) best = or1_closest_name(word, cli_common_flags, cli_common_flags_len, sizeof *cli_common_flags);
    if (best) return or1_fail("%s: unknown flag --%s (did you mean --%s?)", c->name, word, best);
    return or1_fail("%s: unknown flag --%s (or1 %s --help lists the flags)", c->name, word, c->name);
}

/* Checks an integer or number value against the flag's range; what names the value's origin
 * ("--n 0", or the table default). */
static int check_value(const cli_command *c, const cli_flag_spec *s, const char *v) {
    char *end;
    errno = 0;
    if (s->kind == CLI_INT) {
        long long d = strtoll(v, &end, 10);
        if (errno || *end || end == v || d < s->ilo || d > s->ihi)
            return or1_fail("%s: --%s %s: expected an integer in [%lld, %lld]", c->name, s->name, v,
                            (long long)s->ilo, (long long)s->ihi);
    } else if (s->kind == CLI_NUMBER) {
        double d = strtod(v, &end);
        if (errno || *end || end == v || !isfinite(d) || d < s->lo || d > s->hi)
            return or1_fail("%s: --%s %s: expected a number in [%g, %g]", c->name, s->name, v, s->lo, s->hi);
    } else if (!*v) {
        return or1_fail("%s: --%s has an empty value", c->name, s->name);
    }
    return 0;
}

/* The value of the flag at argv[*i] ("--name=value" or the next argument, which must not be
 * a flag itself), advancing *i past it; NULL with an error when there is none. */
static const char *take_value(const cli_command *c, const cli_flag_spec *s, int argc, char **argv, int *i,
                              const char *eq) {
    if (eq) return eq + 1;
    if (*i + 1 >= argc) return or1_fail("%s: --%s needs a value", c->name, s->name), NULL;
    const char *v = argv[*i + 1];
    if (looks_like_flag(v))
        return or1_fail("%s: --%s needs a value, but the next argument is the flag %s (write --%s=%s if that is "
                        "the value)", c->name, s->name, v, s->name, v),
               NULL;
    ++*i;
    return v;
}

/* A table default the parser would refuse is a bug in the table; cli_help checks them all,
 * so printing every command's help (as the tests do) checks every default. */
int cli_check_defaults(const cli_command *c) {
    for (size_t i = 0; i < c->n_flags; i++)
        if (c->flags[i].def && check_value(c, &c->flags[i], c->flags[i].def))
            return or1_fail_ctx("the default of --%s in the flag table", c->flags[i].name);
    return 0;
}

/* Reads one "--name[=value] [value]" at argv[*i] into the parsed flags. */
static int parse_one(const cli_command *c, int argc, char **argv, int *i, cli_args *a) {
    const char *arg = argv[*i];
    if (arg[0] != '-' || arg[1] != '-' || !arg[2])
        return or1_fail("%s: unexpected argument '%s' (flags are written --name value)", c->name, arg);
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int k = spec_index(c, name, len);
    if (k < 0) return unknown_flag(c, name, len);
    const cli_flag_spec *s = spec_at(c, (size_t)k);
    const char *v = "";
    if (s->kind == CLI_SWITCH || s->kind == CLI_QUERY) {
        if (eq) return or1_fail("%s: --%s is a switch and takes no value (got '%s')", c->name, s->name, arg);
    } else if (!(v = take_value(c, s, argc, argv, i, eq)) || check_value(c, s, v)) {
        return -1;
    }
    for (int j = 0; j < a->n_given && s->kind != CLI_REPEAT; j++)
        if (a->flag[j] == k && s->kind == CLI_SWITCH) return or1_fail("%s: --%s is given twice", c->name, s->name);
        else if (a->flag[j] == k)
            return or1_fail("%s: --%s is given twice ('%s', then '%s'); give it once", c->name, s->name, a->value[j], v);
    a->flag[a->n_given] = k;
    a->value[a->n_given++] = v;
    return 0;
}

/* True if argv asks for help anywhere: -h and --help win over every other flag. */
static bool wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
    return false;
}

/* The walk: every argument once, then the required flags (unless a query switch is given). */
int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a) {
    size_t cap = (size_t)argc + 1;
    *a = (cli_args){.cmd = c->name, .c = c, .n_given = 0, .flag = or1_calloc(cap, sizeof(int)),
                    .value = or1_calloc(cap, sizeof(char *)), .read = or1_calloc(cap, sizeof(bool))};
    if (wants_help(argc, argv)) return 1;
    bool query = false;
    for (int i = 0; i < argc; i++) {
        if (parse_one(c, argc, argv, &i, a)) return -1;
        query = query || spec_at(c, (size_t)a->flag[a->n_given - 1])->kind == CLI_QUERY;
    }
    for (size_t k = 0; k < c->n_flags && !query; k++) {
        bool given = false;
        for (int j = 0; j < a->n_given; j++) given = given || a->flag[j] == (int)k;
        if (c->flags[k].required && !given) return or1_fail("%s: missing required flag --%s", c->name, c->flags[k].name);
    }
    return 0;
}

/* Frees what cli_parse allocated. */
void cli_args_free(cli_args *a) {
    free(a->flag);
    free(a->value);
    free(a->read);
}

/* The table entry a getter asks for, checked to be of one of the kinds it reads: asking for
 * a flag the table lacks is a bug (the help would not list it), so it aborts. */
static int spec_for(cli_args *a, const char *name, cli_kind k1, cli_kind k2) {
    int k = spec_index(a->c, name, strlen(name));
    if (k < 0 || (spec_at(a->c, (size_t)k)->kind != k1 && spec_at(a->c, (size_t)k)->kind != k2)) {
        fprintf(stderr, "or1: internal error: %s reads --%s, which its flag table lacks or types otherwise\n",
                a->cmd, name);
        abort();
    }
    return k;
}

/* The last value given for table entry k (marking it read), else the table default. */
static const char *value_of(cli_args *a, int k) {
    const char *v = NULL;
    for (int j = 0; j < a->n_given; j++)
        if (a->flag[j] == k) v = a->value[j], a->read[j] = true;
    return v ? v : spec_at(a->c, (size_t)k)->def;
}

/* Whether the flag was given (its value is not read). */
bool cli_given(cli_args *a, const char *name) {
    int k = spec_index(a->c, name, strlen(name));
    for (int j = 0; j < a->n_given; j++)
        if (a->flag[j] == k) return true;
    return false;
}

/* Value of a text or path flag, or its default. */
const char *cli_str(cli_args *a, const char *name) {
    return value_of(a, spec_for(a, name, CLI_STRING, CLI_PATH));
}

/* Presence of a switch. */
bool cli_flag(cli_args *a, const char *name) {
    return value_of(a, spec_for(a, name, CLI_SWITCH, CLI_QUERY)) != NULL;
}

/* Integer flag (its range was checked by the parser, the default's by cli_help). */
void cli_int(cli_args *a, const char *name, int64_t *out) {
    const char *v = value_of(a, spec_for(a, name, CLI_INT, CLI_INT));
    if (v) *out = strtoll(v, NULL, 10);
}

/* Real-valued flag (its range was checked by the parser, the default's by cli_help). */
void cli_double(cli_args *a, const char *name, double *out) {
    const char *v = value_of(a, spec_for(a, name, CLI_NUMBER, CLI_NUMBER));
    if (v) *out = strtod(v, NULL);
}

/* Every value of a repeatable flag, in the order given. */
const char **cli_list(cli_args *a, const char *name, size_t *n) {
    int k = spec_for(a, name, CLI_REPEAT, CLI_REPEAT);
    const char **out = or1_calloc((size_t)a->n_given + 1, sizeof *out);
    *n = 0;
    for (int j = 0; j < a->n_given; j++)
        if (a->flag[j] == k) out[(*n)++] = a->value[j], a->read[j] = true;
    return out;
}

/* A flag the parser accepted but the command never read: its table and its code disagree. */
int cli_check_unused(cli_args *a) {
    for (int j = 0; j < a->n_given; j++)
        if (!a->read[j] && (size_t)a->flag[j] < a->c->n_flags)
            return or1_fail("%s: --%s was accepted but not used (its flag table and code disagree)", a->cmd,
                            spec_at(a->c, (size_t)a->flag[j])->name);
    return 0;
}
