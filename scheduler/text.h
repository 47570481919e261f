/* text: the core's one writer of short texts into a caller's buffer, without stdio (the core
 * is pure): the reasons of sched_explain() and of a job's dependencies (deps.h). */
#ifndef RINGMASTER_SCHED_TEXT_H
#define RINGMASTER_SCHED_TEXT_H

#include <stddef.h>

/* A buffer of cap bytes (buf may be NULL when cap is 0). len counts every byte written,
 * even those past cap, so that a caller learns the length the text needed. */
struct text {
    char *buf;
    size_t len, cap;
};

/* Appends s; the buffer stays terminated when cap > 0 (cut short when full). */
void text_put(struct text *t, const char *s);

/* Appends v in decimal. */
void text_put_long(struct text *t, long long v);

#endif
