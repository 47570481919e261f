/* decide_int: what decide_input.c (the snapshot's reader) and decide_observe.c (a job's
 * observations: speed, batch, loss, model source, explored time) share: the input being read,
 * its typed getters (decide_int.c), each with a path in its message, and the readers of a
 * job's observations. Internal to the simulator. */
#ifndef RINGMASTER_SIM_DECIDE_INT_H
#define RINGMASTER_SIM_DECIDE_INT_H

#include <jansson.h>
#include <stddef.h>

#include "learn_types.h"
#include "sched.h"

#define DECIDE_MAX_POINTS 4096
/* the first gpu_model of a gpu_type the simulator does not know, as the server numbers them
 * (server/live/snap.c) */
#define DECIDE_UNKNOWN_MODEL 100

struct decide_input {
    struct sched_snapshot snap;
    struct sched_node *nodes;
    struct sched_job *jobs;
    struct sched_slot **slots;
    struct sched_user *users;
    double *finished;
    size_t njobs;
    int total_gpus;
    const char **type_names; /* per node: its gpu_type (borrowed), or NULL */
    /* per job: the steps of observations that name their gpu_type, and the storage of its
     * models per type (learn_types.h); obs NULL: none */
    struct learn_job_steps *steps;
    int typed;          /* some job's observations name their gpu_type */
    const char *policy; /* borrowed from the JSON document */
    json_t *root;       /* the JSON document */
    char *err;
    size_t errlen;
};

/* Sets in's message to "path: what" and errno EINVAL; returns -1. */
int decide_bad(struct decide_input *in, const char *path, const char *what);
/* Number member key of o into *v: def when absent, an error when not a finite number within
 * [lo, hi]. */
int decide_get_num(struct decide_input *in, json_t *o, const char *path, const char *key, double lo,
                   double hi, double def, double *v);
/* Whole number member key of o into *v: def when absent, an error when not within [lo, hi]. */
int decide_get_int(struct decide_input *in, json_t *o, const char *path, const char *key,
                   long long lo, long long hi, long long def, long long *v);
/* Boolean member key of o into *v: def when absent. */
int decide_get_bool(struct decide_input *in, json_t *o, const char *path, const char *key, int def,
                    int *v);
/* Array member (NULL if absent); an error if present and not an array of at most max. */
int decide_get_array(struct decide_input *in, json_t *o, const char *path, const char *key,
                     size_t max, json_t **arr);

/* A job's members read by decide_observe.c; each returns 0, or -1 with in's message set. */
int decide_read_speed(struct decide_input *in, json_t *o, const char *path, size_t j,
                      struct sched_job *job);
int decide_read_batch(struct decide_input *in, json_t *o, const char *path, struct sched_job *job);
int decide_read_loss(struct decide_input *in, json_t *o, const char *path, struct sched_job *job,
                     int remaining_given);
int decide_read_model_source(struct decide_input *in, json_t *o, const char *path,
                             struct sched_job *job);
int decide_read_explored(struct decide_input *in, json_t *o, const char *path,
                         struct sched_job *job);

/* The nodes' topology (decide_topology.c): "islands", "switch", "rack" of each node of arr,
 * after the nodes are read. Returns 0, or -1 with in's message set. */
int decide_read_topology(struct decide_input *in, json_t *arr);
/* A job's "max_switches" and "max_switches_wait_s". Returns 0, or -1 with in's message set. */
int decide_read_switch_bound(struct decide_input *in, json_t *o, const char *path,
                             struct sched_job *job);

#endif
