/* model: what the live scheduler knows of each job's speed and convergence, kept in a
 * cache owned by the scheduler thread (no locks: one thread uses it) and rebuilt from the
 * database after a restart.
 *
 * Where a job's model comes from:
 *  - its declared class (the job's `model` object, {"class": NAME}): "resnet110" is built in
 *    (the paper's measured step times, DESIGN.md), the six measured profiles ("bert",
 *    "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3") are loaded with common/profile.h
 *    when their folder exists (not in an installed system: the class is then unknown and the
 *    job explores). Source PROFILE, as the paper's Precompute strategy.
 *  - its own reports (job_metrics): once it has step times at two world sizes or more, the
 *    speed model is refitted (the core's learn_fit_speed: the step times measured on each GPU model,
 *    job_metric_sums per (world size, GPU model), normalised to the reference GPU, so the
 *    model always describes the job on a v100, as the core expects) and the source becomes
 *    FITTED; its (step, loss) points refit the convergence model (conv_fit). Refits happen
 *    only when new metrics came; the points are read incrementally (only steps beyond the
 *    last one read) into a bounded, downsampled series (live_fit_series), for all the
 *    jobs of a round in one statement (live_models_refresh).
 *  - one world size measured: source NONE here, and the core makes its model each round
 *    from that size's step time and the prior the fitted jobs teach (learn.h), from its
 *    steps (field steps);
 *  - per GPU model (types): each round the core's learn_round() (learn_types.h) makes its
 *    model on each GPU model it measured (its own fit, or the one-size rule) and an
 *    estimate with its uncertainty on each other GPU model of the cluster, from the ratios
 *    the round's jobs measured between models; round_plan.c hands them to the core as
 *    sched_job.type_speeds;
 *  - nothing: source NONE; the configured policy runs it at its request.
 * Optional fields of the `model` object: "dataset_size" (examples per epoch, default 50,000
 * or the class's) and "epochs" (epochs to train; else the convergence model decides). */
#ifndef RINGMASTER_LIVE_MODEL_H
#define RINGMASTER_LIVE_MODEL_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "fit.h"
#include "learn_fit.h"
#include "learn_types.h"
#include "sched.h"

/* The convergence fits a round does at most (live_models_refresh): 2,700 running jobs that
 * all report between two rounds would otherwise take 1.5-3 s of each round on one core. And
 * past LIVE_CONV_FITS_MIN of them, no more once LIVE_CONV_FIT_BUDGET_US of the round went
 * to them: at 2,700 reporting jobs the 128 fits were due every round, 50-80 ms of each
 * (make bench-scale: rounds that refreshed no model at all spent that on the fits). */
#define LIVE_CONV_FITS_MAX 128
#define LIVE_CONV_FITS_MIN 16
#define LIVE_CONV_FIT_BUDGET_US 20000

#define LIVE_MAX_GPU_TYPES 8
#define LIVE_MAX_STEPS 64 /* (world size, GPU model, nodes, link) rows of a job's steps kept */

