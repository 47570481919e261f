/* duty: how soon a woken scheduler round may follow the last one. Every round costs
 * PostgreSQL's CPU (its reads and writes) and this process's (the decision), on the host that
 * also serves the API; a burst of submissions wakes the thread once per job. A budget of round
 * time refills at LIVE_DUTY_SHARE of the wall clock, up to LIVE_DUTY_BUDGET_S: while it
 * lasts a wake-up runs a round at once (a quiet cluster schedules a submission at once, as
 * before), and once spent the next woken round waits until it is paid back, so that in a
 * sustained burst the rounds take at most that share of the time (each waits three rounds'
 * time), never more than LIVE_DUTY_WAIT_MAX_S. Timed rounds run when due regardless; they
 * spend the budget too. Pure arithmetic on monotonic seconds; the thread's own. */
#ifndef RINGMASTER_LIVE_DUTY_H
#define RINGMASTER_LIVE_DUTY_H

/* The share of the wall clock rounds may take in a burst. A half (the rule before) left
 * the rounds a third of the CPU a submission cost in make bench-api: 3,573-3,881 POSTs/s
 * against 4,165-4,417 with a quarter and 4,284-4,572 with no round in the burst at all
 * (docs/benchmarks.md, "Submissions that wait aside, and rounds that take a quarter"). */
#define LIVE_DUTY_SHARE 0.25
#define LIVE_DUTY_BUDGET_S 0.5   /* round time saved up in a quiet while */
#define LIVE_DUTY_WAIT_MAX_S 1.0 /* the longest a wake-up waits for the next round */

struct live_duty {
    double budget;   /* seconds of round time that may run at once; < 0: owed */
    double last_end; /* the last round's end */
    int started;
};

/* A full budget. */
void live_duty_init(struct live_duty *d);

/* Accounts a round that ran from start to end (monotonic seconds). Returns the earliest time
 * a wake-up may start the next round: end itself while the budget lasts. */
double live_duty_round(struct live_duty *d, double start, double end);

#endif
