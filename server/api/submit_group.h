/* submit_group: group commit of concurrent single submissions (POST /api/v1/jobs). A
 * submission stores its job alone, in one statement, when no submission's statement is in
 * flight; one that finds one in flight queues its job (and steps aside for another request
 * meanwhile: http_wait_begin()), and when that statement ends the first job queued leads:
 * its request stores every job queued by then (at most SUBMIT_GROUP_MAX) as one multi-row
 * insert in one transaction, on its own connection, while the next jobs queue. The
 * statement's start, the constraints' rebuild, the foreign keys' plans and the commit's WAL
 * flush are then paid once for the group instead of once a job. Each job still gets its own
 * row: stored, refused for its size, or found made before under its Idempotency-Key, exactly
 * as alone. When the group's statement fails with the database still reachable (nothing of
 * it was stored), every job of the group is stored again alone, so that a failing job fails
 * only its own request. docs/benchmarks.md, "Group commit". */
#ifndef RINGMASTER_API_SUBMIT_GROUP_H
#define RINGMASTER_API_SUBMIT_GROUP_H

#include <libpq-fe.h>

#define SUBMIT_GROUP_MAX 64

struct submit_group_shared;

/* One job to store. The caller sets params (the SUBMIT_NPARAMS text parameters of
 * SUBMIT_ONE_SQL, submit_sql.h; borrowed until submit_group_store() returns) and reads r and
 * row afterwards; the rest is the group's. */
struct submit_group_job {
    const char *const *params;
    const PGresult *r; /* the answer: row `row` is the job's, laid out as SUBMIT_ONE_SQL's */
    int row;
    /* private */
    struct submit_group_job *next;
    int state;
    PGresult *own;                   /* r when the job was stored alone */
    struct submit_group_shared *grp; /* r's owner when it was stored in a group */
};

/* Stores job on c (the caller's connection), alone or in a group. Returns 0 with job->r and
 * job->row set (r may be a failed result: the job's own statement failed on c), or -1 when
 * the group's connection was lost during its statement (whether the group was stored is not
 * known: answer 503; job->r is NULL). Call submit_group_release(job) after either. */
int submit_group_store(PGconn *c, struct submit_group_job *job);

/* Frees what job->r holds (the group's answer once its last job is done). */
void submit_group_release(struct submit_group_job *job);

#endif
