/* The live scheduler end to end: a real ringmasterd with its scheduler thread, a real
 * ringmaster-worker with two simulated GPUs, and real `mpirun ... train-mlp` jobs. Nothing is
 * written by hand: jobs are submitted through the API, the scheduler places, starts and
 * resizes them, the worker carries the actions out and reports. Every wait is bounded. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef WORKER_PATH
#define WORKER_PATH "build/ringmaster-worker"
#endif
#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

static pid_t worker;
static char ckpt_root[64];

static pid_t spawn_worker(const char *name, int gpus)
{
    char token[128], tfile[320], user[64], url[64], log[320], dir[320], ngpus[8];
    snprintf(user, sizeof(user), "%s-worker", name);
    hx_user(user, "worker", token);
    snprintf(tfile, sizeof(tfile), "%s/%s.token", hx.dir, name);
    FILE *f = fopen(tfile, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", token);
    fclose(f);
    snprintf(dir, sizeof(dir), "%s/%s", hx.dir, name);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    snprintf(log, sizeof(log), "%s/worker.log", hx.dir);
    snprintf(ngpus, sizeof(ngpus), "%d", gpus);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(log, "a", stdout);
        dup2(fileno(o), 2);
        setenv("OMPI_MCA_btl", "self,vader", 1);
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
        execl(WORKER_PATH, "ringmaster-worker", "--server", url, "--token-file", tfile, "--name",
              name, "--state-dir", dir, "--simulate-gpus", ngpus, "--heartbeat", "1", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int stop_worker(void)
{
    int status = 0;
    if (worker <= 0)
        return 0;
    kill(worker, SIGTERM);
    double end = hx_now() + 20;
    while (waitpid(worker, &status, WNOHANG) == 0) {
        if (hx_now() > end) {
            kill(worker, SIGKILL);
            waitpid(worker, &status, 0);
            worker = 0;
            return -1;
        }
        usleep(20000);
    }
    worker = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void setup(void)
{
    snprintf(ckpt_root, sizeof(ckpt_root), "/tmp/rm-ckpt-XXXXXX");
    cr_assert_not_null(mkdtemp(ckpt_root));
    setenv("RINGMASTER_CHECKPOINT_ROOT", ckpt_root, 1); /* the server inherits it */
    hx_setup();
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"interval_s\":1,\"min_resize_interval_s\":0,"
                                       "\"resize_cost_s\":0,\"grace_s\":30}"),
                               200));
    worker = spawn_worker("sim-a", 2);
}

static void teardown(void)
{
    if (stop_worker() != 0) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "tail -n 40 '%s/worker.log' >&2", hx.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "no worker log\n");
    }
    hx_teardown();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ckpt_root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", ckpt_root);
}

TestSuite(sched_e2e, .init = setup, .fini = teardown, .timeout = 240);

static long long db_int(const char *fmt, long long arg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, arg);
    return (long long)hx_sql_num(sql);
}

/* Waits (bounded) until the job's state is want. */
static void wait_state(long long job, const char *want, double timeout_s)
{
    if (wt_await_state(job, want, timeout_s) != 0)
        cr_assert_fail("job %lld: %s after %.0f s, not %s", job, wt_job_state(job), timeout_s,
                       want);
}

Test(sched_e2e, a_submitted_job_is_scheduled_run_and_completed)
{
    long long job = wt_submit_mlp(1500, "\"gpus\":2", 7301);
    wait_state(job, "RUNNING", 60);
    cr_assert_eq(db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job), 2);
    wait_state(job, "COMPLETED", 120);
    cr_assert_eq(db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'start'"
                        " AND state = 'done' AND round_id IS NOT NULL",
                        job),
                 1, "one start, written by a round, carried out");
    double end = hx_now() + 10;
    while (db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job) && hx_now() < end)
        usleep(100000);
    cr_assert_eq(db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job), 0,
                 "its GPUs were released");
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}

Test(sched_e2e, an_elastic_job_grows_into_gpus_another_job_frees)
{
    const char *elastic = "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,\"elastic\":true,"
                          "\"model\":{\"class\":\"resnet110\"}";
    long long a = wt_submit_mlp(100000000, elastic, 7302);
    long long b = wt_submit_mlp(400, "\"gpus\":1", 7303);
    wait_state(a, "RUNNING", 60);
    cr_assert_eq(db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", a), 1,
                 "a shares the node with b");
    wait_state(b, "COMPLETED", 120);
    double end = hx_now() + 90;
    while (db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = 2", a) <
               20 &&
           hx_now() < end)
        usleep(200000);
    cr_assert_geq(db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                         " AND world_size = 2",
                         a),
                  20, "a runs with two ranks after b ended");
    cr_assert_eq(db_int("SELECT count(*) FROM actions WHERE job_id = %lld AND kind = 'resize'"
                        " AND state = 'done'",
                        a),
                 1, "grown by one resize, carried out");
    cr_assert_geq(db_int("SELECT count(*) FROM job_events WHERE job_id = %lld"
                         " AND to_state = 'RESIZING'",
                         a),
                  1);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", a);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
    wait_state(a, "CANCELLED", 30);
    cr_assert_eq(stop_worker(), 0);
    hx_finish();
}
