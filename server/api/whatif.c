/* whatif: POST and GET /api/v1/whatif: the cluster's completed jobs as a trace, replayed under
 * each policy with the live settings (whatif_run.c runs the simulator). */
#include "whatif.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http/http.h"
#include "http/problem.h"
#include "live/live.h"
#include "log.h"
#include "sched.h"
#include "store/db.h"
#include "whatif_run.h"

#define SINCE_DEFAULT_S (7 * 86400.0)
#define SINCE_MAX_S (366 * 86400.0)
#define MAX_JOBS 20000 /* the latest jobs of the period, at most */
#define MAX_POLICIES 32

/* ---- the request ---- */

struct request {
    double since_s;
    const char *policies[MAX_POLICIES];
    int npolicies;
};

static int parse_policies(struct api_call *call, const json_t *v, struct request *q)
{
    if (!v || (json_is_string(v) && !strcmp(json_string_value(v), "all"))) {
        for (const struct sched_policy_ops *const *p = sched_policy_list();
             *p && q->npolicies < MAX_POLICIES; p++)
            q->policies[q->npolicies++] = (*p)->name;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MAX_POLICIES)
        return api_field_error(call, "policies", "expected \"all\" or 1..32 policy names");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const struct sched_policy_ops *ops =
            json_is_string(e) ? sched_policy_find(json_string_value(e)) : NULL;
        if (!ops)
            return api_field_error(call, "policies", "expected the names GET /scheduler lists");
        for (int k = 0; k < q->npolicies; k++)
            if (!strcmp(q->policies[k], ops->name))
                return api_field_error(call, "policies", "a policy is named twice");
        q->policies[q->npolicies++] = ops->name;
    }
    return 0;
}

static int parse_request(struct api_call *call, const json_t *body, struct request *q)
{
    memset(q, 0, sizeof(*q));
    q->since_s = SINCE_DEFAULT_S;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "since_s") && strcmp(key, "policies"))
            return api_field_error(call, key, "unknown field (since_s, policies)");
    }
    v = json_object_get(body, "since_s");
    if (v) {
        if (!json_is_number(v) || !(json_number_value(v) >= 60) ||
            json_number_value(v) > SINCE_MAX_S)
            return api_field_error(call, "since_s", "expected seconds, 60..31622400");
        q->since_s = json_number_value(v);
    }
    return parse_policies(call, json_object_get(body, "policies"), q);
}

/* ---- the trace ---- */

/* The jobs that completed in the period, oldest first: $1 the period in seconds, $2 at most
 * this many (the latest). Their run time is the time they held GPUs or were on their way to
 * (STARTING, RUNNING, RESIZING, MIGRATING), from their events; their queueing, submission to
 * first start. What the live scheduler measured of each: its speed model's source and, when
 * fitted from its own step times, its coefficients, examples per GPU and dataset size (the
 * last model the rounds wrote, job_sched); its course, the minibatches it reported at each
 * world size and their mean seconds (job_metric_sums, every GPU model together); its
 * convergence fit and its last gradient statistics. */
