/* The worker on a real GPU (issue #4 item 9, issue #6 item 7): a real ringmasterd and
 * PostgreSQL (harness), a real ringmaster-worker WITHOUT --simulate-gpus (it finds the GPUs
 * through the CUDA runtime), and `mpirun ... train-cuda` jobs (CUDA kernels, NCCL).
 *
 * - gpu.the_worker_finds_the_gpu_and_a_suspend_frees_its_memory: the node registers real
 *   GPUs (a model other than "simulated", memory > 0); a 1-GPU train-cuda job with 256 MiB
 *   of extra device state runs and reports; an in-place suspend through the API frees at
 *   least that much GPU memory (the trainer's cudaMemGetInfo before and after, from its log)
 *   and a resume takes it back, the steps going on from where they stopped.
 * - gpu.gandiva_time_slices_and_packs_two_cuda_jobs_on_one_gpu: policy gandiva, quantum
 *   20 s (a first CUDA start must fit in it), the worker shown one GPU; two 1-GPU
 *   train-cuda jobs declaring gpu_util 0.4 (2 ms of GPU work and 3 ms on the host a step)
 *   take turns, then are packed on the GPU, and the scheduler keeps or reverts the pair
 *   from their measured rates. Prints the rates alone and packed, the decision, and the
 *   latency of every time-slicing action.
 *
 * Both are skipped (counted as skipped, the reason printed) where train-cuda is not built
 * or one step of it exits 77 (no usable CUDA device): CI and the development machine.
 * Both take an exclusive lock first, so that they never share the GPU with each other.
 * Every wait is bounded. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef WORKER_PATH
#define WORKER_PATH "build/ringmaster-worker"
#endif
#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define EXIT_NO_GPU 77
#define STATE_MB 256LL
#define MIB (1024LL * 1024LL)
#define WORKER_NAME "gpu"
#define GPU_LOCK "/tmp/ringmaster-test-gpu.lock"
/* CUDA under AddressSanitizer needs the shadow gap unprotected; the CUDA runtime's own
 * allocations are not ours to count as leaks. */
#define GPU_ASAN "protect_shadow_gap=0:detect_leaks=0"

static pid_t worker;
static int started;
static char ckpt_root[64];

/* train-cuda of this build: beside train-mlp. */
static const char *train_cuda(void)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", TRAIN_MLP_PATH);
    char *slash = strrchr(path, '/');
    size_t at = slash ? (size_t)(slash + 1 - path) : 0;
    snprintf(path + at, sizeof(path) - at, "train-cuda");
    return path;
}

/* The last non-empty line of file into out. */
static void last_line(const char *file, char *out, size_t len)
{
    char line[512];
    FILE *f = fopen(file, "r");
    out[0] = '\0';
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            snprintf(out, len, "%s", line);
    }
    if (f)
        fclose(f);
}

/* Runs one step of train-cuda on one rank; returns its exit status (-1: killed), its
 * last line of output in out. */
