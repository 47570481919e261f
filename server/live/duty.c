#include "duty.h"

void sched_duty_init(struct sched_duty *d)
{
    *d = (struct sched_duty){.budget = SCHED_DUTY_BUDGET_S};
}

double sched_duty_round(struct sched_duty *d, double start, double end)
{
    if (end < start)
        end = start;
    if (!d->started) {
        d->started = 1;
        d->last_end = start;
    }
    /* refilled over the whole while since the last round's end, this round's time included */
    double since = end > d->last_end ? end - d->last_end : 0;
    d->budget += SCHED_DUTY_SHARE * since - (end - start);
    if (d->budget > SCHED_DUTY_BUDGET_S)
        d->budget = SCHED_DUTY_BUDGET_S;
    /* a debt past the longest wait is forgiven: one huge round does not slow the next many */
    if (d->budget < -SCHED_DUTY_SHARE * SCHED_DUTY_WAIT_MAX_S)
        d->budget = -SCHED_DUTY_SHARE * SCHED_DUTY_WAIT_MAX_S;
    d->last_end = end;
    return d->budget < 0 ? end - d->budget / SCHED_DUTY_SHARE : end;
}
