/* ringctl whatif: the jobs that completed in a period replayed under the core's policies by
 * the server (docs/whatif.md), followed until the replay ends, then a table of the policies'
 * figures beside what the jobs measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"
#include "table.h"
#include "timefmt.h"

#define WHATIF_USAGE                                                                               \
    "whatif [--since D] [--policies all|a,b,...] [--no-wait] [--timeout S]\n"                      \
    "       whatif show RUN_ID | whatif list"

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void elapsed(double s, char *buf, size_t len)
{
    timefmt_elapsed((long long)(s + 0.5), buf, len);
}

/* The run as text: what was replayed, then a row per policy. */
static void print_run(const json_t *run)
{
    const json_t *m = json_object_get(run, "measured"), *p = json_object_get(run, "progress");
    char mean[32], p99[32], queue[32], since[64];
    elapsed(num(m, "mean_jct_s"), mean, sizeof(mean));
    elapsed(num(m, "p99_jct_s"), p99, sizeof(p99));
    elapsed(num(m, "mean_queue_s"), queue, sizeof(queue));
    printf("what-if run %" JSON_INTEGER_FORMAT " (%s): %" JSON_INTEGER_FORMAT
           " jobs completed since %s on %s\n",
           json_integer_value(json_object_get(run, "id")), str(run, "state"),
           json_integer_value(json_object_get(run, "jobs")),
           timefmt_when_text(str(run, "since"), time(NULL), since, sizeof(since), "?"),
           str(run, "cluster"));
    printf("measured: mean JCT %s, p99 JCT %s, mean queueing %s, under %s\n", mean, p99, queue,
           str(run, "policy_in_force"));
    const json_t *models = json_object_get(m, "models");
    if (models) /* a run of an older server has none */
        printf("models: %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
               " jobs replayed at their own fitted speed model, the others at the template's"
               " speed-up\n",
               json_integer_value(json_object_get(models, "speed")),
               json_integer_value(json_object_get(run, "jobs")));
    static const char *const head[] = {"POLICY",     "MEAN JCT", "P99 JCT",
                                       "MEAN QUEUE", "UTIL",     "VS MEASURED"};
    struct table *t = table_create(6, head);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(run, "results"), i, r)
    {
        char name[80], a[32], b[32], c[32], u[16], vs[16];
        snprintf(name, sizeof(name), "%s%s", str(r, "policy"),
                 json_is_true(json_object_get(r, "in_force")) ? " (in force)" : "");
        elapsed(num(r, "mean_jct_s"), a, sizeof(a));
        elapsed(num(r, "p99_jct_s"), b, sizeof(b));
        elapsed(num(r, "mean_queue_s"), c, sizeof(c));
        snprintf(u, sizeof(u), "%.0f%%", 100 * num(r, "utilization"));
        double base = num(m, "mean_jct_s");
        snprintf(vs, sizeof(vs), base > 0 ? "%.2fx" : "-", num(r, "mean_jct_s") / base);
        const char *row[] = {name, a, b, c, u, vs};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
    if (json_integer_value(json_object_get(p, "done")) < json_integer_value(json_object_get(p, "total")))
        printf("%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " policies replayed so far\n",
               json_integer_value(json_object_get(p, "done")),
               json_integer_value(json_object_get(p, "total")));
    if (!strcmp(str(run, "state"), "failed"))
        printf("failed: %s\n", str(run, "error"));
}

static int show(struct ringctl *ctl, const json_t *run)
{
    if (ctl->json)
        ringctl_print_json((json_t *)run);
    else
        print_run(run);
    return strcmp(str(run, "state"), "failed") ? RINGCTL_OK : RINGCTL_API_ERROR;
}

