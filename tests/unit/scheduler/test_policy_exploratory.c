/* exploratory: stages of 1, 2, 4, 8 GPUs from explored_s or run_time,
 * precedence of exploring jobs, then the doubling heuristic. */
#include "sched_fixture.h"

static struct sched_job *newcomer(struct fx *f, int64_t id)
{
    struct sched_job *j = fx_job(f, id, 1);

    j->model_source = SCHED_MODEL_NONE;
    j->speed.fitted = 0;
    return j;
}

static struct sched_decision *decide(struct fx *f)
{
    struct sched_decision *d = sched_decide(sched_policy_find("exploratory"), &f->snap);

    fx_check_feasible(&f->snap, d);
    return d;
}

Test(policy_exploratory, stage_follows_explored_seconds)
{
    static struct fx f;
    const double seen[5][4] = {
        { 0, 0, 0, 0 }, { 150, 0, 0, 0 }, { 150, 150, 10, 0 }, { 150, 150, 150, 149 },
        { 150, 150, 150, 150 },
    };
    const int expect[5] = { 1, 2, 4, 8, 1 }; /* done exploring, no model: its request */

    for (int s = 0; s < 5; s++) {
        fx_init(&f, 2, 8);
        struct sched_job *j = newcomer(&f, 1);
        memcpy(j->explored_s, seen[s], sizeof(j->explored_s));
        struct sched_decision *d = decide(&f);
        cr_assert_eq(d->assign[0].gpus, expect[s], "case %d", s);
        sched_decision_destroy(d);
    }
}

Test(policy_exploratory, stage_follows_run_time_when_explored_s_is_not_tracked)
{
    static struct fx f;
    const double run[5] = { 0, 149, 150, 449, 599 };
    const int expect[5] = { 1, 1, 2, 4, 8 };

    for (int s = 0; s < 5; s++) {
        fx_init(&f, 2, 8);
        newcomer(&f, 1)->run_time = run[s];
        struct sched_decision *d = decide(&f);
        cr_assert_eq(d->assign[0].gpus, expect[s], "run_time %g", run[s]);
        sched_decision_destroy(d);
    }
}

Test(policy_exploratory, explorers_come_first_and_fitted_jobs_double_after)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *old = fx_job(&f, 1, 1);
    struct sched_job *fresh = newcomer(&f, 2);
    fx_hold(&f, old, 0, 0, 8);
    fx_hold(&f, old, 1, 0, 8);
    fresh->explored_s[0] = fresh->explored_s[1] = fresh->explored_s[2] = 150;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 8, "the newcomer explores at 8 GPUs first");
    cr_assert_eq(d->assign[0].gpus, 8, "the fitted job doubles in what is left");
    cr_assert_eq(d->assign[0].changed, 1);
    sched_decision_destroy(d);
}

Test(policy_exploratory, an_exploring_stage_that_does_not_fit_waits_whole)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    newcomer(&f, 1)->explored_s[0] = 150; /* wants 2 */
    struct sched_job *b = newcomer(&f, 2);
    b->explored_s[0] = b->explored_s[1] = b->explored_s[2] = 150; /* wants 8 */
    fx_job(&f, 3, 1);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 2);
    cr_assert_eq(d->assign[1].gpus, 0, "8 do not fit in the 6 left: no partial stage");
    cr_assert_eq(d->assign[2].gpus, 4, "the fitted job doubles to 4 in the 6 left");
    sched_decision_destroy(d);
}

Test(policy_exploratory, rigid_or_capped_jobs_skip_stages_they_cannot_run)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *rigid = newcomer(&f, 1), *capped = newcomer(&f, 2);
    rigid->requested_gpus = 2;
    rigid->elastic = 0;
    capped->max_gpus = 2;
    capped->explored_s[0] = capped->explored_s[1] = 150;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 2, "not elastic: never explores");
    cr_assert_eq(d->assign[1].gpus, 1, "stages 4 and 8 skipped: done, runs at its request");
    sched_decision_destroy(d);
}

Test(policy_exploratory, the_snapshot_may_set_the_stage_length)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *j = newcomer(&f, 1);
    j->explored_s[0] = 60;
    f.snap.explore_stage_s = 60;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 2, "60 s at 1 GPU is a whole stage of 60 s");
    sched_decision_destroy(d);
    f.snap.explore_stage_s = 0;
    d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 1, "default 150 s");
    sched_decision_destroy(d);
}
