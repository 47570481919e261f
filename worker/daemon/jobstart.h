/* jobstart: a job's start spec (docs/worker-protocol.md: slots, hosts, world_size, command,
 * env, checkpoint_dir, plan, lr_scale, batch, init_batch, max_local_batch) made into the
 * launch of its mpirun (launch.h). */
#ifndef RINGMASTER_JOBSTART_H
#define RINGMASTER_JOBSTART_H

#include <jansson.h>
#include <stddef.h>

struct agent;
struct wjob;

/* Launches the ranks of j from spec (borrowed), with its checkpoint folder made (and, in a
 * new checkpoint generation, restored from the one before). On success j->pid and j->world
 * are set, the pid file is written and RUNNING is still to be reported; returns 0. Returns
 * -1 with text in err when the spec is unusable or the launch failed; j is unchanged. */
int jobstart_launch(struct agent *a, struct wjob *j, const json_t *spec, char *err, size_t errlen);

#endif
