/* The real ringctl binary against a real ringmasterd: commands, --json, exit codes (0 ok,
 * 1 refused with the problem printed, 2 usage, 3 unreachable), RINGMASTER_URL and
 * RINGMASTER_TOKEN. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(ringctl, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

/* What one run of ringctl did. */
struct ctl_run {
    int code;      /* exit status, 128+signal when killed */
    char out[16384];
    char err[4096];
};

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Starts ringctl argv (NULL-terminated) with RINGMASTER_URL=url and RINGMASTER_TOKEN=token
 * (each unset when NULL), its output into the test's ctl.out and ctl.err. Returns its pid. */
static pid_t ctl_spawn(const char *url, const char *token, char **argv)
{
    char outp[300], errp[300];
    snprintf(outp, sizeof(outp), "%s/ctl.out", hx.dir);
    snprintf(errp, sizeof(errp), "%s/ctl.err", hx.dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        url ? setenv("RINGMASTER_URL", url, 1) : unsetenv("RINGMASTER_URL");
        token ? setenv("RINGMASTER_TOKEN", token, 1) : unsetenv("RINGMASTER_TOKEN");
        execv(RINGCTL_PATH, argv);
        _exit(127);
    }
    return pid;
}

/* Waits for the ringctl of ctl_spawn (killing it after 120 s) and reads what it did. */
static void ctl_reap(struct ctl_run *r, pid_t pid)
{
    char outp[300], errp[300];
    snprintf(outp, sizeof(outp), "%s/ctl.out", hx.dir);
    snprintf(errp, sizeof(errp), "%s/ctl.err", hx.dir);
    int st = 0;
    for (int i = 0; i < 12000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    read_file(outp, r->out, sizeof(r->out));
    read_file(errp, r->err, sizeof(r->err));
}

/* Runs ringctl argv (NULL-terminated) as ctl_spawn does and waits for it. */
static void ctl_argv(struct ctl_run *r, const char *url, const char *token, char **argv)
{
    ctl_reap(r, ctl_spawn(url, token, argv));
}

/* ringctl with the test server's URL and token, and the arguments up to NULL. */
static struct ctl_run *ctl_as(const char *token, ...)
{
    static struct ctl_run r;
    char *argv[32] = {"ringctl"};
    int n = 1;
    va_list ap;
    va_start(ap, token);
    for (char *a; n < 31 && (a = va_arg(ap, char *)); n++)
        argv[n] = a;
    va_end(ap);
    argv[n] = NULL;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    ctl_argv(&r, url, token, argv);
    return &r;
}

#define ctl(...) ctl_as(hx.admin, __VA_ARGS__, NULL)

static void one_node(char *w);

/* Parses the run's stdout as JSON (new), failing the test otherwise. */
static json_t *out_json(const struct ctl_run *r)
{
    json_error_t e;
    json_t *j = json_loads(r->out, 0, &e);
    cr_assert_not_null(j, "not JSON (%s): %s", e.text, r->out);
    return j;
}

Test(ringctl, jobs_from_submit_to_cancel)
{
    struct ctl_run *r = ctl("submit", "--name", "train", "--gpus", "2", "--", "python", "t.py");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = atoll(r->out);
    cr_assert_gt(id, 0, "%s", r->out);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);

    r = ctl("list");
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "NAME") && strstr(r->out, "train"), "%s", r->out);
    cr_assert(strstr(r->out, "REASON/FINISH") && strstr(r->out, "TIME") && strstr(r->out, "USER"),
              "%s", r->out);
    cr_assert(strstr(r->out, "PENDING") && strstr(r->out, " 0:00 ") && strstr(r->out, " ("),
              "a pending job has not run and says why it waits: %s", r->out);
    r = ctl("--json", "list", "--all");
    json_t *j = out_json(r);
    cr_assert_eq(json_array_size(j), 1);
    json_decref(j);

    /* the reason is the first round's after the submission: on a loaded machine that round
     * may still run when the list above came back ("(waiting)") */
    r = ctl("show", ids);
    for (double end = hx_now() + 20; r->code == 0 && !strstr(r->out, "pending:") && hx_now() < end;
         r = ctl("show", ids))
        usleep(50 * 1000);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "PENDING") && strstr(r->out, "python t.py"), "%s", r->out);
    cr_assert(strstr(r->out, "pending:"), "a pending job explains why: %s", r->out);
    r = ctl("--json", "show", ids);
    j = out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "id")), id);
    json_decref(j);

    r = ctl("resize", ids, "3");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "now asks for 3 GPUs") && !strchr(strchr(r->out, '\n') + 1, '\n'),
              "one line: %s", r->out);
    j = hx_expect_json(hx_json("GET", "/api/v1/jobs/1", hx.admin, NULL), 200);
    cr_assert_eq(json_integer_value(json_object_get(j, "gpus")), 3);
    json_decref(j);

    r = ctl("suspend", ids); /* never launched: refused */
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "409"), "%s", r->err);

    r = ctl("cancel", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    char line[64];
    snprintf(line, sizeof(line), "job %s cancelled\n", ids);
    cr_assert_str_eq(r->out, line);
    r = ctl("cancel", ids);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "409"), "the problem is printed: %s", r->err);

    r = ctl("list");
    cr_assert(strstr(r->out, "CANCELLED") && strstr(r->out, "finished "),
              "an ended job shows its finish: %s", r->out);

    r = ctl("events", ids);
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "EVENT") && strstr(r->out, "CANCELLED"), "%s", r->out);
    r = ctl("--json", "events", ids);
    j = out_json(r);
    cr_assert_geq(json_array_size(json_object_get(j, "items")), 2);
    json_decref(j);

    r = ctl("watch", ids, "--timeout", "20"); /* ended: returns at once */
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "CANCELLED"), "%s", r->out);
    hx_finish();
}

