/* ringctl's job arrays on the command line: "ARRAY_ID_INDEX" read back to a job, and the
 * cancel of a whole array (one request per job still running or waiting). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "ringctl.h"

/* Every job of array (all pages of GET /api/v1/jobs?array=ID) into *items (new). */
static int array_jobs(struct ringctl *ctl, long long array, json_t **items)
{
    char path[160], cursor[32] = "";
    int rc;
    *items = json_array();
    do {
        snprintf(path, sizeof(path), "/api/v1/jobs?array=%lld&limit=1000%s%s", array,
                 cursor[0] ? "&after=" : "", cursor);
        json_t *out;
        rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
        if (rc != RINGCTL_OK)
            break;
        json_array_extend(*items, json_object_get(out, "items"));
        const char *next = json_string_value(json_object_get(out, "next"));
        snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
        json_decref(out);
    } while (cursor[0]);
    return rc;
}

/* "A_I": the id of the job of array A with index I. */
static int element_id(struct ringctl *ctl, const char *arg, long long *id)
{
    long long array, index;
    char a[32];
    size_t n = strcspn(arg, "_");
    snprintf(a, sizeof(a), "%.*s", (int)(n < sizeof(a) ? n : sizeof(a) - 1), arg);
    if (ringctl_parse_int("ARRAY_ID", a, 1, LLONG_MAX, &array) < 0 ||
        ringctl_parse_int("INDEX", arg + n + 1, 0, INT_MAX, &index) < 0)
        return RINGCTL_USAGE;
    json_t *items, *it;
    size_t i;
    int rc = array_jobs(ctl, array, &items);
    *id = 0;
    json_array_foreach(items, i, it)
    {
        if (json_integer_value(json_object_get(it, "array_index")) == index)
            *id = json_integer_value(json_object_get(it, "id"));
    }
    json_decref(items);
    if (rc == RINGCTL_OK && !*id) {
        fprintf(stderr, "ringctl: no job %s (array %lld has no index %lld)\n", arg, array, index);
        rc = RINGCTL_API_ERROR;
    }
    return rc;
}

int ringctl_array_resolve(struct ringctl *ctl, const char *arg, long long *id)
{
    if (strchr(arg, '_'))
        return element_id(ctl, arg, id);
    char path[96];
    if (ringctl_parse_int("JOB_ID", arg, 1, LLONG_MAX, id) < 0)
        return RINGCTL_USAGE;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", *id);
    json_t *out;
    int rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
    if (rc == RINGCTL_OK && json_integer_value(json_object_get(out, "array_id")) == *id)
        rc = RINGCTL_ARRAY_WHOLE;
    json_decref(out);
    return rc;
}

static int ended(const json_t *job)
{
    enum job_state st;
    const char *s = json_string_value(json_object_get(job, "state"));
    return s && job_state_parse(s, &st) == 0 && job_state_is_terminal(st);
}

int ringctl_array_cancel(struct ringctl *ctl, long long array)
{
    json_t *items, *it, *done = json_array();
    size_t i, asked = 0, left = 0;
    int rc = array_jobs(ctl, array, &items), first = RINGCTL_OK;
    json_array_foreach(items, i, it)
    {
        if (rc != RINGCTL_OK || ended(it))
            continue;
        char path[96];
        json_t *out;
        snprintf(path, sizeof(path), "/api/v1/jobs/%" JSON_INTEGER_FORMAT "/cancel",
                 json_integer_value(json_object_get(it, "id")));
        int one = ringctl_call(ctl, "POST", path, NULL, NULL, &out);
        if (one != RINGCTL_OK && first == RINGCTL_OK)
            first = one;
        asked += one == RINGCTL_OK;
        left += one == RINGCTL_OK && !ended(out);
        if (out)
            json_array_append_new(done, out);
    }
    if (rc == RINGCTL_OK && ctl->json)
        ringctl_print_json(done);
    else if (rc == RINGCTL_OK)
        printf("array %lld: %zu jobs, %zu cancelled (%zu of them still stopping)\n", array,
               json_array_size(items), asked, left);
    json_decref(done);
    json_decref(items);
    return rc != RINGCTL_OK ? rc : first;
}
