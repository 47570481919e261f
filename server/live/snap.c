/* snap: the round's snapshot, one read-only repeatable-read transaction (snap.h): nodes, GPU
 * models, active jobs, allocations, users' shares, finished run times, the waiting jobs'
 * dependencies; lookups by id. */
#include "snap.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "spec/jobspec.h"
#include "store/db.h"

#define ACTIVE_STATES "('PENDING', 'STARTING', 'RUNNING', 'SUSPENDED', 'RESIZING', 'MIGRATING')"

static const char *const nodes_sql =
    "SELECT n.id, n.name, n.state = 'UP', count(g.idx),"
    " COALESCE(array_to_string(array_agg(g.idx ORDER BY g.idx) FILTER (WHERE g.idx IS NOT NULL),"
    " ' '), ''), n.cpus, n.memory_bytes, n.simulated, COALESCE(min(g.model), ''),"
    " COALESCE(min(g.memory_bytes), 0), n.drained_at IS NOT NULL,"
    " array_to_string(n.drain_gpus, ' '), n.drain_evacuate,"
    " COALESCE(array_to_string(array_agg(g.idx) FILTER (WHERE g.fault IS NOT NULL), ' '), ''),"
    " COALESCE(array_to_string(array_agg(COALESCE(g.island, -1) ORDER BY g.idx)"
    " FILTER (WHERE g.idx IS NOT NULL), ' '), ''), n.labels->>'switch', n.labels->>'rack'"
    " FROM nodes n LEFT JOIN node_gpus g ON g.node_id = n.id GROUP BY n.id ORDER BY n.id";

static const char *const meta_sql =
    "SELECT extract(epoch FROM now()), (SELECT avg(extract(epoch FROM finished_at - created_at))"
    " FROM actions WHERE kind = 'resize' AND state = 'done')";

/* The active jobs, in the columns of enum job_col. Not their command and environment: only
 * the actions a round writes carry them, and actions_sql (plan_write.c) takes them from the
 * jobs table there; read here for every job each round they were a fifth of this statement's
 * time at 5,000 jobs (make bench-scale, 2026-11-28). A job's count of reports is
 * job_last_report's (sql/031), one row, not a sum over its job_metric_sums rows. */
enum job_col {
    JC_ID, JC_STATE, JC_SUBMIT, JC_PRIORITY, JC_GPUS, JC_MIN_GPUS, JC_MAX_GPUS, JC_ELASTIC,
    JC_BATCH_PER_GPU, JC_MODEL, JC_NMETRICS, JC_MIGRATE_TO, JC_PLAN_SPEC, JC_CURRENT_PLAN,
    JC_CKPT_GEN, JC_USER_ID, JC_STEPS, JC_EPOCHS, JC_STOPS_EARLY, JC_BATCH_SPEC, JC_GRAD_SQR,
    JC_GRAD_VAR, JC_CURRENT_BATCH, JC_TOPOLOGY, JC_HELD, JC_DEADLINE, JC_CKPT_STEP, JC_CKPT_AT,
    JC_FORECAST_FINISH, JC_LAST_STEP, JC_REDO
};
static const char *const jobs_sql =
    "SELECT j.id, j.state, extract(epoch FROM j.submitted_at), j.priority, j.gpus, j.min_gpus,"
    " j.max_gpus, j.elastic, j.batch_per_gpu, j.model::text,"
    " COALESCE(l.reports, 0),"
    " s.migrate_to, j.plan_spec::text, j.current_plan, j.ckpt_gen, j.user_id,"
    " COALESCE(j.total_steps, j.reported_total_steps, 0), COALESCE(j.epochs, 0),"
    " j.stop_at_convergence OR j.stop_at_loss IS NOT NULL, j.batch_spec::text,"
    " COALESCE(j.grad_sqr, 0), COALESCE(j.grad_var, 0), COALESCE(j.current_batch, 0),"
    " j.topology::text,"
    " o.held_s + CASE WHEN o.gpus > 0 THEN greatest(extract(epoch FROM now() - o.since), 0)"
    " ELSE 0 END, COALESCE(extract(epoch FROM j.deadline), 0), COALESCE(j.checkpoint_step, 0),"
    " COALESCE(extract(epoch FROM j.checkpoint_at), 0),"
    " COALESCE(extract(epoch FROM f.finish_p50), 0), COALESCE(l.step, 0), COALESCE(l.redo, 0)"
    " FROM jobs j LEFT JOIN job_sched s ON s.job_id = j.id"
    " LEFT JOIN job_last_report l ON l.job_id = j.id"
    " LEFT JOIN job_ledger_open o ON o.job_id = j.id"
    " LEFT JOIN job_forecasts f ON f.job_id = j.id"
    " WHERE j.state IN " ACTIVE_STATES " ORDER BY j.id";

