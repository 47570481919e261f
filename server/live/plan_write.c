/* Writing a round's plan in one transaction (live_plan_write, round_plan.h). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "batch_view.h"
#include "config.h"
#include "fnv.h"
#include "jobtx.h"
#include "log.h"
#include "model.h"
#include "monotime.h"
#include "after.h"
#include "plan_int.h"
#include "round_plan.h"
#include "sched.h"
#include "slice.h"
#include "snap.h"
#include "spec/jobspec.h"
#include "store/db.h"

/* ---- writing the round ---- */

static const char *const kind_name[] = {"keep",    "start",  "resize", "migrate",
                                        "suspend", "resume", "batch"};

/* The plan job i runs with after the round: the decision's for a change it takes, the one
 * it runs with for a migration a person asked for ("dp" for a job without plans). */
static void plan_after(const struct live_plan *p, const struct live_plan_job *pj, char *buf, size_t len)
{
    const struct snap_job *sj = pj->sj;
    if (pj->migrated_by_request)
        jobspec_plan_name(&sj->cur_plan, buf, len);
    else
        jobspec_plan_name(&p->d->assign[pj - p->jobs].plan, buf, len);
}

/* The global batch job pj runs at after the round (0: it has no batch model; the core's
 * batch_after_round): the decision's for a change it takes, its current one for a migration
 * a person asked for. */
static long batch_after(const struct live_plan *p, const struct live_plan_job *pj)
{
    double m = pj->migrated_by_request ? 0 : p->d->assign[pj - p->jobs].batch;
    return batch_after_round(&pj->sj->batch, m, pj->gpus);
}

/* What the goodput model predicts for job pj at global batch m on its GPUs after the round,
 * from the speed model and gradient statistics the round decided with (new; NULL without a
 * fitted speed model): {"step_s", "efficiency", "epochs_per_s", "grad": {"sqr", "var"}}
 * (epochs counted at M0; grad: the statistics at M0 the efficiency came from), so that what
 * the job then measures can be held against it. */
static json_t *goodput_prediction(const struct live_plan *p, const struct live_plan_job *pj, long m)
{
    const struct sched_job *j = &p->cjobs[pj - p->jobs];
    if (!j->speed.fitted || pj->gpus < 1)
        return NULL;
    int nodes = sched_slots_nodes(pj->slots, pj->gpus);
    struct batch_spec b = pj->sj->batch;
    double t = goodput_step_time(&j->speed, &b, pj->gpus, nodes, (double)m, NULL);
    if (!isfinite(t) || !(t > 0))
        return NULL;
    return json_pack("{s:f, s:f, s:f, s:{s:f, s:f}}", "step_s", t, "efficiency",
                     goodput_efficiency(&b, (double)m), "epochs_per_s",
                     goodput_rate(&j->speed, &b, pj->gpus, nodes, (double)m), "grad", "sqr",
                     b.grad_sqr, "var", b.grad_var);
}

/* A batch-model job's batch and learning-rate factor in its action spec: "batch" (the
 * worker's RINGJOB_BATCH), "init_batch" (RINGJOB_INIT_BATCH) and "lr_scale" by the job's
 * lr_scaling (batch_lr_scale: by default sqrt(batch / M0), square-root scaling of the rate the
 * job was tuned at M0: the gradient's noise falls with the square root of the batch), in place
 * of the linear factor of a job that keeps its examples per GPU; "max_local_batch"
 * (RINGJOB_MAX_LOCAL_BATCH) when it reported one on the GPU model it runs on (ringjob_report_fits)
 * or declared one: a rank whose share of the batch is larger
 * accumulates gradients over micro-steps, as the goodput model assumes; and "goodput", the
 * model's prediction there (goodput_prediction; absent without a fitted speed model). */
