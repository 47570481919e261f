/* pollux: the Pollux paper's workloads in our simulator (see pollux.h). */
#include "pollux.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "report.h"

#define DAY_S 86400.0
#define MIN_DURATION_S 60.0
#define MAX_GPU_S (1000.0 * 3600.0)

struct trace_job {
    double submit_s, gpu_s;
};

static int column(char *header, const char *name)
{
    int i = 0;
    for (char *save = NULL, *f = strtok_r(header, ",\r\n", &save); f;
         f = strtok_r(NULL, ",\r\n", &save), i++)
        if (!strcmp(f, name))
            return i;
    return -1;
}

/* The trace's jobs that the window keeps: submit time folded into the day, GPU-seconds. */
static struct trace_job *read_trace(const char *path, const struct pollux_opts *o, size_t *n,
                                    char *err, size_t errlen)
{
    FILE *in = fopen(path, "r");
    char *line = NULL;
    size_t len = 0, cap = 0;
    struct trace_job *t = NULL;
    *n = 0;
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    int cs = -1, cg = -1, cd = -1;
    if (getline(&line, &len, in) > 0) {
        char *copy = strdup(line);
        cs = copy ? column(strcpy(copy, line), "submit_time_s") : -1;
        cg = copy ? column(strcpy(copy, line), "num_gpus") : -1;
        cd = copy ? column(strcpy(copy, line), "duration_s") : -1;
        free(copy);
    }
    if (cs < 0 || cg < 0 || cd < 0) {
        snprintf(err, errlen, "%s: needs columns submit_time_s, num_gpus and duration_s", path);
        goto fail;
    }
    while (getline(&line, &len, in) > 0) {
        double v[3] = {NAN, NAN, NAN};
        int i = 0;
        for (char *p = line, *end; i <= cs || i <= cg || i <= cd; i++) {
            char *comma = strchr(p, ',');
            double x = strtod(p, &end);
            double *dst = i == cs ? &v[0] : i == cg ? &v[1] : i == cd ? &v[2] : NULL;
            if (dst && end != p)
                *dst = x;
            if (!comma)
                break;
            p = comma + 1;
        }
        if (!(v[0] >= 0) || !(v[1] >= 1) || !(v[2] >= MIN_DURATION_S) ||
            v[1] * v[2] >= MAX_GPU_S)
            continue;
        double in_day = fmod(v[0], DAY_S) - o->start_s;
        if (in_day < 0 || in_day >= o->window_s)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 4096;
            struct trace_job *g = realloc(t, cap * sizeof(*t));
            if (!g) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            t = g;
        }
        t[(*n)++] = (struct trace_job){in_day, v[1] * v[2]};
    }
    free(line);
    fclose(in);
    if (*n == 0) {
        snprintf(err, errlen, "%s: no job in the window", path);
        free(t);
        return NULL;
    }
    return t;
fail:
    free(line);
    free(t);
    fclose(in);
    return NULL;
}

/* Application indices in profile_app_name() order. */
enum { BERT, CIFAR10, DEEPSPEECH2, IMAGENET, NCF, YOLOV3 };

static int app_for(double gpu_s, uint64_t *rng)
{
    if (gpu_s < 3600.0)
        return simulate_rng_uniform(rng) < 0.5 ? CIFAR10 : NCF;
    if (gpu_s < 10 * 3600.0)
        return simulate_rng_uniform(rng) < 0.5 ? DEEPSPEECH2 : BERT;
    return gpu_s < 100 * 3600.0 ? YOLOV3 : IMAGENET;
}

