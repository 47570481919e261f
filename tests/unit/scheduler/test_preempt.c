/* Which running job a guarantee stops (scheduler/preempt.c): the least work lost since its
 * last checkpoint first, none within min_runtime_s of its start, and no job stopped that the
 * room did not need. */
#include <math.h>

#include "preempt.h"
#include "sched_fixture.h"

static struct sched_decision *decide(struct fx *f)
{
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f->snap);

    cr_assert_not_null(d);
    fx_check_feasible(&f->snap, d);
    return d;
}

/* A rigid job of n GPUs on node 0 from GPU first, in its current run for run_s seconds, its
 * last checkpoint ckpt_ago seconds ago (< 0: none). */
static struct sched_job *running(struct fx *f, int64_t id, int n, int first, double run_s,
                                 double ckpt_ago)
{
    struct sched_job *j = fx_job(f, id, n);

    j->elastic = 0;
    j->min_gpus = j->max_gpus = n;
    fx_hold(f, j, 0, first, n);
    j->submit_time = f->snap.now - 20000 + (double)id;
    j->run_time = run_s;
    j->last_change_time = f->snap.now - run_s;
    if (ckpt_ago >= 0) {
        j->last_checkpoint_time = f->snap.now - ckpt_ago;
        j->last_checkpoint_step = 100 * id;
    }
    return j;
}

/* A rigid job of n GPUs that has waited past max_wait_s. */
static struct sched_job *starving(struct fx *f, int64_t id, int n)
{
    struct sched_job *j = fx_job(f, id, n);

    j->elastic = 0;
    j->min_gpus = j->max_gpus = n;
    j->submit_time = f->snap.now - 4000;
    f->snap.max_wait_s = SCHED_MAX_WAIT_S;
    return j;
}

Test(preempt, the_loss_is_the_gpu_seconds_since_the_later_of_checkpoint_and_start)
{
    struct sched_job j = {.cur_gpus = 4, .last_change_time = 1000, .run_time = 5000};

    cr_assert_float_eq(preempt_loss_gpu_s(&j, 1600), 2400, 1e-9, "no checkpoint: its run");
    j.last_checkpoint_time = 1500;
    cr_assert_float_eq(preempt_loss_gpu_s(&j, 1600), 400, 1e-9, "since the checkpoint");
    j.last_checkpoint_time = 900; /* before a restart, which restored from it */
    cr_assert_float_eq(preempt_loss_gpu_s(&j, 1600), 2400, 1e-9);
    j.last_change_time = 0; /* unset: the run is its run time back */
    j.last_checkpoint_time = 0;
    cr_assert_float_eq(preempt_loss_gpu_s(&j, 6000), 20000, 1e-9);
    j.cur_gpus = 0;
    cr_assert_float_eq(preempt_loss_gpu_s(&j, 6000), 0, 1e-9, "holds nothing, loses nothing");
}

Test(preempt, the_job_that_checkpointed_last_yields_not_the_oldest)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    running(&f, 1, 4, 0, 900, 600);  /* loses 4 x 600 */
    running(&f, 2, 4, 4, 50000, 20); /* the most service, checkpointed 20 s ago: 4 x 20 */
    starving(&f, 3, 4);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[2].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 0, "20 s of work lost, not 600");
    cr_assert_eq(d->assign[0].gpus, 4);
    /* its reason names the guarantee and the job it made room for */
    cr_assert_str_eq(d->assign[1].reason,
                     "preempted: for job 3, which had waited longer than max_wait_s");
    cr_assert_eq(d->assign[1].preempted_by, 1);
    cr_assert_eq(d->assign[1].preempted_for, 3);
    cr_assert_eq(d->assign[0].preempted_by, 0, "kept: not stopped");
    cr_assert_str_eq(d->assign[0].reason, "running: unchanged");
    sched_decision_destroy(d);
    /* The old order stops the one with the most attained service whatever it loses. */
    f.jobs[1].last_checkpoint_time = f.snap.now - 5000;
    f.jobs[1].last_change_time = f.snap.now - 6000;
    d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 0, "now job 1 loses less: 600 s against 5000 s");
    cr_assert_eq(d->assign[1].gpus, 4);
    sched_decision_destroy(d);
    f.snap.preempt_order = SCHED_PREEMPT_MOST_SERVICE;
    d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 0, "the most service, 5000 s lost");
    sched_decision_destroy(d);
}

