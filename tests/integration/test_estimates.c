/* What the scheduler is told to plan on (docs/scheduler.md, "Estimates", "Guarantees",
 * "Fair shares"): a job's declared length, the total a job reports through its worker, the
 * max_wait_s setting, and each user's share and quota. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

TestSuite(estimates, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

Test(estimates, a_declared_length_is_kept_and_checked)
{
    json_t *j = hx_expect_json(
        hx_json("POST", "/api/v1/jobs", hx.admin,
                "{\"name\":\"sweep\",\"command\":[\"train\"],\"gpus\":1,\"total_steps\":5000,"
                "\"stop_at_convergence\":true,\"stop_at_loss\":0.25}"),
        201);
    cr_assert_eq(json_integer_value(json_object_get(j, "total_steps")), 5000);
    cr_assert(json_is_null(json_object_get(j, "epochs")));
    cr_assert(json_is_true(json_object_get(j, "stop_at_convergence")));
    cr_assert_float_eq(json_real_value(json_object_get(j, "stop_at_loss")), 0.25, 1e-12);
    cr_assert(json_is_null(json_object_get(j, "estimate")));
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(j, "total_steps")), 5000);
    json_decref(j);

    j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                               "{\"name\":\"ep\",\"command\":[\"t\"],\"gpus\":1,\"epochs\":90}"),
                       201);
    cr_assert_float_eq(json_real_value(json_object_get(j, "epochs")), 90, 1e-12);
    cr_assert(json_is_false(json_object_get(j, "stop_at_convergence")));
    json_decref(j);

    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":1,\"total_steps\":0}"),
                      400, "total_steps");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":1,\"total_steps\":10,"
                              "\"epochs\":2}"),
                      400, "epochs");
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":1,"
                              "\"stop_at_convergence\":1}"),
                      400, "stop_at_convergence");
    hx_finish();
}

/* A batch model (issue 18): batch, adaptive_batch and max_local_batch are stored and shown,
 * with current_batch and the gradient statistics; broken ones are refused naming the field. */
Test(estimates, a_batch_model_is_kept_and_checked)
{
    json_t *j = hx_expect_json(
        hx_json("POST", "/api/v1/jobs", hx.admin,
                "{\"name\":\"ad\",\"command\":[\"t\"],\"gpus\":2,\"batch\":64,"
                "\"adaptive_batch\":{\"max\":512},\"max_local_batch\":128}"),
        201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(j, "batch")), 64);
    json_t *a = json_object_get(j, "adaptive_batch");
    cr_assert_eq(json_integer_value(json_object_get(a, "min")), 64, "min defaults to batch");
    cr_assert_eq(json_integer_value(json_object_get(a, "max")), 512);
    cr_assert_eq(json_integer_value(json_object_get(j, "max_local_batch")), 128);
    cr_assert(json_is_null(json_object_get(j, "current_batch")), "not started yet");
    cr_assert(json_is_null(json_object_get(j, "grad")));
    json_decref(j);

    j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                               "{\"name\":\"plain\",\"command\":[\"t\"],\"gpus\":1}"),
                       201);
    cr_assert(json_is_null(json_object_get(j, "batch")));
    cr_assert(json_is_null(json_object_get(j, "adaptive_batch")));
    json_decref(j);

    const char *bad[][2] = {
        {"\"batch\":1", "batch"},
        {"\"adaptive_batch\":{\"max\":64}", "adaptive_batch"},
        {"\"batch\":64,\"adaptive_batch\":{\"max\":32}", "adaptive_batch.max"},
        {"\"batch\":64,\"adaptive_batch\":{\"max\":128,\"min\":16}", "adaptive_batch.min"},
        {"\"batch\":64,\"max_local_batch\":-1", "max_local_batch"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":2,%s}",
                 bad[i][0]);
        hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin, body), 400, bad[i][1]);
    }
    hx_finish();
}

