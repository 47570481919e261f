/* libringjob against the real jobchan over a real unix socket: the job is a forked
 * child of the test that links libringjob, the worker's end runs in the test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobchan.h"
#include "jobtest.h"
#include "ringjob.h"

static int job_reports(void)
{
    if (ringjob_init() < 0 || !ringjob_connected())
        return 10;
    for (long step = 1; step <= 300; step++) {
        ringjob_report(step, 1.0 / (double)step, 32, 0.001);
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 11;
    }
    ringjob_finalize();
    return 0;
}

Test(ringjob, reports_arrive_in_order)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    int status = jobtest_drive(f.jc, jobtest_fork(&f, job_reports), 20.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(s.n, 300, "got %zu reports", s.n);
    for (size_t i = 0; i < s.n; i++) {
        cr_assert_eq(s.r[i].step, (long)i + 1);
        cr_assert_float_eq(s.r[i].loss, 1.0 / (double)(i + 1), 1e-9);
        cr_assert_eq(s.r[i].samples, 32);
    }
    cr_assert_str_eq(jobchan_job_id(f.jc), "job_42");
    cr_assert_eq(jobchan_world_size(f.jc), 1);
    cr_assert(jobchan_said_bye(f.jc));
    cr_assert_eq(jobchan_state(f.jc), JOBCHAN_GONE);
    cr_assert_eq(jobchan_dropped(f.jc), 0);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* Reports gradient statistics twice and its largest local batch twice (the last counts), and
 * reads the batch it was given. */
static int job_grad(void)
{
    setenv("RINGJOB_BATCH", "512", 1);
    if (ringjob_init() < 0 || !ringjob_connected() || ringjob_batch() != 512)
        return 10;
    if (ringjob_report_grad(-1, 2) != -1 || ringjob_report_grad(0, 0) != -1 ||
        !strstr(ringjob_error(), "ringjob_report_grad"))
        return 11;
    if (ringjob_report_fits(0) != -1 || !strstr(ringjob_error(), "ringjob_report_fits"))
        return 16;
    for (long step = 1; step <= 20; step++) {
        ringjob_report(step, 1.0, 32, 0.001);
        if (step == 5 && ringjob_report_grad(2.0, 300.0) < 0)
            return 12;
        if (step == 15 && ringjob_report_grad(1.5, 0.25) < 0)
            return 13;
        if ((step == 3 && ringjob_report_fits(96) < 0) ||
            (step == 9 && ringjob_report_fits(64) < 0))
            return 15;
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 14;
    }
    ringjob_finalize();
    return 0;
}

