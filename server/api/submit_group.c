/* submit_group: the group commit of single submissions: the queue, its leader, and the
 * leader's two statements in one pipeline (submit_group.h). */
#include "submit_group.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "store/db.h"
#include "submit_row.h"

/* The jobs queued while a leader stores, oldest first, and how many; busy: a leader is
 * storing. wanted: the leader waits until that many jobs are queued (0: it does not), to
 * send them into its pipeline; whoever queues the one that makes them that many wakes it
 * through wake_fd (an eventfd). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct submit_group_job *head, *tail;
static int queued, busy, wanted;
static int wake_fd = -1;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;

/* A second statement goes into the leader's pipeline once as many jobs are queued as the
 * statement in flight holds, and at least this many: each statement has the same fixed cost
 * whatever its size (docs/benchmarks.md, "Two statements in one pipeline"). */
#define PIPELINE_MIN_GROUP 2

/* The statement of a job stored alone. */
#define ONE_STMT submit_row_stmt(SUBMIT_ROW_ONE)

/* Stores job alone on c and answers it. */
static void store_alone(PGconn *c, struct submit_group_job *job)
{
    PGresult *r = db_exec_stmt(c, ONE_STMT, job->row->params);
    job->done(job, c, r, 0);
    PQclear(r);
}

/* The jobs of one statement, and its answer once come. */
struct group {
    struct submit_group_job *jobs[SUBMIT_GROUP_MAX];
    int n;
    struct db_answer ans; /* its statement's; ans.r NULL: no memory to run it */
};

/* The statement of g: alone, or many at once, without the Idempotency-Key's conflict check
 * when no job of g has a key. */
static const struct db_stmt *group_stmt(const struct group *g)
{
    if (g->n == 1)
        return ONE_STMT;
    for (int k = 0; k < g->n; k++)
        if (g->jobs[k]->row->keyed)
            return submit_row_stmt(SUBMIT_ROW_MANY);
    return submit_row_stmt(SUBMIT_ROW_MANY_KEYLESS);
}

/* The statement of a group and its parameters: alone, its job's; many at once, the
 * group's arrays (to free). */
struct group_call {
    const struct db_stmt *st;
    struct submit_rows many;
    const char *const *params;
};

/* Fills *gc for g. Returns 0, or -1 when there was no memory for the arrays. */
static int group_call_of(const struct group *g, struct group_call *gc)
{
    const struct submit_row *rows[SUBMIT_GROUP_MAX];
    gc->st = group_stmt(g);
    gc->many = (struct submit_rows){0};
    gc->params = g->jobs[0]->row->params;
    if (g->n == 1)
        return 0;
    for (int k = 0; k < g->n; k++)
        rows[k] = g->jobs[k]->row;
    gc->params = gc->many.params;
    return submit_rows_of(rows, g->n, &gc->many);
}

/* Sends g's statement on c without waiting for it (alone when g holds one job), or, when it
 * cannot be sent so, runs it. */
static void group_start(PGconn *c, struct group *g)
{
    struct group_call gc;
    g->ans = (struct db_answer){0};
    if (group_call_of(g, &gc) == 0) {
        if (db_send_stmt(c, gc.st, gc.params) == 0)
            g->ans.wait = 1; /* libpq copied the parameters into its buffer */
        else
            g->ans.r = db_exec_stmt(c, gc.st, gc.params);
    }
    submit_rows_clear(&gc.many);
}

/* Waits for the answer of g's statement. */
static void group_wait(PGconn *c, struct group *g)
{
    if (g->ans.wait)
        g->ans.r = db_stmt_result(c);
    g->ans.wait = 0;
}

/* Whether g's jobs may be answered while another statement runs on c: all of them stored. A
 * job not stored (its row's id null) may read c for its answer: made before under its
 * Idempotency-Key. */
static int answers_apart(const struct group *g)
{
    if (!g->ans.r || !db_ok(g->ans.r) || PQntuples(g->ans.r) != g->n)
        return 0;
    for (int k = 0; k < g->n; k++)
        if (PQgetisnull(g->ans.r, k, 0))
            return 0;
    return 1;
}

