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

#ifndef WORKER_PATH
#define WORKER_PATH "build/ringmaster-worker"
#endif
#ifndef RINGJOB_SO_PATH
#define RINGJOB_SO_PATH "build/lib/libringjob.so"
#endif
#ifndef TRAIN_TORCH_PATH
#define TRAIN_TORCH_PATH "examples/train_torch.py"
#endif
#define PYTHON "/usr/bin/python3"
#define SEED "7401"
#define STEPS 1500

static pid_t torch_worker;
static int torch_started;
static long long torch_node;

static void torch_spawn_worker(void)
{
    char token[128], tfile[320], url[64], log[320], dir[320];
    hx_user("torch-worker", "worker", token);
    snprintf(tfile, sizeof(tfile), "%s/torch.token", hx.dir);
    FILE *f = fopen(tfile, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", token);
    fclose(f);
    snprintf(dir, sizeof(dir), "%s/sim-t", hx.dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    snprintf(log, sizeof(log), "%s/worker.log", hx.dir);
    torch_worker = fork();
    cr_assert(torch_worker >= 0);
    if (torch_worker == 0) {
        FILE *o = freopen(log, "a", stdout);
        dup2(fileno(o), 2);
        setenv("OMPI_MCA_btl", "self,vader", 1);
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
        execl(WORKER_PATH, "ringmaster-worker", "--server", url, "--token-file", tfile, "--name",
              "sim-t", "--state-dir", dir, "--simulate-gpus", "2", "--heartbeat", "1",
              (char *)NULL);
        _exit(127);
    }
}

/* SIGTERM to the worker; its exit status, or -1 when it had to be killed. */
static int torch_stop_worker(void)
{
    int status = 0;
    if (torch_worker <= 0)
        return 0;
    kill(torch_worker, SIGTERM);
    double end = hx_now() + 20;
    while (waitpid(torch_worker, &status, WNOHANG) == 0) {
        if (hx_now() > end) {
            kill(torch_worker, SIGKILL);
            waitpid(torch_worker, &status, 0);
            torch_worker = 0;
            return -1;
        }
        usleep(20000);
    }
    torch_worker = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void torch_dump(void)
{
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "tail -n 40 '%s/worker.log' >&2; tail -n 30 %s/sim-t/jobs/*/log >&2",
             hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "no worker log\n");
}

/* The suite's init starts nothing: the test first decides whether it can run at all. */
static void torch_teardown(void)
{
    if (!torch_started)
        return;
    if (torch_stop_worker() != 0)
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

static void wait_state(long long job, const char *want, double timeout_s)
{
    if (wt_await_state(job, want, timeout_s) == 0)
        return;
    torch_dump();
    cr_assert_fail("job %lld: %s, not %s after %.0f s", job, wt_job_state(job), want, timeout_s);
}

static long long wait_node(void)
{
    double end = hx_now() + 30;
    while (hx_sql_num("SELECT count(*) FROM nodes WHERE name = 'sim-t'") < 1) {
        cr_assert(hx_now() < end, "the worker did not register in 30 s");
        usleep(100000);
    }
    return (long long)hx_sql_num("SELECT id FROM nodes WHERE name = 'sim-t'");
}

/* What the scheduler writes to launch (kind start or resize) the job on world GPUs of the
 * worker's node: the state, the allocation and the action, in one transaction. */
static void launch(long long job, const char *kind, const char *state, int world)
{
    char sql[2048], slots[256] = "", alloc[256] = "";
    for (int g = 0; g < world; g++) {
        snprintf(slots + strlen(slots), sizeof(slots) - strlen(slots),
                 "%sjsonb_build_object('node_id', %lld, 'gpu', %d)", g ? "," : "", torch_node, g);
        snprintf(alloc + strlen(alloc), sizeof(alloc) - strlen(alloc), "%s(%lld, %lld, %d)",
                 g ? "," : "", job, torch_node, g);
    }
    snprintf(sql, sizeof(sql),
             "BEGIN; UPDATE jobs SET state = '%s' WHERE id = %lld;"
             " DELETE FROM allocations WHERE job_id = %lld;"
             " INSERT INTO allocations (job_id, node_id, gpu_idx) VALUES %s;"
             " INSERT INTO actions (node_id, job_id, kind, spec) SELECT %lld, id, '%s',"
             " jsonb_build_object('command', command, 'env', env, 'world_size', %d, 'slots',"
             " jsonb_build_array(%s), 'hosts', jsonb_build_array(jsonb_build_object('node', %lld,"
             " 'name', 'sim-t', 'slots', %d)), 'checkpoint_dir', '%s/ckpt/%lld', 'lr_scale', %d,"
             " 'plan', 'dp') FROM jobs WHERE id = %lld; COMMIT",
             state, job, job, alloc, torch_node, kind, world, slots, torch_node, world, hx.dir,
             job, world, job);
    hx_sql_do(sql);
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
             "{\"RINGJOB_LIBRARY\":\"%s\",\"PYTHONDONTWRITEBYTECODE\":\"1\",%s%s%s"
             "\"ASAN_OPTIONS\":\"detect_leaks=0:protect_shadow_gap=0\"}",
             RINGJOB_SO_PATH, preload[0] ? "\"LD_PRELOAD\":\"" : "", preload,
             preload[0] ? "\"," : "");
}

static long long submit_torch(void)
{
    char env[600], body[2048];
    job_env(env, sizeof(env));
    snprintf(body, sizeof(body),
             "{\"name\":\"torch\",\"command\":[\"" PYTHON "\",\"%s\",\"--steps\",\"%d\","
             "\"--seed\",\"" SEED "\",\"--print-every\",\"100\"],\"gpus\":1,\"min_gpus\":1,"
             "\"max_gpus\":2,\"elastic\":true,\"env\":%s}",
             TRAIN_TORCH_PATH, STEPS, env);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Processes running train_torch.py with our seed (the ranks, not mpirun). */
static int count_ranks(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[300], buf[4096];
    int n = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = '\0';
        int script = 0, seeded = 0;
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
            script |= strstr(buf + i, "train_torch.py") != NULL;
            seeded |= !strcmp(buf + i, SEED);
        }
        n += script && seeded && !strstr(buf, "mpirun") && !strstr(buf, "orted");
    }
    if (d)
        closedir(d);
    return n;
}

static char *job_log(long long job)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", job);
    struct hx_resp *r = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_eq(r->status, 200);
    char *text = strdup(r->body);
    hx_free(r);
    return text;
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
    torch_spawn_worker();
    torch_node = wait_node();
}