static void batch_fields(json_t *spec, const struct live_plan *p, const struct live_plan_job *pj)
{
    long m = batch_after(p, pj);
    if (!spec || m <= 0)
        return;
    double m0 = pj->sj->batch.init_batch;
    json_object_set_new(spec, "batch", json_integer(m));
    json_object_set_new(spec, "init_batch", json_integer((json_int_t)m0));
    json_object_set_new(spec, "lr_scale", json_real(batch_lr_scale(pj->sj->lr_scaling, m, m0)));
    /* what it reported fits on the GPU model it runs on, else what it declared: never the
     * memory ratio's guess, which the decision may plan with but the job could not hold */
    double local = pj->sj->batch.max_local;
    int model = pj->gpus > 0 ? p->s->nodes[pj->slots[0].node].gpu_model : -1;
    for (size_t k = 0; pj->model && model >= 0 && k < pj->model->nfits; k++)
        if (pj->model->fits[k].gpu_model == model)
            local = pj->model->fits[k].max_local;
    if (local >= 1 && isfinite(local))
        json_object_set_new(spec, "max_local_batch", json_integer((json_int_t)local));
    json_t *pred = goodput_prediction(p, pj, m);
    if (pred)
        json_object_set_new(spec, "goodput", pred);
}

/* The spec of a start, resize, migrate or resume action (new), per docs/worker-protocol.md,
 * less the job's command and env, which actions_sql adds from the job's row. */
static json_t *action_spec(const struct live_plan *p, const struct live_plan_job *pj)
{
    char plan[JOBSPEC_PLAN_MAX];
    plan_after(p, pj, plan, sizeof(plan));
    const struct snap_job *sj = pj->sj;
    json_t *slots = json_array(), *hosts = json_array(), *last = NULL;
    int last_node = -1;
    for (int k = 0; k < pj->gpus; k++) {
        const struct snap_node *n = &p->s->nodes[pj->slots[k].node];
        json_array_append_new(slots, json_pack("{s:I, s:i}", "node_id", (json_int_t)n->id, "gpu",
                                               n->gpu_index[pj->slots[k].gpu]));
        if (pj->slots[k].node != last_node) {
            last = json_pack("{s:I, s:s, s:i}", "node", (json_int_t)n->id, "name", n->name, "slots",
                             0);
            json_array_append_new(hosts, last);
            last_node = pj->slots[k].node;
        }
        json_object_set_new(last, "slots",
                            json_integer(json_integer_value(json_object_get(last, "slots")) + 1));
    }
    json_t *spec = json_pack("{s:i, s:o, s:o, s:f, s:s, s:i, s:s}", "world_size", pj->gpus,
                             "slots", slots, "hosts", hosts, "lr_scale",
                             (double)pj->gpus, "plan", plan, "from_world_size", sj->cur_gpus,
                             "reason", pj->migrated_by_request ? "migrate requested" : pj->reason);
    /* Checkpoints must be reachable from every node a job may move to: a shared folder the
     * operator names; without one the worker keeps them in its own state directory. One
     * folder per generation (docs/worker-protocol.md, "Checkpoint generations"). */
    const char *root = getenv("RINGMASTER_CHECKPOINT_ROOT");
    if (spec && root && *root) {
        char ckpt[4096];
        snprintf(ckpt, sizeof(ckpt), "%s/job-%lld/g%d", root, (long long)sj->id, sj->ckpt_gen);
        json_object_set_new(spec, "checkpoint_dir", json_string(ckpt));
    }
    if (spec && pj->change != CH_START)
        json_object_set_new(spec, "grace_s", json_real(p->cfg->grace_s));
    batch_fields(spec, p, pj);
    return spec;
}

/* The node index an action goes to: a start's or resume's first GPU; else where the job runs
 * now, which checkpoints it (the spec says where it goes next), or where a time-sliced job's
 * state waits. */
static int action_node(const struct live_plan *p, const struct live_plan_job *pj)
{
    int home = live_slice_home(p->slice, pj->sj);
    if (pj->change == CH_START || pj->change == CH_RESUME)
        return pj->slots[0].node;
    if (pj->sj->cur_gpus > 0)
        return pj->sj->slots[0].node;
    return home >= 0 ? home : pj->slots[0].node;
}

static const enum job_event change_event[] = {JOB_EV_START,   JOB_EV_START,   JOB_EV_RESIZE,
                                              JOB_EV_MIGRATE, JOB_EV_SUSPEND, JOB_EV_RESUME,
                                              JOB_EV_START};

/* Suspend and resume leave the job's state to its worker (it says SUSPENDED or RUNNING once
 * the job took it); live_slice writes their events. A batch change leaves the job RUNNING
 * (its event is batch_events_sql's). */
static int moves_state(enum change ch)
{
    return ch != CH_SUSPEND && ch != CH_RESUME && ch != CH_BATCH;
}

