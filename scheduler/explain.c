/* sched_explain: why a job waits, in words a dashboard can show (see
 * sched.h). Built without stdio (the core is pure): text and integers only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "guarantee.h"
#include "policies/policy.h"
#include "sched.h"
#include "text.h"

/* "45 s", "3 min", "2 h 10 min". */
static void put_duration(struct text *t, double s)
{
    long long v = (long long)llround(s);

    if (v < 120) {
        text_put_long(t, v);
        text_put(t, " s");
    } else if (v < 7200) {
        text_put_long(t, (v + 30) / 60);
        text_put(t, " min");
    } else {
        text_put_long(t, v / 3600);
        text_put(t, " h ");
        text_put_long(t, (v % 3600) / 60);
        text_put(t, " min");
    }
}

/* One holder: "job 12 holds 8 GPUs: forecast to finish in 3 min (forecast P50)" by the
 * caller's forecast of it (the figure its own page shows) when there is one, else "...:
 * predicted to finish in 3 min (fit)" by the round's estimate at what it holds. */
static void put_holder(struct text *t, const struct sched_job *j, const struct sched_assignment *a,
                       double now)
{
    text_put(t, "job ");
    text_put_long(t, (long long)j->id);
    text_put(t, " holds ");
    text_put_long(t, a->gpus);
    text_put(t, a->gpus == 1 ? " GPU: " : " GPUs: ");
    if (a->forced == 1) {
        text_put(t, "it had waited longer than max_wait_s");
        return;
    }
    if (a->forced == 2) {
        text_put(t, "its user's fair share");
        return;
    }
    if (a->forced == 3) {
        text_put(t, "the least share that meets its deadline");
        return;
    }
    if (j->forecast_finish > now) {
        text_put(t, "forecast to finish in ");
        put_duration(t, j->forecast_finish - now);
        text_put(t, " (forecast P50)");
        return;
    }
    double left = policy_time_at(j, a->gpus);
    if (isfinite(left)) {
        text_put(t, "predicted to finish in ");
        put_duration(t, left);
        text_put(t, " (");
        text_put(t, sched_estimate_source_name(j->remaining_source));
        text_put(t, ")");
    } else {
        text_put(t, "no prediction yet (no speed model)");
    }
}

/* The count the job needs to start: min_gpus when elastic, else its request. */
static int need_of(const struct sched_job *j)
{
    return j->elastic ? policy_min_gpus(j) : j->requested_gpus;
}

/* The SCHED_EXPLAIN_HOLDERS assignments holding the most GPUs, into e->top. */
static void pick_holders(struct sched_explainer *e)
{
    const struct sched_decision *d = e->d;
    size_t n = 0, *pick = e->top;

    for (size_t i = 0; i < d->njobs; i++) {
        if (d->assign[i].gpus <= 0)
            continue;
        size_t k = n < SCHED_EXPLAIN_HOLDERS ? n++ : SCHED_EXPLAIN_HOLDERS;
        if (k == SCHED_EXPLAIN_HOLDERS && d->assign[i].gpus <= d->assign[pick[k - 1]].gpus)
            continue;
        if (k == SCHED_EXPLAIN_HOLDERS)
            k--;
        while (k > 0 && d->assign[pick[k - 1]].gpus < d->assign[i].gpus) {
            pick[k] = pick[k - 1];
            k--;
        }
        pick[k] = i;
    }
    e->ntop = n;
}

static int cmp_user(const void *a, const void *b)
{
    int64_t x = ((const struct sched_explain_user *)a)->user;
    int64_t y = ((const struct sched_explain_user *)b)->user;
    return x < y ? -1 : x > y;
}

