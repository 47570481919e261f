/* Topology (issue 32 items 1 to 4): a node registered with its GPUs' NVLink islands and NUMA
 * domains, and labelled with its switch, answers them; the scheduler places a job in one
 * island of a node; reports are summed per link class; consolidation gathers a job on one
 * island, each move naming it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

TestSuite(topology, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

#define WAIT_S 20.0

/* Registers node name with ngpus GPUs in islands of isl GPUs (GPU g in island g / isl; isl < 0:
 * -isl islands interleaved, GPU g in island g % -isl; 0: not reported); its id. */
static long long node_islands(const char *name, int ngpus, int isl)
{
    char body[4096];
    int o = snprintf(body, sizeof(body),
                     "{\"name\":\"%s\",\"cpus\":16,\"memory_bytes\":1000,\"gpus\":[", name);
    for (int g = 0; g < ngpus; g++) {
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"sim\",\"memory_bytes\":1", g ? "," : "", g);
        int k = isl > 0 ? g / isl : isl < 0 ? g % -isl : -1;
        if (k >= 0)
            o += snprintf(body + o, sizeof(body) - (size_t)o, ",\"island\":%d,\"numa\":%d", k, k);
        o += snprintf(body + o, sizeof(body) - (size_t)o, "}");
    }
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    json_t *n = hx_expect_json(hx_json("POST", "/api/v1/nodes", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

static json_t *get_node(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", id);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

static void label(long long id, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", id);
    json_decref(hx_expect_json(hx_json("PATCH", path, hx.admin, body), 200));
}

Test(topology, islands_and_switch_are_stored_and_shown)
{
    long long a = node_islands("topo-a", 8, 4), b = node_islands("topo-b", 2, 0);
    label(a, "{\"labels\":{\"switch\":\"s1\",\"rack\":\"r1\"}}");
    json_t *n = get_node(a);
    json_t *gpus = json_object_get(n, "gpus");
    cr_assert_eq(json_array_size(gpus), 8);
    for (size_t g = 0; g < 8; g++) {
        json_t *x = json_array_get(gpus, g);
        cr_assert_eq(json_integer_value(json_object_get(x, "island")), (json_int_t)g / 4);
        cr_assert_eq(json_integer_value(json_object_get(x, "numa")), (json_int_t)g / 4);
    }
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(n, "labels"), "switch")),
                     "s1");
    json_decref(n);
    n = get_node(b);
    json_t *g0 = json_array_get(json_object_get(n, "gpus"), 0);
    cr_assert(json_is_null(json_object_get(g0, "island")), "not reported: null");
    cr_assert(json_is_null(json_object_get(g0, "numa")));
    json_decref(n);
    /* a bad island is refused, naming its field */
    hx_expect_problem(hx_json("POST", "/api/v1/nodes", hx.admin,
                              "{\"name\":\"topo-c\",\"cpus\":1,\"memory_bytes\":1,\"gpus\":"
                              "[{\"index\":0,\"model\":\"a\",\"memory_bytes\":1,\"island\":-2}]}"),
                      400, "gpus[0].island");
    /* stored per GPU (sql/037) */
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM node_gpus WHERE island IS NOT NULL"), 8);
    /* ringctl: the ISLANDS column, and a line per GPU of one node */
    struct ctl_run *r = ctl("nodes");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "ISLANDS") && strstr(r->out, " 2x4"), "%s", r->out);
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", a);
    r = ctl("nodes", ids);
    cr_assert(strstr(r->out, "  GPU 5: sim, island 1, numa 1\n"), "%s", r->out);
}

/* Islands as NVML may report them, interleaved (GPUs 0, 2, 4, 6 and 1, 3, 5, 7), the node
 * labelled with its switch: a 4-GPU job gets one island, not the buddy block 0-3. */