/* The users with a share or a quota of their own (the others count as share 1, no quota). */
static const char *const users_sql =
    "SELECT id, share, COALESCE(max_gpus, 0) FROM users WHERE share <> 1 OR max_gpus IS NOT NULL"
    " ORDER BY id";

/* How long this cluster's latest completed jobs ran (first RUNNING to finish): the prior of
 * the remaining work of a job that declared no length (docs/scheduler.md, "Estimates"). */
static const char *const finished_sql =
    "SELECT extract(epoch FROM j.finished_at - r.at) FROM (SELECT id, finished_at FROM jobs"
    " WHERE state = 'COMPLETED' AND finished_at IS NOT NULL ORDER BY finished_at DESC "
    "LIMIT " SNAP_FINISHED_MAX
    ") j CROSS JOIN LATERAL (SELECT min(e.at) AS at FROM job_events e WHERE"
    " e.job_id = j.id AND e.to_state = 'RUNNING') r WHERE r.at IS NOT NULL AND j.finished_at > "
    "r.at";

/* The dependencies of the PENDING jobs that have some, in each job's order, with the jobs each
 * names counted by how they ended (the core's struct deps_target): a job dependency names
 * one job, an array's every job of that array_id. state: a job's state (min() of one row);
 * ended: when the last of them ended (NULL while none has). */
static const char *const deps_sql =
    "SELECT j.id, d.v ? 'array', COALESCE(d.v->>'job', d.v->>'array'),"
    " COALESCE(d.v->>'when', 'ok'), x.total, x.ok, x.notok, x.state, extract(epoch FROM x.ended)"
    " FROM jobs j CROSS JOIN LATERAL jsonb_array_elements(j.deps) WITH ORDINALITY AS d(v, n)"
    " CROSS JOIN LATERAL (SELECT count(*) AS total,"
    " count(*) FILTER (WHERE t.state = 'COMPLETED') AS ok,"
    " count(*) FILTER (WHERE t.state IN ('FAILED', 'CANCELLED')) AS notok, min(t.state) AS state,"
    " max(t.finished_at) AS ended"
    " FROM jobs t WHERE t.id = (d.v->>'job')::bigint OR t.array_id = (d.v->>'array')::bigint) x"
    " WHERE j.deps IS NOT NULL AND j.state = 'PENDING' ORDER BY j.id, d.n";

static const char *const allocs_sql =
    "SELECT a.job_id, a.node_id, a.gpu_idx, extract(epoch FROM a.since)"
    " FROM allocations a JOIN jobs j ON j.id = a.job_id"
    " WHERE j.state IN " ACTIVE_STATES " ORDER BY a.job_id, a.node_id, a.gpu_idx";

void live_snap_destroy(struct live_snap *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < sizeof(s->res) / sizeof(s->res[0]); i++)
        PQclear(s->res[i]);
    free(s->nodes);
    free(s->jobs);
    free(s->slot_pool);
    free(s->users);
    free(s->finished_run_s);
    free(s->deps_pool);
    free(s);
}

int live_snap_gpu_position(const struct snap_node *n, int idx)
{
    for (int k = 0; k < n->ngpus; k++)
        if (n->gpu_index[k] == idx)
            return k;
    return -1;
}

