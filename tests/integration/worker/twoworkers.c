/* twoworkers: the setting of the stale-copy and checkpoint-generation suites: two real
 * workers of one simulated GPU beside ringmasterd (fifo), and the waits they use. */
#include "twoworkers.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

struct tw tw;

void tw_setup(const char *prefix)
{
    memset(&tw, 0, sizeof(tw));
    wt_tmp_root(tw.ckpt_root, sizeof(tw.ckpt_root), prefix, NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler("{\"policy\":\"fifo\",\"interval_s\":1,\"node_timeout_s\":5}");
    tw.worker_a = wt_spawn_worker("sim-a", 1);
    tw.node_a = wt_wait_node("sim-a"); /* registered first: the lower id, where fifo starts */
    tw.worker_b = wt_spawn_worker("sim-b", 1);
    tw.node_b = wt_wait_node("sim-b");
}

void tw_teardown(void)
{
    if (tw.worker_a > 0)
        kill(tw.worker_a, SIGCONT); /* a failed test may leave it frozen */
    int a = wt_stop_worker(&tw.worker_a), b = wt_stop_worker(&tw.worker_b);
    if (a != 0 || b != 0)
        wt_dump_logs();
    hx_teardown();
    wt_remove_tree(tw.ckpt_root);
}

long long tw_allocated_on(long long job)
{
    return wt_db_int("SELECT COALESCE(min(node_id), 0) FROM allocations WHERE job_id = %lld", job);
}

void tw_await(int (*cond)(long long, long long), long long x, long long arg, double timeout_s,
              const char *what, long long job)
{
    double end = hx_now() + timeout_s;
    while (!cond(x, arg)) {
        if (hx_now() > end) {
            wt_dump_logs();
            cr_assert_fail("job %lld: %s after %.0f s (state %s)", job, what, timeout_s,
                           wt_job_state(job));
        }
        usleep(100000);
    }
}

int tw_node_is(long long node, long long down)
{
    char path[64], state[16];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", node);
    json_t *n = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(n, "state")));
    json_decref(n);
    return !strcmp(state, down ? "DOWN" : "UP");
}

int tw_runs_on(long long job, long long node)
{
    return !strcmp(wt_job_state(job), "RUNNING") && tw_allocated_on(job) == node;
}

int tw_reported(long long job, long long n)
{
    return wt_db_int("SELECT count(*) FROM job_metrics WHERE job_id = %lld", job) >= n;
}

int tw_gone_on_a(long long job, long long unused)
{
    (void)unused;
    return wt_count_job_procs("sim-a", job) == 0;
}

int tw_log_has(const char *worker, long long job, const char *needle)
{
    char path[400], line[1024];
    int found = 0;
    snprintf(path, sizeof(path), "%s/%s/jobs/%lld/log", hx.dir, worker, job);
    FILE *f = fopen(path, "r");
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return found;
}
