#include "sched_slice.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "job_state.h"
#include "log.h"
#include "sched_round.h"

#define ACTIVE_STATES "('PENDING', 'STARTING', 'RUNNING', 'SUSPENDED', 'RESIZING', 'MIGRATING')"
#define ALONE_WINDOW "50" /* the latest reports that give a job's rate alone */

/* Per active job: its job_slices row, its declared hints and its measured step times. */
static const char *const read_sql =
    "SELECT j.id, COALESCE(s.sliced, false), COALESCE(extract(epoch FROM s.changed_at), 0),"
    " COALESCE(s.run_s, 0), COALESCE(s.home_node, 0),"
    " COALESCE(array_to_string(s.home_gpus, ' '), ''), COALESCE(s.packed_with, 0),"
    " COALESCE(s.pack_at <= now(), false), COALESCE(s.alone_s, 0),"
    " COALESCE(s.pack_reverted, false),"
    " CASE WHEN jsonb_typeof(j.model->'gpu_util') = 'number'"
    " THEN (j.model->>'gpu_util')::float8 ELSE 0 END,"
    " CASE WHEN jsonb_typeof(j.model->'gpu_mem_bytes') = 'number'"
    " THEN (j.model->>'gpu_mem_bytes')::float8 ELSE 0 END,"
    " COALESCE(r.avg_s, 0), COALESCE(r.n, 0), COALESCE(p.avg_s, 0), COALESCE(p.n, 0),"
    " EXISTS (SELECT 1 FROM actions a WHERE a.job_id = j.id AND a.kind = 'suspend'"
    " AND a.state = 'pending'), s.pack_at IS NOT NULL"
    " FROM jobs j LEFT JOIN job_slices s ON s.job_id = j.id"
    " LEFT JOIN LATERAL (SELECT avg(m.seconds) AS avg_s, count(*) AS n FROM"
    " (SELECT seconds FROM job_metrics m WHERE m.job_id = j.id AND m.seconds > 0"
    " ORDER BY m.step DESC LIMIT " ALONE_WINDOW ") m) r"
    " ON jsonb_typeof(j.model->'gpu_util') = 'number'"
    " LEFT JOIN LATERAL (SELECT avg(m.seconds) AS avg_s, count(*) AS n FROM job_metrics m"
    " WHERE m.job_id = j.id AND m.seconds > 0 AND m.at > s.pack_at) p ON s.pack_at IS NOT NULL"
    " WHERE j.state IN " ACTIVE_STATES " ORDER BY j.id";

struct slice_row {
    int64_t id;
    int sliced;
    double changed_at, run_s;
    int64_t home_node;
    int home_gpus[SCHED_MAX_GPUS_PER_NODE];
    int nhome;
    int64_t packed_with;
    int measuring;    /* the pair's measurement has begun */
    int pack_started; /* pack_at is set (the measurement begins at it) */
    double alone_s;
    int reverted;
    double gpu_util, gpu_mem;
    double recent_s; /* mean seconds per minibatch of its latest reports */
    long recent_n;
    double packed_s; /* mean since the pair's measurement began */
    long packed_n;
    int suspend_pending;
    struct speed_model speed; /* the job's speed model as the core sees it (sched_slice_fill) */
    int has_speed;
};

struct sched_slice {
    const struct sched_snap *s;
    struct slice_row *rows; /* sched_slice_fill adds each job's speed model */
    size_t n;
};

void sched_slice_destroy(struct sched_slice *sl)
{
    if (!sl)
        return;
    free(sl->rows);
    free(sl);
}

static double dbl(const PGresult *r, int i, int c)
{
    return strtod(PQgetvalue(r, i, c), NULL);
}

static int yes(const PGresult *r, int i, int c)
{
    return strcmp(PQgetvalue(r, i, c), "t") == 0;
}