Test(preempt, without_checkpoints_the_shortest_current_run_yields)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    running(&f, 1, 4, 0, 3000, -1);
    struct sched_job *restarted = running(&f, 2, 4, 4, 40, -1);
    restarted->run_time = 90000; /* long service, but it restarted 40 s ago */
    starving(&f, 3, 4);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 0);
    cr_assert_eq(d->assign[0].gpus, 4);
    sched_decision_destroy(d);
}

Test(preempt, no_job_is_stopped_within_min_runtime_of_its_start)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    running(&f, 1, 4, 0, 5000, 1000);
    running(&f, 2, 4, 4, 100, -1); /* loses the least, 4 x 100, but has just started */
    starving(&f, 3, 4);
    f.snap.min_runtime_s = 600;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 4, "within min_runtime_s: kept");
    cr_assert_eq(d->assign[0].gpus, 0, "the other one yields");
    cr_assert_eq(d->assign[2].gpus, 4);
    sched_decision_destroy(d);
    /* Both too young: the starving job waits. */
    f.jobs[0].last_change_time = f.snap.now - 300;
    d = decide(&f);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 4);
    cr_assert_eq(d->assign[2].gpus, 0);
    sched_decision_destroy(d);
    /* Off (0): the least loss yields again. */
    f.snap.min_runtime_s = 0;
    d = decide(&f);
    cr_assert_eq(d->assign[1].gpus, 0);
    sched_decision_destroy(d);
    struct sched_job young = {.cur_gpus = 1, .last_change_time = f.snap.now - 599.5};
    f.snap.min_runtime_s = 600;
    cr_assert_not(preempt_allowed(&f.snap, &young));
    young.last_change_time = f.snap.now - 600;
    cr_assert(preempt_allowed(&f.snap, &young), "at min_runtime_s it may go");
    young.cur_gpus = 0;
    young.last_change_time = f.snap.now;
    cr_assert(preempt_allowed(&f.snap, &young), "a job that holds nothing loses nothing");
}

Test(preempt, a_job_the_room_did_not_need_keeps_its_gpus)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    running(&f, 1, 1, 0, 5000, 10);  /* the least loss: 1 x 10 */
    running(&f, 2, 7, 1, 5000, 100); /* 7 x 100 */
    starving(&f, 3, 4);
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[2].gpus, 4);
    cr_assert_eq(d->assign[1].gpus, 0, "only the 7-GPU job frees 4");
    cr_assert_eq(d->assign[0].gpus, 1, "stopped first, then given back: not needed");
    cr_assert_eq(d->assign[0].preempted_by, 0, "given back: not named as stopped");
    cr_assert_eq(d->assign[1].preempted_by, 1);
    sched_decision_destroy(d);
}

Test(preempt, a_fair_share_takes_from_the_job_that_loses_least)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    running(&f, 1, 4, 0, 8000, 30)->user_id = 1;
    running(&f, 2, 4, 4, 200, 190)->user_id = 1;
    struct sched_job *other = fx_job(&f, 3, 4);
    other->elastic = 0;
    other->min_gpus = other->max_gpus = 4;
    other->user_id = 2;
    struct sched_decision *d = decide(&f);
    cr_assert_eq(d->assign[2].gpus, 4);
    cr_assert_eq(d->assign[2].forced, 2);
    cr_assert_eq(d->assign[0].gpus, 0, "30 s since its checkpoint, against 190 s");
    cr_assert_eq(d->assign[1].gpus, 4);
    cr_assert_str_eq(d->assign[0].reason, "preempted: for job 3, within its user's fair share");
    cr_assert_eq(d->assign[0].preempted_by, 2);
    cr_assert_eq(d->assign[0].preempted_for, 3);
    sched_decision_destroy(d);
}
