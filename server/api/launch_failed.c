/* launch_failed: a host's word that a job's launch failed there (launch_failed.h). */
#include "launch_failed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "job_state.h"
#include "live/live.h"
#include "store/db.h"

/* One row: the job's state; whether exec action $2 is the job's and newer than its latest
 * start, resize or migrate; whether an action of the job other than an exec is in flight (the
 * launch's other daemons may still be starting: mpirun asks for them all at once); its
 * launches that failed since it last ran (requeue events "launch failed: ..." after its latest
 * RUNNING). */
/* How a requeue event for a failed launch begins: written below, and counted by check_sql. */
#define FAILED_PREFIX "launch failed:"

static const char *const check_sql =
    "SELECT j.state,"
    " EXISTS (SELECT 1 FROM actions x WHERE x.id = $2 AND x.job_id = j.id AND x.kind = 'exec'"
    " AND x.id > COALESCE((SELECT max(l.id) FROM actions l WHERE l.job_id = j.id"
    " AND l.kind IN ('start', 'resize', 'migrate') AND l.state <> 'superseded'), 0)),"
    " EXISTS (SELECT 1 FROM actions a WHERE a.job_id = j.id AND a.state = 'pending'"
    " AND a.kind <> 'exec'),"
    " (SELECT count(*) FROM job_events e WHERE e.job_id = j.id AND e.event = 'requeue'"
    " AND e.detail LIKE '" FAILED_PREFIX "%' AND e.at > COALESCE((SELECT max(r.at)"
    " FROM job_events r WHERE r.job_id = j.id AND r.to_state = 'RUNNING'), '-infinity'))"
    " FROM jobs j WHERE j.id = $1 FOR UPDATE OF j";

/* Moves job id (locked, in `from`) to PENDING or, the max-th failure in a row, to FAILED.
 * Returns the state it went to, or NULL on a database error. */
static const char *requeue_or_fail(PGconn *db, long long id, enum job_state from, long failed,
                                   const char *why)
{
    char detail[4400];
    if (failed + 1 >= LAUNCH_FAILED_MAX) {
        snprintf(detail, sizeof(detail), "launch failed %ld times in a row, the last: %s",
                 failed + 1, why);
        return live_fail_job(db, id, from, detail) == 0 ? "FAILED" : NULL;
    }
    snprintf(detail, sizeof(detail), FAILED_PREFIX " %s: back to the queue from its checkpoint",
             why);
    return live_requeue_job(db, id, from, detail) == 0 ? "PENDING" : NULL;
}

void launch_failed_post(struct api_call *call, long long id, const json_t *body,
                        const char *detail)
{
    const json_t *x = json_object_get(body, "exec_action");
    if (!json_is_integer(x) || json_integer_value(x) < 1) {
        http_problem(call->req, 400,
                     "state PENDING (a launch that failed on a host) needs \"exec_action\":"
                     " the id of the exec action that started the host's daemon");
        return;
    }
    char ids[24], xs[24], why[4200];
    snprintf(ids, sizeof(ids), "%lld", id);
    snprintf(xs, sizeof(xs), "%lld", (long long)json_integer_value(x));
    snprintf(why, sizeof(why), "%s (reported by %s)", *detail ? detail : "a host's daemon failed",
             call->who.name);
    const char *p[] = {ids, xs};
    if (db_command(call->db, "BEGIN") < 0) {
        api_db_error(call, NULL);
        return;
    }
    PGresult *r = db_exec(call->db, check_sql, 2, p);
    enum job_state from = JOB_PENDING;
    const char *to = NULL;
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no job %s", ids);
    else if (job_state_parse(PQgetvalue(r, 0, 0), &from) < 0 || job_state_is_terminal(from))
        http_problem(call->req, 409, "job %s has ended (%s)", ids, PQgetvalue(r, 0, 0));
    else if (from == JOB_PENDING)
        to = "PENDING";
    else if (strcmp(PQgetvalue(r, 0, 1), "t") != 0)
        http_problem(call->req, 409,
                     "exec action %s is not of job %s's latest launch: its daemon's end is"
                     " not this launch's failure",
                     xs, ids);
    else if (strcmp(PQgetvalue(r, 0, 2), "t") == 0)
        http_problem(call->req, 409, "job %s has an action in flight: not requeued", ids);
    else if (!(to = requeue_or_fail(call->db, id, from, strtol(PQgetvalue(r, 0, 3), NULL, 10),
                                    why)))
        api_db_error(call, NULL);
    PQclear(r);
    if (!to || db_command(call->db, "COMMIT") < 0) {
        if (to)
            api_db_error(call, NULL);
        db_command(call->db, "ROLLBACK");
        return;
    }
    if (from != JOB_PENDING)
        live_wake_signal();
    api_respond_json(call, 200, json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", to));
}
