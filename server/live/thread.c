/* thread: the scheduler thread (live.h): leadership by advisory lock, its rounds on the timer
 * and on wake-ups (signals, LISTEN notifications) paced by duty.h, and its start and stop. */
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "duty.h"
#include "log.h"
#include "model.h"
#include "monotime.h"
#include "forecast_thread.h"
#include "retention.h"
#include "round.h"
#include "sampler.h"
#include "store/db.h"
#include "wake.h"

#define RETRY_S 1.0
#define SLOW_ROUND_US 250000 /* a round this long is logged with where its time went */

struct live_thread {
    struct db_pool *db;
    char *conninfo;
    char *name;          /* this server's name: its connection's application_name */
    int leads;           /* 1: this server ran the last round; 0: another leads; -1: unknown */
    PGconn *listen;      /* LISTEN ringmaster_sched; NULL or broken: the timer only */
    int listening;       /* LISTEN done on the current connection */
    int lost;            /* notifications may have been missed: a round at once */
    double listen_at;    /* no reconnect attempt before this (monotonic seconds) */
    double listen_wait;  /* the back-off after the next failed attempt */
    atomic_int db_back;  /* set by live_thread_db_restarting(t, 0): retry without waiting */
    struct live_models *models;
    pthread_t tid;
    int started;
    long rounds;
    struct retention_thread *retention; /* thins the metrics, off this thread (retention.h) */
    struct forecast_thread *forecast;   /* the forecasts, off this thread (forecast_thread.h) */
};

/* A round that acted, or a slow one (what its time went to: snapshot, refits, decision,
 * write). */
static void log_round(const struct live_round_result *r)
{
    if (r->actions > 0 || r->nodes_down > 0 || r->duration_us >= SLOW_ROUND_US)
        log_info("scheduler: round %lld (%s): %d jobs, %d changed, %d actions, %d nodes down,"
                 " %lld us (snapshot %lld, %d refits %lld, decision %lld, write %lld)",
                 r->round_id, r->policy, r->jobs, r->decisions, r->actions, r->nodes_down,
                 r->duration_us, r->snap_us, r->refits, r->refit_us, r->decide_us, r->write_us);
}

/* Whether this server runs the rounds (docs/operations.md, "A second head node"): the one
 * whose scheduler connection holds the advisory lock SCHED_LEADER_LOCK. A session lock: it
 * goes when that connection does (the server stopped or died, or lost the database), and the
 * next server to try takes it. Sets the connection's application_name to the server's name,
 * which the round's audit row takes (sched_rounds.server). Returns 1 (leads), 0, or -1. */
static int lead(struct live_thread *t, PGconn *c)
{
    const char *p[] = {t->name};
    PGresult *r = db_exec(c,
                          "SELECT set_config('application_name', $1, false), "
                          LIVE_LOCK_HELD_SQL(LIVE_LEADER_LOCK_OBJ),
                          1, p);
    int leads = db_ok(r) && PQntuples(r) == 1 ? PQgetvalue(r, 0, 1)[0] == 't' : -1;
    PQclear(r);
    if (leads >= 0 && leads != t->leads)
        log_info(leads ? "scheduler: %s runs the rounds (it holds the leader lock)"
                       : "scheduler: another server runs the rounds; %s stands by",
                 t->name);
    if (leads >= 0)
        t->leads = leads;
    return leads;
}

/* One round; returns the seconds to wait before the next. */
static double one_round(struct live_thread *t, struct settings *cfg)
{
    char err[512] = "", herr[512];
    struct live_round_result res;
    PGconn *c = db_acquire(t->db);
    int leads = c ? lead(t, c) : -1;
    if (leads <= 0) { /* standing by, or the database is away: try again soon */
        db_release(t->db, c);
        if (leads < 0)
            log_error("scheduler: %s", c ? "cannot ask for the leader lock" : "database unreachable");
        return RETRY_S;
    }
    int rc = live_config_load(c, cfg, err, sizeof(err));
    memset(&res, 0, sizeof(res));
    if (rc == 0 && !cfg->paused)
        rc = live_round_run(c, t->models, cfg, ++t->rounds, t->forecast, &res, err,
                            sizeof(err));
    if (c && history_tick(c, herr, sizeof(herr)) < 0)
        log_error("scheduler: %s", herr);
    db_release(t->db, c);
    if (rc < 0) {
        log_error("scheduler: round failed: %s", c ? err : "database unreachable");
        return RETRY_S;
    }
    log_round(&res);
    if (!cfg->paused)
        live_round_hist_observe((double)res.duration_us / 1e6);
    double wait = cfg->interval_s;
    return cfg->node_timeout_s / 2 < wait ? cfg->node_timeout_s / 2 : wait;
}

/* (Re)connects the listening connection and runs LISTEN. Returns 0, or -1 after a failed
 * attempt, with the next one set DB_RETRY_MIN_S doubling to DB_RETRY_MAX_S later. */
static int listen_connect(struct live_thread *t)
{
    char err[256] = "";
    if (t->listen)
        PQreset(t->listen);
    else
        t->listen = db_connect(t->conninfo, err, sizeof(err));
    PGresult *r = NULL;
    if (t->listen && PQstatus(t->listen) == CONNECTION_OK)
        r = PQexec(t->listen, "LISTEN ringmaster_sched");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok) {
        if (t->lost)
            log_info("scheduler: listening again");
        t->listen_wait = DB_RETRY_MIN_S;
        return 0;
    }
    if (!t->lost)
        log_warn("scheduler: lost its LISTEN connection; reconnecting with back-off");
    t->lost = 1;
    t->listen_at = monotime_s() + t->listen_wait;
    t->listen_wait = t->listen_wait * 2 > DB_RETRY_MAX_S ? DB_RETRY_MAX_S : t->listen_wait * 2;
    return -1;
}