static int cmp_submit(const void *a, const void *b)
{
    const struct simulate_job_spec *x = a, *y = b;
    if (x->submit_time != y->submit_time)
        return x->submit_time < y->submit_time ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static void make_job(struct simulate_job_spec *j, size_t k, double at, const struct pollux_app *a,
                     int app, const struct pollux_config *c, const struct pollux_opts *o)
{
    memset(j, 0, sizeof(*j));
    j->id = (int64_t)(k + 1) * 16 + app;
    j->submit_time = at;
    /* a job's GPUs are of one model: at most the most GPUs of one model */
    j->requested_gpus = c->gpus < o->cluster_gpus ? c->gpus : o->cluster_gpus;
    j->min_gpus = 1;
    j->elastic = 1;
    j->epochs = a->work_epochs;
    j->declared_epochs = (double)a->grad.nepochs; /* the application's epochs */
    j->speed = a->speed;
    j->batch = a->batch;
    j->batch.batch = c->batch;
    j->batch.adaptive = o->adaptive;
    j->grad = &a->grad;
    if (o->hetero && a->ntypes > 0) {
        j->speed = a->ref_speed;
        j->types = a->types;
        j->ntypes = a->ntypes;
    }
    /* at most the GPUs that its largest batch can give work to */
    double most = (o->adaptive ? a->batch.max_batch : c->batch) / a->batch.min_local;
    int max = most < o->cluster_gpus ? (int)most : o->cluster_gpus;
    j->max_gpus = max > j->requested_gpus ? max : j->requested_gpus;
}

struct workload *pollux_workload(const char *trace_path, const struct pollux_app *apps,
                                 const struct pollux_opts *o, char *err, size_t errlen)
{
    size_t n;
    struct trace_job *t = read_trace(trace_path, o, &n, err, errlen);
    if (!t)
        return NULL;
    struct workload *w = calloc(1, sizeof(*w));
    size_t want = o->jobs < n ? o->jobs : n;
    if (w)
        w->jobs = calloc(want + 1, sizeof(*w->jobs));
    if (!w || !w->jobs) {
        workload_destroy(w);
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint64_t rng = o->seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t k = 0; k < want; k++) { /* a sample without replacement */
        size_t pick = k + (size_t)(simulate_rng_uniform(&rng) * (double)(n - k));
        struct trace_job tmp = t[k];
        t[k] = t[pick < n ? pick : n - 1];
        t[pick < n ? pick : n - 1] = tmp;
        int app = app_for(t[k].gpu_s, &rng);
        const struct pollux_app *a = &apps[app];
        size_t c = (size_t)(simulate_rng_uniform(&rng) * (double)a->nconfigs);
        make_job(&w->jobs[k], k, floor(t[k].submit_s), a, app,
                 &a->configs[c < a->nconfigs ? c : 0], o);
    }
    free(t);
    w->njobs = want;
    qsort(w->jobs, want, sizeof(*w->jobs), cmp_submit);
    double first = want ? w->jobs[0].submit_time : 0;
    for (size_t k = 0; k < want; k++)
        w->jobs[k].submit_time -= first;
    snprintf(w->name, sizeof(w->name), "pollux-%s%s-%llu", o->hetero ? "hetero-" : "",
             o->adaptive ? "adaptive" : "fixed", (unsigned long long)o->seed);
    return w;
}

/* The application index of name, or -1. */
static int app_named(const char *name)
{
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        if (!strcmp(profile_app_name(k), name))
            return (int)k;
    return -1;
}

struct workload *pollux_workload_csv(const char *path, const struct pollux_app *apps,
                                     const struct pollux_opts *o, char *err, size_t errlen)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct workload *w = calloc(1, sizeof(*w));
    char *line = NULL;
    size_t len = 0, cap = 0, lineno = 1;
    static const char header[] = "name,time,application,num_replicas,batch_size";
    int ok = w && getline(&line, &len, in) > 0 && !strncmp(line, header, sizeof(header) - 1);
    if (!ok)
        snprintf(err, errlen, "%s: expected the header name,time,application,num_replicas,"
                              "batch_size", path);
    while (ok && getline(&line, &len, in) > 0) {
        char name[64], app_name[32];
        double at, batch;
        int gpus, app = -1;
        lineno++;
        if (line[strspn(line, " \r\n")] == '\0')
            continue;
        if (sscanf(line, "%63[^,],%lf,%31[^,],%d,%lf", name, &at, app_name, &gpus, &batch) != 5 ||
            (app = app_named(app_name)) < 0 || !(at >= 0) || gpus < 1 || !(batch >= 1)) {
            snprintf(err, errlen, "%s:%zu: expected name,time,application (one of the six),"
                                  "num_replicas >= 1,batch_size >= 1", path, lineno);
            ok = 0;
            break;
        }
        if (w->njobs == cap) {
            cap = cap ? 2 * cap : 256;
            struct simulate_job_spec *g = realloc(w->jobs, (cap + 1) * sizeof(*g));
            if (!g) {
                snprintf(err, errlen, "out of memory");
                ok = 0;
                break;
            }
            w->jobs = g;
        }
        struct pollux_config c = {.gpus = gpus, .batch = batch};
        make_job(&w->jobs[w->njobs], w->njobs, at, &apps[app], app, &c, o);
        w->njobs++;
    }
    free(line);
    fclose(in);
    if (ok && w->njobs == 0) {
        snprintf(err, errlen, "%s: no job", path);
        ok = 0;
    }
    if (!ok) {
        workload_destroy(w);
        return NULL;
    }
    qsort(w->jobs, w->njobs, sizeof(*w->jobs), cmp_submit);
    snprintf(w->name, sizeof(w->name), "pollux-%s%s-%llu", o->hetero ? "hetero-" : "",
             o->adaptive ? "adaptive" : "fixed", (unsigned long long)o->seed);
    return w;
}

