/* speed: a job's step time as a function of its world size w (DESIGN.md "Models").
 *
 *   t_step(w) = θ0 + θ1*m + T_allreduce(w, n) + θ5*internode(N)
 *   T_allreduce = θ2*alpha_feature(w) + θ3*beta_feature(w) + θ4*gamma_feature(w)
 *
 * where the alpha/beta/gamma features are the coefficients of latency, per-byte
 * transfer and per-byte reduction in the all-reduce algorithm that w selects
 * (ring, recursive halving-doubling for powers of two, binary blocks otherwise),
 * with the model size folded into θ3 and θ4. All θ >= 0, fitted by NNLS.
 *
 * The sixth feature, internode = 1 when the job spans more than one node (0 on
 * one node), carries the jump in step time that the measured profiles
 * (shared/profiles/) show as soon as gradients cross the network; the five
 * world-size features cannot express it. (Tried on those profiles: this
 * indicator fits better than 2(N-1)/N or than the all-reduce coefficients
 * switched on across nodes.) Where the placement is unknown the model assumes
 * the job is packed: N = ceil(w / gpus_per_node), or N = 1 when gpus_per_node
 * is 0.
 *
 * Link classes (issue 32): the slowest link a placement's gradients cross, one NVLink island,
 * one node over PCIe (it spans islands), nodes on one switch, nodes across switches
 * (enum speed_link). Each class carries its own jump: theta5 once nodes are crossed (as
 * above), theta6 over PCIe inside a node, and theta7 added to theta5 across switches:
 *
 *   t_step = ... + θ5*[link >= SWITCH] + θ6*[link == PCIE] + θ7*[link == CROSS]
 *
 * So a model fitted from placements of each class predicts each class, and a caller that
 * knows no class (SPEED_LINK_ISLAND with nodes > 1 is taken as SWITCH) gets what it got
 * before the classes existed. Where the placement is unknown and the model knows its
 * islands' size (gpus_per_island > 0), a packed job of more GPUs than an island on one node
 * spans PCIe.
 *
 * The fit minimises the relative error of the step times (rows divided by the
 * measured time). */
#ifndef RINGMASTER_SPEED_H
#define RINGMASTER_SPEED_H

#include <stddef.h>

enum allreduce_algo { ALLREDUCE_NONE, ALLREDUCE_RING, ALLREDUCE_HALVING_DOUBLING,
                      ALLREDUCE_BINARY_BLOCKS };

/* The algorithm an MPI library would pick for p workers of a large message:
 * NONE for p == 1, HALVING_DOUBLING for powers of two, BINARY_BLOCKS otherwise. */
enum allreduce_algo allreduce_algo_for(int p);

/* Coefficients of alpha, beta (per byte of the message) and gamma (per byte) in
 * the all-reduce time of the given algorithm for p workers. p >= 1. */
void allreduce_coefficients(enum allreduce_algo algo, int p, double *ca, double *cb, double *cg);

/* The slowest link a placement spans (see above); the order is the cost's. */
enum speed_link { SPEED_LINK_ISLAND, SPEED_LINK_PCIE, SPEED_LINK_SWITCH, SPEED_LINK_CROSS };
#define SPEED_NLINKS 4

/* The class's name ("island", "pcie", "switch", "cross"), and back: -1 for another name. */
const char *speed_link_name(enum speed_link link);
int speed_link_parse(const char *name);

/* The class that w GPUs on nodes nodes over a link of class link really span: at least
 * SWITCH across nodes, at most PCIE on one node. */
enum speed_link speed_link_on(int nodes, enum speed_link link);

#define SPEED_NFEATURES 8
/* The features before the link classes' (a trace's speed_theta may give only those). */
#define SPEED_NFEATURES_NODES 6

struct speed_model {
    double theta[SPEED_NFEATURES];
    double batch_per_gpu; /* m: examples per worker per step (set by the caller) */
    double dataset_size;  /* examples per epoch (set by the caller) */
    double rmse;          /* of the fit, seconds */
    int fitted;
    int gpus_per_node; /* packing assumed by speed_step_time; 0 = one node (caller) */
    int gpus_per_island; /* appended: the NVLink island assumed by speed_step_time; 0 = a
                          * node is one island (caller) */
};

