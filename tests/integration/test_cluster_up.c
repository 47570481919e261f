/* The cluster up as the database keeps it (sql/029, the nodes up with GPUs and their GPUs)
 * after each way a node comes, changes, goes down, comes back and leaves, and under
 * concurrent changes. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(cluster_up, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

/* The cluster up as the database keeps it (sql/029) is the count of the nodes up with GPUs
 * and their GPUs, after each way a node comes, changes, goes down, comes back and leaves. */
static void expect_cluster_up(long nodes, long gpus)
{
    long kept_nodes = (long)hx_sql_num("SELECT nodes FROM cluster_up WHERE id = 1");
    long kept_gpus = (long)hx_sql_num("SELECT gpus FROM cluster_up WHERE id = 1");
    long counted_nodes = (long)hx_sql_num("SELECT count(DISTINCT n.id) FROM nodes n JOIN node_gpus"
                                          " g ON g.node_id = n.id WHERE n.state = 'UP'");
    long counted_gpus = (long)hx_sql_num("SELECT count(*) FROM nodes n JOIN node_gpus g"
                                         " ON g.node_id = n.id WHERE n.state = 'UP'");
    cr_assert_eq(kept_nodes, counted_nodes, "kept %ld nodes, counted %ld", kept_nodes,
                 counted_nodes);
    cr_assert_eq(kept_gpus, counted_gpus, "kept %ld GPUs, counted %ld", kept_gpus, counted_gpus);
    if (nodes >= 0) {
        cr_assert_eq(kept_nodes, nodes, "%ld nodes up, expected %ld", kept_nodes, nodes);
        cr_assert_eq(kept_gpus, gpus, "%ld GPUs up, expected %ld", kept_gpus, gpus);
    }
}

/* A node's registration body: GPUs 0..gpus-1. */
static void node_body(char *body, size_t size, const char *name, int gpus)
{
    int o = snprintf(body, size,
                     "{\"name\":\"%s\",\"cpus\":8,\"memory_bytes\":1000,\"gpus\":[", name);
    for (int i = 0; i < gpus; i++)
        o += snprintf(body + o, size - (size_t)o,
                      "%s{\"index\":%d,\"model\":\"V100\",\"memory_bytes\":1000}", i ? "," : "",
                      i);
    snprintf(body + o, size - (size_t)o, "]}");
}

/* Registers (or registers again) node name with GPUs 0..gpus-1 as worker w. */
static long long register_node(const char *w, const char *name, int gpus)
{
    char body[1024];
    node_body(body, sizeof(body), name, gpus);
    struct hx_resp *r = hx_json("POST", "/api/v1/nodes", w, body);
    cr_assert(r->status == 201 || r->status == 200, "%ld %s", r->status, r->body);
    json_t *n = hx_expect_json(r, r->status);
    long long id = json_integer_value(json_object_get(n, "id"));
    json_decref(n);
    return id;
}

