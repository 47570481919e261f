/* explore: the exploring rule of explore.h, against the two copies it replaces (the policy's
 * explore_reserve with its clamped seen, the live scheduler's explore_hold), and the agreement
 * of explore_fits with what policy "exploratory" decides. */
#include <limits.h>

#include "explore.h"
#include "sched_fixture.h"

/* The copy policies/exploratory.c had (seen clamped to [0, stage_s]). */
static int old_reserve(const struct sched_job *j, int capacity, double stage_s)
{
    double seen[SCHED_EXPLORE_STAGES];
    int tracked = 0, reserve = 0, pending = 0;
    int lo = j->min_gpus > 0 ? j->min_gpus : 1, hi = j->max_gpus > 0 ? j->max_gpus : INT_MAX;

    if (!j->elastic || (j->speed.fitted && j->model_source != SCHED_MODEL_NONE))
        return 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        seen[k] = j->explored_s[k];
        tracked |= seen[k] > 0;
    }
    for (int k = 0; k < SCHED_EXPLORE_STAGES && !tracked; k++) {
        double s = j->run_time - k * stage_s;
        seen[k] = s < 0 ? 0 : s > stage_s ? stage_s : s;
    }
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        if (w < lo || w > hi || w > capacity)
            continue;
        reserve = w;
        pending |= seen[k] < stage_s;
    }
    return pending ? reserve : 0;
}

/* The copy server/live/decide.c had (explore_hold over plan_explore_stage). */
static int old_hold(const struct sched_job *j, int capacity, double stage_s)
{
    int lo = j->min_gpus > 0 ? j->min_gpus : 1, hi = j->max_gpus > 0 ? j->max_gpus : INT_MAX;
    if (!j->elastic || j->model_source != SCHED_MODEL_NONE ||
        explore_stage(j, capacity, stage_s) == 0)
        return 0;
    int hold = 0;
    for (int k = 0; k < SCHED_EXPLORE_STAGES; k++) {
        int w = 1 << k;
        if (w >= lo && w <= hi && w <= capacity)
            hold = w;
    }
    return hold;
}

static struct sched_job explorer(void)
{
    struct sched_job j;
    memset(&j, 0, sizeof(j));
    j.elastic = 1;
    j.min_gpus = 1;
    j.model_source = SCHED_MODEL_NONE;
    return j;
}

Test(explore, the_stage_is_the_first_not_done_within_bounds_and_limit)
{
    struct sched_job j = explorer();
    cr_assert_eq(explore_stage(&j, 64, 150), 1);
    j.explored_s[0] = 150;
    cr_assert_eq(explore_stage(&j, 64, 150), 2);
    j.explored_s[1] = 150;
    j.explored_s[2] = 149;
    cr_assert_eq(explore_stage(&j, 64, 150), 4);
    cr_assert_eq(explore_stage(&j, 2, 150), 0, "no stage left within the limit");
    j.explored_s[2] = j.explored_s[3] = 150;
    cr_assert_eq(explore_stage(&j, 64, 150), 0, "every stage done");
    j = explorer();
    j.min_gpus = 2;
    j.max_gpus = 4;
    cr_assert_eq(explore_stage(&j, 64, 150), 2, "below its minimum is skipped");
}

Test(explore, untracked_stages_follow_run_time)
{
    struct sched_job j = explorer();
    const double run[6] = {0, 149, 150, 449, 450, 600};
    const int stage[6] = {1, 1, 2, 4, 8, 0};
    for (int s = 0; s < 6; s++) {
        j.run_time = run[s];
        cr_assert_eq(explore_stage(&j, 64, 150), stage[s], "run_time %g", run[s]);
    }
}

Test(explore, the_reserve_is_the_largest_stage_while_one_is_left)
{
    struct sched_job j = explorer();
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SOURCE), 8);
    cr_assert_eq(explore_reserve(&j, 6, 150, EXPLORE_NO_SOURCE), 4, "the cluster's capacity");
    j.max_gpus = 2;
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 2, "its maximum");
    j.explored_s[0] = j.explored_s[1] = 150;
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 0, "done");
    j = explorer();
    j.elastic = 0;
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 0, "rigid jobs do not explore");
}

Test(explore, no_speed_and_no_source_differ_only_where_they_should)
{
    struct sched_job j = explorer();
    j.model_source = SCHED_MODEL_PROFILE; /* a source, but no fitted speed */
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 8);
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SOURCE), 0);
    j.speed.fitted = 1;
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 0);
    j.model_source = SCHED_MODEL_NONE; /* a hidden fitted model */
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SPEED), 8);
    cr_assert_eq(explore_reserve(&j, 64, 150, EXPLORE_NO_SOURCE), 8);
}

