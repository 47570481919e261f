/* roundmem: keeps the memory a scheduling round frees for the next round. A round at 10,000
 * jobs allocates its arrays afresh (megabytes) and frees them at its end; glibc gives large
 * blocks back to the kernel (each above the mmap threshold is an mmap of its own, and the top
 * of the heap is trimmed past 128 KiB), so every round faulted the same pages in again:
 * 20 % of a precompute round in perf (docs/benchmarks-history.md, "The allocator keeps a round's
 * memory"). Called once at the start of ringmasterd and ringmaster-sim, before any thread. */
#ifndef RINGMASTER_ROUNDMEM_H
#define RINGMASTER_ROUNDMEM_H

/* Blocks up to 32 MiB come from the heap, and a heap keeps up to 64 MiB free at its top:
 * the resident size then stays at the largest round's peak instead of falling back after
 * each round. A no-op under AddressSanitizer (its allocator ignores it). */
void roundmem_keep(void);

#endif
