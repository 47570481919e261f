/* duty: the round budget's arithmetic (duty.h): refilled at LIVE_DUTY_SHARE of the time
 * since the last round, spent by each round, and the earliest start of the next woken one. */
#include "duty.h"

void live_duty_init(struct live_duty *d)
{
    *d = (struct live_duty){.budget = LIVE_DUTY_BUDGET_S};
}

double live_duty_round(struct live_duty *d, double start, double end)
{
    if (end < start)
        end = start;
    if (!d->started) {
        d->started = 1;
        d->last_end = start;
    }
    /* refilled over the whole while since the last round's end, this round's time included */
    double since = end > d->last_end ? end - d->last_end : 0;
    d->budget += LIVE_DUTY_SHARE * since - (end - start);
    if (d->budget > LIVE_DUTY_BUDGET_S)
        d->budget = LIVE_DUTY_BUDGET_S;
    /* a debt past the longest wait is forgiven: one huge round does not slow the next many */
    if (d->budget < -LIVE_DUTY_SHARE * LIVE_DUTY_WAIT_MAX_S)
        d->budget = -LIVE_DUTY_SHARE * LIVE_DUTY_WAIT_MAX_S;
    d->last_end = end;
    return d->budget < 0 ? end - d->budget / LIVE_DUTY_SHARE : end;
}
