/* launch_failed: a host of a job's launch says the launch failed there (its MPI daemon for
 * the job's mpirun exited with an error before the job ended): the job goes back to the queue
 * from its last checkpoint, or FAILED after LAUNCH_FAILED_MAX such failures in a row.
 *
 * Without it, mpirun waits for a daemon that never calls back (OpenMPI has no bound on that
 * wait), and the job sits STARTING, RESIZING or MIGRATING on its GPUs for good. */
#ifndef RINGMASTER_LAUNCH_FAILED_H
#define RINGMASTER_LAUNCH_FAILED_H

#include <jansson.h>

#include "call.h"

/* Failed launches of a job in a row (no RUNNING between) after which it FAILED. */
#define LAUNCH_FAILED_MAX 3

/* POST /api/v1/jobs/{id}/state {"state": "PENDING", "detail"?, "exec_action": ID}, in a
 * transaction of its own (none begun by the caller): exec_action is the exec action that
 * started the daemon; it must be the job's, newer than the job's latest start, resize or
 * migrate, and no action of the job but an exec may be in flight (409 otherwise).
 * 200 {"id", "state"}: PENDING (requeued, event detail "launch failed: ..."), FAILED (the
 * LAUNCH_FAILED_MAX-th in a row), or the job's state unchanged when it is PENDING already. A
 * worker needs REPORTS_LOG (a host of the launch), checked by the caller. */
void launch_failed_post(struct api_call *call, long long id, const json_t *body,
                        const char *detail);

#endif
