/* guard: the front door's connection budget and deadlines: each connection on the list of
 * its stage (waiting, body, busy), cut when its stage runs past time or the budget is full. */
#include "guard.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "monotime.h"

enum guard_stage { GUARD_WAITING, GUARD_BODY, GUARD_BUSY, GUARD_CLOSING };

struct guard_conn {
    int fd;
    enum guard_stage stage;
    double since; /* CLOCK_MONOTONIC seconds: when the stage began */
    struct guard_conn *prev, *next;
};

/* The connections of one stage with a deadline, oldest first (each joins at the tail when
 * its stage begins, so the head is always the first to be due). */
struct guard_list {
    struct guard_conn *head, *tail;
};

struct guard {
    struct guard_limits lim;
    pthread_mutex_t lock;
    struct guard_list waiting, body; /* under lock */
    struct guard_stats stats;        /* under lock */
};

static struct guard_list *list_of(struct guard *g, enum guard_stage stage)
{
    return stage == GUARD_WAITING ? &g->waiting : stage == GUARD_BODY ? &g->body : NULL;
}

static void unlink_conn(struct guard *g, struct guard_conn *c)
{
    struct guard_list *l = list_of(g, c->stage);
    if (!l)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
}

/* Moves c to stage (a closing connection stays closing), at the tail of its list. */
static void enter(struct guard *g, struct guard_conn *c, enum guard_stage stage)
{
    if (c->stage == GUARD_CLOSING)
        return;
    unlink_conn(g, c);
    c->stage = stage;
    c->since = monotime_s();
    struct guard_list *l = list_of(g, stage);
    if (!l)
        return;
    c->prev = l->tail;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
}

/* Ends c's connection: libmicrohttpd sees the end of the stream and closes it (calling
 * guard_close before it closes the socket, so fd is still c's while c is known). */
static void cut(struct guard *g, struct guard_conn *c)
{
    unlink_conn(g, c);
    c->stage = GUARD_CLOSING;
    shutdown(c->fd, SHUT_RDWR);
}

struct guard *guard_create(const struct guard_limits *lim)
{
    struct guard *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->lim = *lim;
    pthread_mutex_init(&g->lock, NULL);
    return g;
}

void guard_destroy(struct guard *g)
{
    if (!g)
        return;
    pthread_mutex_destroy(&g->lock);
    free(g);
}

struct guard_conn *guard_open(struct guard *g, int fd)
{
    struct guard_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->stage = GUARD_BUSY; /* in no list yet */
    pthread_mutex_lock(&g->lock);
    g->stats.open++;
    if (g->stats.open > g->lim.high_water && g->waiting.head) {
        cut(g, g->waiting.head);
        g->stats.evicted++;
    }
    enter(g, c, GUARD_WAITING);
    pthread_mutex_unlock(&g->lock);
    return c;
}

void guard_close(struct guard *g, struct guard_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    unlink_conn(g, c);
    g->stats.open--;
    pthread_mutex_unlock(&g->lock);
    free(c);
}

static void move(struct guard *g, struct guard_conn *c, enum guard_stage stage)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    enter(g, c, stage);
    pthread_mutex_unlock(&g->lock);
}

void guard_header_done(struct guard *g, struct guard_conn *c)
{
    move(g, c, GUARD_BODY);
}

void guard_busy(struct guard *g, struct guard_conn *c)
{
    move(g, c, GUARD_BUSY);
}

void guard_idle(struct guard *g, struct guard_conn *c)
{
    move(g, c, GUARD_WAITING);
}

/* Cuts the connections at the head of l that began their stage before cutoff. */
static unsigned sweep_list(struct guard *g, struct guard_list *l, double cutoff)
{
    unsigned n = 0;
    while (l->head && l->head->since < cutoff) {
        cut(g, l->head);
        n++;
    }
    return n;
}

unsigned guard_sweep(struct guard *g)
{
    double now = monotime_s();
    pthread_mutex_lock(&g->lock);
    unsigned n = sweep_list(g, &g->waiting, now - g->lim.header_s);
    n += sweep_list(g, &g->body, now - g->lim.body_s);
    g->stats.late += n;
    pthread_mutex_unlock(&g->lock);
    return n;
}

unsigned guard_open_count(struct guard *g)
{
    pthread_mutex_lock(&g->lock);
    unsigned n = g->stats.open;
    pthread_mutex_unlock(&g->lock);
    return n;
}

void guard_get_stats(struct guard *g, struct guard_stats *out)
{
    pthread_mutex_lock(&g->lock);
    *out = g->stats;
    pthread_mutex_unlock(&g->lock);
}
