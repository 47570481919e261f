/* bench: times sched_decide() on a synthetic cluster and job mix (see bench.h).
 *
 * The snapshot: G GPUs as G/8 nodes of 8 (one node of G when G < 8); N active
 * jobs whose speed models are the resnet110 template's scaled by 0.5..2 with
 * 64 or 128 examples per GPU and datasets of 50,000..1,000,000 examples,
 * 10..200 epochs left, asking for 1, 2, 4 or 8 GPUs (1..16 allowed). A first
 * round from nothing sets the allocations; the timed rounds then run one minute
 * later on that state, as a steady-state round in the server would. */
#include "bench.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fnv.h"
#include "options.h"
#include "simulate/outlook.h"
#include "simulate/simulate.h"
#include "template.h"

static const char usage[] =
    "usage: ringmaster-sim bench-round --jobs N --gpus G [--policy P|all] [--repeat R]\n"
    "                                  [--reference] [--digest]\n"
    "\n"
    "Times full scheduling rounds (policy + placement) on a synthetic snapshot of\n"
    "N active jobs on G GPUs (G/8 nodes of 8). Prints each round's time, then\n"
    "round_us=MEDIAN on the last line.\n"
    "  --policy P   default precompute (else the core's first policy); all: every\n"
    "               policy, one line each: policy=P jobs=N gpus=G round_us=MEDIAN\n"
    "               min_us=MIN\n"
    "  --repeat R   timed rounds, default 5\n"
    "  --reference  also time a fixed reference computation before each round\n"
    "               (first line: reference build=plain|san) and add ratio=MIN/REF\n"
    "               reference_us=REF (REF: its least time) to each policy's line:\n"
    "               a round's cost in units of this machine's speed at that moment,\n"
    "               which bench/round-check.sh compares with bench/round-baseline\n"
    "  --digest     add digest=HEX: a hash of every decision of the run (the first\n"
    "               round's and each timed one's), to show that a change to the core\n"
    "               left its decisions as they were (bench/round-same.sh)\n"
    "  --forecast K also time the forecasts of that state (outlook_run, K runs, the\n"
    "               server's settings): forecast_cpu_s=C (CPU seconds of one pass),\n"
    "               idle_s=max(9C, 5) and core_share=C/(C+idle_s), the share of one\n"
    "               core the server's forecast thread then uses (docs/forecast.md)\n";

/* What bench_main was asked for, beyond the sizes. */
struct bench_opts {
    int repeat;
    int one;       /* one policy: its rounds and the single-policy format */
    int reference; /* --reference */
    int digest;    /* --digest */
    int forecast;  /* --forecast K: K runs (0: none) */
};

struct bench {
    struct options_cluster cluster;
    struct sched_job *jobs;
    struct sched_slot **slots;
    size_t njobs;
};

static void bench_free(struct bench *b)
{
    for (size_t i = 0; b->slots && i < b->njobs; i++)
        free(b->slots[i]);
    free(b->slots);
    free(b->jobs);
    options_cluster_free(&b->cluster);
}

static void synth_job(struct sched_job *j, size_t i, const struct template *t, uint64_t *rng)
{
    static const int req[] = {1, 2, 4, 8};
    memset(j, 0, sizeof(*j));
    j->id = (int64_t)i + 1;
    j->submit_time = (double)i;
    j->requested_gpus = req[simulate_rng_next(rng) % 4];
    j->min_gpus = 1;
    j->max_gpus = 16;
    j->elastic = 1;
    j->remaining_epochs = 10 + 190 * simulate_rng_uniform(rng);
    j->model_source = SCHED_MODEL_PROFILE;
    j->speed = t->speed;
    double f = 0.5 + 1.5 * simulate_rng_uniform(rng);
    for (int k = 0; k < SPEED_NFEATURES; k++)
        j->speed.theta[k] *= f;
    j->speed.batch_per_gpu = (simulate_rng_next(rng) & 1) ? 128 : 64;
    j->speed.dataset_size = 50000 + 950000 * simulate_rng_uniform(rng);
}

