/* job_state: the job state machine, pure (no I/O), shared by the server, the worker and the
 * simulator. Every change of a job's state goes through job_state_next(); a move it refuses
 * is the API's 409. */
#ifndef RINGMASTER_JOB_STATE_H
#define RINGMASTER_JOB_STATE_H

#include <stdbool.h>

enum job_state {
    JOB_PENDING,
    JOB_STARTING,
    JOB_RUNNING,
    JOB_SUSPENDED,
    JOB_RESIZING,
    JOB_MIGRATING,
    JOB_COMPLETED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_STATE_COUNT
};

/* What happens to a job. Each event is legal from a fixed set of states only. */
enum job_event {
    JOB_EV_START,    /* PENDING -> STARTING: resources granted, launch begins */
    JOB_EV_RUNNING,  /* STARTING, RESIZING, MIGRATING -> RUNNING: ranks report progress */
    JOB_EV_SUSPEND,  /* RUNNING -> SUSPENDED: time-sliced out at a minibatch boundary */
    JOB_EV_RESUME,   /* SUSPENDED -> RUNNING */
    JOB_EV_RESIZE,   /* RUNNING -> RESIZING: checkpoint, restart at another world size */
    JOB_EV_MIGRATE,  /* RUNNING, SUSPENDED -> MIGRATING: checkpoint, restart elsewhere */
    JOB_EV_REQUEUE,  /* STARTING, RUNNING, SUSPENDED, RESIZING, MIGRATING -> PENDING (node lost) */
    JOB_EV_COMPLETE, /* RUNNING -> COMPLETED */
    JOB_EV_FAIL,     /* any non-terminal state but PENDING -> FAILED */
    JOB_EV_CANCEL,   /* any non-terminal state -> CANCELLED */
    JOB_EVENT_COUNT
};

/* The one transition function. Returns 0 and stores the new state in *to, or -1 (and leaves
 * *to alone) when ev is illegal in state from or either value is out of range. */
int job_state_next(enum job_state from, enum job_event ev, enum job_state *to);

/* True for COMPLETED, FAILED and CANCELLED: no event leaves them. */
bool job_state_is_terminal(enum job_state s);

/* Upper-case name ("PENDING"), or NULL when s is out of range. Static storage. */
const char *job_state_name(enum job_state s);

/* Parses an upper-case name. Returns 0, or -1 for an unknown name (or NULL). */
int job_state_parse(const char *name, enum job_state *out);

/* Lower-case event name ("cancel"), or NULL when out of range. Static storage. */
const char *job_event_name(enum job_event ev);

#endif
