#include "wtest.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

long long wt_submit_mlp(long steps, const char *sizes, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"500\"],%s,\"env\":{\"ASAN_OPTIONS\":"
             "\"detect_leaks=0:protect_shadow_gap=0\"}}",
             TRAIN_MLP_PATH, steps, seed, sizes);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

const char *wt_job_state(long long job)
{
    static char state[32];
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", job);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(j, "state")));
    json_decref(j);
    return state;
}

int wt_await_state(long long job, const char *want, double timeout_s)
{
    double end = hx_now() + timeout_s;
    while (strcmp(wt_job_state(job), want) != 0) {
        if (hx_now() > end)
            return -1;
        usleep(100000);
    }
    return 0;
}
