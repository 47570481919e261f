/* greedy: the one heap-greedy growth loop of the model-driven policies (optimus's +1,
 * precompute's doubling, rubick's and ringmaster's growth over GPU classes); each policy
 * gives what differs as callbacks. */
#ifndef RINGMASTER_GREEDY_H
#define RINGMASTER_GREEDY_H

#include <stddef.h>

#include "policy.h"

/* The heap-greedy growth loop that optimus (+1), precompute (doubling), rubick and ringmaster
 * (growth over GPU classes) share: while room() says GPUs are left and h has a candidate, it
 * pops the best one and take()s it: take() returns 1 when it applied the step (push() then
 * queues the job's next step, if it has one, into h), 0 when it dropped the candidate or put
 * it back into h with a lower gain, -1 on an error. ctx is the policy's, passed to each. */
typedef int (*policy_greedy_room_f)(void *ctx);
typedef int (*policy_greedy_take_f)(void *ctx, struct policy_heap *h, struct policy_cand *c);
typedef int (*policy_greedy_push_f)(void *ctx, struct policy_heap *h, size_t job);
struct policy_greedy {
    policy_greedy_room_f room;
    policy_greedy_take_f take;
    policy_greedy_push_f push;
};

/* Runs the loop until no room or no candidate is left, then empties h. Returns 0, or -1 with
 * errno when take() or push() failed.
 *
 * Inline, by force: each policy passes a constant table, so the compiler calls (and inlines)
 * its callbacks directly. As a function of its own the three indirect calls a pop cost
 * ringmaster 1.5 % more instructions a round at 10,000 jobs (its loop pops the most). */
__attribute__((always_inline)) static inline int
policy_greedy_run(struct policy_heap *h, const struct policy_greedy *g, void *ctx)
{
    struct policy_cand c;

    while (g->room(ctx) && policy_heap_pop(h, &c) == 0) {
        int taken = g->take(ctx, h, &c);
        if (taken < 0)
            return -1;
        if (taken > 0 && g->push(ctx, h, c.job))
            return -1;
    }
    policy_heap_clear(h);
    return 0;
}

#endif