/* --batch, --adaptive-batch and --max-local-batch reach the job's batch model; a malformed
 * range is refused before any request. */
Test(ringctl, submit_gives_a_batch_model)
{
    struct ctl_run *r = ctl("--json", "submit", "--name", "ad", "--gpus", "2", "--batch", "64",
                            "--adaptive-batch", "64:1024", "--max-local-batch", "256", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "batch")), 64);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "adaptive_batch"), "max")),
                 1024);
    cr_assert_eq(json_integer_value(json_object_get(j, "max_local_batch")), 256);
    char ids[32];
    snprintf(ids, sizeof(ids), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(j, "id")));
    json_decref(j);
    r = ctl("show", ids);
    cr_assert(strstr(r->out, "batch:     64 global (adaptive to 1024), runs -"), "%s", r->out);
    r = ctl("--json", "submit", "--name", "ad2", "--gpus", "1", "--batch", "8", "--adaptive-batch",
            "32", "--", "t");
    cr_assert_eq(r->code, 0, "%s", r->err);
    j = out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "adaptive_batch"), "min")),
                 8, "MAX alone: the range starts at --batch");
    json_decref(j);
    r = ctl("submit", "--name", "bad", "--batch", "64", "--adaptive-batch", "64:x", "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "--adaptive-batch"), "%s", r->err);
    r = ctl("submit", "--name", "bad", "--gpus", "1", "--batch", "64", "--adaptive-batch", "16:128",
            "--", "t");
    cr_assert_neq(r->code, 0);
    cr_assert(strstr(r->err, "adaptive_batch.min"), "the server's detail: %s", r->err);
    hx_finish();
}

Test(ringctl, watch_is_bounded_and_policy_reads_and_sets)
{
    long long id = hx_submit(hx.admin, "waits", 4);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    time_t t0 = time(NULL);
    struct ctl_run *r = ctl("watch", ids, "--timeout", "1", "--interval", "0.2");
    cr_assert_eq(r->code, 1, "the job did not end: %s", r->err);
    cr_assert_leq(time(NULL) - t0, 10);
    cr_assert(strstr(r->out, "PENDING"), "%s", r->out);
    r = ctl("watch", "--timeout", "0.5");
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "waits"), "%s", r->out);

    r = ctl("policy");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "POLICY"), "%s", r->out);
    cr_assert(strstr(r->out, "exploring stage 150 s"), "%s", r->out);
    r = ctl("--json", "policy");
    json_t *j = out_json(r);
    const char *name =
        json_string_value(json_object_get(json_array_get(json_object_get(j, "policies"), 0), "name"));
    char pol[64];
    snprintf(pol, sizeof(pol), "%s", name);
    json_decref(j);
    r = ctl("policy", pol, "--interval", "7", "--explore-stage", "30");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "exploring stage 30 s"), "%s", r->out);
    j = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(j, "policy")), pol);
    cr_assert_float_eq(json_number_value(json_object_get(j, "interval_s")), 7.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(j, "explore_stage_s")), 30.0, 1e-9);
    json_decref(j);
    r = ctl("policy", "--explore-stage", "0.5");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "explore_stage_s"), "the problem names the field: %s", r->err);
    r = ctl("policy", "no-such-policy");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "400"), "%s", r->err);
    hx_finish();
}

