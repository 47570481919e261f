/* The guarantees every policy goes through (scheduler/guarantee.c): no
 * starvation past max_wait_s, fair shares between users, quotas; and the
 * explanation of a waiting job. */
#include <math.h>

#include "sched_fixture.h"

static struct sched_decision *decide(struct fx *f, const char *policy)
{
    struct sched_decision *d = sched_decide(sched_policy_find(policy), &f->snap);

    cr_assert_not_null(d, "sched_decide(%s)", policy);
    fx_check_feasible(&f->snap, d);
    return d;
}

/* A rigid job of n GPUs, running on node 0 from GPU first when first >= 0. */
static struct sched_job *rigid(struct fx *f, int64_t id, int n, int first)
{
    struct sched_job *j = fx_job(f, id, n);

    j->elastic = 0;
    j->min_gpus = j->max_gpus = n;
    if (first >= 0) {
        fx_hold(f, j, 0, first, n);
        j->submit_time = f->snap.now - 10000 + (double)id; /* ahead in the queue */
        j->run_time = 100;
        j->last_change_time = f->snap.now - 100;
    }
    return j;
}

Test(guard, a_job_past_max_wait_preempts_a_rigid_job_when_nothing_else_frees_gpus)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    rigid(&f, 1, 8, 0);
    struct sched_job *late = rigid(&f, 2, 1, -1);
    late->submit_time = f.snap.now - 4000;
    /* Off: fifo keeps it waiting behind the 8-GPU job. */
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 0);
    sched_decision_destroy(d);
    f.snap.max_wait_s = SCHED_MAX_WAIT_S;
    d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 1, "waited 4000 s > 3600 s");
    cr_assert_eq(d->assign[1].forced, 1);
    cr_assert_eq(d->assign[0].gpus, 0, "the rigid job yields: no other way");
    sched_decision_destroy(d);
    /* Not yet past the limit: nothing moves. */
    late->submit_time = f.snap.now - 3000;
    d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 0);
    cr_assert_eq(d->assign[0].gpus, 8);
    sched_decision_destroy(d);
}

Test(guard, elastic_jobs_shrink_before_anyone_is_preempted)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *big = fx_job(&f, 1, 8);
    fx_hold(&f, big, 0, 0, 8);
    big->submit_time = f.snap.now - 10000;
    big->run_time = 100;
    struct sched_job *late = rigid(&f, 2, 2, -1);
    late->submit_time = f.snap.now - 4000;
    f.snap.max_wait_s = SCHED_MAX_WAIT_S;
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 2);
    cr_assert_eq(d->assign[0].gpus, 6, "shrunk toward its minimum, not preempted");
    sched_decision_destroy(d);
}

Test(guard, the_rigid_job_with_most_attained_service_yields)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *young = rigid(&f, 1, 4, 0), *old = rigid(&f, 2, 4, 4);
    young->run_time = 100;
    old->run_time = 50000;
    struct sched_job *late = rigid(&f, 3, 4, -1);
    late->submit_time = f.snap.now - 4000;
    f.snap.max_wait_s = SCHED_MAX_WAIT_S;
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[2].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 0, "the one that ran longest yields");
    cr_assert_eq(d->assign[0].gpus, 4);
    sched_decision_destroy(d);
}

Test(guard, a_time_sliced_job_is_suspended_for_a_starving_one)
{
    static struct fx f;

    fx_init(&f, 1, 1);
    struct sched_job *run = rigid(&f, 1, 1, 0);
    run->last_change_time = f.snap.now - 10; /* inside its quantum */
    struct sched_job *late = rigid(&f, 2, 1, -1);
    late->submit_time = f.snap.now - 4000;
    late->last_change_time = f.snap.now - 3990;
    f.snap.max_wait_s = 1800;
    struct sched_decision *d = decide(&f, "gandiva");
    cr_assert_eq(d->assign[1].gpus, 1);
    cr_assert_eq(d->assign[0].gpus, 0);
    cr_assert(d->assign[0].suspended, "it yields by suspension");
    sched_decision_destroy(d);
}