/* Polls the run until it is no longer running (progress on stderr), or timeout_s. */
static int follow(struct ringctl *ctl, long long id, double timeout_s)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/whatif/%lld", id);
    double end = ringctl_mono_s() + timeout_s;
    long long shown = -1;
    for (;;) {
        json_t *run = NULL;
        int rc = ringctl_call(ctl, "GET", path, NULL, NULL, &run);
        if (rc != RINGCTL_OK)
            return rc;
        const json_t *p = json_object_get(run, "progress");
        long long done = json_integer_value(json_object_get(p, "done"));
        if (strcmp(str(run, "state"), "running")) {
            rc = show(ctl, run);
            json_decref(run);
            return rc;
        }
        if (done != shown)
            fprintf(stderr, "replaying: %lld of %" JSON_INTEGER_FORMAT " policies done\n", done,
                    json_integer_value(json_object_get(p, "total")));
        shown = done;
        json_decref(run);
        if (ringctl_mono_s() > end) {
            fprintf(stderr, "ringctl: what-if run %lld still running after %.0f s (ringctl whatif"
                            " show %lld)\n",
                    id, timeout_s, id);
            return RINGCTL_API_ERROR;
        }
        ringctl_sleep(1.0);
    }
}

static int list_runs(struct ringctl *ctl)
{
    json_t *out = NULL;
    int rc = ringctl_call(ctl, "GET", "/api/v1/whatif", NULL, NULL, &out);
    if (rc != RINGCTL_OK || ctl->json) {
        if (rc == RINGCTL_OK)
            ringctl_print_json(out);
        json_decref(out);
        return rc;
    }
    static const char *const head[] = {"ID", "STATE", "JOBS", "POLICIES", "IN FORCE", "ASKED"};
    struct table *t = table_create(6, head);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(out, "items"), i, r)
    {
        char id[24], jobs[24], pol[48], at[64];
        snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(r, "id")));
        snprintf(jobs, sizeof(jobs), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(r, "jobs")));
        const json_t *p = json_object_get(r, "progress");
        snprintf(pol, sizeof(pol), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(p, "done")),
                 json_integer_value(json_object_get(p, "total")));
        const char *row[] = {id,  str(r, "state"), jobs, pol, str(r, "policy_in_force"),
                             timefmt_when_text(str(r, "created_at"), time(NULL), at, sizeof(at), "?")};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
    json_decref(out);
    return RINGCTL_OK;
}

int ringctl_cmd_whatif(struct ringctl *ctl, int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "list"))
        return argc == 1 ? list_runs(ctl) : ringctl_usage(WHATIF_USAGE);
    if (argc >= 1 && !strcmp(argv[0], "show")) {
        long long id;
        if (argc != 2 || ringctl_parse_int("RUN_ID", argv[1], 1, 1LL << 53, &id) < 0)
            return ringctl_usage(WHATIF_USAGE);
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/whatif/%lld", id);
        json_t *run = NULL;
        int rc = ringctl_call(ctl, "GET", path, NULL, NULL, &run);
        if (rc == RINGCTL_OK)
            rc = show(ctl, run);
        json_decref(run);
        return rc;
    }
    double since_s = 7 * 86400.0, timeout_s = 1800;
    const char *policies = "all";
    int wait = 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--since") && i + 1 < argc) {
            if (ringctl_parse_period("--since", argv[++i], &since_s) < 0)
                return RINGCTL_USAGE;
        } else if (!strcmp(argv[i], "--policies") && i + 1 < argc) {
            policies = argv[++i];
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (ringctl_parse_seconds("--timeout", argv[++i], &timeout_s) < 0)
                return RINGCTL_USAGE;
        } else if (!strcmp(argv[i], "--no-wait")) {
            wait = 0;
        } else {
            return ringctl_usage(WHATIF_USAGE);
        }
    }
    json_t *body = json_pack("{s:f}", "since_s", since_s);
    if (strcmp(policies, "all")) {
        json_t *a = json_array();
        char *copy = strdup(policies), *save = NULL;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
            json_array_append_new(a, json_string(p));
        free(copy);
        json_object_set_new(body, "policies", a);
    }
    json_t *run = NULL;
    int rc = ringctl_call(ctl, "POST", "/api/v1/whatif", body, NULL, &run);
    json_decref(body);
    if (rc != RINGCTL_OK)
        return rc;
    long long id = json_integer_value(json_object_get(run, "id"));
    if (!wait) {
        if (ctl->json)
            ringctl_print_json(run);
        else
            printf("what-if run %lld started: %" JSON_INTEGER_FORMAT
                   " jobs, %zu policies (ringctl whatif show %lld)\n",
                   id, json_integer_value(json_object_get(run, "jobs")),
                   json_array_size(json_object_get(run, "policies")), id);
        json_decref(run);
        return RINGCTL_OK;
    }
    json_decref(run);
    return follow(ctl, id, timeout_s);
}
