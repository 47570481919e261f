/* explore_policy: the policy a round of the live scheduler runs, the configured one or
 * "exploratory" while exploring fits (explore.h). Apart from explore.c so that the rule the
 * policies call does not call back into sched.c, which calls them. */
#include <string.h>

#include "explore.h"
#include "sched.h"

const struct sched_policy_ops *explore_policy(const char *configured, const struct sched_job *jobs,
                                              size_t n, int capacity, double stage_s,
                                              const char **name)
{
    *name = configured;
    if ((strcmp(configured, "precompute") == 0 || strcmp(configured, "ringmaster") == 0) &&
        explore_fits(jobs, n, capacity, stage_s))
        *name = "exploratory";
    const struct sched_policy_ops *ops = sched_policy_find(*name);
    return ops ? ops : sched_policy_find("ringmaster");
}