static int bench_init(struct bench *b, size_t jobs, int gpus, char *err, size_t len)
{
    struct template t;
    uint64_t rng = 42;
    memset(b, 0, sizeof(*b));
    if (template_get("resnet110", &t, err, len))
        return -1;
    if (options_cluster_make(&b->cluster, gpus < 8 ? 1 : (size_t)gpus / 8, gpus < 8 ? gpus : 8) ||
        !(b->jobs = calloc(jobs, sizeof(*b->jobs))) ||
        !(b->slots = calloc(jobs, sizeof(*b->slots)))) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    b->njobs = jobs;
    for (size_t i = 0; i < jobs; i++)
        synth_job(&b->jobs[i], i, &t, &rng);
    return 0;
}

static struct sched_snapshot snapshot_of(const struct bench *b, double now)
{
    return (struct sched_snapshot){
        .now = now,
        .seed = 1,
        .nodes = b->cluster.nodes,
        .nnodes = b->cluster.nnodes,
        .jobs = b->jobs,
        .njobs = b->njobs,
        .resize_cost_s = 10,
    };
}

/* Takes the decision's allocations as the jobs' current ones. */
static int adopt(struct bench *b, const struct sched_decision *d)
{
    for (size_t i = 0; i < b->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        free(b->slots[i]);
        b->slots[i] = NULL;
        if (a->gpus > 0 && !(b->slots[i] = malloc((size_t)a->gpus * sizeof(*a->slots))))
            return -1;
        if (a->gpus > 0)
            memcpy(b->slots[i], a->slots, (size_t)a->gpus * sizeof(*a->slots));
        b->jobs[i].cur_gpus = a->gpus;
        b->jobs[i].slots = b->slots[i];
    }
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double reference_work(void);

/* Folds decision d into *h: each assignment's every field (its slots and reason text, not
 * their addresses) and the decision's totals. */
static void digest_decision(uint64_t *h, const struct sched_decision *d)
{
    for (size_t i = 0; i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        int64_t v[] = {a->job_id,    a->gpus,          a->changed,   a->wanted,
                       a->plan.kind, a->plan.tp,       a->plan.pp,   a->plan.cpu_cores,
                       a->gpu_model, a->plan_changed,  a->suspended, a->resumed,
                       a->migrated,  (int64_t)a->pack, a->packed_with, a->forced};
        double x[] = {a->plan.host_mem_gb, a->batch};
        *h = fnv1a(*h, v, sizeof(v));
        *h = fnv1a(*h, x, sizeof(x));
        if (a->gpus > 0)
            *h = fnv1a(*h, a->slots, (size_t)a->gpus * sizeof(*a->slots));
        *h = fnv1a(*h, a->reason, strlen(a->reason) + 1);
    }
    int64_t t[] = {(int64_t)d->njobs, d->capacity, d->used, d->nchanged, d->packed_gpus};
    *h = fnv1a(*h, t, sizeof(t));
    *h = fnv1a(*h, &d->fragmentation, sizeof(d->fragmentation));
}

/* Runs the first round, then repeat timed ones into us[] (sorted on return); prints each
 * when verbose. With ref (not NULL), times the reference computation before each round, in
 * ref[] (sorted): the two minima then saw the same moments of the machine. With digest (not
 * NULL), folds every decision into it, outside the timed part. Returns 0 or -1. */
static int bench_rounds(struct bench *b, const struct sched_policy_ops *p, int repeat, double *us,
                        double *ref, int verbose, uint64_t *digest)
{
    struct sched_snapshot snap = snapshot_of(b, 0);
    struct sched_decision *d = sched_decide(p, &snap);
    double sink = 0;
    if (d && digest)
        digest_decision(digest, d);
    if (!d || adopt(b, d)) {
        sched_decision_destroy(d);
        return -1;
    }
    sched_decision_destroy(d);
    snap = snapshot_of(b, 60);
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        if (ref) {
            sink += reference_work();
            ref[r] = now_us() - t0;
            t0 = now_us();
        }
        d = sched_decide(p, &snap);
        us[r] = now_us() - t0;
        if (!d)
            return -1;
        if (verbose)
            printf("round %d: %.1f us, fragmentation %.3f\n", r + 1, us[r], d->fragmentation);
        if (digest)
            digest_decision(digest, d);
        sched_decision_destroy(d);
    }
    if (sink == 42) /* never: keeps the reference's work */
        fputs("", stdout);
    qsort(us, (size_t)repeat, sizeof(us[0]), dbl_cmp);
    if (ref)
        qsort(ref, (size_t)repeat, sizeof(ref[0]), dbl_cmp);
    return 0;
}