/* A batch change in place: "batch 128 -> 512 on 4 GPUs: goodput 1.8x" into buf (the goodput
 * ratio of the new batch to the old on the job's GPUs, sched_batch_rate; left out when the
 * model cannot say), and its action's spec (new): the job's batch fields (batch_fields),
 * "from_batch", "plan" (the one it runs) and "reason" (that text). */
static json_t *batch_spec(const struct live_plan *p, const struct live_plan_job *pj, char *buf,
                          size_t len)
{
    const struct sched_assignment *a = &p->d->assign[pj - p->jobs];
    const struct sched_job *j = &p->cjobs[pj - p->jobs];
    long from = (long)pj->sj->batch.batch, to = batch_after(p, pj);
    int nodes = sched_slots_nodes(pj->slots, pj->gpus);
    double r0 = sched_batch_rate(j, a->gpu_model, pj->gpus, nodes, (double)from);
    double r1 = sched_batch_rate(j, a->gpu_model, pj->gpus, nodes, (double)to);
    int n = snprintf(buf, len, "batch %ld -> %ld on %d GPU%s", from, to, pj->gpus,
                     pj->gpus == 1 ? "" : "s");
    if (r0 > 0 && r1 > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ": goodput %.3gx", r1 / r0);
    char plan[JOBSPEC_PLAN_MAX];
    jobspec_plan_name(&pj->sj->cur_plan, plan, sizeof(plan));
    json_t *spec =
        json_pack("{s:I, s:s, s:s}", "from_batch", (json_int_t)from, "plan", plan, "reason", buf);
    batch_fields(spec, p, pj);
    return spec;
}

static enum slice_move slice_move_of(const struct live_plan *p, const struct live_plan_job *pj)
{
    if (pj->change == CH_SUSPEND)
        return SLICE_OUT;
    if (pj->change == CH_RESUME ||
        (pj->change == CH_MIGRATE && live_slice_waiting(p->slice, pj->sj)))
        return SLICE_IN;
    return SLICE_STAY;
}

/* What time-slicing and packing did to each job (job_slices, events). A change the plan
 * did not take leaves the pack fields alone. Returns 0 or -1. */
static int write_slices(struct live_plan *p, PGconn *c, const char *round)
{
    for (size_t i = 0; i < p->njobs; i++) {
        const struct live_plan_job *pj = &p->jobs[i];
        const struct sched_assignment *a = &p->d->assign[i];
        int taken = pj->change != CH_KEEP || !a->changed;
        if (live_slice_record(p->slice, c, pj->sj, taken ? a : NULL, slice_move_of(p, pj), round) <
            0)
            return -1;
    }
    return 0;
}

/* The round's changes as one JSON array, a job an element in the order its action is to be
 * written: {"id", "from", "to", "ev" (when the round moves its state), "detail", "node",
 * "kind", "spec", "slots": [[node id, gpu], ...]}. Suspensions first: a worker holds a
 * launch while a suspension on its node is under way, so the GPUs a suspended job frees are
 * free when the next job starts on them. NULL when out of memory. */