/* Answers g's jobs from its answer, and frees it. A group whose statement failed with c still
 * up (nothing of it was stored), or that had no memory to run, is stored again job by job on
 * c; one whose c went down during it, or that answered something else than a row a job, is
 * answered as lost (whether it was stored is not known). */
static void group_answer(PGconn *c, struct group *g)
{
    PGresult *r = g->ans.r;
    g->ans.r = NULL;
    if (g->ans.lost) { /* whether it was stored is not known: answered as lost */
        log_warn("submissions: a group of %d lost with its connection (or its results not as"
                 " sent); answered 503",
                 g->n);
        PQclear(r);
        r = NULL;
    }
    if (g->n == 1) {
        g->jobs[0]->done(g->jobs[0], c, r, 0);
        PQclear(r);
        return;
    }
    int stored = r && db_ok(r) && PQntuples(r) == g->n;
    int alone = !g->ans.lost && (!r || (!db_ok(r) && PQstatus(c) == CONNECTION_OK));
    if (stored)
        metrics_submit_group((unsigned)g->n);
    else if (!g->ans.lost)
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
        queued--;
    }
    if (!head)
        tail = NULL;
}

/* The leader's work without a pipeline, from the group first (not yet sent): then, while
 * jobs were queued meanwhile, the next group. The next group's statement is sent before the
 * last group's jobs are answered when those need nothing more of c, so that PostgreSQL runs
 * it while their answers are written (two groups alternate: cur, whose answer came, and
 * next). */
static void lead_serial(PGconn *c, const struct group *first)
{
    struct group groups[2];
    groups[0] = *first;
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

/* ---- the pipelined leader ---- */

static void wake_open(void)
{
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0)
        log_warn("submissions: no eventfd (%m); one statement at a time");
}

/* Sends g's statement (alone when g holds one job) into c's pipeline, its own transaction.
 * When it cannot be sent, g's answer has come empty (each of its jobs is stored again alone,
 * out of the pipeline). */
static void pipe_send(PGconn *c, struct group *g)
{
    struct group_call gc;
    g->ans = (struct db_answer){0};
    if (group_call_of(g, &gc) == 0)
        db_pipe_send(c, gc.st, gc.params, &g->ans);
    submit_rows_clear(&gc.many);
}

/* Waits until c has input to read (read in), or, with queue, until wake_fd was written. */
static void pipe_wait(PGconn *c, int queue)
{
    struct pollfd p[2] = {{.fd = PQsocket(c), .events = POLLIN},
                          {.fd = wake_fd, .events = POLLIN}};
    if (p[0].fd < 0)
        return; /* lost: db_pipe_read() sees it */
    if (poll(p, queue ? 2 : 1, 1000) > 0 && queue && (p[1].revents & POLLIN)) {
        uint64_t v;
        ssize_t n = read(wake_fd, &v, sizeof(v));
        (void)n;
    }
    PQconsumeInput(c);
}

/* Under the lock: takes the queue into g when at least want jobs wait, else asks to be woken
 * when they do (want 0: takes whatever waits). */
static void take_queue_of(struct group *g, int want)
{
    g->n = 0;
    wanted = 0;
    if (queued >= want)
        take_queue(g);
    else
        wanted = want;
}

/* The leader's work in c's pipeline (entered), from the group first (not yet sent): while
 * one statement runs, the jobs queued meanwhile go into a second one behind it (on the same
 * connection: PostgreSQL runs them one after the other, the second without waiting for this
 * thread), and each group is answered once its transaction committed, while the other runs.
 * A group whose jobs need c for their answers (a job not stored: refused for its size, made
 * before under its Idempotency-Key, or the statement failed) waits for the other, and the
 * leader goes on without the pipeline. */
