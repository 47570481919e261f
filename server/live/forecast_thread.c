/* forecast_thread: the forecasts refreshed off the scheduler thread (forecast_thread.h): the
 * round's snapshot copied, the core's outlook_run() on it under a duty cycle, the forecasts
 * written and the earlier ones scored. */
#include "forecast_thread.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "log.h"
#include "sched_estimate.h"
#include "simulate/outlook.h"
#include "store/db.h"

#define FORECAST_NICE 10

/* A snapshot and everything it points to, owned. */
struct fc_copy {
    struct sched_snapshot snap;
    struct sched_node *nodes;
    struct sched_job *jobs;
    struct sched_slot *slots;
    struct sched_type_speed *types;
    struct sched_user *users;
    double *finished;
    const struct sched_policy_ops *policy;
    double interval_s;
};

struct forecast_thread {
    struct db_pool *db;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* an offer, or stop (CLOCK_MONOTONIC) */
    atomic_bool stop;
    atomic_bool want;      /* ready for a snapshot */
    struct fc_copy *offer; /* under mu */
    pthread_t tid;
    int started, inited;
    /* the pass under way (this thread only): the CPU clock at the start of its current run
     * (< 0: none yet) and the seconds it slept between its runs; the spreads it measured */
    double run_c0, slept_s;
    double spread, declared_spread;
    /* the last pass, under mu, for a submission's forecast (live_forecast_submission()): its
     * snapshot, the spreads it ran with and the CPU seconds one of its runs took */
    struct fc_copy *last;
    double last_spread, last_declared_spread, last_run_cpu_s;
};

/* The thread whose last pass a submission's forecast runs on (one a server), under reg_mu. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct forecast_thread *reg;

static void copy_free(struct fc_copy *c)
{
    if (!c)
        return;
    free(c->nodes);
    free(c->jobs);
    free(c->slots);
    free(c->types);
    free(c->users);
    free(c->finished);
    free(c);
}

static void *dup_of(const void *p, size_t n, size_t size)
{
    void *q = malloc(n ? n * size : 1);
    if (q && n)
        memcpy(q, p, n * size);
    return q;
}

/* Points the copy's jobs at its own slots and GPU-model speeds. */
static void relink(struct fc_copy *c)
{
    size_t ns = 0, nt = 0;
    for (size_t i = 0; i < c->snap.njobs; i++) {
        struct sched_job *j = &c->jobs[i];
        if (j->slots && j->cur_gpus > 0) {
            memcpy(c->slots + ns, j->slots, (size_t)j->cur_gpus * sizeof(*c->slots));
            j->slots = c->slots + ns;
            ns += (size_t)j->cur_gpus;
        }
        if (j->type_speeds && j->ntype_speeds > 0) {
            memcpy(c->types + nt, j->type_speeds, j->ntype_speeds * sizeof(*c->types));
            j->type_speeds = c->types + nt;
            nt += j->ntype_speeds;
        }
    }
}

static struct fc_copy *copy_of(const struct sched_snapshot *s)
{
    struct fc_copy *c = calloc(1, sizeof(*c));
    size_t ns = 0, nt = 0;
    for (size_t i = 0; i < s->njobs; i++) {
        ns += s->jobs[i].slots && s->jobs[i].cur_gpus > 0 ? (size_t)s->jobs[i].cur_gpus : 0;
        nt += s->jobs[i].type_speeds ? s->jobs[i].ntype_speeds : 0;
    }
    if (!c)
        return NULL;
    c->snap = *s;
    c->nodes = dup_of(s->nodes, s->nnodes, sizeof(*c->nodes));
    c->jobs = dup_of(s->jobs, s->njobs, sizeof(*c->jobs));
    c->slots = malloc((ns ? ns : 1) * sizeof(*c->slots));
    c->types = malloc((nt ? nt : 1) * sizeof(*c->types));
    c->users = dup_of(s->users, s->users ? s->nusers : 0, sizeof(*c->users));
    c->finished =
        dup_of(s->finished_run_s, s->finished_run_s ? s->nfinished : 0, sizeof(*c->finished));
    if (!c->nodes || !c->jobs || !c->slots || !c->types || !c->users || !c->finished) {
        copy_free(c);
        return NULL;
    }
    relink(c);
    c->snap.nodes = c->nodes;
    c->snap.jobs = c->jobs;
    c->snap.users = c->users;
    c->snap.nusers = s->users ? s->nusers : 0;
    c->snap.finished_run_s = c->finished;
    c->snap.nfinished = s->finished_run_s ? s->nfinished : 0;
    return c;
}

