/* jobtx: a job's changes in the scheduler's transaction (jobtx.h): a checked state move with
 * its event, its GPUs and pending actions released, its requeue, its time-slicing forgotten. */
#include "jobtx.h"

#include <stdio.h>
#include <string.h>

#include "live.h"
#include "log.h"
#include "store/db.h"

int live_move_job(PGconn *c, long long id, enum job_state from, enum job_event ev,
                   const char *detail)
{
    enum job_state to;
    if (job_state_next(from, ev, &to) < 0)
        return -1;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids, job_state_name(to), job_state_name(from), job_event_name(ev), detail};
    PGresult *r = db_exec(c,
                          "WITH up AS (UPDATE jobs SET state = $2, updated_at = now(),"
                          " finished_at = CASE WHEN $2 IN ('COMPLETED', 'FAILED', 'CANCELLED')"
                          " THEN now() ELSE finished_at END WHERE id = $1 AND state = $3"
                          " RETURNING id)"
                          " INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
                          " detail) SELECT id, $3, $2, $4, 'scheduler', $5 FROM up",
                          5, p);
    int rc = db_ok(r) && strcmp(PQcmdTuples(r), "1") == 0 ? 0 : -1;
    PQclear(r);
    if (rc == 0)
        log_info("job %lld: %s -> %s (%s by scheduler: %s)", id, p[2], p[1], p[3], detail);
    return rc;
}

int live_release_job(PGconn *c, long long id)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    return db_command_params(c, "DELETE FROM allocations WHERE job_id = $1", 1, p) == 0 &&
                   db_command_params(c,
                                     "UPDATE actions SET state = 'superseded', finished_at = now()"
                                     " WHERE job_id = $1 AND state = 'pending'"
                                     " AND kind IN ('start', 'resize', 'migrate')",
                                     1, p) == 0
               ? 0
               : -1;
}

int live_requeue_job(PGconn *c, long long id, enum job_state from, const char *detail)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    if (!job_state_is_terminal(from) && from != JOB_PENDING &&
        live_move_job(c, id, from, JOB_EV_REQUEUE, detail) < 0)
        return -1;
    return live_release_job(c, id) == 0 && live_slice_forget(c, id) == 0 &&
                   db_command_params(c,
                                     "UPDATE actions SET state = 'superseded', finished_at = now()"
                                     " WHERE job_id = $1 AND state = 'pending'"
                                     " AND kind IN ('suspend', 'resume')",
                                     1, p) == 0 &&
                   db_command_params(c, "UPDATE jobs SET ckpt_gen = ckpt_gen + 1 WHERE id = $1", 1,
                                     p) == 0
               ? 0
               : -1;
}

int live_fail_job(PGconn *c, long long id, enum job_state from, const char *detail)
{
    return live_move_job(c, id, from, JOB_EV_FAIL, detail) == 0 && live_release_job(c, id) == 0
               ? 0
               : -1;
}

int live_slice_forget(PGconn *c, long long id)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    return db_command_params(c,
                             "UPDATE job_slices SET sliced = false, changed_at = now(),"
                             " home_node = NULL, home_gpus = NULL, packed_with = NULL,"
                             " pack_at = NULL WHERE job_id = $1",
                             1, p);
}
