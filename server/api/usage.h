/* usage: GET /api/v1/reports/usage, the ledger of GPU time (sql/039_usage_ledger.sql): for
 * each user, job array or UTC day, the GPU-hours allocated, useful (with the steps of
 * progress made), idle while allocated and lost by cause, as `sreport` gives them. */
#ifndef RINGMASTER_USAGE_H
#define RINGMASTER_USAGE_H

struct api_call;

/* Days one report may span at most. */
#define USAGE_DAYS_MAX 3660
/* Days a report spans when since= is absent: the last 30, today included. */
#define USAGE_DAYS_DEFAULT 30

/* GET /api/v1/reports/usage?since=DAY&until=DAY&by=KEYS&user=NAME: the ledger's rows of
 * since..until (UTC days, both included; YYYY-MM-DD or an RFC 3339 time, read as its UTC
 * day), summed by KEYS (one to three of user, array, day, comma-separated; default user),
 * with the sum of all of them. A user sees only their own jobs; an admin every user's, or
 * one user's with user=. 200 {"since", "until", "by", "as_of", "items": [...], "total"};
 * 400 naming a bad parameter. */
void usage_get(struct api_call *call);

#endif
