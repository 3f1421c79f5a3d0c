/* Names of the enumerated settings (truncation mask, entropy mode, rollout correction) as the
 * configs spell them: one lookup and one error message serve every enumeration. */
#include "internal.h"
#include "or1/core.h"

#include <stdio.h>
#include <string.h>

/* The index of s among names[0..n), or -1 with an error listing the names. */
int algo_name_index(const char *const *names, int n, const char *s, const char *what, const char *where) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    char list[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return or1_fail("%s: %s \"%.64s\" is not one of %s", where, what, s, list);
}
