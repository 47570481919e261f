/* Drained GPUs (sched_node.drained, issue 32 item 6): no job is given one, a job that holds
 * one keeps it while its allocation stays, and with evacuate it is moved off; the policies
 * count only the GPUs that work can use. */
#include <criterion/criterion.h>
#include <string.h>

#include "policies/policy.h"
#include "sched_fixture.h"

static const char *const policies[] = {"ringmaster", "rubick",  "tiresias", "precompute",
                                       "fifo",       "gandiva", "optimus"};
#define NPOL (sizeof(policies) / sizeof(policies[0]))

/* A job that asks for exactly n GPUs. */
static struct sched_job *rigid(struct fx *f, int64_t id, int n)
{
    struct sched_job *j = fx_job(f, id, n);
    j->elastic = 0;
    j->min_gpus = j->max_gpus = n;
    return j;
}

static int on_node(const struct sched_assignment *a, int node)
{
    int n = 0;
    for (int k = 0; k < a->gpus; k++)
        n += a->slots[k].node == node;
    return n;
}

Test(drain, a_drained_node_gets_no_new_job)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        f.nodes[0].drained = 0xf;
        rigid(&f, 1, 4);
        rigid(&f, 2, 4);
        cr_assert_eq(policy_capacity(&f.snap), 4, "the drained node's GPUs are not counted");
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        cr_expect_eq(on_node(&d->assign[0], 0) + on_node(&d->assign[1], 0), 0,
                     "%s gave a drained GPU", policies[p]);
        cr_expect_eq(d->assign[0].gpus + d->assign[1].gpus, 4, "%s: one of them runs on node 1",
                     policies[p]);
        sched_decision_destroy(d);
    }
}

Test(drain, a_running_job_keeps_its_drained_gpus_and_nobody_gets_the_rest)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        f.nodes[0].drained = 0xf;
        struct sched_job *a = rigid(&f, 1, 2);
        fx_hold(&f, a, 0, 0, 2);
        a->last_change_time = 0;
        rigid(&f, 2, 2);
        rigid(&f, 3, 2);
        cr_assert_eq(policy_capacity(&f.snap), 6, "node 1, and the 2 that job 1 holds");
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        cr_expect_eq(d->assign[0].gpus, 2, "%s", policies[p]);
        cr_expect_eq(on_node(&d->assign[0], 0), 2,
                     "%s moved the job off a node drained "
                     "without evacuation",
                     policies[p]);
        for (int i = 1; i < 3; i++) {
            cr_expect_eq(on_node(&d->assign[i], 0), 0, "%s gave job %d a drained GPU", policies[p],
                         i + 1);
            cr_expect_eq(d->assign[i].gpus, 2, "%s: job %d on node 1", policies[p], i + 1);
        }
        sched_decision_destroy(d);
    }
}

Test(drain, evacuate_moves_the_job_off)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        f.nodes[0].drained = 0xf;
        f.nodes[0].evacuate = 1;
        struct sched_job *a = rigid(&f, 1, 2);
        fx_hold(&f, a, 0, 0, 2);
        a->last_change_time = 0;
        cr_assert_eq(policy_capacity(&f.snap), 4);
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        cr_expect_eq(d->assign[0].gpus, 2, "%s", policies[p]);
        cr_expect_eq(on_node(&d->assign[0], 1), 2, "%s left it on the evacuated node", policies[p]);
        cr_expect_str_eq(d->assign[0].reason, "migrated: off GPUs drained to be evacuated", "%s",
                         policies[p]);
        sched_decision_destroy(d);
    }
}

Test(drain, only_the_drained_gpus_of_a_node_are_closed)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 1, 8);
        f.nodes[0].drained = 0x0f; /* GPUs 0-3 */
        rigid(&f, 1, 4);
        rigid(&f, 2, 4);
        cr_assert_eq(policy_capacity(&f.snap), 4);
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        int got = 0;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < d->assign[i].gpus; k++) {
                cr_expect_geq(d->assign[i].slots[k].gpu, 4, "%s gave drained GPU %d", policies[p],
                              d->assign[i].slots[k].gpu);
                got++;
            }
        cr_expect_eq(got, 4, "%s: one job on GPUs 4-7", policies[p]);
        sched_decision_destroy(d);
    }
}

/* Under pressure too: an elastic job on drained GPUs is neither preempted for a waiting job
 * (which could not use its GPUs) nor grown or shrunk (either would move it off): it runs on
 * as it is. */
Test(drain, a_job_on_drained_gpus_runs_on_as_it_is_under_pressure)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        f.nodes[0].drained = 0xf;
        struct sched_job *a = fx_job(&f, 9, 2);
        a->max_gpus = 8;
        fx_hold(&f, a, 0, 0, 2);
        a->last_change_time = 0;
        for (int k = 0; k < 4; k++)
            rigid(&f, k + 1, 2)->priority = 5;
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        cr_expect_eq(d->assign[0].gpus, 2, "%s gave it %d", policies[p], d->assign[0].gpus);
        cr_expect_eq(on_node(&d->assign[0], 0), 2, "%s moved it", policies[p]);
        cr_expect_eq(d->assign[0].changed, 0, "%s", policies[p]);
        int others = 0;
        for (int i = 1; i < 5; i++) {
            cr_expect_eq(on_node(&d->assign[i], 0), 0, "%s", policies[p]);
            others += d->assign[i].gpus;
        }
        cr_expect_eq(others, 4, "%s: node 1 is used", policies[p]);
        sched_decision_destroy(d);
    }
}

/* A failed GPU (sched_node.failed) is given to nobody and its job moves off it, whatever the
 * drains say; the node's other GPUs stay usable. */
Test(drain, a_failed_gpu_is_left_and_never_given)
{
    for (size_t p = 0; p < NPOL; p++) {
        static struct fx f;
        fx_init(&f, 2, 4);
        f.nodes[0].failed = 0x2; /* GPU 1 */
        f.nodes[0].drained = 0x3; /* and a drain without evacuation does not keep it there */
        struct sched_job *a = rigid(&f, 1, 2);
        fx_hold(&f, a, 0, 0, 2);
        a->last_change_time = 0;
        rigid(&f, 2, 2);
        cr_assert_eq(policy_capacity(&f.snap), 6, "GPUs 2-3 of node 0 and node 1");
        struct sched_decision *d = sched_decide(sched_policy_find(policies[p]), &f.snap);
        cr_assert(d, "%s", policies[p]);
        fx_check_feasible(&f.snap, d);
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < d->assign[i].gpus; k++) {
                struct sched_slot s = d->assign[i].slots[k];
                cr_expect(!(s.node == 0 && s.gpu < 2), "%s gave job %d GPU %d of node 0",
                          policies[p], i + 1, s.gpu);
            }
        cr_expect_eq(d->assign[0].gpus, 2, "%s: the job runs elsewhere", policies[p]);
        cr_expect_str_eq(d->assign[0].reason, "migrated: off a failed GPU", "%s", policies[p]);
        sched_decision_destroy(d);
    }
}
