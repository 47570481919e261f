/* ringctl list: the jobs as a table like squeue's (ID, ARRAY_ID_INDEX for an array's, NAME,
 * USER, STATE, GPUS, TIME, PROGRESS, START and FINISH (the forecasts' P50), REASON/FINISH;
 * --wide adds the allocation and the submit time), once or every --interval seconds with
 * --watch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job_state.h"
#include "ringctl.h"
#include "table.h"
#include "timefmt.h"

#define LIST_USAGE                                                                                 \
    "list [--state S] [--user U] [--array ID] [--limit N] [--all] [--wide|-o wide]\n"              \
    "         [--watch [--interval S] [--count N] [--timeout S]]"

struct list_opts {
    char query[512]; /* "&state=..&user=.." */
    int all, watch;
    double interval_s, timeout_s; /* --watch: between redraws; 0: until Ctrl-C */
    long long count;              /* --watch: redraws, 0: until Ctrl-C */
    json_t *starts;               /* job id -> its start (epoch s), read once for --watch */
};

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int query_arg(struct list_opts *o, const char *flag, const char *v)
{
    const char *key = !strcmp(flag, "--state")   ? "state"
                      : !strcmp(flag, "--user")  ? "user"
                      : !strcmp(flag, "--array") ? "array"
                      : !strcmp(flag, "--limit") ? "limit"
                                                 : NULL;
    if (!key || !v || strpbrk(v, "&?#= /"))
        return -1;
    size_t n = strlen(o->query);
    snprintf(o->query + n, sizeof(o->query) - n, "&%s=%s", key, v);
    return 0;
}

/* Fills o from the arguments. Returns 0, or -1 after printing the usage. */
static int list_args(struct list_opts *o, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--all"))
            o->all = 1;
        else if (!strcmp(a, "--watch"))
            o->watch = 1;
        else if (!strcmp(a, "--interval") && v)
            bad = ringctl_parse_seconds(a, argv[++i], &o->interval_s);
        else if (!strcmp(a, "--timeout") && v)
            bad = ringctl_parse_seconds(a, argv[++i], &o->timeout_s);
        else if (!strcmp(a, "--count") && v)
            bad = ringctl_parse_int(a, argv[++i], 1, 1LL << 40, &o->count);
        else if (query_arg(o, a, v) == 0)
            i++;
        else
            bad = -1;
        if (bad) {
            ringctl_usage(LIST_USAGE);
            return -1;
        }
    }
    return 0;
}

/* GETs the jobs (every page with --all) into *items (new). */
static int fetch_jobs(struct ringctl *ctl, const struct list_opts *o, json_t **items)
{
    char path[1024], cursor[128] = "";
    int rc;
    *items = json_array();
    do {
        /* --all without --limit: the largest pages, fewest requests */
        const char *big = o->all && !strstr(o->query, "&limit=") ? "&limit=1000" : "";
        char q[700]; /* "&k=v..." */
        snprintf(q, sizeof(q), "%s%s%s%s", o->query, big, cursor[0] ? "&after=" : "", cursor);
        snprintf(path, sizeof(path), "/api/v1/jobs%s%s", q[0] ? "?" : "", q[0] ? q + 1 : "");
        json_t *out;
        rc = ringctl_call(ctl, "GET", path, NULL, NULL, &out);
        if (rc != RINGCTL_OK)
            break;
        json_array_extend(*items, json_object_get(out, "items"));
        json_t *next = json_object_get(out, "next");
        cursor[0] = '\0';
        if (json_is_string(next))
            snprintf(cursor, sizeof(cursor), "%s", json_string_value(next));
        else if (json_is_integer(next))
            snprintf(cursor, sizeof(cursor), "%" JSON_INTEGER_FORMAT, json_integer_value(next));
        json_decref(out);
    } while (o->all && cursor[0]);
    return rc;
}

