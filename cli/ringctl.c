/* ringctl: the command-line client of ringmasterd's REST API.
 *
 *   ringctl [--server URL] [--token-file F] [--json] [-o json|wide|id] COMMAND [ARGS]
 *
 * The global options may stand before or after the command (up to a "--").
 * The server comes from --server, else $RINGMASTER_URL, else
 * http://127.0.0.1:8080; the token from --token-file, else $RINGMASTER_TOKEN,
 * else ./var/admin.token when readable. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"

struct command {
    const char *name;
    int (*run)(struct ringctl *ctl, int argc, char **argv);
    const char *usage;   /* after "ringctl " */
    const char *summary; /* one line */
    const char *example; /* one command line */
};

#define WAIT_OPTS " [--wait [--timeout S]]"

static const struct command commands[] = {
    {"submit", ringctl_cmd_submit,
     "submit --name NAME [--gpus N] [--min-gpus N] [--max-gpus N] [--elastic] [--priority P]\n"
     "         [--batch-per-gpu M] [--batch M0 [--adaptive-batch [M0:]MAX]\n"
     "         [--max-local-batch L] [--lr-scaling sqrt|linear|none]] [--env K=V]...\n"
     "         [--idempotency-key K] [--array INDEXES] [--after ID[:ok|:any|:notok]]...\n"
     "         [--switches N[@T]] [--deadline WHEN] -- COMMAND [ARGS...]",
     "Submit a job; prints its id. --array 0-99 (or 1,3,5-7, or 0-15:4 for every 4th)\n"
     "  submits a job array: one job per index (at most 1,000, 0..1000000, in one\n"
     "  transaction), named NAME[i] with RINGJOB_ARRAY_INDEX=i in its environment; prints\n"
     "  their ids, the first being the array's id (list shows its jobs as ID_INDEX).\n"
     "  --batch M0 gives the job a batch model: M0 global examples per step; with\n"
     "  --adaptive-batch MAX the scheduler may choose its global batch in M0..MAX as it\n"
     "  resizes it, or in place while its GPUs stay (RINGJOB_BATCH, ringjob_batch(); learning\n"
     "  rate times sqrt(batch / M0), or as --lr-scaling says); --max-local-batch is the most\n"
     "  examples per GPU before it accumulates gradients.\n"
     "  --after 12 runs the job once job 12 COMPLETED (12:any once it ended, 12:notok once it\n"
     "  FAILED or was CANCELLED; array:41 waits for every job of array 41); repeat it or\n"
     "  separate with commas. A dependency that can no longer be met cancels the job.\n"
     "  --switches N@T (as Slurm's): it waits up to T seconds (default 300) for GPUs on at\n"
     "  most N switches (the nodes' switch labels), then takes what there is.\n"
     "  --deadline 2026-12-05T18:00 (local time; or with Z or +01:00, a day, or +6h): when it\n"
     "  must be finished; the scheduler gives it the least GPUs that meet it once its slack\n"
     "  runs out, and ringctl says on stderr whether the forecast meets it (\"forecast\n"
     "  finish ~Thu 14:10, before the deadline\" or \"... will miss by ~3h at the current load\").",
     "ringctl submit --name mlp --gpus 2 --elastic --max-gpus 8 -- python3 train.py"},
    {"list", ringctl_cmd_list,
     "list [--state S] [--user U] [--array ID] [--limit N] [--all] [--wide|-o wide]\n"
     "         [--watch [--interval S] [--count N] [--timeout S]]",
     "List jobs like squeue: ID (ARRAY_ID_INDEX for an array's job), NAME, USER, STATE,\n"
     "  GPUS, TIME (run time, D-HH:MM:SS) and\n"
     "  REASON/FINISH (why a pending job waits and its predicted start; a running job's\n"
     "  predicted finish; an ended job's finish). --wide adds NODE[GPUS] and SUBMITTED.\n"
     "  --watch redraws every --interval seconds (2) until Ctrl-C, --count redraws or\n"
     "  --timeout seconds. --all reads every page.",
     "ringctl list --state PENDING --wide"},
    {"show", ringctl_cmd_show, "show JOB_ID",
     "A job in full: state, times, why it waits, queue position, allocation, model.",
     "ringctl show 1"},
    {"suspend", ringctl_cmd_suspend, "suspend JOB_ID" WAIT_OPTS,
     "Suspend a running job in place; says which action was written. --wait blocks until it\n"
     "  is suspended (or cannot be), printing each step; --timeout S gives up after S s.",
     "ringctl suspend 1 --wait --timeout 60"},
    {"resume", ringctl_cmd_resume, "resume JOB_ID" WAIT_OPTS,
     "Resume a suspended job. --wait blocks until it runs again.",
     "ringctl resume 1 --wait"},
    {"resize", ringctl_cmd_resize, "resize JOB_ID GPUS" WAIT_OPTS,
     "Request another size (elastic: within min..max); the scheduler considers it at its next\n"
     "  round. --wait blocks until the job runs at that size (a waiting job: at once).",
     "ringctl resize 1 4 --wait --timeout 120"},
    {"migrate", ringctl_cmd_migrate, "migrate JOB_ID [NODE_ID]" WAIT_OPTS,
     "Move a running job elsewhere (or to NODE_ID) at the scheduler's next round. --wait\n"
     "  blocks until it runs there.",
     "ringctl migrate 1 2 --wait"},
    {"watch", ringctl_cmd_watch, "watch [JOB_ID] [--timeout S] [--interval S]",
     "Print each change of a job (or of every job) until it ends (exit 1 on --timeout).",
     "ringctl watch 1 --timeout 600"},
    {"policy", ringctl_cmd_policy,
     "policy [NAME] [--interval S] [--explore-stage S] [--min-runtime S] [--paused true|false]",
     "Show the scheduler's policy and the ones to choose from; set them (admin).\n"
     "--min-runtime S: no running job is preempted within S seconds of its start.",
     "ringctl policy optimus --interval 5"},
    {"cancel", ringctl_cmd_cancel, "cancel JOB_ID|ARRAY_ID|ARRAY_ID_INDEX",
     "Cancel a job; an array's id cancels every job of the array still waiting or running\n"
     "  (as scancel does); ARRAY_ID_INDEX (41_3) cancels that one alone.",
     "ringctl cancel 41"},
    {"events", ringctl_cmd_events, "events JOB_ID", "A job's history of state changes.",
     "ringctl events 1"},
    {"nodes", ringctl_cmd_nodes, "nodes [NODE_ID]", "Nodes and their GPUs.", "ringctl nodes"},
    {"node", ringctl_cmd_node,
     "node drain NODE --reason TEXT [--gpus I,J,...] [--evacuate]\n"
     "       node undrain NODE\n"
     "       node label NODE KEY=VALUE... [KEY-...]",
     "Drain a node (by id or name), or some of its GPUs, for maintenance (admin): no new job\n"
     "  goes there, the jobs on it run on, or with --evacuate are migrated off at the next\n"
     "  round. undrain gives it back. label sets a node's labels (KEY- removes one), e.g. its\n"
     "  switch and rack.",
     "ringctl node drain gpu-07 --reason \"fan failing\" --evacuate"},
    {"user", ringctl_cmd_user,
     "user create NAME [--role admin|user|worker]\n"
     "       user set NAME [--share W] [--max-gpus Q|none]\n"
     "       user list",
     "Make a user and print its token, once; set a user's fair share and GPU quota; list the"
     " users with their shares and the GPUs they hold (admin).",
     "ringctl user create alice; ringctl user set alice --share 2 --max-gpus 16"},
    {"whatif", ringctl_cmd_whatif,
     "whatif [--since D] [--policies all|a,b,...] [--no-wait] [--timeout S]\n"
     "       whatif show RUN_ID | whatif list",
     "Replay the jobs that completed in the last D (7d, 12h, 30m or seconds; default 7d)\n"
     "  under every policy (or those named) on the server's simulator, follow it, and print\n"
     "  each policy's mean and p99 JCT, mean queueing and utilisation beside what the jobs\n"
     "  measured, the policy in force marked. --no-wait prints the run's id and returns.",
     "ringctl whatif --since 1d --policies fifo,tiresias,ringmaster"},
    {"report", ringctl_cmd_report,
     "report [--since 30d|DAY] [--until DAY] [--by user|array|day[,...]] [--user NAME] [--csv]",
     "Where the GPU-hours went (in the manner of sreport): allocated, useful with the steps\n"
     "  of progress, idle while allocated, and lost by cause (launches, resizes, migrations,\n"
     "  work redone after a preemption, faults), by user (default), job array and UTC day,\n"
     "  since a period back (30d: the last 30 days, the default) or a day. A user sees their\n"
     "  own; an admin everyone's, or one user's with --user.",
     "ringctl report --since 30d --by user,day --csv"},
    {"health", ringctl_cmd_health, "health", "The server's and its database's health.",
     "ringctl health"},
    {"help", NULL, "help [COMMAND]", "This help, or one command's.", "ringctl help list"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char global_help[] =
    "global options, before or after the command:\n"
    "  --server URL      the server (else $RINGMASTER_URL, else http://127.0.0.1:8080)\n"
    "  --token-file F    the token (else $RINGMASTER_TOKEN, else ./var/admin.token)\n"
    "  --json, -o json   the server's JSON instead of text\n"
    "  --wide, -o wide   more columns (list)\n"
    "  -o id             the job ids alone, one a line (list)\n"
    "  -h, --help        help (with a command: that command's)\n"
    "exit codes: 0 ok, 1 the server refused (problem printed) or --wait ended unapplied,\n"
    "  2 usage, 3 server unreachable\n";

static void usage(FILE *f)
{
    fprintf(f, "usage: ringctl [OPTIONS] COMMAND [ARGS]\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fputs(global_help, f);
    fprintf(f, "example: ringctl list --json; ringctl help COMMAND for more\n");
}

static const struct command *find_command(const char *name)
{
    for (size_t k = 0; k < NCOMMANDS; k++)
        if (!strcmp(name, commands[k].name))
            return &commands[k];
    return NULL;
}

static void command_help(const struct command *c)
{
    printf("usage: ringctl %s\n  %s\nexample: %s\n", c->usage, c->summary, c->example);
    fputs(global_help, stdout);
}

/* ringctl help [COMMAND]. */
static int help(int argc, char **argv)
{
    if (argc == 0) {
        usage(stdout);
        return RINGCTL_OK;
    }
    const struct command *c = argc == 1 ? find_command(argv[0]) : NULL;
    if (!c) {
        fprintf(stderr, "ringctl: help: no command '%s'\n", argv[0]);
        usage(stderr);
        return RINGCTL_USAGE;
    }
    command_help(c);
    return RINGCTL_OK;
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

int ringctl_parse_seconds(const char *flag, const char *s, double *v)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end || !(x >= 0 && x <= 86400 * 365)) {
        fprintf(stderr, "ringctl: %s: expected seconds, got '%s'\n", flag, s);
        return -1;
    }
    *v = x;
    return 0;
}

int ringctl_parse_period(const char *flag, const char *text, double *s)
{
    char *end;
    double v = strtod(text, &end);
    double unit = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
                          : !strcmp(end, "h")   ? 3600
                          : !strcmp(end, "d")   ? 86400
                                                : -1;
    if (end == text || unit < 0 || !(v > 0) || !(v * unit <= 86400.0 * 3660)) {
        fprintf(stderr, "ringctl: %s: expected a period like 7d, 12h, 30m or seconds, got '%s'\n",
                flag, text);
        return -1;
    }
    *s = v * unit;
    return 0;
}

double ringctl_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ringctl_sleep(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

int ringctl_usage(const char *usage)
{
    fprintf(stderr, "usage: ringctl %s\n", usage);
    return RINGCTL_USAGE;
}

void ringctl_print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s)
        puts(s);
    free(s);
}

/* The options every command takes, wherever they stand before a "--". */
struct globals {
    const char *server, *token_file;
    int help;
};

/* Takes a value for a global option (--opt VALUE or --opt=VALUE); NULL when it is not opt. */
static const char *opt_value(const char *opt, int argc, char **argv, int *i)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n))
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* -o json|wide|id. Returns 0, or -1 after printing why. */
static int output_format(struct ringctl *ctl, const char *v)
{
    if (!strcmp(v, "json"))
        ctl->json = 1;
    else if (!strcmp(v, "wide"))
        ctl->wide = 1;
    else if (!strcmp(v, "id"))
        ctl->ids = 1;
    else {
        fprintf(stderr, "ringctl: -o: expected json, wide or id, got '%s'\n", v);
        return -1;
    }
    return 0;
}

