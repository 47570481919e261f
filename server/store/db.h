/* db: a fixed pool of libpq connections shared by the HTTP threads, each opened when first
 * needed. Every statement is parameterised (PQexecParams). A connection is checked when taken
 * (a socket the server closed is noticed then) and a broken one is reset (PQreset); while the
 * database cannot be reached the pool retries with back-off (DB_RETRY_MIN_S doubling to
 * DB_RETRY_MAX_S, one attempt at a time) and db_acquire() fails at once in between, so that
 * callers answer 503 quickly. docs/operations.md, "When the database dies". */
#ifndef RINGMASTER_DB_H
#define RINGMASTER_DB_H

#include <libpq-fe.h>
#include <stdbool.h>

struct db_pool;

#define DB_RETRY_MIN_S 0.1 /* the first reconnect attempt after a loss */
#define DB_RETRY_MAX_S 2.0 /* the retry interval: the back-off stops growing here */

/* SQL text: the timestamp col as the API writes every time, in UTC with microseconds
 * ("2026-11-27T16:22:37.500000Z"). */
#define DB_TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* SQL text: a C constant (a macro's number) written into a statement, so that the C code and
 * its SQL read the same one. */
#define DB_NUM(x) DB_NUM_(x)
#define DB_NUM_(x) #x

/* Opens one connection to conninfo (a conninfo string or a URL) with the pool's settings:
 * connect_timeout 5 s, TCP keepalives (10 s idle, 5 s apart, 3 probes) and tcp_user_timeout
 * 30 s (a statement sent into a dead network fails then), the ISO DateStyle and no JIT
 * (jit=off) unless conninfo says otherwise; notices quiet.
 * Returns it (new; PQfinish it), or NULL with text in err. */
PGconn *db_connect(const char *conninfo, char *err, size_t errlen);

/* A pool of size connections to conninfo: the first is opened now, each other when first
 * taken (db_acquire() then connects it, under the same back-off as a reconnect). Returns the
 * pool, or NULL with text in err (the first connection's error). */
struct db_pool *db_create(const char *conninfo, unsigned size, char *err, size_t errlen);

/* Closes every connection and frees. All connections must have been released. NULL ok. */
void db_destroy(struct db_pool *p);

/* Takes a connection, waiting while all are busy; resets it when broken (or made before the
 * last db_set_restarting(p, false)). Returns NULL when the database cannot be reached, or
 * while the pool waits out its back-off (nothing is then held). */
PGconn *db_acquire(struct db_pool *p);

/* Gives a connection back, rolling back any transaction left open. NULL ok. */
void db_release(struct db_pool *p, PGconn *c);

/* What the pool knows of the database, for the health answer. */
struct db_status {
    bool up;          /* the last connection made or checked worked */
    bool restarting;  /* db_set_restarting(p, true): the server is being brought back */
    double down_s;    /* seconds since the loss was noticed (0 when up) */
    unsigned retries; /* failed reconnect attempts since then */
};
void db_status(struct db_pool *p, struct db_status *out);

/* The owner of the database (ringmasterd's supervisor of the embedded cluster) says it is
 * restarting it (true), or that it runs again (false): every connection made before is then
 * reset when next taken, and the back-off starts over, so the next request reconnects. */
void db_set_restarting(struct db_pool *p, bool restarting);

/* Runs sql with n text parameters (NULL for SQL NULL); text results. Never NULL: on an
 * allocation failure the result reports PGRES_FATAL_ERROR. The caller PQclear()s. */
PGresult *db_exec(PGconn *c, const char *sql, int n, const char *const *params);

/* A statement that runs often enough to be prepared: parsed once per database session
 * instead of once per call. name: unique in the process ("submit_insert"). PostgreSQL plans
 * a prepared statement anew for each call's parameters until a generic plan (made once,
 * for any parameters) looks no dearer; generic: 1 for a statement whose generic plan has
 * been checked to be as good, to be used from the first call (plan_cache_mode), where
 * PostgreSQL's estimates would keep planning it every time. */
