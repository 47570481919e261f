/* examples/train_torch.py through the real system: a real ringmasterd and PostgreSQL
 * (harness), a real ringmaster-worker with two simulated GPUs, and `mpirun ...
 * /usr/bin/python3 train_torch.py` ranks using PyTorch and libringjob's Python binding.
 * The job starts on one GPU, is resized to two through a checkpoint (the step goes on, the
 * learning rate doubles), is suspended and resumed through the API, and completes having
 * learnt. Actions are written as the scheduler writes them (its rounds are paused), like
 * test_worker.c. Skipped where Debian's python3-torch or python3-mpi4py is missing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef RINGJOB_SO_PATH
#define RINGJOB_SO_PATH "build/lib/libringjob.so"
#endif
#ifndef TRAIN_TORCH_PATH
#define TRAIN_TORCH_PATH "examples/train_torch.py"
#endif
#define PYTHON "/usr/bin/python3"
#define SEED "7401"
#define STEPS 600 /* at least 10 ms each: no faster host ends it before the suspend */
#define SEED2 "7402"

/* The test's workers: [0] always, [1] in the two-host test. */
static pid_t workers[2];
static char names[2][32];
static int tcp_btl; /* two "hosts" on one machine: MPI over TCP on loopback */
static int torch_started;

/* Starts worker i named name with 2 GPUs (MPI over loopback TCP when tcp_btl). */
static void spawn_worker(int i, const char *name)
{
    snprintf(names[i], sizeof(names[i]), "%s", name);
    workers[i] = wt_start_worker(name, &(struct wt_worker){.gpus = 2, .tcp = tcp_btl});
}

static void torch_dump(void)
{
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "tail -n 40 '%s/worker.log' >&2; tail -n 30 %s/*/jobs/*/log >&2",
             hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "no worker log\n");
}

/* The suite's init starts nothing: the test first decides whether it can run at all. */
static void torch_teardown(void)
{
    if (!torch_started)
        return;
    if (wt_stop_worker(&workers[1]) != 0 || wt_stop_worker(&workers[0]) != 0)
        torch_dump();
    hx_teardown();
}

TestSuite(torch, .fini = torch_teardown, .timeout = 240);

/* One number from the test's database: the first cell of the SQL that fmt makes. */
__attribute__((format(printf, 1, 2))) static long long q(const char *fmt, ...)
{
    char sql[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return (long long)hx_sql_num(sql);
}

#define COUNT_AT "SELECT count(*) FROM job_metrics WHERE job_id = %lld AND world_size = %d"
#define LAST_AT "SELECT max(step) FROM job_metrics WHERE job_id = %lld AND world_size = %d"
#define FIRST_AT "SELECT min(step) FROM job_metrics WHERE job_id = %lld AND world_size = %d"
#define LAST "SELECT max(step) FROM job_metrics WHERE job_id = %lld"

/* Waits until the job reported n steps at world size w; returns the last such step. */
static long wait_steps(long long job, long n, int w, double timeout_s)
{
    double end = hx_now() + timeout_s;
    while (q(COUNT_AT, job, w) < n) {
        if (hx_now() > end) {
            torch_dump();
            cr_assert_fail("job %lld: %lld steps at world %d after %.0f s, not %ld (%s)", job,
                           q(COUNT_AT, job, w), w, timeout_s, n, wt_job_state(job));
        }
        usleep(100000);
    }
    return (long)q(LAST_AT, job, w);
}

static double mean_loss(long long job, long lo, long hi)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT avg(loss) FROM job_metrics WHERE job_id = %lld AND step BETWEEN %ld AND %ld",
             job, lo, hi);
    double v = hx_sql_num(sql);
    cr_assert_gt(v, 0, "no loss reported in steps [%ld, %ld]", lo, hi);
    return v;
}

/* What the scheduler writes to launch (kind start or resize) the job on per_host GPUs of
 * each of the first hosts workers, for the first one (wt_write_action). */
static void launch(long long job, const char *kind, const char *state, int hosts, int per_host)
{
    long long node[2] = { 0, 0 };
    for (int h = 0; h < hosts; h++)
        node[h] = wt_wait_node(names[h]);
    wt_write_action(job, kind, state, node[0], node, hosts, per_host);
}

/* The ranks' environment: this build's libringjob.so, and in a sanitized build the ASan
 * runtime loaded first (python itself is not instrumented). */
