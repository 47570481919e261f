/* Time-slicing outside the rounds: what a person's resume, a failed or a late suspension
 * do to a sliced job (live.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "jobtx.h"
#include "live.h"
#include "log.h"
#include "slice.h"
#include "slice_int.h"
#include "store/db.h"

/* ---- outside the rounds ---- */

int live_slice_by_scheduler(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c,
                          "SELECT EXISTS (SELECT 1 FROM job_slices s JOIN jobs j ON j.id = s.job_id"
                          " WHERE s.job_id = $1 AND s.sliced AND NOT EXISTS (SELECT 1 FROM"
                          " allocations a WHERE a.job_id = j.id))",
                          1, p);
    int rc = db_ok(r) ? strcmp(PQgetvalue(r, 0, 0), "t") == 0 : -1;
    PQclear(r);
    return rc;
}

/* The job's home GPUs back to it unless one of them holds two jobs already: rows inserted
 * (the number of home GPUs), 0 when refused, -1 on error. */
static int restore_home(PGconn *c, const char *job)
{
    const char *p[] = {job};
    PGresult *r =
        db_exec(c,
                "INSERT INTO allocations (job_id, node_id, gpu_idx)"
                " SELECT s.job_id, s.home_node, g FROM job_slices s, unnest(s.home_gpus) g"
                " WHERE s.job_id = $1 AND NOT EXISTS (SELECT 1 FROM job_slices t,"
                " unnest(t.home_gpus) h WHERE t.job_id = $1 AND (SELECT count(*) FROM"
                " allocations x WHERE x.node_id = t.home_node AND x.gpu_idx = h) >= 2)",
                1, p);
    int n = db_ok(r) ? atoi(PQcmdTuples(r)) : -1;
    PQclear(r);
    return n;
}

static int kept_gpus(PGconn *c, const char *job, const char *why)
{
    const char *p[] = {job, why};
    return db_command_params(c,
                             "WITH s AS (SELECT home_node, home_gpus FROM job_slices"
                             " WHERE job_id = $1), u AS (UPDATE job_slices SET sliced = false,"
                             " changed_at = now(), home_node = NULL, home_gpus = NULL"
                             " WHERE job_id = $1)"
                             " INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
                             " detail) SELECT $1, 'RUNNING', 'RUNNING', 'suspend_failed',"
                             " 'scheduler', format('its time-slicing suspension failed (%s):"
                             " it keeps GPUs %s on node %s', $2::text,"
                             " array_to_string(s.home_gpus, ','), s.home_node) FROM s",
                             2, p);
}

int live_slice_suspend_failed(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c,
                          "SELECT a.job_id, a.outcome_detail FROM actions a"
                          " JOIN jobs j ON j.id = a.job_id JOIN job_slices s ON s.job_id = j.id"
                          " WHERE a.id = $1 AND a.kind = 'suspend' AND a.state = 'failed'"
                          " AND a.round_id IS NOT NULL AND s.sliced AND j.state = 'RUNNING'"
                          " FOR UPDATE OF j",
                          1, p);
    if (!db_ok(r) || PQntuples(r) != 1) {
        int rc = db_ok(r) ? 0 : -1;
        PQclear(r);
        return rc;
    }
    char job[24], why[512], detail[700];
    snprintf(job, sizeof(job), "%s", PQgetvalue(r, 0, 0));
    snprintf(why, sizeof(why), "%.500s", PQgetvalue(r, 0, 1));
    PQclear(r);
    int n = restore_home(c, job);
    if (n > 0) {
        log_info("job %s: its suspension failed (%s): it keeps its GPUs", job, why);
        return kept_gpus(c, job, why);
    }
    if (n < 0)
        return -1;
    snprintf(detail, sizeof(detail),
             "its time-slicing suspension failed (%s) and its GPUs hold two jobs: back to the"
             " queue",
             why);
    return live_requeue_job(c, strtoll(job, NULL, 10), JOB_RUNNING, detail);
}

/* The job whose late SUSPENDED live_slice_suspended_late() handles: SUSPENDED, holding GPUs,
 * not sliced, and its latest action (but remote daemons) a round's suspend that failed. */
static const char *const late_sql =
    "SELECT j.id FROM jobs j JOIN LATERAL (SELECT a.kind, a.state, a.round_id FROM actions a"
    " WHERE a.job_id = j.id AND a.kind <> 'exec' ORDER BY a.id DESC LIMIT 1) a ON true"
    " WHERE j.id = $1 AND j.state = 'SUSPENDED' AND a.kind = 'suspend' AND a.state = 'failed'"
    " AND a.round_id IS NOT NULL AND EXISTS (SELECT 1 FROM allocations x WHERE x.job_id = j.id)"
    " AND NOT EXISTS (SELECT 1 FROM job_slices s WHERE s.job_id = j.id AND s.sliced)"
    " FOR UPDATE OF j";

/* Releases the job's GPUs into its job_slices row (sliced, home, run time) with its event. */
static const char *const late_release_sql =
    "WITH al AS (DELETE FROM allocations WHERE job_id = $1 RETURNING node_id, gpu_idx, since),"
    " h AS (SELECT min(node_id) AS node, array_agg(gpu_idx ORDER BY gpu_idx) AS gpus,"
    " extract(epoch FROM now() - min(since)) AS run FROM al),"
    " s AS (INSERT INTO job_slices AS s (job_id, sliced, changed_at, run_s, home_node,"
    " home_gpus) SELECT $1, true, now(), h.run, h.node, h.gpus FROM h"
    " ON CONFLICT (job_id) DO UPDATE SET sliced = true, changed_at = now(),"
    " run_s = s.run_s + EXCLUDED.run_s, home_node = EXCLUDED.home_node,"
    " home_gpus = EXCLUDED.home_gpus, packed_with = NULL, pack_at = NULL)"
    " INSERT INTO job_events (job_id, from_state, to_state, event, actor, detail)"
    " SELECT $1, 'SUSPENDED', 'SUSPENDED', 'suspend_late', 'scheduler', format('its"
    " time-slicing suspension took after it had failed: GPUs %s on node %s released, it waits"
    " for its turn', array_to_string(h.gpus, ','), h.node) FROM h";

int live_slice_suspended_late(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c, late_sql, 1, p);
    int rc = !db_ok(r) ? -1 : PQntuples(r) == 1;
    PQclear(r);
    if (rc == 1 && db_command_params(c, late_release_sql, 1, p) < 0)
        rc = -1;
    if (rc == 1)
        log_info("job %s: its failed time-slicing suspension took late: GPUs released", id);
    return rc;
}