int forecast_thread_wants(struct forecast_thread *t)
{
    return t && atomic_load(&t->want);
}

void forecast_thread_offer(struct forecast_thread *t, const struct sched_snapshot *snap,
                           const struct sched_policy_ops *policy, double interval_s)
{
    if (!t || !policy || !atomic_load(&t->want))
        return;
    struct fc_copy *c = copy_of(snap);
    if (!c)
        return; /* out of memory: the next round offers again */
    c->policy = policy;
    c->interval_s = interval_s > 0 ? interval_s : 60.0;
    pthread_mutex_lock(&t->mu);
    struct fc_copy *old = t->offer;
    t->offer = c;
    atomic_store(&t->want, false);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    copy_free(old);
}

/* ---- the database ---- */

/* The spreads measured on the latest completed jobs' estimate errors (sql/014: the mean of
 * |predicted - actual finish| / time to go over the predictions kept of each), declared
 * lengths apart from the rest. */
static void measured_spread(PGconn *c, struct outlook_config *oc)
{
    char lim[16];
    snprintf(lim, sizeof(lim), "%d", FORECAST_SPREAD_JOBS);
    const char *p[] = {lim};
    PGresult *r = db_exec(c,
                          "SELECT source = 'declared', count(*), avg(least(e, 5)) FROM (SELECT"
                          " estimate_source source, estimate_error e FROM jobs WHERE state ="
                          " 'COMPLETED' AND estimate_error IS NOT NULL ORDER BY finished_at DESC"
                          " LIMIT $1::int) s GROUP BY 1",
                          1, p);
    for (int i = 0; db_ok(r) && i < PQntuples(r); i++) {
        long n = strtol(PQgetvalue(r, i, 1), NULL, 10);
        double e = strtod(PQgetvalue(r, i, 2), NULL);
        double *to = PQgetvalue(r, i, 0)[0] == 't' ? &oc->declared_spread : &oc->spread;
        *to = outlook_spread(n, e, *to);
    }
    PQclear(r);
}

/* Appends v (< 0: NULL) to the array literal at *at. */
static void put(char **at, int first, double v)
{
    *at += sprintf(*at, v >= 0 ? "%s%.3f" : "%sNULL", first ? "" : ",", v);
}

/* The forecasts' five array literals (ids, then the four times in epoch seconds). */
static char *arrays_of(const struct outlook *o, char *out[5])
{
    size_t room = 32 * (o->njobs + 1);
    char *buf = malloc(5 * room);
    if (!buf)
        return NULL;
    for (int k = 0; k < 5; k++) {
        out[k] = buf + (size_t)k * room;
        char *at = out[k];
        *at++ = '{';
        for (size_t i = 0; i < o->njobs; i++) {
            const struct outlook_job *j = &o->jobs[i];
            if (k == 0)
                at += sprintf(at, "%s%lld", i ? "," : "", (long long)j->id);
            else
                put(&at, i == 0,
                    k == 1   ? j->start_p50
                    : k == 2 ? j->start_p90
                    : k == 3 ? j->finish_p50
                             : j->finish_p90);
        }
        strcpy(at, "}");
    }
    return buf;
}

