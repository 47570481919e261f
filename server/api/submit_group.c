#include "submit_group.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "http/http.h"
#include "http/jsontext.h"
#include "log.h"
#include "metrics.h"
#include "store/db.h"
#include "submit_sql.h"

/* A job's state: queued behind a statement in flight, leading (its request runs the next
 * statement), or done: stored by a group, to store alone (the group's statement failed), or
 * lost with the group's connection. */
enum { QUEUED, LEAD, DONE, ALONE, LOST };

/* A group's answer, shared by its jobs: freed by the last one released. */
struct submit_group_shared {
    PGresult *r;
    atomic_int refs;
};

/* The statements in flight at most (busy), each a job alone or a group. One: the jobs that
 * arrive while it runs make the next group, and PostgreSQL flushes one commit at a time
 * anyway. Two were allowed until 2026-11-29, but a leader promoted while another statement
 * ended before it woke was promoted twice and its slot never given back, so that after the
 * first burst one statement ran at a time; counted right, two made groups of 2.4 jobs
 * instead of 3.9 and cost PostgreSQL a fifth more CPU a job for no more submissions (make
 * bench-api, 8 clients: 4,129-4,356 /s against 4,233-4,381 with one; 32 clients: 6,318
 * against 7,337; docs/benchmarks.md, "One statement in flight"). */
#define INFLIGHT_MAX 1

/* The jobs queued while INFLIGHT_MAX statements are in flight (busy), oldest first; a job
 * leaves the queue when it is promoted to lead (hand_over()) or taken into a group. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
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

/* Runs a group of n > 1 jobs as one statement on c and gives each its row. Returns the jobs'
 * state: DONE; ALONE when nothing of the group was stored and c is still up (the statement
 * failed, or no memory to run it); LOST when c went down during the statement, or it answered
 * something else than a row a job (whether it was stored is then not known). */
static int run_many(PGconn *c, struct submit_group_job *const *jobs, int n)
{
    struct submit_group_shared *g = malloc(sizeof(*g));
    char *text = g ? group_json(jobs, n) : NULL;
    const char *p[] = {text};
    PGresult *r = text ? db_exec_stmt(c, &many_stmt, p) : NULL;
    free(text);
    int state = !r                             ? ALONE
                : db_ok(r)                     ? (PQntuples(r) == n ? DONE : LOST)
                : PQstatus(c) == CONNECTION_OK ? ALONE
                                               : LOST;
    if (state == DONE) {
        g->r = r;
        atomic_init(&g->refs, n);
        metrics_submit_group((unsigned)n);
    } else {
        log_warn("submissions: a group of %d failed (%s); %s", n,
                 !r         ? "out of memory"
                 : db_ok(r) ? "rows missing"
                            : db_sqlstate(r),
                 state == ALONE ? "each is stored alone" : "answered 503");
        PQclear(r);
        free(g);
        g = NULL;
        r = NULL;
    }
    for (int k = 0; k < n; k++) {
        jobs[k]->grp = g;
        jobs[k]->r = r;
        jobs[k]->row = k;
    }
    return state;
}

/* Stores jobs (n of them; one: alone, in SUBMIT_ONE_SQL as before groups) on c, without
 * the lock: the jobs were unlinked from the queue under it, and their requests wait until
 * their state leaves QUEUED, which only the lock's holder changes. Returns their state. */
static int run_group(PGconn *c, struct submit_group_job *const *jobs, int n)
{
    if (n > 1)
        return run_many(c, jobs, n);
    jobs[0]->own = db_exec_stmt(c, &one_stmt, jobs[0]->params);
    jobs[0]->r = jobs[0]->own;
    jobs[0]->row = 0;
    return DONE;
}

/* Under the lock: unlinks up to max jobs from the queue's head into jobs. */
static int take_queue(struct submit_group_job **jobs, int max)
{
    int n = 0;
    while (head && n < max) {
        jobs[n++] = head;
        head = head->next;
    }
    if (!head)
        tail = NULL;
    return n;
}

/* Under the lock, after a group's statement: its jobs are settled (state), and the first
 * queued job leaves the queue to lead in its place (it takes the jobs queued behind it when
 * it wakes), or one statement fewer is in flight. */
static void hand_over(struct submit_group_job *const *jobs, int n, int state)
{
    for (int k = 0; k < n; k++)
        jobs[k]->state = state;
    struct submit_group_job *next;
    if (take_queue(&next, 1))
        next->state = LEAD;
    else
        busy--;
    pthread_cond_broadcast(&cv);
}

int submit_group_store(PGconn *c, struct submit_group_job *job)
{
    struct submit_group_job *jobs[SUBMIT_GROUP_MAX];
    int n = 1;
    *job = (struct submit_group_job){.params = job->params, .state = QUEUED};
    jobs[0] = job;
    pthread_mutex_lock(&mu);
    if (busy < INFLIGHT_MAX) {
        busy++;
        job->state = LEAD;
    } else {
        if (tail)
            tail->next = job;
        else
            head = job;
        tail = job;
        http_wait_begin(); /* the statement in flight is PostgreSQL's work, not ours */
        while (job->state == QUEUED)
            pthread_cond_wait(&cv, &mu);
        http_wait_end();
        if (job->state == LEAD) /* out of the queue: jobs[0] is job */
            n = 1 + take_queue(jobs + 1, SUBMIT_GROUP_MAX - 1);
    }
    if (job->state == LEAD) {
        pthread_mutex_unlock(&mu);
        int state = run_group(c, jobs, n);
        pthread_mutex_lock(&mu);
        hand_over(jobs, n, state);
    }
    int state = job->state;
    pthread_mutex_unlock(&mu);
    if (state == ALONE)
        run_group(c, &job, 1);
    return state == LOST ? -1 : 0;
}

void submit_group_release(struct submit_group_job *job)
{
    PQclear(job->own);
    job->own = NULL;
    struct submit_group_shared *g = job->grp;
    job->grp = NULL;
    job->r = NULL;
    if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        PQclear(g->r);
        free(g);
    }
}
