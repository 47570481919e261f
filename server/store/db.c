/* db: the libpq connection pool (db.h): connections with its settings, checks and resets with
 * back-off, prepared and generic statements, the pipeline, and the exec/command helpers. */
#include "db.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "monotime.h"

struct db_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    unsigned size;
    unsigned nfree;
    char *conninfo;  /* what the connections not yet made will connect to */
    PGconn **conns;  /* all connections, NULL until first taken (written under lock) */
    unsigned *gens;  /* the generation each of conns was (re)made in */
    unsigned *idle;  /* the free slots of conns, a stack of nfree */
    unsigned gen;    /* advanced when every connection must be remade */
    /* The reconnect state, under lock: */
    bool up;         /* the last connection made or checked worked */
    bool restarting; /* the owner restarts the server: no attempt until it says */
    bool trying;     /* one thread is reconnecting while down; the others fail at once */
    double down_at;  /* when the loss was noticed */
    double retry_at; /* no attempt before this while down */
    double backoff;  /* the next wait after a failed attempt */
    unsigned retries;
};

static void quiet_notice(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* c reconnected as a new session, with the pool's notice handling when it came back. */
static void reset_session(PGconn *c)
{
    PQreset(c);
    if (PQstatus(c) == CONNECTION_OK)
        PQsetNoticeProcessor(c, quiet_notice, NULL);
}

/* A connection with the pool's settings, made or failed (NULL only when out of memory); a
 * failed one is reset (PQreset) like a broken one. */
static PGconn *connect_with_settings(const char *conninfo)
{
    /* Later keywords win, so what conninfo says overrides these defaults. Timestamps come
     * as text in the ISO DateStyle (jobcols.h, TS_UTC), whatever the server's default.
     * jit=off: the server's statements are short, and PostgreSQL's cost estimate of a LATERAL
     * over every active job passes jit_above_cost, so that each round compiled it (make
     * bench-scale: 0.6 s of a 0.65 s statement, docs/benchmarks.md "A large cluster"). */
    const char *const keys[] = {"connect_timeout",  "keepalives_idle",  "keepalives_interval",
                                "keepalives_count", "tcp_user_timeout", "fallback_application_name",
                                "options",          "dbname",           NULL};
    const char *const vals[] = {"5",           "10",
                                "5",           "3",
                                "30000",       "ringmasterd",
                                "-c DateStyle=ISO,MDY -c jit=off", conninfo,
                                NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (c && PQstatus(c) == CONNECTION_OK)
        PQsetNoticeProcessor(c, quiet_notice, NULL);
    return c;
}

PGconn *db_connect(const char *conninfo, char *err, size_t errlen)
{
    PGconn *c = connect_with_settings(conninfo);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "database: %s", c ? PQerrorMessage(c) : "out of memory");
        err[strcspn(err, "\n")] = '\0';
        PQfinish(c);
        return NULL;
    }
    return c;
}

struct db_pool *db_create(const char *conninfo, unsigned size, char *err, size_t errlen)
{
    struct db_pool *p = calloc(1, sizeof(*p));
    if (!p || size == 0)
        goto nomem;
    p->conninfo = strdup(conninfo);
    p->conns = calloc(size, sizeof(*p->conns));
    p->gens = calloc(size, sizeof(*p->gens));
    p->idle = calloc(size, sizeof(*p->idle));
    if (!p->conninfo || !p->conns || !p->gens || !p->idle)
        goto nomem;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    p->size = size;
    p->up = true;
    p->backoff = DB_RETRY_MIN_S;
    /* The first connection now, so that a database that cannot be reached fails the start;
     * the others when first taken (a start opens one, not threads + 1, and an idle server
     * holds only the connections it has needed at once). Slot 0 on top of the stack. */
    p->conns[0] = db_connect(conninfo, err, errlen);
    if (!p->conns[0]) {
        db_destroy(p);
        return NULL;
    }
    for (unsigned i = size; i-- > 0;)
        p->idle[p->nfree++] = i;
    return p;
nomem:
    snprintf(err, errlen, "database pool: out of memory or size 0");
    if (p) {
        free(p->conninfo);
        free(p->conns);
        free(p->gens);
        free(p->idle);
    }
    free(p);
    return NULL;
}

