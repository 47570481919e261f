/* calib: the forecasts checked inside a simulation (`ringmaster-sim run --forecast-every S`,
 * docs/forecast.md "Calibration in the simulator"). Every S seconds of simulated time, after a
 * round, the core's outlook_run() forecasts the round's snapshot, as ringmasterd's forecast
 * thread does; when the run is over, each forecast is scored against what the run did: the
 * error of its P50 and whether the truth fell at or below its P90, by how far ahead it was
 * made. */
#ifndef RINGMASTER_SIM_CALIB_H
#define RINGMASTER_SIM_CALIB_H

#include <stdio.h>

#include "simulate/outlook.h"
#include "simulate/simulate.h"

/* How far ahead of the event a forecast was made: < 10 min, 10-60 min, 1-4 h, > 4 h. */
#define CALIB_BUCKETS 4

/* Returns the bucket of lead_s (0..CALIB_BUCKETS-1). */
int calib_bucket(double lead_s);

/* "<10m", "10-60m", "1-4h", ">4h". */
const char *calib_bucket_name(int k);

struct calib_cell {
    long n;            /* forecasts scored */
    long within;       /* truths at or below the P90 */
    double median_rel; /* median |truth - P50| / lead (NAN when n is 0) */
};

struct calib_figures {
    struct calib_cell start[CALIB_BUCKETS], finish[CALIB_BUCKETS];
    /* The goal: the starts against the forecast made one hour earlier (per job, the
     * latest made at least an hour before its start, within one period of it). */
    struct calib_cell start_1h;
    long forecasts; /* passes made */
    double cpu_s;   /* their CPU time */
};

struct calib;

/* Forecasts every every_s seconds of simulated time with c (its policy the run's); with
 * arrivals_s > 0, with the jobs expected to come (outlook_config.future): those submitted in
 * the last arrivals_s, each again arrivals_s later (the recent past repeated). Returns NULL on
 * ENOMEM. */
struct calib *calib_create(const struct outlook_config *c, double every_s, double arrivals_s);

void calib_destroy(struct calib *c);

/* The engine's round callback (simulate_round_f); arg is the calib. */
void calib_on_round(const struct sched_snapshot *snap, const struct sched_decision *d, void *arg);

/* Scores the forecasts made against the run's result r into *out. Returns 0, or -1 (ENOMEM,
 * or a forecast that failed: the text in err). */
int calib_score(const struct calib *c, const struct simulate_result *r, struct calib_figures *out,
                char *err, size_t errlen);

/* Prints the figures of one policy as lines "forecast policy=P event=E lead=L n=N
 * within_p90=X median_rel_err=Y". */
void calib_print(FILE *out, const char *policy, const struct calib_figures *f);

#endif