static const char *const jobs_sql =
    "WITH done AS (SELECT j.id, j.submitted_at, j.finished_at, j.gpus, j.min_gpus, j.max_gpus,"
    " j.elastic, u.name AS who, j.grad_sqr, j.grad_var FROM jobs j JOIN users u"
    " ON u.id = j.user_id WHERE j.state = 'COMPLETED' AND j.finished_at IS NOT NULL"
    " AND j.submitted_at >= now() - make_interval(secs => $1::float8)"
    " ORDER BY j.submitted_at DESC, j.id DESC LIMIT $2::int),"
    " ev AS (SELECT e.job_id, e.to_state, e.at, lead(e.at) OVER (PARTITION BY e.job_id"
    " ORDER BY e.at, e.id) AS next_at FROM job_events e JOIN done d ON d.id = e.job_id),"
    " run AS (SELECT ev.job_id, sum(extract(epoch FROM COALESCE(ev.next_at, d.finished_at)"
    " - ev.at)) FILTER (WHERE ev.to_state IN ('STARTING', 'RUNNING', 'RESIZING', 'MIGRATING'))"
    " AS run_s, min(ev.at) FILTER (WHERE ev.to_state = 'STARTING') AS started"
    " FROM ev JOIN done d ON d.id = ev.job_id GROUP BY ev.job_id),"
    " ws AS (SELECT s.job_id, s.world_size, sum(s.reports) AS n, sum(s.timed) AS timed,"
    " sum(s.sum_seconds) AS secs FROM job_metric_sums s JOIN done d ON d.id = s.job_id"
    " GROUP BY s.job_id, s.world_size),"
    " course AS (SELECT job_id, string_agg(world_size || ':' || n || COALESCE(':' ||"
    " to_char(secs / NULLIF(timed, 0), 'FM999999990.000000'), ''), ';' ORDER BY world_size)"
    " AS course FROM ws WHERE n > 0 GROUP BY job_id)"
    " SELECT d.id, extract(epoch FROM d.submitted_at - min(d.submitted_at) OVER ())::float8,"
    " d.gpus, d.min_gpus, d.max_gpus, d.elastic, d.who,"
    " COALESCE(r.run_s, extract(epoch FROM d.finished_at - d.submitted_at))::float8,"
    " extract(epoch FROM d.finished_at - d.submitted_at)::float8,"
    " extract(epoch FROM COALESCE(r.started, d.submitted_at) - d.submitted_at)::float8,"
    " " DB_TS("min(d.submitted_at) OVER ()") ", " DB_TS("now()") ","
    " COALESCE(m.model->>'source', 'none'),"
    " CASE WHEN m.model->>'source' = 'fitted' THEN (SELECT string_agg(t.x, ';' ORDER BY t.k)"
    " FROM jsonb_array_elements_text(m.model->'speed'->'theta') WITH ORDINALITY t(x, k)) END,"
    " CASE WHEN m.model->>'source' = 'fitted' THEN m.model->'speed'->>'batch_per_gpu' END,"
    " CASE WHEN m.model->>'source' = 'fitted' THEN m.model->>'dataset_size' END,"
    " c.course, CASE WHEN jsonb_typeof(m.model->'convergence') = 'object' THEN"
    " concat_ws(';', m.model->'convergence'->>'b0', m.model->'convergence'->>'b1',"
    " m.model->'convergence'->>'b2') END, d.grad_sqr, d.grad_var FROM done d"
    " LEFT JOIN run r ON r.job_id = d.id LEFT JOIN job_sched m ON m.job_id = d.id"
    " LEFT JOIN course c ON c.job_id = d.id ORDER BY d.submitted_at, d.id";

enum { J_ID, J_SUBMIT, J_GPUS, J_MIN, J_MAX, J_ELASTIC, J_USER, J_RUN, J_JCT, J_QUEUE, J_FIRST,
       J_NOW, J_SOURCE, J_THETA, J_BATCH, J_DATASET, J_COURSE, J_LOSS, J_GSQR, J_GVAR };