static int probe_step(char *out, size_t len)
{
    char dir[] = "/tmp/rm-gpuprobe-XXXXXX", log[64], cmd[PATH_MAX + 400];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof(log), "%s/log", dir);
    snprintf(cmd, sizeof(cmd),
             "ASAN_OPTIONS=" GPU_ASAN " RINGJOB_CHECKPOINT_DIR='%s' OMPI_ALLOW_RUN_AS_ROOT=1"
             " OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 10 120 '%s' --steps 1 >'%s' 2>&1",
             dir, train_cuda(), log);
    int st = system(cmd);
    last_line(log, out, len);
    wt_remove_tree(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Skips the test, saying why, unless this host can run train-cuda on a GPU; fails it when
 * train-cuda fails in another way (a broken CUDA setup is a finding, not a skip). */
static void skip_without_gpu(void)
{
    char out[512];
    if (access(train_cuda(), X_OK) != 0) {
        fprintf(stderr, "gpu: skipped: train-cuda not built (nvcc, libcudart or libnccl"
                        " missing): %s\n", train_cuda());
        cr_skip_test("no CUDA device: train-cuda not built (%s)", train_cuda());
    }
    int rc = probe_step(out, sizeof(out));
    if (rc == EXIT_NO_GPU) {
        fprintf(stderr, "gpu: skipped: no CUDA device: %s\n", out);
        cr_skip_test("no CUDA device: %s", out);
    }
    cr_assert_eq(rc, 0, "train-cuda --steps 1 exited %d on a host with a GPU: %s", rc, out);
}

/* Waits (bounded) for the lock that keeps the GPU tests of this host apart; it is held
 * until the test's process ends. */
static void lock_gpu(void)
{
    int fd = open(GPU_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    cr_assert(fd >= 0, "%s: %s", GPU_LOCK, strerror(errno));
    double end = hx_now() + 300;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        cr_assert(hx_now() < end, "another GPU test held %s for 300 s", GPU_LOCK);
        usleep(200000);
    }
}

/* The worker user's token, in file (made once). */
static void worker_token(const char *file)
{
    char token[128];
    hx_user(WORKER_NAME "-worker", "worker", token);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", token);
    fclose(f);
}

/* In the worker's child: its environment (MPI on one machine; ASan told about CUDA; the
 * GPUs it may see), then the worker itself. */
static void exec_worker(const char *tfile, const char *visible)
{
    char url[64], dir[320], asan[512];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof(asan), "%s%s" GPU_ASAN, old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    setenv("OMPI_MCA_btl", "self,vader", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    /* The worker numbers the GPUs it sees from 0 and gives each rank its number as
     * CUDA_VISIBLE_DEVICES: an inherited list would be applied twice. */
    if (visible)
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    snprintf(dir, sizeof(dir), "%s/" WORKER_NAME, hx.dir);
    execl(WORKER_PATH, "ringmaster-worker", "--server", url, "--token-file", tfile, "--name",
          WORKER_NAME, "--state-dir", dir, "--heartbeat", "1", (char *)NULL);
    _exit(127);
}

/* Starts the worker on the real GPUs (visible: CUDA_VISIBLE_DEVICES, NULL: all); its
 * output goes to hx.dir/worker.log. */
static pid_t start_gpu_worker(const char *visible)
{
    char tfile[320], log[320];
    snprintf(tfile, sizeof(tfile), "%s/" WORKER_NAME ".token", hx.dir);
    snprintf(log, sizeof(log), "%s/worker.log", hx.dir);
    worker_token(tfile);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(log, "a", stdout);
        if (!o)
            _exit(127);
        dup2(fileno(o), 2);
        exec_worker(tfile, visible);
    }
    return pid;
}

static void gpu_dump(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "tail -n 60 '%s/worker.log' >&2; grep -v ' POST \\| GET ' '%s/server.log' |"
             " tail -n 40 >&2; tail -n 20 %s/" WORKER_NAME "/jobs/*/log >&2",
             hx.dir, hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "gpu: no logs\n");
}

/* The suite's init starts nothing: each test first decides whether it can run at all. */
static void gpu_teardown(void)
{
    if (!started)
        return;
    if (wt_stop_worker(&worker) != 0)
        gpu_dump();
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(gpu, .fini = gpu_teardown, .timeout = 480);

/* Server (scheduler settings sched), then the worker (visible as start_gpu_worker);
 * returns the worker's node. */
static long long start_system(const char *sched, const char *visible)
{
    started = 1;
    lock_gpu();
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-gpu", NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler(sched);
    worker = start_gpu_worker(visible);
    return wt_wait_node(WORKER_NAME);
}

/* One number from the test's database: the first cell of the SQL that fmt makes. */
__attribute__((format(printf, 1, 2))) static double q(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return hx_sql_num(sql);
}

/* Asserts that node registered real GPUs (not simulated, a model, memory); returns how
 * many, and prints them. */
static int expect_real_gpus(long long node)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", node);
    json_t *n = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *gpus = json_object_get(n, "gpus");
    int count = (int)json_array_size(gpus);
    cr_assert(json_is_false(json_object_get(n, "simulated")), "the node says it is simulated");
    cr_assert_geq(count, 1, "the worker found no GPU (see its log)");
    for (int i = 0; i < count; i++) {
        json_t *g = json_array_get(gpus, (size_t)i);
        const char *model = json_string_value(json_object_get(g, "model"));
        long long mem = json_integer_value(json_object_get(g, "memory_bytes"));
        cr_assert(model && *model && strcmp(model, "simulated") != 0, "GPU %d: model %s", i,
                  model ? model : "(none)");
        cr_assert_gt(mem, 0, "GPU %d (%s): memory %lld", i, model, mem);
        fprintf(stderr, "gpu: node %lld GPU %d: %s, %.1f GiB\n", node, i, model,
                (double)mem / (double)(1024 * MIB));
    }
    json_decref(n);
    return count;
}

