/* sched_wake: the scheduler thread's wake-up channel (an eventfd, plus an optional socket). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "live/wake.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
    cr_assert_eq(live_wake_open(), 0);
}

TestSuite(sched_wake, .init = setup, .fini = live_wake_close, .timeout = 10);

Test(sched_wake, a_signal_wakes_once_and_several_coalesce)
{
    live_wake_signal();
    live_wake_signal();
    cr_assert_eq(live_wake_wait(5, -1), 1);
    double t0 = now_s();
    cr_assert_eq(live_wake_wait(0.05, -1), 0, "the second signal was merged into the first");
    cr_assert(now_s() - t0 >= 0.04, "waited out the timeout");
}

/* What another thread calls 50 ms after it starts (call_later). */
struct later {
    void (*fn)(void);
};
static const struct later signal_later = {live_wake_signal}, stop_later = {live_wake_stop};

static void *call_later(void *arg)
{
    usleep(50000);
    ((const struct later *)arg)->fn();
    return NULL;
}

Test(sched_wake, signals_before_the_round_begins_are_its_own_until_it_rearms)
{
    live_wake_signal();
    cr_assert_eq(live_wake_wait(5, -1), 1);
    live_wake_signal(); /* the burst goes on while the round settles */
    live_wake_signal();
    cr_assert_eq(live_wake_wait(0.05, -1), 0, "no wake-up until the round begins");
    live_wake_rearm();
    cr_assert_eq(live_wake_wait(0.05, -1), 0, "rearming is not a signal");
    live_wake_signal();
    cr_assert_eq(live_wake_wait(5, -1), 1, "a signal after the round began wakes again");
}

Test(sched_wake, stop_wakes_while_a_signal_is_pending)
{
    live_wake_signal();
    cr_assert_eq(live_wake_wait(5, -1), 1);
    pthread_t t;
    double t0 = now_s();
    pthread_create(&t, NULL, call_later, (void *)&stop_later);
    cr_assert_eq(live_wake_wait(5, -1), -1);
    cr_assert(now_s() - t0 < 2, "not the timeout");
    pthread_join(t, NULL);
}

Test(sched_wake, a_signal_from_another_thread_ends_the_wait)
{
    pthread_t t;
    double t0 = now_s();
    pthread_create(&t, NULL, call_later, (void *)&signal_later);
    cr_assert_eq(live_wake_wait(5, -1), 1);
    cr_assert(now_s() - t0 < 2);
    pthread_join(t, NULL);
}

Test(sched_wake, a_readable_socket_and_stop)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "x", 1), 1);
    cr_assert_eq(live_wake_wait(5, p[0]), 2);
    live_wake_stop();
    cr_assert_eq(live_wake_wait(5, p[0]), -1, "stopped wins");
    cr_assert_eq(live_wake_wait(5, -1), -1);
    close(p[0]);
    close(p[1]);
}

Test(sched_wake, signal_is_harmless_when_closed)
{
    live_wake_close();
    live_wake_signal();
    cr_assert_eq(live_wake_open(), 0);
    cr_assert_eq(live_wake_wait(0.01, -1), 0);
}