/* Grows the running one-rank job to two ranks; returns the last step of the one-rank run. */
static long resize_to_two(long long job)
{
    long last1 = wait_steps(job, 40, 1, 90);
    launch(job, "resize", "RESIZING", 2);
    wait_steps(job, 20, 2, 90);
    wait_state(job, "RUNNING", 30);
    last1 = (long)q(LAST_AT, job, 1);
    long first2 = (long)q(FIRST_AT, job, 2);
    cr_assert_eq(first2, last1 + 1, "the two-rank run continues from the checkpoint");
    cr_assert_eq(count_ranks(), 2, "two ranks after the resize");
    cr_assert_eq(q(COUNT_AT " AND samples <> 64", job, 2), 0, "a step is 32 samples a rank");
    return last1;
}

/* Suspends and resumes through the API: no step while suspended, steps after. */
static void suspend_and_resume(long long job)
{
    post_job(job, "suspend");
    wait_state(job, "SUSPENDED", 30);
    usleep(300000);
    long a = (long)q(LAST, job);
    cr_assert_lt(a, STEPS, "suspended before the end");
    usleep(1000000);
    cr_assert_eq((long)q(LAST, job), a, "no step while suspended");
    cr_assert_eq(count_ranks(), 2, "suspended in place: the ranks live on");
    post_job(job, "resume");
    wait_state(job, "RUNNING", 30);
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
    long long job = submit_torch();
    launch(job, "start", "STARTING", 1);
    wait_state(job, "RUNNING", 60);
    double t_run = hx_now();
    long last1 = resize_to_two(job);
    suspend_and_resume(job);
    wait_state(job, "COMPLETED", 120);
    double t_done = hx_now();
    wait_steps(job, STEPS - last1, 2, 10);
    double first = mean_loss(job, 1, 10), end = mean_loss(job, STEPS - 99, STEPS);
    cr_log_info("train_torch: running after %.1f s, completed %.1f s later; resized after step "
                "%ld; loss %.3f (steps 1-10) -> %.3f (last 100)",
                t_run - t0, t_done - t_run, last1, first, end);
    cr_assert_lt(end, 0.5 * first, "the loss fell: %.3f -> %.3f", first, end);
    char *log = job_log(job);
    double until = hx_now() + 10;
    while (!strstr(log, "done at step 1500") && hx_now() < until) {
        free(log);
        usleep(200000);
        log = job_log(job);
    }
    cr_assert(strstr(log, "restored step"), "the two-rank launch restored the checkpoint");
    cr_assert(strstr(log, "lr scale 2, lr 0.04000"), "the learning rate doubled (eq. 7)");
    cr_assert(strstr(log, "done at step 1500"));
    free(log);
    cr_assert_eq(q("SELECT count(*) FROM actions WHERE job_id = %lld AND state = 'done'", job),
                 4, "start, resize, suspend and resume are done");
    cr_assert_eq(count_ranks(), 0);
    cr_assert_eq(torch_stop_worker(), 0);
    hx_finish();
}
