/* run: `ringmaster-sim run`, one workload under a list of policies. */
#include "run.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "profile.h"
#include "report.h"
#include "template.h"
#include "workload.h"

static const char usage[] =
    "usage: ringmaster-sim run --cluster NODESxGPUS (--trace FILE | --poisson MEAN_S,JOBS)\n"
    "           [--seed N] [--policies a,b,c] [--interval S] [--resize-cost S]\n"
    "           [--min-resize-interval S] [--quantum S] [--suspend-cost S]\n"
    "           [--gpu-util LO,HI]\n"
    "           [--template NAME] [--format table|csv|json]\n"
    "           [--trace-start S] [--trace-window S] [--max-jobs N] [--min-duration S]\n"
    "           [--max-gpus G] [--skip-bad-rows]\n"
    "           [--estimate-error SIGMA | --estimate oracle|live] [--max-wait S]\n"
    "           [--speed given|live] [--switches K] [--topology-blind]\n"
    "           [--checkpoint-every S] [--min-runtime S] [--preempt-order loss|service]\n"
    "           [--users K [--user-mix W1,...,WK]]\n"
    "           [--deadlines SHARE [--deadlines-hidden]]\n"
    "           [--forecast-every S [--forecast-runs K] [--forecast-spread SIGMA]\n"
    "            [--forecast-arrivals W]]\n"
    "\n"
    "Simulates the workload under each policy and prints one row per policy.\n"
    "  --cluster SPEC      NxG (N nodes of G GPUs), or groups NxG:MODEL[:CORES:MEMGB]\n"
    "                      separated by commas, e.g. 4x8:a100,4x8:v100; MODEL is one\n"
    "                      of v100 (reference speed), a100 (or dgx-ext), h100, t4 (or\n"
    "                      aws), rtx (2080Ti), quad (RTX 6000); CORES and MEMGB\n"
    "                      per node (default: the model's typical node); @AxB after\n"
    "                      NxG or MODEL: A NVLink islands of B GPUs a node (8x8:a100@2x4)\n"
    "  --switches K        the nodes hang off K switches, in order (node i on switch\n"
    "                      1 + i K / nodes); a job across switches pays its class\n"
    "  --topology-blind    the policies see no islands nor switches (the truth still\n"
    "                      charges each job the link classes its GPUs span)\n"
    "  --poisson M,J       J jobs, exponential inter-arrival times of mean M seconds\n"
    "  --trace FILE        CSV with job_id,submit_time_s,num_gpus,duration_s (header\n"
    "                      required; optional user, elastic (0: rigid), min_gpus,\n"
    "                      max_gpus, and ringmasterd's speed_theta, batch_per_gpu,\n"
    "                      dataset_size, course; others ignored); a job's duration is\n"
    "                      its run time at num_gpus (or over its course), other counts\n"
    "                      follow its own speed_theta, else the template's speed-up\n"
    "  --trace-start S     keep jobs submitted at or after S seconds (trace clock)\n"
    "  --trace-window S    ... and before start + S\n"
    "  --max-jobs N        ... at most the first N of them\n"
    "  --min-duration S    drop jobs shorter than S seconds\n"
    "  --max-gpus G        drop jobs asking for more than G GPUs\n"
    "  --skip-bad-rows     report malformed rows on stderr and skip them (default: error)\n"
    "  --template NAME     resnet110 (default), bert, cifar10, deepspeech2, imagenet, ncf,\n"
    "                      yolov3, gpt-350m, gpt-1.3b, gpt-2.7b, gpt-6.7b, gpt-13b, or\n"
    "                      mixed (Poisson only: each job one of the six apps) or plans\n"
    "                      (Poisson only: each job one of the five gpt-* jobs, with plans)\n"
    "  --policies LIST     default: every policy of the core\n"
    "  --interval S        seconds between scheduling rounds (default 60)\n"
    "  --resize-cost S     seconds without progress after a resize (default 10)\n"
    "  --min-resize-interval S  a job is not resized again within S seconds, except\n"
    "                      to make room for a waiting job (default 300; 0: none)\n"
    "  --quantum S         gandiva's time slice (default 60)\n"
    "  --suspend-cost S    seconds a suspended job pays to resume on its node (default 1)\n"
    "  --gpu-util LO,HI    each job's GPU utilisation uniform in [LO, HI) (default: unknown,\n"
    "                      so gandiva packs nothing)\n"
    "  --estimate-error SIGMA  the policies see each job's remaining work times\n"
    "                      exp(N(0, SIGMA)), fixed per job and seed (default 0: the truth)\n"
    "  --estimate MODE     oracle (default: the truth, or --estimate-error) or live:\n"
    "                      remaining work from a convergence fit of the job's losses so\n"
    "                      far, else the prior of finished jobs, else elapsed time;\n"
    "                      live-naive: the fit's number as it is (0 once it says now)\n"
    "  --speed MODE        given (default: each job's model as its view shows it) or live:\n"
    "                      the policies start with no speed model and learn each job's,\n"
    "                      per GPU type, from the steps the engine reports, through the\n"
    "                      server's code (docs/simulator.md \"Learned speeds\")\n"
    "  --max-wait S        a job that fits waits at most S seconds whatever the policy\n"
    "                      (the core's guarantee; default 0: off, the server uses 3600)\n"
    "  --checkpoint-every S  each job checkpoints every S seconds of its progress; a job\n"
    "                      preempted goes back to its last checkpoint and redoes what it\n"
    "                      made since (default 0: a preemption loses no progress)\n"
    "  --min-runtime S     no job is preempted within S seconds of its start (default 0)\n"
    "  --preempt-order O   which running job a guarantee stops first: loss (default: the\n"
    "                      least work since its checkpoint) or service (the most attained\n"
    "                      service, the rule before checkpoints were known)\n"
    "  --users K           jobs without a user (trace column 'user') get users 1..K,\n"
    "                      round-robin; prints fairness (worst user's mean JCT / its mean\n"
    "                      JCT alone on 1/K of the cluster)\n"
    "  --user-mix W,...    with --users: users drawn with these relative job counts\n"
    "  --deadlines SHARE   that share of the jobs (drawn from the seed) must finish by\n"
    "                      submit + L x its time alone at its requested GPUs, L uniform\n"
    "                      in [0.5, 1.5]; prints the deadlines met per policy\n"
    "  --deadlines-hidden  the policies do not see the deadlines (still counted): the\n"
    "                      same run as without them, for the other jobs' mean JCT\n"
    "  --forecast-every S  every S simulated seconds, forecast every job's start and\n"
    "                      finish as ringmasterd does (the core's outlook_run: K runs\n"
    "                      forward from the round's snapshot), and score them at the end:\n"
    "                      lines 'forecast policy=P event=start|finish lead=L n=N\n"
    "                      within_p90=X median_rel_err=Y' (docs/forecast.md)\n"
    "  --forecast-runs K   runs per forecast (default 20, as ringmasterd)\n"
    "  --forecast-spread SIGMA  the spread of the remaining-work draws (default: the\n"
    "                      --estimate-error, else 0.6)\n"
    "  --forecast-arrivals W  forecast with the jobs expected to come: those submitted in\n"
    "                      the last W seconds, again W seconds later (default 0: none)\n"
    "  --seed N            workload and tie-break seed (default 1)\n"
    "  --format F          table (default, hours), csv or json (seconds)\n"
    "  --per-job FILE      also write every job's figures as CSV to FILE (- for stdout)\n"
    "  --timing            print each run's wall time and jobs simulated per second\n"
    "                      on stderr\n";

