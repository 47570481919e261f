/* auth: bearer tokens and roles: new tokens from getrandom(), their check against the
 * users table's SHA-256, user creation, and the first admin's token file. */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "store/db.h"

/* pg_advisory_xact_lock key for the first admin ("RINGADMN"). */
#define BOOTSTRAP_LOCK_KEY "5931037303805824334"

static const char *const role_names[] = {
    [AUTH_ADMIN] = "admin", [AUTH_USER] = "user", [AUTH_WORKER] = "worker"};

const char *auth_role_name(enum auth_role role)
{
    if (role != AUTH_ADMIN && role != AUTH_USER && role != AUTH_WORKER)
        return NULL;
    return role_names[role];
}

int auth_role_parse(const char *name, enum auth_role *out)
{
    static const enum auth_role all[] = {AUTH_ADMIN, AUTH_USER, AUTH_WORKER};
    for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(name, role_names[all[i]]) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return -1;
}

int auth_token_new(char *buf, size_t len)
{
    unsigned char raw[32];
    if (len < AUTH_TOKEN_LEN + 1) {
        errno = EINVAL;
        return -1;
    }
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno != EINTR)
            return -1;
        got += n > 0 ? (size_t)n : 0;
    }
    memcpy(buf, "rm_", 3);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(buf + 3 + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

const char *auth_bearer_token(const char *authorization)
{
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return NULL;
    const char *t = authorization + 7;
    while (*t == ' ')
        t++;
    if (strlen(t) != AUTH_TOKEN_LEN || strncmp(t, "rm_", 3) != 0)
        return NULL;
    if (strspn(t + 3, "0123456789abcdef") != AUTH_TOKEN_LEN - 3)
        return NULL;
    return t;
}

int auth_check(PGconn *c, const char *authorization, struct auth_user *who)
{
    const char *token = auth_bearer_token(authorization);
    if (!token)
        return -1;
    static const struct db_stmt lookup = {"auth_token",
                                          "SELECT id, name, role FROM users"
                                          " WHERE token_hash = sha256(convert_to($1, 'UTF8'))",
                                          1, 0};
    const char *p[] = {token};
    PGresult *r = db_exec_stmt_retry(c, &lookup, p);
    int rc = !db_ok(r) ? -2 : PQntuples(r) != 1 ? -1 : 0;
    if (rc == 0) {
        who->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        snprintf(who->name, sizeof(who->name), "%s", PQgetvalue(r, 0, 1));
        if (auth_role_parse(PQgetvalue(r, 0, 2), &who->role) < 0)
            rc = -1;
    }
    PQclear(r);
    return rc;
}

int auth_user_create(PGconn *c, const char *name, enum auth_role role, char *token, long long *id)
{
    if (auth_token_new(token, AUTH_TOKEN_LEN + 1) < 0)
        return -2;
    const char *p[] = {name, auth_role_name(role), token};
    PGresult *r = db_exec(c,
                          "INSERT INTO users (name, role, token_hash)"
                          " VALUES ($1, $2, sha256(convert_to($3, 'UTF8')))"
                          " ON CONFLICT (name) DO NOTHING RETURNING id",
                          3, p);
    int rc = !db_ok(r) ? -2 : PQntuples(r) != 1 ? -1 : 0;
    if (rc == 0)
        *id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

static int write_token_file(const char *path, const char *token, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    ssize_t n = write(fd, token, strlen(token));
    ssize_t m = write(fd, "\n", 1);
    int bad = n != (ssize_t)strlen(token) || m != 1 || fsync(fd) < 0;
    if (close(fd) < 0 || bad || rename(tmp, path) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Inside the bootstrap transaction: 1 when an admin exists, 0 when not, -1 on error. */
static int admin_exists(PGconn *c)
{
    PGresult *r = db_exec(c,
                          "SELECT pg_advisory_xact_lock(" BOOTSTRAP_LOCK_KEY "),"
                          " EXISTS (SELECT 1 FROM users WHERE role = 'admin')",
                          0, NULL);
    int rc = db_ok(r) ? strcmp(PQgetvalue(r, 0, 1), "t") == 0 : -1;
    PQclear(r);
    return rc;
}

static int bootstrap_tx(PGconn *c, const char *path, char *token, char *err, size_t errlen)
{
    int exists = admin_exists(c);
    if (exists != 0)
        return exists < 0 ? -1 : 1;
    long long id;
    int rc = auth_user_create(c, "admin", AUTH_ADMIN, token, &id);
    if (rc == -1)
        snprintf(err, errlen, "a user named admin exists without the admin role");
    if (rc < 0)
        return -1;
    /* The file is written before the commit: a token is never stored without its file. */
    return write_token_file(path, token, err, errlen);
}

int auth_bootstrap(PGconn *c, const char *state_dir, char *err, size_t errlen)
{
    char path[4096];
    char token[AUTH_TOKEN_LEN + 1];
    snprintf(path, sizeof(path), "%s/admin.token", state_dir);
    snprintf(err, errlen, "database error: %s", PQerrorMessage(c));
    if (db_command(c, "BEGIN") < 0)
        return -1;
    int rc = bootstrap_tx(c, path, token, err, errlen);
    if (rc != 0) {
        db_command(c, "ROLLBACK");
        if (rc > 0 && access(path, F_OK) != 0)
            log_info("an admin exists; its token is not in %s (only its hash is stored: use "
                     "the admin.token of the first start, or make another admin)",
                     path);
        return rc < 0 ? -1 : 0;
    }
    if (db_command(c, "COMMIT") < 0) {
        snprintf(err, errlen, "commit of the admin user: %s", PQerrorMessage(c));
        return -1;
    }
    log_info("admin user created; token in %s", path);
    printf("admin token: %s\n", token);
    fflush(stdout);
    return 0;
}
