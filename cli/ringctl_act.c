/* ringctl's requests to a job: suspend, resume, resize, migrate. Each answers in one line what
 * happens next (the action written and its state, or when the scheduler considers the
 * request); with --wait it then follows the job until the request is applied
 * (ringctl_wait.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringctl.h"

struct act_args {
    const char *pos[2]; /* JOB_ID and the command's second argument */
    int npos, wait;
    double timeout_s;
};

/* Reads npos_min..npos_max positional arguments, --wait and --timeout S. Returns 0, or -1
 * after printing the usage. */
static int act_args(struct act_args *a, int argc, char **argv, int npos_min, int npos_max,
                    const char *usage)
{
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--wait")) {
            a->wait = 1;
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (ringctl_parse_seconds("--timeout", argv[++i], &a->timeout_s) < 0)
                return -1;
        } else if (argv[i][0] != '-' && a->npos < npos_max) {
            a->pos[a->npos++] = argv[i];
        } else {
            a->npos = -1;
            break;
        }
    }
    if (a->npos < npos_min) {
        ringctl_usage(usage);
        return -1;
    }
    return 0;
}

/* When the scheduler will look at a request: "at its next round (every 10 s)", or that it is
 * paused; with elastic, the least time between two resizes of a job. */
static void next_round(struct ringctl *ctl, int elastic, char *buf, size_t len)
{
    json_t *s;
    snprintf(buf, len, "at its next round");
    if (ringctl_call(ctl, "GET", "/api/v1/scheduler", NULL, NULL, &s) != RINGCTL_OK)
        return;
    double iv = json_number_value(json_object_get(s, "interval_s"));
    double mri = json_number_value(json_object_get(s, "min_resize_interval_s"));
    int n = json_is_true(json_object_get(s, "paused"))
                ? snprintf(buf, len, "once it is unpaused (the scheduler is paused)")
                : snprintf(buf, len, "at its next round (every %g s)", iv);
    if (elastic && n >= 0 && (size_t)n < len && mri > 0)
        snprintf(buf + n, len - (size_t)n, "; it resizes a job at most every %g s", mri);
    json_decref(s);
}

/* The one line after a request: what was written and what happens next. */
static void say_next(struct ringctl *ctl, const struct ringctl_wait *w, json_t *out,
                     const char *target)
{
    char when[160];
    json_int_t n = json_integer_value(json_object_get(out, "id"));
    const char *state = json_string_value(json_object_get(out, "state"));
    if (w->goal == RINGCTL_GOAL_SUSPENDED || w->goal == RINGCTL_GOAL_RUNNING) {
        printf("job %lld: %s action %" JSON_INTEGER_FORMAT " %s on node %" JSON_INTEGER_FORMAT
               "; its worker applies it within seconds (follow it: ringctl watch %lld)\n",
               w->job, w->kind, n, state ? state : "?",
               json_integer_value(json_object_get(out, "node_id")), w->job);
        return;
    }
    int elastic = json_is_true(json_object_get(out, "elastic"));
    next_round(ctl, elastic && w->goal == RINGCTL_GOAL_SIZE, when, sizeof(when));
    if (w->goal == RINGCTL_GOAL_SIZE && state && !strcmp(state, "PENDING"))
        printf("job %lld now asks for %lld GPU%s; it waits in the queue and starts at that size\n",
               w->job, w->gpus, w->gpus == 1 ? "" : "s");
    else if (w->goal == RINGCTL_GOAL_SIZE)
        printf("job %lld (%s%s) asks for %lld GPU%s; the scheduler considers it %s\n", w->job,
               state ? state : "?", elastic ? ", elastic" : "", w->gpus, w->gpus == 1 ? "" : "s",
               when);
    else
        printf("job %lld (%s): migration %s requested; the scheduler moves it %s, once %s has"
               " the GPUs free\n",
               w->job, state ? state : "?", target, when,
               strcmp(target, "to another node") ? "that node" : "another node");
}

/* Sends the request (body stolen, may be NULL), answers, and waits when a->wait. */
static int request(struct ringctl *ctl, struct ringctl_wait *w, const struct act_args *a,
                   const char *suffix, json_t *body, const char *target)
{
    char path[128];
    json_t *out = NULL;
    int rc =
        ringctl_job_path(a->pos[0], suffix, path, sizeof(path)) < 0 ? RINGCTL_USAGE : RINGCTL_OK;
    w->job = rc == RINGCTL_OK ? atoll(a->pos[0]) : 0;
    w->timeout_s = a->timeout_s;
    if (rc == RINGCTL_OK && a->wait)
        rc = ringctl_wait_prepare(ctl, w);
    if (rc == RINGCTL_OK)
        rc = ringctl_call(ctl, "POST", path, body, NULL, &out);
    json_decref(body);
    if (rc == RINGCTL_OK && ctl->json && !a->wait)
        ringctl_print_json(out);
    else if (rc == RINGCTL_OK && !ctl->json)
        say_next(ctl, w, out, target);
    fflush(stdout);
    json_decref(out);
    if (rc == RINGCTL_OK && a->wait)
        rc = ringctl_wait_run(ctl, w);
    return rc;
}

#define WAIT_USAGE " [--wait [--timeout S]]"

int ringctl_cmd_suspend(struct ringctl *ctl, int argc, char **argv)
{
    struct act_args a = {0};
    struct ringctl_wait w = {.kind = "suspend", .goal = RINGCTL_GOAL_SUSPENDED};
    if (act_args(&a, argc, argv, 1, 1, "suspend JOB_ID" WAIT_USAGE) < 0)
        return RINGCTL_USAGE;
    return request(ctl, &w, &a, "/suspend", NULL, "");
}

int ringctl_cmd_resume(struct ringctl *ctl, int argc, char **argv)
{
    struct act_args a = {0};
    struct ringctl_wait w = {.kind = "resume", .goal = RINGCTL_GOAL_RUNNING};
    if (act_args(&a, argc, argv, 1, 1, "resume JOB_ID" WAIT_USAGE) < 0)
        return RINGCTL_USAGE;
    return request(ctl, &w, &a, "/resume", NULL, "");
}

int ringctl_cmd_resize(struct ringctl *ctl, int argc, char **argv)
{
    struct act_args a = {0};
    struct ringctl_wait w = {.kind = "resize", .goal = RINGCTL_GOAL_SIZE};
    if (act_args(&a, argc, argv, 2, 2, "resize JOB_ID GPUS" WAIT_USAGE) < 0 ||
        ringctl_parse_int("GPUS", a.pos[1], 1, 1024, &w.gpus) < 0)
        return RINGCTL_USAGE;
    return request(ctl, &w, &a, "/resize", json_pack("{s:I}", "gpus", (json_int_t)w.gpus), "");
}

int ringctl_cmd_migrate(struct ringctl *ctl, int argc, char **argv)
{
    struct act_args a = {0};
    struct ringctl_wait w = {.kind = "migration", .goal = RINGCTL_GOAL_MOVED};
    long long node = 0;
    char target[48] = "to another node";
    if (act_args(&a, argc, argv, 1, 2, "migrate JOB_ID [NODE_ID]" WAIT_USAGE) < 0 ||
        (a.npos == 2 && ringctl_parse_int("NODE_ID", a.pos[1], 1, 1LL << 53, &node) < 0))
        return RINGCTL_USAGE;
    if (node)
        snprintf(target, sizeof(target), "to node %lld", node);
    json_t *body = node ? json_pack("{s:I}", "node", (json_int_t)node) : NULL;
    return request(ctl, &w, &a, "/migrate", body, target);
}