struct run_args {
    const char *cluster, *trace, *poisson, *policies, *template_name;
    struct report_params prm;
    struct workload_trace_opts trace_opts;
    enum options_format format;
    int timing;
    const char *per_job;
    double util_lo, util_hi; /* util_hi > 0: --gpu-util given */
    int users;               /* --users K; 0: as the workload says */
    double mix[64];
    size_t nmix;
    int switches;             /* --switches K; 0: none */
    struct settings settings; /* the scheduler's, by the core's table (its options) */
    double deadlines;         /* --deadlines SHARE; 0: none */
};

enum {
    OPT_TRACE_START = 256,
    OPT_TRACE_WINDOW,
    OPT_MAX_JOBS,
    OPT_MIN_DURATION,
    OPT_MAX_GPUS,
    OPT_SKIP_BAD,
    OPT_TIMING,
    OPT_PER_JOB,
    OPT_SUSPEND,
    OPT_GPU_UTIL,
    OPT_EST_ERROR,
    OPT_ESTIMATE,
    OPT_USERS,
    OPT_USER_MIX,
    OPT_SPEED,
    OPT_DEADLINES,
    OPT_DEADLINES_HIDDEN,
    OPT_SWITCHES,
    OPT_BLIND,
    OPT_CHECKPOINT_EVERY,
    OPT_PREEMPT_ORDER,
    OPT_FC_EVERY,
    OPT_FC_RUNS,
    OPT_FC_SPREAD,
    OPT_FC_ARRIVALS,
    OPT_SETTING = 512, /* + the row of the settings' table (settings_list()) */
};