Test(ringctl, users_nodes_tokens_and_exit_codes)
{
    struct ctl_run *r = ctl("user", "create", "carol", "--role", "user");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char carol[128];
    snprintf(carol, sizeof(carol), "%.*s", (int)strcspn(r->out, "\n"), r->out);
    r = ctl_as(carol, "--json", "submit", "--gpus", "1", "--", "sleep", "1", NULL);
    cr_assert_eq(r->code, 0, "RINGMASTER_TOKEN is used: %s", r->err);
    json_t *j = out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "user")), "carol");
    json_decref(j);
    r = ctl_as(carol, "user", "create", "dave", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "403"), "%s", r->err);

    /* an admin sets carol's fair share and quota; the answer is one line */
    r = ctl("user", "set", "carol", "--share", "2.5", "--max-gpus", "16");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "carol (user): share 2.5, quota 16 GPUs"), "%s", r->out);
    r = ctl("user", "set", "carol", "--max-gpus", "none", "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    j = out_json(r);
    cr_assert(json_is_null(json_object_get(j, "max_gpus")));
    cr_assert_float_eq(json_number_value(json_object_get(j, "share")), 2.5, 1e-12);
    json_decref(j);
    r = ctl("user", "list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "carol (user): share 2.5, no quota, holds 0 GPUs, 1 jobs waiting"),
              "%s", r->out);
    r = ctl("user", "set", "carol", "--share", "lots");
    cr_assert_eq(r->code, 2, "%s", r->err);
    r = ctl("user", "set", "carol", "--share", "0");
    cr_assert_eq(r->code, 1, "the server refuses it: %s", r->err);
    r = ctl_as(carol, "user", "set", "carol", "--share", "100", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "403"), "%s", r->err);

    r = ctl("nodes");
    cr_assert_eq(r->code, 0, "%s", r->err);
    r = ctl("--json", "nodes");
    json_decref(out_json(r));
    char w[128];
    one_node(w);
    r = ctl("nodes", "1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "LAST_HEARTBEAT") && strstr(r->out, "h1"), "a table: %s", r->out);
    r = ctl("nodes", "1", "--json");
    json_t *n = out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(n, "name")), "h1");
    json_decref(n);

    r = ctl_as("not-a-token", "list", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "401"), "%s", r->err);
    cr_assert_eq(ctl("show", "nope")->code, 2);
    cr_assert_eq(ctl("resize", "1")->code, 2);
    cr_assert_eq(ctl("no-such-command")->code, 2);
    cr_assert_eq(ctl("watch", "1", "--timeout", "x")->code, 2);
    cr_assert_eq(ctl_as(hx.admin, NULL)->code, 2);
    r = ctl("show", "999");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "404"), "%s", r->err);

    char *argv[] = {"ringctl", "health", NULL};
    struct ctl_run u;
    ctl_argv(&u, "http://127.0.0.1:1", hx.admin, argv);
    cr_assert_eq(u.code, 3, "RINGMASTER_URL is used; nothing listens there: %s", u.err);
    hx_finish();
}

/* Waits (bounded) until the job is in state; returns the job (new). */
static json_t *wait_state(long long id, const char *state)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = NULL;
    for (int i = 0; i < 150; i++) {
        json_decref(j);
        j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        if (!strcmp(json_string_value(json_object_get(j, "state")), state))
            return j;
        usleep(100000);
    }
    cr_assert_fail("job %lld never reached %s: %s", id, state,
                   json_string_value(json_object_get(j, "state")));
    return NULL;
}

/* Submits a 1-GPU job, waits for its start and reports it RUNNING as the worker of the only
 * node, where the scheduler started it (a worker reports only for the jobs of its nodes). */
static long long running_job(const char *worker, const char *name)
{
    long long id = hx_submit(hx.admin, name, 1);
    json_decref(wait_state(id, "STARTING"));
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
    json_decref(hx_expect_json(hx_json("POST", path, worker, "{\"state\":\"RUNNING\"}"), 200));
    return id;
}

