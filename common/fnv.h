/* fnv: FNV-1a, 64 bits: a quick hash of bytes for telling contents apart (not for security,
 * not for untrusted keys of a table). */
#ifndef RINGMASTER_FNV_H
#define RINGMASTER_FNV_H

#include <stddef.h>
#include <stdint.h>

/* Where a hash starts (FNV-1a's offset basis). */
#define FNV1A_INIT UINT64_C(14695981039346656037)

/* Hash h (FNV1A_INIT, or a hash so far) with the n bytes at p folded in. */
uint64_t fnv1a(uint64_t h, const void *p, size_t n);

/* The hash of the text s (its bytes before the '\0'). */
uint64_t fnv1a_str(const char *s);

/* A starting point of its own (FNV1A_INIT with random bits from getrandom(), or the address
 * salt when there are none), for the sets of a table whose keys come from outside the
 * process (authlimit's addresses, authcache's tokens): keys picked in advance to share a
 * set do not share one here. */
uint64_t fnv1a_seeded_init(const void *salt);

#endif