Test(ringjob, gradient_statistics_and_fits_reach_the_worker_and_the_batch_the_job)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    double sqr = -1, var = -1;
    cr_assert_eq(jobchan_grad(f.jc, &sqr, &var), 0, "none before the job says");
    cr_assert_eq(jobchan_fits(f.jc), 0, "no fit before the job says");
    int status = jobtest_drive(f.jc, jobtest_fork(&f, job_grad), 20.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(s.n, 20);
    cr_assert_eq(jobchan_grad(f.jc, &sqr, &var), 1);
    cr_assert_float_eq(sqr, 1.5, 1e-12);
    cr_assert_float_eq(var, 0.25, 1e-12);
    cr_assert_eq(jobchan_fits(f.jc), 64, "its last FITS record");
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* Saves a checkpoint at steps 10 and 20 while it trains on (ringjob_checkpoint_saved). */
static int job_saves(void)
{
    if (ringjob_init() < 0 || ringjob_checkpoint_saved(-1) == 0)
        return 10;
    for (long step = 1; step <= 30; step++) {
        ringjob_report(step, 1.0, 32, 0.001);
        if (step % 10 == 0 && step < 30 && ringjob_checkpoint_saved(step) < 0)
            return 11;
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 12;
    }
    ringjob_finalize();
    return 0;
}

Test(ringjob, a_checkpoint_saved_while_training_reaches_the_worker)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    long step = -1;
    double at = -1, t0 = jobtest_now();
    cr_assert_eq(jobchan_last_checkpoint(f.jc, &step, &at), 0, "none before the job says");
    int status = jobtest_drive(f.jc, jobtest_fork(&f, job_saves), 20.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(s.n, 30, "the job trained on after its checkpoints");
    cr_assert_eq(jobchan_last_checkpoint(f.jc, &step, &at), 1);
    cr_assert_eq(step, 20, "the last one");
    cr_assert(at >= t0 && at <= jobtest_now(), "when its record arrived");
    cr_assert_neq(jobchan_state(f.jc), JOBCHAN_CHECKPOINTED, "not a planned stop");
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* Identity broadcast of a one-process job: counts the bytes agreed on. */
static size_t agreed_bytes;
static int count_bcast(void *buf, size_t len, void *ctx)
{
    (void)buf;
    (void)ctx;
    agreed_bytes += len;
    return 0;
}

/* Reports its global batch as the step's samples; a new batch holds from the step after
 * the poll that took it, with its learning-rate factor; exits once it ran 10 steps at 256. */
static int job_batch_changes(void)
{
    setenv("RINGJOB_BATCH", "128", 1);
    setenv("RINGJOB_INIT_BATCH", "128", 1);
    unsetenv("RINGJOB_LR_SCALE");
    if (ringjob_init() < 0 || ringjob_batch() != 128 || ringjob_lr_scale() != 1.0)
        return 10;
    ringjob_set_broadcast(count_bcast, NULL);
    long at256 = 0;
    for (long step = 1; step <= 20000 && at256 < 10; step++) {
        long m = ringjob_batch();
        double lr = ringjob_lr_scale();
        if ((m == 512 && lr != 2.0) || (m == 256 && lr != 1.5))
            return 11;
        at256 += m == 256;
        ringjob_report(step, 1.0, m, 0.001);
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 12;
        usleep(500);
    }
    ringjob_finalize();
    return at256 == 10 && agreed_bytes > 0 ? 0 : 13;
}

struct batch_plan {
    int phase;
    long took_512; /* the step after which the job said it took 512 */
};

/* batch 512 (factor left to libringjob) after step 10, then 256 at factor 1.5 once 512 ran */
static void change_batches(struct jobchan *jc, struct series *s, void *ctx)
{
    struct batch_plan *p = ctx;
    long last = s->n ? s->r[s->n - 1].step : 0, step;
    if (p->phase == 0 && last >= 10) {
        cr_assert_eq(jobchan_batch(jc, 512, 0), 0);
        p->phase = 1;
    } else if (p->phase == 1 && jobchan_batched(jc, &step) == 512) {
        p->took_512 = step;
        p->phase = 2;
    } else if (p->phase == 2 && s->n && s->r[s->n - 1].samples == 512) {
        cr_assert_eq(jobchan_batch(jc, 256, 1.5), 0);
        p->phase = 3;
    }
}

Test(ringjob, batch_changes_in_place_at_the_next_step)
{
    struct jobtest_fixture f;
    static struct series s;
    struct batch_plan p = {0};
    jobtest_fixture_up(&f);
    long step;
    cr_assert_eq(jobchan_batched(f.jc, &step), 0, "none before the job says");
    cr_assert_eq(step, -1);
    cr_assert_eq(jobchan_batch(f.jc, 0, 1.0), -1, "a batch of nothing");
    cr_assert_eq(errno, EINVAL);
    cr_assert_eq(jobchan_batch(f.jc, 64, -1.0), -1, "a negative factor");
    int status =
        jobtest_drive(f.jc, jobtest_fork(&f, job_batch_changes), 30.0, &s, change_batches, &p);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(p.phase, 3);
    cr_assert_eq(jobchan_batched(f.jc, &step), 256);
    /* one launch, no gap: every step once, 128 up to the step that took 512, then 512 */
    for (size_t i = 0; i < s.n; i++) {
        cr_assert_eq(s.r[i].step, (long)i + 1);
        long want = s.r[i].step <= p.took_512 ? 128 : s.r[i].step <= step ? 512 : 256;
        cr_assert_eq(s.r[i].samples, want, "step %ld ran %ld", s.r[i].step, s.r[i].samples);
    }
    cr_assert_eq(s.r[s.n - 1].samples, 256);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* Runs until told to checkpoint; counts suspensions; exit 0 only if each suspension was
 * followed by a resume and the checkpoint was acknowledged. */
static int job_obedient(void)
{
    if (ringjob_init() < 0)
        return 10;
    int suspended = 0;
    for (long step = 1; step <= 20000; step++) {
        ringjob_report(step, 1.0, 8, 0.001);
        int d = ringjob_poll(step);
        if (d == RINGJOB_SUSPEND) {
            suspended++;
            d = ringjob_suspended_wait();
        }
        if (d == RINGJOB_CHECKPOINT_EXIT) {
            char path[PATH_MAX];
            if (ringjob_checkpoint_path("state", path, sizeof(path)) < 0)
                return 12;
            FILE *fp = fopen(path, "w");
            if (!fp)
                return 13;
            fprintf(fp, "%ld\n", step);
            fclose(fp);
            if (ringjob_checkpoint_done(step) < 0)
                return 14;
            ringjob_finalize();
            return suspended == 1 ? RINGJOB_EXIT_PLANNED : 20 + suspended;
        }
        if (d < 0)
            return 15;
        usleep(500);
    }
    return 16;
}

struct plan {
    int phase;
    long suspended_step;
    double suspended_at;
    long resumed_reports;
};

/* suspend at step 20, hold 150 ms (no report may arrive), resume, checkpoint 20 steps later */
static void suspend_resume_checkpoint(struct jobchan *jc, struct series *s, void *ctx)
{
    struct plan *p = ctx;
    long last = s->n ? s->r[s->n - 1].step : 0;
    if (p->phase == 0 && last >= 20) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_SUSPEND), 0);
        p->phase = 1;
    } else if (p->phase == 1 && jobchan_state(jc) == JOBCHAN_SUSPENDED) {
        p->suspended_step = last;
        p->suspended_at = jobtest_now();
        p->phase = 2;
    } else if (p->phase == 2 && jobtest_now() - p->suspended_at > 0.15) {
        cr_assert_eq(last, p->suspended_step, "reports while suspended");
        cr_assert_eq(jobchan_command(jc, JOBCHAN_RESUME), 0);
        p->phase = 3;
    } else if (p->phase == 3 && last >= p->suspended_step + 20) {
        cr_assert_eq(jobchan_state(jc), JOBCHAN_RUNNING);
        cr_assert_eq(jobchan_command(jc, JOBCHAN_CHECKPOINT_EXIT), 0);
        p->phase = 4;
    }
}

