/* Two GPU types live (issue 31 items 3 and 7): a real ringmasterd and PostgreSQL, two
 * ringmaster-worker daemons of 4 simulated GPUs each, one `--simulate-gpu-model a100`, the
 * other `t4`, the default policy (ringmaster), explore_stage_s 8. Two elastic jobs without a
 * profile (`gpus 1, elastic, max_gpus 4`), real `mpirun train-mlp`, whose emulated compute runs
 * at a per-type speed (`--speed-by-gpu`, read against the model the worker reports):
 *  - job A `a100=1,t4=4`: four times slower on a t4;
 *  - job B `a100=4,t4=1`: four times slower on an a100, which the one factor per GPU model
 *    (a100 5x a t4) cannot say.
 * Both end on the type that suits each, A's GPUs all on the a100 node and B's on the t4 node,
 * within TYPES_S of their start, and stay there: the scheduler learned each job's speed per
 * type from its own steps (its page's speed by GPU type says "measured" for the type it runs
 * on). Every wait is bounded. */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define NWORKERS 2
#define TYPES_S 240.0 /* both jobs are on their type this long after they started */
#define STAY_S 15.0   /* and stay there at least this long */

/* Two loopback addresses: mpirun reaches the second "host" by that name. */
static const char *const names[NWORKERS] = {"127.0.0.1", "127.0.0.2"};
static const char *const models[NWORKERS] = {"a100", "t4"};
static pid_t workers[NWORKERS];
static long long nodes[NWORKERS];
static char ckpt_root[64];

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-ckpt", NULL);
    hx_setup();
    wt_scheduler("{\"interval_s\":1,\"grace_s\":30,\"explore_stage_s\":8}");
    for (int k = 0; k < NWORKERS; k++) {
        char log[64];
        snprintf(log, sizeof(log), "%s.log", names[k]);
        workers[k] = wt_start_worker(
            names[k], &(struct wt_worker){.gpus = 4, .model = models[k], .log = log, .tcp = 1});
        nodes[k] = wt_wait_node(names[k]);
    }
}

static void teardown(void)
{
    for (int k = 0; k < NWORKERS; k++)
        wt_stop_worker(&workers[k]);
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(types_live, .init = setup, .fini = teardown, .timeout = 420);

/* An elastic train-mlp job of 1..4 GPUs at the per-type speeds `speeds`. */
static long long submit(const char *speeds, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp-%d\",\"command\":[\"%s\",\"--steps\",\"1000000\",\"--seed\",\"%d\","
             "\"--print-every\",\"500\",\"--sleep-us-per-sample\",\"400\","
             "\"--speed-by-gpu\",\"%s\",\"--fits-by-gpu\",\"a100=96,t4=24\"],\"gpus\":1,"
             "\"elastic\":true,\"max_gpus\":4,"
             "\"env\":{" WT_ASAN_ENV "}}",
             seed, TRAIN_MLP_PATH, seed, speeds);
    return wt_post_job(body);
}

/* The GPUs job holds on node, and in all. */
static long long held_on(long long job, long long node)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM allocations WHERE job_id = %%lld AND node_id = %lld", node);
    return wt_db_int(sql, job);
}

static long long held(long long job)
{
    return wt_db_int("SELECT count(*) FROM allocations WHERE job_id = %lld", job);
}

/* 1 when job runs with all of its GPUs (one at least) on node. */
static int only_on(long long job, long long node)
{
    long long all = held(job);
    return strcmp(wt_job_state(job), "RUNNING") == 0 && all > 0 && held_on(job, node) == all;
}

/* What each job holds where, its model's sources per type and its step times per size and
 * GPU model; then the actions. */