Test(cluster_up, the_cluster_up_is_kept_as_nodes_come_and_go)
{
    char w[128], path[96];
    hx_user("w1", "worker", w);
    expect_cluster_up(0, 0);
    long long a = register_node(w, "a", 2);
    expect_cluster_up(1, 2);
    register_node(w, "b", 4);
    expect_cluster_up(2, 6);
    register_node(w, "c", 0); /* up without GPUs: not counted, as before */
    expect_cluster_up(2, 6);
    register_node(w, "b", 1); /* again, with fewer GPUs */
    expect_cluster_up(2, 3);
    register_node(w, "c", 3); /* again, with GPUs now */
    expect_cluster_up(3, 6);
    /* a node and its GPUs in one statement: both kinds of trigger see both */
    hx_sql_do("WITH n AS (INSERT INTO nodes (name, cpus, memory_bytes) VALUES ('d', 8, 1)"
              " RETURNING id) INSERT INTO node_gpus (node_id, idx, model, memory_bytes)"
              " SELECT id, g, 'sim', 1 FROM n, generate_series(0, 2) g");
    expect_cluster_up(4, 9);
    hx_sql_do("UPDATE nodes SET state = 'DOWN' WHERE name = 'a'");
    expect_cluster_up(3, 7);
    hx_expect_problem(hx_json("POST", "/api/v1/jobs", hx.admin,
                              "{\"name\":\"big\",\"command\":[\"t\"],\"gpus\":8}"),
                      422, "gpus");
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", a); /* back up */
    json_decref(hx_expect_json(hx_json("POST", path, w, NULL), 200));
    expect_cluster_up(4, 9);
    json_decref(hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin,
                                       "{\"name\":\"big\",\"command\":[\"t\"],\"gpus\":8}"),
                               201));
    hx_sql_do("UPDATE nodes SET state = 'DRAINING' WHERE name = 'c'");
    expect_cluster_up(3, 6);
    hx_sql_do("DELETE FROM node_gpus WHERE node_id = (SELECT id FROM nodes WHERE name = 'b')");
    expect_cluster_up(2, 5);
    hx_sql_do("DELETE FROM nodes WHERE name IN ('a', 'c')"); /* one up, one draining */
    expect_cluster_up(1, 3);
    hx_sql_do("UPDATE nodes SET state = 'DOWN' WHERE name = 'b'");
    hx_sql_do("DELETE FROM nodes");
    expect_cluster_up(0, 0);
    hx_finish();
}

/* Registrations of many nodes from several threads, twice each with other GPUs, while
 * another connection flips a third of the nodes down and up in one statement at a time (as
 * the round marks silent nodes down): the kept row is the full count when all is done, and no
 * registration or flip failed (a deadlock would fail one). */
struct registrar {
    pthread_t tid;
    const char *token;
    int k;
    int failed;
};

static void *register_many(void *arg)
{
    struct registrar *t = arg;
    for (int again = 0; again < 2; again++)
        for (int i = 0; i < 6; i++) {
            char name[32], body[1024];
            snprintf(name, sizeof(name), "c%d-%d", t->k, i);
            node_body(body, sizeof(body), name, (t->k + i + again) % 4);
            struct hx_resp *r = hx_json("POST", "/api/v1/nodes", t->token, body);
            t->failed += r->status != 201 && r->status != 200;
            hx_free(r);
        }
    return NULL;
}

static void *flip_states(void *arg)
{
    int *failed = arg;
    PGconn *c = PQconnectdb(hx.conninfo);
    for (int i = 0; i < 40 && PQstatus(c) == CONNECTION_OK; i++) {
        char sql[160];
        snprintf(sql, sizeof(sql),
                 "UPDATE nodes SET state = CASE WHEN state = 'UP' THEN 'DOWN' ELSE 'UP' END"
                 " WHERE id %% 3 = %d",
                 i % 3);
        PGresult *r = PQexec(c, sql);
        *failed += PQresultStatus(r) != PGRES_COMMAND_OK;
        PQclear(r);
    }
    *failed += PQstatus(c) != CONNECTION_OK;
    PQfinish(c);
    return NULL;
}

Test(cluster_up, the_cluster_up_holds_under_concurrent_changes)
{
    char w[128];
    hx_user("w1", "worker", w);
    enum { N = 6 };
    struct registrar t[N];
    int flip_failed = 0;
    pthread_t flipper;
    for (int k = 0; k < N; k++) {
        t[k] = (struct registrar){.token = w, .k = k};
        cr_assert_eq(pthread_create(&t[k].tid, NULL, register_many, &t[k]), 0);
    }
    cr_assert_eq(pthread_create(&flipper, NULL, flip_states, &flip_failed), 0);
    for (int k = 0; k < N; k++) {
        pthread_join(t[k].tid, NULL);
        cr_assert_eq(t[k].failed, 0, "registrar %d: %d registrations failed", k, t[k].failed);
    }
    pthread_join(flipper, NULL);
    cr_assert_eq(flip_failed, 0, "%d flips failed", flip_failed);
    cr_assert_eq(hx_sql_num("SELECT count(*) FROM nodes"), N * 6);
    expect_cluster_up(-1, -1);
    cr_assert(hx_sql_num("SELECT gpus FROM cluster_up") > 0);
    hx_finish();
}
