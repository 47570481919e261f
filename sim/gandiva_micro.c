/* gandiva_micro: `ringmaster-sim gandiva-micro`, the Gandiva seed's micro-benchmarks and
 * cluster trace run, ours beside its claims (see gandiva_micro.h, docs/gandiva.md). */
#include "gandiva_micro.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "simulate/simulate.h"
#include "template.h"
#include "workload.h"

#define MICRO_EPOCHS 20.0   /* about 52 min alone: no job finishes in the window */
#define MICRO_WINDOW_S 1800.0
#define GANDIVA_MAX_JOBS 64

/* The last round at or before the window: each job's epochs done. */
struct window {
    double at, limit;
    size_t n;
    int64_t id[GANDIVA_MAX_JOBS];
    double epochs[GANDIVA_MAX_JOBS];
};

static void on_round_window(const struct sched_snapshot *snap, const struct sched_decision *d,
                            void *arg)
{
    struct window *w = arg;

    (void)d;
    if (snap->now > w->limit + 1e-9 || snap->njobs > GANDIVA_MAX_JOBS)
        return;
    w->at = snap->now;
    w->n = snap->njobs;
    for (size_t i = 0; i < snap->njobs; i++) {
        w->id[i] = snap->jobs[i].id;
        w->epochs[i] = snap->jobs[i].epochs_done;
    }
}

/* n one-GPU ResNet-110 jobs (Table 1's step times) arriving at 0. */
static int micro_jobs(struct simulate_job_spec *jobs, size_t n, double util, char *err,
                      size_t errlen)
{
    struct template t;

    if (template_get("resnet110-steps", &t, err, errlen))
        return -1;
    for (size_t i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof(jobs[i]));
        jobs[i] = (struct simulate_job_spec){ .id = (int64_t)i + 1, .requested_gpus = 1,
                                              .min_gpus = 1, .max_gpus = 1, .epochs = MICRO_EPOCHS,
                                              .speed = t.speed, .gpu_util = util };
    }
    return 0;
}

/* Runs jobs on one node of gpus GPUs under policy name; fills w at the window. */
static struct simulate_result *micro_run(const char *policy, int gpus,
                                         const struct simulate_job_spec *jobs, size_t n,
                                         struct window *w, char *err, size_t errlen)
{
    struct sched_node node = { .id = 1, .ngpus = gpus, .up = 1 };
    struct simulate_config cfg;

    simulate_config_init(&cfg);
    cfg.nodes = &node;
    cfg.nnodes = 1;
    cfg.policy = sched_policy_find(policy);
    memset(w, 0, sizeof(*w));
    w->limit = MICRO_WINDOW_S;
    return simulate_run(&cfg, jobs, n, on_round_window, w, err, errlen);
}

static double alone_rate(const struct simulate_job_spec *j)
{
    return speed_epochs_per_second(&j->speed, 1);
}

int gandiva_micro_timeslice(struct gandiva_micro_timeslice *r, char *err, size_t errlen)
{
    struct simulate_job_spec jobs[6];
    struct window w6, w4;

    memset(r, 0, sizeof(*r));
    if (micro_jobs(jobs, 6, 0.0, err, errlen))
        return -1;
    struct simulate_result *a = micro_run("gandiva", 4, jobs, 6, &w6, err, errlen);
    struct simulate_result *b = a ? micro_run("fifo", 4, jobs, 4, &w4, err, errlen) : NULL;
    if (!a || !b) {
        simulate_result_destroy(a);
        return -1;
    }
    r->window_s = w6.at;
    r->min_share = INFINITY;
    for (size_t i = 0; i < w6.n; i++) {
        double share = w6.epochs[i] / (w6.at * alone_rate(&jobs[i]));
        r->rate_sliced += w6.epochs[i] / w6.at;
        r->min_share = fmin(r->min_share, share);
        r->max_share = fmax(r->max_share, share);
    }
    for (size_t i = 0; i < w4.n; i++)
        r->rate_exclusive += w4.epochs[i] / w4.at;
    r->suspends = a->suspends;
    simulate_result_destroy(a);
    simulate_result_destroy(b);
    return 0;
}

