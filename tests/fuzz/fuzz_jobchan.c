/* Fuzz target: what the worker reads from a job's socket (worker/jobchan.c), over a real
 * unix socket. Input: what the job sends, with harness lines among it: a line "!s", "!r"
 * or "!c" gives the job the command suspend, resume or checkpoint-exit, "!b" a new batch
 * (256 at factor 1.5, jobchan_batch); "!t" takes the
 * reports; "!x" closes the job's end and connects again. After every step the channel's
 * state must be coherent, and every record the worker wrote back must be one of the
 * protocol's (docs/ringjob-protocol.md). */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "jobchan.h"

struct harness {
    struct jobchan *jc;
    int fd; /* the job's end */
    char back[4096];
    size_t back_len;
    int hellos;          /* well-formed-looking HELLO lines sent (no NUL in them) */
    size_t reports;      /* the same for REPORT lines */
    size_t taken;        /* reports the harness took */
};

static void check_back_line(const char *line)
{
    static const char *const ok[] = {"WELCOME 1", "SUSPEND", "RESUME", "CHECKPOINT_EXIT",
                                     "BATCH 256 1.5"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!strcmp(line, ok[i]))
            return;
    FUZZ_CHECK(0, "the worker wrote '%.80s'", line);
}

/* Reads what the worker wrote to the job and checks its records. */
static void read_back(struct harness *h)
{
    ssize_t n;
    while (h->fd >= 0 &&
           (n = recv(h->fd, h->back + h->back_len, sizeof(h->back) - 1 - h->back_len,
                     MSG_DONTWAIT)) > 0) {
        h->back_len += (size_t)n;
        char *nl;
        while ((nl = memchr(h->back, '\n', h->back_len))) {
            *nl = '\0';
            check_back_line(h->back);
            h->back_len -= (size_t)(nl + 1 - h->back);
            memmove(h->back, nl + 1, h->back_len);
        }
        FUZZ_CHECK(h->back_len < sizeof(h->back) - 1, "a record of the worker is too long");
    }
}

static void check_state(const struct harness *h)
{
    struct jobchan *jc = h->jc;
    enum jobchan_state s = jobchan_state(jc);
    FUZZ_CHECK(strcmp(jobchan_state_name(s), "unknown"), "state %d", (int)s);
    FUZZ_CHECK(jobchan_pending_reports(jc) <= JOBCHAN_REPORT_CAP, "reports");
    const char *id = jobchan_job_id(jc);
    FUZZ_CHECK(id && strlen(id) < 64 && !strpbrk(id, " \t\n"), "job id '%s'", id);
    FUZZ_CHECK(jobchan_world_size(jc) >= 0, "world %d", jobchan_world_size(jc));
    FUZZ_CHECK(jobchan_error(jc) != NULL, "no error text");
    /* Only a whole line that begins with the verb (and holds no NUL) is a record. */
    FUZZ_CHECK(h->hellos || (!strcmp(id, "-") && jobchan_world_size(jc) == 0),
               "a job id '%s' without a HELLO record", id);
    FUZZ_CHECK(h->taken + jobchan_pending_reports(jc) <= h->reports,
               "%zu reports from %zu REPORT records", h->taken + jobchan_pending_reports(jc),
               h->reports);
    if (!jobchan_connected(jc))
        FUZZ_CHECK(s == JOBCHAN_WAITING || s == JOBCHAN_GONE || s == JOBCHAN_CHECKPOINTED,
                   "not connected yet %s", jobchan_state_name(s));
}

/* Runs the channel until it has read everything the job sent (or dropped the job). */
static void pump(struct harness *h)
{
    for (int i = 0; i < 10000; i++) {
        struct pollfd fds[JOBCHAN_MAX_POLLFDS];
        int n = jobchan_pollfds(h->jc, fds, JOBCHAN_MAX_POLLFDS), unread = 0;
        if (jobchan_run(h->jc, 0) < 0)
            FUZZ_CHECK(jobchan_error(h->jc)[0], "a protocol error without text");
        read_back(h);
        check_state(h);
        if (n == 2 && jobchan_connected(h->jc) && ioctl(fds[1].fd, FIONREAD, &unread) == 0 &&
            unread == 0)
            return;
        if (!jobchan_connected(h->jc) && i > 0)
            return;
    }
    FUZZ_CHECK(0, "the channel does not read what the job sent");
}

