/* roundmem: roundmem_keep(), the mallopt() settings that keep a scheduling round's freed
 * memory for the next round instead of giving it back to the kernel. */
#include "roundmem.h"

#include <malloc.h>

void roundmem_keep(void)
{
    /* a fixed threshold also ends glibc's own raising of it, which follows frees of mmapped
     * blocks and so starts only after the first rounds */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
}
