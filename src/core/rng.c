/* Counter-based random numbers from the splitmix64 finaliser. */
#include "or1/core.h"

#include <math.h>

/* splitmix64's output mix: a bijection with full avalanche. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Hashes (seed, stream, counter) through three chained mixes. */
uint64_t or1_rand_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
    uint64_t k = mix64(seed + 0x9e3779b97f4a7c15ULL);
    k = mix64(k ^ (stream + 0x632be59bd9b4e019ULL));
    return mix64(k ^ (counter * 0x9e3779b97f4a7c15ULL + 0x1d8e4e27c47d124fULL));
}

/* Top 53 bits as a double in [0, 1). */
double or1_rand_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
    return (double)(or1_rand_u64(seed, stream, counter) >> 11) * 0x1.0p-53;
}

/* Box-Muller on a pair of uniforms; u1 is kept away from 0. */
double or1_rand_normal(uint64_t seed, uint64_t stream, uint64_t counter) {
    double u1 = or1_rand_uniform(seed, stream, 2 * counter) + 0x1.0p-54;
    double u2 = or1_rand_uniform(seed, stream, 2 * counter + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
