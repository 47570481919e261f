/* pidfile: the pid file of a job's mpirun, and the end at start of the mpiruns an earlier
 * worker left behind (see pidfile.h). */
#include "pidfile.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "launch.h"
#include "log.h"

#define PATH_LEN 1200

void pidfile_write(const char *dir, pid_t pid)
{
    char path[PATH_LEN + 16];
    snprintf(path, sizeof(path), "%.1100s/mpirun.pid", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%d %lld\n", (int)pid, launch_start_time(pid));
    fclose(f);
}

void pidfile_remove(const char *dir)
{
    char path[PATH_LEN + 16];
    snprintf(path, sizeof(path), "%.1100s/mpirun.pid", dir);
    unlink(path);
}

/* The mpiruns an earlier worker left: pid and start time of each still running. */
#define ORPHANS_MAX 256
struct orphans {
    int n;
    pid_t pid[ORPHANS_MAX];
    long long started[ORPHANS_MAX];
    char name[ORPHANS_MAX][64];
};

/* Reads one pid file: its mpirun joins o when it is still the process that was started
 * (else, pid reuse or gone, the file only goes). */
static void find_orphan(const char *jobs, const char *name, struct orphans *o)
{
    char path[PATH_LEN + 300];
    int pid;
    long long started;
    snprintf(path, sizeof(path), "%.1100s/%.200s/mpirun.pid", jobs, name);
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%d %lld", &pid, &started) == 2;
    if (f)
        fclose(f);
    if (ok && pid > 1 && started >= 0 && launch_start_time(pid) == started &&
        o->n < ORPHANS_MAX) {
        o->pid[o->n] = pid;
        o->started[o->n] = started;
        snprintf(o->name[o->n], sizeof(o->name[o->n]), "%.63s", name);
        o->n++;
    }
    unlink(path);
}

/* Whether orphan i of o is still the process that was started. */
static int alive(const struct orphans *o, int i)
{
    return launch_start_time(o->pid[i]) == o->started[i];
}

/* How many of o still run. */
static int running(const struct orphans *o)
{
    int n = 0;
    for (int i = 0; i < o->n; i++)
        n += alive(o, i);
    return n;
}

/* Sends sig to each of o still running, then waits up to wait_s for them all to end. */
static void signal_all(const struct orphans *o, int sig, double wait_s)
{
    for (int i = 0; i < o->n; i++)
        if (alive(o, i))
            launch_kill(o->pid[i], sig);
    for (int k = 0; k < (int)(wait_s * 20) && running(o) > 0; k++)
        usleep(50000);
}

void pidfile_end_orphans(const char *state_dir)
{
    char jobs[PATH_LEN];
    snprintf(jobs, sizeof(jobs), "%.1000s/jobs", state_dir);
    DIR *d = opendir(jobs);
    struct dirent *e;
    static struct orphans o;
    o.n = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            find_orphan(jobs, e->d_name, &o);
    if (d)
        closedir(d);
    if (o.n == 0)
        return;
    for (int i = 0; i < o.n; i++)
        log_warn("job %s: mpirun %d of an earlier worker still runs; asking it to checkpoint "
                 "and exit", o.name[i], (int)o.pid[i]);
    /* SIGUSR1: libringjob's planned stop without a worker (ringjob.h), at the next
     * minibatch boundary, so that the training done since its last checkpoint is kept for
     * the job's restart; then SIGTERM, then SIGKILL, each to what still runs. All of them
     * at once: the worker's start waits for the slowest, not for their sum. */
    signal_all(&o, SIGUSR1, PIDFILE_CHECKPOINT_WAIT_S);
    int left = running(&o);
    if (left > 0)
        log_warn("%d of them did not stop at a checkpoint in %.0f s; ending them", left,
                 PIDFILE_CHECKPOINT_WAIT_S);
    signal_all(&o, SIGTERM, 5.0);
    signal_all(&o, SIGKILL, 0.0);
}
