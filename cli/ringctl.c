/* ringctl: the command-line client of ringmasterd's REST API.
 *
 *   ringctl [--server URL] [--token-file F] [--json] COMMAND [ARGS]
 *
 * The server comes from --server, else $RINGMASTER_URL, else
 * http://127.0.0.1:8080; the token from --token-file, else $RINGMASTER_TOKEN,
 * else ./var/admin.token when readable. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringctl.h"

struct command {
    const char *name;
    int (*run)(struct ringctl *ctl, int argc, char **argv);
    const char *usage;
};

static const struct command commands[] = {
    {"submit", ringctl_cmd_submit,
     "submit --name NAME [--gpus N] [--min-gpus N] [--max-gpus N] [--elastic] [--priority P]\n"
     "         [--batch-per-gpu M] [--env K=V]... [--idempotency-key K] -- COMMAND [ARGS...]"},
    {"list", ringctl_cmd_list, "list [--state S] [--user U] [--limit N] [--all]"},
    {"show", ringctl_cmd_show, "show JOB_ID"},
    {"suspend", ringctl_cmd_suspend, "suspend JOB_ID"},
    {"resume", ringctl_cmd_resume, "resume JOB_ID"},
    {"resize", ringctl_cmd_resize, "resize JOB_ID GPUS"},
    {"migrate", ringctl_cmd_migrate, "migrate JOB_ID [NODE_ID]"},
    {"watch", ringctl_cmd_watch, "watch [JOB_ID] [--timeout S] [--interval S]"},
    {"policy", ringctl_cmd_policy,
     "policy [NAME] [--interval S] [--explore-stage S]"
     " [--paused true|false]"},
    {"cancel", ringctl_cmd_cancel, "cancel JOB_ID"},
    {"events", ringctl_cmd_events, "events JOB_ID"},
    {"nodes", ringctl_cmd_nodes, "nodes [NODE_ID]"},
    {"user", ringctl_cmd_user, "user create NAME [--role admin|user|worker]"},
    {"health", ringctl_cmd_health, "health"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ringctl [--server URL] [--token-file F] [--json] COMMAND [ARGS]\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "exit codes: 0 ok, 1 the server refused (problem printed), 2 usage, "
               "3 server unreachable\n");
}

static char *read_token_file(const char *path, int must_exist)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (must_exist)
            fprintf(stderr, "ringctl: cannot read token file %s\n", path);
        return NULL;
    }
    char line[512] = "";
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    if (!ok)
        return NULL;
    line[strcspn(line, "\r\n")] = '\0';
    return strdup(line);
}

int ringctl_call(struct ringctl *ctl, const char *method, const char *path, json_t *body,
                 const char *extra_header, json_t **out)
{
    char err[512];
    long status = 0;
    json_t *answer = NULL;
    *out = NULL;
    if (httpc_request(ctl->http, method, path, body, extra_header, &status, &answer, err,
                      sizeof(err)) < 0) {
        fprintf(stderr, "ringctl: %s\n", err);
        return RINGCTL_UNREACHABLE;
    }
    if (status >= 200 && status < 300) {
        *out = answer;
        return RINGCTL_OK;
    }
    const char *title = json_string_value(json_object_get(answer, "title"));
    const char *detail = json_string_value(json_object_get(answer, "detail"));
    fprintf(stderr, "ringctl: %ld %s%s%s\n", status, title ? title : "error",
            detail ? ": " : "", detail ? detail : "");
    json_t *errors = json_object_get(answer, "errors");
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *field = json_string_value(json_object_get(e, "field"));
        const char *msg = json_string_value(json_object_get(e, "detail"));
        fprintf(stderr, "  %s: %s\n", field ? field : "?", msg ? msg : "?");
    }
    json_decref(answer);
    return RINGCTL_API_ERROR;
}

int ringctl_parse_int(const char *flag, const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        fprintf(stderr, "ringctl: %s: expected an integer %lld..%lld, got '%s'\n", flag, lo, hi,
                s);
        return -1;
    }
    *v = x;
    return 0;
}

int ringctl_job_path(const char *id, const char *suffix, char *buf, size_t len)
{
    long long v;
    if (ringctl_parse_int("JOB_ID", id, 1, LLONG_MAX, &v) < 0)
        return -1;
    snprintf(buf, len, "/api/v1/jobs/%lld%s", v, suffix);
    return 0;
}

void ringctl_print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s)
        puts(s);
    free(s);
}

int main(int argc, char **argv)
{
    const char *server = getenv("RINGMASTER_URL");
    const char *token_file = NULL;
    struct ringctl ctl = {0};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--server") && i + 1 < argc)
            server = argv[++i];
        else if (!strcmp(argv[i], "--token-file") && i + 1 < argc)
            token_file = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            ctl.json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return RINGCTL_OK;
        } else {
            usage(stderr);
            return RINGCTL_USAGE;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return RINGCTL_USAGE;
    }
    const struct command *cmd = NULL;
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (!strcmp(argv[i], commands[k].name))
            cmd = &commands[k];
    if (!cmd) {
        fprintf(stderr, "ringctl: unknown command '%s'\n", argv[i]);
        usage(stderr);
        return RINGCTL_USAGE;
    }
    char *token = NULL;
    if (token_file)
        token = read_token_file(token_file, 1);
    else if (getenv("RINGMASTER_TOKEN"))
        token = strdup(getenv("RINGMASTER_TOKEN"));
    else
        token = read_token_file("var/admin.token", 0);
    if (token_file && !token)
        return RINGCTL_USAGE;
    ctl.http = httpc_create(server ? server : "http://127.0.0.1:8080", token);
    free(token);
    if (!ctl.http)
        return RINGCTL_UNREACHABLE;
    int rc = cmd->run(&ctl, argc - i - 1, argv + i + 1);
    httpc_destroy(ctl.http);
    return rc;
}
