/* settings: the scheduler's settings, described once. One table (settings.c) says of each
 * setting its name, its type, its bounds, its default and where it lands in struct settings;
 * the server's API validates a PUT /api/v1/scheduler with it, the server's store reads and
 * writes table scheduler_config by it (one column per setting, named as the setting), what-if
 * writes the simulator's options with it and ringmaster-sim run parses them back with it.
 *
 * Adding a setting: a member of struct settings, a row in the table (settings.c), a column
 * of scheduler_config (sql/) of the same name, and its use. Nothing else reads a list of them.
 *
 * The core stays pure: nothing here formats text; the callers write the error texts (the
 * API's "max_wait_s: expected a number 1..2.592e+06") from the bounds of the table. */
#ifndef RINGMASTER_SCHED_SETTINGS_H
#define RINGMASTER_SCHED_SETTINGS_H

#include <stddef.h>

#define SETTINGS_POLICY_MAX 32 /* a policy's name, with its NUL */
#define SETTINGS_MAX 32        /* the table has at most this many rows (arrays per setting) */

/* The settings' values, in the order of the table. */
struct settings {
    char policy[SETTINGS_POLICY_MAX]; /* a policy of sched_policy_list() */
    double interval_s;                /* seconds between timed rounds */
    double node_timeout_s;            /* a node silent this long is DOWN */
    double min_resize_interval_s;     /* hysteresis of the core */
    double resize_cost_s;             /* assumed cost of a resize until one is measured */
    double grace_s;                   /* a job losing GPUs gets this long to checkpoint */
    double quantum_s;                 /* time-slice length of policy gandiva (docs/gandiva.md) */
    double explore_stage_s;           /* seconds an exploring job runs at each of 1, 2, 4, 8 GPUs */
    double max_wait_s;                /* a job that fits gets GPUs within this of being runnable */
    int paused;                       /* 1: no rounds (nodes are not marked DOWN either) */
    int hold_unmet_deps; /* 1: a job whose dependency can no longer be met stays PENDING, held
                          * (deps.h); 0: it is cancelled */
    double min_runtime_s; /* a running job is not preempted within this of its start (preempt.h) */
};

enum settings_type {
    SETTINGS_POLICY,  /* char[SETTINGS_POLICY_MAX]: the name of a policy of the core */
    SETTINGS_SECONDS, /* double within [min, max] */
    SETTINGS_BOOL,    /* int, 0 or 1 */
};

/* One row of the table. */
struct settings_desc {
    const char *name; /* the JSON key and the column of scheduler_config */
    enum settings_type type;
    size_t offset;          /* where it lands in struct settings */
    double min, max;        /* SETTINGS_SECONDS: the server's bounds (PUT, the column's CHECK) */
    double def;             /* a new installation's value (the column's DEFAULT); a bool's 0/1 */
    const char *def_policy; /* SETTINGS_POLICY: a new installation's policy */
    /* ringmaster-sim run's option for it (flag "interval": --interval S), NULL when the
     * simulator has none; its bounds and default there, which differ from the server's
     * (experiments run hour-long rounds; the simulator's max wait is off, 0, by default). */
    const char *flag;
    double sim_min, sim_max, sim_def;
};

/* The table, in the order of struct settings' members; a row whose name is NULL ends it. */
const struct settings_desc *settings_list(void);

/* The rows before the end (at most SETTINGS_MAX). */
size_t settings_count(void);

/* The row named name, or NULL. */
const struct settings_desc *settings_find(const char *name);

/* The row whose simulator option is flag (without its "--"), or NULL. */
const struct settings_desc *settings_find_flag(const char *flag);

/* s = a new installation's settings (each row's def, def_policy). */
void settings_defaults(struct settings *s);

/* s = the simulator's settings when no option is given: sim_def where a row has a flag, the
 * server's default elsewhere. */
void settings_sim_defaults(struct settings *s);

/* The double of a SETTINGS_SECONDS row in s; NULL for another type. */
double *settings_seconds(const struct settings_desc *d, struct settings *s);
double settings_seconds_of(const struct settings_desc *d, const struct settings *s);

/* The int of a SETTINGS_BOOL row in s (0 or 1); NULL for another type. */
int *settings_bool(const struct settings_desc *d, struct settings *s);
int settings_bool_of(const struct settings_desc *d, const struct settings *s);

/* The name of a SETTINGS_POLICY row in s; NULL for another type. */
const char *settings_policy_of(const struct settings_desc *d, const struct settings *s);

/* 1 when v is within the server's bounds of the SETTINGS_SECONDS row d (NAN is not), else 0. */
int settings_in_bounds(const struct settings_desc *d, double v);

/* Sets the SETTINGS_POLICY row d of s to the policy named name. Returns 0, or -1 (s
 * unchanged) when the core has no such policy. */
int settings_set_policy(const struct settings_desc *d, struct settings *s, const char *name);

/* Sets row d of s from the text a column or an option holds: a policy's name, a number
 * (strtod), a boolean ("t", "true", "f", "false"). Checks no bound (the store's CHECK and the
 * callers do). Returns 0, or -1 (s unchanged) on text that is none of these. */
int settings_set_text(const struct settings_desc *d, struct settings *s, const char *text);

#endif