/* The listening connection's socket, (re)connecting it when its back-off allows; -1 when
 * down. The first time it works again after a loss, *round is set: what was notified
 * meanwhile is lost, so a round runs at once. */
static int listen_fd(struct live_thread *t, int *round)
{
    if (atomic_exchange(&t->db_back, 0)) {
        t->listen_at = 0;
        t->listen_wait = DB_RETRY_MIN_S;
    }
    if (t->listening && PQstatus(t->listen) == CONNECTION_OK)
        return PQsocket(t->listen);
    if (t->listening) {
        t->listening = 0;
        t->lost = 1;
        t->listen_at = 0;
    }
    if (monotime_s() < t->listen_at || listen_connect(t) < 0)
        return -1;
    t->listening = 1;
    *round = *round || t->lost;
    t->lost = 0;
    return PQsocket(t->listen);
}

/* The wait before the next round, shortened to the listening connection's next attempt. */
static double wait_for(const struct live_thread *t, double wait)
{
    if (t->listening)
        return wait;
    double until = t->listen_at - monotime_s();
    return until < 0.01 ? 0.01 : until < wait ? until : wait;
}

/* Reads and forgets the notifications that arrived. */
static void drain(struct live_thread *t)
{
    if (!t->listen || !PQconsumeInput(t->listen))
        return;
    PGnotify *n;
    while ((n = PQnotifies(t->listen)) != NULL)
        PQfreemem(n);
}

/* Rounds run when due (the timer) and on a wake-up (a signal or a notification). A wake-up
 * before the time the round budget allows (duty.h: at once after a quiet while) waits until
 * then, and every wake-up of that while joins the one round: in a burst of submissions (each
 * wakes the thread) the rounds take at most a quarter of the time instead of all of it (a
 * round over thousands of jobs costs ~100 ms on a 2-core machine). While it waits, those
 * signals do not wake it again (wake.h: the round rearms them as it begins). */
static void *run(void *arg)
{
    struct live_thread *t = arg;
    struct settings cfg;
    struct live_duty duty;
    live_duty_init(&duty);
    double wait = 0, left = 0, due = monotime_s(), settled = 0;
    int rc = 1, round = 1;
    for (;;) {
        int fd = listen_fd(t, &round);
        if (!round) {
            left = due - monotime_s();
            rc = live_wake_wait(left > 0 ? wait_for(t, left) : 0, fd);
            if (rc < 0)
                break;
            if (rc == 2)
                drain(t);
            if (rc > 0 && settled < due)
                due = settled; /* in the past after a quiet while: at once */
            round = monotime_s() >= due;
            if (!round)
                continue; /* settling, or woken to reconnect the listening connection */
        }
        live_wake_rearm(); /* what is signalled from now on comes after this round's reads */
        double start = monotime_s();
        wait = one_round(t, &cfg);
        double end = monotime_s();
        due = end + wait;
        settled = live_duty_round(&duty, start, end);
        round = 0;
    }
    return NULL;
}

struct live_thread *live_thread_create(const char *conninfo, const char *name, char *err,
                                        size_t errlen)
{
    struct live_thread *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (live_wake_open() < 0) {
        snprintf(err, errlen, "scheduler wake-up: %s", strerror(errno));
        free(t);
        return NULL;
    }
    t->db = db_create(conninfo, 1, err, errlen);
    t->conninfo = strdup(conninfo);
    t->name = strdup(name ? name : "ringmasterd");
    t->leads = -1;
    t->listen_wait = DB_RETRY_MIN_S;
    t->models = live_models_create();
    if (!t->db || !t->models || !t->conninfo || !t->name) {
        if (t->db)
            snprintf(err, errlen, "out of memory");
        goto error;
    }
    t->retention = retention_thread_create(conninfo, err, errlen);
    if (!t->retention)
        goto error;
    t->forecast = forecast_thread_create(conninfo, err, errlen);
    if (!t->forecast)
        goto error;
    if (pthread_create(&t->tid, NULL, run, t) != 0) {
        snprintf(err, errlen, "cannot start the scheduler thread");
        goto error;
    }
    t->started = 1;
    return t;
error:
    live_thread_destroy(t);
    return NULL;
}

void live_thread_db_restarting(struct live_thread *t, int restarting)
{
    db_set_restarting(t->db, restarting);
    retention_thread_db_restarting(t->retention, restarting);
    forecast_thread_db_restarting(t->forecast, restarting);
    if (!restarting) {
        atomic_store(&t->db_back, 1);
        live_wake_signal();
    }
}

void live_thread_destroy(struct live_thread *t)
{
    if (!t)
        return;
    if (t->started) {
        live_wake_stop();
        pthread_join(t->tid, NULL);
    }
    retention_thread_destroy(t->retention);
    forecast_thread_destroy(t->forecast);
    live_models_destroy(t->models);
    db_destroy(t->db);
    PQfinish(t->listen);
    free(t->conninfo);
    free(t->name);
    live_wake_close();
    free(t);
}
