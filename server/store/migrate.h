/* migrate: applies the numbered schema files of sql/ (embedded at build time) in order, each
 * in its own transaction and recorded in schema_migrations, under an advisory lock so that
 * two servers starting together apply nothing twice. */
#ifndef RINGMASTER_MIGRATE_H
#define RINGMASTER_MIGRATE_H

#include <libpq-fe.h>
#include <stddef.h>

struct migrate_file {
    const char *version; /* "001_core": the file name without .sql */
    const char *sql;
};

/* The embedded files, sorted by version (generated from sql/ by server/embed-sql.sh). */
extern const struct migrate_file migrate_files[];
extern const unsigned migrate_nfiles;

/* Applies the files in files[0..n) not yet recorded. Returns the number applied, or -1 with
 * text in err (the failing file's transaction is rolled back; earlier ones stay). */
int migrate_run(PGconn *c, const struct migrate_file *files, unsigned n, char *err, size_t errlen);

#endif