void db_destroy(struct db_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->size; i++)
        PQfinish(p->conns[i]);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->lock);
    free(p->conninfo);
    free(p->conns);
    free(p->gens);
    free(p->idle);
    free(p);
}

/* The slot of c in p->conns (under lock: a slot's first connection is stored under it). */
static unsigned slot_of(const struct db_pool *p, const PGconn *c)
{
    unsigned i = 0;
    while (i + 1 < p->size && p->conns[i] != c)
        i++;
    return i;
}

/* Under lock: the database was found gone; every connection is suspect. */
static void mark_down(struct db_pool *p, double now)
{
    if (p->up) {
        p->up = false;
        p->down_at = now;
        p->retries = 0;
        p->backoff = DB_RETRY_MIN_S;
        p->retry_at = now;
    }
    p->gen++;
}

/* False when c is broken, or the server closed it while it sat idle (a restart, a
 * terminated backend): what arrived is read without waiting, twice, since a FATAL
 * message may come just before the end of the stream. */
static bool idle_conn_alive(PGconn *c)
{
    for (int i = 0; i < 2 && PQstatus(c) == CONNECTION_OK; i++) {
        struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};
        if (pfd.fd < 0 || poll(&pfd, 1, 0) <= 0)
            break;
        if (!PQconsumeInput(c))
            return false;
    }
    return PQstatus(c) == CONNECTION_OK;
}

/* Under lock: a failed attempt; the next one waits twice as long, up to the retry interval. */
static void attempt_failed(struct db_pool *p, PGconn *c, double now)
{
    mark_down(p, now);
    p->retries++;
    p->retry_at = now + p->backoff;
    log_warn("database reconnect failed (attempt %u, down %.1f s, next in %.1f s): %.200s",
             p->retries, now - p->down_at, p->backoff, PQerrorMessage(c));
    p->backoff = p->backoff * 2 > DB_RETRY_MAX_S ? DB_RETRY_MAX_S : p->backoff * 2;
}

/* Resets slot i's connection, or makes its first one, unless the back-off says wait (or the
 * owner restarts the server, or another thread is trying already). The caller holds the slot.
 * Returns 0 when it works (again), -1 when not. */
static int reconnect(struct db_pool *p, unsigned i)
{
    PGconn *c = p->conns[i]; /* the slot is the caller's: no other thread writes it */
    pthread_mutex_lock(&p->lock);
    double now = monotime_s();
    bool gated = !p->up && (p->restarting || p->trying || now < p->retry_at);
    bool claim = !gated && !p->up;
    p->trying = p->trying || claim;
    pthread_mutex_unlock(&p->lock);
    if (gated)
        return -1;
    bool made = false;
    if (!c) {
        c = connect_with_settings(p->conninfo);
        made = c != NULL;
    } else {
        reset_session(c);
    }
    bool ok = c && PQstatus(c) == CONNECTION_OK;
    pthread_mutex_lock(&p->lock);
    now = monotime_s();
    if (made)
        p->conns[i] = c; /* a failed one too: it is reset at the next attempt */
    if (claim)
        p->trying = false;
    if (!ok) {
        attempt_failed(p, c, now);
    } else {
        p->gens[i] = p->gen;
        if (!p->up && !p->restarting)
            log_info("database reconnected after %.1f s (%u failed attempts)", now - p->down_at,
                     p->retries);
        p->up = p->up || !p->restarting;
        p->retries = 0;
        p->backoff = DB_RETRY_MIN_S;
    }
    pthread_mutex_unlock(&p->lock);
    return ok ? 0 : -1;
}

