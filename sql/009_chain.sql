-- 009: jobs that a node's worker no longer reports in its heartbeats' running list
-- (docs/worker-protocol.md): since when each has been missing, so that a job missing for
-- longer than the node timeout, with no action in flight, goes back to the queue.
CREATE TABLE job_unseen (
    job_id   bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    node_id  bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    since    timestamptz NOT NULL DEFAULT now()
);
