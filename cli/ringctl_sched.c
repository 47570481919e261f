/* ringctl's scheduler commands: watch, policy (suspend, resume, resize, migrate:
 * ringctl_act.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_state.h"
#include "ringctl.h"
#include "table.h"

/* ---- watch ---- */

struct watch {
    long long job; /* 0: every job */
    double timeout_s, interval_s;
    json_t *seen; /* job id -> the last line printed */
};

static int watch_args(struct watch *w, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (ringctl_parse_seconds("--timeout", argv[++i], &w->timeout_s) < 0)
                return -1;
        } else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            if (ringctl_parse_seconds("--interval", argv[++i], &w->interval_s) < 0)
                return -1;
        } else if (argv[i][0] != '-' && !w->job) {
            if (ringctl_parse_int("JOB_ID", argv[i], 1, 1LL << 53, &w->job) < 0)
                return -1;
        } else {
            ringctl_usage("watch [JOB_ID] [--timeout S] [--interval S]");
            return -1;
        }
    }
    if (w->interval_s < 0.05)
        w->interval_s = 0.05;
    return 0;
}

/* Prints the job when its state, size or reason changed. Returns 1 when it is terminal. */
static int watch_job(struct ringctl *ctl, struct watch *w, json_t *job)
{
    char key[32], line[512];
    const char *state = json_string_value(json_object_get(job, "state"));
    const char *reason = json_string_value(json_object_get(job, "pending_reason"));
    snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(job,
                                                                                     "id")));
    snprintf(line, sizeof(line), "job %s %s: %s, world size %" JSON_INTEGER_FORMAT "%s%s", key,
             json_string_value(json_object_get(job, "name")), state ? state : "?",
             json_integer_value(json_object_get(job, "world_size")), reason ? ", " : "",
             reason ? reason : "");
    const char *before = json_string_value(json_object_get(w->seen, key));
    if (!before || strcmp(before, line)) {
        json_object_set_new(w->seen, key, json_string(line));
        if (ctl->json) {
            char *s = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS);
            printf("%s\n", s ? s : "{}");
            free(s);
        } else {
            time_t now = time(NULL);
            char at[32];
            strftime(at, sizeof(at), "%H:%M:%S", localtime(&now));
            printf("%s %s\n", at, line);
        }
        fflush(stdout);
    }
    enum job_state st;
    return state && job_state_parse(state, &st) == 0 && job_state_is_terminal(st);
}

/* One poll. Returns RINGCTL_OK, an error code, or -1 when the watched job ended. */
static int watch_poll(struct ringctl *ctl, struct watch *w)
{
    char path[128];
    if (w->job)
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld", w->job);
    else
        snprintf(path, sizeof(path), "/api/v1/jobs?limit=500");
    json_t *out;
    int rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
    if (rc != RINGCTL_OK)
        return rc;
    int ended = 0;
    if (w->job) {
        ended = watch_job(ctl, w, out);
    } else {
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(out, "items"), i, j)
            watch_job(ctl, w, j);
    }
    json_decref(out);
    return ended ? -1 : RINGCTL_OK;
}

int ringctl_cmd_watch(struct ringctl *ctl, int argc, char **argv)
{
    struct watch w = {.interval_s = 1.0};
    if (watch_args(&w, argc, argv) < 0)
        return RINGCTL_USAGE;
    w.seen = json_object();
    double start = ringctl_mono_s();
    int rc;
    while ((rc = watch_poll(ctl, &w)) == RINGCTL_OK) {
        double left = w.timeout_s > 0 ? w.timeout_s - (ringctl_mono_s() - start) : w.interval_s;
        if (left <= 0) {
            fprintf(stderr, "ringctl: watch: %.1f s passed%s\n", w.timeout_s,
                    w.job ? " before the job ended" : "");
            rc = w.job ? RINGCTL_API_ERROR : RINGCTL_OK;
            break;
        }
        ringctl_sleep(left < w.interval_s ? left : w.interval_s);
    }
    json_decref(w.seen);
    return rc < 0 ? RINGCTL_OK : rc;
}

/* ---- policy ---- */

static void print_policy(json_t *s)
{
    json_t *iv = json_object_get(s, "interval_s");
    json_t *stage = json_object_get(s, "explore_stage_s");
    printf("policy %s, interval %g s", json_string_value(json_object_get(s, "policy")),
           json_number_value(iv));
    if (json_is_number(stage))
        printf(", exploring stage %g s", json_number_value(stage));
    json_t *minrun = json_object_get(s, "min_runtime_s");
    if (json_number_value(minrun) > 0)
        printf(", no preemption within %g s of a start", json_number_value(minrun));
    printf("%s\n", json_is_true(json_object_get(s, "paused")) ? ", PAUSED" : "");
    static const char *const head[] = {"", "POLICY", "SUMMARY"};
    struct table *t = table_create(3, head);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(s, "policies"), i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *cur = json_string_value(json_object_get(s, "policy"));
        const char *row[] = {name && cur && !strcmp(name, cur) ? "*" : "", name,
                             json_string_value(json_object_get(p, "summary"))};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

/* Fills body from the arguments; returns 0 or -1 (usage printed). */
static int policy_args(json_t *body, int argc, char **argv)
{
    static const char *const usage = "policy [NAME] [--interval S] [--explore-stage S] "
                                     "[--min-runtime S] [--paused true|false]";
    static const char *const secs[][2] = {{"--interval", "interval_s"},
                                          {"--explore-stage", "explore_stage_s"},
                                          {"--min-runtime", "min_runtime_s"}};
    const size_t nsecs = sizeof(secs) / sizeof(secs[0]);
    for (int i = 0; i < argc; i++) {
        double s;
        size_t k = 0;
        while (k < nsecs && strcmp(argv[i], secs[k][0]))
            k++;
        if (k < nsecs && i + 1 < argc) {
            if (ringctl_parse_seconds(secs[k][0], argv[++i], &s) < 0)
                return -1;
            json_object_set_new(body, secs[k][1], json_real(s));
        } else if (!strcmp(argv[i], "--paused") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "true") && strcmp(v, "false")) {
                ringctl_usage(usage);
                return -1;
            }
            json_object_set_new(body, "paused", json_boolean(!strcmp(v, "true")));
        } else if (argv[i][0] != '-' && !json_object_get(body, "policy")) {
            json_object_set_new(body, "policy", json_string(argv[i]));
        } else {
            ringctl_usage(usage);
            return -1;
        }
    }
    return 0;
}

int ringctl_cmd_policy(struct ringctl *ctl, int argc, char **argv)
{
    json_t *body = json_object();
    if (policy_args(body, argc, argv) < 0) {
        json_decref(body);
        return RINGCTL_USAGE;
    }
    json_t *out;
    int rc = json_object_size(body)
                 ? ringctl_call(ctl, "PUT", "/api/v1/scheduler", body, NULL, &out)
                 : ringctl_call(ctl, "GET", "/api/v1/scheduler", NULL, NULL, &out);
    json_decref(body);
    if (rc == RINGCTL_OK)
        ctl->json ? ringctl_print_json(out) : print_policy(out);
    json_decref(out);
    return rc;
}