/* bsearch()'s comparison of an id with an item that begins with its int64_t id. */
static int cmp_id(const void *key, const void *item)
{
    int64_t a = *(const int64_t *)key, b;
    memcpy(&b, item, sizeof(b));
    return (a > b) - (a < b);
}

void *live_snap_by_id(const void *items, size_t n, size_t size, int64_t id)
{
    return n ? bsearch(&id, items, n, size, cmp_id) : NULL;
}

struct snap_job *live_snap_job(const struct live_snap *s, int64_t id)
{
    return live_snap_by_id(s->jobs, s->njobs, sizeof(*s->jobs), id);
}

int live_snap_node_index(const struct live_snap *s, int64_t id)
{
    const struct snap_node *n = live_snap_by_id(s->nodes, s->nnodes, sizeof(*s->nodes), id);
    return n ? (int)(n - s->nodes) : -1;
}

static long long ll(const PGresult *r, int i, int c)
{
    return strtoll(PQgetvalue(r, i, c), NULL, 10);
}

static double dbl(const PGresult *r, int i, int c)
{
    return strtod(PQgetvalue(r, i, c), NULL);
}

static const char *str_or_null(const PGresult *r, int i, int c)
{
    return PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
}

/* The simulator's GPU models (sim/options.c), by the word that names them. */
static const struct {
    const char *word;
    int index;
    double speed, mem_gb;
} gpu_models[] = {
    {"v100", 1, 1.0, 32}, {"a100", 2, 2.0, 80}, {"h100", 3, 3.0, 80}, {"t4", 4, 0.4, 16}};

int live_snap_gpu_model(const char *name, int *index, double *speed, double *mem_gb)
{
    for (const char *p = name; p && *p;) {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        for (size_t k = 0; n > 0 && k < sizeof(gpu_models) / sizeof(gpu_models[0]); k++)
            if (strlen(gpu_models[k].word) == n && strncasecmp(p, gpu_models[k].word, n) == 0) {
                *index = gpu_models[k].index;
                *speed = gpu_models[k].speed;
                *mem_gb = gpu_models[k].mem_gb;
                return 1;
            }
        p += n ? n : 1;
    }
    return 0;
}

/* A node's hardware for the core: its GPU model (an unknown name gets 100 + the number of
 * distinct unknown names before it), memory per GPU (reported, else the model's), and its
 * host resources unless it is simulated (its CPUs are the test host's, shared). */
static void node_hardware(struct live_snap *s, size_t i, const PGresult *r)
{
    struct snap_node *node = &s->nodes[i];
    double mem_gb = 0, reported = dbl(r, (int)i, 9) / 1e9;
    node->gpu_name = PQgetvalue(r, (int)i, 8);
    node->gpu_speed = 1.0;
    if (!live_snap_gpu_model(node->gpu_name, &node->gpu_model, &node->gpu_speed, &mem_gb)) {
        int unknown = 0;
        node->gpu_model = -1;
        for (size_t k = 0; k < i && node->gpu_model < 0; k++) {
            if (strcmp(s->nodes[k].gpu_name, node->gpu_name) == 0)
                node->gpu_model = s->nodes[k].gpu_model;
            unknown += s->nodes[k].gpu_model >= 100;
        }
        if (node->gpu_model < 0)
            node->gpu_model = 100 + unknown;
    }
    node->gpu_mem_gb = reported > 0 ? reported : mem_gb;
    if (strcmp(PQgetvalue(r, (int)i, 7), "t") != 0) {
        node->cpu_cores = (int)ll(r, (int)i, 5);
        node->host_mem_gb = dbl(r, (int)i, 6) / 1e9;
    }
}

/* The core's positions of the node's GPUs of the indices in text ("0 3"), as a mask. */
static uint64_t gpu_mask(const struct snap_node *node, const char *p)
{
    uint64_t m = 0;
    char *end;
    for (long idx = strtol(p, &end, 10); end != p; idx = strtol(p, &end, 10)) {
        int k = live_snap_gpu_position(node, (int)idx);
        if (k >= 0)
            m |= UINT64_C(1) << k;
        p = end;
    }
    return m;
}

