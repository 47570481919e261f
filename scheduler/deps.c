/* deps: whether a job's dependencies are met, can still be met, and the reason in words
 * (deps.h): the one place that decides it, for the server's rounds. */
#include "deps.h"

#include <string.h>

#include "text.h"

static const char *const when_names[] = {"ok", "any", "notok"};

const char *deps_when_name(enum deps_when w)
{
    return (unsigned)w < 3 ? when_names[w] : "ok";
}

int deps_when_parse(const char *name, enum deps_when *w)
{
    for (int k = 0; name && k < 3; k++)
        if (!strcmp(name, when_names[k])) {
            *w = (enum deps_when)k;
            return 0;
        }
    return -1;
}

enum deps_verdict deps_check(const struct deps_target *t)
{
    int ended = t->ok + t->notok;

    if (t->total <= 0)
        return DEPS_NEVER;
    if (t->when == DEPS_OK && t->notok > 0)
        return DEPS_NEVER; /* one failed: "every one COMPLETED" is out of reach */
    if (ended < t->total)
        return DEPS_WAIT;
    if (t->when == DEPS_NOTOK && t->notok == 0)
        return DEPS_NEVER;
    return DEPS_MET;
}

enum deps_verdict deps_check_all(const struct deps_target *t, size_t n, size_t *which)
{
    enum deps_verdict v = DEPS_MET;
    size_t at = n;

    for (size_t i = 0; i < n && v != DEPS_NEVER; i++) {
        enum deps_verdict vi = deps_check(&t[i]);
        if (vi > v) { /* NEVER over WAIT over MET */
            v = vi;
            at = i;
        }
    }
    if (which)
        *which = at;
    return v;
}

/* "job 12" or "array 7". */
static void put_name(struct text *out, const struct deps_target *t)
{
    text_put(out, t->array ? "array " : "job ");
    text_put_long(out, (long long)t->id);
}

/* ", RUNNING" for a job; ", 3 of 8 ended" for an array. */
static void put_progress(struct text *out, const struct deps_target *t)
{
    text_put(out, ", ");
    if (!t->array) {
        text_put(out, t->state ? t->state : "PENDING");
        return;
    }
    text_put_long(out, t->ok + t->notok);
    text_put(out, " of ");
    text_put_long(out, t->total);
    text_put(out, " ended");
}

/* Why t can no longer be met: "it FAILED", "it COMPLETED", "1 of 8 did not complete". */
static void put_never(struct text *out, const struct deps_target *t)
{
    text_put(out, "dependency on ");
    put_name(out, t);
    text_put(out, " can no longer be met: ");
    if (t->total <= 0) {
        text_put(out, t->array ? "its jobs are gone" : "it is gone");
    } else if (!t->array) {
        text_put(out, "it ");
        text_put(out, t->state ? t->state : "ended");
    } else if (t->when == DEPS_OK) {
        text_put_long(out, t->notok);
        text_put(out, " of ");
        text_put_long(out, t->total);
        text_put(out, " did not complete");
    } else {
        text_put(out, "all ");
        text_put_long(out, t->total);
        text_put(out, " completed");
    }
    text_put(out, " (after ");
    text_put(out, deps_when_name(t->when));
    text_put(out, ")");
}

size_t deps_reason(const struct deps_target *t, size_t n, int hold, char *buf, size_t len)
{
    struct text out = {buf, 0, buf ? len : 0};
    size_t at;

    text_put(&out, "");
    enum deps_verdict v = deps_check_all(t, n, &at);
    if (v == DEPS_MET)
        return 0;
    if (v == DEPS_NEVER) {
        text_put(&out, hold ? "held: " : "");
        put_never(&out, &t[at]);
        return out.len;
    }
    text_put(&out, "waiting for ");
    for (size_t i = at, k = 0; i < n; i++) {
        if (deps_check(&t[i]) != DEPS_WAIT)
            continue;
        text_put(&out, k++ ? "; " : "");
        put_name(&out, &t[i]);
        put_progress(&out, &t[i]);
    }
    return out.len;
}
