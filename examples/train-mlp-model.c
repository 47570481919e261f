/* train-mlp-model.c: train-mlp's model and its arithmetic: the random teacher network, the
 * student MLP's buffers and initialisation, forward and backward of a sample, a rank's
 * minibatch (with gradient accumulation and the micro-batch norms), the emulated device
 * time, Adam, the gradient-noise statistics and one data-parallel step with its
 * MPI_Allreduce. See examples/train-mlp.c for the whole program.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train-mlp-model.h"

static double teacher_w1[TEACHER_HIDDEN][IN_DIM];
static double teacher_w2[TEACHER_HIDDEN];

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double uniform(uint64_t *s)
{
    *s = mix64(*s);
    return ((double)(*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double gaussian(uint64_t *s)
{
    double u = uniform(s), w = uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

void make_teacher(unsigned long seed)
{
    uint64_t s = mix64(seed ^ 0x7465616368ULL);
    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        for (int i = 0; i < IN_DIM; i++)
            teacher_w1[j][i] = 2.0 * gaussian(&s) / sqrt((double)IN_DIM);
        teacher_w2[j] = gaussian(&s) / sqrt((double)TEACHER_HIDDEN);
    }
}

static double teacher(const double *x)
{
    double y = 0.0;
    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        double a = 0.0;
        for (int i = 0; i < IN_DIM; i++)
            a += teacher_w1[j][i] * x[i];
        y += teacher_w2[j] * tanh(a);
    }
    return y;
}

int model_alloc(struct model *md)
{
    size_t p = (size_t)md->nparams;
    md->theta = calloc(p, sizeof(double));
    md->m = calloc(p, sizeof(double));
    md->v = calloc(p, sizeof(double));
    md->grad = calloc(p, sizeof(double));
    md->act = calloc((size_t)md->hidden, sizeof(double));
    md->half = calloc(p, sizeof(double));
    return md->theta && md->m && md->v && md->grad && md->act && md->half ? 0 : -1;
}

void model_free_buffers(struct model *md)
{
    free(md->theta);
    free(md->m);
    free(md->v);
    free(md->grad);
    free(md->act);
    free(md->half);
    md->theta = md->m = md->v = md->grad = md->act = md->half = NULL;
}

int model_init(struct model *md, long params, unsigned long seed)
{
    memset(md, 0, sizeof(*md));
    md->hidden = (params - 1) / (IN_DIM + 2);
    if (md->hidden < 1)
        md->hidden = 1;
    md->nparams = md->hidden * (IN_DIM + 2) + 1;
    if (model_alloc(md) < 0)
        return -1;
    uint64_t s = mix64(seed ^ 0x73747564ULL);
    long h = md->hidden;
    for (long k = 0; k < h * IN_DIM; k++)
        md->theta[k] = gaussian(&s) / sqrt((double)IN_DIM);
    for (long j = 0; j < h; j++)
        md->theta[h * (IN_DIM + 1) + j] = gaussian(&s) / sqrt((double)h);
    return 0;
}

/* Forward and backward of one sample; adds the gradient into md->grad, returns the loss. */
static double sample_grad(struct model *md, const double *x, double y)
{
    long h = md->hidden;
    double *w1 = md->theta, *b1 = w1 + h * IN_DIM, *w2 = b1 + h, *b2 = w2 + h;
    double *g1 = md->grad, *gb1 = g1 + h * IN_DIM, *gw2 = gb1 + h, *gb2 = gw2 + h;
    double out = *b2;
    for (long j = 0; j < h; j++) {
        double a = b1[j];
        for (int i = 0; i < IN_DIM; i++)
            a += w1[j * IN_DIM + i] * x[i];
        md->act[j] = tanh(a);
        out += w2[j] * md->act[j];
    }
    double e = out - y;
    *gb2 += e;
    for (long j = 0; j < h; j++) {
        double da = e * w2[j] * (1.0 - md->act[j] * md->act[j]);
        gw2[j] += e * md->act[j];
        gb1[j] += da;
        for (int i = 0; i < IN_DIM; i++)
            g1[j * IN_DIM + i] += da * x[i];
    }
    return 0.5 * e * e;
}

static double sqnorm(const double *v, long n, double scale)
{
    double s = 0.0;
    for (long k = 0; k < n; k++)
        s += v[k] * v[k];
    return s * scale * scale;
}

/* Folds the micro-batch that ended at md->grad (its `n` examples summed since md->half) into
 * micro (sum of squared norms of micro-batch mean gradients, their count), and marks the
 * next one's start. */
static void micro_end(struct model *md, long n, double micro[2])
{
    double s = 0.0;
    for (long k = 0; k < md->nparams; k++) {
        double g = md->grad[k] - md->half[k];
        s += g * g;
        md->half[k] = md->grad[k];
    }
    micro[0] += s / ((double)n * (double)n);
    micro[1] += 1;
}

/* One rank's minibatch of count examples of step `step`: fills md->grad with its mean
 * gradient, returns its mean loss. It is computed in `parts` micro-steps of (nearly) equal
 * size whose gradients are summed (gradient accumulation, when parts > 1). With micro (not
 * NULL) it is also measured as micro-batches, each micro-step split so that there are
 * GRAD_PARTS at least (at most count): micro[0] gets the sum of their mean gradients' squared
 * norms, micro[1] how many there were. */
