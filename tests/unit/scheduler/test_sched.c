/* sched_decide: the policy table, validation, reasons and changed flags,
 * feasibility and determinism of every policy on random snapshots. */
#include "sched_fixture.h"

static const char *const names[] = { "precompute", "exploratory", "optimus",   "fifo",
                                     "one",        "two",         "four",      "eight",
                                     "gandiva",    "tiresias",    "rubick",    "ringmaster",
                                     "edf" };

Test(sched, policy_table_lists_and_finds_every_policy)
{
    const struct sched_policy_ops *const *list = sched_policy_list();
    size_t n = 0;

    while (list[n])
        n++;
    cr_assert_eq(n, sizeof(names) / sizeof(names[0]));
    for (size_t i = 0; i < n; i++) {
        const struct sched_policy_ops *p = sched_policy_find(names[i]);
        cr_assert_not_null(p, "%s", names[i]);
        cr_assert_str_eq(p->name, names[i]);
        cr_assert_not_null(p->summary);
        cr_assert_not_null(p->allocate);
    }
    cr_assert_null(sched_policy_find("nope"));
    cr_assert_null(sched_policy_find(NULL));
}

Test(sched, validate_rejects_inconsistent_snapshots_with_text)
{
    static struct fx f;
    char err[128];

    fx_init(&f, 2, 8);
    struct sched_job *a = fx_job(&f, 1, 2), *b = fx_job(&f, 2, 2);
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), 0, "%s", err);
    fx_hold(&f, a, 0, 0, 2);
    fx_hold(&f, b, 0, 1, 2);
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), -1);
    cr_assert_eq(errno, EINVAL);
    cr_assert_str_eq(err, "job 1: a slot names a GPU already held");
    errno = 0;
    cr_assert_null(sched_decide(sched_policy_find("fifo"), &f.snap));
    cr_assert_eq(errno, EINVAL);

    b->cur_gpus = 0;
    b->id = 1;
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "job id 1: appears twice");
    b->id = 2;
    b->requested_gpus = 0;
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "job 1: requested_gpus must be >= 1");
    b->requested_gpus = 4;
    b->max_gpus = 2;
    cr_assert_eq(sched_validate(&f.snap, err, 10), -1);
    cr_assert_eq(strlen(err), 9, "message cut to the buffer");
    b->max_gpus = 0;
    f.nodes[1].ngpus = 65;
    cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "node 1: ngpus must be 0..64");
    f.nodes[1].ngpus = 8;
    a->slots = NULL;
    cr_assert_eq(sched_validate(&f.snap, NULL, 0), -1);
}

Test(sched, reasons_and_changed_flags)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *run = fx_job(&f, 1, 4), *grow = fx_job(&f, 2, 2), *fresh = fx_job(&f, 3, 2);
    struct sched_job *wait = fx_job(&f, 4, 8);
    fx_hold(&f, run, 0, 0, 4);
    fx_hold(&f, grow, 0, 4, 1);
    (void)fresh;
    (void)wait;
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[0].changed, 0);
    cr_assert_str_eq(d->assign[0].reason, "running: unchanged");
    cr_assert_eq(d->assign[1].gpus, 2);
    cr_assert_eq(d->assign[1].changed, 1);
    cr_assert_str_eq(d->assign[1].reason, "resized: grown");
    cr_assert_str_eq(d->assign[2].reason, "started");
    cr_assert_eq(d->assign[3].gpus, 0);
    cr_assert_eq(d->assign[3].changed, 0);
    cr_assert_str_eq(d->assign[3].reason, "waiting: the policy gave it no GPUs");
    cr_assert_eq(d->nchanged, 2);
    cr_assert_eq(d->used, 8);
    cr_assert_eq(d->capacity, 8);
    sched_decision_destroy(d);
}

Test(sched, preempted_and_too_big_jobs_say_why)
{
    static struct fx f;

    fx_init(&f, 1, 8);
    struct sched_job *low = fx_job(&f, 1, 8), *high = fx_job(&f, 2, 8), *huge = fx_job(&f, 3, 16);
    fx_hold(&f, low, 0, 0, 8);
    high->priority = 5;
    huge->elastic = 0;
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 0);
    cr_assert_eq(d->assign[0].changed, 1);
    cr_assert_str_eq(d->assign[0].reason, "preempted: the policy gave its GPUs to other jobs");
    cr_assert_eq(d->assign[1].gpus, 8);
    cr_assert_str_eq(d->assign[2].reason, "waiting: needs more GPUs than the cluster has up");
    sched_decision_destroy(d);
}

Test(sched, job_on_a_down_node_migrates)
{
    static struct fx f;

    fx_init(&f, 2, 8);
    struct sched_job *j = fx_job(&f, 1, 4);
    j->elastic = 0;
    fx_hold(&f, j, 0, 4, 4);
    f.nodes[0].up = 0;
    struct sched_decision *d = sched_decide(sched_policy_find("fifo"), &f.snap);
    fx_check_feasible(&f.snap, d);
    cr_assert_eq(d->assign[0].gpus, 4);
    cr_assert_eq(d->assign[0].changed, 1);
    cr_assert_eq(d->assign[0].slots[0].node, 1);
    cr_assert_str_eq(d->assign[0].reason, "migrated: off a node that is down or draining");
    sched_decision_destroy(d);
}

Test(sched, empty_snapshot_gives_empty_decision)
{
    static struct fx f;

    fx_init(&f, 0, 8);
    for (size_t p = 0; sched_policy_list()[p]; p++) {
        struct sched_decision *d = sched_decide(sched_policy_list()[p], &f.snap);
        cr_assert_not_null(d);
        cr_assert_eq(d->njobs, 0);
        cr_assert_eq(d->fragmentation, 0.0);
        sched_decision_destroy(d);
    }
    sched_decision_destroy(NULL);
}

static int same_decision(const struct sched_decision *a, const struct sched_decision *b)
{
    if (a->njobs != b->njobs || a->fragmentation != b->fragmentation)
        return 0;
    for (size_t i = 0; i < a->njobs; i++) {
        const struct sched_assignment *x = &a->assign[i], *y = &b->assign[i];
        if (x->gpus != y->gpus || x->changed != y->changed || strcmp(x->reason, y->reason))
            return 0;
        if (memcmp(x->slots, y->slots, (size_t)x->gpus * sizeof(*x->slots)))
            return 0;
    }
    return 1;
}

Test(sched, every_policy_is_feasible_and_deterministic_on_random_snapshots)
{
    static struct fx f;
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);

    for (int round = 0; round < 150; round++) {
        fx_random(&f, &rng);
        char err[128];
        cr_assert_eq(sched_validate(&f.snap, err, sizeof(err)), 0, "round %d: %s", round, err);
        for (size_t p = 0; sched_policy_list()[p]; p++) {
            const struct sched_policy_ops *ops = sched_policy_list()[p];
            struct sched_decision *a = sched_decide(ops, &f.snap);
            struct sched_decision *b = sched_decide(ops, &f.snap);
            fx_check_feasible(&f.snap, a);
            cr_assert(same_decision(a, b), "%s not deterministic in round %d", ops->name, round);
            sched_decision_destroy(a);
            sched_decision_destroy(b);
        }
    }
}
