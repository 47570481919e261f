/* The worker end to end: a real ringmasterd (harness), a real ringmaster-worker with two
 * simulated GPUs, and real `mpirun ... train-mlp` jobs on loopback. Actions are written
 * into the actions table exactly as the scheduler writes them (docs/worker-protocol.md);
 * suspend, resume and cancel go through the API. Every wait is bounded; the fini stops
 * the worker (which stops its jobs) even when an assertion failed. */
#include <criterion/criterion.h>
#include <criterion/options.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

static pid_t worker_pid, worker_b_pid;
static int tcp_btl; /* workers' MPI may use TCP on loopback (jobs on two "hosts") */
static long long node_id;

/* Starts a worker named name ("sim-a") with 2 GPUs, its token (made the first time), state
 * dir and log in the test's directory; MPI over loopback TCP when tcp_btl. */
static pid_t start_worker(const char *name)
{
    return wt_start_worker(name, &(struct wt_worker){.gpus = 2, .tcp = tcp_btl});
}

static int stop_worker(void)
{
    return wt_stop_worker(&worker_pid);
}

static void dump_worker_log(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "tail -n 60 '%s/worker.log' >&2; ps -eo pid,ppid,stat,pcpu,cmd | grep -E"
             " 'train-mlp|mpirun' | grep -v grep >&2; tail -n 5 %s/sim-*/jobs/*/log >&2",
             hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "no worker log\n");
}

static json_t *get_json(const char *path)
{
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

/* The tests write the actions themselves, as the scheduler would: the live scheduler (where
 * it is built in) is paused so that it does not place the same jobs too. */
static void pause_scheduler(void)
{
    hx_sql_do("DO $$ BEGIN IF to_regclass('scheduler_config') IS NOT NULL THEN"
           " UPDATE scheduler_config SET paused = true; END IF; END $$");
}

static void setup(void)
{
    worker_pid = worker_b_pid = 0;
    tcp_btl = 0;
    hx_setup();
    pause_scheduler();
    worker_pid = start_worker("sim-a");
    node_id = wt_wait_node("sim-a");
}

static void teardown(void)
{
    if (wt_stop_worker(&worker_b_pid) != 0 || stop_worker() != 0)
        dump_worker_log();
    hx_teardown();
}

TestSuite(worker, .init = setup, .fini = teardown, .timeout = 240);

/* One integer from sql on the test's database (-1 when no row). */
static long long db_int(const char *sql)
{
    return (long long)hx_sql_num(sql);
}

static long long submit_mlp(long steps, int gpus, int seed)
{
    char sizes[32];
    snprintf(sizes, sizeof(sizes), "\"gpus\":%d", gpus);
    return wt_submit_mlp(steps, sizes, seed);
}

/* What the scheduler writes to start, resize or migrate job onto world GPUs of node to,
 * for the worker of node at (wt_write_action; the checkpoint directory is one both workers
 * reach). */
static void write_action(long long job, const char *kind, const char *state, long long at,
                         long long to, int world)
{
    wt_write_action(job, kind, state, at, &to, 1, world);
}

static void write_launch(long long job, const char *kind, const char *state, int world)
{
    write_action(job, kind, state, node_id, node_id, world);
}

/* Waits until the job reported at least n steps at world size w; returns the last step. */
static long wait_steps(long long job, int n, int w, double timeout_s)
{
    double end = hx_now() + timeout_s;
    for (;;) {
        json_t *m = wt_metrics(job);
        int count = 0;
        long last = -1;
        for (size_t i = 0; i < json_array_size(m); i++) {
            json_t *it = json_array_get(m, i);
            if (json_integer_value(json_object_get(it, "world_size")) == w) {
                count++;
                last = (long)json_integer_value(json_object_get(it, "step"));
            }
        }
        json_decref(m);
        if (count >= n)
            return last;
        if (hx_now() >= end)
            dump_worker_log();
        cr_assert(hx_now() < end, "job %lld: %d steps at world %d after %.0f s, wanted %d", job,
                  count, w, timeout_s, n);
        usleep(100000);
    }
}

/* Mean loss over the reports of world size w in the step range [lo, hi]. */
static double mean_loss(long long job, int w, long lo, long hi)
{
    json_t *m = wt_metrics(job);
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < json_array_size(m); i++) {
        json_t *it = json_array_get(m, i);
        long s = (long)json_integer_value(json_object_get(it, "step"));
        if (json_integer_value(json_object_get(it, "world_size")) == w && s >= lo && s <= hi) {
            sum += json_number_value(json_object_get(it, "loss"));
            n++;
        }
    }
    json_decref(m);
    cr_assert(n > 0, "no reports at world %d in [%ld, %ld]", w, lo, hi);
    return sum / n;
}