/* Submits a 1-GPU train-cuda job that runs until cancelled: state_mb MiB of extra device
 * state, gpu_ms and host_ms a step, declaring gpu_util when > 0. Returns its id. */
static long long submit_cuda(int seed, long long state_mb, const char *gpu_ms,
                             const char *host_ms, double gpu_util)
{
    char body[2048], model[64] = "";
    if (gpu_util > 0)
        snprintf(model, sizeof(model), ",\"model\":{\"gpu_util\":%g}", gpu_util);
    snprintf(body, sizeof(body),
             "{\"name\":\"cuda\",\"command\":[\"%s\",\"--steps\",\"100000000\",\"--seed\","
             "\"%d\",\"--print-every\",\"2000\",\"--state-mb\",\"%lld\",\"--gpu-ms\",\"%s\","
             "\"--host-ms\",\"%s\"],\"gpus\":1%s,\"env\":{\"ASAN_OPTIONS\":\"" GPU_ASAN "\","
             "\"NCCL_SOCKET_IFNAME\":\"lo\",\"NCCL_DEBUG\":\"WARN\"}}",
             train_cuda(), seed, state_mb, gpu_ms, host_ms, model);
    return wt_post_job(body);
}

static void post_job(long long job, const char *what, long status)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), status));
}

/* The job's latest step (-1 when none). */
static long last_step(long long job)
{
    return (long)q("SELECT COALESCE(max(step), -1) FROM job_metrics WHERE job_id = %lld", job);
}

/* Fails the test, with the logs, when the job ended. */
static void expect_alive(long long job)
{
    const char *st = wt_job_state(job);
    if (!strcmp(st, "FAILED") || !strcmp(st, "COMPLETED") || !strcmp(st, "CANCELLED")) {
        gpu_dump();
        cr_assert_fail("job %lld ended: %s", job, st);
    }
}

/* Waits until the job reported a step above after; returns its latest step. */
static long wait_step_above(long long job, long after, double timeout_s)
{
    double end = hx_now() + timeout_s;
    long s;
    while ((s = last_step(job)) <= after) {
        expect_alive(job);
        if (hx_now() > end) {
            gpu_dump();
            cr_assert_fail("job %lld: no step above %ld in %.0f s (%s)", job, after, timeout_s,
                           wt_job_state(job));
        }
        usleep(200000);
    }
    return s;
}

/* What train-cuda printed about one suspend ("suspended at step") or resume ("resumed at
 * step"): examples/train-cuda.cu's key=value line. */
struct gpu_line {
    long step;
    long long bytes, free_before, free_after;
    double copy_ms, total_ms, other_ms;
};

/* Parses the n-th (from 1) line of log that starts with "train-cuda: <what> at step";
 * returns 1 when there is one. */
static int parse_line(const char *log, const char *what, int n, struct gpu_line *out)
{
    char head[64], fmt[256];
    snprintf(head, sizeof(head), "train-cuda: %s at step ", what);
    snprintf(fmt, sizeof(fmt), "%%ld: bytes=%%lld copy_ms=%%lf %s_ms=%%lf %s_ms=%%lf"
                               " gpu_free_before=%%lld gpu_free_after=%%lld",
             strcmp(what, "suspended") ? "resume" : "suspend",
             strcmp(what, "suspended") ? "setup" : "pinned_alloc");
    const char *p = log;
    for (int k = 0; k < n; k++) {
        p = strstr(p, head);
        if (!p)
            return 0;
        p += strlen(head);
    }
    return sscanf(p, fmt, &out->step, &out->bytes, &out->copy_ms, &out->total_ms,
                  &out->other_ms, &out->free_before, &out->free_after) == 7;
}

/* Waits (bounded: the worker ships the log every second) for the n-th such line. */
static struct gpu_line wait_line(long long job, const char *what, int n, double timeout_s)
{
    struct gpu_line l;
    double end = hx_now() + timeout_s;
    for (;;) {
        char *log = wt_job_log(job);
        int found = parse_line(log, what, n, &l);
        free(log);
        if (found)
            return l;
        if (hx_now() > end) {
            gpu_dump();
            cr_assert_fail("job %lld: its log has no line %d 'train-cuda: %s at step ...'"
                           " after %.0f s", job, n, what, timeout_s);
        }
        usleep(300000);
    }
}