/* A node's drain (sql/033): the core's positions of its drained GPUs (all of them when the
 * drain names none), and whether they are evacuated; and its GPUs with a fault (sql/034). */
static void node_drain(struct snap_node *node, const PGresult *r, int i)
{
    node->failed = gpu_mask(node, PQgetvalue(r, i, 13));
    if (strcmp(PQgetvalue(r, i, 10), "t") != 0)
        return;
    node->evacuate = strcmp(PQgetvalue(r, i, 12), "t") == 0;
    if (PQgetisnull(r, i, 11)) {
        node->drained = node->ngpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << node->ngpus) - 1;
        return;
    }
    node->drained = gpu_mask(node, PQgetvalue(r, i, 11));
}

/* The nodes' topology (sql/037, sql/035): each GPU's island in the core's numbering, and the
 * switch and rack of their labels numbered 1.. (domain.h). Returns 0, or -1 (ENOMEM). */
static int node_topology(struct live_snap *s, const PGresult *r)
{
    const char **names = calloc(s->nnodes + 1, sizeof(*names));
    int *ids = calloc(s->nnodes + 1, sizeof(*ids));
    for (size_t i = 0; names && ids && i < s->nnodes; i++) {
        struct snap_node *node = &s->nodes[i];
        int raw[SCHED_MAX_GPUS_PER_NODE];
        const char *p = PQgetvalue(r, (int)i, 14);
        for (int k = 0; k < node->ngpus; k++)
            raw[k] = (int)strtol(p, (char **)&p, 10);
        domain_islands_from(raw, node->ngpus, node->island);
    }
    for (int col = 15; names && ids && col <= 16; col++) {
        for (size_t i = 0; i < s->nnodes; i++)
            names[i] = str_or_null(r, (int)i, col);
        domain_number(names, s->nnodes, ids);
        for (size_t i = 0; i < s->nnodes; i++)
            *(col == 15 ? &s->nodes[i].switch_id : &s->nodes[i].rack_id) = ids[i];
    }
    int rc = names && ids ? 0 : -1;
    free(names);
    free(ids);
    return rc;
}

static int fill_nodes(struct live_snap *s, const PGresult *r)
{
    s->nnodes = (size_t)PQntuples(r);
    s->nodes = calloc(s->nnodes + 1, sizeof(*s->nodes));
    if (!s->nodes)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        int n = (int)ll(r, i, 3);
        struct snap_node *node = &s->nodes[i];
        node->id = ll(r, i, 0);
        node->name = PQgetvalue(r, i, 1);
        node->up = strcmp(PQgetvalue(r, i, 2), "t") == 0;
        node->ngpus = n > SCHED_MAX_GPUS_PER_NODE ? SCHED_MAX_GPUS_PER_NODE : n;
        const char *idx = PQgetvalue(r, i, 4);
        for (int k = 0; k < node->ngpus; k++)
            node->gpu_index[k] = (int)strtol(idx, (char **)&idx, 10);
        node_hardware(s, (size_t)i, r);
        node_drain(node, r, i);
    }
    return node_topology(s, r);
}

/* The job's batch model: what it declared, its gradient statistics, its current batch. */
static void job_batch(struct snap_job *j, const PGresult *r, int i)
{
    if (PQgetisnull(r, i, JC_BATCH_SPEC))
        return;
    json_t *decl = json_loads(PQgetvalue(r, i, JC_BATCH_SPEC), 0, NULL);
    jobspec_batch_read(decl, dbl(r, i, JC_GRAD_SQR), dbl(r, i, JC_GRAD_VAR),
                       (long)ll(r, i, JC_CURRENT_BATCH), &j->batch);
    j->lr_scaling = jobspec_batch_lr_scaling(decl);
    json_decref(decl);
}

/* The job's topology bound (jobs.topology, jobspec_topology.c). */
static void job_topology(struct snap_job *j, const PGresult *r, int i)
{
    if (PQgetisnull(r, i, JC_TOPOLOGY))
        return;
    json_t *decl = json_loads(PQgetvalue(r, i, JC_TOPOLOGY), 0, NULL);
    jobspec_topology_read(decl, &j->max_switches, &j->max_switches_wait_s);
    json_decref(decl);
}

