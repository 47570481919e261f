/* timefmt: the server's UTC timestamps parsed, and the times ringctl prints for people:
 * relative ("in 3m12s", "2m05s ago"), local, elapsed like squeue's TIME, and a duration to
 * go ("about 9 min"). */
#include "timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int timefmt_parse(const char *s, time_t *t)
{
    struct tm tm = {0};
    int n = 0;
    if (!s ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6 ||
        n != 19)
        return -1;
    const char *rest = s + n;
    if (*rest == '.')
        rest += 1 + strspn(rest + 1, "0123456789");
    if (strcmp(rest, "Z") && strcmp(rest, "+00:00"))
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *t = timegm(&tm);
    return 0;
}

/* "+PERIOD": a number and s, m, h or d, after now. */
static int parse_ahead(const char *s, time_t now, time_t *t)
{
    char *end;
    double v = strtod(s + 1, &end);
    double unit = !strcmp(end, "s")   ? 1
                  : !strcmp(end, "m") ? 60
                  : !strcmp(end, "h") ? 3600
                  : !strcmp(end, "d") ? 86400
                                      : -1;
    if (end == s + 1 || unit < 0 || !(v > 0) || !(v * unit < 86400.0 * 3660))
        return -1;
    *t = now + (time_t)(v * unit + 0.5);
    return 0;
}

/* What follows the time: nothing (local), "Z", or an offset +hh:mm; *east its seconds. */
static int parse_zone(const char *z, int *local, long *east)
{
    int h, m, n = 0;
    *local = *z == '\0';
    *east = 0;
    if (*local || !strcmp(z, "Z") || !strcmp(z, "z"))
        return 0;
    if ((z[0] != '+' && z[0] != '-') || sscanf(z + 1, "%2d:%2d%n", &h, &m, &n) != 2 || n != 5 ||
        z[6] != '\0' || h > 23 || m > 59)
        return -1;
    *east = (z[0] == '-' ? -1 : 1) * (h * 3600L + m * 60L);
    return 0;
}

int timefmt_parse_user(const char *s, time_t now, time_t *t)
{
    struct tm tm = {0};
    int n = 0, local;
    long east;
    if (!s)
        return -1;
    if (s[0] == '+')
        return parse_ahead(s, now, t);
    if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10)
        return -1;
    const char *p = s + n;
    if (*p == '\0') {
        tm.tm_hour = 23;
        tm.tm_min = tm.tm_sec = 59;
    } else {
        int k = 0;
        if ((*p != 'T' && *p != 't' && *p != ' ') ||
            sscanf(p + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &k) != 2 || k != 5)
            return -1;
        p += 1 + k;
        if (*p == ':' && (sscanf(p + 1, "%2d%n", &tm.tm_sec, &k) != 1 || k != 2))
            return -1;
        p += *p == ':' ? 3 : 0;
    }
    if (parse_zone(p, &local, &east) || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
        return -1;
    int mday = tm.tm_mday, mon = tm.tm_mon;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    *t = local ? mktime(&tm) : timegm(&tm) - east;
    /* mktime and timegm carry 2026-02-30 into March: not a day */
    return tm.tm_mday == mday && tm.tm_mon == mon - 1 ? 0 : -1;
}

/* d seconds (>= 0) as "45s", "3m12s" or "59m59s". */
static void short_span(long long d, char *buf, size_t len)
{
    if (d < 60)
        snprintf(buf, len, "%llds", d);
    else
        snprintf(buf, len, "%lldm%02llds", d / 60, d % 60);
}

void timefmt_when(time_t t, time_t now, char *buf, size_t len)
{
    long long d = (long long)t - (long long)now;
    char span[32];
    if (d == 0) {
        snprintf(buf, len, "now");
        return;
    }
    if (d > -3600 && d < 3600) {
        short_span(d < 0 ? -d : d, span, sizeof(span));
        snprintf(buf, len, d > 0 ? "in %s" : "%s ago", span);
        return;
    }
    struct tm lt, ln;
    localtime_r(&t, &lt);
    localtime_r(&now, &ln);
    int today = lt.tm_year == ln.tm_year && lt.tm_yday == ln.tm_yday;
    strftime(buf, len, today ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &lt);
}

void timefmt_elapsed(long long s, char *buf, size_t len)
{
    if (s < 0)
        s = 0;
    long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
    else if (h)
        snprintf(buf, len, "%lld:%02lld:%02lld", h, m, sec);
    else
        snprintf(buf, len, "%lld:%02lld", m, sec);
}

void timefmt_about(double s, char *buf, size_t len)
{
    if (!(s >= 1.0))
        snprintf(buf, len, "under a second");
    else if (s < 90)
        snprintf(buf, len, "about %.0f s", s);
    else if (s < 90 * 60)
        snprintf(buf, len, "about %.0f min", s / 60);
    else if (s < 48 * 3600)
        snprintf(buf, len, "about %.1f h", s / 3600);
    else
        snprintf(buf, len, "about %.1f days", s / 86400);
}

/* "45s", "3m", "2h10m", "1d4h". */
static void span(double s, char *buf, size_t len)
{
    long long n = (long long)(s + 0.5);
    if (n < 60)
        snprintf(buf, len, "%llds", n);
    else if (n < 3600)
        snprintf(buf, len, "%lldm", (n + 30) / 60);
    else if (n < 86400)
        snprintf(buf, len, "%lldh%02lldm", n / 3600, n % 3600 / 60);
    else
        snprintf(buf, len, "%lldd%lldh", n / 86400, n % 86400 / 3600);
}

void timefmt_forecast(double p50, double p90, time_t now, char *buf, size_t len)
{
    char d[32];
    double to = p50 - (double)now;
    if (p50 < 0) {
        snprintf(buf, len, "-");
        return;
    }
    if (to < 1) {
        snprintf(buf, len, "now");
        return;
    }
    span(to, d, sizeof(d));
    int narrow = p90 >= p50 && p90 - p50 <= (to / 4 > 60 ? to / 4 : 60);
    snprintf(buf, len, "%s%s", narrow ? "in " : "~", d);
}

void timefmt_forecast_text(const char *p50, const char *p90, time_t now, char *buf,
                           size_t len)
{
    time_t a, b;
    double x = timefmt_parse(p50, &a) == 0 ? (double)a : -1;
    double y = timefmt_parse(p90, &b) == 0 ? (double)b : -1;
    timefmt_forecast(x, y, now, buf, len);
}

const char *timefmt_when_text(const char *s, time_t now, char *buf, size_t len, const char *def)
{
    time_t t;
    if (timefmt_parse(s, &t) < 0)
        return def;
    timefmt_when(t, now, buf, len);
    return buf;
}