Test(ringctl, running_jobs_show_allocation_suspend_and_migrate)
{
    char w[128], ids[32], ids2[32];
    hx_user("w1", "worker", w);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", w,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
                "\"model\":\"V100\",\"memory_bytes\":1},{\"index\":1,\"model\":\"V100\","
                "\"memory_bytes\":1}]}"),
        201));
    snprintf(ids, sizeof(ids), "%lld", running_job(w, "r1"));
    snprintf(ids2, sizeof(ids2), "%lld", running_job(w, "r2"));
    char other[128], path[64];
    hx_user("w2", "worker", other);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/state", ids);
    hx_expect_problem(hx_json("POST", path, other, "{\"state\":\"COMPLETED\"}"), 403, NULL);
    struct ctl_run *r = ctl("show", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "RUNNING") && strstr(r->out, "allocation (world size 1): node 1"),
              "%s", r->out);
    r = ctl("suspend", ids);
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "suspend action ") && strstr(r->out, " pending on node 1"), "%s",
              r->out);
    r = ctl("--json", "migrate", ids2);
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_decref(out_json(r));
    r = ctl("migrate", ids2, "99");
    cr_assert_eq(r->code, 1, "no node 99 (or not RUNNING any more): %s", r->out);
    json_t *acts = hx_expect_json(hx_json("GET", "/api/v1/nodes/1/actions", w, NULL), 200);
    char *text = json_dumps(acts, JSON_COMPACT);
    cr_assert(strstr(text, "\"suspend\""), "%s", text);
    free(text);
    json_decref(acts);
    hx_finish();
}

Test(ringctl, global_options_anywhere_and_help)
{
    long long id = hx_submit(hx.admin, "anywhere", 1);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *forms[][4] = {{"list", "--json", NULL},
                              {"--json", "list", NULL},
                              {"list", "-o", "json", NULL},
                              {"-o", "json", "list", NULL},
                              {"list", "-o=json", NULL}};
    for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
        struct ctl_run *r = ctl_as(hx.admin, forms[k][0], forms[k][1], forms[k][2], NULL);
        cr_assert_eq(r->code, 0, "form %zu: %s", k, r->err);
        json_t *j = out_json(r);
        cr_assert_eq(json_array_size(j), 1, "form %zu", k);
        json_decref(j);
    }
    struct ctl_run *r = ctl("show", ids, "--json");
    json_t *j = out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "id")), id);
    json_decref(j);
    cr_assert_eq(ctl("list", "-o", "xml")->code, 2);
    r = ctl("list", "-o", "id");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char want[40];
    snprintf(want, sizeof(want), "%lld\n", id);
    cr_assert_str_eq(r->out, want, "-o id: the ids alone");

    /* --server after the command wins over RINGMASTER_URL (which points nowhere). */
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    char *argv[] = {"ringctl", "health", "--server", url, NULL};
    struct ctl_run u;
    ctl_argv(&u, "http://127.0.0.1:1", hx.admin, argv);
    cr_assert_eq(u.code, 0, "%s", u.err);
    cr_assert(strstr(u.out, "status ok"), "%s", u.out);

    /* Help needs no server, goes to stdout, shows the usage and an example, and exits 0. */
    const char *helps[][3] = {{"help", NULL}, {"--help", NULL}, {"help", "list"},
                              {"list", "--help"}, {"cancel", "-h"}, {"--help", "resize"}};
    for (size_t k = 0; k < sizeof(helps) / sizeof(helps[0]); k++) {
        char *hv[] = {"ringctl", (char *)helps[k][0], (char *)helps[k][1], NULL};
        ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
        cr_assert_eq(u.code, 0, "help form %zu: %s", k, u.err);
        cr_assert(strstr(u.out, "usage: ringctl") && strstr(u.out, "example: ringctl"),
                  "help form %zu: %s", k, u.out);
    }
    char *hv[] = {"ringctl", "help", "resize", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
    cr_assert(strstr(u.out, "usage: ringctl resize JOB_ID GPUS"), "%s", u.out);
    char *bad[] = {"ringctl", "help", "nope", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, bad);
    cr_assert_eq(u.code, 2);
    hx_finish();
}

/* Registers node h1 with two GPUs as a new worker; copies its token into w (128 bytes). */
static void one_node(char *w)
{
    hx_user("w1", "worker", w);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", w,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
                "\"model\":\"V100\",\"memory_bytes\":1},{\"index\":1,\"model\":\"V100\","
                "\"memory_bytes\":1}]}"),
        201));
}

