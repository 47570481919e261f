/* ringctl's --wait: after suspend, resume, resize or migrate, polls the job and its events
 * until the request is applied (exit 0) or cannot be any more: the job ended, another request
 * replaced it, or --timeout passed (exit 1). Each new event is printed as it comes. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job_state.h"
#include "ringctl.h"
#include "timefmt.h"

#define POLL_S 0.25

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* The node of the job's first allocated GPU, or 0. */
static long long first_node(json_t *job)
{
    return json_integer_value(
        json_object_get(json_array_get(json_object_get(job, "allocation"), 0), "node"));
}

/* GETs the job's events (new, into *out) and its job object (new, into *job). */
static int fetch(struct ringctl *ctl, long long id, json_t **job, json_t **events)
{
    char path[96];
    *events = NULL;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    int rc = ringctl_call(ctl, "GET", path, NULL, NULL, job);
    if (rc != RINGCTL_OK)
        return rc;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/events", id);
    rc = ringctl_call(ctl, "GET", path, NULL, NULL, events);
    if (rc != RINGCTL_OK) {
        json_decref(*job);
        *job = NULL;
    }
    return rc;
}

int ringctl_wait_prepare(struct ringctl *ctl, struct ringctl_wait *w)
{
    json_t *job, *events;
    int rc = fetch(ctl, w->job, &job, &events);
    if (rc != RINGCTL_OK)
        return rc;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(events, "items"), i, e)
    {
        json_int_t id = json_integer_value(json_object_get(e, "id"));
        if (id > w->after_event)
            w->after_event = id;
    }
    w->from_node = first_node(job);
    json_decref(job);
    json_decref(events);
    return RINGCTL_OK;
}

/* Prints the events newer than w->after_event (text only) and moves it past them; notes a
 * completed migration (MIGRATING -> RUNNING). */
static void new_events(struct ringctl *ctl, struct ringctl_wait *w, json_t *events)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(events, "items"), i, e)
    {
        json_int_t id = json_integer_value(json_object_get(e, "id"));
        if (id <= w->after_event)
            continue;
        w->after_event = id;
        const char *from = str(e, "from"), *to = str(e, "to"), *detail = str(e, "detail");
        if (from && to && !strcmp(from, "MIGRATING") && !strcmp(to, "RUNNING"))
            w->moved = 1;
        if (ctl->json)
            continue;
        char at[32] = "?", move[64];
        time_t t;
        if (timefmt_parse(str(e, "at"), &t) == 0)
            strftime(at, sizeof(at), "%H:%M:%S", localtime(&t));
        if (from && to && strcmp(from, to))
            snprintf(move, sizeof(move), "%s -> %s", from, to);
        else
            snprintf(move, sizeof(move), "%s", to ? to : "?");
        while (detail && *detail == ' ')
            detail++;
        printf("%s job %lld: %s (%s by %s)%s%s\n", at, w->job, move,
               str(e, "event") ? str(e, "event") : "?", str(e, "actor") ? str(e, "actor") : "?",
               detail && *detail ? ": " : "", detail && *detail ? detail : "");
        fflush(stdout);
    }
}

/* Whether the job shows the request applied (1, the outcome in msg), refused (-1) or not
 * yet (0). */
static int outcome(const struct ringctl_wait *w, json_t *job, char *msg, size_t len)
{
    const char *state = str(job, "state");
    enum job_state st;
    json_int_t gpus = json_integer_value(json_object_get(job, "gpus"));
    json_int_t held = json_integer_value(json_object_get(job, "world_size"));
    int running = state && !strcmp(state, "RUNNING");
    if (!state || job_state_parse(state, &st) < 0)
        return 0;
    if (job_state_is_terminal(st)) {
        snprintf(msg, len, "job %lld ended (%s) before its %s was applied", w->job, state, w->kind);
        return -1;
    }
    switch (w->goal) {
    case RINGCTL_GOAL_SUSPENDED:
        snprintf(msg, len, "job %lld suspended", w->job);
        return st == JOB_SUSPENDED;
    case RINGCTL_GOAL_RUNNING:
        snprintf(msg, len, "job %lld running again", w->job);
        return running;
    case RINGCTL_GOAL_SIZE:
        if (gpus != w->gpus) {
            snprintf(msg, len,
                     "job %lld: another request replaced this one (%" JSON_INTEGER_FORMAT " GPUs)",
                     w->job, gpus);
            return -1;
        }
        if (st == JOB_PENDING)
            snprintf(msg, len, "job %lld waits in the queue for %lld GPU%s", w->job, w->gpus,
                     w->gpus == 1 ? "" : "s");
        else
            snprintf(msg, len, "job %lld runs on %lld GPU%s", w->job, w->gpus,
                     w->gpus == 1 ? "" : "s");
        return st == JOB_PENDING || (running && held == w->gpus);
    case RINGCTL_GOAL_MOVED:
        snprintf(msg, len, "job %lld runs on node %lld", w->job, first_node(job));
        return running && (w->moved || (first_node(job) && first_node(job) != w->from_node));
    }
    return 0;
}

int ringctl_wait_run(struct ringctl *ctl, struct ringctl_wait *w)
{
    double start = ringctl_mono_s();
    char msg[256];
    for (;;) {
        json_t *job, *events;
        int rc = fetch(ctl, w->job, &job, &events);
        if (rc != RINGCTL_OK)
            return rc;
        new_events(ctl, w, events);
        int done = outcome(w, job, msg, sizeof(msg));
        if (done && ctl->json)
            ringctl_print_json(job);
        json_decref(job);
        json_decref(events);
        if (done) {
            if (done < 0)
                fprintf(stderr, "ringctl: %s\n", msg);
            else if (!ctl->json)
                printf("%s\n", msg);
            return done > 0 ? RINGCTL_OK : RINGCTL_API_ERROR;
        }
        double left = w->timeout_s > 0 ? w->timeout_s - (ringctl_mono_s() - start) : POLL_S;
        if (left <= 0) {
            fprintf(stderr, "ringctl: job %lld: %s not applied after %g s (the request stands)\n",
                    w->job, w->kind, w->timeout_s);
            return RINGCTL_API_ERROR;
        }
        ringctl_sleep(left < POLL_S ? left : POLL_S);
    }
}