/* When the job last left the queue for its GPUs (its latest PENDING -> STARTING or RUNNING
 * event), from its events: the job object carries no start time. Returns 0, or -1 when it
 * never started or the events could not be read. */
static int start_time(struct ringctl *ctl, json_t *job, time_t *t)
{
    char path[96];
    long status = 0;
    json_t *out = NULL;
    char err[256];
    snprintf(path, sizeof(path), "/api/v1/jobs/%" JSON_INTEGER_FORMAT "/events",
             json_integer_value(json_object_get(job, "id")));
    if (httpc_request(ctl->http, "GET", path, NULL, NULL, &status, &out, err, sizeof(err)) < 0 ||
        status != 200) {
        json_decref(out);
        return -1;
    }
    const char *at = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(out, "items"), i, e)
    {
        const char *from = str(e, "from"), *to = str(e, "to");
        if (from && to && !strcmp(from, "PENDING") &&
            (!strcmp(to, "STARTING") || !strcmp(to, "RUNNING")))
            at = str(e, "at");
    }
    int rc = timefmt_parse(at, t);
    json_decref(out);
    return rc;
}

/* start_time, remembered in o->starts while the job does not go back to the queue. */
static int cached_start(struct ringctl *ctl, struct list_opts *o, json_t *job, time_t *t)
{
    char key[32];
    snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(job, "id")));
    const char *state = str(job, "state");
    if (state && !strcmp(state, "PENDING")) {
        json_object_del(o->starts, key);
        return -1;
    }
    json_t *v = json_object_get(o->starts, key);
    if (json_is_integer(v)) {
        *t = (time_t)json_integer_value(v);
        return 0;
    }
    if (start_time(ctl, job, t) < 0)
        return -1;
    json_object_set_new(o->starts, key, json_integer((json_int_t)*t));
    return 0;
}

static int terminal(const char *state)
{
    enum job_state st;
    return state && job_state_parse(state, &st) == 0 && job_state_is_terminal(st);
}

/* TIME: how long the job has run (since its start; an ended one, start to finish). */
static void fmt_elapsed(struct ringctl *ctl, struct list_opts *o, json_t *job, time_t now,
                        char *buf, size_t len)
{
    const char *state = str(job, "state");
    time_t start, end = now;
    if (!state || cached_start(ctl, o, job, &start) < 0) {
        snprintf(buf, len, terminal(state) || (state && !strcmp(state, "PENDING")) ? "0:00" : "?");
        return;
    }
    if (terminal(state) && timefmt_parse(str(job, "finished_at"), &end) < 0)
        end = start;
    timefmt_elapsed((long long)(end - start), buf, len);
}

/* REASON/FINISH: why a pending job waits; why a running one's finish is not known (its
 * remaining work's reason); when an ended one finished. When a job should start and finish
 * is in START and FINISH alone (one figure, docs/forecast.md). */
static void fmt_reason(json_t *job, time_t now, char *buf, size_t len)
{
    const char *state = str(job, "state");
    char when[64];
    if (state && !strcmp(state, "PENDING")) {
        const char *reason = str(job, "pending_reason");
        snprintf(buf, len, "(%s)", reason ? reason : "waiting");
    } else if (terminal(state)) {
        snprintf(buf, len, "finished %s",
                 timefmt_when_text(str(job, "finished_at"), now, when, sizeof(when), "?"));
    } else if (state && !strcmp(state, "SUSPENDED")) {
        snprintf(buf, len, "(suspended)");
    } else {
        const char *why = str(json_object_get(job, "remaining"), "reason");
        if (why)
            snprintf(buf, len, "(%s)", why);
        else
            snprintf(buf, len, "-");
    }
}

/* START (a pending job's) and FINISH (a pending or running job's): its forecast's P50 from
 * now, "in 3m" when sure, "~2h10m" when not (docs/forecast.md); until the first forecast pass
 * the last round's prediction (the API's predicted_start/_finish), shown as unsure ("~"):
 * it has no P90; "-" when neither. */
