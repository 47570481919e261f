#include "db.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct db_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    unsigned size;
    unsigned nfree;
    PGconn **conns; /* all connections */
    PGconn **idle;  /* the free ones, a stack of nfree */
};

static void quiet_notice(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static PGconn *open_conn(const char *conninfo, char *err, size_t errlen)
{
    PGconn *c = PQconnectdb(conninfo);
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
    p->idle = calloc(size, sizeof(*p->idle));
    if (!p->conns || !p->idle)
        goto nomem;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    p->size = size;
    for (unsigned i = 0; i < size; i++) {
        p->conns[i] = open_conn(conninfo, err, errlen);
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
    free(p->idle);
    free(p);
}

PGconn *db_acquire(struct db_pool *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->nfree == 0)
        pthread_cond_wait(&p->freed, &p->lock);
    PGconn *c = p->idle[--p->nfree];
    pthread_mutex_unlock(&p->lock);
    if (PQstatus(c) != CONNECTION_OK) {
        log_warn("database connection lost; reconnecting");
        PQreset(c);
        if (PQstatus(c) != CONNECTION_OK) {
            log_error("database reconnect failed: %s", PQerrorMessage(c));
            db_release(p, c);
            return NULL;
        }
        PQsetNoticeProcessor(c, quiet_notice, NULL);
    }
    return c;
}

void db_release(struct db_pool *p, PGconn *c)
{
    if (!c)
        return;
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
        db_command(c, "ROLLBACK");
    pthread_mutex_lock(&p->lock);
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

PGresult *db_exec_retry(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = db_exec(c, sql, n, params);
    if (db_ok(r) || PQstatus(c) == CONNECTION_OK)
        return r;
    PQclear(r);
    log_warn("database connection lost; reconnecting");
    PQreset(c);
    if (PQstatus(c) == CONNECTION_OK)
        PQsetNoticeProcessor(c, quiet_notice, NULL);
    return db_exec(c, sql, n, params);
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
