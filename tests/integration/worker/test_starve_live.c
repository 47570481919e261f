/* No starvation on a wrong estimate (docs/scheduler.md, "Estimates", "Guarantees"): the
 * scenario of issue 17, live. One worker of 4 simulated GPUs, policy precompute, max_wait_s
 * 20 s. Job A (elastic 1..4, a long train-mlp whose loss flattens within seconds) explores 1,
 * 2, 4 GPUs and keeps all 4: the convergence fit of its losses soon says it is finishing
 * "now". Job C (rigid, 1 GPU) then arrives. Before the guarantee, C waited as long as A ran
 * (A, "finishing now", was never shrunk). Now:
 *  - while C waits (if it waits a round at all), its pending reason names A and why A keeps
 *    the GPUs;
 *  - A's remaining estimate is not "now" once it outlived the fit: its source is the prior of
 *    the cluster's finished jobs or its elapsed time, and its predicted finish is ahead;
 *  - C runs within max_wait_s of its submission (A shrinks to make room). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define MAX_WAIT_S 20.0

static pid_t worker;

static void setup(void)
{
    hx_setup();
    wt_scheduler("{\"policy\":\"precompute\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30,\"explore_stage_s\":4,\"max_wait_s\":20}");
    worker = wt_spawn_worker("w1", 4);
}

static void teardown(void)
{
    wt_stop_worker(&worker);
    hx_teardown();
}

TestSuite(starve_live, .init = setup, .fini = teardown, .timeout = 300);

static long long held(long long job)
{
    return wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job);
}

/* The job's field as a string ("" when null; static storage). */
static const char *field(long long job, const char *name)
{
    static char out[512];
    json_t *j = wt_job(job);
    const char *v = json_string_value(json_object_get(j, name));
    snprintf(out, sizeof(out), "%s", v ? v : "");
    json_decref(j);
    return out;
}

/* 1 when the job's fit says it is done, yet it runs: its remaining estimate comes from the
 * prior or its elapsed time (or, in a server without estimates, its remaining epochs are 0,
 * so that this test shows the starvation there). */
static int outlived_fit(long long job)
{
    const char *src = field(job, "remaining_source");
    if (strcmp(src, "prior") == 0 || strcmp(src, "elapsed") == 0)
        return 1;
    json_t *j = wt_job(job);
    json_t *rem = json_object_get(json_object_get(j, "model"), "remaining_epochs");
    int zero = json_is_number(rem) && json_number_value(rem) == 0;
    json_decref(j);
    return zero;
}

Test(starve_live, a_job_that_fits_runs_within_max_wait_whatever_the_model_says)
{
    long long a = wt_post_job("{\"name\":\"a\",\"command\":[\"" TRAIN_MLP_PATH "\",\"--steps\","
                              "\"2000000\",\"--print-every\",\"5000\",\"--sleep-us-per-sample\","
                              "\"100\"],\"gpus\":1,\"min_gpus\":1,\"max_gpus\":4,"
                              "\"elastic\":true,\"env\":{" WT_ASAN_ENV "}}");
    double end = hx_now() + 90;
    while (held(a) < 4 && hx_now() < end)
        usleep(200000);
    cr_assert_eq(held(a), 4, "A explores 1, 2, 4 and keeps the 4 GPUs");
    /* its loss flattens: the convergence fit says "converged", which before the estimates
     * made its remaining work 0; now the rounds estimate it from elsewhere */
    end = hx_now() + 60;
    while (!outlived_fit(a) && hx_now() < end)
        usleep(200000);
    fprintf(stderr, "starve_live: A's remaining work from %s\n", field(a, "remaining_source"));
    cr_assert(outlived_fit(a), "A's fit never said converged (remaining from %s)",
              field(a, "remaining_source"));

    long long c = wt_submit_mlp(400, "\"gpus\":1", 3);
    double submitted = hx_now();
    char holds[64];
    snprintf(holds, sizeof(holds), "job %lld holds ", a);
    char unnamed[512] = "";
    end = submitted + MAX_WAIT_S + 25;
    while (held(c) == 0 && hx_now() < end) {
        /* a reason that C waits for GPUs held by others ("N free on one node") names A
         * (which may hold 4 GPUs, or fewer while a round shrinks it); one of a round that
         * left GPUs free for a moment ("needs 1 GPUs, 1 free: ...") names nobody */
        const char *why = field(c, "pending_reason");
        if (strstr(why, " free on one node") && !strstr(why, holds))
            snprintf(unnamed, sizeof(unnamed), "%s", why);
        usleep(200000);
    }
    double waited = hx_now() - submitted;
    cr_assert(!unnamed[0], "while C waits its pending reason names A: %s", unnamed);
    cr_assert_gt(held(c), 0, "C got a GPU (waited %.1f s)", waited);
    /* the round that forces C runs within a round interval of max_wait_s; its start action
     * then reaches the worker (slack for a loaded machine) */
    cr_assert_leq(waited, MAX_WAIT_S + 20, "C waited %.1f s", waited);
    fprintf(stderr, "starve_live: C got a GPU %.1f s after its submission; A holds %lld\n",
            waited, held(a));
    wt_expect_state(c, "RUNNING", 30, NULL);

    /* A outlived the fit's "now": its estimate lies ahead (from the prior or its elapsed
     * time, or the fit again once it says more than 0 at A's new size), never 0 */
    json_t *j = wt_job(a);
    double rem = json_number_value(json_object_get(json_object_get(j, "model"), "remaining_epochs"));
    cr_assert_gt(rem, 0, "A's remaining epochs are not 0");
    json_decref(j);
    wt_cancel(a);
    wt_expect_state(c, "COMPLETED", 120, NULL);
    hx_finish();
}

