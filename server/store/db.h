/* db: a fixed pool of libpq connections shared by the HTTP threads. Every statement is
 * parameterised (PQexecParams); a broken connection is reset (PQreset) when next taken. */
#ifndef RINGMASTER_DB_H
#define RINGMASTER_DB_H

#include <libpq-fe.h>
#include <stdbool.h>

struct db_pool;

/* Opens size connections to conninfo. Returns the pool, or NULL with text in err (the
 * first connection's error). */
struct db_pool *db_create(const char *conninfo, unsigned size, char *err, size_t errlen);

/* Closes every connection and frees. All connections must have been released. NULL ok. */
void db_destroy(struct db_pool *p);

/* Takes a connection, waiting while all are busy; resets it when broken. Returns NULL when
 * the database cannot be reached (nothing is then held). */
PGconn *db_acquire(struct db_pool *p);

/* Gives a connection back, rolling back any transaction left open. NULL ok. */
void db_release(struct db_pool *p, PGconn *c);

/* Runs sql with n text parameters (NULL for SQL NULL); text results. Never NULL: on an
 * allocation failure the result reports PGRES_FATAL_ERROR. The caller PQclear()s. */
PGresult *db_exec(PGconn *c, const char *sql, int n, const char *const *params);

/* As db_exec(), for a statement that may safely run twice (a read): when it fails because
 * the connection broke (the server restarted, the backend was terminated), resets the
 * connection and runs it once more. */
PGresult *db_exec_retry(PGconn *c, const char *sql, int n, const char *const *params);

/* Runs a statement without parameters and results (BEGIN, COMMIT); returns 0 or -1. */
int db_command(PGconn *c, const char *sql);

/* Runs a parameterised statement whose result is not needed; returns 0 or -1. */
int db_command_params(PGconn *c, const char *sql, int n, const char *const *params);

/* True when r is COMMAND_OK or TUPLES_OK. */
bool db_ok(const PGresult *r);

/* The SQLSTATE of a failed result ("23505"), or "" when none. */
const char *db_sqlstate(const PGresult *r);

#endif
