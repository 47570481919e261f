#include "db.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

struct db_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    unsigned size;
    unsigned nfree;
    PGconn **conns;  /* all connections */
    unsigned *gens;  /* the generation each of conns was (re)made in */
    PGconn **idle;   /* the free ones, a stack of nfree */
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

PGconn *db_connect(const char *conninfo, char *err, size_t errlen)
{
    /* Later keywords win, so what conninfo says overrides these defaults. */
    const char *const keys[] = {"connect_timeout",     "keepalives_idle",
                                "keepalives_interval", "keepalives_count",
                                "tcp_user_timeout",    "fallback_application_name",
                                "dbname",              NULL};
    const char *const vals[] = {"5", "10", "5", "3", "30000", "ringmasterd", conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "database: %s", c ? PQerrorMessage(c) : "out of memory");
        err[strcspn(err, "\n")] = '\0';
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    return c;
}

struct db_pool *db_create(const char *conninfo, unsigned size, char *err, size_t errlen)
{
    struct db_pool *p = calloc(1, sizeof(*p));
    if (!p || size == 0)
        goto nomem;
    p->conns = calloc(size, sizeof(*p->conns));
    p->gens = calloc(size, sizeof(*p->gens));
    p->idle = calloc(size, sizeof(*p->idle));
    if (!p->conns || !p->gens || !p->idle)
        goto nomem;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    p->size = size;
    p->up = true;
    p->backoff = DB_RETRY_MIN_S;
    for (unsigned i = 0; i < size; i++) {
        p->conns[i] = db_connect(conninfo, err, errlen);
        if (!p->conns[i]) {
            db_destroy(p);
            return NULL;
        }
        p->idle[p->nfree++] = p->conns[i];
    }
    return p;
nomem:
    snprintf(err, errlen, "database pool: out of memory or size 0");
    if (p) {
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
    free(p->conns);
    free(p->gens);
    free(p->idle);
    free(p);
}

/* The slot of c in p->conns (under lock or not: conns never changes). */
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

/* Resets c unless the back-off says wait (or the owner restarts the server, or another
 * thread is trying already). Returns 0 when c works again, -1 when not. */
static int reconnect(struct db_pool *p, PGconn *c)
{
    pthread_mutex_lock(&p->lock);
    double now = now_s();
    bool gated = !p->up && (p->restarting || p->trying || now < p->retry_at);
    bool claim = !gated && !p->up;
    p->trying = p->trying || claim;
    pthread_mutex_unlock(&p->lock);
    if (gated)
        return -1;
    PQreset(c);
    bool ok = PQstatus(c) == CONNECTION_OK;
    if (ok)
        PQsetNoticeProcessor(c, quiet_notice, NULL);
    pthread_mutex_lock(&p->lock);
    now = now_s();
    if (claim)
        p->trying = false;
    if (!ok) {
        attempt_failed(p, c, now);
    } else {
        p->gens[slot_of(p, c)] = p->gen;
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
    PGconn *c = p->idle[--p->nfree];
    bool stale = p->gens[slot_of(p, c)] != p->gen;
    pthread_mutex_unlock(&p->lock);
    if (!stale && idle_conn_alive(c))
        return c;
    if (reconnect(p, c) == 0)
        return c;
    db_release(p, c);
    return NULL;
}

void db_status(struct db_pool *p, struct db_status *out)
{
    pthread_mutex_lock(&p->lock);
    out->up = p->up;
    out->restarting = p->restarting;
    out->down_s = p->up ? 0 : now_s() - p->down_at;
    out->retries = p->retries;
    pthread_mutex_unlock(&p->lock);
}

void db_set_restarting(struct db_pool *p, bool restarting)
{
    pthread_mutex_lock(&p->lock);
    mark_down(p, now_s());
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
        mark_down(p, now_s());
    p->idle[p->nfree++] = c;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

PGresult *db_exec(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    if (!r)
        r = PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
    if (!db_ok(r))
        log_warn("sql failed (%s): %s", db_sqlstate(r), PQresultErrorMessage(r));
    return r;
}

/* Which statements each session has prepared: an entry per connection, its backend's pid
 * (another pid: a new session, nothing prepared) and the statements, under prepared_lock. */
#define DB_PREPARED_CONNS 256
#define DB_PREPARED_STMTS 16

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

PGresult *db_exec_stmt(PGconn *c, const struct db_stmt *st, const char *const *params)
{
    if (PQtransactionStatus(c) == PQTRANS_INERROR || !prepare_once(c, st))
        return db_exec(c, st->sql, st->nparams, params);
    PGresult *r = PQexecPrepared(c, st->name, st->nparams, params, NULL, NULL, 0);
    if (!r)
        r = PQmakeEmptyPGresult(c, PGRES_FATAL_ERROR);
    if (!db_ok(r))
        log_warn("sql failed (%s): %s", db_sqlstate(r), PQresultErrorMessage(r));
    return r;
}

/* After r failed: NULL when the connection still works (r stands), else r freed and c reset
 * (reconnected or not), for the caller to run its statement once more. */
static PGresult *reset_if_lost(PGconn *c, PGresult *r)
{
    if (db_ok(r) || PQstatus(c) == CONNECTION_OK)
        return r;
    PQclear(r);
    log_warn("database connection lost; reconnecting");
    PQreset(c);
    if (PQstatus(c) == CONNECTION_OK)
        PQsetNoticeProcessor(c, quiet_notice, NULL);
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

const char *db_sqlstate(const PGresult *r)
{
    const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return s ? s : "";
}
