/* slice: time-slicing's state read for a round (slice.h: job_slices, rates alone and packed)
 * and what the core gets of it: jobs seen, Gandiva fields, home nodes, resumes in place. */
#include "slice.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "jobtx.h"
#include "log.h"
#include "slice_int.h"
#include "store/db.h"

#define ACTIVE_STATES "('PENDING', 'STARTING', 'RUNNING', 'SUSPENDED', 'RESIZING', 'MIGRATING')"
#define ALONE_WINDOW "50" /* the latest reports that give a job's rate alone */

/* Per active job with something to say: its job_slices row, its declared hints and its
 * measured step times. An active job with none of them (no row, no hint, no suspension
 * pending) would be all zeros and falses: live_slice_read() makes those rows itself for the
 * snapshot's jobs, which at 5,000 jobs are nearly all of them (bench-scale: this statement
 * took 25-82 ms a round for 5,000 rows). */
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
    " (SELECT seconds FROM job_metrics m WHERE jsonb_typeof(j.model->'gpu_util') = 'number'"
    " AND m.job_id = j.id AND m.seconds > 0 ORDER BY m.step DESC LIMIT " ALONE_WINDOW ") m) r"
    " ON true"
    " LEFT JOIN LATERAL (SELECT avg(m.seconds) AS avg_s, count(*) AS n FROM job_metrics m"
    " WHERE s.pack_at IS NOT NULL AND m.job_id = j.id AND m.seconds > 0 AND m.at > s.pack_at) p"
    " ON true"
    " WHERE j.state IN " ACTIVE_STATES " AND (s.job_id IS NOT NULL"
    " OR jsonb_typeof(j.model->'gpu_util') = 'number'"
    " OR jsonb_typeof(j.model->'gpu_mem_bytes') = 'number'"
    " OR EXISTS (SELECT 1 FROM actions a WHERE a.job_id = j.id AND a.kind = 'suspend'"
    " AND a.state = 'pending')) ORDER BY j.id";

void live_slice_destroy(struct live_slice *sl)
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

struct live_slice *live_slice_read(PGconn *c, const struct live_snap *s, char *err,
                                     size_t errlen)
{
    struct live_slice *sl = calloc(1, sizeof(*sl));
    PGresult *r = sl ? db_exec(c, read_sql, 0, NULL) : NULL;
    if (!sl || !db_ok(r)) {
        snprintf(err, errlen, "time-slicing state: %s",
                 r ? PQresultErrorMessage(r) : "out of memory");
        goto error;
    }
    sl->s = s;
    /* the rows read, and a zero row for each of the snapshot's other jobs, both by id */
    size_t nr = (size_t)PQntuples(r), i = 0, k = 0;
    sl->rows = calloc(nr + s->njobs + 1, sizeof(*sl->rows));
    if (!sl->rows) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    while (i < nr || k < s->njobs) {
        int64_t id = i < nr ? strtoll(PQgetvalue(r, (int)i, 0), NULL, 10) : INT64_MAX;
        struct slice_row *w = &sl->rows[sl->n++];
        if (k < s->njobs && s->jobs[k].id < id) {
            w->id = s->jobs[k++].id;
            continue;
        }
        fill_row(w, r, (int)i++);
        k += k < s->njobs && s->jobs[k].id == id;
    }
    PQclear(r);
    return sl;
error:
    PQclear(r);
    live_slice_destroy(sl);
    return NULL;
}

/* The row of job id (rows are sorted by id), or NULL. */
const struct slice_row *slice_row_of(const struct live_slice *sl, int64_t id)
{
    return live_snap_by_id(sl->rows, sl->n, sizeof(*sl->rows), id);
}

int live_slice_waiting(const struct live_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    return r && r->sliced && sj->state == JOB_SUSPENDED && sj->cur_gpus == 0;
}