/* How many lines of the server's log (one per request) hold what. */
static int server_log_count(const char *what)
{
    static char log[1 << 20];
    char path[300];
    snprintf(path, sizeof(path), "%s/server.log", hx.dir);
    read_file(path, log, sizeof(log));
    int n = 0;
    for (const char *p = log; (p = strstr(p, what)); p++)
        n++;
    return n;
}

Test(ringctl, list_reads_like_squeue_and_watches)
{
    char w[128], path[64];
    one_node(w);
    long long run = running_job(w, "runs");
    long long done = running_job(w, "ends");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", done);
    sleep(1);
    json_decref(hx_expect_json(hx_json("POST", path, w, "{\"state\":\"COMPLETED\"}"), 200));
    long long wait = hx_submit(hx.admin, "waits", 2);
    (void)wait;
    /* "runs" reports its length (libringjob's ringjob_set_total_steps) and step 100 */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", run);
    json_decref(hx_expect_json(
        hx_json("POST", path, w,
                "{\"items\":[{\"step\":100,\"loss\":1.0,\"samples\":32,\"seconds\":0.1,"
                "\"world_size\":1}],\"total_steps\":400}"),
        200));

    struct ctl_run *r = ctl("list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    const char *heads[] = {"ID",   "NAME",     "USER",         "STATE",
                           "GPUS", "TIME",     "PROGRESS",     "REASON/FINISH"};
    for (size_t k = 0; k < sizeof(heads) / sizeof(heads[0]); k++)
        cr_assert(strstr(r->out, heads[k]), "no %s: %s", heads[k], r->out);
    cr_assert(!strstr(r->out, "SUBMITTED"), "not wide: %s", r->out);
    const char *line = strstr(r->out, "ends");
    cr_assert(line && strstr(line, "COMPLETED") && strstr(line, " 0:0") &&
                  strstr(line, "finished "),
              "a completed job shows its run time and finish: %s", r->out);
    line = strstr(r->out, "runs");
    cr_assert(line && strstr(line, "RUNNING") && strstr(line, " 0:0") && strstr(line, " 25% "),
              "%s", r->out);
    line = strstr(r->out, "waits");
    cr_assert(line && strstr(line, "PENDING") && strstr(line, "("), "%s", r->out);
    char runs[32];
    snprintf(runs, sizeof(runs), "%lld", run);
    r = ctl("show", runs); /* (ctl's answer is one static: r is reused) */
    cr_assert(strstr(r->out, "progress:  100 of 400 steps (25.0%, reported)"), "%s", r->out);

    const char *wides[][3] = {{"list", "--wide", NULL}, {"list", "-o", "wide"}, {"-o", "wide", "list"}};
    for (size_t k = 0; k < 3; k++) {
        r = ctl_as(hx.admin, wides[k][0], wides[k][1], wides[k][2], NULL);
        cr_assert_eq(r->code, 0, "%s", r->err);
        cr_assert(strstr(r->out, "NODE[GPUS]") && strstr(r->out, "SUBMITTED"), "%s", r->out);
        line = strstr(r->out, "runs");
        cr_assert(line && strstr(line, "1[0]"), "the allocation per node: %s", r->out);
    }

    r = ctl("--json", "list");
    json_t *j = out_json(r);
    const char *fin = json_string_value(json_object_get(json_array_get(j, 1), "finished_at"));
    cr_assert(fin && strlen(fin) > 20 && fin[strlen(fin) - 1] == 'Z',
              "JSON keeps the server's timestamps: %s", fin);
    json_decref(j);

    double t0 = hx_now();
    int events_before = server_log_count("/events 200");
    r = ctl("list", "--watch", "--interval", "0.2", "--count", "3");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert_eq(server_log_count("/events 200") - events_before, 2,
                 "the two started jobs' events are read once, not at each redraw");
    int draws = 0;
    for (const char *p = r->out; (p = strstr(p, "Every 0.2s: ringctl list")); p++)
        draws++;
    cr_assert_eq(draws, 3, "%s", r->out);
    r = ctl("list", "--watch", "--interval", "0.2", "--timeout", "1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "REASON/FINISH"), "%s", r->out);
    cr_assert_lt(hx_now() - t0, 10);
    cr_assert_eq(ctl("list", "--watch", "--count", "0")->code, 2);
    r = ctl("list", "--watch", "--interval", "0.1", "--count", "2", "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char *second = strchr(r->out, '\n');
    cr_assert(second && second[1], "one JSON array a line: %s", r->out);
    *second = '\0';
    j = out_json(r);
    cr_assert_eq(json_array_size(j), 3, "%s", r->out);
    json_decref(j);
    hx_finish();
}

/* Posts the job's state as the worker w (as its worker reports it). */
static void report(const char *w, long long id, const char *state)
{
    char path[64], body[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
    snprintf(body, sizeof(body), "{\"state\":\"%s\"}", state);
    json_decref(hx_expect_json(hx_json("POST", path, w, body), 200));
}

/* As the worker w of node 1: waits (bounded) for the job's pending action of kind, which a
 * ringctl running beside the test asks for, and posts it done. */
static void take_action(const char *w, long long id, const char *kind)
{
    for (double t0 = hx_now(); hx_now() - t0 < 15; usleep(50000)) {
        json_t *a = hx_expect_json(hx_json("GET", "/api/v1/nodes/1/actions?wait=1", w, NULL), 200);
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(a, "items"), k, it)
        {
            if (json_integer_value(json_object_get(it, "job_id")) != id ||
                strcmp(json_string_value(json_object_get(it, "kind")), kind))
                continue;
            char path[64];
            snprintf(path, sizeof(path), "/api/v1/actions/%" JSON_INTEGER_FORMAT "/result",
                     json_integer_value(json_object_get(it, "id")));
            json_decref(a);
            json_decref(hx_expect_json(
                hx_json("POST", path, w, "{\"outcome\":\"ok\",\"detail\":\"test\"}"), 200));
            return;
        }
        json_decref(a);
    }
    cr_assert_fail("no %s action for job %lld", kind, id);
}

/* Starts ringctl with the test server and the admin token, arguments up to NULL. */
static pid_t ctl_bg(const char *first, ...)
{
    static char url[64];
    char *argv[32] = {"ringctl", (char *)first};
    int n = 2;
    va_list ap;
    va_start(ap, first);
    for (char *a; n < 31 && (a = va_arg(ap, char *)); n++)
        argv[n] = a;
    va_end(ap);
    argv[n] = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    return ctl_spawn(url, hx.admin, argv);
}

Test(ringctl, requests_say_what_next_and_wait_until_applied)
{
    char w[128], ids[32];
    one_node(w);
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"interval_s\": 1}"),
                               200));
    long long id = running_job(w, "r1");
    snprintf(ids, sizeof(ids), "%lld", id);
    struct ctl_run r;

    /* resize: the scheduler's next round gives it the second GPU; the worker reports it. */
    pid_t pid = ctl_bg("resize", ids, "2", "--wait", "--timeout", "25", NULL);
    json_decref(wait_state(id, "RESIZING"));
    report(w, id, "RUNNING");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "asks for 2 GPUs; the scheduler considers it at its next round"
                            " (every 1 s)"),
              "%s", r.out);
    cr_assert(strstr(r.out, "RUNNING -> RESIZING") && strstr(r.out, "RESIZING -> RUNNING"),
              "each step: %s", r.out);
    cr_assert(strstr(r.out, "runs on 2 GPUs"), "%s", r.out);

    /* suspend and resume: the worker applies them. */
    pid = ctl_bg("suspend", ids, "--wait", "--timeout", "20", NULL);
    take_action(w, id, "suspend");
    report(w, id, "SUSPENDED");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "suspend action ") && strstr(r.out, "RUNNING -> SUSPENDED") &&
                  strstr(r.out, "suspended\n"),
              "%s", r.out);
    pid = ctl_bg("resume", ids, "--wait", "--timeout", "20", "--json", NULL);
    take_action(w, id, "resume");
    report(w, id, "RUNNING");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    json_t *j = out_json(&r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "RUNNING",
                     "--json: the job as it is at the end");
    json_decref(j);

    /* migrate: no other node, so it is not applied within the timeout (exit 1). */
    double t0 = hx_now();
    r = *ctl("migrate", ids, "--wait", "--timeout", "1");
    cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "migration to another node requested; the scheduler moves it at its"
                            " next round"),
              "%s", r.out);
    cr_assert(strstr(r.err, "not applied after 1 s"), "%s", r.err);
    cr_assert_lt(hx_now() - t0, 10);

    /* A paused scheduler: the answer says so. */
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin,
                                       "{\"paused\": true}"),
                               200));
    r = *ctl("resize", ids, "1");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "asks for 1 GPU; the scheduler considers it once it is unpaused"),
              "%s", r.out);

    /* A job that ends while a request waits: refused (exit 1). */
    pid = ctl_bg("suspend", ids, "--wait", NULL);
    take_action(w, id, "suspend");
    report(w, id, "COMPLETED");
    ctl_reap(&r, pid);
    cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "ended (COMPLETED) before its suspend was applied"), "%s", r.err);

    /* Refused at once: the server's problem, no waiting. */
    r = *ctl("suspend", ids, "--wait");
    cr_assert_eq(r.code, 1);
    cr_assert(strstr(r.err, "409"), "%s", r.err);
    cr_assert_eq(ctl("suspend", ids, "--timeout", "x")->code, 2);
    cr_assert_eq(ctl("suspend", ids, "--bogus")->code, 2);
    hx_finish();
}