struct live_model {
    int64_t job_id;
    long long metrics_seen; /* job_metrics rows the fit has used */
    enum sched_model_source source;
    char class_name[32];
    struct speed_model speed;
    struct conv_model conv;
    double dataset_size;
    double target_epochs; /* < 0: unknown */
    /* Its progress as the job page shows it (live_model_progress): epochs_done are the
     * epochs its reports ran (epochs_run) less the share of them it redid after going back
     * to a checkpoint, last_step its latest reported step (job_last_report's), not the
     * highest it ever reached. */
    double epochs_run; /* every report's samples over dataset_size, redone ones included */
    double epochs_done;
    double last_step;
    double points_after; /* the highest step of the (step, loss) points read (their cursor) */
    double explored_s[SCHED_EXPLORE_STAGES];
    int nworld_sizes;               /* distinct world sizes measured */
    int measured_max_w;             /* the largest of them (0: none) */
    /* Its mean step per (world size, GPU model, placement) as last read (job_metric_sums), what the
     * core's fits read (learn_fit.h); gpu_model and gpu_speed as live_snap_gpu_model() has
     * the name in step_gpu (-1 and 1 for an unknown name: a round resolves it against its
     * nodes, live_model_steps()). */
    struct learn_obs steps[LIVE_MAX_STEPS];
    char step_gpu[LIVE_MAX_STEPS][32];
    size_t nsteps;
    long long steps_version;           /* bumped at each refit of steps */
    struct learn_fit_cache fit_cache;  /* the core's per-type fits of those steps (learn_round) */
    char measured_on[64];           /* GPU models the step times came from ("a100 v100"; "" none) */
    long long points_read;          /* (step, loss) points read from job_metrics so far */
    struct live_fit_series points; /* those points, bounded and downsampled (fit.h) */
    int conv_due;                   /* points changed since its last convergence fit */
    /* The remaining work every policy reads, estimated from the job's evidence this round
     * (sched_estimate_apply: declared, fit, prior or elapsed); has_estimate 0: none (no
     * speed model yet: the job explores). */
    int has_estimate;
    double estimate_epochs;
    enum sched_estimate_source estimate_source;
    double estimate_steps; /* those epochs in steps (progress_remaining_steps; < 0 unknown) */
    /* The speed model the core made this round from the one size the job measured and the
     * cluster's prior (learn.h) while its own fit waits for a second size; learned 0: none.
     * The policies planned with it, so its remaining seconds and the API's model show it. */
    int learned;
    struct speed_model learned_speed;
    long round;  /* the last round that saw the job (for pruning) */
    int changed; /* refitted (or new) in this round: its JSON must be written */
    int own_batch; /* the job has a batch model: its speed is fitted at the examples per GPU
                    * it measured (samples / w), which change with its batch */
    struct batch_spec batch; /* that model (snap_job's, set each round; zero: none): its
                              * remaining seconds come at its goodput, as in the core */
    /* Its job_sched row as last committed (plan_write.c writes it again only when it says
     * something else): a hash of what it says but the times, and the times. */
    uint64_t sched_hash;
    double sched_at;     /* snapshot time of that write (epoch seconds); 0: never */
    double sched_start;  /* its predicted start then (< 0 none) */
    double sched_finish; /* its predicted finish then (< 0 none) */
    double sched_rem;    /* its remaining seconds then (< 0 none) */
    /* The job's per-type models, filled by the live refit and shown by the API/page. */
    struct sched_type_speed types[LIVE_MAX_GPU_TYPES];  /* one per GPU model of the cluster */
    char type_names[LIVE_MAX_GPU_TYPES][32];            /* the node's reported GPU name */
    size_t ntypes;
    /* What it reported fits in one GPU of each model (job_fits, sql/049), read with its steps:
     * the core's per-type limits (learn_job_steps.fits). */
    struct learn_fits fits[LIVE_MAX_GPU_TYPES];
    size_t nfits;
    /* What its `model` JSON last showed of them (live_model_note_types): per entry its GPU
     * model, source and sizes measured, and its 1-GPU step time. */
    struct live_type_shown {
        int gpu_model, source, sizes;
        double step_s;
    } types_shown[LIVE_MAX_GPU_TYPES];
    size_t ntypes_shown;
};

struct live_models;

/* A new empty cache, or NULL (ENOMEM). */
struct live_models *live_models_create(void);
void live_models_destroy(struct live_models *ms);

/* The entry of a job, created from its declaration on first sight (model_json: the job's
 * `model` object as text, or NULL; batch_per_gpu >= 1). Marks it seen in round. Returns
 * NULL only on ENOMEM. */
struct live_model *live_models_get(struct live_models *ms, int64_t job_id,
                                     const char *model_json, int batch_per_gpu, long round);

/* Forgets the jobs not seen in round (finished or gone). */
void live_models_prune(struct live_models *ms, long round);

