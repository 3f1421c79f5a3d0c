/* Private: the dataset struct shared by the files of src/data. */
#ifndef OR1_DATA_INTERNAL_H
#define OR1_DATA_INTERNAL_H

#include "or1/data.h"

struct or1_dataset {
    or1_data_row *rows;
    size_t n_rows;
    or1_data_stats stats;
    /* sampler */
    bool shuffle;
    uint64_t seed;
    uint32_t *slots;   /* row ids, each repeated its file's weight times, in file order */
    size_t n_slots;
    uint32_t *order;   /* the slots in the order of epoch order_epoch */
    uint64_t order_epoch;
    bool *dropped;     /* per row: removed by the online filter */
    int8_t *solved;    /* per row in this stage: -1 not drawn, 1 always fully solved, 0 not */
    size_t n_dropped;
    size_t active_slots; /* slots whose row is not dropped */
    uint64_t epoch;
    size_t pos;        /* next position in order */
};

/* Builds the slots from the rows and the files' weights; the cursor starts at epoch 0. */
int or1_data_sampler_init(or1_dataset *d, const or1_data_opts *o);

#endif
