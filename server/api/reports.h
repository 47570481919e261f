/* reports: what workers report about the jobs they run (docs/worker-protocol.md) and its
 * reading by people: minibatch metrics, the job's own state transitions, its log. */
#ifndef RINGMASTER_REPORTS_H
#define RINGMASTER_REPORTS_H

struct api_call;

/* What a worker token may report for a job (docs/worker-protocol.md, "Who may report"). */
enum reports_claim {
    REPORTS_RUNS, /* state and metrics: a node that runs the job's mpirun, or has an action of
                     it (start, resize, migrate, suspend, resume, cancel) pending or recent */
    REPORTS_LOG,  /* its log: those, and every node of its latest launch or allocation, and one
                     with an exec action of it pending or recent */
};

/* Seconds after its action finished that a node may still report for the job (the last
 * metrics and log bytes of a migration's source, of a cancelled job). */
#define REPORTS_LATE_S 300

/* 0 when the caller may report claim for job: an admin, or a worker one of whose nodes holds
 * the claim; actions from before the job last entered the queue (a requeue) do not count.
 * Else -1 after answering 403 (problem), 404 (no such job) or 5xx. */
int reports_claim_or_respond(struct api_call *call, long long job, enum reports_claim claim);

/* Most metrics items in one request. */
#define REPORTS_METRICS_MAX 1000
/* The largest "max_local_batch" a metrics post may say (sql/049's bound; the worker's too). */
#define REPORTS_FITS_MAX 1000000

/* POST /api/v1/jobs/{id}/metrics {"items": [{"step", "loss", "world_size", "samples"?,
 * "seconds"?, "at"?}]}: stores them, ignoring duplicates (job, step, world size); 200
 * {"received": n, "stored": m}. 400 for a bad item, 404 for no such job, 403 for a worker
 * without REPORTS_RUNS (nothing stored). */
void reports_metrics_post(struct api_call *call);

/* Most job entries, and reports in all, in one node's post. */
#define REPORTS_NODE_JOBS_MAX 64
#define REPORTS_NODE_ITEMS_MAX 4000

/* POST /api/v1/nodes/{id}/metrics {"jobs": [{"job_id": N, "items": [...], and the other
 * fields of a job's post}]}: each job's post of a node's worker in one request (one HTTP
 * request and one token check for the node's jobs, not one each). Each entry is stored as
 * its own post would be; 200 {"jobs": [{"job_id", "status": 200, "received", "stored"} or
 * {"job_id", "status": 403 or 404 or 400, "detail"}]}, in the entries' order. 400 for a bad
 * entry (nothing stored), 404 for no such node, 403 for a node not the caller's. */
void reports_node_metrics_post(struct api_call *call);

/* GET /api/v1/jobs/{id}/metrics?after=STEP&limit=N: {"items": [{"step", "loss",
 * "world_size", "samples", "step_time_s", "time"}]} by step, at most limit (1..100000,
 * default 10000) with step > after. */
void reports_metrics_get(struct api_call *call);

/* POST /api/v1/jobs/{id}/state {"state", "detail"?, "exit_code"?}: moves the job through the
 * state machine by the event that leads there (200 and {"state"}); the state it is already
 * in answers 200 without change; an illegal move 409. A move to RUNNING records in its event
 * how long the job's latest action took. 403 for a worker without REPORTS_RUNS. PENDING is a
 * host's word that the job's launch failed there (launch_failed.h; REPORTS_LOG suffices). */
void reports_state(struct api_call *call);

/* POST /api/v1/jobs/{id}/log?offset=N&stream=S (any content type, at most the body bound):
 * the bytes of the job's log stream S (a worker's own file of it; "" by default) from
 * offset N. Bytes already stored are skipped; N past the stream's end is 409.
 * 200 {"size": bytes of the stream}; 403 for a worker without REPORTS_LOG. */
void reports_log_post(struct api_call *call);

/* GET /api/v1/jobs/{id}/log?offset=N&limit=M: text/plain, the log (its streams one after the
 * other, in the order they began) from N, at most M bytes (default and most 1 MiB); header
 * X-Log-Size: the whole log's size. */
void reports_log_get(struct api_call *call);

#endif
