/* config: the live scheduler's settings, table scheduler_config (PUT /api/v1/scheduler
 * writes them; each round reads them afresh). */
#ifndef RINGMASTER_LIVE_CONFIG_H
#define RINGMASTER_LIVE_CONFIG_H

#include <libpq-fe.h>
#include <stddef.h>

/* The settings (table scheduler_config). */
struct sched_config {
    char policy[32];
    double interval_s;            /* seconds between timed rounds */
    double node_timeout_s;        /* a node silent this long is DOWN */
    double min_resize_interval_s; /* hysteresis of the core */
    double resize_cost_s;         /* assumed cost of a resize until one is measured */
    double grace_s;               /* a job losing GPUs gets this long to checkpoint */
    double quantum_s;             /* time-slice length of policy gandiva (docs/gandiva.md) */
    double explore_stage_s;       /* seconds an exploring job runs at each of 1, 2, 4, 8 GPUs */
    double max_wait_s;            /* a job that fits gets GPUs within this of being runnable */
    int paused;                   /* 1: no rounds (nodes are not marked DOWN either) */
};

/* Reads the settings. Returns 0, or -1 with text in err. */
int sched_config_load(PGconn *c, struct sched_config *cfg, char *err, size_t errlen);

#endif
