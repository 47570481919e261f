/* ctl: the real ringctl binary run by ringctl's integration tests (test_ringctl_*.c): started
 * with the test server's URL and a token, its exit status, stdout and stderr read back; and the
 * server-side steps those tests share (a node, a running job). */
#ifndef RINGMASTER_TEST_CTL_H
#define RINGMASTER_TEST_CTL_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* What one run of ringctl did. */
struct ctl_run {
    int code;      /* exit status, 128+signal when killed */
    char out[16384];
    char err[4096];
};

/* Reads the file at path into buf (NUL-terminated, at most len - 1 bytes; "" when it cannot
 * be opened). */
void ctl_read_file(const char *path, char *buf, size_t len);

/* Starts ringctl argv (NULL-terminated) with RINGMASTER_URL=url and RINGMASTER_TOKEN=token
 * (each unset when NULL), its output into the test's ctl.out and ctl.err. Returns its pid. */
pid_t ctl_spawn(const char *url, const char *token, char **argv);

/* Waits for the ringctl of ctl_spawn (killing it after 120 s) and reads what it did. */
void ctl_reap(struct ctl_run *r, pid_t pid);

/* Runs ringctl argv (NULL-terminated) as ctl_spawn does and waits for it. */
void ctl_argv(struct ctl_run *r, const char *url, const char *token, char **argv);

/* ringctl with the test server's URL and token, and the arguments up to NULL. The run is
 * one static, overwritten by the next call. */
struct ctl_run *ctl_as(const char *token, ...);

/* ringctl with the test server's URL and the admin token. */
#define ctl(...) ctl_as(hx.admin, __VA_ARGS__, NULL)

/* Parses the run's stdout as JSON (new), failing the test otherwise. */
json_t *ctl_out_json(const struct ctl_run *r);

/* Registers node h1 with two GPUs as a new worker; copies its token into w (128 bytes). */
void ctl_one_node(char *w);

/* Waits (bounded) until the job is in state; returns the job (new). */
json_t *ctl_wait_state(long long id, const char *state);

/* Submits a 1-GPU job, waits for its start and reports it RUNNING as the worker of the only
 * node, where the scheduler started it (a worker reports only for the jobs of its nodes). */
long long ctl_running_job(const char *worker, const char *name);

#endif
