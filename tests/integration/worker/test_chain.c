/* The whole system in one chain, through the REST API only: real PostgreSQL, ringmasterd with
 * its scheduler thread (policy fifo: it gives each job what it asks for and leaves it alone,
 * so every change below is the one a person asked for), two ringmaster-worker daemons with
 * four simulated GPUs each, and a real `mpirun ... train-mlp` job. Also the failover of a
 * job whose host dies. Checkpoints live under one folder both workers reach
 * (RINGMASTER_CHECKPOINT_ROOT). Every wait is bounded. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wtest.h"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH "build/examples/train-mlp"
#endif

#define MAX_PIDS 4096

static pid_t worker_a, worker_b;
static long long node_a, node_b;
static char ckpt_root[64];

static void setup(void)
{
    wt_tmp_root(ckpt_root, sizeof(ckpt_root), "rm-chain", NULL); /* the server inherits it */
    hx_setup();
    wt_scheduler("{\"policy\":\"fifo\",\"interval_s\":1,"
                 "\"min_resize_interval_s\":0,\"resize_cost_s\":0,"
                 "\"grace_s\":30,\"node_timeout_s\":5}");
    worker_a = wt_spawn_worker("sim-a", 4);
    node_a = wt_wait_node("sim-a"); /* registered first: the lower id, where fifo starts jobs */
    worker_b = wt_spawn_worker("sim-b", 4);
    node_b = wt_wait_node("sim-b");
}

static void teardown(void)
{
    int a = wt_stop_worker(&worker_a), b = wt_stop_worker(&worker_b);
    if (a != 0 || b != 0)
        wt_dump_logs();
    hx_teardown();
    wt_remove_tree(ckpt_root);
}

TestSuite(chain, .init = setup, .fini = teardown, .timeout = 240);

/* Submits train-mlp through the API (as admin) and returns the job's id. */
static long long submit(long steps, int gpus, int seed, int print_every)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"chain\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--params\",\"2048\","
             "\"--seed\",\"%d\",\"--print-every\",\"%d\"],\"gpus\":%d,\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, steps, seed, print_every, gpus);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "PENDING");
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static void fail_with_logs(const char *what, long long job)
{
    wt_dump_logs();
    cr_assert_fail("job %lld: %s (state %s)", job, what, wt_job_state(job));
}

/* POSTs to /api/v1/jobs/{job}/what and checks the status. */
static void post(long long job, const char *what, const char *body, long status)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/%s", job, what);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, body), status));
}

/* Reports of world size w (0: any) with a step above after: how many, and the first and last
 * step among them (-1 when none). */
struct span {
    int count;
    long first, last;
};

static struct span steps_of(long long job, int w, long after)
{
    json_t *m = wt_metrics(job);
    struct span s = {0, -1, -1};
    for (size_t i = 0; i < json_array_size(m); i++) {
        json_t *it = json_array_get(m, i);
        long step = (long)json_integer_value(json_object_get(it, "step"));
        if ((w && json_integer_value(json_object_get(it, "world_size")) != w) || step <= after)
            continue;
        s.first = s.count++ ? s.first : step;
        s.last = step;
    }
    json_decref(m);
    return s;
}

/* Waits until the job reported n steps at world size w above step after. */
static struct span wait_steps(long long job, int w, long after, int n, double timeout_s)
{
    double end = hx_now() + timeout_s;
    struct span s;
    while ((s = steps_of(job, w, after)).count < n) {
        if (hx_now() > end) {
            char what[128];
            snprintf(what, sizeof(what), "%d steps above %ld at world %d after %.0f s, not %d",
                     s.count, after, w, timeout_s, n);
            fail_with_logs(what, job);
        }
        usleep(100000);
    }
    return s;
}