Test(estimates, max_wait_is_a_persisted_setting)
{
    json_t *s = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    cr_assert_float_eq(json_number_value(json_object_get(s, "max_wait_s")), 3600, 1e-9);
    json_decref(s);
    s = hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"max_wait_s\":20}"), 200);
    cr_assert_float_eq(json_number_value(json_object_get(s, "max_wait_s")), 20, 1e-9);
    json_decref(s);
    hx_expect_problem(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"max_wait_s\":0}"), 400,
                      "max_wait_s");
    cr_assert_float_eq(hx_sql_num("SELECT max_wait_s FROM scheduler_config"), 20, 1e-9);
    hx_finish();
}

Test(estimates, shares_and_quotas_are_set_by_an_admin)
{
    char alice[128];
    hx_user("alice", "user", alice);
    json_t *u = hx_expect_json(
        hx_json("PATCH", "/api/v1/users/alice", hx.admin, "{\"share\":3,\"max_gpus\":8}"), 200);
    cr_assert_str_eq(json_string_value(json_object_get(u, "name")), "alice");
    cr_assert_float_eq(json_number_value(json_object_get(u, "share")), 3, 1e-12);
    cr_assert_eq(json_integer_value(json_object_get(u, "max_gpus")), 8);
    long long id = json_integer_value(json_object_get(u, "id"));
    json_decref(u);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/users/%lld", id);
    u = hx_expect_json(hx_json("PATCH", path, hx.admin, "{\"max_gpus\":null}"), 200);
    cr_assert(json_is_null(json_object_get(u, "max_gpus")));
    cr_assert_float_eq(json_number_value(json_object_get(u, "share")), 3, 1e-12);
    json_decref(u);

    hx_submit(alice, "a1", 2);
    json_t *list = hx_expect_json(hx_json("GET", "/api/v1/users", hx.admin, NULL), 200);
    json_t *it;
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(list, "items"), i, it)
    {
        if (strcmp(json_string_value(json_object_get(it, "name")), "alice") != 0)
            continue;
        seen = 1;
        cr_assert_eq(json_integer_value(json_object_get(it, "jobs_pending")), 1);
        cr_assert_eq(json_integer_value(json_object_get(it, "gpus_held")), 0);
    }
    cr_assert(seen);
    json_decref(list);

    hx_expect_problem(hx_json("PATCH", "/api/v1/users/alice", alice, "{\"share\":100}"), 403,
                      NULL);
    hx_expect_problem(hx_json("PATCH", "/api/v1/users/alice", hx.admin, "{\"share\":0}"), 400,
                      "share");
    hx_expect_problem(hx_json("PATCH", "/api/v1/users/alice", hx.admin, "{\"max_gpus\":0}"), 400,
                      "max_gpus");
    hx_expect_problem(hx_json("PATCH", "/api/v1/users/alice", hx.admin, "{\"weight\":2}"), 400,
                      "weight");
    hx_expect_problem(hx_json("PATCH", "/api/v1/users/nobody", hx.admin, "{\"share\":2}"), 404,
                      NULL);
    hx_finish();
}

/* A worker's report may carry the total its job says it runs (libringjob's TOTAL); the admin
 * may post reports as a worker does. */
Test(estimates, a_reported_total_is_kept)
{
    long long id = hx_submit(hx.admin, "t", 1);
    char path[96], sql[128];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[{\"step\":1,\"loss\":2.0,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"total_steps\":1200}"),
        200));
    snprintf(sql, sizeof(sql), "SELECT reported_total_steps FROM jobs WHERE id = %lld", id);
    cr_assert_float_eq(hx_sql_num(sql), 1200, 1e-9);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(j, "reported_total_steps")), 1200);
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    hx_expect_problem(hx_json("POST", path, hx.admin, "{\"items\":[],\"total_steps\":-5}"), 400,
                      "total_steps");
    hx_finish();
}

/* A worker's report may carry the job's gradient statistics (libringjob's GRAD): the last
 * ones are kept for the goodput model; nonsense is refused and nothing of the post is kept. */
