/* libringjob without its worker: standalone (no socket), an unreachable worker, SIGUSR1 as
 * the planned stop of a job no worker asks (and not while one is there), and the shared
 * library's face (its soname, its exports). The job is a forked child of the test. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobchan.h"
#include "jobtest.h"
#include "ringjob.h"

static int job_standalone(void)
{
    unsetenv("RINGJOB_SOCKET");
    setenv("RINGJOB_WORLD_SIZE", "4", 1);
    setenv("RINGJOB_PLAN", "zero2", 1);
    if (ringjob_init() < 0 || ringjob_connected())
        return 10;
    if (ringjob_world_size() != 4 || ringjob_lr_scale() != 4.0 || ringjob_rank() != 0)
        return 11;
    if (strcmp(ringjob_plan(), "zero2") || strcmp(ringjob_job_id(), "job_42"))
        return 12;
    for (long step = 1; step <= 10; step++) {
        if (ringjob_report(step, 0.5, 1, 0.1) < 0 || ringjob_poll(step) != RINGJOB_CONTINUE)
            return 13;
    }
    char buf[16];
    if (ringjob_checkpoint_path("a/b", buf, sizeof(buf)) != -1)
        return 14;
    if (ringjob_checkpoint_path("a-very-long-checkpoint-name", buf, sizeof(buf)) != -1)
        return 15;
    if (ringjob_checkpoint_done(10) != 0 || ringjob_init() != -1)
        return 16;
    ringjob_finalize();
    setenv("RINGJOB_LR_SCALE", "2.5", 1);
    if (ringjob_init() < 0 || ringjob_lr_scale() != 2.5)
        return 17;
    ringjob_finalize();
    setenv("RINGJOB_LR_SCALE", "-1", 1);
    if (ringjob_init() != -1 || !strstr(ringjob_error(), "RINGJOB_LR_SCALE"))
        return 18;
    unsetenv("RINGJOB_LR_SCALE");
    if (ringjob_init() < 0 || ringjob_batch() != 0 || ringjob_report_grad(1, 1) != 0)
        return 19; /* no batch chosen; statistics go nowhere without a worker */
    ringjob_finalize();
    setenv("RINGJOB_BATCH", "0", 1);
    if (ringjob_init() != -1 || !strstr(ringjob_error(), "RINGJOB_BATCH"))
        return 20;
    /* A batch model: square-root scaling from M0 unless the worker gives the factor. */
    setenv("RINGJOB_BATCH", "512", 1);
    setenv("RINGJOB_INIT_BATCH", "128", 1);
    if (ringjob_init() < 0 || ringjob_init_batch() != 128 || ringjob_lr_scale() != 2.0)
        return 21;
    ringjob_finalize();
    setenv("RINGJOB_LR_SCALE", "1.5", 1);
    if (ringjob_init() < 0 || ringjob_lr_scale() != 1.5)
        return 22;
    ringjob_finalize();
    unsetenv("RINGJOB_LR_SCALE");
    setenv("RINGJOB_INIT_BATCH", "-3", 1);
    if (ringjob_init() != -1 || !strstr(ringjob_error(), "RINGJOB_INIT_BATCH"))
        return 23;
    unsetenv("RINGJOB_INIT_BATCH");
    /* The most examples a rank computes at once: 0 (no bound) unless the worker says. */
    if (ringjob_init() < 0 || ringjob_max_local_batch() != 0)
        return 24;
    ringjob_finalize();
    setenv("RINGJOB_MAX_LOCAL_BATCH", "48", 1);
    if (ringjob_init() < 0 || ringjob_max_local_batch() != 48)
        return 25;
    ringjob_finalize();
    setenv("RINGJOB_MAX_LOCAL_BATCH", "0", 1);
    if (ringjob_init() != -1 || !strstr(ringjob_error(), "RINGJOB_MAX_LOCAL_BATCH"))
        return 26;
    unsetenv("RINGJOB_MAX_LOCAL_BATCH");
    unsetenv("RINGJOB_BATCH");
    return 0;
}

Test(ringjob, standalone_without_a_socket)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    int status = jobtest_drive(f.jc, jobtest_fork(&f, job_standalone), 10.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "standalone check %d failed", status);
    cr_assert_eq(s.n, 0);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

