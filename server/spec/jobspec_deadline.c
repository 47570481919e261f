/* jobspec_deadline: a submission's "deadline", RFC 3339, read and written without the C
 * library's time zones (jobspec_deadline.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fieldcheck.h"
#include "jobspec_deadline.h"

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static int days_in_month(long long y, unsigned m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* n digits at *p into *v; advances *p. Returns 0, or -1. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int k = 0; k < n; k++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        *v = *v * 10 + (**p - '0');
    }
    return 0;
}

/* The offset after the time: Z, or +hh:mm / -hh:mm, into seconds east of UTC. */
static int offset(const char *p, int *east)
{
    int sign, h, m;
    if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
        *east = 0;
        return 0;
    }
    if (p[0] != '+' && p[0] != '-')
        return -1;
    sign = p[0] == '-' ? -1 : 1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p != '\0' || h > 23 || m > 59)
        return -1;
    *east = sign * (h * 3600 + m * 60);
    return 0;
}

int jobspec_deadline_parse(const char *s, double *at)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, east;
    double frac = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return -1;
    if (*p == '.') {
        double unit = 0.1;
        if (p[1] < '0' || p[1] > '9')
            return -1;
        for (p++; *p >= '0' && *p <= '9'; p++, unit /= 10)
            frac += (*p - '0') * unit;
    }
    if (offset(p, &east) || y < 1970 || mo < 1 || mo > 12 || d < 1 ||
        d > days_in_month(y, (unsigned)mo) || h > 23 || mi > 59 || sec > 59)
        return -1;
    long long days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    *at = (double)(days * 86400 + h * 3600 + mi * 60 + sec - east) + frac;
    return 0;
}

void jobspec_deadline_check(struct fieldcheck *c, const json_t *body, double *at)
{
    const json_t *v = json_object_get(body, "deadline");
    double t;
    if (!v)
        return;
    if (!json_is_string(v) || jobspec_deadline_parse(json_string_value(v), &t) < 0 || t <= 0) {
        fieldcheck_fail(c, "deadline",
                        "expected an RFC 3339 date-time such as \"2026-12-05T18:00:00Z\" or "
                        "\"2026-12-05T18:00:00+01:00\"");
        return;
    }
    *at = t;
}

/* y-m-d of days from 1970-01-01 (Howard Hinnant's civil_from_days). */
static void civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (long long)yoe + era * 400 + (*m <= 2);
}

int jobspec_deadline_text(double at, char *buf, size_t len)
{
    double whole = floor(at);
    long long s = (long long)whole, days = s / 86400, rest = s % 86400;
    long usec = lround((at - whole) * 1e6);
    if (usec >= 1000000) { /* rounded up to the next second */
        usec = 0;
        rest++;
    }
    if (rest < 0) {
        rest += 86400;
        days--;
    }
    if (rest >= 86400) {
        rest -= 86400;
        days++;
    }
    long long y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    return snprintf(buf, len, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06ldZ", y, m, d, rest / 3600,
                    rest / 60 % 60, rest % 60, usec);
}