Test(topology, a_four_gpu_job_lands_on_one_island)
{
    long long n = node_islands("topo-i", 8, -2);
    label(n, "{\"labels\":{\"switch\":\"s1\"}}");
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"t\",\"command\":[\"t\"],\"gpus\":4}"),
                               201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM allocations WHERE job_id = %lld", id);
    for (double until = hx_now() + WAIT_S; hx_sql_num(sql) < 4 && hx_now() < until;)
        usleep(100000);
    cr_assert_eq(hx_sql_num(sql), 4, "the job started");
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT g.island) FROM allocations a JOIN node_gpus g ON"
             " g.node_id = a.node_id AND g.idx = a.gpu_idx WHERE a.job_id = %lld",
             id);
    double islands = hx_sql_num(sql);
    snprintf(sql, sizeof(sql), "SELECT sum(1 << gpu_idx) FROM allocations WHERE job_id = %lld", id);
    cr_assert_eq(islands, 1, "one island: GPUs of mask %g", hx_sql_num(sql));
}

/* ringctl submit --switches 1@3 (Slurm's --switches=1@3): a 12-GPU job on two 8-GPU nodes of
 * two switches waits, its reason naming the bound, then after 3 s takes GPUs of both. */
Test(topology, a_switch_bound_waits_then_takes_what_there_is)
{
    long long a = node_islands("topo-s1", 8, 0), b = node_islands("topo-s2", 8, 0);
    label(a, "{\"labels\":{\"switch\":\"s1\"}}");
    label(b, "{\"labels\":{\"switch\":\"s2\"}}");
    struct ctl_run *r =
        ctl("submit", "--name", "sw", "--gpus", "12", "--switches", "1@3", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = strtoll(r->out, NULL, 10);
    cr_assert_gt(id, 0, "%s", r->out);
    char path[64], sql[160];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *t = json_object_get(j, "topology");
    cr_assert_eq(json_integer_value(json_object_get(t, "max_switches")), 1);
    cr_assert_float_eq(json_number_value(json_object_get(t, "max_wait_s")), 3.0, 1e-9);
    json_decref(j);
    /* its reason says which bound it waits for, while it waits */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_sched WHERE job_id = %lld AND pending_reason LIKE"
             " '%%waiting for GPUs on at most 1 switch (%% s of 3 s)%%'",
             id);
    double until = hx_now() + WAIT_S, seen = 0;
    while (!(seen = hx_sql_num(sql)) && hx_now() < until)
        usleep(50000);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM allocations WHERE job_id = %lld", id);
    cr_assert(seen, "the reason named the bound");
    cr_assert_eq(hx_sql_num(sql), 0, "it waited");
    /* then it takes what there is: both switches */
    while (hx_sql_num(sql) < 12 && hx_now() < until)
        usleep(100000);
    cr_assert_eq(hx_sql_num(sql), 12, "it started after its wait");
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT node_id) FROM allocations WHERE job_id = %lld", id);
    cr_assert_eq(hx_sql_num(sql), 2);
}

/* The speed model's link classes (issue 32 item 2, sql/046): each report is stored with the
 * nodes and the slowest link of the job's GPUs then, and its running sums are kept per class:
 * a 6-GPU job on a node of two 4-GPU islands spans PCIe (class 1), a 12-GPU job over two nodes
 * of two switches crosses them (class 3). */
static void post_steps(long long id, int w, int n)
{
    char path[64], body[8192];
    int o = snprintf(body, sizeof(body), "{\"items\":[");
    for (int k = 0; k < n; k++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"step\":%d,\"world_size\":%d,\"loss\":1.0,\"samples\":%d,"
                      "\"seconds\":0.25}",
                      k ? "," : "", k, w, 32 * w);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", id);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), 200));
}

static long long started(const char *body, int gpus)
{
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM allocations WHERE job_id = %lld", id);
    for (double until = hx_now() + WAIT_S; hx_sql_num(sql) < gpus && hx_now() < until;)
        usleep(100000);
    cr_assert_eq(hx_sql_num(sql), gpus, "job %lld started", id);
    return id;
}