static void connect_job(struct harness *h, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(h->fd >= 0 && connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
               "connect: %s", strerror(errno));
    h->back_len = 0;
    for (int i = 0; i < 1000 && !jobchan_connected(h->jc); i++)
        jobchan_run(h->jc, 1);
    FUZZ_CHECK(jobchan_connected(h->jc), "the channel does not accept");
}

static void send_all(struct harness *h, const uint8_t *p, size_t n)
{
    while (n && h->fd >= 0 && jobchan_connected(h->jc)) {
        ssize_t k = send(h->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return; /* the channel dropped the job */
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        }
        pump(h);
    }
    pump(h);
}

/* Counts the records a line may be, then sends it. */
static void send_line(struct harness *h, const uint8_t *p, size_t n)
{
    if (p[n - 1] == '\n' && !memchr(p, '\0', n)) {
        h->hellos += n > 6 && !memcmp(p, "HELLO ", 6);
        h->reports += n > 7 && !memcmp(p, "REPORT ", 7);
    }
    send_all(h, p, n);
}

static void command(struct harness *h, char c, const char *path)
{
    static const enum jobchan_cmd cmds[] = {JOBCHAN_SUSPEND, JOBCHAN_RESUME,
                                            JOBCHAN_CHECKPOINT_EXIT};
    const char *p = strchr("src", c);
    if (p && *p) {
        enum jobchan_state before = jobchan_state(h->jc);
        errno = 0;
        int rc = jobchan_command(h->jc, cmds[p - "src"]);
        FUZZ_CHECK(rc == 0 || (errno == EINVAL && jobchan_error(h->jc)[0]),
                   "command %c refused without EINVAL or text", c);
        FUZZ_CHECK(rc == 0 || jobchan_state(h->jc) == before, "a refused command moved state");
        pump(h);
    } else if (c == 'b') {
        enum jobchan_state before = jobchan_state(h->jc);
        errno = 0;
        int rc = jobchan_batch(h->jc, 256, 1.5);
        FUZZ_CHECK(rc == 0 || (errno == EINVAL && jobchan_error(h->jc)[0]),
                   "batch refused without EINVAL or text");
        FUZZ_CHECK(jobchan_state(h->jc) == before, "a batch moved state");
        pump(h);
        long step;
        long m = jobchan_batched(h->jc, &step);
        FUZZ_CHECK(m >= 0 && (m > 0 || step == -1), "batched %ld at %ld", m, step);
    } else if (c == 't') {
        struct jobchan_report r[64];
        size_t before = jobchan_pending_reports(h->jc), n = jobchan_take_reports(h->jc, r, 64);
        FUZZ_CHECK(n == (before < 64 ? before : 64), "took %zu of %zu", n, before);
        h->taken += n;
    } else if (c == 'x') {
        close(h->fd);
        h->fd = -1;
        pump(h);
        FUZZ_CHECK(!jobchan_connected(h->jc), "still connected after the job closed");
        connect_job(h, path);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[108];
    char err[256];
    if (!path[0])
        snprintf(path, sizeof(path), "/tmp/fuzz-jobchan-%d.sock", (int)getpid());
    struct harness h = {.fd = -1};
    h.jc = jobchan_create(path, err, sizeof(err));
    FUZZ_CHECK(h.jc, "jobchan_create: %s", err);
    connect_job(&h, path);
    size_t pos = 0;
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t end = nl ? (size_t)(nl - data) + 1 : size;
        if (data[pos] == '!' && end - pos >= 2)
            command(&h, (char)data[pos + 1], path);
        else
            send_line(&h, data + pos, end - pos);
        pos = end;
    }
    if (h.fd >= 0)
        close(h.fd);
    h.fd = -1;
    pump(&h);
    check_state(&h);
    jobchan_destroy(h.jc);
    return 0;
}
