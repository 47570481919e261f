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

/* Ends the mpirun of one pid file if it is still the process that was started. */
static void end_orphan(const char *jobs, const char *name)
{
    char path[PATH_LEN + 300];
    int pid;
    long long started;
    snprintf(path, sizeof(path), "%.1100s/%.200s/mpirun.pid", jobs, name);
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%d %lld", &pid, &started) == 2;
    if (f)
        fclose(f);
    if (ok && pid > 1 && started >= 0 && launch_start_time(pid) == started) {
        log_warn("job %s: mpirun %d of an earlier worker still runs; ending it", name, pid);
        launch_kill(pid, SIGTERM);
        for (int i = 0; i < 100 && launch_start_time(pid) == started; i++)
            usleep(50000);
        if (launch_start_time(pid) == started)
            launch_kill(pid, SIGKILL);
    }
    unlink(path);
}

void pidfile_end_orphans(const char *state_dir)
{
    char jobs[PATH_LEN];
    snprintf(jobs, sizeof(jobs), "%.1000s/jobs", state_dir);
    DIR *d = opendir(jobs);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            end_orphan(jobs, e->d_name);
    if (d)
        closedir(d);
}