PGconn *db_acquire(struct db_pool *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->nfree == 0)
        pthread_cond_wait(&p->freed, &p->lock);
    unsigned i = p->idle[--p->nfree];
    PGconn *c = p->conns[i];
    bool stale = p->gens[i] != p->gen;
    pthread_mutex_unlock(&p->lock);
    if (c && !stale && idle_conn_alive(c))
        return c;
    if (reconnect(p, i) == 0)
        return p->conns[i];
    pthread_mutex_lock(&p->lock); /* given back as it is: made, broken or never made */
    if (p->conns[i] && PQstatus(p->conns[i]) != CONNECTION_OK)
        mark_down(p, monotime_s());
    p->idle[p->nfree++] = i;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void db_status(struct db_pool *p, struct db_status *out)
{
    pthread_mutex_lock(&p->lock);
    out->up = p->up;
    out->restarting = p->restarting;
    out->down_s = p->up ? 0 : monotime_s() - p->down_at;
    out->retries = p->retries;
    pthread_mutex_unlock(&p->lock);
}

void db_set_restarting(struct db_pool *p, bool restarting)
{
    pthread_mutex_lock(&p->lock);
    mark_down(p, monotime_s());
    p->restarting = restarting;
    p->backoff = DB_RETRY_MIN_S;
    p->retry_at = 0;
    pthread_mutex_unlock(&p->lock);
}

void db_release(struct db_pool *p, PGconn *c)
{
    if (!c)
        return;
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
        db_command(c, "ROLLBACK");
    pthread_mutex_lock(&p->lock);
    if (PQstatus(c) != CONNECTION_OK)
        mark_down(p, monotime_s());
    p->idle[p->nfree++] = slot_of(p, c);
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

/* A statement's result as the db_exec*() functions answer it: a failed one when libpq gave
 * none (out of memory), a failure logged. */
static PGresult *checked(PGconn *c, PGresult *r)
{
    if (!r)
        r = PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
    if (!db_ok(r))
        log_warn("sql failed (%s): %s", db_sqlstate(r), PQresultErrorMessage(r));
    return r;
}

PGresult *db_exec(PGconn *c, const char *sql, int n, const char *const *params)
{
    return checked(c, PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0));
}

/* Which statements each session has prepared: an entry per connection, its backend's pid
 * (another pid: a new session, nothing prepared) and the statements, under prepared_lock. */
#define DB_PREPARED_CONNS 256
#define DB_PREPARED_STMTS 32

struct prepared {
    const PGconn *conn;
    int pid;
    int n;
    const struct db_stmt *stmts[DB_PREPARED_STMTS];
};

static struct prepared prepared[DB_PREPARED_CONNS];
static pthread_mutex_t prepared_lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry of c's session (reset when the session is new), or NULL when the table is full. */
static struct prepared *prepared_of(const PGconn *c)
{
    struct prepared *free_slot = NULL;
    int pid = PQbackendPID(c);
    for (size_t i = 0; i < DB_PREPARED_CONNS; i++) {
        struct prepared *e = &prepared[i];
        if (e->conn == c) {
            if (e->pid != pid)
                *e = (struct prepared){.conn = c, .pid = pid};
            return e;
        }
        if (!e->conn && !free_slot)
            free_slot = e;
    }
    if (free_slot)
        *free_slot = (struct prepared){.conn = c, .pid = pid};
    return free_slot;
}

/* 1 when st is prepared on c's session (preparing it now when not), 0 when it cannot be
 * (the caller then runs it unprepared). */
static int prepare_once(PGconn *c, const struct db_stmt *st)
{
    pthread_mutex_lock(&prepared_lock);
    struct prepared *e = prepared_of(c);
    int have = 0;
    for (int i = 0; e && i < e->n; i++)
        have = have || e->stmts[i] == st;
    pthread_mutex_unlock(&prepared_lock); /* c is this thread's: nobody else prepares on it */
    if (have || !e || e->n == DB_PREPARED_STMTS)
        return have;
    PGresult *r = PQprepare(c, st->name, st->sql, st->nparams, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok) {
        pthread_mutex_lock(&prepared_lock);
        e->stmts[e->n++] = st;
        pthread_mutex_unlock(&prepared_lock);
    }
    return ok;
}