/* Sum over the window's jobs of epochs / (window * rate alone). */
static double normalised_sum(const struct window *w, const struct simulate_job_spec *jobs)
{
    double sum = 0.0;

    for (size_t i = 0; i < w->n; i++)
        sum += w->epochs[i] / (w->at * alone_rate(&jobs[w->id[i] - 1]));
    return sum;
}

int gandiva_micro_packing(double util, struct gandiva_micro_packing *r, char *err, size_t errlen)
{
    struct simulate_job_spec jobs[2];
    struct window wp, ws;

    memset(r, 0, sizeof(*r));
    r->util = util;
    if (micro_jobs(jobs, 2, util, err, errlen))
        return -1;
    struct simulate_result *a = micro_run("gandiva", 1, jobs, 2, &wp, err, errlen);
    if (!a)
        return -1;
    r->normalised = normalised_sum(&wp, jobs);
    r->packs = a->packs;
    r->reverts = a->pack_reverts;
    simulate_result_destroy(a);
    jobs[0].gpu_util = jobs[1].gpu_util = 0.0; /* unknown: never packed */
    struct simulate_result *b = micro_run("gandiva", 1, jobs, 2, &ws, err, errlen);
    if (!b)
        return -1;
    r->sliced = normalised_sum(&ws, jobs);
    r->model = 2.0 * simulate_pack_factor(util, util, 0.25);
    simulate_result_destroy(b);
    return 0;
}

/* ---- (c) the cluster run ----------------------------------------------- */

#define CLUSTER_NODES 4
#define CLUSTER_GPUS 8
#define CLUSTER_START_S 3000000.0
#define CLUSTER_WINDOW_S 28800.0
#define CLUSTER_UTIL_LO 0.2
#define CLUSTER_UTIL_HI 1.0

/* Progress of every active job at the last round within the horizon. */
struct progress {
    double limit, at;
    size_t cap, n;
    int64_t *id;
    double *frac;
};

static void on_round_progress(const struct sched_snapshot *snap, const struct sched_decision *d,
                              void *arg)
{
    struct progress *p = arg;

    (void)d;
    if (snap->now > p->limit + 1e-9 || snap->njobs > p->cap)
        return;
    p->at = snap->now;
    p->n = snap->njobs;
    for (size_t i = 0; i < snap->njobs; i++) {
        const struct sched_job *j = &snap->jobs[i];
        p->id[i] = j->id;
        p->frac[i] = j->epochs_done / (j->epochs_done + j->remaining_epochs);
    }
}

/* GPU-seconds of work of a trace job: its duration times its GPUs. */
static double job_work(const struct simulate_job_spec *j)
{
    return j->requested_gpus * j->epochs / speed_epochs_per_second(&j->speed, j->requested_gpus);
}

static const struct simulate_job_spec *find_job(const struct workload *w, int64_t id)
{
    for (size_t i = 0; i < w->njobs; i++)
        if (w->jobs[i].id == id)
            return &w->jobs[i];
    return NULL;
}

static double work_done(const struct workload *w, const struct simulate_result *r,
                        const struct progress *p)
{
    double done = 0.0;

    for (size_t i = 0; i < r->njobs; i++)
        if (r->jobs[i].finish_time <= p->at)
            done += job_work(find_job(w, r->jobs[i].id));
    for (size_t i = 0; i < p->n; i++)
        done += p->frac[i] * job_work(find_job(w, p->id[i]));
    return done;
}

static int cluster_one(const struct workload *w, const char *policy, double horizon,
                       struct gandiva_micro_cluster_fig *f, char *err, size_t errlen)
{
    struct options_cluster c;
    struct simulate_config cfg;
    struct progress p = { .limit = horizon, .cap = w->njobs };

