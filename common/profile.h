/* profile: the measured training-job profiles of /work/shared/profiles/<app>/ (the Pollux
 * artifact's traces; see shared/profiles/README.md), loaded into plain arrays so that the
 * simulator can build job templates from them and the tests can check our models on them.
 *
 * Where the files are: env RINGMASTER_SHARED_DIR if set (the folder that holds profiles/),
 * else "../shared" relative to the working directory (tests run from the repository root,
 * and in CI shared/ sits beside the clone).
 *
 * Typical use:
 *     char err[256];
 *     struct profile *p = profile_load("cifar10", err, sizeof(err));
 *     if (!p) { fprintf(stderr, "%s\n", err); ... }
 *     for (size_t i = 0; i < p->placements.n; i++)
 *         use(p->placements.w[i], p->placements.nodes[i], p->placements.step_time[i]);
 *     profile_destroy(p);
 */
#ifndef RINGMASTER_PROFILE_H
#define RINGMASTER_PROFILE_H

#include <stddef.h>

/* The six apps that shared/profiles/ holds, in a fixed order. */
#define PROFILE_NAPPS 6
/* Name of app i (0 <= i < PROFILE_NAPPS): "bert", "cifar10", "deepspeech2", "imagenet",
 * "ncf", "yolov3"; NULL when i is out of range. Static string. */
const char *profile_app_name(size_t i);

/* Step-time measurements, one row per index (structure of arrays, all of length n).
 *   w          GPUs in all (sum of the placement's digits; num_replicas for scalability)
 *   nodes      nodes used (digits in the placement; num_nodes for scalability)
 *   max_per_node  the most GPUs on one node (largest digit; for scalability ceil(w/nodes))
 *   local_bsz  examples per GPU per step
 *   step_time  seconds per step
 *   sync_time  seconds of the step spent in gradient all-reduce */
struct profile_points {
    size_t n;
    int *w;
    int *nodes;
    int *max_per_node;
    int *local_bsz;
    double *step_time;
    double *sync_time;
};

/* One validation-<global batch>.csv: the job trained at a fixed global batch, one row per
 * epoch. progress = cumulative steps' worth of progress at the app's smallest global batch
 * (steps scaled by the statistical gain of the larger batch, scheduler/goodput.h: a step at
 * the smallest batch counts 1); iteration = steps so far; metric = the validation metric (see
 * profile.metric_rises); grad_sqr and grad_var = that epoch's gradient statistics at the
 * smallest batch (0 when the file has no such columns). */
struct profile_validation {
    int global_bsz;
    size_t n;
    double *progress;
    double *iteration;
    double *metric;
    double *grad_sqr;
    double *grad_var;
};

struct profile {
    char app[32];
    struct profile_points placements;  /* placements.csv (nodes of 4 GPUs) */
    struct profile_points scalability; /* scalability.csv (larger runs); n = 0 if absent */
    size_t nvalidations;
    struct profile_validation *validations; /* sorted by global_bsz, ascending */
    /* 1 when the metric rises as training goes on (accuracy, F1, hit rate), 0 when it falls
     * (word error rate, a loss); decided from the data of the smallest global batch. */
    int metric_rises;
};

/* Writes the profiles folder (<shared>/profiles) into buf; returns buf. */
const char *profile_dir(char *buf, size_t len);

/* Loads one app from profile_dir()/<app>/. Returns a new profile (free with
 * profile_destroy), or NULL with a message in err (missing file, bad row "file:line: ..."). */
struct profile *profile_load(const char *app, char *err, size_t errlen);

/* As profile_load, from an explicit folder that holds placements.csv etc. */
struct profile *profile_load_dir(const char *dir, const char *app, char *err, size_t errlen);

/* The node types of <shared>/profiles-hetero (the same six apps measured on four kinds of
 * node; its README.md), in a fixed order: "aws" (4 T4), "rtx" (8 RTX 2080Ti), "quad" (4
 * Quadro RTX 6000), "dgx-ext" (8 A100); NULL when i is out of range. Static string. */
#define PROFILE_NTYPES 4
const char *profile_type_name(size_t i);

/* Writes the heterogeneous profiles folder (<shared>/profiles-hetero) into buf; returns buf. */
const char *profile_hetero_dir(char *buf, size_t len);

/* Loads app's measurements on node type `type` (profile_type_name()) from
 * profile_hetero_dir()/<app>/placements-<type>.csv and scalability-<type>.csv, their columns
 * read by header (their order differs between files). placements and scalability as
 * profile_load() fills them; no validations (the curves are those of profile_load(), byte
 * for byte). Returns a new profile, or NULL with a message in err. */
struct profile *profile_load_type(const char *app, const char *type, char *err, size_t errlen);

/* Frees everything; NULL is a no-op. */
void profile_destroy(struct profile *p);

/* The most common local_bsz among p->placements (ties: the smaller); 0 if none. */
int profile_common_local_bsz(const struct profile *p);

/* Link classes (issue 32, scheduler/speed.h) from the placements, which time the same world
 * size on one node and on several: the profiles' nodes of 4 GPUs are taken as joined over
 * PCIe, an NVLink island as PROFILE_NVLINK_SPEEDUP times faster for the all-reduce, and a
 * path across switches as PROFILE_SWITCH_OVERSUB times slower for what the network adds. */
#define PROFILE_NVLINK_SPEEDUP 5.0
#define PROFILE_SWITCH_OVERSUB 2.0

/* At the local batch of placements nearest bsz, over the world sizes w (2 to 4) measured both
 * on one node and on several: *pcie, the mean of sync_time(one node) (1 - 1/
 * PROFILE_NVLINK_SPEEDUP), what a step over PCIe loses against one inside an island, and
 * *cross, the mean of (step_time(several nodes) - step_time(one node)) (PROFILE_SWITCH_OVERSUB
 * - 1), what a step across switches loses against one on a switch; each as a share of the
 * 1-GPU step_time at that batch. Returns the world sizes averaged (0: none, both 0). */
int profile_link_shares(const struct profile *p, int bsz, double *pcie, double *cross);

#endif