static const struct option longopts[] = {
    {"cluster", required_argument, NULL, 'c'},
    {"trace", required_argument, NULL, 't'},
    {"poisson", required_argument, NULL, 'p'},
    {"seed", required_argument, NULL, 's'},
    {"policies", required_argument, NULL, 'P'},
    {"template", required_argument, NULL, 'T'},
    {"format", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {"trace-start", required_argument, NULL, OPT_TRACE_START},
    {"trace-window", required_argument, NULL, OPT_TRACE_WINDOW},
    {"max-jobs", required_argument, NULL, OPT_MAX_JOBS},
    {"min-duration", required_argument, NULL, OPT_MIN_DURATION},
    {"max-gpus", required_argument, NULL, OPT_MAX_GPUS},
    {"skip-bad-rows", no_argument, NULL, OPT_SKIP_BAD},
    {"timing", no_argument, NULL, OPT_TIMING},
    {"per-job", required_argument, NULL, OPT_PER_JOB},
    {"suspend-cost", required_argument, NULL, OPT_SUSPEND},
    {"gpu-util", required_argument, NULL, OPT_GPU_UTIL},
    {"estimate-error", required_argument, NULL, OPT_EST_ERROR},
    {"estimate", required_argument, NULL, OPT_ESTIMATE},
    {"users", required_argument, NULL, OPT_USERS},
    {"user-mix", required_argument, NULL, OPT_USER_MIX},
    {"speed", required_argument, NULL, OPT_SPEED},
    {"deadlines", required_argument, NULL, OPT_DEADLINES},
    {"deadlines-hidden", no_argument, NULL, OPT_DEADLINES_HIDDEN},
    {"switches", required_argument, NULL, OPT_SWITCHES},
    {"topology-blind", no_argument, NULL, OPT_BLIND},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"preempt-order", required_argument, NULL, OPT_PREEMPT_ORDER},
    {"forecast-every", required_argument, NULL, OPT_FC_EVERY},
    {"forecast-runs", required_argument, NULL, OPT_FC_RUNS},
    {"forecast-spread", required_argument, NULL, OPT_FC_SPREAD},
    {"forecast-arrivals", required_argument, NULL, OPT_FC_ARRIVALS},
};
#define NLONGOPTS (sizeof(longopts) / sizeof(longopts[0]))

/* longopts, then an option per setting that has one (the core's table), then the end. */
static void build_options(struct option *out)
{
    size_t n = 0;
    for (; n < NLONGOPTS; n++)
        out[n] = longopts[n];
    const struct settings_desc *d = settings_list();
    for (int k = 0; d[k].name; k++)
        if (d[k].flag)
            out[n++] = (struct option){d[k].flag, required_argument, NULL, OPT_SETTING + k};
    out[n] = (struct option){NULL, 0, NULL, 0};
}

/* "LO,HI" with 0 < LO <= HI <= 1. */
static int parse_util(const char *v, struct run_args *a, char *err, size_t len)
{
    char spec[64], *comma;

    snprintf(spec, sizeof(spec), "%s", v);
    if (!(comma = strchr(spec, ','))) {
        snprintf(err, len, "--gpu-util: expected LO,HI, got '%s'", v);
        return -1;
    }
    *comma = '\0';
    if (options_double(spec, 0.01, 1, &a->util_lo, "--gpu-util LO", err, len) ||
        options_double(comma + 1, a->util_lo, 1, &a->util_hi, "--gpu-util HI", err, len))
        return -1;
    return 0;
}

/* "W1,W2,..." with each W > 0. */
static int parse_mix(const char *v, struct run_args *a, char *err, size_t len)
{
    char spec[512];

    snprintf(spec, sizeof(spec), "%s", v);
    a->nmix = 0;
    for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
        if (a->nmix == sizeof(a->mix) / sizeof(a->mix[0])) {
            snprintf(err, len, "--user-mix: at most 64 weights");
            return -1;
        }
        if (options_double(tok, 1e-9, 1e9, &a->mix[a->nmix++], "--user-mix", err, len))
            return -1;
    }
    return 0;
}

