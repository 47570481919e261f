/* wjob: the jobs of this worker: carries out the server's actions on them, follows their
 * channels and mpirun processes, and stops them (see wjob.h). Their reports are jobreport.c's,
 * their launch from a spec jobstart.c's. */
#include "wjob.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "agent.h"
#include "doneset.h"
#include "fsutil.h"
#include "jobchan.h"
#include "jobreport.h"
#include "jobstart.h"
#include "launch.h"
#include "log.h"
#include "pidfile.h"
#include "wjob_int.h"

#define LOG_EVERY_S 1.0
#define CONTROL_TIMEOUT_S 60.0
#define STOP_TIMEOUT_S 120.0

/* Ends the job's action in progress: remembered as done, its result queued. */
static void finish(struct agent *a, struct wjob *j, int ok, const char *detail)
{
    if (!j->act)
        return;
    if (doneset_add(a->done, j->act, ok) < 0)
        log_error("action %lld: cannot record it as done: %s", j->act, strerror(errno));
    jobreport_result(a, j->act, ok, detail);
    log_info("action %lld (%s job %lld): %s, %s", j->act, j->kind, j->id, ok ? "ok" : "failed",
             detail);
    j->act = 0;
    j->kind[0] = '\0';
    json_decref(j->act_spec);
    j->act_spec = NULL;
}

/* ---- jobs ---- */