/* Refits the models of the n jobs whose metrics count (nmetrics[i] for models[i]) differs
 * from what their fit saw, at most a few hundred a round and for a few tens of ms (those with
 * the most new reports first; model.c, REFITS_MAX, REFIT_BUDGET_US): their new (step, loss)
 * points and their sums are read in a statement or two per group of up to 64 jobs, not per
 * job.
 * The convergence fits (conv_fit: about 0.5-1 ms each on 512 points) are bounded: at most
 * LIVE_CONV_FITS_MAX a round, and past LIVE_CONV_FITS_MIN none once they took
 * LIVE_CONV_FIT_BUDGET_US, taken in turn by job id after the last job fitted, among the
 * jobs whose points changed; the others keep their fit until a later round (their points
 * and speed are read every round). Below the bound every due fit is done, as before.
 * Returns the models refitted, or -1 on a database error (the models of the jobs not read
 * are left as they were, to the next round). */
int live_models_refresh(struct live_models *ms, struct live_model *const *models,
                         const long long *nmetrics, size_t n, PGconn *c);

/* Epochs to go by the convergence fit of its losses alone at world size w (0: the fit says
 * converged), or -1 without a fit. */
/* Sets m's progress from its job's latest reported step and the steps it redid after going
 * back to a checkpoint (job_last_report's step and redo, sql/039): last_step is that step,
 * epochs_done its epochs_run times step / (step + redo), the share of its steps that still
 * count (its samples a step taken as even). Called each round after the refresh. */
void live_model_progress(struct live_model *m, long long step, long long redo);

double live_model_fit_epochs(const struct live_model *m, int w);

/* Remaining epochs as the scheduler sees them (< 0 when unknown), at world size w: this
 * round's estimate when there is one, else its declared epochs less those done, else the
 * fit's. */
double live_model_remaining_epochs(const struct live_model *m, int w);

/* The speed model the scheduler plans the job with: its own fit or profile, else this round's
 * model learned from one size (learn.h); NULL when it has none yet. */
const struct speed_model *live_model_planned_speed(const struct live_model *m);

/* Predicted seconds to finish at w GPUs, or -1 when unknown: its remaining epochs at its
 * rate there, sched_speed_rate() (with a batch model its goodput as the policies plan it,
 * since its epochs are counted at its initial batch; else speed_epochs_per_second). */
double live_model_remaining_s(const struct live_model *m, int w);

/* The remaining work the scheduler plans with, at cur_gpus GPUs (<= 0: 1), as the members of
 * the API's `model` object (new): "remaining_epochs", "remaining_steps" (an integer),
 * "predicted_remaining_s" (null each when unknown), "remaining_source" ("declared", "fit",
 * "prior", "elapsed"; "none" before its first estimate) and "remaining" {epochs, steps,
 * seconds, source, reason (why a part is unknown, e.g. "learning its speed"; null when none
 * is), epochs_done, gpus}. Never 0 while it has an estimate (the core's are > 0). */
json_t *live_model_remaining_json(const struct live_model *m, int cur_gpus);

struct live_snap;

/* Marks m changed (its `model` JSON is written again) when its per-type models say something
 * else than it last showed: another GPU model, source or count of sizes measured, or a 1-GPU
 * step time moved by more than LIVE_TYPE_MOVED (an estimate follows the other jobs' refits a
 * little every round; the row is not rewritten for that), and keeps what they say now. */
#define LIVE_TYPE_MOVED 0.02
void live_model_note_types(struct live_model *m);

/* The job's `model` object of the API (new): source, coefficients, predictions per GPU count
 * on the reference GPU, the remaining work as live_model_remaining_json() has it, the
 * convergence fit as its evidence ("fit"), and per GPU type (speed.by_gpu_model), where each
 * figure comes from: first its own models (types[]: "measured" from its steps there, on
 * measured_sizes world sizes; "estimated" from the cluster's ratios, with its uncertainty, the
 * relative 1-sigma of the step time; "given"), then each other GPU model of the nodes of s
 * (may be NULL) at its reference model times that model's one factor ("factor"); each with
 * its step time, samples per second and remaining seconds at cur_gpus (<= 0: 1) GPUs and at
 * 1, 2, 4, ... 64 (curve). */
json_t *live_model_json(const struct live_model *m, int cur_gpus, const struct live_snap *s);

#endif
