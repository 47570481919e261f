/* sched_fx: the live scheduler suites' helpers (sched_fx.h). */
#include "sched_fx.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <unistd.h>

#include "harness.h"

double sx_sql_num(const char *fmt, long long arg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, arg);
    return hx_sql_num(sql);
}

json_t *sx_sql_json(const char *fmt, long long arg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, arg);
    PGresult *r = hx_sql(sql);
    json_t *j =
        PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : NULL;
    PQclear(r);
    return j;
}

double sx_wait_num(const char *fmt, long long arg, double want)
{
    double until = hx_now() + WAIT_S, v = -2;
    while ((v = sx_sql_num(fmt, arg)) != want && hx_now() < until)
        usleep(100000);
    return v;
}

double sx_wait_min(const char *fmt, long long arg, double least)
{
    double until = hx_now() + WAIT_S, v = -2;
    while ((v = sx_sql_num(fmt, arg)) < least && hx_now() < until)
        usleep(100000);
    return v;
}

long long sx_register_node(const char *name, int ngpus)
{
    char body[2048];
    int o = snprintf(body, sizeof(body),
                     "{\"name\":\"%s\",\"cpus\":16,\"memory_bytes\":1000,"
                     "\"gpus\":[",
                     name);
    for (int g = 0; g < ngpus; g++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"sim\",\"memory_bytes\":1}", g ? "," : "", g);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

long long sx_submit(const char *body)
{
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

json_t *sx_get_job(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

void sx_put_scheduler(const char *body)
{
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, body), 200));
}

void sx_mark_running(long long id)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "UPDATE jobs SET state = 'RUNNING' WHERE id = %lld", id);
    hx_sql_do(sql);
}