/* The reference computation: a fixed mix like a round's (allocations, sorting with a
 * comparator, floating point with log and exp, pointer-chasing over arrays) whose cost
 * tracks this machine's speed at the moment, sanitizers included. Returns a checksum so
 * that none of it is optimised away. */
static double reference_work(void)
{
    enum { N = 2048 };
    double *v = malloc(N * sizeof(*v));
    size_t *next = malloc(N * sizeof(*next));
    double sum = 0;
    uint64_t rng = 7;
    if (!v || !next) {
        free(v);
        free(next);
        return 0;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < N; i++) {
            v[i] = simulate_rng_uniform(&rng);
            next[i] = (size_t)(simulate_rng_next(&rng) % N);
        }
        qsort(v, N, sizeof(*v), dbl_cmp);
        for (size_t i = 0, k = 0; i < N; i++, k = next[k])
            sum += log(1 + v[k]) * exp(-v[i]);
    }
    free(v);
    free(next);
    return sum;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One forecast pass of the server (forecast_thread.c: FORECAST_RUNS runs, the live interval
 * of 60 s) over the bench's state after its rounds, one minute on: its CPU time and the
 * share of a core that the thread's duty cycle (9 c idle after c, at least 5 s) gives. */
static int bench_forecast(const struct bench *b, const struct sched_policy_ops *p, int runs,
                          char *err, size_t len)
{
    struct sched_snapshot snap = snapshot_of(b, 60);
    struct outlook_config c;
    outlook_config_init(&c);
    c.policy = p;
    c.runs = runs;
    double t0 = cpu_s(), w0 = now_us();
    struct outlook *o = outlook_run(&snap, &c, err, len);
    double cpu = cpu_s() - t0, wall = (now_us() - w0) / 1e6;
    if (!o)
        return -1;
    size_t known = 0;
    for (size_t i = 0; i < o->njobs; i++)
        known += o->jobs[i].finish_p50 >= 0;
    double idle = fmax(9 * cpu, 5.0);
    printf("forecast runs=%d jobs=%zu finish_known=%zu forecast_cpu_s=%.3f wall_s=%.3f"
           " idle_s=%.1f core_share=%.3f\n",
           runs, o->njobs, known, cpu, wall, idle, cpu / (cpu + idle));
    outlook_destroy(o);
    return 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define BUILD_KIND "san"
#else
#define BUILD_KIND "plain"
#endif

/* Times policy p on a fresh bench of jobs and gpus; prints its line (the single-policy
 * format when o->one, else one summary line), with the ratio and the digest when asked.
 * Returns 0, or -1 with text in err. */
static int bench_policy(const struct sched_policy_ops *p, long long jobs, long long gpus,
                        const struct bench_opts *o, char *err, size_t len)
{
    struct bench b;
    double us[1000], ref[1000];
    uint64_t digest = FNV1A_INIT;
    int rc = bench_init(&b, (size_t)jobs, (int)gpus, err, len), repeat = o->repeat;
    if (rc == 0 && (rc = bench_rounds(&b, p, repeat, us, o->reference ? ref : NULL, o->one,
                                      o->digest ? &digest : NULL)))
        snprintf(err, len, "sched_decide failed (policy %s)", p->name);
    if (rc == 0 && o->one) {
        printf("policy=%s jobs=%zu gpus=%d\n", p->name, b.njobs, b.cluster.total_gpus);
        if (o->reference)
            printf("min_us=%.1f ratio=%.4f reference_us=%.1f\n", us[0], us[0] / ref[0], ref[0]);
        if (o->digest)
            printf("digest=%016llx\n", (unsigned long long)digest);
        printf("round_us=%.1f\n", us[repeat / 2]);
    } else if (rc == 0) {
        printf("policy=%s jobs=%zu gpus=%d round_us=%.1f min_us=%.1f", p->name, b.njobs,
               b.cluster.total_gpus, us[repeat / 2], us[0]);
        if (o->digest)
            printf(" digest=%016llx", (unsigned long long)digest);
        if (o->reference)
            printf(" ratio=%.4f reference_us=%.1f", us[0] / ref[0], ref[0]);
        putchar('\n');
    }
    if (rc == 0 && o->forecast > 0)
        rc = bench_forecast(&b, p, o->forecast, err, len);
    fflush(stdout);
    bench_free(&b);
    return rc;
}

static int parse(int argc, char **argv, long long *jobs, long long *gpus, const char **policy,
                 long long *repeat, struct bench_opts *o, char *err, size_t len)
{
    static const struct option longopts[] = {
        {"jobs", required_argument, NULL, 'j'},   {"gpus", required_argument, NULL, 'g'},
        {"policy", required_argument, NULL, 'p'}, {"repeat", required_argument, NULL, 'r'},
        {"reference", no_argument, NULL, 'R'},    {"help", no_argument, NULL, 'h'},
        {"digest", no_argument, NULL, 'D'},       {"forecast", required_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if ((c == 'j' && options_long(optarg, 1, 1000000, jobs, "--jobs", err, len)) ||
            (c == 'g' && options_long(optarg, 1, 1000000, gpus, "--gpus", err, len)) ||
            (c == 'r' && options_long(optarg, 1, 1000, repeat, "--repeat", err, len)))
            return -1;
        if (c == 'p')
            *policy = optarg;
        if (c == 'R')
            o->reference = 1;
        if (c == 'D')
            o->digest = 1;
        long long k;
        if (c == 'F' && options_long(optarg, 1, OUTLOOK_MAX_RUNS, &k, "--forecast", err, len))
            return -1;
        if (c == 'F')
            o->forecast = (int)k;
        if (c == '?') {
            snprintf(err, len, "unknown option (see --help)");
            return -1;
        }
    }
    if (*jobs == 0 || *gpus == 0) {
        snprintf(err, len, "need --jobs and --gpus");
        return -1;
    }
    return 0;
}

int bench_main(int argc, char **argv)
{
    long long jobs = 0, gpus = 0, repeat = 5;
    struct bench_opts o = {0};
    const char *pname = NULL;
    char err[256];
    int rc = parse(argc, argv, &jobs, &gpus, &pname, &repeat, &o, err, sizeof(err));
    if (rc == 1) {
        fputs(usage, stdout);
        return 0;
    }
    int all = pname && strcmp(pname, "all") == 0;
    const struct sched_policy_ops *p = NULL;
    if (rc == 0 && !all) {
        p = sched_policy_find(pname ? pname : "precompute");
        if (!p && !pname)
            p = sched_policy_list()[0];
        if (!p)
            snprintf(err, sizeof(err), "--policy: unknown policy '%s'", pname);
    }
    if (rc || (!p && !all)) {
        fprintf(stderr, "ringmaster-sim bench-round: %s\n", err);
        return 2;
    }
    if (o.reference)
        printf("reference build=" BUILD_KIND "\n");
    o.repeat = (int)repeat;
    o.one = !all;
    const struct sched_policy_ops *const *list = sched_policy_list();
    for (size_t i = 0; rc == 0 && (all ? list[i] != NULL : i == 0); i++)
        rc = bench_policy(all ? list[i] : p, jobs, gpus, &o, err, sizeof(err));
    if (rc)
        fprintf(stderr, "ringmaster-sim bench-round: %s\n", err);
    return rc ? 1 : 0;
}