/* What the bash completion offers for the words (the last one being completed), with the test
 * server as RINGMASTER_URL and the built ringctl first on PATH. Into out. */
static void complete_words(const char *words, char *out, size_t len)
{
    char dir[512], cmd[2048];
    snprintf(dir, sizeof(dir), "%s", RINGCTL_PATH);
    *strrchr(dir, '/') = '\0';
    snprintf(cmd, sizeof(cmd),
             "PATH='%s':\"$PATH\" RINGMASTER_URL=http://127.0.0.1:%d RINGMASTER_TOKEN='%s'"
             " RINGCTL_COMPLETION_TIMEOUT=30 bash -c '"
             "source %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ringctl;"
             " echo \"${COMPREPLY[*]}\"'",
             dir, hx.port, hx.admin, RINGCTL_COMPLETION, words);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    pclose(p);
}

Test(ringctl, bash_completion_offers_commands_options_and_job_ids)
{
    char out[4096];
    long long a = hx_submit(hx.admin, "a", 1), b = hx_submit(hx.admin, "b", 1);
    complete_words("ringctl li", out, sizeof(out));
    cr_assert_str_eq(out, "list\n");
    complete_words("ringctl list --st", out, sizeof(out));
    cr_assert_str_eq(out, "--state\n");
    complete_words("ringctl list -o w", out, sizeof(out));
    cr_assert_str_eq(out, "wide\n");
    complete_words("ringctl --json resize 1 --wa", out, sizeof(out));
    cr_assert_str_eq(out, "--wait\n");
    complete_words("ringctl help sub", out, sizeof(out));
    cr_assert_str_eq(out, "submit\n");
    complete_words("ringctl show \"\"", out, sizeof(out));
    char want[64];
    snprintf(want, sizeof(want), "%lld %lld\n", a, b);
    cr_assert_str_eq(out, want, "the job ids from the server");
    hx_finish();
}