static void fill_row(struct slice_row *w, const PGresult *r, int i)
{
    w->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    w->sliced = yes(r, i, 1);
    w->changed_at = dbl(r, i, 2);
    w->run_s = dbl(r, i, 3);
    w->home_node = strtoll(PQgetvalue(r, i, 4), NULL, 10);
    const char *g = PQgetvalue(r, i, 5);
    char *end;
    for (long v = strtol(g, &end, 10); end != g && w->nhome < SCHED_MAX_GPUS_PER_NODE;
         v = strtol(g, &end, 10)) {
        w->home_gpus[w->nhome++] = (int)v;
        g = end;
    }
    w->packed_with = strtoll(PQgetvalue(r, i, 6), NULL, 10);
    w->measuring = yes(r, i, 7);
    w->alone_s = dbl(r, i, 8);
    w->reverted = yes(r, i, 9);
    w->gpu_util = dbl(r, i, 10);
    w->gpu_mem = dbl(r, i, 11);
    w->recent_s = dbl(r, i, 12);
    w->recent_n = strtol(PQgetvalue(r, i, 13), NULL, 10);
    w->packed_s = dbl(r, i, 14);
    w->packed_n = strtol(PQgetvalue(r, i, 15), NULL, 10);
    w->suspend_pending = yes(r, i, 16);
    w->pack_started = yes(r, i, 17);
}

struct sched_slice *sched_slice_read(PGconn *c, const struct sched_snap *s, char *err,
                                     size_t errlen)
{
    struct sched_slice *sl = calloc(1, sizeof(*sl));
    PGresult *r = sl ? db_exec(c, read_sql, 0, NULL) : NULL;
    if (!sl || !db_ok(r)) {
        snprintf(err, errlen, "time-slicing state: %s",
                 r ? PQresultErrorMessage(r) : "out of memory");
        goto error;
    }
    sl->s = s;
    sl->n = (size_t)PQntuples(r);
    sl->rows = calloc(sl->n + 1, sizeof(*sl->rows));
    if (!sl->rows) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    for (size_t i = 0; i < sl->n; i++)
        fill_row(&sl->rows[i], r, (int)i);
    PQclear(r);
    return sl;
error:
    PQclear(r);
    sched_slice_destroy(sl);
    return NULL;
}

/* The row of job id (rows are sorted by id), or NULL. */
static const struct slice_row *row_of(const struct sched_slice *sl, int64_t id)
{
    size_t lo = 0, hi = sl->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sl->rows[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sl->n && sl->rows[lo].id == id ? &sl->rows[lo] : NULL;
}

/* The snapshot's job of id, or NULL. */
static const struct snap_job *snap_job_of(const struct sched_snap *s, int64_t id)
{
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].id == id)
            return &s->jobs[i];
    return NULL;
}

int sched_slice_waiting(const struct sched_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = row_of(sl, sj->id);
    return r && r->sliced && sj->state == JOB_SUSPENDED && sj->cur_gpus == 0;
}

int sched_slice_wanted(const struct sched_slice *sl, const struct snap_job *sj, int dflt)
{
    const struct slice_row *r = row_of(sl, sj->id);
    if (!r || !r->sliced || sj->cur_gpus > 0)
        return dflt;
    if (sj->state == JOB_SUSPENDED)
        return 1;
    if (sj->state == JOB_RUNNING && !r->suspend_pending)
        log_error("scheduler: job %lld runs though time-sliced out (its suspension neither "
                  "took nor failed: sched_slice_suspend_failed): not scheduled until it stops",
                  (long long)sj->id);
    return sj->state == JOB_RUNNING ? 0 : dflt;
}

int sched_slice_home(const struct sched_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = row_of(sl, sj->id);
    return r && r->sliced && r->home_node > 0 ? sched_snap_node_index(sl->s, r->home_node) : -1;
}

int sched_slice_in_place(const struct sched_slice *sl, const struct snap_job *sj,
                         const struct sched_slot *slots, int gpus)
{
    const struct slice_row *r = row_of(sl, sj->id);
    int home = sched_slice_home(sl, sj);
    if (!r || home < 0 || gpus != r->nhome)
        return 0;
    for (int k = 0; k < gpus; k++) {
        int found = 0;
        if (slots[k].node != home)
            return 0;
        for (int h = 0; h < r->nhome && !found; h++)
            found = sl->s->nodes[home].gpu_index[slots[k].gpu] == r->home_gpus[h];
        if (!found)
            return 0;
    }
    return 1;
}

