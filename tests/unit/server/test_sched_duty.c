/* duty: a woken round runs at once while the round budget lasts (a quiet cluster), rounds
 * back to back take at most LIVE_DUTY_SHARE of the time in the long run (a burst), and no
 * wait is longer than LIVE_DUTY_WAIT_MAX_S, even after a huge round. */
#include <criterion/criterion.h>

#include "live/duty.h"

Test(live_duty, a_quiet_cluster_runs_a_woken_round_at_once)
{
    struct live_duty d;
    live_duty_init(&d);
    double t = 100;
    for (int i = 0; i < 20; i++) { /* a 10 ms round every 2 s: far under the share */
        double end = t + 0.010;
        cr_assert_float_eq(live_duty_round(&d, t, end), end, 1e-9, "round %d", i);
        t += 2;
    }
}

Test(live_duty, a_burst_gets_the_share_and_no_more)
{
    struct live_duty d;
    live_duty_init(&d);
    /* every round is woken as soon as it may run, and takes 100 ms */
    double t = 50, busy = 0, first_wait_at = -1;
    for (int i = 0; i < 400; i++) {
        double end = t + 0.100;
        double next = live_duty_round(&d, t, end);
        cr_assert(next >= end);
        cr_assert(next - end <= LIVE_DUTY_WAIT_MAX_S + 1e-9);
        if (next > end && first_wait_at < 0)
            first_wait_at = t;
        busy += 0.100;
        t = next;
    }
    /* the saved budget let the first rounds run back to back, then they were spaced */
    cr_assert(first_wait_at > 50, "some rounds ran at once first");
    double share = busy / (t - 50);
    cr_assert(share <= LIVE_DUTY_SHARE + 0.01, "rounds took %.3f of the time", share);
    cr_assert(share >= LIVE_DUTY_SHARE - 0.02, "and were not held back further (%.3f)", share);
    /* at the steady state each waits three rounds' time */
    double end = t + 0.100, wait = live_duty_round(&d, t, end) - end;
    cr_assert_float_eq(wait, 0.300, 0.01);
}

Test(live_duty, a_huge_round_delays_the_next_by_the_longest_wait_only)
{
    struct live_duty d;
    live_duty_init(&d);
    double next = live_duty_round(&d, 10, 20); /* a 10 s round */
    cr_assert_float_eq(next, 20 + LIVE_DUTY_WAIT_MAX_S, 1e-9);
    /* a short round at that time: its debt is small again, not ten seconds' worth */
    double after = live_duty_round(&d, next, next + 0.010);
    cr_assert(after - (next + 0.010) <= LIVE_DUTY_WAIT_MAX_S + 1e-9);
    /* after a quiet minute a woken round runs at once */
    double t = next + 60;
    cr_assert_float_eq(live_duty_round(&d, t, t + 0.05), t + 0.05, 1e-9);
}