#define TS(n) "CASE WHEN " n " IS NULL THEN NULL ELSE to_timestamp(" n ") END"
/* A start: only of a job still PENDING when written. */
#define PENDING_TS(n) "CASE WHEN j.state = 'PENDING' THEN " TS(n) " END"

/* $1 the ids, $2..$5 start P50, P90, finish P50, P90 (epoch seconds or NULL), $6 as of: the
 * jobs that have not ended since the snapshot. */
/* clang-format off */
static const char insert_sql[] =
    "INSERT INTO job_forecasts (job_id, start_p50, start_p90, finish_p50, finish_p90, as_of)"
    " SELECT u.id, " PENDING_TS("u.s50") ", " PENDING_TS("u.s90") ", " TS("u.f50") ", "
    TS("u.f90") ", to_timestamp($6::float8)"
    " FROM unnest($1::bigint[], $2::float8[], $3::float8[], $4::float8[], $5::float8[])"
    " u(id, s50, s90, f50, f90) JOIN jobs j ON j.id = u.id"
    " WHERE j.state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') ON CONFLICT (job_id) DO NOTHING";
/* clang-format on */

/* The forecasts of the pass (as of `now`) in place of the last ones, and the marks to score
 * later, in one transaction. */
static int write_forecasts(PGconn *c, const struct outlook *o, double now)
{
    char *a[5], as_of[32], every[16];
    char *buf = arrays_of(o, a);
    if (!buf)
        return -1;
    snprintf(as_of, sizeof(as_of), "%.3f", now);
    snprintf(every, sizeof(every), "%d", FORECAST_MARK_EVERY_S);
    const char *p[] = {a[0], a[1], a[2], a[3], a[4], as_of};
    const char *pm[] = {every};
    int rc = db_command(c, "BEGIN");
    /* not the forecasts of jobs submitted since the snapshot: a submission's own
     * (submit_deadline.h) stays until a pass that saw the job */
    const char *pd[] = {as_of};
    if (rc == 0)
        rc = db_command_params(c,
                               "DELETE FROM job_forecasts f WHERE NOT EXISTS (SELECT 1 FROM jobs"
                               " j WHERE j.id = f.job_id AND j.submitted_at >"
                               " to_timestamp($1::float8))",
                               1, pd);
    if (rc == 0)
        rc = db_command_params(c, insert_sql, 6, p);
    if (rc == 0)
        rc = db_command_params(
            c,
            "INSERT INTO forecast_marks (job_id, made_at, running, start_p50, start_p90,"
            " finish_p50, finish_p90) SELECT f.job_id, f.as_of, f.start_p50 IS NULL AND"
            " j.state = 'RUNNING', f.start_p50, f.start_p90, f.finish_p50, f.finish_p90"
            " FROM job_forecasts f JOIN jobs j ON j.id = f.job_id WHERE (f.start_p50 IS NOT"
            " NULL OR f.finish_p50 IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM forecast_marks m"
            " WHERE m.job_id = f.job_id AND m.made_at > f.as_of - make_interval(secs =>"
            " $1::int))",
            1, pm);
    if (rc == 0)
        rc = db_command(c, "COMMIT");
    if (rc < 0)
        db_command(c, "ROLLBACK");
    free(buf);
    return rc;
}

/* Scores the marks of the jobs that started since they were made (their next start), and of
 * those that completed; drops the marks of ended jobs and the scores past keeping. */
