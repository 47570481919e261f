/* ringctl node drain / undrain / label: an operator's drain of a node or some of its GPUs, and
 * its labels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringctl.h"

#define NODE_USAGE                                                                                 \
    "usage: ringctl node drain NODE --reason TEXT [--gpus I,J,...] [--evacuate]\n"                 \
    "       ringctl node undrain NODE\n"                                                           \
    "       ringctl node label NODE KEY=VALUE... [KEY-...]\n"                                      \
    "NODE: a node's id or name\n"

/* The id of node arg (its id, or the name of one of the server's nodes) into *id. */
static int node_id(struct ringctl *ctl, const char *arg, long long *id)
{
    char *end;
    long long v = strtoll(arg, &end, 10);
    if (end != arg && !*end && v >= 1) {
        *id = v;
        return RINGCTL_OK;
    }
    json_t *out;
    int rc = ringctl_call(ctl, "GET", "/api/v1/nodes", NULL, NULL, &out);
    if (rc != RINGCTL_OK)
        return rc;
    size_t i;
    json_t *n;
    rc = RINGCTL_API_ERROR;
    json_array_foreach(json_object_get(out, "items"), i, n)
    {
        const char *name = json_string_value(json_object_get(n, "name"));
        if (name && !strcmp(name, arg)) {
            *id = json_integer_value(json_object_get(n, "id"));
            rc = RINGCTL_OK;
        }
    }
    json_decref(out);
    if (rc != RINGCTL_OK)
        fprintf(stderr, "ringctl: no node named '%s'\n", arg);
    return rc;
}

/* "--gpus 0,2,3" into an array (new), or NULL after a message. */
static json_t *gpu_list(const char *text)
{
    json_t *a = json_array();
    const char *p = text;
    while (a) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || (*end && *end != ',')) {
            fprintf(stderr, "ringctl: --gpus: expected GPU indices as 0,1,..., got '%s'\n", text);
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, json_integer(v));
        if (!*end)
            break;
        p = end + 1;
    }
    return a;
}

/* The node as one line: "node 3 (gpu-07): drained, GPUs 0,2, to evacuate: fan failing". */
static void print_drain(const json_t *node)
{
    const json_t *d = json_object_get(node, "drain");
    printf("node %lld (%s): ", (long long)json_integer_value(json_object_get(node, "id")),
           json_string_value(json_object_get(node, "name")));
    if (!json_is_object(d)) {
        printf("not drained\n");
        return;
    }
    printf("drained");
    const json_t *g = json_object_get(d, "gpus");
    if (json_is_array(g)) {
        printf(", GPUs");
        for (size_t i = 0; i < json_array_size(g); i++)
            printf("%s%lld", i ? "," : " ", (long long)json_integer_value(json_array_get(g, i)));
    }
    if (json_is_true(json_object_get(d, "evacuate")))
        printf(", to evacuate");
    printf(": %s\n", json_string_value(json_object_get(d, "reason")));
}

/* The node as one line after a label: "node 3 (gpu-07): rack=r1 switch=s1" ("no labels"). */
static void print_labels(const json_t *node)
{
    const char *k;
    json_t *v;
    int first = 1;
    printf("node %lld (%s): ", (long long)json_integer_value(json_object_get(node, "id")),
           json_string_value(json_object_get(node, "name")));
    json_object_foreach(json_object_get(node, "labels"), k, v)
    {
        printf("%s%s=%s", first ? "" : " ", k, json_string_value(v));
        first = 0;
    }
    printf("%s\n", first ? "no labels" : "");
}

/* method /api/v1/nodes/{id}SUFFIX with body (may be NULL) for node arg (id or name); the
 * answer printed by print, or as JSON with --json. */
static int node_request(struct ringctl *ctl, const char *arg, const char *method,
                        const char *suffix, json_t *body, void (*print)(const json_t *))
{
    long long id;
    int rc = node_id(ctl, arg, &id);
    if (rc != RINGCTL_OK)
        return rc;
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld%s", id, suffix);
    json_t *out;
    rc = ringctl_call(ctl, method, path, body, NULL, &out);
    if (rc == RINGCTL_OK && ctl->json)
        ringctl_print_json(out);
    else if (rc == RINGCTL_OK)
        print(out);
    json_decref(out);
    return rc;
}

/* node label NODE KEY=VALUE ... KEY-: sets and removes labels (PATCH /api/v1/nodes/{id}). */
static int node_label(struct ringctl *ctl, int argc, char **argv)
{
    if (argc < 3) {
        fputs(NODE_USAGE, stderr);
        return RINGCTL_USAGE;
    }
    json_t *labels = json_object();
    for (int i = 2; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t n = strlen(argv[i]);
        if (eq && eq > argv[i]) {
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[i]), argv[i]);
            json_object_set_new(labels, key, json_string(eq + 1));
        } else if (!eq && n > 1 && argv[i][n - 1] == '-') {
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(n - 1), argv[i]);
            json_object_set_new(labels, key, json_null());
        } else {
            fprintf(stderr, "ringctl: node label: expected KEY=VALUE or KEY-, got '%s'\n", argv[i]);
            json_decref(labels);
            return RINGCTL_USAGE;
        }
    }
    json_t *body = json_pack("{s:o}", "labels", labels);
    int rc = node_request(ctl, argv[1], "PATCH", "", body, print_labels);
    json_decref(body);
    return rc;
}

int ringctl_cmd_node(struct ringctl *ctl, int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "label"))
        return node_label(ctl, argc, argv);
    int drain = argc >= 2 && !strcmp(argv[0], "drain");
    if (argc < 2 || (!drain && (strcmp(argv[0], "undrain") || argc != 2))) {
        fputs(NODE_USAGE, stderr);
        return RINGCTL_USAGE;
    }
    json_t *body = drain ? json_object() : NULL;
    for (int i = 2; drain && i < argc; i++) {
        if (!strcmp(argv[i], "--evacuate")) {
            json_object_set_new(body, "evacuate", json_true());
        } else if (!strcmp(argv[i], "--reason") && i + 1 < argc) {
            json_object_set_new(body, "reason", json_string(argv[++i]));
        } else if (!strcmp(argv[i], "--gpus") && i + 1 < argc) {
            json_t *g = gpu_list(argv[++i]);
            if (!g) {
                json_decref(body);
                return RINGCTL_USAGE;
            }
            json_object_set_new(body, "gpus", g);
        } else {
            fputs(NODE_USAGE, stderr);
            json_decref(body);
            return RINGCTL_USAGE;
        }
    }
    if (drain && !json_object_get(body, "reason")) {
        fprintf(stderr, "ringctl: node drain: --reason TEXT is required (why it is drained)\n");
        json_decref(body);
        return RINGCTL_USAGE;
    }
    char suffix[16];
    snprintf(suffix, sizeof(suffix), "/%s", argv[0]);
    int rc = node_request(ctl, argv[1], "POST", suffix, body, print_drain);
    json_decref(body);
    return rc;
}