static void print_state(const char *when, const long long *jobs)
{
    for (int i = 0; i < 2; i++) {
        fprintf(stderr, "types_live: %s: job %lld %s holds %lld on a100, %lld on t4;", when,
                jobs[i], wt_job_state(jobs[i]), held_on(jobs[i], nodes[0]),
                held_on(jobs[i], nodes[1]));
        json_t *j = wt_job(jobs[i]);
        const json_t *a = json_object_get(
            json_object_get(json_object_get(j, "model"), "speed"), "by_gpu_model");
        for (size_t k = 0; k < json_array_size(a); k++) {
            const json_t *e = json_array_get(a, k);
            const json_t *t = json_object_get(e, "step_time_s");
            fprintf(stderr, " %s %s %.4f s", json_string_value(json_object_get(e, "gpu_model")),
                    json_string_value(json_object_get(e, "source")),
                    json_is_number(t) ? json_number_value(t) : -1.0);
        }
        fprintf(stderr, "\n");
        json_decref(j);
    }
    PGresult *r = hx_sql("SELECT job_id, world_size, gpu_model, round(avg(seconds)::numeric * 1e3,"
                         " 2), count(*) FROM job_metrics GROUP BY job_id, world_size, gpu_model"
                         " ORDER BY job_id, gpu_model, world_size");
    for (int i = 0; i < PQntuples(r); i++)
        fprintf(stderr, "types_live: job %s at %s GPUs of %s: mean step %s ms, %s steps\n",
                PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
                PQgetvalue(r, i, 4));
    PQclear(r);
    wt_print_actions("types_live");
}

/* The source of the job's figures on GPU model name (its page's speed by GPU type), or "". */
static const char *type_source(long long job, const char *name)
{
    static char src[32];
    src[0] = '\0';
    json_t *j = wt_job(job);
    const json_t *a =
        json_object_get(json_object_get(json_object_get(j, "model"), "speed"), "by_gpu_model");
    for (size_t k = 0; k < json_array_size(a); k++) {
        const json_t *e = json_array_get(a, k);
        if (strcmp(json_string_value(json_object_get(e, "gpu_model")) ?: "", name) == 0)
            snprintf(src, sizeof(src), "%s", json_string_value(json_object_get(e, "source")) ?: "");
    }
    json_decref(j);
    return src;
}

/* Fails without the probe of learn_type_experiment (each job tried on a type it never ran
 * on at parity with its best while that type's GPUs are idle): both jobs then start on the
 * a100 node, grow to 2 GPUs each there and stay, B's t4 estimate from the one factor (a100
 * 5x a t4), the 4 t4 GPUs idle. */
Test(types_live, two_jobs_with_opposite_preferences_end_on_the_type_that_suits_each)
{
    long long jobs[2] = {submit("a100=1,t4=4", 3301), submit("a100=4,t4=1", 3302)};
    for (int i = 0; i < 2; i++)
        wt_expect_state(jobs[i], "RUNNING", 90, NULL);
    double t0 = hx_now(), end = t0 + TYPES_S, since = -1;
    while (hx_now() < end) {
        int suited = only_on(jobs[0], nodes[0]) && only_on(jobs[1], nodes[1]);
        if (!suited)
            since = -1;
        else if (since < 0)
            since = hx_now();
        if (suited && hx_now() - since >= STAY_S)
            break;
        usleep(500000);
    }
    int done = since >= 0 && hx_now() - since >= STAY_S;
    print_state(done ? "suited" : "not suited", jobs);
    cr_assert(done,
              "within %.0f s of their start job A (a100=1,t4=4) is not on the a100 node alone and"
              " job B (a100=4,t4=1) on the t4 node alone, for %.0f s",
              TYPES_S, STAY_S);
    fprintf(stderr, "types_live: each job on its type %.1f s after they started\n",
            since - t0);
    cr_assert_str_eq(type_source(jobs[0], "a100"), "measured");
    cr_assert_str_eq(type_source(jobs[1], "t4"), "measured");
    /* what each said fits in its GPUs (--fits-by-gpu, its FITS record through the worker) is
     * kept for the model it ran on (sql/049) */
    cr_assert_eq(wt_db_int("SELECT max_local FROM job_fits WHERE job_id = %lld"
                           " AND gpu_model = 'a100'",
                           jobs[0]),
                 96);
    cr_assert_eq(wt_db_int("SELECT max_local FROM job_fits WHERE job_id = %lld"
                           " AND gpu_model = 't4'",
                           jobs[1]),
                 24);
    for (int i = 0; i < 2; i++)
        wt_cancel(jobs[i]);
    for (int i = 0; i < 2; i++)
        wt_expect_state(jobs[i], "CANCELLED", 60, NULL);
    for (int k = 0; k < NWORKERS; k++)
        cr_assert_eq(wt_stop_worker(&workers[k]), 0);
    hx_finish();
}