static volatile sig_atomic_t own_handler_ran;

static void own_handler(int sig)
{
    (void)sig;
    own_handler_ran = 1;
}

/* SIGUSR1 without a worker is a planned stop, once (ringjob.h); a program that handles
 * SIGUSR1 itself keeps its handler and its meaning. */
static int job_stop_signal(void)
{
    unsetenv("RINGJOB_SOCKET");
    if (ringjob_init() < 0 || ringjob_poll(1) != RINGJOB_CONTINUE)
        return 10;
    raise(SIGUSR1);
    if (ringjob_poll(2) != RINGJOB_CHECKPOINT_EXIT)
        return 11;
    if (ringjob_poll(3) != RINGJOB_CONTINUE)
        return 12; /* asked once, answered once */
    ringjob_finalize();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (ringjob_init() < 0)
        return 13;
    raise(SIGUSR1);
    if (!own_handler_ran || ringjob_poll(4) != RINGJOB_CONTINUE)
        return 14;
    ringjob_finalize();
    return 0;
}

Test(ringjob, sigusr1_without_a_worker_checkpoints_and_exits)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    int status = jobtest_drive(f.jc, jobtest_fork(&f, job_stop_signal), 10.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "check %d failed", status);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* With its worker on the channel the worker decides: SIGUSR1 changes nothing (a stop it did
 * not ask for would fail the job). */
static int job_signalled_with_worker(void)
{
    if (ringjob_init() < 0 || !ringjob_connected())
        return 10;
    raise(SIGUSR1);
    for (long step = 1; step <= 20; step++) {
        ringjob_report(step, 1.0, 32, 0.001);
        if (ringjob_poll(step) != RINGJOB_CONTINUE)
            return 11;
    }
    ringjob_finalize();
    return 0;
}

Test(ringjob, sigusr1_with_a_worker_is_the_workers_to_decide)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    int status =
        jobtest_drive(f.jc, jobtest_fork(&f, job_signalled_with_worker), 10.0, &s, NULL, NULL);
    cr_assert_eq(status, 0, "check %d failed", status);
    cr_assert_eq(s.n, 20, "every step reported");
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

static int job_unreachable(void)
{
    setenv("RINGJOB_SOCKET", "/nonexistent/ringjob.sock", 1);
    return ringjob_init() == -1 && strstr(ringjob_error(), "connect") ? 0 : 1;
}

Test(ringjob, unreachable_worker_fails_init_with_text)
{
    struct jobtest_fixture f;
    static struct series s;
    jobtest_fixture_up(&f);
    cr_assert_eq(jobtest_drive(f.jc, jobtest_fork(&f, job_unreachable), 10.0, &s, NULL, NULL), 0);
    jobchan_destroy(f.jc);
    jobtest_rmtree(f.dir);
}

/* The library's soname carries its ABI version, and libringjob.so (the name programs
 * link with) leads to it. */
Test(ringjob, shared_library_has_a_versioned_soname)
{
    char so[PATH_MAX], cmd[PATH_MAX + 64], line[512];
    jobtest_build_path(so, sizeof(so), "lib/libringjob.so");
    snprintf(cmd, sizeof(cmd), "readelf -d %s", so);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int found = 0;
    while (fgets(line, sizeof(line), p))
        found |= strstr(line, "(SONAME)") && strstr(line, "[libringjob.so.0]");
    pclose(p);
    cr_assert(found, "%s has the soname libringjob.so.0", so);
}

Test(ringjob, shared_library_exports_only_its_prefix)
{
    char so[PATH_MAX], cmd[PATH_MAX + 64], sym[256];
    jobtest_build_path(so, sizeof(so), "lib/libringjob.so");
    snprintf(cmd, sizeof(cmd), "nm -D --defined-only %s", so);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int n = 0;
    char addr[64], type[8];
    while (fscanf(p, "%63s %7s %255s", addr, type, sym) == 3) {
        if (!strcmp(sym, "RINGJOB_1"))
            continue;
        cr_expect(!strncmp(sym, "ringjob_", 8), "exported: %s", sym);
        n++;
    }
    cr_assert_eq(pclose(p), 0, "nm failed on %s", so);
    cr_assert_geq(n, 15, "only %d symbols", n);
}
