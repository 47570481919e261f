/* monotime: the monotonic clock (CLOCK_MONOTONIC), for durations and deadlines; never the
 * time of day. */
#ifndef RINGMASTER_MONOTIME_H
#define RINGMASTER_MONOTIME_H

/* Seconds since an arbitrary start. */
double monotime_s(void);

/* Microseconds since the same start. */
long long monotime_us(void);

#endif