static json_t *changes_json(const struct live_plan *p, const char *round, int *moves)
{
    json_t *all = json_array();
    *moves = 0;
    for (int pass = 0; all && pass < 2; pass++)
        for (size_t i = 0; i < p->njobs; i++) {
            const struct live_plan_job *pj = &p->jobs[i];
            if (pj->change == CH_KEEP || (pj->change == CH_SUSPEND) != (pass == 0))
                continue;
            const struct snap_job *sj = pj->sj;
            char detail[256], why[160];
            snprintf(detail, sizeof(detail), "round %s: %d -> %d GPUs (%s)", round, sj->cur_gpus,
                     pj->gpus, pj->reason);
            json_t *spec = pj->change == CH_SUSPEND ? json_pack("{s:s}", "reason", pj->reason)
                           : pj->change == CH_BATCH ? batch_spec(p, pj, why, sizeof(why))
                                                    : action_spec(p, pj);
            if (pj->change == CH_BATCH)
                snprintf(detail, sizeof(detail), "round %s: %s", round, why);
            json_t *slots = json_array();
            for (int k = 0; slots && pj->change != CH_BATCH && k < pj->gpus; k++) {
                const struct snap_node *n = &p->s->nodes[pj->slots[k].node];
                json_array_append_new(slots, json_pack("[I, i]", (json_int_t)n->id,
                                                       n->gpu_index[pj->slots[k].gpu]));
            }
            json_t *e = json_pack("{s:I, s:s, s:I, s:s, s:o?, s:o?}", "id", (json_int_t)sj->id,
                                  "detail", detail, "node",
                                  (json_int_t)p->s->nodes[action_node(p, pj)].id, "kind",
                                  kind_name[pj->change], "spec", spec, "slots", slots);
            enum job_state to;
            if (e && moves_state(pj->change)) {
                if (job_state_next(sj->state, change_event[pj->change], &to) < 0) {
                    json_decref(e);
                    e = NULL;
                } else {
                    json_object_set_new(e, "from", json_string(job_state_name(sj->state)));
                    json_object_set_new(e, "to", json_string(job_state_name(to)));
                    json_object_set_new(e, "ev",
                                        json_string(job_event_name(change_event[pj->change])));
                    ++*moves;
                }
            }
            if (!e || !spec || !slots || json_array_append_new(all, e) < 0) {
                json_decref(all);
                return NULL;
            }
        }
    return all;
}

/* The moves (each job still in the state the snapshot saw, else the round fails and rolls
 * back, as a single move did), with their events. */
static const char *const moves_sql =
    "WITH m AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS m(id bigint, \"from\" text,"
    " \"to\" text, ev text, detail text) WHERE m.\"to\" IS NOT NULL),"
    " up AS (UPDATE jobs j SET state = m.\"to\", updated_at = now() FROM m"
    " WHERE j.id = m.id AND j.state = m.\"from\" RETURNING j.id)"
    " INSERT INTO job_events (job_id, from_state, to_state, event, actor, detail)"
    " SELECT m.id, m.\"from\", m.\"to\", m.ev, 'scheduler', m.detail FROM m JOIN up"
    " ON up.id = m.id";

/* The ledger's work for the moves above, once for all of them (sql/051): the row trigger on
 * job_events leaves them alone while ringmaster.ledger_moves_batched is on; the statement
 * that does it turns the setting off again for the round's later events (its batch events). */
#define LEDGER_BATCHED(v) "set_config('ringmaster.ledger_moves_batched', '" v "', true)"
static const char *const ledger_moves_sql =
    "SELECT ledger_moved(array_agg(m.id ORDER BY m.id), array_agg(m.\"from\" ORDER BY m.id),"
    " array_agg(m.\"to\" ORDER BY m.id), array_agg(m.ev ORDER BY m.id),"
    " array_agg(m.detail ORDER BY m.id)), " LEDGER_BATCHED("off")
    " FROM jsonb_to_recordset($1::jsonb) AS m(id bigint, \"from\" text, \"to\" text, ev text,"
    " detail text) WHERE m.\"to\" IS NOT NULL";

/* The round's moves (at least one) and their ledger: moves_sql with the row trigger's ledger
 * work batched. Returns the moves written, or -1. */
static long write_moves(PGconn *c, const char *const *prm)
{
    if (db_command(c, "SELECT " LEDGER_BATCHED("on")) < 0)
        return -1;
    PGresult *r = db_exec(c, moves_sql, 1, prm);
    long moved = db_ok(r) ? strtol(PQcmdTuples(r), NULL, 10) : -1;
    PQclear(r);
    return moved < 0 || db_command_params(c, ledger_moves_sql, 1, prm) < 0 ? -1 : moved;
}

/* A batch change in place keeps the job's GPUs and what it has under way (its element has no
 * slots). */
#define CHANGED_IDS                                                                                \
    "(SELECT (e->>'id')::bigint FROM jsonb_array_elements($1::jsonb) e WHERE e->>'kind' <>"        \
    " 'batch')"

/* The event of each batch change in place, the job's state unchanged (one that ended since
 * the snapshot gets none: its worker fails the action, which gives the batch back). */
static const char *const batch_events_sql =
    "INSERT INTO job_events (job_id, from_state, to_state, event, actor, detail)"
    " SELECT j.id, j.state, j.state, 'batch', 'scheduler', e->>'detail'"
    " FROM jsonb_array_elements($1::jsonb) e JOIN jobs j ON j.id = (e->>'id')::bigint"
    " WHERE e->>'kind' = 'batch' AND j.state = 'RUNNING'";

