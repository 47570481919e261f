/* harness: integration tests against the real thing. One PostgreSQL cluster per test
 * binary (started by a report hook in Criterion's runner process, stopped when it ends;
 * its place is passed to the test processes in the environment), a fresh database (a copy
 * of a template that `ringmasterd --migrate-only` brought to today's schema once per binary)
 * and a fresh ringmasterd process per test on a free loopback port, HTTP through libcurl. */
#ifndef RINGMASTER_HARNESS_H
#define RINGMASTER_HARNESS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* The server of the running test. */
struct hx_server {
    pid_t pid;
    int port;
    char dir[256];       /* its state dir (admin.token, server.log, www/) */
    char dbname[64];     /* its database's name */
    char conninfo[1024]; /* its database, or "" in embedded mode */
    char admin[128];     /* the admin token */
};

extern struct hx_server hx;

/* Criterion .init/.fini of a suite: a fresh database and server for each test; the fini
 * stops a server still running and removes the test's files. (Criterion does not count an
 * assertion made in a fini, so the clean exit is checked by hx_finish().) */
void hx_setup(void);
void hx_teardown(void);

/* The last call of each test: stops the server with SIGTERM and fails the test unless it
 * exits 0, so a sanitizer finding at shutdown (a leak) fails the test. */
void hx_finish(void);

/* Seconds on the monotonic clock, for the tests' bounded waits. */
double hx_now(void);

/* Runs sql on the test's own database (hx.conninfo) and returns its result (new; the
 * caller PQclears it). Fails the test when it cannot connect or the statement fails. */
struct pg_result *hx_sql(const char *sql);

/* hx_sql, dropping the result. */
void hx_sql_do(const char *sql);

/* The first cell of sql's answer as a number; -1 when there is no row or it is NULL. */
double hx_sql_num(const char *sql);

/* Runs sql (a command) on the cluster's "postgres" database; fails the test on error. */
void hx_admin_sql(const char *sql);

/* A loopback port that was free a moment ago. */
int hx_free_port(void);

/* Starts ringmasterd on hx.port with the state dir hx.dir, and with --database-url
 * hx.conninfo unless it is "" (embedded mode). Waits (bounded) until health answers and
 * reads the admin token. Sets hx.pid. */
void hx_start_server(void);

/* More options for ringmasterd (NULL-terminated), for the next hx_start_server(). */
extern const char *hx_server_args[8];

/* Sends sig to the server and waits up to timeout_s. Returns the exit status (128+signal
 * when killed by one), or -1 when it did not end in time (it is then killed). */
int hx_stop_server(int sig, double timeout_s);

struct hx_resp {
    long status;
    char content_type[128];
    char allow[128];
    char headers[4096]; /* every header line as received (cut at its size) */
    char *body;   /* NUL-terminated, "" when empty */
    json_t *json; /* the body decoded, or NULL */
};

/* One request. token and content_type may be NULL; body may be NULL (no body) and is sent
 * with its length len (chunked when len is (size_t)-1). extra_header: NULL or "Name: value".
 * Fails the test when the server cannot be reached. The caller hx_free()s. */
struct hx_resp *hx_call(const char *method, const char *path, const char *token,
                        const char *content_type, const char *body, size_t len,
                        const char *extra_header);

/* The source address of hx_call's requests: NULL (the default) or a local address such as
 * "127.0.0.2" (any 127.0.0.0/8 address works on Linux loopback). */
extern const char *hx_source;

/* The value of header name (case-insensitive) of r into buf; NULL when absent. */
const char *hx_header(const struct hx_resp *r, const char *name, char *buf, size_t len);

/* Shorthand: JSON body (or NULL), application/json, the given token. */
struct hx_resp *hx_json(const char *method, const char *path, const char *token, const char *body);

/* Asserts status, then returns the decoded JSON (new reference) and frees r. */
json_t *hx_expect_json(struct hx_resp *r, long status);

/* Asserts status and a problem document with that status, a title and a detail; when
 * field is not NULL, that errors[] or detail names it. Frees r. */
void hx_expect_problem(struct hx_resp *r, long status, const char *field);

void hx_free(struct hx_resp *r);

/* Submits {"name": name, "command": ["true"], "gpus": gpus} as token; returns the job id. */
long long hx_submit(const char *token, const char *name, int gpus);

/* The value of the sample named exactly name (with its labels) in GET /metrics; -1 when
 * absent. */
double hx_metric(const char *name);

/* The job's state as GET /api/v1/jobs/{id} answers it to the admin (static storage). */
const char *hx_job_state(long long id);

/* A second ringmasterd beside the test's, named name (--name), on the same database and
 * state folder (its admin token) and another port: the test's server is saved in *first and
 * hx becomes the second, which hx_teardown() stops; the first stays the caller's to stop. */
void hx_second_server(const char *name, struct hx_server *first);

/* Creates a user with role; copies its token into token (128 bytes). */
void hx_user(const char *name, const char *role, char *token);

/* The full list of jobs (every page) as one compact JSON text (new; free()), without the
 * figures that background threads rewrite on their own as time passes (the round's
 * predictions and pending reason, the forecast thread's forecast): what callers compare is
 * what was stored, and a forecast pass between two reads is no change to it. */
char *hx_all_jobs(const char *token);

#endif
