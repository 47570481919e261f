/* wtest: what the worker end-to-end tests share on top of the harness. */
#ifndef RINGMASTER_WTEST_H
#define RINGMASTER_WTEST_H

#include <stddef.h>

/* Submits (as admin) a train-mlp job of steps steps with the given seed; sizes is the
 * GPU part of the body, e.g. "\"gpus\":2" or "\"gpus\":1,\"max_gpus\":2,\"elastic\":true".
 * Fails the test unless it is accepted; returns the job's id. */
long long wt_submit_mlp(long steps, const char *sizes, int seed);

/* The job's state now (static storage, overwritten by the next call). */
const char *wt_job_state(long long job);

/* Waits, polling, until the job's state is want or timeout_s passes. Returns 0 when it
 * got there, -1 when not (the test then decides what to print and asserts). */
int wt_await_state(long long job, const char *want, double timeout_s);

#endif