    if (options_cluster_make(&c, CLUSTER_NODES, CLUSTER_GPUS))
        return -1;
    simulate_config_init(&cfg);
    cfg.nodes = c.nodes;
    cfg.nnodes = c.nnodes;
    cfg.policy = sched_policy_find(policy);
    p.id = calloc(w->njobs + 1, sizeof(*p.id));
    p.frac = calloc(w->njobs + 1, sizeof(*p.frac));
    struct simulate_result *r = NULL;
    if (p.id && p.frac)
        r = simulate_run(&cfg, w->jobs, w->njobs, on_round_progress, &p, err, errlen);
    if (r) {
        *f = (struct gandiva_micro_cluster_fig){ .avg_first100_s = r->avg_first100_s,
                                                 .work_rate = work_done(w, r, &p) / p.at,
                                                 .avg_jct_s = r->avg_jct_s,
                                                 .suspends = r->suspends, .packs = r->packs,
                                                 .reverts = r->pack_reverts,
                                                 .migrations = r->migrations };
    }
    simulate_result_destroy(r);
    free(p.id);
    free(p.frac);
    options_cluster_free(&c);
    return r ? 0 : -1;
}

int gandiva_micro_cluster_run(const char *trace, uint64_t seed, struct gandiva_micro_cluster *r,
                              char *err, size_t errlen)
{
    struct template t;
    struct workload_trace_opts o = { .start_s = CLUSTER_START_S, .window_s = CLUSTER_WINDOW_S,
                                     .min_duration_s = 60, .max_gpus = CLUSTER_GPUS };

    memset(r, 0, sizeof(*r));
    snprintf(r->trace, sizeof(r->trace), "%s", trace);
    r->horizon_s = CLUSTER_WINDOW_S;
    if (template_get("resnet110", &t, err, errlen))
        return -1;
    struct workload *w = workload_trace_load(trace, &o, &t, CLUSTER_NODES * CLUSTER_GPUS, stderr,
                                             err, errlen);
    if (!w)
        return -1;
    workload_draw_gpu_util(w, CLUSTER_UTIL_LO, CLUSTER_UTIL_HI, seed);
    r->njobs = w->njobs;
    int rc = cluster_one(w, "gandiva", r->horizon_s, &r->gandiva, err, errlen);
    if (rc == 0)
        rc = cluster_one(w, "fifo", r->horizon_s, &r->fifo, err, errlen);
    workload_draw_gpu_util(w, 0.0, 0.0, seed);
    if (rc == 0)
        rc = cluster_one(w, "gandiva", r->horizon_s, &r->slicing, err, errlen);
    workload_destroy(w);
    return rc;
}

/* ---- the subcommand ------------------------------------------------------ */

static const char usage[] =
    "usage: ringmaster-sim gandiva-micro [--trace FILE] [--seed N]\n"
    "\n"
    "The Gandiva seed's experiments with our core, ours beside its claims:\n"
    "  (a) 6 one-GPU ResNet-110 jobs time-sliced on a 4-GPU server (60 s quanta,\n"
    "      1 s suspend/resume) against 4 jobs alone;\n"
    "  (b) two 1-GPU jobs on one GPU: a light pair packed and kept, a heavy pair\n"
    "      packed, measured and reverted (interference model: docs/gandiva.md);\n"
    "  (c) a Philly slice (submit 3,000,000 s + 8 h, >= 60 s, <= 8 GPUs) on 4 x 8\n"
    "      GPUs under gandiva and fifo: time to the first 100 minibatches and work\n"
    "      done per second in the first 8 h (utilisations uniform 0.2..1, seeded).\n"
    "  --trace FILE  default $RINGMASTER_SHARED_DIR/traces/philly_pollux.csv\n"
    "  --seed N      utilisation seed of (c) (default 1)\n";

static void print_micro(const struct gandiva_micro_timeslice *ts,
                        const struct gandiva_micro_packing *p, size_t np)
{
    printf("(a) time-slicing, 6 jobs on 4 GPUs, first %.0f s\n", ts->window_s);
    printf("    %-44s %-12s %s\n", "", "ours", "seed");
    printf("    %-44s %-12.3f %s\n", "total rate, sliced / 4 exclusive",
           ts->rate_sliced / ts->rate_exclusive, "\"total throughput remains same\" (1.0)");
    printf("    %-44s %.3f-%.3f  %s\n", "each job's rate / alone (fair: 4/6 = 0.667)",
           ts->min_share, ts->max_share, "\"all jobs get equal time-share\"");
    printf("    %-44s %-12ld\n", "suspensions", ts->suspends);
    printf("(b) packing, 2 jobs on 1 GPU, first %.0f s: sum of normalised rates\n",
           MICRO_WINDOW_S);
    printf("    %-10s %-10s %-10s %-8s %-8s %s\n", "util", "packed", "sliced", "model",
           "packs", "verdict (seed: keep when app throughput is higher)");
    for (size_t i = 0; i < np; i++)
        printf("    %-10.2f %-10.3f %-10.3f %-8.3f %-8ld %s\n", p[i].util, p[i].normalised,
               p[i].sliced, p[i].model, p[i].packs, p[i].reverts ? "reverted" : "kept");
}

