/* actions: the worker's side of the actions table (docs/worker-protocol.md): the long-poll
 * that hands a node its pending actions, the results workers post, and the actions people
 * ask for by hand (suspend, resume) or by cancelling a running job. */
#ifndef RINGMASTER_ACTIONS_H
#define RINGMASTER_ACTIONS_H

#include <libpq-fe.h>

struct api_call;

/* Longest wait of a long-poll, seconds. */
#define ACTIONS_WAIT_MAX 60

/* GET /api/v1/nodes/{id}/actions?wait=S: {"items": [action...]}, the node's pending actions
 * oldest first. When there are none, holds the request up to S seconds (0..60) and looks
 * again when an action for the node is committed (the database's notification wakes the
 * request: http_req_retry_on with the node's id), at least every 10 s, answering as soon as
 * there is one or the server stops. Between looks the connection is suspended: a waiting
 * request holds no HTTP thread and no database connection. */
void actions_poll(struct api_call *call);

/* POST /api/v1/actions/{id}/result {"outcome": "ok"|"failed", "detail"?, "job_state"?}.
 * The first result is kept; the same again answers 200, another one 409. The successful
 * result of a migrate whose target is another node writes the target's start action. */
void actions_result(struct api_call *call);

/* POST /api/v1/jobs/{id}/suspend and /resume (admin or owner): writes the action for the
 * node that launched the job; 202 and the action. 409 when the job's state forbids it or it
 * was never launched. The job's state moves when its worker reports it. */
void actions_suspend(struct api_call *call);
void actions_resume(struct api_call *call);

/* POST /api/v1/jobs/{id}/cancel: jobs_cancel(), and once the job is CANCELLED, supersedes its
 * actions no worker has fetched yet and writes a cancel action for the node that launched
 * it, if any was. */
void actions_cancel(struct api_call *call);

/* POST /api/v1/jobs/{id}/remote {"node": NAME, "command": TEXT} (worker): the rsh agent of a
 * job's mpirun asks the worker of node NAME to run command (mpirun's remote daemon): writes an
 * `exec` action for that node; 201 and the action, 404 when no node has that name. */
void actions_remote(struct api_call *call);

/* Ends every wait in progress and makes later ones answer at once (before shutdown). */
void actions_stop_waiting(void);

#endif