static void post_job(long long job, const char *what, long status)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), status));
}

/* A train-mlp whose "--seed" is *arg (as text), not the worker nor mpirun. */
static int is_rank(const char *cmd, size_t len, const void *arg)
{
    const char *want = arg;
    int mlp = 0, seeded = 0;
    for (size_t i = 0; i < len; i += strlen(cmd + i) + 1) {
        mlp |= strstr(cmd + i, "train-mlp") != NULL;
        seeded |= i > 0 && !strcmp(cmd + i, want) && !strcmp(cmd + i - 7, "--seed");
    }
    return mlp && seeded && strstr(cmd, "ringmaster-worker") == NULL &&
           strstr(cmd, "mpirun") == NULL;
}

/* Processes whose command line holds train-mlp and "--seed" seed. */
static int count_ranks(int seed)
{
    char want[32];
    snprintf(want, sizeof(want), "%d", seed);
    return wt_count_procs(is_rank, want);
}

Test(worker, registers_simulated_gpus_and_heartbeats)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", node_id);
    json_t *a = get_json(path);
    cr_assert(json_is_true(json_object_get(a, "simulated")));
    json_t *gpus = json_object_get(a, "gpus");
    cr_assert_eq(json_array_size(gpus), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(gpus, 1), "model")),
                     "simulated");
    /* the next heartbeat (one a second) within 2.5 s: polled, not slept */
    double end = hx_now() + 2.5;
    json_t *b = get_json(path);
    while (json_equal(json_object_get(a, "last_heartbeat_at"),
                      json_object_get(b, "last_heartbeat_at")) &&
           hx_now() < end) {
        usleep(100000);
        json_decref(b);
        b = get_json(path);
    }
    cr_assert_str_neq(json_string_value(json_object_get(a, "last_heartbeat_at")),
                      json_string_value(json_object_get(b, "last_heartbeat_at")),
                      "no heartbeat in 2.5 s");
    json_decref(a);
    json_decref(b);
    cr_assert_eq(stop_worker(), 0, "the worker exits 0 on SIGTERM");
    hx_finish();
}

/* Steps of the short job: past the log's "step 500" line (--print-every 500); the loss has
 * long fallen by then (about 0.002 at step 500, from about 0.5). */
#define SHORT_STEPS 600