static void print_cluster(const struct gandiva_micro_cluster *c)
{
    const struct gandiva_micro_cluster_fig *g = &c->gandiva, *f = &c->fifo;

    printf("(c) %s: %zu jobs on 4 x 8 GPUs, horizon %.0f s\n", c->trace, c->njobs, c->horizon_s);
    printf("    %-36s %10s %10s %12s %s\n", "", "gandiva", "fifo", "ours", "seed");
    printf("    %-36s %10.1f %10.1f %11.1fx %s\n", "avg time to first 100 minibatches, min",
           g->avg_first100_s / 60, f->avg_first100_s / 60,
           f->avg_first100_s / g->avg_first100_s, "4.5x lower");
    printf("    %-36s %10.2f %10.2f %+11.1f%% %s\n", "work done / s in the horizon (GPUs)",
           g->work_rate, f->work_rate, 100 * (g->work_rate / f->work_rate - 1), "+26%");
    printf("    %-36s %10.2f %10.2f\n", "avg JCT, h", g->avg_jct_s / 3600, f->avg_jct_s / 3600);
    printf("    suspensions %ld, packings %ld (reverted %ld), migrations %ld under gandiva\n",
           g->suspends, g->packs, g->reverts, g->migrations);
    printf("    gandiva without packing (utilisation unknown): first 100 in %.1f min, work %.2f "
           "(%+.1f%% vs fifo), avg JCT %.2f h\n",
           c->slicing.avg_first100_s / 60, c->slicing.work_rate,
           100 * (c->slicing.work_rate / f->work_rate - 1), c->slicing.avg_jct_s / 3600);
}

static int parse(int argc, char **argv, char *trace, size_t len, uint64_t *seed)
{
    static const struct option opts[] = { { "trace", required_argument, NULL, 't' },
                                          { "seed", required_argument, NULL, 's' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    const char *dir = getenv("RINGMASTER_SHARED_DIR");
    long long n;
    int c;
    char err[128];

    snprintf(trace, len, "%s/traces/philly_pollux.csv", dir && *dir ? dir : "../shared");
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if (c == 't') {
            snprintf(trace, len, "%s", optarg);
        } else if (c == 's' && options_long(optarg, 0, INT64_MAX, &n, "--seed", err, 128) == 0) {
            *seed = (uint64_t)n;
        } else {
            fprintf(stderr, "gandiva-micro: %s\n", c == 's' ? err : "unknown option");
            return -1;
        }
    }
    return 0;
}

int gandiva_micro_main(int argc, char **argv)
{
    char trace[512], err[512];
    uint64_t seed = 1;
    int rc = parse(argc, argv, trace, sizeof(trace), &seed);
    struct gandiva_micro_timeslice ts;
    struct gandiva_micro_packing p[3];
    struct gandiva_micro_cluster c;
    static const double utils[3] = { 0.3, 0.5, 0.8 };

    if (rc) {
        fputs(usage, rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    if (gandiva_micro_timeslice(&ts, err, sizeof(err)))
        goto fail;
    for (size_t i = 0; i < 3; i++)
        if (gandiva_micro_packing(utils[i], &p[i], err, sizeof(err)))
            goto fail;
    print_micro(&ts, p, 3);
    if (gandiva_micro_cluster_run(trace, seed, &c, err, sizeof(err)))
        goto fail;
    print_cluster(&c);
    return 0;
fail:
    fprintf(stderr, "gandiva-micro: %s\n", err);
    return 1;
}
