#include "fnv.h"

#include <string.h>

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
