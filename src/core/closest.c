/* "Did you mean": the closest known name to a misspelt one, shared by the config schema
 * check and the command line. */
#include "or1/core.h"

#include <string.h>

/* Edit distance of two short strings (insertions, deletions, substitutions); names longer
 * than 200 bytes are never close. */
static size_t distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 200 || lb > 200) return (size_t)-1;
    size_t row[201];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            if (up + 1 < best) best = up + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* Walks items as an array of structs whose first member is the name, so that any table of
 * named entries (schema keys, flags, commands) can be searched without copying its names;
 * a name within a third of the word's length (at least 2 edits) counts as close. */
const char *or1_closest_name(const char *word, const void *items, size_t n, size_t stride) {
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)(const void *)((const char *)items + i * stride);
        size_t d = name ? distance(word, name) : (size_t)-1;
        if (d < bd) bd = d, best = name;
    }
    size_t limit = strlen(word) / 3 > 2 ? strlen(word) / 3 : 2;
    return best && bd <= limit ? best : NULL;
}
