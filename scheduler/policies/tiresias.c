/* policy_tiresias: Tiresias' discretised two-dimensional least attained service
 * (Gu et al., NSDI 2019) as the Pollux artifact reimplemented it for its
 * published comparison (petuum/adaptdl, osdi21-artifact, simulator/tiresias.py;
 * it ran every 60 s round), a baseline. What that code does:
 *  - Two queues. A job enters the first when it arrives and moves to the back
 *    of the second once its attained service since it last entered the first,
 *    executed seconds x requested GPUs, reaches 16 GPU-hours (its
 *    _queue_threshold; here SCHED_TIRESIAS_THRESHOLD_GPU_S, or the snapshot's
 *    queue_threshold_gpu_s).
 *  - First in, first out inside a queue, by the order jobs entered it.
 *  - Starvation promotion, off by default (its _solve_starvation = 0; here the
 *    snapshot's starvation_knob K): a job of the second queue that has waited
 *    K times its executed time goes to the back of the first, and its executed
 *    time counts from 0 again.
 *  - Each round walks the first queue then the second: a job runs, on its
 *    requested GPUs, if they fit in what the jobs before it left, else it
 *    waits, and a smaller later job may still fit (backfilling). A job that
 *    still runs keeps its GPUs and is never moved (keeps_slots: placement
 *    does not repack to spare another job a node), so a running job is
 *    preempted only when jobs ahead of it in the walk need its GPUs. A job
 *    that starts goes on the nodes with the most free GPUs first.
 *
 * The core keeps no state between rounds, so the artifact's per-job counters
 * come from the snapshot, exactly where its fields tell, else estimated:
 *  - executed time: run_time (seconds holding GPUs, as the artifact counts);
 *    the queue follows from it exactly while no job is promoted (the default);
 *  - the first queue's order: arrival;
 *  - the second queue's order: when the job would have reached the threshold
 *    had it run from its arrival, submit_time + threshold / requested_gpus.
 *    The true moment also depends on its waits, which the snapshot does not
 *    record; this estimate never changes, so it never reorders running jobs
 *    (one from now - run_time would move back at every restart and preempt);
 *  - its wait, for promotion: now - submit_time - run_time, all the time it
 *    has not held GPUs (the artifact counts from its first start and from 0
 *    again after a promotion);
 *  - a promoted job: one whose wait had reached K x its executed time when it
 *    last started (or now, waiting); it entered the first queue when its wait
 *    did, submit_time + (1 + K) x that executed time, and leaves it again, to
 *    the back of the second, once its current run (now - last_change_time)
 *    reaches the threshold.
 * Deviations: priority orders before the queues (every policy here serves an
 * admin's priority first, policy.h); a job that starts is placed by
 * placement.h's buddy rules, which also take the fewest nodes; an elastic job
 * asking for more GPUs than are up is cut to them (the artifact leaves such a
 * job pending). */
#include <stdlib.h>

#include "policy.h"

/* Where a job stands: its queue and when it entered it. */
struct tkey {
    int priority;
    int queue;
    double entered;
    double submit;
    int64_t id;
    size_t idx;
};

static int cmp_tkey(const void *a, const void *b)
{
    const struct tkey *x = a, *y = b;

    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->queue != y->queue)
        return x->queue < y->queue ? -1 : 1;
    if (x->entered != y->entered)
        return x->entered < y->entered ? -1 : 1;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static double threshold(const struct sched_snapshot *snap)
{
    return snap->queue_threshold_gpu_s > 0 ? snap->queue_threshold_gpu_s
                                           : SCHED_TIRESIAS_THRESHOLD_GPU_S;
}

/* The job's queue and entry time, derived as the header says. */
static struct tkey key_of(const struct sched_snapshot *snap, const struct sched_job *j, size_t i)
{
    struct tkey k = {j->priority, 0, j->submit_time, j->submit_time, j->id, i};
    double thr = threshold(snap), req = j->requested_gpus, knob = snap->starvation_knob;
    double run = j->cur_gpus > 0 ? snap->now - j->last_change_time : 0;
    double waited = snap->now - j->submit_time - j->run_time;

    if (run < 0 || run > j->run_time)
        run = run < 0 ? 0 : j->run_time;
    if (j->run_time * req < thr)
        return k;
    double before = j->run_time - run; /* executed when it last started */
    int promoted = knob > 0 && before > 0 && before * req >= thr && waited >= knob * before;
    if (promoted && run * req < thr) {
        k.entered = j->submit_time + (1 + knob) * before;
        return k;
    }
    k.queue = 1;
    k.entered = promoted ? j->last_change_time + thr / req : j->submit_time + thr / req;
    return k;
}

static int allocate(const struct sched_snapshot *snap, int *want)
{
    size_t n = snap->njobs;
    struct tkey *keys = malloc((n + 1) * sizeof(*keys));
    long capacity = policy_capacity(snap), free_gpus = capacity;

    if (!keys)
        return -1;
    for (size_t i = 0; i < n; i++)
        keys[i] = key_of(snap, &snap->jobs[i], i);
    qsort(keys, n, sizeof(*keys), cmp_tkey);
    for (size_t k = 0; k < n; k++) {
        const struct sched_job *j = &snap->jobs[keys[k].idx];
        int w = policy_clamp(j, j->requested_gpus < capacity ? j->requested_gpus : (int)capacity);
        if (w <= free_gpus) {
            want[keys[k].idx] = w;
            free_gpus -= w;
        }
    }
    free(keys);
    return 0;
}

const struct sched_policy_ops policy_tiresias = {
    .name = "tiresias",
    .summary = "Tiresias 2D-LAS: two queues by attained GPU-time (16 GPU-h), FIFO, requested GPUs",
    .allocate = allocate,
    .keeps_slots = 1,
};
