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
};

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

int ringctl_cmd_submit(struct ringctl *ctl, int argc, char **argv)
{
    struct submit_opts s = {json_object(), json_object(), NULL};
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
