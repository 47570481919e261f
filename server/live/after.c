/* after: the jobs kept out of a round by their dependencies, and what the round writes for
 * them (after.h); the rule itself is the core's (deps.h). */
#include "after.h"

#include <stdio.h>
#include <stdlib.h>

#include "deps.h"
#include "jobtx.h"
#include "plan_int.h"
#include "settings.h"
#include "snap.h"
#include "store/db.h"
#include "store/pgarray.h"

#define REASON_MAX 384 /* as the round's other reasons (live_plan_job.pending_reason) */

int live_after_blocked(const struct snap_job *sj)
{
    return sj->state == JOB_PENDING && sj->ndeps > 0 &&
           deps_check_all(sj->deps, sj->ndeps, NULL) != DEPS_MET;
}

/* The reasons of the jobs that wait (or are held), only where they changed: the other fields
 * of the queue are the round's for the jobs it schedules, none for these. */
static const char *const reasons_sql =
    "INSERT INTO job_sched AS s (job_id, pending_reason)"
    " SELECT * FROM unnest($1::bigint[], $2::text[])"
    " ON CONFLICT (job_id) DO UPDATE SET pending_reason = EXCLUDED.pending_reason,"
    " queue_position = NULL, predicted_start = NULL, predicted_finish = NULL,"
    " updated_at = now() WHERE s.pending_reason IS DISTINCT FROM EXCLUDED.pending_reason"
    " OR s.queue_position IS NOT NULL";

struct reasons {
    char *ids, *texts; /* the two arrays' literals */
    struct pgarray a, b;
    int n;
};

static int reasons_open(struct reasons *r, size_t njobs)
{
    *r = (struct reasons){.ids = malloc(PGARRAY_ROOM + njobs * 26),
                          .texts = malloc(PGARRAY_ROOM + njobs * (2 * REASON_MAX + 4))};
    if (!r->ids || !r->texts)
        return -1;
    pgarray_start(&r->a, r->ids);
    pgarray_start(&r->b, r->texts);
    return 0;
}

static int reasons_write(struct reasons *r, PGconn *c)
{
    pgarray_end(&r->a);
    pgarray_end(&r->b);
    const char *p[] = {r->ids, r->texts};
    int rc = r->n == 0 ? 0 : db_command_params(c, reasons_sql, 2, p);
    free(r->ids);
    free(r->texts);
    return rc;
}

int live_after_write(const struct live_plan *p, PGconn *c)
{
    struct reasons r;
    int cancelled = 0, rc = reasons_open(&r, p->nblocked);
    for (size_t i = 0; rc == 0 && i < p->nblocked; i++) {
        const struct snap_job *sj = p->blocked[i];
        char why[REASON_MAX], id[24];
        int hold = p->cfg->hold_unmet_deps;
        deps_reason(sj->deps, sj->ndeps, hold, why, sizeof(why));
        if (!hold && deps_check_all(sj->deps, sj->ndeps, NULL) == DEPS_NEVER) {
            rc = live_move_job(c, (long long)sj->id, JOB_PENDING, JOB_EV_CANCEL, why);
            cancelled++;
            continue;
        }
        snprintf(id, sizeof(id), "%lld", (long long)sj->id);
        pgarray_add(&r.a, id);
        pgarray_add(&r.b, why);
        r.n++;
    }
    if (reasons_write(&r, c) < 0 || rc < 0)
        return -1;
    return cancelled;
}
