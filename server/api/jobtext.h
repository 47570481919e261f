/* jobtext: the API's job object written as JSON text straight from its rows: the job's row
 * (JOB_COLS), and for the scheduler's view its row of job_sched (JOBVIEW_SCHED_COLS) and its
 * allocation rows (jobview's allocs query). This is the one place that says which fields a job
 * has and what they hold; jobview turns it into jansson objects where an answer needs them.
 * The text is what jansson's compact dump of the same object wrote before (byte for byte at
 * the same precision). */
#ifndef RINGMASTER_API_JOBTEXT_H
#define RINGMASTER_API_JOBTEXT_H

#include <libpq-fe.h>

#include "http/jsontext.h"

/* The scheduler's view of one job: q's row qrow (-1: none; q may be NULL) and a's rows from
 * arow on while they name the job (-1: none). */
struct jobtext_sched {
    const PGresult *q;
    int qrow;
    const PGresult *a;
    int arow;
};

/* Appends the job of row of r (JOB_COLS) as its JSON object to t, reals at precision (as
 * jsontext_real); with s, the scheduler's fields after its own: "predicted_finish",
 * "pending_reason", "queue_position", "predicted_start", "remaining_source", "remaining",
 * "allocation" and "world_size" (jobview.h says what they hold). */
void jobtext_job(struct jsontext *t, const PGresult *r, int row, const struct jobtext_sched *s,
                 int precision);

#endif
