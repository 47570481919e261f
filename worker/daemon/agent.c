/* agent: the worker daemon's clock (agent_now), beside the state of agent.h. */
#include "agent.h"

#include <time.h>

double agent_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
