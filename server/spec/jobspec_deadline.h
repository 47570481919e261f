/* jobspec_deadline: a submission's "deadline" (issue 33 item 3), an RFC 3339 date-time
 * ("2026-12-05T18:00:00Z", "2026-12-05T18:00:00+01:00", fractions of a second allowed): when
 * the job should be finished. Its rule, its parsing and its writing back in UTC; the jobs
 * table stores it as a timestamptz (sql/042). jobspec.h includes it. Pure (jansson only). */
#ifndef RINGMASTER_JOBSPEC_DEADLINE_H
#define RINGMASTER_JOBSPEC_DEADLINE_H

#include <jansson.h>
#include <stddef.h>

struct fieldcheck;

/* An RFC 3339 date-time (the date, "T" or "t" or a space, the time with seconds, an optional
 * fraction, and "Z", "z" or an offset +hh:mm / -hh:mm), years 1970..9999, into epoch seconds
 * in *at. Returns 0, or -1 when s is not one (a bad field, day or month, a leap second). */
int jobspec_deadline_parse(const char *s, double *at);

/* "deadline" of body (optional): a string jobspec_deadline_parse() takes, into *at (left as
 * it is without one); a broken rule names the field. */
void jobspec_deadline_check(struct fieldcheck *c, const json_t *body, double *at);

/* at (epoch seconds) as RFC 3339 in UTC with the fraction the API writes its timestamps with:
 * "2026-12-05T18:00:00.000000Z". Returns what snprintf returns. */
int jobspec_deadline_text(double at, char *buf, size_t len);

#endif
