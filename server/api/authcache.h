/* authcache: bearer tokens PostgreSQL verified lately, kept for ttl_s seconds, so that a
 * client's next requests skip the lookup. Every request of a worker (heartbeats, long-polls,
 * minibatch reports) and of a script presents the same token again and again, and each
 * lookup was a round trip to PostgreSQL before the handler's own statement: at 512 nodes,
 * 460 a second, each a wait for a CPU on a loaded head node.
 *
 * Only tokens found in the database are kept; an unknown token is looked up every time (and
 * counted by authlimit). Users are never renamed, given another role or deleted through the
 * API; a user removed from the database by hand is refused at most ttl_s later. The tokens
 * are kept whole, compared in constant time; AUTHCACHE_SLOTS at most, in sets of a fixed
 * size picked by a seeded hash; a full set gives up its entry that expires first.
 * Thread-safe. */
#ifndef RINGMASTER_API_AUTHCACHE_H
#define RINGMASTER_API_AUTHCACHE_H

#include "auth.h"

#define AUTHCACHE_SLOTS 4096

struct authcache;

/* Returns a cache, or NULL (ENOMEM). */
struct authcache *authcache_create(double ttl_s);

/* NULL ok. */
void authcache_destroy(struct authcache *c);

/* 1 and *who filled when token (AUTH_TOKEN_LEN characters) was verified less than ttl_s
 * before now (seconds, monotonic), else 0. */
int authcache_get(struct authcache *c, const char *token, double now, struct auth_user *who);

/* Keeps token, just verified as who's, until now + ttl_s. */
void authcache_put(struct authcache *c, const char *token, const struct auth_user *who,
                   double now);

#endif
