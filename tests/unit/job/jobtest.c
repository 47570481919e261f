/* Helpers of the job tests. See jobtest.h. */
#include "jobtest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double jobtest_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void jobtest_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/ringjob-test-XXXXXX");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void jobtest_rmtree(const char *dir)
{
    if (!strncmp(dir, "/tmp/ringjob-test-", 18))
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

void jobtest_build_path(char *buf, size_t len, const char *rel)
{
    const char *b = getenv("BUILD");
    snprintf(buf, len, "%s/%s", b && *b ? b : "build", rel);
}

static void child_env(const char *sock, const char *ckdir)
{
    if (sock)
        setenv("RINGJOB_SOCKET", sock, 1);
    else
        unsetenv("RINGJOB_SOCKET");
    setenv("RINGJOB_CHECKPOINT_DIR", ckdir, 1);
    setenv("RINGJOB_JOB_ID", "job-test", 1);
    unsetenv("RINGJOB_WORLD_SIZE"); /* train-mlp takes mpirun's world size */
    unsetenv("RINGJOB_LR_SCALE");
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("OMPI_MCA_btl", "self,vader", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    /* OpenMPI's own allocations are never freed: no leak report under ASan; the CUDA
     * runtime maps memory in ASan's shadow gap unless it is left unprotected. */
    setenv("ASAN_OPTIONS", "detect_leaks=0:protect_shadow_gap=0", 1);
}

pid_t jobtest_spawn(char *const argv[], const char *sock, const char *ckdir, const char *log)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid > 0)
        return pid;
    setpgid(0, 0);
    child_env(sock, ckdir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void take_all(struct jobchan *jc, struct series *s)
{
    size_t room = sizeof(s->r) / sizeof(s->r[0]) - s->n;
    s->n += jobchan_take_reports(jc, s->r + s->n, room);
}

int jobtest_drive(struct jobchan *jc, pid_t pid, double timeout_s, struct series *s,
                  jobtest_hook_f hook, void *ctx)
{
    double end = jobtest_now() + timeout_s;
    int status = 0, exited = 0;
    while (jobtest_now() < end) {
        jobchan_run(jc, 10);
        take_all(jc, s);
        if (hook)
            hook(jc, s, ctx);
        if (!exited && waitpid(pid, &status, WNOHANG) == pid)
            exited = 1;
        if (exited && !jobchan_connected(jc))
            break;
    }
    for (int i = 0; i < 20 && exited && jobchan_connected(jc); i++)
        jobchan_run(jc, 10);
    take_all(jc, s);
    if (!exited) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double jobtest_mean_loss(const struct series *s, size_t from, size_t count)
{
    double sum = 0.0;
    size_t n = 0;
    for (size_t i = from; i < from + count && i < s->n; i++, n++)
        sum += s->r[i].loss;
    return n ? sum / (double)n : -1.0;
}

void jobtest_dump(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    if (!f)
        return;
    fprintf(stderr, "--- %s\n", log);
    while (fgets(line, sizeof(line), f))
        fputs(line, stderr);
    fclose(f);
}

void jobtest_fixture_up(struct jobtest_fixture *f)
{
    char err[256] = "";
    jobtest_tmpdir(f->dir, sizeof(f->dir));
    snprintf(f->sock, sizeof(f->sock), "%s/job.sock", f->dir);
    snprintf(f->ckdir, sizeof(f->ckdir), "%s/ckpt", f->dir);
    f->jc = jobchan_create(f->sock, err, sizeof(err));
    cr_assert_not_null(f->jc, "jobchan_create: %s", err);
}

pid_t jobtest_fork(const struct jobtest_fixture *f, int (*fn)(void))
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setenv("RINGJOB_SOCKET", f->sock, 1);
        setenv("RINGJOB_CHECKPOINT_DIR", f->ckdir, 1);
        setenv("RINGJOB_JOB_ID", "job 42", 1);
        setenv("RINGJOB_WORLD_SIZE", "1", 1);
        _exit(fn());
    }
    return pid;
}
