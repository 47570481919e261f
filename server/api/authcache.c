/* authcache: the thread-safe table of tokens PostgreSQL verified lately (fixed-size sets
 * chosen by a seeded hash, constant-time compares), so repeated requests skip the lookup. */
#include "authcache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

#define WAYS 4
#define SETS (AUTHCACHE_SLOTS / WAYS)

struct slot {
    char token[AUTH_TOKEN_LEN];
    double expires; /* 0: empty */
    struct auth_user who;
};

struct authcache {
    double ttl_s;
    uint64_t basis; /* fnv1a_seeded_init(): no one can choose tokens that share a set */
    pthread_mutex_t lock;
    struct slot slots[SETS][WAYS]; /* under lock */
};

struct authcache *authcache_create(double ttl_s)
{
    struct authcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ttl_s = ttl_s;
    c->basis = fnv1a_seeded_init(c);
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void authcache_destroy(struct authcache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static struct slot *set_of(struct authcache *c, const char *token)
{
    uint64_t h = fnv1a(c->basis, token, AUTH_TOKEN_LEN);
    return c->slots[(h ^ (h >> 29)) % SETS];
}

/* 1 when a and b (AUTH_TOKEN_LEN bytes each) are equal, in a time that does not depend on
 * where they differ. */
static int same_token(const char *a, const char *b)
{
    unsigned char d = 0;
    for (int i = 0; i < AUTH_TOKEN_LEN; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Under lock: token's live slot in set, or NULL. */
static struct slot *find(struct slot *set, const char *token, double now)
{
    for (int i = 0; i < WAYS; i++)
        if (set[i].expires > now && same_token(set[i].token, token))
            return &set[i];
    return NULL;
}

int authcache_get(struct authcache *c, const char *token, double now, struct auth_user *who)
{
    if (!c || strlen(token) != AUTH_TOKEN_LEN)
        return 0;
    pthread_mutex_lock(&c->lock);
    struct slot *s = find(set_of(c, token), token, now);
    if (s)
        *who = s->who;
    pthread_mutex_unlock(&c->lock);
    return s != NULL;
}

void authcache_put(struct authcache *c, const char *token, const struct auth_user *who,
                   double now)
{
    if (!c || strlen(token) != AUTH_TOKEN_LEN)
        return;
    pthread_mutex_lock(&c->lock);
    struct slot *set = set_of(c, token), *s = find(set, token, now);
    if (!s) { /* an empty or expired slot, else the one that expires first */
        s = &set[0];
        for (int i = 1; i < WAYS; i++)
            if (set[i].expires < s->expires)
                s = &set[i];
    }
    memcpy(s->token, token, AUTH_TOKEN_LEN);
    s->who = *who;
    s->expires = now + c->ttl_s;
    pthread_mutex_unlock(&c->lock);
}