Test(estimates, reported_gradient_statistics_are_kept)
{
    long long id = hx_submit(hx.admin, "g", 1);
    char path[96], sql[160];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[{\"step\":1,\"loss\":2.0,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"grad\":{\"sqr\":2.5,\"var\":400}}"),
        200));
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[{\"step\":2,\"loss\":1.9,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"grad\":{\"sqr\":1.25,\"var\":500}}"),
        200));
    snprintf(sql, sizeof(sql), "SELECT grad_var / grad_sqr FROM jobs WHERE id = %lld", id);
    cr_assert_float_eq(hx_sql_num(sql), 400, 1e-9, "the last statistics count");
    const char *bad[] = {"{\"items\":[],\"grad\":{\"sqr\":-1,\"var\":2}}",
                         "{\"items\":[],\"grad\":{\"sqr\":0,\"var\":0}}",
                         "{\"items\":[],\"grad\":{\"sqr\":1}}",
                         "{\"items\":[],\"grad\":[1,2]}",
                         "{\"items\":[{\"step\":3,\"loss\":1.0,\"samples\":32,\"seconds\":0.1,"
                         "\"world_size\":1}],\"grad\":{\"sqr\":\"x\",\"var\":2}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        hx_expect_problem(hx_json("POST", path, hx.admin, bad[i]), 400, "grad");
    cr_assert_float_eq(hx_sql_num(sql), 400, 1e-9, "refused posts change nothing");
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM job_metrics WHERE job_id = %lld", id);
    cr_assert_float_eq(hx_sql_num(sql), 2, 1e-9, "nor store their reports");
    hx_finish();
}

/* A worker's report may carry the job's last checkpoint (libringjob's SAVED or CHECKPOINTED):
 * kept with the job (sql/044), shown as its "checkpoint", handed to the rounds; a time ahead
 * of the database's clock is taken as now; nonsense is refused naming the field. */
Test(estimates, reported_checkpoints_are_kept_and_shown)
{
    long long id = hx_submit(hx.admin, "ck", 1);
    char path[96], jpath[96], sql[200];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    snprintf(jpath, sizeof(jpath), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", jpath, hx.admin, NULL), 200);
    cr_assert(json_is_null(json_object_get(j, "checkpoint")), "none reported yet");
    json_decref(j);
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[{\"step\":40,\"loss\":2.0,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"checkpoint\":{\"step\":25,"
                "\"at\":\"2026-01-02T03:04:05.250000Z\"}}"),
        200));
    j = hx_expect_json(hx_json("GET", jpath, hx.admin, NULL), 200);
    json_t *c = json_object_get(j, "checkpoint");
    cr_assert_eq(json_integer_value(json_object_get(c, "step")), 25);
    cr_assert_str_eq(json_string_value(json_object_get(c, "at")), "2026-01-02T03:04:05.250000Z");
    json_decref(j);
    /* a checkpoint alone (no reports), stamped in the future: the database's now */
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[],\"checkpoint\":{\"step\":50,\"at\":\"2999-01-01T00:00:00Z\"}}"),
        200));
    snprintf(sql, sizeof(sql),
             "SELECT checkpoint_step * (checkpoint_at <= now())::int FROM jobs WHERE id = %lld",
             id);
    cr_assert_float_eq(hx_sql_num(sql), 50, 1e-9, "the last checkpoint, at most now");
    const char *bad[] = {"{\"items\":[],\"checkpoint\":{\"step\":-1}}",
                         "{\"items\":[],\"checkpoint\":{\"at\":\"2026-01-02T03:04:05Z\"}}",
                         "{\"items\":[],\"checkpoint\":{\"step\":5,\"at\":7}}",
                         "{\"items\":[],\"checkpoint\":{\"step\":5,\"when\":\"x\"}}",
                         "{\"items\":[],\"checkpoint\":[5]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        hx_expect_problem(hx_json("POST", path, hx.admin, bad[i]), 400, "checkpoint");
    hx_expect_problem(
        hx_json("POST", path, hx.admin,
                "{\"items\":[],\"checkpoint\":{\"step\":60,\"at\":\"not a time\"}}"),
        400, "checkpoint");
    cr_assert_float_eq(hx_sql_num(sql), 50, 1e-9, "refused posts change nothing");
    hx_finish();
}

