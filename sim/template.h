/* template: the job templates the simulator builds workloads from. Each has a
 * true speed model, the epochs a job trains for, and its GPU bounds.
 *
 *   resnet110  the paper's ResNet-110/CIFAR-10 job (DESIGN.md), 128 images per
 *              GPU, 50,000 images, epochs exponential with mean
 *              TEMPLATE_RESNET_EPOCHS (at least 1), 1..8 GPUs (the paper's strategies never go
 *              past 8); its step times fold in the extra epochs a larger global
 *              batch needs, calibrated on the paper's Table 3 (see template.c).
 *   resnet110-steps  the same with Table 1's step times only (402.5, 427.2, 444.3,
 *              470.2 ms on 1, 2, 4, 8 GPUs) and no extra epochs.
 *   bert, cifar10, deepspeech2, imagenet, ncf, yolov3
 *              the measured profiles of shared/profiles (common/profile.h): the speed
 *              model is fitted to placements.csv at the most common local batch, the
 *              dataset size is the smallest global batch times its steps per epoch,
 *              epochs are the README's (2, 100, 80, 90, 10, 50); 1..16 GPUs.
 *   gpt-350m, gpt-1.3b, gpt-2.7b, gpt-6.7b, gpt-13b
 *              synthetic large-model jobs with execution plans (template_plans)
 *   mixed      (workloads only) each job one of the six apps, drawn uniformly.
 *   plans      (workloads only) each job one of the five gpt-* jobs. */
#ifndef RINGMASTER_SIM_TEMPLATE_H
#define RINGMASTER_SIM_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "speed.h"

/* The link classes of the resnet110 jobs (issue 32), shares of their 1-GPU step: ResNet-18 on
 * the same CIFAR-10 in shared/profiles/cifar10 at 129 examples per GPU (the paper's 128),
 * profile_link_shares(); tests/unit/sim/test_topology_sim.c checks them against the files. */
#define TEMPLATE_RESNET_PCIE_SHARE 0.0422
#define TEMPLATE_RESNET_CROSS_SHARE 0.308
/* Mean epochs of a resnet110 job; see docs/simulator.md for the calibration. */
#define TEMPLATE_RESNET_EPOCHS 146.0

struct template
{
    char name[32];
    struct speed_model speed;
    double epochs;   /* mean epochs of a job */
    double spread;   /* epochs drawn uniformly in [1-spread, 1+spread] x epochs */
    int exponential; /* instead: epochs exponential with that mean, at least 1 */
    int requested_gpus;
    int max_gpus;
    struct plan_spec plan; /* zero: no plan info (all but the gpt-* templates) */
};

/* The Rubick-style mixed-plan set (`--template plans`): GPT-like models of
 * 0.35, 1.3, 2.7, 6.7 and 13 billion parameters, each supporting every plan
 * (DP, ZeRO-1/2/3, offload, tp <= 8, pp <= 4) and asking for the plan a user
 * would pick statically (see template.c and docs/plans.md). */
#define TEMPLATE_NPLANS 5

/* Fills t[0..TEMPLATE_NPLANS) with the gpt-* templates. Returns 0. */
int template_plans(struct template *t);

/* Fills *t with the template of that name ("resnet110", "resnet110-steps" or an app). Returns 0, or
 * -1 with a message in err (unknown name, profile missing or unfittable). */
int template_get(const char *name, struct template *t, char *err, size_t errlen);

/* The epochs Pollux's simulator trains measured app `app` for (shared/profiles/README.md:
 * bert 2, cifar10 100, deepspeech2 80, imagenet 90, ncf 10, yolov3 50); 0 for another name. */
double template_app_epochs(const char *app);

/* Epochs for one job of t, drawn with the PRNG state. */
double template_draw_epochs(const struct template *t, uint64_t *rng);

/* Names template_get() knows, NULL-terminated ("mixed" is not among them). */
const char *const *template_names(void);

#endif