const char *pollux_job_app(const struct simulate_job_spec *j)
{
    return profile_app_name((size_t)(j->id % 16));
}

static const char usage[] =
    "usage: ringmaster-sim pollux [--policies a,b,c] [--batch fixed|adaptive] [--workloads N]\n"
    "           [--jobs N] [--seed N] [--cluster NxG] [--trace FILE] [--resize-cost S]\n"
    "           [--min-resize-interval S] [--by-app] [--per-job FILE] [--workload-dir DIR]\n"
    "           [--format table|csv|json] [--hetero] [--speed-model factor|per-type]\n"
    "           [--speed given|live] [--deadlines SHARE [--deadlines-hidden]]\n"
    "           [--estimate oracle|declared|target]\n"
    "\n"
    "The Pollux paper's evaluation setting (OSDI'21): N workloads (8) of 160 jobs drawn from\n"
    "the Philly trace's 8-hour window, the six measured applications as goodput jobs\n"
    "(docs/simulator.md \"Pollux workloads\"), 16 nodes x 4 GPUs, 30 s per reallocation,\n"
    "rounds every 60 s. Prints each policy's mean JCT per workload and over all of them,\n"
    "beside the paper's published means.\n"
    "  --policies LIST   default: ringmaster,precompute,tiresias,optimus\n"
    "  --batch MODE      fixed (default): jobs keep their global batch; adaptive: they may\n"
    "                    run any batch up to their largest validated one\n"
    "  --workloads N     workloads with seeds SEED..SEED+N-1 (default 8)\n"
    "  --jobs N          jobs per workload (default 160)\n"
    "  --seed N          first workload's seed (default 1)\n"
    "  --cluster NxG     default 16x4 (--hetero: " POLLUX_HETERO_CLUSTER ")\n"
    "  --trace FILE      default $RINGMASTER_SHARED_DIR/traces/philly_pollux.csv\n"
    "  --resize-cost S   seconds without progress per reallocation (default 30)\n"
    "  --min-resize-interval S  passed to the policies (default 300)\n"
    "  --by-app          also the mean JCT of each application under each policy\n"
    "  --per-job FILE    every job's figures as CSV (run's --per-job columns; the job id's\n"
    "                    last hex digit is its application: 0 bert .. 5 yolov3)\n"
    "  --format F        table (default), csv or json (rows of `run`, in seconds)\n"
    "  --workload-dir D  read workload K (of --workloads, from --seed) from D/workload-K.csv\n"
    "                    in the Pollux artifact's format (name,time,application,\n"
    "                    num_replicas,batch_size; the artifact's simulator/workloads/) instead\n"
    "                    of drawing it from the trace\n"
    "  --hetero          jobs measured on four node types (shared/profiles-hetero): each\n"
    "                    runs at its measured speed on t4 (aws), rtx, quad and a100\n"
    "                    (dgx-ext) nodes, with each type's largest local batch; prints\n"
    "                    Sia's published figures (SOSP'23, Table 3, Philly)\n"
    "  --speed-model M   what the policies see of a job's speed on each GPU type:\n"
    "                    factor (default): its T4 model scaled by each type's one factor\n"
    "                    (gpu_speed); per-type: its true model on each type (the oracle)\n"
    "  --speed MODE      given (default): the models above; live: the policies start with\n"
    "                    no speed model and learn each job's, per GPU type, from the steps\n"
    "                    the engine reports, through the server's code (--speed-model then\n"
    "                    only names the run)\n"
    "  --deadlines SHARE that share of each workload's jobs must finish by submit + L x its\n"
    "                    time alone at its requested GPUs, L uniform in [0.5, 1.5] (as\n"
    "                    `run --deadlines`); prints the deadlines met per policy\n"
    "  --deadlines-hidden  the policies do not see them (still counted)\n"
    "  --estimate MODE   what the policies know of a job's remaining work: oracle\n"
    "                    (default): the truth; declared: only what its user submitted, its\n"
    "                    application's epochs as its length and a stop at its target\n"
    "                    validation error, through the server's estimate rules (declared,\n"
    "                    fit of the errors it reported, prior of finished jobs, elapsed);\n"
    "                    target: as declared, without a declared length (the fit, prior)\n";

