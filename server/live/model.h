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
 *    speed model is refitted (sched_fit_speed: the step times measured on each GPU model,
 *    job_metric_sums per (world size, GPU model), normalised to the reference GPU, so the
 *    model always describes the job on a v100, as the core expects) and the source becomes
 *    FITTED; its (step, loss) points refit the convergence model (conv_fit). Refits happen
 *    only when new metrics came; the points are read incrementally (only steps beyond the
 *    last one read) into a bounded, downsampled series (sched_fit_series).
 *  - nothing: source NONE; the round then runs the exploratory policy for it.
 * Optional fields of the `model` object: "dataset_size" (examples per epoch, default 50,000
 * or the class's) and "epochs" (epochs to train; else the convergence model decides). */
#ifndef RINGMASTER_LIVE_MODEL_H
#define RINGMASTER_LIVE_MODEL_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "fit.h"
#include "sched.h"

struct sched_model {
    int64_t job_id;
    long long metrics_seen; /* job_metrics rows the fit has used */
    enum sched_model_source source;
    char class_name[32];
    struct speed_model speed;
    struct conv_model conv;
    double dataset_size;
    double target_epochs; /* < 0: unknown */
    double epochs_done;
    double last_step;
    double explored_s[SCHED_EXPLORE_STAGES];
    int nworld_sizes;               /* distinct world sizes measured */
    char measured_on[64];           /* GPU models the step times came from ("a100 v100"; "" none) */
    long long points_read;          /* (step, loss) points read from job_metrics so far */
    struct sched_fit_series points; /* those points, bounded and downsampled (fit.h) */
    /* The remaining work every policy reads, estimated from the job's evidence this round
     * (sched_estimate_apply: declared, fit, prior or elapsed); has_estimate 0: none (no
     * speed model yet: the job explores). */
    int has_estimate;
    double estimate_epochs;
    enum sched_estimate_source estimate_source;
    long round;  /* the last round that saw the job (for pruning) */
    int changed; /* refitted (or new) in this round: its JSON must be written */
    int own_batch; /* the job has a batch model: its speed is fitted at the examples per GPU
                    * it measured (samples / w), which change with its batch */
    /* Its job_sched row as last committed (plan_write.c writes it again only when it says
     * something else): a hash of what it says but the times, and the times. */
    uint64_t sched_hash;
    double sched_at;     /* snapshot time of that write (epoch seconds); 0: never */
    double sched_finish; /* its predicted finish then (< 0 none) */
    double sched_rem;    /* its remaining seconds then (< 0 none) */
};

struct sched_models;

/* A new empty cache, or NULL (ENOMEM). */
struct sched_models *sched_models_create(void);
void sched_models_destroy(struct sched_models *ms);

/* The entry of a job, created from its declaration on first sight (model_json: the job's
 * `model` object as text, or NULL; batch_per_gpu >= 1). Marks it seen in round. Returns
 * NULL only on ENOMEM. */
struct sched_model *sched_models_get(struct sched_models *ms, int64_t job_id,
                                     const char *model_json, int batch_per_gpu, long round);

/* Forgets the jobs not seen in round (finished or gone). */
void sched_models_prune(struct sched_models *ms, long round);

/* Refits m from the job's metrics when their count (nmetrics) differs from what the fit saw.
 * Returns 1 when refitted, 0 when nothing was new, -1 on a database error. */
int sched_model_refresh(struct sched_model *m, PGconn *c, long long nmetrics);

/* Epochs to go by the convergence fit of its losses alone at world size w (0: the fit says
 * converged), or -1 without a fit. */
double sched_model_fit_epochs(const struct sched_model *m, int w);

/* Remaining epochs as the scheduler sees them (< 0 when unknown), at world size w: this
 * round's estimate when there is one, else its declared epochs less those done, else the
 * fit's. */
double sched_model_remaining_epochs(const struct sched_model *m, int w);

/* Predicted seconds to finish at w GPUs, or -1 when unknown. */
double sched_model_remaining_s(const struct sched_model *m, int w);

/* The job's `model` object of the API (new): source, coefficients, predictions per GPU count
 * on the reference GPU, and per known GPU model (speed.by_gpu_model). */
json_t *sched_model_json(const struct sched_model *m, int cur_gpus);

#endif