/* Every command and every option that ringctl's help names is in the man page and in the
 * bash completion (the man page's "\-" read as "-"). */
Test(ringctl, man_page_and_completion_name_every_command_and_option)
{
    static char man[65536], comp[16384], help[16384];
    read_file(RINGCTL_MAN, man, sizeof(man));
    read_file(RINGCTL_COMPLETION, comp, sizeof(comp));
    char *w = man;
    for (const char *r = man; *r; r++)
        if (!(r[0] == '\\' && r[1] == '-'))
            *w++ = *r;
    *w = '\0';
    struct ctl_run u;
    char *hv[] = {"ringctl", "help", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
    snprintf(help, sizeof(help), "%s", u.out);
    const char *cmds[] = {"submit", "list",   "show",   "suspend", "resume", "resize", "migrate",
                          "watch",  "policy", "cancel", "events",  "nodes",  "user",   "health",
                          "help"};
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        char line[64], word[64];
        snprintf(line, sizeof(line), "\n  %s", cmds[k]);
        cr_assert(strstr(help, line), "help lists %s", cmds[k]);
        snprintf(line, sizeof(line), "\n\\fB%s", cmds[k]);
        snprintf(word, sizeof(word), ".BI %s", cmds[k]);
        cr_assert(strstr(man, line) || strstr(man, word) || strstr(man, cmds[k]),
                  "the man page names %s", cmds[k]);
        snprintf(word, sizeof(word), " %s", cmds[k]);
        cr_assert(strstr(comp, word), "the completion offers %s", cmds[k]);
        char *cv[] = {"ringctl", "help", (char *)cmds[k], NULL};
        ctl_argv(&u, "http://127.0.0.1:1", NULL, cv);
        size_t n = strlen(help);
        snprintf(help + n, sizeof(help) - n, "%s", u.out);
    }
    for (const char *p = help; (p = strstr(p, "--")); p += 2) {
        char opt[64];
        size_t n = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        if (n == 2 || n >= sizeof(opt))
            continue;
        snprintf(opt, sizeof(opt), "%.*s", (int)n, p);
        cr_assert(strstr(man, opt), "the man page names %s", opt);
        cr_assert(strstr(comp, opt), "the completion offers %s", opt);
    }
    hx_finish();
}

