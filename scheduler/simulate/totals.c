/* totals: the figures of a finished run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "simulate_int.h"

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v. */
static double percentile(const double *v, size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

int simulate__fill_totals(struct sim *s, struct simulate_result *r)
{
    double *jct = malloc((s->njobs ? s->njobs : 1) * sizeof(*jct));
    if (!jct)
        return simulate__fail(s, ENOMEM, "out of memory", -1);
    double sum_jct = 0, sum_q = 0, gpu_s = 0, first = INFINITY, last = 0, sum_other = 0;
    size_t nother = 0;
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sim_job *j = &s->jobs[i];
        struct simulate_job_result *o = &r->jobs[i];
        o->id = j->spec->id;
        o->submit_time = j->spec->submit_time;
        o->start_time = j->started ? j->start_time : -1.0;
        o->finish_time = j->done ? j->finish_time : -1.0;
        o->jct_s = j->finish_time - j->spec->submit_time;
        o->queue_s = j->start_time - j->spec->submit_time;
        o->gpu_seconds = j->gpu_seconds;
        o->resizes = j->resizes;
        o->first100_s = j->first100_time - j->spec->submit_time;
        o->steps = j->steps_done;
        o->suspends = j->suspends;
        o->packs = j->packs;
        o->migrations = j->migrations;
        o->user = j->spec->user;
        o->max_wait_s = j->max_wait;
        o->deadline = j->spec->deadline;
        o->deadline_met = o->deadline > 0 && o->finish_time <= o->deadline;
        r->deadlines += o->deadline > 0;
        r->deadlines_met += o->deadline_met;
        if (!(o->deadline > 0)) {
            sum_other += o->jct_s;
            nother++;
        }
        r->max_queue_s = fmax(r->max_queue_s, j->max_wait);
        r->avg_first100_s += o->first100_s / (double)s->njobs;
        r->steps_per_s += o->steps;
        jct[i] = o->jct_s;
        sum_jct += o->jct_s;
        sum_q += o->queue_s;
        gpu_s += j->gpu_seconds;
        first = fmin(first, o->submit_time);
        last = fmax(last, o->finish_time);
    }
    if (s->njobs > 0) {
        qsort(jct, s->njobs, sizeof(*jct), dbl_cmp);
        r->avg_jct_s = sum_jct / (double)s->njobs;
        r->avg_jct_other_s = nother ? sum_other / (double)nother : 0.0;
        r->median_jct_s = percentile(jct, s->njobs, 0.5);
        r->p95_jct_s = percentile(jct, s->njobs, 0.95);
        r->p99_jct_s = percentile(jct, s->njobs, 0.99);
        r->avg_queue_s = sum_q / (double)s->njobs;
        r->makespan_s = last - first;
        if (r->makespan_s > 0.0 && s->total_gpus > 0) {
            r->utilization = gpu_s / ((double)s->total_gpus * r->makespan_s);
            r->idle_wanted_frac = s->idle_wanted_gpu_s / ((double)s->total_gpus * r->makespan_s);
            r->idle_usable_frac = s->idle_usable_gpu_s / ((double)s->total_gpus * r->makespan_s);
        }
        r->steps_per_s = r->makespan_s > 0.0 ? r->steps_per_s / r->makespan_s : 0.0;
        r->jobs_per_hour = r->makespan_s > 0.0 ? 3600.0 * (double)s->njobs / r->makespan_s : 0.0;
    }
    free(jct);
    r->resizes = s->resizes;
    r->rounds = s->rounds;
    r->max_gpus_in_use = s->max_in_use;
    r->suspends = s->suspends;
    r->packs = s->packs;
    r->pack_reverts = s->pack_reverts;
    r->migrations = s->migrations;
    r->batch_changes = s->batch_changes;
    r->preemptions = s->preemptions;
    r->lost_preemption_gpu_s = s->lost_preempt_gpu_s;
    r->lost_redo_gpu_s = s->lost_redo_gpu_s;
    r->max_jobs_on_gpu = s->max_per_gpu;
    r->fit_node = s->fit_node;
    r->on_node = s->on_node;
    r->fit_island = s->fit_island;
    r->on_island = s->on_island;
    return 0;
}
