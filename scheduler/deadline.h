/* deadline: the one rule of a job's deadline verdict (issue 33): given when the forecast says
 * the job finishes, whether it meets its deadline, and the words the submission's answer,
 * `ringctl submit` and the job page show ("forecast finish ~Thu 14:10, before the deadline",
 * "will miss by ~3h at the current load"). The forecast is the caller's input, a plain finish
 * time: today the queue-order forecast (forecast.h) plus the job's time alone. Pure: no I/O,
 * no stdio, no clock (the caller writes the finish time as local text). */
#ifndef RINGMASTER_SCHED_DEADLINE_H
#define RINGMASTER_SCHED_DEADLINE_H

#include <stddef.h>

enum deadline_verdict {
    DEADLINE_NONE,    /* the job has no deadline */
    DEADLINE_UNKNOWN, /* no forecast of its finish (no model, no prior, no GPUs ever) */
    DEADLINE_MEETS,   /* the forecast finish is at or before the deadline */
    DEADLINE_MISSES,  /* the forecast finish is after it */
};

/* The verdict for deadline (seconds, the caller's clock; <= 0: none) and the forecast
 * finish on the same clock (< 0 or not finite: unknown). */
enum deadline_verdict deadline_check(double deadline, double finish);

/* "meets", "misses", "unknown" or "none": the verdict's name in the API. */
const char *deadline_verdict_name(enum deadline_verdict v);

/* A span of seconds as the verdict words it: "~40m", "~3h", "~2d" (rounded, at least 1m). */
size_t deadline_span_text(double s, char *buf, size_t len);

/* The verdict's text into buf (len bytes, terminated when len > 0); returns the length the
 * text needed. finish_label is the forecast finish as the caller writes it in local time
 * ("Thu 14:10"); NULL or "" leaves it out. MEETS: "forecast finish ~Thu 14:10, before the
 * deadline"; MISSES: "forecast finish ~Thu 14:10: will miss by ~3h at the current load";
 * UNKNOWN: "no forecast yet: the deadline cannot be checked"; NONE: "" (returns 0). */
size_t deadline_text(double deadline, double finish, const char *finish_label, char *buf,
                     size_t len);

#endif