/* The job's declared plans and the plan it runs with. */
static void job_plans(struct snap_job *j, const PGresult *r, int i)
{
    json_t *decl = PQgetisnull(r, i, JC_PLAN_SPEC)
                       ? NULL
                       : json_loads(PQgetvalue(r, i, JC_PLAN_SPEC), 0, NULL);
    jobspec_plans_read(decl, &j->plan);
    json_decref(decl);
    j->current_plan = str_or_null(r, i, JC_CURRENT_PLAN);
    if (!j->current_plan || jobspec_plan_parse(j->current_plan, &j->cur_plan) < 0)
        jobspec_plan_parse("dp", &j->cur_plan);
}

static int fill_jobs(struct live_snap *s, const PGresult *r)
{
    s->njobs = (size_t)PQntuples(r);
    s->jobs = calloc(s->njobs + 1, sizeof(*s->jobs));
    if (!s->jobs)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        struct snap_job *j = &s->jobs[i];
        j->id = ll(r, i, JC_ID);
        if (job_state_parse(PQgetvalue(r, i, JC_STATE), &j->state) < 0)
            j->state = JOB_PENDING;
        j->submit = dbl(r, i, JC_SUBMIT);
        j->priority = (int)ll(r, i, JC_PRIORITY);
        j->gpus = (int)ll(r, i, JC_GPUS);
        j->min_gpus = (int)ll(r, i, JC_MIN_GPUS);
        j->max_gpus = (int)ll(r, i, JC_MAX_GPUS);
        j->elastic = strcmp(PQgetvalue(r, i, JC_ELASTIC), "t") == 0;
        j->batch_per_gpu = (int)ll(r, i, JC_BATCH_PER_GPU);
        j->model = str_or_null(r, i, JC_MODEL);
        j->nmetrics = ll(r, i, JC_NMETRICS);
        j->migrate_to = PQgetisnull(r, i, JC_MIGRATE_TO) ? -1 : ll(r, i, JC_MIGRATE_TO);
        j->ckpt_gen = (int)ll(r, i, JC_CKPT_GEN);
        j->user_id = ll(r, i, JC_USER_ID);
        j->declared_steps = ll(r, i, JC_STEPS);
        j->declared_epochs = dbl(r, i, JC_EPOCHS);
        j->stops_at_convergence = strcmp(PQgetvalue(r, i, JC_STOPS_EARLY), "t") == 0;
        j->held_s = PQgetisnull(r, i, JC_HELD) ? -1.0 : dbl(r, i, JC_HELD);
        j->checkpoint_step = ll(r, i, JC_CKPT_STEP);
        j->checkpoint_at = dbl(r, i, JC_CKPT_AT);
        j->forecast_finish = dbl(r, i, JC_FORECAST_FINISH);
        j->last_step = ll(r, i, JC_LAST_STEP);
        j->redo_steps = ll(r, i, JC_REDO);
        job_plans(j, r, i);
        job_batch(j, r, i);
        job_topology(j, r, i);
        j->deadline = dbl(r, i, JC_DEADLINE); /* sql/042; 0: none */
    }
    return 0;
}


/* Allocations come sorted by job: each job's slots are contiguous in the pool. */
static int fill_allocs(struct live_snap *s, const PGresult *r)
{
    s->slot_pool = calloc((size_t)PQntuples(r) + 1, sizeof(*s->slot_pool));
    if (!s->slot_pool)
        return -1;
    size_t k = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        struct snap_job *j = live_snap_job(s, ll(r, i, 0));
        int node = live_snap_node_index(s, ll(r, i, 1));
        int gpu = node < 0 ? -1 : live_snap_gpu_position(&s->nodes[node], (int)ll(r, i, 2));
        if (!j || gpu < 0)
            continue;
        double since = dbl(r, i, 3);
        if (j->cur_gpus == 0) {
            j->slots = &s->slot_pool[k];
            j->since_first = j->since_last = since;
        }
        s->slot_pool[k++] = (struct sched_slot){node, gpu};
        j->cur_gpus++;
        j->since_first = since < j->since_first ? since : j->since_first;
        j->since_last = since > j->since_last ? since : j->since_last;
    }
    return 0;
}

