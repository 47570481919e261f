/* Recording what a round did to time-slicing and packing (live_slice_record, slice.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "jobtx.h"
#include "log.h"
#include "slice.h"
#include "slice_int.h"
#include "store/db.h"

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
static void gpu_list(const struct live_snap *s, const struct snap_job *sj, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "{");
    for (int k = 0; k < sj->cur_gpus && o + 16 < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%d", k ? "," : "",
                              s->nodes[sj->slots[k].node].gpu_index[sj->slots[k].gpu]);
    snprintf(buf + o, len - o, "}");
}

static int record_out(struct live_slice *sl, PGconn *c, const struct snap_job *sj,
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

static int record_pack(const struct live_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a, const char *round)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    int measured = r && r->recent_n >= LIVE_SLICE_MIN_ALONE;
    /* measured alone, else predicted on the pair's GPU, else what it measured so far */
    double s = !r ? 0 : measured ? r->recent_s : slice_predicted_s(sl, r, a->slots[0].node);
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
static double pair_gain(const struct live_slice *sl, int64_t a, int64_t b)
{
    const struct slice_row *x = slice_row_of(sl, a), *y = slice_row_of(sl, b);
    if (!x || !y || x->packed_s <= 0 || y->packed_s <= 0)
        return 0;
    return x->alone_s / x->packed_s + y->alone_s / y->packed_s;
}

/* The pair lost (the first job keeps the GPU; the second, suspended, goes through
 * record_out): unpacked, never packed again. */
static int record_revert(const struct live_slice *sl, PGconn *c, const struct snap_job *sj,
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
static int record_keep(const struct live_slice *sl, PGconn *c, const struct snap_job *sj,
                       const struct sched_assignment *a)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
    const struct snap_job *p = live_snap_job(sl->s, a->packed_with);
    if (!r || r->pack_started || !p || sj->state != JOB_RUNNING || p->state != JOB_RUNNING)
        return 0;
    char id[24], settle[32];
    snprintf(id, sizeof(id), "%lld", (long long)sj->id);
    snprintf(settle, sizeof(settle), "%.3f", LIVE_SLICE_SETTLE_S);
    const char *prm[] = {id, settle};
    return db_command_params(c,
                             "UPDATE job_slices SET pack_at = now() + make_interval(secs =>"
                             " $2::float8) WHERE job_id = $1",
                             2, prm);
}

static int record_unpair(const struct live_slice *sl, PGconn *c, const struct snap_job *sj)
{
    const struct slice_row *r = slice_row_of(sl, sj->id);
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

int live_slice_record(struct live_slice *sl, PGconn *c, const struct snap_job *sj,
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
