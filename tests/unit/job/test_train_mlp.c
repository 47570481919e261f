/* The real example job under real mpirun, driven through a jobchan as the worker will:
 * its loss falls, it suspends in place and resumes, it checkpoints and exits at every
 * rank on the same step, and it restarts at another world size where it left off. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobchan.h"
#include "jobtest.h"

#define RUN_TIMEOUT_S 60.0
#define EXIT_NO_GPU 77

struct run {
    char dir[64];
    char sock[128];
    char ckdir[128];
    char log[128];
    char bin[PATH_MAX];
    char state_mb[16];
    struct jobchan *jc;
};

static void run_up_bin(struct run *r, const char *bin)
{
    char err[256] = "";
    jobtest_tmpdir(r->dir, sizeof(r->dir));
    snprintf(r->sock, sizeof(r->sock), "%s/job.sock", r->dir);
    snprintf(r->ckdir, sizeof(r->ckdir), "%s/ckpt", r->dir);
    snprintf(r->log, sizeof(r->log), "%s/job.log", r->dir);
    jobtest_build_path(r->bin, sizeof(r->bin), bin);
    r->state_mb[0] = '\0';
    r->jc = jobchan_create(r->sock, err, sizeof(err));
    cr_assert_not_null(r->jc, "%s", err);
}

static void run_up(struct run *r)
{
    run_up_bin(r, "examples/train-mlp");
    cr_assert_eq(access(r->bin, X_OK), 0, "%s not built", r->bin);
}

/* Launches train-mlp on np ranks for `steps` steps and drives it to its end. */
static int launch(struct run *r, int np, long steps, struct series *s, jobtest_hook_f hook,
                  void *ctx)
{
    char npbuf[16], stepbuf[32];
    snprintf(npbuf, sizeof(npbuf), "%d", np);
    snprintf(stepbuf, sizeof(stepbuf), "%ld", steps);
    char *argv[] = { "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", npbuf,
                     r->bin, "--steps", stepbuf, "--params", "4096", "--batch-per-rank", "16",
                     "--print-every", "25", "--state-mb", r->state_mb, NULL };
    if (!r->state_mb[0])
        argv[14] = NULL; /* train-mlp has no --state-mb */
    pid_t pid = jobtest_spawn(argv, r->sock, r->ckdir, r->log);
    int status = jobtest_drive(r->jc, pid, RUN_TIMEOUT_S, s, hook, ctx);
    if (status != 0 && status != EXIT_NO_GPU)
        jobtest_dump(r->log);
    return status;
}

Test(train_mlp, loss_falls_on_two_ranks)
{
    struct run r;
    static struct series s;
    run_up(&r);
    cr_assert_eq(launch(&r, 2, 200, &s, NULL, NULL), 0);
    cr_assert_eq(s.n, 200, "reports: %zu", s.n);
    cr_assert_eq(jobchan_world_size(r.jc), 2);
    cr_assert_eq(s.r[0].samples, 32, "samples over both ranks");
    double first = jobtest_mean_loss(&s, 0, 10), last = jobtest_mean_loss(&s, 190, 10);
    cr_log_info("loss: first 10 steps %.4f, last 10 %.4f", first, last);
    cr_assert_lt(last, 0.2 * first, "loss %.4f -> %.4f", first, last);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

/* Asks for a checkpoint-exit once the job passed step `at`. */
static void checkpoint_at(struct jobchan *jc, struct series *s, void *ctx)
{
    long *at = ctx;
    if (*at > 0 && s->n && s->r[s->n - 1].step >= *at) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_CHECKPOINT_EXIT), 0);
        *at = 0;
    }
}

/* Trains on `from` ranks, checkpoints past step 80, restarts on `to` ranks for 120 more.
 * Losses are compared as means over 20 steps (minibatch losses are noisy). */
