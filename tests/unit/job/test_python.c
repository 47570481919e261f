/* The Python binding (worker/python/ringjob.py) and examples/train_tiny.py against a real
 * jobchan: reports arrive, the loss falls, a suspend and a checkpoint-exit are obeyed and
 * a restart continues from the checkpoint. Skipped when python3 is absent. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobchan.h"
#include "jobtest.h"

static int have_python(void)
{
    return system("python3 -c 'import ctypes' >/dev/null 2>&1") == 0;
}

/* A sanitized libringjob.so loads into python only after the ASan runtime. */
static void sanitizer_env(void)
{
#if defined(__SANITIZE_ADDRESS__)
    char path[PATH_MAX] = "";
    FILE *p = popen("${CC:-cc} -print-file-name=libasan.so", "r");
    cr_assert_not_null(p);
    if (!fgets(path, sizeof(path), p))
        path[0] = '\0';
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    cr_assert(path[0] == '/', "libasan.so not found");
    setenv("LD_PRELOAD", path, 1);
#endif
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
}

struct py_plan {
    int phase;
    long step;
};

/* suspend past step 30, resume once suspended, checkpoint past step+30 */
static void py_hook(struct jobchan *jc, struct series *s, void *ctx)
{
    struct py_plan *p = ctx;
    long last = s->n ? s->r[s->n - 1].step : 0;
    if (p->phase == 0 && last >= 30) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_SUSPEND), 0);
        p->phase = 1;
    } else if (p->phase == 1 && jobchan_state(jc) == JOBCHAN_SUSPENDED) {
        p->step = last;
        cr_assert_eq(jobchan_command(jc, JOBCHAN_RESUME), 0);
        p->phase = 2;
    } else if (p->phase == 2 && last >= p->step + 30) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_CHECKPOINT_EXIT), 0);
        p->phase = 3;
    }
}

static int run_tiny(struct jobchan *jc, const char *sock, const char *ck, const char *log,
                    const char *steps, struct series *s, jobtest_hook_f hook, void *ctx)
{
    char lib[PATH_MAX];
    jobtest_build_path(lib, sizeof(lib), "lib/libringjob.so");
    setenv("RINGJOB_LIBRARY", lib, 1);
    char *argv[] = { "python3", JOBTEST_SRCDIR "/examples/train_tiny.py", "--steps",
                     (char *)steps, NULL };
    int status = jobtest_drive(jc, jobtest_spawn(argv, sock, ck, log), 30.0, s, hook, ctx);
    if (status != 0)
        jobtest_dump(log);
    return status;
}

