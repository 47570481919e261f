#include "wjob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "ckptgen.h"
#include "doneset.h"
#include "fsutil.h"
#include "jobchan.h"
#include "launch.h"
#include "log.h"
#include "outbox.h"

#define PATH_LEN 1200
#define METRICS_BATCH 500
#define METRICS_EVERY_S 0.5
#define LOG_EVERY_S 1.0
#define LOG_CHUNK (256 * 1024)
#define CONTROL_TIMEOUT_S 60.0
#define STOP_TIMEOUT_S 120.0
/* The most ranks one start may ask for: far above any node, and bounds the work a bad spec
 * can cause. */
#define MAX_WORLD 4096

struct wjob {
    long long id;
    struct jobchan *chan;
    pid_t pid;    /* mpirun and its process group; 0 when not running */
    pid_t remote; /* the daemon this node runs for another node's mpirun (exec), or 0 */
    int world;
    char dir[PATH_LEN], sock[PATH_LEN], log[PATH_LEN];
    long long shipped; /* bytes of the log queued for the server */
    double log_at;
    int posted_running;
    enum jobchan_state seen;
    long long act; /* the action in progress, 0 when none */
    char kind[12];
    json_t *act_spec;
    double deadline, kill_at;
    json_t *metrics; /* reports not yet queued */
    double metrics_at;
    int finished;
    int stale; /* the server no longer has this node run it: killed, nothing more reported */
    struct wjob *next;
};

/* ---- reports to the server ---- */

static void flush_metrics(struct agent *a, struct wjob *j);

static void post_state(struct agent *a, struct wjob *j, const char *state, const char *detail,
                       int exit_code)
{
    char path[96];
    flush_metrics(a, j); /* the reports before the transition arrive before it */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", j->id);
    json_t *b = json_pack("{s:s, s:s}", "state", state, "detail", detail);
    if (exit_code >= 0)
        json_object_set_new(b, "exit_code", json_integer(exit_code));
    outbox_push_json(a->out, "POST", path, b, 0);
    log_info("job %lld: %s (%s)", j->id, state, detail);
}

static void post_result(struct agent *a, long long act, int ok, const char *detail)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", act);
    outbox_push_json(a->out, "POST", path,
                     json_pack("{s:s, s:s}", "outcome", ok ? "ok" : "failed", "detail", detail), 0);
}

/* Ends the job's action in progress: remembered as done, its result queued. */
static void finish(struct agent *a, struct wjob *j, int ok, const char *detail)
{
    if (!j->act)
        return;
    if (doneset_add(a->done, j->act, ok) < 0)
        log_error("action %lld: cannot record it as done: %s", j->act, strerror(errno));
    post_result(a, j->act, ok, detail);
    log_info("action %lld (%s job %lld): %s, %s", j->act, j->kind, j->id, ok ? "ok" : "failed",
             detail);
    j->act = 0;
    j->kind[0] = '\0';
    json_decref(j->act_spec);
    j->act_spec = NULL;
}

static void flush_metrics(struct agent *a, struct wjob *j)
{
    if (!j->metrics || json_array_size(j->metrics) == 0)
        return;
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", j->id);
    json_t *body = json_pack("{s:o}", "items", j->metrics);
    long total = jobchan_total_steps(j->chan);
    if (body && total > 0)
        json_object_set_new(body, "total_steps", json_integer(total));
    double sqr, var;
    if (body && jobchan_grad(j->chan, &sqr, &var))
        json_object_set_new(body, "grad", json_pack("{s:f, s:f}", "sqr", sqr, "var", var));
    outbox_push_json(a->out, "POST", path, body, 1);
    j->metrics = json_array();
    j->metrics_at = agent_now();
}

static void iso_time(double ago, char *buf, size_t len)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - (ago > 0 ? ago : 0);
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06dZ", (int)((t - (double)s) * 1e6));
}