/* The assignment that holds GPU g of node n, or -1. */
static long holder(const struct sched_assignment *as, size_t n, int node, int g)
{
    for (size_t k = 0; k < n; k++)
        for (int s = 0; s < as[k].gpus; s++)
            if (as[k].slots[s].node == node && as[k].slots[s].gpu == g)
                return (long)k;
    return -1;
}

/* The core's position of the GPU a sliced 1-GPU job left on node home, or -1. */
static int home_gpu(const struct sched_slice *sl, const struct snap_job *sj, int home)
{
    const struct slice_row *r = row_of(sl, sj->id);
    if (!r || r->nhome != 1 || home < 0 || !sl->s->nodes[home].up)
        return -1;
    return sched_snap_gpu_position(&sl->s->nodes[home], r->home_gpus[0]);
}

void sched_slice_prefer_home(const struct sched_slice *sl, const struct snap_job *const *sjs,
                             struct sched_assignment *as, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sched_assignment *a = &as[i];
        int home = sched_slice_home(sl, sjs[i]);
        int g = home_gpu(sl, sjs[i], home);
        if (!sched_slice_waiting(sl, sjs[i]) || a->gpus != 1 || a->pack != SCHED_PACK_NONE ||
            g < 0 || a->slots[0].node != home || a->slots[0].gpu == g)
            continue;
        long k = holder(as, n, home, g);
        if (k < 0) {
            a->slots[0].gpu = g;
        } else if (as[k].gpus == 1 && as[k].pack == SCHED_PACK_NONE && sjs[k]->cur_gpus == 0 &&
                   !sched_slice_in_place(sl, sjs[k], as[k].slots, 1)) {
            struct sched_slot t = a->slots[0];
            a->slots[0] = as[k].slots[0];
            as[k].slots[0] = t;
        }
    }
}

/* 1 if the two jobs hold the same GPUs. */
static int same_slots(const struct snap_job *a, const struct snap_job *b)
{
    if (a->cur_gpus != b->cur_gpus || a->cur_gpus == 0)
        return 0;
    for (int k = 0; k < a->cur_gpus; k++)
        if (a->slots[k].node != b->slots[k].node || a->slots[k].gpu != b->slots[k].gpu)
            return 0;
    return 1;
}

/* The partner of a current pair (both name each other and hold the same GPUs), or NULL. */
static const struct snap_job *partner(const struct sched_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = row_of(sl, sj->id), *pr;
    const struct snap_job *p;
    if (!r || r->packed_with <= 0 || !(p = snap_job_of(sl->s, r->packed_with)) ||
        !(pr = row_of(sl, p->id)) || pr->packed_with != sj->id || !same_slots(sj, p))
        return NULL;
    return p;
}

/* Seconds per minibatch that r's speed model predicts for it alone on 1 GPU of node (an index
 * into the snapshot's nodes; < 0: the reference GPU); 0 without a model. */
static double predicted_s(const struct sched_slice *sl, const struct slice_row *r, int node)
{
    if (!r->has_speed)
        return 0;
    const struct snap_node *n = node >= 0 ? &sl->s->nodes[node] : NULL;
    struct plan_spec none = {0};
    struct plan_choice dp = {0};
    double t =
        plan_step_time(&r->speed, &none, &dp, 1, 1, n ? n->gpu_speed : 1.0, n ? n->gpu_mem_gb : 0);
    return isfinite(t) && t > 0 ? t : 0;
}

/* The node whose GPU model a job's alone rate is predicted on: where it runs, else where a
 * time-sliced job waits, else -1 (the reference GPU). */
static int alone_node(const struct sched_slice *sl, const struct snap_job *sj)
{
    return sj->cur_gpus > 0 ? sj->slots[0].node : sched_slice_home(sl, sj);
}

/* Seconds per minibatch alone: measured (its latest reports, once there are enough), else
 * predicted by its speed model on node's GPU model; 0 when neither is known. */