/* The seconds the latest event of the job says its action of kind took, or -1. */
static double action_took(long long job, const char *kind)
{
    return q("SELECT substring(detail FROM '\\(%s action [0-9]+ took ([0-9.]+) s\\)')::float8"
             " FROM job_events WHERE job_id = %lld AND detail LIKE '%%(%s action %%'"
             " ORDER BY id DESC LIMIT 1",
             kind, job, kind);
}

/* Suspends the running job in place through the API: the GPU memory its state held is
 * free while it waits. Returns the step it stopped at. */
static long suspend_frees_memory(long long job)
{
    post_job(job, "suspend", 202);
    wt_expect_state(job, "SUSPENDED", 60, gpu_dump);
    struct gpu_line s = wait_line(job, "suspended", 1, 30);
    long long freed = s.free_after - s.free_before;
    fprintf(stderr,
            "gpu: suspended at step %ld: %.1f MiB to host, copy %.2f ms, suspend %.2f ms"
            " (pinned alloc %.2f ms), %.1f MiB of GPU memory freed; action %.3f s\n",
            s.step, (double)s.bytes / MIB, s.copy_ms, s.total_ms, s.other_ms,
            (double)freed / MIB, action_took(job, "suspend"));
    cr_assert_geq(s.bytes, STATE_MB * MIB, "the state moved to host: %lld bytes", s.bytes);
    cr_assert_geq(freed, STATE_MB * MIB, "GPU memory freed by the suspend: %lld bytes", freed);
    double end = hx_now() + 10; /* the worker forwards reports every 0.5 s */
    while (last_step(job) < s.step && hx_now() < end)
        usleep(100000);
    long held = last_step(job);
    cr_assert_eq(held, s.step, "its last report is the step it stopped at");
    usleep(1500000);
    cr_assert_eq(last_step(job), held, "no step while suspended");
    return held;
}

/* Resumes the job suspended at step held: its state back on the GPU, steps going on. */
static void resume_restores(long long job, long held)
{
    post_job(job, "resume", 202);
    wt_expect_state(job, "RUNNING", 60, gpu_dump);
    struct gpu_line r = wait_line(job, "resumed", 1, 30);
    long long taken = r.free_before - r.free_after;
    fprintf(stderr,
            "gpu: resumed at step %ld: copy %.2f ms, resume %.2f ms (NCCL and alloc %.2f ms),"
            " %.1f MiB of GPU memory taken back; action %.3f s\n",
            r.step, r.copy_ms, r.total_ms, r.other_ms, (double)taken / MIB,
            action_took(job, "resume"));
    cr_assert_eq(r.step, held, "resumed at the step it was suspended at");
    cr_assert_geq(taken, STATE_MB * MIB, "the state is on the GPU again: %lld bytes", taken);
    long after = wait_step_above(job, held + 50, 60);
    cr_assert_eq(q("SELECT min(step) FROM job_metrics WHERE job_id = %lld AND step > %ld", job,
                   held),
                 held + 1, "the steps go on from %ld", held);
    fprintf(stderr, "gpu: step %ld after the resume\n", after);
}

Test(gpu, the_worker_finds_the_gpu_and_a_suspend_frees_its_memory)
{
    skip_without_gpu();
    long long node = start_system("{\"policy\":\"fifo\",\"interval_s\":1,\"grace_s\":30}", NULL);
    expect_real_gpus(node);
    long long job = submit_cuda(9101, STATE_MB, "2", "0", 0);
    wt_expect_state(job, "RUNNING", 120, gpu_dump);
    wait_step_above(job, 100, 60);
    double step_ms = q("SELECT 1000 * avg(seconds) FROM job_metrics WHERE job_id = %lld", job);
    fprintf(stderr, "gpu: train-cuda running, %.2f ms a step; start action %.3f s\n", step_ms,
            action_took(job, "start"));
    long held = suspend_frees_memory(job);
    resume_restores(job, held);
    post_job(job, "cancel", 200);
    wt_expect_state(job, "CANCELLED", 60, gpu_dump);
    cr_assert_eq(wt_stop_worker(&worker), 0, "the worker stopped cleanly");
    hx_finish();
}