Test(guard, every_policy_serves_a_starving_job)
{
    const struct sched_policy_ops *const *p = sched_policy_list();
    static struct fx f;

    for (; *p; p++) {
        fx_init(&f, 1, 4);
        for (int k = 0; k < 4; k++)
            rigid(&f, 1 + k, 1, k)->remaining_epochs = 1;
        struct sched_job *late = rigid(&f, 9, 1, -1);
        late->remaining_epochs = 1e6; /* the models say: never */
        late->submit_time = f.snap.now - 7200;
        f.snap.max_wait_s = SCHED_MAX_WAIT_S;
        struct sched_decision *d = decide(&f, (*p)->name);
        cr_assert_eq(d->assign[4].gpus, 1, "policy %s starves it", (*p)->name);
        sched_decision_destroy(d);
    }
}

Test(guard, a_user_below_its_share_reclaims_lent_gpus)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    rigid(&f, 1, 4, 0)->user_id = 1;
    rigid(&f, 2, 4, 4)->user_id = 1;
    struct sched_job *other = rigid(&f, 3, 4, -1);
    other->user_id = 2;
    /* One user: user 1 may use the whole cluster (its share is lent). */
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[2].gpus, 4, "two users of equal share: 4 GPUs each");
    cr_assert_eq(d->assign[2].forced, 2);
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 4);
    sched_decision_destroy(d);
    /* Without user 2's job, user 1 keeps all 8. */
    f.snap.njobs = 2;
    d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8);
    sched_decision_destroy(d);
}

Test(guard, shares_are_weighted)
{
    static struct fx f;
    static const struct sched_user users[] = {{.id = 1, .share = 3}, {.id = 2, .share = 1}};

    fx_init(&f, 1, 8);
    for (int k = 0; k < 8; k++)
        rigid(&f, 1 + k, 1, k)->user_id = 2;
    for (int k = 0; k < 8; k++)
        rigid(&f, 20 + k, 1, -1)->user_id = 1;
    f.snap.users = users;
    f.snap.nusers = 2;
    struct sched_decision *d = decide(&f, "fifo");
    int u1 = 0, u2 = 0;
    for (size_t i = 0; i < d->njobs; i++)
        *(f.jobs[i].user_id == 1 ? &u1 : &u2) += d->assign[i].gpus;
    cr_assert_eq(u1, 6, "share 3 of 4: 6 of 8 GPUs, got %d", u1);
    cr_assert_eq(u2, 2);
    sched_decision_destroy(d);
}

Test(guard, a_quota_caps_a_users_gpus)
{
    static struct fx f;
    static const struct sched_user users[] = {{.id = 1, .share = 1, .max_gpus = 4}};

    fx_init(&f, 1, 8);
    rigid(&f, 1, 4, -1)->user_id = 1;
    rigid(&f, 2, 4, -1)->user_id = 1;
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].gpus + d->assign[1].gpus, 8, "no quota set yet");
    sched_decision_destroy(d);
    f.snap.users = users;
    f.snap.nusers = 1;
    d = decide(&f, "fifo");
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 0, "over its quota of 4");
    sched_decision_destroy(d);
}

