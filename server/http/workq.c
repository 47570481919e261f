/* workq: the handlers' thread pool: one queue in three classes (urgent, normal, bulk with a
 * turn in WORKQ_BULK_TURN), and threads reserved for urgent items. */
#include "workq.h"

#include <pthread.h>
#include <stdlib.h>

/* A first-in first-out ring of items that grows by doubling. */
struct ring {
    void **items;
    size_t head, len, cap;
};

/* A general thread waiting for an item. The one idle last is woken first: the threads idle
 * longest sleep while the others keep up, so that the threads at work stay few and warm
 * (woken in turn from one condition, nine threads cost a health request 8 us more than
 * five). */
struct idler {
    pthread_cond_t cv;
    struct idler *next;
    int woken;
};

struct workq {
    pthread_mutex_t lock;
    struct idler *idle;          /* under lock: the general threads waiting, last idle first */
    pthread_cond_t urgent_ready; /* an urgent item waits: for the reserved threads */
    struct ring rings[3];        /* under lock: by enum workq_class */
    unsigned normal_run;         /* under lock: normal items taken while bulk ones waited */
    int stopping;                /* under lock */
    workq_run_f run;
    void *arg;
    pthread_t *threads;
    unsigned nthreads; /* started, the reserved ones last */
};

static int ring_push(struct ring *r, void *item)
{
    if (r->len == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        void **items = malloc(cap * sizeof(*items));
        if (!items)
            return -1;
        for (size_t i = 0; i < r->len; i++)
            items[i] = r->items[(r->head + i) % r->cap];
        free(r->items);
        r->items = items;
        r->head = 0;
        r->cap = cap;
    }
    r->items[(r->head + r->len) % r->cap] = item;
    r->len++;
    return 0;
}

static void *ring_pop(struct ring *r)
{
    void *item = r->items[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    return item;
}

static size_t waiting(const struct workq *q)
{
    return q->rings[WORKQ_URGENT].len + q->rings[WORKQ_NORMAL].len + q->rings[WORKQ_BULK].len;
}

/* Under q->lock, some item waiting: the ring to take from. */
static struct ring *next_ring(struct workq *q)
{
    struct ring *bulk = &q->rings[WORKQ_BULK], *normal = &q->rings[WORKQ_NORMAL];
    if (q->rings[WORKQ_URGENT].len)
        return &q->rings[WORKQ_URGENT];
    if (normal->len && (!bulk->len || ++q->normal_run < WORKQ_BULK_TURN))
        return normal;
    q->normal_run = 0;
    return bulk;
}

/* Under q->lock: whether a thread may take an item now: the urgent ring's (only) holds one, or
 * (a general thread) some item waits. While draining, a thread that may not take one leaves:
 * the others run what is left. */
static int may_take(const struct workq *q, const struct ring *only)
{
    return only ? only->len > 0 : waiting(q) > 0;
}

/* Under q->lock: wakes the general thread idle last, if one is. */
static void wake_idler(struct workq *q)
{
    struct idler *w = q->idle;
    if (!w)
        return;
    q->idle = w->next;
    w->woken = 1;
    pthread_cond_signal(&w->cv);
}

/* Under q->lock, on a general thread (self: its place in the idle stack) or a reserved one
 * (self NULL, only its urgent ring): waits until it may take an item or the queue stops. */
static void await_item(struct workq *q, const struct ring *only, struct idler *self)
{
    while (!may_take(q, only) && !q->stopping) {
        if (!self) {
            pthread_cond_wait(&q->urgent_ready, &q->lock);
            continue;
        }
        self->woken = 0;
        self->next = q->idle;
        q->idle = self;
        while (!self->woken) /* the drain wakes every idler too */
            pthread_cond_wait(&self->cv, &q->lock);
    }
}

/* Takes items: a general thread (self: its place in the idle stack) any, a reserved one
 * (self NULL) urgent ones only; returns when stopping and nothing it could take is left. */
static void take_items(struct workq *q, struct idler *self)
{
    const struct ring *only = self ? NULL : &q->rings[WORKQ_URGENT];
    pthread_mutex_lock(&q->lock);
    for (;;) {
        await_item(q, only, self);
        if (!may_take(q, only))
            break; /* stopping, and nothing left to run */
        void *item = ring_pop(only ? &q->rings[WORKQ_URGENT] : next_ring(q));
        pthread_mutex_unlock(&q->lock);
        q->run(q->arg, item);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
}

static void *thread_main(void *arg)
{
    struct workq *q = arg;
    struct idler self = {.woken = 1};
    pthread_cond_init(&self.cv, NULL);
    take_items(q, &self);
    pthread_cond_destroy(&self.cv);
    return NULL;
}

static void *urgent_main(void *arg)
{
    take_items(arg, NULL);
    return NULL;
}

struct workq *workq_create(unsigned nthreads, unsigned nurgent, workq_run_f run, void *arg)
{
    struct workq *q = nthreads >= 1 ? calloc(1, sizeof(*q)) : NULL;
    if (!q)
        return NULL;
    q->run = run;
    q->arg = arg;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->urgent_ready, NULL);
    q->threads = calloc((size_t)nthreads + nurgent, sizeof(*q->threads));
    if (!q->threads) {
        workq_destroy(q);
        return NULL;
    }
    for (; q->nthreads < nthreads + nurgent; q->nthreads++)
        if (pthread_create(&q->threads[q->nthreads], NULL,
                           q->nthreads < nthreads ? thread_main : urgent_main, q) != 0) {
            workq_destroy(q);
            return NULL;
        }
    return q;
}

int workq_push(struct workq *q, void *item, enum workq_class cls)
{
    if (cls != WORKQ_BULK && cls != WORKQ_URGENT)
        cls = WORKQ_NORMAL;
    pthread_mutex_lock(&q->lock);
    int rc = q->stopping ? -1 : ring_push(&q->rings[cls], item);
    /* with every thread in run() none is idle: the first to leave run() takes it */
    if (rc == 0)
        wake_idler(q);
    if (rc == 0 && cls == WORKQ_URGENT)
        pthread_cond_signal(&q->urgent_ready); /* whichever is free first takes it */
    pthread_mutex_unlock(&q->lock);
    return rc;
}

unsigned workq_idle(struct workq *q)
{
    pthread_mutex_lock(&q->lock);
    unsigned n = 0;
    for (const struct idler *w = q->idle; w; w = w->next)
        n++;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t workq_waiting(struct workq *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = waiting(q);
    pthread_mutex_unlock(&q->lock);
    return n;
}

void workq_drain(struct workq *q)
{
    pthread_mutex_lock(&q->lock);
    q->stopping = 1;
    while (q->idle)
        wake_idler(q);
    pthread_cond_broadcast(&q->urgent_ready);
    pthread_mutex_unlock(&q->lock);
    for (unsigned i = 0; i < q->nthreads; i++)
        pthread_join(q->threads[i], NULL);
    q->nthreads = 0;
}

void workq_destroy(struct workq *q)
{
    if (!q)
        return;
    workq_drain(q);
    pthread_cond_destroy(&q->urgent_ready);
    pthread_mutex_destroy(&q->lock);
    for (int i = 0; i < 3; i++)
        free(q->rings[i].items);
    free(q->threads);
    free(q);
}
