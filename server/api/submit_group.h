/* submit_group: group commit of concurrent single submissions (POST /api/v1/jobs). A
 * submission that finds no leader storing leads: it stores its job alone, in one statement,
 * on its own connection, and then, while jobs were queued meanwhile, every job queued (at
 * most SUBMIT_GROUP_MAX) as one multi-row insert in one transaction, until the queue is
 * empty. One that finds a leader queues its job and returns at once: the leader stores it and
 * answers it (its done()), so that neither a thread nor a database connection waits with it.
 * The statement's start, the constraints' rebuild and the commit's WAL flush are then paid
 * once for the group instead of once a job. The leader keeps two statements in its
 * connection's pipeline: while one runs, the jobs queued meanwhile go into the next, sent
 * behind it once as many wait as it holds, so that PostgreSQL starts the next as soon as the
 * last one committed, without waiting for this process. Each job still gets its own row:
 * stored, refused for its size, or found made before under its Idempotency-Key, exactly as
 * alone; a job is answered only once its transaction committed. When the group's statement
 * fails with the database still reachable (nothing of it was stored), every job of the group
 * is stored again alone, so that a failing job fails only its own request. docs/benchmarks.md,
 * "Group commit", "Submissions answered by their group's leader" and "Two statements in one
 * pipeline". */
#ifndef RINGMASTER_API_SUBMIT_GROUP_H
#define RINGMASTER_API_SUBMIT_GROUP_H

#include <libpq-fe.h>

#define SUBMIT_GROUP_MAX 64

struct submit_group_job;
struct submit_row;

/* Called once for every job stored, from the thread of its group's leader: r (NULL when the
 * group's connection was lost during its statement: whether the job was stored is not
 * known) holds the job's answer in row `row`, laid out as SUBMIT_ROW_ONE answers
 * (submit_row.h); c is the leader's connection, for what the answer may still read. r is
 * freed after the call. */
typedef void (*submit_group_done_f)(struct submit_group_job *job, PGconn *c, const PGresult *r,
                                    int row);

/* One job to store. The caller sets row (its parameters, submit_row.h) and done; both, and
 * the job, must live until done() was called for it. */
struct submit_group_job {
    const struct submit_row *row;
    submit_group_done_f done;
    /* private */
    struct submit_group_job *next;
};

/* Stores job, calling its done() once stored: on c before it returns when no statement of
 * submissions is in flight (and then every job queued meanwhile, on c), else later from the
 * leader's thread (the job is queued, and the caller must not touch it or its request after
 * this returns). */
void submit_group_store(PGconn *c, struct submit_group_job *job);

/* Whether a leader is storing now (a hint: it may stop at any time). */
int submit_group_leading(void);

/* Queues job behind the leader storing, when one is, without waiting for anything: returns
 * 0 (the leader stores and answers it, maybe before this returns), or -1 when no leader is
 * storing (nothing done: submit_group_store() it from a thread that may wait). */
int submit_group_enqueue(struct submit_group_job *job);

#endif
