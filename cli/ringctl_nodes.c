/* ringctl's cluster commands: nodes, user create, health. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"
#include "table.h"
#include "timefmt.h"

/* A node's drain as a cell: "-", or its reason with the GPUs it names and whether it
 * evacuates ("GPUs 0,2 evacuate: fan failing"). */
static void drain_text(const json_t *d, char *out, size_t len)
{
    if (!json_is_object(d)) {
        snprintf(out, len, "-");
        return;
    }
    size_t o = 0;
    const json_t *g = json_object_get(d, "gpus");
    if (json_is_array(g)) {
        o += (size_t)snprintf(out, len, "GPUs");
        for (size_t i = 0; i < json_array_size(g) && o < len; i++)
            o += (size_t)snprintf(out + o, len - o, "%s%lld", i ? "," : " ",
                                  (long long)json_integer_value(json_array_get(g, i)));
        o += o < len ? (size_t)snprintf(out + o, len - o, " ") : 0;
    }
    if (o < len && json_is_true(json_object_get(d, "evacuate")))
        o += (size_t)snprintf(out + o, len - o, "evacuate ");
    if (o > 0 && o < len)
        o--; /* the space after the last word */
    if (o < len)
        snprintf(out + o, len - o, "%s%s", o ? ": " : "",
                 json_string_value(json_object_get(d, "reason")));
}

/* Its labels as a cell: "rack=r1,switch=s1", "-" without any. */
static void labels_text(const json_t *l, char *out, size_t len)
{
    const char *k;
    json_t *v;
    size_t o = 0;
    out[0] = '\0';
    json_object_foreach((json_t *)l, k, v)
    {
        if (o < len)
            o += (size_t)snprintf(out + o, len - o, "%s%s=%s", o ? "," : "", k,
                                  json_string_value(v));
    }
    if (!out[0])
        snprintf(out, len, "-");
}

/* Its GPUs' faults as a cell: "ok", or "GPU 1 xid 79; GPU 3 ecc". */
static void health_text(const json_t *gpus, char *out, size_t len)
{
    size_t o = 0, i;
    json_t *g;
    out[0] = '\0';
    json_array_foreach(gpus, i, g)
    {
        const char *f = json_string_value(json_object_get(g, "fault"));
        if (f && o < len)
            o += (size_t)snprintf(out + o, len - o, "%sGPU %lld %s", o ? "; " : "",
                                  (long long)json_integer_value(json_object_get(g, "index")), f);
    }
    if (!out[0])
        snprintf(out, len, "ok");
}

/* Its GPUs' NVLink islands as a cell: "2x4" (two islands of 4), "4+2+2" when they differ,
 * "-" when its worker did not know them. */
static void islands_text(const json_t *gpus, char *out, size_t len)
{
    int size[1024] = {0}, n = 0;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        json_t *is = json_object_get(g, "island");
        long long k = json_is_integer(is) ? json_integer_value(is) : -1;
        if (k >= 0 && k < 1024 && size[k]++ == 0)
            n = (int)k + 1 > n ? (int)k + 1 : n;
    }
    int same = 1, o = 0;
    for (int k = 1; k < n; k++)
        same = same && size[k] == size[0];
    if (n == 0)
        snprintf(out, len, "-");
    else if (same)
        snprintf(out, len, "%dx%d", n, size[0]);
    else
        for (int k = 0; k < n && (size_t)o < len; k++)
            o += snprintf(out + o, len - (size_t)o, "%s%d", k ? "+" : "", size[k]);
}

/* One node's GPUs, a line each: "  GPU 3: a100, island 1, numa 0, fault: xid 79". */
static void print_gpus(const json_t *node)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(node, "gpus"), i, g)
    {
        printf("  GPU %lld: %s", (long long)json_integer_value(json_object_get(g, "index")),
               json_string_value(json_object_get(g, "model")));
        static const char *const where[] = {"island", "numa"};
        for (int k = 0; k < 2; k++)
            if (json_is_integer(json_object_get(g, where[k])))
                printf(", %s %lld", where[k],
                       (long long)json_integer_value(json_object_get(g, where[k])));
        const char *f = json_string_value(json_object_get(g, "fault"));
        printf("%s%s\n", f ? ", fault: " : "", f ? f : "");
    }
}

