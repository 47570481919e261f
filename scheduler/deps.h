/* deps: the one rule of a job's dependencies ("after": run after other jobs end). A job that
 * depends on others is not scheduled until every dependency is met; a dependency that can no
 * longer be met ends the wait (the server cancels the job, or holds it when the setting
 * hold_unmet_deps says so). The server hands in, for each dependency, the states of the jobs
 * it names as counts; this file decides and words the reason. Pure: no I/O, no stdio. */
#ifndef RINGMASTER_SCHED_DEPS_H
#define RINGMASTER_SCHED_DEPS_H

#include <stddef.h>
#include <stdint.h>

/* How the jobs a dependency names must end (the API's "when"). */
enum deps_when {
    DEPS_OK,    /* "ok": every one COMPLETED (the default) */
    DEPS_ANY,   /* "any": every one ended, however */
    DEPS_NOTOK, /* "notok": every one ended, and at least one FAILED or was CANCELLED */
};

/* One dependency as the server read it. A job dependency names one job (total 1); an array
 * dependency names every element of the array (total: their count). total 0: the jobs it
 * named are gone from the database (it can never be met). */
struct deps_target {
    int64_t id; /* the job's id, or the array's (its first element's id) */
    int array;  /* 1: id names an array */
    enum deps_when when;
    int total;         /* the jobs it names */
    int ok;            /* of them, COMPLETED */
    int notok;         /* of them, FAILED or CANCELLED */
    const char *state; /* a job dependency: the job's state ("RUNNING"); NULL for an array */
};

enum deps_verdict {
    DEPS_MET,   /* it may be scheduled */
    DEPS_WAIT,  /* not yet: some job it names has not ended */
    DEPS_NEVER, /* it can no longer be met */
};

/* The verdict of one dependency. */
enum deps_verdict deps_check(const struct deps_target *t);

/* The verdict of n dependencies together: NEVER when one can no longer be met, else WAIT
 * when one waits, else MET (n 0: MET). *which (may be NULL) is the index of the first
 * dependency of that verdict (n when MET). */
enum deps_verdict deps_check_all(const struct deps_target *t, size_t n, size_t *which);

/* The reason of a job whose dependencies are not met, into buf (len bytes, terminated when
 * len > 0); returns the length the text needed, 0 when they are met. Waiting: "waiting for
 * job 12, RUNNING; array 7, 3 of 8 ended". Not to be met: "dependency on job 12 can no longer
 * be met: it FAILED", with "held: " before it when hold is 1. */
size_t deps_reason(const struct deps_target *t, size_t n, int hold, char *buf, size_t len);

/* "ok", "any", "notok" for w. */
const char *deps_when_name(enum deps_when w);

/* The when named name. Returns 0, or -1 (w unchanged) for another name. */
int deps_when_parse(const char *name, enum deps_when *w);

#endif
