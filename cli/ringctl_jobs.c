/* ringctl's job commands: submit, cancel (list: ringctl_list.c; show and events:
 * ringctl_show.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringctl.h"

struct submit_opts {
    json_t *job;
    json_t *env;
    const char *idem;
    long first, last; /* --array FIRST-LAST (or N); last < first: not an array */
};

#define ARRAY_MAX 1000 /* elements of one array: one batch request */

/* --array FIRST-LAST or --array N (0..N-1 would be "0-N-1"; N alone means just N). */
static int array_flag(struct submit_opts *s, const char *v)
{
    char *end;
    errno = 0;
    long a = strtol(v, &end, 10), b = a;
    if (*end == '-')
        b = strtol(end + 1, &end, 10);
    if (errno || *end || a < 0 || b < a || b - a + 1 > ARRAY_MAX) {
        fprintf(stderr, "ringctl: --array: expected FIRST-LAST (at most %d elements), got '%s'\n",
                ARRAY_MAX, v);
        return -1;
    }
    s->first = a;
    s->last = b;
    return 0;
}

static int submit_flag(struct submit_opts *s, const char *flag, const char *v)
{
    static const struct {
        const char *flag, *field;
        long long lo, hi;
    } ints[] = {{"--gpus", "gpus", 1, 1024},          {"--min-gpus", "min_gpus", 1, 1024},
                {"--max-gpus", "max_gpus", 1, 1024},  {"--priority", "priority", -1000, 1000},
                {"--batch-per-gpu", "batch_per_gpu", 1, 1 << 20}};
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

/* A job array: one job per index, named NAME[i] with RINGJOB_ARRAY_INDEX=i in its
 * environment, all in one batch (POST /api/v1/jobs:batch). Prints the ids, a line each. */
static int submit_array(struct ringctl *ctl, struct submit_opts *s, const char *header)
{
    json_t *jobs = json_array();
    const char *name = json_string_value(json_object_get(s->job, "name"));
    for (long i = s->first; i <= s->last; i++) {
        json_t *one = json_deep_copy(s->job);
        json_t *env = json_deep_copy(s->env);
        char idx[24], nm[160];
        snprintf(idx, sizeof(idx), "%ld", i);
        snprintf(nm, sizeof(nm), "%.120s[%ld]", name ? name : "job", i);
        json_object_set_new(env, "RINGJOB_ARRAY_INDEX", json_string(idx));
        json_object_set_new(one, "env", env);
        json_object_set_new(one, "name", json_string(nm));
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
    struct submit_opts s = {json_object(), json_object(), NULL, 0, -1};
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
    if (s.last >= s.first) {
        rc = submit_array(ctl, &s, s.idem ? header : NULL);
        goto done;
    }
    json_t *out;
    rc = ringctl_call(ctl, "POST", "/api/v1/jobs", s.job, s.idem ? header : NULL, &out);
    if (rc == RINGCTL_OK) {
        if (ctl->json)
            ringctl_print_json(out);
        else
            printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(out, "id")));
    }
    json_decref(out);
done:
    json_decref(s.job);
    json_decref(s.env);
    return rc;
}

int ringctl_cmd_cancel(struct ringctl *ctl, int argc, char **argv)
{
    char path[128];
    if (argc != 1) {
        fprintf(stderr, "usage: ringctl cancel JOB_ID\n");
        return RINGCTL_USAGE;
    }
    if (ringctl_job_path(argv[0], "/cancel", path, sizeof(path)) < 0)
        return RINGCTL_USAGE;
    json_t *out;
    int rc = ringctl_call(ctl, "POST", path, NULL, NULL, &out);
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
