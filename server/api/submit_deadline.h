/* submit_deadline: the answer to a submission with a deadline (issue 33 item 3): whether the
 * forecast meets it. The forecast finish is the queue-order forecast of the core
 * (scheduler/forecast.h) over what the last round wrote (the running jobs' predicted finish,
 * the waiting jobs' predicted start and finish), the new job joining the queue behind the
 * waiting jobs of its priority and above, plus its time alone, which at submission is the
 * prior of this cluster's finished jobs (sched_estimate_prior_s): the job has reported nothing
 * yet. The verdict and its words are the core's (scheduler/deadline.h). */
#ifndef RINGMASTER_API_SUBMIT_DEADLINE_H
#define RINGMASTER_API_SUBMIT_DEADLINE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "spec/jobspec.h"

/* The forecast finish of a job of spec about to be stored, in epoch seconds on the
 * database's clock, read on c; -1 when it cannot be forecast (no finished job to learn a
 * length from, a queue whose lengths are not known, or a database error). */
double submit_deadline_forecast(PGconn *c, const struct jobspec *spec);

/* The answer's member for a job with deadline (epoch seconds) whose forecast finish is
 * finish (< 0: unknown): a new object {"finish": RFC 3339 or null, "verdict": "meets",
 * "misses" or "unknown", "text": "forecast finish ~Thu 14:10, before the deadline"}, the
 * finish written in the server's local time in the text. NULL when out of memory. */
json_t *submit_deadline_json(double deadline, double finish);

#endif
