/* Speed models on GPUs of different models, live: reports posted for a job on an a100 node
 * are recorded as measured there (job_metrics.gpu_model, job_metric_sums per model), and the
 * job's fitted model, normalised to the reference GPU, is the one a job with the same
 * program measured on a v100 node gets; the `model` object says so (speed.reference_gpu,
 * measured_on) and predicts per GPU model (speed.by_gpu_model). Also: the incremental
 * convergence refit reads each point once and keeps following new ones. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

TestSuite(hetero, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

#define WAIT_S 20.0
#define A100 "NVIDIA A100-SXM4-80GB"
#define V100 "Tesla V100-SXM2-32GB"

static double num(const char *fmt, long long arg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, arg);
    return hx_sql_num(sql);
}

static void register_node(const char *name, const char *model)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"cpus\":16,\"memory_bytes\":1000,\"gpus\":["
             "{\"index\":0,\"model\":\"%s\",\"memory_bytes\":1},"
             "{\"index\":1,\"model\":\"%s\",\"memory_bytes\":1}]}",
             name, model, model);
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), 201));
}

/* A rigid 2-GPU job, once it holds its GPUs. */
static long long submit_placed(const char *name)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"command\":[\"t\"],\"gpus\":2}", name);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    double until = hx_now() + WAIT_S;
    while (num("SELECT count(*) FROM allocations WHERE job_id = %lld", id) != 2 && hx_now() < until)
        usleep(100000);
    cr_assert_eq(num("SELECT count(*) FROM allocations WHERE job_id = %lld", id), 2);
    return id;
}

/* Steps [from, from + n) at world size w, step time t, l(k) = 1/(0.01 k + 0.5) + 0.1. */
static void post_metrics(long long id, int w, int from, int n, double t)
{
    char path[64], *body = malloc(64 * 1024);
    int o = snprintf(body, 64 * 1024, "{\"items\":[");
    for (int k = from; k < from + n; k++)
        o += snprintf(body + o, 64 * 1024 - (size_t)o,
                      "%s{\"step\":%d,\"world_size\":%d,\"loss\":%.9f,\"samples\":%d,"
                      "\"seconds\":%.4f}",
                      k > from ? "," : "", k, w, 1.0 / (0.01 * k + 0.5) + 0.1, 128 * w, t);
    snprintf(body + o, 64 * 1024 - (size_t)o, "]}");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
    free(body);
}

/* The job's `model` once the scheduler has fitted it from `metrics` reports (new). */
static json_t *fitted_model(long long id, long long metrics)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    double until = hx_now() + WAIT_S;
    for (;;) {
        json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        json_t *m = json_object_get(j, "model");
        const char *source = json_string_value(json_object_get(m, "source"));
        if (json_integer_value(json_object_get(m, "metrics")) == metrics && source &&
            strcmp(source, "fitted") == 0) {
            json_incref(m);
            json_decref(j);
            return m;
        }
        json_decref(j);
        cr_assert(hx_now() < until, "job %lld: no model fitted from %lld reports", id, metrics);
        usleep(100000);
    }
}

static double curve_step(const json_t *curve, size_t i)
{
    return json_number_value(json_object_get(json_array_get(curve, i), "step_time_s"));
}

/* The entry of gpu_model (the nodes' name of it) in speed.by_gpu_model. */
static const json_t *type_entry(const json_t *m, const char *gpu_model)
{
    const json_t *a = json_object_get(json_object_get(m, "speed"), "by_gpu_model");
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *e = json_array_get(a, i);
        if (strcmp(json_string_value(json_object_get(e, "gpu_model")), gpu_model) == 0)
            return e;
    }
    cr_assert_fail("no %s in by_gpu_model", gpu_model);
    return NULL;
}

/* The curve of gpu_model in speed.by_gpu_model. */
static const json_t *by_model(const json_t *m, const char *gpu_model)
{
    return json_object_get(type_entry(m, gpu_model), "curve");
}

/* Where the figures of gpu_model come from. */
static const char *type_source(const json_t *m, const char *gpu_model)
{
    return json_string_value(json_object_get(type_entry(m, gpu_model), "source"));
}

/* The same program: compute 0.40 s on a v100 (0.20 s on an a100, twice as fast), 0.03 s of
 * all-reduce at 2 GPUs on either. */
