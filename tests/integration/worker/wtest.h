/* wtest: what the worker end-to-end tests share on top of the harness. */
#ifndef RINGMASTER_WTEST_H
#define RINGMASTER_WTEST_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* Submits (as admin) a train-mlp job of steps steps with the given seed; sizes is the
 * GPU part of the body, e.g. "\"gpus\":2" or "\"gpus\":1,\"max_gpus\":2,\"elastic\":true".
 * Fails the test unless it is accepted; returns the job's id. */
long long wt_submit_mlp(long steps, const char *sizes, int seed);

/* The job's state now (static storage, overwritten by the next call). */
const char *wt_job_state(long long job);

/* Waits, polling, until the job's state is want or timeout_s passes. Returns 0 when it
 * got there, -1 when not (the test then decides what to print and asserts). */
int wt_await_state(long long job, const char *want, double timeout_s);

/* Starts ringmaster-worker named name with gpus simulated GPUs, a heartbeat every second,
 * its own worker user and token (user "<name>-worker", made the first time, its token kept in
 * hx.dir/<name>.token for a restart), its state in hx.dir/<name> and its output appended to
 * hx.dir/worker.log. MPI is set up for one machine (vader). Returns the
 * worker's pid. */
pid_t wt_spawn_worker(const char *name, int gpus);

/* Stops *pid with SIGTERM (SIGKILL after 20 s), reaps it and zeroes *pid. Returns its exit
 * status (128 + signal when killed by one), -1 when it had to be killed, 0 when *pid was 0. */
int wt_stop_worker(pid_t *pid);

/* Waits (bounded, 30 s) until a node named name registered; returns its id. */
long long wt_wait_node(const char *name);

/* The job as GET /api/v1/jobs/{id} answers it (new). */
json_t *wt_job(long long job);

/* Every metric report of the job by step (GET .../metrics, the items array; new). */
json_t *wt_metrics(long long job);

/* Prints the tail of the workers' log and of the jobs' logs on stderr (after a failure). */
void wt_dump_logs(void);

#endif
