/* authlimit: failed authentications per client address, in a table of fixed size. After
 * max_failures bad tokens from one address within window_s, that address is refused (429)
 * for block_s; other addresses are unaffected. A success changes nothing: it neither resets
 * the count nor lifts a block, so a client holding one valid token cannot launder its
 * guesses. IPv6 addresses count by their /64 (one host usually holds a whole /64). The
 * table holds AUTHLIMIT_SLOTS addresses; past that, a new one takes the place of the least
 * recently failed, unblocked one of its set. Thread-safe. */
#ifndef RINGMASTER_API_AUTHLIMIT_H
#define RINGMASTER_API_AUTHLIMIT_H

#define AUTHLIMIT_SLOTS 4096

struct authlimit;

/* Returns a table, or NULL (ENOMEM). */
struct authlimit *authlimit_create(unsigned max_failures, unsigned window_s, unsigned block_s);

void authlimit_destroy(struct authlimit *a);

/* 0 when addr (numeric text) may present a token at time now (seconds, monotonic), else
 * the whole seconds until it may (>= 1). */
unsigned authlimit_check(struct authlimit *a, const char *addr, double now);

/* Counts a bad token from addr at now. Returns the seconds addr is now refused for, or 0. */
unsigned authlimit_fail(struct authlimit *a, const char *addr, double now);

#endif
