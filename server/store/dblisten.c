/* dblisten: the LISTEN thread on its own connection: each notification's payload to a
 * callback, NULL after each (re)connection, reconnects with back-off. */
#include "dblisten.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "db.h"
#include "log.h"

struct dblisten {
    char *conninfo;
    char *listen_sql; /* LISTEN "channel" */
    dblisten_f fn;
    void *arg;
    PGconn *conn;   /* the thread's; NULL or broken while away */
    int stop_fd;    /* eventfd: readable once dblisten_destroy() began */
    double backoff; /* the wait before the next attempt after a failed one */
    int lost;       /* a failure was logged: log the recovery */
    pthread_t tid;
    int started;
};

/* Waits up to timeout_s (-1: for ever) for the connection's socket (fd >= 0) or the stop.
 * Returns 1 when the socket is readable, 0 on the timeout, -1 when stopping. */
static int wait_for(struct dblisten *l, int fd, double timeout_s)
{
    struct pollfd p[2] = {{.fd = l->stop_fd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    int ms = timeout_s < 0 ? -1 : (int)(timeout_s * 1000 + 0.5);
    int n = poll(p, fd >= 0 ? 2 : 1, ms);
    if (n < 0 && errno != EINTR)
        return -1;
    if (n > 0 && p[0].revents)
        return -1;
    return n > 0 && p[1].revents ? 1 : 0;
}

/* (Re)connects and runs LISTEN. Returns 0, or -1 (the connection is then left closed). */
static int connect_listen(struct dblisten *l)
{
    char err[256] = "";
    PQfinish(l->conn);
    l->conn = db_connect(l->conninfo, err, sizeof(err));
    PGresult *r = l->conn ? PQexec(l->conn, l->listen_sql) : NULL;
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok)
        return 0;
    if (!l->lost)
        log_warn("%s: cannot listen (%s); retrying with back-off", l->listen_sql,
                 l->conn ? PQerrorMessage(l->conn) : err);
    PQfinish(l->conn);
    l->conn = NULL;
    l->lost = 1;
    return -1;
}

/* Hands over every notification that arrived. Returns 0, or -1 when the connection broke. */
static int deliver(struct dblisten *l)
{
    if (!PQconsumeInput(l->conn))
        return -1;
    PGnotify *n;
    while ((n = PQnotifies(l->conn)) != NULL) {
        l->fn(l->arg, n->extra);
        PQfreemem(n);
    }
    return PQstatus(l->conn) == CONNECTION_OK ? 0 : -1;
}

static void *run(void *arg)
{
    struct dblisten *l = arg;
    for (;;) {
        if (!l->conn) {
            if (connect_listen(l) < 0) {
                if (wait_for(l, -1, l->backoff) < 0)
                    break;
                l->backoff = l->backoff * 2 > DB_RETRY_MAX_S ? DB_RETRY_MAX_S : l->backoff * 2;
                continue;
            }
            if (l->lost)
                log_info("%s: listening again", l->listen_sql);
            l->lost = 0;
            l->backoff = DB_RETRY_MIN_S;
            l->fn(l->arg, NULL);
        }
        int rc = wait_for(l, PQsocket(l->conn), -1);
        if (rc < 0)
            break;
        if (rc > 0 && deliver(l) < 0) {
            log_warn("%s: lost its connection; reconnecting", l->listen_sql);
            l->lost = 1;
            PQfinish(l->conn);
            l->conn = NULL;
        }
    }
    return NULL;
}

struct dblisten *dblisten_create(const char *conninfo, const char *channel, dblisten_f fn,
                                 void *arg, char *err, size_t errlen)
{
    struct dblisten *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->stop_fd = eventfd(0, EFD_CLOEXEC);
    l->conninfo = strdup(conninfo);
    size_t len = strlen(channel) * 2 + 16;
    l->listen_sql = malloc(len);
    l->fn = fn;
    l->arg = arg;
    l->backoff = DB_RETRY_MIN_S;
    if (l->stop_fd < 0 || !l->conninfo || !l->listen_sql) {
        snprintf(err, errlen, "listener for %s: %s", channel, strerror(errno));
        goto error;
    }
    /* An identifier from the code, quoted all the same (LISTEN takes no parameter). */
    char *q = l->listen_sql + snprintf(l->listen_sql, len, "LISTEN \"");
    for (const char *c = channel; *c; c++) {
        if (*c == '"')
            *q++ = '"';
        *q++ = *c;
    }
    strcpy(q, "\"");
    if (pthread_create(&l->tid, NULL, run, l) != 0) {
        snprintf(err, errlen, "cannot start the listener thread for %s", channel);
        goto error;
    }
    l->started = 1;
    return l;
error:
    dblisten_destroy(l);
    return NULL;
}

void dblisten_destroy(struct dblisten *l)
{
    if (!l)
        return;
    if (l->started) {
        uint64_t one = 1;
        if (write(l->stop_fd, &one, sizeof(one)) < 0)
            log_error("listener: cannot stop its thread: %s", strerror(errno));
        pthread_join(l->tid, NULL);
    }
    PQfinish(l->conn);
    if (l->stop_fd >= 0)
        close(l->stop_fd);
    free(l->conninfo);
    free(l->listen_sql);
    free(l);
}
