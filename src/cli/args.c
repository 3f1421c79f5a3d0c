/* Flag parsing shared by all subcommands. */
#include "cli.h"

#include "or1/core.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Index of --name in argv, or -1. */
static int find(cli_args *a, const char *name) {
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i];
        if (s[0] == '-' && s[1] == '-' && strcmp(s + 2, name) == 0) return i;
    }
    return -1;
}

/* Value following --name (NULL if absent or missing its value). */
const char *cli_str(cli_args *a, const char *name) {
    int i = find(a, name);
    if (i < 0) return NULL;
    a->used[i] = true;
    if (i + 1 >= a->argc) return NULL;
    a->used[i + 1] = true;
    return a->argv[i + 1];
}

/* Presence of a bare switch. */
bool cli_flag(cli_args *a, const char *name) {
    int i = find(a, name);
    if (i < 0) return false;
    a->used[i] = true;
    return true;
}

/* Required value; records an error naming the flag. */
const char *cli_need(cli_args *a, const char *name) {
    const char *v = cli_str(a, name);
    if (!v) or1_fail("%s: missing required flag --%s", a->cmd, name);
    return v;
}

/* Real-valued flag within [lo, hi]. */
int cli_double(cli_args *a, const char *name, double lo, double hi, double *out) {
    int i = find(a, name);
    if (i < 0) return 0;
    const char *v = cli_str(a, name);
    if (!v) return or1_fail("%s: --%s needs a value", a->cmd, name);
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || end == v || !isfinite(d) || d < lo || d > hi)
        return or1_fail("%s: --%s %s: expected a number in [%g, %g]", a->cmd, name, v, lo, hi);
    *out = d;
    return 0;
}

/* Integer flag within [lo, hi]. */
int cli_int(cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    int i = find(a, name);
    if (i < 0) return 0;
    const char *v = cli_str(a, name);
    if (!v) return or1_fail("%s: --%s needs a value", a->cmd, name);
    char *end;
    errno = 0;
    long long d = strtoll(v, &end, 10);
    if (errno || *end || end == v || d < lo || d > hi)
        return or1_fail("%s: --%s %s: expected an integer in [%lld, %lld]", a->cmd, name, v,
                        (long long)lo, (long long)hi);
    *out = d;
    return 0;
}

/* Rejects flags no one asked for. */
int cli_check_unused(cli_args *a) {
    for (int i = 0; i < a->argc; i++)
        if (!a->used[i]) return or1_fail("%s: unknown argument '%s'", a->cmd, a->argv[i]);
    return 0;
}
