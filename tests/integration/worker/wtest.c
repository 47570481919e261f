/* wtest: the worker end-to-end tests' helpers on top of the harness: submitting jobs, waiting
 * on states, starting and stopping real workers, reading a job and its metrics. */
#include "wtest.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef WORKER_PATH
#define WORKER_PATH "build/ringmaster-worker"
#endif

long long wt_post_job(const char *body)
{
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

long long wt_submit_mlp(long steps, const char *sizes, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"500\"],%s,\"env\":{" WT_ASAN_ENV "}}",
             TRAIN_MLP_PATH, steps, seed, sizes);
    return wt_post_job(body);
}

const char *wt_job_state(long long job)
{
    return hx_job_state(job);
}

int wt_await_state(long long job, const char *want, double timeout_s)
{
    double end = hx_now() + timeout_s;
    while (strcmp(wt_job_state(job), want) != 0) {
        if (hx_now() > end)
            return -1;
        usleep(100000);
    }
    return 0;
}

/* Writes name's token file tfile, making its worker user, unless the file exists. */
static void worker_token(const char *name, const char *tfile)
{
    char token[128], user[64];
    if (access(tfile, F_OK) == 0)
        return;
    snprintf(user, sizeof(user), "%s-worker", name);
    hx_user(user, "worker", token);
    FILE *f = fopen(tfile, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", token);
    fclose(f);
}

/* In the worker's child: MPI for one machine (vader) or for loopback TCP. */
static void worker_mpi_env(int tcp)
{
    setenv("OMPI_MCA_btl", tcp ? "self,tcp" : "self,vader", 1);
    if (tcp) {
        setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1);
        setenv("OMPI_MCA_oob_tcp_if_include", "lo", 1);
    }
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
}

pid_t wt_start_worker(const char *name, const struct wt_worker *w)
{
    char tfile[320], url[256], log[320], dir[320], ngpus[8], faults[320];
    snprintf(tfile, sizeof(tfile), "%s/%s.token", hx.dir, name);
    snprintf(faults, sizeof(faults), "%s/%s.faults", hx.dir, name);
    worker_token(name, tfile);
    snprintf(dir, sizeof(dir), "%s/%s", hx.dir, name);
    if (w->servers)
        snprintf(url, sizeof(url), "%s", w->servers);
    else
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    snprintf(log, sizeof(log), "%s/%s", hx.dir, w->log ? w->log : "worker.log");
    snprintf(ngpus, sizeof(ngpus), "%d", w->gpus);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        /* a test process killed (its bound, ^C) takes its workers and their jobs along */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        FILE *o = freopen(log, "a", stdout);
        dup2(fileno(o), 2);
        worker_mpi_env(w->tcp);
        if (w->path)
            setenv("PATH", w->path, 1);
        const char *argv[24] = {"ringmaster-worker", "--server", url, "--token-file", tfile,
                                "--name", name, "--state-dir", dir, "--simulate-gpus", ngpus,
                                "--heartbeat", "1", "--fault-file", faults};
        int n = 15;
        if (w->model) {
            argv[n++] = "--simulate-gpu-model";
            argv[n++] = w->model;
        }
        if (w->action_timeout) {
            argv[n++] = "--action-timeout";
            argv[n++] = w->action_timeout;
        }
        execv(WORKER_PATH, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

pid_t wt_spawn_worker(const char *name, int gpus)
{
    return wt_start_worker(name, &(struct wt_worker){.gpus = gpus});
}

int wt_stop_worker(pid_t *pid)
{
    int status = 0;
    if (*pid <= 0)
        return 0;
    kill(*pid, SIGTERM);
    double end = hx_now() + 20;
    while (waitpid(*pid, &status, WNOHANG) == 0) {
        if (hx_now() > end) {
            kill(*pid, SIGKILL);
            waitpid(*pid, &status, 0);
            *pid = 0;
            return -1;
        }
        usleep(20000);
    }
    *pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

long long wt_wait_node(const char *name)
{
    double end = hx_now() + 30;
    for (;;) {
        json_t *l = hx_expect_json(hx_json("GET", "/api/v1/nodes", hx.admin, NULL), 200);
        json_t *items = json_object_get(l, "items");
        long long id = 0;
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *n = json_array_get(items, i);
            if (!strcmp(json_string_value(json_object_get(n, "name")), name))
                id = json_integer_value(json_object_get(n, "id"));
        }
        json_decref(l);
        if (id)
            return id;
        cr_assert(hx_now() < end, "worker %s did not register in 30 s", name);
        usleep(100000);
    }
}

json_t *wt_job(long long job)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", job);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

json_t *wt_metrics(long long job)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics?limit=100000", job);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *items = json_incref(json_object_get(j, "items"));
    json_decref(j);
    return items;
}

void wt_dump_logs(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "tail -n 80 '%s/worker.log' >&2; tail -n 30 '%s/server.log' >&2;"
             " tail -n 5 %s/sim-*/jobs/*/log >&2",
             hx.dir, hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "no worker log\n");
}