struct db_stmt {
    const char *name;
    const char *sql;
    int nparams;
    int generic;
};

/* As db_exec() for st: prepares it first on a session that has not yet (a connection reset
 * since starts a new session, found by its backend's pid). A generic statement runs in one
 * round trip with plan_cache_mode = force_generic_plan around it (a pipeline: the setting,
 * the statement, then the setting reset to the session's default; undone with the
 * statement's transaction if it fails). */
PGresult *db_exec_stmt(PGconn *c, const struct db_stmt *st, const char *const *params);

/* db_exec_stmt() in two halves, so that the caller works while PostgreSQL runs st (a
 * statement that is not generic): db_send_stmt() prepares st when the session has not yet
 * and sends it without waiting; returns 0, or -1 when it did not send it (run it with
 * db_exec_stmt() then). db_stmt_result() waits for its answer, as db_exec_stmt() returns it.
 * Nothing else may run on c between the two. */
int db_send_stmt(PGconn *c, const struct db_stmt *st, const char *const *params);
PGresult *db_stmt_result(PGconn *c);

/* 1 when st is prepared on c's session (preparing it now when not), else 0. */
int db_stmt_prepared(PGconn *c, const struct db_stmt *st);

/* A statement sent without waiting for it, and its answer once come. */
struct db_answer {
    int wait;    /* 0: come; 1: its results are coming; 2 (in a pipeline): its sync */
    int lost;    /* come, in a pipeline, but whether it committed is not known: the
                  * connection was lost, or the results did not come as sent */
    PGresult *r; /* once come: the answer (NULL: it was never sent) */
};

/* Sends st (a statement that is not generic, prepared on c's session: db_stmt_prepared())
 * and a sync into c's pipeline (PQenterPipelineMode()): its own transaction, which commits
 * at the sync. Several may wait in the pipeline; PostgreSQL runs them one after the other.
 * Returns 0 (*a waits for its answer: db_pipe_read()), or -1 when it was not sent (*a has come,
 * empty). */
int db_pipe_send(PGconn *c, const struct db_stmt *st, const char *const *params,
                 struct db_answer *a);

/* Reads what has come of *a, the oldest statement waiting in c's pipeline, without waiting
 * for more (the caller waits for PQsocket() and calls PQconsumeInput()). Returns 1 once it
 * has come, at its sync: a->r its statement's last result, or the error its commit gave
 * after the statement's rows (nothing stored), a failure logged as db_exec() logs it; or
 * a->lost (a->r an error) when the connection was lost or the results did not come as sent.
 * Returns 0 while more must come. */
int db_pipe_read(PGconn *c, struct db_answer *a);

/* As db_exec(), for a statement that may safely run twice (a read): when it fails because
 * the connection broke (the server restarted, the backend was terminated), resets the
 * connection and runs it once more. */
PGresult *db_exec_retry(PGconn *c, const char *sql, int n, const char *const *params);

/* db_exec_retry() for a prepared statement (db_exec_stmt()). */
PGresult *db_exec_stmt_retry(PGconn *c, const struct db_stmt *st, const char *const *params);

/* Runs a statement without parameters and results (BEGIN, COMMIT); returns 0 or -1. */
int db_command(PGconn *c, const char *sql);

/* Runs a parameterised statement whose result is not needed; returns 0 or -1. */
int db_command_params(PGconn *c, const char *sql, int n, const char *const *params);

/* True when r is COMMAND_OK or TUPLES_OK. */
bool db_ok(const PGresult *r);

/* Writes "who: what: " and c's last error into err, on one line; returns -1, so that a
 * step's failure reads `return db_fail(err, errlen, "migrate", "applying 012", c);`. */
int db_fail(char *err, size_t errlen, const char *who, const char *what, PGconn *c);

/* The SQLSTATE of a failed result ("23505"), or "" when none. */
const char *db_sqlstate(const PGresult *r);

#endif