/* Checks the job's world size and that its allocation is GPUs 0..world-1 of one node. */
static void expect_allocation(long long job, long long node, int world)
{
    json_t *j = wt_job(job);
    json_t *alloc = json_object_get(j, "allocation");
    json_t *a0 = json_array_get(alloc, 0);
    json_t *gpus = json_object_get(a0, "gpus");
    cr_assert_eq(json_integer_value(json_object_get(j, "world_size")), world,
                 "job %lld: world size %lld, not %d", job,
                 (long long)json_integer_value(json_object_get(j, "world_size")), world);
    cr_assert_eq(json_array_size(alloc), 1, "on one node");
    cr_assert_eq(json_integer_value(json_object_get(a0, "node")), node, "on node %lld", node);
    cr_assert_eq(json_array_size(gpus), (size_t)world);
    for (int g = 0; g < world; g++)
        cr_assert_eq(json_integer_value(json_array_get(gpus, (size_t)g)), g);
    json_decref(j);
}

static long long db_num(const char *fmt, long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, a, b);
    return (long long)hx_sql_num(sql);
}

/* Waits until the job's latest action of kind is done; returns the step of the checkpoint
 * its worker reported ("checkpointed at step N ..."). */
static long wait_checkpoint(long long job, const char *kind, double timeout_s)
{
    char sql[256];
    double end = hx_now() + timeout_s;
    snprintf(sql, sizeof(sql),
             "SELECT outcome_detail FROM actions WHERE job_id = %lld AND kind = '%s'"
             " AND state = 'done' ORDER BY id DESC LIMIT 1",
             job, kind);
    for (;;) {
        PGresult *r = hx_sql(sql);
        long step = -1;
        int done = PQntuples(r) == 1;
        if (done && sscanf(PQgetvalue(r, 0, 0), "checkpointed at step %ld", &step) != 1)
            step = -1;
        PQclear(r);
        if (done) {
            cr_assert_gt(step, 0, "job %lld: the %s checkpointed at a step > 0", job, kind);
            return step;
        }
        if (hx_now() > end)
            fail_with_logs("its action was not done in time", job);
        usleep(100000);
    }
}

/* The job's log as node's worker shipped it (new text). */
static char *node_log(long long job, long long node)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT convert_from(string_agg(data, ''::bytea ORDER BY off), 'UTF8')"
             " FROM job_logs WHERE job_id = %lld AND stream = 'node-%lld'",
             job, node);
    PGresult *r = hx_sql(sql);
    char *text = strdup(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return text;
}

/* Waits until node's log of the job holds needle. */
static void wait_log(long long job, long long node, const char *needle, double timeout_s)
{
    double end = hx_now() + timeout_s;
    for (;;) {
        char *log = node_log(job, node);
        int found = strstr(log, needle) != NULL;
        free(log);
        if (found)
            return;
        if (hx_now() > end) {
            char what[160];
            snprintf(what, sizeof(what), "node %lld's log never said '%s'", node, needle);
            fail_with_logs(what, job);
        }
        usleep(200000);
    }
}

/* The states the job went through (events that changed it), as "A B C" (new text). */
static char *state_path(long long job)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/events", job);
    json_t *r = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *items = json_object_get(r, "items");
    char *out = calloc(1, 16 * json_array_size(items) + 1);
    for (size_t i = 0; out && i < json_array_size(items); i++) {
        json_t *e = json_array_get(items, i);
        const char *from = json_string_value(json_object_get(e, "from"));
        const char *to = json_string_value(json_object_get(e, "to"));
        if (!from || strcmp(from, to) != 0)
            sprintf(out + strlen(out), "%s%s", *out ? " " : "", to);
    }
    json_decref(r);
    return out;
}

/* The seconds the event of the job's action of kind says it took (" (kind action N took X
 * s)"), or -1 when no event says so. */
static double action_took(long long job, const char *kind)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT substring(detail FROM '\\(%s action [0-9]+ took ([0-9.]+) s\\)')::float8"
             " FROM job_events WHERE job_id = %lld AND detail LIKE '%%%s action %%'"
             " ORDER BY id DESC LIMIT 1",
             kind, job, kind);
    return hx_sql_num(sql);
}

static double mean_loss(long long job, long lo, long hi)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT avg(loss) FROM job_metrics WHERE job_id = %lld AND step BETWEEN %ld AND %ld",
             job, lo, hi);
    return hx_sql_num(sql);
}

#define CHAIN_STEPS 4000

