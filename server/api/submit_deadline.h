/* submit_deadline: the answer to a submission with a deadline (issue 33 item 3): whether the
 * forecast meets it. The forecast is the one GET and the lists show (docs/forecast.md): the
 * core's outlook_run() over this server's last forecast pass with the new job added, bounded
 * (live_forecast_submission(), live.h); the new job's length at submission is the prior of
 * this cluster's finished jobs, as a round would estimate it: the job has reported nothing
 * yet. The forecast is stored as the job's (job_forecasts) until the next pass replaces it,
 * so that GET says the same. Only where this server has no pass to run it on (it does not
 * lead, no round ran yet, or the cluster is too large for the bound) the answer falls back to
 * the core's queue-order forecast (scheduler/forecast.h) over what the last round wrote (the
 * running jobs' predicted finish, the waiting jobs' predicted start and finish), the new job
 * joining the queue behind the waiting jobs of its priority and above, plus the prior. The
 * verdict and its words are the core's (scheduler/deadline.h). */
#ifndef RINGMASTER_API_SUBMIT_DEADLINE_H
#define RINGMASTER_API_SUBMIT_DEADLINE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "spec/jobspec.h"

/* A submission's forecast: its finish (epoch seconds on the database's clock; -1 when it
 * cannot be forecast: no finished job to learn a length from, a queue whose lengths are not
 * known, a database error); with outlook set, the outlook's whole forecast (start and finish
 * P50 and P90, -1 unknown, as of as_of), which submit_deadline_store() keeps. */
struct submit_forecast {
    double finish;
    int outlook; /* 1: by outlook_run(); 0: the queue-order fallback */
    double start_p50, start_p90, finish_p90, as_of;
};

/* The forecast of a job of spec submitted by user user_id, about to be stored, read on c. */
struct submit_forecast submit_deadline_forecast(PGconn *c, const struct jobspec *spec,
                                                long long user_id);

/* Stores f as the forecast of the job just stored as id (when f is the outlook's and the
 * forecast thread has not written one since), on c. Returns 0, or -1 on a database error. */
int submit_deadline_store(PGconn *c, long long id, const struct submit_forecast *f);

/* The answer's member for a job with deadline (epoch seconds) whose forecast finish is
 * finish (< 0: unknown): a new object {"finish": RFC 3339 or null, "verdict": "meets",
 * "misses" or "unknown", "text": "forecast finish ~Thu 14:10, before the deadline"}, the
 * finish written in the server's local time in the text. NULL when out of memory. */
json_t *submit_deadline_json(double deadline, double finish);

#endif