/* What the changed jobs held, and their placement actions not yet taken (live_release_job
 * for all of them). */
static const char *const release_allocations_sql =
    "DELETE FROM allocations WHERE job_id IN " CHANGED_IDS;
static const char *const release_actions_sql =
    "UPDATE actions SET state = 'superseded', finished_at = now() WHERE id IN (SELECT id FROM"
    " actions WHERE job_id IN " CHANGED_IDS " AND state = 'pending' AND kind IN ('start',"
    " 'resize', 'migrate') ORDER BY id FOR UPDATE)"; /* locked in id order, as polls lock them */

static const char *const allocations_sql =
    "INSERT INTO allocations (job_id, node_id, gpu_idx) SELECT (e->>'id')::bigint,"
    " (s->>0)::bigint, (s->>1)::int FROM jsonb_array_elements($1::jsonb) e,"
    " jsonb_array_elements(e->'slots') s";

/* The actions in the array's order (their ids say the order workers take them in), each
 * spec but a suspend's and a batch change's with its job's command and env; each job's
 * current_plan and current_batch are its spec's, written in the same transaction (a suspend's
 * spec has no batch: the job keeps its own). */
static const char *const actions_sql =
    "WITH a AS (INSERT INTO actions (node_id, job_id, kind, spec, round_id)"
    " SELECT (x.e->>'node')::bigint, (x.e->>'id')::bigint, x.e->>'kind',"
    " CASE WHEN x.e->>'kind' IN ('suspend', 'batch') THEN x.e->'spec' ELSE x.e->'spec'"
    " || jsonb_build_object('command', j.command, 'env', j.env) END, $2"
    " FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(e, k)"
    " JOIN jobs j ON j.id = (x.e->>'id')::bigint ORDER BY x.k"
    " RETURNING job_id, spec->>'plan' AS plan, (spec->>'batch')::bigint AS batch)"
    " UPDATE jobs j SET current_plan = a.plan, current_batch = COALESCE(a.batch,"
    " j.current_batch) FROM a WHERE j.id = a.job_id";

/* Moves, releases, allocations, actions, batch events: five statements for all the round's
 * changes, not five per job (a round starting 2,732 jobs took 12 s on a loaded machine).
 * Returns actions written, or -1. */
static int write_changes(struct live_plan *p, PGconn *c, const char *round)
{
    int moves;
    json_t *all = changes_json(p, round, &moves);
    size_t n = json_array_size(all);
    char *text = all && n > 0 ? json_dumps(all, JSON_COMPACT) : NULL;
    int rc = all ? 0 : -1;
    if (n > 0 && !text)
        rc = -1;
    if (text) {
        const char *prm[] = {text, round};
        long moved = moves > 0 ? write_moves(c, prm) : 0;
        rc = moved == moves ? 0 : -1;
        if (moved >= 0 && moved != moves) /* no database error to tell it */
            log_warn("scheduler: round %s: %ld of its %d moves found their job in another state"
                     " than the snapshot's (changed meanwhile); the round is not written",
                     round, moves - moved, moves);
        if (rc == 0 && (db_command_params(c, release_allocations_sql, 1, prm) < 0 ||
                        db_command_params(c, release_actions_sql, 1, prm) < 0 ||
                        db_command_params(c, allocations_sql, 1, prm) < 0 ||
                        db_command_params(c, actions_sql, 2, prm) < 0 ||
                        db_command_params(c, batch_events_sql, 1, prm) < 0))
            rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const json_t *e = json_array_get(all, i);
        const char *to = json_string_value(json_object_get(e, "to"));
        if (!strcmp(json_string_value(json_object_get(e, "kind")), "batch"))
            log_info("job %lld: %s (batch by scheduler)",
                     (long long)json_integer_value(json_object_get(e, "id")),
                     json_string_value(json_object_get(e, "detail")));
        if (to)
            log_info("job %lld: %s -> %s (%s by scheduler: %s)",
                     (long long)json_integer_value(json_object_get(e, "id")),
                     json_string_value(json_object_get(e, "from")), to,
                     json_string_value(json_object_get(e, "ev")),
                     json_string_value(json_object_get(e, "detail")));
    }
    free(text);
    json_decref(all);
    return rc < 0 || write_slices(p, c, round) < 0 ? -1 : (int)n;
}

