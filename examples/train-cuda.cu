/* train-cuda: the train-mlp job with its step on the GPU and NCCL all-reduce.
 *
 * The same model and data as examples/train-mlp.c (a tanh MLP learning a fixed random
 * teacher, 16 inputs, Adam, lr = --lr * ringjob_lr_scale()), in float32: the minibatch is
 * generated on the device from (seed, step, rank), forward and backward run as kernels,
 * gradients and the loss are summed with one ncclAllReduce. One rank per GPU: each rank
 * uses device OMPI_COMM_WORLD_LOCAL_RANK modulo the visible devices (the worker sets
 * CUDA_VISIBLE_DEVICES per rank).
 *
 * libringjob: SUSPEND copies every device buffer (the model, the Adam moments and
 * --state-mb MiB of extra state standing in for a larger model) to pinned host memory,
 * frees them and the NCCL communicator, prints cudaMemGetInfo before and after and the
 * time of the copy alone (the physical floor) and of the whole suspend; resume reverses it.
 * Those two lines are also machine-readable (key=value, times in ms, sizes in bytes):
 *   train-cuda: suspended at step N: bytes=B copy_ms=X suspend_ms=Y pinned_alloc_ms=Z
 *               gpu_free_before=F0 gpu_free_after=F1
 *   train-cuda: resumed at step N: bytes=B copy_ms=X resume_ms=Y setup_ms=Z
 *               gpu_free_before=F0 gpu_free_after=F1
 * (each on one line; setup = the NCCL communicator and the device buffers).
 *
 * A step takes as long as the small model needs unless asked for more: --gpu-ms MS adds a
 * fixed amount of GPU work per step (a kernel calibrated at start to take MS ms alone, so
 * it takes longer when another job shares the GPU: a stand-in for a larger model) and
 * --host-ms MS adds MS ms on the host (a stand-in for data loading, the GPU idle). Both
 * count in the step time reported to libringjob.
 * CHECKPOINT_EXIT writes a world-size independent checkpoint (train-cuda.ckpt: dims, step,
 * parameters, moments) with an atomic rename; a start restores it at any world size.
 *
 * Exits 77 when no CUDA device is usable (tests skip on it).
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringjob.h"

#define IN_DIM 16
#define TEACHER_HIDDEN 8
#define CKPT_NAME "train-cuda.ckpt"
#define CKPT_MAGIC 0x3141445543504c4dLL /* "MLPCUDA1" */
#define EXIT_NO_GPU 77
#define BALLAST_BYTE 0x5a

#define CUDA_OK(call) cuda_check((call), #call)
#define NCCL_OK(call) nccl_check((call), #call)

struct options {
    long steps, params, batch, print_every, state_mb;
    double lr, gpu_ms, host_ms;
    unsigned long long seed;
};

struct gpu {
    long hidden, nparams, step;
    float *theta, *m, *v, *grad; /* device; grad has nparams + 1 slots (the loss last) */
    float *x, *y, *act, *err;    /* device minibatch scratch */
    unsigned char *ballast;      /* device, --state-mb MiB */
    size_t ballast_bytes;
    long long work_iters;        /* k_work's iterations per step (--gpu-ms), 0: none */
    float *host;                 /* pinned, while suspended */
    ncclComm_t comm;
    int rank, world;
};

__constant__ float c_teacher_w1[TEACHER_HIDDEN * IN_DIM];
__constant__ float c_teacher_w2[TEACHER_HIDDEN];