/* A rigid job holds every GPU and is not finishing: the job that waited max_wait_s gets GPUs
 * all the same. The holder yields, suspended in place, and resumes when the GPUs are free
 * again. Before the guarantee, the newcomer waited as long as the holder ran. */
Test(starve_live, a_rigid_holder_yields_to_a_job_that_waited_max_wait)
{
    long long a = wt_post_job("{\"name\":\"a\",\"command\":[\"" TRAIN_MLP_PATH "\",\"--steps\","
                              "\"2000000\",\"--print-every\",\"5000\",\"--sleep-us-per-sample\","
                              "\"300\"],\"gpus\":4,\"env\":{" WT_ASAN_ENV "}}");
    wt_expect_state(a, "RUNNING", 60, NULL);
    long long c = wt_submit_mlp(300, "\"gpus\":1", 5);
    double submitted = hx_now();
    char holds[64];
    snprintf(holds, sizeof(holds), "job %lld holds 4 GPUs", a);
    int named = 0;
    double end = submitted + MAX_WAIT_S + 40;
    while (held(c) == 0 && hx_now() < end) {
        named |= strstr(field(c, "pending_reason"), holds) != NULL;
        usleep(200000);
    }
    double waited = hx_now() - submitted;
    cr_assert(named, "while C waits its pending reason names A; last: %s",
              field(c, "pending_reason"));
    cr_assert_gt(held(c), 0, "C got a GPU (waited %.1f s)", waited);
    cr_assert_geq(waited, MAX_WAIT_S - 2, "C started only at its max wait (%.1f s)", waited);
    cr_assert_leq(waited, MAX_WAIT_S + 20, "C waited %.1f s", waited);
    fprintf(stderr, "starve_live: rigid A yielded; C got a GPU %.1f s after its submission\n",
            waited);
    wt_expect_state(a, "SUSPENDED", 30, NULL);
    wt_expect_state(c, "COMPLETED", 120, NULL);
    wt_expect_state(a, "RUNNING", 60, NULL);
    cr_assert_eq(held(a), 4, "A resumed on its 4 GPUs");
    /* the ledger books A's resume, its GPUs held while it came back, as preemption (sql/045) */
    hx_sql_do("SELECT ledger_close_all()");
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT 1000 * COALESCE(sum(lost_preemption_s), 0) FROM usage_ledger"
             " WHERE job_id = %lld",
             a);
    double lost_ms = hx_sql_num(sql);
    fprintf(stderr, "starve_live: A's resume lost %.0f GPU-ms to preemption\n", lost_ms);
    cr_assert_gt(lost_ms, 0, "A's resume is lost to the preemption");
    wt_cancel(a);
    hx_finish();
}

