-- 006: Gandiva live (docs/gandiva.md, "Live"): time-slicing and packing.
-- A GPU may hold two jobs (a packed pair), never more; the time-slice length is a setting; and
-- per job what the time-slicing and the packing need to carry from one round to the next.

DROP INDEX allocations_one_job_per_gpu;
CREATE INDEX allocations_by_gpu ON allocations (node_id, gpu_idx);

-- At most two jobs on one GPU (a packed pair). Only the scheduler writes allocations, one
-- round at a time, so a row-level check suffices.
CREATE FUNCTION allocations_two_per_gpu() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM allocations
        WHERE node_id = NEW.node_id AND gpu_idx = NEW.gpu_idx AND job_id <> NEW.job_id) >= 2 THEN
        RAISE EXCEPTION 'GPU % of node % already holds two jobs', NEW.gpu_idx, NEW.node_id
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER allocations_two_per_gpu BEFORE INSERT OR UPDATE ON allocations
    FOR EACH ROW EXECUTE FUNCTION allocations_two_per_gpu();

ALTER TABLE scheduler_config ADD COLUMN quantum_s double precision NOT NULL DEFAULT 60
    CHECK (quantum_s >= 1 AND quantum_s <= 86400);

-- Per job, written by the scheduler's rounds only.
CREATE TABLE job_slices (
    job_id        bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    sliced        boolean NOT NULL DEFAULT false, -- suspended by the scheduler: holds no GPU
    changed_at    timestamptz,                    -- its last suspension or resumption
    run_s         double precision NOT NULL DEFAULT 0, -- GPU time before its current allocation
    home_node     bigint,                         -- while sliced: where its state waits
    home_gpus     integer[],                      -- and the GPUs it left there
    packed_with   bigint,                         -- its partner on a shared GPU
    pack_at       timestamptz,                    -- the pair's measurement starts (both running)
    alone_s       double precision,               -- mean seconds per minibatch alone, at packing
    pack_reverted boolean NOT NULL DEFAULT false  -- a packing of it lost: never packed again
);