static int parse_estimate(const char *v, struct run_args *a, char *err, size_t len)
{
    if (strcmp(v, "live") && strcmp(v, "live-naive") && strcmp(v, "oracle")) {
        snprintf(err, len, "--estimate: expected oracle, live or live-naive, got '%s'", v);
        return -1;
    }
    a->prm.estimate_live = !strcmp(v, "live") ? 1 : !strcmp(v, "live-naive") ? SIMULATE_LIVE_NAIVE
                                                                              : 0;
    return 0;
}

/* The options of issue 17 (estimates, waits, users). */
static int take_estimate_option(int c, const char *v, struct run_args *a, char *err, size_t len)
{
    long long n;
    switch (c) {
    case OPT_EST_ERROR:
        return options_double(v, 0, 10, &a->prm.estimate_error, "--estimate-error", err, len);
    case OPT_ESTIMATE:
        return parse_estimate(v, a, err, len);
    case OPT_USERS:
        if (options_long(v, 1, 64, &n, "--users", err, len))
            return -1;
        a->users = (int)n;
        return 0;
    case OPT_USER_MIX:
        return parse_mix(v, a, err, len);
    case OPT_SPEED:
        return options_speed_parse(v, &a->prm.speed_live, err, len);
    case OPT_DEADLINES:
        return options_double(v, 0, 1, &a->deadlines, "--deadlines", err, len);
    case OPT_DEADLINES_HIDDEN:
        a->prm.hide_deadlines = 1;
        return 0;
    case OPT_SWITCHES:
        if (options_long(v, 1, 100000, &n, "--switches", err, len))
            return -1;
        a->switches = (int)n;
        return 0;
    case OPT_BLIND:
        a->prm.topology_blind = 1;
        return 0;
    case OPT_CHECKPOINT_EVERY:
        return options_double(v, 0, 1e12, &a->prm.checkpoint_every_s, "--checkpoint-every", err,
                              len);
    case OPT_PREEMPT_ORDER:
        if (strcmp(v, "loss") && strcmp(v, "service")) {
            snprintf(err, len, "--preempt-order: expected loss or service, got '%s'", v);
            return -1;
        }
        a->prm.preempt_order = !strcmp(v, "loss") ? SCHED_PREEMPT_LEAST_LOSS
                                                  : SCHED_PREEMPT_MOST_SERVICE;
        return 0;
    case OPT_FC_EVERY:
        return options_double(v, 1, 1e9, &a->prm.forecast_every_s, "--forecast-every", err, len);
    case OPT_FC_RUNS:
        if (options_long(v, 1, OUTLOOK_MAX_RUNS, &n, "--forecast-runs", err, len))
            return -1;
        a->prm.forecast_runs = (int)n;
        return 0;
    case OPT_FC_SPREAD:
        return options_double(v, 0, 10, &a->prm.forecast_spread, "--forecast-spread", err, len);
    case OPT_FC_ARRIVALS:
        return options_double(v, 0, 1e9, &a->prm.forecast_arrivals_s, "--forecast-arrivals", err,
                              len);
    default:
        snprintf(err, len, "unknown option (see --help)");
        return -1;
    }
}