Test(chain, submit_resize_suspend_resume_migrate_complete)
{
    double t0 = hx_now();
    long long job = submit(CHAIN_STEPS, 2, 8101, 1000);

    /* RUNNING on the first node with two GPUs, metrics flowing */
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    expect_allocation(job, node_a, 2);
    struct span s2 = wait_steps(job, 2, 0, 30, 60);
    cr_assert_eq(s2.first, 1, "the first step reported is 1");
    double first_loss = mean_loss(job, 1, 10);

    /* resize 2 -> 4: the worker checkpoints, restarts at four ranks, restored */
    post(job, "resize", "{\"gpus\":4}", 200);
    long ck1 = wait_checkpoint(job, "resize", 60);
    struct span s4 = wait_steps(job, 4, 0, 20, 60);
    cr_assert_eq(s4.first, ck1 + 1, "world 4 starts after the checkpoint (%ld), at %ld", ck1,
                 s4.first);
    cr_assert_eq(steps_of(job, 2, ck1).count, 0, "no step at world 2 after its checkpoint");
    wt_expect_state(job, "RUNNING", 30, wt_dump_logs);
    expect_allocation(job, node_a, 4);

    /* suspend in place: GPUs kept, no progress; resume goes on from the same step */
    post(job, "suspend", NULL, 202);
    wt_expect_state(job, "SUSPENDED", 30, wt_dump_logs);
    long held = steps_of(job, 0, 0).last;
    usleep(1500000);
    cr_assert_eq(steps_of(job, 0, 0).last, held, "no step while suspended");
    expect_allocation(job, node_a, 4);
    post(job, "resume", NULL, 202);
    wt_expect_state(job, "RUNNING", 30, wt_dump_logs);
    struct span after = wait_steps(job, 4, held, 10, 30);
    cr_assert_eq(after.first, held + 1, "resumed at %ld after %ld", after.first, held);
    expect_allocation(job, node_a, 4);

    /* migrate to the other worker: checkpoint there, restore here */
    char body[64];
    snprintf(body, sizeof(body), "{\"node\":%lld}", node_b);
    post(job, "migrate", body, 202);
    long ck2 = wait_checkpoint(job, "migrate", 60);
    cr_assert_gt(ck2, after.last - 1, "the migration checkpointed after the resume");
    char restored[64];
    snprintf(restored, sizeof(restored), "train-mlp: restored step %ld ", ck2);
    wait_log(job, node_b, restored, 60);
    struct span sb = wait_steps(job, 4, ck2, 5, 60);
    cr_assert_eq(sb.first, ck2 + 1, "on node %lld from step %ld", node_b, sb.first);
    wt_expect_state(job, "COMPLETED", 120, wt_dump_logs);
    cr_assert_eq(db_num("SELECT count(*) FROM actions WHERE job_id = %lld AND node_id = %lld"
                        " AND kind = 'start' AND state = 'done'",
                        job, node_b),
                 1, "node B started it once");
    char *log_a = node_log(job, node_a);
    cr_assert(strstr(log_a, "restored step 0 ") == NULL, "never restored from step 0");
    free(log_a);

    /* the whole story, and what it learnt */
    char *path = state_path(job);
    int story = !strcmp(path, "PENDING STARTING RUNNING RESIZING RUNNING SUSPENDED RUNNING"
                              " MIGRATING RUNNING COMPLETED");
    cr_assert(story, "the states it went through: %s", path);
    free(path);
    struct span all = steps_of(job, 0, 0);
    cr_assert_eq(all.last, CHAIN_STEPS, "it ran to its last step");
    cr_assert_eq(db_num("SELECT count(*) - count(DISTINCT step) FROM job_metrics"
                        " WHERE job_id = %lld AND world_size <> %lld",
                        job, 0),
                 0, "no step was done twice at two world sizes");
    double last_loss = mean_loss(job, CHAIN_STEPS - 9, CHAIN_STEPS);
    cr_assert_lt(last_loss, first_loss / 2, "the loss fell: %g -> %g", first_loss, last_loss);
    const char *const kinds[] = {"start", "resize", "suspend", "resume", "migrate"};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        double took = action_took(job, kinds[k]);
        cr_assert(took > 0 && took < 60, "%s took %g s, per its event", kinds[k], took);
    }
    fprintf(stderr,
            "chain: %.1f s; checkpoints at %ld and %ld; loss %.4g -> %.4g;"
            " resize %.2f s, suspend %.2f s, resume %.2f s, migrate %.2f s\n",
            hx_now() - t0, ck1, ck2, first_loss, last_loss, action_took(job, "resize"),
            action_took(job, "suspend"), action_took(job, "resume"), action_took(job, "migrate"));
    hx_finish();
}