static void job_env(char *out, size_t len)
{
    char preload[300] = "";
#if defined(__SANITIZE_ADDRESS__)
    FILE *p = popen("${CC:-cc} -print-file-name=libasan.so", "r");
    cr_assert_not_null(p);
    if (!fgets(preload, sizeof(preload), p))
        preload[0] = '\0';
    pclose(p);
    preload[strcspn(preload, "\n")] = '\0';
    cr_assert(preload[0] == '/', "libasan.so not found");
#endif
    snprintf(out, len,
             "{\"RINGJOB_LIBRARY\":\"%s\",\"PYTHONDONTWRITEBYTECODE\":\"1\",%s%s%s" WT_ASAN_ENV "}",
             RINGJOB_SO_PATH, preload[0] ? "\"LD_PRELOAD\":\"" : "", preload,
             preload[0] ? "\"," : "");
}

/* Submits train_torch.py (seed, steps) with sizes, the GPU part of the body. */
static long long submit_torch(const char *seed, long steps, const char *sizes)
{
    char env[600], body[2048];
    job_env(env, sizeof(env));
    snprintf(body, sizeof(body),
             "{\"name\":\"torch\",\"command\":[\"" PYTHON "\",\"%s\",\"--steps\",\"%ld\","
             "\"--seed\",\"%s\",\"--print-every\",\"100\",\"--step-seconds\",\"0.01\"],%s,"
             "\"env\":%s}",
             TRAIN_TORCH_PATH, steps, seed, sizes, env);
    return wt_post_job(body);
}

/* A rank of train_torch.py with --seed seed (arg; not mpirun nor orted). */
static int is_rank(const char *cmd, size_t len, const void *seed)
{
    int script = 0, seeded = 0;
    for (size_t i = 0; i < len; i += strlen(cmd + i) + 1) {
        script |= strstr(cmd + i, "train_torch.py") != NULL;
        seeded |= !strcmp(cmd + i, (const char *)seed);
    }
    return script && seeded && !strstr(cmd, "mpirun") && !strstr(cmd, "orted");
}

/* Processes running train_torch.py with --seed seed (the ranks, not mpirun). */
static int count_ranks(const char *seed)
{
    return wt_count_procs(is_rank, seed);
}

static void post_job(long long job, const char *what)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 202));
}

static int have_torch(void)
{
    return system(PYTHON " -c 'import torch, mpi4py' >/dev/null 2>&1") == 0;
}

static void start_system(void)
{
    torch_started = 1;
    hx_setup();
    hx_sql_do("UPDATE scheduler_config SET paused = true");
    spawn_worker(0, tcp_btl ? "127.0.0.1" : "sim-t");
    wt_wait_node(names[0]);
}

/* Grows the running one-rank job to two ranks; returns the last step of the one-rank run. */
static long resize_to_two(long long job)
{
    wait_steps(job, 40, 1, 90);
    launch(job, "resize", "RESIZING", 1, 2);
    wait_steps(job, 20, 2, 90);
    wt_expect_state(job, "RUNNING", 30, torch_dump);
    long last1 = (long)q(LAST_AT, job, 1);
    long first2 = (long)q(FIRST_AT, job, 2);
    cr_assert_eq(first2, last1 + 1, "the two-rank run continues from the checkpoint");
    cr_assert_eq(count_ranks(SEED), 2, "two ranks after the resize");
    cr_assert_eq(q(COUNT_AT " AND samples <> 64", job, 2), 0, "a step is 32 samples a rank");
    return last1;
}

/* Suspends and resumes through the API: no step while suspended, steps after. */
static void suspend_and_resume(long long job)
{
    post_job(job, "suspend");
    wt_expect_state(job, "SUSPENDED", 30, torch_dump);
    usleep(300000);
    long a = (long)q(LAST, job);
    cr_assert_lt(a, STEPS, "suspended before the end");
    usleep(1000000);
    cr_assert_eq((long)q(LAST, job), a, "no step while suspended");
    cr_assert_eq(count_ranks(SEED), 2, "suspended in place: the ranks live on");
    post_job(job, "resume");
    wt_expect_state(job, "RUNNING", 30, torch_dump);
    double end = hx_now() + 30;
    while (q(LAST, job) < a + 20 && hx_now() < end)
        usleep(100000);
    cr_assert_geq(q(LAST, job), a + 20, "steps after the resume");
}