static int fill_users(struct live_snap *s, const PGresult *r)
{
    s->nusers = (size_t)PQntuples(r);
    s->users = calloc(s->nusers + 1, sizeof(*s->users));
    if (!s->users)
        return -1;
    for (size_t i = 0; i < s->nusers; i++)
        s->users[i] = (struct sched_user){
            .id = ll(r, (int)i, 0), .share = dbl(r, (int)i, 1), .max_gpus = (int)ll(r, (int)i, 2)};
    return 0;
}

static int fill_finished(struct live_snap *s, const PGresult *r)
{
    s->nfinished = (size_t)PQntuples(r);
    s->finished_run_s = calloc(s->nfinished + 1, sizeof(*s->finished_run_s));
    if (!s->finished_run_s)
        return -1;
    for (size_t i = 0; i < s->nfinished; i++)
        s->finished_run_s[i] = dbl(r, (int)i, 0);
    return 0;
}

/* Rows come sorted by job: each job's dependencies are contiguous in the pool. */
static int fill_deps(struct live_snap *s, const PGresult *r)
{
    s->deps_pool = calloc((size_t)PQntuples(r) + 1, sizeof(*s->deps_pool));
    if (!s->deps_pool)
        return -1;
    size_t k = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        struct snap_job *j = live_snap_job(s, ll(r, i, 0));
        enum deps_when w = DEPS_OK;
        if (!j || deps_when_parse(PQgetvalue(r, i, 3), &w) < 0)
            continue;
        if (j->ndeps == 0)
            j->deps = &s->deps_pool[k];
        s->deps_pool[k++] = (struct deps_target){.id = ll(r, i, 2),
                                                 .array = strcmp(PQgetvalue(r, i, 1), "t") == 0,
                                                 .when = w,
                                                 .total = (int)ll(r, i, 4),
                                                 .ok = (int)ll(r, i, 5),
                                                 .notok = (int)ll(r, i, 6),
                                                 .state = str_or_null(r, i, 7)};
        j->ndeps++;
        double ended = PQgetisnull(r, i, 8) ? 0 : dbl(r, i, 8);
        j->runnable_since = ended > j->runnable_since ? ended : j->runnable_since;
    }
    return 0;
}

struct live_snap *live_snap_read(PGconn *c, char *err, size_t errlen)
{
    struct live_snap *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const char *const sql[] = {nodes_sql, jobs_sql,     allocs_sql, meta_sql,
                               users_sql, finished_sql, deps_sql};
    int ok = db_command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") == 0;
    for (int i = 0; ok && i < 7; i++) {
        s->res[i] = db_exec(c, sql[i], 0, NULL);
        ok = db_ok(s->res[i]);
        if (!ok)
            snprintf(err, errlen, "snapshot: %s", PQresultErrorMessage(s->res[i]));
    }
    if (ok && db_command(c, "COMMIT") < 0) {
        snprintf(err, errlen, "snapshot: commit failed");
        ok = 0;
    }
    if (!ok) {
        db_command(c, "ROLLBACK");
        live_snap_destroy(s);
        return NULL;
    }
    s->now = dbl(s->res[3], 0, 0);
    s->resize_cost_s = PQgetisnull(s->res[3], 0, 1) ? -1 : dbl(s->res[3], 0, 1);
    if (fill_nodes(s, s->res[0]) < 0 || fill_jobs(s, s->res[1]) < 0 ||
        fill_allocs(s, s->res[2]) < 0 || fill_users(s, s->res[4]) < 0 ||
        fill_finished(s, s->res[5]) < 0 || fill_deps(s, s->res[6]) < 0) {
        snprintf(err, errlen, "out of memory");
        live_snap_destroy(s);
        return NULL;
    }
    return s;
}