Test(hetero, a100_reports_normalise_to_the_v100_model)
{
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));
    register_node("fast", A100);
    long long a = submit_placed("on-a100");
    post_metrics(a, 1, 0, 40, 0.20);
    post_metrics(a, 2, 40, 40, 0.23);
    register_node("slow", V100);
    long long v = submit_placed("on-v100");
    post_metrics(v, 1, 0, 40, 0.40);
    post_metrics(v, 2, 40, 40, 0.43);

    cr_assert_eq(num("SELECT count(*) FROM job_metrics WHERE job_id = %lld"
                     " AND gpu_model = '" A100 "'",
                     a),
                 80);
    cr_assert_eq(num("SELECT count(*) FROM job_metric_sums WHERE job_id = %lld"
                     " AND gpu_model = '" V100 "'",
                     v),
                 2);
    json_t *ma = fitted_model(a, 80), *mv = fitted_model(v, 80);
    const json_t *sa = json_object_get(ma, "speed"), *sv = json_object_get(mv, "speed");
    cr_assert_str_eq(json_string_value(json_object_get(sa, "reference_gpu")), "v100");
    cr_assert_str_eq(json_string_value(json_object_get(sa, "measured_on")), A100);
    cr_assert_str_eq(json_string_value(json_object_get(sv, "measured_on")), V100);
    const json_t *ca = json_object_get(sa, "curve"), *cv = json_object_get(sv, "curve");
    for (size_t i = 0; i < 2; i++)
        cr_assert(fabs(curve_step(ca, i) - curve_step(cv, i)) < 0.01 * curve_step(cv, i),
                  "%zu: %g vs %g", i, curve_step(ca, i), curve_step(cv, i));
    cr_assert(fabs(curve_step(ca, 0) - 0.40) < 0.01, "on the reference: %g", curve_step(ca, 0));
    /* Per GPU model: what was measured on each. */
    cr_assert(fabs(curve_step(by_model(ma, A100), 0) - 0.20) < 0.01);
    cr_assert(fabs(curve_step(by_model(ma, A100), 1) - 0.23) < 0.01);
    cr_assert(fabs(curve_step(by_model(mv, A100), 1) - 0.23) < 0.01);
    cr_assert(fabs(curve_step(by_model(mv, V100), 1) - 0.43) < 0.01);
    /* Each type of the cluster, once, with where its figures come from: a job's own type
     * from its steps, the other from the cluster (the ratios, or the one factor). */
    cr_assert_eq(json_array_size(json_object_get(json_object_get(ma, "speed"), "by_gpu_model")),
                 2);
    cr_assert_str_eq(type_source(ma, A100), "measured");
    cr_assert_str_eq(type_source(mv, V100), "measured");
    const char *other = type_source(ma, V100);
    cr_assert(!strcmp(other, "estimated") || !strcmp(other, "factor"), "%s", other);
    cr_assert_eq(json_integer_value(json_object_get(type_entry(ma, A100), "measured_sizes")), 2);
    /* ringctl show says the same, per type */
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", a);
    struct ctl_run *r = ctl("show", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "speed by GPU type, at 2 GPUs:"), "%s", r->out);
    const char *at = strstr(r->out, A100);
    char line[256] = "";
    if (at)
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
    cr_assert(strstr(line, " s/step") && strstr(line, "samples/s") &&
                  strstr(line, "measured (2 sizes)"),
              "%s", r->out);
    cr_assert(strstr(r->out, V100), "every type of the cluster: %s", r->out);
    json_decref(ma);
    json_decref(mv);

    /* What the job says fits in one of its A100s (its FITS record through its worker) is the
     * A100's largest local batch (sql/049); a bad one is refused and stores nothing. */
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", a);
    hx_expect_problem(hx_json("POST", path, hx.admin,
                              "{\"items\":[],\"max_local_batch\":0}"),
                      400, "max_local_batch");
    json_decref(hx_expect_json(
        hx_json("POST", path, hx.admin,
                "{\"items\":[{\"step\":80,\"world_size\":2,\"loss\":0.9,\"samples\":256,"
                "\"seconds\":0.23}],\"max_local_batch\":96}"),
        200));
    cr_assert_eq(num("SELECT max_local FROM job_fits WHERE job_id = %lld"
                     " AND gpu_model = '" A100 "'",
                     a),
                 96);
    ma = fitted_model(a, 81);
    double until = hx_now() + WAIT_S;
    while (json_number_value(json_object_get(type_entry(ma, A100), "max_local")) != 96 &&
           hx_now() < until) {
        json_decref(ma);
        usleep(100000);
        ma = fitted_model(a, 81);
    }
    cr_assert_eq(json_number_value(json_object_get(type_entry(ma, A100), "max_local")), 96,
                 "the A100's limit is the job's report");
    json_decref(ma);
    hx_finish();
}

/* The convergence fit follows new points as they come, reading each once. */
Test(hetero, convergence_refit_follows_new_points)
{
    json_decref(
        hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, "{\"interval_s\":0.2}"), 200));
    register_node("n", V100);
    long long id = submit_placed("c");
    post_metrics(id, 1, 0, 30, 0.40);
    post_metrics(id, 2, 30, 30, 0.43);
    json_t *m = fitted_model(id, 60);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(m, "convergence"), "points")),
                 60);
    json_decref(m);
    for (int b = 0; b < 3; b++)
        post_metrics(id, 2, 60 + 300 * b, 300, 0.43);
    m = fitted_model(id, 960);
    const json_t *c = json_object_get(m, "convergence");
    /* 512 held, then every other one: 960 points read, every second one kept. */
    cr_assert_eq(json_integer_value(json_object_get(c, "points")), 480, "bounded, downsampled");
    cr_assert(fabs(json_number_value(json_object_get(c, "b2")) - 0.1) < 0.01);
    cr_assert(fabs(json_number_value(json_object_get(c, "b0")) - 0.01) < 0.002);
    json_decref(m);
    hx_finish();
}