static json_t *progress_of(long long id, const char *from)
{
    char path[96];
    if (from)
        snprintf(path, sizeof(path), "/api/v1/jobs?name_prefix=%s", from);
    else
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *job = from ? json_array_get(json_object_get(j, "items"), 0) : j;
    json_t *p = json_incref(json_object_get(job, "progress"));
    json_decref(j);
    return p;
}

static void post_step(long long id, long step, const char *extra)
{
    char path[96], body[256];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    snprintf(body, sizeof(body),
             "{\"items\":[{\"step\":%ld,\"loss\":1.0,\"samples\":32,\"seconds\":0.1,"
             "\"world_size\":1}]%s}",
             step, extra);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
}

/* Progress: the latest step reported of the declared total, else of the reported one; none
 * without a length in steps. In the job, in the list, and after a report of an older step
 * (a restart from a checkpoint) the latest report counts. */
Test(estimates, progress_counts_the_steps_of_the_known_length)
{
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"decl\",\"command\":[\"t\"],\"gpus\":1,"
                                       "\"total_steps\":1000}"),
                               201);
    long long decl = json_integer_value(json_object_get(j, "id"));
    json_t *p = json_object_get(j, "progress");
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 0, "none reported yet");
    cr_assert_eq(json_integer_value(json_object_get(p, "total_steps")), 1000);
    json_decref(j);
    post_step(decl, 250, "");
    post_step(decl, 333, "");
    p = progress_of(decl, NULL);
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 333);
    cr_assert_float_eq(json_number_value(json_object_get(p, "percent")), 33.3, 1e-9);
    cr_assert_str_eq(json_string_value(json_object_get(p, "of")), "declared");
    json_decref(p);
    /* a total reported by the job does not override the declared one */
    post_step(decl, 340, ",\"total_steps\":5000");
    p = progress_of(0, "decl");
    cr_assert_eq(json_integer_value(json_object_get(p, "total_steps")), 1000, "in the list too");
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 340);
    json_decref(p);

    long long rep = hx_submit(hx.admin, "rep", 1);
    p = progress_of(rep, NULL);
    cr_assert(json_is_null(p), "no length, no progress");
    json_decref(p);
    post_step(rep, 900, ",\"total_steps\":1200");
    post_step(rep, 600, ""); /* restarted from its checkpoint of step 600 */
    p = progress_of(rep, NULL);
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 600, "the latest report");
    cr_assert_float_eq(json_number_value(json_object_get(p, "percent")), 50.0, 1e-9);
    cr_assert_str_eq(json_string_value(json_object_get(p, "of")), "reported");
    json_decref(p);
    hx_finish();
}

/* When a job completes, the mean relative error of the predictions of its finish that the
 * rounds kept is recorded with it, and summed up for the cluster (GET /api/v1/scheduler,
 * /metrics). */