static int score(PGconn *c)
{
    char days[16];
    snprintf(days, sizeof(days), "%d", FORECAST_SCORES_DAYS);
    const char *p[] = {days};
    static const char *const sql[] = {
        "WITH s AS (SELECT m.job_id, m.made_at, m.start_p50, m.start_p90, x.at FROM"
        " forecast_marks m CROSS JOIN LATERAL (SELECT min(e.at) at FROM job_events e WHERE"
        " e.job_id = m.job_id AND e.to_state = 'RUNNING' AND e.at >= m.made_at) x WHERE"
        " m.start_p50 IS NOT NULL AND x.at IS NOT NULL), i AS (INSERT INTO forecast_scores"
        " (job_id, event, made_at, lead_s, error_s, within_p90) SELECT job_id, 'start',"
        " made_at, extract(epoch FROM at - made_at), extract(epoch FROM at - start_p50),"
        " at <= start_p90 FROM s) UPDATE forecast_marks m SET start_p50 = NULL, start_p90 ="
        " NULL FROM s WHERE m.job_id = s.job_id AND m.made_at = s.made_at",
        "INSERT INTO forecast_scores (job_id, event, made_at, lead_s, error_s, within_p90,"
        " log_ratio) SELECT m.job_id, 'finish', m.made_at, extract(epoch FROM j.finished_at -"
        " m.made_at), extract(epoch FROM j.finished_at - m.finish_p50), j.finished_at <="
        " m.finish_p90, CASE WHEN m.running AND j.finished_at > m.made_at AND m.finish_p50 >"
        " m.made_at THEN ln(extract(epoch FROM j.finished_at - m.made_at) / extract(epoch FROM"
        " m.finish_p50 - m.made_at)) END FROM forecast_marks m JOIN jobs j ON j.id = m.job_id"
        " WHERE j.state = 'COMPLETED' AND m.finish_p50 IS NOT NULL AND j.finished_at >="
        " m.made_at",
        "DELETE FROM forecast_marks m USING jobs j WHERE j.id = m.job_id AND j.state IN"
        " ('COMPLETED', 'FAILED', 'CANCELLED')",
    };
    if (db_command(c, "BEGIN") < 0)
        return -1;
    for (size_t k = 0; k < sizeof(sql) / sizeof(sql[0]); k++)
        if (db_command(c, sql[k]) < 0) {
            db_command(c, "ROLLBACK");
            return -1;
        }
    if (db_command(c, "COMMIT") < 0)
        return -1;
    return db_command_params(c,
                             "DELETE FROM forecast_scores WHERE scored_at < now() -"
                             " make_interval(days => $1::int)",
                             1, p);
}

/* ---- the pass ---- */

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct fc_copy *wait_for(struct forecast_thread *t, double s, int wait_offer);

/* Before each of the pass's runs (outlook_config.stop): the duty cycle at the grain of one run,
 * FORECAST_IDLE_FACTOR times the CPU the run before took, asleep. A pass over 5,000 jobs is
 * minutes of CPU: as one burst it took half a core beside a busy head node's rounds, however
 * niced (make bench-scale: ringmasterd 18 -> 73 % of a core, round p50 163 -> 276 ms). */
static int stopping(void *arg)
{
    struct forecast_thread *t = arg;
    if (t->run_c0 >= 0) {
        double s = FORECAST_IDLE_FACTOR * (cpu_s() - t->run_c0);
        t->slept_s += s;
        wait_for(t, s, 0);
    }
    t->run_c0 = cpu_s();
    return atomic_load(&t->stop);
}

/* One pass over the copy; returns the CPU seconds it took. */
static double pass(struct forecast_thread *t, const struct fc_copy *copy)
{
    double c0 = cpu_s();
    t->run_c0 = -1;
    t->slept_s = 0;
    char err[512] = "";
    struct outlook_config oc;
    outlook_config_init(&oc);
    oc.policy = copy->policy;
    oc.runs = FORECAST_RUNS;
    /* rounds come at each completion anyway: the periodic one at least every minute, so that a
     * short live interval (1 s) does not make a week's horizon 600,000 rounds a run */
    oc.interval_s = fmax(copy->interval_s, FORECAST_ROUND_MIN_S);
    oc.stop = stopping;
    oc.stop_arg = t;
    oc.seed = (uint64_t)copy->snap.seed + 1;
    PGconn *c = db_acquire(t->db);
    if (!c)
        return cpu_s() - c0;
    measured_spread(c, &oc);
    t->spread = oc.spread;
    t->declared_spread = oc.declared_spread;
    struct outlook *o = outlook_run(&copy->snap, &oc, err, sizeof(err));
    if (!o && !atomic_load(&t->stop))
        log_error("forecast: %s", err);
    if (o && write_forecasts(c, o, copy->snap.now) < 0)
        log_error("forecast: cannot write the forecasts: %s", PQerrorMessage(c));
    if (score(c) < 0)
        log_error("forecast: cannot score the forecasts: %s", PQerrorMessage(c));
    db_release(t->db, c);
    outlook_destroy(o);
    return cpu_s() - c0;
}