static void fmt_forecast(json_t *job, const char *which, time_t now, char *buf, size_t len)
{
    json_t *f = json_object_get(job, "forecast");
    const char *state = str(job, "state");
    int pending = state && !strcmp(state, "PENDING");
    char p50[16], p90[16], round[32];
    snprintf(p50, sizeof(p50), "%s_p50", which);
    snprintf(p90, sizeof(p90), "%s_p90", which);
    snprintf(round, sizeof(round), "predicted_%s", which);
    if (!strcmp(which, "start") && !pending)
        snprintf(buf, len, "-");
    else if (json_is_object(f))
        timefmt_forecast_text(str(f, p50), str(f, p90), now, buf, len);
    else
        timefmt_forecast_text(str(job, round), NULL, now, buf, len);
}

/* PROGRESS: "45%" of the steps the job declared or reported (its "progress"), else of the
 * epochs the scheduler plans with (its "remaining": done over done and to go, "~7%"), "-"
 * when neither is known. */
static void fmt_progress(json_t *job, char *buf, size_t len)
{
    json_t *p = json_object_get(job, "progress");
    json_t *pct = json_object_get(p, "percent");
    json_t *rem = json_object_get(job, "remaining");
    double done = json_number_value(json_object_get(rem, "epochs_done"));
    json_t *left = json_object_get(rem, "epochs");
    if (json_is_number(pct))
        snprintf(buf, len, "%d%%", (int)json_number_value(pct));
    else if (json_is_number(left) && done + json_number_value(left) > 0)
        snprintf(buf, len, "~%d%%", (int)(100 * done / (done + json_number_value(left))));
    else
        snprintf(buf, len, "-");
}

/* GPUS: those held ("2"), the size asked for when it holds none, or both while they differ
 * ("2->4"). An elastic job holds what the scheduler gives it within its bounds: those held
 * and the bounds ("8 (1-8)"; "8->1" read as a shrink that nobody asked for). */
static void fmt_gpus(json_t *job, char *buf, size_t len)
{
    json_int_t want = json_integer_value(json_object_get(job, "gpus"));
    json_int_t held = json_integer_value(json_object_get(job, "world_size"));
    json_int_t lo = json_integer_value(json_object_get(job, "min_gpus"));
    json_int_t hi = json_integer_value(json_object_get(job, "max_gpus"));
    if (held > 0 && json_is_true(json_object_get(job, "elastic")) && lo > 0 && hi >= lo)
        snprintf(buf, len,
                 "%" JSON_INTEGER_FORMAT " (%" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT ")",
                 held, lo, hi);
    else if (held > 0 && held != want)
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT "->%" JSON_INTEGER_FORMAT, held, want);
    else
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, want);
}

/* NODE[GPUS]: "1[0,1] 2[0]", or "-" when it holds none. */
static void fmt_alloc(json_t *job, char *buf, size_t len)
{
    size_t i, k, n = 0;
    json_t *a, *g;
    buf[0] = '\0';
    json_array_foreach(json_object_get(job, "allocation"), i, a)
    {
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%" JSON_INTEGER_FORMAT "[",
                              i ? " " : "", json_integer_value(json_object_get(a, "node")));
        json_array_foreach(json_object_get(a, "gpus"), k, g) n +=
            (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%" JSON_INTEGER_FORMAT,
                             k ? "," : "", json_integer_value(g));
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "]");
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

/* ID: the job's id, or ARRAY_ID_INDEX for a job of an array ("41_3", as squeue shows them). */
static void fmt_id(json_t *job, char *buf, size_t len)
{
    json_t *array = json_object_get(job, "array_id");
    if (json_is_integer(array))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT "_%" JSON_INTEGER_FORMAT,
                 json_integer_value(array),
                 json_integer_value(json_object_get(job, "array_index")));
    else
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(job, "id")));
}