/* Consumes argv[*i] when it is a global option. Returns 1 if it was, 0 if not, -1 on a bad
 * value (printed). */
static int global_option(struct ringctl *ctl, struct globals *g, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--json"))
        ctl->json = 1;
    else if (!strcmp(a, "--wide"))
        ctl->wide = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        g->help = 1;
    else if ((v = opt_value("--server", argc, argv, i)))
        g->server = v;
    else if ((v = opt_value("--token-file", argc, argv, i)))
        g->token_file = v;
    else if ((v = opt_value("-o", argc, argv, i)))
        return output_format(ctl, v) < 0 ? -1 : 1;
    else
        return 0;
    return 1;
}

/* Moves the global options out of argv (up to a "--") into ctl and g; *argc becomes the
 * count of what is left, argv[0] included. Returns 0, or -1 after printing why. */
static int take_globals(struct ringctl *ctl, struct globals *g, int *argc, char **argv)
{
    int n = 1, i = 1;
    for (; i < *argc && strcmp(argv[i], "--"); i++) {
        int k = i, rc = global_option(ctl, g, *argc, argv, &k);
        if (rc < 0)
            return -1;
        if (rc == 0)
            argv[n++] = argv[i];
        i = k;
    }
    for (; i < *argc; i++)
        argv[n++] = argv[i];
    argv[n] = NULL;
    *argc = n;
    return 0;
}