static double cell(const PGresult *r, int i, int c)
{
    return strtod(PQgetvalue(r, i, c), NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What the trace carries of each job's measured models, counted into measured. */
struct model_counts {
    int speed, course, loss, grad;
};

/* The row's models as the trace's last columns: speed_model, speed_theta, batch_per_gpu,
 * dataset_size, course, loss_model, grad_sqr, grad_var (empty cells: not measured). */
static void model_cells(FILE *f, const PGresult *r, int i, struct model_counts *n)
{
    fprintf(f, ",%s", PQgetvalue(r, i, J_SOURCE));
    for (int c = J_THETA; c <= J_GVAR; c++)
        fprintf(f, ",%s", PQgetvalue(r, i, c)); /* numbers, ';' and ':' only: no quoting */
    n->speed += !PQgetisnull(r, i, J_THETA) && PQgetvalue(r, i, J_THETA)[0];
    n->course += !PQgetisnull(r, i, J_COURSE);
    n->loss += !PQgetisnull(r, i, J_LOSS);
    n->grad += !PQgetisnull(r, i, J_GSQR) && !PQgetisnull(r, i, J_GVAR);
}

/* The CSV of the rows (new) and their measured figures (new) into *measured. */
static char *trace_csv(const PGresult *r, json_t **measured)
{
    int n = PQntuples(r);
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    double *jct = malloc(((size_t)n + 1) * sizeof(*jct));
    if (!f || !jct) {
        if (f)
            fclose(f);
        free(csv);
        free(jct);
        return NULL;
    }
    fputs("job_id,submit_time_s,num_gpus,duration_s,user,elastic,min_gpus,max_gpus,"
          "speed_model,speed_theta,batch_per_gpu,dataset_size,course,loss_model,grad_sqr,"
          "grad_var\n",
          f);
    double sum_jct = 0, sum_queue = 0;
    struct model_counts models = {0};
    for (int i = 0; i < n; i++) {
        char who[64];
        snprintf(who, sizeof(who), "%s", PQgetvalue(r, i, J_USER));
        for (char *c = who; *c; c++)
            if (*c == ',' || *c == '\n' || *c == '\r' || *c == '"')
                *c = '_';
        int elastic = PQgetvalue(r, i, J_ELASTIC)[0] == 't';
        double run = cell(r, i, J_RUN);
        fprintf(f, "%s,%.3f,%s,%.3f,%s,%d,%s,%s", PQgetvalue(r, i, J_ID), cell(r, i, J_SUBMIT),
                PQgetvalue(r, i, J_GPUS), run > 0.001 ? run : 0.001, who, elastic,
                elastic ? PQgetvalue(r, i, J_MIN) : "", elastic ? PQgetvalue(r, i, J_MAX) : "");
        model_cells(f, r, i, &models);
        fputc('\n', f);
        jct[i] = cell(r, i, J_JCT);
        sum_jct += jct[i];
        sum_queue += cell(r, i, J_QUEUE);
    }
    int bad = ferror(f);
    bad |= fclose(f);
    qsort(jct, (size_t)n, sizeof(*jct), cmp_double);
    int k = (int)ceil(0.99 * n) - 1;
    *measured = json_pack("{s:i, s:f, s:f, s:f, s:{s:i, s:i, s:i, s:i}}", "jobs", n,
                          "mean_jct_s", sum_jct / n, "p99_jct_s", jct[k < 0 ? 0 : k],
                          "mean_queue_s", sum_queue / n, "models", "speed", models.speed,
                          "course", models.course, "convergence", models.loss, "gradient",
                          models.grad);
    free(jct);
    if (bad) {
        free(csv);
        return NULL;
    }
    return csv;
}

/* The simulator's --cluster for the nodes up ("2x4:v100,1x8:a100"), each group of its GPU type
 * (v100 for a model the simulator does not know), into out; 0 when none. */
static int cluster_spec(PGconn *db, char *out, size_t len)
{
    PGresult *r = db_exec(db,
                          "SELECT count(*), g.n, g.model FROM (SELECT n.id, count(*) AS n,"
                          " lower(min(gp.model)) AS model FROM nodes n JOIN node_gpus gp"
                          " ON gp.node_id = n.id WHERE n.state = 'UP' GROUP BY n.id"
                          " HAVING count(*) <= 64) g GROUP BY g.n, g.model ORDER BY g.n DESC",
                          0, NULL);
    int groups = db_ok(r) ? PQntuples(r) : -1;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < groups && o < len; i++) {
        const char *m = PQgetvalue(r, i, 2);
        /* the simulator's GPU types (sim/options.c), the last that the name holds: a
         * "quadro rtx 6000" is quad, a "geforce rtx 2080 ti" rtx */
        static const char *const known[] = {"v100", "a100", "h100", "t4", "rtx", "quad"};
        const char *model = "v100"; /* the simulator's reference speed */
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            if (strstr(m, known[k]))
                model = known[k];
        o += (size_t)snprintf(out + o, len - o, "%s%sx%s:%s", i ? "," : "", PQgetvalue(r, i, 0),
                              PQgetvalue(r, i, 1), model);
    }
    PQclear(r);
    return groups < 0 ? -1 : groups;
}

/* ---- answers ---- */

#define RUN_COLS                                                                                   \
    "w.id, u.name, w.state, " DB_TS("w.since") ", " DB_TS("w.until") ", w.policy_in_force,"        \
    " to_json(w.policies)::text, w.cluster, w.jobs, w.measured::text, w.results::text,"            \
    " w.error, " DB_TS("w.created_at") ", " DB_TS("w.finished_at")
enum { R_ID, R_USER, R_STATE, R_SINCE, R_UNTIL, R_FORCE, R_POLICIES, R_CLUSTER, R_JOBS,
       R_MEASURED, R_RESULTS, R_ERROR, R_CREATED, R_FINISHED };

static json_t *col_json(const PGresult *r, int i, int c)
{
    json_t *v = json_loads(PQgetvalue(r, i, c), JSON_DECODE_ANY, NULL);
    return v ? v : json_null();
}

static json_t *run_json(const PGresult *r, int i)
{
    const char *force = PQgetvalue(r, i, R_FORCE);
    json_t *results = col_json(r, i, R_RESULTS), *policies = col_json(r, i, R_POLICIES), *row;
    size_t k;
    json_array_foreach(results, k, row)
    {
        const char *name = json_string_value(json_object_get(row, "policy"));
        json_object_set_new(row, "in_force", json_boolean(name && !strcmp(name, force)));
    }
    json_t *j = json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:I, s:o, s:{s:I, s:I}, s:o, s:s, s:s}", "id",
        (json_int_t)strtoll(PQgetvalue(r, i, R_ID), NULL, 10), "user", PQgetvalue(r, i, R_USER),
        "state", PQgetvalue(r, i, R_STATE), "since", PQgetvalue(r, i, R_SINCE), "until",
        PQgetvalue(r, i, R_UNTIL), "policy_in_force", force, "policies", policies, "cluster",
        PQgetvalue(r, i, R_CLUSTER), "jobs", (json_int_t)strtoll(PQgetvalue(r, i, R_JOBS), NULL, 10),
        "measured", col_json(r, i, R_MEASURED), "progress", "done",
        (json_int_t)json_array_size(results), "total", (json_int_t)json_array_size(policies),
        "results", results, "error", PQgetvalue(r, i, R_ERROR), "created_at",
        PQgetvalue(r, i, R_CREATED));
    if (j)
        json_object_set_new(j, "finished_at",
                            PQgetisnull(r, i, R_FINISHED)
                                ? json_null()
                                : json_string(PQgetvalue(r, i, R_FINISHED)));
    return j;
}