Test(ringjob, suspend_resume_then_checkpoint_exit)
{
    struct jobtest_fixture f;
    static struct series s;
    struct plan p = { 0 };
    jobtest_fixture_up(&f);
    pid_t pid = jobtest_fork(&f, job_obedient);
    int status = jobtest_drive(f.jc, pid, 20.0, &s, suspend_resume_checkpoint, &p);
    cr_assert_eq(p.phase, 4, "stopped in phase %d", p.phase);
    cr_assert_eq(status, RINGJOB_EXIT_PLANNED, "job exit %d", status);
    cr_assert_eq(jobchan_state(f.jc), JOBCHAN_CHECKPOINTED);
    long ck = jobchan_checkpoint_step(f.jc);
    cr_assert_geq(ck, p.suspended_step + 20);
    cr_assert_eq(s.r[s.n - 1].step, ck, "no step after the checkpoint");
    for (size_t i = 1; i < s.n; i++)
        cr_assert_eq(s.r[i].step, s.r[i - 1].step + 1, "steps are contiguous");
    char path[256];
    snprintf(path, sizeof(path), "%s/state", f.ckdir);
    FILE *fp = fopen(path, "r");
    long saved = -1;
    cr_assert_not_null(fp);
    cr_assert_eq(fscanf(fp, "%ld", &saved), 1);
    fclose(fp);
    cr_assert_eq(saved, ck);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

static void checkpoint_on_sight(struct jobchan *jc, struct series *s, void *ctx)
{
    int *sent = ctx;
    if (!*sent && jobchan_state(jc) == JOBCHAN_SUSPENDED) {
        cr_assert_eq(jobchan_command(jc, JOBCHAN_CHECKPOINT_EXIT), 0);
        *sent = 1;
    }
    (void)s;
}

Test(ringjob, command_given_before_the_job_connects_and_checkpoint_while_suspended)
{
    struct jobtest_fixture f;
    static struct series s;
    int sent = 0;
    jobtest_fixture_up(&f);
    cr_assert_eq(jobchan_command(f.jc, JOBCHAN_SUSPEND), 0);
    pid_t pid = jobtest_fork(&f, job_obedient);
    int status = jobtest_drive(f.jc, pid, 20.0, &s, checkpoint_on_sight, &sent);
    cr_assert(sent);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(jobchan_checkpoint_step(f.jc), 1, "suspended at its first boundary");
    cr_assert_eq(s.n, 1);
    cr_assert_eq(jobchan_command(f.jc, JOBCHAN_RESUME), -1, "nothing to resume after");
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

Test(ringjob, resume_after_checkpoint_is_refused_and_states_have_names)
{
    struct jobtest_fixture f;
    jobtest_fixture_up(&f);
    cr_assert_str_eq(jobchan_state_name(jobchan_state(f.jc)), "waiting");
    cr_assert_eq(jobchan_command(f.jc, JOBCHAN_RESUME), 0, "resume of nothing is harmless");
    cr_assert_str_eq(jobchan_state_name(JOBCHAN_CHECKPOINTED), "checkpointed");
    cr_assert_str_eq(jobchan_state_name((enum jobchan_state)99), "unknown");
    jobchan_destroy(f.jc);
    cr_assert_eq(access(f.sock, F_OK), -1, "destroy unlinks the socket");
    jobtest_rmtree(f.dir);
}

static int connect_raw(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    return fd;
}

static void pump(struct jobchan *jc, int turns)
{
    for (int i = 0; i < turns; i++)
        jobchan_run(jc, 5);
}

Test(ringjob, protocol_errors_drop_the_connection_not_the_channel)
{
    struct jobtest_fixture f;
    jobtest_fixture_up(&f);
    int a = connect_raw(f.sock);
    pump(f.jc, 3);
    int b = connect_raw(f.sock);
    pump(f.jc, 3);
    char c;
    cr_assert_eq(recv(b, &c, 1, 0), 0, "a second connection is closed");
    close(b);
    cr_assert_eq(send(a, "HELLO 1 j 2 7 dp\nREPORT x y\n", 28, 0), 28);
    pump(f.jc, 3);
    cr_assert_str_eq(jobchan_job_id(f.jc), "j");
    cr_assert_eq(jobchan_connected(f.jc), 0, "bad REPORT drops the job");
    cr_assert(strstr(jobchan_error(f.jc), "REPORT") != NULL, "%s", jobchan_error(f.jc));
    close(a);
    a = connect_raw(f.sock);
    char big[2048];
    memset(big, 'x', sizeof(big));
    cr_assert_eq(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
    pump(f.jc, 5);
    cr_assert_eq(jobchan_connected(f.jc), 0, "an endless record drops the job");
    close(a);
    a = connect_raw(f.sock);
    cr_assert_eq(send(a, "HELLO 1 k 1 8 dp\nREPORT 5 0.25 4 0.5\n", 37, 0), 37);
    pump(f.jc, 3);
    struct jobchan_report r;
    cr_assert_eq(jobchan_take_reports(f.jc, &r, 1), 1, "the channel still works");
    cr_assert_eq(r.step, 5);
    cr_assert_float_eq(r.loss, 0.25, 1e-12);
    close(a);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* The worker's end of the batch records: BATCHED is read (a malformed one drops the job, as
 * every bad record does), BATCH is written at once to a connected job, or at its HELLO before
 * WELCOME when given before it connected. */
Test(ringjob, batch_records_at_the_workers_end)
{
    struct jobtest_fixture f;
    jobtest_fixture_up(&f);
    cr_assert_eq(jobchan_batch(f.jc, 96, 0), 0, "kept for the job's HELLO");
    int a = connect_raw(f.sock);
    cr_assert_eq(send(a, "HELLO 1 j 2 7 dp\n", 17, 0), 17);
    pump(f.jc, 3);
    char got[128] = "";
    ssize_t n = recv(a, got, sizeof(got) - 1, MSG_DONTWAIT);
    cr_assert_gt(n, 0);
    got[n] = '\0';
    cr_assert_str_eq(got, "BATCH 96 0\nWELCOME 1\n");
    cr_assert_eq(jobchan_batch(f.jc, 128, 1.5), 0);
    n = recv(a, got, sizeof(got) - 1, MSG_DONTWAIT);
    cr_assert_gt(n, 0);
    got[n] = '\0';
    cr_assert_str_eq(got, "BATCH 128 1.5\n", "sent at once");
    cr_assert_eq(send(a, "BATCHED 7 128\n", 14, 0), 14);
    pump(f.jc, 3);
    long step;
    cr_assert_eq(jobchan_batched(f.jc, &step), 128);
    cr_assert_eq(step, 7);
    cr_assert_eq(send(a, "BATCHED 9 0\n", 12, 0), 12);
    pump(f.jc, 3);
    cr_assert_eq(jobchan_connected(f.jc), 0, "a batch of nothing drops the job");
    cr_assert(strstr(jobchan_error(f.jc), "BATCHED") != NULL, "%s", jobchan_error(f.jc));
    close(a);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* The job's end: BATCH records it cannot take are ignored, the good one holds from the first
 * poll. The worker here is a raw socket of the test. */
static int job_batch_records(void)
{
    setenv("RINGJOB_BATCH", "32", 1);
    if (ringjob_init() < 0 || ringjob_batch() != 32)
        return 10;
    ringjob_report(1, 1.0, 32, 0.001);
    if (ringjob_poll(1) != RINGJOB_CONTINUE)
        return 11;
    if (ringjob_batch() != 256 || ringjob_lr_scale() != 1.5)
        return 12;
    ringjob_finalize();
    return 0;
}

Test(ringjob, batch_records_at_the_jobs_end)
{
    char dir[64], path[96];
    jobtest_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%.60s/raw.sock", dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 1) == 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setenv("RINGJOB_SOCKET", path, 1);
        setenv("RINGJOB_WORLD_SIZE", "1", 1);
        _exit(job_batch_records());
    }
    int c = accept(l, NULL, NULL);
    cr_assert_geq(c, 0);
    /* the good one first: any of the others taken would replace it */
    static const char recs[] = "BATCH 256 1.5\nBATCH -3 1\nBATCH 64 nan\nBATCH 9 1 extra\n"
                               "BATCH x\nBATCH 0 1\nWELCOME 1\n";
    cr_assert_eq(send(c, recs, sizeof(recs) - 1, 0), (ssize_t)sizeof(recs) - 1);
    char sink[4096], all[8192] = "";
    size_t len = 0;
    ssize_t n;
    while ((n = recv(c, sink, sizeof(sink), 0)) > 0 && len + (size_t)n < sizeof(all) - 1) {
        memcpy(all + len, sink, (size_t)n);
        len += (size_t)n;
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "job exit %d", WEXITSTATUS(status));
    cr_assert(strstr(all, "\nBATCHED 1 256\n"), "the job says it took it: %s", all);
    close(c);
    close(l);
    jobtest_rmtree(dir);
}

/* A pipe from the test to its forked job: the job waits for a byte at chosen points. */
static int gate[2] = { -1, -1 };
static int done_pipe[2] = { -1, -1 };

static void gate_wait(void)
{
    char c;
    if (read(gate[0], &c, 1) != 1)
        _exit(30);
}

static int job_withdrawn(void)
{
    if (ringjob_init() < 0)
        return 10;
    ringjob_report(1, 1.0, 1, 0.01);
    gate_wait(); /* the worker says SUSPEND then RESUME before this job polls */
    if (ringjob_poll(1) != RINGJOB_CONTINUE)
        return 11;
    ringjob_report(2, 0.9, 1, 0.01);
    if (ringjob_poll(2) != RINGJOB_CONTINUE)
        return 12;
    ringjob_finalize();
    return 0;
}

static void drive_until(struct jobchan *jc, enum jobchan_state st, struct series *s)
{
    double end = jobtest_now() + 10.0;
    while (jobchan_state(jc) != st && jobtest_now() < end) {
        jobchan_run(jc, 10);
        s->n += jobchan_take_reports(jc, s->r + s->n, 16);
    }
    cr_assert_eq(jobchan_state(jc), st, "state %s", jobchan_state_name(jobchan_state(jc)));
}

Test(ringjob, suspend_withdrawn_before_the_job_takes_it)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    cr_assert_eq(pipe(gate), 0);
    pid_t pid = jobtest_fork(&f, job_withdrawn);
    drive_until(f.jc, JOBCHAN_RUNNING, &s);
    cr_assert_eq(jobchan_command(f.jc, JOBCHAN_SUSPEND), 0);
    cr_assert_eq(jobchan_state(f.jc), JOBCHAN_SUSPENDING);
    cr_assert_eq(jobchan_command(f.jc, JOBCHAN_RESUME), 0);
    cr_assert_eq(jobchan_state(f.jc), JOBCHAN_RESUMING);
    usleep(20000); /* both commands sit in the job's socket */
    cr_assert_eq(write(gate[1], "g", 1), 1);
    int status = jobtest_drive(f.jc, pid, 10.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "job exit %d", status);
    cr_assert_eq(s.n, 2);
    cr_assert_eq(jobchan_state(f.jc), JOBCHAN_GONE, "running, then gone");
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

#define FLOOD 20000

/* Reports FLOOD steps while the worker reads nothing, then says so and finalizes. */
static int job_flood(void)
{
    if (ringjob_init() < 0)
        return 10;
    double t0 = jobtest_now();
    for (long step = 1; step <= FLOOD; step++) {
        ringjob_report(step, 1.0, 1, 0.0);
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 11;
    }
    if (jobtest_now() - t0 > 5.0)
        return 12; /* a worker that does not read must not stall training */
    if (write(done_pipe[1], "d", 1) != 1)
        return 13;
    ringjob_finalize();
    return 0;
}

Test(ringjob, reports_beyond_the_buffers_are_dropped_and_counted_not_blocking)
{
    struct jobtest_fixture f;
    static struct series s;
    char c;
    jobtest_fixture_up(&f);
    cr_assert_eq(pipe(done_pipe), 0);
    pid_t pid = jobtest_fork(&f, job_flood);
    drive_until(f.jc, JOBCHAN_RUNNING, &s);
    cr_assert_eq(read(done_pipe[0], &c, 1), 1, "the job went through without the worker");
    int status = jobtest_drive(f.jc, pid, 20.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "job exit %d", status);
    unsigned long dropped = jobchan_dropped(f.jc);
    size_t left = jobchan_pending_reports(f.jc); /* beyond what the series holds */
    cr_log_info("flood: %zu reports received, %zu not taken, %lu dropped", s.n, left, dropped);
    cr_assert_gt(dropped, 0);
    cr_assert_eq(s.n + left + dropped, FLOOD, "every report arrived or was counted");
    for (size_t i = 1; i < s.n; i++)
        cr_assert_gt(s.r[i].step, s.r[i - 1].step, "in order");
    cr_assert(jobchan_said_bye(f.jc));
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}
