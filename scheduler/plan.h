/* plan: execution plans and their performance model (Rubick; docs/plans.md).
 *
 * A job may declare its model size and the execution plans it supports: plain
 * data parallel (DP), ZeRO stages 1, 2 and 3, ZeRO-Offload (optimizer states
 * and the Adam step on the host), and tensor (tp) and pipeline (pp) parallel
 * degrees. Its speed model (speed.h) describes its DATA-PARALLEL step on the
 * reference GPU as if memory were unlimited; a plan transforms it:
 *
 *   d        = w / (tp * pp)                          data-parallel degree
 *   compute  = (θ0 + θ1 m) / gpu_speed * (1 + TP_OVERHEAD (tp-1)) * (1 + (pp-1)/MICROBATCHES)
 *   comm     = θ2 α(d) + zf (θ3 β(d) + θ4 γ(d)) / (tp pp) + θ5 internode
 *              zf = 1 (DP, ZeRO-1, ZeRO-2, Offload), 1.5 (ZeRO-3)
 *   offload  = 4 P / d / PCIE_GBPS  +  P / d / (cores * ADAM_GPARAMS_PER_CORE_S)
 *   t_step   = compute + comm (+ offload)
 *
 * Memory per GPU, P = params_b (billions of parameters; 16 bytes each with
 * mixed-precision Adam: 2 weights + 2 gradients + 12 optimizer), in GB, over
 * the model-parallel shard tp * pp:
 *
 *   DP 16P   ZeRO-1 4P + 12P/d   ZeRO-2 2P + 14P/d   ZeRO-3 16P/d   Offload 2P
 *   (each / (tp pp)) + act_gb / tp; it must fit in gpu_mem_gb.
 *
 * Host resources per GPU: BASE_CORES cores and BASE_HOST_GB GB (data loading);
 * an offloading plan also holds 16P/d GB of host memory and the cores it is
 * given (4, 8 or 16 per GPU: more cores, a faster host-side Adam step).
 *
 * Pure: no I/O, no state. */
#ifndef RINGMASTER_PLAN_H
#define RINGMASTER_PLAN_H

#include <math.h>

#include "speed.h"

enum plan_kind {
    PLAN_DP = 0,   /* plain data parallel (the default, and what zero means) */
    PLAN_ZERO1,    /* optimizer states partitioned */
    PLAN_ZERO2,    /* + gradients partitioned */
    PLAN_ZERO3,    /* + parameters partitioned (1.5x the traffic) */
    PLAN_OFFLOAD,  /* ZeRO-2 with optimizer states and Adam on the host */
    PLAN_NKINDS
};

#define PLAN_TP_OVERHEAD 0.10      /* per extra tensor-parallel degree (activation all-reduces) */
#define PLAN_MICROBATCHES 8.0      /* pipeline microbatches: bubble (pp-1)/8 */
#define PLAN_PCIE_GBPS 12.0        /* effective GPU <-> host bandwidth, GB/s per GPU */
#define PLAN_ADAM_GPARAMS_PER_CORE_S 0.05 /* host Adam: 5e7 parameters per core-second */
#define PLAN_BASE_CORES 2          /* CPU cores per GPU every plan needs */
#define PLAN_BASE_HOST_GB 4.0      /* host GB per GPU every plan needs */
#define PLAN_DEFAULT_GPU_MEM_GB 40.0 /* a node that does not say */
#define PLAN_MAX_DEGREE 8          /* tp and pp stay within a node */

/* A concrete plan with the host resources it holds per GPU. Zero-initialised:
 * data parallel, tp = pp = 1, no host resources. */
struct plan_choice {
    int kind;            /* enum plan_kind */
    int tp, pp;          /* degrees; <= 1 means none */
    int cpu_cores;       /* per GPU (plan_demand fills it) */
    double host_mem_gb;  /* per GPU (plan_demand fills it) */
};

/* What a job declares. All zero: no plan information (the job is plain data
 * parallel, any memory fits, no host resources counted). */
