/* authlimit: the fixed-size table of failed authentications per client address (IPv6 by
 * its /64) that blocks an address after too many bad tokens in a window. */
#include "authlimit.h"

#include <arpa/inet.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

#define WAYS 4
#define SETS (AUTHLIMIT_SLOTS / WAYS)

struct slot {
    unsigned char key[16];
    int used;
    unsigned failures;   /* in the window that began at since */
    double since;        /* the window's start */
    double blocked_till; /* refused before this */
    double last;         /* the last failure */
};

struct authlimit {
    unsigned max_failures, window_s, block_s;
    uint64_t basis; /* fnv1a_seeded_init(): no one can choose addresses that share a set */
    pthread_mutex_t lock;
    struct slot slots[SETS][WAYS]; /* under lock */
};

struct authlimit *authlimit_create(unsigned max_failures, unsigned window_s, unsigned block_s)
{
    struct authlimit *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->max_failures = max_failures ? max_failures : 1;
    a->window_s = window_s;
    a->block_s = block_s;
    a->basis = fnv1a_seeded_init(a);
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

void authlimit_destroy(struct authlimit *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* The key of addr: an IPv4 address as IPv4-mapped IPv6, an IPv6 address's first 64 bits;
 * anything else hashes into a key of its own. */
static void key_of(const char *addr, unsigned char key[16])
{
    memset(key, 0, 16);
    struct in_addr v4;
    if (inet_pton(AF_INET, addr, &v4) == 1) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &v4, 4);
    } else if (inet_pton(AF_INET6, addr, key) == 1) {
        memset(key + 8, 0, 8);
    } else {
        for (size_t i = 0; addr[i]; i++)
            key[i % 16] = (unsigned char)(key[i % 16] * 31 + (unsigned char)addr[i]);
    }
}

static struct slot *set_of(struct authlimit *a, const unsigned char key[16])
{
    uint64_t h = fnv1a(a->basis, key, 16);
    return a->slots[(h ^ (h >> 29)) % SETS];
}

/* addr's slot, or NULL when it has none. */
static struct slot *find(struct authlimit *a, const unsigned char key[16])
{
    struct slot *set = set_of(a, key);
    for (int i = 0; i < WAYS; i++)
        if (set[i].used && memcmp(set[i].key, key, 16) == 0)
            return &set[i];
    return NULL;
}

/* A slot for a new address: a free one, else the least recently failed of those not
 * blocked, else the one whose block ends first. */
static struct slot *take(struct authlimit *a, const unsigned char key[16], double now)
{
    struct slot *set = set_of(a, key), *best = NULL;
    for (int i = 0; i < WAYS; i++) {
        struct slot *s = &set[i];
        int free_now = !s->used || (s->blocked_till <= now && s->since + a->window_s <= now);
        if (free_now)
            return memset(s, 0, sizeof(*s));
        int s_blocked = s->blocked_till > now, b_blocked = best && best->blocked_till > now;
        if (!best || (!s_blocked && b_blocked) ||
            (s_blocked == b_blocked &&
             (s_blocked ? s->blocked_till < best->blocked_till : s->last < best->last)))
            best = s;
    }
    return memset(best, 0, sizeof(*best));
}

static unsigned seconds_left(double till, double now)
{
    return till > now ? (unsigned)ceil(till - now) : 0;
}

unsigned authlimit_check(struct authlimit *a, const char *addr, double now)
{
    unsigned char key[16];
    key_of(addr, key);
    pthread_mutex_lock(&a->lock);
    struct slot *s = find(a, key);
    unsigned left = s ? seconds_left(s->blocked_till, now) : 0;
    pthread_mutex_unlock(&a->lock);
    return left;
}

unsigned authlimit_fail(struct authlimit *a, const char *addr, double now)
{
    unsigned char key[16];
    key_of(addr, key);
    pthread_mutex_lock(&a->lock);
    struct slot *s = find(a, key);
    if (!s) {
        s = take(a, key, now);
        memcpy(s->key, key, 16);
        s->used = 1;
        s->since = now;
    }
    if (s->since + a->window_s <= now) {
        s->since = now;
        s->failures = 0;
    }
    s->last = now;
    if (++s->failures >= a->max_failures) {
        s->blocked_till = now + a->block_s;
        s->failures = 0;
        s->since = now;
    }
    unsigned left = seconds_left(s->blocked_till, now);
    pthread_mutex_unlock(&a->lock);
    return left;
}
