/* Private helpers shared by the src/rl/algo_*.c files. */
#ifndef OR1_ALGO_INTERNAL_H
#define OR1_ALGO_INTERNAL_H

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

#endif