static struct wjob *find(struct agent *a, long long id)
{
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

/* The job's mpirun, or the daemon it ran for another node's, is gone: its OpenMPI session
 * folder goes once neither runs. */
static void session_gone(const struct wjob *j)
{
    if (!j->pid && !j->remote)
        launch_session_remove(j->id);
}

/* The job's mpirun was reaped: its pid file goes, and its session folder unless a daemon of
 * the job still runs here. */
static void mpirun_reaped(struct wjob *j)
{
    j->pid = 0;
    pidfile_remove(j->dir);
    session_gone(j);
}

static void job_free(struct wjob *j)
{
    launch_session_remove(j->id); /* nothing of the job runs here any more */
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
        jobreport_state(a, j, "STARTING", "worker launches it", -1);
    if (jobstart_launch(a, j, spec, err, sizeof(err)) < 0) {
        jobreport_state(a, j, "FAILED", err, -1);
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

/* batch: a new global batch for the running job, on its channel (jobchan_batch); done when
 * the job says it took it (follow_channel). */
static void do_batch(struct agent *a, struct wjob *j, long long act, const json_t *spec)
{
    const json_t *m = json_object_get(spec, "batch"), *lr = json_object_get(spec, "lr_scale");
    begin(j, act, "batch", spec, a->control_s);
    j->batch_want = json_is_integer(m) ? (long)json_integer_value(m) : 0;
    j->batched = jobchan_batched(j->chan, &j->batched_step);
    if (!j->pid || !jobchan_connected(j->chan)) {
        finish(a, j, 0, "the job is not running on this node");
        return;
    }
    if (jobchan_batch(j->chan, j->batch_want, json_is_number(lr) ? json_number_value(lr) : 0) < 0) {
        char d[160];
        snprintf(d, sizeof(d), "the job cannot change its batch now (%s)", jobchan_error(j->chan));
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
    pid_t pid = cmd ? launch_shell(cmd, j->log, j->id) : -1;
    if (pid < 0) {
        finish(a, j, 0, cmd ? "fork failed" : "no command");
        return;
    }
    j->remote = pid;
    j->remote_act = act;
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
        jobreport_result(a, act, ok, "done before");
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
        jobreport_result(a, act, 0, err);
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
    else if (strcmp(kind, "batch") == 0)
        do_batch(a, j, act, spec);
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
    } else if (jobstart_launch(a, j, j->act_spec, err, sizeof(err)) < 0) {
        jobreport_state(a, j, "FAILED", err, -1);
        finish(a, j, 0, err);
        j->finished = 1;
    } else {
        snprintf(d, sizeof(d), "checkpointed at step %ld, restarted with %d ranks", step, j->world);
        finish(a, j, 1, d);
    }
}

/* A waited-for process's status as one code: its exit status, or 128 + the signal that
 * killed it (as a shell says). */
static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void on_exit_status(struct agent *a, struct wjob *j, int status)
{
    for (int i = 0; i < 50 && jobchan_connected(j->chan); i++)
        jobchan_run(j->chan, 10);
    jobreport_take_metrics(a, j);
    jobreport_flush_metrics(a, j);
    int code = exit_code(status);
    int ckpt = jobchan_state(j->chan) == JOBCHAN_CHECKPOINTED;
    char d[128];
    mpirun_reaped(j);
    if (j->stale) {
        log_info("job %lld: its stale mpirun is gone (status %d)", j->id, code);
        j->stale = 0;
        j->finished = 1;
        return;
    }
    jobreport_ship_log(a, j);
    log_info("job %lld: mpirun exited with %d%s", j->id, code, ckpt ? " after a checkpoint" : "");
    if (strcmp(j->kind, "cancel") == 0) {
        jobreport_state(a, j, "CANCELLED", "stopped by its worker", code);
        finish(a, j, 1, "cancelled");
        j->finished = 1;
    } else if (ckpt && (!strcmp(j->kind, "resize") || !strcmp(j->kind, "migrate"))) {
        after_checkpoint(a, j);
    } else if (code == 0 && !ckpt) {
        /* A job that ends by itself while it was to be resized or moved is RESIZING or
         * MIGRATING on the server, from where only RUNNING leads to COMPLETED. */
        if (!j->posted_running || !strcmp(j->kind, "resize") || !strcmp(j->kind, "migrate"))
            jobreport_state(a, j, "RUNNING", "ranks started", -1);
        jobreport_state(a, j, "COMPLETED", "all ranks exited 0", 0);
        finish(a, j, 0, "the job ended first");
        j->finished = 1;
    } else {
        snprintf(d, sizeof(d), "%s",
                 ckpt ? "stopped at a checkpoint nobody asked for" : "the job's ranks failed");
        jobreport_state(a, j, "FAILED", d, code);
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
        jobreport_state(a, j, "SUSPENDED", "suspended in place", -1);
    if (s != j->seen && s == JOBCHAN_RUNNING &&
        (j->seen == JOBCHAN_RESUMING || j->seen == JOBCHAN_SUSPENDED))
        jobreport_state(a, j, "RUNNING", "resumed", -1);
    j->seen = s;
    if (s == JOBCHAN_SUSPENDED && !strcmp(j->kind, "suspend"))
        finish(a, j, 1, "suspended");
    if (s == JOBCHAN_RUNNING && !strcmp(j->kind, "resume"))
        finish(a, j, 1, "running");
    long step, m = jobchan_batched(j->chan, &step);
    if (j->act && !strcmp(j->kind, "batch") && m == j->batch_want &&
        (m != j->batched || step != j->batched_step)) {
        char d[96];
        snprintf(d, sizeof(d), "batch %ld from step %ld", m, step + 1);
        log_info("job %lld: runs %s", j->id, d);
        finish(a, j, 1, d);
    }
}

static void tick_job(struct agent *a, struct wjob *j, double now)
{
    int status;
    jobreport_take_metrics(a, j);
    follow_channel(a, j);
    if (j->pid && waitpid(j->pid, &status, WNOHANG) == j->pid)
        on_exit_status(a, j, status);
    if (j->remote && waitpid(j->remote, &status, WNOHANG) == j->remote) {
        int code = exit_code(status);
        log_info("job %lld: its remote daemon exited with %d", j->id, code);
        /* An error, not the end of mpirun (which a daemon takes with 0): the launch failed
         * here, and mpirun would wait for this daemon for good. The server checks that the
         * exec is of the job's latest launch and nothing else is in flight. */
        if (code != 0 && !j->stale && !atomic_load(&a->stopping))
            jobreport_launch_failed(a, j, j->remote_act, code);
        j->remote = 0;
        j->finished = !j->pid;
        session_gone(j);
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
        jobreport_ship_log(a, j);
}

void wjob_tick(struct agent *a)
{
    double now = agent_now();
    for (struct wjob **pp = &a->jobs; *pp;) {
        struct wjob *j = *pp;
        tick_job(a, j, now);
        if (j->finished && !j->pid && !j->act && !j->remote) {
            jobreport_ship_log(a, j);
            jobreport_flush_metrics(a, j);
            *pp = j->next;
            job_free(j);
        } else {
            pp = &j->next;
        }
    }
    jobreport_tick(a);
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
            mpirun_reaped(j);
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
            mpirun_reaped(j);
        }
    }
    while (a->jobs) {
        struct wjob *j = a->jobs;
        a->jobs = j->next;
        job_free(j);
    }
}