/* When pj is predicted to end, epoch seconds (< 0 unknown): a job holding GPUs after the
 * round ends when its model says at that size, a waiting one as predict_starts() found. */
static double predicted_finish(const struct live_plan *p, const struct live_plan_job *pj)
{
    if (pj->gpus <= 0)
        return pj->predicted_finish;
    double left = live_model_remaining_s(pj->model, pj->gpus);
    return left >= 0 && isfinite(left) ? p->s->now + left : -1;
}

/* One element of the job_sched upsert (new), for a row job_sched_due() found due: its times
 * are those it kept in pj. */
static json_t *job_sched_json(const struct live_plan *p, const struct live_plan_job *pj)
{
    json_t *e = json_pack("{s:I, s:I}", "id", (json_int_t)pj->sj->id, "metrics",
                          (json_int_t)pj->model->metrics_seen);
    if (pj->queue_position > 0) {
        json_object_set_new(e, "reason", json_string(pj->pending_reason));
        json_object_set_new(e, "pos", json_integer(pj->queue_position));
    }
    if (pj->sched_start >= 0)
        json_object_set_new(e, "start", json_real(pj->sched_start));
    if (pj->sched_finish >= 0)
        json_object_set_new(e, "finish", json_real(pj->sched_finish));
    /* the whole model when it changed, which holds its remaining work; else only that, merged
     * into the model the row keeps */
    int whole = pj->model->changed || pj->change != CH_KEEP;
    json_t *m = whole ? live_model_json(pj->model, pj->gpus, p->s)
                      : live_model_remaining_json(pj->model, pj->gpus);
    if (m && goodput_has_model(&pj->sj->batch)) { /* why it runs its batch (batch_view.h) */
        struct live_batch_view v;
        live_batch_view(p, pj, &v);
        json_object_set_new(m, "batch_choice", live_batch_view_json(&v));
    }
    json_object_set_new(e, whole ? "model" : "now", m);
    if (pj->migrated_by_request)
        json_object_set_new(e, "migrated", json_true());
    if (pj->model->has_estimate)
        json_object_set_new(e, "src",
                            json_string(sched_estimate_source_name(pj->model->estimate_source)));
    if (pj->sched_rem >= 0)
        json_object_set_new(e, "rem", json_real(pj->sched_rem));
    return e;
}

/* The upsert keeps this round's prediction of a job's finish (for its error at completion,
 * sql/014) when it has one and the last kept is older than max(60 s, the first's age / 32). */
#define ESTIMATE_DUE                                                                               \
    "(EXCLUDED.estimate_at IS NOT NULL AND (s.estimate_at IS NULL OR extract(epoch FROM now() -"   \
    " s.estimate_at) >= greatest(60, (extract(epoch FROM now()) - COALESCE((s.estimates->0->>0)"   \
    "::float8, extract(epoch FROM now()))) / 32)))"

/* A row that says the same as the one committed is written again at least this often: its
 * times (predicted finish, remaining seconds) follow the clock in between. */
#define JOB_SCHED_REFRESH_S 60.0

/* Whether time t (< 0: none) moved from what the last written w predicts (expected: w for an
 * absolute time, w - elapsed for a countdown) by more than max(30 s, 2 % of scale, the time
 * it still counts). */
static int moved(double t, double w, double expected, double scale)
{
    if ((t < 0) != (w < 0))
        return 1;
    if (t < 0)
        return 0;
    double tol = 0.02 * fabs(scale) > 30.0 ? 0.02 * fabs(scale) : 30.0;
    return fabs(t - expected) > tol;
}

/* Whether pj's row must be written: it is new or old enough, says something else, or its times
 * moved (moved()). Keeps what it says in pj for the commit. What it says but the times is
 * hashed from the fields job_sched_json() writes, not from that JSON (building, copying and
 * dumping an object for each of 5,000 jobs every round, to write ~500, was most of the
 * write's time). A refitted model (or a changed job) is always written; the count of reports
 * the model has seen is not something else: it grows with every report of a running job, and
 * no reader uses it. A waiting job's predicted start moves with the clock and with the jobs
 * around it: like its finish it is written again when it moved by more than max(30 s, 2 % of
 * the time to it), and at least every JOB_SCHED_REFRESH_S. */