Test(ringctl, an_elastic_resize_says_when_the_scheduler_considers_it)
{
    char w[128], ids[32];
    one_node(w);
    struct ctl_run *r = ctl("submit", "--name", "el", "--gpus", "1", "--elastic", "--max-gpus",
                            "2", "--", "true");
    cr_assert_eq(r->code, 0, "%s", r->err);
    long long id = atoll(r->out);
    snprintf(ids, sizeof(ids), "%lld", id);
    json_decref(wait_state(id, "STARTING"));
    json_t *s = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    char want[160];
    snprintf(want, sizeof(want),
             "(STARTING, elastic) asks for 2 GPUs; the scheduler considers it at its next round"
             " (every %g s); it resizes a job at most every %g s",
             json_number_value(json_object_get(s, "interval_s")),
             json_number_value(json_object_get(s, "min_resize_interval_s")));
    json_decref(s);
    r = ctl("resize", ids, "2");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, want), "%s\nwanted: %s", r->out, want);
    r = ctl("resize", ids, "3");
    cr_assert_eq(r->code, 1, "beyond max_gpus: refused");
    cr_assert(strstr(r->err, "gpus"), "%s", r->err);
    hx_finish();
}

/* ringctl whatif: the completed jobs replayed on the server's simulator, followed to the end,
 * a row per policy beside the measured figures; list and show; a bad period is a usage
 * error. */
Test(ringctl, whatif_replays_and_prints_a_row_per_policy)
{
    char w[128], path[64];
    one_node(w);
    for (int k = 0; k < 2; k++) {
        long long id = running_job(w, k ? "second" : "first");
        usleep(300000);
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
        json_decref(hx_expect_json(hx_json("POST", path, w, "{\"state\":\"COMPLETED\"}"), 200));
    }
    struct ctl_run *r = ctl("whatif", "--since", "5x");
    cr_assert_eq(r->code, 2, "%s", r->err);
    cr_assert(strstr(r->err, "--since"), "%s", r->err);
    r = ctl("whatif", "--since", "1h", "--policies", "fifo,ringmaster", "--timeout", "120");
    cr_assert_eq(r->code, 0, "%s%s", r->out, r->err);
    cr_assert(strstr(r->out, "2 jobs completed since") && strstr(r->out, "1x2:v100"), "%s",
              r->out);
    cr_assert(strstr(r->out, "measured: mean JCT"), "%s", r->out);
    cr_assert(strstr(r->out, "models: 0 of 2 jobs replayed at their own fitted speed model"),
              "nothing measured of jobs that reported nothing: %s", r->out);
    cr_assert(strstr(r->out, "POLICY") && strstr(r->out, "VS MEASURED"), "%s", r->out);
    const char *fifo = strstr(r->out, "\nfifo "), *rm = strstr(r->out, "\nringmaster (in force)");
    cr_assert(fifo && rm && fifo < rm, "a row each, in order, ringmaster in force: %s", r->out);
    cr_assert(strstr(r->err, "replaying:"), "progress on stderr: %s", r->err);

    r = ctl("whatif", "list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "done") && strstr(r->out, "2/2"), "%s", r->out);
    json_t *runs = hx_expect_json(hx_json("GET", "/api/v1/whatif", hx.admin, NULL), 200);
    char id[24];
    snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(json_array_get(json_object_get(runs, "items"), 0),
                                                "id")));
    json_decref(runs);
    r = ctl("whatif", "show", id, "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = out_json(r);
    cr_assert_eq(json_array_size(json_object_get(j, "results")), 2);
    json_decref(j);
    hx_finish();
}