Test(worker, short_job_completes_and_its_log_is_readable)
{
    long long job = submit_mlp(SHORT_STEPS, 2, 7101);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "COMPLETED", 120, dump_worker_log);
    cr_assert_eq(wait_steps(job, SHORT_STEPS, 2, 10), SHORT_STEPS);
    cr_assert_lt(mean_loss(job, 2, SHORT_STEPS - 100, SHORT_STEPS), 0.5 * mean_loss(job, 2, 1, 20),
                 "the loss fell");
    double end = hx_now() + 10;
    char *log = wt_job_log(job);
    char done[64];
    snprintf(done, sizeof(done), "train-mlp: done at step %d", SHORT_STEPS);
    while (!strstr(log, done) && hx_now() < end) {
        free(log);
        usleep(200000);
        log = wt_job_log(job);
    }
    cr_assert(strstr(log, "step 500 loss"), "the log has the job's output");
    cr_assert(strstr(log, done), "the log ends with \"%s\"", done);
    free(log);
    cr_assert_eq(db_int("SELECT count(*) FROM actions WHERE state = 'done'"), 1);
    cr_assert_eq(count_ranks(7101), 0);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(worker, suspend_resume_resize_and_cancel_a_running_job)
{
    long long job = submit_mlp(100000000, 2, 7102);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    wait_steps(job, 200, 2, 60);
    cr_assert_eq(count_ranks(7102), 2, "two ranks run");

    post_job(job, "suspend", 202);
    wt_expect_state(job, "SUSPENDED", 30, dump_worker_log);
    usleep(300000);
    long a = wait_steps(job, 1, 2, 5);
    usleep(700000);
    cr_assert_eq(wait_steps(job, 1, 2, 5), a, "no step while suspended");
    post_job(job, "resume", 202);
    wt_expect_state(job, "RUNNING", 30, dump_worker_log);
    wait_steps(job, (int)a + 100, 2, 30);

    write_launch(job, "resize", "RESIZING", 1);
    wait_steps(job, 100, 1, 60);
    wt_expect_state(job, "RUNNING", 10, dump_worker_log);
    cr_assert_eq(count_ranks(7102), 1, "one rank after the resize");
    json_t *m = wt_metrics(job);
    long last2 = -1, first1 = -1;
    for (size_t i = 0; i < json_array_size(m); i++) {
        json_t *it = json_array_get(m, i);
        long s = (long)json_integer_value(json_object_get(it, "step"));
        if (json_integer_value(json_object_get(it, "world_size")) == 2 && s > last2)
            last2 = s;
        if (json_integer_value(json_object_get(it, "world_size")) == 1 &&
            (first1 < 0 || s < first1))
            first1 = s;
    }
    json_decref(m);
    cr_assert_eq(first1, last2 + 1, "the 1-rank run continues from the checkpoint");
    cr_assert_lt(mean_loss(job, 1, first1, first1 + 50), 0.5 * mean_loss(job, 2, 1, 20),
                 "the loss keeps what was learnt");

    post_job(job, "cancel", 200);
    double end = hx_now() + 30;
    while (count_ranks(7102) > 0 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7102), 0, "the ranks are gone after cancel");
    cr_assert_str_eq(wt_job_state(job), "CANCELLED");
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND state = 'done'", job);
    end = hx_now() + 10;
    while (db_int(sql) < 5 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(db_int(sql), 5, "start, suspend, resume, resize and cancel are done");
    char *log = wt_job_log(job);
    cr_assert(strstr(log, "restored step"), "the restart restored the checkpoint");
    free(log);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(worker, a_server_restart_loses_and_doubles_nothing)
{
    long long job = submit_mlp(100000000, 2, 7103);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    long before = wait_steps(job, 100, 2, 60);
    cr_assert_eq(hx_stop_server(SIGKILL, 10), 128 + SIGKILL);
    usleep(1500000);
    hx_start_server();
    wait_steps(job, (int)before + 500, 2, 60);
    cr_assert_eq(count_ranks(7103), 2, "the same two ranks, not a second launch");
    char sql[200];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = %lld AND to_state = 'RUNNING'", job);
    cr_assert_eq(db_int(sql), 1, "one move to RUNNING: nothing twice");
    cr_assert_eq(db_int("SELECT count(*) FROM actions WHERE kind = 'start' AND state = 'done'"), 1);
    post_job(job, "cancel", 200);
    double end = hx_now() + 30;
    while (count_ranks(7103) > 0 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7103), 0);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(worker, migrate_moves_the_job_to_the_other_worker)
{
    worker_b_pid = start_worker("sim-b");
    long long node_b = wt_wait_node("sim-b");
    long long job = submit_mlp(100000000, 2, 7104);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    long last_a = wait_steps(job, 200, 2, 60);
    write_action(job, "migrate", "MIGRATING", node_id, node_b, 2);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
             " AND kind = 'start' AND state = 'done'",
             job, node_b);
    double end = hx_now() + 60;
    while (db_int(sql) < 1 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(db_int(sql), 1, "the target worker started the job");
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    long later = wait_steps(job, (int)last_a + 300, 2, 60);
    cr_assert_gt(later, last_a);
    cr_assert_eq(count_ranks(7104), 2, "two ranks, now under the other worker");
    end = hx_now() + 10;
    char *log = wt_job_log(job);
    while (!strstr(log, "restored step") && hx_now() < end) {
        free(log);
        usleep(200000);
        log = wt_job_log(job);
    }
    cr_assert(strstr(log, "checkpointed at step"), "the first worker's part of the log");
    cr_assert(strstr(log, "restored step"), "the second worker's part: restored");
    cr_assert_lt(strstr(log, "checkpointed at step"), strstr(log, "restored step"));
    free(log);
    post_job(job, "cancel", 200);
    end = hx_now() + 30;
    while (count_ranks(7104) > 0 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7104), 0, "cancel reached the worker that runs it now");
    cr_assert_eq(wt_stop_worker(&worker_b_pid), 0);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(worker, a_stopping_worker_checkpoints_its_jobs)
{
    long long job = submit_mlp(100000000, 2, 7105);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    wait_steps(job, 100, 2, 60);
    cr_assert_eq(stop_worker(), 0, "the worker exits 0 on SIGTERM");
    cr_assert_eq(count_ranks(7105), 0, "no rank outlives its worker");
    char path[400];
    snprintf(path, sizeof(path), "%s/ckpt/%lld/train-mlp.ckpt", hx.dir, job);
    cr_assert_eq(access(path, R_OK), 0, "the job checkpointed before its worker stopped");
    hx_finish();
}

Test(worker, a_restarted_worker_ends_what_a_killed_one_left)
{
    long long job = submit_mlp(100000000, 2, 7106);
    write_launch(job, "start", "STARTING", 2);
    wt_expect_state(job, "RUNNING", 60, dump_worker_log);
    wait_steps(job, 100, 2, 60);
    kill(worker_pid, SIGKILL);
    waitpid(worker_pid, NULL, 0);
    worker_pid = 0;
    cr_assert_eq(count_ranks(7106), 2, "the ranks outlive a worker killed with SIGKILL");
    long reached = wait_steps(job, 100, 2, 60);
    char path[400];
    snprintf(path, sizeof(path), "%s/ckpt/%lld/train-mlp.ckpt", hx.dir, job);
    cr_assert_neq(access(path, R_OK), 0, "no checkpoint yet");
    worker_pid = start_worker("sim-a"); /* again, with its token */
    double end = hx_now() + 30;
    while (count_ranks(7106) > 0 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7106), 0, "the next worker ended them");
    /* asked first to checkpoint and exit (SIGUSR1, ringjob.h): the training they did is kept
     * for the job's restart, at a step at least the last one reported */
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "they checkpointed before they were ended");
    int64_t hdr[4] = {0};
    cr_assert_eq(fread(hdr, sizeof(hdr[0]), 4, f), 4);
    fclose(f);
    cr_assert_geq(hdr[3], reached, "checkpoint of step %lld, %ld reported before",
                  (long long)hdr[3], reached);
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM actions WHERE job_id = %lld", job);
    cr_assert_eq(db_int(sql), 1, "the start was not carried out again");
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