static struct timespec mono_after(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

/* Sleeps until stop or the deadline (wait_offer: until an offer comes). */
static struct fc_copy *wait_for(struct forecast_thread *t, double s, int wait_offer)
{
    struct timespec until = mono_after(s);
    struct fc_copy *c = NULL;
    pthread_mutex_lock(&t->mu);
    while (!atomic_load(&t->stop) && !(wait_offer && t->offer))
        if (pthread_cond_timedwait(&t->cv, &t->mu, &until) != 0)
            break;
    if (wait_offer) {
        c = t->offer;
        t->offer = NULL;
    }
    pthread_mutex_unlock(&t->mu);
    return c;
}

static void *run(void *arg)
{
    struct forecast_thread *t = arg;
    /* below the HTTP threads and the rounds: Linux gives each thread its own nice */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FORECAST_NICE) < 0)
        log_warn("forecast: cannot lower the thread's priority");
    while (!atomic_load(&t->stop)) {
        atomic_store(&t->want, true);
        struct fc_copy *c = wait_for(t, 3600, 1);
        if (!c)
            continue;
        double spent = pass(t, c);
        /* kept for the submissions' forecasts until the next pass */
        pthread_mutex_lock(&t->mu);
        struct fc_copy *old = t->last;
        t->last = c;
        t->last_spread = t->spread;
        t->last_declared_spread = t->declared_spread;
        t->last_run_cpu_s = spent / FORECAST_RUNS;
        pthread_mutex_unlock(&t->mu);
        copy_free(old);
        /* the rest of the cycle: what the sleeps between its runs did not already give */
        wait_for(t, fmax(FORECAST_IDLE_FACTOR * spent - t->slept_s, FORECAST_MIN_PERIOD_S), 0);
    }
    return NULL;
}

struct forecast_thread *forecast_thread_create(const char *conninfo, char *err, size_t errlen)
{
    struct forecast_thread *t = calloc(1, sizeof(*t));
    pthread_condattr_t a;
    if (!t || pthread_condattr_init(&a) != 0) {
        snprintf(err, errlen, "out of memory");
        free(t);
        return NULL;
    }
    atomic_init(&t->stop, false);
    atomic_init(&t->want, false);
    int ok =
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&t->cv, &a) == 0;
    pthread_condattr_destroy(&a);
    if (!ok || pthread_mutex_init(&t->mu, NULL) != 0) {
        if (ok)
            pthread_cond_destroy(&t->cv);
        snprintf(err, errlen, "forecast: cannot make a condition variable");
        free(t);
        return NULL;
    }
    t->inited = 1;
    t->db = db_create(conninfo, 1, err, errlen);
    if (!t->db)
        goto error;
    if (pthread_create(&t->tid, NULL, run, t) != 0) {
        snprintf(err, errlen, "cannot start the forecast thread");
        goto error;
    }
    t->started = 1;
    pthread_mutex_lock(&reg_mu);
    reg = t;
    pthread_mutex_unlock(&reg_mu);
    return t;
error:
    forecast_thread_destroy(t);
    return NULL;
}

void forecast_thread_db_restarting(struct forecast_thread *t, int restarting)
{
    if (t)
        db_set_restarting(t->db, restarting);
}