static int job_sched_due(const struct live_plan *p, struct live_plan_job *pj)
{
    const struct live_model *m = pj->model;
    double now = p->s->now;
    pj->sched_start = pj->predicted_start;
    pj->sched_finish = predicted_finish(p, pj);
    pj->sched_rem = -1;
    if (m->has_estimate) {
        double left = live_model_remaining_s(m, pj->gpus > 0 ? pj->gpus : 1);
        pj->sched_rem = left >= 0 && isfinite(left) ? left : -1;
    }
    uint64_t h = fnv1a(FNV1A_INIT, &pj->sj->id, sizeof(pj->sj->id));
    int pos = pj->queue_position, migrated = pj->migrated_by_request != 0;
    h = fnv1a(h, &pos, sizeof(pos));
    if (pos > 0)
        h = fnv1a(h, pj->pending_reason, strlen(pj->pending_reason) + 1);
    h = fnv1a(h, &migrated, sizeof(migrated));
    int src = m->has_estimate ? (int)m->estimate_source : -1;
    h = fnv1a(h, &src, sizeof(src));
    if (goodput_has_model(&pj->sj->batch)) {
        struct live_batch_view v;
        live_batch_view(p, pj, &v);
        h = live_batch_view_hash(h, &v);
    }
    pj->sched_hash = h ? h : 1;
    double elapsed = now - m->sched_at;
    return m->sched_at <= 0 || m->changed || pj->change != CH_KEEP ||
           elapsed >= JOB_SCHED_REFRESH_S || elapsed < 0 || pj->sched_hash != m->sched_hash ||
           moved(pj->sched_start, m->sched_start, m->sched_start, pj->sched_start - now) ||
           moved(pj->sched_finish, m->sched_finish, m->sched_finish, pj->sched_finish - now) ||
           moved(pj->sched_rem, m->sched_rem, m->sched_rem - elapsed, pj->sched_rem);
}

/* Remembers what the committed round wrote (live_plan_write, after COMMIT). */
static void job_sched_committed(struct live_plan *p)
{
    for (size_t i = 0; i < p->njobs; i++) {
        struct live_plan_job *pj = &p->jobs[i];
        if (!pj->sched_written)
            continue;
        pj->model->sched_hash = pj->sched_hash;
        pj->model->sched_at = p->s->now;
        pj->model->sched_start = pj->sched_start;
        pj->model->sched_finish = pj->sched_finish;
        pj->model->sched_rem = pj->sched_rem;
    }
}

/* The rows of job_sched that say something new (job_sched_due): at 5,000 jobs the upsert of
 * every row took a quarter of each round, though most said what they said a round before. */
static int write_job_sched(struct live_plan *p, PGconn *c)
{
    json_t *all = json_array();
    for (size_t i = 0; all && i < p->njobs; i++) {
        struct live_plan_job *pj = &p->jobs[i];
        pj->sched_written = job_sched_due(p, pj);
        if (pj->sched_written && json_array_append_new(all, job_sched_json(p, pj)) < 0) {
            json_decref(all);
            return -1;
        }
    }
    if (json_array_size(all) == 0) {
        json_decref(all);
        return all ? 0 : -1;
    }
    char *text = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    const char *prm[] = {text};
    int rc = text
                 ? db_command_params(
                       c,
                       "INSERT INTO job_sched AS s (job_id, model, metrics_seen, pending_reason,"
                       " queue_position, predicted_start, predicted_finish, migrate_to, updated_at,"
                       " remaining_source, remaining_s, estimates, estimate_at)"
                       " SELECT (e->>'id')::bigint, COALESCE(e->'model', '{}'::jsonb) ||"
                       " COALESCE(e->'now', '{}'::jsonb), (e->>'metrics')::bigint,"
                       " e->>'reason', (e->>'pos')::int, to_timestamp((e->>'start')::float8),"
                       " to_timestamp((e->>'finish')::float8),"
                       " CASE WHEN e ? 'migrated' THEN -1 END, now(), e->>'src',"
                       " (e->>'rem')::float8, CASE WHEN e ? 'finish' THEN jsonb_build_array("
                       " jsonb_build_array(extract(epoch FROM now()), (e->>'finish')::float8,"
                       " e->>'src')) ELSE '[]' END, CASE WHEN e ? 'finish' THEN now() END"
                       " FROM jsonb_array_elements($1::jsonb) e"
                       " ON CONFLICT (job_id) DO UPDATE SET"
                       " model = COALESCE(s.model, '{}'::jsonb) || EXCLUDED.model,"
                       " metrics_seen = EXCLUDED.metrics_seen,"
                       " pending_reason = EXCLUDED.pending_reason,"
                       " queue_position = EXCLUDED.queue_position,"
                       " predicted_start = EXCLUDED.predicted_start,"
                       " predicted_finish = EXCLUDED.predicted_finish, updated_at = now(),"
                       " remaining_source = EXCLUDED.remaining_source,"
                       " remaining_s = EXCLUDED.remaining_s,"
                       " migrate_to = CASE WHEN EXCLUDED.migrate_to = -1 THEN NULL"
                       " ELSE s.migrate_to END,"
                       /* a prediction kept at most every max(60 s, its age / 32) */
                       " estimates = CASE WHEN " ESTIMATE_DUE " THEN s.estimates ||"
                       " EXCLUDED.estimates ELSE s.estimates END,"
                       " estimate_at = CASE WHEN " ESTIMATE_DUE " THEN now() ELSE s.estimate_at"
                       " END",
                       1, prm)
                 : -1;
    free(text);
    return rc;
}

