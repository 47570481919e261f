/* exploratory: an exploring job reserves 8 GPUs (its largest stage) until its
 * stages of 1, 2, 4, 8 GPUs are done, from explored_s or run_time; precedence
 * of exploring jobs, waiting whole for the reservation; then the doubling
 * heuristic. */
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

Test(policy_exploratory, an_explorer_holds_8_until_every_stage_is_done)
{
    static struct fx f;
    const double seen[5][4] = {
        { 0, 0, 0, 0 }, { 150, 0, 0, 0 }, { 150, 150, 10, 0 }, { 150, 150, 150, 149 },
        { 150, 150, 150, 150 },
    };
    const int expect[5] = { 8, 8, 8, 8, 1 }; /* done exploring, no model: its request */

    for (int s = 0; s < 5; s++) {
        fx_init(&f, 2, 8);
        struct sched_job *j = newcomer(&f, 1);
        memcpy(j->explored_s, seen[s], sizeof(j->explored_s));
        struct sched_decision *d = decide(&f);
        cr_assert_eq(d->assign[0].gpus, expect[s], "case %d", s);
        sched_decision_destroy(d);
    }
}

Test(policy_exploratory, stages_follow_run_time_when_explored_s_is_not_tracked)
{
    static struct fx f;
    const double run[6] = { 0, 149, 150, 449, 599, 600 };
    const int expect[6] = { 8, 8, 8, 8, 8, 1 };

    for (int s = 0; s < 6; s++) {
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

Test(policy_exploratory, an_explorer_whose_8_do_not_fit_waits_whole)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    f.nodes[1].ngpus = 4; /* 12 GPUs */
    newcomer(&f, 1)->explored_s[0] = 150; /* at its 2-GPU stage, holding 8 */
    struct sched_job *b = newcomer(&f, 2); /* new: wants 8 too */
    fx_job(&f, 3, 1);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 8, "the first explorer reserves 8");
    cr_assert_eq(d->assign[1].gpus, 0, "8 do not fit in the 4 left: it waits for 8");
    cr_assert_eq(d->assign[2].gpus, 4, "the fitted job doubles to 4 in the 4 left");
    sched_decision_destroy(d);
    (void)b;
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

    capped->max_gpus = 4; /* its 4-GPU stage is still to do: it reserves 4 */
    d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 4, "reserves its largest stage within its bounds");
    sched_decision_destroy(d);
}

Test(policy_exploratory, the_snapshot_may_set_the_stage_length)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *j = newcomer(&f, 1);
    for (int k = 0; k < 4; k++)
        j->explored_s[k] = 60;
    f.snap.explore_stage_s = 60;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 1, "60 s per size are whole stages of 60 s: done");
    sched_decision_destroy(d);
    f.snap.explore_stage_s = 0;
    d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 8, "default 150 s: still exploring, holds 8");
    sched_decision_destroy(d);
}