static void respond_run(struct api_call *call, long long id, unsigned status)
{
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db,
                          "SELECT " RUN_COLS " FROM whatif_runs w JOIN users u"
                          " ON u.id = w.user_id WHERE w.id = $1",
                          1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no what-if run %lld", id);
    else
        api_respond_json(call, status, run_json(r, 0));
    PQclear(r);
}

/* ---- handlers ---- */

/* The live scheduler's settings the replay takes (scheduler_config), into job and force. */
static int live_settings(struct api_call *call, struct whatif_job *job, char *force, size_t len)
{
    struct settings cfg;
    char err[256];
    if (live_config_load(call->db, &cfg, err, sizeof(err)) < 0) {
        log_error("POST /api/v1/whatif: %s", err);
        api_db_error(call, NULL);
        return -1;
    }
    snprintf(force, len, "%s", cfg.policy);
    job->settings = cfg;
    return 0;
}

/* Inserts the run's row; returns its id, or -1 after an answer. */
static long long insert_run(struct api_call *call, const struct request *q, const char *force,
                            const char *cluster, int jobs, const char *since, const char *until,
                            const char *trace, const json_t *measured)
{
    json_t *pol = json_array();
    for (int i = 0; i < q->npolicies; i++)
        json_array_append_new(pol, json_string(q->policies[i]));
    char *pols = json_dumps(pol, JSON_COMPACT), *meas = json_dumps(measured, JSON_COMPACT);
    json_decref(pol);
    char user[24], n[24];
    snprintf(user, sizeof(user), "%lld", (long long)call->who.id);
    snprintf(n, sizeof(n), "%d", jobs);
    const char *p[] = {user, since, until, force, pols, cluster, n, trace, meas};
    PGresult *r = pols && meas ? db_exec(call->db,
                                         "INSERT INTO whatif_runs (user_id, since, until,"
                                         " policy_in_force, policies, cluster, jobs, trace,"
                                         " measured) SELECT $1, $2, $3, $4, array_agg(e ORDER BY k),"
                                         " $6, $7, $8, $9::jsonb FROM jsonb_array_elements_text("
                                         "$5::jsonb) WITH ORDINALITY AS t(e, k) RETURNING id",
                                         9, p)
                               : NULL;
    free(pols);
    free(meas);
    long long id = -1;
    if (!db_ok(r))
        api_db_error(call, r);
    else
        id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return id;
}