static int begin_round(struct live_plan *p, PGconn *c, char *round, size_t len)
{
    char jobs[16];
    snprintf(jobs, sizeof(jobs), "%zu", p->njobs);
    const char *prm[] = {p->policy, jobs};
    PGresult *r = db_command(c, "BEGIN") == 0
                      ? db_exec(c,
                                "INSERT INTO sched_rounds (policy, duration_us, jobs, decisions,"
                                " actions) VALUES ($1, 0, $2, 0, 0) RETURNING id",
                                2, prm)
                      : NULL;
    int ok = r && db_ok(r) && PQntuples(r) == 1;
    if (ok)
        snprintf(round, len, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return ok && db_command(c, "DELETE FROM allocations a USING jobs j WHERE a.job_id = j.id"
                               " AND j.state IN ('COMPLETED', 'FAILED', 'CANCELLED')") == 0
               ? 0
               : -1;
}

static int end_round(struct live_plan *p, PGconn *c, const char *round, long long t0,
                     long long w0, struct live_round_result *out)
{
    char us[24], dec[16], act[16], down[16];
    out->duration_us = (monotime_us() - t0);
    out->write_us = (monotime_us() - w0);
    out->decisions = p->d->nchanged;
    snprintf(us, sizeof(us), "%lld", out->duration_us);
    snprintf(dec, sizeof(dec), "%d", out->decisions);
    snprintf(act, sizeof(act), "%d", out->actions);
    snprintf(down, sizeof(down), "%d", out->nodes_down);
    const char *prm[] = {round, us, dec, act, down};
    return db_command_params(c,
                             "UPDATE sched_rounds SET duration_us = $2, decisions = $3,"
                             " actions = $4, nodes_down = $5 WHERE id = $1",
                             5, prm) == 0 &&
                   db_command(c, "COMMIT") == 0
               ? 0
               : -1;
}

int live_plan_write(struct live_plan *p, PGconn *c, long long t0_us,
                     struct live_round_result *out, char *err, size_t errlen)
{
    char round[24] = "";
    snprintf(out->policy, sizeof(out->policy), "%s", p->policy);
    out->jobs = (int)p->njobs;
    out->refits = p->refits;
    out->refit_us = p->refit_us;
    long long w0 = monotime_us();
    if (begin_round(p, c, round, sizeof(round)) < 0 ||
        (out->actions = write_changes(p, c, round)) < 0 || write_job_sched(p, c) < 0 ||
        live_after_write(p, c) < 0 ||
        end_round(p, c, round, t0_us, w0, out) < 0) {
        snprintf(err, errlen, "writing round: %s", PQerrorMessage(c));
        db_command(c, "ROLLBACK");
        return -1;
    }
    out->round_id = strtoll(round, NULL, 10);
    job_sched_committed(p);
    for (size_t i = 0; i < p->njobs; i++)
        p->jobs[i].model->changed = 0;
    return 0;
}