static double alone_s(const struct sched_slice *sl, const struct slice_row *r, int node)
{
    return r->recent_n >= SCHED_SLICE_MIN_ALONE ? r->recent_s : predicted_s(sl, r, node);
}

void sched_slice_fill(struct sched_slice *sl, const struct snap_job *sj, struct sched_job *j)
{
    struct slice_row *r = (struct slice_row *)row_of(sl, sj->id);
    if (!r)
        return;
    r->has_speed = j->model_source != SCHED_MODEL_NONE && j->speed.fitted;
    if (r->has_speed)
        r->speed = j->speed;
    if (sched_slice_waiting(sl, sj)) {
        j->suspended = 1;
        j->last_change_time = r->changed_at;
        j->home_node = sched_slice_home(sl, sj);
        j->has_home = j->home_node >= 0;
    }
    j->run_time += r->run_s;
    const struct snap_job *p = partner(sl, sj);
    double alone = p ? r->alone_s : alone_s(sl, r, alone_node(sl, sj));
    j->rate_alone = alone > 0 ? 1.0 / alone : 0;
    j->gpu_util = j->rate_alone > 0 ? r->gpu_util : 0;
    j->gpu_mem_bytes = r->gpu_mem;
    j->pack_reverted = r->reverted;
    if (p) {
        j->packed = 1;
        j->packed_with = p->id;
        if (r->measuring && r->packed_n >= SCHED_SLICE_MIN_PACKED && r->packed_s > 0)
            j->rate_packed = 1.0 / r->packed_s;
    }
}

/* ---- recording a round ---- */

/* The event names the job's state as the round left it (a job packed as it starts is
 * STARTING, not the snapshot's PENDING: an event into PENDING would mean it was queued
 * again, and its worker's reports would no longer be taken, reports.c). */
static int event(PGconn *c, const struct snap_job *sj, const char *ev, const char *detail)
{
    char id[24];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    const char *p[] = {id, job_state_name(sj->state), ev, detail};
    log_info("job %lld: %s (%s)", (long long)sj->id, ev, detail);
    return db_command_params(c,
                             "INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
                             " detail) SELECT $1, s, s, $3, 'scheduler', $4 FROM COALESCE("
                             "(SELECT state FROM jobs WHERE id = $1), $2) s",
                             4, p);
}

/* "{3,5}": the node's GPU indices of the job's current slots. */
static void gpu_list(const struct sched_snap *s, const struct snap_job *sj, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "{");
    for (int k = 0; k < sj->cur_gpus && o + 16 < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%d", k ? "," : "",
                              s->nodes[sj->slots[k].node].gpu_index[sj->slots[k].gpu]);
    snprintf(buf + o, len - o, "}");
}

static int record_out(struct sched_slice *sl, PGconn *c, const struct snap_job *sj,
                      const struct sched_assignment *a, const char *round)
{
    char id[24], run[32], node[24], gpus[64 * 8 + 8], detail[1024];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    snprintf(run, sizeof(run), "%.3f", sj->cur_gpus > 0 ? sl->s->now - sj->since_first : 0);
    snprintf(node, sizeof(node), "%lld",
             sj->cur_gpus > 0 ? (long long)sl->s->nodes[sj->slots[0].node].id : 0LL);
    gpu_list(sl->s, sj, gpus, sizeof(gpus));
    const char *p[] = {id, run, node, gpus, a->pack == SCHED_PACK_REVERT ? "true" : "false"};
    snprintf(detail, sizeof(detail), "round %s: time-sliced out of GPUs %s on node %s (%s)", round,
             gpus, node, a->reason);
    return db_command_params(c,
                             "INSERT INTO job_slices AS s (job_id, sliced, changed_at, run_s,"
                             " home_node, home_gpus, pack_reverted)"
                             " VALUES ($1, true, now(), $2, $3, $4::int[], $5)"
                             " ON CONFLICT (job_id) DO UPDATE SET sliced = true,"
                             " changed_at = now(), run_s = s.run_s + $2, home_node = $3,"
                             " home_gpus = $4::int[], packed_with = NULL, pack_at = NULL,"
                             " pack_reverted = s.pack_reverted OR $5",
                             5, p) == 0 &&
                   event(c, sj, "suspend", detail) == 0
               ? 0
               : -1;
}