/* Prints each row of the query's answer, its fields joined by " | ", after label. */
static void print_rows(const char *label, const char *sql)
{
    PGresult *r = hx_sql(sql);
    for (int i = 0; i < PQntuples(r); i++) {
        fprintf(stderr, "%s", label);
        for (int k = 0; k < PQnfields(r); k++)
            fprintf(stderr, "%s%s", k ? " | " : "", PQgetvalue(r, i, k));
        fprintf(stderr, "\n");
    }
    PQclear(r);
}

void wt_print_actions(const char *tag)
{
    PGresult *r =
        hx_sql("SELECT job_id, kind, spec->>'from_world_size', spec->>'world_size',"
               " spec->>'reason', state FROM actions WHERE kind IN ('start', 'resize', 'migrate')"
               " ORDER BY id");
    for (int i = 0; i < PQntuples(r); i++)
        fprintf(stderr, "%s: job %s %s %s -> %s (%s) %s\n", tag, PQgetvalue(r, i, 0),
                PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
                PQgetvalue(r, i, 5));
    PQclear(r);
}

void wt_print_events(void)
{
    print_rows("event: ", "SELECT job_id, event, actor, to_state, detail FROM job_events"
                          " ORDER BY id");
    print_rows("slices: ",
               "SELECT s.job_id, s.sliced, s.packed_with, s.pack_at, s.alone_s, s.pack_reverted,"
               " (SELECT count(*) || ' ' || avg(seconds) FROM job_metrics m WHERE"
               " m.job_id = s.job_id AND m.at > s.pack_at), now() FROM job_slices s ORDER BY 1");
    print_rows("allocation: ", "SELECT job_id, node_id, gpu_idx FROM allocations ORDER BY 1");
    wt_dump_logs();
}

/* Prints job's events and actions (each row once) and its stored log's last lines: what a
 * failed wait on the job needs to be read after the test's directory is gone. */
static void print_job_story(long long job)
{
    char sql[400];
    snprintf(sql, sizeof(sql),
             "SELECT at::time, event, actor, coalesce(from_state, '') || ' -> ' || to_state,"
             " detail FROM job_events WHERE job_id = %lld ORDER BY id",
             job);
    print_rows("job event: ", sql);
    snprintf(sql, sizeof(sql),
             "SELECT id, kind, state, node_id, spec->>'world_size', outcome_detail,"
             " created_at::time FROM actions WHERE job_id = %lld ORDER BY id",
             job);
    print_rows("job action: ", sql);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "tail -n 15 %s/sim-*/jobs/%lld/log >&2 2>/dev/null", hx.dir, job);
    if (system(cmd) != 0)
        fprintf(stderr, "job %lld: no log under %s\n", job, hx.dir);
}

void wt_expect_state(long long job, const char *want, double timeout_s, void (*dump)(void))
{
    if (wt_await_state(job, want, timeout_s) == 0)
        return;
    print_job_story(job);
    if (dump)
        dump();
    cr_assert_fail("job %lld: %s after %.0f s, not %s", job, wt_job_state(job), timeout_s, want);
}

void wt_scheduler(const char *body)
{
    json_decref(hx_expect_json(hx_json("PUT", "/api/v1/scheduler", hx.admin, body), 200));
}

long long wt_db_int(const char *fmt, long long arg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, arg);
    return (long long)hx_sql_num(sql);
}

void wt_cancel(long long job)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", job);
    json_decref(hx_expect_json(hx_json("POST", path, hx.admin, NULL), 200));
}

char *wt_job_log(long long job)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", job);
    struct hx_resp *r = hx_call("GET", path, hx.admin, NULL, NULL, 0, NULL);
    cr_assert_eq(r->status, 200);
    char *text = strdup(r->body);
    hx_free(r);
    return text;
}

void wt_tmp_root(char *buf, size_t len, const char *prefix, const char *sub)
{
    snprintf(buf, len, "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(buf));
    if (!sub) {
        setenv("RINGMASTER_CHECKPOINT_ROOT", buf, 1);
        return;
    }
    char ckpt[320];
    snprintf(ckpt, sizeof(ckpt), "%s/%s", buf, sub);
    setenv("RINGMASTER_CHECKPOINT_ROOT", ckpt, 1);
}

void wt_remove_tree(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* Reads /proc/<pid>/environ into buf (static storage, NUL-separated). Returns its length. */
static size_t read_environ(const char *pid, const char **env)
{
    char path[300];
    static char buf[1 << 17];
    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[len] = '\0';
    *env = buf;
    return len;
}

/* The entry of /proc/<pid>/environ that starts with prefix, or NULL (static storage). */
static const char *environ_find(const char *pid, const char *prefix, int whole)
{
    const char *buf;
    size_t len = read_environ(pid, &buf), n = strlen(prefix);
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (whole ? !strcmp(buf + i, prefix) : !strncmp(buf + i, prefix, n))
            return buf + i;
    return NULL;
}

int wt_count_procs(int (*match)(const char *cmd, size_t len, const void *arg), const void *arg)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[300], buf[4096], ours[300];
    int n = 0;
    /* Only this test's launches: other test programs (run beside this one, or another
     * checkout's suite on the same machine) start the same commands with the same seeds. */
    snprintf(ours, sizeof(ours), "RINGJOB_SOCKET=%s/", hx.dir);
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = '\0';
        n += match(buf, len, arg) != 0 && environ_find(e->d_name, ours, 0) != NULL;
    }
    if (d)
        closedir(d);
    return n;
}