static void lead_pipelined(PGconn *c, const struct group *first)
{
    struct group groups[2], *flight[2] = {NULL, NULL}; /* in flight, oldest first */
    groups[0] = *first;
    int n = 1;
    flight[0] = &groups[0];
    pipe_send(c, flight[0]);
    for (;;) {
        if (n == 1) {
            struct group *next = flight[0] == &groups[0] ? &groups[1] : &groups[0];
            int want = flight[0]->n > PIPELINE_MIN_GROUP ? flight[0]->n : PIPELINE_MIN_GROUP;
            pthread_mutex_lock(&mu);
            take_queue_of(next, want);
            pthread_mutex_unlock(&mu);
            if (next->n) {
                pipe_send(c, next);
                metrics_submit_pipelined();
                flight[n++] = next;
                continue;
            }
        }
        if (!db_pipe_read(c, &flight[0]->ans)) {
            pipe_wait(c, n == 1);
            continue;
        }
        if (!answers_apart(flight[0]))
            break;
        struct group *done = flight[0];
        group_answer(c, done);
        flight[0] = flight[1];
        if (--n == 0) { /* its storage is free again */
            flight[0] = done;
            pthread_mutex_lock(&mu);
            take_queue_of(flight[0], 0);
            busy = flight[0]->n > 0;
            pthread_mutex_unlock(&mu);
            if (!busy) {
                if (PQexitPipelineMode(c) != 1) /* results not as sent: a new session */
                    PQreset(c);
                return;
            }
            pipe_send(c, flight[0]);
            n = 1;
        }
    }
    /* flight[0]'s answers need c: the other statement's answer first, then out of the
     * pipeline, both answered in order, and the queue without the pipeline */
    pthread_mutex_lock(&mu);
    wanted = 0;
    pthread_mutex_unlock(&mu);
    if (n == 2 && flight[0]->ans.lost) { /* what comes next is not the other's answer */
        flight[1]->ans.lost = 1;
        flight[1]->ans.wait = 0;
    }
    while (n == 2 && !db_pipe_read(c, &flight[1]->ans))
        pipe_wait(c, 0);
    if (PQexitPipelineMode(c) != 1) /* lost, or results not as sent: a new session */
        PQreset(c);
    for (int k = 0; k < n; k++)
        group_answer(c, flight[k]);
    struct group rest;
    pthread_mutex_lock(&mu);
    take_queue(&rest);
    busy = rest.n > 0;
    pthread_mutex_unlock(&mu);
    if (rest.n) {
        if (PQstatus(c) != CONNECTION_OK)
            PQreset(c);
        lead_serial(c, &rest);
    }
}

/* The leader's work, from its own job: in c's pipeline when it can be used (its statements
 * prepared on c's session), else one statement at a time. */
static void lead(PGconn *c, struct submit_group_job *job)
{
    struct group first = {.jobs = {job}, .n = 1};
    if (wake_fd >= 0 && db_stmt_prepared(c, ONE_STMT) &&
        db_stmt_prepared(c, submit_row_stmt(SUBMIT_ROW_MANY)) &&
        db_stmt_prepared(c, submit_row_stmt(SUBMIT_ROW_MANY_KEYLESS)) &&
        PQenterPipelineMode(c) == 1)
        lead_pipelined(c, &first);
    else
        lead_serial(c, &first);
}

/* Under the lock, a leader storing: queues job behind it. Returns whether the leader waits
 * for this job (wake it through wake_fd, after the lock). */
static int queue_job(struct submit_group_job *job)
{
    job->next = NULL;
    if (tail)
        tail->next = job;
    else
        head = job;
    tail = job;
    queued++;
    int wake = wanted && queued >= wanted;
    if (wake)
        wanted = 0;
    return wake;
}

static void wake_leader(void)
{
    uint64_t one = 1;
    ssize_t n = write(wake_fd, &one, sizeof(one));
    (void)n;
}

int submit_group_leading(void)
{
    pthread_mutex_lock(&mu);
    int b = busy;
    pthread_mutex_unlock(&mu);
    return b;
}

int submit_group_enqueue(struct submit_group_job *job)
{
    pthread_mutex_lock(&mu);
    if (!busy) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    int wake = queue_job(job);
    pthread_mutex_unlock(&mu);
    if (wake)
        wake_leader();
    return 0;
}

void submit_group_store(PGconn *c, struct submit_group_job *job)
{
    pthread_once(&wake_once, wake_open);
    pthread_mutex_lock(&mu);
    if (busy) {
        int wake = queue_job(job);
        pthread_mutex_unlock(&mu);
        if (wake)
            wake_leader();
        return;
    }
    busy = 1;
    pthread_mutex_unlock(&mu);
    lead(c, job);
}