/* ---- gandiva on one GPU ---- */

/* Count of the scheduler's events ev (of both jobs). */
static long long sched_events(long long a, long long b, const char *ev)
{
    return (long long)q("SELECT count(*) FROM job_events WHERE job_id IN (%lld, %lld)"
                        " AND event = '%s' AND actor = 'scheduler'",
                        a, b, ev);
}

/* Waits until both jobs were packed on the GPU (a 'pack' event each). */
static void wait_packed(long long a, long long b, double timeout_s)
{
    const char *sql = "SELECT count(DISTINCT job_id) FROM job_events WHERE job_id IN (%lld, %lld)"
                      " AND event = 'pack'";
    double end = hx_now() + timeout_s;
    while (q(sql, a, b) < 2) {
        expect_alive(a);
        expect_alive(b);
        if (hx_now() > end) {
            gpu_dump();
            cr_assert_fail("jobs %lld and %lld were not packed in %.0f s", a, b, timeout_s);
        }
        usleep(500000);
    }
}

/* The moment (epoch seconds) both packed jobs had made the reports that give their packed
 * rate (server/live/slice.h: LIVE_SLICE_MIN_PACKED = 30 after pack_at), or -1. */
static double measured_at(long long a, long long b)
{
    return q("SELECT extract(epoch FROM max(t)) FROM (SELECT (SELECT m.at FROM job_metrics m"
             " WHERE m.job_id = s.job_id AND m.seconds > 0 AND m.at > s.pack_at ORDER BY m.at"
             " OFFSET 29 LIMIT 1) t FROM job_slices s WHERE s.job_id IN (%lld, %lld)"
             " AND s.packed_with IN (%lld, %lld) AND s.pack_at IS NOT NULL) x"
             " HAVING count(t) = 2",
             a, b, a, b);
}

/* 1 when the scheduler kept the pair: both still packed with each other, both measured,
 * and two rounds began after that without reverting it. */
static int kept(long long a, long long b)
{
    double t = measured_at(a, b);
    return t > 0 && q("SELECT count(*) FROM sched_rounds WHERE at > to_timestamp(%.6f)", t) >= 2 &&
           q("SELECT count(*) FROM job_slices WHERE job_id IN (%lld, %lld) AND packed_with"
             " IN (%lld, %lld)",
             a, b, a, b) == 2;
}

/* The rates of a packed job: minibatches a second alone (frozen when packed) and since
 * the pair's measurement began, and how many reports that is. */
struct pair_rates {
    double alone[2], packed[2];
    long n[2];
};

static void read_rates(const long long job[2], struct pair_rates *r)
{
    for (int i = 0; i < 2; i++) {
        double alone_s = q("SELECT alone_s FROM job_slices WHERE job_id = %lld", job[i]);
        double packed_s = q("SELECT avg(m.seconds) FROM job_metrics m JOIN job_slices s ON"
                            " s.job_id = m.job_id WHERE m.job_id = %lld AND m.seconds > 0"
                            " AND m.at > s.pack_at",
                            job[i]);
        long n = (long)q("SELECT count(*) FROM job_metrics m JOIN job_slices s ON"
                         " s.job_id = m.job_id WHERE m.job_id = %lld AND m.seconds > 0"
                         " AND m.at > s.pack_at",
                         job[i]);
        if (alone_s <= 0 || packed_s <= 0)
            return; /* not measured yet, or the pair was reverted (pack_at cleared) */
        r->alone[i] = 1.0 / alone_s;
        r->packed[i] = 1.0 / packed_s;
        r->n[i] = n;
    }
}

/* Waits for the scheduler's decision on the packed pair; returns "kept" or "reverted",
 * with the rates measured last while the pair was packed in *r. */
static const char *wait_decision(const long long job[2], struct pair_rates *r, double timeout_s)
{
    double end = hx_now() + timeout_s;
    memset(r, 0, sizeof(*r));
    for (;;) {
        read_rates(job, r);
        if (q("SELECT count(*) FROM job_events WHERE job_id IN (%lld, %lld) AND event ="
              " 'unpack'",
              job[0], job[1]) > 0)
            return "reverted";
        if (kept(job[0], job[1]))
            return "kept";
        expect_alive(job[0]);
        expect_alive(job[1]);
        if (hx_now() > end) {
            gpu_dump();
            cr_assert_fail("no keep or revert of the pair %lld + %lld in %.0f s", job[0],
                           job[1], timeout_s);
        }
        usleep(500000);
    }
}