/* The results of one pipelined statement, up to the NULL that ends them: the last (new), or
 * NULL when none came. */
static PGresult *pipeline_result(PGconn *c)
{
    PGresult *last = NULL, *r;
    while ((r = PQgetResult(c)) != NULL) {
        PQclear(last);
        last = r;
    }
    return last;
}

/* 1 when the next result is the pipeline's synchronisation point (consumed), 0 when not. */
static int pipeline_synced(PGconn *c)
{
    PGresult *r = PQgetResult(c);
    int ok = r && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    return ok;
}

/* st (prepared) with a generic plan, in one round trip: SET, the statement, sync; RESET,
 * sync. A failing statement aborts its implicit transaction (or the caller's), and the SET
 * with it; the RESET, after the first sync, runs either way. NULL when the pipeline could
 * not be used (the caller then runs st plainly). */
static PGresult *exec_generic(PGconn *c, const struct db_stmt *st, const char *const *params)
{
    if (PQpipelineStatus(c) != PQ_PIPELINE_OFF || PQenterPipelineMode(c) != 1)
        return NULL;
    int sent = PQsendQueryParams(c, "SET plan_cache_mode = force_generic_plan", 0, NULL, NULL,
                                 NULL, NULL, 0) &&
               PQsendQueryPrepared(c, st->name, st->nparams, params, NULL, NULL, 0) &&
               PQpipelineSync(c) &&
               PQsendQueryParams(c, "RESET plan_cache_mode", 0, NULL, NULL, NULL, NULL, 0) &&
               PQpipelineSync(c);
    PGresult *set = sent ? pipeline_result(c) : NULL;
    PGresult *r = sent ? pipeline_result(c) : NULL;
    int done = sent && pipeline_synced(c);
    PGresult *reset = done ? pipeline_result(c) : NULL;
    done = done && pipeline_synced(c);
    if (set && PQresultStatus(set) != PGRES_COMMAND_OK && r &&
        PQresultStatus(r) == PGRES_PIPELINE_ABORTED) {
        PQclear(r); /* the SET's error says why */
        r = set;
        set = NULL;
    }
    if ((!reset || PQresultStatus(reset) != PGRES_COMMAND_OK) &&
        PQtransactionStatus(c) != PQTRANS_INERROR) /* else its rollback undoes the SET */
        log_warn("sql: plan_cache_mode not reset after %s: %s", st->name,
                 reset ? PQresultErrorMessage(reset) : PQerrorMessage(c));
    PQclear(set);
    PQclear(reset);
    if (!done || PQexitPipelineMode(c) != 1) {
        /* a broken connection, or results not as sent: a new session, out of pipeline mode
         * (what was prepared is prepared again, found by the new backend's pid) */
        log_warn("sql: pipeline of %s not ended (%s); reconnecting", st->name,
                 PQerrorMessage(c));
        PQclear(r);
        reset_session(c);
        return PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
    }
    return r ? r : PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
}

/* Whether st may run prepared on c: prepared on its session (now, when not yet), and c not
 * in a failed transaction (the statement then runs unprepared, to fail as it would). */
static int runs_prepared(PGconn *c, const struct db_stmt *st)
{
    return PQtransactionStatus(c) != PQTRANS_INERROR && prepare_once(c, st);
}

PGresult *db_exec_stmt(PGconn *c, const struct db_stmt *st, const char *const *params)
{
    if (!runs_prepared(c, st))
        return db_exec(c, st->sql, st->nparams, params);
    PGresult *r = st->generic ? exec_generic(c, st, params) : NULL;
    return checked(c, r ? r : PQexecPrepared(c, st->name, st->nparams, params, NULL, NULL, 0));
}

