/* jobspec_topology: a submission's "topology" (issue 32), as Slurm's --switches=N@T:
 * {"max_switches": N, "max_wait_s": T}: the job starts only on GPUs of at most N switches
 * while it has waited less than T seconds, then takes what there is (scheduler/domain.h).
 * Its rules, its stored form (jobs.topology) and its reading back; jobspec.h includes it.
 * Pure (jansson only). */
#ifndef RINGMASTER_JOBSPEC_TOPOLOGY_H
#define RINGMASTER_JOBSPEC_TOPOLOGY_H

#include <jansson.h>

#define JOBSPEC_MAX_SWITCHES 1024           /* topology.max_switches */
#define JOBSPEC_MAX_SWITCH_WAIT_S 86400.0   /* topology.max_wait_s: a day */
#define JOBSPEC_DEFAULT_SWITCH_WAIT_S 300.0 /* its default, Slurm's max_switch_wait */

struct fieldcheck;

/* "topology": {"max_switches": 1..JOBSPEC_MAX_SWITCHES (required), "max_wait_s":
 * 0..JOBSPEC_MAX_SWITCH_WAIT_S (default JOBSPEC_DEFAULT_SWITCH_WAIT_S)} of body (optional)
 * into *max_switches and *wait_s (left as they are without one); each broken rule names its
 * field (topology.max_switches). */
void jobspec_topology_check(struct fieldcheck *c, const json_t *body, int *max_switches,
                            double *wait_s);

/* The bound as a new object {max_switches, max_wait_s} (what the jobs table stores in
 * topology), or NULL when max_switches <= 0 (none). */
json_t *jobspec_topology_json(int max_switches, double wait_s);

/* Reads a stored topology bound (borrowed; NULL or malformed: none, 0 and 0) into the core's
 * sched_job.max_switches and max_switches_wait_s. */
void jobspec_topology_read(const json_t *decl, int *max_switches, double *wait_s);

#endif
