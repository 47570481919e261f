/* deadline: whether a forecast finish meets a job's deadline, and the words for it
 * (deadline.h). */
#include "deadline.h"

#include <math.h>

#include "text.h"

enum deadline_verdict deadline_check(double deadline, double finish)
{
    if (!(deadline > 0) || !isfinite(deadline))
        return DEADLINE_NONE;
    if (!(finish >= 0) || !isfinite(finish))
        return DEADLINE_UNKNOWN;
    return finish <= deadline ? DEADLINE_MEETS : DEADLINE_MISSES;
}

const char *deadline_verdict_name(enum deadline_verdict v)
{
    static const char *const names[] = {"none", "unknown", "meets", "misses"};

    return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "unknown";
}

/* Rounded to the unit a person reads the span in: minutes under an hour, hours under two
 * days, days beyond. */
static void put_span(struct text *t, double s)
{
    double m = s / 60.0;

    text_put(t, "~");
    if (!(m < 59.5)) {
        double h = m / 60.0;
        if (h < 47.5) {
            text_put_long(t, (long long)(h + 0.5));
            text_put(t, "h");
            return;
        }
        text_put_long(t, (long long)(h / 24.0 + 0.5));
        text_put(t, "d");
        return;
    }
    text_put_long(t, m < 1.0 ? 1 : (long long)(m + 0.5));
    text_put(t, "m");
}

size_t deadline_span_text(double s, char *buf, size_t len)
{
    struct text t = {buf, 0, len};

    if (len)
        buf[0] = '\0';
    put_span(&t, isfinite(s) && s > 0 ? s : 0);
    return t.len;
}

static void put_finish(struct text *t, const char *label)
{
    text_put(t, "forecast finish");
    if (label && *label) {
        text_put(t, " ~");
        text_put(t, label);
    }
}

size_t deadline_text(double deadline, double finish, const char *finish_label, char *buf,
                     size_t len)
{
    struct text t = {buf, 0, len};

    if (len)
        buf[0] = '\0';
    switch (deadline_check(deadline, finish)) {
    case DEADLINE_NONE:
        break;
    case DEADLINE_UNKNOWN:
        text_put(&t, "no forecast yet: the deadline cannot be checked");
        break;
    case DEADLINE_MEETS:
        put_finish(&t, finish_label);
        text_put(&t, ", before the deadline");
        break;
    case DEADLINE_MISSES:
        put_finish(&t, finish_label);
        text_put(&t, ": will miss by ");
        put_span(&t, finish - deadline);
        text_put(&t, " at the current load");
        break;
    }
    return t.len;
}