/* Starts job on GPUs 0 and 1 of nodes a (sim-x, where its mpirun runs) and b (sim-y), as
 * the scheduler would. */
static void start_on_two(long long job, long long a, long long b)
{
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "BEGIN; UPDATE jobs SET state = 'STARTING' WHERE id = %lld;"
             " INSERT INTO allocations (job_id, node_id, gpu_idx) VALUES (%lld, %lld, 0),"
             " (%lld, %lld, 1), (%lld, %lld, 0), (%lld, %lld, 1);"
             " INSERT INTO actions (node_id, job_id, kind, spec) SELECT %lld, id, 'start',"
             " jsonb_build_object('command', command, 'env', env, 'world_size', 4, 'slots',"
             " jsonb_build_array(jsonb_build_object('node_id', %lld, 'gpu', 0),"
             " jsonb_build_object('node_id', %lld, 'gpu', 1), jsonb_build_object('node_id', %lld,"
             " 'gpu', 0), jsonb_build_object('node_id', %lld, 'gpu', 1)), 'hosts',"
             " jsonb_build_array(jsonb_build_object('node', %lld, 'name', 'sim-x', 'slots', 2),"
             " jsonb_build_object('node', %lld, 'name', 'sim-y', 'slots', 2)),"
             " 'checkpoint_dir', '%s/ckpt/%lld', 'lr_scale', 4) FROM jobs WHERE id = %lld; COMMIT",
             job, job, a, job, a, job, b, job, b, a, a, a, b, b, a, b, hx.dir, job, job);
    hx_sql_do(sql);
}

/* 1 when worker name's session folder of job (state/mpi/j<job>, launch.h) holds OpenMPI's
 * session (an ompi.* entry), 0 when it holds none, -1 when the folder does not exist. */
static int session_of(const char *name, long long job)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "d='%s/%s/mpi/j%lld'; [ -d \"$d\" ] || exit 2;"
             " ls \"$d\" | grep -q '^ompi\\.'", hx.dir, name, job);
    int rc = system(cmd);
    return !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc) == 0 ? 1 : WEXITSTATUS(rc) == 2 ? -1 : 0;
}