Test(estimates, the_error_of_the_predictions_is_recorded_at_completion)
{
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"paused\":true}"), 200));
    long long id = hx_submit(hx.admin, "t", 1);
    char sql[640];
    /* two predictions: 200 s before the end, 100 s early (error 100/200); 100 s before the
     * end, 100 s late (error 100/100): mean 0.75 */
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_sched (job_id, estimates) SELECT %lld, jsonb_build_array("
             "jsonb_build_array(e - 200, e - 100, 'fit'), jsonb_build_array(e - 100, e + 100,"
             " 'fit')) FROM (SELECT extract(epoch FROM now()) AS e) t;"
             " UPDATE jobs SET state = 'COMPLETED', finished_at = now() WHERE id = %lld",
             id, id);
    hx_sql_do(sql);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *e = json_object_get(j, "estimate");
    cr_assert(json_is_object(e), "the job has its estimate error");
    cr_assert_float_eq(json_number_value(json_object_get(e, "error")), 0.75, 1e-3);
    cr_assert_eq(json_integer_value(json_object_get(e, "samples")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(e, "source")), "fit");
    json_decref(j);
    json_t *s = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    json_t *est = json_object_get(s, "estimates");
    cr_assert_eq(json_integer_value(json_object_get(est, "jobs")), 1);
    cr_assert_float_eq(json_number_value(json_object_get(est, "mean_error")), 0.75, 1e-3);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(est, "by_source"), "fit")), 1);
    json_decref(s);
    struct hx_resp *m = hx_call("GET", "/metrics", NULL, NULL, NULL, 0, NULL);
    cr_assert_eq(m->status, 200);
    cr_assert(strstr(m->body, "ringmaster_estimate_jobs 1\n"), "%s", m->body);
    cr_assert(strstr(m->body, "ringmaster_estimate_error_mean 0.75"), "%s", m->body);
    hx_free(m);
    hx_finish();
}

/* A job that can never fit the cluster registered now is refused with its size, unless it
 * holds (issue 16: answers that tell the truth early). */
Test(estimates, a_job_larger_than_the_cluster_is_refused_unless_it_holds)
{
    /* no node up yet: the cluster is not known, nothing is refused */
    hx_submit(hx.admin, "early", 64);
    char w[128];
    hx_user("w1", "worker", w);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", w,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1000000000,\"gpus\":["
                "{\"index\":0,\"model\":\"V100\",\"memory_bytes\":1000000000},"
                "{\"index\":1,\"model\":\"V100\",\"memory_bytes\":1000000000}]}"),
        201));
    struct hx_resp *r = hx_json("POST", "/api/v1/jobs", hx.admin,
                                "{\"name\":\"big\",\"command\":[\"t\"],\"gpus\":3}");
    cr_assert_eq(r->status, 422, "%s", r->body);
    cr_assert(strstr(r->body, "needs 3 GPUs; the cluster has 2 on 1 node up"), "%s", r->body);
    hx_free(r);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"big\",\"command\":[\"t\"],\"gpus\":4,"
                              "\"min_gpus\":3,\"max_gpus\":8,\"elastic\":true}"),
                      422, "min_gpus");
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"held\",\"command\":[\"t\"],\"gpus\":3,"
                                       "\"hold\":true}"),
                               201);
    json_decref(j);
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"fits\",\"command\":[\"t\"],\"gpus\":1,"
                                       "\"min_gpus\":1,\"max_gpus\":8,\"elastic\":true}"),
                               201));
    hx_finish();
}

/* Posts steps from..to of job id at samples examples a step on world GPUs (extra: more of the
 * post's body, e.g. its gradient statistics). */
static void post_steps(long long id, long from, long to, long samples, int world,
                       const char *extra)
{
    char path[96], *body = malloc(256 * (size_t)(to - from + 2));
    cr_assert_not_null(body);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    int o = sprintf(body, "{\"items\":[");
    for (long k = from; k <= to; k++)
        o += sprintf(body + o,
                     "%s{\"step\":%ld,\"loss\":1.0,\"samples\":%ld,\"seconds\":0.1,"
                     "\"world_size\":%d}",
                     k > from ? "," : "", k, samples, world);
    sprintf(body + o, "]%s}", extra);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
    free(body);
}

/* Progress in statistically efficient examples (issue 18, sql/025): a job with a batch model
 * counts its work at its initial batch M0 = 16, and a step of 64 examples with gradient
 * statistics sqr 1, var 3 (noise scale 48) does gain(64) = (3 + 1) / (3 / 4 + 1) = 2.2857
 * steps' worth there: 36.57 examples, not 64. Its epochs done, and so its remaining epochs,
 * say so (raw samples would claim 1,616 examples, 1.01 epochs of 1,600), as the simulator
 * counts them (scheduler/simulate/batch.c). A job without a batch model counts every
 * example. */
