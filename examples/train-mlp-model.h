/* train-mlp-model.h: what examples/train-mlp.c and train-mlp-model.c share: the options,
 * the batch a launch runs, the model state, and the model's functions (the teacher, the
 * parameters' allocation and initialisation, a rank's minibatch and one data-parallel step).
 */
#ifndef TRAIN_MLP_MODEL_H
#define TRAIN_MLP_MODEL_H

#define IN_DIM 16
#define TEACHER_HIDDEN 8
#define GRAD_WINDOW 20 /* steps the gradient statistics average over (see the top) */
#define GRAD_PARTS 4   /* micro-batches a rank's minibatch is measured as, at least */
#define SPEED_NAMES 8  /* GPU models --speed-by-gpu (and --fits-by-gpu) names at most */

/* A value per GPU model name (--speed-by-gpu, --fits-by-gpu). */
struct by_gpu {
    int n;
    char name[SPEED_NAMES][32];
    double value[SPEED_NAMES];
};

struct options {
    long steps;
    long params;
    long batch;
    double lr;
    unsigned long seed;
    long print_every;
    long sleep_us_per_sample;
    long contend_ms; /* --contend: ms per step holding its GPU alone (gpu_hold) */
    long checkpoint_every;
    long suspend_delay_ms;
    int report_total;        /* --report-total: tell the scheduler the job runs --steps steps */
    long global_batch;       /* --batch M0: a global batch (0: --batch-per-rank per rank) */
    long grad_every;         /* --grad-every: steps between gradient-statistics reports */
    long sleep_us_allreduce; /* --sleep-us-allreduce: emulated exchange per step, world > 1 */
    double label_noise;      /* --label-noise: sigma of the targets' noise */
    struct by_gpu speeds;    /* --speed-by-gpu: names and their compute factors */
    double compute_factor;   /* the factor of this rank's GPU model (1: none named) */
    struct by_gpu fits;      /* --fits-by-gpu: names and the largest local batch on each */
};

/* The batch a launch runs: global (a batch model) or per rank, and the gradient-noise
 * estimates of the global form (smoothed; n: steps seen). */
struct batch_run {
    int global; /* 1: batch examples per step over all ranks */
    long batch; /* examples per step over all ranks */
    long init;  /* M0, the batch the statistics are reported at */
    long local; /* this rank's examples per step */
    long accum; /* micro-steps it computes them in (>= 1; > 1: gradient accumulation) */
    double sqr, var_per_example;
    long n;
};

/* The training state: theta = [W1 (H x IN), b1 (H), w2 (H), b2]; m, v: Adam moments. */
struct model {
    long hidden;
    long nparams;
    long step;
    double *theta;
    double *m;
    double *v;
    double *grad;
    double *act;
    double *half; /* the gradient sum of a minibatch's first micro-batch (global batch) */
    double *host; /* while suspended: theta, m, v packed */
};

void make_teacher(unsigned long seed);
int model_alloc(struct model *md);
void model_free_buffers(struct model *md);
int model_init(struct model *md, long params, unsigned long seed);
double local_batch(struct model *md, const struct options *o, int rank, long count,
                   long parts, double micro[2]);
double train_step(struct model *md, const struct options *o, int rank, int world, double lr,
                  struct batch_run *br);

#endif
