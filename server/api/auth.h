/* auth: bearer tokens and roles. A token is "rm_" and 64 hex digits from getrandom(); only
 * its SHA-256 is stored (PostgreSQL's sha256(), so no crypto library is linked). A fast
 * unsalted hash is enough because tokens carry 256 random bits: there is nothing to guess. */
#ifndef RINGMASTER_AUTH_H
#define RINGMASTER_AUTH_H

#include <libpq-fe.h>
#include <stddef.h>

enum auth_role { AUTH_ADMIN = 1, AUTH_USER = 2, AUTH_WORKER = 4 };

#define AUTH_TOKEN_LEN 67 /* "rm_" + 64 hex digits */
#define AUTH_NAME_MAX 64

struct auth_user {
    long long id;
    char name[AUTH_NAME_MAX + 1];
    enum auth_role role;
};

/* "admin", "user", "worker"; NULL for anything else. */
const char *auth_role_name(enum auth_role role);

/* Returns 0, or -1 for an unknown name. */
int auth_role_parse(const char *name, enum auth_role *out);

/* Fills buf (at least AUTH_TOKEN_LEN + 1 bytes) with a new token. Returns 0 or -1 (errno). */
int auth_token_new(char *buf, size_t len);

/* The token of an Authorization header value ("Bearer TOKEN") when it has the right shape
 * (AUTH_TOKEN_LEN characters, "rm_" and hex digits), else NULL. */
const char *auth_bearer_token(const char *authorization);

/* Checks an Authorization header value ("Bearer TOKEN"). Returns 0 and fills *who, -1 when
 * missing, malformed or unknown (401), -2 on a database error. */
int auth_check(PGconn *c, const char *authorization, struct auth_user *who);

/* Creates a user with a new token (written to token, AUTH_TOKEN_LEN + 1 bytes) and its id.
 * Returns 0, -1 when the name is taken (409), -2 on a database error. */
int auth_user_create(PGconn *c, const char *name, enum auth_role role, char *token, long long *id);

/* On a database without an admin: makes user "admin", writes its token to
 * state_dir/admin.token (mode 0600) and prints it on stdout. Returns 0 (also when an admin
 * exists), or -1 with text in err. */
int auth_bootstrap(PGconn *c, const char *state_dir, char *err, size_t errlen);

#endif
