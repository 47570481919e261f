/* Two real workers (one simulated GPU each, "sim-a" registered first, "sim-b") beside a real
 * ringmasterd under policy fifo with a 5 s node timeout, sharing one checkpoint folder
 * (RINGMASTER_CHECKPOINT_ROOT, which the server inherits): the setting of the stale-copy and
 * checkpoint-generation suites, which freeze worker A's daemon (SIGSTOP) while its job's
 * ranks run on. */
#ifndef RINGMASTER_TWOWORKERS_H
#define RINGMASTER_TWOWORKERS_H

#include <sys/types.h>

struct tw {
    pid_t worker_a, worker_b;
    long long node_a, node_b;
    char ckpt_root[64];
};

extern struct tw tw;

/* Starts it all (the checkpoint folder a fresh one named after prefix). */
void tw_setup(const char *prefix);

/* Thaws A, stops both workers (dumping the logs when one did not exit cleanly), the server,
 * and removes the checkpoint folder. */
void tw_teardown(void);

/* The node of the job's first allocated GPU, 0 when it holds none. */
long long tw_allocated_on(long long job);

/* Waits (bounded) until cond(x, arg) holds; fails with what (of job) after timeout_s. */
void tw_await(int (*cond)(long long, long long), long long x, long long arg, double timeout_s,
              const char *what, long long job);

/* Conditions for tw_await: the node's API state is DOWN (down = 1) or UP (down = 0); the job
 * RUNNING with its GPUs on node; at least n reports stored; no process of the job under
 * worker A. */
int tw_node_is(long long node, long long down);
int tw_runs_on(long long job, long long node);
int tw_reported(long long job, long long n);
int tw_gone_on_a(long long job, long long unused);

/* 1 when the worker's log of the job holds needle. */
int tw_log_has(const char *worker, long long job, const char *needle);

#endif
