/* Hysteresis of the model-driven policies (sched.h: SCHED_KEEP_MARGIN and
 * min_resize_interval_s): running jobs whose doubling gains cross as they
 * progress do not swap GPUs back and forth; a job resized recently is not
 * resized again within the interval, except to make room for a waiting job. */
#include "sched_fixture.h"

/* Applies decision d to f as a caller would: new counts and slots, the change
 * time of each job that changed. Returns how many running jobs changed. */
static int apply(struct fx *f, const struct sched_decision *d)
{
    int resized = 0;

    for (size_t i = 0; i < d->njobs; i++) {
        struct sched_job *j = &f->jobs[i];
        const struct sched_assignment *a = &d->assign[i];
        if (!a->changed)
            continue;
        resized += j->cur_gpus > 0;
        j->cur_gpus = a->gpus;
        memcpy(f->slots[i], a->slots, (size_t)a->gpus * sizeof(*a->slots));
        j->last_change_time = f->snap.now;
    }
    return resized;
}

/* Two jobs on 12 GPUs (8 + 4) with nearly the same work: the doubling gives 8
 * to one and 4 to the other, and the one on 8 runs faster, so their gains
 * cross again and again. Rounds every 60 s for 5 simulated hours. */
static int two_job_resizes(const char *policy, double interval)
{
    static struct fx f;
    int resizes = 0;

    fx_init(&f, 2, 8);
    f.nodes[1].ngpus = 4;
    f.snap.resize_cost_s = 10;
    f.snap.min_resize_interval_s = interval;
    fx_job(&f, 1, 1)->remaining_epochs = 400;
    fx_job(&f, 2, 1)->remaining_epochs = 401;
    for (int round = 0; round < 300; round++) {
        struct sched_decision *d = sched_decide(sched_policy_find(policy), &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_eq(d->used, 12, "%s round %d: both jobs busy, no GPU idle", policy, round);
        resizes += apply(&f, d);
        sched_decision_destroy(d);
        for (int i = 0; i < 2; i++) {
            struct sched_job *j = &f.jobs[i];
            double r = speed_epochs_per_second(&j->speed, j->cur_gpus) * 60.0;
            j->remaining_epochs = j->remaining_epochs > r ? j->remaining_epochs - r : 1.0;
        }
        f.snap.now += 60.0;
    }
    return resizes;
}

Test(hysteresis, two_running_jobs_do_not_ping_pong)
{
    /* Without the margin the jobs swapped 8 <-> 4 as soon as the interval
     * allowed (80 resizes, 160+ without the interval). With it a swap needs the
     * remaining work to differ by SCHED_KEEP_MARGIN, so the swaps are
     * logarithmic in the work: 5 swaps (10 resizes) over the two jobs' lives. */
    int with = two_job_resizes("precompute", 300), margin = two_job_resizes("precompute", 0);
    int optimus = two_job_resizes("optimus", 300);
    cr_assert_leq(with, 12, "precompute: %d resizes", with);
    cr_assert_leq(margin, 12, "precompute, the margin alone: %d resizes", margin);
    cr_assert_leq(optimus, 12, "optimus: %d resizes", optimus);
}

Test(hysteresis, a_recently_resized_job_is_not_grown_within_the_interval)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    f.snap.min_resize_interval_s = 300;
    struct sched_job *a = fx_job(&f, 1, 1);
    fx_hold(&f, a, 0, 0, 2);
    a->last_change_time = f.snap.now - 100;
    struct sched_decision *d = sched_decide(sched_policy_find("precompute"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 2, "changed 100 s ago: keeps its 2 GPUs");
    cr_assert_eq(d->assign[0].changed, 0);
    sched_decision_destroy(d);

    a->last_change_time = f.snap.now - 301;
    d = sched_decide(sched_policy_find("precompute"), &f.snap);
    cr_assert_eq(d->assign[0].gpus, 8, "after the interval it grows to the whole node");
    sched_decision_destroy(d);
}

Test(hysteresis, a_waiting_job_still_starts_on_a_full_cluster)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    f.snap.min_resize_interval_s = 300;
    struct sched_job *a = fx_job(&f, 1, 1);
    fx_hold(&f, a, 0, 0, 8);
    a->last_change_time = f.snap.now - 10; /* just resized */
    fx_job(&f, 2, 1);                      /* arrives on a full cluster */
    const char *policies[3] = { "precompute", "optimus", "exploratory" };
    for (int p = 0; p < 3; p++) {
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        fx_check_feasible(&f.snap, d);
        cr_assert_geq(d->assign[1].gpus, 1, "%s: the new job starts", policies[p]);
        cr_assert_geq(d->assign[0].gpus, 4, "%s: the pinned job keeps what is left",
                      policies[p]);
        cr_assert_eq(d->used, 8, "%s", policies[p]);
        sched_decision_destroy(d);
    }
}
