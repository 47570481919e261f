/* report: runs workloads under policies and prints the figures as a table,
 * CSV (header: scenario,policy,avg_jct_s,median_jct_s,p95_jct_s,makespan_s,
 * avg_queue_s,utilization,resizes,p99_jct_s,max_queue_s,fairness) or JSON. */
#ifndef RINGMASTER_SIM_REPORT_H
#define RINGMASTER_SIM_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "calib.h"
#include "options.h"
#include "simulate/simulate.h"
#include "workload.h"

#define REPORT_CSV_HEADER                                                                          \
    "scenario,policy,avg_jct_s,median_jct_s,p95_jct_s,makespan_s,avg_queue_s,utilization,"      \
    "resizes,p99_jct_s,max_queue_s,fairness"

struct report_params {
    double interval_s;
    double resize_cost_s;
    uint64_t seed;
    double min_resize_interval_s; /* passed to the policy (simulate_config) */
    double quantum_s;             /* time-slice length; <= 0: the engine's default */
    double suspend_cost_s;        /* used when suspend_cost_set */
    int suspend_cost_set;
    /* Imperfect knowledge and the guarantees (simulate_config). */
    double estimate_error;
    int estimate_live;
    double max_wait_s;
    int show_type_speeds; /* 1: the policies see each job's true per-GPU-model speeds */
    int speed_live;       /* 1 (--speed live): the policies learn each job's speed */
    int hide_deadlines;   /* 1 (--deadlines-hidden): the policies do not see deadlines */
    int topology_blind;   /* 1 (--topology-blind): the policies see no islands nor switches */
    int estimate_declared; /* 1 (pollux --estimate declared): simulate_config's */
    /* Checkpoints and preemption (simulate_config; --checkpoint-every, --min-runtime,
     * --preempt-order). */
    double checkpoint_every_s;
    double min_runtime_s;
    enum sched_preempt_order preempt_order;
    /* Forecasts checked inside the run (calib.h): every forecast_every_s seconds (0: none),
     * forecast_runs runs each, drawn with forecast_spread (< 0: estimate_error when > 0,
     * else the core's default). */
    double forecast_every_s;
    int forecast_runs;
    double forecast_spread;
    double forecast_arrivals_s; /* > 0: with the arrivals of the last this many seconds again */
};

/* The range of lambda of a drawn deadline (submit + lambda x time alone; ElasticFlow's). */
#define REPORT_DEADLINE_LO 0.5
#define REPORT_DEADLINE_HI 1.5

struct report_row {
    char scenario[128];
    char policy[32];
    struct simulate_result *result; /* owned by the row */
    /* Finish-time fairness (Themis): over the users, the worst ratio of a
     * user's mean JCT to its mean JCT alone on its share of the cluster (a
     * second simulation of its jobs alone on that many GPUs); NAN with
     * fewer than two users. */
    double fairness;
    int64_t worst_user;
    /* A trace's jobs at their own measured speed model, and with their measured course
     * (workload.h); JSON only (jobs_own_speed, jobs_with_course). */
    size_t own_speed, with_course;
    /* The forecasts' scores (report_params.forecast_every_s > 0). */
    int has_calib;
    struct calib_figures calib;
};

/* The view of job speeds a policy gets: EXPLORED for "exploratory", else PROFILE. */
enum simulate_view report_view_for(const struct sched_policy_ops *p);

/* Simulates w under policy p on cluster c. Returns 0 and fills row, or -1 with err. */
int report_run(const struct workload *w, const struct options_cluster *c,
               const struct sched_policy_ops *p, const struct report_params *prm,
               struct report_row *row, char *err, size_t errlen);

void report_row_clear(struct report_row *row);

/* The first nodes of c holding gpus GPUs in all (the last one cut), into a
 * new array out (free with options_cluster_free). Returns 0, or -1. */
int report_subcluster(const struct options_cluster *c, int gpus, struct options_cluster *out);

/* Prints rows in the format (CSV: the header, then one line per row). */
void report_print(FILE *out, enum options_format f, const struct report_row *rows, size_t n);

#define REPORT_JOBS_HEADER                                                                         \
    "scenario,policy,job_id,submit_s,start_s,finish_s,jct_s,queue_s,gpu_seconds,resizes,"          \
    "first100_s,suspends,packs,migrations,user,max_wait_s,deadline_s,deadline_met"

/* Writes every job of every row as CSV (header REPORT_JOBS_HEADER). */
void report_print_jobs(FILE *out, const struct report_row *rows, size_t n);

#endif
