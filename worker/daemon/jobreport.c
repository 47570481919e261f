/* jobreport: what the server hears of one job of this worker, queued in the agent's outbox:
 * its state transitions, action results, minibatch metrics in batches, and its log. */
#include "jobreport.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "jobchan.h"
#include "log.h"
#include "outbox.h"
#include "wjob_int.h"

#define METRICS_BATCH 500
#define METRICS_EVERY_S 0.5
#define LOG_CHUNK (256 * 1024)

void jobreport_state(struct agent *a, struct wjob *j, const char *state, const char *detail,
                     int exit_code)
{
    char path[96];
    jobreport_flush_metrics(a, j); /* the reports before the transition arrive before it */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", j->id);
    json_t *b = json_pack("{s:s, s:s}", "state", state, "detail", detail);
    if (exit_code >= 0)
        json_object_set_new(b, "exit_code", json_integer(exit_code));
    outbox_push_json(a->out, "POST", path, b, 0);
    log_info("job %lld: %s (%s)", j->id, state, detail);
}

void jobreport_launch_failed(struct agent *a, struct wjob *j, long long act, int code)
{
    char path[96], detail[200];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", j->id);
    snprintf(detail, sizeof(detail),
             "the MPI daemon for its mpirun on node %s exited with %d (its output is in the"
             " job's log)",
             a->name, code);
    outbox_push_json(a->out, "POST", path,
                     json_pack("{s:s, s:s, s:I}", "state", "PENDING", "detail", detail,
                               "exec_action", (json_int_t)act),
                     0);
    log_warn("job %lld: launch failed here: %s", j->id, detail);
}

void jobreport_result(struct agent *a, long long act, int ok, const char *detail)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", act);
    outbox_push_json(a->out, "POST", path,
                     json_pack("{s:s, s:s}", "outcome", ok ? "ok" : "failed", "detail", detail), 0);
}

static void iso_time(double ago, char *buf, size_t len);

/* The job's last checkpoint when the server has not heard of it ({"step", "at"}, new), else
 * NULL. */
static json_t *new_checkpoint(struct wjob *j)
{
    long step;
    double at;
    char when[40];
    if (!jobchan_last_checkpoint(j->chan, &step, &at) || at == j->ckpt_sent_at)
        return NULL;
    iso_time(agent_now() - at, when, sizeof(when));
    j->ckpt_sent_at = at;
    return json_pack("{s:I, s:s}", "step", (json_int_t)step, "at", when);
}

/* Most job entries and reports in one node's post (the server's bounds, reports.h). */
#define NODE_JOBS_MAX 64
#define NODE_ITEMS_MAX 4000

/* The job's post ({"items", and what the channel says}), or NULL when it has nothing new;
 * starts the job's next batch. */
static json_t *job_post(struct wjob *j)
{
    if (!j->metrics)
        return NULL;
    json_t *ckpt = new_checkpoint(j);
    if (json_array_size(j->metrics) == 0 && !ckpt)
        return NULL;
    json_t *body = json_pack("{s:o}", "items", j->metrics);
    long total = jobchan_total_steps(j->chan);
    if (body && total > 0)
        json_object_set_new(body, "total_steps", json_integer(total));
    long fits = jobchan_fits(j->chan);
    if (body && fits > 0)
        json_object_set_new(body, "max_local_batch", json_integer(fits));
    double sqr, var;
    if (body && jobchan_grad(j->chan, &sqr, &var))
        json_object_set_new(body, "grad", json_pack("{s:f, s:f}", "sqr", sqr, "var", var));
    if (body && ckpt)
        json_object_set_new(body, "checkpoint", ckpt);
    else
        json_decref(ckpt);
    j->metrics = json_array();
    return body;
}

/* Queues the node's post of the jobs' metrics gathered so far, if any. */
static void push_node_metrics(struct agent *a)
{
    if (!a->node_metrics)
        return;
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/metrics", (long long)atomic_load(&a->node_id));
    outbox_push_json(a->out, "POST", path, json_pack("{s:o}", "jobs", a->node_metrics), 1);
    a->node_metrics = NULL;
    a->node_items = 0;
}

/* Whether the node's post being gathered has an entry for job id (the server takes one entry
 * a job: a second one goes in the next post). */
static int staged(const json_t *posts, long long id)
{
    for (size_t i = 0; i < json_array_size(posts); i++)
        if (json_integer_value(json_object_get(json_array_get(posts, i), "job_id")) == id)
            return 1;
    return 0;
}

/* Adds job j's post to the node's (one request for all of a node's jobs, not one each: the
 * server's cost is mostly per request), or, before the node is registered, queues it as the
 * job's own. */
static void stage_metrics(struct agent *a, struct wjob *j)
{
    json_t *body = job_post(j);
    if (!body)
        return;
    long long node = atomic_load(&a->node_id);
    int n = (int)json_array_size(json_object_get(body, "items"));
    if (node <= 0) {
        char path[96];
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", j->id);
        outbox_push_json(a->out, "POST", path, body, 1);
        return;
    }
    if (a->node_metrics && (json_array_size(a->node_metrics) >= NODE_JOBS_MAX ||
                            a->node_items + n > NODE_ITEMS_MAX ||
                            staged(a->node_metrics, j->id)))
        push_node_metrics(a);
    if (!a->node_metrics && !(a->node_metrics = json_array())) {
        json_decref(body);
        return;
    }
    json_object_set_new(body, "job_id", json_integer(j->id));
    json_array_append_new(a->node_metrics, body);
    a->node_items += n;
}

void jobreport_flush_metrics(struct agent *a, struct wjob *j)
{
    stage_metrics(a, j);
    push_node_metrics(a);
}

void jobreport_tick(struct agent *a)
{
    double now = agent_now();
    if (now - a->node_metrics_at < METRICS_EVERY_S)
        return;
    for (struct wjob *j = a->jobs; j; j = j->next)
        if (!j->stale)
            stage_metrics(a, j);
    push_node_metrics(a);
    a->node_metrics_at = now;
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

void jobreport_take_metrics(struct agent *a, struct wjob *j)
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
            jobreport_state(a, j, "RUNNING", "ranks report", -1);
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
            jobreport_flush_metrics(a, j);
    }
}

void jobreport_ship_log(struct agent *a, struct wjob *j)
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
