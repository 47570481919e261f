/* pollux_app: one of the six measured applications of shared/profiles as a goodput job, the
 * way the Pollux paper's evaluation (Qiao et al., OSDI 2021, section 5) runs them:
 *
 *   - throughput: our speed model (speed.h) fitted to every row of placements.csv and
 *     scalability.csv (GPUs, nodes and local batch vary), on nodes of 4 GPUs;
 *   - work: the progress (steps' worth at the smallest validated batch M0) at which the
 *     fastest of its validation runs ends its last epoch (bert 2, cifar10 100, deepspeech2
 *     80, imagenet 90, ncf 10, yolov3 50 epochs), in epochs at M0;
 *   - statistical efficiency: the gradient statistics of every epoch of every validation run
 *     (simulate/simulate.h, struct simulate_grad);
 *   - batch bounds: M0 to the largest validated batch; local batches from the smallest to
 *     the largest measured (yolov3: 8), accumulating gradients above it;
 *   - configurations: what a user would ask for, as Pollux's workload generator draws them:
 *     for GPU counts 1, 2, 4, 6, 8, 12, 16, 24, 32, 48 packed on 4-GPU nodes, the validated
 *     batch that finishes soonest; kept when it finishes within 12 hours and its speed-up over
 *     1 GPU is 50-80 % of linear (else the 1-GPU configuration alone). These JCTs use the
 *     measured step times where the placement was measured (linear between local batches),
 *     the fit elsewhere: what users know is what they measured. */
#ifndef RINGMASTER_SIM_POLLUX_APP_H
#define RINGMASTER_SIM_POLLUX_APP_H

#include <stddef.h>

#include "goodput.h"
#include "profile.h"
#include "sched_types.h"
#include "simulate/simulate.h"
#include "speed.h"

#define POLLUX_MAX_CONFIGS 10
#define POLLUX_MAX_RUNS 16

struct pollux_config {
    int gpus;
    double batch;
    double jct_s; /* predicted alone at that configuration */
};

struct pollux_app {
    char name[32];
    struct speed_model speed; /* gpus_per_node 4, dataset_size = M0 x steps of an epoch */
    struct batch_spec batch;  /* init, max, min/max local; batch = init, not adaptive */
    double work_epochs;       /* epochs at M0 to train */
    struct simulate_grad grad;
    double *arrays;           /* grad's storage */
    double run_steps[POLLUX_MAX_RUNS]; /* steps of each validation run to its last epoch */
    struct pollux_config configs[POLLUX_MAX_CONFIGS]; /* jct_s from the measurements */
    size_t nconfigs;
    double fit_rel_rmse;      /* relative RMS error of the speed fit over the measured rows */
    /* Heterogeneous (pollux_app_load_types()): its speed on each node type of
     * shared/profiles-hetero, in profile_type_name() order: fitted to that type's rows with
     * the type's GPUs per node, max_local the largest local batch measured there. */
    struct sched_type_speed types[PROFILE_NTYPES];
    size_t ntypes;
    double type_rel_rmse[PROFILE_NTYPES];
    struct speed_model ref_speed; /* the reference (v100) model a factor view scales: its T4
                                   * (aws) model times the T4's factor */
};

/* Builds app name from its profile. Returns 0, or -1 with a message in err. */
int pollux_app_load(const char *name, struct pollux_app *app, char *err, size_t errlen);

void pollux_app_free(struct pollux_app *app);

/* Fills app's types from shared/profiles-hetero (after pollux_app_load()): type k is GPU
 * model gpu_model[k] (sched_node.gpu_model) with nodes of node_gpus[k] GPUs; t4_factor is
 * the aws type's gpu_speed, which ref_speed divides out. Returns 0, or -1 with err. */
int pollux_app_load_types(struct pollux_app *app, const int gpu_model[PROFILE_NTYPES],
                          const int node_gpus[PROFILE_NTYPES], double t4_factor, char *err,
                          size_t errlen);

/* Predicted seconds for the whole job alone on gpus GPUs packed on 4-GPU nodes at global
 * batch batch, from the validation run of that batch (its steps to the end); INFINITY when
 * the batch was not validated or does not fit. */
double pollux_app_jct(const struct pollux_app *app, int gpus, double batch);

#endif
