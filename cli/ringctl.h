/* ringctl internals shared by its command files. */
#ifndef RINGMASTER_RINGCTL_H
#define RINGMASTER_RINGCTL_H

#include <jansson.h>
#include <stddef.h>

#include "httpc.h"

/* Exit codes scripts can test. */
enum ringctl_exit {
    RINGCTL_OK = 0,
    RINGCTL_API_ERROR = 1,   /* the server answered with a problem (4xx/5xx) */
    RINGCTL_USAGE = 2,       /* bad command line */
    RINGCTL_UNREACHABLE = 3, /* could not talk to the server */
};

struct ringctl {
    struct httpc *http;
    int json; /* --json, -o json: print the server's JSON as is */
    int wide; /* --wide, -o wide: more columns */
    int ids;  /* -o id: the ids alone, one a line (list) */
};

/* Sends the request; on a 2xx answer stores it in *out (new reference, may be
 * NULL) and returns RINGCTL_OK; otherwise prints the problem to stderr and
 * returns the exit code. */
int ringctl_call(struct ringctl *ctl, const char *method, const char *path, json_t *body,
                 const char *extra_header, json_t **out);

/* Parses s as an integer lo..hi into *v. Returns 0, or -1 after printing why (naming flag). */
int ringctl_parse_int(const char *flag, const char *s, long long lo, long long hi, long long *v);

/* Writes "/api/v1/jobs/ID" + suffix into buf. Returns 0, or -1 (printed) when id is not a
 * positive integer. */
int ringctl_job_path(const char *id, const char *suffix, char *buf, size_t len);

/* Parses s as seconds 0..1 year into *v. Returns 0, or -1 after printing why (naming flag). */
int ringctl_parse_seconds(const char *flag, const char *s, double *v);

/* "7d", "12h", "30m", "90s" or plain seconds (up to ten years) into *s. Returns 0, or -1
 * after printing why (naming flag). */
int ringctl_parse_period(const char *flag, const char *text, double *s);

/* Seconds on the monotonic clock. */
double ringctl_mono_s(void);

/* Sleeps s seconds (s <= 0: not at all). */
void ringctl_sleep(double s);

/* Prints v as indented JSON on stdout. */
void ringctl_print_json(json_t *v);

/* Prints "usage: ringctl USAGE" on stderr; returns RINGCTL_USAGE. */
int ringctl_usage(const char *usage);

/* What --wait waits for after a request. */
enum ringctl_goal {
    RINGCTL_GOAL_SUSPENDED, /* suspend: the job is SUSPENDED */
    RINGCTL_GOAL_RUNNING,   /* resume: RUNNING again */
    RINGCTL_GOAL_SIZE,      /* resize: RUNNING on gpus GPUs (or PENDING asking for them) */
    RINGCTL_GOAL_MOVED,     /* migrate: RUNNING after a migration (or on another node) */
};

struct ringctl_wait {
    long long job;
    const char *kind; /* "suspend", "resize", ... for the messages */
    enum ringctl_goal goal;
    long long gpus;         /* RINGCTL_GOAL_SIZE */
    double timeout_s;       /* 0: until Ctrl-C */
    long long after_event;  /* events up to this id are old (ringctl_wait_prepare) */
    long long from_node;    /* the job's first node before the request */
    int moved;              /* a MIGRATING -> RUNNING event came */
};

/* Before the request: notes the job's latest event and its node in w. Returns RINGCTL_OK or
 * an exit code (the problem printed). */
int ringctl_wait_prepare(struct ringctl *ctl, struct ringctl_wait *w);

/* After the request: polls the job and its events, printing each new event (text), until the
 * request is applied (prints the outcome, or the job with --json; RINGCTL_OK), the job ended
 * or another request replaced it, or w->timeout_s passed (RINGCTL_API_ERROR, why on stderr). */
int ringctl_wait_run(struct ringctl *ctl, struct ringctl_wait *w);

/* What ringctl_array_resolve() found: beside the exit codes, an array's id. */
#define RINGCTL_ARRAY_WHOLE 100

/* Reads a job named on the command line: "ID" (a job, or an array: its first job's id) or
 * "ARRAY_ID_INDEX" (one job of an array, as list shows it) into *id. Returns RINGCTL_OK (a
 * job's id), RINGCTL_ARRAY_WHOLE (an array's id: "ID" is its first job), or an exit code
 * (printed). */
int ringctl_array_resolve(struct ringctl *ctl, const char *arg, long long *id);

/* Cancels every job of the array whose id is array that has not ended. Prints how many
 * (--json: the jobs as they are then). Returns RINGCTL_OK, or an exit code: the first
 * refusal's (the others are still tried). */
int ringctl_array_cancel(struct ringctl *ctl, long long array);

/* Commands: argc/argv start after the command name. */
int ringctl_cmd_submit(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_list(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_show(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_cancel(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_events(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_nodes(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_user(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_node(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_suspend(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_resume(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_resize(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_migrate(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_watch(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_policy(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_health(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_whatif(struct ringctl *ctl, int argc, char **argv);
int ringctl_cmd_report(struct ringctl *ctl, int argc, char **argv);

#endif
