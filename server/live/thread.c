#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "model.h"
#include "round.h"
#include "sampler.h"
#include "store/db.h"
#include "wake.h"

#define RETRY_S 1.0

struct sched_thread {
    struct db_pool *db;
    PGconn *listen;   /* LISTEN ringmaster_sched; NULL or broken: the timer only */
    int listening;    /* LISTEN done on the current connection */
    int listen_retry; /* rounds to skip before reconnecting it */
    struct sched_models *models;
    pthread_t tid;
    int started;
    long rounds;
};

static void log_round(const struct sched_round_result *r)
{
    if (r->actions > 0 || r->nodes_down > 0)
        log_info("scheduler: round %lld (%s): %d jobs, %d changed, %d actions, %d nodes down,"
                 " %lld us",
                 r->round_id, r->policy, r->jobs, r->decisions, r->actions, r->nodes_down,
                 r->duration_us);
}

/* One round; returns the seconds to wait before the next. */
static double one_round(struct sched_thread *t, struct sched_config *cfg)
{
    char err[512] = "", herr[512];
    struct sched_round_result res;
    PGconn *c = db_acquire(t->db);
    int rc = c ? sched_config_load(c, cfg, err, sizeof(err)) : -1;
    memset(&res, 0, sizeof(res));
    if (rc == 0 && !cfg->paused)
        rc = sched_round_run(c, t->models, cfg, ++t->rounds, &res, err, sizeof(err));
    if (c && history_tick(c, herr, sizeof(herr)) < 0)
        log_error("scheduler: %s", herr);
    db_release(t->db, c);
    if (rc < 0) {
        log_error("scheduler: round failed: %s", c ? err : "database unreachable");
        return RETRY_S;
    }
    log_round(&res);
    if (!cfg->paused)
        sched_round_hist_observe((double)res.duration_us / 1e6);
    double wait = cfg->interval_s;
    return cfg->node_timeout_s / 2 < wait ? cfg->node_timeout_s / 2 : wait;
}

/* The listening connection's socket, (re)connecting it when needed; -1 when down. */
static int listen_fd(struct sched_thread *t)
{
    if (t->listening && PQstatus(t->listen) == CONNECTION_OK)
        return PQsocket(t->listen);
    t->listening = 0;
    if (t->listen_retry-- > 0)
        return -1;
    t->listen_retry = 10;
    if (t->listen && PQstatus(t->listen) != CONNECTION_OK)
        PQreset(t->listen);
    PGresult *r = NULL;
    if (t->listen && PQstatus(t->listen) == CONNECTION_OK)
        r = PQexec(t->listen, "LISTEN ringmaster_sched");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
        return -1;
    t->listening = 1;
    return PQsocket(t->listen);
}

/* Reads and forgets the notifications that arrived. */
static void drain(struct sched_thread *t)
{
    if (!t->listen || !PQconsumeInput(t->listen))
        return;
    PGnotify *n;
    while ((n = PQnotifies(t->listen)) != NULL)
        PQfreemem(n);
}

static void *run(void *arg)
{
    struct sched_thread *t = arg;
    struct sched_config cfg;
    double wait = 0;
    int rc;
    while ((rc = sched_wake_wait(wait, listen_fd(t))) >= 0) {
        if (rc == 2)
            drain(t);
        wait = one_round(t, &cfg);
    }
    return NULL;
}

struct sched_thread *sched_thread_create(const char *conninfo, char *err, size_t errlen)
{
    struct sched_thread *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (sched_wake_open() < 0) {
        snprintf(err, errlen, "scheduler wake-up: %s", strerror(errno));
        free(t);
        return NULL;
    }
    t->db = db_create(conninfo, 1, err, errlen);
    t->listen = PQconnectdb(conninfo);
    t->models = sched_models_create();
    if (!t->db || !t->models) {
        if (t->db)
            snprintf(err, errlen, "out of memory");
        goto error;
    }
    if (pthread_create(&t->tid, NULL, run, t) != 0) {
        snprintf(err, errlen, "cannot start the scheduler thread");
        goto error;
    }
    t->started = 1;
    return t;
error:
    sched_thread_destroy(t);
    return NULL;
}

void sched_thread_destroy(struct sched_thread *t)
{
    if (!t)
        return;
    if (t->started) {
        sched_wake_stop();
        pthread_join(t->tid, NULL);
    }
    sched_models_destroy(t->models);
    db_destroy(t->db);
    PQfinish(t->listen);
    sched_wake_close();
    free(t);
}
