#include "submit_group.h"

#include <pthread.h>
#include <stdlib.h>

#include "http/jsontext.h"
#include "log.h"
#include "metrics.h"
#include "store/db.h"
#include "submit_sql.h"

/* The jobs queued while a leader stores, oldest first; busy: a leader is storing. One
 * statement in flight at a time: the jobs that arrive while it runs make the next group, and
 * PostgreSQL flushes one commit at a time anyway (two in flight made groups of 2.4 jobs
 * instead of 3.9 for no more submissions: docs/benchmarks.md, "One statement in flight"). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct submit_group_job *head, *tail;
static int busy;

static const struct db_stmt one_stmt = {"submit_one", SUBMIT_ONE_SQL, SUBMIT_NPARAMS, 0};
static const struct db_stmt many_stmt = {"submit_many", SUBMIT_MANY_SQL, 1, 0};

/* The group's $1: each job's parameters as an array of JSON strings (new text; NULL on
 * ENOMEM). */
static char *group_json(struct submit_group_job *const *jobs, int n)
{
    struct jsontext t;
    jsontext_init(&t, (size_t)n * 512);
    for (int k = 0; k < n; k++) {
        jsontext_raw(&t, k ? ",[" : "[[", 2);
        for (int i = 0; i < SUBMIT_NPARAMS; i++) {
            const char *v = jobs[k]->params[i];
            if (i)
                jsontext_lit(&t, ",");
            if (v)
                jsontext_str(&t, v);
            else
                jsontext_lit(&t, "null");
        }
        jsontext_lit(&t, "]");
    }
    jsontext_lit(&t, "]");
    size_t len;
    return jsontext_take(&t, &len);
}

/* Stores job alone on c and answers it. */
static void store_alone(PGconn *c, struct submit_group_job *job)
{
    PGresult *r = db_exec_stmt(c, &one_stmt, job->params);
    job->done(job, c, r, 0);
    PQclear(r);
}

/* Stores a group of n > 1 jobs as one statement on c and answers each. When nothing of it
 * was stored and c is still up (the statement failed, or no memory to run it), each is
 * stored alone; when c went down during the statement, or it answered something else than a
 * row a job, each is answered as lost (whether it was stored is not known). */
static void store_many(PGconn *c, struct submit_group_job *const *jobs, int n)
{
    char *text = group_json(jobs, n);
    const char *p[] = {text};
    PGresult *r = text ? db_exec_stmt(c, &many_stmt, p) : NULL;
    free(text);
    int stored = r && db_ok(r) && PQntuples(r) == n;
    int alone = !r || (!db_ok(r) && PQstatus(c) == CONNECTION_OK);
    if (stored) {
        metrics_submit_group((unsigned)n);
    } else {
        log_warn("submissions: a group of %d failed (%s); %s", n,
                 !r         ? "out of memory"
                 : db_ok(r) ? "rows missing"
                            : db_sqlstate(r),
                 alone ? "each is stored alone" : "answered 503");
    }
    for (int k = 0; k < n; k++) {
        if (stored)
            jobs[k]->done(jobs[k], c, r, k);
        else if (alone)
            store_alone(c, jobs[k]);
        else
            jobs[k]->done(jobs[k], c, NULL, 0);
    }
    PQclear(r);
}

/* Under the lock: unlinks up to SUBMIT_GROUP_MAX jobs from the queue's head into jobs. */
static int take_queue(struct submit_group_job **jobs)
{
    int n = 0;
    while (head && n < SUBMIT_GROUP_MAX) {
        jobs[n++] = head;
        head = head->next;
    }
    if (!head)
        tail = NULL;
    return n;
}

void submit_group_store(PGconn *c, struct submit_group_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&mu);
    if (busy) {
        if (tail)
            tail->next = job;
        else
            head = job;
        tail = job;
        pthread_mutex_unlock(&mu);
        return;
    }
    busy = 1;
    pthread_mutex_unlock(&mu);
    store_alone(c, job);
    struct submit_group_job *jobs[SUBMIT_GROUP_MAX];
    for (;;) {
        pthread_mutex_lock(&mu);
        int n = take_queue(jobs);
        if (!n)
            busy = 0;
        pthread_mutex_unlock(&mu);
        if (!n)
            return;
        if (PQstatus(c) != CONNECTION_OK) /* lost with the last group: the next ones try anew */
            PQreset(c);
        if (n == 1)
            store_alone(c, jobs[0]);
        else
            store_many(c, jobs, n);
    }
}