Test(estimates, a_larger_batch_counts_its_efficient_examples)
{
    json_t *j = hx_expect_json(
        hx_json("POST", "/api/v1/jobs", hx.admin,
                "{\"name\":\"eff\",\"command\":[\"t\"],\"gpus\":1,\"max_gpus\":2,"
                "\"elastic\":true,\"batch\":16,\"adaptive_batch\":{\"max\":256},"
                "\"model\":{\"dataset_size\":1600,\"epochs\":10}}"),
        201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    long long raw = hx_submit(hx.admin, "raw", 1);
    post_steps(id, 1, 21, 16, 1, ",\"grad\":{\"sqr\":1,\"var\":3}");
    post_steps(id, 22, 41, 64, 2, "");
    post_steps(raw, 1, 20, 64, 2, ",\"grad\":{\"sqr\":1,\"var\":3}");
    double want = (21 * 16 + 20 * 16 * 4.0 / 1.75) / 1600;
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT sum(sum_progress) FROM job_metric_sums WHERE job_id = %lld",
             id);
    cr_assert_float_eq(hx_sql_num(sql), want * 1600, 1e-6);
    snprintf(sql, sizeof(sql),
             "SELECT sum(sum_progress) / sum(sum_samples) FROM job_metric_sums WHERE job_id = %lld",
             raw);
    cr_assert_float_eq(hx_sql_num(sql), 1, 1e-12, "no batch model: every example counts");

    /* What the scheduler's model says (its rounds refit it from the sums). */
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/model", id);
    double until = hx_now() + 10;
    json_t *m = NULL;
    while (hx_now() < until) {
        json_decref(m);
        struct hx_resp *r = hx_json("GET", path, hx.admin, NULL);
        m = r->status == 200 ? hx_expect_json(r, 200) : (hx_free(r), NULL);
        if (m && json_integer_value(json_object_get(m, "metrics")) == 41)
            break;
        usleep(100000);
    }
    cr_assert_not_null(m, "a model");
    cr_assert_eq(json_integer_value(json_object_get(m, "metrics")), 41);
    cr_assert_float_eq(json_number_value(json_object_get(m, "epochs_done")), want, 1e-9,
                       "epochs done %g", json_number_value(json_object_get(m, "epochs_done")));
    cr_assert_float_eq(json_number_value(json_object_get(m, "remaining_epochs")), 10 - want, 1e-9);
    json_decref(m);
    hx_finish();
}

/* The job of id as GET /api/v1/jobs/{id} answers it once a round estimated its remaining work
 * (its model says a source), or after 10 s as it is then (new). */
static json_t *estimated_job(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    double until = hx_now() + 10;
    json_t *j = NULL;
    while (hx_now() < until) {
        json_decref(j);
        j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        json_t *m = json_object_get(j, "model");
        const char *src = json_string_value(json_object_get(m, "remaining_source"));
        if (src && strcmp(src, "none") && json_integer_value(json_object_get(m, "metrics")) > 0)
            break;
        usleep(100000);
    }
    return j;
}

/* One truth about remaining work (issue 31): a job that declared 60,000 steps and reported 40
 * has 59,960 to go, from its declared length, wherever it is shown: its model and its
 * "remaining" in the API (one job and a list), /metrics and ringctl show. Never 0, and the
 * convergence fit (its flat losses say "converged now") is evidence beside it, not the answer.
 * A job that declared nothing is never shown 0 either. */