/* 1 when /proc/<pid>/environ holds the entry want (NUL-terminated). */
static int environ_has(const char *pid, const char *want)
{
    return environ_find(pid, want, 1) != NULL;
}

int wt_job_pids(const char *worker, long long job, pid_t *pids, int max)
{
    char want[600];
    snprintf(want, sizeof(want), "RINGJOB_SOCKET=%s/%s/jobs/%lld/chan.sock", hx.dir, worker, job);
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && environ_has(e->d_name, want)) {
            if (n < max)
                pids[n] = (pid_t)atoi(e->d_name);
            n++;
        }
    if (d)
        closedir(d);
    return n;
}

int wt_count_job_procs(const char *worker, long long job)
{
    return wt_job_pids(worker, job, NULL, 0);
}

int wt_job_env(const char *worker, long long job, const char *name, char *buf, size_t len)
{
    pid_t pids[64];
    char prefix[256], pid[24];
    int n = wt_job_pids(worker, job, pids, 64);
    snprintf(prefix, sizeof(prefix), "%s=", name);
    for (int i = 0; i < n && i < 64; i++) {
        snprintf(pid, sizeof(pid), "%d", (int)pids[i]);
        const char *v = environ_find(pid, prefix, 0);
        if (v) {
            snprintf(buf, len, "%s", v + strlen(prefix));
            return 0;
        }
    }
    return -1;
}

#define APPENDF(buf, ...) snprintf((buf) + strlen(buf), sizeof(buf) - strlen(buf), __VA_ARGS__)

void wt_write_action(long long job, const char *kind, const char *state, long long at,
                     const long long *nodes, int nhosts, int per_host)
{
    char sql[8192], slots[1024] = "", alloc[1024] = "", hosts[1024] = "";
    cr_assert(nhosts >= 1 && nhosts <= 8 && per_host >= 1 && per_host <= 8);
    for (int h = 0; h < nhosts; h++) {
        APPENDF(hosts,
                "%sjsonb_build_object('node', %lld, 'name', (SELECT name FROM nodes WHERE id ="
                " %lld), 'slots', %d)",
                h ? "," : "", nodes[h], nodes[h], per_host);
        for (int g = 0; g < per_host; g++) {
            APPENDF(slots, "%sjsonb_build_object('node_id', %lld, 'gpu', %d)", h || g ? "," : "",
                    nodes[h], g);
            APPENDF(alloc, "%s(%lld, %lld, %d)", h || g ? "," : "", job, nodes[h], g);
        }
    }
    int world = nhosts * per_host;
    snprintf(sql, sizeof(sql),
             "BEGIN; UPDATE jobs SET state = '%s' WHERE id = %lld;"
             " DELETE FROM allocations WHERE job_id = %lld;"
             " INSERT INTO allocations (job_id, node_id, gpu_idx) VALUES %s;"
             " INSERT INTO actions (node_id, job_id, kind, spec) SELECT %lld, id, '%s',"
             " jsonb_build_object('command', command, 'env', env, 'world_size', %d, 'slots',"
             " jsonb_build_array(%s), 'hosts', jsonb_build_array(%s), 'checkpoint_dir',"
             " '%s/ckpt/%lld', 'lr_scale', %d, 'plan', 'dp') FROM jobs WHERE id = %lld; COMMIT",
             state, job, job, alloc, at, kind, world, slots, hosts, hx.dir, job, world, job);
    hx_sql_do(sql);
}

int wt_pair_packed(long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_slices s JOIN allocations x ON x.job_id = s.job_id"
             " WHERE x.gpu_idx = 0 AND ((s.job_id = %lld AND s.packed_with = %lld) OR"
             " (s.job_id = %lld AND s.packed_with = %lld))",
             a, b, b, a);
    return hx_sql_num(sql) == 2;
}

long long wt_pair_measured(long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT min((SELECT count(*) FROM job_metrics m WHERE m.job_id = s.job_id"
             " AND m.at > s.pack_at)) FROM job_slices s WHERE s.job_id IN (%lld, %lld)"
             " AND s.pack_at IS NOT NULL HAVING count(*) = 2",
             a, b);
    return (long long)hx_sql_num(sql);
}

double wt_pair_rate_sum(long long a, long long b)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT sum(s.alone_s / (SELECT avg(m.seconds) FROM job_metrics m WHERE"
             " m.job_id = s.job_id AND m.at > s.pack_at)) FROM job_slices s"
             " WHERE s.job_id IN (%lld, %lld)",
             a, b);
    return hx_sql_num(sql);
}

void wt_fault(const char *worker, const char *line)
{
    char path[320];
    snprintf(path, sizeof(path), "%s/%s.faults", hx.dir, worker);
    FILE *f = fopen(path, "a");
    cr_assert(f, "%s", path);
    fprintf(f, "%s\n", line);
    cr_assert_eq(fclose(f), 0);
}