/* One option into a; returns 0, 1 for --help, or -1 with err. */
static int take_option(int c, const char *v, struct run_args *a, char *err, size_t len)
{
    long long n;
    switch (c) {
    case 'c':
        a->cluster = v;
        return 0;
    case 't':
        a->trace = v;
        return 0;
    case 'p':
        a->poisson = v;
        return 0;
    case 'P':
        a->policies = v;
        return 0;
    case 'T':
        a->template_name = v;
        return 0;
    case 'h':
        return 1;
    case 'f':
        return options_format_parse(v, &a->format, err, len);
    case 's':
        if (options_long(v, 0, INT64_MAX, &n, "--seed", err, len))
            return -1;
        a->prm.seed = (uint64_t)n;
        return 0;
    case OPT_TRACE_START:
        return options_double(v, 0, 1e12, &a->trace_opts.start_s, "--trace-start", err, len);
    case OPT_TRACE_WINDOW:
        return options_double(v, 0, 1e12, &a->trace_opts.window_s, "--trace-window", err, len);
    case OPT_MIN_DURATION:
        return options_double(v, 0, 1e12, &a->trace_opts.min_duration_s, "--min-duration", err,
                              len);
    case OPT_MAX_JOBS:
        if (options_long(v, 1, 100000000, &n, "--max-jobs", err, len))
            return -1;
        a->trace_opts.max_jobs = (size_t)n;
        return 0;
    case OPT_MAX_GPUS:
        if (options_long(v, 1, 1000000, &n, "--max-gpus", err, len))
            return -1;
        a->trace_opts.max_gpus = (int)n;
        return 0;
    case OPT_SKIP_BAD:
        a->trace_opts.skip_bad_rows = 1;
        return 0;
    case OPT_TIMING:
        a->timing = 1;
        return 0;
    case OPT_PER_JOB:
        a->per_job = v;
        return 0;
    case OPT_SUSPEND:
        a->prm.suspend_cost_set = 1;
        return options_double(v, 0, 1e9, &a->prm.suspend_cost_s, "--suspend-cost", err, len);
    case OPT_GPU_UTIL:
        return parse_util(v, a, err, len);
    default:
        if (c >= OPT_SETTING && c < OPT_SETTING + (int)settings_count())
            return options_setting(&settings_list()[c - OPT_SETTING], v, &a->settings, err, len);
        return take_estimate_option(c, v, a, err, len);
    }
}

/* The settings the engine takes (report_params) from the options of the settings. */
static void use_settings(struct run_args *a)
{
    a->prm.interval_s = a->settings.interval_s;
    a->prm.resize_cost_s = a->settings.resize_cost_s;
    a->prm.min_resize_interval_s = a->settings.min_resize_interval_s;
    a->prm.quantum_s = a->settings.quantum_s;
    a->prm.max_wait_s = a->settings.max_wait_s;
    a->prm.min_runtime_s = a->settings.min_runtime_s;
}

static int parse_args(int argc, char **argv, struct run_args *a, char *err, size_t len)
{
    struct option opts[NLONGOPTS + SETTINGS_MAX + 1];
    memset(a, 0, sizeof(*a));
    a->prm = (struct report_params){.seed = 1, .forecast_spread = -1};
    settings_sim_defaults(&a->settings);
    a->template_name = "resnet110";
    build_options(opts);
    optind = 1;
    opterr = 0;
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "", opts, NULL)) != -1)
        rc = take_option(c, optarg, a, err, len);
    if (rc)
        return rc;
    use_settings(a);
    if (optind < argc) {
        snprintf(err, len, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (!a->cluster || (!a->trace == !a->poisson)) {
        snprintf(err, len, "need --cluster and exactly one of --trace, --poisson");
        return -1;
    }
    if (a->prm.estimate_live && a->prm.estimate_error > 0) {
        snprintf(err, len, "--estimate live and --estimate-error exclude each other");
        return -1;
    }
    if (a->nmix && (size_t)a->users != a->nmix) {
        snprintf(err, len, "--user-mix needs --users K and K weights");
        return -1;
    }
    return 0;
}

static struct workload *with_util(const struct run_args *a, struct workload *w)
{
    if (w && a->util_hi > 0)
        workload_draw_gpu_util(w, a->util_lo, a->util_hi, a->prm.seed);
    if (w && a->users > 0)
        workload_assign_users(w, a->users, a->mix, a->nmix, a->prm.seed);
    if (w && a->deadlines > 0)
        workload_draw_deadlines(w, a->deadlines, REPORT_DEADLINE_LO, REPORT_DEADLINE_HI,
                                a->prm.seed);
    return w;
}

/* The workload the arguments name; NULL with err. */
static struct workload *load_workload(const struct run_args *a, int cluster_gpus, char *err,
                                      size_t len)
{
    struct template t[PROFILE_NAPPS > TEMPLATE_NPLANS ? PROFILE_NAPPS : TEMPLATE_NPLANS];
    size_t nt = 0;
    if (!strcmp(a->template_name, "mixed")) {
        if (a->trace) {
            snprintf(err, len, "--template mixed is for --poisson only");
            return NULL;
        }
        for (size_t i = 0; i < PROFILE_NAPPS; i++)
            if (template_get(profile_app_name(i), &t[nt++], err, len))
                return NULL;
    } else if (!strcmp(a->template_name, "plans")) {
        if (a->trace) {
            snprintf(err, len, "--template plans is for --poisson only");
            return NULL;
        }
        template_plans(t);
        nt = TEMPLATE_NPLANS;
    } else if (template_get(a->template_name, &t[nt++], err, len)) {
        return NULL;
    }
    if (a->trace)
        return with_util(a, workload_trace_load(a->trace, &a->trace_opts, &t[0], cluster_gpus,
                                                stderr, err, len));
    char spec[64], *comma;
    double mean;
    long long jobs;
    snprintf(spec, sizeof(spec), "%s", a->poisson);
    if (!(comma = strchr(spec, ','))) {
        snprintf(err, len, "--poisson: expected MEAN_S,JOBS, got '%s'", a->poisson);
        return NULL;
    }
    *comma = '\0';
    if (options_double(spec, 0.001, 1e9, &mean, "--poisson mean", err, len) ||
        options_long(comma + 1, 1, 10000000, &jobs, "--poisson jobs", err, len))
        return NULL;
    return with_util(a, workload_poisson(t, nt, mean, (size_t)jobs, a->prm.seed, cluster_gpus,
                                         err, len));
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_timing(const struct report_row *row, double s)
{
    fprintf(stderr,
            "timing: scenario=%s policy=%s jobs=%zu rounds=%ld wall_s=%.3f "
            "jobs_per_s=%.0f\n",
            row->scenario, row->policy, row->result->njobs, row->result->rounds, s,
            s > 0 ? (double)row->result->njobs / s : 0.0);
}

/* Every job's figures as CSV to path ("-": stdout). Returns 0, or 2 with err. */
static int write_per_job(const char *path, const struct report_row *rows, size_t n, char *err,
                         size_t len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        snprintf(err, len, "--per-job: %s: %s", path, strerror(errno));
        return 2;
    }
    report_print_jobs(f, rows, n);
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f);
    if (bad)
        snprintf(err, len, "--per-job: %s: write failed", path);
    return bad ? 2 : 0;
}

