/* workload: the jobs a simulation replays, either a Poisson process over job
 * templates or a slice of a real trace (CSV). */
#ifndef RINGMASTER_SIM_WORKLOAD_H
#define RINGMASTER_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "simulate/simulate.h"
#include "template.h"

struct workload {
    char name[128]; /* the scenario: "poisson-MEAN-JOBS" or the trace's base name */
    struct simulate_job_spec *jobs;
    size_t njobs;
    size_t skipped; /* trace rows left out (filters, bad rows, no duration) */
    /* A trace's jobs that run at their own measured speed model (speed_theta), and those
     * whose work is their measured course (course); 0 for other workloads. */
    size_t own_speed, with_course;
};

void workload_destroy(struct workload *w);

/* n jobs with exponential inter-arrival times of mean mean_s (the first at 0),
 * each from templates[i % ntemplates] when ntemplates == 1, else a template drawn
 * uniformly; epochs drawn per template. Same seed, same jobs. GPU bounds are the
 * template's, capped at cluster_gpus. Returns NULL with a message in err. */
struct workload *workload_poisson(const struct template *templates, size_t ntemplates,
                                  double mean_s, size_t n, uint64_t seed, int cluster_gpus,
                                  char *err, size_t errlen);

/* How to slice a trace: keep rows with start <= submit < start + window, duration
 * >= min_duration and num_gpus <= max_gpus, then the first max_jobs of them.
 * Zero means no limit (for window, max_jobs, max_gpus). */
struct workload_trace_opts {
    double start_s;
    double window_s;
    size_t max_jobs;
    double min_duration_s;
    int max_gpus;
    int skip_bad_rows; /* 0: a malformed row is an error; 1: reported on bad and skipped */
};

/* Reads a CSV trace with header columns job_id, submit_time_s, num_gpus and
 * duration_s (any order, extra columns ignored, no quoted fields); an optional
 * column user names each job's user (numbered 1, 2, ... by first appearance;
 * empty: user 0, none). A row with an
 * empty duration (a job that never ran) is skipped. Each kept job trains
 * t->epochs epochs with the template's speed model scaled so that its run time
 * at num_gpus equals duration_s; it may use 1..max(num_gpus, t->max_gpus) GPUs
 * (capped at cluster_gpus; rows asking for more than the cluster are skipped).
 * Optional columns: elastic (0: rigid, exactly num_gpus), min_gpus, max_gpus (an
 * elastic job's bounds); and what ringmasterd measured of the job (docs/whatif.md):
 * speed_theta ("t0;...;t5", its fitted speed model, speed.h) with batch_per_gpu and
 * dataset_size, which replace the template's speed model, and course ("w:steps[:s];..."
 * the minibatches it ran at each world size), whose examples become its work. The
 * model is then scaled by one factor so that the course (else num_gpus) takes
 * duration_s: the job keeps its own speed-up with GPUs and its measured run time.
 * Submit times are shifted so the first kept job arrives at 0. Messages for bad
 * rows ("FILE:LINE: ...") go to bad if not NULL. Returns NULL with a message in
 * err (no file, no header, a bad row when !skip_bad_rows, no job left). */
struct workload *workload_trace_read(FILE *in, const char *name,
                                     const struct workload_trace_opts *o, const struct template *t,
                                     int cluster_gpus, FILE *bad, char *err, size_t errlen);

/* workload_trace_read() on a file; the scenario name is the file's base name
 * without its extension. */
struct workload *workload_trace_load(const char *path, const struct workload_trace_opts *o,
                                     const struct template *t, int cluster_gpus, FILE *bad,
                                     char *err, size_t errlen);

/* Gives every job the trace did not give a user (user 0) one of users 1..k:
 * round-robin in submission order when nmix is 0, else drawn from seed with
 * probabilities proportional to mix[0..k) (so user 1 of mix 10,1 submits
 * about 10 times the jobs of user 2). Returns 0, or -1 for bad arguments. */
int workload_assign_users(struct workload *w, int k, const double *mix, size_t nmix,
                          uint64_t seed);

/* The distinct user ids of w's jobs (at most max, in order of appearance) into
 * ids; returns how many. */
size_t workload_users(const struct workload *w, int64_t *ids, size_t max);

/* Gives every job a GPU utilisation drawn uniformly in [lo, hi) from seed
 * (for gandiva's packing; the templates carry none, 0 means unknown). */
void workload_draw_gpu_util(struct workload *w, double lo, double hi, uint64_t seed);

/* Gives a share of the jobs (each with probability share, drawn from seed) a deadline, as
 * ElasticFlow's evaluation does: submit + lambda x its time alone at its requested GPUs (its
 * true model: sched_speed_rate(), its goodput with a batch model), lambda uniform in
 * [lo, hi]. The others get none (0). */
void workload_draw_deadlines(struct workload *w, double share, double lo, double hi,
                             uint64_t seed);

/* The job's seconds alone on its requested GPUs by its true model (0 when it has none). */
double workload_time_alone(const struct simulate_job_spec *j);

#endif
