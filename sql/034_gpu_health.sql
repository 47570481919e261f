-- 034: each GPU's health as its worker reports it (POST /api/v1/nodes/{id}/health, issue 32
-- item 5): an Xid error, uncorrectable ECC errors, retired pages, a GPU off the bus. A GPU
-- with a fault gets no work and its job is moved off (the core's sched_node.failed). Every
-- fault is kept in gpu_faults, opened when reported and closed when cleared, with the jobs
-- that held the GPU when it was reported.
ALTER TABLE node_gpus
    ADD COLUMN fault       text CHECK (fault IS NULL OR length(fault) BETWEEN 1 AND 128),
    ADD COLUMN fault_since timestamptz;

CREATE TABLE gpu_faults (
    id          bigserial PRIMARY KEY,
    node_id     bigint NOT NULL,
    gpu_idx     integer NOT NULL,
    reason      text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    cleared_at  timestamptz,
    jobs        bigint[] NOT NULL DEFAULT '{}', -- the jobs that held the GPU when it failed
    CHECK (cleared_at IS NULL OR cleared_at >= at)
);
CREATE INDEX gpu_faults_open ON gpu_faults (node_id, gpu_idx) WHERE cleared_at IS NULL;
CREATE INDEX gpu_faults_at ON gpu_faults (at DESC);

-- A fault reported or cleared wakes the scheduler wherever it was written (sql/004's notify).
CREATE TRIGGER node_gpus_fault_notify AFTER UPDATE OF fault ON node_gpus
    FOR EACH ROW WHEN (OLD.fault IS DISTINCT FROM NEW.fault)
    EXECUTE FUNCTION ringmaster_sched_notify();