static int record_in(PGconn *c, const struct snap_job *sj, const struct sched_assignment *a,
                     const char *round)
{
    char id[24], detail[320];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    const char *p[] = {id};
    snprintf(detail, sizeof(detail), "round %s: back on %d GPU(s) (%s)", round, a->gpus, a->reason);
    return db_command_params(c,
                             "INSERT INTO job_slices (job_id, sliced, changed_at)"
                             " VALUES ($1, false, now()) ON CONFLICT (job_id) DO UPDATE SET"
                             " sliced = false, changed_at = now(), home_node = NULL,"
                             " home_gpus = NULL",
                             1, p) == 0 &&
                   event(c, sj, "resume", detail) == 0
               ? 0
               : -1;
}

static int record_pack(const struct sched_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a, const char *round)
{
    const struct slice_row *r = row_of(sl, sj->id);
    int measured = r && r->recent_n >= SCHED_SLICE_MIN_ALONE;
    /* measured alone, else predicted on the pair's GPU, else what it measured so far */
    double s = !r ? 0 : measured ? r->recent_s : predicted_s(sl, r, a->slots[0].node);
    if (r && s <= 0) {
        s = r->recent_s;
        measured = 1;
    }
    char id[24], with[24], alone[32], detail[320];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    snprintf(with, sizeof(with), "%lld", (long long)a->packed_with);
    snprintf(alone, sizeof(alone), "%.9g", s);
    const char *p[] = {id, with, alone};
    snprintf(detail, sizeof(detail),
             "round %s: packed with job %s on one GPU, %.4f s per minibatch alone (%s) (%s)", round,
             with, s, measured ? "measured" : "predicted by its speed model", a->reason);
    return db_command_params(c,
                             "INSERT INTO job_slices (job_id, packed_with, alone_s)"
                             " VALUES ($1, $2, $3) ON CONFLICT (job_id) DO UPDATE SET"
                             " packed_with = $2, pack_at = NULL, alone_s = $3",
                             3, p) == 0 &&
                   event(c, sj, "pack", detail) == 0
               ? 0
               : -1;
}

/* The pair's normalised rates, alone_s / packed_s of each, summed (0 when unknown). */
static double pair_gain(const struct sched_slice *sl, int64_t a, int64_t b)
{
    const struct slice_row *x = row_of(sl, a), *y = row_of(sl, b);
    if (!x || !y || x->packed_s <= 0 || y->packed_s <= 0)
        return 0;
    return x->alone_s / x->packed_s + y->alone_s / y->packed_s;
}

/* The pair lost (the first job keeps the GPU; the second, suspended, goes through
 * record_out): unpacked, never packed again. */
static int record_revert(const struct sched_slice *sl, PGconn *c, const struct snap_job *sj,
                         const struct sched_assignment *a, const char *round)
{
    char id[24], detail[320];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    const char *p[] = {id};
    snprintf(detail, sizeof(detail),
             "round %s: packing with job %lld reverted: normalised rates summed %.3f < %.2f", round,
             (long long)a->packed_with, pair_gain(sl, sj->id, a->packed_with),
             1.0 + SCHED_PACK_MIN_GAIN);
    return db_command_params(c,
                             "UPDATE job_slices SET packed_with = NULL, pack_at = NULL,"
                             " pack_reverted = true WHERE job_id = $1",
                             1, p) == 0 &&
                   event(c, sj, "unpack", detail) == 0
               ? 0
               : -1;
}

/* A kept pair begins its measurement once both jobs run. */
static int record_keep(const struct sched_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a)
{
    const struct slice_row *r = row_of(sl, sj->id);
    const struct snap_job *p = snap_job_of(sl->s, a->packed_with);
    if (!r || r->pack_started || !p || sj->state != JOB_RUNNING || p->state != JOB_RUNNING)
        return 0;
    char id[24], settle[32];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    snprintf(settle, sizeof(settle), "%.3f", SCHED_SLICE_SETTLE_S);
    const char *prm[] = {id, settle};
    return db_command_params(c,
                             "UPDATE job_slices SET pack_at = now() + make_interval(secs =>"
                             " $2::float8) WHERE job_id = $1",
                             2, prm);
}