Test(estimates, the_remaining_work_shown_is_the_schedulers)
{
    json_t *j = hx_expect_json(
        hx_json("POST", "/api/v1/jobs", hx.admin,
                "{\"name\":\"decl\",\"command\":[\"t\"],\"gpus\":1,\"total_steps\":60000,"
                "\"model\":{\"dataset_size\":50000}}"),
        201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    long long free_len = hx_submit(hx.admin, "undeclared", 1);
    post_steps(id, 1, 40, 128, 1, "");
    post_steps(free_len, 1, 40, 128, 1, "");
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));

    j = estimated_job(id);
    json_t *m = json_object_get(j, "model"), *r = json_object_get(j, "remaining");
    cr_assert_str_eq(json_string_value(json_object_get(m, "remaining_source")), "declared");
    cr_assert_eq(json_integer_value(json_object_get(m, "remaining_steps")), 59960);
    double ep = json_number_value(json_object_get(m, "remaining_epochs"));
    cr_assert_float_eq(ep, 59960 * 128 / 50000.0, 1e-6, "remaining epochs %g", ep);
    cr_assert(json_is_object(r), "the job's remaining work beside its model");
    cr_assert_str_eq(json_string_value(json_object_get(r, "source")), "declared");
    cr_assert_eq(json_integer_value(json_object_get(r, "steps")), 59960);
    cr_assert_float_eq(json_number_value(json_object_get(r, "epochs")), ep, 1e-9);
    json_t *sec = json_object_get(r, "seconds");
    cr_assert(json_number_value(sec) > 0 || json_is_string(json_object_get(r, "reason")),
              "unknown seconds say why");
    json_t *conv = json_object_get(m, "convergence");
    if (json_is_object(conv))
        cr_assert_eq(json_integer_value(json_object_get(conv, "steps_remaining")), 59960,
                     "the convergence block's copy is the scheduler's too");
    json_t *fit = json_object_get(m, "fit");
    if (json_is_object(fit))
        cr_assert(json_is_false(json_object_get(fit, "used")), "the fit is evidence only");
    json_decref(j);

    j = estimated_job(free_len);
    m = json_object_get(j, "model");
    const char *src = json_string_value(json_object_get(m, "remaining_source"));
    cr_assert(src && strcmp(src, "declared") && strcmp(src, "none"), "source %s", src);
    cr_assert(json_number_value(json_object_get(m, "remaining_epochs")) > 0,
              "no declared length: never 0 while it runs");
    cr_assert(json_integer_value(json_object_get(m, "remaining_steps")) > 0);
    json_decref(j);

    j = hx_expect_json(hx_json("GET", "/api/v1/jobs", hx.admin, NULL), 200);
    json_t *items = json_object_get(j, "items"), *it;
    size_t i;
    int seen = 0;
    json_array_foreach(items, i, it)
    {
        if (json_integer_value(json_object_get(it, "id")) != id)
            continue;
        seen = 1;
        r = json_object_get(it, "remaining");
        cr_assert_str_eq(json_string_value(json_object_get(r, "source")), "declared");
        cr_assert_eq(json_integer_value(json_object_get(r, "steps")), 59960, "lists say it too");
    }
    cr_assert(seen);
    json_decref(j);

    cr_assert_geq(hx_metric("ringmaster_remaining_steps{source=\"declared\"}"), 59960);
    cr_assert_geq(hx_metric("ringmaster_remaining_jobs{source=\"declared\"}"), 1);
    cr_assert_eq(hx_metric("ringmaster_remaining_jobs{source=\"none\"}"), 0);

    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    struct ctl_run *c = ctl("show", ids);
    cr_assert_eq(c->code, 0, "%s", c->err);
    const char *out = c->out;
    cr_assert(strstr(out, "remaining: 59,960 steps, ") && strstr(out, " epochs (declared)"),
              "ringctl show: %s", out);
    cr_assert(strstr(out, " (counted at step 40)\n"), "the step it counted from: %s", out);
    cr_assert_null(strstr(out, "remaining epochs 0"), "%s", out);
    cr_assert_null(strstr(out, "? s"), "%s", out);
    hx_finish();
}