struct plan_spec {
    double params_b;     /* model parameters, billions; <= 0: no plan info */
    double act_gb;       /* activation memory per GPU at its batch (DP) */
    unsigned supported;  /* bit (1u << kind) per kind it can run; 0: requested only */
    int max_tp, max_pp;  /* largest degrees it accepts; <= 1: none */
    struct plan_choice requested; /* the plan it asked for */
};

/* 1 if the spec carries plan information (params_b > 0). */
int plan_has_info(const struct plan_spec *ps);

/* Fills c's cpu_cores and host_mem_gb per GPU for w GPUs (c->cpu_cores of an
 * offloading plan is kept if it is 4, 8 or 16, else set to 8). */
void plan_demand(const struct plan_spec *ps, struct plan_choice *c, int w);

/* GPU memory per GPU (GB) of plan c on w GPUs; INFINITY if w is not a multiple
 * of tp * pp. */
double plan_gpu_mem_gb(const struct plan_spec *ps, const struct plan_choice *c, int w);

/* Seconds per step of plan c on w GPUs spread over nodes nodes of relative
 * speed gpu_speed (<= 0: 1) and gpu_mem_gb GB each (<= 0: the default);
 * INFINITY if it does not fit, w is not a multiple of tp * pp, or the model is
 * not fitted. A spec without plan info gives the DP step, never out of memory. */
double plan_step_time(const struct speed_model *sp, const struct plan_spec *ps,
                      const struct plan_choice *c, int w, int nodes, double gpu_speed,
                      double gpu_mem_gb);

/* Epochs per second of that step: w m / (t_step dataset); 0 when it cannot run. */
double plan_epochs_per_second(const struct speed_model *sp, const struct plan_spec *ps,
                              const struct plan_choice *c, int w, int nodes, double gpu_speed,
                              double gpu_mem_gb);

/* The fastest plan the job supports on w GPUs (packed: nodes from
 * sp->gpus_per_node) that holds at most max_cores cores and max_host_gb GB of
 * host memory per GPU (<= 0: no limit). Ties keep the requested plan, then the
 * lower kind and degrees. Fills *out (with its demand) and returns its epochs
 * per second, or 0 when no plan fits (out then holds the requested plan). ps NULL: no
 * plan information (as a plan_spec of zeros). */
double plan_best(const struct speed_model *sp, const struct plan_spec *ps, int w,
                 double gpu_speed, double gpu_mem_gb, int max_cores, double max_host_gb,
                 struct plan_choice *out);

/* plan_best(sp, NULL, w, gpu_speed, ...) (plain data parallel, no plan information: memory
 * and host limits do not apply) from f, the features of w GPUs packed as sp says
 * (speed_features_placed(w, speed_packed_nodes(sp, w), sp->batch_per_gpu, f)): the same
 * number, for a caller that keeps the all-reduce coefficients of the counts it asks for. */
double plan_dp_rate(const struct speed_model *sp, int w, const double f[SPEED_NFEATURES],
                    double gpu_speed);

/* plan_dp_rate(sp, w, f, 1.0) of a fitted model (sp->fitted, w >= 1), inline (plan_dp_rate()
 * goes through it): the step time at f, as epochs per second (0 when it is not positive and
 * finite, or the dataset size is not positive). */
static inline double plan_dp_rate_unit(const struct speed_model *sp, int w,
                                       const double f[SPEED_NFEATURES])
{
    double t = speed_step_time_features(sp, f);

    if (!isfinite(t) || t <= 0.0 || !(sp->dataset_size > 0.0))
        return 0.0;
    return (double)w * sp->batch_per_gpu / (t * sp->dataset_size);
}

/* The job's requested plan on requested_gpus reference GPUs (speed 1, memory
 * gpu_mem_gb): the epochs per second the guarantee protects; 0 if it does not
 * fit (then any allocation that runs is better). */
double plan_requested_rate(const struct speed_model *sp, const struct plan_spec *ps,
                           int requested_gpus, double gpu_mem_gb);

/* 1 if a and b are the same plan (kind and degrees; resources ignored). */
int plan_same(const struct plan_choice *a, const struct plan_choice *b);

/* A short static name: "dp", "zero1", "zero2", "zero3", "offload". */
const char *plan_kind_name(int kind);

#endif
