/* agent: the state of one ringmaster-worker daemon, shared by its main loop (main.c) and
 * the jobs it runs (wjob.c). Owned by main(); only the main thread touches it, except the
 * fields marked atomic, which the action poller thread reads or writes too. */
#ifndef RINGMASTER_AGENT_H
#define RINGMASTER_AGENT_H

#include <stdatomic.h>

struct httpc;
struct outbox;
struct doneset;
struct wjob;

struct agent {
    const char *server;
    const char *name;
    const char *state_dir;
    const char *token_file;
    char self[4096]; /* this binary, the rank wrapper of every launch */
    char token[256];
    struct httpc *http;   /* the main thread's connection */
    struct outbox *out;   /* reports waiting for the server */
    struct doneset *done; /* actions carried out */
    struct wjob *jobs;    /* jobs of this node */
    struct json_t *node_metrics; /* jobs' metrics posts not yet queued, as one node's post
                                    (jobreport.c); NULL when none */
    int node_items;              /* the reports in it */
    double node_metrics_at;      /* when the node's post was last queued */
    int simulated;        /* the GPUs are simulated (CPU-backed) */
    double control_s;     /* a suspend or resume fails when not done in this long */
    atomic_llong node_id; /* 0 until registered */
    atomic_int need_register;
    atomic_int stopping;
};

/* CLOCK_MONOTONIC seconds. */
double agent_now(void);

#endif
