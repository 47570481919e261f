/* fnv: the FNV-1a 64-bit hash of bytes and of text, and a seeded starting point (getrandom)
 * for tables keyed by outside input. */
#include "fnv.h"

#include <stdint.h>
#include <string.h>
#include <sys/random.h>

uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t k = 0; k < n; k++)
        h = (h ^ b[k]) * UINT64_C(1099511628211);
    return h;
}

uint64_t fnv1a_str(const char *s)
{
    return fnv1a(FNV1A_INIT, s, strlen(s));
}

uint64_t fnv1a_seeded_init(const void *salt)
{
    uint64_t seed;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
        seed = (uint64_t)(uintptr_t)salt ^ UINT64_C(0x9e3779b97f4a7c15);
    return FNV1A_INIT ^ seed;
}