Test(explore, the_reserve_is_both_old_copies)
{
    uint64_t rng = 12345;
    const double stages[] = {150, 1, 60, 86400, 0.5};
    for (int n = 0; n < 200000; n++) {
        struct sched_job j = explorer();
        j.elastic = fx_between(&rng, 0, 4) != 0;
        j.min_gpus = fx_between(&rng, 0, 9);
        j.max_gpus = fx_between(&rng, 0, 1) ? 0 : fx_between(&rng, 0, 16);
        j.model_source = (enum sched_model_source)fx_between(&rng, 0, 2);
        j.speed.fitted = fx_between(&rng, 0, 1);
        double stage_s = stages[fx_between(&rng, 0, 4)];
        if (fx_between(&rng, 0, 1))
            for (int k = 0; k < SCHED_EXPLORE_STAGES; k++)
                j.explored_s[k] = fx_between(&rng, 0, 3) * stage_s / 2;
        j.run_time = fx_between(&rng, -2, 12) * stage_s / 2 + fx_between(&rng, -1, 1);
        int capacity = fx_between(&rng, 0, 20);
        cr_assert_eq(explore_reserve(&j, capacity, stage_s, EXPLORE_NO_SPEED),
                     old_reserve(&j, capacity, stage_s), "case %d", n);
        cr_assert_eq(explore_reserve(&j, capacity, stage_s, EXPLORE_NO_SOURCE),
                     old_hold(&j, capacity, stage_s), "case %d", n);
    }
}

Test(explore, an_explorer_runs_its_current_stage_of_what_it_reserved)
{
    struct sched_job j = explorer();
    j.explored_s[0] = 150;
    cr_assert_eq(explore_running_stage(&j, 8, 150), 2);
    cr_assert_eq(explore_running_stage(&j, 0, 150), 0, "it was given nothing");
    j.speed.fitted = 1;
    j.model_source = SCHED_MODEL_FITTED;
    cr_assert_eq(explore_running_stage(&j, 8, 150), 0, "it has a usable model");
    j.model_source = SCHED_MODEL_NONE;
    cr_assert_eq(explore_running_stage(&j, 8, 150), 2, "its fitted model is hidden");
}

Test(explore, exploring_fits_while_it_delays_nobody)
{
    struct sched_job jobs[3];
    jobs[0] = explorer();
    cr_assert(explore_fits(jobs, 1, 16, 150));
    jobs[1] = explorer();
    jobs[1].model_source = SCHED_MODEL_PROFILE;
    jobs[1].cur_gpus = 8;
    cr_assert(explore_fits(jobs, 2, 16, 150), "8 held beside 8 reserved");
    jobs[2] = explorer();
    jobs[2].model_source = SCHED_MODEL_PROFILE;
    jobs[2].min_gpus = 0; /* waits for 1 */
    cr_assert(!explore_fits(jobs, 3, 16, 150), "one waiting job too many");
    cr_assert(!explore_fits(jobs + 1, 2, 16, 150), "nobody explores");
}

/* When exploring fits (explore_fits), policy "exploratory" reserves for each explorer what
 * explore_reserve says, and the reservations fit what the decision gives. */
Test(explore, exploring_fits_and_policy_exploratory_agree)
{
    static struct fx f;
    uint64_t rng = 99;
    int chosen = 0;
    for (int round = 0; round < 400; round++) {
        fx_init(&f, fx_between(&rng, 1, 3), 8);
        int njobs = fx_between(&rng, 1, 6);
        for (int i = 0; i < njobs; i++) {
            struct sched_job *j = fx_job(&f, 1 + i, fx_between(&rng, 1, 2));
            if (fx_between(&rng, 0, 1)) {
                j->model_source = SCHED_MODEL_NONE;
                j->speed.fitted = 0;
                j->explored_s[0] = fx_between(&rng, 0, 1) * 150.0;
            }
            j->max_gpus = fx_between(&rng, 0, 1) ? 0 : 4;
        }
        int capacity = (int)f.snap.nnodes * 8;
        if (!explore_fits(f.jobs, f.snap.njobs, capacity, 150))
            continue;
        const struct sched_policy_ops *ops = sched_policy_find("exploratory");
        chosen++;
        struct sched_decision *d = sched_decide(ops, &f.snap);
        fx_check_feasible(&f.snap, d);
        for (size_t i = 0; i < f.snap.njobs; i++) {
            int r = explore_reserve(&f.jobs[i], capacity, 150, EXPLORE_NO_SOURCE);
            if (r > 0)
                cr_assert_eq(d->assign[i].gpus, r, "round %d job %zu", round, i);
        }
        sched_decision_destroy(d);
    }
    cr_assert_gt(chosen, 50, "the choice was made %d times", chosen);
}
