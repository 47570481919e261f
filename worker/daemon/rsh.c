/* rsh: the workers' rsh agent, which asks the server to have another node's worker start a
 * job's remote mpirun daemon (see rsh.h). */
#include "rsh.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"

/* The remote command: the arguments after the host, joined by blanks (new, free()). */
static char *join_args(int argc, char **argv, int from)
{
    size_t len = 1;
    for (int i = from; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = calloc(1, len);
    for (int i = from; s && i < argc; i++) {
        if (i > from)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static int read_token(const char *path, char *out, size_t len)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    int ok = f && fgets(out, (int)len, f);
    if (f)
        fclose(f);
    out[ok ? strcspn(out, " \r\n") : 0] = '\0';
    return out[0] ? 0 : -1;
}

static int ask_server(const char *host, const char *command)
{
    const char *server = getenv("RINGMASTER_SERVER"), *job = getenv("RINGJOB_JOB_ID");
    char token[256], path[96], err[256];
    if (!server || !job || read_token(getenv("RINGMASTER_TOKEN_FILE"), token, sizeof(token)) < 0) {
        fprintf(stderr, "ringmaster-worker --rsh-agent: RINGMASTER_SERVER, RINGMASTER_TOKEN_FILE"
                        " and RINGJOB_JOB_ID must be set\n");
        return 1;
    }
    struct httpc *c = httpc_create(server, token);
    json_t *body = json_pack("{s:s, s:s}", "node", host, "command", command), *ans = NULL;
    long status = 0;
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/remote", job);
    int rc = c ? httpc_request(c, "POST", path, body, NULL, &status, &ans, err, sizeof(err)) : -1;
    if (rc < 0 || status != 201)
        fprintf(stderr, "ringmaster-worker --rsh-agent: %s: %s\n", host,
                rc < 0 ? err : json_string_value(json_object_get(ans, "detail")) ?: "refused");
    json_decref(body);
    json_decref(ans);
    httpc_destroy(c);
    return rc == 0 && status == 201 ? 0 : 1;
}

int rsh_agent_main(int argc, char **argv)
{
    int i = 2;
    while (i < argc && argv[i][0] == '-')
        i++; /* ssh-style options mpirun may pass */
    if (i + 1 >= argc) {
        fprintf(stderr, "usage: ringmaster-worker --rsh-agent [-options] HOST COMMAND...\n");
        return 2;
    }
    char *command = join_args(argc, argv, i + 1);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = command ? ask_server(argv[i], command) : 1;
    curl_global_cleanup();
    free(command);
    return rc;
}