/* The node's latest GPU faults (GET /api/v1/nodes/{id}'s "faults"), newest first. */
static void print_faults(const json_t *node)
{
    const json_t *faults = json_object_get(node, "faults");
    if (json_array_size(faults) == 0)
        return;
    static const char *const head[] = {"FAULT", "GPU", "REASON", "REPORTED", "CLEARED", "JOBS",
                                       "GPU_TIME_LOST"};
    struct table *t = table_create(7, head);
    size_t i;
    json_t *f;
    time_t now = time(NULL);
    printf("GPU faults, latest first:\n");
    json_array_foreach(faults, i, f)
    {
        char id[32], gpu[32], at[64], cleared[64], jobs[128] = "", lost[32];
        snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(f, "id")));
        snprintf(gpu, sizeof(gpu), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(f, "gpu")));
        const char *a = timefmt_when_text(json_string_value(json_object_get(f, "at")), now, at,
                                          sizeof(at), "-");
        const char *c = timefmt_when_text(json_string_value(json_object_get(f, "cleared_at")),
                                          now, cleared, sizeof(cleared), "open");
        size_t k, used = 0;
        json_t *j;
        json_array_foreach(json_object_get(f, "jobs"), k, j)
        {
            int n = snprintf(jobs + used, sizeof(jobs) - used, "%s%" JSON_INTEGER_FORMAT,
                             k ? "," : "", json_integer_value(j));
            if (n < 0 || (size_t)n >= sizeof(jobs) - used)
                break;
            used += (size_t)n;
        }
        snprintf(lost, sizeof(lost), "%.1f s", json_number_value(json_object_get(f, "lost_gpu_s")));
        const char *row[] = {id,    gpu, json_string_value(json_object_get(f, "reason")), a, c,
                             used ? jobs : "-", lost};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

static void print_nodes(json_t *items)
{
    static const char *const head[] = {"ID",    "NAME",       "STATE",          "GPUS",
                                       "CPUS",  "MEMORY_GIB", "LAST_HEARTBEAT", "HEALTH",
                                       "DRAIN", "LABELS",     "ISLANDS"};
    struct table *t = table_create(11, head);
    size_t i;
    json_t *n;
    json_array_foreach(items, i, n)
    {
        char id[32], gpus[32], cpus[32], mem[32];
        json_t *g = json_object_get(n, "gpus");
        snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(n, "id")));
        snprintf(gpus, sizeof(gpus), "%zu", json_is_array(g) ? json_array_size(g) : 0);
        snprintf(cpus, sizeof(cpus), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(n, "cpus")));
        snprintf(mem, sizeof(mem), "%.1f",
                 (double)json_integer_value(json_object_get(n, "memory_bytes")) / (1 << 30));
        char when[64];
        const char *hb =
            timefmt_when_text(json_string_value(json_object_get(n, "last_heartbeat_at")),
                              time(NULL), when, sizeof(when), "-");
        char drain[320], health[320], labels[512], islands[128];
        drain_text(json_object_get(n, "drain"), drain, sizeof(drain));
        islands_text(g, islands, sizeof(islands));
        health_text(g, health, sizeof(health));
        labels_text(json_object_get(n, "labels"), labels, sizeof(labels));
        const char *row[] = {id,
                             json_string_value(json_object_get(n, "name")),
                             json_string_value(json_object_get(n, "state")),
                             gpus,
                             cpus,
                             mem,
                             hb,
                             health,
                             drain,
                             labels,
                             islands};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

int ringctl_cmd_nodes(struct ringctl *ctl, int argc, char **argv)
{
    char path[128] = "/api/v1/nodes";
    if (argc > 1) {
        return ringctl_usage("nodes [NODE_ID]");
    }
    if (argc == 1) {
        char *end;
        long long id = strtoll(argv[0], &end, 10);
        if (end == argv[0] || *end || id < 1) {
            fprintf(stderr, "ringctl: NODE_ID: expected a positive integer, got '%s'\n", argv[0]);
            return RINGCTL_USAGE;
        }
        snprintf(path, sizeof(path), "/api/v1/nodes/%lld", id);
    }
    json_t *out;
    int rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
    if (rc == RINGCTL_OK) {
        json_t *one = argc == 1 ? json_pack("[O]", out) : NULL;
        json_t *items = one ? one : json_is_array(out) ? out : json_object_get(out, "items");
        if (ctl->json || !items)
            ringctl_print_json(out);
        else
            print_nodes(items);
        if (one && !ctl->json) {
            print_gpus(out);
            print_faults(out);
        }
        json_decref(one);
    }
    json_decref(out);
    return rc;
}

#define USER_USAGE                                                                                 \
    "usage: ringctl user create NAME [--role admin|user|worker]\n"                                 \
    "       ringctl user set NAME [--share W] [--max-gpus Q|none]\n"                               \
    "       ringctl user list\n"

