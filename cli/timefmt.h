/* timefmt: the times ringctl prints for people, to the second: relative when near ("in 3m12s",
 * "2m05s ago"), else local time; elapsed times like squeue's TIME ("1-02:03:04"). */
#ifndef RINGMASTER_TIMEFMT_H
#define RINGMASTER_TIMEFMT_H

#include <stddef.h>
#include <time.h>

/* Parses the server's UTC timestamps ("2026-01-01T12:10:00.123456Z", fraction optional) into
 * *t (seconds, the fraction dropped). Returns 0, or -1 when s is NULL or not one. */
int timefmt_parse(const char *s, time_t *t);

/* A time as a person gives it on the command line (ringctl submit --deadline) into *t:
 * "2026-12-05T18:00" or "2026-12-05 18:00[:SS]" in local time; with "Z" or an offset
 * ("2026-12-05T18:00Z", "2026-12-05T18:00:00+01:00") in that zone; "2026-12-05" the end of
 * that local day (23:59:59); "+PERIOD" ("+6h", "+2d", "+90m") from now. Returns 0, or -1 when
 * s is not one of these. */
int timefmt_parse_user(const char *s, time_t now, time_t *t);

/* t seen from now: "now", "in 45s", "in 3m12s", "2m05s ago" within an hour; else the local
 * time "13:02:03" when on now's local day, or "2026-11-24 13:02:03". */
void timefmt_when(time_t t, time_t now, char *buf, size_t len);

/* A duration still to go for people, rounded: "about 45 s", "about 9 min", "about 3.5 h",
 * "about 2.1 days"; "under a second" below 1 s (negative counts as 0). */
void timefmt_about(double s, char *buf, size_t len);

/* Seconds as elapsed time: "0:05", "3:12", "1:02:03", "1-02:03:04" (negative counts as 0). */
void timefmt_elapsed(long long s, char *buf, size_t len);

/* A forecast (docs/forecast.md) seen from now, compact for a table column: its P50 as "in 3m",
 * "in 2h10m", "in 1d4h" when the band is narrow (P90 at most a quarter, or a minute, past
 * it), "~2h10m" when it is not (p90 < 0: unknown, not narrow); "now" when due; "-" when p50
 * < 0 (unknown). */
void timefmt_forecast(double p50, double p90, time_t now, char *buf, size_t len);

/* timefmt_forecast of the server's forecast object's members p50 and p90 (RFC 3339). */
void timefmt_forecast_text(const char *p50, const char *p90, time_t now, char *buf,
                           size_t len);

/* timefmt_when of the server's timestamp s, or def when s is not one. Returns buf or def. */
const char *timefmt_when_text(const char *s, time_t now, char *buf, size_t len, const char *def);

#endif