/* The GPUs each user's jobs hold in the decision, by user id. */
static int sum_users(struct sched_explainer *e)
{
    const struct sched_snapshot *snap = e->snap;
    size_t n = e->d->njobs < snap->njobs ? e->d->njobs : snap->njobs, k = 0;

    e->users = malloc((n + 1) * sizeof(*e->users));
    if (!e->users)
        return -1;
    for (size_t i = 0; i < n; i++)
        e->users[i] = (struct sched_explain_user){snap->jobs[i].user_id, e->d->assign[i].gpus};
    qsort(e->users, n, sizeof(*e->users), cmp_user);
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && e->users[k - 1].user == e->users[i].user)
            e->users[k - 1].held += e->users[i].held;
        else
            e->users[k++] = e->users[i];
    }
    e->nusers = k;
    return 0;
}

static long user_held(const struct sched_explainer *e, int64_t user)
{
    struct sched_explain_user key = {user, 0};
    if (!e->users)
        return 0;
    const struct sched_explain_user *u =
        bsearch(&key, e->users, e->nusers, sizeof(key), cmp_user);
    return u ? u->held : 0;
}

/* "; user 3 holds 8 of its quota of 8 GPUs" when the quota stops the job. */
static void put_quota(struct text *t, const struct sched_explainer *e, const struct sched_job *j)
{
    int quota = guarantee_user_quota(e->snap, j->user_id);
    long held = user_held(e, j->user_id);

    if (held + need_of(j) <= quota)
        return;
    text_put(t, "; user ");
    text_put_long(t, (long long)j->user_id);
    text_put(t, " holds ");
    text_put_long(t, held);
    text_put(t, " of its quota of ");
    text_put_long(t, quota);
    text_put(t, " GPUs");
}

/* "; waiting for GPUs on at most 1 switch (12 s of 60 s)" while its switch bound holds it. */
static void put_switches(struct text *t, const struct sched_snapshot *snap,
                         const struct sched_job *j)
{
    if (!domain_switch_bound(snap, j))
        return;
    text_put(t, "; waiting for GPUs on at most ");
    text_put_long(t, j->max_switches);
    text_put(t, j->max_switches == 1 ? " switch (" : " switches (");
    put_duration(t, domain_waited_s(snap, j));
    text_put(t, " of ");
    put_duration(t, j->max_switches_wait_s);
    text_put(t, ")");
}

int sched_explainer_init(struct sched_explainer *e, const struct sched_snapshot *snap,
                         const struct sched_decision *d)
{
    *e = (struct sched_explainer){.snap = snap, .d = d};
    if (!snap || !d)
        return 0;
    pick_holders(e);
    return sum_users(e);
}

void sched_explainer_fini(struct sched_explainer *e)
{
    free(e->users);
    e->users = NULL;
    e->nusers = 0;
}

size_t sched_explainer_text(const struct sched_explainer *e, size_t i, char *buf, size_t len)
{
    struct text t = {buf, 0, buf ? len : 0};
    const struct sched_snapshot *snap = e->snap;
    const struct sched_decision *d = e->d;

    text_put(&t, "");
    if (!snap || !d || i >= d->njobs || i >= snap->njobs)
        return 0;
    const struct sched_job *j = &snap->jobs[i];
    if (d->assign[i].gpus > 0) {
        text_put(&t, d->assign[i].reason);
        return t.len;
    }
    text_put(&t, "needs ");
    text_put_long(&t, need_of(j));
    text_put(&t, need_of(j) == 1 ? " GPU, " : " GPUs, ");
    text_put_long(&t, d->capacity - d->used);
    text_put(&t, " free");
    put_switches(&t, snap, j);
    put_quota(&t, e, j);
    for (size_t k = 0; k < e->ntop; k++) { /* a waiting job holds nothing: never its own */
        text_put(&t, "; ");
        put_holder(&t, &snap->jobs[e->top[k]], &d->assign[e->top[k]], snap->now);
    }
    return t.len;
}

size_t sched_explain(const struct sched_snapshot *snap, const struct sched_decision *d, size_t i,
                     char *buf, size_t len)
{
    struct sched_explainer e;
    size_t n = 0;

    if (sched_explainer_init(&e, snap, d) == 0)
        n = sched_explainer_text(&e, i, buf, len);
    else if (buf && len)
        buf[0] = '\0';
    sched_explainer_fini(&e);
    return n;
}