static int user_create(struct ringctl *ctl, int argc, char **argv)
{
    const char *role = "user";
    if (argc == 4 && !strcmp(argv[2], "--role"))
        role = argv[3];
    else if (argc != 2) {
        fputs(USER_USAGE, stderr);
        return RINGCTL_USAGE;
    }
    json_t *body = json_pack("{s:s, s:s}", "name", argv[1], "role", role);
    json_t *out;
    int rc = ringctl_call(ctl, "POST", "/api/v1/users", body, NULL, &out);
    if (rc == RINGCTL_OK) {
        if (ctl->json)
            ringctl_print_json(out);
        else
            printf("%s\n", json_string_value(json_object_get(out, "token")));
    }
    json_decref(out);
    json_decref(body);
    return rc;
}

/* One user as a line: "alice: share 2, quota 8 GPUs, holds 3 GPUs, 1 job waiting". */
static void print_user(const json_t *u)
{
    json_t *q = json_object_get(u, "max_gpus");
    char quota[32] = "no quota";
    if (json_is_integer(q))
        snprintf(quota, sizeof(quota), "quota %lld GPUs", (long long)json_integer_value(q));
    printf("%s (%s): share %g, %s, holds %lld GPUs, %lld jobs waiting\n",
           json_string_value(json_object_get(u, "name")),
           json_string_value(json_object_get(u, "role")),
           json_number_value(json_object_get(u, "share")), quota,
           (long long)json_integer_value(json_object_get(u, "gpus_held")),
           (long long)json_integer_value(json_object_get(u, "jobs_pending")));
}

/* user set NAME --share W --max-gpus Q|none: the user's weight in fair sharing and its
 * quota (admin). */
static int user_set(struct ringctl *ctl, int argc, char **argv)
{
    if (argc < 4 || argc % 2) {
        fputs(USER_USAGE, stderr);
        return RINGCTL_USAGE;
    }
    json_t *body = json_object();
    for (int i = 2; i + 1 < argc; i += 2) {
        char *end;
        if (!strcmp(argv[i], "--share")) {
            double w = strtod(argv[i + 1], &end);
            if (*end || end == argv[i + 1]) {
                fprintf(stderr, "ringctl: --share: expected a number, got '%s'\n", argv[i + 1]);
                json_decref(body);
                return RINGCTL_USAGE;
            }
            json_object_set_new(body, "share", json_real(w));
        } else if (!strcmp(argv[i], "--max-gpus")) {
            if (!strcmp(argv[i + 1], "none")) {
                json_object_set_new(body, "max_gpus", json_null());
                continue;
            }
            long long q = strtoll(argv[i + 1], &end, 10);
            if (*end || end == argv[i + 1]) {
                fprintf(stderr, "ringctl: --max-gpus: expected a count or none, got '%s'\n",
                        argv[i + 1]);
                json_decref(body);
                return RINGCTL_USAGE;
            }
            json_object_set_new(body, "max_gpus", json_integer(q));
        } else {
            fputs(USER_USAGE, stderr);
            json_decref(body);
            return RINGCTL_USAGE;
        }
    }
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/users/%s", argv[1]);
    json_t *out;
    int rc = ringctl_call(ctl, "PATCH", path, body, NULL, &out);
    if (rc == RINGCTL_OK) {
        if (ctl->json)
            ringctl_print_json(out);
        else
            print_user(out);
    }
    json_decref(out);
    json_decref(body);
    return rc;
}

static int user_list(struct ringctl *ctl)
{
    json_t *out;
    int rc = ringctl_call(ctl, "GET", "/api/v1/users", NULL, NULL, &out);
    if (rc == RINGCTL_OK) {
        if (ctl->json) {
            ringctl_print_json(out);
        } else {
            size_t i;
            json_t *u;
            json_array_foreach(json_object_get(out, "items"), i, u) print_user(u);
        }
    }
    json_decref(out);
    return rc;
}

int ringctl_cmd_user(struct ringctl *ctl, int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "create") && argc >= 2)
        return user_create(ctl, argc, argv);
    if (argc >= 1 && !strcmp(argv[0], "set") && argc >= 2)
        return user_set(ctl, argc, argv);
    if (argc == 1 && !strcmp(argv[0], "list"))
        return user_list(ctl);
    fputs(USER_USAGE, stderr);
    return RINGCTL_USAGE;
}

int ringctl_cmd_health(struct ringctl *ctl, int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        return ringctl_usage("health");
    }
    json_t *out;
    int rc = ringctl_call(ctl, "GET", "/api/v1/health", NULL, NULL, &out);
    if (rc == RINGCTL_OK) {
        if (ctl->json)
            ringctl_print_json(out);
        else
            printf("status %s, database %s, version %s\n",
                   json_string_value(json_object_get(out, "status")),
                   json_string_value(json_object_get(out, "database")),
                   json_string_value(json_object_get(out, "version")));
    }
    json_decref(out);
    return rc;
}