struct args {
    const char *policies, *cluster, *trace, *per_job, *workload_dir;
    struct pollux_opts o;
    int per_type; /* --speed-model per-type */
    int speed_live; /* --speed live */
    size_t workloads;
    double resize_cost, min_interval;
    int by_app;
    enum options_format fmt;
    double deadlines; /* --deadlines SHARE; 0: none */
    int hide_deadlines;
    int estimate_declared; /* --estimate declared (1) or target (2) */
};

static int parse(int argc, char **argv, struct args *a, char *err, size_t len)
{
    static const struct option longopts[] = {
        {"policies", required_argument, NULL, 'P'}, {"batch", required_argument, NULL, 'b'},
        {"workloads", required_argument, NULL, 'w'}, {"jobs", required_argument, NULL, 'j'},
        {"seed", required_argument, NULL, 's'},     {"cluster", required_argument, NULL, 'c'},
        {"trace", required_argument, NULL, 't'},    {"resize-cost", required_argument, NULL, 'r'},
        {"min-resize-interval", required_argument, NULL, 'm'},
        {"by-app", no_argument, NULL, 'a'},         {"format", required_argument, NULL, 'f'},
        {"per-job", required_argument, NULL, 'J'},
        {"workload-dir", required_argument, NULL, 'W'},
        {"hetero", no_argument, NULL, 'H'},         {"speed-model", required_argument, NULL, 'S'},
        {"speed", required_argument, NULL, 'L'},
        {"deadlines", required_argument, NULL, 'D'}, {"deadlines-hidden", no_argument, NULL, 'X'},
        {"estimate", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    long long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'h':
            return 1;
        case 'P':
            a->policies = optarg;
            break;
        case 'b':
            if (strcmp(optarg, "fixed") && strcmp(optarg, "adaptive")) {
                snprintf(err, len, "--batch: 'fixed' or 'adaptive', not '%s'", optarg);
                return -1;
            }
            a->o.adaptive = !strcmp(optarg, "adaptive");
            break;
        case 'w':
            rc = options_long(optarg, 1, 1000, &n, "--workloads", err, len);
            a->workloads = (size_t)n;
            break;
        case 'j':
            rc = options_long(optarg, 1, 100000, &n, "--jobs", err, len);
            a->o.jobs = (size_t)n;
            break;
        case 's':
            rc = options_long(optarg, 0, INT64_MAX, &n, "--seed", err, len);
            a->o.seed = (uint64_t)n;
            break;
        case 'c':
            a->cluster = optarg;
            break;
        case 't':
            a->trace = optarg;
            break;
        case 'r':
            rc = options_double(optarg, 0, 1e6, &a->resize_cost, "--resize-cost", err, len);
            break;
        case 'm':
            rc = options_double(optarg, 0, 1e9, &a->min_interval, "--min-resize-interval", err,
                                len);
            break;
        case 'a':
            a->by_app = 1;
            break;
        case 'J':
            a->per_job = optarg;
            break;
        case 'W':
            a->workload_dir = optarg;
            break;
        case 'H':
            a->o.hetero = 1;
            break;
        case 'S':
            if (strcmp(optarg, "factor") && strcmp(optarg, "per-type")) {
                snprintf(err, len, "--speed-model: 'factor' or 'per-type', not '%s'", optarg);
                return -1;
            }
            a->per_type = !strcmp(optarg, "per-type");
            break;
        case 'L':
            rc = options_speed_parse(optarg, &a->speed_live, err, len);
            break;
        case 'f':
            rc = options_format_parse(optarg, &a->fmt, err, len);
            break;
        case 'D':
            rc = options_double(optarg, 0, 1, &a->deadlines, "--deadlines", err, len);
            break;
        case 'X':
            a->hide_deadlines = 1;
            break;
        case 'E':
            if (strcmp(optarg, "oracle") && strcmp(optarg, "declared") &&
                strcmp(optarg, "target")) {
                snprintf(err, len, "--estimate: 'oracle', 'declared' or 'target', not '%s'",
                         optarg);
                return -1;
            }
            a->estimate_declared = !strcmp(optarg, "declared") ? 1
                                   : !strcmp(optarg, "target") ? 2
                                                               : 0;
            break;
        default:
            snprintf(err, len, "unknown option (see --help)");
            return -1;
        }
        if (rc)
            return -1;
    }
    if (optind < argc) {
        snprintf(err, len, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    return 0;
}

static double published(const char *policy, int hetero)
{
    if (hetero)
        return -1;
    if (!strcmp(policy, "tiresias"))
        return POLLUX_PUBLISHED_TIRESIAS_S;
    if (!strcmp(policy, "optimus"))
        return POLLUX_PUBLISHED_OPTIMUS_S;
    return -1;
}

static void print_table(const struct args *a, const struct sched_policy_ops *const *pol, size_t np,
                        const struct report_row *rows)
{
    printf("Mean JCT (s), %zu Pollux workloads of %zu jobs, %s batches, cluster %s\n",
           a->workloads, a->o.jobs, a->o.adaptive ? "adaptive" : "fixed", a->cluster);
    printf("%-12s", "policy");
    for (size_t w = 0; w < a->workloads; w++)
        printf(" %7s%-2zu", "w", w + a->o.seed);
    printf(" | %8s %8s %6s %7s | %9s\n", "mean", "resizes", "idle%", "usable%", "published");
    for (size_t p = 0; p < np; p++) {
        double sum = 0, rs = 0, idle = 0, usable = 0;
        printf("%-12s", pol[p]->name);
        for (size_t w = 0; w < a->workloads; w++) {
            const struct simulate_result *r = rows[p * a->workloads + w].result;
            printf(" %9.0f", r->avg_jct_s);
            sum += r->avg_jct_s;
            rs += (double)r->resizes;
            idle += r->idle_wanted_frac;
            usable += r->idle_usable_frac;
        }
        double pub = published(pol[p]->name, a->o.hetero);
        printf(" | %8.0f %8.0f %6.2f %7.2f |", sum / (double)a->workloads,
               rs / (double)a->workloads, 100.0 * idle / (double)a->workloads,
               100.0 * usable / (double)a->workloads);
        if (pub > 0)
            printf(" %9.0f\n", pub);
        else
            printf(" %9s\n", "-");
    }
    printf("idle%%: GPU-time left idle while an elastic job wanted more GPUs; usable%%: of it, what\n"
           "a running elastic job would have finished sooner with (true models, restart counted)\n");
    if (a->o.hetero) {
        printf("speed model shown to the policies: %s\n",
               a->speed_live ? "live (learned from the steps the engine reports, per type)"
               : a->per_type ? "per-type (each job's true model on each type)"
                             : "factor (one gpu_speed per GPU type)");
        printf("published, Sia SOSP'23 Table 3 (Philly, 64 mixed GPUs): sia %.0f, pollux %.0f,"
               " gavel %.0f\n", POLLUX_SIA_PUBLISHED_SIA_S, POLLUX_SIA_PUBLISHED_POLLUX_S,
               POLLUX_SIA_PUBLISHED_GAVEL_S);
        return;
    }
    if (a->speed_live)
        printf("speeds learned live (--speed live)\n");
    if (a->estimate_declared == 1)
        printf("remaining work as declared (--estimate declared: epochs, fit to the target\n"
               "error, prior of finished jobs), no oracle\n");
    if (a->estimate_declared == 2)
        printf("remaining work from the target alone (--estimate target: no declared length;\n"
               "fit to the target error, prior of finished jobs, elapsed), no oracle\n");
    printf("%-12s %*s | %8.0f (published, Pollux itself)\n", "pollux",
           (int)(10 * a->workloads - 1), "", POLLUX_PUBLISHED_POLLUX_S);
}

/* With deadlines: each policy's deadlines met over all workloads and the mean JCT of the
 * other jobs (the mean of the workloads' means). */
static void print_deadlines(const struct args *a, const struct sched_policy_ops *const *pol,
                            size_t np, const struct report_row *rows)
{
    if (!(a->deadlines > 0))
        return;
    printf("\nDeadlines%s: met of all, over the workloads\n%-12s %9s %9s %7s %14s\n",
           a->hide_deadlines ? " (hidden from the policies)" : "", "policy", "deadlines", "met",
           "met%", "other_avg_s");
    for (size_t p = 0; p < np; p++) {
        long n = 0, met = 0;
        double other = 0;
        for (size_t w = 0; w < a->workloads; w++) {
            const struct simulate_result *r = rows[p * a->workloads + w].result;
            n += r->deadlines;
            met += r->deadlines_met;
            other += r->avg_jct_other_s / (double)a->workloads;
        }
        printf("%-12s %9ld %9ld %7.1f %14.0f\n", pol[p]->name, n, met,
               n ? 100.0 * (double)met / (double)n : 0.0, other);
    }
}

static void print_by_app(const struct args *a, const struct sched_policy_ops *const *pol,
                         size_t np, const struct report_row *rows,
                         struct workload *const *loads)
{
    printf("\nMean JCT (s) by application, over all workloads\n%-12s", "policy");
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        printf(" %11s", profile_app_name(k));
    printf("\n");
    for (size_t p = 0; p < np; p++) {
        double sum[PROFILE_NAPPS] = {0};
        size_t cnt[PROFILE_NAPPS] = {0};
        for (size_t w = 0; w < a->workloads; w++) {
            const struct simulate_result *r = rows[p * a->workloads + w].result;
            for (size_t j = 0; j < r->njobs; j++) {
                size_t k = (size_t)(loads[w]->jobs[j].id % 16);
                sum[k] += r->jobs[j].jct_s;
                cnt[k]++;
            }
        }
        printf("%-12s", pol[p]->name);
        for (size_t k = 0; k < PROFILE_NAPPS; k++)
            printf(" %11.0f", cnt[k] ? sum[k] / (double)cnt[k] : 0.0);
        printf("\n");
        if (p + 1 == np) {
            printf("%-12s", "jobs");
            for (size_t k = 0; k < PROFILE_NAPPS; k++)
                printf(" %11zu", cnt[k]);
            printf("\n");
        }
    }
}

void pollux_default_trace(char *buf, size_t len)
{
    char dir[900];
    profile_dir(dir, sizeof(dir));
    size_t n = strlen(dir);
    const char *tail = "profiles";
    if (n >= strlen(tail) && !strcmp(dir + n - strlen(tail), tail))
        dir[n - strlen(tail)] = '\0';
    else
        snprintf(dir + n, sizeof(dir) - n, "/");
    snprintf(buf, len, "%straces/philly_pollux.csv", dir);
}

int pollux_load_types(struct pollux_app *app, char *err, size_t errlen)
{
    static const int node_gpus[PROFILE_NTYPES] = {4, 8, 4, 8}; /* aws, rtx, quad, dgx-ext */
    int model[PROFILE_NTYPES];
    double t4 = 1;
    for (size_t t = 0; t < PROFILE_NTYPES; t++) {
        const struct options_gpu_model *m = options_gpu_models();
        while (m->name && strcmp(m->name, profile_type_name(t)))
            m++;
        model[t] = m->name ? m->index : -1;
        if (t == 0 && m->name)
            t4 = m->speed;
    }
    return pollux_app_load_types(app, model, node_gpus, t4, err, errlen);
}

/* The most GPUs of one GPU model on the cluster (all of them when homogeneous). */
static int model_gpus(const struct options_cluster *c)
{
    int best = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        int n = 0;
        for (size_t k = 0; k < c->nnodes; k++)
            n += c->nodes[k].gpu_model == c->nodes[i].gpu_model ? c->nodes[k].ngpus : 0;
        best = n > best ? n : best;
    }
    return best;
}

static int run_all(const struct args *a, const struct options_cluster *c,
                   const struct sched_policy_ops *const *pol, size_t np,
                   const struct pollux_app *apps, struct workload **loads,
                   struct report_row *rows, char *err, size_t errlen)
{
    struct report_params prm = {.interval_s = 60, .resize_cost_s = a->resize_cost,
                                .min_resize_interval_s = a->min_interval,
                                .show_type_speeds = a->per_type,
                                .speed_live = a->speed_live,
                                .hide_deadlines = a->hide_deadlines,
                                .estimate_declared = a->estimate_declared > 0};
    for (size_t w = 0; w < a->workloads; w++) {
        struct pollux_opts o = a->o;
        o.seed = a->o.seed + w;
        o.cluster_gpus = model_gpus(c);
        if (a->workload_dir) {
            char path[1200];
            snprintf(path, sizeof(path), "%s/workload-%llu.csv", a->workload_dir,
                     (unsigned long long)o.seed);
            loads[w] = pollux_workload_csv(path, apps, &o, err, errlen);
        } else {
            loads[w] = pollux_workload(a->trace, apps, &o, err, errlen);
        }
        if (!loads[w])
            return -1;
        for (size_t k = 0; a->estimate_declared == 2 && k < loads[w]->njobs; k++)
            loads[w]->jobs[k].declared_epochs = 0; /* it stops at its target alone */
        if (a->deadlines > 0)
            workload_draw_deadlines(loads[w], a->deadlines, REPORT_DEADLINE_LO,
                                    REPORT_DEADLINE_HI, o.seed);
        prm.seed = o.seed;
        for (size_t p = 0; p < np; p++)
            if (report_run(loads[w], c, pol[p], &prm, &rows[p * a->workloads + w], err, errlen))
                return -1;
    }
    return 0;
}

int pollux_main(int argc, char **argv)
{
    char trace[1024], err[512];
    struct args a = {.policies = "ringmaster,precompute,tiresias,optimus",
                     .cluster = "16x4",
                     .o = {.jobs = 160, .start_s = 7200, .window_s = 28800, .seed = 1},
                     .workloads = 8,
                     .resize_cost = 30,
                     .min_interval = SCHED_MIN_RESIZE_INTERVAL_S,
                     .fmt = OPTIONS_TABLE};
    pollux_default_trace(trace, sizeof(trace));
    a.trace = trace;
    int rc = parse(argc, argv, &a, err, sizeof(err)), np = 0;
    if (rc == 1) {
        fputs(usage, stdout);
        return 0;
    }
    if (rc == 0 && a.o.hetero && !strcmp(a.cluster, "16x4"))
        a.cluster = POLLUX_HETERO_CLUSTER;
    if (rc == 0 && a.per_type && a.speed_live) {
        snprintf(err, sizeof(err), "--speed live learns the models: no --speed-model per-type");
        rc = -1;
    }
    if (rc == 0 && a.per_type && !a.o.hetero) {
        snprintf(err, sizeof(err), "--speed-model per-type needs --hetero");
        rc = -1;
    }
    const struct sched_policy_ops *pol[OPTIONS_MAX_POLICIES];
    struct options_cluster c = {0};
    if (rc || (np = options_policies_parse(a.policies, pol, OPTIONS_MAX_POLICIES, err,
                                           sizeof(err))) < 0 ||
        options_cluster_parse(a.cluster, &c, err, sizeof(err))) {
        fprintf(stderr, "ringmaster-sim pollux: %s\n", err);
        return 2;
    }
    struct pollux_app apps[PROFILE_NAPPS];
    size_t loaded = 0;
    rc = 0;
    for (; loaded < PROFILE_NAPPS && rc == 0; loaded++)
        rc = pollux_app_load(profile_app_name(loaded), &apps[loaded], err, sizeof(err));
    if (rc)
        loaded--;
    for (size_t k = 0; rc == 0 && a.o.hetero && k < loaded; k++)
        rc = pollux_load_types(&apps[k], err, sizeof(err));
    size_t nrows = (size_t)np * a.workloads;
    struct report_row *rows = calloc(nrows + 1, sizeof(*rows));
    struct workload **loads = calloc(a.workloads + 1, sizeof(*loads));
    if (rc == 0 && (!rows || !loads)) {
        snprintf(err, sizeof(err), "out of memory");
        rc = -1;
    }
    if (rc == 0)
        rc = run_all(&a, &c, pol, (size_t)np, apps, loads, rows, err, sizeof(err));
    FILE *pj = NULL;
    if (rc == 0 && a.per_job && !(pj = fopen(a.per_job, "w"))) {
        snprintf(err, sizeof(err), "%s: %s", a.per_job, strerror(errno));
        rc = -1;
    }
    if (pj) {
        report_print_jobs(pj, rows, nrows);
        if (fclose(pj)) {
            snprintf(err, sizeof(err), "%s: %s", a.per_job, strerror(errno));
            rc = -1;
        }
    }
    if (rc)
        fprintf(stderr, "ringmaster-sim pollux: %s\n", err);
    else if (a.fmt != OPTIONS_TABLE)
        report_print(stdout, a.fmt, rows, nrows);
    else {
        print_table(&a, pol, (size_t)np, rows);
        print_deadlines(&a, pol, (size_t)np, rows);
        if (a.by_app)
            print_by_app(&a, pol, (size_t)np, rows, loads);
    }
    for (size_t i = 0; rows && i < nrows; i++)
        report_row_clear(&rows[i]);
    for (size_t w = 0; loads && w < a.workloads; w++)
        workload_destroy(loads[w]);
    free(rows);
    free(loads);
    for (size_t k = 0; k < loaded; k++)
        pollux_app_free(&apps[k]);
    options_cluster_free(&c);
    return rc ? 1 : 0;
}