void whatif_create(struct api_call *call)
{
    json_t *body = NULL;
    struct request q;
    if (api_body_or_respond(call, &body) < 0)
        return;
    int bad = parse_request(call, body, &q);
    json_decref(body);
    if (bad < 0)
        return;
    struct whatif_runner *runner = api_whatif(call);
    if (whatif_runner_busy(runner)) {
        http_problem(call->req, 409, "a what-if run is in progress: try again when it ends");
        return;
    }
    struct whatif_job job = {.policies = q.policies, .npolicies = q.npolicies};
    char force[64], cluster[512];
    if (live_settings(call, &job, force, sizeof(force)) < 0)
        return;
    int groups = cluster_spec(call->db, cluster, sizeof(cluster));
    if (groups <= 0) {
        if (groups < 0)
            http_problem(call->req, 503, "the database did not answer");
        else
            http_problem(call->req, 409, "no node is up: nothing to replay the jobs on");
        return;
    }
    char since[32], limit[24];
    snprintf(since, sizeof(since), "%.3f", q.since_s);
    snprintf(limit, sizeof(limit), "%d", MAX_JOBS);
    const char *p[] = {since, limit};
    PGresult *r = db_exec(call->db, jobs_sql, 2, p);
    if (!db_ok(r)) {
        api_db_error(call, r);
        PQclear(r);
        return;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        double d = q.since_s;
        int days = d >= 86400 && d == 86400 * floor(d / 86400);
        int hours = !days && d >= 3600 && d == 3600 * floor(d / 3600);
        http_problem(call->req, 422, "no job completed in the last %.0f %s: nothing to replay",
                     days ? d / 86400 : hours ? d / 3600 : d,
                     days ? (d == 86400 ? "day" : "days")
                          : hours ? (d == 3600 ? "hour" : "hours") : "s");
        return;
    }
    json_t *measured = NULL;
    char *trace = trace_csv(r, &measured);
    long long id = trace && measured
                       ? insert_run(call, &q, force, cluster, PQntuples(r),
                                    PQgetvalue(r, 0, J_FIRST), PQgetvalue(r, 0, J_NOW), trace,
                                    measured)
                       : -1;
    if (!trace || !measured)
        http_problem(call->req, 500, "out of memory");
    PQclear(r);
    json_decref(measured);
    if (id < 0) {
        free(trace);
        return;
    }
    job.id = id;
    job.trace = trace;
    job.cluster = cluster;
    int started = whatif_runner_start(runner, &job);
    int err = errno;
    free(trace);
    if (started < 0) {
        char ids[24];
        snprintf(ids, sizeof(ids), "%lld", id);
        const char *f[] = {ids};
        db_command_params(call->db, "DELETE FROM whatif_runs WHERE id = $1", 1, f);
        if (err == EBUSY)
            http_problem(call->req, 409, "a what-if run is in progress: try again when it ends");
        else
            http_problem(call->req, 500, "cannot start the replay: %s", strerror(err));
        return;
    }
    respond_run(call, id, 202);
}

void whatif_list(struct api_call *call)
{
    PGresult *r = db_exec(call->db,
                          "SELECT " RUN_COLS " FROM whatif_runs w JOIN users u"
                          " ON u.id = w.user_id ORDER BY w.id DESC LIMIT 20",
                          0, NULL);
    api_respond_rows(call, r, run_json);
}

void whatif_get(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "what-if run", &id) == 0)
        respond_run(call, id, 200);
}

void whatif_trace(struct api_call *call)
{
    long long id;
    if (api_id_or_respond(call, "what-if run", &id) < 0)
        return;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec(call->db, "SELECT trace FROM whatif_runs WHERE id = $1", 1, p);
    if (!db_ok(r))
        api_db_error(call, r);
    else if (PQntuples(r) != 1)
        http_problem(call->req, 404, "no what-if run %lld", id);
    else
        http_req_respond(call->req, 200, "text/csv; charset=utf-8", PQgetvalue(r, 0, 0),
                         (size_t)PQgetlength(r, 0, 0), NULL);
    PQclear(r);
}
