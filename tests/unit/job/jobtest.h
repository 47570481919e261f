/* Helpers shared by the job tests: temporary directories, child processes bounded in
 * time, and a loop that drives a jobchan while a child runs. */
#ifndef RINGMASTER_JOBTEST_H
#define RINGMASTER_JOBTEST_H

#include <stddef.h>
#include <sys/types.h>

#include "jobchan.h"

/* Reports gathered while driving a channel. */
struct series {
    struct jobchan_report r[8192];
    size_t n;
};

/* Called on every turn of jobtest_drive(), after the new reports were added to s; may give
 * the job commands. */
typedef void (*jobtest_hook_f)(struct jobchan *jc, struct series *s, void *ctx);

/* Creates a fresh directory /tmp/ringjob-test-XXXXXX and writes its path into buf. */
void jobtest_tmpdir(char *buf, size_t len);

/* Removes a directory made by jobtest_tmpdir() and everything under it. */
void jobtest_rmtree(const char *dir);

/* $BUILD (default "build") + "/" + rel, into buf. */
void jobtest_build_path(char *buf, size_t len, const char *rel);

/* Starts argv in its own process group with stdout and stderr to log (appended), with
 * the environment of the test plus RINGJOB_* pointing at sock/ckdir (sock NULL: no
 * RINGJOB_SOCKET) and what OpenMPI needs in a container as root. */
pid_t jobtest_spawn(char *const argv[], const char *sock, const char *ckdir, const char *log);

/* Drives jc until the child exits (and its connection closed) or timeout_s passes; calls
 * hook each turn. Returns the child's exit status, or -1 on timeout (the child's process
 * group is killed) or abnormal end. */
int jobtest_drive(struct jobchan *jc, pid_t pid, double timeout_s, struct series *s,
                  jobtest_hook_f hook, void *ctx);

/* Mean loss of reports [from, from + count) of s. */
double jobtest_mean_loss(const struct series *s, size_t from, size_t count);

/* Prints the log file to stderr (for a failing test). */
void jobtest_dump(const char *log);

double jobtest_now(void);

/* A job's channel in a fresh directory: its socket, its checkpoint folder, the worker's end. */
struct jobtest_fixture {
    char dir[64];
    char sock[128];
    char ckdir[128];
    struct jobchan *jc;
};

/* Makes f's directory and opens its channel (a failed assertion when it cannot). */
void jobtest_fixture_up(struct jobtest_fixture *f);

/* Forks a job running fn with f's channel in its environment (RINGJOB_SOCKET,
 * RINGJOB_CHECKPOINT_DIR, RINGJOB_JOB_ID "job 42", RINGJOB_WORLD_SIZE 1); the child exits
 * with fn's answer. Returns its pid. */
pid_t jobtest_fork(const struct jobtest_fixture *f, int (*fn)(void));

#endif
