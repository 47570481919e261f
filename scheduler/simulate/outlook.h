/* outlook: start and finish forecasts with their P50 and P90, made by simulating forward from a
 * live snapshot (docs/forecast.md). The snapshot's running jobs run at the start on the GPUs
 * they hold, its waiting jobs wait; the simulation engine (simulate.h) runs the snapshot's
 * policy forward K times, each run with every job's remaining work drawn from its uncertainty:
 * the estimate the policy plans with (sched_job.remaining_epochs) times exp(bias + sigma z),
 * sigma tight for a declared length and wide for a fit, a prior or the elapsed rule. The
 * policy is shown the estimate, as live; the engine trains the drawn truth. Future arrivals
 * are left out unless the caller gives the jobs it expects (outlook_config.future): a
 * forecast then says when a job starts and ends if nothing else is submitted.
 *
 * Pure: no I/O, no clock, no threads. Deterministic for a snapshot, a configuration and its
 * seed. */
#ifndef RINGMASTER_OUTLOOK_H
#define RINGMASTER_OUTLOOK_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"

#define OUTLOOK_MAX_RUNS 64

struct outlook_config {
    const struct sched_policy_ops *policy; /* the live policy */
    int runs;                              /* K, 1..OUTLOOK_MAX_RUNS (20) */
    double spread;          /* sigma of ln(actual / estimate) of a fit, prior or elapsed
                             * estimate: the cluster's finished jobs' (0.6) */
    double declared_spread; /* the same of a declared length (0.1) */
    double bias;            /* mean of ln(actual / estimate) (0) */
    double interval_s;      /* the engine's periodic round, > 0 (the live interval; 60) */
    double horizon_s;       /* how far ahead it simulates, > 0 (7 days): what has not
                             * started or finished by then is unknown */
    uint64_t seed;          /* (1) */
    /* Asked before each run (NULL: never): nonzero ends the forecast with ECANCELED, so that
     * a caller stopping need not wait for all K runs. */
    int (*stop)(void *arg);
    void *stop_arg;
    /* The jobs expected to arrive (NULL: none, future arrivals left out): nfuture jobs as a
     * snapshot would show them waiting, each submitted at its submit_time after snap->now
     * (e.g. the recent past repeated forward), ids apart from the snapshot's. They compete
     * in the runs like the others and get no forecast of their own. */
    const struct sched_job *future;
    size_t nfuture;
};

/* Fills *c with the defaults above (no policy). */
void outlook_config_init(struct outlook_config *c);

/* One job's forecast, on the snapshot's clock; < 0: unknown (a running job has no start; a
 * job whose draws do not mostly start or end within the horizon, or whose length nothing
 * tells, has none). */
struct outlook_job {
    int64_t id;
    double start_p50, start_p90;
    double finish_p50, finish_p90;
};

struct outlook {
    struct outlook_job *jobs; /* njobs entries, in snapshot order */
    size_t njobs;
    int runs; /* the runs made */
};

/* Forecasts every job of snap under c (a cluster without GPUs: every forecast unknown).
 * Returns a new outlook (outlook_destroy), or NULL with errno (EINVAL bad configuration,
 * ENOMEM, EPROTO the engine failed, ECANCELED c->stop said so) and a message in err. */
struct outlook *outlook_run(const struct sched_snapshot *snap, const struct outlook_config *c,
                            char *err, size_t errlen);

void outlook_destroy(struct outlook *o);

/* Job id's forecast in o, or NULL. */
const struct outlook_job *outlook_find(const struct outlook *o, int64_t id);

/* THE forecast finish of job id: its P50 and P90 into *p50 and *p90 (either may be NULL).
 * Returns 0, or -1 when o has no finish for it. */
int outlook_finish(const struct outlook *o, int64_t id, double *p50, double *p90);

/* The spread (sigma of ln(actual / estimate)) that n finished jobs' mean relative error of
 * their predicted finish, mean_error, measures: mean_error sqrt(pi / 2), within 0.02..3 (the
 * mean of |e^(sigma z) - 1| is about sigma sqrt(2 / pi) for a small sigma). Fewer than
 * OUTLOOK_SPREAD_MIN_N jobs, or no error: fallback. */
#define OUTLOOK_SPREAD_MIN_N 20
double outlook_spread(long n, double mean_error, double fallback);

/* The p-quantile (0..1) of v[0..n), linear between the order statistics around rank
 * p (n + 1) (the k-th of n draws is the k / (n + 1) quantile of the next); v is sorted in place;
 * entries < 0 (unknown) rank above every known one. Returns -1 when the quantile falls on an
 * unknown entry, or n is 0. */
double outlook_quantile(double *v, size_t n, double p);

#endif
