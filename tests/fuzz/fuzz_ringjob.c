/* Fuzz target: what a job reads from its worker (worker/ringjob.c), over a real unix
 * socket. A thread plays the worker: it accepts libringjob's connection, sends the input,
 * then "\nWELCOME 1\n" (so that ringjob_init() never waits for its 10 s timeout), and
 * closes. The job polls until the channel is gone. Checked: ringjob_init() succeeds,
 * every decision is one of the three, CHECKPOINT_EXIT is never taken back, a decision
 * comes only from a record that asks for it, and what the job sends is well-formed. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "ringjob.h"

struct worker {
    int lfd;
    const uint8_t *data;
    size_t size;
    char got[8192]; /* what the job sent (the start of it) */
    size_t got_len;
};

static void recv_some(struct worker *w, int fd)
{
    ssize_t n;
    while (w->got_len < sizeof(w->got) - 1 &&
           (n = recv(fd, w->got + w->got_len, sizeof(w->got) - 1 - w->got_len, MSG_DONTWAIT)) >
               0)
        w->got_len += (size_t)n;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int fd = accept(w->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    size_t off = 0;
    static const char welcome[] = "\nWELCOME 1\n";
    while (off < w->size) {
        ssize_t n = send(fd, w->data + off, w->size - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the job dropped the channel (a record too long) */
        off += (size_t)n;
        recv_some(w, fd);
    }
    send(fd, welcome, sizeof(welcome) - 1, MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    /* Read what the job says until it closes, so that its blocking sends finish. */
    for (;;) {
        char sink[4096];
        ssize_t n = recv(fd, sink, sizeof(sink), 0);
        if (n <= 0)
            break;
        size_t k = (size_t)n < sizeof(w->got) - 1 - w->got_len ? (size_t)n
                                                                : sizeof(w->got) - 1 - w->got_len;
        memcpy(w->got + w->got_len, sink, k);
        w->got_len += k;
    }
    close(fd);
    return NULL;
}

/* Each record of the job: HELLO first, then known verbs with numbers. */
static void check_sent(struct worker *w)
{
    static const char *const verbs[] = {"REPORT ", "SUSPENDED ", "RESUMED ", "CHECKPOINTED ",
                                        "DROPPED ", "BYE ", "BATCHED "};
    w->got[w->got_len] = '\0';
    FUZZ_CHECK(!strncmp(w->got, "HELLO 1 ", 8), "first record '%.40s'", w->got);
    for (char *line = strchr(w->got, '\n'); line && line[1];) {
        line++;
        char *nl = strchr(line, '\n');
        if (!nl)
            break; /* cut by the size of got */
        size_t i = 0;
        while (i < sizeof(verbs) / sizeof(verbs[0]) && strncmp(line, verbs[i], strlen(verbs[i])))
            i++;
        FUZZ_CHECK(i < sizeof(verbs) / sizeof(verbs[0]), "record '%.40s'", line);
        line = nl;
    }
}

static int has_record(const uint8_t *data, size_t size, const char *rec)
{
    size_t n = strlen(rec);
    for (size_t i = 0; i + n <= size; i++)
        if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, rec, n) &&
            (i + n == size || data[i + n] == '\n'))
            return 1;
    return 0;
}

/* Whether a record of data begins with prefix. */
static int has_record_prefix(const uint8_t *data, size_t size, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i + n <= size; i++)
        if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, prefix, n))
            return 1;
    return 0;
}

/* The longest record of data, newline included. */
static size_t longest_line(const uint8_t *data, size_t size)
{
    size_t best = 0, cur = 0;
    for (size_t i = 0; i < size; i++) {
        cur++;
        if (data[i] == '\n')
            cur = 0;
        best = cur > best ? cur : best;
    }
    return best + 1;
}

/* Returns 1 when the job connected. */
static int run_job(const uint8_t *data, size_t size)
{
    if (ringjob_init() < 0) {
        /* Only a record longer than the job's input buffer (1024 bytes) may cost the
         * channel before WELCOME. */
        FUZZ_CHECK(longest_line(data, size) >= 1024, "ringjob_init: %s", ringjob_error());
        ringjob_finalize();
        return 0;
    }
    int may_suspend = has_record(data, size, "SUSPEND");
    int may_exit = has_record(data, size, "CHECKPOINT_EXIT");
    int exited = 0;
    for (long step = 0; step < 100000 && ringjob_connected(); step++) {
        ringjob_report(step, 1.0 / (double)(step + 1), 32, 0.01);
        int d = ringjob_poll(step);
        FUZZ_CHECK(ringjob_batch() >= 0 && ringjob_lr_scale() > 0 && ringjob_lr_scale() <= 1e6,
                   "batch %ld at factor %g", ringjob_batch(), ringjob_lr_scale());
        FUZZ_CHECK(ringjob_batch() == 0 || has_record_prefix(data, size, "BATCH "),
                   "a batch without BATCH");
        FUZZ_CHECK(d == RINGJOB_CONTINUE || d == RINGJOB_SUSPEND || d == RINGJOB_CHECKPOINT_EXIT,
                   "decision %d", d);
        FUZZ_CHECK(d != RINGJOB_SUSPEND || may_suspend, "suspend without SUSPEND");
        FUZZ_CHECK(d != RINGJOB_CHECKPOINT_EXIT || may_exit, "exit without CHECKPOINT_EXIT");
        FUZZ_CHECK(!exited || d == RINGJOB_CHECKPOINT_EXIT, "checkpoint-exit taken back");
        exited |= d == RINGJOB_CHECKPOINT_EXIT;
        if (d == RINGJOB_SUSPEND) {
            d = ringjob_suspended_wait();
            FUZZ_CHECK(d == RINGJOB_CONTINUE || d == RINGJOB_CHECKPOINT_EXIT || d == -1,
                       "after suspend %d", d);
        }
        if (d == RINGJOB_CHECKPOINT_EXIT) {
            FUZZ_CHECK(ringjob_checkpoint_done(step) == 0 || !ringjob_connected(), "done");
            break;
        }
    }
    ringjob_finalize();
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[108];
    if (size > 16384)
        return 0;
    if (!path[0]) {
        snprintf(path, sizeof(path), "/tmp/fuzz-ringjob-%d.sock", (int)getpid());
        setenv("RINGJOB_SOCKET", path, 1);
        setenv("RINGJOB_JOB_ID", "fuzz", 1);
        setenv("RINGJOB_CHECKPOINT_DIR", "/tmp", 1);
        unsetenv("OMPI_COMM_WORLD_RANK");
        unsetenv("OMPI_COMM_WORLD_SIZE");
        unsetenv("RINGJOB_WORLD_SIZE");
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    unlink(path);
    struct worker *w = calloc(1, sizeof(*w));
    FUZZ_CHECK(w, "out of memory");
    *w = (struct worker){.data = data, .size = size};
    w->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(w->lfd >= 0 && bind(w->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
                   listen(w->lfd, 1) == 0,
               "listen: %s", strerror(errno));
    pthread_t t;
    FUZZ_CHECK(pthread_create(&t, NULL, worker_main, w) == 0, "pthread_create");
    int connected = run_job(data, size);
    pthread_join(t, NULL);
    if (connected)
        check_sent(w);
    close(w->lfd);
    unlink(path);
    free(w);
    return 0;
}
