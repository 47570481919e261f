-- 033: an operator's drain of a node or some of its GPUs (POST /api/v1/nodes/{id}/drain,
-- issue 32 item 6). A drained GPU gets no new work; the jobs on it stay while their
-- allocation does, or, with evacuate, are migrated off at the next round. Kept apart from
-- state (UP/DOWN: whether the worker answers), which every heartbeat writes: a node that
-- goes down and comes back is still drained until someone undrains it.
ALTER TABLE nodes
    ADD COLUMN drained_at     timestamptz,            -- NULL: not drained
    ADD COLUMN drain_reason   text CHECK (drain_reason IS NULL OR length(drain_reason) <= 256),
    ADD COLUMN drained_by     bigint,                 -- the admin's user id
    ADD COLUMN drain_gpus     integer[],              -- the GPU indices; NULL: all of them
    ADD COLUMN drain_evacuate boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT nodes_drain_whole CHECK ((drained_at IS NULL) = (drain_reason IS NULL));

-- A drain or undrain wakes the scheduler wherever it was written (sql/004's notify).
CREATE TRIGGER nodes_drain_notify AFTER UPDATE OF drained_at, drain_gpus, drain_evacuate ON nodes
    FOR EACH ROW WHEN (OLD.drained_at IS DISTINCT FROM NEW.drained_at
                       OR OLD.drain_gpus IS DISTINCT FROM NEW.drain_gpus
                       OR OLD.drain_evacuate IS DISTINCT FROM NEW.drain_evacuate)
    EXECUTE FUNCTION ringmaster_sched_notify();