Test(topology, reports_are_summed_per_link_class)
{
    node_islands("topo-l", 8, 4);
    long long a = started("{\"name\":\"p\",\"command\":[\"t\"],\"gpus\":6}", 6);
    post_steps(a, 6, 5);
    char sql[200];
    snprintf(sql, sizeof(sql),
             "SELECT sum(reports) FROM job_metric_sums WHERE job_id = %lld AND nodes = 1"
             " AND link = 1",
             a);
    cr_assert_eq(hx_sql_num(sql), 5, "over PCIe: two islands of one node");
    long long s1 = node_islands("topo-l1", 8, 0), s2 = node_islands("topo-l2", 8, 0);
    label(s1, "{\"labels\":{\"switch\":\"s1\"}}");
    label(s2, "{\"labels\":{\"switch\":\"s2\"}}");
    long long b = started("{\"name\":\"x\",\"command\":[\"t\"],\"gpus\":12}", 12);
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT node_id) FROM allocations WHERE job_id = %lld", b);
    int nodes = (int)hx_sql_num(sql);
    post_steps(b, 12, 3);
    post_steps(b, 1, 2); /* one GPU of it: no link */
    snprintf(sql, sizeof(sql),
             "SELECT sum(reports) FROM job_metric_sums WHERE job_id = %lld AND world_size = 12"
             " AND nodes = %d AND link = 3",
             b, nodes);
    cr_assert_geq(nodes, 2);
    cr_assert_eq(hx_sql_num(sql), 3, "across switches");
    snprintf(sql, sizeof(sql),
             "SELECT sum(reports) FROM job_metric_sums WHERE job_id = %lld AND world_size = 1"
             " AND nodes = 1 AND link = 0",
             b);
    cr_assert_eq(hx_sql_num(sql), 2);
}

/* Consolidation live (issue 32 item 4): 1-GPU jobs on GPUs 0, 1, 4 and 5 of a node of two
 * 4-GPU islands leave a 4-GPU job two GPUs in each; the round migrates two of them, each
 * move's event naming the job it makes room for, and starts it on one island. */
Test(topology, consolidation_gathers_a_job_on_one_island_and_says_for_whom)
{
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"policy\":\"fifo\",\"interval_s\":1,"
                                       "\"node_timeout_s\":3600}"),
                               200));
    long long n = node_islands("topo-c", 8, 4), small[8];
    char sql[320];
    for (int k = 0; k < 8; k++)
        small[k] = started("{\"name\":\"s\",\"command\":[\"t\"],\"gpus\":1}", 1);
    for (int k = 0; k < 8; k++) {
        snprintf(sql, sizeof(sql),
                 "SELECT gpu_idx FROM allocations WHERE job_id = %lld AND node_id = %lld",
                 small[k], n);
        int g = (int)hx_sql_num(sql);
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", small[k]);
        if (g % 4 >= 2) /* GPUs 2, 3, 6, 7 freed: two in each island */
            json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
        else {
            snprintf(sql, sizeof(sql), "UPDATE jobs SET state = 'RUNNING' WHERE id = %lld",
                     small[k]);
            hx_sql_do(sql);
        }
    }
    snprintf(sql, sizeof(sql), "SELECT count(*) + 0 * %lld FROM allocations", n);
    for (double until = hx_now() + WAIT_S; hx_sql_num(sql) > 4 && hx_now() < until;)
        usleep(100000);
    cr_assert_eq(hx_sql_num(sql), 4, "four small jobs hold GPUs 0, 1, 4, 5");
    long long big = started("{\"name\":\"b\",\"command\":[\"t\"],\"gpus\":4}", 4);
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT g.island) FROM allocations a JOIN node_gpus g ON"
             " g.node_id = a.node_id AND g.idx = a.gpu_idx WHERE a.job_id = %lld",
             big);
    cr_assert_eq(hx_sql_num(sql), 1, "one island");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE detail LIKE"
             " '%%migrated: to let job %lld run on one NVLink island%%'",
             big);
    double moves = hx_sql_num(sql);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) + 0 * %lld FROM actions WHERE kind = 'migrate'", big);
    cr_assert_eq(moves, 2, "two moves, each naming job %lld", big);
    cr_assert_eq(hx_sql_num(sql), 2, "as two migrate actions");
}
