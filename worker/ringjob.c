/* libringjob: the job's end of the worker channel (see ringjob.h and
 * docs/ringjob-protocol.md). One job per process: the state lives in one static struct.
 * Only rank 0 owns a socket; every decision reaches the other ranks through the
 * program's broadcast callback. */
#include "ringjob.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RJ_OUT_CAP (64 * 1024)
#define RJ_IN_CAP 1024
#define RJ_LINE_MAX 512
#define RJ_CONTROL_TIMEOUT_MS 10000
#define RJ_FLUSH_BYTES 4096
#define RJ_FLUSH_INTERVAL_S 0.05

struct ringjob {
    int initialized;
    int rank;
    int world;
    double lr_scale;
    long batch;      /* RINGJOB_BATCH: the global batch the scheduler chose; 0 none */
    long init_batch; /* RINGJOB_INIT_BATCH: the job's initial global batch; 0 none */
    long max_local;  /* RINGJOB_MAX_LOCAL_BATCH: most examples per rank per micro-step; 0 none */
    long next_batch; /* a BATCH record's batch not yet taken by a poll; 0 none */
    double next_lr;  /* and its learning-rate factor (<= 0: sqrt(batch / init_batch)) */
    char job_id[64];
    char plan[64];
    char ckdir[PATH_MAX];
    int fd;        /* -1: standalone, or not rank 0, or worker gone */
    int pending;   /* decision the worker asked for and the job has not taken yet */
    int resumed;   /* a RESUME arrived while suspended */
    int welcomed;  /* the worker answered HELLO */
    int withdrawn; /* a suspend was withdrawn: RESUMED is owed */
    long last_step;
    double last_flush;          /* CLOCK_MONOTONIC seconds of the last batch sent */
    unsigned long dropped;      /* reports dropped for want of room */
    unsigned long dropped_told; /* of which the worker was told */
    size_t out_len;
    size_t in_len;
    ringjob_broadcast_f bcast;
    void *bctx;
    char out[RJ_OUT_CAP];
    char in[RJ_IN_CAP];
    char err[256];
};

static struct ringjob rj = {.fd = -1};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rj.err, sizeof(rj.err), fmt, ap);
    va_end(ap);
    return -1;
}

static void copy_word(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
    for (char *p = dst; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            *p = '_';
    }
}

static int env_long(const char *name, long lo, long hi, long *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return fail("%s: expected an integer in %ld..%ld, got '%s'", name, lo, hi, s);
    *out = v;
    return 1;
}

static int read_environment(void)
{
    long rank = 0, world = 1;
    if (env_long("OMPI_COMM_WORLD_RANK", 0, 1 << 20, &rank) < 0)
        return -1;
    if (env_long("OMPI_COMM_WORLD_SIZE", 1, 1 << 20, &world) < 0)
        return -1;
    if (env_long("RINGJOB_WORLD_SIZE", 1, 1 << 20, &world) < 0)
        return -1;
    if (rank >= world)
        return fail("rank %ld outside world size %ld", rank, world);
    rj.rank = (int)rank;
    rj.world = (int)world;
    rj.lr_scale = (double)world;
    const char *s = getenv("RINGJOB_LR_SCALE");
    if (s && *s) {
        char *end;
        double v = strtod(s, &end);
        if (*end || !(v > 0.0) || v > 1e6)
            return fail("RINGJOB_LR_SCALE: expected a number in (0, 1e6], got '%s'", s);
        rj.lr_scale = v;
    }
    rj.batch = rj.init_batch = rj.max_local = rj.next_batch = 0;
    if (env_long("RINGJOB_BATCH", 1, 1L << 40, &rj.batch) < 0 ||
        env_long("RINGJOB_INIT_BATCH", 1, 1L << 40, &rj.init_batch) < 0 ||
        env_long("RINGJOB_MAX_LOCAL_BATCH", 1, 1L << 40, &rj.max_local) < 0)
        return -1;
    if (!(s && *s) && rj.batch > 0 && rj.init_batch > 0)
        rj.lr_scale = sqrt((double)rj.batch / (double)rj.init_batch);
    copy_word(rj.job_id, sizeof(rj.job_id), getenv("RINGJOB_JOB_ID"));
    s = getenv("RINGJOB_PLAN");
    copy_word(rj.plan, sizeof(rj.plan), s && *s ? s : "dp");
    s = getenv("RINGJOB_CHECKPOINT_DIR");
    if (snprintf(rj.ckdir, sizeof(rj.ckdir), "%s", s && *s ? s : ".") >= (int)sizeof(rj.ckdir))
        return fail("RINGJOB_CHECKPOINT_DIR: longer than %zu bytes", sizeof(rj.ckdir) - 1);
    return 0;
}

