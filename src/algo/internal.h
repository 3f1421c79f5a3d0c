/* Private helpers shared by the files of src/algo. */
#ifndef OR1_ALGO_INTERNAL_H
#define OR1_ALGO_INTERNAL_H

#include "or1/algo.h"

#include <stddef.h>
#include <stdint.h>

/* The groups of a batch: group k holds samples idx[start[k] .. start[k+1]) in increasing
 * sample order; groups are listed in order of their first sample. */
typedef struct {
    size_t n_groups;
    size_t *idx;   /* n sample indices */
    size_t *start; /* n_groups + 1 offsets into idx */
} or1_groups;

/* Groups samples 0..n-1 by their ids (any int32, in any order). Free with or1_groups_free. */
void or1_groups_build(const int32_t *group, size_t n, or1_groups *g);
void or1_groups_free(or1_groups *g);

/* Sums buf[0..n) over the ranks of r in place (order.c; nothing to do for r NULL, one
 * process). */
void algo_sum(const or1_reducer *r, double *buf, size_t n);

/* The mean of a[j] - b[j] over the j < n that mask keeps (NULL: all), 0 for none; *kept counts
 * them (correction.c). */
double algo_masked_mean_diff(const float *a, const float *b, int n, const uint8_t *mask, int *kept);

/* The index of s among names[0..n), or -1 with the error "WHERE: WHAT "S" is not one of
 * a, b, c" (names.c). */
int algo_name_index(const char *const *names, int n, const char *s, const char *what, const char *where);

/* Defines or1_NAME_parse and or1_NAME_name over the names of the registry TABLE (see
 * or1/algo.h) for its enum TYPE; WHAT names the setting in errors. */
#define ALGO_REGISTRY_NAMES(TABLE, TYPE, NAME, WHAT)                                                   \
    static const char *const NAME##_names[] = {TABLE(OR1_ROW_NAME)};                                   \
    int or1_##NAME##_parse(const char *s, TYPE *out, const char *where) {                              \
        int i = algo_name_index(NAME##_names, (int)(sizeof NAME##_names / sizeof *NAME##_names), s, WHAT, \
                                where);                                                                \
        if (i >= 0) *out = (TYPE)i;                                                                    \
        return i < 0 ? -1 : 0;                                                                         \
    }                                                                                                  \
    const char *or1_##NAME##_name(TYPE v) { return NAME##_names[v]; }

#endif