static int record_unpair(const struct sched_slice *sl, PGconn *c, const struct snap_job *sj)
{
    const struct slice_row *r = row_of(sl, sj->id);
    if (!r || r->packed_with <= 0)
        return 0;
    char id[24];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    const char *p[] = {id};
    return db_command_params(c,
                             "UPDATE job_slices SET packed_with = NULL, pack_at = NULL"
                             " WHERE job_id = $1",
                             1, p);
}

int sched_slice_record(struct sched_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a, enum slice_move mv, const char *round)
{
    if (mv == SLICE_OUT && record_out(sl, c, sj, a, round) < 0)
        return -1;
    if (mv == SLICE_IN && record_in(c, sj, a, round) < 0)
        return -1;
    if (!a || mv == SLICE_OUT)
        return 0;
    switch (a->pack) {
    case SCHED_PACK_PACK:
        return record_pack(sl, c, sj, a, round);
    case SCHED_PACK_REVERT:
        return record_revert(sl, c, sj, a, round);
    case SCHED_PACK_KEEP:
        return record_keep(sl, c, sj, a);
    case SCHED_PACK_NONE:
        return record_unpair(sl, c, sj);
    }
    return 0;
}

/* ---- outside the rounds ---- */

int sched_slice_forget(PGconn *c, long long id)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    return db_command_params(c,
                             "UPDATE job_slices SET sliced = false, changed_at = now(),"
                             " home_node = NULL, home_gpus = NULL, packed_with = NULL,"
                             " pack_at = NULL WHERE job_id = $1",
                             1, p);
}

int sched_slice_by_scheduler(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c,
                          "SELECT EXISTS (SELECT 1 FROM job_slices s JOIN jobs j ON j.id = s.job_id"
                          " WHERE s.job_id = $1 AND s.sliced AND NOT EXISTS (SELECT 1 FROM"
                          " allocations a WHERE a.job_id = j.id))",
                          1, p);
    int rc = db_ok(r) ? strcmp(PQgetvalue(r, 0, 0), "t") == 0 : -1;
    PQclear(r);
    return rc;
}

/* The job's home GPUs back to it unless one of them holds two jobs already: rows inserted
 * (the number of home GPUs), 0 when refused, -1 on error. */
static int restore_home(PGconn *c, const char *job)
{
    const char *p[] = {job};
    PGresult *r =
        db_exec(c,
                "INSERT INTO allocations (job_id, node_id, gpu_idx)"
                " SELECT s.job_id, s.home_node, g FROM job_slices s, unnest(s.home_gpus) g"
                " WHERE s.job_id = $1 AND NOT EXISTS (SELECT 1 FROM job_slices t,"
                " unnest(t.home_gpus) h WHERE t.job_id = $1 AND (SELECT count(*) FROM"
                " allocations x WHERE x.node_id = t.home_node AND x.gpu_idx = h) >= 2)",
                1, p);
    int n = db_ok(r) ? atoi(PQcmdTuples(r)) : -1;
    PQclear(r);
    return n;
}

static int kept_gpus(PGconn *c, const char *job, const char *why)
{
    const char *p[] = {job, why};
    return db_command_params(c,
                             "WITH s AS (SELECT home_node, home_gpus FROM job_slices"
                             " WHERE job_id = $1), u AS (UPDATE job_slices SET sliced = false,"
                             " changed_at = now(), home_node = NULL, home_gpus = NULL"
                             " WHERE job_id = $1)"
                             " INSERT INTO job_events (job_id, from_state, to_state, event, actor,"
                             " detail) SELECT $1, 'RUNNING', 'RUNNING', 'suspend_failed',"
                             " 'scheduler', format('its time-slicing suspension failed (%s):"
                             " it keeps GPUs %s on node %s', $2::text,"
                             " array_to_string(s.home_gpus, ','), s.home_node) FROM s",
                             2, p);
}