double local_batch(struct model *md, const struct options *o, int rank, long count,
                   long parts, double micro[2])
{
    memset(md->grad, 0, (size_t)md->nparams * sizeof(double));
    memset(md->half, 0, (size_t)md->nparams * sizeof(double));
    uint64_t s = mix64(mix64(o->seed) ^ mix64((uint64_t)md->step * 1000003ULL + (uint64_t)rank));
    double loss = 0.0, x[IN_DIM];
    if (micro && parts < GRAD_PARTS)
        parts *= (GRAD_PARTS + parts - 1) / parts; /* split each micro-step evenly */
    if (parts > count)
        parts = count > 0 ? count : 1;
    if (micro)
        micro[0] = micro[1] = 0;
    long b = 0;
    for (long p = 0; p < parts; p++) {
        long n = count / parts + (p < count % parts);
        for (long e = 0; e < n; e++, b++) {
            for (int i = 0; i < IN_DIM; i++)
                x[i] = gaussian(&s);
            double y = teacher(x);
            if (o->label_noise > 0)
                y += o->label_noise * gaussian(&s);
            loss += sample_grad(md, x, y);
        }
        if (micro && parts > 1)
            micro_end(md, n, micro);
    }
    if (micro && parts == 1) { /* one example: nothing to compare it with */
        micro[0] = sqnorm(md->grad, md->nparams, 1.0 / (double)count);
        micro[1] = 1;
    }
    for (long k = 0; k < md->nparams; k++)
        md->grad[k] /= (double)count;
    return loss / (double)count;
}

/* The emulated device time of one rank's minibatch of count examples
 * (--sleep-us-per-sample) and of its exchange (--sleep-us-allreduce, on world > 1). */
static void emulate_device(const struct options *o, long count, int world)
{
    long us = lround((double)o->sleep_us_per_sample * (double)count * o->compute_factor) +
              (world > 1 ? o->sleep_us_allreduce : 0);
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (us > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void adam_update(struct model *md, double lr)
{
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1.0 - pow(b1, (double)md->step), c2 = 1.0 - pow(b2, (double)md->step);
    for (long k = 0; k < md->nparams; k++) {
        double g = md->grad[k];
        md->m[k] = b1 * md->m[k] + (1.0 - b1) * g;
        md->v[k] = b2 * md->v[k] + (1.0 - b2) * g * g;
        md->theta[k] -= lr * (md->m[k] / c1) / (sqrt(md->v[k] / c2) + eps);
    }
}

/* Folds one step's micro-batch and whole-batch squared norms into the smoothed estimates of
 * |G|^2 and of the per-example variance S (see the top of the file). */
static void grad_stats_add(struct batch_run *br, double small_sqr, double nmicro, double big_sqr)
{
    double b_small = (double)br->batch / nmicro, b_big = (double)br->batch;
    if (!(b_small < b_big) || !(b_small > 0))
        return; /* one micro-batch in all: nothing to compare */
    double sqr = (b_big * big_sqr - b_small * small_sqr) / (b_big - b_small);
    double var = (small_sqr - big_sqr) / (1.0 / b_small - 1.0 / b_big);
    double a = br->n < GRAD_WINDOW ? 1.0 / (double)(br->n + 1) : 1.0 / GRAD_WINDOW;
    br->sqr += a * (sqr - br->sqr);
    br->var_per_example += a * (var - br->var_per_example);
    br->n++;
}

/* A step of a global batch: every rank's gradient weighted by its examples, and the noise
 * estimates. Returns the loss over the batch. */
static double global_step(struct model *md, const struct options *o, int rank, int world,
                          struct batch_run *br)
{
    double micro[2] = {0, 0}, loss = local_batch(md, o, rank, br->local, br->accum, micro);
    emulate_device(o, br->local, world);
    for (long k = 0; k < md->nparams; k++)
        md->grad[k] *= (double)br->local;
    double sums[3] = {loss * (double)br->local, micro[0], micro[1]};
    MPI_Allreduce(MPI_IN_PLACE, md->grad, (int)md->nparams, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (long k = 0; k < md->nparams; k++)
        md->grad[k] /= (double)br->batch;
    if (sums[2] > 0)
        grad_stats_add(br, sums[1] / sums[2], sums[2], sqnorm(md->grad, md->nparams, 1.0));
    return sums[0] / (double)br->batch;
}

/* One data-parallel step; returns the loss averaged over all ranks. */
double train_step(struct model *md, const struct options *o, int rank, int world, double lr,
                  struct batch_run *br)
{
    md->step++;
    if (br->global) {
        double loss = global_step(md, o, rank, world, br);
        adam_update(md, lr);
        return loss;
    }
    double loss = local_batch(md, o, rank, o->batch, 1, NULL);
    emulate_device(o, o->batch, world);
    MPI_Allreduce(MPI_IN_PLACE, md->grad, (int)md->nparams, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (long k = 0; k < md->nparams; k++)
        md->grad[k] /= world;
    adam_update(md, lr);
    return loss / world;
}
