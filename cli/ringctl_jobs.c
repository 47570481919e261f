/* ringctl's job commands: submit, cancel (list: ringctl_list.c; show and events:
 * ringctl_show.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "afterspec.h"
#include "arrayspec.h"
#include "ringctl.h"
#include "timefmt.h"

struct submit_opts {
    json_t *job;
    json_t *env;
    const char *idem;
    long *index;  /* --array: its indexes (ARRAYSPEC_MAX_COUNT), NULL: not an array */
    size_t count; /* how many */
};

/* --array 0-99, 1,3,5-7 or 0-15:4 (arrayspec.h). */
static int array_flag(struct submit_opts *s, const char *v)
{
    char err[256];
    free(s->index);
    s->index = malloc(ARRAYSPEC_MAX_COUNT * sizeof(*s->index));
    if (s->index && arrayspec_parse(v, s->index, ARRAYSPEC_MAX_COUNT, &s->count, err,
                                    sizeof(err)) == 0)
        return 0;
    fprintf(stderr, "ringctl: --array: %s\n", s->index ? err : "out of memory");
    return -1;
}

/* --after 12[:ok|:any|:notok], array:41[:WHEN], comma-separated or repeated (afterspec.h):
 * appended to the job's "after". */
static int after_flag(struct submit_opts *s, const char *v)
{
    struct afterspec a[AFTERSPEC_MAX];
    json_t *after = json_object_get(s->job, "after");
    size_t n = 0, had = json_array_size(after);
    char err[160];
    if (afterspec_parse(v, a, AFTERSPEC_MAX - had, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "ringctl: --after: %s\n", err);
        return -1;
    }
    if (!after) {
        after = json_array();
        json_object_set_new(s->job, "after", after);
    }
    for (size_t k = 0; k < n; k++)
        json_array_append_new(after, json_pack("{s:I, s:s}", a[k].array ? "array" : "job",
                                               (json_int_t)a[k].id, "when", a[k].when));
    return 0;
}

/* --adaptive-batch MAX or MIN:MAX: {"max": MAX} (and "min": MIN, which the server checks
 * equals --batch). */
static int adaptive_flag(struct submit_opts *s, const char *v)
{
    long long lo = 0, hi;
    const char *colon = strchr(v, ':');
    char min[32];
    if (colon) {
        snprintf(min, sizeof(min), "%.*s", (int)(colon - v < 31 ? colon - v : 31), v);
        if (ringctl_parse_int("--adaptive-batch", min, 1, 1 << 24, &lo) < 0)
            return -1;
        v = colon + 1;
    }
    if (ringctl_parse_int("--adaptive-batch", v, 1, 1 << 24, &hi) < 0)
        return -1;
    json_t *a = json_pack("{s:I}", "max", (json_int_t)hi);
    if (colon)
        json_object_set_new(a, "min", json_integer(lo));
    return json_object_set_new(s->job, "adaptive_batch", a);
}

/* --switches N[@T], as Slurm's --switches=N@T: {"topology": {"max_switches": N, "max_wait_s":
 * T}} (T seconds; without it the server's default wait). */
static int switches_flag(struct submit_opts *s, const char *v)
{
    long long n;
    double t = -1;
    const char *at = strchr(v, '@');
    char count[32];
    snprintf(count, sizeof(count), "%.*s", (int)(at ? (at - v < 31 ? at - v : 31) : 31), v);
    if (ringctl_parse_int("--switches", count, 1, 1024, &n) < 0 ||
        (at && ringctl_parse_seconds("--switches", at + 1, &t) < 0))
        return -1;
    json_t *topo = json_pack("{s:I}", "max_switches", (json_int_t)n);
    if (t >= 0)
        json_object_set_new(topo, "max_wait_s", json_real(t));
    return json_object_set_new(s->job, "topology", topo);
}

/* --deadline WHEN (timefmt_parse_user: local time unless it says its zone, or +PERIOD):
 * {"deadline": the time in UTC, RFC 3339}. */
static int deadline_flag(struct submit_opts *s, const char *v)
{
    time_t t;
    struct tm tm;
    char at[32];
    if (timefmt_parse_user(v, time(NULL), &t) < 0 || !gmtime_r(&t, &tm)) {
        fprintf(stderr,
                "ringctl: --deadline: expected a time like 2026-12-05T18:00 (local), "
                "2026-12-05T18:00Z, 2026-12-05 or +6h, got '%s'\n",
                v);
        return -1;
    }
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_object_set_new(s->job, "deadline", json_string(at));
}

