/* ringctl's cluster commands: nodes, user create, health. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"
#include "table.h"
#include "timefmt.h"

static void print_nodes(json_t *items)
{
    static const char *const head[] = {"ID", "NAME", "STATE", "GPUS", "CPUS", "MEMORY_GIB",
                                       "LAST_HEARTBEAT"};
    struct table *t = table_create(7, head);
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
        const char *hb = timefmt_when_text(json_string_value(json_object_get(n, "last_heartbeat_at")),
                                           time(NULL), when, sizeof(when), "-");
        const char *row[] = {id, json_string_value(json_object_get(n, "name")),
                             json_string_value(json_object_get(n, "state")), gpus, cpus, mem,
                             hb};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

int ringctl_cmd_nodes(struct ringctl *ctl, int argc, char **argv)
{
    char path[128] = "/api/v1/nodes";
    if (argc > 1) {
        fprintf(stderr, "usage: ringctl nodes [NODE_ID]\n");
        return RINGCTL_USAGE;
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
        json_decref(one);
    }
    json_decref(out);
    return rc;
}

int ringctl_cmd_user(struct ringctl *ctl, int argc, char **argv)
{
    const char *role = "user";
    if (argc < 2 || strcmp(argv[0], "create")) {
        fprintf(stderr, "usage: ringctl user create NAME [--role admin|user|worker]\n");
        return RINGCTL_USAGE;
    }
    if (argc == 4 && !strcmp(argv[2], "--role"))
        role = argv[3];
    else if (argc != 2) {
        fprintf(stderr, "usage: ringctl user create NAME [--role admin|user|worker]\n");
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

int ringctl_cmd_health(struct ringctl *ctl, int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "usage: ringctl health\n");
        return RINGCTL_USAGE;
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
