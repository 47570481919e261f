/* Fair shares between users, live (docs/scheduler.md, "Guarantees"): one worker of 4
 * simulated GPUs, policy fifo (which, alone, serves jobs in the order they came). Alice's
 * four long 1-GPU jobs take every GPU. Bob, at an equal share, then submits two: each user's
 * share is 2 GPUs, so Bob's jobs start at once (within a few rounds), two of Alice's yield
 * (suspended in place) and she keeps 2 GPUs. When Bob's jobs end, her jobs resume: what a
 * user does not use is lent to the others. Under fifo without shares, Bob waited for
 * Alice's jobs to end. */
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

static pid_t worker;
static char alice[128], bob[128];

static void setup(void)
{
    hx_setup();
    wt_scheduler("{\"policy\":\"fifo\",\"interval_s\":1,\"min_resize_interval_s\":0,"
                 "\"resize_cost_s\":0,\"grace_s\":30}");
    hx_user("alice", "user", alice);
    hx_user("bob", "user", bob);
    worker = wt_spawn_worker("w1", 4);
}

static void teardown(void)
{
    wt_stop_worker(&worker);
    hx_teardown();
}

TestSuite(share_live, .init = setup, .fini = teardown, .timeout = 300);

/* A train-mlp job of steps steps (slept compute: 100 ms a step) as token's user. */
static long long submit_as(const char *token, long steps, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"500\",\"--sleep-us-per-sample\",\"3000\"],\"gpus\":1,"
             "\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, steps, seed);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", token, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* GPUs the user's jobs hold now. */
static long long gpus_of(const char *user)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM allocations a JOIN jobs j ON j.id = a.job_id JOIN users u"
             " ON u.id = j.user_id WHERE u.name = '%s' AND %%lld = 1",
             user);
    return wt_db_int(sql, 1);
}

Test(share_live, a_user_below_its_share_gets_it_and_returns_what_it_borrowed)
{
    long long a[4];
    for (int k = 0; k < 4; k++)
        a[k] = submit_as(alice, 1000000, k + 1);
    for (int k = 0; k < 4; k++)
        wt_expect_state(a[k], "RUNNING", 60, NULL);
    cr_assert_eq(gpus_of("alice"), 4, "Alice borrows the whole cluster");

    long long b[2] = {submit_as(bob, 150, 11), submit_as(bob, 150, 12)};
    double submitted = hx_now(), end = submitted + 30;
    while (gpus_of("bob") < 2 && hx_now() < end)
        usleep(200000);
    double took = hx_now() - submitted;
    cr_assert_eq(gpus_of("bob"), 2, "Bob gets his share within 30 s (%.1f s)", took);
    cr_assert_eq(gpus_of("alice"), 2, "Alice keeps her share");
    fprintf(stderr, "share_live: Bob held his 2 GPUs %.1f s after submitting\n", took);
    /* the round that gave Bob the GPUs marked two of Alice's jobs for suspension; their
     * state follows the worker's answer */
    int suspended = 0;
    end = hx_now() + 20;
    do {
        suspended = 0;
        for (int k = 0; k < 4; k++)
            suspended += strcmp(wt_job_state(a[k]), "SUSPENDED") == 0;
        if (suspended < 2)
            usleep(200000);
    } while (suspended < 2 && hx_now() < end);
    cr_assert_eq(suspended, 2, "two of Alice's jobs yielded, suspended in place");

    for (int k = 0; k < 2; k++)
        wt_expect_state(b[k], "COMPLETED", 120, NULL);
    end = hx_now() + 60;
    while (gpus_of("alice") < 4 && hx_now() < end)
        usleep(200000);
    cr_assert_eq(gpus_of("alice"), 4, "Alice's jobs resume on the GPUs Bob no longer uses");
    for (int k = 0; k < 4; k++)
        wt_cancel(a[k]);
    hx_finish();
}