static int submit_flag(struct submit_opts *s, const char *flag, const char *v)
{
    static const struct {
        const char *flag, *field;
        long long lo, hi;
    } ints[] = {{"--gpus", "gpus", 1, 1024},          {"--min-gpus", "min_gpus", 1, 1024},
                {"--max-gpus", "max_gpus", 1, 1024},  {"--priority", "priority", -1000, 1000},
                {"--batch-per-gpu", "batch_per_gpu", 1, 1 << 20},
                {"--batch", "batch", 1, 1 << 24},
                {"--max-local-batch", "max_local_batch", 1, 65536}};
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
        if (strcmp(flag, ints[k].flag))
            continue;
        long long x;
        if (ringctl_parse_int(flag, v, ints[k].lo, ints[k].hi, &x) < 0)
            return -1;
        json_object_set_new(s->job, ints[k].field, json_integer(x));
        return 0;
    }
    if (!strcmp(flag, "--name"))
        return json_object_set_new(s->job, "name", json_string(v));
    if (!strcmp(flag, "--array"))
        return array_flag(s, v);
    if (!strcmp(flag, "--after"))
        return after_flag(s, v);
    if (!strcmp(flag, "--adaptive-batch"))
        return adaptive_flag(s, v);
    if (!strcmp(flag, "--switches"))
        return switches_flag(s, v);
    if (!strcmp(flag, "--deadline"))
        return deadline_flag(s, v);
    if (!strcmp(flag, "--lr-scaling")) /* the server checks the name (sqrt, linear, none) */
        return json_object_set_new(s->job, "lr_scaling", json_string(v));
    if (!strcmp(flag, "--idempotency-key")) {
        s->idem = v;
        return 0;
    }
    if (!strcmp(flag, "--env")) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v) {
            fprintf(stderr, "ringctl: --env: expected KEY=VALUE, got '%s'\n", v);
            return -1;
        }
        char *key = strndup(v, (size_t)(eq - v));
        json_object_set_new(s->env, key, json_string(eq + 1));
        free(key);
        return 0;
    }
    fprintf(stderr, "ringctl: submit: unknown option %s\n", flag);
    return -1;
}

/* A job array: one job per index i, named NAME[i] with "array_index": i (the server puts
 * RINGJOB_ARRAY_INDEX=i in its environment), all in one batch (POST /api/v1/jobs:batch).
 * Prints the ids, a line each; the first is the array's id. */
static int submit_array(struct ringctl *ctl, struct submit_opts *s, const char *header)
{
    json_t *jobs = json_array();
    const char *name = json_string_value(json_object_get(s->job, "name"));
    for (size_t k = 0; k < s->count; k++) {
        json_t *one = json_copy(s->job);
        char nm[160];
        snprintf(nm, sizeof(nm), "%.120s[%ld]", name ? name : "job", s->index[k]);
        json_object_set_new(one, "name", json_string(nm));
        json_object_set_new(one, "array_index", json_integer(s->index[k]));
        json_array_append_new(jobs, one);
    }
    json_t *body = json_pack("{s:o}", "jobs", jobs), *out;
    int rc = ringctl_call(ctl, "POST", "/api/v1/jobs:batch", body, header, &out);
    if (rc == RINGCTL_OK && ctl->json) {
        ringctl_print_json(out);
    } else if (rc == RINGCTL_OK) {
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(out, "items"), k, it)
            printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(it, "id")));
    }
    json_decref(out);
    json_decref(body);
    return rc;
}

int ringctl_cmd_submit(struct ringctl *ctl, int argc, char **argv)
{
    struct submit_opts s = {json_object(), json_object(), NULL, NULL, 0};
    int i = 0, rc = RINGCTL_USAGE;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--elastic")) {
            json_object_set_new(s.job, "elastic", json_true());
            continue;
        }
        if (i + 1 >= argc || submit_flag(&s, argv[i], argv[i + 1]) < 0)
            goto done;
        i++;
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "ringctl: submit: give the command after --\n");
        goto done;
    }
    json_t *cmd = json_array();
    for (i++; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(s.job, "command", cmd);
    if (!json_object_get(s.job, "name"))
        json_object_set_new(s.job, "name", json_string(argv[argc - json_array_size(cmd)]));
    if (json_object_size(s.env))
        json_object_set(s.job, "env", s.env);
    char header[300];
    if (s.idem)
        snprintf(header, sizeof(header), "Idempotency-Key: %s", s.idem);
    if (s.index) {
        rc = submit_array(ctl, &s, s.idem ? header : NULL);
        goto done;
    }
    json_t *out;
    rc = ringctl_call(ctl, "POST", "/api/v1/jobs", s.job, s.idem ? header : NULL, &out);
    if (rc == RINGCTL_OK) {
        json_int_t id = json_integer_value(json_object_get(out, "id"));
        const char *verdict =
            json_string_value(json_object_get(json_object_get(out, "deadline_forecast"), "text"));
        if (ctl->json)
            ringctl_print_json(out);
        else
            printf("%" JSON_INTEGER_FORMAT "\n", id);
        if (verdict && !ctl->json) /* on stderr: scripts read the id alone on stdout */
            fprintf(stderr, "job %" JSON_INTEGER_FORMAT ": %s\n", id, verdict);
    }
    json_decref(out);
done:
    json_decref(s.job);
    json_decref(s.env);
    free(s.index);
    return rc;
}

int ringctl_cmd_cancel(struct ringctl *ctl, int argc, char **argv)
{
    char path[128];
    long long id;
    if (argc != 1) {
        return ringctl_usage("cancel JOB_ID|ARRAY_ID|ARRAY_ID_INDEX");
    }
    int rc = ringctl_array_resolve(ctl, argv[0], &id);
    if (rc == RINGCTL_ARRAY_WHOLE)
        return ringctl_array_cancel(ctl, id);
    if (rc != RINGCTL_OK)
        return rc;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/cancel", id);
    json_t *out;
    rc = ringctl_call(ctl, "POST", path, NULL, NULL, &out);
    const char *state = json_string_value(json_object_get(out, "state"));
    if (rc == RINGCTL_OK && ctl->json)
        ringctl_print_json(out);
    else if (rc == RINGCTL_OK && state && strcmp(state, "CANCELLED"))
        printf("job %s: cancel requested, state %s\n", argv[0], state);
    else if (rc == RINGCTL_OK)
        printf("job %s cancelled\n", argv[0]);
    json_decref(out);
    return rc;
}
