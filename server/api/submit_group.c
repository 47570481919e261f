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

/* The jobs of one statement, and its answer once come. */
struct group {
    struct submit_group_job *jobs[SUBMIT_GROUP_MAX];
    int n;
    int sent;    /* sent on c, its answer not yet read */
    PGresult *r; /* its answer; NULL: no memory to run it */
};

/* Sends g's statement on c without waiting for it (alone when g holds one job), or, when it
 * cannot be sent so, runs it. */
static void group_start(PGconn *c, struct group *g)
{
    char *text = g->n > 1 ? group_json(g->jobs, g->n) : NULL;
    const char *many[] = {text};
    const struct db_stmt *st = g->n > 1 ? &many_stmt : &one_stmt;
    const char *const *params = g->n > 1 ? many : g->jobs[0]->params;
    g->sent = 0;
    g->r = NULL;
    if (g->n > 1 && !text)
        return;
    if (db_send_stmt(c, st, params) == 0)
        g->sent = 1; /* libpq copied the parameters into its buffer */
    else
        g->r = db_exec_stmt(c, st, params);
    free(text);
}

/* Waits for the answer of g's statement. */
static void group_wait(PGconn *c, struct group *g)
{
    if (g->sent)
        g->r = db_stmt_result(c);
    g->sent = 0;
}

/* Whether g's jobs may be answered while another statement runs on c: all of them stored. A
 * job not stored (its row's id null) may read c for its answer: made before under its
 * Idempotency-Key. */
static int answers_apart(const struct group *g)
{
    if (!g->r || !db_ok(g->r) || PQntuples(g->r) != g->n)
        return 0;
    for (int k = 0; k < g->n; k++)
        if (PQgetisnull(g->r, k, 0))
            return 0;
    return 1;
}

/* Answers g's jobs from its answer, and frees it. A group whose statement failed with c still
 * up (nothing of it was stored), or that had no memory to run, is stored again job by job on
 * c; one whose c went down during it, or that answered something else than a row a job, is
 * answered as lost (whether it was stored is not known). */
static void group_answer(PGconn *c, struct group *g)
{
    PGresult *r = g->r;
    g->r = NULL;
    if (g->n == 1) {
        g->jobs[0]->done(g->jobs[0], c, r, 0);
        PQclear(r);
        return;
    }
    int stored = r && db_ok(r) && PQntuples(r) == g->n;
    int alone = !r || (!db_ok(r) && PQstatus(c) == CONNECTION_OK);
    if (stored)
        metrics_submit_group((unsigned)g->n);
    else
        log_warn("submissions: a group of %d failed (%s); %s", g->n,
                 !r         ? "out of memory"
                 : db_ok(r) ? "rows missing"
                            : db_sqlstate(r),
                 alone ? "each is stored alone" : "answered 503");
    for (int k = 0; k < g->n; k++) {
        if (stored)
            g->jobs[k]->done(g->jobs[k], c, r, k);
        else if (alone)
            store_alone(c, g->jobs[k]);
        else
            g->jobs[k]->done(g->jobs[k], c, NULL, 0);
    }
    PQclear(r);
}

/* Under the lock: unlinks up to SUBMIT_GROUP_MAX jobs from the queue's head into g. */
static void take_queue(struct group *g)
{
    g->n = 0;
    while (head && g->n < SUBMIT_GROUP_MAX) {
        g->jobs[g->n++] = head;
        head = head->next;
    }
    if (!head)
        tail = NULL;
}

/* The leader's work: its own job, then while jobs were queued meanwhile the next group. The
 * next group's statement is sent before the last group's jobs are answered when those need
 * nothing more of c, so that PostgreSQL runs it while their answers are written (two
 * groups alternate: cur, whose answer came, and next). */
static void lead(PGconn *c, struct submit_group_job *job)
{
    struct group groups[2] = {{.jobs = {job}, .n = 1}};
    struct group *cur = &groups[0], *next = &groups[1];
    group_start(c, cur);
    for (;;) {
        group_wait(c, cur);
        pthread_mutex_lock(&mu);
        take_queue(next);
        pthread_mutex_unlock(&mu);
        int apart = next->n && answers_apart(cur);
        if (apart)
            group_start(c, next);
        group_answer(c, cur);
        if (!apart) {
            if (!next->n) { /* queued while cur's answers were written? */
                pthread_mutex_lock(&mu);
                take_queue(next);
                busy = next->n > 0;
                pthread_mutex_unlock(&mu);
                if (!next->n)
                    return;
            }
            if (PQstatus(c) != CONNECTION_OK) /* lost with cur: the next ones try anew */
                PQreset(c);
            group_start(c, next);
        }
        struct group *done = cur;
        cur = next;
        next = done;
    }
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
    lead(c, job);
}