Test(torch, a_pytorch_job_grows_suspends_and_completes_through_the_worker)
{
    if (!have_torch())
        cr_skip_test(PYTHON " cannot import torch and mpi4py (Debian python3-torch, "
                            "python3-mpi4py)");
    double t0 = hx_now();
    start_system();
    long long job = submit_torch(SEED, STEPS, "\"gpus\":1,\"min_gpus\":1,\"max_gpus\":2,"
                                                  "\"elastic\":true");
    launch(job, "start", "STARTING", 1, 1);
    wt_expect_state(job, "RUNNING", 60, torch_dump);
    double t_run = hx_now();
    long last1 = resize_to_two(job);
    double t_resized = hx_now();
    suspend_and_resume(job);
    double t_resumed = hx_now();
    wt_expect_state(job, "COMPLETED", 120, torch_dump);
    double t_done = hx_now();
    wait_steps(job, STEPS - last1, 2, 10);
    double first = mean_loss(job, 1, 10), end = mean_loss(job, STEPS - 99, STEPS);
    cr_log_info("train_torch: running after %.1f s, resized (after step %ld) %.1f s later,"
                " suspended and resumed in %.1f s, completed %.1f s later (mean step %.1f ms);"
                " loss %.3f (steps 1-10) -> %.3f (last 100)",
                t_run - t0, last1, t_resized - t_run, t_resumed - t_resized,
                t_done - t_resumed, hx_sql_num("SELECT 1000 * avg(seconds) FROM job_metrics"),
                first, end);
    cr_assert_lt(end, 0.5 * first, "the loss fell: %.3f -> %.3f", first, end);
    char *log = wt_job_log(job);
    double until = hx_now() + 10;
    char done[32];
    snprintf(done, sizeof(done), "done at step %d", STEPS);
    while (!strstr(log, done) && hx_now() < until) {
        free(log);
        usleep(200000);
        log = wt_job_log(job);
    }
    cr_assert(strstr(log, "restored step"), "the two-rank launch restored the checkpoint");
    cr_assert(strstr(log, "lr scale 2, lr 0.04000"), "the learning rate doubled (eq. 7)");
    cr_assert(strstr(log, done), "the log ends with '%s'", done);
    free(log);
    cr_assert_eq(q("SELECT count(*) FROM actions WHERE job_id = %lld AND state = 'done'", job),
                 4, "start, resize, suspend and resume are done");
    cr_assert_eq(count_ranks(SEED), 0);
    cr_assert_eq(wt_stop_worker(&workers[0]), 0);
    hx_finish();
}

/* Two ranks on two workers (two loopback addresses of this machine, MPI over TCP): one
 * mpirun on the first, its daemon on the second started through the workers' rsh agent.
 * mpi4py's Allreduce and bcast cross "hosts" as train-mlp's MPI calls do. */
Test(torch, a_pytorch_job_spans_two_workers)
{
    if (!have_torch())
        cr_skip_test(PYTHON " cannot import torch and mpi4py");
    tcp_btl = 1;
    start_system();
    spawn_worker(1, "127.0.0.2");
    long long job = submit_torch(SEED2, 300, "\"gpus\":2");
    launch(job, "start", "STARTING", 2, 1);
    wt_expect_state(job, "RUNNING", 90, torch_dump);
    wait_steps(job, 50, 2, 60);
    cr_assert_eq(count_ranks(SEED2), 2, "two ranks");
    wt_expect_state(job, "COMPLETED", 120, torch_dump);
    wait_steps(job, 300, 2, 10);
    long long second = wt_wait_node(names[1]);
    cr_assert_eq(q("SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
                   " AND kind = 'exec' AND state = 'done'", job, second),
                 1, "the second worker started mpirun's daemon");
    double first = mean_loss(job, 1, 10), end = mean_loss(job, 251, 300);
    cr_log_info("train_torch on two workers: loss %.3f (steps 1-10) -> %.3f (251-300)", first,
                end);
    cr_assert_lt(end, 0.5 * first, "the loss fell: %.3f -> %.3f", first, end);
    cr_assert_eq(count_ranks(SEED2), 0);
    cr_assert_eq(wt_stop_worker(&workers[1]), 0);
    cr_assert_eq(wt_stop_worker(&workers[0]), 0);
    hx_finish();
}
