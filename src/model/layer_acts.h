/* The saved activations of one decoder layer and their layout in one block of floats, shared
 * by the CPU model (forward.c) and the CUDA device model, which lays device memory out alike. */
#ifndef OR1_MODEL_LAYER_ACTS_H
#define OR1_MODEL_LAYER_ACTS_H

#include <stddef.h>

#include "or1/model.h"

typedef struct {
    float *x, *r1, *xn1, *qkv, *att, *lse, *x2, *r2, *xn2, *gu;
} or1_layer_acts;

/* Floats one layer's saved activations need for T tokens. */
size_t or1_layer_acts_floats(const or1_model_config *c, size_t T);
/* Points l's views into p (host or device memory) and returns the first float after them. */
float *or1_layer_acts_carve(or1_layer_acts *l, float *p, const or1_model_config *c, size_t T);

#endif