static void resize(int from, int to)
{
    struct run r;
    static struct series a, b;
    long at = 80;
    a.n = b.n = 0;
    run_up(&r);
    cr_assert_eq(launch(&r, from, 100000, &a, checkpoint_at, &at), 0);
    cr_assert_eq(jobchan_state(r.jc), JOBCHAN_CHECKPOINTED);
    long k = jobchan_checkpoint_step(r.jc);
    cr_assert_geq(k, 80);
    cr_assert_eq(a.r[a.n - 1].step, k, "all ranks left at the checkpointed step");
    cr_assert_eq(launch(&r, to, k + 120, &b, NULL, NULL), 0);
    cr_assert_eq(jobchan_world_size(r.jc), to);
    cr_assert_eq(b.n, 120, "reports after restart: %zu", b.n);
    cr_assert_eq(b.r[0].step, k + 1, "restart continues at step %ld", k + 1);
    cr_assert_eq(b.r[0].samples, 16 * to);
    double start = jobtest_mean_loss(&a, 0, 10), before = jobtest_mean_loss(&a, a.n - 20, 20);
    double after = jobtest_mean_loss(&b, 0, 20), end = jobtest_mean_loss(&b, 100, 20);
    cr_log_info("%d -> %d ranks: loss start %.4f, before ckpt %.4f, after restart %.4f, "
                "end %.4f", from, to, start, before, after, end);
    cr_assert_lt(after, 0.3 * start, "restart did not start from scratch");
    cr_assert_lt(after, 1.5 * before, "restart lost progress: %.4f vs %.4f", after, before);
    /* Where the checkpoint lands depends on timing; late ones find the loss on its plateau,
     * where 20-step means still vary by some 20%: hence the margin. */
    cr_assert_leq(end, 1.3 * before, "learning continues: %.4f vs %.4f", end, before);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

/* A global batch chosen by the scheduler: RINGJOB_BATCH examples a step over the ranks (the
 * first taking the odd one), at --lr times sqrt(batch / M0); the job's gradient statistics
 * reach the worker and give a plausible noise scale; the loss falls. */
Test(train_mlp, runs_the_batch_it_is_given_and_reports_gradient_statistics)
{
    struct run r;
    static struct series s;
    run_up(&r);
    setenv("RINGJOB_BATCH", "65", 1);
    setenv("RINGJOB_INIT_BATCH", "16", 1);
    char *argv[] = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", r.bin,
                    "--steps", "150", "--params", "4096", "--batch", "16", "--print-every", "50",
                    NULL};
    pid_t pid = jobtest_spawn(argv, r.sock, r.ckdir, r.log);
    int status = jobtest_drive(r.jc, pid, RUN_TIMEOUT_S, &s, NULL, NULL);
    unsetenv("RINGJOB_BATCH");
    unsetenv("RINGJOB_INIT_BATCH");
    if (status != 0)
        jobtest_dump(r.log);
    cr_assert_eq(status, 0);
    cr_assert_eq(s.n, 150, "reports: %zu", s.n);
    cr_assert_eq(s.r[0].samples, 65, "the global batch over both ranks");
    double sqr = -1, var = -1;
    cr_assert_eq(jobchan_grad(r.jc, &sqr, &var), 1, "gradient statistics arrived");
    cr_assert(sqr > 0 && var > 0, "sqr %g var %g", sqr, var);
    double noise = var / sqr * 16; /* var is at M0 = 16: the noise scale in examples */
    cr_log_info("noise scale %.1f examples (sqr %g, var %g)", noise, sqr, var);
    cr_assert(noise > 1 && noise < 100000, "noise scale %g", noise);
    double first = jobtest_mean_loss(&s, 0, 10), last = jobtest_mean_loss(&s, 140, 10);
    cr_assert_lt(last, 0.5 * first, "loss %.4f -> %.4f", first, last);
    char log[8192] = "";
    FILE *f = fopen(r.log, "r");
    size_t n = f ? fread(log, 1, sizeof(log) - 1, f) : 0;
    log[n] = '\0';
    if (f)
        fclose(f);
    cr_assert(strstr(log, "global batch 65 (initial 16), 33 examples on rank 0, lr 0.006047"),
              "lr 0.003 * sqrt(65 / 16): %s", log);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

/* Runs train-mlp on two ranks at global batch 96 (M0 16) for 40 steps, with
 * RINGJOB_MAX_LOCAL_BATCH max_local when not NULL; its reports into s, its log into log. */
static void run_batch96(struct series *s, const char *max_local, char *log, size_t len)
{
    struct run r;
    run_up(&r);
    setenv("RINGJOB_BATCH", "96", 1);
    setenv("RINGJOB_INIT_BATCH", "16", 1);
    if (max_local)
        setenv("RINGJOB_MAX_LOCAL_BATCH", max_local, 1);
    char *argv[] = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", r.bin,
                    "--steps", "40", "--params", "4096", "--batch", "16", "--print-every", "20",
                    NULL};
    pid_t pid = jobtest_spawn(argv, r.sock, r.ckdir, r.log);
    int status = jobtest_drive(r.jc, pid, RUN_TIMEOUT_S, s, NULL, NULL);
    unsetenv("RINGJOB_BATCH");
    unsetenv("RINGJOB_INIT_BATCH");
    unsetenv("RINGJOB_MAX_LOCAL_BATCH");
    if (status != 0)
        jobtest_dump(r.log);
    cr_assert_eq(status, 0);
    double sqr = -1, var = -1;
    cr_assert_eq(jobchan_grad(r.jc, &sqr, &var), 1, "gradient statistics arrived");
    cr_assert(sqr > 0 && var > 0, "sqr %g var %g", sqr, var);
    FILE *f = fopen(r.log, "r");
    size_t n = f ? fread(log, 1, len - 1, f) : 0;
    log[n] = '\0';
    if (f)
        fclose(f);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

/* max_local_batch (RINGJOB_MAX_LOCAL_BATCH): 48 examples a rank, at most 16 at once, are three
 * micro-steps whose gradients are summed before the step's exchange (gradient accumulation).
 * The step is the same step: every loss of the run equals the one without a bound. */
Test(train_mlp, a_share_above_max_local_batch_accumulates_micro_steps)
{
    static struct series whole, accum;
    static char log_whole[16384], log_accum[16384];
    run_batch96(&whole, NULL, log_whole, sizeof(log_whole));
    run_batch96(&accum, "16", log_accum, sizeof(log_accum));
    cr_assert(strstr(log_accum, "gradient accumulation: 3 micro-steps of at most 16 examples on"
                                " rank 0 (max local batch 16)"),
              "%s", log_accum);
    cr_assert_null(strstr(log_whole, "accumulation"), "no bound: one pass");
    cr_assert_eq(whole.n, 40);
    cr_assert_eq(accum.n, 40);
    for (size_t i = 0; i < whole.n; i++) {
        cr_assert_eq(accum.r[i].samples, 96);
        cr_assert_eq(accum.r[i].loss, whole.r[i].loss, "step %ld: %.17g vs %.17g",
                     accum.r[i].step, accum.r[i].loss, whole.r[i].loss);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median step seconds of 30 steps of train-mlp on one rank (8 examples at 1,000 us each:
 * 8 ms a step at factor 1) with --speed-by-gpu speeds, its worker's GPU model model (NULL:
 * none reported); its log into log. */
static double median_step_s(const char *model, const char *speeds, char *log, size_t len)
{
    struct run r;
    static struct series s;
    s.n = 0;
    run_up(&r);
    if (model)
        setenv("RINGMASTER_GPU_MODEL", model, 1);
    else
        unsetenv("RINGMASTER_GPU_MODEL");
    char *argv[] = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1", r.bin,
                    "--steps", "30", "--params", "1024", "--batch-per-rank", "8",
                    "--sleep-us-per-sample", "1000", "--speed-by-gpu", (char *)speeds,
                    "--print-every", "30", NULL};
    pid_t pid = jobtest_spawn(argv, r.sock, r.ckdir, r.log);
    int status = jobtest_drive(r.jc, pid, RUN_TIMEOUT_S, &s, NULL, NULL);
    unsetenv("RINGMASTER_GPU_MODEL");
    if (status != 0)
        jobtest_dump(r.log);
    cr_assert_eq(status, 0);
    cr_assert_eq(s.n, 30, "reports: %zu", s.n);
    double t[30];
    for (size_t i = 0; i < 30; i++)
        t[i] = s.r[i].seconds;
    qsort(t, 30, sizeof(t[0]), cmp_double);
    FILE *f = fopen(r.log, "r");
    size_t n = f ? fread(log, 1, len - 1, f) : 0;
    log[n] = '\0';
    if (f)
        fclose(f);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
    return t[15];
}

/* --speed-by-gpu: the emulated compute runs at the factor of the GPU model the worker reports
 * (RINGMASTER_GPU_MODEL), matched as a word of its name whatever the case; a model it does not
 * name runs at factor 1. */
Test(train_mlp, speed_by_gpu_runs_at_the_factor_of_the_reported_gpu_model)
{
    static char log[16384];
    const char *speeds = "a100=0.5,T4=4";
    double a100 = median_step_s("NVIDIA A100-SXM4-80GB", speeds, log, sizeof(log));
    cr_assert(strstr(log, "GPU model NVIDIA A100-SXM4-80GB: compute factor 0.5"), "%s", log);
    double t4 = median_step_s("Tesla t4", speeds, log, sizeof(log));
    cr_assert(strstr(log, "compute factor 4"), "%s", log);
    double none = median_step_s(NULL, speeds, log, sizeof(log));
    cr_assert(strstr(log, "GPU model (none): compute factor 1"), "%s", log);
    double v100 = median_step_s("v100", speeds, log, sizeof(log));
    cr_log_info("median step: a100 %.4f s, t4 %.4f s, none %.4f s, v100 %.4f s", a100, t4, none,
                v100);
    cr_assert(a100 > 0.0035 && a100 < 0.0075, "a100: 4 ms a step, %.4f", a100);
    cr_assert(t4 / a100 > 6 && t4 / a100 < 10, "t4 / a100: 8, %.2f", t4 / a100);
    cr_assert(none / a100 > 1.5 && none / a100 < 2.6, "no model: factor 1, %.2f", none / a100);
    cr_assert(v100 / a100 > 1.5 && v100 / a100 < 2.6, "a model not named: factor 1, %.2f",
              v100 / a100);
}

/* A --speed-by-gpu list that is not NAME=FACTOR,... with factors in (0, 1000] is refused before
 * the job starts (exit 2, the usage). */
Test(train_mlp, speed_by_gpu_refuses_a_bad_list)
{
    static const char *const bad[] = {"a100",   "a100=",    "=1",          "a100=0",
                                      "a100=x", "a100=1,",  "a-100=1",     "t4=1001",
                                      "a100=1;t4=2", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1"};
    struct run r;
    static struct series s;
    run_up(&r);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *argv[] = {r.bin, "--speed-by-gpu", (char *)bad[i], NULL};
        pid_t pid = jobtest_spawn(argv, r.sock, r.ckdir, r.log);
        cr_assert_eq(jobtest_drive(r.jc, pid, RUN_TIMEOUT_S, &s, NULL, NULL), 2, "'%s'", bad[i]);
    }
    char *ok[] = {r.bin, "--speed-by-gpu", "a100=1,t4=4.5", "--steps", "0", NULL};
    setenv("RINGMASTER_GPU_MODEL", "a100", 1);
    pid_t pid = jobtest_spawn(ok, r.sock, r.ckdir, r.log);
    int status = jobtest_drive(r.jc, pid, RUN_TIMEOUT_S, &s, NULL, NULL);
    if (status != 0)
        jobtest_dump(r.log);
    cr_assert_eq(status, 0, "a good list: runs (0 steps)");
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

Test(train_mlp, checkpoint_exit_on_two_ranks_restart_on_one)
{
    resize(2, 1);
}

Test(train_mlp, checkpoint_exit_on_four_ranks_restart_on_two)
{
    resize(4, 2);
}

/* Runs train-mlp on one rank with --checkpoint-every; returns its exit status. */
static int run_periodic(struct run *r, long steps, struct series *s)
{
    char stepbuf[32];
    snprintf(stepbuf, sizeof(stepbuf), "%ld", steps);
    char *argv[] = { "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1", r->bin,
                     "--steps", stepbuf, "--params", "2048", "--checkpoint-every", "25",
                     "--print-every", "25", NULL };
    pid_t pid = jobtest_spawn(argv, r->sock, r->ckdir, r->log);
    int status = jobtest_drive(r->jc, pid, RUN_TIMEOUT_S, s, NULL, NULL);
    if (status != 0)
        jobtest_dump(r->log);
    return status;
}

/* The step recorded in the checkpoint file (its fourth header word), or -1. */
static long checkpoint_file_step(const struct run *r)
{
    char path[256];
    long long hdr[4] = {0};
    snprintf(path, sizeof(path), "%s/train-mlp.ckpt", r->ckdir);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(hdr, sizeof(hdr), 1, f) : 0;
    if (f)
        fclose(f);
    return got == 1 ? (long)hdr[3] : -1;
}

/* A job that dies between checkpoints restarts from the last periodic one: after 60 steps
 * with --checkpoint-every 25 the file holds step 50, and the next run starts at 51. */
Test(train_mlp, periodic_checkpoints_survive_an_unplanned_end)
{
    struct run r;
    struct series *s = calloc(1, sizeof(*s));
    run_up(&r);
    cr_assert_eq(run_periodic(&r, 60, s), 0);
    cr_assert_eq(checkpoint_file_step(&r), 50, "the last periodic checkpoint is at step 50");
    s->n = 0;
    cr_assert_eq(run_periodic(&r, 70, s), 0);
    cr_assert_gt(s->n, 0);
    cr_assert_eq(s->r[0].step, 51, "the restart begins right after the checkpoint, not at %ld",
                 (long)s->r[0].step);
    cr_assert_eq(s->r[s->n - 1].step, 70);
    free(s);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

struct suspend_plan {
    int phase;
    long step;
    double at;
    double asked;       /* when SUSPEND was given */
    double suspend_s;   /* SUSPEND given -> job suspended */
    double resume_s;    /* RESUME given -> job running again */
};

/* Suspends past step 60, holds 300 ms, resumes, checkpoints 80 steps later. */
static void suspend_midrun(struct jobchan *jc, struct series *s, void *ctx)
{
    struct suspend_plan *p = ctx;
    long last = s->n ? s->r[s->n - 1].step : 0;
    if (p->phase == 0 && last >= 60) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_SUSPEND), 0);
        p->asked = jobchan_state_since(jc);
        p->phase = 1;
    } else if (p->phase == 1 && jobchan_state(jc) == JOBCHAN_SUSPENDED) {
        p->step = last;
        p->at = jobtest_now();
        p->suspend_s = jobchan_state_since(jc) - p->asked;
        p->phase = 2;
    } else if (p->phase == 2 && jobtest_now() - p->at > 0.3) {
        cr_assert_eq(last, p->step, "no step while suspended");
        cr_assert_eq(jobchan_command(jc, JOBCHAN_RESUME), 0);
        p->asked = jobchan_state_since(jc);
        p->phase = 3;
    } else if (p->phase == 3 && p->resume_s == 0.0 && jobchan_state(jc) == JOBCHAN_RUNNING) {
        p->resume_s = jobchan_state_since(jc) - p->asked;
    } else if (p->phase == 3 && last >= p->step + 80) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_CHECKPOINT_EXIT), 0);
        p->phase = 4;
    }
}