/* Prints every event of the two jobs that says how long its action took, and the
 * scheduler's own time-slicing events. */
static void print_slicing(long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT job_id, to_state, event, actor, detail FROM job_events WHERE job_id IN"
             " (%lld, %lld) AND (actor = 'scheduler' OR detail LIKE '%% action %% took %%')"
             " ORDER BY id",
             a, b);
    PGresult *r = hx_sql(sql);
    for (int i = 0; i < PQntuples(r); i++)
        fprintf(stderr, "gpu: job %s -> %s: %s by %s: %s\n", PQgetvalue(r, i, 0),
                PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
                PQgetvalue(r, i, 4));
    PQclear(r);
}

/* Prints what the job's trainer said of each suspend and resume (its own timings). */
static void print_trainer_lines(long long job)
{
    static const char *const what[] = {"suspended", "resumed"};
    struct gpu_line l;
    char *log = wt_job_log(job);
    for (int w = 0; w < 2; w++)
        for (int n = 1; parse_line(log, what[w], n, &l); n++)
            fprintf(stderr, "gpu: job %lld %s at step %ld: copy %.2f ms, whole %.2f ms\n", job,
                    what[w], l.step, l.copy_ms, l.total_ms);
    free(log);
}

/* Asserts that each job made at least min reports since it was packed. */
static void expect_progress_packed(const long long job[2], long min)
{
    for (int i = 0; i < 2; i++) {
        long n = (long)q("SELECT count(*) FROM job_metrics WHERE job_id = %lld AND at >"
                         " (SELECT max(at) FROM job_events WHERE job_id = %lld AND event ="
                         " 'pack')",
                         job[i], job[i]);
        cr_assert_geq(n, min, "job %lld: %ld reports since it was packed", job[i], n);
    }
}

Test(gpu, gandiva_time_slices_and_packs_two_cuda_jobs_on_one_gpu)
{
    skip_without_gpu();
    long long node = start_system("{\"policy\":\"gandiva\",\"quantum_s\":20,\"interval_s\":1,"
                                  "\"min_resize_interval_s\":0,\"resize_cost_s\":0,"
                                  "\"grace_s\":30}",
                                  "0");
    cr_assert_eq(expect_real_gpus(node), 1, "CUDA_VISIBLE_DEVICES=0: the worker sees one GPU");
    long long job[2];
    job[0] = submit_cuda(9201, 64, "2", "3", 0.4);
    job[1] = submit_cuda(9202, 64, "2", "3", 0.4);
    double t0 = hx_now();
    wait_packed(job[0], job[1], 180);
    double t_packed = hx_now();
    cr_assert_geq(sched_events(job[0], job[1], "suspend"), 1, "a job was time-sliced out");
    cr_assert_geq(sched_events(job[0], job[1], "resume"), 1, "and got its turn back");
    struct pair_rates r;
    const char *decision = wait_decision(job, &r, 120);
    expect_progress_packed(job, 30);
    print_slicing(job[0], job[1]);
    print_trainer_lines(job[0]);
    print_trainer_lines(job[1]);
    double sum = 0;
    for (int i = 0; i < 2; i++) {
        sum += r.alone[i] > 0 ? r.packed[i] / r.alone[i] : 0;
        fprintf(stderr, "gpu: job %lld: %.1f minibatches/s alone, %.1f packed (%ld reports)\n",
                job[i], r.alone[i], r.packed[i], r.n[i]);
    }
    fprintf(stderr, "gpu: packed %.1f s after the submits; pair %s %.1f s later;"
                    " normalised rates summed %.3f (kept above %.2f)\n",
            t_packed - t0, decision, hx_now() - t_packed, sum, 1.05);
    for (int i = 0; i < 2; i++)
        post_job(job[i], "cancel", 200);
    for (int i = 0; i < 2; i++)
        wt_expect_state(job[i], "CANCELLED", 60, gpu_dump);
    cr_assert_eq(wt_stop_worker(&worker), 0, "the worker stopped cleanly");
    hx_finish();
}