static char *read_token(const struct globals *g)
{
    if (g->token_file)
        return read_token_file(g->token_file, 1);
    if (getenv("RINGMASTER_TOKEN"))
        return strdup(getenv("RINGMASTER_TOKEN"));
    return read_token_file("var/admin.token", 0);
}

int main(int argc, char **argv)
{
    struct globals g = {.server = getenv("RINGMASTER_URL")};
    struct ringctl ctl = {0};
    if (take_globals(&ctl, &g, &argc, argv) < 0)
        return RINGCTL_USAGE;
    if (argc < 2) {
        usage(g.help ? stdout : stderr);
        return g.help ? RINGCTL_OK : RINGCTL_USAGE;
    }
    const struct command *cmd = find_command(argv[1]);
    if (!cmd) {
        fprintf(stderr, "ringctl: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return RINGCTL_USAGE;
    }
    if (!cmd->run)
        return help(argc - 2, argv + 2);
    if (g.help) {
        command_help(cmd);
        return RINGCTL_OK;
    }
    char *token = read_token(&g);
    if (g.token_file && !token)
        return RINGCTL_USAGE;
    ctl.http = httpc_create(g.server ? g.server : "http://127.0.0.1:8080", token);
    free(token);
    if (!ctl.http)
        return RINGCTL_UNREACHABLE;
    int rc = cmd->run(&ctl, argc - 2, argv + 2);
    httpc_destroy(ctl.http);
    return rc;
}
