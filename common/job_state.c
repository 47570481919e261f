/* job_state: the job state machine's transition table (job_state_next()) and the names of
 * states and events. Pure. */
#include "job_state.h"

#include <string.h>

#define BIT(s) (1u << (s))
#define ACTIVE                                                                                     \
    (BIT(JOB_STARTING) | BIT(JOB_RUNNING) | BIT(JOB_SUSPENDED) | BIT(JOB_RESIZING) |               \
     BIT(JOB_MIGRATING))

/* For each event: the states it may leave from, and the state it leads to. */
static const struct {
    unsigned from;
    enum job_state to;
    const char *name;
} transitions[JOB_EVENT_COUNT] = {
    [JOB_EV_START] = {BIT(JOB_PENDING), JOB_STARTING, "start"},
    [JOB_EV_RUNNING] = {BIT(JOB_STARTING) | BIT(JOB_RESIZING) | BIT(JOB_MIGRATING), JOB_RUNNING,
                        "running"},
    [JOB_EV_SUSPEND] = {BIT(JOB_RUNNING), JOB_SUSPENDED, "suspend"},
    [JOB_EV_RESUME] = {BIT(JOB_SUSPENDED), JOB_RUNNING, "resume"},
    [JOB_EV_RESIZE] = {BIT(JOB_RUNNING), JOB_RESIZING, "resize"},
    [JOB_EV_MIGRATE] = {BIT(JOB_RUNNING) | BIT(JOB_SUSPENDED), JOB_MIGRATING, "migrate"},
    [JOB_EV_REQUEUE] = {ACTIVE, JOB_PENDING, "requeue"},
    [JOB_EV_COMPLETE] = {BIT(JOB_RUNNING), JOB_COMPLETED, "complete"},
    [JOB_EV_FAIL] = {ACTIVE, JOB_FAILED, "fail"},
    [JOB_EV_CANCEL] = {BIT(JOB_PENDING) | ACTIVE, JOB_CANCELLED, "cancel"},
};

static const char *const state_names[JOB_STATE_COUNT] = {
    "PENDING",   "STARTING",  "RUNNING", "SUSPENDED", "RESIZING",
    "MIGRATING", "COMPLETED", "FAILED",  "CANCELLED",
};

int job_state_next(enum job_state from, enum job_event ev, enum job_state *to)
{
    if ((unsigned)from >= JOB_STATE_COUNT || (unsigned)ev >= JOB_EVENT_COUNT)
        return -1;
    if (!(transitions[ev].from & BIT(from)))
        return -1;
    *to = transitions[ev].to;
    return 0;
}

bool job_state_is_terminal(enum job_state s)
{
    return s == JOB_COMPLETED || s == JOB_FAILED || s == JOB_CANCELLED;
}

const char *job_state_name(enum job_state s)
{
    if ((unsigned)s >= JOB_STATE_COUNT)
        return NULL;
    return state_names[s];
}

int job_state_parse(const char *name, enum job_state *out)
{
    if (!name)
        return -1;
    for (int i = 0; i < JOB_STATE_COUNT; i++) {
        if (strcmp(name, state_names[i]) == 0) {
            *out = (enum job_state)i;
            return 0;
        }
    }
    return -1;
}

const char *job_event_name(enum job_event ev)
{
    if ((unsigned)ev >= JOB_EVENT_COUNT)
        return NULL;
    return transitions[ev].name;
}