void forecast_thread_destroy(struct forecast_thread *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&reg_mu);
    if (reg == t)
        reg = NULL;
    pthread_mutex_unlock(&reg_mu);
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        atomic_store(&t->stop, true);
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->tid, NULL);
    }
    copy_free(t->offer);
    copy_free(t->last);
    db_destroy(t->db);
    if (t->inited) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    free(t);
}

/* ---- a submission's forecast (live.h) ---- */

/* A copy of the last pass's snapshot with job added as waiting since its time, its id above
 * the others', its remaining work the core's estimate (for a job that reported nothing: the
 * outlook's stand-in from the prior of the finished jobs). Under t->mu. */
static struct fc_copy *copy_with(const struct fc_copy *last, const struct sched_job *job)
{
    size_t n = last->snap.njobs;
    struct sched_job *jobs = malloc((n + 1) * sizeof(*jobs));
    if (!jobs)
        return NULL;
    memcpy(jobs, last->snap.jobs, n * sizeof(*jobs));
    int64_t id = 0;
    for (size_t i = 0; i < n; i++)
        id = jobs[i].id > id ? jobs[i].id : id;
    jobs[n] = *job;
    jobs[n].id = id + 1;
    jobs[n].submit_time = last->snap.now;
    jobs[n].cur_gpus = 0;
    jobs[n].slots = NULL;
    jobs[n].type_speeds = NULL;
    jobs[n].ntype_speeds = 0;
    struct sched_snapshot s = last->snap;
    s.jobs = jobs;
    s.njobs = n + 1;
    sched_estimate_apply(&jobs[n], &s);
    struct fc_copy *c = copy_of(&s);
    free(jobs);
    if (c) {
        c->policy = last->policy;
        c->interval_s = last->interval_s;
    }
    return c;
}

int live_forecast_submission(const struct sched_job *job, struct live_submit_forecast *out)
{
    struct fc_copy *c = NULL;
    struct outlook_config oc;
    outlook_config_init(&oc);
    double per_run = 0;
    pthread_mutex_lock(&reg_mu);
    struct forecast_thread *t = reg;
    if (t) {
        pthread_mutex_lock(&t->mu);
        if (t->last) {
            c = copy_with(t->last, job);
            oc.spread = t->last_spread;
            oc.declared_spread = t->last_declared_spread;
            per_run = t->last_run_cpu_s;
        }
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_unlock(&reg_mu);
    if (!c)
        return 1;
    /* bounded: as many runs as LIVE_SUBMIT_FORECAST_CPU_S allows at the last pass's cost per
     * run (a run of the bigger snapshot costs about the same), none when not even the fewest */
    int runs = per_run > 0 ? (int)(LIVE_SUBMIT_FORECAST_CPU_S / per_run) : FORECAST_SUBMIT_RUNS;
    runs = runs < FORECAST_SUBMIT_RUNS ? runs : FORECAST_SUBMIT_RUNS;
    int rc = 1;
    if (runs >= FORECAST_SUBMIT_MIN_RUNS) {
        char err[256];
        oc.policy = c->policy;
        oc.runs = runs;
        oc.interval_s = fmax(c->interval_s, FORECAST_ROUND_MIN_S);
        oc.seed = (uint64_t)c->snap.seed + 1;
        struct outlook *o = outlook_run(&c->snap, &oc, err, sizeof(err));
        if (!o)
            log_warn("forecast of a submission: %s", err);
        int64_t id = c->snap.jobs[c->snap.njobs - 1].id;
        const struct outlook_job *j = o ? outlook_find(o, id) : NULL;
        if (j) {
            *out = (struct live_submit_forecast){j->start_p50, j->start_p90, j->finish_p50,
                                                 j->finish_p90, c->snap.now};
            rc = 0;
        }
        outlook_destroy(o);
    }
    copy_free(c);
    return rc;
}
