/* The live scheduler's writes at scale through the real server and database (issue 35): a
 * round's moves and their ledger, a deep queue started at once. Nodes registered through the
 * API (no worker), as in test_sched.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "sched_fx.h"

TestSuite(sched_write, .init = hx_setup, .fini = hx_teardown, .timeout = 90);

/* A round's moves book the ledger once for all of them (sql/051: the row trigger leaves them
 * to the round's ledger_moved()): the job a round resizes has its span in the state the round
 * moved it to, its GPUs lost to the resize. Fails when the round's batched ledger call is left
 * out (the span stays in the state its start left it in). */
Test(sched_write, a_round_s_moves_book_the_ledger_of_each_job_they_move)
{
    sx_put_scheduler("{\"min_resize_interval_s\":0,\"resize_cost_s\":0}");
    const char *job = "{\"name\":\"r\",\"command\":[\"t\"],\"gpus\":1,\"min_gpus\":1,"
                      "\"max_gpus\":8,\"elastic\":true,\"model\":{\"class\":\"resnet110\"}}";
    long long a = sx_submit(job), b = sx_submit(job), c = sx_submit(job);
    sx_register_node("n1", 8);
    cr_assert_eq(
        sx_wait_num("SELECT count(DISTINCT job_id) FROM allocations WHERE job_id >= %lld", a, 3), 3,
        "all three started");
    sx_mark_running(a);
    sx_mark_running(b);
    sx_mark_running(c);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", c);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
    double resizing =
        sx_wait_min("SELECT count(*) FROM jobs WHERE id >= %lld AND state = 'RESIZING'", a, 1);
    cr_assert_geq(resizing, 1, "the round grows a survivor into the freed GPUs");
    cr_assert_eq(sx_sql_num("SELECT count(*) FROM job_ledger_open o JOIN jobs j ON j.id = o.job_id"
                            " WHERE j.id >= %lld AND j.state = 'RESIZING' AND o.state = 'RESIZING'"
                            " AND o.redo_to = 'resize'",
                            a),
                 resizing, "each one's span in the state the round moved it to");
    hx_finish();
}

/* Issue 35: a 500-deep queue of jobs that fit, submitted at once (one jobs:batch, one
 * transaction), is placed within 2 rounds: every job's start action comes from at most two
 * rounds, and no GPU is given twice. 64 nodes of 8 GPUs registered through the API. */
Test(sched_write, a_500_deep_queue_of_jobs_that_fit_starts_within_two_rounds, .timeout = 120)
{
    char name[16];
    for (int n = 0; n < 64; n++) {
        snprintf(name, sizeof(name), "q%02d", n);
        sx_register_node(name, 8);
    }
    size_t len = 64 + 500 * 64, o = 0;
    char *body = malloc(len);
    cr_assert_not_null(body);
    o += (size_t)snprintf(body, len, "{\"jobs\":[");
    for (int i = 0; i < 500; i++)
        o += (size_t)snprintf(body + o, len - o,
                              "%s{\"name\":\"deep-%d\",\"command\":[\"t\"],"
                              "\"gpus\":1}",
                              i ? "," : "", i);
    snprintf(body + o, len - o, "]}");
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs:batch", hx.admin, body), 201);
    free(body);
    long long first =
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "id"));
    json_decref(j);
    cr_assert_eq(sx_wait_num("SELECT count(DISTINCT job_id) FROM actions WHERE job_id >= %lld"
                             " AND kind = 'start'",
                             first, 500),
                 500, "every job of the queue started");
    cr_assert_leq(sx_sql_num("SELECT count(DISTINCT round_id) FROM actions WHERE job_id >= %lld AND"
                             " kind = 'start'",
                             first),
                  2, "by at most two rounds");
    cr_assert_eq(sx_sql_num("SELECT count(*) FROM (SELECT node_id, gpu_idx FROM allocations WHERE"
                            " job_id >= %lld GROUP BY 1, 2 HAVING count(*) > 1) x",
                            first),
                 0, "no GPU given twice");
    hx_finish();
}