int db_send_stmt(PGconn *c, const struct db_stmt *st, const char *const *params)
{
    if (st->generic || !runs_prepared(c, st))
        return -1;
    return PQsendQueryPrepared(c, st->name, st->nparams, params, NULL, NULL, 0) == 1 ? 0 : -1;
}

int db_stmt_prepared(PGconn *c, const struct db_stmt *st)
{
    return !st->generic && runs_prepared(c, st);
}

PGresult *db_stmt_result(PGconn *c)
{
    return checked(c, pipeline_result(c)); /* one statement's results, up to its end */
}

int db_pipe_send(PGconn *c, const struct db_stmt *st, const char *const *params,
                 struct db_answer *a)
{
    *a = (struct db_answer){0};
    if (PQsendQueryPrepared(c, st->name, st->nparams, params, NULL, NULL, 0) != 1 ||
        PQpipelineSync(c) != 1)
        return -1;
    a->wait = 1;
    return 0;
}

/* *a has come as r (new; NULL: a made-up failure), lost or not. */
static void pipe_came(PGconn *c, struct db_answer *a, PGresult *r, int lost)
{
    PQclear(a->r);
    a->r = r ? r : PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
    a->wait = 0;
    a->lost = lost;
}

int db_pipe_read(PGconn *c, struct db_answer *a)
{
    int nulls = 0;
    while (a->wait) {
        if (PQstatus(c) != CONNECTION_OK) {
            pipe_came(c, a, NULL, 1);
            break;
        }
        if (PQisBusy(c))
            return 0;
        PGresult *r = PQgetResult(c);
        if (a->wait == 1) { /* the statement's results, up to the NULL that ends them */
            if (r) {
                PQclear(a->r);
                a->r = r;
            } else {
                a->wait = 2;
            }
            continue;
        }
        /* then its sync: libpq gives rows, NULL, then the sync; or, when the commit fails
         * (a deferred check, the disk), rows, NULL, the error, NULL, the sync */
        if (r && PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            PGresult *came = a->r;
            a->r = NULL;
            pipe_came(c, a, came, 0);
        } else if (r) {
            nulls = 0;
            PQclear(a->r);
            a->r = PQresultStatus(r) == PGRES_FATAL_ERROR ? r : (PQclear(r), NULL);
        } else if (++nulls > 1) { /* nothing more will come: not the pipeline sent */
            pipe_came(c, a, NULL, 1);
        }
    }
    if (a->r)
        checked(c, a->r); /* logs a failure */
    return 1;
}

/* After r failed: NULL when the connection still works (r stands), else r freed and c reset
 * (reconnected or not), for the caller to run its statement once more. */
static PGresult *reset_if_lost(PGconn *c, PGresult *r)
{
    if (db_ok(r) || PQstatus(c) == CONNECTION_OK)
        return r;
    PQclear(r);
    log_warn("database connection lost; reconnecting");
    reset_session(c);
    return NULL;
}

PGresult *db_exec_retry(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = reset_if_lost(c, db_exec(c, sql, n, params));
    return r ? r : db_exec(c, sql, n, params);
}

PGresult *db_exec_stmt_retry(PGconn *c, const struct db_stmt *st, const char *const *params)
{
    PGresult *r = reset_if_lost(c, db_exec_stmt(c, st, params));
    return r ? r : db_exec_stmt(c, st, params);
}

int db_command(PGconn *c, const char *sql)
{
    PGresult *r = db_exec(c, sql, 0, NULL);
    int rc = db_ok(r) ? 0 : -1;
    PQclear(r);
    return rc;
}

int db_command_params(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = db_exec(c, sql, n, params);
    int rc = db_ok(r) ? 0 : -1;
    PQclear(r);
    return rc;
}

bool db_ok(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

int db_fail(char *err, size_t errlen, const char *who, const char *what, PGconn *c)
{
    snprintf(err, errlen, "%s: %s: %s", who, what, PQerrorMessage(c));
    err[strcspn(err, "\n")] = '\0';
    return -1;
}

const char *db_sqlstate(const PGresult *r)
{
    const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return s ? s : "";
}