/* Feature vector of world size w (one node) for a job with m examples per worker. */
void speed_features(int w, double m, double f[SPEED_NFEATURES]);

/* Feature vector of world size w spread over nodes >= 1 nodes (no link class known: one
 * island on one node, one switch across nodes). */
void speed_features_placed(int w, int nodes, double m, double f[SPEED_NFEATURES]);

/* The same with the placement's link class (speed_link_on(nodes, link) is used). */
void speed_features_linked(int w, int nodes, enum speed_link link, double m,
                           double f[SPEED_NFEATURES]);

/* Fits θ from n observations (w[i], step_s[i]) taken at m = model->batch_per_gpu
 * on one node (or packed, if model->gpus_per_node > 0); n >= 1, w[i] >= 1,
 * step_s[i] finite and > 0, batch_per_gpu > 0. With few distinct w the fit is
 * the minimum-norm-ish NNLS answer (a tiny ridge term splits the weight between
 * features that the data cannot tell apart): it still predicts every w.
 * Sets theta, rmse and fitted; keeps the other fields.
 * Returns 0, or -1 with errno EINVAL (ENOMEM) leaving *model unchanged. */
int speed_fit(struct speed_model *model, const int *w, const double *step_s, size_t n);

/* One measured step: w workers on `nodes` nodes (1 <= nodes <= w), m > 0
 * examples per worker, step_s > 0 seconds. */
struct speed_obs {
    int w;
    int nodes;
    double m;
    double step_s;
    enum speed_link link; /* appended: its class (ISLAND, the zero: by nodes, as before) */
};

/* As speed_fit, from observations with their own placement and batch size (so θ1,
 * the per-example compute, is identified when the m differ). */
int speed_fit_obs(struct speed_model *model, const struct speed_obs *obs, size_t n);

/* The link class w >= 1 GPUs on nodes nodes span, packed within them: SWITCH across nodes,
 * PCIE on one node when w exceeds gpus_per_island > 0, else ISLAND; speed_packed_link() on
 * speed_packed_nodes(). */
enum speed_link speed_placed_link(const struct speed_model *model, int w, int nodes);
enum speed_link speed_packed_link(const struct speed_model *model, int w);

/* The nodes w >= 1 GPUs span when packed: ceil(w / gpus_per_node), 1 when gpus_per_node
 * is 0 (one node). Inline: a round asks it of every new rate. */
static inline int speed_packed_nodes(const struct speed_model *model, int w)
{
    if (model->gpus_per_node <= 0)
        return 1;
    return (w + model->gpus_per_node - 1) / model->gpus_per_node;
}

/* Predicted seconds per step at world size w >= 1 (packed placement, see above;
 * m = model->batch_per_gpu). INFINITY when w < 1 or the model is not fitted. */
double speed_step_time(const struct speed_model *model, int w);

/* Predicted seconds per step for w workers on nodes nodes with m examples each, packed
 * within them (speed_placed_link()). */
double speed_step_time_placed(const struct speed_model *model, int w, int nodes, double m);

/* The same over a link of class link (speed_link_on(nodes, link)). */
double speed_step_time_linked(const struct speed_model *model, int w, int nodes,
                              enum speed_link link, double m);

/* The same from the features f of that placement (speed_features_placed()), for a caller
 * that keeps the features of the counts it asks for: theta . f, summed from theta[0]. Inline
 * (the only inline function here): rubick and ringmaster ask it for each of the tens of
 * thousands of new rates of a round at 10,000 jobs, through plan_dp_rate(). */
static inline double speed_step_time_features(const struct speed_model *model,
                                              const double f[SPEED_NFEATURES])
{
    double t = 0.0;

    for (size_t j = 0; j < SPEED_NFEATURES; j++)
        t += model->theta[j] * f[j];
    return t;
}

/* w * m / (t_step(w) * dataset_size); 0 when t_step is infinite or the dataset
 * size is not positive. */
double speed_epochs_per_second(const struct speed_model *model, int w);

#endif
