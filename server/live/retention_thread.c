/* retention_thread: the thread that makes the retention passes (retention.h), off the
 * scheduler thread. A pass that thins took 1.3 s on average and up to 7 s with 2,732 jobs
 * reporting (make bench-retention); made after a round on the scheduler thread, the next
 * round waited that long. Here it has its own connection, and a round never waits for it. */
#include "retention.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "live.h"
#include "log.h"
#include "store/db.h"

struct retention_thread {
    struct db_pool *db;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled on stop (CLOCK_MONOTONIC) */
    atomic_bool stop;
    PGcancel *busy; /* under mu: cancels the statement of the pass in progress, or NULL */
    int holds;      /* 1: its connection holds the retention lock; 0: another's does; -1: unknown */
    pthread_t tid;
    int started, inited;
};

/* Whether this server makes the passes: its connection holds the retention lock (taken now
 * if free; a session lock, gone with the connection). Returns 1, 0, or -1. */
static int holds_lock(struct retention_thread *t, PGconn *c)
{
    PGresult *r = db_exec(c, "SELECT " LIVE_LOCK_HELD_SQL(RETENTION_LOCK_OBJ), 0, NULL);
    int holds = db_ok(r) && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0)[0] == 't' : -1;
    PQclear(r);
    if (holds >= 0 && holds != t->holds)
        log_info(holds ? "retention: this server thins the metrics (it holds the lock)"
                       : "retention: another server thins the metrics");
    if (holds >= 0)
        t->holds = holds;
    return holds;
}

/* Sets (or clears, c NULL) what retention_thread_destroy() cancels. */
static void set_busy(struct retention_thread *t, PGconn *c)
{
    PGcancel *k = c ? PQgetCancel(c) : NULL;
    pthread_mutex_lock(&t->mu);
    PGcancel *old = t->busy;
    t->busy = k;
    pthread_mutex_unlock(&t->mu);
    if (old)
        PQfreeCancel(old);
}

/* One pass when this server holds the lock; logs what went. */
static void pass(struct retention_thread *t)
{
    char err[512];
    struct retention_result rr;
    PGconn *c = db_acquire(t->db);
    if (!c || holds_lock(t, c) <= 0) {
        db_release(t->db, c);
        return;
    }
    set_busy(t, c);
    int rc = retention_pass(c, RETENTION_PASS_BUDGET_S, &t->stop, &rr, err, sizeof(err));
    set_busy(t, NULL);
    if (rc < 0 && !atomic_load(&t->stop)) /* stopping: the statement was cancelled */
        log_error("%s", err);
    else if (rc == 0 && (rr.rows_dropped > 0 || rr.rounds_dropped > 0))
        log_info("retention: %lld minibatch reports of %d jobs thinned%s, %lld old rounds"
                 " dropped",
                 rr.rows_dropped, rr.jobs_thinned, rr.unfinished ? " (more next pass)" : "",
                 rr.rounds_dropped);
    db_release(t->db, c);
}

static struct timespec mono_after(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

/* A pass at once, then one every RETENTION_PERIOD_S from the last one's start. */
static void *run(void *arg)
{
    struct retention_thread *t = arg;
    while (!atomic_load(&t->stop)) {
        struct timespec next = mono_after(RETENTION_PERIOD_S);
        pass(t);
        pthread_mutex_lock(&t->mu);
        while (!atomic_load(&t->stop) && pthread_cond_timedwait(&t->cv, &t->mu, &next) == 0)
            ;
        pthread_mutex_unlock(&t->mu);
    }
    return NULL;
}

struct retention_thread *retention_thread_create(const char *conninfo, char *err, size_t errlen)
{
    struct retention_thread *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&t->stop, false);
    t->holds = -1;
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0) {
        snprintf(err, errlen, "retention: cannot make a condition variable");
        free(t);
        return NULL;
    }
    int ok =
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&t->cv, &a) == 0;
    pthread_condattr_destroy(&a);
    if (!ok || pthread_mutex_init(&t->mu, NULL) != 0) {
        if (ok)
            pthread_cond_destroy(&t->cv);
        snprintf(err, errlen, "retention: cannot make a condition variable");
        free(t);
        return NULL;
    }
    t->inited = 1;
    t->db = db_create(conninfo, 1, err, errlen);
    if (!t->db)
        goto error;
    if (pthread_create(&t->tid, NULL, run, t) != 0) {
        snprintf(err, errlen, "cannot start the retention thread");
        goto error;
    }
    t->started = 1;
    return t;
error:
    retention_thread_destroy(t);
    return NULL;
}

void retention_thread_db_restarting(struct retention_thread *t, int restarting)
{
    db_set_restarting(t->db, restarting);
}

void retention_thread_destroy(struct retention_thread *t)
{
    if (!t)
        return;
    if (t->started) {
        char why[256];
        pthread_mutex_lock(&t->mu);
        atomic_store(&t->stop, true);
        if (t->busy) /* a statement waiting on a lock would hold the server's exit */
            PQcancel(t->busy, why, sizeof(why));
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->tid, NULL);
    }
    db_destroy(t->db);
    if (t->inited) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    free(t);
}
