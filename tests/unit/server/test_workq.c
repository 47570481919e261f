/* workq: every item pushed runs once, urgent items are taken first, then normal ones with a
 * turn in WORKQ_BULK_TURN for bulk ones (each class in its order of arrival), items queued
 * at the drain still run, and pushes after it are refused, and the thread idle last takes the
 * next item. Real threads; every wait is bounded by the items' own progress. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "http/workq.h"

#define MANY 20000

static atomic_int counts[MANY];

static void count_item(void *arg, void *item)
{
    (void)arg;
    atomic_fetch_add(&counts[(intptr_t)item], 1);
}

Test(workq, every_item_runs_once_on_several_threads)
{
    struct workq *q = workq_create(4, 0, count_item, NULL);
    cr_assert_not_null(q);
    for (intptr_t i = 0; i < MANY; i++)
        cr_assert_eq(workq_push(q, (void *)i, (enum workq_class)(i % 3)), 0);
    workq_destroy(q); /* runs what is still queued first */
    for (int i = 0; i < MANY; i++)
        cr_assert_eq(atomic_load(&counts[i]), 1, "item %d ran %d times", i,
                     atomic_load(&counts[i]));
}

/* The first item holds the only thread until released; the order the others ran in. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_entered, gate_open;
static int order[16];
static int norder;

static void record_item(void *arg, void *item)
{
    (void)arg;
    int v = (int)(intptr_t)item;
    pthread_mutex_lock(&gate_lock);
    if (v == 0) {
        gate_entered = 1;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open)
            pthread_cond_wait(&gate_cond, &gate_lock);
    }
    order[norder++] = v;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Waits (at most 10 s) until v ran; returns the items that had run by then. */
static int wait_ran(int v)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&gate_lock);
    for (;;) {
        int seen = 0;
        for (int i = 0; i < norder; i++)
            seen = seen || order[i] == v;
        if (seen || pthread_cond_timedwait(&gate_cond, &gate_lock, &until) != 0)
            break;
    }
    int n = norder;
    pthread_mutex_unlock(&gate_lock);
    return n;
}

/* Pushes item 0 and waits until a thread holds it (at the gate). */
static void hold_a_thread(struct workq *q)
{
    cr_assert_eq(workq_push(q, (void *)0, WORKQ_NORMAL), 0);
    pthread_mutex_lock(&gate_lock);
    while (!gate_entered)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

/* Opens the gate: item 0's thread goes on. */
static void release_the_thread(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

Test(workq, urgent_first_then_normal_with_a_turn_for_bulk_in_four)
{
    struct workq *q = workq_create(1, 0, record_item, NULL);
    cr_assert_not_null(q);
    hold_a_thread(q);
    /* the thread holds item 0: these wait (bulk 20s, normal 1-6, urgent 100s) */
    cr_assert_eq(workq_push(q, (void *)20, WORKQ_BULK), 0);
    for (intptr_t v = 1; v <= 4; v++)
        cr_assert_eq(workq_push(q, (void *)v, WORKQ_NORMAL), 0);
    cr_assert_eq(workq_push(q, (void *)100, WORKQ_URGENT), 0);
    cr_assert_eq(workq_push(q, (void *)21, WORKQ_BULK), 0);
    cr_assert_eq(workq_push(q, (void *)5, WORKQ_NORMAL), 0);
    cr_assert_eq(workq_push(q, (void *)101, WORKQ_URGENT), 0);
    cr_assert_eq(workq_push(q, (void *)6, WORKQ_NORMAL), 0);
    cr_assert_eq(workq_waiting(q), 10);
    release_the_thread();
    workq_destroy(q);
    /* three normal ones, then a bulk one while normal ones still wait; bulk ones alone last */
    const int want[] = {0, 100, 101, 1, 2, 3, 20, 4, 5, 6, 21};
    cr_assert_eq(norder, 11);
    for (int i = 0; i < 11; i++)
        cr_assert_eq(order[i], want[i], "position %d: %d, expected %d", i, order[i], want[i]);
}

Test(workq, a_drained_queue_refuses_new_items)
{
    struct workq *q = workq_create(2, 1, count_item, NULL);
    cr_assert_not_null(q);
    cr_assert_eq(workq_push(q, (void *)1, WORKQ_BULK), 0);
    workq_drain(q);
    cr_assert_eq(atomic_load(&counts[1]), 1, "queued before the drain: ran");
    cr_assert_eq(workq_push(q, (void *)2, WORKQ_NORMAL), -1);
    cr_assert_eq(workq_push(q, (void *)2, WORKQ_URGENT), -1);
    workq_drain(q); /* again: nothing more */
    workq_destroy(q);
    cr_assert_eq(atomic_load(&counts[2]), 0);
}

Test(workq, no_threads_is_refused)
{
    cr_assert_null(workq_create(0, 1, count_item, NULL));
}

/* The only general thread is held: an urgent item still runs, on the reserved thread, and the
 * reserved thread leaves the normal item waiting for the general one. */
Test(workq, a_reserved_thread_runs_urgent_items_while_the_others_are_busy)
{
    struct workq *q = workq_create(1, 1, record_item, NULL);
    cr_assert_not_null(q);
    hold_a_thread(q);
    cr_assert_eq(workq_push(q, (void *)1, WORKQ_NORMAL), 0);
    cr_assert_eq(workq_push(q, (void *)100, WORKQ_URGENT), 0);
    cr_assert_eq(wait_ran(100), 1, "the urgent item ran while the general thread was held");
    cr_assert_eq(workq_push(q, (void *)101, WORKQ_URGENT), 0);
    cr_assert_eq(wait_ran(101), 2);
    cr_assert_eq(order[0], 100);
    cr_assert_eq(order[1], 101, "the reserved thread took no normal item (1 still waits)");
    cr_assert_eq(workq_waiting(q), 1);
    release_the_thread();
    workq_destroy(q);
    cr_assert_eq(norder, 4);
    cr_assert_eq(order[2], 0);
    cr_assert_eq(order[3], 1);
}

/* One item at a time, each pushed once the last has run: the thread idle last takes the next,
 * so that the same one runs them all while the others sleep. */
static pthread_t ran_on[50];
static atomic_int ran_count;

static void where_item(void *arg, void *item)
{
    (void)arg;
    ran_on[(intptr_t)item] = pthread_self();
    atomic_fetch_add(&ran_count, 1);
}

Test(workq, the_thread_idle_last_takes_the_next_item)
{
    struct workq *q = workq_create(4, 0, where_item, NULL);
    cr_assert_not_null(q);
    for (int k = 0; k < 10000 && workq_idle(q) < 4; k++) { /* every thread started and idle */
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(workq_idle(q), 4);
    for (intptr_t i = 0; i < 50; i++) {
        cr_assert_eq(workq_push(q, (void *)i, WORKQ_NORMAL), 0);
        for (int k = 0; k < 10000 && atomic_load(&ran_count) <= i; k++) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        }
        cr_assert_eq(atomic_load(&ran_count), i + 1, "item %ld ran", (long)i);
    }
    workq_destroy(q);
    for (int i = 1; i < 50; i++)
        cr_assert(pthread_equal(ran_on[i], ran_on[0]), "item %d ran on another thread", i);
}
