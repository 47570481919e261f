/* migrate: migrate_run(), the embedded sql/ files applied in order under an advisory lock,
 * each in its own transaction and recorded in schema_migrations. */
#include "migrate.h"

#include <stdio.h>
#include <string.h>

#include "db.h"
#include "log.h"

/* pg_advisory_lock key: "RINGMIGR" read as a number, shared by every ringmasterd. */
#define MIGRATE_LOCK_KEY "5931037304087955794"

/* 1 when version is recorded, 0 when not, -1 on error. */
static int is_applied(PGconn *c, const char *version)
{
    const char *p[] = {version};
    PGresult *r = db_exec(c, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, p);
    int rc = db_ok(r) ? PQntuples(r) > 0 : -1;
    PQclear(r);
    return rc;
}

/* Applies one file in a transaction with its record. Returns 0 or -1. */
static int apply_one(PGconn *c, const struct migrate_file *f, char *err, size_t errlen)
{
    if (db_command(c, "BEGIN") < 0)
        return db_fail(err, errlen, "migrate", "BEGIN", c);
    /* The file is our own static text with many statements: the simple protocol runs them. */
    PGresult *r = PQexec(c, f->sql);
    int ok = r && db_ok(r);
    PQclear(r);
    if (!ok) {
        db_fail(err, errlen, "migrate", f->version, c);
        db_command(c, "ROLLBACK");
        return -1;
    }
    const char *p[] = {f->version};
    r = db_exec(c, "INSERT INTO schema_migrations (version) VALUES ($1)", 1, p);
    ok = db_ok(r);
    PQclear(r);
    if (!ok || db_command(c, "COMMIT") < 0) {
        db_fail(err, errlen, "migrate", f->version, c);
        db_command(c, "ROLLBACK");
        return -1;
    }
    log_info("migration %s applied", f->version);
    return 0;
}

static int apply_all(PGconn *c, const struct migrate_file *files, unsigned n, char *err,
                     size_t errlen)
{
    if (db_command(c, "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY,"
                      " applied_at timestamptz NOT NULL DEFAULT now())") < 0)
        return db_fail(err, errlen, "migrate", "schema_migrations", c);
    int applied = 0;
    for (unsigned i = 0; i < n; i++) {
        int done = is_applied(c, files[i].version);
        if (done < 0)
            return db_fail(err, errlen, "migrate", "reading schema_migrations", c);
        if (done)
            continue;
        if (apply_one(c, &files[i], err, errlen) < 0)
            return -1;
        applied++;
    }
    return applied;
}

int migrate_run(PGconn *c, const struct migrate_file *files, unsigned n, char *err, size_t errlen)
{
    if (db_command(c, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")") < 0)
        return db_fail(err, errlen, "migrate", "advisory lock", c);
    int rc = apply_all(c, files, n, err, errlen);
    db_command(c, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")");
    return rc;
}
