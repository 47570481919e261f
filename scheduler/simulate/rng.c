/* rng: the simulator's deterministic random numbers (splitmix64), which the engine, the
 * estimates and the workloads of sim/ draw from. */
#include <math.h>

#include "simulate.h"

uint64_t simulate_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double simulate_rng_uniform(uint64_t *state)
{
    return (double)(simulate_rng_next(state) >> 11) * 0x1.0p-53;
}

double simulate_rng_exponential(uint64_t *state, double mean)
{
    return -mean * log(1.0 - simulate_rng_uniform(state));
}