/* The parent of pid (from /proc/pid/stat), or -1. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *end = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    int ppid = -1;
    if (!end || sscanf(end + 1, " %*c %d", &ppid) != 1)
        return -1;
    return (pid_t)ppid;
}

/* SIGKILLs root and every process under it, as if their host lost power. */
static void kill_tree(pid_t root)
{
    pid_t tree[MAX_PIDS];
    int n = 0, grew = 1;
    tree[n++] = root;
    while (grew) { /* until no process's parent is in the tree but itself */
        grew = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) && n < MAX_PIDS) {
            pid_t pid = (pid_t)atoi(e->d_name), pp = pid > 0 ? parent_of(pid) : -1;
            int known = 0, under = 0;
            for (int i = 0; i < n; i++) {
                known |= tree[i] == pid;
                under |= tree[i] == pp;
            }
            if (pid > 0 && under && !known) {
                tree[n++] = pid;
                grew = 1;
            }
        }
        if (d)
            closedir(d);
    }
    for (int i = 0; i < n; i++)
        kill(tree[i], SIGKILL);
}

/* The pid of the mpirun that node's worker (state dir name) runs for job. */
static pid_t mpirun_of(const char *name, long long job)
{
    char path[400];
    int pid = 0;
    snprintf(path, sizeof(path), "%s/%s/jobs/%lld/mpirun.pid", hx.dir, name, job);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s: the worker records its mpirun", path);
    cr_assert_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    return (pid_t)pid;
}

static void wait_node_state(long long node, const char *want, double timeout_s)
{
    char path[64];
    double end = hx_now() + timeout_s;
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld", node);
    for (;;) {
        json_t *n = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        int there = !strcmp(json_string_value(json_object_get(n, "state")), want);
        json_decref(n);
        if (there)
            return;
        cr_assert(hx_now() < end, "node %lld not %s after %.0f s", node, want, timeout_s);
        usleep(100000);
    }
}

/* The first "step N loss" line of node's log of the job: N, or -1. */
static long first_logged_step(long long job, long long node)
{
    char *log = node_log(job, node);
    long step = -1;
    const char *p = strstr(log, "\nstep ");
    if (p)
        sscanf(p + 1, "step %ld loss", &step);
    free(log);
    return step;
}

#define FAILOVER_STEPS 6000

Test(chain, a_job_whose_host_dies_restarts_elsewhere_from_its_checkpoint)
{
    double t0 = hx_now();
    long long job = submit(FAILOVER_STEPS, 1, 8102, 1);
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    expect_allocation(job, node_a, 1);
    wait_steps(job, 1, 0, 10, 60);
    /* a resize leaves a checkpoint in the shared folder */
    post(job, "resize", "{\"gpus\":2}", 200);
    long ck = wait_checkpoint(job, "resize", 60);
    wait_steps(job, 2, ck, 20, 60);
    wt_expect_state(job, "RUNNING", 30, wt_dump_logs);
    expect_allocation(job, node_a, 2);

    /* host A dies: its worker and the job's ranks, at once */
    pid_t mpirun = mpirun_of("sim-a", job);
    kill(worker_a, SIGKILL);
    waitpid(worker_a, NULL, 0);
    worker_a = 0;
    kill_tree(mpirun);
    double t_kill = hx_now();
    long died = steps_of(job, 0, 0).last;
    cr_assert_lt(died, FAILOVER_STEPS, "it died before its end");

    /* the server notices the silence, requeues the job, and B takes it over */
    wait_node_state(node_a, "DOWN", 30);
    double t_down = hx_now();
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    double t_back = hx_now();
    expect_allocation(job, node_b, 2);
    char restored[64];
    snprintf(restored, sizeof(restored), "train-mlp: restored step %ld ", ck);
    wait_log(job, node_b, restored, 30);
    cr_assert_eq(db_num("SELECT count(*) FROM job_events WHERE job_id = %lld AND from_state"
                        " = 'RUNNING' AND to_state = 'PENDING' AND event = 'requeue' AND"
                        " detail LIKE 'node sim-a is down%%' AND %lld > 0",
                        job, 1),
                 1, "requeued once, because node A is down");
    wt_expect_state(job, "COMPLETED", 120, wt_dump_logs);
    long first = first_logged_step(job, node_b);
    cr_assert_eq(first, ck + 1, "B's first step is %ld, right after the checkpoint %ld", first, ck);
    char *path = state_path(job);
    int story = !strcmp(path, "PENDING STARTING RUNNING RESIZING RUNNING PENDING STARTING"
                              " RUNNING COMPLETED");
    cr_assert(story, "the states it went through: %s", path);
    free(path);
    cr_assert_eq(steps_of(job, 0, 0).last, FAILOVER_STEPS, "it ran to its last step");
    fprintf(stderr,
            "failover: %.1f s; checkpoint at %ld, died at %ld, node down %.1f s after"
            " the kill, running on B %.1f s after\n",
            hx_now() - t0, ck, died, t_down - t_kill, t_back - t_kill);
    hx_finish();
}