/* Queues one record; returns 0, or -1 when the output buffer has no room for it. */
static int queue_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int queue_line(const char *fmt, ...)
{
    char line[RJ_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(line) || rj.out_len + (size_t)n > sizeof(rj.out))
        return -1;
    memcpy(rj.out + rj.out_len, line, (size_t)n);
    rj.out_len += (size_t)n;
    return 0;
}

/* Set by SIGUSR1 (any rank): a planned stop asked of a job with no worker to ask it. */
static volatile sig_atomic_t stop_asked;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

/* Takes SIGUSR1 as "checkpoint and exit" unless the program handles it itself (its handler
 * is not the default). Every rank: mpirun forwards the signal to all of them, and a rank
 * left with the default action would die of it. */
static void catch_stop_signal(void)
{
    struct sigaction old;
    if (sigaction(SIGUSR1, NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
}

static void channel_lost(const char *why)
{
    if (rj.fd >= 0) {
        fprintf(stderr, "ringjob: worker channel lost (%s); continuing standalone\n", why);
        close(rj.fd);
    }
    rj.fd = -1;
    rj.out_len = 0;
    rj.in_len = 0;
}

/* Sends what the socket takes now (block = 0) or all of it within a bound (block = 1). */
static int flush_out(int block)
{
    size_t done = 0;
    while (rj.fd >= 0 && done < rj.out_len) {
        ssize_t n = send(rj.fd, rj.out + done, rj.out_len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = rj.fd, .events = POLLOUT};
            if (block && poll(&p, 1, RJ_CONTROL_TIMEOUT_MS) > 0)
                continue;
            if (!block)
                break;
            errno = ETIMEDOUT;
        }
        fail("send to worker: %s", strerror(errno));
        channel_lost(rj.err);
        return -1;
    }
    if (rj.fd >= 0 && done) {
        memmove(rj.out, rj.out + done, rj.out_len - done);
        rj.out_len -= done;
    }
    return 0;
}

/* Queues a DROPPED record for the reports dropped since the last one, if there is room. */
static void tell_dropped(void)
{
    unsigned long untold = rj.dropped - rj.dropped_told;
    if (untold && queue_line("DROPPED %lu\n", untold) == 0)
        rj.dropped_told = rj.dropped;
}

/* Sends a control record: blocking, after every queued report (which first makes room:
 * a control record is never dropped). Returns 0, or -1 when the channel failed. */
static int send_control_line(const char *line)
{
    if (flush_out(1) < 0)
        return -1;
    tell_dropped();
    queue_line("%s", line);
    return flush_out(1);
}

static int send_control(const char *verb, long value)
{
    char line[64];
    snprintf(line, sizeof(line), "%s %ld\n", verb, value);
    return send_control_line(line);
}

static int read_commands(int timeout_ms);

/* The worker answers HELLO with the commands it holds for the job, then WELCOME: after
 * it, a command given before the job started is seen by the first ringjob_poll(). */
static int await_welcome(void)
{
    for (int waited = 0; !rj.welcomed; waited += 100) {
        if (waited >= RJ_CONTROL_TIMEOUT_MS || read_commands(100) < 0) {
            if (rj.fd >= 0)
                close(rj.fd);
            rj.fd = -1;
            return fail("worker did not answer HELLO within %d ms", RJ_CONTROL_TIMEOUT_MS);
        }
    }
    return 0;
}

static int connect_worker(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return fail("RINGJOB_SOCKET: path longer than %zu bytes", sizeof(sa.sun_path) - 1);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail("socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fail("connect %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    rj.fd = fd;
    queue_line("HELLO 1 %s %d %ld %s\n", rj.job_id[0] ? rj.job_id : "-", rj.world, (long)getpid(),
               rj.plan);
    if (flush_out(1) < 0)
        return -1;
    return await_welcome();
}

int ringjob_init(void)
{
    if (rj.initialized)
        return fail("ringjob_init: already initialized");
    rj.err[0] = '\0';
    rj.fd = -1;
    rj.welcomed = 0;
    rj.withdrawn = 0;
    rj.dropped = rj.dropped_told = 0;
    rj.pending = RINGJOB_CONTINUE;
    rj.last_step = -1;
    if (read_environment() < 0)
        return -1;
    stop_asked = 0;
    catch_stop_signal();
    const char *sock = getenv("RINGJOB_SOCKET");
    if (rj.rank == 0 && sock && *sock && connect_worker(sock) < 0)
        return -1;
    rj.initialized = 1;
    return 0;
}

void ringjob_finalize(void)
{
    if (!rj.initialized)
        return;
    if (rj.fd >= 0) {
        send_control("BYE", rj.last_step);
        if (rj.fd >= 0)
            close(rj.fd);
    }
    rj.fd = -1;
    rj.out_len = rj.in_len = 0;
    rj.initialized = 0;
    rj.bcast = NULL;
    rj.bctx = NULL;
}

void ringjob_set_broadcast(ringjob_broadcast_f fn, void *ctx)
{
    rj.bcast = fn;
    rj.bctx = ctx;
}

int ringjob_set_total_steps(long total)
{
    if (!rj.initialized)
        return fail("ringjob_set_total_steps: not initialized");
    if (total < 1)
        return fail("ringjob_set_total_steps: %ld is not a step count", total);
    if (rj.fd < 0)
        return 0;
    if (queue_line("TOTAL %ld\n", total) < 0) {
        flush_out(0);
        if (queue_line("TOTAL %ld\n", total) < 0)
            return fail("ringjob_set_total_steps: no room to send it");
    }
    return 0;
}

int ringjob_report_grad(double sqr, double var)
{
    if (!rj.initialized)
        return fail("ringjob_report_grad: not initialized");
    if (!isfinite(sqr) || !isfinite(var) || sqr < 0 || var < 0 || !(sqr + var > 0))
        return fail("ringjob_report_grad: expected finite sqr, var >= 0, not both 0");
    if (rj.fd < 0)
        return 0;
    if (queue_line("GRAD %.17g %.17g\n", sqr, var) < 0) {
        flush_out(0);
        if (queue_line("GRAD %.17g %.17g\n", sqr, var) < 0)
            return fail("ringjob_report_grad: no room to send it");
    }
    return 0;
}

int ringjob_report_fits(long max_local)
{
    if (!rj.initialized)
        return fail("ringjob_report_fits: not initialized");
    if (max_local < 1)
        return fail("ringjob_report_fits: %ld is not a batch size", max_local);
    if (rj.fd < 0)
        return 0;
    if (queue_line("FITS %ld\n", max_local) < 0) {
        flush_out(0);
        if (queue_line("FITS %ld\n", max_local) < 0)
            return fail("ringjob_report_fits: no room to send it");
    }
    return 0;
}

int ringjob_report(long step, double loss, long samples, double seconds)
{
    if (!rj.initialized)
        return fail("ringjob_report: not initialized");
    rj.last_step = step;
    if (rj.fd < 0)
        return 0;
    if (queue_line("REPORT %ld %.9g %ld %.9g\n", step, loss, samples, seconds) < 0) {
        flush_out(0);
        if (queue_line("REPORT %ld %.9g %ld %.9g\n", step, loss, samples, seconds) < 0)
            rj.dropped++;
    }
    if (rj.out_len > sizeof(rj.out) / 2)
        flush_out(0);
    return 0;
}

/* "BATCH <batch> <lr_scale>": the global batch to run from the next poll on, and its
 * learning-rate factor (0: sqrt(batch / init_batch)). A malformed one is ignored, as an
 * unknown record is. */
static void apply_batch(const char *args)
{
    long m;
    double lr;
    char end;
    if (sscanf(args, "%ld %lf %c", &m, &lr, &end) != 2 || m < 1 || m > (1L << 40) ||
        !isfinite(lr) || lr < 0 || lr > 1e6)
        return;
    rj.next_batch = m;
    rj.next_lr = lr;
}

/* Applies one command record from the worker; unknown records are ignored, and so are
 * records with a NUL byte (not a printable line, docs/ringjob-protocol.md). */
static void apply_command(const char *line)
{
    if (!strncmp(line, "BATCH ", 6)) {
        apply_batch(line + 6);
    } else if (!strncmp(line, "WELCOME ", 8)) {
        rj.welcomed = 1;
    } else if (!strcmp(line, "SUSPEND")) {
        if (rj.pending != RINGJOB_CHECKPOINT_EXIT)
            rj.pending = RINGJOB_SUSPEND;
    } else if (!strcmp(line, "CHECKPOINT_EXIT")) {
        rj.pending = RINGJOB_CHECKPOINT_EXIT;
    } else if (!strcmp(line, "RESUME")) {
        if (rj.pending == RINGJOB_SUSPEND) {
            rj.pending = RINGJOB_CONTINUE; /* suspend withdrawn before the job took it */
            rj.withdrawn = 1;
        }
        rj.resumed = 1;
    }
}

/* Reads what the worker sent: waits up to timeout_ms (0: only what is there).
 * Returns 0, or -1 when the channel closed. */
static int read_commands(int timeout_ms)
{
    struct pollfd p = {.fd = rj.fd, .events = POLLIN};
    if (rj.fd < 0)
        return -1;
    int r = timeout_ms ? poll(&p, 1, timeout_ms) : 1; /* 0: one recv, no poll */
    if (r <= 0)
        return r < 0 && errno != EINTR ? (channel_lost("poll"), -1) : 0;
    ssize_t n = recv(rj.fd, rj.in + rj.in_len, sizeof(rj.in) - rj.in_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        channel_lost(n == 0 ? "closed by the worker" : strerror(errno));
        return -1;
    }
    rj.in_len += (size_t)n;
    char *nl;
    while ((nl = memchr(rj.in, '\n', rj.in_len))) {
        *nl = '\0';
        if (!memchr(rj.in, '\0', (size_t)(nl - rj.in))) /* "SUSPEND\0..." is no SUSPEND */
            apply_command(rj.in);
        size_t used = (size_t)(nl + 1 - rj.in);
        memmove(rj.in, nl + 1, rj.in_len - used);
        rj.in_len -= used;
    }
    if (rj.in_len == sizeof(rj.in)) {
        channel_lost("record longer than the input buffer");
        return -1;
    }
    return 0;
}

/* What rank 0 decided at a boundary, as every rank receives it. */
struct agreement {
    int32_t decision;
    int32_t unused;
    int64_t batch; /* a new global batch from this boundary on; 0 none */
    double lr;     /* its learning-rate factor */
};

/* The learning-rate factor of a new batch m whose record gave lr (0: none given): lr, else
 * sqrt(m / init_batch) with an initial batch, else the factor as it was. */
static double lr_for(long m, double lr)
{
    if (lr > 0)
        return lr;
    if (rj.init_batch > 0)
        return sqrt((double)m / (double)rj.init_batch);
    return rj.lr_scale;
}

/* Rank 0's decision (and a new batch it took) reaches every rank, which applies the batch;
 * a broadcast failure is every rank's -1. */
static int agree(int value)
{
    struct agreement a = {.decision = value};
    if (rj.rank == 0 && rj.next_batch > 0) {
        a.batch = rj.next_batch;
        a.lr = lr_for(rj.next_batch, rj.next_lr);
        rj.next_batch = 0;
    }
    if (rj.bcast && rj.bcast(&a, sizeof(a), rj.bctx) != 0)
        return fail("broadcast callback failed");
    if (a.batch > 0) {
        rj.batch = (long)a.batch;
        rj.lr_scale = a.lr;
        if (rj.rank == 0 && rj.fd >= 0) {
            char rec[64];
            snprintf(rec, sizeof(rec), "BATCHED %ld %ld\n", rj.last_step, rj.batch);
            send_control_line(rec);
        }
    }
    return (int)a.decision;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rank 0 at a boundary: reads commands, and sends the queued reports once they are
 * RJ_FLUSH_BYTES or RJ_FLUSH_INTERVAL_S old, so the worker wakes a few times a second
 * rather than at every minibatch (and the job makes one send per batch). */
static void exchange(void)
{
    read_commands(0);
    if (rj.withdrawn) {
        rj.withdrawn = 0;
        send_control("RESUMED", rj.last_step);
    }
    double now = now_mono();
    if (rj.out_len >= RJ_FLUSH_BYTES || now - rj.last_flush >= RJ_FLUSH_INTERVAL_S) {
        tell_dropped();
        flush_out(0);
        rj.last_flush = now;
    }
}

int ringjob_poll(long step)
{
    if (!rj.initialized)
        return fail("ringjob_poll: not initialized");
    int d = RINGJOB_CONTINUE;
    if (rj.rank == 0) {
        rj.last_step = step;
        if (rj.fd >= 0)
            exchange();
        d = rj.pending;
        if (d == RINGJOB_SUSPEND)
            rj.pending = RINGJOB_CONTINUE;
        /* SIGUSR1 with no worker on the channel (it was killed, or the job runs by hand): the
         * next worker of this host sends it to what its predecessor left running, so that the
         * training done since the last checkpoint is kept before it ends the job. With a
         * worker there the worker decides (a stop it did not ask for would fail the job). */
        if (stop_asked && rj.fd < 0) {
            fprintf(stderr, "ringjob: SIGUSR1 with no worker: checkpoint and exit\n");
            stop_asked = 0;
            d = RINGJOB_CHECKPOINT_EXIT;
        }
    }
    return agree(d);
}

static int suspended_worker_gone(void)
{
    fprintf(stderr, "ringjob: worker went away while the job was suspended: checkpoint and exit\n");
    return RINGJOB_CHECKPOINT_EXIT;
}

/* Rank 0: reports the suspension and blocks until RESUME or CHECKPOINT_EXIT. */
static int wait_for_resume(void)
{
    if (rj.fd < 0)
        return RINGJOB_CONTINUE;
    rj.resumed = 0;
    /* A worker gone (the channel lost on the way) leaves the state waiting in host memory
     * with no one to resume it: kept in a checkpoint, the job restarted by the next one goes
     * on from here. */
    if (send_control("SUSPENDED", rj.last_step) < 0)
        return rj.fd < 0 ? suspended_worker_gone() : -1;
    while (!rj.resumed && rj.pending != RINGJOB_CHECKPOINT_EXIT) {
        if (read_commands(-1) < 0)
            return suspended_worker_gone();
    }
    if (rj.pending == RINGJOB_CHECKPOINT_EXIT)
        return RINGJOB_CHECKPOINT_EXIT;
    send_control("RESUMED", rj.last_step);
    return RINGJOB_CONTINUE;
}

int ringjob_suspended_wait(void)
{
    if (!rj.initialized)
        return fail("ringjob_suspended_wait: not initialized");
    int d = rj.rank == 0 ? wait_for_resume() : RINGJOB_CONTINUE;
    return agree(d);
}

int ringjob_checkpoint_path(const char *name, char *buf, size_t len)
{
    if (!rj.initialized)
        return fail("ringjob_checkpoint_path: not initialized");
    if (!name || !*name || strchr(name, '/'))
        return fail("checkpoint name '%s': expected a file name without '/'", name ? name : "");
    if (mkdir(rj.ckdir, 0755) < 0 && errno != EEXIST)
        return fail("mkdir %s: %s", rj.ckdir, strerror(errno));
    int n = snprintf(buf, len, "%s/%s", rj.ckdir, name);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return fail("checkpoint path: longer than %zu bytes", len ? len - 1 : 0);
    }
    return n;
}

int ringjob_checkpoint_done(long step)
{
    if (!rj.initialized)
        return fail("ringjob_checkpoint_done: not initialized");
    if (rj.rank != 0 || rj.fd < 0)
        return 0;
    return send_control("CHECKPOINTED", step);
}

int ringjob_checkpoint_saved(long step)
{
    if (!rj.initialized)
        return fail("ringjob_checkpoint_saved: not initialized");
    if (step < 0)
        return fail("ringjob_checkpoint_saved: step %ld < 0", step);
    if (rj.rank != 0 || rj.fd < 0)
        return 0;
    return send_control("SAVED", step);
}

int ringjob_rank(void)
{
    return rj.rank;
}

int ringjob_world_size(void)
{
    return rj.world ? rj.world : 1;
}

double ringjob_lr_scale(void)
{
    return rj.lr_scale > 0.0 ? rj.lr_scale : 1.0;
}

long ringjob_batch(void)
{
    return rj.batch;
}

long ringjob_init_batch(void)
{
    return rj.init_batch;
}

long ringjob_max_local_batch(void)
{
    return rj.max_local;
}

const char *ringjob_job_id(void)
{
    return rj.job_id;
}

const char *ringjob_plan(void)
{
    return rj.plan;
}

const char *ringjob_checkpoint_dir(void)
{
    return rj.ckdir;
}

int ringjob_connected(void)
{
    return rj.fd >= 0;
}

const char *ringjob_error(void)
{
    return rj.err;
}
