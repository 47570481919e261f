/* jobchan: the worker's end of a job's libringjob channel. See jobchan.h. */
#include "jobchan.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define JC_IN_CAP 1024
#define JC_OUT_CAP 1024

/* What the worker wants of the job; delivered on connection if none is there yet. */
enum jc_want { WANT_RUN, WANT_SUSPEND, WANT_CHECKPOINT };

struct jobchan {
    int lfd;
    int cfd;
    char *path;
    enum jobchan_state state;
    enum jc_want want;
    double since;
    long ckpt_step;
    long saved_step;  /* the last checkpoint complete (SAVED or CHECKPOINTED), -1 none */
    double saved_at;  /* CLOCK_MONOTONIC when its record arrived */
    long last_step;
    int world;
    int bye;
    unsigned long dropped;
    long total_steps; /* the job's TOTAL, 0 until it says */
    long fits;        /* the last FITS record's largest local batch (0: none) */
    int has_grad;     /* a GRAD record arrived: its last sqr and var */
    double grad_sqr, grad_var;
    long want_batch; /* a batch given while no job was connected: sent at its HELLO */
    double want_lr;
    long batched;      /* the job's last BATCHED record: the batch it took, 0 none */
    long batched_step; /* and the step after which it took it */
    char job_id[64];
    struct jobchan_report *reports; /* ring of JOBCHAN_REPORT_CAP */
    size_t rhead;
    size_t rcount;
    size_t in_len;
    size_t out_len;
    char in[JC_IN_CAP];
    char out[JC_OUT_CAP];
    char err[256];
};

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int jc_fail(struct jobchan *jc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int jc_fail(struct jobchan *jc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(jc->err, sizeof(jc->err), fmt, ap);
    va_end(ap);
    return -1;
}

static void set_state(struct jobchan *jc, enum jobchan_state state)
{
    if (jc->state != state)
        jc->since = now_mono();
    jc->state = state;
}

static int listen_on(struct jobchan *jc, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return jc_fail(jc, "socket path: longer than %zu bytes", sizeof(sa.sun_path) - 1);
    strcpy(sa.sun_path, path);
    jc->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (jc->lfd < 0)
        return jc_fail(jc, "socket: %s", strerror(errno));
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    if (bind(jc->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return jc_fail(jc, "bind %s: %s", path, strerror(errno));
    jc->path = strdup(path);
    if (!jc->path)
        return jc_fail(jc, "out of memory");
    if (listen(jc->lfd, 4) < 0)
        return jc_fail(jc, "listen %s: %s", path, strerror(errno));
    return 0;
}

struct jobchan *jobchan_create(const char *path, char *err, size_t errlen)
{
    struct jobchan *jc = calloc(1, sizeof(*jc));
    if (!jc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    jc->lfd = jc->cfd = -1;
    jc->ckpt_step = jc->last_step = jc->saved_step = -1;
    jc->since = now_mono();
    snprintf(jc->job_id, sizeof(jc->job_id), "-");
    jc->reports = calloc(JOBCHAN_REPORT_CAP, sizeof(*jc->reports));
    if (!jc->reports) {
        jc_fail(jc, "out of memory");
        goto error;
    }
    if (listen_on(jc, path) < 0)
        goto error;
    return jc;
error:
    snprintf(err, errlen, "%s", jc->err);
    jobchan_destroy(jc);
    return NULL;
}

static void drop_connection(struct jobchan *jc)
{
    if (jc->cfd >= 0)
        close(jc->cfd);
    jc->cfd = -1;
    jc->in_len = jc->out_len = 0;
    jc->want = WANT_RUN;
    if (jc->state != JOBCHAN_WAITING && jc->state != JOBCHAN_CHECKPOINTED)
        set_state(jc, JOBCHAN_GONE);
}

void jobchan_destroy(struct jobchan *jc)
{
    if (!jc)
        return;
    drop_connection(jc);
    if (jc->lfd >= 0)
        close(jc->lfd);
    if (jc->path)
        unlink(jc->path);
    free(jc->path);
    free(jc->reports);
    free(jc);
}

int jobchan_pollfds(const struct jobchan *jc, struct pollfd *fds, int max)
{
    int n = 0;
    if (n < max && jc->lfd >= 0)
        fds[n++] = (struct pollfd){.fd = jc->lfd, .events = POLLIN};
    if (n < max && jc->cfd >= 0) {
        short ev = POLLIN | (jc->out_len ? POLLOUT : 0);
        fds[n++] = (struct pollfd){.fd = jc->cfd, .events = ev};
    }
    return n;
}

/* Writes what the socket takes now; returns 0, or -1 when the connection failed. */
static int flush_out(struct jobchan *jc)
{
    while (jc->cfd >= 0 && jc->out_len) {
        ssize_t n = send(jc->cfd, jc->out, jc->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0) {
            jc_fail(jc, "send to job: %s", strerror(errno));
            drop_connection(jc);
            return -1;
        }
        memmove(jc->out, jc->out + n, jc->out_len - (size_t)n);
        jc->out_len -= (size_t)n;
    }
    return 0;
}

static void send_line(struct jobchan *jc, const char *line)
{
    size_t len = strlen(line);
    if (jc->cfd < 0 || jc->out_len + len > sizeof(jc->out))
        return; /* commands are a few bytes and rare: the buffer only fills if the job hangs */
    memcpy(jc->out + jc->out_len, line, len);
    jc->out_len += len;
    flush_out(jc);
}

/* Sends what the worker wants to a job that just said HELLO. */
static void deliver_want(struct jobchan *jc)
{
    if (jc->want == WANT_SUSPEND) {
        send_line(jc, "SUSPEND\n");
        set_state(jc, JOBCHAN_SUSPENDING);
    } else if (jc->want == WANT_CHECKPOINT) {
        send_line(jc, "CHECKPOINT_EXIT\n");
        set_state(jc, JOBCHAN_CHECKPOINTING);
    }
}

static int accept_job(struct jobchan *jc)
{
    int fd = accept4(jc->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : jc_fail(jc, "accept: %s", strerror(errno));
    if (jc->cfd >= 0) {
        close(fd); /* one job connection at a time: rank 0 only */
        return jc_fail(jc, "refused a second connection while a job is connected");
    }
    jc->cfd = fd;
    jc->in_len = jc->out_len = 0;
    jc->bye = 0;
    return 0;
}

static void store_report(struct jobchan *jc, const struct jobchan_report *r)
{
    if (jc->rcount == JOBCHAN_REPORT_CAP) {
        jc->rhead = (jc->rhead + 1) % JOBCHAN_REPORT_CAP; /* drop the oldest */
        jc->rcount--;
        jc->dropped++;
    }
    jc->reports[(jc->rhead + jc->rcount) % JOBCHAN_REPORT_CAP] = *r;
    jc->rcount++;
}

/* Writes the BATCH record of want_batch and forgets it. */
static void send_batch(struct jobchan *jc)
{
    char line[96];
    snprintf(line, sizeof(line), "BATCH %ld %.9g\n", jc->want_batch, jc->want_lr);
    send_line(jc, line);
    jc->want_batch = 0;
}

static int on_hello(struct jobchan *jc, const char *args)
{
    int version, world;
    long pid;
    char id[64], plan[64];
    if (sscanf(args, "%d %63s %d %ld %63s", &version, id, &world, &pid, plan) != 5 ||
        version != 1 || world < 1)
        return jc_fail(jc, "bad HELLO record '%s'", args);
    snprintf(jc->job_id, sizeof(jc->job_id), "%s", id);
    jc->world = world;
    jc->batched = 0; /* a new launch: it starts at the batch of its environment */
    set_state(jc, JOBCHAN_RUNNING);
    deliver_want(jc);
    if (jc->want_batch > 0)
        send_batch(jc);
    send_line(jc, "WELCOME 1\n");
    return 0;
}

static int on_report(struct jobchan *jc, const char *args)
{
    struct jobchan_report r;
    if (sscanf(args, "%ld %lf %ld %lf", &r.step, &r.loss, &r.samples, &r.seconds) != 4)
        return jc_fail(jc, "bad REPORT record '%s'", args);
    r.time = now_mono();
    jc->last_step = r.step;
    store_report(jc, &r);
    if (jc->state == JOBCHAN_RESUMING)
        set_state(jc, JOBCHAN_RUNNING);
    return 0;
}

/* SUSPENDED, RESUMED, CHECKPOINTED, SAVED, DROPPED, BYE: each with one integer. A resuming job
 * is running again at its first REPORT (it restored its state and made a step), not at
 * RESUMED (which it sends before restoring). */
static int on_ack(struct jobchan *jc, const char *verb, const char *args)
{
    long v;
    if (sscanf(args, "%ld", &v) != 1)
        return jc_fail(jc, "bad %s record '%s'", verb, args);
    if (!strcmp(verb, "DROPPED")) {
        jc->dropped += (unsigned long)(v > 0 ? v : 0);
        return 0;
    }
    jc->last_step = v > jc->last_step ? v : jc->last_step;
    if (!strcmp(verb, "SUSPENDED") && jc->state == JOBCHAN_SUSPENDING)
        set_state(jc, JOBCHAN_SUSPENDED);
    else if (!strcmp(verb, "RESUMED") && jc->state != JOBCHAN_RESUMING &&
             jc->state != JOBCHAN_CHECKPOINTING)
        set_state(jc, JOBCHAN_RUNNING);
    else if (!strcmp(verb, "CHECKPOINTED")) {
        jc->ckpt_step = jc->saved_step = v;
        jc->saved_at = now_mono();
        set_state(jc, JOBCHAN_CHECKPOINTED);
    } else if (!strcmp(verb, "SAVED") && v >= 0) {
        jc->saved_step = v;
        jc->saved_at = now_mono();
    } else if (!strcmp(verb, "BYE"))
        jc->bye = 1;
    return 0;
}

static int on_line(struct jobchan *jc, char *line)
{
    char *args = strchr(line, ' ');
    if (!args)
        return jc_fail(jc, "record without arguments '%s'", line);
    *args++ = '\0';
    if (!strcmp(line, "REPORT"))
        return on_report(jc, args);
    if (!strcmp(line, "HELLO"))
        return on_hello(jc, args);
    if (!strcmp(line, "TOTAL")) {
        long v;
        if (sscanf(args, "%ld", &v) != 1 || v < 1)
            return jc_fail(jc, "bad TOTAL record '%s'", args);
        jc->total_steps = v;
        return 0;
    }
    if (!strcmp(line, "BATCHED")) {
        long step, m;
        if (sscanf(args, "%ld %ld", &step, &m) != 2 || m < 1)
            return jc_fail(jc, "bad BATCHED record '%s'", args);
        jc->batched = m;
        jc->batched_step = step;
        return 0;
    }
    if (!strcmp(line, "FITS")) {
        long n;
        char end;
        if (sscanf(args, "%ld%c", &n, &end) != 1 || n < 1 || n > JOBCHAN_FITS_MAX)
            return jc_fail(jc, "bad FITS record '%s'", args);
        jc->fits = n;
        return 0;
    }
    if (!strcmp(line, "GRAD")) {
        double sq, var;
        if (sscanf(args, "%lf %lf", &sq, &var) != 2 || !isfinite(sq) || !isfinite(var) ||
            sq < 0 || var < 0 || !(sq + var > 0))
            return jc_fail(jc, "bad GRAD record '%s'", args);
        jc->grad_sqr = sq;
        jc->grad_var = var;
        jc->has_grad = 1;
        return 0;
    }
    static const char *const acks[] = {"SUSPENDED", "RESUMED", "CHECKPOINTED", "SAVED",
                                       "DROPPED",   "BYE"};
    for (size_t i = 0; i < sizeof(acks) / sizeof(acks[0]); i++) {
        if (!strcmp(line, acks[i]))
            return on_ack(jc, acks[i], args);
    }
    return 0; /* unknown records are ignored: newer jobs may say more */
}

static int read_job(struct jobchan *jc)
{
    ssize_t n = recv(jc->cfd, jc->in + jc->in_len, sizeof(jc->in) - jc->in_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        drop_connection(jc);
        return 0;
    }
    jc->in_len += (size_t)n;
    char *start = jc->in, *nl;
    int rc = 0;
    while (rc == 0 && (nl = memchr(start, '\n', jc->in_len - (size_t)(start - jc->in)))) {
        *nl = '\0';
        if (!memchr(start, '\0', (size_t)(nl - start))) /* with a NUL: no record, ignored */
            rc = on_line(jc, start);
        start = nl + 1;
    }
    jc->in_len -= (size_t)(start - jc->in);
    memmove(jc->in, start, jc->in_len);
    if (rc == 0 && jc->in_len == sizeof(jc->in))
        rc = jc_fail(jc, "record longer than %zu bytes", sizeof(jc->in));
    if (rc < 0)
        drop_connection(jc);
    return rc;
}

int jobchan_handle(struct jobchan *jc, const struct pollfd *fds, int n)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!fds[i].revents)
            continue;
        if (fds[i].fd == jc->lfd) {
            accept_job(jc);
        } else if (fds[i].fd == jc->cfd) {
            if (fds[i].revents & POLLOUT)
                flush_out(jc);
            if (jc->cfd >= 0 && fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                rc |= read_job(jc);
        }
    }
    return rc;
}

int jobchan_run(struct jobchan *jc, int timeout_ms)
{
    struct pollfd fds[JOBCHAN_MAX_POLLFDS];
    int n = jobchan_pollfds(jc, fds, JOBCHAN_MAX_POLLFDS);
    int r = poll(fds, (nfds_t)n, timeout_ms);
    if (r < 0)
        return errno == EINTR ? 0 : jc_fail(jc, "poll: %s", strerror(errno));
    return r ? jobchan_handle(jc, fds, n) : 0;
}

static int command_suspend(struct jobchan *jc)
{
    if (jc->state == JOBCHAN_WAITING || jc->state == JOBCHAN_GONE) {
        jc->want = WANT_SUSPEND;
        return 0;
    }
    if (jc->state == JOBCHAN_RUNNING) {
        jc->want = WANT_SUSPEND;
        deliver_want(jc);
        return 0;
    }
    if (jc->state == JOBCHAN_SUSPENDING || jc->state == JOBCHAN_SUSPENDED)
        return 0;
    errno = EINVAL;
    return jc_fail(jc, "suspend: job is %s", jobchan_state_name(jc->state));
}

static int command_resume(struct jobchan *jc)
{
    if (jc->state == JOBCHAN_SUSPENDING || jc->state == JOBCHAN_SUSPENDED) {
        jc->want = WANT_RUN;
        send_line(jc, "RESUME\n");
        set_state(jc, JOBCHAN_RESUMING);
        return 0;
    }
    if (jc->state == JOBCHAN_CHECKPOINTING || jc->state == JOBCHAN_CHECKPOINTED) {
        errno = EINVAL;
        return jc_fail(jc, "resume: job is %s", jobchan_state_name(jc->state));
    }
    if (jc->want == WANT_SUSPEND)
        jc->want = WANT_RUN;
    return 0;
}

int jobchan_command(struct jobchan *jc, enum jobchan_cmd cmd)
{
    switch (cmd) {
    case JOBCHAN_SUSPEND:
        return command_suspend(jc);
    case JOBCHAN_RESUME:
        return command_resume(jc);
    case JOBCHAN_CHECKPOINT_EXIT:
        if (jc->state == JOBCHAN_CHECKPOINTED) {
            errno = EINVAL;
            return jc_fail(jc, "checkpoint-exit: job already checkpointed");
        }
        jc->want = WANT_CHECKPOINT;
        if (jc->cfd >= 0 && jc->state != JOBCHAN_CHECKPOINTING)
            deliver_want(jc);
        return 0;
    }
    errno = EINVAL;
    return jc_fail(jc, "unknown command %d", (int)cmd);
}

int jobchan_batch(struct jobchan *jc, long batch, double lr_scale)
{
    if (batch < 1 || !isfinite(lr_scale) || lr_scale < 0 || lr_scale > 1e6) {
        errno = EINVAL;
        return jc_fail(jc, "batch: expected a batch >= 1 and a factor in [0, 1e6]");
    }
    if (jc->state == JOBCHAN_CHECKPOINTING || jc->state == JOBCHAN_CHECKPOINTED) {
        errno = EINVAL;
        return jc_fail(jc, "batch: job is %s", jobchan_state_name(jc->state));
    }
    jc->want_batch = batch;
    jc->want_lr = lr_scale;
    if (jc->cfd >= 0 && jc->state != JOBCHAN_WAITING && jc->state != JOBCHAN_GONE)
        send_batch(jc);
    return 0;
}

long jobchan_batched(const struct jobchan *jc, long *step)
{
    if (step)
        *step = jc->batched ? jc->batched_step : -1;
    return jc->batched;
}

size_t jobchan_take_reports(struct jobchan *jc, struct jobchan_report *out, size_t max)
{
    size_t n = 0;
    while (n < max && jc->rcount) {
        out[n++] = jc->reports[jc->rhead];
        jc->rhead = (jc->rhead + 1) % JOBCHAN_REPORT_CAP;
        jc->rcount--;
    }
    return n;
}

size_t jobchan_pending_reports(const struct jobchan *jc)
{
    return jc->rcount;
}

unsigned long jobchan_dropped(const struct jobchan *jc)
{
    return jc->dropped;
}

enum jobchan_state jobchan_state(const struct jobchan *jc)
{
    return jc->state;
}

const char *jobchan_state_name(enum jobchan_state state)
{
    static const char *const names[] = {
        [JOBCHAN_WAITING] = "waiting",           [JOBCHAN_RUNNING] = "running",
        [JOBCHAN_SUSPENDING] = "suspending",     [JOBCHAN_SUSPENDED] = "suspended",
        [JOBCHAN_RESUMING] = "resuming",         [JOBCHAN_CHECKPOINTING] = "checkpointing",
        [JOBCHAN_CHECKPOINTED] = "checkpointed", [JOBCHAN_GONE] = "gone",
    };
    if ((unsigned)state >= sizeof(names) / sizeof(names[0]))
        return "unknown";
    return names[state];
}

double jobchan_state_since(const struct jobchan *jc)
{
    return jc->since;
}

long jobchan_checkpoint_step(const struct jobchan *jc)
{
    return jc->ckpt_step;
}

int jobchan_last_checkpoint(const struct jobchan *jc, long *step, double *at)
{
    if (jc->saved_step < 0)
        return 0;
    *step = jc->saved_step;
    *at = jc->saved_at;
    return 1;
}

long jobchan_last_step(const struct jobchan *jc)
{
    return jc->last_step;
}

const char *jobchan_job_id(const struct jobchan *jc)
{
    return jc->job_id;
}

int jobchan_world_size(const struct jobchan *jc)
{
    return jc->world;
}

int jobchan_connected(const struct jobchan *jc)
{
    return jc->cfd >= 0;
}

int jobchan_said_bye(const struct jobchan *jc)
{
    return jc->bye;
}

const char *jobchan_error(const struct jobchan *jc)
{
    return jc->err;
}

long jobchan_total_steps(const struct jobchan *jc)
{
    return jc->total_steps;
}

long jobchan_fits(const struct jobchan *jc)
{
    return jc->fits;
}

int jobchan_grad(const struct jobchan *jc, double *sqr, double *var)
{
    if (!jc->has_grad)
        return 0;
    *sqr = jc->grad_sqr;
    *var = jc->grad_var;
    return 1;
}
