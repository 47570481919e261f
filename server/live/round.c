/* round: one live scheduler round (live_round_run(), round.h): silent nodes marked DOWN and
 * their jobs requeued in one transaction, then the snapshot, the plan and its write, timed. */
#include "round.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "job_state.h"
#include "jobtx.h"
#include "live.h"
#include "log.h"
#include "model.h"
#include "monotime.h"
#include "round_plan.h"
#include "sched.h"
#include "snap.h"
#include "store/db.h"

/* The jobs that held GPUs on a DOWN node, and the time-sliced ones whose state waits in the
 * host memory of one (they hold no GPU, and cannot resume there). */
static int requeue_lost_jobs(PGconn *c)
{
    PGresult *r = db_exec(c,
                          "SELECT j.id, j.state, n.name FROM nodes n JOIN LATERAL"
                          " (SELECT a.job_id FROM allocations a WHERE a.node_id = n.id UNION"
                          " SELECT s.job_id FROM job_slices s WHERE s.home_node = n.id"
                          " AND s.sliced) x ON true JOIN jobs j ON j.id = x.job_id"
                          " WHERE n.state = 'DOWN' ORDER BY j.id FOR UPDATE OF j",
                          0, NULL);
    int rc = db_ok(r) ? 0 : -1;
    long long last = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        long long id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        enum job_state from;
        if (id == last || job_state_parse(PQgetvalue(r, i, 1), &from) < 0)
            continue;
        last = id;
        char detail[320];
        snprintf(detail, sizeof(detail), "node %s is down: back to the queue", PQgetvalue(r, i, 2));
        rc = live_requeue_job(c, id, from, detail);
    }
    PQclear(r);
    return rc;
}

/* Marks silent nodes DOWN and requeues the jobs that held GPUs on down nodes, in one
 * transaction. Returns the nodes marked, or -1. */
static int mark_nodes_down(PGconn *c, const struct settings *cfg)
{
    char t[32];
    snprintf(t, sizeof(t), "%.3f", cfg->node_timeout_s);
    const char *p[] = {t};
    if (db_command(c, "BEGIN") < 0)
        return -1;
    PGresult *r = db_exec(c,
                          "UPDATE nodes SET state = 'DOWN', updated_at = now() WHERE state = 'UP'"
                          " AND last_heartbeat_at < now() - make_interval(secs => $1::float8)"
                          " RETURNING name",
                          1, p);
    int n = db_ok(r) ? PQntuples(r) : -1;
    for (int i = 0; i < n; i++)
        log_info("node %s: UP -> DOWN (no heartbeat for %s s)", PQgetvalue(r, i, 0), t);
    PQclear(r);
    if (n < 0 || requeue_lost_jobs(c) < 0 || db_command(c, "COMMIT") < 0) {
        db_command(c, "ROLLBACK");
        return -1;
    }
    return n;
}

int live_round_run(PGconn *c, struct live_models *ms, const struct settings *cfg,
                    long round_no, struct forecast_thread *fc, struct live_round_result *out,
                    char *err, size_t errlen)
{
    long long t0 = monotime_us();
    memset(out, 0, sizeof(*out));
    out->nodes_down = mark_nodes_down(c, cfg);
    if (out->nodes_down < 0) {
        snprintf(err, errlen, "marking silent nodes down: %s", PQerrorMessage(c));
        return -1;
    }
    long long t1 = monotime_us();
    struct live_snap *s = live_snap_read(c, err, errlen);
    if (!s)
        return -1;
    long long t2 = monotime_us();
    struct live_plan *plan = live_plan_create(s, ms, cfg, round_no, c, err, errlen);
    long long t3 = monotime_us();
    int rc = plan ? live_plan_write(plan, c, t0, out, err, errlen) : -1;
    out->snap_us = t2 - t1;
    out->decide_us = t3 - t2 - out->refit_us;
    if (rc == 0)
        live_plan_offer_forecast(plan, fc, cfg->interval_s);
    live_plan_destroy(plan);
    live_snap_destroy(s);
    if (rc == 0)
        live_models_prune(ms, round_no);
    return rc;
}
