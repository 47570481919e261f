/* train-mlp: a data-parallel trainer with OpenMPI and libringjob.
 *
 * A one-hidden-layer tanh MLP learns a fixed random teacher network (16 inputs, 8 tanh
 * units, 1 output) by Adam on the mean squared error. Every rank draws its own minibatch
 * from a generator seeded by (seed, step, rank); gradients and losses are averaged with
 * MPI_Allreduce. The learning rate is --lr (the one-rank rate) times ringjob_lr_scale()
 * (eq. 7: linear in the world size for a constant per-rank batch).
 *
 * libringjob: each step is reported and polled. SUSPEND moves the model state to a
 * compact host copy and frees the working buffers (a CUDA build would cudaMemcpy to the
 * host and cudaFree here), waits, and restores. CHECKPOINT_EXIT makes rank 0 write the
 * world-size independent checkpoint (dims, step, parameters, Adam moments) with an atomic
 * rename, and every rank exits 0. On start, a checkpoint in RINGJOB_CHECKPOINT_DIR is read
 * by rank 0 and broadcast, whatever the world size it was written at.
 *
 * Rank 0 prints "step N loss L world W lr X" every --print-every steps.
 *
 * --sleep-us-per-sample U emulates a GPU's compute on simulated GPUs: every rank sleeps
 * U microseconds per example of its minibatch in each step, before the all-reduce. The time
 * is off the host CPU (a GPU's kernels would be), so step times keep the shape of a real
 * data-parallel job (constant work per rank plus an all-reduce that grows with the world
 * size) even when many ranks share a few cores. Default 0: no emulation.
 *
 * --suspend-delay-ms N makes every rank sleep N ms before it honours a SUSPEND: a job slow to
 * reach the point where it can suspend, for tests of a suspension that times out (default 0).
 *
 * --checkpoint-every N makes rank 0 write the same checkpoint every N steps while training
 * goes on, so a job whose host dies restarts from at most N steps back (default 0: only at
 * a planned stop), and tells the worker (ringjob_checkpoint_saved), so the scheduler knows
 * what a preemption would lose.
 *
 * --report-total tells the scheduler the job's length, --steps, through
 * ringjob_set_total_steps(): its estimates then use it and its progress is shown.
 *
 * A global batch (a job with a batch model, docs/scheduler.md "Goodput"): --batch M0, or
 * RINGJOB_BATCH, makes the job run ringjob_batch() examples per step (M0 when the scheduler
 * chose none) split over its ranks (the first batch % world ranks take one more), at --lr
 * (the rate tuned at M0) times ringjob_lr_scale() (sqrt(batch / M0) by default). When the
 * scheduler changes the batch in place (a BATCH record), ringjob_batch() and
 * ringjob_lr_scale() say so after a poll, and the next step runs the new batch at the new rate
 * (no restart; "train-mlp: batch M -> M' in place after step N"). Each rank's gradient
 * is then weighted by its examples. With RINGJOB_MAX_LOCAL_BATCH (the spec's
 * "max_local_batch") a rank whose share is larger computes it in ceil(share / max)
 * micro-steps and sums their gradients before the one exchange of the step (gradient
 * accumulation; it says so at start). It estimates the gradient noise as McCandlish et al.
 * (2018, appendix A) do from two batch sizes: every rank's minibatch is split into four
 * micro-batches (its accumulation's micro-steps, each split evenly so that there are four at
 * least), whose gradients' squared norms (mean |g_small|^2, at B_small = batch over
 * the micro-batches) and that of the whole step's gradient (|g_big|^2, at B_big = batch) give
 * unbiased estimates of the true gradient's squared norm and of the per-example variance:
 *   |G|^2 = (B_big |g_big|^2 - B_small |g_small|^2) / (B_big - B_small)
 *   S     = (|g_small|^2 - |g_big|^2) / (1 / B_small - 1 / B_big)
 * averaged over steps (the mean of a launch's first 20 steps, then an exponential average of
 * weight 1/20), and reports sqr = |G|^2 and var = S / M0 (the variance of a gradient at the
 * initial batch, Pollux's grad_var) with ringjob_report_grad() every --grad-every steps
 * (default 10) once 20 steps of the launch are in: a few steps' estimate is too noisy to
 * report (the noise scale of one step at batch 16 varies several-fold; the mean of ten still
 * by +-15 % from launch to launch).
 *
 * --speed-by-gpu LIST (e.g. a100=1,t4=4) makes the emulated compute GPU-model dependent, so
 * that simulated workers of several GPU models run one job at different speeds: each rank's
 * --sleep-us-per-sample is multiplied by the factor of the GPU model its worker reports,
 * $RINGMASTER_GPU_MODEL (set by ringmaster-worker from its inventory, --simulate-gpu-model for
 * simulated GPUs). A name of the list matches when it is a word of that model's name, case
 * insensitive ("NVIDIA A100-SXM4-80GB" is a100), as the scheduler names GPU models; a model
 * the list does not name (or none reported) runs at factor 1. Up to 8 names, factors in
 * (0, 1000]. Rank 0 prints the factor it runs at. --fits-by-gpu LIST (e.g. a100=256,t4=64)
 * names, the same way, the largest local batch that fits in one GPU of each model: rank 0
 * reports its model's at its start (ringjob_report_fits), as a job that measures its memory
 * would.
 *
 * --sleep-us-allreduce U emulates a gradient exchange that costs U microseconds a step on
 * more than one rank (a network-bound all-reduce; 0 on one rank), beside
 * --sleep-us-per-sample. --label-noise SIGMA adds Gaussian noise to the teacher's targets
 * (noisier gradients, a loss floor of SIGMA^2 / 2).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ringjob.h"
#include "train-mlp-model.h"

#define CKPT_NAME "train-mlp.ckpt"
#define CKPT_MAGIC 0x31504b434d4c504dULL /* "MPLMCKP1" */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The checkpoint: magic, hidden, nparams, step, then theta, m, v (host byte order). */
static int checkpoint_write(const struct model *md)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    if (ringjob_checkpoint_path(CKPT_NAME, path, sizeof(path)) < 0)
        return fprintf(stderr, "train-mlp: %s\n", ringjob_error()), -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return fprintf(stderr, "train-mlp: %s: %s\n", tmp, strerror(errno)), -1;
    int64_t hdr[4] = { (int64_t)CKPT_MAGIC, md->hidden, md->nparams, md->step };
    size_t p = (size_t)md->nparams;
    int ok = fwrite(hdr, sizeof(hdr), 1, f) == 1 && fwrite(md->theta, 8, p, f) == p &&
             fwrite(md->m, 8, p, f) == p && fwrite(md->v, 8, p, f) == p && fflush(f) == 0 &&
             fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        fprintf(stderr, "train-mlp: writing %s: %s\n", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Rank 0 reads the checkpoint when there is one; hdr[0] is 0 when none. */
static int checkpoint_read_header(FILE **fp, int64_t hdr[4])
{
    char path[PATH_MAX];
    hdr[0] = 0;
    if (ringjob_checkpoint_path(CKPT_NAME, path, sizeof(path)) < 0)
        return fprintf(stderr, "train-mlp: %s\n", ringjob_error()), -1;
    *fp = fopen(path, "rb");
    if (!*fp)
        return errno == ENOENT ? 0 : (fprintf(stderr, "train-mlp: %s: %s\n", path,
                                              strerror(errno)), -1);
    if (fread(hdr, 8, 4, *fp) != 4 || hdr[0] != (int64_t)CKPT_MAGIC || hdr[1] < 1 ||
        hdr[2] != hdr[1] * (IN_DIM + 2) + 1 || hdr[3] < 0) {
        fclose(*fp);
        return fprintf(stderr, "train-mlp: %s: not a train-mlp checkpoint\n", path), -1;
    }
    return 0;
}

/* Every rank: restores the checkpoint if rank 0 found one. Returns 1 restored, 0 none,
 * -1 error. */
static int checkpoint_restore(struct model *md, int rank)
{
    FILE *f = NULL;
    int64_t hdr[4] = { 0 };
    int rc = rank == 0 ? checkpoint_read_header(&f, hdr) : 0;
    if (rank == 0 && rc < 0)
        hdr[0] = -1;
    MPI_Bcast(hdr, 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (hdr[0] <= 0)
        return hdr[0] < 0 ? -1 : 0;
    model_free_buffers(md);
    md->hidden = hdr[1];
    md->nparams = hdr[2];
    md->step = hdr[3];
    if (model_alloc(md) < 0)
        return -1;
    size_t p = (size_t)md->nparams;
    int ok = 1;
    if (rank == 0) {
        ok = fread(md->theta, 8, p, f) == p && fread(md->m, 8, p, f) == p &&
             fread(md->v, 8, p, f) == p;
        fclose(f);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok)
        return fprintf(stderr, "train-mlp: checkpoint truncated\n"), -1;
    MPI_Bcast(md->theta, (int)p, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(md->m, (int)p, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(md->v, (int)p, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return 1;
}

/* Suspend in place: the state goes to one compact host copy, the working buffers are
 * freed (on a GPU: cudaMemcpy to host, cudaFree). */
static int offload(struct model *md)
{
    size_t p = (size_t)md->nparams;
    md->host = malloc(3 * p * sizeof(double));
    if (!md->host)
        return -1;
    memcpy(md->host, md->theta, p * sizeof(double));
    memcpy(md->host + p, md->m, p * sizeof(double));
    memcpy(md->host + 2 * p, md->v, p * sizeof(double));
    model_free_buffers(md);
    return 0;
}

static int restore(struct model *md)
{
    size_t p = (size_t)md->nparams;
    if (model_alloc(md) < 0)
        return -1;
    memcpy(md->theta, md->host, p * sizeof(double));
    memcpy(md->m, md->host + p, p * sizeof(double));
    memcpy(md->v, md->host + 2 * p, p * sizeof(double));
    free(md->host);
    md->host = NULL;
    return 0;
}

/* Handles RINGJOB_SUSPEND; returns the decision that follows the wait, or -1. */
static int suspend_in_place(struct model *md, int rank)
{
    double t0 = now_s();
    if (offload(md) < 0)
        return -1;
    double t1 = now_s();
    if (rank == 0)
        printf("train-mlp: suspended at step %ld, %ld bytes moved to host in %.3f ms\n",
               md->step, md->nparams * 24, (t1 - t0) * 1e3);
    fflush(stdout);
    int d = ringjob_suspended_wait();
    double t2 = now_s();
    if (restore(md) < 0)
        return -1;
    if (rank == 0)
        printf("train-mlp: resumed at step %ld, state restored in %.3f ms\n", md->step,
               (now_s() - t2) * 1e3);
    return d;
}

static int bcast_cb(void *buf, size_t len, void *ctx)
{
    (void)ctx;
    return MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* --speed-by-gpu and --fits-by-gpu LIST: NAME=VALUE entries separated by commas, each NAME
 * 1..31 letters or digits, each VALUE in (lo, hi] (and whole when whole). Returns 0, or -1
 * when the list is not one. */
static int parse_by_gpu(const char *v, double lo, double hi, int whole, struct by_gpu *b)
{
    b->n = 0;
    for (const char *p = v;; p++) {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        if (n == 0 || n >= sizeof(b->name[0]) || p[n] != '=' || b->n >= SPEED_NAMES)
            return -1;
        char *end;
        errno = 0;
        double f = strtod(p + n + 1, &end);
        if (errno || end == p + n + 1 || !(f > lo && f <= hi) || (whole && f != floor(f)) ||
            (*end && *end != ','))
            return -1;
        memcpy(b->name[b->n], p, n);
        b->name[b->n][n] = '\0';
        b->value[b->n++] = f;
        if (!*end)
            return 0;
        p = end;
    }
}

/* The value of GPU model `model` in b (its first name that is a word of it, case
 * insensitive), or dflt when it names none of its words or model is NULL or empty. */
static double by_gpu_of(const struct by_gpu *b, const char *model, double dflt)
{
    for (const char *p = model; p && *p;) {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        for (int k = 0; n > 0 && k < b->n; k++)
            if (strlen(b->name[k]) == n && strncasecmp(p, b->name[k], n) == 0)
                return b->value[k];
        p += n ? n : 1;
    }
    return dflt;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){ .steps = 300, .params = 8192, .batch = 32, .lr = 0.003,
                           .seed = 1, .print_every = 10, .grad_every = 10,
                           .compute_factor = 1.0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int bad = !v;
        if (!strcmp(a, "--report-total")) {
            o->report_total = 1;
            continue;
        }
        if (!bad && !strcmp(a, "--steps"))
            bad = parse_long(v, 0, LONG_MAX / 2, &o->steps);
        else if (!bad && !strcmp(a, "--params"))
            bad = parse_long(v, IN_DIM + 3, 1L << 28, &o->params);
        else if (!bad && !strcmp(a, "--batch-per-rank"))
            bad = parse_long(v, 1, 1L << 20, &o->batch);
        else if (!bad && !strcmp(a, "--seed"))
            bad = parse_long(v, 0, LONG_MAX, &n), o->seed = (unsigned long)n;
        else if (!bad && !strcmp(a, "--print-every"))
            bad = parse_long(v, 1, LONG_MAX, &o->print_every);
        else if (!bad && !strcmp(a, "--sleep-us-per-sample"))
            bad = parse_long(v, 0, 1000000, &o->sleep_us_per_sample);
        else if (!bad && !strcmp(a, "--checkpoint-every"))
            bad = parse_long(v, 0, LONG_MAX, &o->checkpoint_every);
        else if (!bad && !strcmp(a, "--contend"))
            bad = parse_long(v, 0, 10000, &o->contend_ms);
        else if (!bad && !strcmp(a, "--suspend-delay-ms"))
            bad = parse_long(v, 0, 3600000, &o->suspend_delay_ms);
        else if (!bad && !strcmp(a, "--lr"))
            o->lr = strtod(v, NULL), bad = !(o->lr > 0.0 && o->lr < 10.0);
        else if (!bad && !strcmp(a, "--batch"))
            bad = parse_long(v, 1, 1L << 24, &o->global_batch);
        else if (!bad && !strcmp(a, "--grad-every"))
            bad = parse_long(v, 1, LONG_MAX, &o->grad_every);
        else if (!bad && !strcmp(a, "--sleep-us-allreduce"))
            bad = parse_long(v, 0, 10000000, &o->sleep_us_allreduce);
        else if (!bad && !strcmp(a, "--speed-by-gpu"))
            bad = parse_by_gpu(v, 0, 1000, 0, &o->speeds);
        else if (!bad && !strcmp(a, "--fits-by-gpu"))
            bad = parse_by_gpu(v, 0, 1000000, 1, &o->fits);
        else if (!bad && !strcmp(a, "--label-noise"))
            o->label_noise = strtod(v, NULL),
            bad = !(o->label_noise >= 0.0 && o->label_noise < 100.0);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr,
                    "usage: train-mlp [--steps N] [--params N] [--batch-per-rank M] "
                    "[--batch M0] [--lr X] [--seed S] [--print-every K] "
                    "[--sleep-us-per-sample U] [--sleep-us-allreduce U] [--label-noise SIGMA] "
                    "[--speed-by-gpu NAME=F,...] [--fits-by-gpu NAME=N,...] [--grad-every K] "
                    "[--contend MS] "
                    "[--checkpoint-every N] "
                    "[--suspend-delay-ms N] [--report-total] (bad '%s')\n",
                    a);
            return -1;
        }
        i++;
    }
    return 0;
}

/* --contend MS: a step holds this rank's GPU exclusively, as kernels that fill a GPU would,
 * and MS ms longer: an exclusive flock on $RINGMASTER_GPU_LOCK_DIR (default /tmp)
 * /ringmaster-gpu<CUDA_VISIBLE_DEVICES>.lock from before the step's compute to after the
 * sleep. Alone it only adds MS ms a step. Two such jobs packed on one GPU take turns, and a
 * step that had to wait for the lock holds it MS / 2 ms longer (the cost of switching the
 * GPU between two jobs' working sets), so each runs well under half as fast: the pair does
 * less work than one job alone. gpu_hold(ms, 1) takes the lock, gpu_hold(ms, 0) sleeps and
 * gives it back. */
static void gpu_hold(long ms, int take)
{
    static int fd = -2, waited;
    if (ms <= 0)
        return;
    if (fd == -2) {
        const char *dir = getenv("RINGMASTER_GPU_LOCK_DIR"), *dev = getenv("CUDA_VISIBLE_DEVICES");
        char path[4096];
        snprintf(path, sizeof(path), "%s/ringmaster-gpu%s.lock", dir && *dir ? dir : "/tmp",
                 dev && *dev ? dev : "0");
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (take) {
        waited = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0;
        while (waited && flock(fd, LOCK_EX) < 0 && errno == EINTR)
            ;
        return;
    }
    ms += waited ? ms / 2 : 0;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    if (fd >= 0)
        flock(fd, LOCK_UN);
}

/* Writes the checkpoint (rank 0), tells the worker, and every rank agrees it is done. */
static int checkpoint_exit(struct model *md, int rank)
{
    int ok = rank == 0 ? checkpoint_write(md) == 0 : 1;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok)
        return -1;
    if (rank == 0) {
        ringjob_checkpoint_done(md->step);
        printf("train-mlp: checkpointed at step %ld, planned exit\n", md->step);
    }
    return 0;
}

/* The batch to run: global (--batch or ringjob_batch(): the scheduler's choice, at start
 * RINGJOB_BATCH, later a change in place; else M0) split over the ranks, or --batch-per-rank
 * on each; and the learning rate: --lr times ringjob_lr_scale() (for a global batch, 1 while
 * the scheduler chose none). Keeps br's gradient statistics (per example: the batch does not
 * change them). */
static double batch_size(struct batch_run *br, const struct options *o, int rank, int world)
{
    long chosen = ringjob_batch();
    br->global = o->global_batch > 0 || chosen > 0;
    if (!br->global) {
        br->batch = o->batch * world;
        br->local = o->batch;
        return o->lr * ringjob_lr_scale();
    }
    br->init = ringjob_init_batch() > 0 ? ringjob_init_batch() : o->global_batch;
    br->batch = chosen > 0 ? chosen : br->init;
    if (br->init <= 0)
        br->init = br->batch;
    if (br->batch < world)
        br->batch = world; /* one example per rank at least */
    br->local = br->batch / world + (rank < br->batch % world);
    long most = ringjob_max_local_batch();
    br->accum = most > 0 && br->local > most ? (br->local + most - 1) / most : 1;
    return o->lr * (chosen > 0 ? ringjob_lr_scale() : 1.0);
}

/* The batch of this launch (batch_size), its statistics not yet measured. */
static double batch_setup(struct batch_run *br, const struct options *o, int rank, int world)
{
    memset(br, 0, sizeof(*br));
    return batch_size(br, o, rank, world);
}

/* After a poll: a batch the scheduler changed in place (ringjob_batch(), the same on every
 * rank) runs from the next step, at its learning rate. */
static double batch_follow(struct batch_run *br, const struct options *o, int rank, int world,
                           double lr, long step)
{
    long chosen = ringjob_batch();
    if (!br->global || chosen <= 0 || chosen == br->batch)
        return lr;
    long was = br->batch;
    lr = batch_size(br, o, rank, world);
    if (rank == 0)
        printf("train-mlp: batch %ld -> %ld in place after step %ld, lr %.6f\n", was, br->batch,
               step, lr);
    return lr;
}

/* Rank 0 reports the smoothed gradient statistics every --grad-every steps. */
static void grad_report(const struct batch_run *br, const struct options *o, long step, int rank)
{
    if (rank != 0 || !br->global || br->n < GRAD_WINDOW || step % o->grad_every != 0)
        return;
    double sqr = br->sqr > 0 ? br->sqr : 0.0, var = br->var_per_example / (double)br->init;
    var = var > 0 ? var : 0.0;
    if ((sqr > 0 || var > 0) && isfinite(sqr) && isfinite(var) && ringjob_report_grad(sqr, var) < 0)
        fprintf(stderr, "train-mlp: %s\n", ringjob_error());
}

/* The loop; returns the exit status. */
static int train(struct model *md, const struct options *o, int rank, int world)
{
    struct batch_run br;
    double lr = batch_setup(&br, o, rank, world);
    if (rank == 0 && br.global)
        printf("train-mlp: global batch %ld (initial %ld), %ld examples on rank 0, lr %.6f\n",
               br.batch, br.init, br.local, lr);
    if (rank == 0 && br.accum > 1)
        printf("train-mlp: gradient accumulation: %ld micro-steps of at most %ld examples on"
               " rank 0 (max local batch %ld)\n",
               br.accum, (br.local + br.accum - 1) / br.accum, ringjob_max_local_batch());
    while (md->step < o->steps) {
        double t0 = now_s();
        gpu_hold(o->contend_ms, 1);
        double loss = train_step(md, o, rank, world, lr, &br);
        gpu_hold(o->contend_ms, 0);
        if (rank == 0 && (md->step % o->print_every == 0 || md->step == o->steps) && br.global)
            printf("step %ld loss %.6f world %d lr %.5f batch %ld noise scale %.1f\n", md->step,
                   loss, world, lr, br.batch, br.sqr > 0 ? br.var_per_example / br.sqr : -1.0);
        else if (rank == 0 && (md->step % o->print_every == 0 || md->step == o->steps))
            printf("step %ld loss %.6f world %d lr %.5f\n", md->step, loss, world, lr);
        ringjob_report(md->step, loss, br.batch, now_s() - t0);
        grad_report(&br, o, md->step, rank);
        if (rank == 0 && o->checkpoint_every > 0 && md->step % o->checkpoint_every == 0 &&
            md->step < o->steps) {
            /* the scheduler stops the job that loses least since its checkpoint: say it */
            if (checkpoint_write(md) < 0)
                fprintf(stderr, "train-mlp: periodic checkpoint at step %ld failed\n", md->step);
            else
                ringjob_checkpoint_saved(md->step);
        }
        int d = ringjob_poll(md->step);
        if (d == RINGJOB_SUSPEND && o->suspend_delay_ms > 0) {
            long ms = o->suspend_delay_ms;
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        }
        if (d == RINGJOB_SUSPEND)
            d = suspend_in_place(md, rank);
        if (d == RINGJOB_CHECKPOINT_EXIT)
            return checkpoint_exit(md, rank) == 0 ? RINGJOB_EXIT_PLANNED : 1;
        if (d < 0) {
            fprintf(stderr, "train-mlp: rank %d: %s\n", rank, ringjob_error());
            return 1;
        }
        lr = batch_follow(&br, o, rank, world, lr, md->step);
    }
    if (rank == 0)
        printf("train-mlp: done at step %ld\n", md->step);
    return 0;
}

static int run(const struct options *o, int rank, int world)
{
    struct model md;
    if (model_init(&md, o->params, o->seed) < 0)
        return 1;
    make_teacher(o->seed);
    int rc = checkpoint_restore(&md, rank);
    if (rank == 0 && rc > 0)
        printf("train-mlp: restored step %ld (%ld params) at world size %d, lr scale %g\n",
               md.step, md.nparams, world, ringjob_lr_scale());
    if (rank == 0 && rc == 0)
        printf("train-mlp: %ld params (hidden %ld), world size %d, lr scale %g\n",
               md.nparams, md.hidden, world, ringjob_lr_scale());
    if (rank == 0)
        printf("train-mlp: execution plan %s\n", ringjob_plan());
    if (rank == 0 && o->speeds.n > 0)
        printf("train-mlp: GPU model %s: compute factor %g\n",
               getenv("RINGMASTER_GPU_MODEL") ? getenv("RINGMASTER_GPU_MODEL") : "(none)",
               o->compute_factor);
    int status = rc < 0 ? 1 : train(&md, o, rank, world);
    model_free_buffers(&md);
    free(md.host);
    return status;
}

int main(int argc, char **argv)
{
    struct options o;
    int rank, world;
    if (parse_options(argc, argv, &o) < 0)
        return 2;
    o.compute_factor = by_gpu_of(&o.speeds, getenv("RINGMASTER_GPU_MODEL"), 1.0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (ringjob_init() < 0) {
        fprintf(stderr, "train-mlp: rank %d: ringjob: %s\n", rank, ringjob_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ringjob_set_broadcast(bcast_cb, NULL);
    if (o.report_total && o.steps > 0 && ringjob_set_total_steps(o.steps) < 0)
        fprintf(stderr, "train-mlp: rank %d: %s\n", rank, ringjob_error());
    /* what fits in one GPU of its model, as a real job measures it at its start */
    long fits = (long)by_gpu_of(&o.fits, getenv("RINGMASTER_GPU_MODEL"), 0);
    if (rank == 0 && fits > 0 && ringjob_report_fits(fits) < 0)
        fprintf(stderr, "train-mlp: rank %d: %s\n", rank, ringjob_error());
    int status = run(&o, rank, world);
    ringjob_finalize();
    MPI_Finalize();
    return status;
}