/* The step of the last "checkpointed at step N" in the log file of the job that the worker
 * of state dir name wrote, or -1. */
static long checkpoint_in_log(const char *name, long long job)
{
    char path[400], line[512];
    long step = -1;
    snprintf(path, sizeof(path), "%s/%s/jobs/%lld/log", hx.dir, name, job);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        sscanf(line, "train-mlp: checkpointed at step %ld", &step);
    if (f)
        fclose(f);
    return step;
}

/* Waits until the job's whole log (every node's stream) holds needle. */
static void wait_any_log(long long job, const char *needle, double timeout_s)
{
    char path[64];
    double end = hx_now() + timeout_s;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", job);
    for (;;) {
        struct hx_resp *r = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
        int found = r->status == 200 && strstr(r->body, needle) != NULL;
        hx_free(r);
        if (found)
            return;
        if (hx_now() > end)
            fail_with_logs(needle, job);
        usleep(200000);
    }
}

Test(chain, a_job_its_restarted_worker_lost_goes_back_to_the_queue)
{
    long long job = submit(100000000, 2, 8103, 1000);
    wt_scheduler("{\"node_timeout_s\":8}");
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    expect_allocation(job, node_a, 2);
    wait_steps(job, 2, 0, 20, 60);
    /* A's worker restarts: it checkpoints the job on its way out, and the new one does not
     * know it (its heartbeats say it runs nothing), while node A stays UP */
    cr_assert_eq(wt_stop_worker(&worker_a), 0);
    long ck = checkpoint_in_log("sim-a", job);
    cr_assert_gt(ck, 0, "the stopping worker had the job checkpoint");
    worker_a = wt_spawn_worker("sim-a", 4);
    double t_restart = hx_now();
    const char *lost = "SELECT count(*) FROM job_events WHERE job_id = %lld AND from_state"
                       " = 'RUNNING' AND to_state = 'PENDING' AND event = 'requeue' AND"
                       " detail LIKE 'lost: the worker of node sim-a has not reported it%%'"
                       " AND %lld > 0";
    double end = hx_now() + 30;
    while (db_num(lost, job, 1) == 0 && hx_now() < end)
        usleep(100000);
    double t_lost = hx_now();
    cr_assert_eq(db_num(lost, job, 1), 1, "requeued once, as lost by its node");
    cr_assert_eq(
        db_num("SELECT count(*) FROM sched_rounds WHERE nodes_down > 0 AND %lld > %lld", 1, 0), 0,
        "no node went down");
    /* the scheduler starts it again, from where it stopped */
    wt_expect_state(job, "RUNNING", 60, wt_dump_logs);
    char restored[64];
    snprintf(restored, sizeof(restored), "train-mlp: restored step %ld ", ck);
    wait_any_log(job, restored, 30);
    post(job, "cancel", NULL, 200);
    wt_expect_state(job, "CANCELLED", 30, wt_dump_logs);
    fprintf(stderr, "lost job: checkpoint at %ld, requeued %.1f s after its worker's restart\n", ck,
            t_lost - t_restart);
    hx_finish();
}