/* Moves the channel's reports into the job's batch; RUNNING is reported at the first. */
static void take_metrics(struct agent *a, struct wjob *j)
{
    struct jobchan_report r[256];
    size_t n;
    double now = agent_now();
    if (j->stale) { /* the server refuses them: read and dropped */
        while (jobchan_take_reports(j->chan, r, 256) > 0)
            ;
        return;
    }
    while ((n = jobchan_take_reports(j->chan, r, 256)) > 0) {
        if (!j->posted_running) {
            post_state(a, j, "RUNNING", "ranks report", -1);
            j->posted_running = 1;
        }
        for (size_t i = 0; i < n; i++) {
            char at[40];
            if (!isfinite(r[i].loss) || r[i].step < 0)
                continue;
            iso_time(now - r[i].time, at, sizeof(at));
            json_array_append_new(j->metrics,
                                  json_pack("{s:I, s:f, s:I, s:f, s:i, s:s}", "step",
                                            (json_int_t)r[i].step, "loss", r[i].loss, "samples",
                                            (json_int_t)r[i].samples, "seconds", r[i].seconds,
                                            "world_size", j->world, "at", at));
        }
        if (json_array_size(j->metrics) >= METRICS_BATCH)
            flush_metrics(a, j);
    }
    if (now - j->metrics_at >= METRICS_EVERY_S)
        flush_metrics(a, j);
}

/* Queues the log's new bytes (up to a chunk a call). */
static void ship_log(struct agent *a, struct wjob *j)
{
    static char buf[LOG_CHUNK];
    if (j->stale)
        return; /* the server refuses it (403); it stays in the worker's file */
    int fd = open(j->log, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = pread(fd, buf, sizeof(buf), (off_t)j->shipped);
    close(fd);
    if (n <= 0)
        return;
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log?offset=%lld&stream=node-%lld", j->id,
             j->shipped, (long long)atomic_load(&a->node_id));
    if (outbox_push_raw(a->out, "POST", path, "text/plain", buf, (size_t)n) == 0)
        j->shipped += n;
    j->log_at = agent_now();
}

/* ---- jobs ---- */

static struct wjob *find(struct agent *a, long long id)
{
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

static void job_free(struct wjob *j)
{
    jobchan_destroy(j->chan);
    json_decref(j->act_spec);
    json_decref(j->metrics);
    free(j);
}

static struct wjob *job_create(struct agent *a, long long id, char *err, size_t errlen)
{
    struct wjob *j = calloc(1, sizeof(*j));
    if (!j || !(j->metrics = json_array())) {
        free(j);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    j->id = id;
    j->seen = JOBCHAN_WAITING;
    snprintf(j->dir, sizeof(j->dir), "%.1000s/jobs/%lld", a->state_dir, id);
    snprintf(j->sock, sizeof(j->sock), "%.1100s/chan.sock", j->dir);
    snprintf(j->log, sizeof(j->log), "%.1100s/log", j->dir);
    if (fsutil_mkdir_p(j->dir, 0755) < 0) {
        snprintf(err, errlen, "%.300s: %s", j->dir, strerror(errno));
        job_free(j);
        return NULL;
    }
    j->chan = jobchan_create(j->sock, err, errlen);
    if (!j->chan) {
        job_free(j);
        return NULL;
    }
    /* j->shipped = 0: a log from before a restart is sent again; the server skips it */
    j->next = a->jobs;
    a->jobs = j;
    return j;
}

/* The spec's command and env as NULL-terminated string arrays (free with free_strv). */
static char **strv_of(const json_t *arr)
{
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        v[i] = strdup(s ? s : "");
    }
    return v;
}

static char **env_of(const json_t *obj)
{
    char **v = calloc(json_object_size(obj) + 1, sizeof(*v));
    const char *k;
    json_t *val;
    size_t i = 0;
    json_object_foreach((json_t *)obj, k, val)
    {
        if (v && json_is_string(val) && asprintf(&v[i], "%s=%s", k, json_string_value(val)) >= 0)
            i++;
    }
    return v;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The GPUs of the spec's slots, in order (rank k gets the k-th), as "0,1,0,1"; their count
 * in *n, and in *remote how many are on other nodes. */
static int slot_gpus(struct agent *a, const json_t *slots, char *out, size_t len, int *n,
                     int *remote)
{
    size_t used = 0;
    *n = *remote = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(slots); i++) {
        const json_t *s = json_array_get(slots, i);
        const json_t *node = json_object_get(s, "node_id");
        *remote += node && json_integer_value(node) != atomic_load(&a->node_id);
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%lld", used ? "," : "",
                                 (long long)json_integer_value(json_object_get(s, "gpu")));
        (*n)++;
    }
    return used < len ? 0 : -1;
}

