/* wtest: what the worker end-to-end tests share on top of the harness. */
#ifndef RINGMASTER_WTEST_H
#define RINGMASTER_WTEST_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* The ASAN_OPTIONS entry every test job carries in its env (a JSON member, no braces), for
 * ranks of a sanitized build. */
#define WT_ASAN_ENV "\"ASAN_OPTIONS\":\"detect_leaks=0:protect_shadow_gap=0\""

/* Submits (as admin) the job of the JSON body; fails the test unless it is accepted (201).
 * Returns the job's id. */
long long wt_post_job(const char *body);

/* Submits (as admin) a train-mlp job of steps steps with the given seed; sizes is the
 * GPU part of the body, e.g. "\"gpus\":2" or "\"gpus\":1,\"max_gpus\":2,\"elastic\":true".
 * Fails the test unless it is accepted; returns the job's id. */
long long wt_submit_mlp(long steps, const char *sizes, int seed);

/* The job's state now (static storage, overwritten by the next call). */
const char *wt_job_state(long long job);

/* Waits, polling, until the job's state is want or timeout_s passes. Returns 0 when it
 * got there, -1 when not (the test then decides what to print and asserts). */
int wt_await_state(long long job, const char *want, double timeout_s);

/* How wt_start_worker starts a worker. */
struct wt_worker {
    int gpus;          /* simulated GPUs (--simulate-gpus) */
    const char *model; /* their model (--simulate-gpu-model); NULL: the daemon's default */
    const char *log;   /* file in hx.dir its output is appended to; NULL: "worker.log" */
    int tcp;           /* MPI over TCP on loopback only (two "hosts" on one machine share
                        * /dev/shm, where vader's segments would collide); 0: vader */
    const char *action_timeout; /* --action-timeout SECONDS; NULL: the daemon's default */
    const char *servers;        /* --server URL[,URL...]; NULL: the test's server (hx.port) */
    const char *path;           /* its PATH; NULL: the test's */
};

/* Starts ringmaster-worker named name as w says, with a heartbeat every second, its own
 * worker user and token (user "<name>-worker", made the first time, its token kept in
 * hx.dir/<name>.token for a restart) and its state in hx.dir/<name>. Returns its pid. */
pid_t wt_start_worker(const char *name, const struct wt_worker *w);

/* Appends line to the worker's fault file (hx.dir/<name>.faults, its --fault-file, which
 * wt_start_worker gives every worker): e.g. "gpu 0 xid 79", "gpu 0 ok" (worker/daemon/gpuhealth.h). */
void wt_fault(const char *worker, const char *line);

/* wt_start_worker with gpus GPUs, the default model, hx.dir/worker.log and vader. */
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

/* Fails the test unless the job's state becomes want within timeout_s (wt_await_state);
 * before failing, dump (when not NULL, e.g. wt_dump_logs) prints what helps. */
void wt_expect_state(long long job, const char *want, double timeout_s, void (*dump)(void));

/* Sets the live scheduler's configuration: PUT /api/v1/scheduler with the JSON body, which
 * must be answered 200. */
void wt_scheduler(const char *body);

/* The number in the first cell of the SQL that fmt makes with arg (hx_sql_num). */
long long wt_db_int(const char *fmt, long long arg);

/* Cancels the job (POST /api/v1/jobs/{id}/cancel, which must answer 200); does not wait. */
void wt_cancel(long long job);

/* The job's log as GET /api/v1/jobs/{id}/log answers it (must be 200; malloc'd). */
char *wt_job_log(long long job);

/* Makes a fresh directory /tmp/<prefix>-XXXXXX into buf (len >= strlen(prefix) + 12) and
 * exports RINGMASTER_CHECKPOINT_ROOT as buf, or buf/<sub> when sub is not NULL, for the
 * server to inherit (call before hx_setup). Fails the test when it cannot. */
void wt_tmp_root(char *buf, size_t len, const char *prefix, const char *sub);

/* Removes the directory dir and everything in it (after wt_tmp_root); prints when it cannot. */
void wt_remove_tree(const char *dir);

/* Writes what the scheduler writes to launch the job (action kind "start", "resize",
 * "migrate", ...), in one transaction: the job's state, its allocation (GPUs 0..per_host-1 of
 * each of the nhosts nodes, at most 8) and the action for node at, whose spec holds the job's
 * command and env, world size nhosts * per_host, the slots, the hosts (node, name, slots),
 * checkpoint dir hx.dir/ckpt/<job>, lr_scale = the world size (eq. 7) and plan "dp". */
void wt_write_action(long long job, const char *kind, const char *state, long long at,
                     const long long *nodes, int nhosts, int per_host);

/* Counts the live processes of this test's job launches (RINGJOB_SOCKET under hx.dir in
 * their environment) whose command line match accepts: match gets the arguments
 * NUL-separated (len bytes, NUL-terminated) and arg. */
int wt_count_procs(int (*match)(const char *cmd, size_t len, const void *arg), const void *arg);

/* Counts the live processes of the job's launch by the worker named worker (its mpirun and
 * ranks, found by RINGJOB_SOCKET=<hx.dir>/<worker>/jobs/<job>/chan.sock in their
 * environment): the copy of one job on one host, told apart from its copy on another. */
int wt_count_job_procs(const char *worker, long long job);

/* The pids of the live processes of the job's launch by the worker named worker (as
 * wt_count_job_procs), at most max of them into pids. Returns how many there are. */
int wt_job_pids(const char *worker, long long job, pid_t *pids, int max);

/* The value of the environment variable name of the first live process of the job's launch
 * by worker that has it (RINGJOB_CHECKPOINT_DIR, say), into buf. Returns 0, or -1 when none. */
int wt_job_env(const char *worker, long long job, const char *name, char *buf, size_t len);

/* Prints the tail of the workers' log and of the jobs' logs on stderr (after a failure). */
void wt_dump_logs(void);

/* For a failing time-slicing or packing test: every job event, every job_slices row (with the
 * count and mean time of the reports since its pack), every allocation, then wt_dump_logs. */
void wt_print_events(void);

/* The rounds' start, resize and migrate actions, for the log, a line each after tag: job,
 * kind, from -> to GPUs, reason, state. */
void wt_print_actions(const char *tag);

/* A packed pair in the live tables: 1 when a and b name each other in job_slices and both
 * hold GPU 0; the reports each made since the pair's measurement began (the fewer of the
 * two); alone_s / the mean seconds of the reports since pack_at, summed over the pair. */
int wt_pair_packed(long long a, long long b);
long long wt_pair_measured(long long a, long long b);
double wt_pair_rate_sum(long long a, long long b);

#endif
