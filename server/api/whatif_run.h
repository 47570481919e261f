/* whatif_run: the background half of what-if (docs/whatif.md). One run at a time: a thread
 * replays the run's trace under each of its policies in turn, one ringmaster-sim process
 * per policy at a lower CPU priority (nice 10), so that the HTTP threads and the live
 * scheduler keep the cores they need; each policy's figures are appended to the run's row as
 * its simulation ends (the progress GET shows), and the row ends 'done' or 'failed'. */
#ifndef RINGMASTER_API_WHATIF_RUN_H
#define RINGMASTER_API_WHATIF_RUN_H

#include "settings.h"

struct db_pool;
struct whatif_runner;

/* What a run replays: the trace (CSV text), the simulator's settings, the policies. All
 * borrowed for the call to whatif_runner_start(), which copies them. */
struct whatif_job {
    long long id;        /* the whatif_runs row */
    const char *trace;   /* CSV, ringmaster-sim run --trace */
    const char *cluster; /* --cluster */
    struct settings settings; /* the live ones: those with a simulator option are passed */
    const char *const *policies;
    int npolicies;
};

/* Borrows db. Fails the runs a previous server left 'running'. Returns NULL on ENOMEM. The
 * simulator is $RINGMASTER_SIM, else ringmaster-sim beside the running executable. */
struct whatif_runner *whatif_runner_create(struct db_pool *db);

/* Stops the run in progress (its simulator is killed, its row failed) and frees. NULL ok. */
void whatif_runner_destroy(struct whatif_runner *w);

/* 1 while a run is in progress. */
int whatif_runner_busy(struct whatif_runner *w);

/* Starts job in the background. Returns 0, or -1 when a run is in progress (EBUSY) or the
 * thread could not start (errno). */
int whatif_runner_start(struct whatif_runner *w, const struct whatif_job *job);

#endif