/* mpirun's --host of a job on several nodes, from spec.hosts: "a:2,b:2". 0 or -1. */
static int host_list(const json_t *hosts, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        const json_t *h = json_array_get(hosts, i);
        const char *name = json_string_value(json_object_get(h, "name"));
        if (!name || !*name || strchr(name, ',') || strchr(name, ':'))
            return -1;
        used +=
            (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s:%lld", used ? "," : "",
                             name, (long long)json_integer_value(json_object_get(h, "slots")));
    }
    return json_array_size(hosts) >= 2 && used < len ? 0 : -1;
}

/* jobs/<id>/mpirun.pid: "pid starttime" of the running mpirun, so that the next instance of
 * a worker killed with SIGKILL can end what it left behind (wjob_end_orphans). */
static void write_pidfile(struct wjob *j)
{
    char path[PATH_LEN + 16];
    snprintf(path, sizeof(path), "%.1100s/mpirun.pid", j->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%d %lld\n", (int)j->pid, launch_start_time(j->pid));
    fclose(f);
}

static void remove_pidfile(struct wjob *j)
{
    char path[PATH_LEN + 16];
    snprintf(path, sizeof(path), "%.1100s/mpirun.pid", j->dir);
    unlink(path);
}

/* A launch into a new checkpoint generation (the job was requeued) starts from the newest
 * older one's checkpoint, copied in (ckptgen.h). Returns 0, or -1 with err. */
static int restore_generation(const struct wjob *j, const char *ckpt, char *err, size_t errlen)
{
    int from = 0, n = ckptgen_restore(ckpt, &from, err, errlen); /* err names the file */
    if (n < 0)
        return -1;
    char src[24] = "the folder above";
    if (from >= 0)
        snprintf(src, sizeof(src), "g%d", from);
    if (n > 0)
        log_info("job %lld: new checkpoint generation %s: %d file(s) copied from %s", j->id, ckpt,
                 n, src);
    return 0;
}

static int launch(struct agent *a, struct wjob *j, const json_t *spec, char *err, size_t errlen)
{
    char gpus[1024], ckpt[PATH_LEN], ids[24], hosts[2048];
    int nslots, remote;
    if (slot_gpus(a, json_object_get(spec, "slots"), gpus, sizeof(gpus), &nslots, &remote) < 0) {
        snprintf(err, errlen, "slots: more than this worker can pass to its ranks");
        return -1;
    }
    if (remote && host_list(json_object_get(spec, "hosts"), hosts, sizeof(hosts)) < 0) {
        snprintf(err, errlen, "slots on other nodes but no usable hosts list");
        return -1;
    }
    const json_t *ws = json_object_get(spec, "world_size");
    json_int_t wsv = json_is_integer(ws) ? json_integer_value(ws) : (nslots ? nslots : 1);
    if (wsv < 1 || wsv > MAX_WORLD) {
        snprintf(err, errlen, "world_size: expected 1..%d, got %lld", MAX_WORLD, (long long)wsv);
        return -1;
    }
    int world = (int)wsv;
    if (!nslots)
        for (int i = 0; i < world; i++)
            snprintf(gpus + strlen(gpus), sizeof(gpus) - strlen(gpus), "%s%d", i ? "," : "", i);
    const char *cd = json_string_value(json_object_get(spec, "checkpoint_dir"));
    if (cd && *cd)
        snprintf(ckpt, sizeof(ckpt), "%s", cd);
    else
        snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/%lld", a->state_dir, j->id);
    if (fsutil_mkdir_p(ckpt, 0755) < 0) {
        snprintf(err, errlen, "checkpoint dir %.300s: %s", ckpt, strerror(errno));
        return -1;
    }
    if (restore_generation(j, ckpt, err, errlen) < 0)
        return -1;
    snprintf(ids, sizeof(ids), "%lld", j->id);
    const json_t *lr = json_object_get(spec, "lr_scale");
    const json_t *batch = json_object_get(spec, "batch");
    const json_t *init_batch = json_object_get(spec, "init_batch");
    const json_t *max_local = json_object_get(spec, "max_local_batch");
    char **cmd = strv_of(json_object_get(spec, "command"));
    char **env = env_of(json_object_get(spec, "env"));
    struct launch_req r = {
        .job_id = ids,
        .command = (const char *const *)cmd,
        .env = (const char *const *)env,
        .world_size = world,
        .gpus = gpus,
        .hosts = remote ? hosts : NULL,
        .server = a->server,
        .token_file = a->token_file,
        .socket = j->sock,
        .ckpt_dir = ckpt,
        .plan = json_string_value(json_object_get(spec, "plan")),
        .lr_scale = json_is_number(lr) ? json_number_value(lr) : -1,
        .batch = json_is_integer(batch) ? (long)json_integer_value(batch) : 0,
        .init_batch = json_is_integer(init_batch) ? (long)json_integer_value(init_batch) : 0,
        .max_local = json_is_integer(max_local) ? (long)json_integer_value(max_local) : 0,
        .log_path = j->log,
        .self = a->self,
        .simulated = a->simulated};
    pid_t pid = cmd && env ? launch_start(&r, err, errlen) : -1;
    free_strv(cmd);
    free_strv(env);
    if (pid < 0)
        return -1;
    j->pid = pid;
    j->world = world;
    write_pidfile(j);
    j->posted_running = 0;
    log_info("job %lld: launched mpirun pid %d, %d ranks on GPUs %s", j->id, (int)pid, world, gpus);
    return 0;
}

/* The job's mpirun here is a copy the server no longer has this node run (it requeued the
 * job while this worker was silent, and may run it elsewhere from its checkpoint): SIGKILL
 * to mpirun and every rank's group at once, never a checkpoint-exit nor a SIGTERM a job may
 * answer with a checkpoint, since that checkpoint, in a folder shared between hosts, would
 * overwrite the one the live copy restarted from or writes. Nothing more is reported for it;
 * an action for the job waits until this mpirun is reaped. Sent again while it lives. */
static void kill_stale(struct agent *a, struct wjob *j, const char *why)
{
    if (!j->pid)
        return;
    if (!j->stale)
        log_warn("job %lld: %s: killing mpirun %d and its ranks, without a checkpoint", j->id, why,
                 (int)j->pid);
    j->stale = 1;
    j->kill_at = 0;
    launch_kill(j->pid, SIGKILL);
    if (j->act)
        finish(a, j, 0, "this node no longer runs the job");
    json_array_clear(j->metrics);
}

/* ---- actions ---- */

static void begin(struct wjob *j, long long act, const char *kind, const json_t *spec,
                  double timeout_s)
{
    j->act = act;
    snprintf(j->kind, sizeof(j->kind), "%s", kind);
    json_decref(j->act_spec);
    j->act_spec = spec ? json_deep_copy(spec) : NULL;
    j->deadline = agent_now() + timeout_s;
}

static void do_start(struct agent *a, struct wjob *j, long long act, const json_t *spec)
{
    char err[512];
    begin(j, act, "start", spec, CONTROL_TIMEOUT_S);
    /* A start that follows a migrate finds the job MIGRATING: it becomes RUNNING when its
     * ranks report, and STARTING is no state it may pass through on the way. */
    if (!json_object_get(spec, "follows"))
        post_state(a, j, "STARTING", "worker launches it", -1);
    if (launch(a, j, spec, err, sizeof(err)) < 0) {
        post_state(a, j, "FAILED", err, -1);
        finish(a, j, 0, err);
        j->finished = 1;
    } else {
        finish(a, j, 1, "launched");
    }
}

static void do_control(struct agent *a, struct wjob *j, long long act, const char *kind,
                       const json_t *spec)
{
    int stop = strcmp(kind, "resize") == 0 || strcmp(kind, "migrate") == 0;
    enum jobchan_cmd cmd = stop                           ? JOBCHAN_CHECKPOINT_EXIT
                           : strcmp(kind, "suspend") == 0 ? JOBCHAN_SUSPEND
                                                          : JOBCHAN_RESUME;
    begin(j, act, kind, spec, stop ? STOP_TIMEOUT_S : a->control_s);
    if (!j->pid) {
        finish(a, j, 0, "the job is not running on this node");
        return;
    }
    if (jobchan_command(j->chan, cmd) < 0) {
        char d[128];
        snprintf(d, sizeof(d), "the job cannot %s now (channel %s)", kind,
                 jobchan_state_name(jobchan_state(j->chan)));
        finish(a, j, 0, d);
    }
}

static void do_cancel(struct agent *a, struct wjob *j, long long act, const json_t *spec)
{
    const json_t *g = json_object_get(spec, "grace_s");
    double grace = json_is_number(g) ? json_number_value(g) : 10.0;
    if (j->act)
        finish(a, j, 0, "superseded by a cancel");
    begin(j, act, "cancel", spec, grace + 30.0);
    if (!j->pid) {
        finish(a, j, 1, "not running");
        j->finished = 1;
        return;
    }
    kill(-j->pid, SIGTERM);
    j->kill_at = agent_now() + grace;
}

/* exec: runs the command (a job's remote mpirun daemon) in a session of its own, its output
 * appended to the job's log here. */
static void do_exec(struct agent *a, struct wjob *j, long long act, const json_t *spec)
{
    const char *cmd = json_string_value(json_object_get(spec, "command"));
    begin(j, act, "exec", spec, CONTROL_TIMEOUT_S);
    pid_t pid = cmd ? launch_shell(cmd, j->log) : -1;
    if (pid < 0) {
        finish(a, j, 0, cmd ? "fork failed" : "no command");
        return;
    }
    j->remote = pid;
    log_info("job %lld: runs a remote daemon, pid %d", j->id, (int)pid);
    finish(a, j, 1, "started");
}

/* 1 while a job of this node is being suspended (time-slicing gives its GPUs to the next
 * job in the same round): a launch waits for that minibatch boundary. */
static int suspending(const struct agent *a)
{
    for (const struct wjob *j = a->jobs; j; j = j->next)
        if (j->act && strcmp(j->kind, "suspend") == 0)
            return 1;
    return 0;
}

static int launches(const char *kind)
{
    return kind && (!strcmp(kind, "start") || !strcmp(kind, "resume") || !strcmp(kind, "migrate"));
}

int wjob_exec_action(struct agent *a, const json_t *action)
{
    long long act = json_integer_value(json_object_get(action, "id"));
    long long job = json_integer_value(json_object_get(action, "job_id"));
    const char *kind = json_string_value(json_object_get(action, "kind"));
    const json_t *spec = json_object_get(action, "spec");
    int ok;
    char err[512];
    if (doneset_has(a->done, act, &ok)) {
        post_result(a, act, ok, "done before");
        return 0;
    }
    struct wjob *j = find(a, job);
    /* A start for a job whose mpirun still runs here: that one is a stale copy (the server
     * requeued the job since, and starts it afresh); it goes first. */
    if (j && j->pid && !j->stale && kind && !strcmp(kind, "start"))
        kill_stale(a, j, "a new start for it while an older mpirun runs");
    if (j && j->stale)
        return 1;
    if (j && j->act && strcmp(kind ? kind : "", "cancel") != 0)
        return 1;
    if (launches(kind) && suspending(a))
        return 1;
    if (!j && !(j = job_create(a, job, err, sizeof(err)))) {
        log_error("job %lld: %s", job, err);
        doneset_add(a->done, act, 0);
        post_result(a, act, 0, err);
        return 0;
    }
    j->finished = 0;
    if (!kind)
        kind = "";
    if (strcmp(kind, "start") == 0)
        do_start(a, j, act, spec);
    else if (strcmp(kind, "exec") == 0)
        do_exec(a, j, act, spec);
    else if (strcmp(kind, "cancel") == 0)
        do_cancel(a, j, act, spec);
    else if (!strcmp(kind, "suspend") || !strcmp(kind, "resume") || !strcmp(kind, "resize") ||
             !strcmp(kind, "migrate"))
        do_control(a, j, act, kind, spec);
    else {
        begin(j, act, kind, NULL, 0);
        finish(a, j, 0, "unknown action kind");
    }
    return 0;
}

/* ---- watching ---- */

static long long migrate_target(const struct wjob *j)
{
    const json_t *s = json_array_get(json_object_get(j->act_spec, "slots"), 0);
    const json_t *n = json_object_get(s, "node_id");
    return json_is_integer(n) ? json_integer_value(n) : 0;
}

/* After a planned stop (checkpoint-exit) for a resize or migration. */
static void after_checkpoint(struct agent *a, struct wjob *j)
{
    char d[256], err[512];
    long long target = migrate_target(j);
    long step = jobchan_checkpoint_step(j->chan);
    if (strcmp(j->kind, "migrate") == 0 && target && target != atomic_load(&a->node_id)) {
        snprintf(d, sizeof(d), "checkpointed at step %ld for node %lld", step, target);
        finish(a, j, 1, d);
        j->finished = 1;
    } else if (launch(a, j, j->act_spec, err, sizeof(err)) < 0) {
        post_state(a, j, "FAILED", err, -1);
        finish(a, j, 0, err);
        j->finished = 1;
    } else {
        snprintf(d, sizeof(d), "checkpointed at step %ld, restarted with %d ranks", step, j->world);
        finish(a, j, 1, d);
    }
}

static void on_exit_status(struct agent *a, struct wjob *j, int status)
{
    for (int i = 0; i < 50 && jobchan_connected(j->chan); i++)
        jobchan_run(j->chan, 10);
    take_metrics(a, j);
    flush_metrics(a, j);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    int ckpt = jobchan_state(j->chan) == JOBCHAN_CHECKPOINTED;
    char d[128];
    j->pid = 0;
    remove_pidfile(j);
    if (j->stale) {
        log_info("job %lld: its stale mpirun is gone (status %d)", j->id, code);
        j->stale = 0;
        j->finished = 1;
        return;
    }
    ship_log(a, j);
    log_info("job %lld: mpirun exited with %d%s", j->id, code, ckpt ? " after a checkpoint" : "");
    if (strcmp(j->kind, "cancel") == 0) {
        post_state(a, j, "CANCELLED", "stopped by its worker", code);
        finish(a, j, 1, "cancelled");
        j->finished = 1;
    } else if (ckpt && (!strcmp(j->kind, "resize") || !strcmp(j->kind, "migrate"))) {
        after_checkpoint(a, j);
    } else if (code == 0 && !ckpt) {
        /* A job that ends by itself while it was to be resized or moved is RESIZING or
         * MIGRATING on the server, from where only RUNNING leads to COMPLETED. */
        if (!j->posted_running || !strcmp(j->kind, "resize") || !strcmp(j->kind, "migrate"))
            post_state(a, j, "RUNNING", "ranks started", -1);
        post_state(a, j, "COMPLETED", "all ranks exited 0", 0);
        finish(a, j, 0, "the job ended first");
        j->finished = 1;
    } else {
        snprintf(d, sizeof(d), "%s",
                 ckpt ? "stopped at a checkpoint nobody asked for" : "the job's ranks failed");
        post_state(a, j, "FAILED", d, code);
        finish(a, j, 0, d);
        j->finished = 1;
    }
}

static void follow_channel(struct agent *a, struct wjob *j)
{
    enum jobchan_state s = jobchan_state(j->chan);
    if (j->stale)
        return;
    if (s != j->seen && s == JOBCHAN_SUSPENDED)
        post_state(a, j, "SUSPENDED", "suspended in place", -1);
    if (s != j->seen && s == JOBCHAN_RUNNING &&
        (j->seen == JOBCHAN_RESUMING || j->seen == JOBCHAN_SUSPENDED))
        post_state(a, j, "RUNNING", "resumed", -1);
    j->seen = s;
    if (s == JOBCHAN_SUSPENDED && !strcmp(j->kind, "suspend"))
        finish(a, j, 1, "suspended");
    if (s == JOBCHAN_RUNNING && !strcmp(j->kind, "resume"))
        finish(a, j, 1, "running");
}

static void tick_job(struct agent *a, struct wjob *j, double now)
{
    int status;
    take_metrics(a, j);
    follow_channel(a, j);
    if (j->pid && waitpid(j->pid, &status, WNOHANG) == j->pid)
        on_exit_status(a, j, status);
    if (j->remote && waitpid(j->remote, &status, WNOHANG) == j->remote) {
        log_info("job %lld: its remote daemon exited", j->id);
        j->remote = 0;
        j->finished = !j->pid;
    }
    if (j->pid && j->kill_at > 0 && now >= j->kill_at) {
        launch_kill(j->pid, SIGKILL);
        j->kill_at = 0;
    }
    if (j->act && now >= j->deadline) {
        char d[128];
        snprintf(d, sizeof(d), "timed out (channel %s)",
                 jobchan_state_name(jobchan_state(j->chan)));
        finish(a, j, 0, d);
    }
    if (now - j->log_at >= LOG_EVERY_S)
        ship_log(a, j);
}

void wjob_tick(struct agent *a)
{
    double now = agent_now();
    for (struct wjob **pp = &a->jobs; *pp;) {
        struct wjob *j = *pp;
        tick_job(a, j, now);
        if (j->finished && !j->pid && !j->act && !j->remote) {
            ship_log(a, j);
            flush_metrics(a, j);
            *pp = j->next;
            job_free(j);
        } else {
            pp = &j->next;
        }
    }
}

int wjob_pollfds(struct agent *a, struct pollfd *fds, int max)
{
    int n = 0;
    for (struct wjob *j = a->jobs; j && n + JOBCHAN_MAX_POLLFDS <= max; j = j->next)
        n += jobchan_pollfds(j->chan, fds + n, JOBCHAN_MAX_POLLFDS);
    return n;
}

void wjob_handle(struct agent *a, const struct pollfd *fds, int n)
{
    int k = 0;
    for (struct wjob *j = a->jobs; j && k < n; j = j->next) {
        struct pollfd mine[JOBCHAN_MAX_POLLFDS];
        int m = jobchan_pollfds(j->chan, mine, JOBCHAN_MAX_POLLFDS);
        if (k + m > n)
            break;
        if (jobchan_handle(j->chan, fds + k, m) < 0)
            log_warn("job %lld: channel: %s", j->id, jobchan_error(j->chan));
        k += m;
    }
}

void wjob_stop_stale(struct agent *a, const json_t *ids)
{
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *id = json_array_get(ids, i);
        struct wjob *j = json_is_integer(id) ? find(a, json_integer_value(id)) : NULL;
        if (j && j->pid)
            kill_stale(a, j, "the server no longer has this node run it");
    }
}