Test(train_mlp, suspend_in_place_and_resume_on_two_ranks)
{
    struct run r;
    static struct series s;
    struct suspend_plan p = { 0 };
    run_up(&r);
    cr_assert_eq(launch(&r, 2, 100000, &s, suspend_midrun, &p), 0);
    cr_assert_eq(p.phase, 4, "stopped in phase %d", p.phase);
    size_t i = 0;
    while (i < s.n && s.r[i].step <= p.step)
        i++;
    cr_assert_geq(i, 20);
    cr_assert_eq(s.r[i].step, p.step + 1, "resumed at the next step");
    double before = jobtest_mean_loss(&s, i - 20, 20), after = jobtest_mean_loss(&s, i, 20);
    double end = jobtest_mean_loss(&s, s.n - 20, 20);
    cr_log_info("suspend at step %ld: loss before %.4f, after %.4f, end %.4f; suspend took "
                "%.2f ms, resume %.2f ms (as the channel saw them)", p.step, before, after, end,
                p.suspend_s * 1e3, p.resume_s * 1e3);
    cr_assert_gt(p.resume_s, 0.0, "the channel saw the job running again");
    cr_assert_lt(after, 1.5 * before, "resume lost progress: %.4f vs %.4f", after, before);
    cr_assert_lt(end, before, "loss keeps falling: %.4f vs %.4f", end, before);
    FILE *f = fopen(r.log, "r");
    char line[512];
    int said = 0;
    while (f && fgets(line, sizeof(line), f))
        said |= strstr(line, "moved to host") != NULL;
    if (f)
        fclose(f);
    cr_assert(said, "the job freed its buffers");
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}

