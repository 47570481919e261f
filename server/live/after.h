/* after: the round's part for the jobs that wait for others (their "after", sql/036): which
 * jobs the core's rule (scheduler/deps.h) keeps out of the round, and what the round writes
 * for them: the reason they wait, or their cancellation when a dependency can no longer be
 * met (held instead, PENDING, under the setting hold_unmet_deps). */
#ifndef RINGMASTER_LIVE_AFTER_H
#define RINGMASTER_LIVE_AFTER_H

#include <libpq-fe.h>

struct snap_job;
struct live_plan;

/* 1 when sj is PENDING and its dependencies are not met (the core's deps_check_all): the
 * round does not schedule it. 0 otherwise. */
int live_after_blocked(const struct snap_job *sj);

/* Inside the round's transaction: for each of p's blocked jobs, its reason in job_sched
 * ("waiting for job 12, RUNNING"; its queue position and predicted start cleared), or, when
 * a dependency can no longer be met, its move to CANCELLED with that reason as the event's
 * detail (unless p->cfg->hold_unmet_deps: then "held: ..." as its reason). Returns the jobs
 * cancelled, or -1 (the caller rolls back). */
int live_after_write(const struct live_plan *p, PGconn *c);

#endif