static void cuda_check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "train-cuda: %s: %s\n", what, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void nccl_check(ncclResult_t r, const char *what)
{
    if (r != ncclSuccess) {
        fprintf(stderr, "train-cuda: %s: %s\n", what, ncclGetErrorString(r));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

__host__ __device__ static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

__host__ __device__ static double gaussian(uint64_t *s)
{
    *s = mix64(*s);
    double u = ((double)(*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    *s = mix64(*s);
    double w = ((double)(*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

/* One thread per sample: draws x and the teacher's y. */
__global__ void k_data(float *x, float *y, long batch, uint64_t seed)
{
    long b = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (b >= batch)
        return;
    uint64_t s = mix64(seed ^ mix64((uint64_t)b));
    float xs[IN_DIM];
    for (int i = 0; i < IN_DIM; i++)
        x[b * IN_DIM + i] = xs[i] = (float)gaussian(&s);
    float out = 0.0f;
    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        float a = 0.0f;
        for (int i = 0; i < IN_DIM; i++)
            a += c_teacher_w1[j * IN_DIM + i] * xs[i];
        out += c_teacher_w2[j] * tanhf(a);
    }
    y[b] = out;
}

/* One thread per (sample, hidden unit). */
__global__ void k_hidden(const float *theta, const float *x, float *act, long batch, long h)
{
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (t >= batch * h)
        return;
    long b = t / h, j = t % h;
    float a = theta[h * IN_DIM + j];
    for (int i = 0; i < IN_DIM; i++)
        a += theta[j * IN_DIM + i] * x[b * IN_DIM + i];
    act[t] = tanhf(a);
}

/* One thread per sample: the output and its error. */
__global__ void k_output(const float *theta, const float *act, const float *y, float *err,
                         long batch, long h)
{
    long b = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (b >= batch)
        return;
    const float *w2 = theta + h * (IN_DIM + 1);
    float out = w2[h];
    for (long j = 0; j < h; j++)
        out += w2[j] * act[b * h + j];
    err[b] = out - y[b];
}

/* One thread per parameter (plus one for the loss): the mean gradient over the batch. */
__global__ void k_grad(const float *theta, const float *x, const float *act, const float *err,
                       float *grad, long batch, long h)
{
    long p = blockIdx.x * (long)blockDim.x + threadIdx.x, np = h * (IN_DIM + 2) + 1;
    if (p > np)
        return;
    const float *w2 = theta + h * (IN_DIM + 1);
    float g = 0.0f;
    for (long b = 0; b < batch; b++) {
        float e = err[b];
        if (p < h * IN_DIM) {
            float a = act[b * h + p / IN_DIM];
            g += e * w2[p / IN_DIM] * (1.0f - a * a) * x[b * IN_DIM + p % IN_DIM];
        } else if (p < h * (IN_DIM + 1)) {
            float a = act[b * h + p - h * IN_DIM];
            g += e * w2[p - h * IN_DIM] * (1.0f - a * a);
        } else if (p < h * (IN_DIM + 2)) {
            g += e * act[b * h + p - h * (IN_DIM + 1)];
        } else {
            g += p == np - 1 ? e : 0.5f * e * e; /* b2's gradient, then the loss */
        }
    }
    grad[p] = g / (float)batch;
}

__global__ void k_adam(float *theta, float *m, float *v, const float *grad, long np, float lr,
                       float inv_world, float c1, float c2)
{
    long k = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (k >= np)
        return;
    float g = grad[k] * inv_world;
    m[k] = 0.9f * m[k] + 0.1f * g;
    v[k] = 0.999f * v[k] + 0.001f * g * g;
    theta[k] -= lr * (m[k] / c1) / (sqrtf(v[k] / c2) + 1e-8f);
}

/* Fixed GPU work: one warp of dependent multiply-adds, iters long. The store never happens
 * (a stays small) but keeps the loop from being optimised away; sink needs one float. */
__global__ void k_work(float *sink, long long iters)
{
    float a = (float)threadIdx.x * 1e-3f;
    for (long long i = 0; i < iters; i++)
        a = fmaf(a, 0.999999f, 1e-7f);
    if (a < -1e30f)
        sink[0] = a;
}

static unsigned blocks(long n)
{
    return (unsigned)((n + 255) / 256);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The teacher and the initial weights, drawn on the host exactly as train-mlp does. */
static void upload_teacher(unsigned long long seed)
{
    float w1[TEACHER_HIDDEN * IN_DIM], w2[TEACHER_HIDDEN];
    uint64_t s = mix64(seed ^ 0x7465616368ULL);
    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        for (int i = 0; i < IN_DIM; i++)
            w1[j * IN_DIM + i] = (float)(2.0 * gaussian(&s) / sqrt((double)IN_DIM));
        w2[j] = (float)(gaussian(&s) / sqrt((double)TEACHER_HIDDEN));
    }
    CUDA_OK(cudaMemcpyToSymbol(c_teacher_w1, w1, sizeof(w1)));
    CUDA_OK(cudaMemcpyToSymbol(c_teacher_w2, w2, sizeof(w2)));
}

static void initial_weights(float *theta, long h, unsigned long long seed)
{
    uint64_t s = mix64(seed ^ 0x73747564ULL);
    memset(theta, 0, (size_t)(h * (IN_DIM + 2) + 1) * sizeof(float));
    for (long k = 0; k < h * IN_DIM; k++)
        theta[k] = (float)(gaussian(&s) / sqrt((double)IN_DIM));
    for (long j = 0; j < h; j++)
        theta[h * (IN_DIM + 1) + j] = (float)(gaussian(&s) / sqrt((double)h));
}

static void nccl_up(struct gpu *g)
{
    ncclUniqueId id;
    if (g->rank == 0)
        NCCL_OK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    NCCL_OK(ncclCommInitRank(&g->comm, g->world, id, g->rank));
}

static void device_alloc(struct gpu *g, long batch)
{
    size_t p = (size_t)g->nparams * sizeof(float);
    CUDA_OK(cudaMalloc((void **)&g->theta, p));
    CUDA_OK(cudaMalloc((void **)&g->m, p));
    CUDA_OK(cudaMalloc((void **)&g->v, p));
    CUDA_OK(cudaMalloc((void **)&g->grad, p + sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&g->x, (size_t)batch * IN_DIM * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&g->y, (size_t)batch * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&g->act, (size_t)(batch * g->hidden) * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&g->err, (size_t)batch * sizeof(float)));
    if (g->ballast_bytes)
        CUDA_OK(cudaMalloc((void **)&g->ballast, g->ballast_bytes));
}

static void device_free(struct gpu *g)
{
    void *bufs[] = { g->theta, g->m, g->v, g->grad, g->x, g->y, g->act, g->err, g->ballast };
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        CUDA_OK(cudaFree(bufs[i]));
    g->theta = g->m = g->v = g->grad = g->x = g->y = g->act = g->err = NULL;
    g->ballast = NULL;
}

/* One data-parallel step on the device; returns the loss averaged over ranks. */
static double train_step(struct gpu *g, const struct options *o, float lr)
{
    long h = g->hidden, b = o->batch;
    g->step++;
    uint64_t seed = mix64(mix64(o->seed) ^ mix64((uint64_t)g->step * 1000003ULL + g->rank));
    k_data<<<blocks(b), 256>>>(g->x, g->y, b, seed);
    k_hidden<<<blocks(b * h), 256>>>(g->theta, g->x, g->act, b, h);
    k_output<<<blocks(b), 256>>>(g->theta, g->act, g->y, g->err, b, h);
    k_grad<<<blocks(g->nparams + 1), 256>>>(g->theta, g->x, g->act, g->err, g->grad, b, h);
    NCCL_OK(ncclAllReduce(g->grad, g->grad, (size_t)g->nparams + 1, ncclFloat, ncclSum,
                          g->comm, 0));
    float c1 = 1.0f - powf(0.9f, (float)g->step), c2 = 1.0f - powf(0.999f, (float)g->step);
    k_adam<<<blocks(g->nparams), 256>>>(g->theta, g->m, g->v, g->grad, g->nparams, lr,
                                        1.0f / (float)g->world, c1, c2);
    if (g->work_iters > 0)
        k_work<<<1, 32>>>(g->err, g->work_iters);
    float loss;
    CUDA_OK(cudaMemcpy(&loss, g->grad + g->nparams, sizeof(float), cudaMemcpyDeviceToHost));
    return loss / g->world;
}

/* k_work's iterations for ms milliseconds of GPU time on this device (alone), from a timed
 * run after a warm-up; err is scratch the kernel never writes. */
static long long calibrate_work(float *err, double ms)
{
    const long long probe = 1LL << 20;
    cudaEvent_t e0, e1;
    float took = 0.0f;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    k_work<<<1, 32>>>(err, probe / 16);
    CUDA_OK(cudaEventRecord(e0, 0));
    k_work<<<1, 32>>>(err, probe);
    CUDA_OK(cudaEventRecord(e1, 0));
    CUDA_OK(cudaEventSynchronize(e1));
    CUDA_OK(cudaEventElapsedTime(&took, e0, e1));
    CUDA_OK(cudaEventDestroy(e0));
    CUDA_OK(cudaEventDestroy(e1));
    double per_ms = (double)probe / (took > 1e-3f ? took : 1e-3f);
    long long iters = (long long)(per_ms * ms);
    return iters > 0 ? iters : 1;
}

static size_t state_floats(const struct gpu *g)
{
    return 3 * (size_t)g->nparams;
}

static double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* Suspend in place: every device buffer to pinned host memory, then free the GPU. */
static void offload(struct gpu *g)
{
    size_t f0, f1, total, sb = state_floats(g) * sizeof(float);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemGetInfo(&f0, &total));
    double t0 = now_s();
    CUDA_OK(cudaMallocHost((void **)&g->host, sb + g->ballast_bytes));
    double t1 = now_s();
    size_t p = (size_t)g->nparams;
    CUDA_OK(cudaMemcpy(g->host, g->theta, p * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g->host + p, g->m, p * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g->host + 2 * p, g->v, p * sizeof(float), cudaMemcpyDeviceToHost));
    if (g->ballast_bytes)
        CUDA_OK(cudaMemcpy((char *)g->host + sb, g->ballast, g->ballast_bytes,
                           cudaMemcpyDeviceToHost));
    double t2 = now_s();
    device_free(g);
    NCCL_OK(ncclCommDestroy(g->comm));
    CUDA_OK(cudaMemGetInfo(&f1, &total));
    if (g->rank == 0)
        printf("train-cuda: suspended at step %ld: bytes=%zu copy_ms=%.3f suspend_ms=%.3f "
               "pinned_alloc_ms=%.3f gpu_free_before=%zu gpu_free_after=%zu "
               "(%.1f MiB to host; GPU free %.1f -> %.1f MiB)\n", g->step,
               sb + g->ballast_bytes, (t2 - t1) * 1e3, (now_s() - t0) * 1e3, (t1 - t0) * 1e3,
               f0, f1, mib(sb + g->ballast_bytes), mib(f0), mib(f1));
}

static void restore(struct gpu *g, long batch)
{
    size_t f0, f1, total, sb = state_floats(g) * sizeof(float), p = (size_t)g->nparams;
    CUDA_OK(cudaMemGetInfo(&f0, &total));
    double t0 = now_s();
    nccl_up(g);
    device_alloc(g, batch);
    double t1 = now_s();
    CUDA_OK(cudaMemcpy(g->theta, g->host, p * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(g->m, g->host + p, p * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(g->v, g->host + 2 * p, p * sizeof(float), cudaMemcpyHostToDevice));
    if (g->ballast_bytes)
        CUDA_OK(cudaMemcpy(g->ballast, (char *)g->host + sb, g->ballast_bytes,
                           cudaMemcpyHostToDevice));
    double t2 = now_s();
    CUDA_OK(cudaFreeHost(g->host));
    g->host = NULL;
    CUDA_OK(cudaMemGetInfo(&f1, &total));
    if (g->rank == 0)
        printf("train-cuda: resumed at step %ld: bytes=%zu copy_ms=%.3f resume_ms=%.3f "
               "setup_ms=%.3f gpu_free_before=%zu gpu_free_after=%zu "
               "(GPU free %.1f -> %.1f MiB)\n", g->step, sb + g->ballast_bytes,
               (t2 - t1) * 1e3, (now_s() - t0) * 1e3, (t1 - t0) * 1e3, f0, f1, mib(f0),
               mib(f1));
}

/* Returns 0 when the ballast survived the round trip through host memory. */
static int ballast_intact(const struct gpu *g)
{
    unsigned char ends[2] = { 0, 0 };
    if (!g->ballast_bytes)
        return 0;
    CUDA_OK(cudaMemcpy(&ends[0], g->ballast, 1, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&ends[1], g->ballast + g->ballast_bytes - 1, 1, cudaMemcpyDeviceToHost));
    return ends[0] == BALLAST_BYTE && ends[1] == BALLAST_BYTE ? 0 : -1;
}

static int checkpoint_write(const struct gpu *g)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    if (ringjob_checkpoint_path(CKPT_NAME, path, sizeof(path)) < 0)
        return fprintf(stderr, "train-cuda: %s\n", ringjob_error()), -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    size_t n = state_floats(g), p = (size_t)g->nparams;
    float *h = (float *)malloc(n * sizeof(float));
    FILE *f = h ? fopen(tmp, "wb") : NULL;
    if (!f)
        return free(h), fprintf(stderr, "train-cuda: %s: %s\n", tmp, strerror(errno)), -1;
    CUDA_OK(cudaMemcpy(h, g->theta, p * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h + p, g->m, p * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h + 2 * p, g->v, p * sizeof(float), cudaMemcpyDeviceToHost));
    int64_t hdr[4] = { CKPT_MAGIC, g->hidden, g->nparams, g->step };
    int ok = fwrite(hdr, sizeof(hdr), 1, f) == 1 && fwrite(h, sizeof(float), n, f) == n &&
             fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    free(h);
    if (!ok || rename(tmp, path) < 0)
        return fprintf(stderr, "train-cuda: writing %s failed\n", path), unlink(tmp), -1;
    return 0;
}

/* Rank 0 opens the checkpoint and reads its header into hdr (hdr[0]: 0 none, -1 bad). */
static FILE *checkpoint_open(int64_t hdr[4])
{
    char path[PATH_MAX];
    if (ringjob_checkpoint_path(CKPT_NAME, path, sizeof(path)) < 0) {
        hdr[0] = -1;
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (f && (fread(hdr, 8, 4, f) != 4 || hdr[0] != CKPT_MAGIC || hdr[1] < 1 ||
              hdr[2] != hdr[1] * (IN_DIM + 2) + 1))
        hdr[0] = -1;
    return f;
}

/* Every rank: the state from rank 0's checkpoint into *state (new), if there is one.
 * Returns 1 restored, 0 none, -1 error. */
static int checkpoint_restore(struct gpu *g, float **state)
{
    int64_t hdr[4] = { 0, 0, 0, 0 };
    FILE *f = g->rank == 0 ? checkpoint_open(hdr) : NULL;
    MPI_Bcast(hdr, 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
    int found = hdr[0] == CKPT_MAGIC ? 1 : (hdr[0] < 0 ? -1 : 0);
    if (found > 0) {
        g->hidden = hdr[1];
        g->nparams = hdr[2];
        g->step = hdr[3];
        size_t n = state_floats(g);
        *state = (float *)malloc(n * sizeof(float));
        int ok = *state != NULL && (g->rank != 0 || fread(*state, sizeof(float), n, f) == n);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (ok)
            MPI_Bcast(*state, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        found = ok ? 1 : -1;
    }
    if (f)
        fclose(f);
    return found;
}

/* Sets up the model on the device: from the checkpoint when there is one. */
static int model_up(struct gpu *g, const struct options *o)
{
    float *state = NULL;
    g->hidden = (o->params - 1) / (IN_DIM + 2);
    g->hidden = g->hidden < 1 ? 1 : g->hidden;
    g->nparams = g->hidden * (IN_DIM + 2) + 1;
    int rc = checkpoint_restore(g, &state);
    if (rc < 0)
        return fprintf(stderr, "train-cuda: unreadable checkpoint\n"), free(state), -1;
    size_t p = (size_t)g->nparams;
    device_alloc(g, o->batch);
    if (rc == 0) {
        state = (float *)calloc(3 * p, sizeof(float));
        if (!state)
            return -1;
        initial_weights(state, g->hidden, o->seed);
    }
    CUDA_OK(cudaMemcpy(g->theta, state, p * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(g->m, state + p, p * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(g->v, state + 2 * p, p * sizeof(float), cudaMemcpyHostToDevice));
    if (g->ballast_bytes)
        CUDA_OK(cudaMemset(g->ballast, BALLAST_BYTE, g->ballast_bytes));
    free(state);
    if (g->rank == 0)
        printf("train-cuda: %s step %ld, %ld params, world size %d, lr scale %g\n",
               rc ? "restored" : "starting at", g->step, g->nparams, g->world,
               ringjob_lr_scale());
    return 0;
}

static int bcast_cb(void *buf, size_t len, void *ctx)
{
    (void)ctx;
    return MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

/* Handles RINGJOB_SUSPEND; returns the decision that follows the wait. */
static int suspend_in_place(struct gpu *g, long batch)
{
    offload(g);
    int d = ringjob_suspended_wait();
    restore(g, batch);
    if (ballast_intact(g) < 0) {
        fprintf(stderr, "train-cuda: state corrupted across suspend\n");
        return -1;
    }
    return d;
}

static int checkpoint_exit(struct gpu *g)
{
    int ok = g->rank == 0 ? checkpoint_write(g) == 0 : 1;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok)
        return 1;
    if (g->rank == 0) {
        ringjob_checkpoint_done(g->step);
        printf("train-cuda: checkpointed at step %ld, planned exit\n", g->step);
    }
    return RINGJOB_EXIT_PLANNED;
}

/* --host-ms: the host's part of a step, with the GPU idle. */
static void host_work(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int train(struct gpu *g, const struct options *o)
{
    float lr = (float)(o->lr * ringjob_lr_scale());
    if (o->gpu_ms > 0) {
        g->work_iters = calibrate_work(g->err, o->gpu_ms);
        if (g->rank == 0)
            printf("train-cuda: --gpu-ms %g: %lld iterations of GPU work per step\n", o->gpu_ms,
                   g->work_iters);
    }
    while (g->step < o->steps) {
        double t0 = now_s();
        double loss = train_step(g, o, lr);
        host_work(o->host_ms);
        if (g->rank == 0 && (g->step % o->print_every == 0 || g->step == o->steps))
            printf("step %ld loss %.6f world %d lr %.5f\n", g->step, loss, g->world, lr);
        ringjob_report(g->step, loss, o->batch * g->world, now_s() - t0);
        int d = ringjob_poll(g->step);
        if (d == RINGJOB_SUSPEND)
            d = suspend_in_place(g, o->batch);
        if (d == RINGJOB_CHECKPOINT_EXIT)
            return checkpoint_exit(g);
        if (d < 0)
            return fprintf(stderr, "train-cuda: %s\n", ringjob_error()), 1;
    }
    if (g->rank == 0)
        printf("train-cuda: done at step %ld\n", g->step);
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    o->steps = 300, o->params = 8192, o->batch = 32, o->print_every = 10, o->state_mb = 0;
    o->lr = 0.003, o->seed = 1, o->gpu_ms = 0, o->host_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i];
        char *end;
        double v = strtod(argv[i + 1], &end);
        if (*end || v < 0)
            return -1;
        if (!strcmp(a, "--steps")) o->steps = (long)v;
        else if (!strcmp(a, "--params")) o->params = v < IN_DIM + 3 ? IN_DIM + 3 : (long)v;
        else if (!strcmp(a, "--batch-per-rank")) o->batch = v < 1 ? 1 : (long)v;
        else if (!strcmp(a, "--lr")) o->lr = v;
        else if (!strcmp(a, "--seed")) o->seed = (unsigned long long)v;
        else if (!strcmp(a, "--print-every")) o->print_every = v < 1 ? 1 : (long)v;
        else if (!strcmp(a, "--state-mb")) o->state_mb = (long)v;
        else if (!strcmp(a, "--gpu-ms") && v <= 10000) o->gpu_ms = v;
        else if (!strcmp(a, "--host-ms") && v <= 10000) o->host_ms = v;
        else return -1;
    }
    return argc % 2 == 1 ? 0 : -1;
}

/* Picks this rank's device; returns -1 when there is none. */
static int pick_device(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
        return -1;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local = lr ? atoi(lr) : 0;
    return cudaSetDevice(local % n) == cudaSuccess ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options o;
    struct gpu g;
    if (parse_options(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: train-cuda [--steps N] [--params N] [--batch-per-rank M] "
                        "[--lr X] [--seed S] [--print-every K] [--state-mb MB] [--gpu-ms MS] "
                        "[--host-ms MS]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    memset(&g, 0, sizeof(g));
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.world);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int have = pick_device() == 0, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (g.rank == 0)
            fprintf(stderr, "train-cuda: no usable CUDA device\n");
        MPI_Finalize();
        return EXIT_NO_GPU;
    }
    if (ringjob_init() < 0) {
        fprintf(stderr, "train-cuda: rank %d: ringjob: %s\n", g.rank, ringjob_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ringjob_set_broadcast(bcast_cb, NULL);
    g.ballast_bytes = (size_t)o.state_mb << 20;
    upload_teacher(o.seed);
    nccl_up(&g);
    int status = model_up(&g, &o) < 0 ? 1 : train(&g, &o);
    device_free(&g);
    NCCL_OK(ncclCommDestroy(g.comm));
    ringjob_finalize();
    MPI_Finalize();
    return status;
}