Test(guard, a_waiting_job_is_explained_by_who_holds_the_gpus)
{
    static struct fx f;
    char text[256];

    fx_init(&f, 1, 8);
    struct sched_job *big = rigid(&f, 12, 8, 0);
    big->remaining_epochs = 1;
    big->remaining_source = SCHED_EST_FIT;
    rigid(&f, 13, 2, -1);
    struct sched_decision *d = decide(&f, "fifo");
    size_t n = sched_explain(&f.snap, d, 1, text, sizeof(text));
    cr_assert_eq(n, strlen(text));
    cr_assert(strstr(text, "needs 2 GPUs, 0 free"), "%s", text);
    cr_assert(strstr(text, "job 12 holds 8 GPUs: predicted to finish in "), "%s", text);
    cr_assert(strstr(text, "(fit)"), "%s", text);
    /* With a forecast of the holder, the figure its own page shows (one finish per job). */
    big->forecast_finish = f.snap.now + 600;
    sched_explain(&f.snap, d, 1, text, sizeof(text));
    cr_assert(strstr(text, "job 12 holds 8 GPUs: forecast to finish in 10 min (forecast P50)"),
              "%s", text);
    big->forecast_finish = f.snap.now - 1; /* a forecast already past: the round's own */
    sched_explain(&f.snap, d, 1, text, sizeof(text));
    cr_assert(strstr(text, "predicted to finish in "), "%s", text);
    big->forecast_finish = 0;
    /* Truncated, still terminated, and the needed length returned. */
    char small[8];
    cr_assert_eq(sched_explain(&f.snap, d, 1, small, sizeof(small)), n);
    cr_assert_eq(strlen(small), sizeof(small) - 1);
    /* A running job: its reason. */
    sched_explain(&f.snap, d, 0, text, sizeof(text));
    cr_assert_str_eq(text, d->assign[0].reason);
    sched_decision_destroy(d);
}

Test(guard, the_explanation_names_a_quota)
{
    static struct fx f;
    static const struct sched_user users[] = {{.id = 5, .max_gpus = 4}};
    char text[256];

    fx_init(&f, 1, 8);
    rigid(&f, 1, 4, -1)->user_id = 5;
    rigid(&f, 2, 4, -1)->user_id = 5;
    f.snap.users = users;
    f.snap.nusers = 1;
    struct sched_decision *d = decide(&f, "fifo");
    sched_explain(&f.snap, d, 1, text, sizeof(text));
    cr_assert(strstr(text, "user 5 holds 4 of its quota of 4 GPUs"), "%s", text);
    sched_decision_destroy(d);
}

Test(guard, a_starving_job_the_policy_starts_is_not_taken_by_another)
{
    static struct fx f;

    /* fifo starts the first of two starving 1-GPU jobs on the only free GPU;
     * the second must not take that start away: it gets the busy GPU. */
    fx_init(&f, 1, 2);
    rigid(&f, 1, 1, 0)->run_time = 500;
    struct sched_job *a = rigid(&f, 2, 1, -1), *b = rigid(&f, 3, 1, -1);
    a->submit_time = f.snap.now - 3700;
    b->submit_time = f.snap.now - 3650;
    a->priority = 1; /* fifo serves a first */
    b->priority = 0;
    f.snap.max_wait_s = 3600;
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[1].gpus, 1);
    cr_assert_eq(d->assign[2].gpus, 1);
    cr_assert_eq(d->assign[0].gpus, 0);
    sched_decision_destroy(d);
}

Test(guard, a_users_elastic_job_grows_to_its_share)
{
    static struct fx f;

    /* User 1 holds all 8 GPUs with rigid jobs; user 2's elastic job (up to 4)
     * gets its share of 4, not just its minimum of 1. */
    fx_init(&f, 1, 8);
    for (int k = 0; k < 4; k++)
        rigid(&f, 1 + k, 2, 2 * k)->user_id = 1;
    struct sched_job *e = fx_job(&f, 10, 1);
    e->max_gpus = 4;
    e->user_id = 2;
    struct sched_decision *d = decide(&f, "fifo");
    cr_assert_eq(d->assign[4].gpus, 4, "got %d", d->assign[4].gpus);
    cr_assert_eq(d->assign[4].forced, 2);
    int u1 = 0;
    for (int k = 0; k < 4; k++)
        u1 += d->assign[k].gpus;
    cr_assert_eq(u1, 4);
    sched_decision_destroy(d);
}