Test(python, binding_drives_train_tiny_through_suspend_and_restart)
{
    if (!have_python())
        cr_skip_test("python3 not found");
    sanitizer_env();
    char dir[64], sock[128], ck[128], log[128], err[256] = "", steps[32];
    jobtest_tmpdir(dir, sizeof(dir));
    snprintf(sock, sizeof(sock), "%s/job.sock", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt", dir);
    snprintf(log, sizeof(log), "%s/job.log", dir);
    struct jobchan *jc = jobchan_create(sock, err, sizeof(err));
    cr_assert_not_null(jc, "%s", err);
    static struct series a, b;
    struct py_plan p = { 0 };
    cr_assert_eq(run_tiny(jc, sock, ck, log, "100000", &a, py_hook, &p), 0);
    cr_assert_eq(p.phase, 3, "stopped in phase %d", p.phase);
    long k = jobchan_checkpoint_step(jc);
    cr_assert_geq(k, p.step + 30);
    cr_assert_str_eq(jobchan_job_id(jc), "job-test");
    snprintf(steps, sizeof(steps), "%ld", k + 40);
    cr_assert_eq(run_tiny(jc, sock, ck, log, steps, &b, NULL, NULL), 0);
    cr_assert_eq(b.n, 40);
    cr_assert_eq(b.r[0].step, k + 1, "restart continues at the next step");
    double first = jobtest_mean_loss(&a, 0, 5), end = jobtest_mean_loss(&b, 30, 10);
    cr_log_info("train_tiny: loss first 5 steps %.4f, last 10 after restart %.6f", first, end);
    cr_assert_lt(end, 0.05 * first);
    cr_assert(jobchan_said_bye(jc));
    jobchan_destroy(jc);
    jobtest_rmtree(dir);
}

/* The binding's broadcast hook and errors, standalone (no socket): a hook that changes the
 * decision (the first 4 bytes of the agreement) shows it is really called; a bad checkpoint
 * name raises the library's text. */
static const char *const binding_probe =
    "import sys, struct\n"
    "sys.path.insert(0, '" JOBTEST_SRCDIR "/worker/python')\n"
    "import ringjob\n"
    "calls = []\n"
    "def bcast(data):\n"
    "    calls.append(struct.unpack_from('i', data)[0])\n"
    "    return struct.pack('i', ringjob.SUSPEND) + data[4:]\n"
    "ringjob.set_broadcast(bcast)\n"
    "ringjob.init()\n"
    "assert not ringjob.connected() and ringjob.world_size() == 3, ringjob.world_size()\n"
    "assert ringjob.lr_scale() == 3.0 and ringjob.plan() == 'dp'\n"
    "assert ringjob.poll(1) == ringjob.SUSPEND and calls == [ringjob.CONTINUE], calls\n"
    "ringjob.set_broadcast(lambda d: b'x')\n"
    "try:\n"
    "    ringjob.poll(2)\n"
    "    sys.exit(3)\n"
    "except ringjob.RingjobError as e:\n"
    "    assert 'broadcast' in str(e), e\n"
    "ringjob.set_broadcast(None)\n"
    "assert ringjob.poll(3) == ringjob.CONTINUE\n"
    "try:\n"
    "    ringjob.checkpoint_path('a/b')\n"
    "    sys.exit(4)\n"
    "except ringjob.RingjobError as e:\n"
    "    assert 'a/b' in str(e), e\n"
    "assert ringjob.checkpoint_path('m.json').endswith('/m.json')\n"
    "ringjob.finalize()\n"
    "print('binding ok')\n";

Test(python, broadcast_hook_and_errors)
{
    if (!have_python())
        cr_skip_test("python3 not found");
    sanitizer_env();
    char dir[64], lib[PATH_MAX], log[128];
    static struct series s;
    jobtest_tmpdir(dir, sizeof(dir));
    snprintf(log, sizeof(log), "%s/probe.log", dir);
    jobtest_build_path(lib, sizeof(lib), "lib/libringjob.so");
    setenv("RINGJOB_LIBRARY", lib, 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    char *argv[] = { "python3", "-c", (char *)binding_probe, NULL };
    char err[256] = "", sock[128];
    snprintf(sock, sizeof(sock), "%s/unused.sock", dir);
    struct jobchan *jc = jobchan_create(sock, err, sizeof(err));
    cr_assert_not_null(jc, "%s", err);
    int status = jobtest_drive(jc, jobtest_spawn(argv, NULL, dir, log), 30.0, &s, NULL, NULL);
    if (status != 0)
        jobtest_dump(log);
    cr_assert_eq(status, 0);
    jobchan_destroy(jc);
    jobtest_rmtree(dir);
}

struct torch_plan {
    int sent;
    long took; /* the step after which the job took the new batch */
};

/* batch 64 (its factor left to libringjob: sqrt(64 / 32)) once step 10 is reported */
static void torch_hook(struct jobchan *jc, struct series *s, void *ctx)
{
    struct torch_plan *p = ctx;
    if (!p->sent && s->n && s->r[s->n - 1].step >= 10) {
        cr_assert_eq(jobchan_batch(jc, 64, 0), 0);
        p->sent = 1;
    }
    if (jobchan_batched(jc, &p->took) != 64)
        p->took = -1;
}

/* examples/train_torch.py as a goodput job (RINGJOB_BATCH 32 of M0 32): a batch changed in
 * place runs from the next step, at --lr times the new lr_scale(), with no restart. Skipped
 * where Debian's python cannot import torch. */
Test(python, train_torch_runs_a_batch_changed_in_place, .timeout = 120)
{
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        cr_skip_test("/usr/bin/python3 cannot import torch");
    sanitizer_env();
    char dir[64], sock[128], ck[128], log[128], err[256] = "", lib[PATH_MAX];
    jobtest_tmpdir(dir, sizeof(dir));
    snprintf(sock, sizeof(sock), "%s/job.sock", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt", dir);
    snprintf(log, sizeof(log), "%s/job.log", dir);
    jobtest_build_path(lib, sizeof(lib), "lib/libringjob.so");
    setenv("RINGJOB_LIBRARY", lib, 1);
    setenv("RINGJOB_BATCH", "32", 1);
    setenv("RINGJOB_INIT_BATCH", "32", 1);
    struct jobchan *jc = jobchan_create(sock, err, sizeof(err));
    cr_assert_not_null(jc, "%s", err);
    static struct series s;
    struct torch_plan p = {0, -1};
    char *argv[] = {"/usr/bin/python3",
                    JOBTEST_SRCDIR "/examples/train_torch.py",
                    "--steps",
                    "40",
                    "--threads",
                    "1",
                    "--step-seconds",
                    "0.05",
                    NULL};
    int status = jobtest_drive(jc, jobtest_spawn(argv, sock, ck, log), 100.0, &s, torch_hook, &p);
    unsetenv("RINGJOB_BATCH");
    unsetenv("RINGJOB_INIT_BATCH");
    if (status != 0)
        jobtest_dump(log);
    cr_assert_eq(status, 0);
    cr_assert_eq(s.n, 40, "one launch, every step once");
    cr_assert_geq(p.took, 10);
    for (size_t i = 0; i < s.n; i++)
        cr_assert_eq(s.r[i].samples, s.r[i].step <= p.took ? 32 : 64, "step %ld ran %ld",
                     s.r[i].step, s.r[i].samples);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char want[128];
    snprintf(want, sizeof(want), "batch 32 -> 64 in place after step %ld, lr 0.02828", p.took);
    cr_assert(strstr(text, want), "the log says '%s': %s", want, text);
    jobchan_destroy(jc);
    jobtest_rmtree(dir);
}