int live_slice_wanted(const struct live_slice *sl, const struct snap_job *sj, int dflt)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    if (!r || !r->sliced || sj->cur_gpus > 0)
        return dflt;
    if (sj->state == JOB_SUSPENDED)
        return 1;
    if (sj->state == JOB_RUNNING && !r->suspend_pending)
        log_error("scheduler: job %lld runs though time-sliced out (its suspension neither "
                  "took nor failed: live_slice_suspend_failed): not scheduled until it stops",
                  (long long)sj->id);
    return sj->state == JOB_RUNNING ? 0 : dflt;
}

int live_slice_home(const struct live_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    return r && r->sliced && r->home_node > 0 ? live_snap_node_index(sl->s, r->home_node) : -1;
}

int live_slice_in_place(const struct live_slice *sl, const struct snap_job *sj,
                         const struct sched_slot *slots, int gpus)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    int home = live_slice_home(sl, sj);
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
static int home_gpu(const struct live_slice *sl, const struct snap_job *sj, int home)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    if (!r || r->nhome != 1 || home < 0 || !sl->s->nodes[home].up)
        return -1;
    return live_snap_gpu_position(&sl->s->nodes[home], r->home_gpus[0]);
}

void live_slice_prefer_home(const struct live_slice *sl, const struct snap_job *const *sjs,
                             struct sched_assignment *as, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sched_assignment *a = &as[i];
        int home = live_slice_home(sl, sjs[i]);
        int g = home_gpu(sl, sjs[i], home);
        if (!live_slice_waiting(sl, sjs[i]) || a->gpus != 1 || a->pack != SCHED_PACK_NONE ||
            g < 0 || a->slots[0].node != home || a->slots[0].gpu == g)
            continue;
        long k = holder(as, n, home, g);
        if (k < 0) {
            a->slots[0].gpu = g;
        } else if (as[k].gpus == 1 && as[k].pack == SCHED_PACK_NONE && sjs[k]->cur_gpus == 0 &&
                   !live_slice_in_place(sl, sjs[k], as[k].slots, 1)) {
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
static const struct snap_job *partner(const struct live_slice *sl, const struct snap_job *sj)
{
    const struct slice_row *r = slice_row_of(sl, sj->id), *pr;
    const struct snap_job *p;
    if (!r || r->packed_with <= 0 || !(p = live_snap_job(sl->s, r->packed_with)) ||
        !(pr = slice_row_of(sl, p->id)) || pr->packed_with != sj->id || !same_slots(sj, p))
        return NULL;
    return p;
}

/* Seconds per minibatch that r's speed model predicts for it alone on 1 GPU of node (an index
 * into the snapshot's nodes; < 0: the reference GPU); 0 without a model. */
double slice_predicted_s(const struct live_slice *sl, const struct slice_row *r, int node)
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
static int alone_node(const struct live_slice *sl, const struct snap_job *sj)
{
    return sj->cur_gpus > 0 ? sj->slots[0].node : live_slice_home(sl, sj);
}

/* Seconds per minibatch alone: measured (its latest reports, once there are enough), else
 * predicted by its speed model on node's GPU model; 0 when neither is known. */
static double alone_s(const struct live_slice *sl, const struct slice_row *r, int node)
{
    return r->recent_n >= LIVE_SLICE_MIN_ALONE ? r->recent_s : slice_predicted_s(sl, r, node);
}

void live_slice_fill(struct live_slice *sl, const struct snap_job *sj, struct sched_job *j)
{
    struct slice_row *r = (struct slice_row *)slice_row_of(sl, sj->id);
    if (!r)
        return;
    r->has_speed = j->model_source != SCHED_MODEL_NONE && j->speed.fitted;
    if (r->has_speed)
        r->speed = j->speed;
    if (live_slice_waiting(sl, sj)) {
        j->suspended = 1;
        j->last_change_time = r->changed_at;
        j->home_node = live_slice_home(sl, sj);
        j->has_home = j->home_node >= 0;
    }
    if (sj->held_s < 0) /* else run_time is already its whole time on GPUs (sql/048) */
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
        if (r->measuring && r->packed_n >= LIVE_SLICE_MIN_PACKED && r->packed_s > 0)
            j->rate_packed = 1.0 / r->packed_s;
    }
}