/* A job on two workers: one mpirun on the first, whose daemons are started through the
 * workers' rsh agent and the workers (not ssh). The two "hosts" are two simulated nodes of
 * this machine, named as no host is (as a lab tries it: two workers of simulated GPUs), with
 * their workers' MPI settings for one machine (self,vader): mpirun starts a daemon for each
 * node, both on this host, each in its worker's own TMPDIR, and the ranks talk TCP (the
 * worker's choice for a simulated job on several nodes). Before those two, the second daemon's
 * orte_init failed ("File exists" in /tmp/ompi.HOST.UID/jf.N) and mpirun waited for it for
 * good, the job MIGRATING on 8 GPUs; or a rank died in vader's poll. */
Test(worker, a_job_spans_two_workers_through_their_rsh_agent)
{
    stop_worker();
    tcp_btl = 0;
    worker_pid = start_worker("sim-x");
    worker_b_pid = start_worker("sim-y");
    long long a = wt_wait_node("sim-x"), b = wt_wait_node("sim-y");
    long long job = submit_mlp(100000000, 4, 7107);
    start_on_two(job, a, b);
    wt_expect_state(job, "RUNNING", 90, dump_worker_log);
    wait_steps(job, 100, 4, 90);
    cr_assert_eq(count_ranks(7107), 4, "four ranks");
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
             " AND kind = 'exec' AND state = 'done'",
             job, b);
    cr_assert_eq(db_int(sql), 1, "the second worker started mpirun's daemon");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
             " AND kind = 'exec' AND state = 'done'",
             job, a);
    cr_assert_eq(db_int(sql), 1, "the first one its own node's (a name of no host)");
    /* Each OpenMPI session in a folder of the job's own on each worker: two mpiruns that
     * start at once under one base race in making and removing ompi.HOST.UID. */
    cr_assert_eq(session_of("sim-x", job), 1, "mpirun's session is in sim-x's folder of the job");
    cr_assert_eq(session_of("sim-y", job), 1, "the daemon's is in sim-y's");
    post_job(job, "cancel", 200);
    double end = hx_now() + 30;
    while ((count_ranks(7107) > 0 || session_of("sim-x", job) >= 0 ||
            session_of("sim-y", job) >= 0) &&
           hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7107), 0, "every rank is gone after cancel");
    cr_assert_eq(session_of("sim-x", job), -1, "the job's session folders go with it");
    cr_assert_eq(session_of("sim-y", job), -1);
    cr_assert_eq(wt_stop_worker(&worker_b_pid), 0);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

/* A host whose daemon for the job's mpirun fails (here: sim-y's worker has no orted on its
 * PATH) says so, and the job goes back to the queue from its checkpoint, its GPUs released;
 * the server then has sim-x's worker stop the mpirun that waits for that daemon. Before, the
 * mpirun waited for good, the job STARTING on four GPUs. */
Test(worker, a_daemon_that_fails_on_a_host_sends_the_job_back_to_the_queue)
{
    stop_worker();
    worker_pid = start_worker("sim-x");
    worker_b_pid = wt_start_worker("sim-y", &(struct wt_worker){.gpus = 2, .path = "/nonexistent"});
    long long a = wt_wait_node("sim-x"), b = wt_wait_node("sim-y");
    long long job = submit_mlp(100000000, 4, 7108);
    start_on_two(job, a, b);
    wt_expect_state(job, "PENDING", 60, dump_worker_log);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = %lld AND event = 'requeue' AND"
             " detail LIKE 'launch failed: the MPI daemon for its mpirun on node sim-y exited"
             " with 127%%'",
             job);
    cr_assert_eq(db_int(sql), 1, "its event says where and how");
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM allocations WHERE job_id = %lld", job);
    cr_assert_eq(db_int(sql), 0, "its GPUs were released");
    double end = hx_now() + 30;
    while (count_ranks(7108) > 0 && hx_now() < end)
        usleep(100000);
    cr_assert_eq(count_ranks(7108), 0, "the waiting mpirun's ranks are gone");
    cr_assert_eq(wt_stop_worker(&worker_b_pid), 0);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

/* One test at a time: each runs real MPI jobs whose ranks wait for each other, and two
 * tests at once on a small host starve them (and the daemons) of CPU. */
int main(int argc, char **argv)
{
    struct criterion_test_set *tests = criterion_initialize();
    criterion_options.jobs = 1;
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