json_t *wjob_heartbeat_json(struct agent *a)
{
    json_t *run = json_array();
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->pid)
            json_array_append_new(run, json_pack("{s:I, s:i, s:i}", "job_id", (json_int_t)j->id,
                                                 "pid", (int)j->pid, "world_size", j->world));
    return json_pack("{s:o}", "running", run);
}

static int any_running(struct agent *a)
{
    int status, n = 0;
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->pid && waitpid(j->pid, &status, WNOHANG) == j->pid) {
            j->pid = 0;
            remove_pidfile(j);
        } else if (j->pid) {
            n++;
        }
    return n;
}

/* Runs the channels and reaps for at most s seconds, until no job runs. */
static void wait_jobs(struct agent *a, double s)
{
    double end = agent_now() + s;
    while (any_running(a) && agent_now() < end)
        for (struct wjob *j = a->jobs; j; j = j->next)
            jobchan_run(j->chan, 5);
}

void wjob_stop_all(struct agent *a, double grace_s)
{
    int asked = 0;
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->pid && !j->stale && jobchan_connected(j->chan))
            asked += jobchan_command(j->chan, JOBCHAN_CHECKPOINT_EXIT) == 0;
    if (asked)
        wait_jobs(a, grace_s);
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->pid) {
            log_info("job %lld: %s; stopping its ranks", j->id,
                     jobchan_state(j->chan) == JOBCHAN_CHECKPOINTED ? "checkpointed"
                                                                    : "no checkpoint");
            kill(-j->pid, SIGTERM);
        }
    wait_jobs(a, grace_s);
    for (struct wjob *j = a->jobs; j; j = j->next) {
        if (j->remote) {
            kill(-j->remote, SIGKILL);
            waitpid(j->remote, NULL, 0);
        }
        if (j->pid) {
            launch_kill(j->pid, SIGKILL);
            waitpid(j->pid, NULL, 0);
            remove_pidfile(j);
        }
    }
    while (a->jobs) {
        struct wjob *j = a->jobs;
        a->jobs = j->next;
        job_free(j);
    }
}

/* Ends the mpirun of one pid file if it is still the process that was started. */
static void end_orphan(const char *jobs, const char *name)
{
    char path[PATH_LEN + 300];
    int pid;
    long long started;
    snprintf(path, sizeof(path), "%.1100s/%.200s/mpirun.pid", jobs, name);
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%d %lld", &pid, &started) == 2;
    if (f)
        fclose(f);
    if (ok && pid > 1 && started >= 0 && launch_start_time(pid) == started) {
        log_warn("job %s: mpirun %d of an earlier worker still runs; ending it", name, pid);
        launch_kill(pid, SIGTERM);
        for (int i = 0; i < 100 && launch_start_time(pid) == started; i++)
            usleep(50000);
        if (launch_start_time(pid) == started)
            launch_kill(pid, SIGKILL);
    }
    unlink(path);
}

void wjob_end_orphans(struct agent *a)
{
    char jobs[PATH_LEN];
    snprintf(jobs, sizeof(jobs), "%.1000s/jobs", a->state_dir);
    DIR *d = opendir(jobs);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            end_orphan(jobs, e->d_name);
    if (d)
        closedir(d);
}
