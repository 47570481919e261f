/* pgcluster: a private PostgreSQL cluster under a state directory, for the
 * embedded mode of ringmasterd and for test harnesses.
 *
 * Data lives in STATE_DIR/pg and the server listens only on a unix socket in
 * that directory (no TCP port). PostgreSQL refuses to run as root, so when the
 * calling process is root the cluster's files and processes belong to an
 * unprivileged system user: $RINGMASTER_PG_USER, else `postgres` (made by
 * Debian's postgresql package). The PostgreSQL binaries are taken from
 * $RINGMASTER_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin.
 * $RINGMASTER_PG_OPTIONS, when set, is appended to the server's options. */
#ifndef RINGMASTER_PGCLUSTER_H
#define RINGMASTER_PGCLUSTER_H

#include <stddef.h>

struct pgcluster;

/* Prepares (but does not start) the cluster under state_dir, creating the
 * directory if needed. Returns a new cluster, or NULL with text in err. */
struct pgcluster *pgcluster_create(const char *state_dir, char *err, size_t errlen);

/* Runs initdb on first use, starts the server unless it already runs (a
 * server left behind by a killed process is reused; a stale pid file is
 * PostgreSQL's to clear), waits until it accepts connections, and creates the
 * database "ringmaster" if missing. Server output is appended to
 * STATE_DIR/postgres.log. Returns 0, or -1 with text in err. */
int pgcluster_start(struct pgcluster *c, char *err, size_t errlen);

/* libpq conninfo of the database "ringmaster" (borrowed from c). */
const char *pgcluster_conninfo(const struct pgcluster *c);

/* Writes the conninfo of database dbname into buf. Returns 0, or -1 if it
 * does not fit. */
int pgcluster_conninfo_db(const struct pgcluster *c, const char *dbname, char *buf, size_t len);

/* The data directory (borrowed). */
const char *pgcluster_datadir(const struct pgcluster *c);

/* The postmaster's pid from DATADIR/postmaster.pid, or 0 when there is no such file or it
 * names no live process (a server killed with -9 leaves its file behind). */
long pgcluster_postmaster_pid(const struct pgcluster *c);

/* Stops the server (fast shutdown: sessions are ended, committed data kept).
 * Returns 0 (also when it was not running), or -1. */
int pgcluster_stop(struct pgcluster *c);

/* Frees c without stopping the server. NULL is a no-op. */
void pgcluster_destroy(struct pgcluster *c);

#endif