static void print_jobs(struct ringctl *ctl, struct list_opts *o, json_t *items)
{
    static const char *const head[] = {"ID",       "NAME",  "USER",   "STATE",
                                       "GPUS",     "TIME",  "PROGRESS", "START",
                                       "FINISH",   "REASON/FINISH", "NODE[GPUS]",
                                       "SUBMITTED"};
    struct table *t = table_create(ctl->wide ? 12 : 10, head);
    time_t now = time(NULL);
    size_t i;
    json_t *j;
    json_array_foreach(items, i, j)
    {
        char id[48], gpus[72], el[32], prog[16], why[512], alloc[512], sub[64], start[32],
            fin[32];
        fmt_id(j, id, sizeof(id));
        fmt_gpus(j, gpus, sizeof(gpus));
        fmt_elapsed(ctl, o, j, now, el, sizeof(el));
        fmt_progress(j, prog, sizeof(prog));
        fmt_forecast(j, "start", now, start, sizeof(start));
        fmt_forecast(j, "finish", now, fin, sizeof(fin));
        fmt_reason(j, now, why, sizeof(why));
        fmt_alloc(j, alloc, sizeof(alloc));
        const char *row[] = {id,
                             str(j, "name"),
                             str(j, "user"),
                             str(j, "state"),
                             gpus,
                             el,
                             prog,
                             start,
                             fin,
                             why,
                             alloc,
                             timefmt_when_text(str(j, "submitted_at"), now, sub, sizeof(sub), "?")};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

/* One listing: a table, the JSON array indented, or (compact) the array on one line. */
static int list_once(struct ringctl *ctl, struct list_opts *o, int compact)
{
    json_t *items;
    int rc = fetch_jobs(ctl, o, &items);
    char *s = rc == RINGCTL_OK && compact ? json_dumps(items, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    size_t i;
    json_t *j;
    if (s)
        puts(s);
    else if (rc == RINGCTL_OK && ctl->ids && !ctl->json)
        json_array_foreach(items, i, j)
            printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(j, "id")));
    else if (rc == RINGCTL_OK)
        ctl->json ? ringctl_print_json(items) : print_jobs(ctl, o, items);
    free(s);
    json_decref(items);
    return rc;
}

/* --watch: redraws (clearing a terminal first) until Ctrl-C, --count or --timeout; with
 * --json, one JSON array a line and no heading. */
static int list_watch(struct ringctl *ctl, struct list_opts *o)
{
    double start = ringctl_mono_s(), iv = o->interval_s > 0 ? o->interval_s : 2.0;
    int tty = isatty(STDOUT_FILENO);
    for (long long n = 1;; n++) {
        time_t now = time(NULL);
        char at[32];
        strftime(at, sizeof(at), "%Y-%m-%d %H:%M:%S", localtime(&now));
        if (!ctl->json)
            printf("%sEvery %gs: ringctl list    %s\n\n",
                   tty     ? "\033[H\033[2J"
                   : n > 1 ? "\n"
                           : "",
                   iv, at);
        int rc = list_once(ctl, o, ctl->json);
        fflush(stdout);
        if (rc != RINGCTL_OK)
            return rc;
        double left = o->timeout_s > 0 ? o->timeout_s - (ringctl_mono_s() - start) : iv;
        if ((o->count && n >= o->count) || left <= 0)
            return RINGCTL_OK;
        ringctl_sleep(left < iv ? left : iv);
    }
}

int ringctl_cmd_list(struct ringctl *ctl, int argc, char **argv)
{
    struct list_opts o = {.interval_s = 2.0};
    if (list_args(&o, argc, argv) < 0)
        return RINGCTL_USAGE;
    o.starts = json_object();
    int rc = o.watch ? list_watch(ctl, &o) : list_once(ctl, &o, 0);
    json_decref(o.starts);
    return rc;
}