/* The CUDA + NCCL build, where nvcc built it and a GPU is present: 64 MiB of extra GPU
 * state goes through a suspend, then a checkpoint restarts on one rank; the loss falls. */
Test(train_cuda, suspend_resume_and_restart_on_the_gpu)
{
    struct run r;
    static struct series s, b;
    struct suspend_plan p = { 0 };
    run_up_bin(&r, "examples/train-cuda");
    if (access(r.bin, X_OK) != 0) {
        jobchan_destroy(r.jc);
        jobtest_rmtree(r.dir);
        cr_skip_test("train-cuda not built (no nvcc)");
    }
    snprintf(r.state_mb, sizeof(r.state_mb), "64");
    int status = launch(&r, 1, 100000, &s, suspend_midrun, &p);
    if (status == EXIT_NO_GPU) {
        jobchan_destroy(r.jc);
        jobtest_rmtree(r.dir);
        cr_skip_test("no usable CUDA device");
    }
    cr_assert_eq(status, 0);
    cr_assert_eq(p.phase, 4, "stopped in phase %d", p.phase);
    long k = jobchan_checkpoint_step(r.jc);
    cr_assert_eq(launch(&r, 1, k + 60, &b, NULL, NULL), 0);
    cr_assert_eq(b.r[0].step, k + 1);
    double first = jobtest_mean_loss(&s, 0, 10), end = jobtest_mean_loss(&b, b.n - 20, 20);
    cr_log_info("train-cuda: loss first 10 steps %.4f, end %.4f", first, end);
    cr_assert_lt(end, 0.3 * first);
    jobchan_destroy(r.jc);
    jobtest_rmtree(r.dir);
}