/* One truth after a restart (issue 31): a job that declared 60,000 steps ran to step 40 at
 * 1 GPU and went back to its checkpoint at step 20 (a resize to 2), then reported 21..30 in
 * one post (worker_api has a restart at the same size). It has done 30 steps, as its page's
 * progress says, and has 59,970 to go: not 59,960 from the highest step it ever reached. Its epochs done count the 30 steps
 * that stand (30 x 128 of 50,000 examples), not the 50 it ran, and the 20 it redid are its
 * redo (sql/053; 039 counted 10, the post's last step back from 40). */
Test(estimates, a_job_back_at_its_checkpoint_has_the_steps_its_page_shows)
{
    json_t *j = hx_expect_json(
        hx_json("POST", "/api/v1/jobs", hx.admin,
                "{\"name\":\"back\",\"command\":[\"t\"],\"gpus\":1,\"total_steps\":60000,"
                "\"model\":{\"dataset_size\":50000}}"),
        201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    post_steps(id, 1, 40, 128, 1, "");
    usleep(20000);
    post_steps(id, 21, 30, 128, 2, "");
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT redo FROM job_last_report WHERE job_id = %lld", id);
    cr_assert_eq(hx_sql_num(sql), 20, "steps 21..40 are redone: %g", hx_sql_num(sql));
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));

    /* a round that has read all 50 reports (one may have run between the two posts) */
    double until = hx_now() + 10;
    for (j = estimated_job(id);
         json_integer_value(json_object_get(json_object_get(j, "model"), "metrics")) < 50 &&
         hx_now() < until;
         j = estimated_job(id)) {
        json_decref(j);
        usleep(100000);
    }
    json_t *m = json_object_get(j, "model"), *p = json_object_get(j, "progress");
    cr_assert_eq(json_integer_value(json_object_get(m, "metrics")), 50, "all its reports read");
    cr_assert_eq(json_integer_value(json_object_get(p, "steps_done")), 30, "its page's progress");
    cr_assert_str_eq(json_string_value(json_object_get(m, "remaining_source")), "declared");
    cr_assert_eq(json_integer_value(json_object_get(m, "remaining_steps")), 60000 - 30,
                 "remaining %lld", json_integer_value(json_object_get(m, "remaining_steps")));
    double done = json_number_value(json_object_get(m, "epochs_done"));
    cr_assert_float_eq(done, 30 * 128 / 50000.0, 1e-9, "epochs done %g", done);
    json_t *r = json_object_get(j, "remaining");
    cr_assert_eq(json_integer_value(json_object_get(r, "steps")), 60000 - 30);
    cr_assert_eq(json_integer_value(json_object_get(r, "as_of_step")), 30, "counted at step 30");
    json_decref(j);
    hx_finish();
}

/* More jobs with new reports than one group of refits holds (64): every model takes its
 * reports within a few rounds, group after group, the most new reports first. */
Test(estimates, every_model_is_refitted_when_many_jobs_report_at_once)
{
    enum { N = 150 };
    long long ids[N];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "many-%d", i);
        ids[i] = hx_submit(hx.admin, name, 1);
    }
    for (int i = 0; i < N; i++)
        post_steps(ids[i], 1, 1 + i % 3, 32, 1, "");
    json_decref(hx_expect_json(
        hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));
    double until = hx_now() + 60;
    int done = 0;
    while (done < N && hx_now() < until) {
        usleep(300000);
        for (done = 0; done < N; done++) {
            char path[64];
            snprintf(path, sizeof(path), "/api/v1/jobs/%lld/model", ids[done]);
            struct hx_resp *r = hx_json("GET", path, hx.admin, NULL);
            json_t *m = r->status == 200 ? hx_expect_json(r, 200) : (hx_free(r), NULL);
            long long seen = m ? json_integer_value(json_object_get(m, "metrics")) : -1;
            json_decref(m);
            if (seen != 1 + done % 3)
                break;
        }
    }
    cr_assert_eq(done, N, "job %d of %d not refitted with its reports", done, N);
    hx_finish();
}