int sched_slice_suspend_failed(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c,
                          "SELECT a.job_id, a.outcome_detail FROM actions a"
                          " JOIN jobs j ON j.id = a.job_id JOIN job_slices s ON s.job_id = j.id"
                          " WHERE a.id = $1 AND a.kind = 'suspend' AND a.state = 'failed'"
                          " AND a.round_id IS NOT NULL AND s.sliced AND j.state = 'RUNNING'"
                          " FOR UPDATE OF j",
                          1, p);
    if (!db_ok(r) || PQntuples(r) != 1) {
        int rc = db_ok(r) ? 0 : -1;
        PQclear(r);
        return rc;
    }
    char job[24], why[512], detail[700];
    snprintf(job, sizeof(job), "%s", PQgetvalue(r, 0, 0));
    snprintf(why, sizeof(why), "%.500s", PQgetvalue(r, 0, 1));
    PQclear(r);
    int n = restore_home(c, job);
    if (n > 0) {
        log_info("job %s: its suspension failed (%s): it keeps its GPUs", job, why);
        return kept_gpus(c, job, why);
    }
    if (n < 0)
        return -1;
    snprintf(detail, sizeof(detail),
             "its time-slicing suspension failed (%s) and its GPUs hold two jobs: back to the"
             " queue",
             why);
    return sched_round_requeue_job(c, strtoll(job, NULL, 10), JOB_RUNNING, detail);
}

/* The job whose late SUSPENDED sched_slice_suspended_late() handles: SUSPENDED, holding GPUs,
 * not sliced, and its latest action (but remote daemons) a round's suspend that failed. */
static const char *const late_sql =
    "SELECT j.id FROM jobs j JOIN LATERAL (SELECT a.kind, a.state, a.round_id FROM actions a"
    " WHERE a.job_id = j.id AND a.kind <> 'exec' ORDER BY a.id DESC LIMIT 1) a ON true"
    " WHERE j.id = $1 AND j.state = 'SUSPENDED' AND a.kind = 'suspend' AND a.state = 'failed'"
    " AND a.round_id IS NOT NULL AND EXISTS (SELECT 1 FROM allocations x WHERE x.job_id = j.id)"
    " AND NOT EXISTS (SELECT 1 FROM job_slices s WHERE s.job_id = j.id AND s.sliced)"
    " FOR UPDATE OF j";

/* Releases the job's GPUs into its job_slices row (sliced, home, run time) with its event. */
static const char *const late_release_sql =
    "WITH al AS (DELETE FROM allocations WHERE job_id = $1 RETURNING node_id, gpu_idx, since),"
    " h AS (SELECT min(node_id) AS node, array_agg(gpu_idx ORDER BY gpu_idx) AS gpus,"
    " extract(epoch FROM now() - min(since)) AS run FROM al),"
    " s AS (INSERT INTO job_slices AS s (job_id, sliced, changed_at, run_s, home_node,"
    " home_gpus) SELECT $1, true, now(), h.run, h.node, h.gpus FROM h"
    " ON CONFLICT (job_id) DO UPDATE SET sliced = true, changed_at = now(),"
    " run_s = s.run_s + EXCLUDED.run_s, home_node = EXCLUDED.home_node,"
    " home_gpus = EXCLUDED.home_gpus, packed_with = NULL, pack_at = NULL)"
    " INSERT INTO job_events (job_id, from_state, to_state, event, actor, detail)"
    " SELECT $1, 'SUSPENDED', 'SUSPENDED', 'suspend_late', 'scheduler', format('its"
    " time-slicing suspension took after it had failed: GPUs %s on node %s released, it waits"
    " for its turn', array_to_string(h.gpus, ','), h.node) FROM h";

int sched_slice_suspended_late(PGconn *c, const char *id)
{
    const char *p[] = {id};
    PGresult *r = db_exec(c, late_sql, 1, p);
    int rc = !db_ok(r) ? -1 : PQntuples(r) == 1;
    PQclear(r);
    if (rc == 1 && db_command_params(c, late_release_sql, 1, p) < 0)
        rc = -1;
    if (rc == 1)
        log_info("job %s: its failed time-slicing suspension took late: GPUs released", id);
    return rc;
}