static int simulate_all(const struct run_args *a, const struct options_cluster *c,
                        const struct workload *w, char *err, size_t len)
{
    const struct sched_policy_ops *pol[OPTIONS_MAX_POLICIES];
    int np = 0;
    if (a->policies) {
        if ((np = options_policies_parse(a->policies, pol, OPTIONS_MAX_POLICIES, err, len)) < 0)
            return 2;
    } else {
        for (const struct sched_policy_ops *const *p = sched_policy_list();
             *p && np < OPTIONS_MAX_POLICIES; p++)
            pol[np++] = *p;
    }
    struct report_row rows[OPTIONS_MAX_POLICIES];
    int rc = 0, done = 0;
    for (; done < np && rc == 0; done++) {
        double t0 = wall_s();
        if (report_run(w, c, pol[done], &a->prm, &rows[done], err, len))
            rc = 1;
        else if (a->timing)
            print_timing(&rows[done], wall_s() - t0);
    }
    if (rc == 0)
        report_print(stdout, a->format, rows, (size_t)np);
    for (int i = 0; rc == 0 && i < np; i++)
        if (rows[i].has_calib) /* after the table; apart from CSV and JSON on stdout */
            calib_print(a->format == OPTIONS_TABLE ? stdout : stderr, rows[i].policy,
                        &rows[i].calib);
    if (rc == 0 && a->per_job)
        rc = write_per_job(a->per_job, rows, (size_t)np, err, len);
    for (int i = 0; i < done; i++)
        report_row_clear(&rows[i]);
    return rc;
}

int run_main(int argc, char **argv)
{
    struct run_args a;
    struct options_cluster c = {0};
    char err[512] = "";
    int rc = parse_args(argc, argv, &a, err, sizeof(err));
    if (rc == 1) {
        fputs(usage, stdout);
        return 0;
    }
    if (rc || options_cluster_parse(a.cluster, &c, err, sizeof(err))) {
        fprintf(stderr, "ringmaster-sim run: %s\n", err);
        return 2;
    }
    for (size_t i = 0; a.switches > 0 && i < c.nnodes; i++)
        c.nodes[i].switch_id = 1 + (int)(i * (size_t)a.switches / c.nnodes);
    struct workload *w = load_workload(&a, c.total_gpus, err, sizeof(err));
    rc = w ? simulate_all(&a, &c, w, err, sizeof(err)) : 2;
    if (rc)
        fprintf(stderr, "ringmaster-sim run: %s\n", err);
    workload_destroy(w);
    options_cluster_free(&c);
    return rc;
}
