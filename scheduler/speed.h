/* speed: a job's step time as a function of its world size w (DESIGN.md "Models").
 *
 *   t_step(w) = θ0 + θ1*m + T_allreduce(w, n)
 *   T_allreduce = θ2*alpha_feature(w) + θ3*beta_feature(w) + θ4*gamma_feature(w)
 *
 * where the alpha/beta/gamma features are the coefficients of latency, per-byte
 * transfer and per-byte reduction in the all-reduce algorithm that w selects
 * (ring, recursive halving-doubling for powers of two, binary blocks otherwise),
 * with the model size folded into θ3 and θ4. All θ >= 0, fitted by NNLS. */
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

#define SPEED_NFEATURES 5

struct speed_model {
    double theta[SPEED_NFEATURES];
    double batch_per_gpu; /* m: examples per worker per step */
    double dataset_size;  /* examples per epoch */
    double rmse;          /* of the fit, seconds */
    int fitted;
};

/* Feature vector of world size w for a job with m examples per worker. */
void speed_features(int w, double m, double f[SPEED_NFEATURES]);

/* Fits θ from n observations (w[i], step_s[i]); n >= 1. With few distinct w
 * the fit is the minimum-norm-ish NNLS answer: it still predicts every w.
 * Returns 0, or -1 with errno EINVAL leaving *model unchanged. */
int speed_fit(struct speed_model *model, const int *w, const double *step_s, size_t n);

/* Predicted seconds per step at world size w >= 1. */
double speed_step_time(const struct speed_model *model, int w);

/* w * m / (t_step(w) * dataset_size). */
double speed_epochs_per_second(const struct speed_model *model, int w);

#endif
