/* pgsup: the supervisor thread of an embedded cluster: waits on the postmaster's pidfd and
 * starts the cluster again with back-off when it exits, telling the owner DOWN and UP. */
#include "pgsup.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errtext.h"
#include "log.h"
#include "monotime.h"
#include "pgcluster.h"

#define CHECK_MS 500 /* the pid is checked this often besides the pidfd */

struct pgsup {
    struct pgcluster *c;
    pgsup_event_f *cb;
    void *arg;
    int stopfd; /* an eventfd: readable once pgsup_destroy() asks the thread to end */
    pthread_t tid;
    int started;
    atomic_uint restarts;
};

/* Waits up to ms for the stop request, or for fd (when >= 0) to become readable. Returns
 * -1 when stopping, 1 when fd is readable, 0 on the timeout. */
static int wait_on(const struct pgsup *s, int fd, int ms)
{
    struct pollfd p[2] = {{.fd = s->stopfd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    int n = poll(p, fd >= 0 ? 2 : 1, ms);
    if (n > 0 && p[0].revents)
        return -1;
    return n > 0 && fd >= 0 && p[1].revents ? 1 : 0;
}

/* Waits until the postmaster pid exits, reaping it when it is our child. Returns 0 when it
 * is gone, -1 when stopping. */
static int wait_exit(const struct pgsup *s, long pid)
{
    int pfd = (int)pidfd_open((pid_t)pid, 0);
    int rc = 0;
    for (;;) {
        rc = wait_on(s, pfd, CHECK_MS);
        if (rc != 0)
            break;
        if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
            break;
        if (waitpid((pid_t)pid, NULL, WNOHANG) == pid)
            break; /* a zombie child of ours (without a pidfd) */
    }
    if (pfd >= 0)
        close(pfd);
    if (rc >= 0)
        waitpid((pid_t)pid, NULL, WNOHANG); /* ours when we are its subreaper */
    return rc < 0 ? -1 : 0;
}

static void tell(const struct pgsup *s, enum pgsup_event ev)
{
    if (s->cb)
        s->cb(s->arg, ev);
}

/* Starts the cluster until it runs, with back-off. Returns 0, or -1 when stopping. */
static int bring_back(struct pgsup *s)
{
    double t0 = monotime_s(), wait = PGSUP_RETRY_MIN_S;
    char err[512];
    for (unsigned attempt = 1;; attempt++) {
        if (pgcluster_start(s->c, err, sizeof(err)) == 0) {
            atomic_fetch_add(&s->restarts, 1);
            log_info("pgsup: embedded PostgreSQL running again after %.1f s (attempt %u)",
                     monotime_s() - t0, attempt);
            return 0;
        }
        log_error("pgsup: restart attempt %u failed, next in %.1f s: %s", attempt, wait, err);
        if (wait_on(s, -1, (int)(wait * 1000)) < 0)
            return -1;
        wait = wait * 2 > PGSUP_RETRY_MAX_S ? PGSUP_RETRY_MAX_S : wait * 2;
    }
}

#define PGSUP_SETTLE_MS 500

static void *run(void *arg)
{
    struct pgsup *s = arg;
    for (;;) {
        long pid = pgcluster_postmaster_pid(s->c);
        if (pid > 0 && wait_exit(s, pid) < 0)
            break;
        long now = pgcluster_postmaster_pid(s->c);
        if (now > 0 && now != pid)
            continue; /* someone else started it again meanwhile: watch the new one */
        log_error("pgsup: embedded PostgreSQL (pid %ld) is gone; restarting it", pid);
        tell(s, PGSUP_DOWN);
        /* A pg_ctl stop that ended it waits for its pid file to go, looking every 0.1 s: a
         * new postmaster's pid file written first would keep it waiting for its whole
         * timeout (seen: 120 s, then failure), so it is given time to see the stop. */
        if (wait_on(s, -1, PGSUP_SETTLE_MS) < 0 || bring_back(s) < 0)
            break;
        tell(s, PGSUP_UP);
    }
    return NULL;
}

int pgsup_adopt(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

struct pgsup *pgsup_create(struct pgcluster *c, pgsup_event_f *cb, void *arg, char *err,
                           size_t errlen)
{
    struct pgsup *s = calloc(1, sizeof(*s));
    if (!s) {
        errtext_set(err, errlen, "out of memory");
        return NULL;
    }
    s->c = c;
    s->cb = cb;
    s->arg = arg;
    s->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->stopfd < 0) {
        errtext_set(err, errlen, "pgsup: eventfd: %s", strerror(errno));
        goto error;
    }
    if (pthread_create(&s->tid, NULL, run, s) != 0) {
        errtext_set(err, errlen, "pgsup: cannot start the supervisor thread");
        goto error;
    }
    s->started = 1;
    return s;
error:
    pgsup_destroy(s);
    return NULL;
}

void pgsup_destroy(struct pgsup *s)
{
    if (!s)
        return;
    if (s->started) {
        uint64_t one = 1;
        if (write(s->stopfd, &one, sizeof(one)) < 0)
            log_error("pgsup: cannot stop the supervisor: %s", strerror(errno));
        pthread_join(s->tid, NULL);
    }
    if (s->stopfd >= 0)
        close(s->stopfd);
    free(s);
}

unsigned pgsup_restarts(const struct pgsup *s)
{
    return atomic_load(&s->restarts);
}
